//! Peak memory of a large contiguous read: 10^8 float64 (800 MB) of a 1-D Zarr v3 array in a
//! temporary directory (chunks of 10^6 elements, `bytes` + `zstd` level 1, values 0, 1, 2, …)
//! must be read, through the command line's path (`parse_selection` + `Array::read`), with at
//! most the output plus 64 MiB of peak RSS. So the selection and the chunk bookkeeping may
//! not grow with the number of elements.
//!
//! `VmHWM` (from `/proc/self/status`) is a high-water mark, so the read runs in a process of
//! its own: this test (`harness = false`) writes the array, then runs its own executable again
//! with `NEUROCHUNK_PEAK_MEMORY_READ=<dir>`, which opens the array, records `VmHWM`, reads,
//! records `VmHWM` again and prints both; the parent checks them.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use neurochunk_array::{
    parse_selection, Array, ArrayBuilder, ArrayBytes, Codec, DataType, FsStore, Selection, Store,
};
use rayon::prelude::*;

const LEN: u64 = 100_000_000;
const CHUNK: usize = 1_000_000;
const OUTPUT_BYTES: u64 = LEN * 8;
const SLACK_BYTES: u64 = 64 << 20;
const READ_ENV: &str = "NEUROCHUNK_PEAK_MEMORY_READ";

/// `VmHWM` of this process, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .expect("VmHWM in /proc/self/status");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmHWM value");
    kib * 1024
}

fn write_array(dir: &Path) {
    let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
    let array = ArrayBuilder::new([LEN], DataType::Float64)
        .chunks([CHUNK])
        .codecs([Codec::zstd(1)])
        .create(store, "")
        .unwrap();
    // One chunk per task, so the writer never holds the whole array either.
    (0..LEN / CHUNK as u64).into_par_iter().for_each(|c| {
        let start = c * CHUNK as u64;
        let bytes: Vec<u8> = (start..start + CHUNK as u64)
            .flat_map(|v| (v as f64).to_le_bytes())
            .collect();
        array
            .write(
                &Selection::from_box(&[start], &[CHUNK as u64]),
                &ArrayBytes::Fixed(bytes),
            )
            .unwrap();
    });
}

/// The child: read everything as `neurochunk get` does, print the peak RSS before and after.
fn read_child(dir: &str) {
    let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
    let array = Array::open(store, "").unwrap();
    let selection = parse_selection("").unwrap();
    let before = peak_rss();
    let started = Instant::now();
    let (shape, data) = array.read(&selection).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let after = peak_rss();
    assert_eq!(shape, vec![LEN as usize]);
    let ArrayBytes::Fixed(bytes) = data else {
        panic!("expected fixed-size data")
    };
    assert_eq!(bytes.len() as u64, OUTPUT_BYTES);
    let wrong = bytes
        .chunks_exact(8)
        .enumerate()
        .position(|(i, b)| f64::from_le_bytes(b.try_into().unwrap()) != i as f64);
    assert_eq!(wrong, None, "first wrong element");
    println!("before={before} after={after} seconds={seconds:.3}");
}

fn main() {
    if let Ok(dir) = std::env::var(READ_ENV) {
        read_child(&dir);
        return;
    }
    if !Path::new("/proc/self/status").exists() {
        println!("peak_memory: skipped (no /proc/self/status on this system)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    write_array(dir.path());
    let write_seconds = started.elapsed().as_secs_f64();
    let stored: u64 = std::fs::read_dir(dir.path().join("c"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    let child = Command::new(std::env::current_exe().unwrap())
        .env(READ_ENV, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&child.stdout);
    assert!(
        child.status.success(),
        "reading child failed: {stdout}\n{}",
        String::from_utf8_lossy(&child.stderr)
    );
    let field = |name: &str| -> f64 {
        stdout
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name}= in the child's output: {stdout}"))
    };
    let (before, after) = (field("before") as u64, field("after") as u64);
    let limit = before + OUTPUT_BYTES + SLACK_BYTES;
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "peak_memory: read of {LEN} float64 ({:.1} MiB stored, written in {write_seconds:.1} s, \
         read in {:.2} s): peak RSS {:.1} MiB before the read, {:.1} MiB after; \
         above the baseline {:.1} MiB = output {:.1} MiB + {:.1} MiB; limit {:.1} MiB",
        mib(stored),
        field("seconds"),
        mib(before),
        mib(after),
        mib(after - before),
        mib(OUTPUT_BYTES),
        mib(after - before) - mib(OUTPUT_BYTES),
        mib(limit)
    );
    assert!(
        after <= limit,
        "peak RSS {after} bytes exceeds the baseline {before} + output {OUTPUT_BYTES} + 64 MiB"
    );
}
