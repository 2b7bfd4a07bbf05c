//! Reads of sharded arrays (`sharding_indexed`), in the stages of the read path (see
//! `read.rs`). The touched shards are fetched in batches (from a remote store, by several
//! lanes at once), each in two `get_many` calls: the
//! first reads every shard's index (or the whole shard, when the selection needs most of its
//! inner chunks), the second the byte ranges of the needed inner chunks of all shards read by
//! index. The inner chunks of a batch are then decoded in parallel straight into the output.
//! With the array's cache on, decoded shard indexes and the inner chunks read in part are
//! kept (see `cache.rs`), so a repeated point read of a shard is at most one ranged read.

use std::io::Write;
use std::ops::Range;
use std::sync::Arc;

use neurochunk_codec::nd::{self, SharedBuffer};
use neurochunk_codec::{ArrayBytes, ChunkRepr, IndexLocation, ShardingCodec};
use neurochunk_store::{ByteRange, Bytes, ReadRequest, ReadResponse};
use rayon::prelude::*;

use crate::array::{check_decoded, Array};
use crate::cache::{CacheKey, Keeping, ReadCache, ShardIndex};
use crate::error::{ArrayError, ArrayResult};
use crate::read::{recycle_decoded, shard_range_error, window_lanes, windowed, Batches, Fetched};
use crate::selection::{BlockTask, BlockTasks};

/// Where a stored inner chunk lies in its shard: offset and length.
type StoredAt = (u64, u64);

/// A touched shard after the fetch.
struct FetchedShard {
    /// The shard's task number in the plan.
    task: usize,
    key: String,
    /// The shard's grid index.
    index: Vec<u64>,
    /// The inner chunks the selection touches.
    inner_tasks: BlockTasks,
    /// Per inner task, its data; `None` for a missing shard.
    parts: Option<Vec<Fetched>>,
}

/// What the sharded read needs to know about the shards, the same for each.
struct ShardLayout<'a> {
    sharding: &'a ShardingCodec,
    shard_repr: &'a ChunkRepr,
    inner_repr: ChunkRepr,
    per_shard: Vec<usize>,
    total_inner: usize,
    index_len: usize,
    index_range: ByteRange,
    /// The array's shape.
    shape: &'a [u64],
}

impl ShardLayout<'_> {
    /// The linear (C-order) number of an inner chunk within its shard.
    fn linear(&self, index: &[u64]) -> usize {
        index
            .iter()
            .zip(&self.per_shard)
            .fold(0usize, |acc, (&i, &n)| acc * n + i as usize)
    }

    /// Whether the whole shard is read rather than its index and then byte ranges.
    fn read_whole(&self, inner_tasks: &BlockTasks) -> bool {
        inner_tasks.len() * 2 >= self.total_inner
    }

    /// Decoded bytes the selection needs from one shard (the batch budget's unit).
    fn cost(&self, inner_tasks: &BlockTasks) -> usize {
        let elem = self.inner_repr.data_type.fixed_size().unwrap_or(16);
        inner_tasks.len().min(self.total_inner) * self.inner_repr.num_elements() * elem
    }

    /// Whether an inner task of the shard at `shard` selects every in-array element of its
    /// inner chunk.
    fn covers_inner(&self, shard: &[u64], inner: &BlockTask) -> bool {
        let origin: Vec<u64> = shard
            .iter()
            .zip(&self.shard_repr.shape)
            .map(|(&i, &s)| i * s as u64)
            .collect();
        inner.covers(&self.inner_repr.shape, &origin, self.shape)
    }

    /// The cache key of an inner chunk of the shard at `shard`.
    fn inner_key(&self, shard: &[u64], inner: &BlockTask) -> CacheKey {
        CacheKey::Inner(shard.to_vec(), self.linear(&inner.index))
    }
}

/// Read the shards of `tasks` into `out` (see `Array::read_fixed_into`).
pub(crate) fn read_shards_into(
    array: &Array,
    sharding: &ShardingCodec,
    tasks: &BlockTasks,
    out: &SharedBuffer,
    extent: &[usize],
    shard_repr: &ChunkRepr,
) -> ArrayResult<()> {
    let codec_err = |source| ArrayError::Codecs {
        path: crate::display_path(array.path()),
        source,
    };
    let shard_shape = &shard_repr.shape;
    let per_shard = sharding.chunks_per_shard(shard_shape).map_err(codec_err)?;
    let index_len = sharding
        .index_encoded_size(shard_shape)
        .map_err(codec_err)?;
    let layout = ShardLayout {
        sharding,
        shard_repr,
        inner_repr: ChunkRepr {
            shape: sharding.inner_chunk_shape().to_vec(),
            data_type: shard_repr.data_type.clone(),
            fill_value: shard_repr.fill_value.clone(),
        },
        total_inner: per_shard.iter().product(),
        per_shard,
        index_len,
        index_range: match sharding.index_location() {
            IndexLocation::End => ByteRange::Suffix {
                length: index_len as u64,
            },
            IndexLocation::Start => ByteRange::FromStart {
                offset: 0,
                length: Some(index_len as u64),
            },
        },
        shape: array.shape(),
    };
    let inner_shape = sharding.inner_chunk_shape();
    let cost = |t: usize| layout.cost(&BlockTasks::new(&tasks.get(t).runs, inner_shape));
    let cache = ReadCache::start(array.cache(), array.store().as_ref(), || {
        (0..tasks.len()).fold(0usize, |sum, t| sum.saturating_add(cost(t)))
    });
    let cache = cache.as_ref();
    if array.store().concurrent_reads() <= 1 {
        // A local store: groups of shards read, then their inner chunks decoded in parallel,
        // independently of the other groups.
        return crate::read::for_each_group(tasks.len(), cost, |group| {
            let fetched = fetch_shards(array, &layout, tasks, group, cache)?;
            decode_shards(array, &layout, tasks, fetched, out, extent, cache)
        });
    }
    let store = array.store().as_ref();
    let typical_cost = if tasks.len() == 0 { 0 } else { cost(0) };
    let lanes = window_lanes(store, tasks.len(), typical_cost);
    windowed(
        Batches::for_lanes(tasks.len(), cost, store, lanes),
        lanes,
        |batch| fetch_shards(array, &layout, tasks, batch, cache),
        |fetched| decode_shards(array, &layout, tasks, fetched, out, extent, cache),
    )
}

/// How a shard's stored inner chunks are found in the fetch stage.
enum Lookup {
    /// The cache holds every inner chunk the selection needs.
    Done,
    /// The whole shard is read (request number `.0` of the first call).
    Whole(usize),
    /// Its index is read (request number `.0` of the first call), then byte ranges.
    Index(usize),
    /// Its index is cached: byte ranges only.
    Cached(ShardIndex),
}

/// The fetch stage of one batch of shards: one `get_many` for the indexes (or whole shards)
/// the cache does not hold, one for the needed inner chunks of the shards read by index.
/// With a cache, the inner chunks needed in part that it holds are taken from it.
fn fetch_shards(
    array: &Array,
    layout: &ShardLayout,
    tasks: &BlockTasks,
    batch: Range<usize>,
    cache: Option<&ReadCache>,
) -> ArrayResult<Vec<FetchedShard>> {
    let path = array.path();
    let inner_shape = layout.sharding.inner_chunk_shape();
    let shard_shape = &layout.shard_repr.shape;
    let chunk_err = |key: &str, source| ArrayError::Chunk {
        path: crate::display_path(path),
        key: key.to_string(),
        source,
    };
    let corrupt = |key: &str, message: String| ArrayError::ChunkCorrupt {
        path: crate::display_path(path),
        key: key.to_string(),
        message,
    };

    let mut shards = Vec::with_capacity(batch.len());
    let mut lookups = Vec::with_capacity(batch.len());
    let mut requests = Vec::with_capacity(batch.len());
    for t in batch {
        let task = tasks.get(t);
        let key = array.chunk_key(&task.index);
        let inner_tasks = BlockTasks::new(&task.runs, inner_shape);
        // `Missing` until the fetch finds the inner chunk stored.
        let mut parts = Vec::with_capacity(inner_tasks.len());
        let mut needed = 0;
        for i in 0..inner_tasks.len() {
            let hit = cache.and_then(|c| {
                let inner = inner_tasks.get(i);
                if layout.covers_inner(&task.index, &inner) {
                    return None;
                }
                c.chunk(&layout.inner_key(&task.index, &inner))
            });
            parts.push(match hit {
                Some(hit) => Fetched::from(hit),
                None => {
                    needed += 1;
                    Fetched::Missing
                }
            });
        }
        let lookup = if needed == 0 {
            Lookup::Done
        } else if layout.read_whole(&inner_tasks) {
            requests.push(ReadRequest::whole(key.clone()));
            Lookup::Whole(requests.len() - 1)
        } else if let Some(index) =
            cache.and_then(|c| c.index(&CacheKey::ShardIndex(task.index.clone())))
        {
            Lookup::Cached(index)
        } else {
            requests.push(ReadRequest::ranges(key.clone(), vec![layout.index_range]));
            Lookup::Index(requests.len() - 1)
        };
        lookups.push(lookup);
        shards.push(FetchedShard {
            task: t,
            key,
            index: task.index,
            inner_tasks,
            parts: Some(parts),
        });
    }
    let mut answers: Vec<Option<_>> = if requests.is_empty() {
        Vec::new()
    } else {
        array
            .store()
            .get_many(&requests)
            .into_iter()
            .map(Some)
            .collect()
    };

    // Inner-chunk locations of the shards read by index, and their byte-range requests.
    let mut pending: Vec<(usize, Vec<(usize, StoredAt)>)> = Vec::new();
    let mut range_requests = Vec::new();
    for (slot, (shard, lookup)) in shards.iter_mut().zip(lookups).enumerate() {
        let key = shard.key.as_str();
        let (index, whole) = match lookup {
            Lookup::Done => continue,
            Lookup::Cached(index) => (index, None),
            Lookup::Whole(r) | Lookup::Index(r) => {
                let answer = answers[r]
                    .take()
                    .ok_or_else(|| corrupt(key, "the store gave no answer".into()))?;
                let answer = answer.map_err(|e| shard_range_error(path, key, e))?;
                let (index_bytes, whole) = match answer {
                    ReadResponse::Missing => {
                        shard.parts = None;
                        continue;
                    }
                    ReadResponse::Whole(bytes) => {
                        let len = bytes.len() as u64;
                        let (start, end) = layout.index_range.resolve(len).ok_or_else(|| {
                            corrupt(
                                key,
                                format!(
                                    "shard is {len} bytes, shorter than its {}-byte index",
                                    layout.index_len
                                ),
                            )
                        })?;
                        (bytes.slice(start as usize..end as usize), Some(bytes))
                    }
                    ReadResponse::Ranges(parts) => match <[Bytes; 1]>::try_from(parts) {
                        Ok([index]) => (index, None),
                        Err(_) => {
                            return Err(corrupt(
                                key,
                                "the store answered the index read with other ranges".into(),
                            ))
                        }
                    },
                };
                let index = Arc::new(
                    layout
                        .sharding
                        .decode_index(&index_bytes, shard_shape)
                        .map_err(|e| chunk_err(key, e))?,
                );
                if let (Some(c), None) = (cache, &whole) {
                    c.keep_index(CacheKey::ShardIndex(shard.index.clone()), index.clone());
                }
                (index, whole)
            }
        };
        let Some(parts) = shard.parts.as_mut() else {
            continue;
        };
        // Per needed inner task, where it lies in the shard (those not stored stay missing).
        let mut locations = Vec::new();
        for (i, part) in parts.iter_mut().enumerate() {
            if !matches!(part, Fetched::Missing) {
                continue;
            }
            let inner = shard.inner_tasks.get(i);
            let Some((offset, length)) = index.get(layout.linear(&inner.index)).copied().flatten()
            else {
                continue;
            };
            if let Some(bytes) = &whole {
                let len = bytes.len() as u64;
                if offset.checked_add(length).is_none_or(|end| end > len) {
                    return Err(corrupt(
                        key,
                        format!(
                            "shard index entry for inner chunk {:?} points to bytes {offset}..{} past the end of the shard ({len} bytes)",
                            inner.index,
                            offset.saturating_add(length)
                        ),
                    ));
                }
                *part = Fetched::Stored(bytes.slice(offset as usize..(offset + length) as usize));
            } else {
                locations.push((i, (offset, length)));
            }
        }
        if !locations.is_empty() {
            let ranges = locations
                .iter()
                .map(|&(_, (offset, length))| ByteRange::FromStart {
                    offset,
                    length: Some(length),
                })
                .collect();
            range_requests.push(ReadRequest::ranges(shard.key.clone(), ranges));
            pending.push((slot, locations));
        }
    }
    if range_requests.is_empty() {
        return Ok(shards);
    }

    let answers = array.store().get_many(&range_requests);
    for ((slot, locations), answer) in pending.into_iter().zip(answers) {
        let shard = &mut shards[slot];
        let key = shard.key.as_str();
        let wanted = locations.len();
        let got = match answer.map_err(|e| shard_range_error(path, key, e))? {
            ReadResponse::Ranges(got) if got.len() == wanted => got,
            ReadResponse::Missing => {
                return Err(corrupt(
                    key,
                    "shard vanished between reading its index and its inner chunks".into(),
                ))
            }
            _ => {
                return Err(corrupt(
                    key,
                    format!("the store did not answer the {wanted} inner-chunk byte ranges"),
                ))
            }
        };
        if let Some(parts) = shard.parts.as_mut() {
            for ((i, _), bytes) in locations.into_iter().zip(got) {
                parts[i] = Fetched::Stored(bytes);
            }
        }
    }
    Ok(shards)
}

/// One unit of decode work of a batch of shards.
enum Work {
    /// A missing shard: its output elements get the fill value.
    FillShard(usize),
    /// Inner task `.1` of fetched shard `.0`, with its data.
    Inner(usize, usize, Fetched),
}

/// The decode and scatter stages of one batch of shards: every inner chunk of every shard of
/// the batch is one rayon task.
fn decode_shards(
    array: &Array,
    layout: &ShardLayout,
    tasks: &BlockTasks,
    mut shards: Vec<FetchedShard>,
    out: &SharedBuffer,
    extent: &[usize],
    cache: Option<&ReadCache>,
) -> ArrayResult<()> {
    let fill = &layout.shard_repr.fill_value;
    let mut work = Vec::new();
    for (s, shard) in shards.iter_mut().enumerate() {
        match shard.parts.take() {
            None => work.push(Work::FillShard(s)),
            Some(parts) => work.extend(
                parts
                    .into_iter()
                    .enumerate()
                    .map(|(i, data)| Work::Inner(s, i, data)),
            ),
        }
    }
    let shards = &shards;
    let inner_repr = &layout.inner_repr;
    let elem = inner_repr.data_type.fixed_size().unwrap_or(1);
    let inner_chain = layout.sharding.inner_chain();
    // The plan gives each shard's task the output elements of its runs, which no other task
    // writes (see `Array::read_fixed_into`), and nothing reads the output while the tasks run.
    // Inside a shard, the inner tasks split those runs at inner-chunk boundaries, one task per
    // touched inner chunk, so their output elements are disjoint as well.
    let decode = |unit| -> ArrayResult<()> {
        let (s, i, data) = match unit {
            Work::FillShard(s) => {
                let axes = tasks.get(shards[s].task).block_to_selection();
                // SAFETY: only this shard's output elements, which no other task writes.
                unsafe { out.fill(extent, &axes, fill) };
                return Ok(());
            }
            Work::Inner(s, i, data) => (s, i, data),
        };
        let shard = &shards[s];
        let inner = shard.inner_tasks.get(i);
        let axes = inner.block_to_selection();
        let bytes = match data {
            Fetched::Stored(bytes) => bytes,
            Fetched::Cached(buf) => {
                // SAFETY: only this inner chunk's output elements (above).
                unsafe { out.copy(&buf, &inner_repr.shape, extent, &axes, elem) };
                return Ok(());
            }
            Fetched::Missing => {
                // SAFETY: only this inner chunk's output elements (above).
                unsafe { out.fill(extent, &axes, fill) };
                return Ok(());
            }
        };
        let inner_key = format!("{}[inner chunk {:?}]", shard.key, inner.index);
        let keeping = Keeping::start(cache, !layout.covers_inner(&shard.index, &inner), &bytes);
        let decoded = if inner_chain.bytes_to_bytes().is_empty() {
            // No copy when the store handed over this range's own buffer.
            inner_chain.decode(Vec::from(bytes), inner_repr)
        } else {
            inner_chain.decode_from_slice(&bytes, inner_repr)
        }
        .map_err(|source| ArrayError::Chunk {
            path: crate::display_path(array.path()),
            key: inner_key.clone(),
            source,
        })?;
        check_decoded(&decoded, inner_repr, array.path(), &inner_key)?;
        if let ArrayBytes::Fixed(buf) = decoded {
            // SAFETY: only this inner chunk's output elements (above).
            unsafe { out.copy(&buf, &inner_repr.shape, extent, &axes, elem) };
            if let Some(buf) = keeping.finish(|| layout.inner_key(&shard.index, &inner), buf) {
                recycle_decoded(inner_chain, buf);
            }
        }
        Ok(())
    };
    if work.len() == 1 {
        // One inner chunk (a single element): decoded on the calling thread.
        return work.into_iter().try_for_each(decode);
    }
    work.into_par_iter().try_for_each(decode)
}

/// Write a shard whose every in-array element the selection covers (fixed-size data): each
/// inner chunk is cut straight from the caller's data and encoded in parallel, without
/// building the decoded shard first, and the shard is streamed to the store piece by piece.
pub(crate) fn write_full_shard(
    array: &Array,
    sharding: &ShardingCodec,
    task: &BlockTask,
    data: &[u8],
    extent: &[usize],
    write_empty_chunks: bool,
) -> ArrayResult<()> {
    let meta = array.metadata();
    let shard_repr = meta.chunk_repr();
    let key = array.chunk_key(&task.index);
    let chunk_err = |source| ArrayError::Chunk {
        path: crate::display_path(array.path()),
        key: key.clone(),
        source,
    };
    let shard_shape = &shard_repr.shape;
    let per_shard = sharding.chunks_per_shard(shard_shape).map_err(chunk_err)?;
    let inner_repr = sharding.inner_repr(&shard_repr);
    let elem = inner_repr.data_type.fixed_size().unwrap_or(1);
    let fill = &inner_repr.fill_value;
    // As the sharding codec does: inner chunks equal to the fill value are left out.
    let skip_fill = fill.len() == elem;
    let inner_tasks = BlockTasks::new(&task.runs, &inner_repr.shape);
    let encoded: Vec<(usize, Option<Vec<u8>>)> = (0..inner_tasks.len())
        .into_par_iter()
        .map(|i| -> ArrayResult<(usize, Option<Vec<u8>>)> {
            let inner = inner_tasks.get(i);
            let linear = inner
                .index
                .iter()
                .zip(&per_shard)
                .fold(0usize, |acc, (&i, &n)| acc * n + i as usize);
            // Built in one pass from the data and the fill value, in a reused buffer.
            let mut buffer = neurochunk_store::take_buffer(inner_repr.num_elements() * elem);
            let axes = inner.selection_to_block();
            let chunk = if nd::gather(
                data,
                extent,
                &inner_repr.shape,
                &axes,
                elem,
                fill,
                &mut buffer,
            ) {
                ArrayBytes::Fixed(buffer)
            } else {
                let mut chunk = neurochunk_codec::subset::fill_for_repr(&inner_repr);
                if let ArrayBytes::Fixed(dst) = &mut chunk {
                    nd::copy(data, extent, dst, &inner_repr.shape, &axes, elem);
                }
                chunk
            };
            if skip_fill && neurochunk_codec::subset::is_all_fill(&chunk, fill) {
                return Ok((linear, None));
            }
            let bytes = sharding
                .encode_inner_chunk(chunk, &shard_repr)
                .map_err(chunk_err)?;
            Ok((linear, Some(bytes)))
        })
        .collect::<ArrayResult<_>>()?;
    let total_inner: usize = per_shard.iter().product();
    let mut inner_chunks: Vec<Option<Vec<u8>>> = vec![None; total_inner];
    for (linear, bytes) in encoded {
        inner_chunks[linear] = bytes;
    }
    let store = array.store();
    if inner_chunks.iter().all(Option::is_none) && !write_empty_chunks && meta.fill_value.is_some()
    {
        store.delete(&key)?;
        return Ok(());
    }
    // The layout of `ShardingCodec::assemble_shard`: inner chunks back to back in C order,
    // the index before or after them.
    let index_len = sharding
        .index_encoded_size(shard_shape)
        .map_err(chunk_err)?;
    let start = sharding.index_location() == IndexLocation::Start;
    let mut offset = if start { index_len as u64 } else { 0 };
    let entries: Vec<Option<(u64, u64)>> = inner_chunks
        .iter()
        .map(|c| {
            c.as_ref().map(|b| {
                let entry = (offset, b.len() as u64);
                offset += b.len() as u64;
                entry
            })
        })
        .collect();
    let index = sharding
        .encode_index(&entries, shard_shape)
        .map_err(chunk_err)?;
    if index.len() != index_len {
        return Err(ArrayError::ChunkCorrupt {
            path: crate::display_path(array.path()),
            key,
            message: format!(
                "the index codecs produced {} bytes, expected {index_len}",
                index.len()
            ),
        });
    }
    let io_err = |e: std::io::Error| {
        ArrayError::from(neurochunk_store::StoreError::backend(
            format!("{store:?}"),
            key.clone(),
            e,
        ))
    };
    let mut writer = store.writer(&key)?;
    if start {
        writer.write_all(&index).map_err(io_err)?;
    }
    for chunk in inner_chunks.iter().flatten() {
        writer.write_all(chunk).map_err(io_err)?;
    }
    if !start {
        writer.write_all(&index).map_err(io_err)?;
    }
    writer.commit()?;
    Ok(())
}
