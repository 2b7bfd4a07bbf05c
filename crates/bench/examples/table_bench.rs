//! Runs the table benchmark module of the bench crate stand-alone:
//! `cargo run --release -p neurochunk-bench --example table_bench -- ROWS DIR`.

use neurochunk_bench::table_bench;

fn main() {
    let mut args = std::env::args().skip(1);
    let rows: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "/tmp/table-bench".into()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("{}: {e}", dir.display());
        std::process::exit(2);
    }
    for (name, rate, peak) in table_bench::run(rows, &dir) {
        println!(
            "{name:<70} {:>14.0} rows/s  peak RSS {:>8.1} MiB",
            rate,
            peak as f64 / 1048576.0
        );
    }
}
