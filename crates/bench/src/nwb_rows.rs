//! The optional `--nwb` row set: NWB files stored as Zarr, written and opened by neurochunk
//! ([`crate::nwb_bench`], one child process per measurement) and read by pynwb + hdmf-zarr
//! (`py/nwb_hdmf_zarr.py`) as the side-by-side row, in both hdmf-zarr conventions.
//!
//! The file is the `neurochunk-hdmf` ecephys demo plus `--nwb-scale N` (default
//! [`DEFAULT_SCALE`]; [`SMOKE_SCALE`] without `--bench`) typed TimeSeries, with pynwb's core and
//! hdmf-common namespaces cached. Rows per convention: neurochunk **write**; neurochunk
//! **open** + list typed objects against hdmf-zarr's `NWBZarrIO(path, "r").read()` + counting
//! `nwbfile.objects`; neurochunk **validate** (open + `validate` against the cached namespaces)
//! against `pynwb.validate` of the file's HDF5 twin (the v3 file exported once with
//! `NWBHDF5IO.export`; pynwb cannot fully validate Zarr files). The ratio is peer time /
//! neurochunk time of the operation alone; whole process times (start-up, imports) are reported
//! beside it.
//!
//! Each convention needs its own hdmf-zarr (0.13 reads only the legacy Zarr v2 convention, 0.14
//! only the v3 one), so each has its own Python: `$NEUROCHUNK_BENCH_PYTHON_ZARR2` /
//! `$NEUROCHUNK_BENCH_PYTHON_ZARR3`, else the project's `.peers/py311` / `.peers/py312`
//! (`scripts/setup-peers`), else `$NEUROCHUNK_BENCH_PYTHON`. The legacy reader runs with
//! `NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE=1` (the trials' compound dataset is pickled, as
//! hdmf-zarr 0.13 writes it). Without a usable Python the peer row shows a note.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use neurochunk_hdmf::Convention;
use serde_json::{json, Map, Value};

use crate::error::{BenchError, BenchResult, Context};
use crate::harness::{ExtraContext, ExtraSet};
use crate::nwb_bench::{NwbOp, NwbRequest, CONVENTIONS};
use crate::protocol::RESULT_MARKER;

/// Extra TimeSeries in the benchmark file (the file then holds more than 10,000 typed objects).
pub const DEFAULT_SCALE: usize = 10_000;
/// Extra TimeSeries in the smoke run (no `--bench`) unless `--nwb-scale` is given.
pub const SMOKE_SCALE: usize = 50;
/// Name of the peer in the table and the JSON report.
pub const PEER: &str = "hdmf-zarr";

/// The `--nwb` row set, for [`crate::harness::main`]; the bench target must also call
/// [`crate::nwb_bench::child_main`].
pub const NWB: ExtraSet = ExtraSet {
    flag: "--nwb",
    help: "also run the NWB rows (neurochunk write + open of a demo file with --nwb-scale N \
           extra TimeSeries, default 10000; pynwb/hdmf-zarr read of it), both conventions",
    run,
    needs_volume: false,
};

/// Where the peer Python of a convention comes from.
struct Peer {
    python: PathBuf,
    /// How it was chosen (`.peers/py311`, `$NEUROCHUNK_BENCH_PYTHON_ZARR2`, …).
    source: String,
    env: Vec<(&'static str, &'static str)>,
}

fn manifest_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The Python that reads `convention`'s file, or why there is none.
fn peer(convention: Convention) -> Result<Peer, String> {
    let (var, venv) = match convention {
        Convention::Legacy => ("NEUROCHUNK_BENCH_PYTHON_ZARR2", "py311"),
        Convention::V3 => ("NEUROCHUNK_BENCH_PYTHON_ZARR3", "py312"),
    };
    let env = match convention {
        Convention::Legacy => vec![("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")],
        Convention::V3 => Vec::new(),
    };
    let found = |python: PathBuf, source: String| {
        Ok(Peer {
            python,
            source,
            env: env.clone(),
        })
    };
    if let Some(python) = std::env::var_os(var) {
        return found(python.into(), format!("${var}"));
    }
    let venv_python = manifest_path(&format!("../../.peers/{venv}/bin/python"));
    if venv_python.exists() {
        return found(venv_python, format!(".peers/{venv}"));
    }
    if let Some(python) = std::env::var_os("NEUROCHUNK_BENCH_PYTHON") {
        return found(python.into(), "$NEUROCHUNK_BENCH_PYTHON".into());
    }
    Err(format!("no peer Python: .peers/{venv} is missing (scripts/setup-peers) and neither ${var} nor $NEUROCHUNK_BENCH_PYTHON is set"))
}

/// The JSON object after [`RESULT_MARKER`] in a process's output.
fn result_line(stdout: &[u8]) -> Option<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .find_map(|l| l.strip_prefix(RESULT_MARKER))
        .and_then(|l| serde_json::from_str(l).ok())
}

/// Run `py/nwb_hdmf_zarr.py ARGS`; the result object and the process's wall time, or a note.
fn run_python(peer: &Peer, args: &[OsString]) -> Result<(Value, f64), String> {
    let script = manifest_path("py/nwb_hdmf_zarr.py");
    let started = Instant::now();
    let output = Command::new(&peer.python)
        .arg(&script)
        .args(args)
        .envs(peer.env.iter().copied())
        .output()
        .map_err(|e| {
            format!(
                "cannot run {} ({}): {e}",
                peer.python.display(),
                peer.source
            )
        })?;
    let wall = started.elapsed().as_secs_f64();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr
            .lines()
            .rfind(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        let failed = if output.status.code() == Some(3) {
            "not run"
        } else {
            "FAILED"
        };
        return Err(format!("{failed} ({}): {}", peer.source, last.trim()));
    }
    let stderr: Vec<String> = String::from_utf8_lossy(&output.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(10)
        .map(str::to_string)
        .collect();
    result_line(&output.stdout)
        .map(|mut v| {
            if !stderr.is_empty() {
                v["stderr"] = json!(stderr);
            }
            (v, wall)
        })
        .ok_or_else(|| {
            format!(
                "no result line from {} ({})",
                peer.python.display(),
                peer.source
            )
        })
}

/// Run one neurochunk measurement in a fresh child; the result object and the child's wall time.
fn run_child(request: &NwbRequest) -> BenchResult<(Value, f64)> {
    let exe = std::env::current_exe().context("locating the bench executable")?;
    let started = Instant::now();
    let output = Command::new(&exe)
        .args(request.to_args())
        .output()
        .context(format!("starting {}", exe.display()))?;
    let wall = started.elapsed().as_secs_f64();
    let what = format!("NWB {} {}", request.convention.label(), request.op.name());
    if !output.status.success() {
        return Err(BenchError(format!(
            "measurement {what} FAILED ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    let value = result_line(&output.stdout).ok_or_else(|| {
        BenchError(format!(
            "measurement {what}: the child printed no result line"
        ))
    })?;
    Ok((value, wall))
}

/// Repetitions of one (convention, operation, library): result objects and process wall times.
#[derive(Default)]
struct Runs {
    results: Vec<Value>,
    walls: Vec<f64>,
    /// Why the row has no numbers (peer missing or failed).
    note: Option<String>,
}

impl Runs {
    fn push(&mut self, (value, wall): (Value, f64)) {
        self.results.push(value);
        self.walls.push(wall);
    }

    fn seconds(&self) -> Vec<f64> {
        self.results
            .iter()
            .filter_map(|r| r["seconds"].as_f64())
            .collect()
    }

    fn best(&self) -> Option<f64> {
        self.seconds().into_iter().min_by(f64::total_cmp)
    }

    fn best_wall(&self) -> Option<f64> {
        self.walls.iter().copied().min_by(f64::total_cmp)
    }

    fn max_u64(&self, key: &str) -> Option<u64> {
        self.results.iter().filter_map(|r| r[key].as_u64()).max()
    }

    fn to_json(&self) -> Value {
        json!({
            "best_seconds": self.best(),
            "seconds": self.seconds(),
            "process_seconds": self.walls,
            "peak_rss_bytes": self.results.iter().map(|r| r["peak_rss_bytes"].as_u64()).collect::<Vec<_>>(),
            "runs": self.results,
            "note": self.note,
        })
    }
}

/// Everything measured for one convention.
struct ConventionRuns {
    convention: Convention,
    peer_source: Option<String>,
    namespaces: Vec<PathBuf>,
    write: Runs,
    open: Runs,
    validate: Runs,
    peer_read: Runs,
    stored_bytes: u64,
    stored_files: u64,
}

/// Total size and number of the files under `dir`.
fn tree_size(dir: &Path) -> BenchResult<(u64, u64)> {
    let mut total = (0, 0);
    for entry in std::fs::read_dir(dir).context(format!("listing {}", dir.display()))? {
        let entry = entry.context(format!("listing {}", dir.display()))?;
        let meta = entry
            .metadata()
            .context(format!("inspecting {}", entry.path().display()))?;
        if meta.is_dir() {
            let (bytes, files) = tree_size(&entry.path())?;
            total = (total.0 + bytes, total.1 + files);
        } else {
            total = (total.0 + meta.len(), total.1 + 1);
        }
    }
    Ok(total)
}

fn secs(s: Option<f64>) -> String {
    match s {
        None => "n/a".into(),
        Some(s) if s < 10.0 => format!("{s:.3}"),
        Some(s) => format!("{s:.1}"),
    }
}

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or_else(
        || "?".into(),
        |b| format!("{:.0}", b as f64 / (1 << 20) as f64),
    )
}

fn ratio(peer: Option<f64>, ours: Option<f64>) -> Option<f64> {
    Some(peer? / ours?)
}

fn measure(
    convention: Convention,
    context: &ExtraContext,
    scale: usize,
) -> BenchResult<ConventionRuns> {
    let label = convention.label();
    // Each write repetition gets its own file, and none is deleted before the set ends: ext4
    // without a journal (the development VM) skips recently deleted inodes when allocating, so
    // rewriting a just-deleted tree of ~50,000 files got slower with every repetition (6 s,
    // 18 s, 27 s). The reads use the last file written.
    let rep_path = |rep: usize| {
        context
            .dir
            .join(format!("demo-{label}-{}.nwb.zarr", rep + 1))
    };
    let path = rep_path(context.reps - 1);
    let peer = peer(convention);
    // The schema pynwb ships, cached in the file as pynwb would; found through the peer Python.
    let mut runs = ConventionRuns {
        convention,
        peer_source: peer.as_ref().ok().map(|p| p.source.clone()),
        namespaces: Vec::new(),
        write: Runs::default(),
        open: Runs::default(),
        validate: Runs::default(),
        peer_read: Runs::default(),
        stored_bytes: 0,
        stored_files: 0,
    };
    match &peer {
        Ok(p) => match run_python(p, &["namespaces".into()]) {
            Ok((v, _)) => {
                runs.namespaces = v["namespaces"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(PathBuf::from)
                            .collect()
                    })
                    .unwrap_or_default()
            }
            Err(note) => eprintln!("  nwb {label}: no namespaces to cache: {note}"),
        },
        Err(note) => eprintln!("  nwb {label}: no namespaces to cache: {note}"),
    }
    let namespaces = runs.namespaces.clone();
    let request = |op, path: &Path| NwbRequest {
        op,
        convention,
        scale,
        path: path.to_path_buf(),
        namespaces: namespaces.clone(),
    };
    for rep in 0..context.reps {
        let path = rep_path(rep);
        if path.exists() {
            std::fs::remove_dir_all(&path).context(format!("removing {}", path.display()))?;
        }
        let m = run_child(&request(NwbOp::Write, &path))?;
        eprintln!(
            "  nwb {label} write      neurochunk rep {}: {:.3} s (process {:.3} s)",
            rep + 1,
            m.0["seconds"].as_f64().unwrap_or(f64::NAN),
            m.1
        );
        runs.write.push(m);
    }
    (runs.stored_bytes, runs.stored_files) = tree_size(&path)?;
    for rep in 0..context.reps {
        let m = run_child(&request(NwbOp::Open, &path))?;
        eprintln!(
            "  nwb {label} open+list  neurochunk rep {}: {:.3} s (process {:.3} s), {} typed objects",
            rep + 1,
            m.0["seconds"].as_f64().unwrap_or(f64::NAN),
            m.1,
            m.0["typed_objects"]
        );
        runs.open.push(m);
    }
    if namespaces.is_empty() {
        runs.validate.note = Some("no namespaces cached: nothing to validate against".into());
    } else {
        for rep in 0..context.reps {
            let m = run_child(&request(NwbOp::Validate, &path))?;
            eprintln!(
                "  nwb {label} validate   neurochunk rep {}: {:.3} s (process {:.3} s), {} typed objects",
                rep + 1,
                m.0["seconds"].as_f64().unwrap_or(f64::NAN),
                m.1,
                m.0["typed_objects"]
            );
            runs.validate.push(m);
        }
    }
    match &peer {
        Err(note) => runs.peer_read.note = Some(note.clone()),
        Ok(p) => {
            for rep in 0..context.reps {
                match run_python(p, &["read".into(), path.clone().into(), label.into()]) {
                    Ok(m) => {
                        eprintln!(
                            "  nwb {label} read       {PEER:<10} rep {}: {:.3} s (imports {:.3} s, process {:.3} s), {} objects, {} warnings",
                            rep + 1,
                            m.0["seconds"].as_f64().unwrap_or(f64::NAN),
                            m.0["import_seconds"].as_f64().unwrap_or(f64::NAN),
                            m.1,
                            m.0["objects"],
                            m.0["warnings_total"]
                        );
                        if let Some(objects) = m.0["objects"].as_u64() {
                            if objects as usize <= scale {
                                runs.peer_read.note = Some(format!(
                                    "read only {objects} objects, expected more than {scale}"
                                ));
                            }
                        }
                        runs.peer_read.push(m);
                    }
                    Err(note) => {
                        eprintln!(
                            "  nwb {label} read       {PEER:<10} rep {}: {note}",
                            rep + 1
                        );
                        runs.peer_read.note = Some(note);
                        break;
                    }
                }
            }
        }
    }
    Ok(runs)
}

/// `pynwb.validate` of the HDF5 twin of one convention's file (exported once by that
/// convention's peer), best of the repetitions; the export's result is kept for the notes.
struct TwinRuns {
    /// The convention whose file was exported.
    from: Option<Convention>,
    export: Option<Value>,
    validate: Runs,
}

fn measure_twin(all: &[ConventionRuns], context: &ExtraContext) -> TwinRuns {
    let mut twin = TwinRuns {
        from: None,
        export: None,
        validate: Runs::default(),
    };
    // The v3 file (hdmf-zarr 0.14 reads it faster), else the legacy one.
    let source = all
        .iter()
        .rev()
        .find(|c| c.peer_source.is_some() && !c.namespaces.is_empty());
    let Some(source) = source else {
        twin.validate.note =
            Some("no peer Python with cached namespaces to export an HDF5 twin".into());
        return twin;
    };
    let label = source.convention.label();
    let Ok(p) = peer(source.convention) else {
        return twin;
    };
    let path = context
        .dir
        .join(format!("demo-{label}-{}.nwb.zarr", context.reps));
    let h5 = context.dir.join(format!("demo-{label}-twin.nwb.h5"));
    let _ = std::fs::remove_file(&h5);
    match run_python(
        &p,
        &[
            "export".into(),
            path.into(),
            label.into(),
            h5.clone().into(),
        ],
    ) {
        Err(note) => {
            eprintln!("  nwb HDF5 twin export ({label}): {note}");
            twin.validate.note = Some(format!("export to HDF5: {note}"));
            return twin;
        }
        Ok((v, wall)) => {
            eprintln!(
                "  nwb HDF5 twin of the {label} file: exported in {:.1} s (process {wall:.1} s)",
                v["seconds"].as_f64().unwrap_or(f64::NAN)
            );
            twin.export = Some(v);
            twin.from = Some(source.convention);
        }
    }
    for rep in 0..context.reps {
        match run_python(&p, &["validate".into(), h5.clone().into()]) {
            Ok(m) => {
                eprintln!(
                    "  nwb HDF5 twin validate pynwb      rep {}: {:.3} s (imports {:.3} s, process {:.3} s), {} error(s)",
                    rep + 1,
                    m.0["seconds"].as_f64().unwrap_or(f64::NAN),
                    m.0["import_seconds"].as_f64().unwrap_or(f64::NAN),
                    m.1,
                    m.0["errors"]
                );
                twin.validate.push(m);
            }
            Err(note) => {
                twin.validate.note = Some(note);
                break;
            }
        }
    }
    twin
}

fn convention_title(convention: Convention) -> &'static str {
    match convention {
        Convention::Legacy => "legacy (Zarr v2)",
        Convention::V3 => "v3 (Zarr v3)",
    }
}

fn render_table(all: &[ConventionRuns], twin: &TwinRuns, scale: usize, reps: usize) -> String {
    let mut lines = vec![[
        "file",
        "op (neurochunk | peer)",
        "neurochunk s",
        "peer s",
        "peer/neurochunk",
        "process s (nc / peer)",
        "peak RSS MiB (nc / peer)",
        "objects (nc / peer)",
    ]
    .map(String::from)
    .to_vec()];
    let mut notes = Vec::new();
    for c in all {
        let title = convention_title(c.convention);
        lines.push(vec![
            title.into(),
            "write demo file".into(),
            secs(c.write.best()),
            "-".into(),
            "-".into(),
            format!("{} / -", secs(c.write.best_wall())),
            format!("{} / -", mib(c.write.max_u64("peak_rss_bytes"))),
            "-".into(),
        ]);
        let r = ratio(c.peer_read.best(), c.open.best());
        let objects = |runs: &Runs, key: &str| {
            runs.max_u64(key)
                .map_or_else(|| "n/a".into(), |n| n.to_string())
        };
        lines.push(vec![
            title.into(),
            "open + list typed | NWBZarrIO.read".into(),
            secs(c.open.best()),
            secs(c.peer_read.best()),
            r.map_or_else(|| "n/a".into(), |r| format!("{r:.1}")),
            format!(
                "{} / {}",
                secs(c.open.best_wall()),
                secs(c.peer_read.best_wall())
            ),
            format!(
                "{} / {}",
                mib(c.open.max_u64("peak_rss_bytes")),
                mib(c.peer_read.max_u64("peak_rss_bytes"))
            ),
            format!(
                "{} / {}",
                objects(&c.open, "typed_objects"),
                objects(&c.peer_read, "objects")
            ),
        ]);
        lines.push(vec![
            title.into(),
            "validate | pynwb.validate (HDF5 twin)".into(),
            secs(c.validate.best()),
            secs(twin.validate.best()),
            ratio(twin.validate.best(), c.validate.best())
                .map_or_else(|| "n/a".into(), |r| format!("{r:.1}")),
            format!(
                "{} / {}",
                secs(c.validate.best_wall()),
                secs(twin.validate.best_wall())
            ),
            format!(
                "{} / {}",
                mib(c.validate.max_u64("peak_rss_bytes")),
                mib(twin.validate.max_u64("peak_rss_bytes"))
            ),
            format!("{} / -", objects(&c.validate, "typed_objects")),
        ]);
        if let Some(note) = &c.validate.note {
            notes.push(format!("{title}: validate: {note}"));
        }
        let mut about = format!(
            "{title}: {:.0} MiB in {} files, {} cached namespace file(s)",
            c.stored_bytes as f64 / (1 << 20) as f64,
            c.stored_files,
            c.namespaces.len()
        );
        if let Some(first) = c.peer_read.results.first() {
            let imports = c
                .peer_read
                .results
                .iter()
                .filter_map(|r| r["import_seconds"].as_f64())
                .min_by(f64::total_cmp);
            about.push_str(&format!(
                "; peer {}: Python {}, pynwb {}, hdmf-zarr {}, zarr {}; imports {} s",
                c.peer_source.as_deref().unwrap_or("?"),
                first["python"].as_str().unwrap_or("?"),
                first["pynwb"].as_str().unwrap_or("?"),
                first["hdmf_zarr"].as_str().unwrap_or("?"),
                first["zarr"].as_str().unwrap_or("?"),
                secs(imports)
            ));
            let total = first["warnings_total"].as_u64().unwrap_or(0);
            if total > 0 {
                about.push_str(&format!(
                    "; {total} Python warning(s) during imports and the read (first per code location):"
                ));
                for w in first["warnings"].as_array().into_iter().flatten() {
                    about.push_str(&format!(
                        "\n    {} x {}",
                        w["count"],
                        w["message"].as_str().unwrap_or("?")
                    ));
                }
            }
        }
        if let Some(lines) = c
            .peer_read
            .results
            .first()
            .and_then(|r| r["stderr"].as_array())
        {
            about.push_str("; the peer printed on stderr:");
            for line in lines {
                about.push_str(&format!("\n    {}", line.as_str().unwrap_or("?")));
            }
        }
        if let Some(note) = &c.peer_read.note {
            about.push_str(&format!("\n    hdmf-zarr row: {note}"));
        }
        notes.push(about);
    }
    match (&twin.export, twin.from) {
        (Some(export), Some(from)) => notes.push(format!(
            "HDF5 twin: the {} file exported by NWBHDF5IO.export in {} s ({:.0} MiB); pynwb.validate: {} error(s){}",
            convention_title(from),
            secs(export["seconds"].as_f64()),
            export["bytes"].as_f64().unwrap_or(0.0) / (1 << 20) as f64,
            twin.validate
                .results
                .first()
                .and_then(|r| r["errors"].as_u64())
                .map_or_else(|| "?".into(), |n| n.to_string()),
            twin.validate
                .note
                .as_deref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default()
        )),
        _ => notes.push(format!(
            "HDF5 twin: {}",
            twin.validate.note.as_deref().unwrap_or("not made")
        )),
    }
    format!(
        "\nNWB on Zarr: ecephys demo file + {scale} TimeSeries, best of {reps} (fresh process each)\n\n{}\n\
         Times are the operation alone (process start-up, imports and loading the namespace YAML excluded); \
         'process s' is the whole process (interpreter start-up and imports included for the peer). \
         Ratio = peer time / neurochunk time (the peer: hdmf-zarr for reads, pynwb for validation) (higher: neurochunk faster). Objects: neurochunk's typed \
         objects / len(list(nwbfile.objects)). Validate: neurochunk opens and validates the Zarr file; the peer is \
         pynwb.validate(path=...) of the file's HDF5 twin (both against the cached namespaces). Warm page cache: \
         reads follow the write.\n{}\n",
        crate::harness::render_columns(&lines),
        notes.join("\n")
    )
}

fn report(all: &[ConventionRuns], twin: &TwinRuns, scale: usize) -> Value {
    let rows: Vec<Value> = all
        .iter()
        .flat_map(|c| {
            let label = c.convention.label();
            let write = json!({
                "convention": label,
                "op": "write",
                "results": {"neurochunk": c.write.to_json()},
                "ratio": null,
            });
            let read = json!({
                "convention": label,
                "op": "open+list typed objects / NWBZarrIO.read",
                "results": {"neurochunk": c.open.to_json(), PEER: c.peer_read.to_json()},
                "ratio": ratio(c.peer_read.best(), c.open.best()),
                "process_ratio": ratio(c.peer_read.best_wall(), c.open.best_wall()),
                "peer_python": c.peer_source,
            });
            let validate = json!({
                "convention": label,
                "op": "open+validate / pynwb.validate of the HDF5 twin",
                "results": {"neurochunk": c.validate.to_json(), "pynwb": twin.validate.to_json()},
                "ratio": ratio(twin.validate.best(), c.validate.best()),
                "process_ratio": ratio(twin.validate.best_wall(), c.validate.best_wall()),
                "twin_exported_from": twin.from.map(|f| f.label()),
                "twin_export": twin.export,
            });
            [write, read, validate]
        })
        .collect();
    let files: Map<String, Value> = all
        .iter()
        .map(|c| {
            (
                c.convention.label().to_string(),
                json!({"stored_bytes": c.stored_bytes, "stored_files": c.stored_files, "cached_namespace_files": c.namespaces}),
            )
        })
        .collect();
    json!({
        "scale": scale,
        "peer": PEER,
        "ratio": "peer seconds / neurochunk seconds",
        "files": files,
        "rows": rows,
    })
}

fn run(context: &ExtraContext) -> BenchResult<Value> {
    let mut settings: BTreeMap<String, String> = context.settings.clone();
    let scale = match settings.remove("scale") {
        Some(v) => v.parse().context("--nwb-scale")?,
        None if context.smoke => SMOKE_SCALE,
        None => DEFAULT_SCALE,
    };
    if let Some(name) = settings.keys().next() {
        return Err(BenchError(format!(
            "unknown option --nwb-{name} (the NWB rows know --nwb-scale)"
        )));
    }
    eprintln!(
        "NWB rows: demo file + {scale} TimeSeries, best of {}",
        context.reps
    );
    let all = CONVENTIONS
        .into_iter()
        .map(|c| measure(c, context, scale))
        .collect::<BenchResult<Vec<_>>>()?;
    let twin = measure_twin(&all, context);
    println!("{}", render_table(&all, &twin, scale, context.reps));
    Ok(report(&all, &twin, scale))
}
