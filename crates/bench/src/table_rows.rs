//! The optional `--tables` row set: neurarrow table IO from [`crate::table_bench`], with
//! pyarrow reading the same Parquet file as the side-by-side row when Python and pyarrow are
//! available.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::error::{BenchResult, Context};
use crate::harness::{ExtraContext, ExtraSet};
use crate::table_bench;

/// Samples in the synthetic skeleton table (a tenth of it in the smoke run).
pub const TABLE_SAMPLES: usize = 2_000_000;

/// The `--tables` row set, for [`crate::harness::main`].
pub const TABLES: ExtraSet = ExtraSet {
    flag: "--tables",
    help:
        "also run the neurarrow table rows (skeleton Parquet write/validate/derive; pyarrow read)",
    run,
    needs_volume: false,
};

fn run(context: &ExtraContext) -> BenchResult<Value> {
    let samples = if context.smoke {
        TABLE_SAMPLES / 100
    } else {
        TABLE_SAMPLES
    };
    let stages = table_bench::run(samples, &context.dir);
    let mut rows: Vec<Value> = stages
        .iter()
        .map(|(label, rows_per_s, peak)| json!({"row": label, "library": "neurochunk", "rows_per_s": rows_per_s, "peak_rss_bytes": peak}))
        .collect();
    let failed = stages.iter().any(|(label, ..)| label.contains("FAILED"));
    if !failed {
        rows.push(pyarrow_row(&context.dir));
    }
    let mut text =
        String::from("\nneurarrow tables (rows/s of skeleton samples; peak RSS per stage)\n");
    for row in &rows {
        let label = row["row"].as_str().unwrap_or("?");
        let library = row["library"].as_str().unwrap_or("?");
        let speed = row["rows_per_s"]
            .as_f64()
            .map_or_else(|| "n/a".to_string(), |r| format!("{:.2} M rows/s", r / 1e6));
        let peak = row["peak_rss_bytes"]
            .as_u64()
            .map_or_else(|| "?".to_string(), |b| format!("{} MiB", b >> 20));
        let note = row["note"]
            .as_str()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        text.push_str(&format!(
            "{label:<62}  {library:<10}  {speed:>16}  {peak:>9}{note}\n"
        ));
    }
    println!("{text}");
    if failed {
        return Err(crate::BenchError(format!("a table stage failed:{text}")));
    }
    Ok(json!({ "samples": samples, "rows": rows }))
}

/// The Python that runs the pyarrow row (and the numcodecs side of the `--codecs` rows):
/// `$NEUROCHUNK_BENCH_PYTHON`, else the project's peer environment `.peers/py312` (made by
/// `scripts/setup-peers`), else `python3` on `PATH`.
pub(crate) fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("NEUROCHUNK_BENCH_PYTHON") {
        return python.into();
    }
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/py312/bin/python");
    if peer.exists() {
        peer
    } else {
        "python3".into()
    }
}

/// Run `py/table_pyarrow.py` on the table just written; a missing Python or pyarrow gives a
/// row with a note instead of numbers.
fn pyarrow_row(dir: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("py")
        .join("table_pyarrow.py");
    let python = python();
    let output = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .output()
        .context(format!("running {} {}", python.display(), script.display()));
    let unavailable =
        |why: String| json!({"row": "pyarrow read_table", "library": "pyarrow", "note": why});
    match output {
        Err(e) => unavailable(e.to_string()),
        Ok(out) if !out.status.success() => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            unavailable(format!(
                "not run: {}",
                stderr.lines().last().unwrap_or("python3 failed")
            ))
        }
        Ok(out) => match serde_json::from_slice::<Value>(&out.stdout) {
            Ok(mut v) => {
                v["library"] = json!("pyarrow");
                v
            }
            Err(e) => unavailable(format!("unreadable output: {e}")),
        },
    }
}
