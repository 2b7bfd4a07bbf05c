//! The streaming pyramid engine: all levels in one pass over the source, each block of level
//! k+1 computed from level k's blocks held in memory as soon as its inputs exist.
//!
//! The unit of work is a chunk (a shard when sharded) of each level. One task per chunk of
//! level 1 reads the box of the source that chunk covers, writes the level 0 chunks in it
//! (their stored bytes copied when the encoding is the same, encoded otherwise) and reduces
//! the box to the level 1 chunk (a copied chunk holding whole blocks is reduced on its own as
//! it is decoded, so the box is never assembled). A finished chunk of level k is written, reduced by level k's
//! factors and placed into its pending parent of level k+1; the task that places a parent's
//! last child finishes the parent, and so on up the levels. Tasks run in parallel (rayon) in
//! hierarchical order (the children of one parent are neighbours in the task list), and each
//! worker takes a contiguous run of tasks, so the pending parents stay few (memory bounded by
//! a few chunks per level and worker, never a level) and two workers rarely write into one
//! chunk directory at the same time. There is no barrier between levels.
//!
//! The engine applies when the chunk grids nest: a parent's box covers whole children, and
//! every child boundary falls on a block boundary ([`streamable`]); otherwise the builder
//! computes the levels one after another ([`crate::pyramid`]).

use std::collections::HashMap;
use std::sync::Mutex;

use neurochunk_array::convert::{chunk_box, same_encoding};
use neurochunk_array::{Array, ArrayBytes, ArrayError, ArrayResult, Selection};
use neurochunk_codec::nd;
use rayon::prelude::*;

use crate::kernels::{downsample_block, Method};

/// Chunks (or the box a level 1 chunk covers) above this many bytes go to the level by level
/// builder, whose slabs bound the memory of large shards.
const UNIT_BYTES: usize = 64 << 20;

/// One level's chunk grid.
struct Grid {
    /// Chunk (shard) shape, as stored.
    unit: Vec<u64>,
    /// Chunks per axis.
    count: Vec<u64>,
}

impl Grid {
    fn of(array: &Array) -> Grid {
        let meta = array.metadata();
        Grid {
            unit: meta.chunk_shape.iter().map(|&c| c as u64).collect(),
            count: meta.grid_shape(),
        }
    }
}

/// Whether the levels' chunk grids nest under `factors` (row k: level k to k+1), so that the
/// engine can build them: on every axis with more than one chunk, a chunk of level k+1 covers
/// whole chunks of level k, and (from level 1 on, whose chunks are reduced one at a time)
/// level k's chunks hold whole blocks. Small chunks only (see `UNIT_BYTES`).
pub(crate) fn streamable(levels: &[Array], factors: &[Vec<u64>]) -> bool {
    if levels.len() < 2 || factors.len() + 1 != levels.len() {
        return false;
    }
    let grids: Vec<Grid> = levels.iter().map(Grid::of).collect();
    let element = levels[0].metadata().data_type.fixed_size().unwrap_or(0);
    if element == 0 {
        return false;
    }
    let small = |shape: Vec<u64>| {
        shape
            .iter()
            .try_fold(element as u64, |n, &c| n.checked_mul(c))
            .is_some_and(|b| b <= UNIT_BYTES as u64)
    };
    let box1: Vec<u64> = grids[1]
        .unit
        .iter()
        .zip(&factors[0])
        .map(|(u, f)| u * f)
        .collect();
    if !small(box1) || !grids.iter().all(|g| small(g.unit.clone())) {
        return false;
    }
    (0..factors.len()).all(|k| {
        let (child, parent) = (&grids[k], &grids[k + 1]);
        (0..child.unit.len()).all(|d| {
            let f = factors[k][d];
            child.count[d] == 1
                || ((k == 0 || child.unit[d] % f == 0)
                    && (parent.count[d] == 1 || (parent.unit[d] * f) % child.unit[d] == 0))
        })
    })
}

/// A chunk of a level being assembled from its children's reductions.
struct Pending {
    data: Vec<u8>,
    /// Children not placed yet.
    missing: u64,
}

/// Everything the tasks share.
struct Engine<'a> {
    src: &'a Array,
    levels: &'a [Array],
    grids: Vec<Grid>,
    factors: &'a [Vec<u64>],
    method: Method,
    element: usize,
    /// Level 0's chunks are the source's stored bytes.
    copy_stored: bool,
    /// Level 0's chunks hold whole blocks of level 1: each can be reduced on its own.
    whole_blocks: bool,
    /// Per level (index k: level k), the parents being assembled, by grid position.
    pending: Vec<Mutex<HashMap<Vec<u64>, Pending>>>,
    progress: &'a (dyn Fn(u64) + Sync),
}

/// Build `levels` (created, empty; level 0 shaped like `src`) from `src`, level k+1 being level
/// k reduced by `factors[k]` with `method`. Requires [`streamable`].
pub(crate) fn build(
    src: &Array,
    levels: &[Array],
    factors: &[Vec<u64>],
    method: Method,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<()> {
    let element = levels[0].metadata().data_type.fixed_size().unwrap_or(1);
    let grids: Vec<Grid> = levels.iter().map(Grid::of).collect();
    let whole_blocks = (0..factors[0].len())
        .all(|d| grids[0].count[d] == 1 || grids[0].unit[d] % factors[0][d] == 0);
    let engine = Engine {
        src,
        levels,
        grids,
        factors,
        method,
        element,
        copy_stored: same_encoding(src.metadata(), levels[0].metadata()),
        whole_blocks,
        pending: levels.iter().map(|_| Mutex::new(HashMap::new())).collect(),
        progress,
    };
    let tasks = engine.tasks();
    // Contiguous runs per worker (rayon splits the list in halves), one task at a time.
    tasks
        .par_iter()
        .with_max_len(1)
        .try_for_each(|index| engine.level_one(index))?;
    Ok(())
}

impl Engine<'_> {
    /// The chunks of level 1 in hierarchical order: sorted by their ancestors' grid positions
    /// from the top level down, so that siblings are neighbours.
    fn tasks(&self) -> Vec<Vec<u64>> {
        let count1 = &self.grids[1].count;
        let mut tasks: Vec<(Vec<u64>, Vec<u64>)> = (0..count1.iter().product::<u64>())
            .map(|linear| {
                let index = unravel(linear, count1);
                let mut path = Vec::new();
                let mut at = index.clone();
                let mut chain = vec![at.clone()];
                for k in 1..self.levels.len() - 1 {
                    at = self.parent_of(k, &at);
                    chain.push(at.clone());
                }
                for position in chain.iter().rev() {
                    path.extend_from_slice(position);
                }
                (path, index)
            })
            .collect();
        tasks.sort_unstable();
        tasks.into_iter().map(|(_, index)| index).collect()
    }

    /// The grid position in level k+1 of the parent of level k's chunk `index`.
    fn parent_of(&self, k: usize, index: &[u64]) -> Vec<u64> {
        let (child, parent) = (&self.grids[k], &self.grids[k + 1]);
        (0..index.len())
            .map(|d| (index[d] * child.unit[d]) / (parent.unit[d] * self.factors[k][d]))
            .collect()
    }

    /// The number of level k chunks whose parent is level k+1's chunk `index`.
    fn children_of(&self, k: usize, index: &[u64]) -> u64 {
        let (child, parent) = (&self.grids[k], &self.grids[k + 1]);
        (0..index.len())
            .map(|d| {
                let span = parent.unit[d] * self.factors[k][d];
                let first = (index[d] * span).div_ceil(child.unit[d]);
                let end = ((index[d] + 1) * span)
                    .div_ceil(child.unit[d])
                    .min(child.count[d]);
                end.saturating_sub(first)
            })
            .product()
    }

    /// One task: level 1's chunk `index` from the source box it covers, writing level 0's
    /// chunks in that box on the way.
    fn level_one(&self, index: &[u64]) -> ArrayResult<()> {
        let (origin1, extent1) = chunk_box(self.levels[1].metadata(), index);
        let shape0 = self.src.shape();
        let f = &self.factors[0];
        let origin: Vec<u64> = origin1.iter().zip(f).map(|(o, f)| o * f).collect();
        let extent: Vec<u64> = (0..origin.len())
            .map(|d| ((origin1[d] + extent1[d]) * f[d]).min(shape0[d]) - origin[d])
            .collect();
        let reduced = match (self.copy_stored, self.whole_blocks) {
            // Each copied chunk reduced as it is decoded: no box assembled.
            (true, true) => self.copy_level_zero(&origin, &extent, Some((&origin1, &extent1)))?,
            (true, false) => {
                let data = self.copy_level_zero(&origin, &extent, None)?;
                self.reduce(0, &data, &extent)?
            }
            (false, _) => {
                let data = self.encode_level_zero(&origin, &extent)?;
                self.reduce(0, &data, &extent)?
            }
        };
        self.finish(1, index.to_vec(), reduced)
    }

    /// The level 0 chunks of the box `origin + extent`, in C order.
    fn chunks_in(&self, origin: &[u64], extent: &[u64]) -> Vec<Vec<u64>> {
        let unit = &self.grids[0].unit;
        let first: Vec<u64> = origin.iter().zip(unit).map(|(o, u)| o / u).collect();
        let end: Vec<u64> = (0..origin.len())
            .map(|d| (origin[d] + extent[d]).div_ceil(unit[d]))
            .collect();
        let span: Vec<u64> = end.iter().zip(&first).map(|(e, s)| e - s).collect();
        (0..span.iter().product::<u64>())
            .map(|i| {
                unravel(i, &span)
                    .iter()
                    .zip(&first)
                    .map(|(a, b)| a + b)
                    .collect()
            })
            .collect()
    }

    /// Level 0's chunks in the box decoded from the source and encoded for level 0, one after
    /// another (the box's chunks share directories: one writer at a time there).
    fn encode_level_zero(&self, origin: &[u64], extent: &[u64]) -> ArrayResult<Vec<u8>> {
        let (_, data) = self.src.read(&Selection::from_box(origin, extent))?;
        let ArrayBytes::Fixed(data) = data else {
            return Err(self.variable(self.src));
        };
        let level = &self.levels[0];
        let meta = level.metadata();
        let cover = usizes(extent);
        for index in self.chunks_in(origin, extent) {
            let (o, e) = chunk_box(meta, &index);
            let start: Vec<usize> = o
                .iter()
                .zip(origin)
                .map(|(a, b)| (a - b) as usize)
                .collect();
            let chunk = if e == extent && usizes(&e) == meta.chunk_shape {
                data.clone()
            } else {
                // The chunk's part of the box, padded with the fill value at the far edges.
                let mut chunk = fill(&meta.effective_fill(), meta.chunk_shape.iter().product());
                let axes = nd::box_axes(&start, &vec![0; e.len()], &usizes(&e));
                nd::copy(
                    &data,
                    &cover,
                    &mut chunk,
                    &meta.chunk_shape,
                    &axes,
                    self.element,
                );
                chunk
            };
            level.store_chunk(&index, ArrayBytes::Fixed(chunk))?;
            (self.progress)(1);
        }
        Ok(data)
    }

    /// Level 0's chunks in the box copied as the source stores them (the same encoding), their
    /// bytes decoded once for the next level: into the box, or, given level 1's chunk
    /// (`origin1 + extent1`), each chunk reduced into it on its own (chunks holding whole
    /// blocks). Returns the box, or level 1's chunk.
    fn copy_level_zero(
        &self,
        origin: &[u64],
        extent: &[u64],
        reduce_into: Option<(&[u64], &[u64])>,
    ) -> ArrayResult<Vec<u8>> {
        let level = &self.levels[0];
        let meta = self.src.metadata();
        let repr = meta.chunk_repr();
        // Not stored chunks are the fill value in both arrays, and reduce to it.
        let (target_origin, target) = match reduce_into {
            Some((origin1, extent1)) => (origin1.to_vec(), usizes(extent1)),
            None => (origin.to_vec(), usizes(extent)),
        };
        let mut out = fill(&meta.effective_fill(), target.iter().product());
        for index in self.chunks_in(origin, extent) {
            let key = self.src.chunk_key(&index);
            let Some(bytes) = self.src.store().get(&key)? else {
                (self.progress)(1);
                continue;
            };
            let (o, e) = chunk_box(meta, &index);
            let extent_e = usizes(&e);
            let decoded = meta
                .codecs
                .decode_edge_from_slice(&bytes, &repr, &extent_e)
                .map_err(|source| ArrayError::Chunk {
                    path: neurochunk_array::display_path(self.src.path()),
                    key: key.clone(),
                    source,
                })?;
            let ArrayBytes::Fixed(decoded) = decoded else {
                return Err(self.variable(self.src));
            };
            level.store().set(&level.chunk_key(&index), bytes)?;
            (self.progress)(1);
            let (block, shape, at) = match reduce_into {
                Some(_) => {
                    let part = if extent_e == repr.shape {
                        decoded
                    } else {
                        // An edge chunk: its elements inside the array.
                        let mut part = vec![0; extent_e.iter().product::<usize>() * self.element];
                        let zero = vec![0; e.len()];
                        let axes = nd::box_axes(&zero, &zero, &extent_e);
                        nd::copy(
                            &decoded,
                            &repr.shape,
                            &mut part,
                            &extent_e,
                            &axes,
                            self.element,
                        );
                        neurochunk_codec::recycle_buffer(decoded);
                        part
                    };
                    let block = self.reduce(0, &part, &e)?;
                    neurochunk_codec::recycle_buffer(part);
                    let f = &self.factors[0];
                    let shape: Vec<usize> = extent_e
                        .iter()
                        .zip(f)
                        .map(|(&n, &f)| n.div_ceil(f as usize))
                        .collect();
                    let at: Vec<u64> = o.iter().zip(f).map(|(o, f)| o / f).collect();
                    (block, shape, at)
                }
                None => (decoded, repr.shape.clone(), o),
            };
            let start: Vec<usize> = at
                .iter()
                .zip(&target_origin)
                .map(|(a, b)| (a - b) as usize)
                .collect();
            let shown: Vec<usize> = match reduce_into {
                Some(_) => shape.clone(),
                None => extent_e,
            };
            let axes = nd::box_axes(&vec![0; shown.len()], &start, &shown);
            nd::copy(&block, &shape, &mut out, &target, &axes, self.element);
            neurochunk_codec::recycle_buffer(block);
        }
        Ok(out)
    }

    /// Level `k`'s block `data` (shape `extent`) reduced by level k's factors.
    fn reduce(&self, k: usize, data: &[u8], extent: &[u64]) -> ArrayResult<Vec<u8>> {
        let factors = usizes(&self.factors[k]);
        let level = &self.levels[k + 1];
        downsample_block(
            &level.metadata().data_type,
            data,
            &usizes(extent),
            &factors,
            self.method,
        )
        .map_err(|message| ArrayError::Unsupported {
            path: neurochunk_array::display_path(level.path()),
            message,
        })
    }

    /// Level `k`'s chunk `index` is complete (`data`, shaped like its box): write it, and
    /// place its reduction into its parent, finishing the parent when it was the last child.
    fn finish(&self, k: usize, index: Vec<u64>, data: Vec<u8>) -> ArrayResult<()> {
        let (mut k, mut index, mut data) = (k, index, data);
        loop {
            let (origin, extent) = chunk_box(self.levels[k].metadata(), &index);
            if k + 1 == self.levels.len() {
                return self.store(k, &index, ArrayBytes::Fixed(data), &extent);
            }
            let reduced = self.reduce(k, &data, &extent)?;
            self.store(k, &index, ArrayBytes::Fixed(data), &extent)?;
            let parent = self.parent_of(k, &index);
            let (p_origin, p_extent) = chunk_box(self.levels[k + 1].metadata(), &parent);
            let shape: Vec<u64> = extent
                .iter()
                .zip(&self.factors[k])
                .map(|(e, f)| e.div_ceil(*f))
                .collect();
            let start: Vec<usize> = (0..origin.len())
                .map(|d| (origin[d] / self.factors[k][d] - p_origin[d]) as usize)
                .collect();
            let axes = nd::box_axes(&vec![0; shape.len()], &start, &usizes(&shape));
            let p_shape = usizes(&p_extent);
            let complete = {
                let mut pending = self.pending[k + 1]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                let entry = pending.entry(parent.clone()).or_insert_with(|| Pending {
                    data: vec![0; p_shape.iter().product::<usize>() * self.element],
                    missing: self.children_of(k, &parent),
                });
                nd::copy(
                    &reduced,
                    &usizes(&shape),
                    &mut entry.data,
                    &p_shape,
                    &axes,
                    self.element,
                );
                entry.missing -= 1;
                if entry.missing == 0 {
                    pending.remove(&parent).map(|p| p.data)
                } else {
                    None
                }
            };
            match complete {
                Some(parent_data) => {
                    k += 1;
                    index = parent;
                    data = parent_data;
                }
                None => return Ok(()),
            }
        }
    }

    /// Encode and write level `k`'s chunk `index` from `data`, its box's elements (`extent`),
    /// padded with the fill value to the whole chunk at the array's far edges.
    fn store(&self, k: usize, index: &[u64], data: ArrayBytes, extent: &[u64]) -> ArrayResult<()> {
        let level = &self.levels[k];
        let meta = level.metadata();
        let chunk: Vec<usize> = meta.chunk_shape.clone();
        let data = if usizes(extent) == chunk {
            data
        } else {
            let ArrayBytes::Fixed(part) = data else {
                return Err(self.variable(level));
            };
            let mut whole = fill(&meta.effective_fill(), chunk.iter().product());
            let e = usizes(extent);
            let axes = nd::box_axes(&vec![0; e.len()], &vec![0; e.len()], &e);
            nd::copy(&part, &e, &mut whole, &chunk, &axes, self.element);
            ArrayBytes::Fixed(whole)
        };
        level.store_chunk(index, data)?;
        (self.progress)(1);
        Ok(())
    }

    fn variable(&self, array: &Array) -> ArrayError {
        ArrayError::Unsupported {
            path: neurochunk_array::display_path(array.path()),
            message: "variable-length elements cannot be downsampled".into(),
        }
    }
}

/// `count` copies of the element `value`.
fn fill(value: &[u8], count: usize) -> Vec<u8> {
    if value.iter().all(|&b| b == 0) {
        return vec![0; value.len() * count];
    }
    value.repeat(count)
}

fn usizes(values: &[u64]) -> Vec<usize> {
    values.iter().map(|&v| v as usize).collect()
}

/// The grid position of the `linear`-th chunk of `grid` in C order.
fn unravel(mut linear: u64, grid: &[u64]) -> Vec<u64> {
    let mut index = vec![0; grid.len()];
    for d in (0..grid.len()).rev() {
        index[d] = linear % grid[d].max(1);
        linear /= grid[d].max(1);
    }
    index
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use neurochunk_array::{ArrayBuilder, DataType, MemoryStore, Store};

    use super::*;

    fn level(store: &Arc<dyn Store>, path: &str, shape: [u64; 3], chunks: [usize; 3]) -> Array {
        ArrayBuilder::new(shape, DataType::UInt16)
            .chunks(chunks)
            .create(store.clone(), path)
            .unwrap()
    }

    #[test]
    fn grids_nest_or_not() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let f = vec![vec![2, 2, 2]; 2];
        let nested = [
            level(&store, "a0", [21, 19, 37], [4, 4, 4]),
            level(&store, "a1", [11, 10, 19], [4, 4, 4]),
            level(&store, "a2", [6, 5, 10], [4, 4, 4]),
        ];
        assert!(streamable(&nested, &f));
        // Level 1's chunks of 5 rows split blocks of 2 between chunks.
        let split = [
            level(&store, "b0", [21, 19, 37], [4, 5, 6]),
            level(&store, "b1", [11, 10, 19], [4, 5, 6]),
            level(&store, "b2", [6, 5, 10], [4, 5, 6]),
        ];
        assert!(!streamable(&split, &f));
        // Level 0's chunks may split blocks (a level 1 chunk reads its box whole), but a level
        // 1 chunk must cover whole level 0 chunks: 2 × 4 rows are not whole chunks of 3.
        let level0 = [
            level(&store, "c0", [21, 19, 37], [3, 4, 4]),
            level(&store, "c1", [11, 10, 19], [4, 4, 4]),
        ];
        assert!(!streamable(&level0, &f[..1]));
        let level0 = [
            level(&store, "d0", [21, 19, 37], [1, 4, 4]),
            level(&store, "d1", [11, 10, 19], [4, 4, 4]),
        ];
        assert!(streamable(&level0, &f[..1]));
    }
}
