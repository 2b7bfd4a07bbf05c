//! neurarrow table benchmark: generate and write, validate, and derive fields of
//! a synthetic skeleton table of N samples, reporting rows per second and the
//! peak resident set size of each stage.
//!
//! The table is written to `dir/bench.skeletons.parquet` ([`TABLE_FILE`]);
//! `py/table_pyarrow.py` reads the same file with pyarrow for the side-by-side row.
//! Peak RSS is reset before each stage through `/proc/self/clear_refs` (Linux),
//! so each figure belongs to its stage; where that is impossible it is the
//! process peak so far.

use neurochunk_table::derive::{derive, DeriveOptions};
use neurochunk_table::io::{TableWriter, WriteOptions};
use neurochunk_table::synth::SkeletonSynth;
use neurochunk_table::validate::{validate_path, ValidateOptions};
use std::path::Path;
use std::time::Instant;

/// File name of the generated table inside the benchmark directory.
pub const TABLE_FILE: &str = "bench.skeletons.parquet";
/// File name of the derived table.
pub const DERIVED_FILE: &str = "bench.derived.skeletons.parquet";

fn status_kib(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find_map(|l| {
        let v = l.strip_prefix(field)?.strip_prefix(':')?;
        v.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

fn reset_peak() {
    // "5" resets the peak RSS counter (VmHWM) of this process.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_bytes() -> u64 {
    status_kib("VmHWM").map(|k| k * 1024).unwrap_or(0)
}

fn stage<T>(
    name: &str,
    rows: usize,
    out: &mut Vec<(String, f64, u64)>,
    f: impl FnOnce() -> Result<T, String>,
) -> Option<T> {
    reset_peak();
    let t = Instant::now();
    let r = f();
    let secs = t.elapsed().as_secs_f64().max(1e-9);
    match r {
        Ok(v) => {
            out.push((name.to_string(), rows as f64 / secs, peak_bytes()));
            Some(v)
        }
        Err(e) => {
            out.push((format!("{name}: FAILED: {e}"), 0.0, peak_bytes()));
            None
        }
    }
}

/// Generate the synthetic skeleton table of `rows` samples in `fragments` fragments and write
/// it to `path` as Parquet (the table of the table rows here and of the remote benchmark).
pub fn write_table(rows: usize, fragments: u64, path: &Path) -> Result<(), String> {
    let gen = SkeletonSynth::new(
        rows as u64,
        fragments,
        64 * 1024,
        1 << 40,
        "urn:uuid:00000000-0000-4000-8000-0000000be4c4",
    );
    let mut w = TableWriter::create(path, gen.schema(), &WriteOptions::default())
        .map_err(|e| e.to_string())?;
    for b in gen {
        w.write(&b).map_err(|e| e.to_string())?;
    }
    w.finish().map_err(|e| e.to_string()).map(drop)
}

/// Runs the table benchmark on `rows` samples in `dir`; returns
/// `(row label, rows per second, peak RSS bytes)` per stage.
pub fn run(rows: usize, dir: &Path) -> Vec<(String, f64, u64)> {
    let mut out = Vec::new();
    let path = dir.join(TABLE_FILE);
    let derived = dir.join(DERIVED_FILE);
    let fragments = (rows as u64 / 10_000).max(1);
    let label = |s: &str| format!("table {s} ({rows} samples)");
    let ok = stage(&label("generate+write parquet"), rows, &mut out, || {
        write_table(rows, fragments, &path)
    });
    if ok.is_none() {
        return out;
    }
    stage(&label("validate"), rows, &mut out, || {
        let r = validate_path(&path, &ValidateOptions::default());
        if r.is_valid() {
            Ok(())
        } else {
            Err(r.lines().join("; "))
        }
    });
    stage(
        &label("derive child_ids/n_children/strahler"),
        rows,
        &mut out,
        || {
            derive(&path, &derived, &DeriveOptions::default())
                .map(|_| ())
                .map_err(|e| e.to_string())
        },
    );
    stage(
        &label("validate with derived fields (strict)"),
        rows,
        &mut out,
        || {
            let opts = ValidateOptions {
                strict: true,
                ..ValidateOptions::default()
            };
            let r = validate_path(&derived, &opts);
            if r.is_valid() && r.warnings.is_empty() {
                Ok(())
            } else {
                Err(r.lines().join("; "))
            }
        },
    );
    out
}
