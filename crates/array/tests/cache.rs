//! The cache of decoded chunks an array handle keeps for repeated partial reads, measured by
//! the store requests reads make: point reads served from memory, shard indexes kept,
//! invalidation by writes and resizes through the handle, the byte budget, threads.

use std::sync::Arc;

use neurochunk_array::{
    selection, Array, ArrayBuilder, Codec, DataType, MemoryStore, Selection, Store,
};
use neurochunk_store::{
    ByteRange, Bytes, CountingStore, DirListing, ReadRequest, ReadResponse, StoreCounts,
    StoreResult,
};

/// A store that reports many reads in flight, as a remote one does, so that reads take the
/// lanes of the remote path.
#[derive(Debug)]
struct ManyInFlight(Arc<dyn Store>);

impl Store for ManyInFlight {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        self.0.get(key)
    }
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        self.0.get_ranges(key, ranges)
    }
    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        self.0.size(key)
    }
    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.0.set(key, value)
    }
    fn delete(&self, key: &str) -> StoreResult<()> {
        self.0.delete(key)
    }
    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        self.0.list_prefix(prefix)
    }
    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        self.0.list_dir(prefix)
    }
    fn concurrent_reads(&self) -> usize {
        64
    }
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        self.0.get_many(requests)
    }
}

/// The value of element `(z, y, x)` of the test volumes.
fn value(z: u64, y: u64, x: u64) -> u16 {
    ((z * 131 + y * 17 + x * 3) % 65521) as u16
}

fn volume(n: u64) -> Vec<u16> {
    (0..n)
        .flat_map(|z| (0..n).flat_map(move |y| (0..n).map(move |x| value(z, y, x))))
        .collect()
}

/// A 48³ uint16 volume (zstd) in 16³ chunks, or in 24³ shards of 8³ inner chunks, written
/// through a counting store (over one that serves many reads at once when `remote`).
fn counted_volume(sharded: bool, remote: bool) -> (Arc<CountingStore>, Array) {
    let memory: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let inner: Arc<dyn Store> = if remote {
        Arc::new(ManyInFlight(memory))
    } else {
        memory
    };
    let counting = Arc::new(CountingStore::new(inner));
    let store: Arc<dyn Store> = counting.clone();
    let builder = ArrayBuilder::new([48, 48, 48], DataType::UInt16).codecs([Codec::zstd(1)]);
    let builder = if sharded {
        builder.chunks([8, 8, 8]).shards([24, 24, 24])
    } else {
        builder.chunks([16, 16, 16])
    };
    let array = builder.create(store.clone(), "v").unwrap();
    array.write_elements(&selection![..], &volume(48)).unwrap();
    let reader = Array::open(store, "v").unwrap();
    counting.reset();
    (counting, reader)
}

fn point(array: &Array, z: u64, y: u64, x: u64) -> u16 {
    let (_, v) = array
        .read_elements::<u16>(&selection![z as i64, y as i64, x as i64])
        .unwrap();
    v[0]
}

fn gets(counts: StoreCounts) -> u64 {
    counts.whole_reads + counts.ranges_read
}

#[test]
fn repeated_point_reads_in_one_chunk_make_one_get() {
    for remote in [false, true] {
        let (counting, array) = counted_volume(false, remote);
        let array = array.with_cache_bytes(1 << 20);
        for (z, y, x) in [(1, 2, 3), (15, 0, 9), (7, 7, 7), (0, 15, 15), (1, 2, 3)] {
            assert_eq!(point(&array, z, y, x), value(z, y, x));
        }
        assert_eq!(counting.counts().whole_reads, 1, "remote: {remote}");
        // Another chunk: one more GET, then none for it either.
        assert_eq!(point(&array, 40, 20, 33), value(40, 20, 33));
        assert_eq!(point(&array, 41, 21, 34), value(41, 21, 34));
        assert_eq!(counting.counts().whole_reads, 2, "remote: {remote}");
        let stats = array.cache_stats();
        assert_eq!((stats.entries, stats.hits, stats.misses), (2, 5, 2));

        // Without the cache every point read is a GET.
        counting.reset();
        array.set_cache_bytes(0);
        for _ in 0..3 {
            assert_eq!(point(&array, 1, 2, 3), value(1, 2, 3));
        }
        assert_eq!(counting.counts().whole_reads, 3, "remote: {remote}");
    }
}

#[test]
fn a_box_across_chunks_is_served_from_the_cache_the_second_time() {
    let (counting, array) = counted_volume(false, true);
    let array = array.with_cache_bytes(1 << 20);
    let sel: Selection = "10:20,14:18,33:37".parse().unwrap();
    let expected: Vec<u16> = (10..20)
        .flat_map(|z| (14..18).flat_map(move |y| (33..37).map(move |x| value(z, y, x))))
        .collect();
    for _ in 0..3 {
        assert_eq!(array.read_elements::<u16>(&sel).unwrap().1, expected);
    }
    // Four chunks (2 along z, 2 along y), each fetched once.
    assert_eq!(counting.counts().whole_reads, 4);
}

#[test]
fn whole_chunk_reads_bypass_the_cache() {
    let (counting, array) = counted_volume(false, false);
    let array = array.with_cache_bytes(64 << 20);
    let sel: Selection = "16:32,0:16,0:32".parse().unwrap();
    for _ in 0..2 {
        array.read_elements::<u16>(&sel).unwrap();
    }
    assert_eq!(array.cache_stats().entries, 0);
    assert_eq!(counting.counts().whole_reads, 4);
    // A whole-array read keeps nothing either.
    let (_, all) = array.read_elements::<u16>(&selection![..]).unwrap();
    assert_eq!(all, volume(48));
    assert_eq!(array.cache_stats().entries, 0);
}

#[test]
fn sharded_point_reads_make_one_ranged_get_after_the_first() {
    for remote in [false, true] {
        let (counting, array) = counted_volume(true, remote);
        let array = array.with_cache_bytes(1 << 20);
        // The first point of a shard: its index and one inner chunk, two ranged reads.
        assert_eq!(point(&array, 1, 2, 3), value(1, 2, 3));
        assert_eq!(counting.counts().ranges_read, 2, "remote: {remote}");
        assert_eq!(counting.counts().whole_reads, 0);
        // Another inner chunk of the same shard: the index is cached, one ranged read.
        counting.reset();
        assert_eq!(point(&array, 20, 9, 17), value(20, 9, 17));
        assert_eq!(gets(counting.counts()), 1, "remote: {remote}");
        // The same inner chunks again: nothing read.
        counting.reset();
        assert_eq!(point(&array, 0, 0, 0), value(0, 0, 0));
        assert_eq!(point(&array, 23, 15, 23), value(23, 15, 23));
        assert_eq!(gets(counting.counts()), 0, "remote: {remote}");
        // Without the cache each point read is two ranged reads again.
        array.set_cache_bytes(0);
        counting.reset();
        assert_eq!(point(&array, 20, 9, 17), value(20, 9, 17));
        assert_eq!(gets(counting.counts()), 2, "remote: {remote}");
    }
}

#[test]
fn writes_through_the_handle_invalidate_the_chunks_they_touch() {
    for sharded in [false, true] {
        let (counting, array) = counted_volume(sharded, false);
        let array = array.with_cache_bytes(8 << 20);
        let reader = array.clone();
        assert_eq!(point(&reader, 5, 6, 7), value(5, 6, 7));
        assert_eq!(point(&reader, 30, 30, 30), value(30, 30, 30));
        // A write of part of the first chunk through a clone of the handle.
        array
            .write_elements(&"5:7,6,7:9".parse().unwrap(), &[1000u16, 1001, 1002, 1003])
            .unwrap();
        assert_eq!(point(&reader, 5, 6, 7), 1000);
        assert_eq!(point(&reader, 6, 6, 8), 1003);
        assert_eq!(point(&reader, 5, 5, 7), value(5, 5, 7));
        // The untouched chunk stays cached.
        counting.reset();
        assert_eq!(point(&reader, 31, 31, 31), value(31, 31, 31));
        assert_eq!(gets(counting.counts()), 0, "sharded: {sharded}");
        // A chunk rewritten whole (and one deleted as all fill value) is read anew.
        let size = if sharded { 24 } else { 16 };
        array
            .write_elements(
                &Selection::from_box(&[0, 0, 0], &[size, size, size]),
                &vec![7u16; (size * size * size) as usize],
            )
            .unwrap();
        assert_eq!(point(&reader, 5, 6, 7), 7);
        array
            .write_elements(
                &Selection::from_box(&[24, 24, 24], &[24, 24, 24]),
                &vec![0u16; 24 * 24 * 24],
            )
            .unwrap();
        assert_eq!(point(&reader, 30, 30, 30), 0);
        assert_eq!(point(&reader, 31, 31, 31), 0);
    }
}

#[test]
fn stored_chunks_and_resizes_invalidate() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let mut array = ArrayBuilder::new([10, 10], DataType::UInt16)
        .chunks([4, 4])
        .create(store, "a")
        .unwrap()
        .with_cache_bytes(1 << 20);
    let values: Vec<u16> = (1..=100).collect();
    array.write_elements(&selection![..], &values).unwrap();
    let at = |a: &Array, r: i64, c: i64| a.read_elements::<u16>(&selection![r, c]).unwrap().1[0];
    assert_eq!(at(&array, 1, 1), 12);
    array
        .store_chunk(&[0, 0], neurochunk_array::ArrayBytes::Fixed(vec![9; 32]))
        .unwrap();
    assert_eq!(at(&array, 1, 1), u16::from_le_bytes([9, 9]));

    // Chunk (2, 2) is deleted by shrinking to 6 x 6; grown back, it reads as fill value.
    assert_eq!(at(&array, 9, 9), 100);
    assert_eq!(array.cache_stats().entries, 2);
    array.resize(vec![6, 6]).unwrap();
    assert_eq!(array.cache_stats().entries, 0);
    array.resize(vec![10, 10]).unwrap();
    assert_eq!(at(&array, 9, 9), 0);
    assert_eq!(at(&array, 5, 5), 56);
}

#[test]
fn the_budget_bounds_what_is_held() {
    let (counting, array) = counted_volume(false, false);
    // Room for three decoded 16³ uint16 chunks (8 KiB each) and their entries.
    let budget = 3 * 8192 + 3 * 256;
    let array = array.with_cache_bytes(budget);
    for c in 0..27u64 {
        let (z, y, x) = (c / 9 * 16 + 1, c / 3 % 3 * 16 + 2, c % 3 * 16 + 3);
        assert_eq!(point(&array, z, y, x), value(z, y, x));
        let stats = array.cache_stats();
        assert!(stats.bytes <= budget, "{stats:?}");
        assert!(stats.entries <= 3, "{stats:?}");
    }
    assert_eq!(array.cache_stats().entries, 3);
    // The most recent three are held: reading them again makes no request.
    counting.reset();
    for c in 24..27u64 {
        let (z, y, x) = (c / 9 * 16 + 5, c / 3 % 3 * 16 + 6, c % 3 * 16 + 7);
        assert_eq!(point(&array, z, y, x), value(z, y, x));
    }
    assert_eq!(counting.counts().whole_reads, 0);
    // The oldest were evicted.
    assert_eq!(point(&array, 1, 2, 3), value(1, 2, 3));
    assert_eq!(counting.counts().whole_reads, 1);

    // Shrinking the budget evicts down to it.
    array.set_cache_bytes(8192 + 256);
    assert_eq!(array.cache_stats().entries, 1);
    // A chunk larger than the budget is never kept.
    array.set_cache_bytes(8000);
    counting.reset();
    for _ in 0..3 {
        assert_eq!(point(&array, 1, 2, 3), value(1, 2, 3));
    }
    assert_eq!(array.cache_stats().entries, 0);
    assert_eq!(counting.counts().whole_reads, 3);
}

#[test]
fn a_read_of_parts_of_more_chunks_than_fit_keeps_none() {
    let (_, array) = counted_volume(false, false);
    let array = array.with_cache_bytes(4 * 8192);
    // A plane through all 27 chunks' worth of columns: 9 chunks, more than 4 fit.
    let (_, plane) = array
        .read_elements::<u16>(&selection![7_i64, .., ..])
        .unwrap();
    assert_eq!(plane[48 + 5], value(7, 1, 5));
    assert_eq!(array.cache_stats().entries, 0);
}

#[test]
fn threads_reading_one_handle_get_the_right_values() {
    for sharded in [false, true] {
        let (_, array) = counted_volume(sharded, true);
        // Small enough that the threads evict each other's chunks.
        let array = array.with_cache_bytes(6 * 8192);
        std::thread::scope(|scope| {
            for t in 0..8u64 {
                let array = array.clone();
                scope.spawn(move || {
                    let mut rng = fastrand::Rng::with_seed(t);
                    for _ in 0..300 {
                        let (z, y, x) = (rng.u64(0..48), rng.u64(0..48), rng.u64(0..48));
                        assert_eq!(point(&array, z, y, x), value(z, y, x), "sharded: {sharded}");
                        let sel = Selection::from_box(&[z / 2, y / 2, x / 2], &[3, 2, 1]);
                        let (_, got) = array.read_elements::<u16>(&sel).unwrap();
                        assert_eq!(got[5], value(z / 2 + 2, y / 2 + 1, x / 2));
                    }
                });
            }
        });
        let stats = array.cache_stats();
        assert!(stats.bytes <= 6 * 8192 && stats.hits > 0, "{stats:?}");
    }
}

/// From a store that pays a round trip per read, a chunk read in part is kept as stored when
/// that is smaller (zstd here): more chunks fit the budget, and a hit decodes it again with
/// the right values and no request. From a local store the decoded chunk is kept.
#[test]
fn remote_reads_keep_chunks_as_stored_when_smaller() {
    let decoded = 16 * 16 * 16 * 2;
    for sharded in [false, true] {
        let (counting, array) = counted_volume(sharded, true);
        let array = array.with_cache_bytes(1 << 20);
        assert_eq!(point(&array, 1, 2, 3), value(1, 2, 3));
        let held = array.cache_stats().bytes;
        let inner = if sharded { 8 * 8 * 8 * 2 } else { decoded };
        let requests = gets(counting.counts());
        for (z, y, x) in [(1, 2, 4), (0, 0, 0), (7, 7, 7)] {
            assert_eq!(point(&array, z, y, x), value(z, y, x));
        }
        assert_eq!(gets(counting.counts()), requests, "hits cost no request");
        let stats = array.cache_stats();
        // The shard's index: 27 entries of an optional (offset, length), plus the overhead.
        let index = if sharded { 27 * 24 + 128 } else { 0 };
        assert!(
            stats.bytes < inner + 128 + index,
            "sharded {sharded}: {} bytes held for a chunk of {inner} decoded bytes",
            stats.bytes
        );
        assert_eq!(stats.bytes, held);
    }
    // The same reads from a local store keep the decoded chunk.
    let (_, array) = counted_volume(false, false);
    let array = array.with_cache_bytes(1 << 20);
    assert_eq!(point(&array, 1, 2, 3), value(1, 2, 3));
    assert!(array.cache_stats().bytes >= decoded);
}
