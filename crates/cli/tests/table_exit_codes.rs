//! The exit status of the `table` commands: 0 success, 1 a table that does not conform, 2 an
//! input that cannot be read or bad arguments; and what `convert` writes validates.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::Schema;
use neurochunk_table::io::{read_all, write_all, WriteOptions};

/// The exit status of `neurochunk table ARGS`.
fn table(args: &[&str]) -> i32 {
    let out = Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .arg("table")
        .args(args)
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
}

fn text(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let swc = d.join("7.swc");
    std::fs::write(&swc, "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n").unwrap();
    let good = d.join("g.skeletons.parquet");
    let context = "urn:uuid:00000000-0000-4000-8000-000000000001";
    assert_eq!(
        table(&["from-swc", text(&swc), text(&good), "--context", context]),
        0
    );
    // The same rows with a unit the specification does not name: read, but invalid.
    let (schema, batches) = read_all(&good).unwrap();
    let mut metadata = schema.metadata().clone();
    metadata.insert("unit", "nm");
    let schema = Arc::new(Schema::new_with_metadata(schema.fields().clone(), metadata));
    let batches: Vec<_> = batches
        .into_iter()
        .map(|b| RecordBatch::try_new(schema.clone(), b.columns().to_vec()).unwrap())
        .collect();
    let bad = d.join("b.skeletons.arrow");
    write_all(&bad, schema, &batches, &WriteOptions::default()).unwrap();
    let junk = d.join("j.skeletons.parquet");
    std::fs::write(&junk, "junk").unwrap();
    let (g, b, j) = (text(&good), text(&bad), text(&junk));
    assert_eq!(table(&["validate", g]), 0);
    assert_eq!(table(&["validate", "--json", g, b]), 1);
    assert_eq!(table(&["validate", g, j]), 2);
    assert_eq!(table(&["validate", "--schema", "nope", g]), 2);
    assert_eq!(table(&["info", j]), 2);
    let out = d.join("c.skeletons.arrow");
    assert_eq!(table(&["convert", g, text(&out)]), 0);
    assert_eq!(table(&["validate", text(&out)]), 0);
    let hive = d.join("h");
    assert_eq!(
        table(&["convert", g, text(&hive), "--partition-by", "fragment_id"]),
        0
    );
    assert!(hive.join("fragment_id=7").is_dir());
    assert_eq!(table(&["validate", "--strict", text(&hive)]), 0);
    // --context is required.
    assert_eq!(
        table(&["from-swc", text(&swc), text(&d.join("o.parquet"))]),
        2
    );
}

#[test]
fn precomputed_skeleton_layers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let swc = d.join("7.swc");
    std::fs::write(&swc, "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n").unwrap();
    let tbl = d.join("t.skeletons.parquet");
    let context = "urn:uuid:00000000-0000-4000-8000-000000000002";
    assert_eq!(
        table(&["from-swc", text(&swc), text(&tbl), "--context", context]),
        0
    );
    // Table to layer (unsharded, then sharded in its place), and back.
    let layer = d.join("skel");
    let l = text(&layer);
    assert_eq!(
        table(&["convert", text(&tbl), l, "--format", "precomputed"]),
        0
    );
    assert!(layer.join("info").is_file() && layer.join("7").is_file());
    let args = [
        "convert",
        text(&tbl),
        l,
        "--format",
        "precomputed",
        "--sharded",
    ];
    assert_eq!(table(&args), 0);
    assert!(layer.join("0.shard").is_file() && !layer.join("7").exists());
    let back = d.join("back.skeletons.parquet");
    let b = text(&back);
    assert_eq!(table(&["convert", l, b, "--context", context]), 0);
    assert_eq!(table(&["validate", "--strict", b]), 0);
    let (_, batches) = read_all(&back).unwrap();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 3);
    // Usage: no context, an unknown format, a directory holding other files, --sharded alone.
    assert_eq!(table(&["convert", l, b]), 2);
    assert_eq!(table(&["convert", text(&tbl), l, "--format", "n5"]), 2);
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "keep").unwrap();
    let o = text(&other);
    assert_eq!(
        table(&["convert", text(&tbl), o, "--format", "precomputed"]),
        2
    );
    assert!(other.join("notes.txt").is_file());
    assert_eq!(
        table(&["convert", text(&tbl), text(&d.join("x.arrow")), "--sharded"]),
        2
    );
    // A damaged layer: the data do not allow the conversion.
    std::fs::remove_file(layer.join("0.shard")).unwrap();
    std::fs::write(layer.join("info"), r#"{"@type": "neuroglancer_skeletons"}"#).unwrap();
    std::fs::write(layer.join("7"), [3u8, 0, 0, 0, 0, 0, 0, 0, 1]).unwrap();
    assert_eq!(table(&["convert", l, b, "--context", context]), 1);
}
