//! `NewTreeStore`: a new tree written into a store that pays per request. It behaves as a
//! store (the conformance kit), gathers writes into few `set_many` calls, answers reads of
//! the tree without asking the inner store, and shows nothing it was not asked to write.

use std::sync::Arc;

use neurochunk_store::conformance;
use neurochunk_store::{
    ByteRange, Bytes, CountingStore, MemoryStore, NewTreeStore, ReadRequest, ReadResponse, Store,
};

/// Reads of every kind a counting store saw.
fn reads(counting: &CountingStore) -> u64 {
    let c = counting.counts();
    c.whole_reads + c.ranges_read + c.batches
}

/// The tree over a counting in-memory store, and the counter.
fn tree() -> (NewTreeStore, Arc<CountingStore>, Arc<MemoryStore>) {
    let memory = Arc::new(MemoryStore::new());
    let counting = Arc::new(CountingStore::new(memory.clone()));
    (NewTreeStore::new(counting.clone()), counting, memory)
}

#[test]
fn passes_the_store_conformance_kit() {
    let (gathering, _, _) = tree();
    conformance::check_store(&gathering);
    // With every write uploaded at once, too.
    let (eager, _, memory) = tree();
    let eager = eager.with_batch(1);
    conformance::check_store(&eager);
    eager.flush().unwrap();
    assert!(memory.list_prefix("").unwrap().is_empty());
}

#[test]
fn reads_of_the_tree_cost_no_request_and_writes_wait_for_a_flush() {
    let (gathering, counting, memory) = tree();
    let tree = gathering.with_batch(100);
    tree.set("g/zarr.json", Bytes::from_static(b"{\"a\":1}"))
        .unwrap();
    tree.set("g/a/c/0", Bytes::from(vec![7u8; 100])).unwrap();
    tree.set("g/zarr.json", Bytes::from_static(b"{\"a\":2}"))
        .unwrap();
    // Known keys, missing keys, sizes, ranges, listings and batches: all from memory.
    assert_eq!(
        tree.get("g/zarr.json").unwrap().as_deref(),
        Some(&b"{\"a\":2}"[..])
    );
    assert_eq!(tree.get("g/b/zarr.json").unwrap(), None);
    assert!(!tree.exists("zarr.json").unwrap());
    assert_eq!(tree.size("g/a/c/0").unwrap(), Some(100));
    let part = tree
        .get_ranges("g/a/c/0", &[ByteRange::Suffix { length: 3 }])
        .unwrap();
    assert_eq!(part, Some(vec![Bytes::from(vec![7u8; 3])]));
    assert_eq!(tree.list_dir("g").unwrap().prefixes, ["a"]);
    assert_eq!(tree.list_prefix("g/a/").unwrap(), ["g/a/c/0"]);
    let answers = tree.get_many(&[ReadRequest::whole("g/a/c/0"), ReadRequest::whole("nope")]);
    assert!(matches!(&answers[0], Ok(ReadResponse::Whole(v)) if v.len() == 100));
    assert!(matches!(&answers[1], Ok(ReadResponse::Missing)));
    assert_eq!(reads(&counting), 0);
    assert_eq!(
        counting.counts().writes,
        0,
        "nothing uploaded before the flush"
    );
    assert!(memory.list_prefix("").unwrap().is_empty());

    // One flush uploads the last value of each key, in one `set_many`.
    tree.flush().unwrap();
    assert_eq!(counting.counts().writes, 2);
    assert_eq!(
        memory.get("g/zarr.json").unwrap().as_deref(),
        Some(&b"{\"a\":2}"[..])
    );
    // Small uploaded values are still read from memory.
    counting.reset();
    assert!(tree.get("g/zarr.json").unwrap().is_some());
    assert_eq!(reads(&counting), 0);

    // Deleting a key removes the uploaded value too; writing it again uploads the new one.
    tree.delete("g/a/c/0").unwrap();
    assert_eq!(memory.get("g/a/c/0").unwrap(), None);
    assert_eq!(tree.get("g/a/c/0").unwrap(), None);
    tree.set("g/a/c/0", Bytes::from_static(b"new")).unwrap();
    tree.flush().unwrap();
    assert_eq!(memory.get("g/a/c/0").unwrap().as_deref(), Some(&b"new"[..]));
}

#[test]
fn large_uploaded_values_are_read_back_from_the_inner_store() {
    let (tree, counting, _) = tree();
    let big = Bytes::from(vec![3u8; 200 << 10]);
    tree.set("c/0", big.clone()).unwrap();
    tree.flush().unwrap();
    counting.reset();
    assert_eq!(tree.get("c/0").unwrap(), Some(big));
    assert_eq!(reads(&counting), 1);
    assert_eq!(tree.size("c/0").unwrap(), Some(200 << 10));
    assert_eq!(reads(&counting), 1, "the size is known");
}

#[test]
fn writes_upload_in_batches_sized_by_the_requests_in_flight() {
    // A memory store serves one request at a time: uploads of two values each.
    let (tree, counting, memory) = tree();
    for i in 0..5 {
        tree.set(&format!("k{i}"), Bytes::from_static(b"v"))
            .unwrap();
    }
    assert_eq!(
        memory.list_prefix("").unwrap().len(),
        4,
        "two batches of two"
    );
    assert_eq!(counting.counts().writes, 4);
    tree.flush().unwrap();
    assert_eq!(memory.list_prefix("").unwrap().len(), 5);
}

#[test]
fn an_unflushed_tree_leaves_nothing_and_a_streamed_value_is_known_once_committed() {
    let (tree, _, memory) = tree();
    tree.set("a", Bytes::from_static(b"1")).unwrap();
    let mut writer = tree.writer("big").unwrap();
    std::io::Write::write_all(&mut writer, &[5u8; 1000]).unwrap();
    assert_eq!(tree.get("big").unwrap(), None, "not before the commit");
    writer.commit().unwrap();
    assert_eq!(tree.size("big").unwrap(), Some(1000));
    assert_eq!(memory.get("big").unwrap().map(|v| v.len()), Some(1000));
    drop(tree);
    assert_eq!(
        memory.list_prefix("").unwrap(),
        ["big"],
        "the waiting value is dropped"
    );
}
