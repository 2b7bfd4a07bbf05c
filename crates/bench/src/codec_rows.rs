//! The optional `--codecs` row set: the numcodecs serializers `pcodec` and `zfpy` on the test
//! volume ([`CODEC_ROWS`]), written and read whole by neurochunk, by numcodecs through
//! zarr-python 3 (`py/codecs_numcodecs.py`, in the peer environment's Python) and by the
//! `zarrs` crate (with its `pcodec` and `zfp` features), each measurement in a fresh process.
//!
//! The Rust libraries run as the array rows' children (`--child LIB ROW …`, see
//! [`crate::protocol`]); the bench target's zarrs side implements the rows' serializers. The
//! table gives throughput (GB/s of decoded data), the ratios neurochunk/peer (higher:
//! neurochunk faster), the peak RSS and the compression ratio (decoded bytes / stored bytes)
//! of each library. Every read is checked against the volume (exactly, or within the row's
//! tolerance for the lossy zfp row). Settings: `--codecs-rows pcodec,zfp,zfp-accuracy` and
//! `--codecs-libs neurochunk,numcodecs,zarrs` (default all).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Map, Value};

use crate::error::{BenchError, BenchResult, Context};
use crate::harness::{
    load_average, mib, render_columns, run_in_child, tree_size, Cell, ExtraContext, ExtraSet,
    Volume,
};
use crate::protocol::{ChildRequest, Measurement, RESULT_MARKER};
use crate::rows::{Compression, Op, Row, Serializer, CODEC_ROWS};

/// The Python peer: numcodecs' codecs through zarr-python 3.
pub const PEER: &str = "numcodecs";
/// The libraries compared, in table order (neurochunk first).
pub const LIBRARIES: [&str; 3] = ["neurochunk", PEER, "zarrs"];

/// The `--codecs` row set, for [`crate::harness::main`].
pub const CODECS: ExtraSet = ExtraSet {
    flag: "--codecs",
    help: "also run the pcodec and zfp rows (neurochunk, numcodecs via zarr-python 3, zarrs; \
           --codecs-rows pcodec,zfp,zfp-accuracy, --codecs-libs neurochunk,numcodecs,zarrs)",
    run,
    needs_volume: true,
};

type Key = (&'static str, Op, &'static str);

/// The row as the Python peer is told about it.
fn row_json(row: &Row) -> Value {
    let serializer = match row.serializer {
        Serializer::Bytes => json!({"name": "bytes"}),
        Serializer::Pcodec { level } => json!({"name": "pcodec", "level": level}),
        Serializer::ZfpReversible => json!({"name": "zfpy", "mode": "reversible"}),
        Serializer::ZfpAccuracy { tolerance } => {
            json!({"name": "zfpy", "mode": "accuracy", "tolerance": tolerance})
        }
    };
    let zstd = match row.compression {
        Compression::None => Value::Null,
        Compression::Zstd(level) => json!(level),
    };
    json!({
        "id": row.id,
        "dtype": row.element.name(),
        "chunk": row.codec_chunk(),
        "serializer": serializer,
        "zstd": zstd,
        "tolerance": row.tolerance(),
    })
}

/// Why the peer produced no measurement: not available (a note), or failed.
enum PeerOutcome {
    Measured(Measurement, Value),
    Unavailable(String),
}

/// Run `py/codecs_numcodecs.py` for one measurement.
fn run_python(
    python: &Path,
    row: &Row,
    op: Op,
    dir: &Path,
    volume: &Volume,
) -> BenchResult<PeerOutcome> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("py")
        .join("codecs_numcodecs.py");
    let output = match Command::new(python)
        .arg(&script)
        .arg(op.name())
        .arg(dir)
        .arg(&volume.path)
        .arg(volume.size.to_string())
        .arg(row_json(row).to_string())
        .output()
    {
        Ok(output) => output,
        Err(e) => {
            return Ok(PeerOutcome::Unavailable(format!(
                "cannot run {}: {e}",
                python.display()
            )))
        }
    };
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim()
        .to_string();
    if output.status.code() == Some(3) {
        return Ok(PeerOutcome::Unavailable(format!("not run: {last}")));
    }
    if !output.status.success() {
        return Err(BenchError(format!(
            "measurement {PEER} {} {} FAILED ({}):\n{}",
            row.id,
            op.name(),
            output.status,
            stderr.trim_end()
        )));
    }
    let line = String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_MARKER).map(str::to_string))
        .ok_or_else(|| BenchError::msg(format!("{PEER}: the script printed no result line")))?;
    let value: Value = serde_json::from_str(&line).context("parsing the peer's result line")?;
    Ok(PeerOutcome::Measured(
        Measurement::from_json(&value)?,
        value,
    ))
}

/// The settings of the set: rows and libraries.
fn parse_settings(context: &ExtraContext) -> BenchResult<(Vec<&'static Row>, Vec<&'static str>)> {
    let mut settings = context.settings.clone();
    let rows = match settings.remove("rows") {
        None => CODEC_ROWS.iter().collect(),
        Some(list) => list
            .split(',')
            .filter(|id| !id.is_empty())
            .map(|id| {
                CODEC_ROWS.iter().find(|r| r.id == id).ok_or_else(|| {
                    BenchError::msg(format!(
                        "unknown codec row {id:?} (known: {})",
                        CODEC_ROWS.map(|r| r.id).join(", ")
                    ))
                })
            })
            .collect::<BenchResult<_>>()?,
    };
    let libraries = match settings.remove("libs") {
        None => LIBRARIES.to_vec(),
        Some(list) => list
            .split(',')
            .filter(|l| !l.is_empty())
            .map(|l| {
                LIBRARIES
                    .into_iter()
                    .find(|k| *k == l)
                    .ok_or_else(|| BenchError::msg(format!("unknown codec library {l:?}")))
            })
            .collect::<BenchResult<_>>()?,
    };
    if let Some(name) = settings.keys().next() {
        return Err(BenchError(format!(
            "unknown option --codecs-{name} (the codec rows know --codecs-rows and --codecs-libs)"
        )));
    }
    Ok((rows, libraries))
}

/// Everything measured.
#[derive(Default)]
struct Results {
    cells: BTreeMap<Key, Cell>,
    stored: BTreeMap<(&'static str, &'static str), u64>,
    /// Why a library has no numbers for a row.
    notes: BTreeMap<(&'static str, &'static str), String>,
    /// The peer's versions and settings (from its last result line).
    peer: Option<Value>,
}

fn run(context: &ExtraContext) -> BenchResult<Value> {
    let (rows, libraries) = parse_settings(context)?;
    let volume = context
        .volume
        .clone()
        .ok_or_else(|| BenchError::msg("the codec rows need the test volume"))?;
    let exe = std::env::current_exe().context("locating the bench executable")?;
    let python = crate::table_rows::python();
    eprintln!(
        "codec rows: {}^3, best of {}, libraries {}; Python {}",
        volume.size,
        context.reps,
        libraries.join(", "),
        python.display()
    );
    let mut results = Results::default();
    for row in &rows {
        for op in Op::ALL {
            for rep in 0..context.reps {
                for &library in &libraries {
                    if results.notes.contains_key(&(row.id, library)) {
                        continue;
                    }
                    let dir = context.dir.join(row.id).join(library);
                    if op == Op::Write && dir.exists() {
                        std::fs::remove_dir_all(&dir)
                            .context(format!("removing {}", dir.display()))?;
                    }
                    let m = if library == PEER {
                        if op == Op::Write {
                            std::fs::create_dir_all(dir.parent().unwrap_or(&dir))
                                .context(format!("creating {}", dir.display()))?;
                        }
                        match run_python(&python, row, op, &dir, &volume)? {
                            PeerOutcome::Measured(m, value) => {
                                results.peer = Some(value["versions"].clone());
                                m
                            }
                            PeerOutcome::Unavailable(note) => {
                                eprintln!("  {:<13} {PEER}: {note}", row.id);
                                results.notes.insert((row.id, library), note);
                                continue;
                            }
                        }
                    } else {
                        let request = ChildRequest {
                            library: library.to_string(),
                            row,
                            op,
                            dir: dir.clone(),
                            size: volume.size,
                            input: volume.path.clone(),
                            expect: volume.checksum,
                            fsync: context.fsync,
                        };
                        run_in_child(&exe, &request)?
                    };
                    eprintln!(
                        "  {:<13} {:<5} {:<10} rep {}: {:.3} s  {:.2} GB/s  peak RSS {}",
                        row.id,
                        op.name(),
                        library,
                        rep + 1,
                        m.seconds,
                        m.gbps(),
                        mib(m.peak_rss_bytes)
                    );
                    results
                        .cells
                        .entry((row.id, op, library))
                        .or_default()
                        .runs
                        .push(m);
                }
            }
            if op == Op::Write {
                for &library in &libraries {
                    let dir = context.dir.join(row.id).join(library);
                    if !results.notes.contains_key(&(row.id, library)) {
                        results.stored.insert((row.id, library), tree_size(&dir)?);
                    }
                }
            }
        }
    }
    println!(
        "{}",
        render_table(&rows, &libraries, &results, &volume, context)
    );
    Ok(report(&rows, &libraries, &results, &volume))
}

/// Peer seconds / neurochunk seconds of the best repetitions (neurochunk throughput / peer's).
fn ratio(results: &Results, row: &Row, op: Op, peer: &str) -> Option<f64> {
    let ours = results.cells.get(&(row.id, op, "neurochunk"))?.best()?;
    let theirs = results.cells.get(&(row.id, op, peer))?.best()?;
    Some(theirs.seconds / ours.seconds)
}

/// Decoded bytes / stored bytes of a library's array of `row`.
fn compression_ratio(results: &Results, row: &Row, library: &str, n: usize) -> Option<f64> {
    let stored = *results.stored.get(&(row.id, library))?;
    (stored > 0).then(|| row.decoded_bytes(n) as f64 / stored as f64)
}

fn render_table(
    rows: &[&'static Row],
    libraries: &[&'static str],
    results: &Results,
    volume: &Volume,
    context: &ExtraContext,
) -> String {
    let peers: Vec<&str> = libraries
        .iter()
        .copied()
        .filter(|l| *l != "neurochunk")
        .collect();
    let ours = libraries.contains(&"neurochunk");
    let mut header = vec!["row".to_string(), "op".to_string()];
    header.extend(libraries.iter().map(|l| format!("{l} GB/s")));
    if ours {
        header.extend(peers.iter().map(|p| format!("neurochunk/{p}")));
    }
    header.push(format!("peak RSS MiB ({})", libraries.join(" / ")));
    header.push(format!("compression ratio ({})", libraries.join(" / ")));
    let mut lines = vec![header];
    for row in rows {
        for op in Op::ALL {
            let mut line = vec![row.title.to_string(), op.name().to_string()];
            for library in libraries {
                let best = results
                    .cells
                    .get(&(row.id, op, *library))
                    .and_then(Cell::best);
                line.push(best.map_or_else(|| "n/a".into(), |m| format!("{:.3}", m.gbps())));
            }
            if ours {
                for peer in &peers {
                    line.push(
                        ratio(results, row, op, peer)
                            .map_or_else(|| "n/a".into(), |r| format!("{r:.2}")),
                    );
                }
            }
            line.push(
                libraries
                    .iter()
                    .map(|l| {
                        mib(results
                            .cells
                            .get(&(row.id, op, *l))
                            .and_then(Cell::max_peak_rss))
                    })
                    .collect::<Vec<_>>()
                    .join(" / "),
            );
            line.push(
                libraries
                    .iter()
                    .map(|l| {
                        compression_ratio(results, row, l, volume.size)
                            .map_or_else(|| "n/a".into(), |r| format!("{r:.2}"))
                    })
                    .collect::<Vec<_>>()
                    .join(" / "),
            );
            lines.push(line);
        }
    }
    let mut out = format!(
        "\nnumcodecs serializers: {n}^3 volume ({} MiB as uint16), best of {}, fresh process each, \
         load average {} now\n\n",
        mib(Some((volume.size as u64).pow(3) * 2)),
        context.reps,
        load_average(),
        n = volume.size,
    );
    out.push_str(&render_columns(&lines));
    out.push_str(
        "\nGB/s = 10^9 bytes of decoded data (in the row's element type: the float32 rows \
         decode twice the bytes of the uint16 volume) / best wall time of the operation alone. \
         neurochunk/peer = peer time / neurochunk time (higher: neurochunk faster). \
         Compression ratio = decoded bytes / stored bytes (metadata included). Peak RSS = max \
         VmHWM (numcodecs: ru_maxrss of the Python process, interpreter and imports included) \
         over repetitions; writes include the input buffer. Every read was checked against \
         the volume (the zfp tolerance row within its tolerance).\n",
    );
    if context.fsync {
        out.push_str(
            "--fsync: neurochunk's and zarrs' writes are durable; zarr-python's LocalStore \
             does not sync.\n",
        );
    } else {
        out.push_str(
            "Writes as each library does them: zarrs syncs every file, neurochunk and \
             zarr-python do not (see --fsync).\n",
        );
    }
    for ((row, library), note) in &results.notes {
        out.push_str(&format!("{library} on {row}: {note}\n"));
    }
    if let Some(peer) = &results.peer {
        out.push_str(&format!("{PEER} peer: {peer}\n"));
    }
    out
}

fn report(
    rows: &[&'static Row],
    libraries: &[&'static str],
    results: &Results,
    volume: &Volume,
) -> Value {
    let mut out = Vec::new();
    for row in rows {
        for op in Op::ALL {
            let mut per_library = Map::new();
            for library in libraries {
                let cell = results.cells.get(&(row.id, op, *library));
                let best = cell.and_then(Cell::best);
                per_library.insert(
                    library.to_string(),
                    json!({
                        "best_seconds": best.map(|m| m.seconds),
                        "gb_per_s": best.map(Measurement::gbps),
                        "seconds": cell.map(|c| c.runs.iter().map(|m| m.seconds).collect::<Vec<_>>()),
                        "peak_rss_bytes": cell.map(|c| c.runs.iter().map(|m| m.peak_rss_bytes).collect::<Vec<_>>()),
                        "stored_bytes": results.stored.get(&(row.id, *library)),
                        "compression_ratio": compression_ratio(results, row, library, volume.size),
                        "note": results.notes.get(&(row.id, *library)),
                    }),
                );
            }
            let ratios: Map<String, Value> = libraries
                .iter()
                .filter(|l| **l != "neurochunk")
                .map(|p| (p.to_string(), json!(ratio(results, row, op, p))))
                .collect();
            out.push(json!({
                "row": row.id,
                "title": row.title,
                "op": op.name(),
                "decoded_bytes": row.decoded_bytes(volume.size),
                "tolerance": row.tolerance(),
                "results": per_library,
                "ratio_neurochunk_over": ratios,
            }));
        }
    }
    json!({
        "size": volume.size,
        "libraries": libraries,
        "ratio": "peer seconds / neurochunk seconds",
        "peer": results.peer,
        "rows": out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_describe_their_codecs_to_the_peer() {
        let zfp = CODEC_ROWS.iter().find(|r| r.id == "zfp-accuracy").unwrap();
        let v = row_json(zfp);
        assert_eq!(v["dtype"], "float32");
        assert_eq!(v["serializer"]["mode"], "accuracy");
        assert_eq!(v["tolerance"], 1.0);
        let pcodec = row_json(&CODEC_ROWS[0]);
        assert_eq!(pcodec["serializer"], json!({"name": "pcodec", "level": 8}));
        assert_eq!(pcodec["zstd"], Value::Null);
        // The child protocol finds the codec rows by name.
        for row in &CODEC_ROWS {
            assert_eq!(Row::by_id(row.id).map(|r| r.id), Some(row.id));
        }
    }
}
