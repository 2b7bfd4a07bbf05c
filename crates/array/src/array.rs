//! [`Array`]: open, create, read and write regions of one array, chunk by chunk in parallel.

use std::sync::Arc;

use neurochunk_codec::nd::{self, gather_variable, SharedBuffer, VariablePart};
use neurochunk_codec::{subset, ArrayBytes, ChunkRepr};
use neurochunk_dtype::DataType;
use neurochunk_store::{join_key, Store};
use rayon::prelude::*;
use serde_json::{Map, Value};

use crate::cache::{CacheStats, ChunkCache};
use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{document_bytes, ArrayMetadata, ZarrFormat, ZARRAY, ZARR_JSON, ZATTRS};
use crate::selection::{
    resolve, BlockTask, BlockTasks, IndexRun, ResolvedSelection, Selection, Slab,
};

/// Run-time behaviour of an opened array (not stored in its metadata).
#[derive(Clone, Copy, Debug, Default)]
pub struct ArrayOptions {
    /// Store chunks whose every element equals the fill value (default: no, such chunks are
    /// deleted, as zarr-python 3 and tensorstore do).
    pub write_empty_chunks: bool,
}

/// An array in a store.
///
/// Clones share the handle's cache of decoded chunks (see [`Array::with_cache_bytes`]).
#[derive(Clone, Debug)]
pub struct Array {
    store: Arc<dyn Store>,
    path: String,
    meta: ArrayMetadata,
    options: ArrayOptions,
    cache: Arc<ChunkCache>,
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
        // A precomputed scale reads and writes its chunks through its layout (`.gz` files,
        // shards) laid over the store.
        let store: Arc<dyn Store> = match meta.precomputed() {
            Some(codec) => Arc::new(crate::precomputed::ScaleStore::new(
                store,
                path,
                codec.scale_arc(),
                meta.data_type.fixed_size().unwrap_or(1),
                meta.shape.get(3).copied().unwrap_or(1),
                codec.gzip_chunks(),
            )),
            None => store,
        };
        Array {
            store,
            path: path.trim_matches('/').to_string(),
            meta,
            options: ArrayOptions::default(),
            cache: Arc::new(ChunkCache::new(0)),
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

    /// The array with these options (parallelism and the like) for its reads and writes.
    pub fn with_options(mut self, options: ArrayOptions) -> Self {
        self.options = options;
        self
    }

    /// The handle with its own cache of decoded chunks of at most `bytes` bytes (0: none, the
    /// default of every handle the engine opens or creates).
    ///
    /// A read that needs only part of a chunk (a point, a small box, a plane through a
    /// chunk) keeps the chunk it decoded, and a later partial read of that chunk through this
    /// handle (or a clone) is served from memory without a store request; for a sharded
    /// array the decoded inner chunks and shard indexes are kept, so a point read of a
    /// sharded array costs one ranged read, not two. Reads of whole chunks decode straight
    /// into the output and bypass the cache; a read keeps nothing when all the chunks it
    /// touches would not fit in the budget. Writes, chunk stores and resizes through the
    /// handle invalidate what they touch. Chunks rewritten by *another* handle or process
    /// after this one cached them are not seen until they are evicted, the budget is set
    /// again, or the array is opened again: turn the cache on for data that does not change
    /// while it is read (see `docs/caching.md`; the Python package turns it on, with
    /// [`DEFAULT_CACHE_BYTES`](crate::DEFAULT_CACHE_BYTES), for arrays opened with `mode="r"`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use neurochunk_array::{selection, Array, ArrayBuilder, DataType, MemoryStore, Store};
    ///
    /// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// let volume = ArrayBuilder::new([64, 64], DataType::UInt16)
    ///     .chunks([32, 32])
    ///     .create(store.clone(), "volume")?;
    /// volume.write_elements(&selection![..], &(0..4096).map(|i| i as u16).collect::<Vec<_>>())?;
    ///
    /// let reader = Array::open(store, "volume")?.with_cache_bytes(8 << 20);
    /// assert_eq!(reader.cache_bytes(), 8 << 20);
    /// for column in 0..3_i64 {
    ///     let (_, voxel) = reader.read_elements::<u16>(&selection![5_i64, column])?;
    ///     assert_eq!(voxel, [5 * 64 + column as u16]);
    /// }
    /// // The first point read decoded chunk (0, 0) and kept it; the others were served from it.
    /// let stats = reader.cache_stats();
    /// assert_eq!((stats.entries, stats.hits, stats.misses), (1, 2, 1));
    /// reader.set_cache_bytes(0); // off: the chunk is dropped
    /// assert_eq!(reader.cache_stats().bytes, 0);
    /// # Ok::<(), neurochunk_array::ArrayError>(())
    /// ```
    pub fn with_cache_bytes(mut self, bytes: usize) -> Self {
        self.cache = Arc::new(ChunkCache::new(bytes));
        self
    }

    /// The budget of the handle's cache of decoded chunks, in bytes (0: off).
    pub fn cache_bytes(&self) -> usize {
        self.cache.budget()
    }

    /// Change the budget of the cache this handle and its clones share, evicting the least
    /// recently used chunks down to it (every chunk for 0, which turns the cache off).
    pub fn set_cache_bytes(&self, bytes: usize) {
        self.cache.set_budget(bytes);
    }

    /// What the handle's cache holds now, and its hits and misses so far.
    pub fn cache_stats(&self) -> CacheStats {
        self.cache.stats()
    }

    pub(crate) fn cache(&self) -> &ChunkCache {
        &self.cache
    }

    /// The format-neutral description: shape, chunks, data type, fill value, codecs, attributes.
    pub fn metadata(&self) -> &ArrayMetadata {
        &self.meta
    }

    /// The node path within the store (`""` for the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The store the array lives in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The array's shape, one extent per dimension (empty for a 0-d array).
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
            ZarrFormat::Precomputed => {
                crate::precomputed::write_scale(self.store.as_ref(), &self.path, &self.meta)?;
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
        let stored = match self.encode_for_store(index, chunk) {
            Ok(Some((key, encoded))) => self.store.set(&key, encoded).map_err(ArrayError::from),
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        self.cache.invalidate(|grid| grid == index);
        stored
    }

    /// A whole chunk encoded for the store, as its key and bytes; `None` when it is all fill
    /// value and empty chunks are not written (the stored chunk, if any, is then deleted).
    fn encode_for_store(
        &self,
        index: &[u64],
        chunk: ArrayBytes,
    ) -> ArrayResult<Option<(String, neurochunk_store::Bytes)>> {
        match self.encode_chunk(index, chunk)? {
            ChunkWrite::Set(key, bytes) => Ok(Some((key, bytes))),
            ChunkWrite::Delete(key) => {
                self.store.delete(&key)?;
                Ok(None)
            }
            ChunkWrite::Done => Ok(None),
        }
    }

    /// A whole chunk encoded for the store ([`ChunkWrite::Set`]), or, when it is all fill
    /// value and empty chunks are not written, the key of the stored chunk to delete.
    fn encode_chunk(&self, index: &[u64], chunk: ArrayBytes) -> ArrayResult<ChunkWrite> {
        let key = self.chunk_key(index);
        let repr = self.repr();
        if !self.options.write_empty_chunks
            && self.meta.fill_value.is_some()
            && subset::is_all_fill(&chunk, &repr.fill_value)
        {
            return Ok(ChunkWrite::Delete(key));
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
        Ok(ChunkWrite::Set(key, encoded.into()))
    }

    /// The chunks a resolved selection touches, with the part of the selection in each.
    pub(crate) fn chunk_tasks(&self, resolved: &ResolvedSelection) -> BlockTasks {
        BlockTasks::new(&resolved.axes, &self.meta.chunk_shape)
    }

    /// Read a region. Returns the result's shape (integer-indexed axes dropped) and elements
    /// in C order.
    pub fn read(&self, selection: &Selection) -> ArrayResult<(Vec<usize>, ArrayBytes)> {
        let resolved = resolve(selection, &self.meta.shape, &self.path)?;
        let data = self.read_resolved(&resolved)?;
        Ok((resolved.output_shape, data))
    }

    /// Read a region of a ragged array (numcodecs `vlen-array`): every element's numbers back
    /// to back and where each starts. Errors when the array is not ragged.
    pub fn read_ragged(&self, selection: &Selection) -> ArrayResult<Ragged> {
        let Some(element_type) = self.meta.ragged_element_type() else {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(&self.path),
                message: "not a ragged (vlen-array) array".into(),
            });
        };
        let size = element_type.fixed_size().unwrap_or(1).max(1);
        let (shape, data) = self.read(selection)?;
        let (values, offsets) = match data {
            ArrayBytes::Variable { data, offsets } => {
                (data, offsets.iter().map(|o| o / size).collect())
            }
            // Not produced by vlen-array; an empty selection at most.
            ArrayBytes::Fixed(_) => (Vec::new(), vec![0]),
        };
        Ok(Ragged {
            shape,
            element_type,
            values,
            offsets,
        })
    }

    /// Read the whole array.
    pub fn read_all(&self) -> ArrayResult<(Vec<usize>, ArrayBytes)> {
        self.read(&Selection::all())
    }

    fn read_resolved(&self, resolved: &ResolvedSelection) -> ArrayResult<ArrayBytes> {
        self.check_chunks_fit()?;
        let repr = self.repr();
        // Variable-length elements take at least their offset each.
        let elem = repr
            .data_type
            .fixed_size()
            .unwrap_or(std::mem::size_of::<usize>());
        let bytes = self.check_output_fits(resolved.len(), elem)?;
        let tasks = self.chunk_tasks(resolved);
        let extent = resolved.extent();
        if repr.data_type.fixed_size().is_none() {
            return self.read_variable(&tasks, &extent, &repr);
        }
        let mut out = zeroed_output(bytes);
        self.read_fixed_into(resolved, &tasks, &mut out)?;
        Ok(ArrayBytes::Fixed(out))
    }

    /// The bytes of an output of `elements` elements of `elem` bytes, when it can be held in
    /// this machine's memory; otherwise an error naming the array and both sizes. The output
    /// is sized from the selection, so a region of a huge array reads fine, while reading all
    /// of an array declared `[1e15]` fails here instead of aborting on the allocation.
    pub(crate) fn check_output_fits(&self, elements: usize, elem: usize) -> ArrayResult<usize> {
        let bytes = elements.checked_mul(elem);
        match (bytes, physical_memory()) {
            (Some(bytes), Some(memory)) if bytes as u64 <= memory => Ok(bytes),
            (Some(bytes), None) => Ok(bytes),
            (bytes, memory) => Err(ArrayError::Selection {
                path: crate::display_path(&self.path),
                message: format!(
                    "the region needs {} bytes ({elements} elements of {elem} bytes), more than \
                     this machine's memory ({} bytes); read a smaller region",
                    bytes.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
                    memory.unwrap_or(0)
                ),
            }),
        }
    }

    /// An error when one decoded chunk (for a sharded array: one shard) could not be held in
    /// this machine's memory, which decoding it needs: metadata may declare any chunk shape.
    pub(crate) fn check_chunks_fit(&self) -> ArrayResult<()> {
        let elem = self.meta.data_type.fixed_size().unwrap_or(1).max(1) as u64;
        let chunk = self
            .meta
            .chunk_shape
            .iter()
            .try_fold(elem, |n, &d| n.checked_mul(d as u64));
        match (chunk, physical_memory()) {
            (Some(bytes), Some(memory)) if bytes > memory => Err(ArrayError::Unsupported {
                path: crate::display_path(&self.path),
                message: format!(
                    "its chunks of shape {:?} take {bytes} bytes each decoded, more than this \
                     machine's memory ({memory} bytes)",
                    self.meta.chunk_shape
                ),
            }),
            _ => Ok(()),
        }
    }

    /// The region's shape (integer-indexed axes dropped), checked against the array.
    pub fn selection_shape(&self, selection: &Selection) -> ArrayResult<Vec<usize>> {
        Ok(resolve(selection, &self.meta.shape, &self.path)?.output_shape)
    }

    /// Read a region of a fixed-size data type into `out` (the region's elements in C order,
    /// in-memory layout), decoding each chunk straight into it: `out` must be exactly the
    /// region's element count times the element size.
    pub fn read_bytes_into(&self, selection: &Selection, out: &mut [u8]) -> ArrayResult<()> {
        let resolved = resolve(selection, &self.meta.shape, &self.path)?;
        let repr = self.repr();
        let Some(elem) = repr.data_type.fixed_size() else {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(&self.path),
                message: "variable-length elements cannot be read into a fixed-size buffer".into(),
            });
        };
        if out.len() != resolved.len() * elem {
            return Err(ArrayError::Selection {
                path: crate::display_path(&self.path),
                message: format!(
                    "the output buffer holds {} bytes, but the region of shape {:?} needs {}",
                    out.len(),
                    resolved.output_shape,
                    resolved.len() * elem
                ),
            });
        }
        self.check_chunks_fit()?;
        // Every output element is written by the read (missing chunks as the fill value),
        // so `out` is not cleared first: the pages of a new output are first touched by the
        // parallel decode.
        let tasks = self.chunk_tasks(&resolved);
        self.read_fixed_into(&resolved, &tasks, out)
    }

    /// [`Array::read_bytes_into`] of a selection already resolved into runs (see
    /// [`IndexRun`]).
    pub fn read_runs_into(&self, runs: &[IndexRun], out: &mut [u8]) -> ArrayResult<()> {
        self.read_bytes_into(&Selection::from_runs(runs), out)
    }

    /// [`Array::write_bytes`] into a selection already resolved into runs.
    pub fn write_runs_from(&self, runs: &[IndexRun], data: &[u8]) -> ArrayResult<()> {
        self.write_bytes(&Selection::from_runs(runs), data)
    }

    /// The selection `runs` cut into slabs of about `max_bytes` ending at chunk (shard)
    /// boundaries ([`crate::slabs`]): a binding reads or writes a large region slab by slab.
    pub fn slabs(&self, runs: &[IndexRun], max_bytes: usize) -> Vec<Slab> {
        let elem = self.meta.data_type.fixed_size().unwrap_or(1);
        crate::selection::slabs(runs, &self.meta.chunk_shape, elem, max_bytes)
    }

    /// Decode the chunks of `tasks` into `out`, writing every element of the region
    /// (missing chunks as the fill value). The plan is fetched in batches through
    /// `Store::get_many`, decoded and scattered on rayon (see `read.rs`).
    fn read_fixed_into(
        &self,
        resolved: &ResolvedSelection,
        tasks: &BlockTasks,
        out: &mut [u8],
    ) -> ArrayResult<()> {
        let extent = resolved.extent();
        let repr = self.repr();
        // Each task writes only its own output elements (see `read.rs` and `sharded.rs`);
        // `out` stays borrowed by `shared` until every batch has been decoded.
        let shared = SharedBuffer::new(out);
        match self.meta.codecs.sharding() {
            Some(sharding) => {
                crate::sharded::read_shards_into(self, sharding, tasks, &shared, &extent, &repr)
            }
            None => self.read_chunks_into(tasks, &shared, &extent, &repr),
        }
    }

    fn read_variable(
        &self,
        tasks: &BlockTasks,
        extent: &[usize],
        repr: &ChunkRepr,
    ) -> ArrayResult<ArrayBytes> {
        let chunks = self.read_chunks_decoded(tasks, repr)?;
        let parts = chunks
            .iter()
            .enumerate()
            .map(|(t, chunk)| (chunk, tasks.get(t).block_to_selection()))
            .collect::<Vec<_>>();
        let parts = parts
            .iter()
            .map(|(chunk, axes)| VariablePart::of(chunk, &repr.shape, axes))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| self.mixed_kinds())?;
        Ok(gather_variable(extent, &parts))
    }

    fn mixed_kinds(&self) -> ArrayError {
        ArrayError::Unsupported {
            path: crate::display_path(&self.path),
            message: "fixed-size and variable-length data cannot be mixed".into(),
        }
    }

    /// Write `data` (C order, shaped like the selection's result) into a region.
    ///
    /// The chunks of each batch are encoded in parallel and stored with one
    /// [`Store::set_many`] call (a durable filesystem store syncs each directory once per
    /// batch), while the next batch is encoded; whole shards are streamed to the store as
    /// they are built.
    pub fn write(&self, selection: &Selection, data: &ArrayBytes) -> ArrayResult<()> {
        self.write_source(selection, Source::of(data))
    }

    /// Write the fixed-size elements `data` (C order, in-memory layout, shaped like the
    /// selection's result) into a region, reading them where they are: what a binding that
    /// holds the caller's buffer uses, instead of copying it into an [`ArrayBytes`].
    pub fn write_bytes(&self, selection: &Selection, data: &[u8]) -> ArrayResult<()> {
        self.write_source(selection, Source::Fixed(data))
    }

    fn write_source(&self, selection: &Selection, data: Source<'_>) -> ArrayResult<()> {
        self.write_with(selection, data, &|values| {
            self.store.set_many(values)?;
            Ok(())
        })
    }

    /// Like [`Array::write`], but the encoded chunks of each batch go to `sink` (as keys and
    /// values, for one [`Store::set_many`] call) instead of the store; chunks that are deleted
    /// and whole shards are still written to the store directly.
    pub(crate) fn write_with(
        &self,
        selection: &Selection,
        data: Source<'_>,
        sink: &(dyn Fn(Vec<(String, neurochunk_store::Bytes)>) -> ArrayResult<()> + Sync),
    ) -> ArrayResult<()> {
        let resolved = resolve(selection, &self.meta.shape, &self.path)?;
        self.check_chunks_fit()?;
        let count = resolved.len();
        let given = match data {
            Source::Fixed(buf) => match self.meta.data_type.fixed_size() {
                Some(elem) if buf.len() == count * elem => count,
                Some(elem) => buf.len() / elem.max(1),
                None => usize::MAX,
            },
            Source::Variable(ArrayBytes::Variable { offsets, .. }) => {
                offsets.len().saturating_sub(1)
            }
            Source::Variable(ArrayBytes::Fixed(_)) => usize::MAX,
        };
        let fixed_kind = matches!(data, Source::Fixed(_));
        if given != count || fixed_kind == self.meta.data_type.is_variable_length() {
            return Err(ArrayError::Selection {
                path: crate::display_path(&self.path),
                message: format!(
                    "data to write has {} elements of the wrong kind or count; the region holds {count} {} elements",
                    if given == usize::MAX { "?".to_string() } else { given.to_string() },
                    self.meta.data_type_name()
                ),
            });
        }
        if matches!(data, Source::Variable(v) if !offsets_consistent(v)) {
            return Err(ArrayError::Selection {
                path: crate::display_path(&self.path),
                message: "data to write has variable-length offsets that decrease or point past its bytes".into(),
            });
        }
        let tasks = self.chunk_tasks(&resolved);
        // Chunks rewritten in part are read, updated and stored under their locks, so that
        // threads of this process writing parts of one chunk (or shard) keep every value.
        let held = if crate::chunk_locks::applies() {
            let partial: Vec<String> = (0..tasks.len())
                .map(|t| tasks.get(t))
                .filter(|task| !self.covers_chunk(task))
                .map(|task| self.chunk_key(&task.index))
                .collect();
            crate::chunk_locks::lock_partial_chunks(&self.path, partial.iter().map(String::as_str))
        } else {
            None
        };
        let written = self.write_tasks(&tasks, &resolved.extent(), data, sink);
        drop(held);
        // Once the chunks are stored (or the write failed part-way), the cached chunks it
        // touched are dropped, and reads that fetched meanwhile keep nothing.
        self.cache.invalidate(|grid| tasks.contains(grid));
        written
    }

    /// The chunks of a write's plan, built, encoded and handed to `sink` (see
    /// [`Array::write_with`]).
    fn write_tasks(
        &self,
        tasks: &BlockTasks,
        extent: &[usize],
        data: Source<'_>,
        sink: &(dyn Fn(Vec<(String, neurochunk_store::Bytes)>) -> ArrayResult<()> + Sync),
    ) -> ArrayResult<()> {
        let repr = self.repr();
        let chunk_bytes = repr.num_elements() * repr.data_type.fixed_size().unwrap_or(16);
        // A batch's chunks built and encoded in parallel; the chunks of fill value it leaves
        // are deleted with one call, the others go to `sink` together.
        let build = |fetched: Vec<(usize, Option<Option<neurochunk_store::Bytes>>)>| {
            let writes = fetched
                .into_par_iter()
                .map(|(t, stored)| self.write_chunk_region(&tasks.get(t), data, extent, stored))
                .collect::<ArrayResult<Vec<_>>>()?;
            let mut values = Vec::with_capacity(writes.len());
            let mut deleted = Vec::new();
            for write in writes {
                match write {
                    ChunkWrite::Set(key, bytes) => values.push((key, bytes)),
                    ChunkWrite::Delete(key) => deleted.push(key),
                    ChunkWrite::Done => {}
                }
            }
            if !deleted.is_empty() {
                self.store.delete_many(deleted)?;
            }
            ArrayResult::Ok(values)
        };
        if let Some(order) = self.write_order(tasks) {
            return self.write_grouped(&order, chunk_bytes, &|batch: &[usize]| {
                let values = build(self.fetch_partial_chunks(tasks, batch.iter().copied())?)?;
                if values.is_empty() {
                    return Ok(());
                }
                sink(values)
            });
        }
        if self.store.concurrent_reads() <= 1 {
            // A local store: groups of chunks fetched (those written in part), built,
            // encoded and stored independently of each other, so that compression and file
            // writes of different groups overlap and no worker waits at a batch's end.
            return crate::read::for_each_group(
                tasks.len(),
                |_| chunk_bytes,
                |group| {
                    let values = build(self.fetch_partial_chunks(tasks, group)?)?;
                    if values.is_empty() {
                        return Ok(());
                    }
                    sink(values)
                },
            );
        }
        // Lanes as in a read: each builds and encodes a batch (fetching the chunks it only
        // partly overwrites with one `get_many` call) and stores it with one `sink` call, so
        // the uploads of several batches are in flight together while others are encoded.
        let store = self.store.as_ref();
        let lanes = crate::read::window_lanes(store, tasks.len(), chunk_bytes);
        crate::read::windowed(
            crate::read::Batches::for_lanes(tasks.len(), |_| chunk_bytes, store, lanes),
            lanes,
            |batch| {
                let values = build(self.fetch_partial_chunks(tasks, batch)?)?;
                if values.is_empty() {
                    return Ok(());
                }
                sink(values)
            },
            |()| Ok(()),
        )
    }

    /// The tasks of a write ordered by the store's write groups ([`Store::write_group`]),
    /// when the store has them: each group's tasks follow each other (in task order), the
    /// groups in the order of their first task. `None` for a store without write groups.
    fn write_order(&self, tasks: &BlockTasks) -> Option<WriteOrder> {
        if tasks.len() == 0 {
            return None;
        }
        self.store
            .write_group(&self.chunk_key(&tasks.get(0).index))?;
        let mut keyed: Vec<(u64, usize)> = (0..tasks.len())
            .map(|t| {
                let group = self.store.write_group(&self.chunk_key(&tasks.get(t).index));
                (group.unwrap_or(u64::MAX), t)
            })
            .collect();
        // Groups in the order of their first task, so a write still proceeds through the
        // region roughly in order.
        let mut first: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        for &(group, t) in &keyed {
            first.entry(group).or_insert(t);
        }
        keyed.sort_by_key(|&(group, t)| (first[&group], t));
        let mut starts = Vec::new();
        for (i, (group, _)) in keyed.iter().enumerate() {
            if i == 0 || keyed[i - 1].0 != *group {
                starts.push(i);
            }
        }
        Some(WriteOrder {
            tasks: keyed.into_iter().map(|(_, t)| t).collect(),
            starts,
        })
    }

    /// Run `batch` over the tasks of `order` in batches of whole write groups: a store that
    /// rewrites a group's object on every write then rewrites it once. From a local store the
    /// batches run on rayon (small groups together, up to a group's budget); to a store that
    /// serves many requests at once, in fetch lanes as the ungrouped write does.
    fn write_grouped(
        &self,
        order: &WriteOrder,
        chunk_bytes: usize,
        batch: &(dyn Fn(&[usize]) -> ArrayResult<()> + Sync),
    ) -> ArrayResult<()> {
        let store = self.store.as_ref();
        let total = order.tasks.len();
        let run = |range: std::ops::Range<usize>| batch(&order.tasks[range]);
        if store.concurrent_reads() <= 1 {
            let batches = crate::read::whole_groups(
                &order.starts,
                total,
                |_| chunk_bytes,
                crate::read::FETCH_BATCH_BYTES,
                crate::read::GROUP_TASKS,
            );
            return crate::read::run_groups(batches, run);
        }
        let lanes = crate::read::window_lanes(store, total, chunk_bytes);
        let max_tasks = (2 * store.concurrent_reads()).div_ceil(lanes).max(1);
        let batches = crate::read::whole_groups(
            &order.starts,
            total,
            |_| chunk_bytes,
            crate::read::window_bytes(store) / lanes.max(1),
            max_tasks,
        );
        crate::read::windowed(batches.into_iter(), lanes, run, |()| Ok(()))
    }

    /// Whether a task selects every in-array element of its chunk.
    pub(crate) fn covers_chunk(&self, task: &BlockTask) -> bool {
        task.covers(&self.meta.chunk_shape, &[], &self.meta.shape)
    }

    /// The fetch stage of a write: per task of `batch`, `None` when the write covers the
    /// chunk, otherwise its stored bytes (`Some(None)` when not stored), read with one
    /// `get_many` call.
    #[allow(clippy::type_complexity)]
    fn fetch_partial_chunks(
        &self,
        tasks: &BlockTasks,
        batch: impl ExactSizeIterator<Item = usize>,
    ) -> ArrayResult<Vec<(usize, Option<Option<neurochunk_store::Bytes>>)>> {
        let mut partial = Vec::new();
        let mut fetched = Vec::with_capacity(batch.len());
        for t in batch {
            if self.covers_chunk(&tasks.get(t)) {
                fetched.push((t, None));
            } else {
                partial.push(fetched.len());
                fetched.push((t, Some(None)));
            }
        }
        if partial.is_empty() {
            return Ok(fetched);
        }
        let requests: Vec<neurochunk_store::ReadRequest> = partial
            .iter()
            .map(|&i| {
                neurochunk_store::ReadRequest::whole(self.chunk_key(&tasks.get(fetched[i].0).index))
            })
            .collect();
        let answers = self.store.get_many(&requests);
        for ((&i, request), answer) in partial.iter().zip(&requests).zip(answers) {
            fetched[i].1 = Some(crate::read::whole_value(answer, &request.key)?);
        }
        Ok(fetched)
    }

    /// Write the whole array.
    pub fn write_all(&self, data: &ArrayBytes) -> ArrayResult<()> {
        self.write(&Selection::all(), data)
    }

    /// Build one chunk's part of `data`: `stored` is `None` when the write covers the chunk,
    /// otherwise the chunk's stored bytes (from the fetch stage). Returns the encoded chunk to
    /// store, the key to delete (a chunk of fill value), or that nothing is left to store (a
    /// whole shard already streamed to the store).
    fn write_chunk_region(
        &self,
        task: &BlockTask,
        data: Source<'_>,
        extent: &[usize],
        stored: Option<Option<neurochunk_store::Bytes>>,
    ) -> ArrayResult<ChunkWrite> {
        let repr = self.repr();
        let covers_chunk = stored.is_none();
        if let (true, Source::Fixed(src)) = (covers_chunk, data) {
            if let Some(sharding) = self.meta.codecs.sharding() {
                return crate::sharded::write_full_shard(
                    self,
                    sharding,
                    task,
                    src,
                    extent,
                    self.options.write_empty_chunks,
                )
                .map(|()| ChunkWrite::Done);
            }
        }
        let elem = repr.data_type.fixed_size().unwrap_or(1);
        let axes = task.selection_to_block();
        if let (None | Some(None), Source::Fixed(src), Some(_)) =
            (&stored, data, repr.data_type.fixed_size())
        {
            // Nothing stored to keep: build the chunk in one pass from the data and the fill
            // value, in a reused buffer, instead of filling it first and copying over that.
            let mut buffer = neurochunk_store::take_buffer(repr.num_elements() * elem);
            if nd::gather(
                src,
                extent,
                &repr.shape,
                &axes,
                elem,
                &repr.fill_value,
                &mut buffer,
            ) {
                return self.encode_chunk(&task.index, ArrayBytes::Fixed(buffer));
            }
        }
        let mut chunk = match stored {
            None | Some(None) => subset::fill_for_repr(&repr),
            Some(Some(bytes)) => {
                let key = self.chunk_key(&task.index);
                self.decode_chunk(&task.index, &key, Vec::from(bytes), &repr)?
            }
        };
        match (&mut chunk, data) {
            (ArrayBytes::Fixed(dst), Source::Fixed(src)) => {
                nd::copy(src, extent, dst, &repr.shape, &axes, elem)
            }
            (
                dst @ ArrayBytes::Variable { .. },
                Source::Variable(src @ ArrayBytes::Variable { .. }),
            ) => nd::insert(dst, &repr.shape, src, extent, &axes, elem),
            _ => return Err(self.mixed_kinds()),
        }
        self.encode_chunk(&task.index, chunk)
    }

    /// Change the shape; chunks that lie wholly outside the new shape are deleted.
    pub fn resize(&mut self, new_shape: Vec<u64>) -> ArrayResult<()> {
        if self.meta.format == ZarrFormat::Precomputed {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(&self.path),
                message: "a precomputed scale cannot be resized (its chunk keys name each \
                          chunk's extent)"
                    .into(),
            });
        }
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
        // Edge chunks change extent and chunks outside the new shape go: nothing cached holds.
        self.cache.clear();
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

/// The machine's physical memory in bytes, where the system says.
fn physical_memory() -> Option<u64> {
    #[cfg(unix)]
    {
        // SAFETY: sysconf only reads system configuration; it has no memory-safety
        // preconditions.
        let (pages, page_size) = unsafe {
            (
                libc::sysconf(libc::_SC_PHYS_PAGES),
                libc::sysconf(libc::_SC_PAGESIZE),
            )
        };
        if pages > 0 && page_size > 0 {
            return (pages as u64).checked_mul(page_size as u64);
        }
    }
    None
}

/// A zeroed buffer for a read's output. A large one is a fresh mapping whose pages the
/// scatter faults in one by one; on Linux it is marked for transparent huge pages (as NumPy
/// does for large arrays), so it faults in 2 MiB at a time.
fn zeroed_output(len: usize) -> Vec<u8> {
    let out = vec![0u8; len];
    #[cfg(target_os = "linux")]
    if len >= HUGE_PAGE_MIN_BYTES {
        const HUGE: usize = 2 << 20;
        let start = out.as_ptr() as usize;
        let aligned = start.next_multiple_of(HUGE);
        let end = (start + len) / HUGE * HUGE;
        if end > aligned {
            // SAFETY: the range lies inside `out`'s allocation, which this function owns;
            // MADV_HUGEPAGE changes how pages are backed, never their contents. A failure
            // (e.g. no transparent huge pages) is harmless and ignored.
            unsafe {
                libc::madvise(
                    aligned as *mut libc::c_void,
                    end - aligned,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    out
}

/// Outputs from this size on are marked for transparent huge pages.
#[cfg(target_os = "linux")]
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// What a write does with one chunk.
enum ChunkWrite {
    /// Store the encoded chunk under its key.
    Set(String, neurochunk_store::Bytes),
    /// Delete the chunk stored under the key (it is all fill value now).
    Delete(String),
    /// Nothing left to store (a whole shard already streamed to the store).
    Done,
}

/// The tasks of a write in the order they are stored ([`Array::write_order`]).
struct WriteOrder {
    /// Task numbers, each write group's together.
    tasks: Vec<usize>,
    /// Where each write group starts in `tasks` (ascending, the first 0).
    starts: Vec<usize>,
}

/// The elements a write takes, borrowed: fixed-size elements as bytes (from an
/// [`ArrayBytes::Fixed`] or straight from the caller's buffer), or variable-length ones.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source<'a> {
    Fixed(&'a [u8]),
    /// An [`ArrayBytes::Variable`] (a `Fixed` one here is a kind mismatch, refused).
    Variable(&'a ArrayBytes),
}

impl<'a> Source<'a> {
    pub(crate) fn of(data: &'a ArrayBytes) -> Self {
        match data {
            ArrayBytes::Fixed(bytes) => Source::Fixed(bytes),
            variable => Source::Variable(variable),
        }
    }
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
    if ok && !offsets_consistent(decoded) {
        return Err(ArrayError::ChunkCorrupt {
            path: crate::display_path(path),
            key: key.to_string(),
            message: "decoded variable-length offsets decrease or point past the data".into(),
        });
    }
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

/// False for a variable-length buffer whose offsets decrease or point past its bytes.
fn offsets_consistent(data: &ArrayBytes) -> bool {
    match data {
        ArrayBytes::Fixed(_) => true,
        ArrayBytes::Variable { data, offsets } => {
            offsets.windows(2).all(|w| w[0] <= w[1])
                && offsets.last().is_none_or(|&o| o <= data.len())
        }
    }
}

/// The elements of a ragged array (numcodecs `vlen-array`) as [`Array::read_ragged`] returns
/// them: element `i` (in C order over `shape`) is the numbers
/// `values[offsets[i] .. offsets[i + 1]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ragged {
    /// Shape of the selection (integer-indexed axes dropped).
    pub shape: Vec<usize>,
    /// The type of the numbers.
    pub element_type: DataType,
    /// All numbers, little-endian, element after element.
    pub values: Vec<u8>,
    /// Start of each element in `values`, counted in numbers, then the end of the last.
    pub offsets: Vec<usize>,
}
