//! Durable writes sync what they must, and no more: counted with `neurochunk_store::fsync`
//! (a process-wide count, so this file holds a single test).

use neurochunk_store::fsync::{self, SyncCounts};
use neurochunk_store::staging::StagedDir;
use neurochunk_store::{Bytes, Durability, FsStore, Store};

fn batch(dirs: &[&str], per_dir: usize, tag: &str) -> Vec<(String, Bytes)> {
    dirs.iter()
        .flat_map(|d| {
            (0..per_dir).map(move |i| (format!("{d}/{i}"), Bytes::from(format!("{tag}{i}"))))
        })
        .collect()
}

fn synced(f: impl FnOnce()) -> SyncCounts {
    let before = fsync::counts();
    f();
    fsync::counts().since(before)
}

#[test]
fn durable_writes_sync_every_file_and_each_directory_once_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let durable = FsStore::new(&root).with_durability(Durability::Fsync);
    let buffered = FsStore::new(dir.path().join("buffered"));
    let dirs = ["a", "b/c"];
    // Create the directories first: creating one syncs its parent.
    durable.set_many(batch(&dirs, 1, "x")).unwrap();

    // One batch of 2 × 32 values: every file, each directory once.
    let counts = synced(|| durable.set_many(batch(&dirs, 32, "v")).unwrap());
    assert_eq!(
        counts,
        SyncCounts {
            files: 64,
            directories: 2
        }
    );
    for (key, value) in batch(&dirs, 32, "v") {
        assert_eq!(durable.get(&key).unwrap(), Some(value));
    }
    // Value by value: each directory once per value.
    let counts = synced(|| {
        for (key, value) in batch(&dirs, 8, "w") {
            durable.set(&key, value).unwrap();
        }
    });
    assert_eq!(
        counts,
        SyncCounts {
            files: 16,
            directories: 16
        }
    );
    // A streamed value: its file and its directory.
    let counts = synced(|| {
        let mut w = durable.writer("a/streamed").unwrap();
        std::io::Write::write_all(&mut w, b"s").unwrap();
        w.commit().unwrap();
    });
    assert_eq!(
        counts,
        SyncCounts {
            files: 1,
            directories: 1
        }
    );
    // Buffered stores never sync.
    let counts = synced(|| {
        buffered.set_many(batch(&dirs, 32, "v")).unwrap();
        buffered.set("a/one", Bytes::from_static(b"1")).unwrap();
    });
    assert_eq!(counts, SyncCounts::default());

    // A durable publish syncs the directory holding the destination; a buffered one does not.
    let target = dir.path().join("published");
    for (durability, directories) in [(Durability::Buffered, 0), (Durability::Fsync, 1)] {
        let staged = StagedDir::beside(&target)
            .unwrap()
            .with_durability(durability);
        std::fs::write(staged.path().join("marker"), b"m").unwrap();
        let counts = synced(|| {
            staged.publish().unwrap();
        });
        assert_eq!(
            counts,
            SyncCounts {
                files: 0,
                directories
            },
            "{durability:?}"
        );
        assert!(target.join("marker").is_file());
    }
}
