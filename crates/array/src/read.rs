//! The read path of a region, in four stages: *plan → fetch → decode → scatter*.
//!
//! 1. **Plan**: the lazy [`BlockTasks`] of a selection (one task per touched chunk or shard)
//!    is cut into bounded batches ([`Batches`]), so no more than about [`FETCH_BATCH_BYTES`]
//!    of chunks are held at once, however large the read.
//! 2. **Fetch**: each batch's store reads go out in one
//!    [`Store::get_many`](neurochunk_store::Store::get_many) call (for sharded
//!    arrays: one call for the shard indexes or whole shards, then one for the inner-chunk byte
//!    ranges of every touched shard). This is the one place where a remote backend puts many
//!    requests in flight. From a local store, groups of chunks are read and decoded
//!    independently ([`for_each_group`]); from a store that serves many reads at once (a remote
//!    one), several *lanes* fetch batches while the calling thread decodes the batches already
//!    fetched ([`windowed`]): a sliding window of requests rather than batches that each wait
//!    for their slowest request.
//! 3. **Decode** and 4. **scatter** run on rayon, one task per chunk (or inner chunk): decode
//!    with the codec chain, copy into the caller's buffer through `SharedBuffer`, then hand
//!    the decoded buffer back for reuse.
//!
//! The non-sharded stages live here; the sharded ones are in `sharded.rs`. Writes run in the
//! same batches (`Array::write`), fetching the chunks they only partly overwrite.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use neurochunk_codec::nd::SharedBuffer;
use neurochunk_codec::CodecChain;
use neurochunk_codec::{ArrayBytes, ChunkRepr};
use neurochunk_store::{Bytes, ReadRequest, ReadResponse, StoreError, StoreResult};
use rayon::prelude::*;

use crate::array::Array;
use crate::cache::{CacheKey, CachedChunk, Keeping, ReadCache};
use crate::error::{ArrayError, ArrayResult};
use crate::selection::BlockTasks;

/// Decoded bytes a group of chunks read from a local store may hold (estimated before the
/// fetch from the chunks' decoded sizes; each worker holds one group), and the least a
/// batch may hold.
pub(crate) const FETCH_BATCH_BYTES: usize = 4 << 20;

/// The most requests in one batch, whatever their size.
const MAX_BATCH_REQUESTS: usize = 1024;

/// Decoded bytes per request in flight a batch may hold for a store that serves many reads
/// at once ([`Store::concurrent_reads`](neurochunk_store::Store::concurrent_reads)): 64 MiB
/// for a remote store with 64 requests in flight, and twice that for all the lanes of a
/// [`windowed`] read together ([`window_bytes`]).
const BATCH_BYTES_PER_REQUEST: usize = 1 << 20;

/// The decoded bytes a batch of reads from `store` may hold: [`FETCH_BATCH_BYTES`], more for
/// a store that serves many reads at once. Memory is then bounded by the requests in flight.
pub(crate) fn batch_budget(store: &dyn neurochunk_store::Store) -> usize {
    store
        .concurrent_reads()
        .saturating_mul(BATCH_BYTES_PER_REQUEST)
        .max(FETCH_BATCH_BYTES)
}

/// Cuts the tasks `0..total` into consecutive batches by the tasks' estimated cost: for the
/// lanes of a [`windowed`] read, batches of a few tasks ([`Batches::for_lanes`]); for a read
/// that gathers its chunks batch after batch (variable-length data), at most
/// [`FETCH_BATCH_BYTES`] (or [`batch_budget`]) but at least one task per worker, the first
/// batch one task per worker (or one per request in flight) and each following one up to
/// twice as many as the one before (at most 1024).
pub(crate) struct Batches<C: Fn(usize) -> usize> {
    next: usize,
    total: usize,
    cost: C,
    /// Decoded bytes a batch may hold ([`FETCH_BATCH_BYTES`] or [`batch_budget`]).
    budget: usize,
    /// Tasks a batch holds whatever their cost: one per worker, so that every worker decodes.
    min_count: usize,
    max_count: usize,
    /// Whether each batch may hold twice as many tasks as the one before.
    grow: bool,
}

impl<C: Fn(usize) -> usize> Batches<C> {
    /// Batches of `total` tasks, task `t` costing `cost(t)` bytes.
    pub fn new(total: usize, cost: C) -> Self {
        let workers = rayon::current_num_threads().max(1);
        Batches {
            next: 0,
            total,
            cost,
            budget: FETCH_BATCH_BYTES,
            min_count: workers,
            max_count: workers,
            grow: true,
        }
    }

    /// The same batches, each up to `budget` bytes (see [`batch_budget`]).
    pub fn with_budget(mut self, budget: usize) -> Self {
        self.budget = budget.max(1);
        self
    }

    /// Batches for reads from (or writes to) `store`: each up to [`batch_budget`] bytes, and
    /// for a store that serves many reads at once the first batch as many tasks as it has
    /// requests in flight (budget permitting). Over a network a small first batch costs a
    /// whole round trip for a few chunks, and each doubling after it another one.
    pub fn for_store(total: usize, cost: C, store: &dyn neurochunk_store::Store) -> Self {
        let mut batches = Batches::new(total, cost).with_budget(batch_budget(store));
        let in_flight = store.concurrent_reads().min(MAX_BATCH_REQUESTS);
        if in_flight > batches.max_count {
            batches.min_count = in_flight;
            batches.max_count = in_flight;
        }
        batches
    }

    /// Batches for the lanes of a [`windowed`] read from `store`: each lane's batch at most
    /// `1/lanes` of the window ([`window_lanes`]) and about `2 × in_flight / lanes` tasks, so
    /// that the lanes' requests together keep the store's requests in flight (twice over: a
    /// lane that decodes has none out) without growing batches.
    pub fn for_lanes(
        total: usize,
        cost: C,
        store: &dyn neurochunk_store::Store,
        lanes: usize,
    ) -> Self {
        let lanes = lanes.max(1);
        let count = (2 * store.concurrent_reads())
            .div_ceil(lanes)
            .clamp(1, MAX_BATCH_REQUESTS);
        let mut batches = Batches::new(total, cost).with_budget(window_bytes(store) / lanes);
        batches.min_count = 1;
        batches.max_count = count;
        batches.grow = false;
        batches
    }
}

impl<C: Fn(usize) -> usize> Iterator for Batches<C> {
    type Item = Range<usize>;

    fn next(&mut self) -> Option<Range<usize>> {
        if self.next >= self.total {
            return None;
        }
        let start = self.next;
        let mut end = start;
        let mut bytes = 0usize;
        while end < self.total && end - start < self.max_count {
            let cost = (self.cost)(end);
            if end - start >= self.min_count && bytes.saturating_add(cost) > self.budget {
                break;
            }
            bytes = bytes.saturating_add(cost);
            end += 1;
        }
        self.next = end;
        if self.grow {
            self.max_count = (self.max_count * 2).min(MAX_BATCH_REQUESTS);
        }
        Some(start..end)
    }
}

/// The most lanes of a [`windowed`] read: threads that each fetch one batch at a time. Sixteen
/// lanes of a few requests each keep 64 requests in flight with little waiting for a batch's
/// slowest request.
const MAX_LANES: usize = 16;

/// The decoded bytes (by the tasks' estimate) of the batches a [`windowed`] read may hold at
/// once: twice [`batch_budget`], so bounded by the store's requests in flight.
pub(crate) fn window_bytes(store: &dyn neurochunk_store::Store) -> usize {
    batch_budget(store).saturating_mul(2)
}

/// How many lanes a [`windowed`] read of tasks costing about `task_cost` bytes each gets
/// from `store`: [`MAX_LANES`], fewer when so many tasks would not fit the window (a lane
/// holds at least one task), and never more than there are tasks.
pub(crate) fn window_lanes(
    store: &dyn neurochunk_store::Store,
    total: usize,
    task_cost: usize,
) -> usize {
    (window_bytes(store) / task_cost.max(1))
        .clamp(1, MAX_LANES)
        .min(total.max(1))
}

/// For a store that serves many reads at once: `lanes` fetch lanes (scoped threads) each take
/// the next of `batches` and fetch it with `fetch`, and the calling thread hands the fetched
/// batches to `process` as they arrive (its chunks are decoded on rayon). A lane fetches its
/// next batch as soon as any fetched batch has been processed, so at most `lanes` batches are
/// held (being fetched or waiting to be decoded) and the store's requests stay in flight while
/// earlier batches decode: a sliding window of requests rather than batches that each wait for
/// their slowest request. The first error stops the lanes before their next batch and is
/// returned. A single batch is fetched and processed on the calling thread.
pub(crate) fn windowed<B, T, F, P>(
    batches: impl Iterator<Item = B> + Send,
    lanes: usize,
    fetch: F,
    process: P,
) -> ArrayResult<()>
where
    B: Send,
    T: Send,
    F: Fn(B) -> ArrayResult<T> + Sync,
    P: Fn(T) -> ArrayResult<()>,
{
    let mut batches = batches.peekable();
    let Some(first) = batches.next() else {
        return Ok(());
    };
    if batches.peek().is_none() {
        // One batch (a read of a few chunks, a point read): no lanes to start.
        return process(fetch(first)?);
    }
    let batches = Mutex::new(std::iter::once(first).chain(batches));
    let window = Window::new(lanes.max(1));
    let first_error: Mutex<Option<ArrayError>> = Mutex::new(None);
    let fail = |error: ArrayError| {
        window.stop();
        if let Ok(mut first) = first_error.lock() {
            first.get_or_insert(error);
        }
    };
    let (sender, fetched) = std::sync::mpsc::channel::<T>();
    std::thread::scope(|scope| {
        let lane = |sender: std::sync::mpsc::Sender<T>| {
            while window.acquire() {
                let batch = batches.lock().ok().and_then(|mut b| b.next());
                let Some(batch) = batch else {
                    window.release();
                    return;
                };
                match fetch(batch) {
                    Ok(batch) => {
                        if sender.send(batch).is_err() {
                            return;
                        }
                    }
                    Err(error) => {
                        fail(error);
                        return;
                    }
                }
            }
        };
        let mut started = 0;
        for n in 0..lanes.max(1) {
            let sender = sender.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("neurochunk-fetch-{n}"))
                .spawn_scoped(scope, move || lane(sender));
            // A lane the system cannot start leaves its batches to the others.
            if spawned.is_ok() {
                started += 1;
            }
        }
        drop(sender);
        if started == 0 {
            fail(ArrayError::Store(StoreError::backend(
                "store",
                "",
                "no thread could be started to fetch the read's chunks",
            )));
            return;
        }
        for batch in fetched {
            if !window.stopped() {
                if let Err(error) = process(batch) {
                    fail(error);
                }
            }
            window.release();
        }
    });
    match first_error.into_inner() {
        Ok(Some(error)) => Err(error),
        Ok(None) => Ok(()),
        Err(poisoned) => poisoned.into_inner().map_or(Ok(()), Err),
    }
}

/// The batches a [`windowed`] read may hold at once: a counting semaphore that can be stopped.
struct Window {
    /// Free places, and whether the read has stopped.
    state: Mutex<(usize, bool)>,
    changed: std::sync::Condvar,
}

impl Window {
    fn new(places: usize) -> Self {
        Window {
            state: Mutex::new((places, false)),
            changed: std::sync::Condvar::new(),
        }
    }

    /// Wait for a free place and take it; `false` once the read has stopped.
    fn acquire(&self) -> bool {
        let Ok(mut state) = self.state.lock() else {
            return false;
        };
        loop {
            if state.1 {
                return false;
            }
            if state.0 > 0 {
                state.0 -= 1;
                return true;
            }
            state = match self.changed.wait(state) {
                Ok(state) => state,
                Err(_) => return false,
            };
        }
    }

    /// Give a place back.
    fn release(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.0 += 1;
        }
        self.changed.notify_one();
    }

    /// Stop the read: lanes waiting for a place, and those that ask next, get none.
    fn stop(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.1 = true;
        }
        self.changed.notify_all();
    }

    fn stopped(&self) -> bool {
        self.state.lock().map_or(true, |state| state.1)
    }
}

/// The most tasks in one group of a read or write from a local store ([`for_each_group`]).
pub(crate) const GROUP_TASKS: usize = 16;

/// For a store that serves one read at a time (a local one): cut the tasks `0..total` into
/// consecutive groups of up to [`FETCH_BATCH_BYTES`] by `cost` and [`GROUP_TASKS`] tasks (at
/// least one each) and run `group` for each on rayon. Groups do not wait for each other: a
/// worker that is done with one takes the next, so no worker idles at a group's end; each
/// worker holds one group at a time. One group runs on the
/// calling thread (a read of one chunk, such as a single element, is not handed to the pool
/// and back).
pub(crate) fn for_each_group<C, F>(total: usize, cost: C, group: F) -> ArrayResult<()>
where
    C: Fn(usize) -> usize,
    F: Fn(Range<usize>) -> ArrayResult<()> + Sync + Send,
{
    let mut groups = Vec::new();
    let mut start = 0;
    while start < total {
        let mut end = start + 1;
        let mut bytes = cost(start);
        while end < total && end - start < GROUP_TASKS {
            let next = cost(end);
            if bytes.saturating_add(next) > FETCH_BATCH_BYTES {
                break;
            }
            bytes = bytes.saturating_add(next);
            end += 1;
        }
        groups.push(start..end);
        start = end;
    }
    run_groups(groups, group)
}

/// Run `group` for each of `groups` on rayon, each group on one worker, workers taking the
/// next group as they finish one; a single group on the calling thread.
pub(crate) fn run_groups<F>(groups: Vec<Range<usize>>, group: F) -> ArrayResult<()>
where
    F: Fn(Range<usize>) -> ArrayResult<()> + Sync + Send,
{
    match groups.len() {
        0 => Ok(()),
        1 => groups.into_iter().try_for_each(group),
        _ => groups.into_par_iter().with_max_len(1).try_for_each(group),
    }
}

/// Cut the tasks `0..total`, made of units that start at `starts` (ascending, the first 0),
/// into consecutive batches of whole units: each batch holds at least one unit, and further
/// units while it stays within `budget` bytes by `cost` and `max_tasks` tasks. With one
/// task per unit these are about the groups of [`for_each_group`]; with a store's write
/// groups (`Store::write_group`) as units, no write group is split between batches.
pub(crate) fn whole_groups<C>(
    starts: &[usize],
    total: usize,
    cost: C,
    budget: usize,
    max_tasks: usize,
) -> Vec<Range<usize>>
where
    C: Fn(usize) -> usize,
{
    let ends = starts.iter().skip(1).copied().chain(std::iter::once(total));
    let units: Vec<Range<usize>> = starts.iter().zip(ends).map(|(&s, e)| s..e).collect();
    let unit_cost =
        |unit: &Range<usize>| unit.clone().fold(0usize, |n, t| n.saturating_add(cost(t)));
    let mut batches: Vec<Range<usize>> = Vec::new();
    let mut bytes = 0usize;
    for unit in units.into_iter().filter(|u| !u.is_empty()) {
        let unit_bytes = unit_cost(&unit);
        match batches.last_mut() {
            Some(batch)
                if unit.end - batch.start <= max_tasks
                    && bytes.saturating_add(unit_bytes) <= budget =>
            {
                batch.end = unit.end;
                bytes = bytes.saturating_add(unit_bytes);
            }
            _ => {
                batches.push(unit.clone());
                bytes = unit_bytes;
            }
        }
    }
    batches
}

/// A whole-value answer of [`Store::get_many`](neurochunk_store::Store::get_many): the bytes,
/// or `None` for a missing key.
pub(crate) fn whole_value(
    answer: StoreResult<ReadResponse>,
    key: &str,
) -> StoreResult<Option<Bytes>> {
    match answer? {
        ReadResponse::Missing => Ok(None),
        ReadResponse::Whole(bytes) => Ok(Some(bytes)),
        ReadResponse::Ranges(_) => Err(StoreError::backend(
            "store",
            key,
            "answered a whole-value read with byte ranges",
        )),
    }
}

/// A chunk's data after the fetch stage.
pub(crate) enum Fetched {
    /// Its stored bytes.
    Stored(Bytes),
    /// Not stored: the fill value.
    Missing,
    /// Decoded, from the array's cache.
    Cached(Arc<Vec<u8>>),
}

impl From<CachedChunk> for Fetched {
    /// A cache hit: decoded, or as stored (decoded again like a fetched chunk).
    fn from(hit: CachedChunk) -> Self {
        match hit {
            CachedChunk::Decoded(decoded) => Fetched::Cached(decoded),
            CachedChunk::Stored(bytes) => Fetched::Stored(bytes),
        }
    }
}

/// One fetched chunk: its task number, key, and data.
pub(crate) type FetchedChunk = (usize, String, Fetched);

/// Hand a decoded chunk's buffer, once copied out, to the pool its next use draws from: the
/// codec pool of this thread when bytes→bytes codecs decode into a new buffer, otherwise the
/// store's pool (the decoded chunk is then the fetched buffer itself).
pub(crate) fn recycle_decoded(chain: &CodecChain, buffer: Vec<u8>) {
    if chain.bytes_to_bytes().is_empty() {
        neurochunk_store::recycle_buffer(buffer);
    } else {
        neurochunk_codec::recycle_buffer(buffer);
    }
}

impl Array {
    /// Decode a fetched chunk. With bytes→bytes codecs the chain reads the fetched bytes in
    /// place and their buffer goes back to the store's pool for the next fetch; otherwise the
    /// buffer is handed to the chain (no copy when nothing else holds it).
    pub(crate) fn decode_fetched(
        &self,
        index: &[u64],
        key: &str,
        bytes: Bytes,
        repr: &ChunkRepr,
    ) -> ArrayResult<ArrayBytes> {
        let chain = &self.metadata().codecs;
        if chain.bytes_to_bytes().is_empty() {
            return self.decode_chunk(index, key, Vec::from(bytes), repr);
        }
        let extent = self.metadata().chunk_extent(index);
        let decoded = chain
            .decode_edge_from_slice(&bytes, repr, &extent)
            .map_err(|source| ArrayError::Chunk {
                path: crate::display_path(self.path()),
                key: key.to_string(),
                source,
            })?;
        if let Ok(buffer) = bytes.try_into_mut() {
            neurochunk_store::recycle_buffer(Vec::from(buffer));
        }
        crate::array::check_decoded(&decoded, repr, self.path(), key)?;
        Ok(decoded)
    }

    /// Fetch the chunks of tasks `batch` (whole values) with one `get_many` call; with a
    /// cache, the chunks the selection needs only part of that it holds are taken from it.
    pub(crate) fn fetch_chunks(
        &self,
        tasks: &BlockTasks,
        batch: Range<usize>,
        cache: Option<&ReadCache>,
    ) -> ArrayResult<Vec<FetchedChunk>> {
        let mut fetched = Vec::with_capacity(batch.len());
        let mut requests = Vec::with_capacity(batch.len());
        let mut slots = Vec::with_capacity(batch.len());
        for t in batch {
            let task = tasks.get(t);
            let key = self.chunk_key(&task.index);
            let hit = cache
                .filter(|_| !self.covers_chunk(&task))
                .and_then(|c| c.chunk(&CacheKey::Chunk(task.index)));
            if let Some(hit) = hit {
                fetched.push((t, key, Fetched::from(hit)));
            } else {
                slots.push(fetched.len());
                requests.push(ReadRequest::whole(key.clone()));
                fetched.push((t, key, Fetched::Missing));
            }
        }
        if requests.is_empty() {
            return Ok(fetched);
        }
        let answers = self.store().get_many(&requests);
        for ((slot, request), answer) in slots.into_iter().zip(&requests).zip(answers) {
            if let Some(bytes) = whole_value(answer, &request.key)? {
                fetched[slot].2 = Fetched::Stored(bytes);
            }
        }
        Ok(fetched)
    }

    /// The unsharded read of fixed-size elements: plan, fetch in batches, decode and scatter.
    /// Every output element is written (missing chunks with the fill value).
    pub(crate) fn read_chunks_into(
        &self,
        tasks: &BlockTasks,
        out: &SharedBuffer,
        extent: &[usize],
        repr: &ChunkRepr,
    ) -> ArrayResult<()> {
        let elem = repr.data_type.fixed_size().unwrap_or(1);
        let chunk_bytes = repr.num_elements() * elem;
        let cache = ReadCache::start(self.cache(), self.store().as_ref(), || {
            tasks.len().saturating_mul(chunk_bytes)
        });
        let cache = cache.as_ref();
        let scatter = |(t, key, data): FetchedChunk| -> ArrayResult<()> {
            let task = tasks.get(t);
            // This task writes only the output elements whose positions are, per axis,
            // those of its runs. A selection axis is strictly monotonic, so each position's
            // index lies in exactly one chunk along that axis, and `BlockTasks` gives each
            // chunk one task: the output elements of two tasks differ in the position along
            // an axis where their chunks differ, so no two tasks write the same bytes. The
            // caller keeps `out` borrowed until every task has run.
            let axes = task.block_to_selection();
            match data {
                Fetched::Stored(bytes) => {
                    let keeping = Keeping::start(cache, !self.covers_chunk(&task), &bytes);
                    let decoded = self.decode_fetched(&task.index, &key, bytes, repr)?;
                    if let ArrayBytes::Fixed(buf) = decoded {
                        // SAFETY: `axes` selects this chunk's output elements, which no
                        // other task writes (above); nothing reads `out` meanwhile.
                        unsafe { out.copy(&buf, &repr.shape, extent, &axes, elem) };
                        if let Some(buf) = keeping.finish(|| CacheKey::Chunk(task.index), buf) {
                            recycle_decoded(self.metadata().codecs.as_ref(), buf);
                        }
                    }
                }
                // SAFETY: as for the copy: only this chunk's output elements.
                Fetched::Cached(buf) => unsafe { out.copy(&buf, &repr.shape, extent, &axes, elem) },
                // SAFETY: as for the copy: only this chunk's output elements.
                Fetched::Missing => unsafe { out.fill(extent, &axes, &repr.fill_value) },
            }
            Ok(())
        };
        if self.store().concurrent_reads() <= 1 {
            // A local store: groups of chunks read, decoded and scattered independently.
            return for_each_group(
                tasks.len(),
                |_| chunk_bytes,
                |group| {
                    let fetched = self.fetch_chunks(tasks, group, cache)?;
                    if fetched.len() == 1 {
                        return fetched.into_iter().try_for_each(scatter);
                    }
                    fetched.into_par_iter().try_for_each(scatter)
                },
            );
        }
        let store = self.store().as_ref();
        let lanes = window_lanes(store, tasks.len(), chunk_bytes);
        windowed(
            Batches::for_lanes(tasks.len(), |_| chunk_bytes, store, lanes),
            lanes,
            |batch| self.fetch_chunks(tasks, batch, cache),
            |fetched| fetched.into_par_iter().try_for_each(scatter),
        )
    }

    /// Fetch and decode every chunk of `tasks`, in task order (for variable-length data,
    /// which is gathered afterwards).
    pub(crate) fn read_chunks_decoded(
        &self,
        tasks: &BlockTasks,
        repr: &ChunkRepr,
    ) -> ArrayResult<Vec<ArrayBytes>> {
        let chunk_bytes = repr.num_elements() * 16;
        let mut chunks = Vec::with_capacity(tasks.len());
        for batch in Batches::for_store(tasks.len(), |_| chunk_bytes, self.store().as_ref()) {
            let fetched = self.fetch_chunks(tasks, batch, None)?;
            let decoded: Vec<ArrayBytes> = fetched
                .into_par_iter()
                .map(|(t, key, data)| match data {
                    Fetched::Stored(bytes) => {
                        self.decode_fetched(&tasks.get(t).index, &key, bytes, repr)
                    }
                    Fetched::Cached(buf) => Ok(ArrayBytes::Fixed(buf.to_vec())),
                    Fetched::Missing => Ok(neurochunk_codec::subset::fill_for_repr(repr)),
                })
                .collect::<ArrayResult<_>>()?;
            chunks.extend(decoded);
        }
        Ok(chunks)
    }
}

/// A [`StoreError::RangeOutOfBounds`] while reading a shard means the shard is shorter than
/// its index or its index points past its end: corrupt data, named by array and key.
pub(crate) fn shard_range_error(path: &str, key: &str, error: StoreError) -> ArrayError {
    match error {
        StoreError::RangeOutOfBounds { range, size, .. } => ArrayError::ChunkCorrupt {
            path: crate::display_path(path),
            key: key.to_string(),
            message: format!(
                "byte range {range} is past the end of the shard ({size} bytes): its index is \
                 corrupt or the shard is truncated"
            ),
        },
        other => other.into(),
    }
}
