//! Process-wide locks on the chunks a write rewrites in part.
//!
//! A write that covers part of a chunk (of a shard, for a sharded array) reads the stored
//! chunk, updates it and stores it again. Two such writes to one chunk at once, from threads
//! of one process (Dask's threaded scheduler storing blocks that share a shard), would each
//! store their own update over the old bytes and lose the other's. A write from a thread
//! outside rayon's pool therefore holds the locks of the chunks it rewrites in part from
//! before it reads them until they are stored; writes of disjoint chunks proceed in parallel.
//!
//! The locks are a fixed set of stripes chosen by a hash of the array's path and the chunk's
//! key, taken in stripe order, so two writes can never wait on each other in a cycle. Threads
//! of rayon's pool (neurochunk's own parallel conversions, whose writes never share a chunk)
//! take none: a pool thread that blocked on a lock while holding others could stall the
//! work-stealing the holder of that lock waits for. Writers in other processes are not
//! covered: see docs/concurrency.md.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{LazyLock, Mutex, MutexGuard};

const STRIPES: usize = 1024;

static LOCKS: LazyLock<Vec<Mutex<()>>> =
    LazyLock::new(|| (0..STRIPES).map(|_| Mutex::new(())).collect());
static HASHER: LazyLock<std::collections::hash_map::RandomState> = LazyLock::new(Default::default);

/// The locks one write holds (released when dropped).
pub(crate) struct HeldChunks {
    _guards: Vec<MutexGuard<'static, ()>>,
}

/// Whether writes from the calling thread take chunk locks: not on rayon's pool (see the
/// module's documentation). Callers ask first, and skip gathering keys when not.
pub(crate) fn applies() -> bool {
    rayon::current_thread_index().is_none()
}

/// Lock the chunks `keys` of the array at `path` (from a thread where [`applies`]); `None`
/// when there are none.
pub(crate) fn lock_partial_chunks<'a>(
    path: &str,
    keys: impl Iterator<Item = &'a str>,
) -> Option<HeldChunks> {
    let mut stripes: Vec<usize> = keys
        .map(|key| {
            let mut hasher = HASHER.build_hasher();
            path.hash(&mut hasher);
            key.hash(&mut hasher);
            (hasher.finish() % STRIPES as u64) as usize
        })
        .collect();
    if stripes.is_empty() {
        return None;
    }
    stripes.sort_unstable();
    stripes.dedup();
    // A panic while a lock was held left no state behind it: the lock is still good.
    let guards = stripes
        .into_iter()
        .map(|s| LOCKS[s].lock().unwrap_or_else(|p| p.into_inner()))
        .collect();
    Some(HeldChunks { _guards: guards })
}
