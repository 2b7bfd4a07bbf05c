//! `WriteOptions::durability`: a durable write syncs every file it publishes and the
//! directories holding them (counted with `neurochunk_store::fsync`, a process-wide count, so
//! this file holds a single test), writes the same bytes as a buffered one, and the writer
//! removes what killed writers left beside its output.

mod common;

use arrow::array::RecordBatch;
use common::*;
use neurochunk_store::fsync::{self, SyncCounts};
use neurochunk_table::io::{read_all, write_all, Durability, WriteOptions};
use neurochunk_testkit::tree_files;
use std::path::Path;

fn write(path: &Path, batch: &RecordBatch, opts: &WriteOptions) -> SyncCounts {
    let before = fsync::counts();
    write_all(path, batch.schema(), std::slice::from_ref(batch), opts).unwrap();
    fsync::counts().since(before)
}

#[test]
fn durable_table_writes_sync_every_file_and_write_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let batch = Skel::default().batch(md(&[]));
    let hive = WriteOptions {
        partition_by: Some("fragment_id".into()),
        ..WriteOptions::default()
    };
    for (name, opts, files, directories) in [
        // One file: its bytes, then its directory.
        ("t.parquet", WriteOptions::default(), 1, 1),
        ("t.arrow", WriteOptions::default(), 1, 1),
        // Two partitions and _common_metadata: 3 files; each partition directory is synced
        // when its file lands in it and the staging directory when each partition directory
        // and _common_metadata land in it (3), then the directory holding the published table.
        ("t.hive", hive, 3, 2 + 3 + 1),
    ] {
        let plain = dir.path().join(format!("plain-{name}"));
        let durable = dir.path().join(format!("durable-{name}"));
        let counts = write(&plain, &batch, &opts);
        assert_eq!(
            counts,
            SyncCounts::default(),
            "{name}: a buffered write synced"
        );
        let fsync_opts = WriteOptions {
            durability: Durability::Fsync,
            ..opts.clone()
        };
        let counts = write(&durable, &batch, &fsync_opts);
        assert_eq!(
            counts,
            SyncCounts { files, directories },
            "{name}: a durable write"
        );
        assert_eq!(
            tree_files(&plain),
            tree_files(&durable),
            "{name}: the outputs differ"
        );
        let (_, back) = read_all(&durable).unwrap();
        assert_eq!(back.iter().map(RecordBatch::num_rows).sum::<usize>(), 6);

        // Replacing the table removes what killed writers of it left behind: a temporary
        // file beside a file, a staging directory beside a Hive directory.
        let stale = if opts.partition_by.is_some() {
            let stale = dir
                .path()
                .join(format!(".durable-{name}.neurochunk-staging-4294967-0"));
            std::fs::create_dir_all(stale.join("fragment_id=7")).unwrap();
            stale
        } else {
            let stale = dir.path().join(".neurochunk-tmp-4294967-0");
            std::fs::write(&stale, b"half a table").unwrap();
            stale
        };
        write(&durable, &batch, &fsync_opts);
        assert!(
            !stale.exists(),
            "{name}: {} is still there",
            stale.display()
        );
        assert_eq!(
            tree_files(&plain),
            tree_files(&durable),
            "{name}: the outputs differ"
        );
    }
}
