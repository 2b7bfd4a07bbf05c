//! The `table` subcommand (compiled from the CLI's own source) and the demo.

#[macro_use]
#[path = "../../cli/src/output.rs"]
mod output;
#[path = "../../cli/src/store_args.rs"]
#[allow(dead_code)]
mod store_args;
#[path = "../../cli/src/table_cmd.rs"]
mod table_cmd;

/// A failed command's message, as the CLI's `main.rs` defines it.
#[derive(Debug)]
pub(crate) struct Failure(pub String);

mod common;

use clap::Parser;
use common::*;
use neurochunk_table::io::{write_all, WriteOptions};
use std::process::ExitCode;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: table_cmd::TableCommand,
}

fn run(args: &[&str]) -> ExitCode {
    let mut full = vec!["table"];
    full.extend_from_slice(args);
    table_cmd::run(Cli::try_parse_from(full).unwrap().cmd)
}

#[test]
fn exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("g.skeletons.parquet");
    let b = Skel::default().batch(md(&[]));
    write_all(&good, b.schema(), &[b], &WriteOptions::default()).unwrap();
    let bad = dir.path().join("b.skeletons.arrow");
    let b = Skel::default().batch(md(&[("unit", Some("nm"))]));
    write_all(&bad, b.schema(), &[b], &WriteOptions::default()).unwrap();
    let junk = dir.path().join("j.skeletons.parquet");
    std::fs::write(&junk, "junk").unwrap();
    let g = good.to_str().unwrap();
    let bd = bad.to_str().unwrap();
    let j = junk.to_str().unwrap();
    assert_eq!(run(&["validate", g]), ExitCode::from(0));
    assert_eq!(run(&["validate", "--json", g, bd]), ExitCode::from(1));
    assert_eq!(run(&["validate", g, j]), ExitCode::from(2));
    assert_eq!(run(&["validate", "--schema", "nope", g]), ExitCode::from(2));
    assert_eq!(run(&["info", j]), ExitCode::from(2));
    let out = dir.path().join("c.skeletons.arrow");
    assert_eq!(
        run(&["convert", g, out.to_str().unwrap()]),
        ExitCode::from(0)
    );
    assert_eq!(run(&["validate", out.to_str().unwrap()]), ExitCode::from(0));
    let hive = dir.path().join("h");
    assert_eq!(
        run(&[
            "convert",
            g,
            hive.to_str().unwrap(),
            "--partition-by",
            "fragment_id"
        ]),
        ExitCode::from(0)
    );
    assert!(hive.join("fragment_id=7").is_dir());
    assert_eq!(
        run(&["validate", "--strict", hive.to_str().unwrap()]),
        ExitCode::from(0)
    );
    assert!(Cli::try_parse_from(["table", "from-swc", "a.swc", "out.parquet"]).is_err());
    // --context required
}

#[test]
fn demo_writes_valid_tables() {
    let dir = tempfile::tempdir().unwrap();
    let s = neurochunk_table::demo(dir.path()).unwrap();
    assert!(dir.path().join("demo.skeletons.parquet").is_file());
    assert!(dir.path().join("demo.connections.parquet").is_file());
    assert!(
        s.contains("1200 rows, schema skeletons, 3 fragments, valid"),
        "{s}"
    );
    assert!(s.contains("160 rows, schema connections, valid"), "{s}");
}
