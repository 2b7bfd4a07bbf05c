//! Killing writers: `put`, sharded `put`, `convert`, `nwb convert` / `nwb demo` and
//! `table convert` (to Arrow IPC, Parquet and a Hive directory) are started over an existing
//! destination and killed with SIGKILL after a random delay (seeded, so a failure can be
//! replayed). After every kill the destination must be the complete old version or the
//! complete new one: every metadata document parses, every chunk decodes and the values are
//! one version's; an NWB file is never gone and `nwb check` passes; a table reads whole and
//! holds one version's rows, and nothing a reader would take for data is left beside it.
//! After one more successful run no staging directory or temporary file is left.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array as _, ArrayRef, Float64Array, RecordBatch, UInt64Array};
use arrow::datatypes::{DataType as ArrowType, Field, Schema};
use neurochunk_array::{parse_selection, Array, ArrayBytes, FsStore, Store};
use neurochunk_dtype::{npy, DataType};

const ITERATIONS: usize = 20;
const SHAPE: [usize; 2] = [512, 1024];

/// A small seeded generator (xorshift64*), enough for kill delays.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
}

fn run_ok(args: &[&str]) {
    let out = bin().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "neurochunk {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A version of the data: little-endian float64 bytes, distinct per version.
fn version(v: u64) -> Vec<u8> {
    let n = SHAPE[0] * SHAPE[1];
    (0..n as u64)
        .flat_map(|i| ((i * 3 + v * 1_000_003) as f64 + 0.5).to_le_bytes())
        .collect()
}

fn write_version(path: &Path, v: u64) -> Vec<u8> {
    let data = version(v);
    npy::write_npy(path, &DataType::Float64, &SHAPE, &data).unwrap();
    data
}

/// The whole array at `path` of the store rooted at `root` (every chunk present decodes).
fn read_array(root: &Path, path: &str) -> Result<Vec<u8>, String> {
    let store: Arc<dyn Store> = Arc::new(FsStore::new(root));
    let array = Array::open(store, path).map_err(|e| e.to_string())?;
    let (shape, data) = array
        .read(&parse_selection("").unwrap())
        .map_err(|e| e.to_string())?;
    assert_eq!(shape, SHAPE);
    match data {
        ArrayBytes::Fixed(bytes) => Ok(bytes),
        ArrayBytes::Variable { .. } => Err("variable-length data".into()),
    }
}

/// The hidden directories writers stage in (or move replaced trees to), below `dir`.
fn staging_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            if neurochunk_store::staging::is_staging_name(&name) {
                found.push(e.path());
            } else {
                pending.push(e.path());
            }
        }
    }
    found
}

#[derive(Default, Debug)]
struct Tally {
    runs: usize,
    mid_write: usize,
    completed: usize,
    /// Staging directories left by a kill whose array was read whole.
    staged_checked: usize,
}

/// Start `args`, kill it after `delay`; whether it was killed while its staging directory
/// existed under `dir` (the kill landed mid-write), or `None` when it had already exited.
fn start_and_kill(args: &[String], delay: Duration, dir: &Path) -> Option<bool> {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let staging = !staging_dirs(dir).is_empty();
    let exited = child.try_wait().unwrap().is_some();
    child.kill().ok();
    let status = child.wait().unwrap();
    if exited {
        assert!(status.success(), "neurochunk {args:?} failed: {status}");
        None
    } else {
        Some(staging)
    }
}

/// Time one successful run, to pick the kill delays (up to a bit more than one run; runs
/// that finish before their kill shorten the range).
fn timed(args: &[String]) -> Duration {
    let t = Instant::now();
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_ok(&refs);
    t.elapsed()
}

fn s(x: impl AsRef<std::ffi::OsStr>) -> String {
    x.as_ref().to_string_lossy().into_owned()
}

/// Kill `put` over an existing array `ITERATIONS` times, at the root of a directory and as
/// a node inside a container whose other nodes must stay untouched.
fn kill_put(rng: &mut Rng, extra: &[&str], dir: &Path) -> Tally {
    let inputs = [dir.join("v0.npy"), dir.join("v1.npy")];
    let data = [write_version(&inputs[0], 0), write_version(&inputs[1], 1)];
    let root_dst = dir.join("arr.zarr");
    let container = dir.join("c.zarr");
    let nested = container.join("a/b");
    let put = |input: &Path, dst: &Path| -> Vec<String> {
        let mut a = vec![
            "put".into(),
            s(input),
            s(dst),
            "--format".into(),
            "zarr3".into(),
            "--chunks".into(),
            "64,128".into(),
        ];
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    timed(&put(&inputs[0], &root_dst));
    timed(&put(&inputs[1], &dir.join("c.zarr/other")));
    let full = timed(&put(&inputs[0], &nested));
    let mut max_delay = (full.as_micros() as u64 * 3 / 2).max(2000);
    let mut tally = Tally::default();
    for i in 0..ITERATIONS {
        let (dst, root, node) = if i % 2 == 0 {
            (&root_dst, root_dst.clone(), "")
        } else {
            (&nested, container.clone(), "a/b")
        };
        let next = i % 2 == 0;
        let input = &inputs[usize::from(next) ^ (i / 2 % 2)];
        let delay = Duration::from_micros(rng.below(max_delay));
        tally.runs += 1;
        match start_and_kill(&put(input, dst), delay, dir) {
            None => {
                // Finished before the kill: aim earlier from now on.
                tally.completed += 1;
                max_delay = (max_delay * 3 / 4).max(1000);
            }
            Some(true) => tally.mid_write += 1,
            Some(false) => {}
        }
        let got = read_array(&root, node)
            .unwrap_or_else(|e| panic!("run {i}: {} is unreadable: {e}", dst.display()));
        assert!(
            got == data[0] || got == data[1],
            "run {i}: {} holds neither version",
            dst.display()
        );
        let other = read_array(&container, "other").expect("the container's other node");
        assert!(
            other == data[1],
            "run {i}: the container's other node changed"
        );
        // Whatever a killed sharded writer left in its staging directory decodes: every shard
        // present is whole (values are the new version's or the fill value).
        for staged in staging_dirs(dir) {
            let (sroot, snode) = if staged.starts_with(&container) {
                let name = s(staged.file_name().unwrap());
                (container.clone(), format!("a/{name}"))
            } else {
                (staged.clone(), String::new())
            };
            if let Ok(partial) = read_array(&sroot, &snode) {
                tally.staged_checked += 1;
                for (k, e) in partial.chunks_exact(8).enumerate() {
                    assert!(
                        e == [0; 8]
                            || e == &data[0][k * 8..k * 8 + 8]
                            || e == &data[1][k * 8..k * 8 + 8],
                        "run {i}: a torn chunk in {}",
                        staged.display()
                    );
                }
            }
        }
    }
    // One more successful run of each destination removes what killed runs left.
    let refs = put(&inputs[0], &root_dst);
    run_ok(&refs.iter().map(String::as_str).collect::<Vec<_>>());
    let refs = put(&inputs[0], &nested);
    run_ok(&refs.iter().map(String::as_str).collect::<Vec<_>>());
    let left = staging_dirs(dir);
    assert!(left.is_empty(), "staging directories left: {left:?}");
    assert!(read_array(&root_dst, "").unwrap() == data[0]);
    assert!(read_array(&container, "a/b").unwrap() == data[0]);
    tally
}

#[test]
fn killed_put_leaves_the_old_or_the_new_array() {
    let dir = tempfile::tempdir().unwrap();
    let tally = kill_put(&mut Rng(0x5eed_0001), &[], dir.path());
    eprintln!("put: {tally:?}");
}

#[test]
fn killed_sharded_put_leaves_whole_shards() {
    let dir = tempfile::tempdir().unwrap();
    let tally = kill_put(&mut Rng(0x5eed_0002), &["--shards", "128,256"], dir.path());
    eprintln!("sharded put: {tally:?}");
}

#[test]
fn killed_convert_leaves_the_old_or_the_new_destination() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut rng = Rng(0x5eed_0003);
    let mut data = Vec::new();
    let mut sources = Vec::new();
    for v in 0..2 {
        let npy_path = dir.join(format!("v{v}.npy"));
        data.push(write_version(&npy_path, v));
        let src = dir.join(format!("src{v}.zarr"));
        run_ok(&[
            "put",
            &s(&npy_path),
            &s(&src),
            "--format",
            "zarr2",
            "--chunks",
            "64,128",
        ]);
        sources.push(src);
    }
    let dst = dir.join("dst.zarr");
    let convert = |src: &Path| -> Vec<String> {
        vec![
            "convert".into(),
            s(src),
            s(&dst),
            "--format".into(),
            "zarr3".into(),
        ]
    };
    let full = timed(&convert(&sources[0]));
    let mut max_delay = (full.as_micros() as u64 * 3 / 2).max(2000);
    let mut tally = Tally::default();
    for i in 0..ITERATIONS {
        let delay = Duration::from_micros(rng.below(max_delay));
        tally.runs += 1;
        match start_and_kill(&convert(&sources[(i + 1) % 2]), delay, dir) {
            None => {
                // Finished before the kill: aim earlier from now on.
                tally.completed += 1;
                max_delay = (max_delay * 3 / 4).max(1000);
            }
            Some(true) => tally.mid_write += 1,
            Some(false) => {}
        }
        let got = read_array(&dst, "")
            .unwrap_or_else(|e| panic!("run {i}: {} is unreadable: {e}", dst.display()));
        assert!(got == data[0] || got == data[1], "run {i}: neither version");
    }
    let refs = convert(&sources[1]);
    run_ok(&refs.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(read_array(&dst, "").unwrap() == data[1]);
    let left = staging_dirs(dir);
    assert!(left.is_empty(), "staging directories left: {left:?}");
    eprintln!("convert: {tally:?}");
}

#[test]
fn killed_nwb_writers_never_lose_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut rng = Rng(0x5eed_0004);
    let src = dir.join("src.nwb.zarr");
    let dst = dir.join("out.nwb.zarr");
    run_ok(&["nwb", "demo", &s(&src), "--scale", "60"]);
    let writers: [Vec<String>; 2] = [
        vec![
            "nwb".into(),
            "convert".into(),
            s(&src),
            s(&dst),
            "--convention".into(),
            "zarr3".into(),
        ],
        vec![
            "nwb".into(),
            "demo".into(),
            s(&dst),
            "--scale".into(),
            "60".into(),
        ],
    ];
    let full = timed(&writers[0]).max(timed(&writers[1]));
    let mut max_delay = (full.as_micros() as u64 * 3 / 2).max(2000);
    let mut tally = Tally::default();
    for i in 0..ITERATIONS {
        let delay = Duration::from_micros(rng.below(max_delay));
        tally.runs += 1;
        match start_and_kill(&writers[i % 2], delay, dir) {
            None => {
                // Finished before the kill: aim earlier from now on.
                tally.completed += 1;
                max_delay = (max_delay * 3 / 4).max(1000);
            }
            Some(true) => tally.mid_write += 1,
            Some(false) => {}
        }
        assert!(dst.is_dir(), "run {i}: the NWB file is gone");
        run_ok(&["nwb", "check", &s(&dst)]);
    }
    run_ok(&writers[1].iter().map(String::as_str).collect::<Vec<_>>());
    run_ok(&["nwb", "check", &s(&dst)]);
    let left = staging_dirs(dir);
    assert!(left.is_empty(), "staging directories left: {left:?}");
    eprintln!("nwb: {tally:?}");
}

#[test]
fn concurrent_puts_of_one_destination_all_succeed_and_leave_one_version() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let inputs = [dir.join("v0.npy"), dir.join("v1.npy")];
    let data = [write_version(&inputs[0], 0), write_version(&inputs[1], 1)];
    let dst = dir.join("arr.zarr");
    for round in 0..3 {
        let children: Vec<_> = (0..4)
            .map(|i| {
                bin()
                    .args(["put", &s(&inputs[i % 2]), &s(&dst), "--format", "zarr3"])
                    .args(["--chunks", "64,128"])
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let got = read_array(&dst, "").unwrap();
        assert!(
            got == data[0] || got == data[1],
            "round {round}: neither version"
        );
        let left = staging_dirs(dir);
        assert!(
            left.is_empty(),
            "round {round}: staging directories left: {left:?}"
        );
    }
}

#[test]
fn listings_skip_staging_directories() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let input = dir.join("v0.npy");
    write_version(&input, 0);
    let container = dir.join("c.zarr");
    for format in ["zarr2", "zarr3", "n5"] {
        let node = container.join(format).join("a");
        run_ok(&["put", &s(&input), &s(&node), "--format", format]);
        // What a killed writer of `a` leaves: a complete-looking node under a hidden name.
        let hidden = container
            .join(format)
            .join(".a.neurochunk-staging-4294967-0");
        run_ok(&["put", &s(&input), &s(&hidden), "--format", format]);
        let out = bin()
            .args(["tree", &s(container.join(format))])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains('a'), "{text}");
        assert!(
            !text.contains("staging"),
            "tree lists a staging directory: {text}"
        );
        // The next write of `a` removes it (its process is gone).
        run_ok(&["put", &s(&input), &s(&node), "--format", format]);
        assert!(
            !hidden.exists(),
            "the stale staging directory is still there"
        );
    }
}

/// Rows of a table version: (sample_id, fragment_id, x), sorted; distinct per version.
fn table_rows(v: u64) -> Vec<(u64, u64, u64)> {
    const ROWS: u64 = 250_000;
    (0..ROWS)
        .map(|i| (i, i % 6, ((i * 7 + v * 1_000_003) as f64 + 0.25).to_bits()))
        .collect()
}

/// Write a version as a table at `path` (format from the extension).
fn write_table(path: &Path, v: u64) {
    let rows = table_rows(v);
    let schema = Arc::new(Schema::new(vec![
        Field::new("sample_id", ArrowType::UInt64, false),
        Field::new("fragment_id", ArrowType::UInt64, false),
        Field::new("x", ArrowType::Float64, false),
    ]));
    let batches: Vec<RecordBatch> = rows
        .chunks(64 * 1024)
        .map(|part| {
            let columns: Vec<ArrayRef> = vec![
                Arc::new(UInt64Array::from_iter_values(part.iter().map(|r| r.0))),
                Arc::new(UInt64Array::from_iter_values(part.iter().map(|r| r.1))),
                Arc::new(Float64Array::from_iter_values(
                    part.iter().map(|r| f64::from_bits(r.2)),
                )),
            ];
            RecordBatch::try_new(schema.clone(), columns).unwrap()
        })
        .collect();
    let opts = neurochunk_table::WriteOptions {
        // Several row groups, so a reader of a torn file would notice.
        row_group_rows: 50_000,
        ..Default::default()
    };
    neurochunk_table::io::write_all(path, schema, &batches, &opts).unwrap();
}

/// The rows of the table at `path`, read with the table library, sorted.
fn read_table(path: &Path) -> Result<Vec<(u64, u64, u64)>, String> {
    let (_, batches) = neurochunk_table::io::read_all(path).map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for batch in &batches {
        let column = |name: &str| -> Result<Vec<u64>, String> {
            let c = batch
                .column_by_name(name)
                .ok_or_else(|| format!("no column {name}"))?;
            let c = arrow::compute::cast(c, &ArrowType::UInt64).map_err(|e| e.to_string())?;
            let c = c.as_any().downcast_ref::<UInt64Array>().unwrap();
            Ok(c.values().to_vec())
        };
        let (ids, fragments) = (column("sample_id")?, column("fragment_id")?);
        let x = batch
            .column_by_name("x")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>())
            .ok_or("no column x")?;
        if x.null_count() > 0 {
            return Err("nulls in x".into());
        }
        for i in 0..batch.num_rows() {
            rows.push((ids[i], fragments[i], x.value(i).to_bits()));
        }
    }
    rows.sort_unstable();
    Ok(rows)
}

/// Names in `dir` (recursively below `dst` when it is a directory) that a reader could take for
/// data but are neither the inputs nor the destination, and hidden entries inside `dst`.
fn stray_entries(dir: &Path, inputs: &[PathBuf], dst: &Path) -> Vec<PathBuf> {
    let mut stray = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        let known = inputs.contains(&path) || path == dst;
        // Hidden entries are skipped by table listings; they are the staging directories and
        // temporary files of writers.
        let hidden_writer_file = name.starts_with(".neurochunk-tmp-")
            || neurochunk_store::staging::is_staging_name(&name);
        if !known && !hidden_writer_file {
            stray.push(path);
        }
    }
    if dst.is_dir() {
        let mut pending = vec![dst.to_path_buf()];
        while let Some(d) = pending.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.file_name().to_string_lossy().starts_with('.') {
                    stray.push(e.path());
                } else if e.path().is_dir() {
                    pending.push(e.path());
                }
            }
        }
    }
    stray
}

/// Every path below `dir` with its size, for failure messages.
fn listing(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            let len = e.metadata().map_or(0, |m| m.len());
            out.push((path.strip_prefix(dir).unwrap_or(&path).to_path_buf(), len));
        }
    }
    out.sort();
    out
}

/// Kill `table convert` over an existing destination `ITERATIONS` times.
fn kill_table_convert(rng: &mut Rng, input_ext: &str, dst_name: &str, extra: &[&str]) -> Tally {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let inputs: Vec<PathBuf> = (0..2)
        .map(|v| {
            let p = dir.join(format!("v{v}.{input_ext}"));
            write_table(&p, v);
            p
        })
        .collect();
    let expected = [table_rows(0), table_rows(1)];
    let dst = dir.join(dst_name);
    let convert = |input: &Path| -> Vec<String> {
        let mut a = vec!["table".into(), "convert".into(), s(input), s(&dst)];
        a.extend(extra.iter().map(|x| x.to_string()));
        a
    };
    let full = timed(&convert(&inputs[0]));
    assert!(read_table(&dst).unwrap() == expected[0]);
    let mut max_delay = (full.as_micros() as u64 * 3 / 2).max(2000);
    let mut tally = Tally::default();
    for i in 0..ITERATIONS {
        let delay = Duration::from_micros(rng.below(max_delay));
        tally.runs += 1;
        let mut child = bin()
            .args(convert(&inputs[(i + 1) % 2]))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let writing = std::fs::read_dir(dir).unwrap().flatten().any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(".neurochunk-tmp-")
                || neurochunk_store::staging::is_staging_name(&name)
        });
        let exited = child.try_wait().unwrap().is_some();
        child.kill().ok();
        let status = child.wait().unwrap();
        if exited {
            assert!(status.success(), "run {i}: table convert failed: {status}");
            tally.completed += 1;
            max_delay = (max_delay * 3 / 4).max(1000);
        } else if writing {
            tally.mid_write += 1;
        }
        let got = read_table(&dst)
            .unwrap_or_else(|e| panic!("run {i}: {} is unreadable: {e}", dst.display()));
        assert!(
            got == expected[0] || got == expected[1],
            "run {i}: {} holds neither version ({} rows): {:?}",
            dst.display(),
            got.len(),
            listing(dir)
        );
        let stray = stray_entries(dir, &inputs, &dst);
        assert!(
            stray.is_empty(),
            "run {i}: left where readers look: {stray:?}"
        );
    }
    // One more successful run removes what killed runs left.
    let args = convert(&inputs[1]);
    run_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(read_table(&dst).unwrap() == expected[1]);
    let left: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    tally
}

#[test]
fn killed_table_convert_to_ipc_leaves_the_old_or_the_new_table() {
    let tally = kill_table_convert(&mut Rng(0x5eed_0005), "parquet", "dst.arrow", &[]);
    eprintln!("table convert to IPC: {tally:?}");
}

#[test]
fn killed_table_convert_to_parquet_leaves_the_old_or_the_new_table() {
    let tally = kill_table_convert(&mut Rng(0x5eed_0006), "arrow", "dst.parquet", &[]);
    eprintln!("table convert to Parquet: {tally:?}");
}

#[test]
fn killed_table_convert_to_hive_leaves_the_old_or_the_new_table() {
    let tally = kill_table_convert(
        &mut Rng(0x5eed_0007),
        "parquet",
        "dst.hive",
        &["--partition-by", "fragment_id"],
    );
    eprintln!("table convert to Hive: {tally:?}");
}
