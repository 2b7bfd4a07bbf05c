//! An HDF5 NWB file opened in place: [`Hdf5Store`], a read-only [`Store`] that presents the
//! file as an NWB file on Zarr in the legacy hdmf-zarr convention, so that everything that
//! reads NWB on Zarr ([`NwbFile`](neurochunk_hdmf::NwbFile), the array engine, the validator)
//! reads HDF5 the same way.
//!
//! **What is read when.** Opening walks the hierarchy (one level of the tree at a time, the
//! object headers of a level fetched in one batch) and reads the attributes, the links and the
//! values of the small datasets that are not numeric arrays (text, references, compounds,
//! scalars, the cached specifications): their Zarr documents are built in memory. The chunks
//! of numeric datasets are not read: each becomes a Zarr array whose chunk keys are answered
//! from the HDF5 file when asked for.
//!
//! **Chunks.** A chunked dataset keeps its chunk grid. When its filters have Zarr codecs that
//! read the stored bytes as they are (deflate → `zlib`, shuffle, the Zstandard and Blosc
//! plugins; a trailing Fletcher-32 checksum is verified and removed), a chunk key is answered
//! with the stored bytes: the engine's own decoders decompress them in parallel. Otherwise the
//! reader decodes them and the array has no compressor. A chunk stored with some filters
//! skipped (HDF5 skips an optional filter that does not shrink it) is decoded and encoded
//! again. A contiguous dataset is cut into chunks of whole trailing rows of about
//! [`CONTIGUOUS_CHUNK_BYTES`], each one byte range of the file; a compact dataset is one chunk.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use neurochunk_array::{Array, ArrayBytes, FillValue};
use neurochunk_codec::Codec;
use neurochunk_dtype::Endian;
use neurochunk_h5::{
    ChunkInfo, Dataset, Datatype, Extent, H5File, Layout, Link, LinkTarget, Object, OpenOptions,
    Value as H5Value,
};
use neurochunk_hdmf::{
    AttributeValue, Container, Convention, DatasetOptions, FileLocation, FileOpener, HdmfError,
    HdmfResult, NamespaceDocs, NwbWriter, WriteOptions,
};
use neurochunk_store::{
    validate_key, validate_prefix, ByteRange, Bytes, DirListing, MemoryStore, ReadRequest,
    ReadResponse, Store, StoreError, StoreResult, VirtualRef,
};
use serde_json::Value;

use crate::error::{Hdf5Error, Hdf5Result};
use crate::mapping::{self, Pipeline};

/// About how many bytes one chunk of a contiguous dataset spans.
pub const CONTIGUOUS_CHUNK_BYTES: u64 = 1 << 20;

/// Datasets read whole when the file is opened (text, references, scalars) whose elements
/// take at most this many bytes are fetched together, in one batch.
const SMALL_DATASET_BYTES: u64 = 64 << 10;

/// Datasets whose values are read whole when the view is built (text, references, compounds)
/// are shown up to this many bytes of elements; larger ones are noted and left out.
const MAX_VALUES_BYTES: u64 = 1 << 30;
/// ... and up to this many elements.
const MAX_VALUES: u64 = 1 << 22;

/// The largest chunk a dataset of the view may declare (HDF5's own limit is 4 GiB).
const MAX_CHUNK_BYTES: u64 = 1 << 31;

/// More chunks of one array than this in one batch read the whole chunk index (once, then
/// kept) instead of looking each chunk up.
const LOOKUPS_BEFORE_INDEX: usize = 16;

/// Where the chunks of one Zarr array of the view come from.
#[derive(Debug)]
struct ArraySource {
    /// The dataset.
    dataset: Dataset,
    /// The Zarr array's metadata (for encoding a chunk again).
    array: neurochunk_array::ArrayMetadata,
    /// The chunk shape of the Zarr array.
    chunks: Vec<u64>,
    /// The separator of its chunk keys.
    separator: char,
    kind: SourceKind,
    /// The chunk index, by grid coordinates, read once when a batch needs many chunks.
    index: OnceLock<Result<HashMap<Vec<u64>, ChunkInfo>, String>>,
}

#[derive(Debug)]
enum SourceKind {
    /// The dataset's own chunks.
    Chunked(Pipeline),
    /// Byte ranges of a contiguous dataset (`None`: never written, every chunk missing).
    Contiguous(Option<u64>),
    /// A compact dataset: its bytes, one chunk.
    Compact,
}

/// A read-only [`Store`] presenting an HDF5 NWB file as an NWB file on Zarr (legacy
/// hdmf-zarr convention). See the [module documentation](self).
#[derive(Debug)]
pub struct Hdf5Store {
    file: H5File,
    /// The Zarr documents and the values of the small datasets.
    docs: Arc<MemoryStore>,
    /// The numeric arrays, by store key (no leading `/`).
    arrays: HashMap<String, Arc<ArraySource>>,
    notes: Vec<String>,
    /// Set by [`Hdf5Store::with_virtual_refs`]: the file's URL and modification time, which
    /// [`Store::locate`] answers with.
    virtual_file: Option<(String, Option<u64>)>,
}

impl Hdf5Store {
    /// Open the HDF5 file at `key` of `store`, named `name` in errors.
    pub fn open(store: Arc<dyn Store>, key: &str, name: &str) -> Hdf5Result<Hdf5Store> {
        let file = H5File::open_with(store, key, name, OpenOptions::default())
            .map_err(|e| Hdf5Error::file(name, e.to_string()))?;
        Self::from_file(file)
    }

    /// The view of the HDF5 file at `key` of `store` if there is one there: `None` when
    /// nothing is stored at `key` or it is not an HDF5 file ([`H5File::probe`]).
    pub fn probe(store: Arc<dyn Store>, key: &str, name: &str) -> Hdf5Result<Option<Hdf5Store>> {
        match H5File::probe(store, key, name).map_err(|e| Hdf5Error::file(name, e.to_string()))? {
            Some(file) => Ok(Some(Self::from_file(file)?)),
            None => Ok(None),
        }
    }

    /// The view of an opened file.
    pub fn from_file(file: H5File) -> Hdf5Result<Hdf5Store> {
        let docs = Arc::new(MemoryStore::new());
        let mut builder = ViewBuilder {
            name: file.name().to_string(),
            writer: NwbWriter::create_in(
                docs.clone(),
                "",
                Convention::Legacy,
                // Documents and small values held in memory: nothing to compress.
                WriteOptions {
                    compressors: Some(Vec::new()),
                    ..WriteOptions::default()
                },
            )?
            .without_consolidated_metadata(),
            file: &file,
            arrays: HashMap::new(),
            notes: Vec::new(),
            shapes: std::sync::Mutex::new(HashMap::new()),
        };
        builder.build()?;
        let ViewBuilder {
            writer,
            arrays,
            notes,
            ..
        } = builder;
        writer.finish()?;
        Ok(Hdf5Store {
            file,
            docs,
            arrays,
            notes,
            virtual_file: None,
        })
    }

    /// The same view, whose [`Store::locate`] says where in the file, named `url`, each
    /// chunk that is stored as the Zarr array reads it lies (a chunk of a contiguous dataset
    /// that is not padded, a filtered chunk with every filter applied and no checksum to
    /// remove); `modified` is the file's modification time (seconds since the Unix epoch),
    /// recorded so that readers notice when the file changes.
    pub fn with_virtual_refs(mut self, url: String, modified: Option<u64>) -> Hdf5Store {
        self.virtual_file = Some((url, modified));
        self
    }

    /// The HDF5 file.
    pub fn file(&self) -> &H5File {
        &self.file
    }

    /// What the view could not carry over as it is (arrays of references kept as lists of
    /// dictionaries, hard links shown as soft links, objects skipped), one line each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The array a chunk key belongs to, and the chunk's grid coordinates.
    fn chunk_of(&self, key: &str) -> Option<(&Arc<ArraySource>, Vec<u64>)> {
        let (array, last) = key.rsplit_once('/').unwrap_or(("", key));
        let source = self.arrays.get(array)?;
        let coords = parse_coords(last, source.separator, source.chunks.len())?;
        let in_grid = coords
            .iter()
            .zip(source.dataset.shape())
            .zip(&source.chunks)
            .all(|((&c, &d), &n)| c < d.div_ceil(n).max(1));
        in_grid.then_some((source, coords))
    }

    /// The Zarr chunks at `keys` (each of an array of this view), `None` where the chunk was
    /// never written.
    /// The chunk keys among `keys` grouped by their array.
    fn by_array(&self, keys: &[&str]) -> Vec<ChunksOfArray<'_>> {
        let mut by_array: BTreeMap<*const ArraySource, Vec<(usize, Vec<u64>)>> = BTreeMap::new();
        let mut sources: HashMap<*const ArraySource, &Arc<ArraySource>> = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            if let Some((source, coords)) = self.chunk_of(key) {
                let id = Arc::as_ptr(source);
                sources.insert(id, source);
                by_array.entry(id).or_default().push((i, coords));
            }
        }
        by_array
            .into_iter()
            .map(|(id, wanted)| (sources[&id], wanted))
            .collect()
    }

    fn read_chunks(&self, keys: &[&str]) -> Vec<StoreResult<Option<Bytes>>> {
        let mut out: Vec<StoreResult<Option<Bytes>>> = (0..keys.len()).map(|_| Ok(None)).collect();
        for (source, wanted) in self.by_array(keys) {
            match source.read(&wanted.iter().map(|(_, c)| c.clone()).collect::<Vec<_>>()) {
                Ok(values) => {
                    for ((i, _), value) in wanted.iter().zip(values) {
                        out[*i] = Ok(value);
                    }
                }
                Err(message) => {
                    for (i, _) in &wanted {
                        out[*i] = Err(StoreError::backend(
                            self.file.name(),
                            keys[*i],
                            message.clone(),
                        ));
                    }
                }
            }
        }
        out
    }

    /// Where the chunks at `keys` lie in the file (see [`Hdf5Store::with_virtual_refs`]).
    fn locate_chunks(
        &self,
        url: &str,
        modified: Option<u64>,
        keys: &[&str],
    ) -> StoreResult<Vec<Option<VirtualRef>>> {
        let mut out = vec![None; keys.len()];
        for (source, wanted) in self.by_array(keys) {
            let coords: Vec<Vec<u64>> = wanted.iter().map(|(_, c)| c.clone()).collect();
            let spans = source.verbatim_spans(&coords).map_err(|message| {
                StoreError::backend(self.file.name(), keys[wanted[0].0], message)
            })?;
            for ((i, _), span) in wanted.iter().zip(spans) {
                out[*i] = span.map(|(offset, length)| VirtualRef {
                    url: url.to_string(),
                    offset,
                    length,
                    modified,
                });
            }
        }
        Ok(out)
    }

    fn read_only(key: &str) -> StoreResult<()> {
        Err(StoreError::ReadOnly {
            key: key.to_string(),
        })
    }
}

/// An array's source, and the position (in a list of keys) and grid coordinates of each of
/// its chunks asked for.
type ChunksOfArray<'a> = (&'a Arc<ArraySource>, Vec<(usize, Vec<u64>)>);

/// Grid coordinates from the last segment of a chunk key (`0.3.1`).
fn parse_coords(text: &str, separator: char, rank: usize) -> Option<Vec<u64>> {
    let coords: Vec<u64> = text
        .split(separator)
        .map(|s| {
            (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        })
        .collect::<Option<_>>()?;
    (coords.len() == rank).then_some(coords)
}

impl ArraySource {
    /// Where the chunk at `coords` is stored, from the index when it has been read.
    fn locate(&self, wanted: &[Vec<u64>]) -> Result<Vec<Option<ChunkInfo>>, String> {
        if wanted.len() > LOOKUPS_BEFORE_INDEX || self.index.get().is_some() {
            let index = self.index.get_or_init(|| {
                self.dataset
                    .chunks()
                    .map(|all| all.into_iter().map(|c| (c.coords.clone(), c)).collect())
                    .map_err(|e| e.to_string())
            });
            let index = index.as_ref().map_err(Clone::clone)?;
            return Ok(wanted.iter().map(|c| index.get(c).cloned()).collect());
        }
        wanted
            .iter()
            .map(|c| self.dataset.chunk(c).map_err(|e| e.to_string()))
            .collect()
    }

    /// The byte ranges of the file (offset, length) that hold the Zarr chunks at `wanted`
    /// exactly as the array reads them; `None` for a chunk never written and for one the
    /// view makes up or encodes again (padded, filters skipped, a checksum removed, decoded).
    fn verbatim_spans(&self, wanted: &[Vec<u64>]) -> Result<Vec<Option<(u64, u64)>>, String> {
        match &self.kind {
            SourceKind::Chunked(Pipeline::Zarr {
                strip_checksum: false,
                ..
            }) => Ok(self
                .locate(wanted)?
                .into_iter()
                .map(|info| {
                    info.filter(|i| self.dataset.skipped_filters(i) == 0)
                        .map(|i| (i.byte_offset, i.size))
                })
                .collect()),
            SourceKind::Contiguous(Some(start)) => {
                let chunk_len = self.chunk_len();
                Ok(wanted
                    .iter()
                    .map(|coords| {
                        let (offset, length) = self.contiguous_span(*start, coords);
                        (length == chunk_len).then_some((offset, length))
                    })
                    .collect())
            }
            _ => Ok(vec![None; wanted.len()]),
        }
    }

    /// Bytes of one whole Zarr chunk, decoded.
    fn chunk_len(&self) -> u64 {
        self.chunks.iter().product::<u64>() * self.dataset.dtype().size() as u64
    }

    /// The byte range of the file holding the elements of a contiguous dataset (starting
    /// at absolute byte `start`) inside the chunk at `coords`. A chunk is one run of the
    /// file: its leading axes have extent 1 and its trailing axes are whole, so its
    /// elements inside the dataset come first, in file order.
    fn contiguous_span(&self, start: u64, coords: &[u64]) -> (u64, u64) {
        let shape = self.dataset.shape();
        let element = self.dataset.dtype().size() as u64;
        let mut strides = vec![1u64; shape.len()];
        for d in (0..shape.len().saturating_sub(1)).rev() {
            strides[d] = strides[d + 1] * shape[d + 1];
        }
        let first: u64 = coords
            .iter()
            .zip(&self.chunks)
            .zip(&strides)
            .map(|((&c, &n), &s)| c * n * s)
            .sum::<u64>()
            * element;
        let inside: u64 = coords
            .iter()
            .zip(&self.chunks)
            .zip(shape)
            .map(|((&c, &n), &d)| n.min(d.saturating_sub(c * n)))
            .product();
        (start + first, inside * element)
    }

    /// The Zarr chunks at `wanted` (grid coordinates), in order.
    fn read(&self, wanted: &[Vec<u64>]) -> Result<Vec<Option<Bytes>>, String> {
        match &self.kind {
            SourceKind::Chunked(pipeline) => self.read_chunked(pipeline, wanted),
            SourceKind::Contiguous(None) => Ok(vec![None; wanted.len()]),
            SourceKind::Contiguous(Some(start)) => self.read_contiguous(*start, wanted),
            SourceKind::Compact => {
                let raw = self.dataset.read_raw_all().map_err(|e| e.to_string())?;
                Ok(wanted
                    .iter()
                    .map(|_| Some(Bytes::from(raw.clone())))
                    .collect())
            }
        }
    }

    fn read_chunked(
        &self,
        pipeline: &Pipeline,
        wanted: &[Vec<u64>],
    ) -> Result<Vec<Option<Bytes>>, String> {
        let found = self.locate(wanted)?;
        let infos: Vec<ChunkInfo> = found.iter().flatten().cloned().collect();
        let stored = self
            .dataset
            .read_chunks_stored(&infos)
            .map_err(|e| e.to_string())?;
        let mut stored = stored.into_iter();
        let jobs: Vec<Option<(ChunkInfo, Bytes)>> = found
            .into_iter()
            .map(|info| info.map(|i| (i, stored.next().unwrap_or_default())))
            .collect();
        use rayon::prelude::*;
        jobs.into_par_iter()
            .map(|job| {
                let Some((info, bytes)) = job else {
                    return Ok(None);
                };
                self.zarr_chunk(pipeline, &info, bytes).map(Some)
            })
            .collect()
    }

    /// The bytes the Zarr array's chain decodes, from a stored chunk.
    fn zarr_chunk(
        &self,
        pipeline: &Pipeline,
        info: &ChunkInfo,
        stored: Bytes,
    ) -> Result<Bytes, String> {
        match pipeline {
            Pipeline::Zarr { .. } if self.dataset.skipped_filters(info) != 0 => {
                let raw = self
                    .dataset
                    .decode_stored(info, stored.to_vec())
                    .map_err(|e| e.to_string())?;
                self.encode(&info.coords, raw)
            }
            Pipeline::Zarr {
                strip_checksum: true,
                ..
            } => mapping::strip_fletcher32(stored.to_vec())
                .map(Bytes::from)
                .map_err(|m| format!("chunk {:?}: {m}", info.coords)),
            Pipeline::Zarr { .. } => Ok(stored),
            Pipeline::Decoded => self
                .dataset
                .decode_stored(info, stored.to_vec())
                .map(Bytes::from)
                .map_err(|e| e.to_string()),
        }
    }

    /// A whole decoded chunk (elements in the file's byte order) encoded by the array's chain.
    fn encode(&self, coords: &[u64], raw: Vec<u8>) -> Result<Bytes, String> {
        encode_chunk(&self.array, self.dataset.dtype(), coords, raw)
    }

    /// Chunks of a contiguous dataset starting at absolute byte `start`: each one byte range
    /// (whole rows of the trailing axes), edge chunks padded with the fill value.
    fn read_contiguous(
        &self,
        start: u64,
        wanted: &[Vec<u64>],
    ) -> Result<Vec<Option<Bytes>>, String> {
        let chunk_len = self.chunk_len();
        let spans: Vec<(u64, u64)> = wanted
            .iter()
            .map(|coords| self.contiguous_span(start, coords))
            .collect();
        let parts = self
            .dataset
            .file()
            .read_spans(&spans)
            .map_err(|e| e.to_string())?;
        let fill = self.dataset.fill_bytes();
        Ok(parts
            .into_iter()
            .map(|part| {
                if part.len() as u64 == chunk_len {
                    return Some(part);
                }
                let mut full = part.to_vec();
                while (full.len() as u64) < chunk_len {
                    full.extend_from_slice(&fill);
                }
                Some(Bytes::from(full))
            })
            .collect())
    }
}

/// A whole decoded chunk of a dataset of element type `dtype` (its elements in the file's
/// byte order) encoded by the chain of `meta`, as the array would store it at `coords`.
pub(crate) fn encode_chunk(
    meta: &neurochunk_array::ArrayMetadata,
    dtype: &Datatype,
    coords: &[u64],
    mut raw: Vec<u8>,
) -> Result<Bytes, String> {
    if let Some((_, Endian::Big)) = mapping::numeric_type(dtype) {
        for e in raw.chunks_exact_mut(dtype.size().max(1)) {
            e.reverse();
        }
    }
    let scratch: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = Array::from_metadata(scratch.clone(), "a", meta.clone());
    array
        .store_chunk(coords, ArrayBytes::Fixed(raw))
        .map_err(|e| e.to_string())?;
    scratch
        .get(&array.chunk_key(coords))
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("chunk {coords:?} was not encoded"))
}

/// The Zarr chunk shape of a contiguous dataset: whole rows of the trailing axes, about
/// [`CONTIGUOUS_CHUNK_BYTES`] each (a chunk is then one byte range of the file).
fn contiguous_chunks(shape: &[u64], element: u64) -> Vec<u64> {
    let mut chunks = vec![1u64; shape.len()];
    let mut bytes = element;
    for d in (0..shape.len()).rev() {
        let extent = shape[d].max(1);
        let rows = (CONTIGUOUS_CHUNK_BYTES / bytes).max(1);
        if rows < extent {
            chunks[d] = rows;
            break;
        }
        chunks[d] = extent;
        bytes *= extent;
    }
    chunks
}

/// Walks an HDF5 file into the documents of the view.
struct ViewBuilder<'a> {
    name: String,
    file: &'a H5File,
    writer: NwbWriter,
    arrays: HashMap<String, Arc<ArraySource>>,
    notes: Vec<String>,
    /// Shapes of datasets named by references, looked up once each.
    shapes: std::sync::Mutex<HashMap<String, Vec<u64>>>,
}

/// One item found by the walk, in the order the writer takes them.
pub(crate) enum Found {
    Group(String, neurochunk_h5::Group),
    Dataset(String, Dataset),
    Link {
        parent: String,
        name: String,
        target: String,
        source: String,
    },
}

pub(crate) fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The absolute path a soft link's target names from the group `parent`.
pub(crate) fn absolute_target(parent: &str, target: &str) -> String {
    let base: Vec<&str> = if target.starts_with('/') {
        Vec::new()
    } else {
        parent.split('/').filter(|s| !s.is_empty()).collect()
    };
    let mut parts = base;
    for segment in target.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    format!("/{}", parts.join("/"))
}

/// The hierarchy of `file`, breadth first (one level's object headers fetched in one batch);
/// each object once (a second hard link to an object is a soft link to the first path found,
/// with a note). Soft link targets are made absolute.
pub(crate) fn walk(file: &H5File, notes: &mut Vec<String>) -> Hdf5Result<Vec<Found>> {
    let name = file.name().to_string();
    let err = |path: &str, e: neurochunk_h5::H5Error| Hdf5Error::object(&name, path, e.to_string());
    let root = file
        .root()
        .map_err(|e| Hdf5Error::file(&name, e.to_string()))?;
    let mut seen: HashMap<u64, String> = HashMap::new();
    seen.insert(root.address(), "/".into());
    let mut found = vec![Found::Group("/".into(), root.clone())];
    let mut level = vec![("/".to_string(), root)];
    while !level.is_empty() {
        let mut hard: Vec<(String, String, u64)> = Vec::new();
        for (path, group) in &level {
            let links = group.links().map_err(|e| err(path, e))?;
            for Link { name, target, .. } in links {
                match target {
                    LinkTarget::Hard(addr) => hard.push((path.clone(), name, addr)),
                    LinkTarget::Soft(to) => found.push(Found::Link {
                        target: absolute_target(path, &to),
                        parent: path.clone(),
                        name,
                        source: ".".into(),
                    }),
                    LinkTarget::External { file, path: object } => found.push(Found::Link {
                        parent: path.clone(),
                        name,
                        target: absolute_target("/", &object),
                        source: file,
                    }),
                    LinkTarget::UserDefined { .. } => notes.push(format!(
                        "{}: a user-defined link, skipped",
                        join(path, &name)
                    )),
                }
            }
        }
        let fresh: Vec<u64> = hard
            .iter()
            .map(|(_, _, a)| *a)
            .filter(|a| !seen.contains_key(a))
            .collect();
        file.prefetch(&fresh)
            .map_err(|e| Hdf5Error::file(&name, e.to_string()))?;
        let mut next = Vec::new();
        for (parent, link, addr) in hard {
            let path = join(&parent, &link);
            if let Some(first) = seen.get(&addr) {
                notes.push(format!(
                    "{path}: a second hard link to {first}, shown as a soft link"
                ));
                found.push(Found::Link {
                    parent,
                    name: link,
                    target: first.clone(),
                    source: ".".into(),
                });
                continue;
            }
            seen.insert(addr, path.clone());
            match file.object_at(addr, &path).map_err(|e| err(&path, e))? {
                Object::Group(g) => {
                    found.push(Found::Group(path.clone(), g.clone()));
                    next.push((path, g));
                }
                Object::Dataset(d) => found.push(Found::Dataset(path, d)),
                Object::NamedType(_) => {}
            }
        }
        level = next;
    }
    Ok(found)
}

impl ViewBuilder<'_> {
    fn err(&self, path: &str, message: impl Into<String>) -> Hdf5Error {
        Hdf5Error::object(&self.name, path, message)
    }

    /// The shape of the dataset at `path` (for region references listed as points).
    fn dims_of(&self, path: &str) -> Vec<u64> {
        if let Ok(shapes) = self.shapes.lock() {
            if let Some(s) = shapes.get(path) {
                return s.clone();
            }
        }
        let shape = self
            .file
            .dataset(path)
            .map(|d| d.shape().to_vec())
            .unwrap_or_default();
        if let Ok(mut shapes) = self.shapes.lock() {
            shapes.insert(path.to_string(), shape.clone());
        }
        shape
    }

    fn attributes(
        &mut self,
        path: &str,
        attrs: Vec<neurochunk_h5::Attribute>,
    ) -> Hdf5Result<Vec<(String, AttributeValue)>> {
        let mut notes = Vec::new();
        let mut out = Vec::with_capacity(attrs.len());
        for attr in &attrs {
            // A value that cannot be read is an error; one without an NWB form, a note.
            let values = attr
                .values()
                .map_err(|e| self.err(path, format!("attribute '{}': {e}", attr.name())))?;
            match mapping::attribute_value(attr, values, &|p| self.dims_of(p), &mut notes) {
                Ok(value) => out.push((attr.name().to_string(), value)),
                Err(m) => notes.push(format!("attribute '{}' not shown: {m}", attr.name())),
            }
        }
        self.notes
            .extend(notes.into_iter().map(|n| format!("{path}: {n}")));
        Ok(out)
    }

    fn build(&mut self) -> Hdf5Result<()> {
        let found = walk(self.file, &mut self.notes)?;
        // The elements of the small datasets read whole below, fetched in one batch.
        let small: Vec<(u64, u64)> = found
            .iter()
            .filter_map(|item| match item {
                Found::Dataset(_, ds) => match (ds.layout(), ds.extent()) {
                    (
                        Layout::Contiguous {
                            byte_offset: Some(at),
                            size,
                        },
                        extent,
                    ) if *size <= SMALL_DATASET_BYTES
                        && !(matches!(extent, Extent::Simple(_))
                            && mapping::numeric_type(ds.dtype()).is_some()) =>
                    {
                        Some((*at, *size))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        self.file
            .prefetch_spans(&small)
            .map_err(|e| Hdf5Error::file(&self.name, e.to_string()))?;
        // The root's `.specloc` (an object reference) names the cached specifications.
        let root_attrs = self
            .file
            .root()
            .and_then(|r| r.attributes())
            .map_err(|e| self.err("/", e.to_string()))?;
        let mut root_attrs = self.attributes("/", root_attrs)?;
        let mut specloc = None;
        root_attrs.retain(|(k, v)| {
            if k != ".specloc" {
                return true;
            }
            specloc = match v {
                AttributeValue::Reference(r) => Some(r.path.clone()),
                AttributeValue::Value(Value::String(s)) => Some(absolute_target("/", s)),
                _ => None,
            };
            false
        });
        let in_specs = |p: &str| {
            specloc
                .as_deref()
                .is_some_and(|s| p == s || p.starts_with(&format!("{s}/")))
        };
        let mut namespaces: BTreeMap<(String, String), Vec<(String, Value)>> = BTreeMap::new();
        let mut skipped = HashSet::new();
        for item in found {
            match item {
                Found::Group(path, group) => {
                    if in_specs(&path) {
                        continue;
                    }
                    let attrs = if path == "/" {
                        std::mem::take(&mut root_attrs)
                    } else {
                        let raw = group
                            .attributes()
                            .map_err(|e| self.err(&path, e.to_string()))?;
                        self.attributes(&path, raw)?
                    };
                    self.writer.group(&path, None, &attrs)?;
                }
                Found::Dataset(path, ds) => {
                    if let Some(spec) = specloc.as_deref().filter(|_| in_specs(&path)) {
                        let rel: Vec<String> = path[spec.len()..]
                            .trim_matches('/')
                            .split('/')
                            .map(str::to_string)
                            .collect();
                        if let [ns, version, doc] = rel.as_slice() {
                            let value = self.spec_document(&path, &ds)?;
                            namespaces
                                .entry((ns.clone(), version.clone()))
                                .or_default()
                                .push((doc.clone(), value));
                        } else {
                            self.notes
                                .push(format!("{path}: not a cached specification document"));
                        }
                        continue;
                    }
                    if !self.dataset(&path, &ds)? {
                        skipped.insert(path);
                    }
                }
                Found::Link {
                    parent,
                    name,
                    target,
                    source,
                } => {
                    if in_specs(&parent) || skipped.contains(&target) {
                        continue;
                    }
                    self.writer.link(&parent, &name, &target, &source)?;
                }
            }
        }
        for ((name, version), mut documents) in namespaces {
            documents.sort_by_key(|(d, _)| d != "namespace");
            self.writer.cache_namespace(&NamespaceDocs {
                name,
                version,
                documents,
            })?;
        }
        Ok(())
    }

    /// One cached specification document (a JSON text).
    fn spec_document(&self, path: &str, ds: &Dataset) -> Hdf5Result<Value> {
        let values = ds
            .read_values_all()
            .map_err(|e| self.err(path, e.to_string()))?;
        let text = match values.first() {
            Some(H5Value::Text(t)) => t.clone(),
            Some(H5Value::Bytes(b)) => String::from_utf8_lossy(b).into_owned(),
            _ => return Err(self.err(path, "a cached specification that is not text")),
        };
        serde_json::from_str(&text)
            .map_err(|e| self.err(path, format!("cached specification is not JSON: {e}")))
    }

    /// The dataset at `path`: a lazily read array when it is numeric with a shape, its values
    /// otherwise. False when it was skipped (with a note).
    fn dataset(&mut self, path: &str, ds: &Dataset) -> Hdf5Result<bool> {
        let raw = ds.attributes().map_err(|e| self.err(path, e.to_string()))?;
        let attrs = self.attributes(path, raw)?;
        if matches!(ds.layout(), Layout::Virtual) || !ds.external_files().is_empty() {
            self.notes.push(format!(
                "{path}: a virtual dataset or one stored in external files, not shown"
            ));
            return Ok(false);
        }
        if let (Extent::Simple(dims), Some((dt, endian))) =
            (ds.extent(), mapping::numeric_type(ds.dtype()))
        {
            self.numeric_array(path, ds, &attrs, dims, dt, endian)?;
            return Ok(true);
        }
        // Values read whole when the file is opened: no more than a reader can hold.
        let declared = ds.len().saturating_mul(ds.dtype().size() as u64);
        if declared > MAX_VALUES_BYTES || ds.len() > MAX_VALUES {
            self.notes.push(format!(
                "{path}: not shown: {} values ({declared} bytes), more than are read whole \
                 when a file is opened",
                ds.len()
            ));
            return Ok(false);
        }
        let (shape, scalar) = match ds.extent() {
            Extent::Simple(dims) => (dims.iter().map(|&d| d as usize).collect(), false),
            Extent::Scalar => (Vec::new(), true),
            Extent::Null => (vec![0], false),
        };
        let values = if matches!(ds.extent(), Extent::Null) {
            Vec::new()
        } else {
            ds.read_values_all()
                .map_err(|e| self.err(path, e.to_string()))?
        };
        let value = match mapping::dataset_value(ds.dtype(), &values, &|p| self.dims_of(p)) {
            Ok(value) => value,
            Err(m) => {
                self.notes.push(format!("{path}: not shown: {m}"));
                return Ok(false);
            }
        };
        let data = neurochunk_hdmf::Dataset {
            shape,
            scalar,
            value,
        };
        self.writer
            .dataset(path, None, &data, &attrs, &DatasetOptions::default())?;
        Ok(true)
    }

    fn numeric_array(
        &mut self,
        path: &str,
        ds: &Dataset,
        attrs: &[(String, AttributeValue)],
        dims: &[u64],
        dt: neurochunk_dtype::DataType,
        endian: Endian,
    ) -> Hdf5Result<()> {
        let element = ds.dtype().size();
        let (chunks, kind, codecs): (Vec<u64>, SourceKind, Vec<Codec>) = match ds.layout() {
            Layout::Chunked { .. } => {
                let chunks = ds.chunk_shape().map(<[u64]>::to_vec).unwrap_or_default();
                let pipeline = mapping::pipeline(ds.filters(), element);
                let codecs = match &pipeline {
                    Pipeline::Zarr { codecs, .. } => codecs.clone(),
                    Pipeline::Decoded => Vec::new(),
                };
                (chunks, SourceKind::Chunked(pipeline), codecs)
            }
            Layout::Contiguous { byte_offset, .. } => (
                contiguous_chunks(dims, element as u64),
                SourceKind::Contiguous(*byte_offset),
                Vec::new(),
            ),
            Layout::Compact { .. } => (
                dims.iter().map(|&d| d.max(1)).collect(),
                SourceKind::Compact,
                Vec::new(),
            ),
            Layout::Virtual => unreachable!("virtual datasets are skipped before"),
        };
        let chunk_bytes = chunks
            .iter()
            .fold(element as u64, |a, &c| a.saturating_mul(c));
        let stored_bytes = dims
            .iter()
            .fold(element as u64, |a, &d| a.saturating_mul(d));
        if let Layout::Compact { size } = ds.layout() {
            if stored_bytes > *size {
                return Err(self.err(
                    path,
                    format!("{stored_bytes} bytes of elements do not fit its {size} compact bytes"),
                ));
            }
        }
        if chunk_bytes > MAX_CHUNK_BYTES {
            return Err(self.err(
                path,
                format!("chunks of {chunk_bytes} bytes (more than {MAX_CHUNK_BYTES})"),
            ));
        }
        if chunks.len() != dims.len() || chunks.contains(&0) {
            return Err(self.err(
                path,
                format!("chunk shape {chunks:?} does not fit the shape {dims:?}"),
            ));
        }
        let chunk_sizes: Vec<usize> = chunks.iter().map(|&c| c as usize).collect();
        let array = self.writer.create_array(
            path,
            None,
            attrs,
            dims,
            &dt,
            &chunk_sizes,
            endian,
            Some(codecs),
            FillValue::Bytes(ds.fill_native()),
        )?;
        let separator = array
            .chunk_key(&vec![0; dims.len()])
            .rsplit('/')
            .next()
            .and_then(|last| last.chars().find(|c| !c.is_ascii_digit()))
            .unwrap_or('.');
        let key = array.path().trim_matches('/').to_string();
        self.arrays.insert(
            key,
            Arc::new(ArraySource {
                dataset: ds.clone(),
                array: array.metadata().clone(),
                chunks,
                separator,
                kind,
                index: OnceLock::new(),
            }),
        );
        Ok(())
    }
}

impl Store for Hdf5Store {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        validate_key(key)?;
        if self.chunk_of(key).is_some() {
            return self.read_chunks(&[key]).pop().unwrap_or(Ok(None));
        }
        self.docs.get(key)
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        match self.get(key)? {
            Some(value) => ByteRange::slice_all(key, &value, ranges).map(Some),
            None => Ok(None),
        }
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        validate_key(key)?;
        if self.chunk_of(key).is_some() {
            return Ok(self.get(key)?.map(|v| v.len() as u64));
        }
        self.docs.size(key)
    }

    fn set(&self, key: &str, _value: Bytes) -> StoreResult<()> {
        Self::read_only(key)
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        Self::read_only(key)
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        Self::read_only(prefix)
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        validate_prefix(prefix)?;
        let mut keys = self.docs.list_prefix(prefix)?;
        for (array, source) in &self.arrays {
            let under = format!("{array}/");
            if !(under.starts_with(prefix) || prefix.starts_with(&under)) {
                continue;
            }
            for coords in source
                .stored_coords()
                .map_err(|message| StoreError::backend(self.file.name(), array.as_str(), message))?
            {
                let name = coords
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(&source.separator.to_string());
                let key = format!("{under}{name}");
                if key.starts_with(prefix) {
                    keys.push(key);
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        validate_prefix(prefix)?;
        let mut listing = self.docs.list_dir(prefix)?;
        let dir = prefix.trim_end_matches('/');
        if let Some(source) = self.arrays.get(dir) {
            for coords in source
                .stored_coords()
                .map_err(|message| StoreError::backend(self.file.name(), dir, message))?
            {
                listing.keys.push(
                    coords
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(&source.separator.to_string()),
                );
            }
            listing.keys.sort();
        }
        Ok(listing)
    }

    fn concurrent_reads(&self) -> usize {
        self.file.store().concurrent_reads()
    }

    fn locate(&self, keys: &[&str]) -> StoreResult<Vec<Option<VirtualRef>>> {
        match &self.virtual_file {
            Some((url, modified)) => self.locate_chunks(url, *modified, keys),
            None => Ok(vec![None; keys.len()]),
        }
    }

    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        let chunk_requests: Vec<usize> = (0..requests.len())
            .filter(|&i| self.chunk_of(&requests[i].key).is_some())
            .collect();
        let keys: Vec<&str> = chunk_requests
            .iter()
            .map(|&i| requests[i].key.as_str())
            .collect();
        let mut chunks = self.read_chunks(&keys).into_iter();
        let mut answers: HashMap<usize, StoreResult<Option<Bytes>>> = HashMap::new();
        for &i in &chunk_requests {
            answers.insert(i, chunks.next().unwrap_or(Ok(None)));
        }
        requests
            .iter()
            .enumerate()
            .map(|(i, request)| match answers.remove(&i) {
                None => request.answer_from(self.docs.as_ref()),
                Some(Err(e)) => Err(e),
                Some(Ok(None)) => Ok(ReadResponse::Missing),
                Some(Ok(Some(value))) => match &request.ranges {
                    None => Ok(ReadResponse::Whole(value)),
                    Some(ranges) => {
                        ByteRange::slice_all(&request.key, &value, ranges).map(ReadResponse::Ranges)
                    }
                },
            })
            .collect()
    }
}

impl ArraySource {
    /// The grid coordinates of every chunk that holds data.
    fn stored_coords(&self) -> Result<Vec<Vec<u64>>, String> {
        let grid: Vec<u64> = self
            .dataset
            .shape()
            .iter()
            .zip(&self.chunks)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect();
        match &self.kind {
            SourceKind::Chunked(_) => {
                let index = self.index.get_or_init(|| {
                    self.dataset
                        .chunks()
                        .map(|all| all.into_iter().map(|c| (c.coords.clone(), c)).collect())
                        .map_err(|e| e.to_string())
                });
                let mut coords: Vec<Vec<u64>> = index
                    .as_ref()
                    .map_err(Clone::clone)?
                    .keys()
                    .cloned()
                    .collect();
                coords.retain(|c| c.iter().zip(&grid).all(|(&i, &n)| i < n));
                coords.sort();
                Ok(coords)
            }
            SourceKind::Contiguous(None) => Ok(Vec::new()),
            SourceKind::Contiguous(Some(_)) | SourceKind::Compact => {
                let count: u64 = grid.iter().product();
                Ok((0..count).map(|n| unravel(n, &grid)).collect())
            }
        }
    }
}

/// The coordinates of the `n`th cell of `grid` in C order.
fn unravel(mut n: u64, grid: &[u64]) -> Vec<u64> {
    let mut out = vec![0; grid.len()];
    for d in (0..grid.len()).rev() {
        out[d] = n % grid[d].max(1);
        n /= grid[d].max(1);
    }
    out
}

/// Opens HDF5 files as NWB files ([`Hdf5Store`] views) wherever the NWB layer meets a file
/// stored as one value: the file a location names, and the targets of external links.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hdf5Files;

/// The [`FileOpener`] of HDF5 files, for
/// [`ExternalPolicy::files`](neurochunk_hdmf::ExternalPolicy).
pub fn hdf5_files() -> Arc<dyn FileOpener> {
    Arc::new(Hdf5Files)
}

impl FileOpener for Hdf5Files {
    fn open_file(
        &self,
        store: Arc<dyn Store>,
        key: &str,
        name: &str,
    ) -> HdmfResult<Option<FileLocation>> {
        let Some(view) = Hdf5Store::probe(store.clone(), key, name).map_err(HdmfError::from)?
        else {
            return Ok(None);
        };
        Ok(Some(FileLocation {
            store: Arc::new(view),
            prefix: String::new(),
            name: name.to_string(),
            container: Some(Container {
                store,
                key: key.to_string(),
            }),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_chunks_are_whole_trailing_rows_of_about_a_mebibyte() {
        assert_eq!(contiguous_chunks(&[10_000_000], 8), [131_072]);
        assert_eq!(contiguous_chunks(&[10_000, 384], 2), [1365, 384]);
        assert_eq!(contiguous_chunks(&[1000, 384], 2), [1000, 384]);
        // A row larger than the target: the next axis is cut.
        assert_eq!(contiguous_chunks(&[4, 1000, 1000], 4), [1, 262, 1000]);
        assert_eq!(contiguous_chunks(&[3, 4], 8), [3, 4]);
        assert_eq!(contiguous_chunks(&[0], 8), [1]);
    }

    #[test]
    fn chunk_keys_parse_to_coordinates_of_their_rank() {
        assert_eq!(parse_coords("0.3.1", '.', 3), Some(vec![0, 3, 1]));
        assert_eq!(parse_coords("0.3", '.', 3), None);
        assert_eq!(parse_coords(".zarray", '.', 1), None);
        assert_eq!(parse_coords("+1", '.', 1), None);
    }

    #[test]
    fn soft_link_targets_are_made_absolute() {
        assert_eq!(absolute_target("/a/b", "../c"), "/a/c");
        assert_eq!(absolute_target("/a", "/x/./y"), "/x/y");
        assert_eq!(absolute_target("/", "d"), "/d");
    }
}
