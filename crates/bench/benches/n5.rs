//! N5 rows of the side-by-side benchmark: neurochunk against tensorstore's `n5` driver, in one
//! run, reported as ratios.
//!
//! ```sh
//! cargo bench -p neurochunk-bench --bench n5                       # 512³, best of 3
//! cargo bench -p neurochunk-bench --bench n5 -- --size 256 --reps 5 --json n5.json
//! ```
//!
//! Rows: a deterministic `uint16` light-sheet-like volume (`volume::generate`) stored as N5 with
//! 64³ blocks, `gzip` (level 1 for both libraries; `--level`) and `raw`; operations **write**
//! (create the dataset and write the whole volume from memory) and **read** (open and read it
//! whole). neurochunk is timed in this process (`Array::create` + `write_all`, `Array::open` +
//! `read_all`); tensorstore in a Python child (`py/n5_tensorstore.py`, same operations, its
//! timer around the operation alone). Each side reads back what it wrote and checks it against
//! the volume; neurochunk also reads tensorstore's dataset (untimed) as an interop check.
//! Python: `$NEUROCHUNK_BENCH_PYTHON`, else `.peers/py311/bin/python`, else `python3`; when it
//! cannot run, the rows show neurochunk alone with a note.
//!
//! Caveats as for the `arrays` bench (warm page cache; neurochunk writes without `fsync`,
//! tensorstore's file kvstore does not `fsync` either by default).
//!

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use neurochunk_array::n5::compression_from_n5_json;
use neurochunk_array::n5::n5_array_metadata;
use neurochunk_array::{Array, ArrayBytes, DataType, FsStore, N5AxisOrder, Store};
use neurochunk_bench::volume;
use serde_json::{json, Value};

const BLOCK: usize = 64;

struct Options {
    size: usize,
    reps: usize,
    level: u32,
    dir: PathBuf,
    json: Option<PathBuf>,
    keep: bool,
}

fn parse_options(args: &[String]) -> Result<Options, String> {
    let bench = args.iter().any(|a| a == "--bench");
    let mut o = Options {
        size: if bench { 512 } else { 64 },
        reps: if bench { 3 } else { 1 },
        level: 1,
        dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/neurochunk-bench-n5"),
        json: None,
        keep: false,
    };
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        let number = |v: String, name: &str| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{name}: '{v}' is not a positive integer"))
        };
        match a.as_str() {
            "--size" => o.size = number(value("--size")?, "--size")?,
            "--reps" => o.reps = number(value("--reps")?, "--reps")?,
            "--level" => o.level = number(value("--level")?, "--level")?.min(9) as u32,
            "--dir" => o.dir = PathBuf::from(value("--dir")?),
            "--json" => o.json = Some(PathBuf::from(value("--json")?)),
            "--keep" => o.keep = true,
            "--bench" => {}
            "--help" | "-h" => {
                return Err("usage: cargo bench -p neurochunk-bench --bench n5 -- \
                    [--size N] [--reps N] [--level L] [--dir PATH] [--json OUT] [--keep]"
                    .into())
            }
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            _ => {}
        }
    }
    Ok(o)
}

fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("NEUROCHUNK_BENCH_PYTHON") {
        return p.into();
    }
    let peer = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.peers/py311/bin/python");
    if peer.exists() {
        peer
    } else {
        "python3".into()
    }
}

fn disk_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match entry.metadata() {
                Ok(m) if m.is_dir() => stack.push(entry.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn compression_json(row: &str, level: u32) -> Value {
    match row {
        "gzip" => json!({"type": "gzip", "level": level, "useZlib": false}),
        _ => json!({"type": "raw"}),
    }
}

/// neurochunk's best time for `op` on `row`.
fn neurochunk(
    row: &str,
    op: &str,
    o: &Options,
    dir: &Path,
    data: &ArrayBytes,
    sum: u64,
) -> Result<f64, String> {
    let n = o.size as u64;
    let mut best = f64::INFINITY;
    for _ in 0..o.reps {
        if op == "write" {
            let _ = std::fs::remove_dir_all(dir);
            let started = Instant::now();
            let codec = compression_from_n5_json(&compression_json(row, o.level), 2)
                .map_err(|e| e.to_string())?;
            let meta = n5_array_metadata(
                vec![n; 3],
                vec![BLOCK; 3],
                DataType::UInt16,
                codec,
                N5AxisOrder::Listed,
                Default::default(),
                "",
            )
            .map_err(|e| e.to_string())?;
            let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
            Array::create(store, "", meta)
                .and_then(|a| a.write_all(data))
                .map_err(|e| e.to_string())?;
            best = best.min(started.elapsed().as_secs_f64());
        } else {
            let started = Instant::now();
            let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
            let (_, back) = Array::open(store, "")
                .and_then(|a| a.read_all())
                .map_err(|e| e.to_string())?;
            best = best.min(started.elapsed().as_secs_f64());
            match back {
                ArrayBytes::Fixed(bytes) if volume::checksum(&bytes) == sum => {}
                _ => return Err(format!("neurochunk read back different data ({row})")),
            }
        }
    }
    Ok(best)
}

/// tensorstore's result for `op` on `row`, or a note why it did not run.
fn tensorstore(row: &str, op: &str, o: &Options, dir: &Path, raw: &Path) -> Result<Value, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("py/n5_tensorstore.py");
    let out = Command::new(python())
        .arg(&script)
        .args(["--op", op, "--compression", row])
        .arg("--dir")
        .arg(dir)
        .arg("--volume")
        .arg(raw)
        .args(["--size", &o.size.to_string(), "--reps", &o.reps.to_string()])
        .args(["--level", &o.level.to_string()])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python().display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable output: {e}"))
}

fn run(args: &[String]) -> Result<(), String> {
    let o = parse_options(args)?;
    let n = o.size;
    let work = o.dir.join(format!("n{n}"));
    std::fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    eprintln!("generating the {n}³ uint16 volume …");
    let bytes = volume::generate(n);
    let sum = volume::checksum(&bytes);
    let raw = work.join("volume.u16.raw");
    std::fs::write(&raw, &bytes).map_err(|e| format!("{}: {e}", raw.display()))?;
    let data = ArrayBytes::Fixed(bytes);
    let gb = (n * n * n * 2) as f64 / 1e9;
    println!(
        "N5 {n}³ uint16, {BLOCK}³ blocks, best of {} (GB/s of decoded data; ratio = neurochunk / tensorstore)",
        o.reps
    );
    println!(
        "{:<6} {:<6} {:>11} {:>12} {:>7} {:>11} {:>12}",
        "row", "op", "neurochunk", "tensorstore", "ratio", "nc MB", "ts MB"
    );
    let mut results = Vec::new();
    for row in ["gzip", "raw"] {
        let nc_dir = work.join(format!("neurochunk.{row}.n5"));
        let ts_dir = work.join(format!("tensorstore.{row}.n5"));
        for op in ["write", "read"] {
            eprintln!("{row} {op}: neurochunk …");
            let nc = neurochunk(row, op, &o, &nc_dir, &data, sum)?;
            eprintln!("{row} {op}: tensorstore …");
            let ts = tensorstore(row, op, &o, &ts_dir, &raw);
            let nc_rate = gb / nc;
            let (ts_text, ratio_text, ts_json) = match &ts {
                Ok(v) => {
                    let secs = v["seconds"].as_f64().unwrap_or(f64::NAN);
                    let rate = gb / secs;
                    (
                        format!("{rate:.2}"),
                        format!("{:.2}", nc_rate / rate),
                        v.clone(),
                    )
                }
                Err(why) => ("—".into(), "—".into(), json!({"note": why})),
            };
            println!(
                "{row:<6} {op:<6} {nc_rate:>11.2} {ts_text:>12} {ratio_text:>7} {:>11.1} {:>12.1}",
                disk_bytes(&nc_dir) as f64 / 1e6,
                disk_bytes(&ts_dir) as f64 / 1e6
            );
            if let Err(why) = &ts {
                println!("       tensorstore not run: {why}");
            }
            results.push(json!({
                "row": row, "op": op, "size": n,
                "neurochunk_seconds": nc, "neurochunk_gbps": nc_rate,
                "tensorstore": ts_json,
            }));
        }
        // Interop check (untimed): neurochunk reads what tensorstore wrote.
        if ts_dir.join("attributes.json").exists() {
            let store: Arc<dyn Store> = Arc::new(FsStore::new(&ts_dir));
            match Array::open(store, "").and_then(|a| a.read_all()) {
                Ok((_, ArrayBytes::Fixed(b))) if volume::checksum(&b) == sum => {}
                other => {
                    return Err(format!(
                        "neurochunk misread tensorstore's {row} dataset: {:?}",
                        other.err()
                    ))
                }
            }
        }
    }
    if let Some(path) = &o.json {
        let doc =
            json!({"benchmark": "n5", "block": BLOCK, "gzip_level": o.level, "rows": results});
        std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap_or_default())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if !o.keep {
        let _ = std::fs::remove_dir_all(&work);
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("n5 bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
