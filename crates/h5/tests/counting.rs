//! What reaches the store: opening and listing a multi-megabyte file reads a small fraction of
//! it in few batches, and a one-chunk read fetches about that chunk plus index pages.

mod common;

use std::sync::Arc;

use common::*;
use neurochunk_h5::{H5File, Object, OpenOptions, Slice};
use neurochunk_store::{CountingStore, Store};

fn counting(name: &str) -> (Arc<CountingStore>, u64) {
    let inner = store_with(name);
    let size = inner.size(name).unwrap().unwrap();
    (Arc::new(CountingStore::new(inner)), size)
}

#[test]
fn listing_a_large_file_reads_little_of_it() {
    let (store, size) = counting("big.h5");
    assert!(size > 8_000_000, "big.h5 is {size} bytes");
    let file = H5File::open(store.clone(), "big.h5", "big.h5").unwrap();
    let objects = file.walk().unwrap();
    let mut attrs = 0;
    for (_, obj) in &objects {
        for a in obj.attributes().unwrap() {
            a.values().unwrap();
            attrs += 1;
        }
        if let Object::Dataset(d) = obj {
            let _ = (d.dtype(), d.shape(), d.layout(), d.filters());
        }
    }
    assert_eq!(objects.len(), 1 + 2 + 40 * 2);
    assert_eq!(attrs, 80);
    let c = store.counts();
    println!(
        "open + walk + attributes of {} objects: {} batches, {} ranges, {} bytes of {size} ({:.2}%)",
        objects.len(),
        c.batches,
        c.ranges_read,
        c.bytes_read,
        100.0 * c.bytes_read as f64 / size as f64
    );
    // The metadata of 83 objects, in pages of 256 KiB (the whole-file walk of a 1 GiB file
    // reads less than 0.1% of it: tests/interop/remote/test_remote_hdf5.py).
    let pages = OpenOptions::default().page_size;
    assert!(
        c.bytes_read <= 4 * pages && c.bytes_read * 10 < size,
        "read {} of {size} bytes",
        c.bytes_read
    );
    assert!(c.batches <= 6, "{} batches", c.batches);
}

#[test]
fn one_chunk_read_fetches_about_one_chunk() {
    let (store, size) = counting("big.h5");
    let file = H5File::open(store.clone(), "big.h5", "big.h5").unwrap();
    let Object::Dataset(d) = file.object("/chunked").unwrap() else {
        panic!()
    };
    let before = store.counts();
    // One element inside chunk (5, 7): 100 x 100 f8 = 80 000 bytes stored.
    let v = d
        .read_raw(&[Slice::range(512, 513), Slice::range(733, 734)])
        .unwrap();
    assert_eq!(
        f64::from_le_bytes(v.try_into().unwrap()),
        ((512 * 1000 + 733) % 7) as f64
    );
    let after = store.counts();
    let bytes = after.bytes_read - before.bytes_read;
    let batches = after.batches - before.batches;
    println!(
        "one-element read of a 100x100 f8 chunk: {batches} batches, {} ranges, {bytes} bytes (file {size})",
        after.ranges_read - before.ranges_read
    );
    assert!(bytes >= 80_000, "{bytes} bytes");
    assert!(
        bytes <= 80_000 + 4 * OpenOptions::default().page_size,
        "{bytes} bytes"
    );
    assert!(batches <= 3, "{batches} batches");
}

#[test]
fn contiguous_reads_fetch_only_the_rows_asked_for() {
    let (store, _) = counting("big.h5");
    let file = H5File::open(store.clone(), "big.h5", "big.h5").unwrap();
    let Object::Dataset(d) = file.object("/contiguous").unwrap() else {
        panic!()
    };
    let before = store.counts();
    let v = d
        .read_raw(&[Slice::range(100, 102), Slice::range(0, 1000)])
        .unwrap();
    assert_eq!(v.len(), 2 * 1000 * 4);
    let after = store.counts();
    let bytes = after.bytes_read - before.bytes_read;
    println!("two rows of a contiguous 500x1000 i4: {bytes} bytes");
    assert_eq!(bytes, 8000);
    assert_eq!(after.batches - before.batches, 1);
}

#[test]
fn small_pages_and_initial_read_are_configurable() {
    let (store, _) = counting("big.h5");
    let options = OpenOptions {
        page_size: 4096,
        initial_read: 4096,
        tail_read: 0,
        cache_bytes: 1 << 20,
        read_gap: 64 * 1024,
    };
    let file = H5File::open_with(store.clone(), "big.h5", "big.h5", options).unwrap();
    assert_eq!(store.counts().bytes_read, 4096);
    let objects = file.walk().unwrap();
    assert_eq!(objects.len(), 83);
    println!(
        "4 KiB pages: walk read {} bytes in {} batches",
        store.counts().bytes_read,
        store.counts().batches
    );
}

#[test]
fn small_adjacent_chunks_are_fetched_together() {
    let (store, _) = counting("latest.h5");
    let file = H5File::open(store.clone(), "latest.h5", "latest.h5").unwrap();
    let Object::Dataset(d) = file.object("/index/btree2_deep").unwrap() else {
        panic!()
    };
    let index_reads = d.chunks().unwrap().len();
    assert_eq!(index_reads, 8100);
    let before = store.counts();
    let v = d.read_raw_all().unwrap();
    assert_eq!(v.len(), 8100);
    let after = store.counts();
    let ranges = after.ranges_read - before.ranges_read;
    println!(
        "8100 one-byte chunks: {} batches, {ranges} ranges, {} bytes",
        after.batches - before.batches,
        after.bytes_read - before.bytes_read
    );
    assert!(ranges < 50, "{ranges} ranges");
}

#[test]
fn spans_partly_cached_are_read_only_where_missing() {
    let (store, size) = counting("big.h5");
    let file = H5File::open(store.clone(), "big.h5", "big.h5").unwrap();
    let page = OpenOptions::default().page_size;
    let at = (size / 2 / page) * page + 100;
    // Pages 0..3 from `at`'s page cached; the span then covers two of them and three more.
    file.prefetch_spans(&[(at, 3 * page - 200)]).unwrap();
    let before = store.counts();
    let span = (at + page, 5 * page);
    let got = file.read_spans(&[span, (at + 10, 50)]).unwrap();
    let after = store.counts();
    let whole = store_with("big.h5").get("big.h5").unwrap().unwrap();
    let expected = &whole[span.0 as usize..(span.0 + span.1) as usize];
    assert_eq!(&got[0][..], expected);
    assert_eq!(&got[1][..], &whole[at as usize + 10..at as usize + 60]);
    // Only what the cache lacks: the span's end past the third cached page (3 pages + 100 bytes).
    let read = after.bytes_read - before.bytes_read;
    assert_eq!(read, 3 * page + 100, "read {read} bytes");
}
