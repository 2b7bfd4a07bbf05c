//! The conformance kit run against every backend, and what is particular to each.

use std::sync::Arc;

use super::*;

#[test]
fn memory_store_conforms() {
    conformance::check_store(&MemoryStore::new());
}

#[test]
fn filesystem_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::check_store(&FsStore::new(dir.path()));
    assert_no_temporary_files(dir.path());
}

#[test]
fn filesystem_store_in_a_missing_directory_conforms() {
    let dir = tempfile::tempdir().unwrap();
    conformance::check_store(&FsStore::new(dir.path().join("not/yet/there")));
}

#[test]
fn prefix_store_over_memory_conforms() {
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    inner.set("outside", Bytes::from_static(b"x")).unwrap();
    inner.set("sub/treeish", Bytes::from_static(b"x")).unwrap();
    conformance::check_store(&PrefixStore::new(inner.clone(), "sub/tree").unwrap());
    assert_eq!(
        inner.list_prefix("").unwrap(),
        vec!["outside", "sub/treeish"],
        "the view touched keys outside its prefix"
    );
}

#[test]
fn prefix_store_over_filesystem_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    inner.set("outside", Bytes::from_static(b"x")).unwrap();
    inner.set("sub/treeish", Bytes::from_static(b"x")).unwrap();
    conformance::check_store(&PrefixStore::new(inner.clone(), "sub/tree/").unwrap());
    assert_eq!(
        inner.list_prefix("").unwrap(),
        vec!["outside", "sub/treeish"],
        "the view touched keys outside its prefix"
    );
    assert_no_temporary_files(dir.path());
}

#[test]
fn prefix_store_with_an_empty_prefix_conforms() {
    conformance::check_store(&PrefixStore::new(Arc::new(MemoryStore::new()), "").unwrap());
}

#[test]
fn read_only_stores_refuse_writes() {
    let dir = tempfile::tempdir().unwrap();
    FsStore::new(dir.path())
        .set("kept", Bytes::from_static(b"v"))
        .unwrap();
    let store = FsStore::read_only(dir.path());
    conformance::check_read_only(&store);
    assert_eq!(store.get("kept").unwrap().as_deref(), Some(&b"v"[..]));
    conformance::check_read_only(&PrefixStore::new(Arc::new(store), "a/b").unwrap());
    assert_no_temporary_files(dir.path());
}

#[test]
fn prefix_store_maps_keys_and_refuses_escapes() {
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let view = PrefixStore::new(inner.clone(), "p/q").unwrap();
    assert_eq!(view.prefix(), "p/q");
    view.set("a/b", Bytes::from_static(b"1")).unwrap();
    inner.set("p/qr/c", Bytes::from_static(b"2")).unwrap();
    assert_eq!(inner.get("p/q/a/b").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(view.list_prefix("").unwrap(), vec!["a/b"]);
    assert_eq!(view.list_prefix("a").unwrap(), vec!["a/b"]);
    assert_eq!(view.list_dir("").unwrap().prefixes, vec!["a"]);
    for bad in ["../qr/c", "/p/qr/c", "a/../../qr/c"] {
        assert!(
            matches!(view.get(bad), Err(StoreError::InvalidKey { ref key, .. }) if key == bad),
            "{bad}"
        );
    }
    for bad in ["..", "../", "/x", "a//b"] {
        assert!(
            PrefixStore::new(inner.clone(), bad).is_err(),
            "prefix {bad:?}"
        );
    }
}

#[test]
fn filesystem_errors_name_the_root_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    store.set("file", Bytes::from_static(b"x")).unwrap();
    // A value where a directory is needed.
    let err = store
        .set("file/below", Bytes::from_static(b"y"))
        .unwrap_err();
    assert!(matches!(err, StoreError::Backend { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&dir.path().display().to_string()), "{text}");
    assert!(text.contains("'file/below'"), "{text}");
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn filesystem_writes_leave_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    for i in 0..20 {
        store
            .set(&format!("c/{i}"), Bytes::from(vec![i as u8; 1000]))
            .unwrap();
    }
    let names: Vec<_> = std::fs::read_dir(dir.path().join("c"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 20);
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

#[test]
fn filesystem_writer_streams_to_a_hidden_temporary_file() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let mut writer = store.writer("w/v").unwrap();
    writer.write_all(b"partial").unwrap();
    writer.flush().unwrap();
    let temps = || {
        std::fs::read_dir(dir.path().join("w"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with(".neurochunk-tmp-"))
            .count()
    };
    assert_eq!(temps(), 1, "the value is written beside its final place");
    assert_eq!(store.list_dir("w").unwrap().keys, Vec::<String>::new());
    drop(writer);
    assert_eq!(temps(), 0, "an abandoned value leaves no temporary file");

    let mut writer = store.writer("w/v").unwrap();
    writer.write_all(b"whole").unwrap();
    writer.commit().unwrap();
    assert_eq!(temps(), 0);
    assert_eq!(
        std::fs::read(dir.path().join("w/v")).unwrap(),
        b"whole".to_vec()
    );
}

#[test]
fn filesystem_listing_skips_in_flight_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    store.set("x/0", Bytes::from_static(b"a")).unwrap();
    std::fs::write(dir.path().join("x/.neurochunk-tmp-1-1"), b"partial").unwrap();
    assert_eq!(store.list_prefix("").unwrap(), vec!["x/0"]);
    assert_eq!(store.list_dir("x").unwrap().keys, vec!["0"]);
}

#[test]
fn concurrent_writers_never_tear_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let big_a = Bytes::from(vec![b'a'; 1 << 20]);
    let big_b = Bytes::from(vec![b'b'; 1 << 20]);
    std::thread::scope(|s| {
        for i in 0..4 {
            let (store, a, b) = (&store, &big_a, &big_b);
            s.spawn(move || {
                for _ in 0..10 {
                    let value = if i % 2 == 0 { a } else { b };
                    store.set("k", value.clone()).unwrap();
                }
            });
        }
        let store = &store;
        s.spawn(move || {
            for _ in 0..50 {
                if let Some(v) = store.get("k").unwrap() {
                    assert_eq!(v.len(), 1 << 20);
                    assert!(v.iter().all(|&c| c == v[0]), "torn value");
                }
            }
        });
    });
}

#[test]
fn memory_store_reads_share_the_stored_bytes() {
    let store = MemoryStore::new();
    let value = Bytes::from(vec![7u8; 64]);
    store.set("k", value.clone()).unwrap();
    let got = store.get("k").unwrap().unwrap();
    assert_eq!(got.as_ptr(), value.as_ptr(), "get copied the value");
    let part = store
        .get_ranges("k", &[ByteRange::Suffix { length: 8 }])
        .unwrap()
        .unwrap();
    assert_eq!(part[0].as_ptr(), value[56..].as_ptr(), "get_ranges copied");
}

/// No temporary file anywhere under `root`.
fn assert_no_temporary_files(root: &std::path::Path) {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            assert!(
                !name.starts_with(".neurochunk-tmp-"),
                "temporary file left: {}",
                entry.path().display()
            );
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            }
        }
    }
}

#[test]
fn a_suffix_longer_than_the_value_does_not_fit() {
    // Found by the `chunk` fuzz target: a shard shorter than its index (a debug build
    // overflowed computing the start before checking the length).
    assert_eq!(ByteRange::Suffix { length: 20 }.resolve(16), None);
    assert_eq!(ByteRange::Suffix { length: 16 }.resolve(16), Some((0, 16)));
    assert_eq!(ByteRange::Suffix { length: u64::MAX }.resolve(0), None);
}

#[test]
fn owned_writers_stream_like_borrowed_ones_and_outlive_the_borrow() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let disk: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let stores: Vec<Arc<dyn Store>> = vec![
        disk.clone(),
        memory.clone(),
        Arc::new(PrefixStore::new(disk.clone(), "sub").unwrap()),
        Arc::new(CountingStore::new(memory.clone())),
        Arc::new(NewTreeStore::new(Arc::new(MemoryStore::new()))),
    ];
    for (n, store) in stores.into_iter().enumerate() {
        let key = format!("t{n}/value");
        let key = key.as_str();
        // Kept in a struct with no lifetime: the writer holds its own handle on the store.
        struct Sink {
            writer: Box<dyn ValueWriter>,
        }
        let mut sink = Sink {
            writer: store.clone().owned_writer(key).unwrap(),
        };
        sink.writer.write_all(b"streamed ").unwrap();
        sink.writer.write_all(b"value").unwrap();
        assert_eq!(store.get(key).unwrap(), None, "{store:?}");
        sink.writer.commit().unwrap();
        assert_eq!(
            store.get(key).unwrap().as_deref(),
            Some(&b"streamed value"[..]),
            "{store:?}"
        );
        // Dropped uncommitted: nothing changes.
        let mut abandoned = store.clone().owned_writer(key).unwrap();
        abandoned.write_all(b"never seen").unwrap();
        drop(abandoned);
        assert_eq!(
            store.get(key).unwrap().as_deref(),
            Some(&b"streamed value"[..])
        );
        assert!(store.clone().owned_writer("../escape").is_err());
    }
    // The filesystem's owned writer streams to a temporary file, as its borrowed one does.
    let mut writer = disk.clone().owned_writer("w/v").unwrap();
    writer.write_all(b"partial").unwrap();
    writer.flush().unwrap();
    let temps = std::fs::read_dir(dir.path().join("w"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with(".neurochunk-tmp-")
        })
        .count();
    assert_eq!(temps, 1);
}
