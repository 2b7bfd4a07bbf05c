//! The bounded cache of chunks an opened [`Array`](crate::Array) keeps for repeated partial
//! reads, and of sharded arrays' decoded shard indexes.
//!
//! Only reads that need part of a chunk (or of an inner chunk of a shard) use it: the chunk
//! they had to fetch and decode anyway is kept, and a later partial read of the same chunk is
//! served from memory without a store request. From a local store the decoded chunk is kept
//! (a hit is a copy). From a store that pays a round trip per request (a remote one) the
//! chunk is kept *as stored* when that is smaller (compressed): decoding it again costs far
//! less than a request (a fraction of a millisecond against tens), and two to four times as
//! many chunks fit the same budget. Whole-chunk reads
//! decode straight into the caller's buffer and never touch it. A shard's index is kept
//! whenever it was read on its own (a ranged read), so a later point read of the shard is one
//! ranged read of the inner chunk.
//!
//! The cache is a least-recently-used map bounded by bytes, behind one mutex held only for a
//! map lookup or update (decoding and copying happen outside it); values are shared
//! (`Arc`), so a hit is a reference-count increment. Writes through the handle invalidate the
//! entries of the chunks they touch and bump a generation counter: a read that fetched a
//! chunk before a write finished inserts nothing, so no stale chunk outlives the write.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use neurochunk_store::Bytes;

/// The cache budget of arrays opened read-only by the Python package (`mode="r"`): 64 MiB
/// per array handle, room for 128 decoded 64³ `uint16` chunks.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// Bytes charged per entry beyond its value (key, map slots), so that many tiny entries
/// cannot exceed the budget unseen.
const ENTRY_OVERHEAD: usize = 128;

/// A decoded shard index: per inner chunk, its offset and length, `None` when not stored.
pub(crate) type ShardIndex = Arc<Vec<Option<(u64, u64)>>>;

/// A chunk found in the cache.
#[derive(Clone, Debug)]
pub(crate) enum CachedChunk {
    /// Decoded (fixed-size elements, in-memory layout).
    Decoded(Arc<Vec<u8>>),
    /// As stored, to decode again.
    Stored(Bytes),
}

/// What an entry caches.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum CacheKey {
    /// A decoded chunk of an array without sharding, by its grid index.
    Chunk(Vec<u64>),
    /// The decoded index of the shard at this grid index.
    ShardIndex(Vec<u64>),
    /// A decoded inner chunk: its shard's grid index and its C-order number in the shard.
    Inner(Vec<u64>, usize),
}

impl CacheKey {
    /// The grid index of the chunk (shard) the entry belongs to.
    fn grid(&self) -> &[u64] {
        match self {
            CacheKey::Chunk(g) | CacheKey::ShardIndex(g) | CacheKey::Inner(g, _) => g,
        }
    }
}

/// A cached value.
#[derive(Clone, Debug)]
pub(crate) enum Cached {
    /// A decoded chunk (fixed-size elements, in-memory layout).
    Chunk(Arc<Vec<u8>>),
    /// A chunk as stored (its encoded bytes, a copy of their own).
    Stored(Bytes),
    /// A decoded shard index.
    Index(ShardIndex),
}

impl Cached {
    fn bytes(&self) -> usize {
        ENTRY_OVERHEAD
            + match self {
                Cached::Chunk(buf) => buf.len(),
                Cached::Stored(bytes) => bytes.len(),
                Cached::Index(entries) => entries.len() * std::mem::size_of::<Option<(u64, u64)>>(),
            }
    }
}

/// Counters of a cache since the handle was opened, see [`Array::cache_stats`](crate::Array::cache_stats).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Bytes held now (decoded chunks, shard indexes and a fixed overhead per entry); never
    /// more than the budget.
    pub bytes: usize,
    /// Entries held now.
    pub entries: usize,
    /// Partial reads of a chunk (inner chunk) or shard index served from the cache.
    pub hits: u64,
    /// Partial reads of a chunk (inner chunk) or shard index the cache did not hold.
    pub misses: u64,
}

struct Entry {
    value: Cached,
    bytes: usize,
    tick: u64,
}

#[derive(Default)]
struct State {
    entries: HashMap<CacheKey, Entry>,
    /// The entries by last use, oldest first.
    order: BTreeMap<u64, CacheKey>,
    tick: u64,
    held: usize,
    /// Bumped by every invalidation (see [`ChunkCache::insert`]).
    generation: u64,
}

impl State {
    fn remove(&mut self, key: &CacheKey) {
        if let Some(entry) = self.entries.remove(key) {
            self.order.remove(&entry.tick);
            self.held -= entry.bytes;
        }
    }

    /// Evict the least recently used entries until `held + room <= budget`.
    fn make_room(&mut self, budget: usize, room: usize) {
        while self.held + room > budget {
            let Some((_, key)) = self.order.pop_first() else {
                break;
            };
            if let Some(entry) = self.entries.remove(&key) {
                self.held -= entry.bytes;
            }
        }
    }
}

/// The cache of one array handle, shared by its clones.
pub(crate) struct ChunkCache {
    budget: AtomicUsize,
    state: Mutex<State>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl std::fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let stats = self.stats();
        f.debug_struct("ChunkCache")
            .field("budget", &self.budget())
            .field("bytes", &stats.bytes)
            .field("entries", &stats.entries)
            .finish()
    }
}

impl ChunkCache {
    /// A cache holding at most `budget` bytes (0: off).
    pub fn new(budget: usize) -> Self {
        ChunkCache {
            budget: AtomicUsize::new(budget),
            state: Mutex::new(State::default()),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn budget(&self) -> usize {
        self.budget.load(Ordering::Relaxed)
    }

    /// Whether reads should look here at all (no lock taken).
    pub fn enabled(&self) -> bool {
        self.budget() > 0
    }

    /// Change the budget, evicting the oldest entries down to it (all of them for 0).
    pub fn set_budget(&self, budget: usize) {
        let mut state = self.state();
        self.budget.store(budget, Ordering::Relaxed);
        state.make_room(budget, 0);
    }

    pub fn stats(&self) -> CacheStats {
        let state = self.state();
        CacheStats {
            bytes: state.held,
            entries: state.entries.len(),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    /// The generation to pass to [`ChunkCache::insert`] for data fetched from now on.
    pub fn generation(&self) -> u64 {
        self.state().generation
    }

    /// The value cached for `key`, now the most recently used; counted as a hit or a miss.
    pub fn get(&self, key: &CacheKey) -> Option<Cached> {
        let mut state = self.state();
        state.tick += 1;
        let tick = state.tick;
        let Some(entry) = state.entries.get_mut(key) else {
            drop(state);
            self.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let old = std::mem::replace(&mut entry.tick, tick);
        let value = entry.value.clone();
        state.order.remove(&old);
        state.order.insert(tick, key.clone());
        drop(state);
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(value)
    }

    /// Keep `value` for `key`, evicting the least recently used entries to make room, unless
    /// it alone exceeds the budget or an invalidation happened since `generation` was taken
    /// (the value may predate a write through the handle).
    pub fn insert(&self, key: CacheKey, value: Cached, generation: u64) {
        let bytes = value.bytes();
        let mut state = self.state();
        let budget = self.budget();
        if state.generation != generation || bytes > budget {
            return;
        }
        state.remove(&key);
        state.make_room(budget, bytes);
        state.tick += 1;
        let tick = state.tick;
        state.held += bytes;
        state.order.insert(tick, key.clone());
        state.entries.insert(key, Entry { value, bytes, tick });
    }

    /// Drop the entries of every chunk (shard) whose grid index `touched` accepts, and make
    /// reads that fetched before now insert nothing.
    pub fn invalidate(&self, touched: impl Fn(&[u64]) -> bool) {
        let mut state = self.state();
        state.generation += 1;
        if state.entries.is_empty() {
            return;
        }
        let stale: Vec<CacheKey> = state
            .entries
            .keys()
            .filter(|k| touched(k.grid()))
            .cloned()
            .collect();
        for key in &stale {
            state.remove(key);
        }
    }

    /// Drop every entry (a resize), as [`ChunkCache::invalidate`] does.
    pub fn clear(&self) {
        self.invalidate(|_| true);
    }
}

/// The cache as one read uses it: taken when the read starts.
pub(crate) struct ReadCache<'a> {
    pub cache: &'a ChunkCache,
    /// The generation when the read started (see [`ChunkCache::insert`]).
    pub generation: u64,
    /// Whether this read keeps the chunks it decodes for a part: only when all the chunks
    /// it touches would fit in the budget, so a large read of parts of many chunks (a plane
    /// across a volume) does not flush the cache with chunks it uses once.
    pub keep: bool,
    /// Whether chunks are kept as stored when that is smaller: reads from a store that pays
    /// a round trip per request (see the module docs).
    prefer_stored: bool,
}

impl<'a> ReadCache<'a> {
    /// The read context of `cache` for a read from `store` whose touched chunks decode to
    /// `bytes()` bytes; `None` when the cache is off.
    pub fn start(
        cache: &'a ChunkCache,
        store: &dyn neurochunk_store::Store,
        bytes: impl FnOnce() -> usize,
    ) -> Option<Self> {
        if !cache.enabled() {
            return None;
        }
        Some(ReadCache {
            cache,
            generation: cache.generation(),
            keep: bytes() <= cache.budget(),
            prefer_stored: store.concurrent_reads() > 1,
        })
    }

    /// The cached chunk (or inner chunk) for `key`.
    pub fn chunk(&self, key: &CacheKey) -> Option<CachedChunk> {
        match self.cache.get(key) {
            Some(Cached::Chunk(buf)) => Some(CachedChunk::Decoded(buf)),
            Some(Cached::Stored(bytes)) => Some(CachedChunk::Stored(bytes)),
            _ => None,
        }
    }

    /// The cached decoded shard index for `key`.
    pub fn index(&self, key: &CacheKey) -> Option<ShardIndex> {
        match self.cache.get(key) {
            Some(Cached::Index(index)) => Some(index),
            _ => None,
        }
    }

    /// Keep a decoded shard index (small: whatever the read).
    pub fn keep_index(&self, key: CacheKey, index: ShardIndex) {
        self.cache
            .insert(key, Cached::Index(index), self.generation);
    }

    /// Keep a chunk: as `stored` (copied, so that it holds no larger buffer alive) when given
    /// and smaller than `decoded`, else decoded. Returns `decoded` when it is not kept, for
    /// its buffer pool.
    fn keep_chunk(
        &self,
        key: CacheKey,
        decoded: Vec<u8>,
        stored: Option<Bytes>,
    ) -> Option<Vec<u8>> {
        match stored {
            Some(stored) if stored.len() < decoded.len() => {
                let own = Bytes::copy_from_slice(&stored);
                self.cache.insert(key, Cached::Stored(own), self.generation);
                Some(decoded)
            }
            _ => {
                self.cache
                    .insert(key, Cached::Chunk(Arc::new(decoded)), self.generation);
                None
            }
        }
    }
}

/// What a read does with a chunk (or inner chunk) it fetched and decodes: a chunk read in
/// part is kept for the next partial read, decoded or as stored (see the module docs);
/// otherwise its decoded buffer goes back to its pool.
pub(crate) struct Keeping<'a> {
    /// The cache, when the chunk is kept.
    cache: Option<&'a ReadCache<'a>>,
    /// The chunk's stored bytes, held through its decoding when they may be what is kept.
    stored: Option<Bytes>,
}

impl<'a> Keeping<'a> {
    /// Before decoding `fetched`, the stored bytes of a chunk the read needs `partial`ly.
    pub fn start(cache: Option<&'a ReadCache<'a>>, partial: bool, fetched: &Bytes) -> Self {
        let cache = cache.filter(|c| c.keep && partial);
        let stored = cache.filter(|c| c.prefer_stored).map(|_| fetched.clone());
        Keeping { cache, stored }
    }

    /// Once decoded (and copied out): keep the chunk under `key`, or return its buffer.
    pub fn finish(self, key: impl FnOnce() -> CacheKey, decoded: Vec<u8>) -> Option<Vec<u8>> {
        match self.cache {
            Some(cache) => cache.keep_chunk(key(), decoded, self.stored),
            None => Some(decoded),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(n: usize) -> Cached {
        Cached::Chunk(Arc::new(vec![0; n]))
    }

    #[test]
    fn evicts_least_recently_used_within_budget() {
        let cache = ChunkCache::new(3 * (1000 + ENTRY_OVERHEAD));
        let g = cache.generation();
        for i in 0..3 {
            cache.insert(CacheKey::Chunk(vec![i]), chunk(1000), g);
        }
        assert!(cache.get(&CacheKey::Chunk(vec![0])).is_some());
        cache.insert(CacheKey::Chunk(vec![3]), chunk(1000), g);
        // 1 was the least recently used (0 was read after it).
        assert!(cache.get(&CacheKey::Chunk(vec![1])).is_none());
        assert!(cache.get(&CacheKey::Chunk(vec![0])).is_some());
        assert!(cache.get(&CacheKey::Chunk(vec![3])).is_some());
        let stats = cache.stats();
        assert_eq!(stats.entries, 3);
        assert!(stats.bytes <= cache.budget());
        assert_eq!((stats.hits, stats.misses), (3, 1));
    }

    #[test]
    fn oversized_values_and_stale_generations_are_not_kept() {
        let cache = ChunkCache::new(500);
        let g = cache.generation();
        cache.insert(CacheKey::Chunk(vec![0]), chunk(1000), g);
        assert_eq!(cache.stats().entries, 0);
        cache.invalidate(|_| false);
        cache.insert(CacheKey::Chunk(vec![0]), chunk(10), g);
        assert_eq!(cache.stats().entries, 0);
        cache.insert(CacheKey::Chunk(vec![0]), chunk(10), cache.generation());
        assert_eq!(cache.stats().entries, 1);
    }

    #[test]
    fn invalidation_drops_every_entry_of_a_shard() {
        let cache = ChunkCache::new(1 << 20);
        let g = cache.generation();
        cache.insert(CacheKey::Inner(vec![1, 0], 3), chunk(10), g);
        cache.insert(
            CacheKey::ShardIndex(vec![1, 0]),
            Cached::Index(Arc::new(vec![None; 4])),
            g,
        );
        cache.insert(CacheKey::Inner(vec![0, 0], 3), chunk(10), g);
        cache.invalidate(|grid| grid == [1, 0]);
        let stats = cache.stats();
        assert_eq!(stats.entries, 1);
        assert_eq!(stats.bytes, 10 + ENTRY_OVERHEAD);
        cache.set_budget(0);
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().bytes, 0);
    }
}
