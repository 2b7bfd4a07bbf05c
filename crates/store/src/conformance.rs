//! A conformance test kit for [`Store`] implementations.
//!
//! [`check_store`] exercises every operation of the trait on an empty, writable store and
//! panics, with a message naming the operation and key, at the first behaviour that differs
//! from the contract documented on [`Store`]. [`check_read_only`] checks that a read-only
//! store refuses every write. Every backend in this crate runs both in its tests, and a new
//! backend (S3, GCS, HTTP, …) should too:
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_store::{conformance, MemoryStore, PrefixStore};
//!
//! conformance::check_store(&MemoryStore::new());
//! let view = PrefixStore::new(Arc::new(MemoryStore::new()), "sub/tree").unwrap();
//! conformance::check_store(&view);
//! ```
//!
//! What is left to the backend and not checked: whether directories (prefixes) that no
//! longer hold any value are still listed by [`Store::list_dir`] (a filesystem keeps them,
//! an object store does not), and how [`Store::delete_prefix`] treats a prefix without a
//! trailing `/`.

use std::io::Write;

use crate::{ByteRange, Bytes, ReadRequest, ReadResponse, Store, StoreError};

/// Keys every store must refuse with [`StoreError::InvalidKey`].
pub const INVALID_KEYS: &[&str] = &[
    "",
    "..",
    "../x",
    "a/../../b",
    "a/..",
    "./a",
    "a/./b",
    "/a",
    "/etc/passwd",
    "a//b",
    "a/",
    "a\\b",
    "..\\x",
    "a\0b",
    "C:/x",
];

/// Prefixes every store must refuse with [`StoreError::InvalidKey`] (`""` and a trailing `/`
/// are valid prefixes).
pub const INVALID_PREFIXES: &[&str] = &["/", "/a", "../", "a/../", "a//b/", "a\\b/", "a\0/"];

/// Check every operation of an empty, writable `store`; panics at the first failure.
///
/// The store is left empty (every key written is removed at the end).
pub fn check_store(store: &dyn Store) {
    assert_eq!(
        store.list_prefix("").expect("list_prefix(\"\")"),
        Vec::<String>::new(),
        "check_store needs an empty store"
    );
    check_empty(store);
    check_values(store);
    check_listing(store);
    check_delete(store);
    check_ranges(store);
    check_get_many(store);
    check_writer(store);
    check_invalid_keys(store);
    check_concurrent_sets(store);
    check_set_many(store);

    store.delete_prefix("").expect("delete_prefix(\"\")");
    assert_eq!(
        store.list_prefix("").expect("list_prefix(\"\")"),
        Vec::<String>::new(),
        "delete_prefix(\"\") left keys behind"
    );
}

/// Check that a read-only `store` refuses every write with [`StoreError::ReadOnly`] naming the
/// key, and still answers reads.
pub fn check_read_only(store: &dyn Store) {
    let key = "read-only/key";
    let refused = |what: &str, result: Result<(), StoreError>| match result {
        Err(e @ StoreError::ReadOnly { .. }) => {
            assert!(
                e.to_string().contains(key),
                "{what}: {e} does not name '{key}'"
            )
        }
        Err(e) => panic!("{what} on a read-only store: expected ReadOnly, got {e}"),
        Ok(()) => panic!("{what} on a read-only store succeeded"),
    };
    refused("set", store.set(key, Bytes::from_static(b"x")));
    refused("delete", store.delete(key));
    refused("delete_prefix", store.delete_prefix(key));
    // A writer may be refused at once or when it commits.
    let writer = store.writer(key).and_then(|mut writer| {
        writer.write_all(b"x").expect("write to a writer");
        writer.commit()
    });
    refused("writer", writer);
    assert_eq!(
        store.get(key).expect("get on a read-only store"),
        None,
        "a refused write is visible"
    );
    store
        .list_prefix("")
        .expect("list_prefix on a read-only store");
    store.list_dir("").expect("list_dir on a read-only store");
}

fn bytes(value: &[u8]) -> Bytes {
    Bytes::copy_from_slice(value)
}

fn set(store: &dyn Store, key: &str, value: &[u8]) {
    store
        .set(key, bytes(value))
        .unwrap_or_else(|e| panic!("set '{key}': {e}"));
}

fn get(store: &dyn Store, key: &str) -> Option<Bytes> {
    store
        .get(key)
        .unwrap_or_else(|e| panic!("get '{key}': {e}"))
}

fn ranges(store: &dyn Store, key: &str, ranges: &[ByteRange]) -> Option<Vec<Bytes>> {
    store
        .get_ranges(key, ranges)
        .unwrap_or_else(|e| panic!("get_ranges '{key}' {ranges:?}: {e}"))
}

/// Asserts that `key` reads as missing through every read operation.
fn assert_missing(store: &dyn Store, key: &str) {
    assert_eq!(get(store, key), None, "get '{key}' should be missing");
    assert_eq!(
        store
            .size(key)
            .unwrap_or_else(|e| panic!("size '{key}': {e}")),
        None,
        "size '{key}' should be missing"
    );
    assert!(
        !store
            .exists(key)
            .unwrap_or_else(|e| panic!("exists '{key}': {e}")),
        "exists '{key}' should be false"
    );
    let parts = [ByteRange::FromStart {
        offset: 0,
        length: Some(1),
    }];
    assert_eq!(
        ranges(store, key, &parts),
        None,
        "get_ranges '{key}' should be missing"
    );
    match store.get_required(key) {
        Err(StoreError::NotFound { key: named }) => {
            assert_eq!(named, key, "NotFound names the wrong key")
        }
        other => panic!("get_required '{key}': expected NotFound, got {other:?}"),
    }
}

/// Asserts that `key` holds `value` through every read operation.
fn assert_value(store: &dyn Store, key: &str, value: &[u8]) {
    assert_eq!(
        get(store, key).as_deref(),
        Some(value),
        "get '{key}' returned the wrong value"
    );
    assert_eq!(
        store
            .size(key)
            .unwrap_or_else(|e| panic!("size '{key}': {e}")),
        Some(value.len() as u64),
        "size '{key}'"
    );
    assert!(
        store
            .exists(key)
            .unwrap_or_else(|e| panic!("exists '{key}': {e}")),
        "exists '{key}' should be true"
    );
    let required = store
        .get_required(key)
        .unwrap_or_else(|e| panic!("get_required '{key}': {e}"));
    assert_eq!(&required[..], value, "get_required '{key}'");
}

fn list_prefix(store: &dyn Store, prefix: &str) -> Vec<String> {
    store
        .list_prefix(prefix)
        .unwrap_or_else(|e| panic!("list_prefix '{prefix}': {e}"))
}

fn list_dir(store: &dyn Store, prefix: &str) -> (Vec<String>, Vec<String>) {
    let listing = store
        .list_dir(prefix)
        .unwrap_or_else(|e| panic!("list_dir '{prefix}': {e}"));
    (listing.keys, listing.prefixes)
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn check_empty(store: &dyn Store) {
    assert_eq!(
        list_dir(store, ""),
        (vec![], vec![]),
        "list_dir of an empty store"
    );
    assert_missing(store, "missing");
    assert_missing(store, "missing/nested/key");
    store
        .delete("missing")
        .expect("deleting a missing key is not an error");
    store
        .delete_prefix("missing/")
        .expect("deleting a missing prefix is not an error");
    assert_eq!(list_prefix(store, "missing/"), Vec::<String>::new());
    assert_eq!(list_dir(store, "missing"), (vec![], vec![]));
}

fn check_values(store: &dyn Store) {
    set(store, "values/a", b"hello world");
    assert_value(store, "values/a", b"hello world");
    set(store, "values/a", b"replaced");
    assert_value(store, "values/a", b"replaced");
    set(
        store,
        "values/a",
        b"a much longer value than before, to overwrite a short one",
    );
    assert_value(
        store,
        "values/a",
        b"a much longer value than before, to overwrite a short one",
    );

    set(store, "values/empty", b"");
    assert_value(store, "values/empty", b"");

    set(store, "top-level", b"x");
    assert_value(store, "top-level", b"x");
    set(store, "values/deep/er/key.json", b"{}");
    assert_value(store, "values/deep/er/key.json", b"{}");

    let big: Vec<u8> = (0..(1 << 20) + 17).map(|i| (i % 251) as u8).collect();
    store
        .set("values/big", Bytes::from(big.clone()))
        .expect("set a 1 MiB value");
    assert_value(store, "values/big", &big);

    // Binary content, including what a text layer might mangle.
    set(store, "values/binary", b"\0\r\n\xff\xfe\0");
    assert_value(store, "values/binary", b"\0\r\n\xff\xfe\0");

    // A prefix is not a value.
    assert_missing(store, "values");
    assert_missing(store, "values/deep/er");

    assert_eq!(
        list_prefix(store, "values/"),
        strings(&[
            "values/a",
            "values/big",
            "values/binary",
            "values/deep/er/key.json",
            "values/empty",
        ]),
        "every value written is listed, empty ones too"
    );
}

fn check_listing(store: &dyn Store) {
    // Written out of order; names that sort differently as text and as numbers or by case.
    for key in [
        "list/z",
        "list/a/c/e",
        "list/a-b/e",
        "list/a/b",
        "list/a/c/d",
        "list/9",
        "list/10",
        "list/B",
        "list/a/c/f/g/h",
    ] {
        set(store, key, key.as_bytes());
    }
    assert_eq!(
        list_prefix(store, "list/"),
        strings(&[
            "list/10",
            "list/9",
            "list/B",
            "list/a-b/e",
            "list/a/b",
            "list/a/c/d",
            "list/a/c/e",
            "list/a/c/f/g/h",
            "list/z",
        ]),
        "list_prefix is sorted and recursive"
    );
    assert_eq!(
        list_prefix(store, "list/a/"),
        strings(&["list/a/b", "list/a/c/d", "list/a/c/e", "list/a/c/f/g/h"]),
        "list_prefix with a trailing '/' lists one sub-tree"
    );
    assert_eq!(
        list_prefix(store, "list/a"),
        strings(&[
            "list/a-b/e",
            "list/a/b",
            "list/a/c/d",
            "list/a/c/e",
            "list/a/c/f/g/h",
        ]),
        "list_prefix matches on the text of the key"
    );
    assert_eq!(
        list_prefix(store, "list/a/c/f/g/h"),
        strings(&["list/a/c/f/g/h"]),
        "list_prefix of a whole key lists it"
    );
    assert_eq!(list_prefix(store, "list/nothing/"), Vec::<String>::new());
    let all = list_prefix(store, "");
    for key in ["list/z", "list/a/c/f/g/h", "top-level", "values/a"] {
        assert!(
            all.contains(&key.to_string()),
            "list_prefix(\"\") lacks '{key}'"
        );
    }
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(all, sorted, "list_prefix(\"\") is not sorted");

    let expected_list = (strings(&["10", "9", "B", "z"]), strings(&["a", "a-b"]));
    assert_eq!(list_dir(store, "list"), expected_list, "list_dir 'list'");
    assert_eq!(list_dir(store, "list/"), expected_list, "list_dir 'list/'");
    assert_eq!(
        list_dir(store, "list/a"),
        (strings(&["b"]), strings(&["c"])),
        "list_dir 'list/a'"
    );
    assert_eq!(
        list_dir(store, "list/a/c"),
        (strings(&["d", "e"]), strings(&["f"])),
        "list_dir 'list/a/c'"
    );
    assert_eq!(
        list_dir(store, "list/a/c/f/g"),
        (strings(&["h"]), vec![]),
        "list_dir 'list/a/c/f/g'"
    );
    assert_eq!(list_dir(store, "list/nothing"), (vec![], vec![]));
    assert_eq!(
        list_dir(store, "list/z"),
        (vec![], vec![]),
        "list_dir of a value lists nothing"
    );
    let (root_keys, root_prefixes) = list_dir(store, "");
    assert!(
        root_keys.contains(&"top-level".to_string()),
        "list_dir(\"\") keys lack 'top-level': {root_keys:?}"
    );
    for prefix in ["list", "values"] {
        assert!(
            root_prefixes.contains(&prefix.to_string()),
            "list_dir(\"\") prefixes lack '{prefix}': {root_prefixes:?}"
        );
    }
    assert!(
        root_keys.windows(2).all(|w| w[0] < w[1]) && root_prefixes.windows(2).all(|w| w[0] < w[1]),
        "list_dir(\"\") is not sorted: {root_keys:?} {root_prefixes:?}"
    );
}

fn check_delete(store: &dyn Store) {
    set(store, "del/a", b"1");
    set(store, "del/b", b"2");
    store.delete("del/a").expect("delete 'del/a'");
    assert_missing(store, "del/a");
    assert_value(store, "del/b", b"2");
    store
        .delete("del/a")
        .expect("deleting a deleted key is not an error");
    assert_eq!(list_prefix(store, "del/"), strings(&["del/b"]));

    for key in ["dp/x/1", "dp/x/2/3", "dp/x-y", "dp/xy/1", "dp/y"] {
        set(store, key, b"v");
    }
    store.delete_prefix("dp/x/").expect("delete_prefix 'dp/x/'");
    assert_eq!(
        list_prefix(store, "dp/"),
        strings(&["dp/x-y", "dp/xy/1", "dp/y"]),
        "delete_prefix 'dp/x/' removes exactly that sub-tree"
    );
    assert_missing(store, "dp/x/1");
    store
        .delete_prefix("dp/x/")
        .expect("delete_prefix of a removed sub-tree is not an error");
    set(store, "dp/x/again", b"v");
    assert_value(store, "dp/x/again", b"v");
    store.delete_prefix("dp/").expect("delete_prefix 'dp/'");
    assert_eq!(list_prefix(store, "dp/"), Vec::<String>::new());
}

fn check_ranges(store: &dyn Store) {
    let key = "ranges/v";
    set(store, key, b"hello world");
    let from = |offset, length| ByteRange::FromStart { offset, length };
    let suffix = |length| ByteRange::Suffix { length };
    let cases: &[(ByteRange, &[u8])] = &[
        (from(0, Some(5)), b"hello"),
        (from(6, Some(5)), b"world"),
        (from(0, None), b"hello world"),
        (from(3, None), b"lo world"),
        (from(11, None), b""),
        (from(4, Some(0)), b""),
        (from(11, Some(0)), b""),
        (suffix(3), b"rld"),
        (suffix(11), b"hello world"),
        (suffix(0), b""),
    ];
    for (range, expected) in cases {
        let parts = ranges(store, key, &[*range]).expect("value exists");
        assert_eq!(parts.len(), 1, "one part per range");
        assert_eq!(&parts[0][..], *expected, "range {range:?} of '{key}'");
    }
    // Several ranges at once, overlapping and out of order, come back in the order asked.
    let all: Vec<ByteRange> = cases.iter().map(|(r, _)| *r).rev().collect();
    let parts = ranges(store, key, &all).expect("value exists");
    let expected: Vec<&[u8]> = cases.iter().map(|(_, v)| *v).rev().collect();
    let got: Vec<&[u8]> = parts.iter().map(|p| &p[..]).collect();
    assert_eq!(got, expected, "several ranges of '{key}'");
    assert_eq!(
        ranges(store, key, &[]),
        Some(vec![]),
        "no ranges of an existing value"
    );

    for range in [
        from(8, Some(10)),
        from(12, None),
        from(11, Some(1)),
        from(u64::MAX, Some(2)),
        suffix(12),
    ] {
        match store.get_ranges(key, &[from(0, Some(1)), range]) {
            Err(e @ StoreError::RangeOutOfBounds { size, .. }) => {
                assert_eq!(size, 11, "RangeOutOfBounds size for {range:?}");
                assert!(e.to_string().contains(key), "{e} does not name '{key}'");
            }
            other => panic!("range {range:?} of '{key}': expected RangeOutOfBounds, got {other:?}"),
        }
    }

    set(store, "ranges/empty", b"");
    for range in [from(0, Some(0)), from(0, None), suffix(0)] {
        let parts = ranges(store, "ranges/empty", &[range]).expect("value exists");
        assert_eq!(
            parts,
            vec![Bytes::new()],
            "range {range:?} of an empty value"
        );
    }
    assert!(
        matches!(
            store.get_ranges("ranges/empty", &[from(0, Some(1))]),
            Err(StoreError::RangeOutOfBounds { .. })
        ),
        "a byte of an empty value is out of bounds"
    );
    assert_eq!(
        ranges(store, "ranges/missing", &[from(100, Some(5)), suffix(3)]),
        None,
        "ranges of a missing key read as missing, whatever the ranges"
    );
}

fn check_get_many(store: &dyn Store) {
    set(store, "many/a", b"0123456789");
    set(store, "many/b", b"");
    let from = |offset, length| ByteRange::FromStart { offset, length };
    let requests = vec![
        ReadRequest::whole("many/a"),
        ReadRequest::whole("many/missing"),
        ReadRequest::ranges(
            "many/a",
            vec![from(2, Some(3)), ByteRange::Suffix { length: 2 }],
        ),
        ReadRequest::ranges("many/missing", vec![from(0, Some(1))]),
        ReadRequest::whole("many/../escape"),
        ReadRequest::ranges("many/a", vec![from(5, Some(10))]),
        ReadRequest::whole("many/b"),
        ReadRequest::ranges("many/a", vec![]),
        ReadRequest::whole("many"),
    ];
    let answers = store.get_many(&requests);
    assert_eq!(answers.len(), requests.len(), "one answer per request");
    let answer = |i: usize| match &answers[i] {
        Ok(response) => response.clone(),
        Err(e) => panic!("get_many request {i} ({:?}): {e}", requests[i]),
    };
    assert_eq!(answer(0), ReadResponse::Whole(bytes(b"0123456789")));
    assert_eq!(answer(1), ReadResponse::Missing);
    assert_eq!(
        answer(2),
        ReadResponse::Ranges(vec![bytes(b"234"), bytes(b"89")])
    );
    assert_eq!(answer(3), ReadResponse::Missing);
    assert!(
        matches!(&answers[4], Err(StoreError::InvalidKey { key, .. }) if key.ends_with("many/../escape")),
        "get_many of an invalid key: {:?}",
        answers[4]
    );
    assert!(
        matches!(&answers[5], Err(StoreError::RangeOutOfBounds { key, .. }) if key.ends_with("many/a")),
        "get_many of an out-of-bounds range: {:?}",
        answers[5]
    );
    assert_eq!(answer(6), ReadResponse::Whole(Bytes::new()));
    assert_eq!(answer(7), ReadResponse::Ranges(vec![]));
    assert_eq!(answer(8), ReadResponse::Missing, "a prefix is not a value");
    assert!(store.get_many(&[]).is_empty(), "get_many of no requests");
}

fn check_writer(store: &dyn Store) {
    let pieces: Vec<Vec<u8>> = (0..64u32)
        .map(|i| (0..(i * 97 % 4096)).map(|j| (i + j) as u8).collect())
        .collect();
    let whole: Vec<u8> = pieces.concat();

    let mut writer = store.writer("w/streamed").expect("writer 'w/streamed'");
    for piece in &pieces {
        writer.write_all(piece).expect("write to a writer");
    }
    writer.flush().expect("flush a writer");
    assert_missing(store, "w/streamed");
    writer.commit().expect("commit 'w/streamed'");
    assert_value(store, "w/streamed", &whole);

    // Overwrite through a writer.
    let mut writer = store.writer("w/streamed").expect("writer 'w/streamed'");
    writer.write_all(b"second").expect("write to a writer");
    assert_value(store, "w/streamed", &whole);
    writer.commit().expect("commit 'w/streamed'");
    assert_value(store, "w/streamed", b"second");

    // A writer dropped without commit leaves nothing: neither a new key nor a changed one.
    let mut writer = store.writer("w/abandoned").expect("writer 'w/abandoned'");
    writer.write_all(&whole).expect("write to a writer");
    drop(writer);
    assert_missing(store, "w/abandoned");
    let mut writer = store.writer("w/streamed").expect("writer 'w/streamed'");
    writer.write_all(b"never seen").expect("write to a writer");
    drop(writer);
    assert_value(store, "w/streamed", b"second");

    // An empty value through a writer.
    store
        .writer("w/empty")
        .expect("writer 'w/empty'")
        .commit()
        .expect("commit 'w/empty'");
    assert_value(store, "w/empty", b"");

    assert_eq!(
        list_prefix(store, "w/"),
        strings(&["w/empty", "w/streamed"]),
        "only committed values are listed"
    );
    let (keys, _) = list_dir(store, "w");
    assert_eq!(keys, strings(&["empty", "streamed"]), "list_dir 'w'");
}

fn check_invalid_keys(store: &dyn Store) {
    let before = list_prefix(store, "");
    let refused = |what: &str, key: &str, result: Result<(), StoreError>| match result {
        // A prefix may be named without its trailing `/`.
        Err(StoreError::InvalidKey { key: named, .. }) => assert!(
            named
                .trim_end_matches('/')
                .ends_with(key.trim_end_matches('/')),
            "{what} {key:?}: InvalidKey names {named:?}"
        ),
        Err(e) => panic!("{what} {key:?}: expected InvalidKey, got {e}"),
        Ok(()) => panic!("{what} {key:?}: an invalid key was accepted"),
    };
    let one = [ByteRange::Suffix { length: 0 }];
    for &key in INVALID_KEYS {
        refused("set", key, store.set(key, bytes(b"no")));
        refused("get", key, store.get(key).map(drop));
        refused("get_required", key, store.get_required(key).map(drop));
        refused("get_ranges", key, store.get_ranges(key, &one).map(drop));
        refused("size", key, store.size(key).map(drop));
        refused("exists", key, store.exists(key).map(drop));
        refused("delete", key, store.delete(key));
        refused("writer", key, store.writer(key).map(drop));
        let answers = store.get_many(&[ReadRequest::whole(key)]);
        refused(
            "get_many",
            key,
            answers.into_iter().next().expect("one answer").map(drop),
        );
    }
    for &prefix in INVALID_PREFIXES {
        refused("list_prefix", prefix, store.list_prefix(prefix).map(drop));
        refused("list_dir", prefix, store.list_dir(prefix).map(drop));
        refused("delete_prefix", prefix, store.delete_prefix(prefix));
    }
    assert_eq!(
        list_prefix(store, ""),
        before,
        "refused keys changed the store"
    );
}

fn check_concurrent_sets(store: &dyn Store) {
    const THREADS: usize = 8;
    const KEYS: usize = 16;
    let value = |t: usize, k: usize| -> Vec<u8> {
        format!("thread {t} key {k} ")
            .repeat(t * 50 + k)
            .into_bytes()
    };
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            scope.spawn(move || {
                for k in 0..KEYS {
                    let key = format!("threads/{t}/{k}");
                    store
                        .set(&key, Bytes::from(value(t, k)))
                        .unwrap_or_else(|e| panic!("set '{key}' from thread {t}: {e}"));
                }
            });
        }
    });
    let mut expected = Vec::new();
    for t in 0..THREADS {
        for k in 0..KEYS {
            let key = format!("threads/{t}/{k}");
            assert_value(store, &key, &value(t, k));
            expected.push(key);
        }
    }
    expected.sort();
    assert_eq!(list_prefix(store, "threads/"), expected);
}

/// `set_many` stores every value of a batch (new keys, replaced keys, several directories, an
/// empty batch) and refuses an invalid key.
fn check_set_many(store: &dyn Store) {
    store.set_many(Vec::new()).expect("set_many of nothing");
    set(store, "batch/a/0", b"old");
    let values: Vec<(String, Bytes)> = (0..40)
        .map(|i| {
            (
                format!("batch/{}/{i}", ["a", "b", "c/d"][i % 3]),
                Bytes::from(format!("value {i}")),
            )
        })
        .collect();
    let mut expected: Vec<String> = values.iter().map(|(k, _)| k.clone()).collect();
    store
        .set_many(values.clone())
        .unwrap_or_else(|e| panic!("set_many: {e}"));
    for (key, value) in &values {
        assert_value(store, key, value);
    }
    expected.sort();
    assert_eq!(list_prefix(store, "batch/"), expected);
    store
        .set_many(vec![("batch/a/0".into(), bytes(b"one"))])
        .expect("set_many of one value");
    assert_value(store, "batch/a/0", b"one");
    assert!(
        store
            .set_many(vec![("../escape".into(), bytes(b"x"))])
            .is_err(),
        "set_many accepted an invalid key"
    );
    store
        .delete_prefix("batch/")
        .expect("delete_prefix(\"batch/\")");
}
