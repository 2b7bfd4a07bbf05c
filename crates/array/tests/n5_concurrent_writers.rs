//! Concurrent writers in separate processes: six processes write disjoint slabs of one N5
//! dataset (blocks are rewritten many times by read-modify-write); every element must end up
//! as written and no temporary file may be left behind.
//!
//! This target has no test harness: run without arguments it is the test, and it starts copies
//! of itself with `NEUROCHUNK_N5_CHILD_DIR` / `NEUROCHUNK_N5_CHILD_INDEX` set as the writers.

use std::process::ExitCode;
use std::sync::Arc;

use neurochunk_array::n5::compression_from_n5_json;
use neurochunk_array::n5::n5_array_metadata;
use neurochunk_array::{parse_selection, Array, ArrayBytes, DataType, FsStore, N5AxisOrder, Store};
use serde_json::{json, Map};

const WRITERS: u64 = 6;

fn u16s(values: &[u16]) -> ArrayBytes {
    ArrayBytes::Fixed(values.iter().flat_map(|v| v.to_le_bytes()).collect())
}

fn expected(plane: usize, within: usize) -> u16 {
    (plane * 3 + within * 7 + 1) as u16
}

/// One writer: slab `index` along the first axis, 8 planes = 2 block rows, written a plane at
/// a time so that blocks are rewritten many times.
fn write_slab(dir: &str, index: u64) {
    let s: Arc<dyn Store> = Arc::new(FsStore::new(dir));
    let a = Array::open(s, "vol").expect("open the dataset");
    for plane in index * 8..(index + 1) * 8 {
        let values: Vec<u16> = (0..64 * 48).map(|i| expected(plane as usize, i)).collect();
        a.write(
            &parse_selection(&format!("{plane}")).unwrap(),
            &u16s(&values),
        )
        .expect("write a plane");
    }
}

fn concurrent_processes_write_disjoint_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    let compression = compression_from_n5_json(&json!({"type": "gzip", "level": 1}), 2).unwrap();
    let meta = n5_array_metadata(
        vec![48, 64, 48],
        vec![4, 16, 16],
        DataType::UInt16,
        compression,
        N5AxisOrder::Listed,
        Map::new(),
        "vol",
    )
    .unwrap();
    Array::create(s.clone(), "vol", meta).unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|i| {
            std::process::Command::new(&exe)
                .env("NEUROCHUNK_N5_CHILD_DIR", dir.path())
                .env("NEUROCHUNK_N5_CHILD_INDEX", i.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a writer process failed");
    }
    let (shape, data) = Array::open(s, "vol").unwrap().read_all().unwrap();
    assert_eq!(shape, vec![48, 64, 48]);
    let ArrayBytes::Fixed(bytes) = data else {
        panic!("expected fixed-size data")
    };
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let v = u16::from_le_bytes([pair[0], pair[1]]);
        assert_eq!(v, expected(i / (64 * 48), i % (64 * 48)), "element {i}");
    }
    // No temporary files are left behind, and every block is in place.
    let mut files = Vec::new();
    let mut dirs = vec![dir.path().to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else {
                files.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    assert!(
        files.iter().all(|f| !f.starts_with('.')),
        "temporary files left: {files:?}"
    );
    assert_eq!(
        files.len(),
        12 * 4 * 3 + 2,
        "blocks plus two attributes.json"
    );
}

fn main() -> ExitCode {
    if let (Ok(dir), Ok(index)) = (
        std::env::var("NEUROCHUNK_N5_CHILD_DIR"),
        std::env::var("NEUROCHUNK_N5_CHILD_INDEX"),
    ) {
        write_slab(&dir, index.parse().expect("a writer index"));
        return ExitCode::SUCCESS;
    }
    concurrent_processes_write_disjoint_blocks();
    println!("n5_concurrent_writers: 1 passed, 0 failed");
    ExitCode::SUCCESS
}
