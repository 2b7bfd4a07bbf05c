//! `WriteOptions::durability` reaches the stores the filesystem writer builds: a durable
//! write syncs every file of the NWB file and the directories (counted with
//! `neurochunk_store::fsync`, a process-wide count, so this file holds a single test), and
//! writes the same bytes as a buffered one.

use std::path::PathBuf;

use neurochunk_hdmf::demo::{write_demo, DemoOptions};
use neurochunk_hdmf::{convert_file, Convention, Durability, NwbFile, WriteOptions};
use neurochunk_store::fsync::{self, SyncCounts};
use neurochunk_testkit::tree_files_without_uuids;

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
        let files = tree_files_without_uuids(&durable);
        assert_same(&tree_files_without_uuids(&plain), &files, label);
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
            (tree_files_without_uuids(&path), counts)
        };
        let (plain_tree, plain_counts) = converted("converted-plain", Durability::Buffered);
        let (durable_tree, durable_counts) = converted("converted-durable", Durability::Fsync);
        assert_same(&plain_tree, &durable_tree, label);
        assert_eq!(plain_counts, SyncCounts::default());
        assert!(durable_counts.files >= durable_tree.len() as u64);
        assert!(durable_counts.directories > 0);
    }
}
