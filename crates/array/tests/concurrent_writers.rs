//! Concurrent writers in separate processes: six processes write disjoint slabs of one array
//! in each format (N5; Zarr v2; Zarr v3 sharded, where a slab is whole shards). Each writer
//! writes one plane at a time, so every chunk (or shard) of its slab is rewritten many times by
//! read-modify-write, while the others do the same next to it. Every element must end up as
//! written, and no temporary file may be left behind.
//!
//! Writers must own whole chunks (whole shards for sharded arrays): two writers updating parts
//! of one chunk race, and the last to store it wins (see docs/concurrency.md).
//!
//! This target has no test harness: run without arguments it is the test, and it starts copies
//! of itself with `NEUROCHUNK_WRITER_DIR` / `NEUROCHUNK_WRITER_INDEX` set as the writers.

use std::process::ExitCode;
use std::sync::Arc;

use neurochunk_array::{
    parse_selection, Array, ArrayBuilder, ArrayBytes, Codec, DataType, FsStore, Store, ZarrFormat,
};

const WRITERS: u64 = 6;
const SHAPE: [u64; 3] = [48, 64, 48];

fn u16s(values: &[u16]) -> ArrayBytes {
    ArrayBytes::Fixed(values.iter().flat_map(|v| v.to_le_bytes()).collect())
}

fn expected(plane: usize, within: usize) -> u16 {
    (plane * 3 + within * 7 + 1) as u16
}

/// One writer: slab `index` along the first axis (8 planes: two chunk rows, one shard row),
/// written a plane at a time.
fn write_slab(dir: &str, index: u64) {
    let s: Arc<dyn Store> = Arc::new(FsStore::new(dir));
    let a = Array::open(s, "vol").expect("open the array");
    for plane in index * 8..(index + 1) * 8 {
        let values: Vec<u16> = (0..64 * 48).map(|i| expected(plane as usize, i)).collect();
        a.write(
            &parse_selection(&format!("{plane}")).unwrap(),
            &u16s(&values),
        )
        .expect("write a plane");
    }
}

/// Every file below `dir`, by name.
fn files_below(dir: &std::path::Path) -> Vec<String> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
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
    files
}

/// `format`, and the number of chunk (or shard) files plus metadata documents it ends with.
fn concurrent_processes_write_disjoint_chunks(label: &str, builder: ArrayBuilder, files: usize) {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    builder.create(s.clone(), "vol").unwrap();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..WRITERS)
        .map(|i| {
            std::process::Command::new(&exe)
                .env("NEUROCHUNK_WRITER_DIR", dir.path())
                .env("NEUROCHUNK_WRITER_INDEX", i.to_string())
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut child in children {
        assert!(child.wait().unwrap().success(), "{label}: a writer failed");
    }
    let (shape, data) = Array::open(s, "vol").unwrap().read_all().unwrap();
    assert_eq!(shape, SHAPE.map(|d| d as usize), "{label}");
    let ArrayBytes::Fixed(bytes) = data else {
        panic!("{label}: expected fixed-size data")
    };
    for (i, pair) in bytes.chunks_exact(2).enumerate() {
        let v = u16::from_le_bytes([pair[0], pair[1]]);
        assert_eq!(
            v,
            expected(i / (64 * 48), i % (64 * 48)),
            "{label}: element {i}"
        );
    }
    let names = files_below(dir.path());
    assert!(
        names
            .iter()
            .all(|f| !f.starts_with('.') || f.starts_with(".z")),
        "{label}: temporary files left: {names:?}"
    );
    assert_eq!(names.len(), files, "{label}: {names:?}");
}

fn main() -> ExitCode {
    if let (Ok(dir), Ok(index)) = (
        std::env::var("NEUROCHUNK_WRITER_DIR"),
        std::env::var("NEUROCHUNK_WRITER_INDEX"),
    ) {
        write_slab(&dir, index.parse().expect("a writer index"));
        return ExitCode::SUCCESS;
    }
    let chunked = |format: ZarrFormat| {
        ArrayBuilder::new(SHAPE, DataType::UInt16)
            .format(format)
            .chunks([4, 16, 16])
            .codecs([Codec::Gzip { level: 1 }])
    };
    let cases = [
        // 12 × 4 × 3 blocks, the dataset's and the root's attributes.json.
        ("N5", chunked(ZarrFormat::N5), 12 * 4 * 3 + 2),
        // 12 × 4 × 3 chunks, the array's .zarray and the root's .zgroup.
        ("Zarr v2", chunked(ZarrFormat::V2), 12 * 4 * 3 + 2),
        // 6 shards of 8 × 64 × 48 (one per writer), the array's and the root's zarr.json.
        (
            "Zarr v3 sharded",
            ArrayBuilder::new(SHAPE, DataType::UInt16)
                .chunks([4, 16, 16])
                .shards([8, 64, 48])
                .codecs([Codec::Gzip { level: 1 }]),
            6 + 2,
        ),
    ];
    let count = cases.len();
    for (label, builder, files) in cases {
        concurrent_processes_write_disjoint_chunks(label, builder, files);
    }
    println!("concurrent_writers: {count} passed, 0 failed");
    ExitCode::SUCCESS
}
