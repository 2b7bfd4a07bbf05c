//! `WriteOptions::durability` reaches the stores the filesystem writer builds: a durable
//! write syncs every file of the NWB file and the directories (counted with
//! `neurochunk_store::fsync`, a process-wide count, so this file holds a single test), and
//! writes the same bytes as a buffered one.

use std::path::{Path, PathBuf};

use neurochunk_hdmf::demo::{write_demo, DemoOptions};
use neurochunk_hdmf::{convert_file, Convention, Durability, NwbFile, WriteOptions};
use neurochunk_store::fsync::{self, SyncCounts};

/// `bytes` with every UUID (the random object ids a write draws) replaced by the same text.
fn without_uuids(mut bytes: Vec<u8>) -> Vec<u8> {
    let is_uuid = |w: &[u8]| {
        w.iter().enumerate().all(|(i, &b)| {
            if [8, 13, 18, 23].contains(&i) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
    };
    let mut i = 0;
    while i + 36 <= bytes.len() {
        if is_uuid(&bytes[i..i + 36]) {
            bytes[i..i + 36].copy_from_slice(b"00000000-0000-4000-8000-000000000000");
            i += 36;
        } else {
            i += 1;
        }
    }
    bytes
}

/// Every file below `dir`: relative paths and contents (object ids blanked), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                pending.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    without_uuids(std::fs::read(&p).unwrap()),
                ));
            }
        }
    }
    out.sort();
    out
}

/// The two trees hold the same files with the same bytes (failures name the files only).
fn assert_same(a: &[(PathBuf, Vec<u8>)], b: &[(PathBuf, Vec<u8>)], label: &str) {
    let names = |t: &[(PathBuf, Vec<u8>)]| t.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>();
    assert_eq!(names(a), names(b), "{label}: different files");
    let differ: Vec<_> = a
        .iter()
        .zip(b)
        .filter(|(x, y)| x.1 != y.1)
        .map(|(x, _)| x.0.clone())
        .collect();
    assert!(differ.is_empty(), "{label}: these files differ: {differ:?}");
}

fn counted(f: impl FnOnce()) -> SyncCounts {
    let before = fsync::counts();
    f();
    fsync::counts().since(before)
}

#[test]
fn durable_nwb_writes_sync_every_file_and_write_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    for convention in [Convention::Legacy, Convention::V3] {
        let options = |durability| DemoOptions {
            convention,
            scale: 0,
            namespaces: Vec::new(),
            write: WriteOptions {
                durability,
                ..WriteOptions::default()
            },
        };
        let label = convention.label();
        let plain = dir.path().join(format!("plain.{label}.nwb.zarr"));
        let durable = dir.path().join(format!("durable.{label}.nwb.zarr"));
        let counts = counted(|| {
            write_demo(&plain, &options(Durability::Buffered)).unwrap();
        });
        assert_eq!(
            counts,
            SyncCounts::default(),
            "{label}: a buffered write synced"
        );
        let counts = counted(|| {
            write_demo(&durable, &options(Durability::Fsync)).unwrap();
        });
        let files = tree(&durable);
        assert_same(&tree(&plain), &files, label);
        // Every file once (the consolidated metadata document is rewritten at the end).
        assert!(
            counts.files >= files.len() as u64,
            "{label}: {} files synced for {} files",
            counts.files,
            files.len()
        );
        assert!(counts.directories > 0, "{label}: no directory synced");

        // Converting: the same.
        let other = match convention {
            Convention::Legacy => Convention::V3,
            _ => Convention::Legacy,
        };
        let source = NwbFile::open(&plain).unwrap();
        let converted = |name: &str, durability| {
            let path = dir.path().join(format!("{name}.{label}.nwb.zarr"));
            let options = WriteOptions {
                durability,
                ..WriteOptions::default()
            };
            let counts = counted(|| {
                convert_file(&source, &path, other, options, &|_| {}).unwrap();
            });
            (tree(&path), counts)
        };
        let (plain_tree, plain_counts) = converted("converted-plain", Durability::Buffered);
        let (durable_tree, durable_counts) = converted("converted-durable", Durability::Fsync);
        assert_same(&plain_tree, &durable_tree, label);
        assert_eq!(plain_counts, SyncCounts::default());
        assert!(durable_counts.files >= durable_tree.len() as u64);
        assert!(durable_counts.directories > 0);
    }
}
