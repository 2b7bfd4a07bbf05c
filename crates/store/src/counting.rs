//! A store that counts what passes through it: [`CountingStore`].
//!
//! Measuring I/O is how one checks that a read touched only what it needed (a projected
//! Parquet column, the inner chunks of a shard) and how one sizes a job before pointing it at
//! a remote bucket, where every request costs time and money.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::{
    ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, Store, StoreResult, ValueWriter,
};

/// What a [`CountingStore`] has seen since it was made (or last [reset](CountingStore::reset)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Whole-value reads, each key of a batch counted once.
    pub whole_reads: u64,
    /// Byte ranges read, each range counted once.
    pub ranges_read: u64,
    /// Batches ([`Store::get_many`] calls).
    pub batches: u64,
    /// Bytes returned by reads of every kind.
    pub bytes_read: u64,
    /// Values written ([`Store::set`]).
    pub writes: u64,
    /// Bytes written through [`Store::set`].
    pub bytes_written: u64,
}

#[derive(Debug, Default)]
struct Counters {
    whole_reads: AtomicU64,
    ranges_read: AtomicU64,
    batches: AtomicU64,
    bytes_read: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
}

fn add(counter: &AtomicU64, n: usize) {
    counter.fetch_add(n as u64, Ordering::Relaxed);
}

/// Another store, with counters of the reads and writes made through it. Batches are handed
/// to the inner store's own [`Store::get_many`], so a backend that serves them concurrently
/// still does.
///
/// ```
/// use std::sync::Arc;
/// use neurochunk_store::{ByteRange, Bytes, CountingStore, MemoryStore, Store};
///
/// let store = CountingStore::new(Arc::new(MemoryStore::new()));
/// store.set("a", Bytes::from_static(b"0123456789")).unwrap();
/// store
///     .get_ranges("a", &[ByteRange::FromStart { offset: 2, length: Some(2) }])
///     .unwrap();
/// let counts = store.counts();
/// assert_eq!((counts.writes, counts.ranges_read, counts.bytes_read), (1, 1, 2));
/// ```
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn Store>,
    counters: Counters,
}

impl CountingStore {
    /// Count the traffic to `inner`.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        CountingStore {
            inner,
            counters: Counters::default(),
        }
    }

    /// The counts so far.
    pub fn counts(&self) -> StoreCounts {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StoreCounts {
            whole_reads: load(&c.whole_reads),
            ranges_read: load(&c.ranges_read),
            batches: load(&c.batches),
            bytes_read: load(&c.bytes_read),
            writes: load(&c.writes),
            bytes_written: load(&c.bytes_written),
        }
    }

    /// Set every count back to zero.
    pub fn reset(&self) {
        let c = &self.counters;
        for counter in [
            &c.whole_reads,
            &c.ranges_read,
            &c.batches,
            &c.bytes_read,
            &c.writes,
            &c.bytes_written,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    /// The store being counted.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    fn count_whole(&self, value: Option<&Bytes>) {
        add(&self.counters.whole_reads, 1);
        add(&self.counters.bytes_read, value.map_or(0, Bytes::len));
    }

    fn count_ranges(&self, asked: usize, parts: Option<&Vec<Bytes>>) {
        add(&self.counters.ranges_read, asked);
        add(
            &self.counters.bytes_read,
            parts.map_or(0, |p| p.iter().map(Bytes::len).sum()),
        );
    }
}

impl Store for CountingStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let value = self.inner.get(key)?;
        self.count_whole(value.as_ref());
        Ok(value)
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        let parts = self.inner.get_ranges(key, ranges)?;
        self.count_ranges(ranges.len(), parts.as_ref());
        Ok(parts)
    }

    fn concurrent_reads(&self) -> usize {
        self.inner.concurrent_reads()
    }

    fn local_path(&self, key_or_prefix: &str) -> Option<std::path::PathBuf> {
        self.inner.local_path(key_or_prefix)
    }

    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        add(&self.counters.batches, 1);
        let responses = self.inner.get_many(requests);
        for (request, response) in requests.iter().zip(&responses) {
            let response = response.as_ref().ok();
            match &request.ranges {
                None => self.count_whole(match response {
                    Some(ReadResponse::Whole(value)) => Some(value),
                    _ => None,
                }),
                Some(ranges) => self.count_ranges(
                    ranges.len(),
                    match response {
                        Some(ReadResponse::Ranges(parts)) => Some(parts),
                        _ => None,
                    },
                ),
            }
        }
        responses
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        self.inner.size(key)
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        let len = value.len();
        self.inner.set(key, value)?;
        add(&self.counters.writes, 1);
        add(&self.counters.bytes_written, len);
        Ok(())
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        self.inner.delete(key)
    }

    /// Passes the whole batch to the inner store; each value counts as one write.
    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        let (count, len) = (values.len(), values.iter().map(|(_, v)| v.len()).sum());
        self.inner.set_many(values)?;
        add(&self.counters.writes, count);
        add(&self.counters.bytes_written, len);
        Ok(())
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        self.inner.list_prefix(prefix)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        self.inner.list_dir(prefix)
    }

    /// Passes the whole batch to the inner store.
    fn delete_many(&self, keys: Vec<String>) -> StoreResult<()> {
        self.inner.delete_many(keys)
    }

    fn write_group(&self, key: &str) -> Option<u64> {
        self.inner.write_group(key)
    }

    fn writer(&self, key: &str) -> StoreResult<Box<dyn ValueWriter + '_>> {
        self.inner.writer(key)
    }

    fn owned_writer(self: Arc<Self>, key: &str) -> StoreResult<Box<dyn ValueWriter>> {
        self.inner.clone().owned_writer(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemoryStore;

    #[test]
    fn counts_reads_batches_and_writes_and_passes_the_conformance_kit() {
        let store = CountingStore::new(Arc::new(MemoryStore::new()));
        crate::conformance::check_store(&store);
        store.reset();
        assert_eq!(store.counts(), StoreCounts::default());

        store.set("k", Bytes::from_static(b"abcdef")).unwrap();
        assert_eq!(store.get("k").unwrap().unwrap().len(), 6);
        assert!(store.get("missing").unwrap().is_none());
        let responses = store.get_many(&[
            ReadRequest::whole("k"),
            ReadRequest::ranges(
                "k",
                vec![
                    ByteRange::FromStart {
                        offset: 0,
                        length: Some(2),
                    },
                    ByteRange::Suffix { length: 1 },
                ],
            ),
            ReadRequest::whole("missing"),
        ]);
        assert_eq!(responses.len(), 3);
        assert_eq!(
            store.counts(),
            StoreCounts {
                whole_reads: 4,
                ranges_read: 2,
                batches: 1,
                bytes_read: 6 + 6 + 2 + 1,
                writes: 1,
                bytes_written: 6,
            }
        );
    }
}
