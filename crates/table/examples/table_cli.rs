//! A stand-alone driver for the `neurochunk table` subcommands, compiled from the
//! CLI's own `table_cmd.rs`, so the table crate can be exercised (and the Python
//! interop tests run) without building the whole CLI.

#[path = "../../cli/src/table_cmd.rs"]
mod table_cmd;

use clap::Parser;
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "neurochunk")]
struct Cli {
    #[command(subcommand)]
    cmd: Top,
}

#[derive(clap::Subcommand)]
enum Top {
    /// neurarrow tables.
    Table {
        #[command(subcommand)]
        cmd: table_cmd::TableCommand,
    },
    /// Write and validate the demo tables into DIR.
    Demo { dir: std::path::PathBuf },
}

fn main() -> ExitCode {
    match Cli::parse().cmd {
        Top::Table { cmd } => table_cmd::run(cmd),
        Top::Demo { dir } => match neurochunk_table::demo(&dir) {
            Ok(s) => {
                print!("{s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("neurochunk demo: {e}");
                ExitCode::from(1)
            }
        },
    }
}
