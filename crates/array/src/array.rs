//! [`Array`]: open, create, read and write regions of one array, chunk by chunk in parallel.

use std::collections::BTreeMap;
use std::sync::Arc;

use neurochunk_codec::{subset, ArrayBytes, ChunkRepr};
use neurochunk_store::{join_key, Store};
use rayon::prelude::*;
use serde_json::{Map, Value};

use crate::copy::{copy_fixed, copy_into_shared, for_each_run, invert, AxisPairs, SharedOutput};
use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{document_bytes, ArrayMetadata, ZarrFormat, ZARRAY, ZARR_JSON, ZATTRS};
use crate::selection::{resolve, ResolvedSelection, Selection};

/// Run-time behaviour of an opened array (not stored in its metadata).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArrayOptions {
    /// Store chunks whose every element equals the fill value (default: no, such chunks are
    /// deleted, as zarr-python 3 and tensorstore do).
    pub write_empty_chunks: bool,
}

/// An array in a store.
#[derive(Clone, Debug)]
pub struct Array {
    store: Arc<dyn Store>,
    path: String,
    meta: ArrayMetadata,
    options: ArrayOptions,
}

/// One chunk touched by a selection: its grid index and, per axis, the pairs
/// (index within the chunk, index within the selection).
pub(crate) struct ChunkTask {
    pub index: Vec<u64>,
    pub pairs: Vec<AxisPairs>,
}

impl Array {
    /// Open the array at `path` (`""` for the store root), whichever format it is in.
    pub fn open(store: Arc<dyn Store>, path: &str) -> ArrayResult<Array> {
        Self::open_with(store, path, &crate::OpenOptions::default())
    }

    /// [`Array::open`] with options (the axis order of N5 datasets).
    pub fn open_with(
        store: Arc<dyn Store>,
        path: &str,
        options: &crate::OpenOptions,
    ) -> ArrayResult<Array> {
        match crate::hierarchy::read_node_metadata_with(store.as_ref(), path, options)? {
            crate::NodeMetadata::Array(meta) => Ok(Array::from_metadata(store, path, *meta)),
            crate::NodeMetadata::Group(_) => Err(ArrayError::Unsupported {
                path: crate::display_path(path),
                message: "is a group, not an array".into(),
            }),
        }
    }

    /// An array handle over existing metadata (nothing is read or written).
    pub fn from_metadata(store: Arc<dyn Store>, path: &str, meta: ArrayMetadata) -> Array {
        Array {
            store,
            path: path.trim_matches('/').to_string(),
            meta,
            options: ArrayOptions::default(),
        }
    }

    /// Create the array: write its metadata document(s), and parent groups that are missing.
    pub fn create(store: Arc<dyn Store>, path: &str, meta: ArrayMetadata) -> ArrayResult<Array> {
        let array = Array::from_metadata(store, path, meta);
        crate::hierarchy::ensure_parent_groups(
            array.store.as_ref(),
            &array.path,
            array.meta.format,
        )?;
        array.write_metadata()?;
        Ok(array)
    }

    pub fn with_options(mut self, options: ArrayOptions) -> Self {
        self.options = options;
        self
    }

    pub fn metadata(&self) -> &ArrayMetadata {
        &self.meta
    }

    /// The node path within the store (`""` for the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    pub fn shape(&self) -> &[u64] {
        &self.meta.shape
    }

    /// Write (or rewrite) the metadata document(s).
    pub fn write_metadata(&self) -> ArrayResult<()> {
        match self.meta.format {
            ZarrFormat::V2 => {
                let doc = self.meta.to_v2_document(&self.path)?;
                self.store.set(
                    &join_key(&self.path, ZARRAY),
                    document_bytes(&doc, ZarrFormat::V2).into(),
                )?;
                let attrs_key = join_key(&self.path, ZATTRS);
                if self.meta.attributes.is_empty() {
                    self.store.delete(&attrs_key)?;
                } else {
                    let attrs = Value::Object(self.meta.attributes.clone());
                    self.store
                        .set(&attrs_key, document_bytes(&attrs, ZarrFormat::V2).into())?;
                }
            }
            ZarrFormat::V3 => {
                let doc = self.meta.to_v3_document(&self.path)?;
                self.store.set(
                    &join_key(&self.path, ZARR_JSON),
                    document_bytes(&doc, ZarrFormat::V3).into(),
                )?;
            }
            ZarrFormat::N5 => {
                crate::n5::write_dataset(self.store.as_ref(), &self.path, &self.meta)?;
            }
        }
        Ok(())
    }

    /// Replace the user attributes and rewrite the metadata.
    pub fn set_attributes(&mut self, attributes: Map<String, Value>) -> ArrayResult<()> {
        self.meta.attributes = attributes;
        self.write_metadata()
    }

    /// The store key of the chunk at grid position `index`.
    pub fn chunk_key(&self, index: &[u64]) -> String {
        join_key(&self.path, &self.meta.chunk_key(index))
    }

    fn repr(&self) -> ChunkRepr {
        self.meta.chunk_repr()
    }

    /// Decode the stored bytes of the chunk at `index`, checking the result's size.
    pub(crate) fn decode_chunk(
        &self,
        index: &[u64],
        key: &str,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
    ) -> ArrayResult<ArrayBytes> {
        let extent = self.meta.chunk_extent(index);
        let decoded = self
            .meta
            .codecs
            .decode_edge(bytes, repr, &extent)
            .map_err(|source| ArrayError::Chunk {
                path: crate::display_path(&self.path),
                key: key.to_string(),
                source,
            })?;
        check_decoded(&decoded, repr, &self.path, key)?;
        Ok(decoded)
    }

    /// The decoded chunk at `index`, or the fill value when it is not stored.
    pub fn retrieve_chunk(&self, index: &[u64]) -> ArrayResult<ArrayBytes> {
        let key = self.chunk_key(index);
        let repr = self.repr();
        match self.store.get(&key)? {
            Some(bytes) => self.decode_chunk(index, &key, Vec::from(bytes), &repr),
            None => Ok(subset::fill_for_repr(&repr)),
        }
    }

    /// Encode and store a whole chunk (deleting it instead when it is all fill value and
    /// empty chunks are not written).
    pub fn store_chunk(&self, index: &[u64], chunk: ArrayBytes) -> ArrayResult<()> {
        let key = self.chunk_key(index);
        let repr = self.repr();
        if !self.options.write_empty_chunks
            && self.meta.fill_value.is_some()
            && subset::is_all_fill(&chunk, &repr.fill_value)
        {
            self.store.delete(&key)?;
            return Ok(());
        }
        let extent = self.meta.chunk_extent(index);
        let encoded = self
            .meta
            .codecs
            .encode_edge(chunk, &repr, &extent)
            .map_err(|source| ArrayError::Chunk {
                path: crate::display_path(&self.path),
                key: key.clone(),
                source,
            })?;
        self.store.set(&key, encoded.into())?;
        Ok(())
    }

    /// The chunks a resolved selection touches, with per-axis index pairs.
    pub(crate) fn chunk_tasks(&self, resolved: &ResolvedSelection) -> Vec<ChunkTask> {
        let per_axis: Vec<Vec<(u64, AxisPairs)>> = resolved
            .indices
            .iter()
            .zip(&self.meta.chunk_shape)
            .map(|(indices, &chunk)| {
                group_by_chunk(
                    indices.iter().copied().enumerate().map(|(p, i)| (i, p)),
                    chunk,
                )
            })
            .collect();
        cartesian(&per_axis)
    }

    /// Read a region. Returns the result's shape (integer-indexed axes dropped) and elements
    /// in C order.
    pub fn read(&self, selection: &Selection) -> ArrayResult<(Vec<usize>, ArrayBytes)> {
        let resolved = resolve(selection, &self.meta.shape, &self.path)?;
        let data = self.read_resolved(&resolved)?;
        Ok((resolved.output_shape, data))
    }

    /// Read the whole array.
    pub fn read_all(&self) -> ArrayResult<(Vec<usize>, ArrayBytes)> {
        self.read(&Selection::all())
    }

    fn read_resolved(&self, resolved: &ResolvedSelection) -> ArrayResult<ArrayBytes> {
        let tasks = self.chunk_tasks(resolved);
        let extent = resolved.extent();
        let repr = self.repr();
        let Some(elem) = repr.data_type.fixed_size() else {
            return self.read_variable(&tasks, &extent, resolved.len(), &repr);
        };
        let mut out = vec![0u8; resolved.len() * elem];
        let fill_is_zero = repr.fill_value.iter().all(|&b| b == 0);
        let shared = SharedOutput::new(&mut out);
        let sharding = self.meta.codecs.sharding();
        tasks.par_iter().try_for_each(|task| -> ArrayResult<()> {
            if let Some(sharding) = sharding {
                return crate::sharded::read_shard_into(
                    self, sharding, task, &shared, &extent, &repr,
                );
            }
            let key = self.chunk_key(&task.index);
            match self.store.get(&key)? {
                Some(bytes) => {
                    let decoded = self.decode_chunk(&task.index, &key, Vec::from(bytes), &repr)?;
                    if let ArrayBytes::Fixed(buf) = &decoded {
                        copy_into_shared(buf, &repr.shape, &shared, &extent, &task.pairs, elem);
                    }
                }
                None if fill_is_zero => {}
                None => fill_shared(&shared, &extent, &task.pairs, &repr.fill_value),
            }
            Ok(())
        })?;
        Ok(ArrayBytes::Fixed(out))
    }

    fn read_variable(
        &self,
        tasks: &[ChunkTask],
        extent: &[usize],
        len: usize,
        repr: &ChunkRepr,
    ) -> ArrayResult<ArrayBytes> {
        let decoded: Vec<ArrayBytes> = tasks
            .par_iter()
            .map(|task| self.retrieve_chunk(&task.index))
            .collect::<ArrayResult<_>>()?;
        let mut slots: Vec<Option<&[u8]>> = vec![None; len];
        for (task, chunk) in tasks.iter().zip(&decoded) {
            let elements = variable_elements(chunk);
            for_each_run(&task.pairs, &repr.shape, extent, |s, d, n| {
                for i in 0..n {
                    slots[d + i] = elements.get(s + i).copied();
                }
            });
        }
        let fill = repr.fill_value.as_slice();
        Ok(variable_from_elements(
            slots.iter().map(|s| s.unwrap_or(fill)),
        ))
    }

    /// Write `data` (C order, shaped like the selection's result) into a region.
    pub fn write(&self, selection: &Selection, data: &ArrayBytes) -> ArrayResult<()> {
        let resolved = resolve(selection, &self.meta.shape, &self.path)?;
        let count = resolved.len();
        let given = match data {
            ArrayBytes::Fixed(buf) => match self.meta.data_type.fixed_size() {
                Some(elem) if buf.len() == count * elem => count,
                Some(elem) => buf.len() / elem.max(1),
                None => usize::MAX,
            },
            ArrayBytes::Variable { offsets, .. } => offsets.len().saturating_sub(1),
        };
        if given != count || data_kind_mismatch(data, &self.meta.data_type) {
            return Err(ArrayError::Selection {
                path: crate::display_path(&self.path),
                message: format!(
                    "data to write has {} elements of the wrong kind or count; the region holds {count} {} elements",
                    if given == usize::MAX { "?".to_string() } else { given.to_string() },
                    self.meta.data_type_name()
                ),
            });
        }
        let tasks = self.chunk_tasks(&resolved);
        let extent = resolved.extent();
        tasks
            .par_iter()
            .try_for_each(|task| self.write_chunk_region(task, data, &extent))
    }

    /// Write the whole array.
    pub fn write_all(&self, data: &ArrayBytes) -> ArrayResult<()> {
        self.write(&Selection::all(), data)
    }

    fn write_chunk_region(
        &self,
        task: &ChunkTask,
        data: &ArrayBytes,
        extent: &[usize],
    ) -> ArrayResult<()> {
        let repr = self.repr();
        let covers_chunk = task.pairs.iter().enumerate().all(|(d, pairs)| {
            let start = task.index[d] * repr.shape[d] as u64;
            let inside = (self.meta.shape[d] - start).min(repr.shape[d] as u64) as usize;
            pairs.len() == inside
        });
        let mut chunk = if covers_chunk {
            subset::fill_for_repr(&repr)
        } else {
            self.retrieve_chunk(&task.index)?
        };
        let to_chunk = invert(&task.pairs);
        match (&mut chunk, data) {
            (ArrayBytes::Fixed(dst), ArrayBytes::Fixed(src)) => {
                let elem = repr.data_type.fixed_size().unwrap_or(1);
                copy_fixed(src, extent, dst, &repr.shape, &to_chunk, elem);
            }
            (dst @ ArrayBytes::Variable { .. }, src @ ArrayBytes::Variable { .. }) => {
                let source = variable_elements(src);
                let mut elements: Vec<&[u8]> = variable_elements(dst);
                for_each_run(&to_chunk, extent, &repr.shape, |s, d, n| {
                    for i in 0..n {
                        if let (Some(slot), Some(value)) =
                            (elements.get_mut(d + i), source.get(s + i))
                        {
                            *slot = value;
                        }
                    }
                });
                let rebuilt = variable_from_elements(elements.into_iter());
                *dst = rebuilt;
            }
            _ => {
                return Err(ArrayError::Unsupported {
                    path: crate::display_path(&self.path),
                    message: "fixed-size and variable-length data cannot be mixed".into(),
                })
            }
        }
        self.store_chunk(&task.index, chunk)
    }

    /// Change the shape; chunks that lie wholly outside the new shape are deleted.
    pub fn resize(&mut self, new_shape: Vec<u64>) -> ArrayResult<()> {
        if new_shape.len() != self.meta.shape.len() {
            return Err(ArrayError::Selection {
                path: crate::display_path(&self.path),
                message: format!(
                    "cannot resize a {}-dimensional array to {} dimensions",
                    self.meta.shape.len(),
                    new_shape.len()
                ),
            });
        }
        let old_grid = self.meta.grid_shape();
        self.meta.shape = new_shape;
        let new_grid = self.meta.grid_shape();
        if old_grid.iter().zip(&new_grid).any(|(o, n)| n < o) {
            let prefix = join_key(&self.path, "");
            let prefix = if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            };
            for key in self.store.list_prefix(&prefix)? {
                let rel = &key[prefix.len()..];
                if let Some(index) = self.meta.parse_chunk_key(rel) {
                    if index.iter().zip(&new_grid).any(|(i, g)| i >= g) {
                        self.store.delete(&key)?;
                    }
                }
            }
        }
        self.write_metadata()
    }

    /// Every stored chunk's grid index (by listing the store).
    pub fn stored_chunks(&self) -> ArrayResult<Vec<Vec<u64>>> {
        let prefix = if self.path.is_empty() {
            String::new()
        } else {
            format!("{}/", self.path)
        };
        let grid = self.meta.grid_shape();
        Ok(self
            .store
            .list_prefix(&prefix)?
            .iter()
            .filter_map(|key| self.meta.parse_chunk_key(&key[prefix.len()..]))
            .filter(|index| index.iter().zip(&grid).all(|(i, g)| i < g))
            .collect())
    }
}

impl ArrayMetadata {
    /// A short name of the data type for messages.
    pub fn data_type_name(&self) -> String {
        self.data_type
            .to_v3_json()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            })
            .unwrap_or_else(|_| format!("{:?}", self.data_type))
    }
}

fn data_kind_mismatch(data: &ArrayBytes, data_type: &neurochunk_dtype::DataType) -> bool {
    matches!(data, ArrayBytes::Fixed(_)) == data_type.is_variable_length()
}

pub(crate) fn check_decoded(
    decoded: &ArrayBytes,
    repr: &ChunkRepr,
    path: &str,
    key: &str,
) -> ArrayResult<()> {
    let expected = repr.num_elements();
    let ok = match (decoded, repr.data_type.fixed_size()) {
        (ArrayBytes::Fixed(buf), Some(elem)) => buf.len() == expected * elem,
        (ArrayBytes::Variable { offsets, .. }, None) => offsets.len() == expected + 1,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        let found = match decoded {
            ArrayBytes::Fixed(buf) => format!("{} bytes", buf.len()),
            ArrayBytes::Variable { offsets, .. } => {
                format!("{} elements", offsets.len().saturating_sub(1))
            }
        };
        Err(ArrayError::ChunkCorrupt {
            path: crate::display_path(path),
            key: key.to_string(),
            message: format!(
                "decoded to {found}, but a chunk of shape {:?} holds {expected} elements{}",
                repr.shape,
                repr.data_type
                    .fixed_size()
                    .map(|e| format!(" ({} bytes)", e * expected))
                    .unwrap_or_default()
            ),
        })
    }
}

/// Write the fill value at every destination position of `pairs`.
pub(crate) fn fill_shared(out: &SharedOutput, extent: &[usize], pairs: &[AxisPairs], fill: &[u8]) {
    let elem = fill.len();
    let src_shape: Vec<usize> = pairs
        .iter()
        .map(|p| p.iter().map(|&(s, _)| s + 1).max().unwrap_or(0))
        .collect();
    for_each_run(pairs, &src_shape, extent, |_, d, n| {
        for i in 0..n {
            out.write((d + i) * elem, fill);
        }
    });
}

/// Group `(index, position in selection)` pairs of one axis by chunk:
/// `(chunk index, [(index within the chunk, position in selection)])`.
pub(crate) fn group_by_chunk(
    pairs: impl Iterator<Item = (u64, usize)>,
    chunk: usize,
) -> Vec<(u64, AxisPairs)> {
    let mut groups: BTreeMap<u64, AxisPairs> = BTreeMap::new();
    let chunk = chunk as u64;
    for (i, pos) in pairs {
        groups
            .entry(i / chunk)
            .or_default()
            .push(((i % chunk) as usize, pos));
    }
    groups.into_iter().collect()
}

/// Every combination of per-axis chunk groups.
pub(crate) fn cartesian(per_axis: &[Vec<(u64, AxisPairs)>]) -> Vec<ChunkTask> {
    let mut tasks = vec![ChunkTask {
        index: Vec::new(),
        pairs: Vec::new(),
    }];
    for groups in per_axis {
        let mut next = Vec::with_capacity(tasks.len() * groups.len());
        for task in &tasks {
            for (chunk, pairs) in groups {
                let mut index = task.index.clone();
                index.push(*chunk);
                let mut all = task.pairs.clone();
                all.push(pairs.clone());
                next.push(ChunkTask { index, pairs: all });
            }
        }
        tasks = next;
    }
    tasks
}

/// The elements of a variable-length buffer as slices.
pub(crate) fn variable_elements(data: &ArrayBytes) -> Vec<&[u8]> {
    match data {
        ArrayBytes::Variable { data, offsets } => offsets
            .windows(2)
            .map(|w| data.get(w[0]..w[1]).unwrap_or(&[]))
            .collect(),
        ArrayBytes::Fixed(_) => Vec::new(),
    }
}

/// Build a variable-length buffer from elements.
pub(crate) fn variable_from_elements<'a>(elements: impl Iterator<Item = &'a [u8]>) -> ArrayBytes {
    let mut data = Vec::new();
    let mut offsets = vec![0];
    for e in elements {
        data.extend_from_slice(e);
        offsets.push(data.len());
    }
    ArrayBytes::Variable { data, offsets }
}
