//! Reads of sharded arrays (`sharding_indexed`): the shard index is read first, then only the
//! inner chunks the selection needs, through byte ranges when they are a small part of the
//! shard; inner chunks are decoded in parallel straight into the output.

use neurochunk_codec::nd::SharedBuffer;
use neurochunk_codec::{ArrayBytes, ChunkRepr, ShardingCodec};
use neurochunk_store::ByteRange;
use rayon::prelude::*;

use crate::array::{check_decoded, Array};
use crate::error::{ArrayError, ArrayResult};
use crate::selection::{BlockTask, BlockTasks};

/// Where the bytes of the needed inner chunks come from.
enum ShardSource {
    Whole(Vec<u8>),
    Ranges(Vec<Vec<u8>>),
}

pub(crate) fn read_shard_into(
    array: &Array,
    sharding: &ShardingCodec,
    task: &BlockTask,
    out: &SharedBuffer,
    extent: &[usize],
    shard_repr: &ChunkRepr,
) -> ArrayResult<()> {
    let path = crate::display_path(array.path());
    let key = array.chunk_key(&task.index);
    let codec_err = |source| ArrayError::Chunk {
        path: path.clone(),
        key: key.clone(),
        source,
    };
    let store = array.store();
    let fill = &shard_repr.fill_value;
    let fill_is_zero = fill.iter().all(|&b| b == 0);

    // The caller's task owns the output elements of this shard's runs, which no other task
    // writes, and nothing reads the output while the tasks run (see `Array::read`). Inside
    // the shard, the inner tasks split those runs at inner-chunk boundaries, one task per
    // touched inner chunk, so their output elements are disjoint as well.
    let Some(shard_len) = store.size(&key)? else {
        if !fill_is_zero {
            // SAFETY: only this shard's output elements, which no other task writes.
            unsafe { out.fill(extent, &task.block_to_selection(), fill) };
        }
        return Ok(());
    };
    let shard_shape = &shard_repr.shape;
    let inner_shape = sharding.inner_chunk_shape().to_vec();
    let per_shard = sharding.chunks_per_shard(shard_shape).map_err(codec_err)?;
    let total_inner: usize = per_shard.iter().product();
    let inner_tasks = BlockTasks::new(&task.runs, &inner_shape);

    let index_len = sharding
        .index_encoded_size(shard_shape)
        .map_err(codec_err)?;
    if (index_len as u64) > shard_len {
        return Err(ArrayError::ChunkCorrupt {
            path,
            key,
            message: format!("shard is {shard_len} bytes, shorter than its {index_len}-byte index"),
        });
    }
    let index_range = match sharding.index_location() {
        neurochunk_codec::IndexLocation::End => ByteRange::Suffix {
            length: index_len as u64,
        },
        neurochunk_codec::IndexLocation::Start => ByteRange::FromStart {
            offset: 0,
            length: Some(index_len as u64),
        },
    };
    // Read the whole shard when most of it is needed; otherwise the index and then ranges.
    let read_whole = inner_tasks.len() * 2 >= total_inner;
    let whole = if read_whole {
        store.get(&key)?.map(Vec::from)
    } else {
        None
    };
    let index_bytes = match &whole {
        Some(bytes) => {
            let (start, end) = index_range.resolve(bytes.len() as u64).unwrap_or((0, 0));
            bytes[start as usize..end as usize].to_vec()
        }
        None => store
            .get_ranges(&key, &[index_range])?
            .and_then(|mut parts| parts.pop())
            .map(Vec::from)
            .ok_or_else(|| ArrayError::ChunkCorrupt {
                path: path.clone(),
                key: key.clone(),
                message: "shard vanished while reading".into(),
            })?,
    };
    let index = sharding
        .decode_index(&index_bytes, shard_shape)
        .map_err(codec_err)?;

    // Locate every needed inner chunk.
    let linear = |idx: &[u64]| {
        idx.iter()
            .zip(&per_shard)
            .fold(0usize, |acc, (&i, &n)| acc * n + i as usize)
    };
    let mut locations = Vec::with_capacity(inner_tasks.len());
    for t in 0..inner_tasks.len() {
        let inner = inner_tasks.get(t);
        let entry = index.get(linear(&inner.index)).copied().flatten();
        if let Some((offset, length)) = entry {
            if offset.checked_add(length).is_none_or(|end| end > shard_len) {
                return Err(ArrayError::ChunkCorrupt {
                    path,
                    key,
                    message: format!(
                        "shard index entry for inner chunk {:?} points to bytes {offset}..{} past the end of the shard ({shard_len} bytes)",
                        inner.index,
                        offset.saturating_add(length)
                    ),
                });
            }
        }
        locations.push(entry);
    }
    let source = match whole {
        Some(bytes) => ShardSource::Whole(bytes),
        None => {
            let ranges: Vec<ByteRange> = locations
                .iter()
                .flatten()
                .map(|&(offset, length)| ByteRange::FromStart {
                    offset,
                    length: Some(length),
                })
                .collect();
            ShardSource::Ranges(
                store
                    .get_ranges(&key, &ranges)?
                    .unwrap_or_default()
                    .into_iter()
                    .map(Vec::from)
                    .collect(),
            )
        }
    };
    let mut range_slot = Vec::with_capacity(locations.len());
    let mut next = 0usize;
    for loc in &locations {
        range_slot.push(loc.map(|_| {
            next += 1;
            next - 1
        }));
    }

    let inner_repr = ChunkRepr {
        shape: inner_shape,
        data_type: shard_repr.data_type.clone(),
        fill_value: fill.clone(),
    };
    let elem = inner_repr.data_type.fixed_size().unwrap_or(1);
    let inner_chain = sharding.inner_chain();
    (0..inner_tasks.len())
        .into_par_iter()
        .try_for_each(|i| -> ArrayResult<()> {
            let inner = inner_tasks.get(i);
            let axes = inner.block_to_selection();
            let bytes: Vec<u8> = match (&source, locations[i], range_slot[i]) {
                (_, None, _) => {
                    if !fill_is_zero {
                        // SAFETY: only this inner chunk's output elements (see the top of
                        // the function), which no other task writes.
                        unsafe { out.fill(extent, &axes, fill) };
                    }
                    return Ok(());
                }
                (ShardSource::Whole(all), Some((offset, length)), _) => {
                    all[offset as usize..(offset + length) as usize].to_vec()
                }
                (ShardSource::Ranges(parts), Some(_), Some(slot)) => {
                    parts.get(slot).cloned().unwrap_or_default()
                }
                (ShardSource::Ranges(_), Some(_), None) => Vec::new(),
            };
            let inner_key = format!("{key}[inner chunk {:?}]", inner.index);
            let decoded =
                inner_chain
                    .decode(bytes, &inner_repr)
                    .map_err(|source| ArrayError::Chunk {
                        path: crate::display_path(array.path()),
                        key: inner_key.clone(),
                        source,
                    })?;
            check_decoded(&decoded, &inner_repr, array.path(), &inner_key)?;
            if let ArrayBytes::Fixed(buf) = &decoded {
                // SAFETY: only this inner chunk's output elements (see the top of the
                // function), which no other task writes.
                unsafe { out.copy(buf, &inner_repr.shape, extent, &axes, elem) };
            }
            Ok(())
        })
}
