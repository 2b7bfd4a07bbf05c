//! The parent side: command-line options, the measurement loop (one child process per
//! measurement), the results table and the JSON report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use serde_json::{json, Map, Value};

use crate::error::{BenchError, BenchResult, Context};
use crate::protocol::{self, ChildRequest, Measurement, RESULT_MARKER};
use crate::rows::{Library, Op, Row, ROWS};
use crate::volume;

/// The ratio neurochunk/peer the project aims for on every row.
pub const RATIO_GOAL: f64 = 0.8;

/// A further set of benchmarks the bench executable can run after the array rows, enabled by
/// its own command-line flag (for example neurarrow table IO behind `--tables`).
pub struct ExtraSet {
    /// The flag that enables it, e.g. `--tables`.
    pub flag: &'static str,
    /// One line for `--help`.
    pub help: &'static str,
    /// Runs the set (printing its own table) and returns its results for the JSON report.
    pub run: fn(&ExtraContext) -> BenchResult<Value>,
    /// The set measures the test volume: the harness writes it (once for all) and hands it over
    /// in [`ExtraContext::volume`].
    pub needs_volume: bool,
}

/// The raw test volume on disk (little-endian `uint16`, C order), see [`crate::volume`].
#[derive(Clone, Debug)]
pub struct Volume {
    pub path: PathBuf,
    /// Edge of the cube (`--size`).
    pub size: usize,
    /// [`volume::checksum`] of its bytes.
    pub checksum: u64,
}

/// What an [`ExtraSet`] is given.
pub struct ExtraContext {
    /// Directory for its files (inside the run's working directory).
    pub dir: PathBuf,
    /// Repetitions requested with `--reps` (best of N).
    pub reps: usize,
    /// Whether this is the quick smoke run (no `--bench`, e.g. under `cargo test`).
    pub smoke: bool,
    /// The test volume, for a set that [`ExtraSet::needs_volume`].
    pub volume: Option<Volume>,
    /// `--fsync`: writes are to be durable.
    pub fsync: bool,
    /// Settings given as `<flag>-<name> VALUE` (e.g. `--nwb-scale 500` gives `scale` = `500`
    /// to the set whose flag is `--nwb`); a set should reject names it does not know (the
    /// `--nwb` set does; `--tables` has no settings and ignores them).
    pub settings: BTreeMap<String, String>,
}

/// Command-line options of the parent.
#[derive(Clone, Debug)]
pub struct Options {
    pub size: usize,
    pub reps: usize,
    pub dir: Option<PathBuf>,
    pub json: Option<PathBuf>,
    pub rows: Vec<&'static Row>,
    pub libraries: Option<Vec<String>>,
    pub keep: bool,
    /// Flags of the [`ExtraSet`]s to run.
    pub extras: Vec<String>,
    /// Settings of the extra sets: flag -> (name -> value), from `<flag>-<name> VALUE`.
    pub extra_settings: BTreeMap<String, BTreeMap<String, String>>,
    /// No `--bench` flag: run a quick smoke configuration unless sizes are given.
    pub smoke: bool,
    /// Make every library's writes durable (`fsync` of each written file), see
    /// [`Library::syncs_writes`].
    pub fsync: bool,
}

fn help(extras: &[ExtraSet]) -> String {
    let mut text = String::from(
        "neurochunk side-by-side array benchmark

usage: cargo bench -p neurochunk-bench --bench arrays -- [options]

  --size N        edge of the cubic uint16 volume (default 512; 64 without --bench)
  --reps N        repetitions per measurement, best is reported (default 3; 1 without --bench)
  --rows A,B      rows to run, from: zstd, sharded, raw, zstd-v2 (default all; `none` for
                  only the extra sets below)
  --libs A,B      libraries to run (default all)
  --dir PATH      parent of the working directory (default: target/neurochunk-bench)
  --json OUT      also write the results as JSON to OUT
  --keep          keep the working directory (arrays and the raw volume)
  --fsync         time writes as durable for every library (zarrs always fsyncs each
                  file; neurochunk with FsStore's Durability::Fsync, off by default)
",
    );
    for extra in extras {
        text.push_str(&format!("  {:<15} {}\n", extra.flag, extra.help));
    }
    if !extras.is_empty() {
        text.push_str("  FLAG-NAME V     a setting of the extra set FLAG (also enables it), e.g. --nwb-scale 500\n");
    }
    text
}

/// The extra set and setting name of a `<flag>-<name>` argument, if it is one.
fn extra_setting<'a>(extras: &[ExtraSet], arg: &'a str) -> Option<(&'static str, &'a str)> {
    extras.iter().find_map(|e| {
        let name = arg.strip_prefix(e.flag)?.strip_prefix('-')?;
        (!name.is_empty()).then_some((e.flag, name))
    })
}

impl Options {
    /// Parse the parent's arguments (everything cargo passes after `--`, plus its `--bench`).
    pub fn parse(args: &[String], extras: &[ExtraSet]) -> BenchResult<Options> {
        let smoke = !args.iter().any(|a| a == "--bench");
        let mut options = Options {
            size: if smoke { 64 } else { 512 },
            reps: if smoke { 1 } else { 3 },
            dir: None,
            json: None,
            rows: ROWS.iter().collect(),
            libraries: None,
            keep: false,
            extras: Vec::new(),
            extra_settings: BTreeMap::new(),
            smoke,
            fsync: false,
        };
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let mut value = |flag: &str| {
                it.next()
                    .cloned()
                    .ok_or_else(|| BenchError::msg(format!("{flag} needs a value")))
            };
            match arg.as_str() {
                "--bench" => {}
                "--size" => options.size = value("--size")?.parse().context("--size")?,
                "--reps" => options.reps = value("--reps")?.parse().context("--reps")?,
                "--dir" => options.dir = Some(value("--dir")?.into()),
                "--json" => options.json = Some(value("--json")?.into()),
                "--keep" => options.keep = true,
                "--fsync" => options.fsync = true,
                "--rows" => {
                    let list = value("--rows")?;
                    options.rows = if list == "none" { "" } else { list.as_str() }
                        .split(',')
                        .filter(|id| !id.is_empty())
                        .map(|id| {
                            ROWS.iter()
                                .find(|r| r.id == id)
                                .ok_or_else(|| BenchError::msg(format!("unknown row {id:?}")))
                        })
                        .collect::<BenchResult<_>>()?;
                }
                "--libs" => {
                    options.libraries =
                        Some(value("--libs")?.split(',').map(str::to_string).collect())
                }
                "-h" | "--help" => return Err(BenchError(help(extras))),
                flag if extras.iter().any(|e| e.flag == flag) => {
                    if !options.extras.iter().any(|f| f == flag) {
                        options.extras.push(flag.to_string())
                    }
                }
                arg if extra_setting(extras, arg).is_some() => {
                    let (flag, name) = extra_setting(extras, arg).expect("checked by the guard");
                    let setting = value(arg)?;
                    if !options.extras.iter().any(|f| f == flag) {
                        options.extras.push(flag.to_string())
                    }
                    options
                        .extra_settings
                        .entry(flag.to_string())
                        .or_default()
                        .insert(name.to_string(), setting);
                }
                other => {
                    return Err(BenchError::msg(format!(
                        "unknown option {other:?}\n\n{}",
                        help(extras)
                    )))
                }
            }
        }
        if options.size == 0 || options.reps == 0 {
            return Err(BenchError::msg("--size and --reps must be positive"));
        }
        Ok(options)
    }
}

/// Entry point of the bench executable: child mode with `--child`, otherwise the parent.
/// `libraries` are the implementations compared (neurochunk first, the peer second);
/// `peer` names the peer and its version for the report header.
pub fn main(libraries: &[&dyn Library], peer: &str, extras: &[ExtraSet]) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return match ChildRequest::parse(&args[1..])
            .and_then(|r| protocol::run_child(&r, libraries))
        {
            Ok(m) => {
                println!("{RESULT_MARKER}{}", m.to_json());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("benchmark child failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let result = Options::parse(&args, extras)
        .and_then(|options| run_parent(&options, libraries, peer, extras));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// The default parent of working directories: `target/neurochunk-bench` next to the running
/// executable (`target/<profile>/deps/…`), or the system temporary directory.
fn default_base_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .filter(|target| target.file_name().is_some_and(|n| n == "target"))
        .unwrap_or_else(std::env::temp_dir)
        .join("neurochunk-bench")
}

/// Best (minimum-time) measurement of each (row, op, library), plus all times.
#[derive(Default)]
pub(crate) struct Cell {
    pub(crate) runs: Vec<Measurement>,
}

impl Cell {
    pub(crate) fn best(&self) -> Option<&Measurement> {
        self.runs
            .iter()
            .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
    }

    pub(crate) fn max_peak_rss(&self) -> Option<u64> {
        self.runs.iter().filter_map(|m| m.peak_rss_bytes).max()
    }
}

type Key = (&'static str, Op, &'static str);

fn run_parent(
    options: &Options,
    all: &[&dyn Library],
    peer: &str,
    extras: &[ExtraSet],
) -> BenchResult<()> {
    let libraries: Vec<&dyn Library> = match &options.libraries {
        None => all.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| {
                all.iter()
                    .copied()
                    .find(|l| l.name() == n)
                    .ok_or_else(|| BenchError::msg(format!("unknown library {n:?}")))
            })
            .collect::<BenchResult<_>>()?,
    };
    let exe = std::env::current_exe().context("locating the bench executable")?;
    let base = options.dir.clone().unwrap_or_else(default_base_dir);
    let work = base.join(format!("run-{}", std::process::id()));
    std::fs::create_dir_all(&work).context(format!("creating {}", work.display()))?;

    let n = options.size;
    let started = Instant::now();
    let input = work.join(format!("volume-{n}.u16le"));
    let enabled: Vec<&ExtraSet> = extras
        .iter()
        .filter(|e| options.extras.iter().any(|f| f == e.flag))
        .collect();
    let needs_volume = !options.rows.is_empty() || enabled.iter().any(|e| e.needs_volume);
    let expect = if !needs_volume {
        0
    } else {
        let data = volume::generate(n);
        std::fs::write(&input, &data).context(format!("writing {}", input.display()))?;
        volume::checksum(&data)
    };
    let generate_seconds = started.elapsed().as_secs_f64();

    let threads = rayon::current_num_threads();
    let decoded = (n as u64).pow(3) * 2;
    let sync_note = if options.fsync {
        "durable writes for every library (--fsync): neurochunk with its store's \
         Durability::Fsync, files of libraries without such a mode synced by the harness"
            .to_string()
    } else {
        let syncing: Vec<&str> = libraries
            .iter()
            .filter(|l| l.syncs_writes())
            .map(|l| l.name())
            .collect();
        let not: Vec<&str> = libraries
            .iter()
            .filter(|l| !l.syncs_writes())
            .map(|l| l.name())
            .collect();
        match (syncing.is_empty(), not.is_empty()) {
            (false, false) => format!(
                "writes as each library does them: fsync of every file by {}, none by {} (see --fsync)",
                syncing.join(", "),
                not.join(", ")
            ),
            _ => "writes as each library does them".to_string(),
        }
    };
    let header = format!(
        "neurochunk vs {peer}: {n}^3 uint16 ({:.0} MiB decoded), best of {} (fresh process each), {threads} threads, \
         load average {} at start\nfilesystem {}; warm page cache: each read follows the writes (the cache cannot be \
         dropped here); {sync_note}",
        decoded as f64 / (1 << 20) as f64,
        options.reps,
        load_average(),
        work.display()
    );
    if options.smoke {
        eprintln!(
            "(no --bench flag: smoke configuration; run with `cargo bench` for real numbers)"
        );
    }
    eprintln!("{header}");
    if needs_volume {
        eprintln!("volume generated in {generate_seconds:.2} s, checksum {expect:016x}");
    }

    let mut cells: BTreeMap<Key, Cell> = BTreeMap::new();
    let mut stored: BTreeMap<(&'static str, &'static str), u64> = BTreeMap::new();
    for row in &options.rows {
        for op in Op::ALL {
            for rep in 0..options.reps {
                for library in &libraries {
                    let dir = work.join(row.id).join(library.name());
                    if op == Op::Write && dir.exists() {
                        std::fs::remove_dir_all(&dir)
                            .context(format!("removing {}", dir.display()))?;
                    }
                    let request = ChildRequest {
                        library: library.name().to_string(),
                        row,
                        op,
                        dir,
                        size: n,
                        input: input.clone(),
                        expect,
                        fsync: options.fsync,
                    };
                    let m = run_in_child(&exe, &request)?;
                    eprintln!(
                        "  {:<8} {:<5} {:<10} rep {}: {:.3} s  {:.2} GB/s  peak RSS {}",
                        row.id,
                        op.name(),
                        library.name(),
                        rep + 1,
                        m.seconds,
                        m.gbps(),
                        mib(m.peak_rss_bytes)
                    );
                    cells
                        .entry((row.id, op, library.name()))
                        .or_default()
                        .runs
                        .push(m);
                }
            }
            if op == Op::Write {
                for library in &libraries {
                    let dir = work.join(row.id).join(library.name());
                    stored.insert((row.id, library.name()), tree_size(&dir)?);
                }
            }
        }
    }

    if !options.rows.is_empty() {
        let table = render_table(options, &libraries, &cells, &stored);
        println!(
            "{header}\n\n{table}load average {} at the end",
            load_average()
        );
    }

    let mut extra_results = Map::new();
    for extra in enabled {
        let context = ExtraContext {
            dir: work.join(extra.flag.trim_start_matches('-')),
            reps: options.reps,
            smoke: options.smoke,
            volume: extra.needs_volume.then(|| Volume {
                path: input.clone(),
                size: n,
                checksum: expect,
            }),
            fsync: options.fsync,
            settings: options
                .extra_settings
                .get(extra.flag)
                .cloned()
                .unwrap_or_default(),
        };
        std::fs::create_dir_all(&context.dir)
            .context(format!("creating {}", context.dir.display()))?;
        extra_results.insert(
            extra.flag.trim_start_matches('-').to_string(),
            (extra.run)(&context)?,
        );
    }

    if let Some(path) = &options.json {
        let report = json_report(
            options,
            &libraries,
            peer,
            threads,
            expect,
            &cells,
            &stored,
            extra_results,
        );
        let text = serde_json::to_string_pretty(&report).context("serialising the JSON report")?;
        std::fs::write(path, text + "\n").context(format!("writing {}", path.display()))?;
        eprintln!("results written to {}", path.display());
    }
    if options.keep {
        eprintln!("kept {}", work.display());
    } else {
        std::fs::remove_dir_all(&work).context(format!("removing {}", work.display()))?;
    }
    Ok(())
}

/// The 1-minute load average, from `/proc/loadavg` (a busy machine makes every number lower).
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// Run one measurement in a fresh process; a failing child fails the whole run.
pub(crate) fn run_in_child(exe: &Path, request: &ChildRequest) -> BenchResult<Measurement> {
    let output = Command::new(exe)
        .args(request.to_args())
        .output()
        .context(format!("starting {}", exe.display()))?;
    let what = format!(
        "{} {} {}",
        request.library,
        request.row.id,
        request.op.name()
    );
    if !output.status.success() {
        return Err(BenchError(format!(
            "measurement {what} FAILED ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    protocol::parse_child_output(&String::from_utf8_lossy(&output.stdout))
        .context(format!("measurement {what}"))
}

/// Total size of the files under `dir`.
pub(crate) fn tree_size(dir: &Path) -> BenchResult<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).context(format!("listing {}", dir.display()))? {
        let entry = entry.context(format!("listing {}", dir.display()))?;
        let meta = entry
            .metadata()
            .context(format!("inspecting {}", entry.path().display()))?;
        total += if meta.is_dir() {
            tree_size(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

pub(crate) fn mib(bytes: Option<u64>) -> String {
    let Some(bytes) = bytes else {
        return "?".to_string();
    };
    let mib = bytes as f64 / (1 << 20) as f64;
    if mib < 10.0 {
        format!("{mib:.1}")
    } else {
        format!("{mib:.0}")
    }
}

fn ratio(cells: &BTreeMap<Key, Cell>, row: &Row, op: Op, ours: &str, peer: &str) -> Option<f64> {
    let a = cells.get(&(row.id, op, ours))?.best()?;
    let b = cells.get(&(row.id, op, peer))?.best()?;
    Some(b.seconds / a.seconds)
}

fn render_table(
    options: &Options,
    libraries: &[&dyn Library],
    cells: &BTreeMap<Key, Cell>,
    stored: &BTreeMap<(&'static str, &'static str), u64>,
) -> String {
    let names: Vec<&str> = libraries.iter().map(|l| l.name()).collect();
    let mut header = vec!["row".to_string(), "op".to_string()];
    header.extend(names.iter().map(|n| format!("{n} GB/s")));
    header.push(if names.len() == 2 {
        format!("{}/{}", names[0], names[1])
    } else {
        "ratio".into()
    });
    header.push(format!("peak RSS MiB ({})", names.join(" / ")));
    header.push(format!("stored MiB ({})", names.join(" / ")));
    let mut lines = vec![header];
    for row in &options.rows {
        for op in Op::ALL {
            let mut line = vec![row.title.to_string(), op.name().to_string()];
            for name in &names {
                let best = cells.get(&(row.id, op, *name)).and_then(Cell::best);
                line.push(best.map_or_else(|| "n/a".into(), |m| format!("{:.2}", m.gbps())));
            }
            line.push(
                match (names.len() == 2)
                    .then(|| ratio(cells, row, op, names[0], names[1]))
                    .flatten()
                {
                    Some(r) if r < RATIO_GOAL => format!("{r:.2} (< {RATIO_GOAL})"),
                    Some(r) => format!("{r:.2}"),
                    None => "n/a".into(),
                },
            );
            line.push(
                names
                    .iter()
                    .map(|n| mib(cells.get(&(row.id, op, *n)).and_then(Cell::max_peak_rss)))
                    .collect::<Vec<_>>()
                    .join(" / "),
            );
            line.push(
                names
                    .iter()
                    .map(|n| mib(stored.get(&(row.id, *n)).copied()))
                    .collect::<Vec<_>>()
                    .join(" / "),
            );
            lines.push(line);
        }
    }
    let mut out = render_columns(&lines);
    let ratio_note = match names.as_slice() {
        [ours, peer] => {
            format!(" Ratio = {ours} throughput / {peer} throughput; goal >= {RATIO_GOAL}.")
        }
        _ => String::new(),
    };
    out.push_str(&format!(
        "\nGB/s = 10^9 bytes of decoded data / best wall time of the operation alone (no process start-up, input \
         already in memory for writes).{ratio_note} Peak RSS = max VmHWM over repetitions, each in its own process \
         (writes include the {} MiB input buffer). Every read was checked against the volume's checksum.\n",
        mib(Some((options.size as u64).pow(3) * 2)),
    ));
    out
}

#[allow(clippy::too_many_arguments)]
fn json_report(
    options: &Options,
    libraries: &[&dyn Library],
    peer: &str,
    threads: usize,
    checksum: u64,
    cells: &BTreeMap<Key, Cell>,
    stored: &BTreeMap<(&'static str, &'static str), u64>,
    extras: Map<String, Value>,
) -> Value {
    let names: Vec<&str> = libraries.iter().map(|l| l.name()).collect();
    let mut rows = Vec::new();
    for row in &options.rows {
        for op in Op::ALL {
            let mut results = Map::new();
            for name in &names {
                let Some(cell) = cells.get(&(row.id, op, *name)) else {
                    continue;
                };
                let best = cell.best();
                results.insert(
                    name.to_string(),
                    json!({
                        "best_seconds": best.map(|m| m.seconds),
                        "gb_per_s": best.map(Measurement::gbps),
                        "seconds": cell.runs.iter().map(|m| m.seconds).collect::<Vec<_>>(),
                        "peak_rss_bytes": cell.runs.iter().map(|m| m.peak_rss_bytes).collect::<Vec<_>>(),
                        "rss_before_bytes": cell.runs.iter().map(|m| m.rss_before_bytes).collect::<Vec<_>>(),
                        "stored_bytes": stored.get(&(row.id, *name)),
                    }),
                );
            }
            let ratio = (names.len() == 2)
                .then(|| ratio(cells, row, op, names[0], names[1]))
                .flatten();
            rows.push(json!({
                "row": row.id,
                "title": row.title,
                "op": op.name(),
                "results": results,
                "ratio": ratio,
                "ratio_goal_met": ratio.map(|r| r >= RATIO_GOAL),
            }));
        }
    }
    json!({
        "benchmark": "neurochunk-bench arrays",
        "peer": peer,
        "libraries": names,
        "size": options.size,
        "shape": vec![options.size; 3],
        "data_type": "uint16",
        "decoded_bytes": (options.size as u64).pow(3) * 2,
        "volume_checksum": format!("{checksum:016x}"),
        "reps": options.reps,
        "threads": threads,
        "smoke": options.smoke,
        "page_cache": "warm (reads follow writes; not dropped)",
        "fsync_all_writes": options.fsync,
        "syncs_writes": libraries.iter().map(|l| (l.name().to_string(), Value::Bool(l.syncs_writes()))).collect::<Map<_, _>>(),
        "rows": rows,
        "extras": extras,
    })
}

/// Lay out rows of cells as left-aligned columns; the first row is the header, underlined.
pub(crate) fn render_columns(lines: &[Vec<String>]) -> String {
    let Some(first) = lines.first() else {
        return String::new();
    };
    let widths: Vec<usize> = (0..first.len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l.get(c).map_or(0, |cell| cell.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            out.push_str(&rule.join("  "));
            out.push('\n');
        }
    }
    out
}
