//! Behaviour shared by every store backend, run against each.

use super::*;

fn exercise(store: &dyn Store) {
    assert_eq!(store.get("a/b").unwrap(), None);
    store.set("a/b", b"hello world").unwrap();
    store.set("a/c/d", b"x").unwrap();
    store.set("a-b/e", b"y").unwrap();
    store.set("z", b"").unwrap();
    assert_eq!(
        store.get("a/b").unwrap().as_deref(),
        Some(&b"hello world"[..])
    );
    assert_eq!(store.size("a/b").unwrap(), Some(11));
    assert_eq!(store.size("a").unwrap(), None, "a directory is not a value");

    let parts = store
        .get_ranges(
            "a/b",
            &[
                ByteRange::FromStart {
                    offset: 6,
                    length: Some(5),
                },
                ByteRange::Suffix { length: 3 },
                ByteRange::FromStart {
                    offset: 0,
                    length: None,
                },
            ],
        )
        .unwrap()
        .unwrap();
    assert_eq!(
        parts,
        vec![b"world".to_vec(), b"rld".to_vec(), b"hello world".to_vec()]
    );
    let err = store
        .get_ranges(
            "a/b",
            &[ByteRange::FromStart {
                offset: 8,
                length: Some(10),
            }],
        )
        .unwrap_err();
    assert!(err.to_string().contains("past the end of 'a/b'"), "{err}");

    assert_eq!(
        store.list_prefix("").unwrap(),
        vec!["a-b/e", "a/b", "a/c/d", "z"]
    );
    assert_eq!(store.list_prefix("a/").unwrap(), vec!["a/b", "a/c/d"]);
    assert_eq!(
        store.list_prefix("a").unwrap(),
        vec!["a-b/e", "a/b", "a/c/d"]
    );
    let root = store.list_dir("").unwrap();
    assert_eq!(root.keys, vec!["z"]);
    assert_eq!(root.prefixes, vec!["a", "a-b"]);
    let a = store.list_dir("a").unwrap();
    assert_eq!(a.keys, vec!["b"]);
    assert_eq!(a.prefixes, vec!["c"]);

    store.set("a/b", b"replaced").unwrap();
    assert_eq!(store.get("a/b").unwrap().as_deref(), Some(&b"replaced"[..]));
    store.delete("a/b").unwrap();
    store.delete("a/b").unwrap();
    assert_eq!(store.get("a/b").unwrap(), None);
    store.delete_prefix("a/").unwrap();
    assert_eq!(store.list_prefix("").unwrap(), vec!["a-b/e", "z"]);

    for bad in [
        "../x",
        "/etc/passwd",
        "a/../../b",
        "a//b",
        "./a",
        "a\\b",
        "",
        "C:/x",
    ] {
        let err = store.set(bad, b"no").unwrap_err();
        assert!(matches!(err, StoreError::InvalidKey { .. }), "{bad}: {err}");
        assert!(store.get(bad).is_err(), "{bad}");
    }
}

#[test]
fn memory_store_behaves() {
    exercise(&MemoryStore::new());
}

#[test]
fn filesystem_store_behaves() {
    let dir = tempfile::tempdir().unwrap();
    exercise(&FsStore::new(dir.path()));
}

#[test]
fn filesystem_writes_leave_no_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    for i in 0..20 {
        store.set(&format!("c/{i}"), &vec![i as u8; 1000]).unwrap();
    }
    let names: Vec<_> = std::fs::read_dir(dir.path().join("c"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 20);
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
}

#[test]
fn filesystem_listing_skips_in_flight_temporary_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    store.set("x/0", b"a").unwrap();
    std::fs::write(dir.path().join("x/.neurochunk-tmp-1-1"), b"partial").unwrap();
    assert_eq!(store.list_prefix("").unwrap(), vec!["x/0"]);
    assert_eq!(store.list_dir("x").unwrap().keys, vec!["0"]);
}

#[test]
fn concurrent_writers_never_tear_a_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    let big_a = vec![b'a'; 1 << 20];
    let big_b = vec![b'b'; 1 << 20];
    std::thread::scope(|s| {
        for i in 0..4 {
            let (store, a, b) = (&store, &big_a, &big_b);
            s.spawn(move || {
                for _ in 0..10 {
                    store.set("k", if i % 2 == 0 { a } else { b }).unwrap();
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
fn read_only_store_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::read_only(dir.path());
    assert!(matches!(
        store.set("a", b"x").unwrap_err(),
        StoreError::ReadOnly(_)
    ));
}
