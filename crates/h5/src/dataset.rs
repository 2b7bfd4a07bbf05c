//! Datasets: their description (type, extent, layout, filters, fill value), their chunks, and
//! reads of hyperslabs (raw elements, native byte order, or decoded values).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use neurochunk_codec::nd::{copy as nd_copy, AxisMap};
use neurochunk_store::Bytes;
use rayon::prelude::*;

use crate::attribute::{read_attributes, Attribute};
use crate::chunks::{lookup, ChunkInfo, Geometry};
use crate::datatype::{Datatype, Extent};
use crate::error::{corrupt, invalid, too_large, unsupported, H5Error, H5Result};
use crate::file::H5File;
use crate::filters::{decode_chunk, filter_name, unsupported_filter};
use crate::heap::LocalHeap;
use crate::messages::{
    dataspace_from, datatype_from, kind, parse_external, parse_fill, parse_fill_old, parse_filters,
    parse_layout, refuse_virtual, ExternalFile, FillValue, Filter, Layout, LayoutInfo,
};
use crate::ohdr::{message_body, ObjectHeader};
use crate::selection::{check_slices, Slice};
use crate::value::{decode_elements, to_native, Value};

/// Most bytes of one chunk.
const MAX_CHUNK_BYTES: u64 = 1 << 32;
/// Most bytes fetched in one batch of chunk reads.
const BATCH_BYTES: u64 = 64 << 20;
/// Largest single range of contiguous data read at once.
const CONTIGUOUS_WINDOW: u64 = 16 << 20;

struct State {
    dtype: Datatype,
    extent: Extent,
    max: Option<Vec<Option<u64>>>,
    layout: LayoutInfo,
    filters: Vec<Filter>,
    fill: FillValue,
    external: Vec<ExternalFile>,
    /// Every chunk, once listed.
    chunks: OnceLock<Result<Arc<Vec<ChunkInfo>>, H5Error>>,
}

/// A dataset.
#[derive(Clone)]
pub struct Dataset {
    file: H5File,
    header: Arc<ObjectHeader>,
    path: String,
    state: Arc<State>,
}

impl std::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataset")
            .field("path", &self.path)
            .field("dtype", &self.state.dtype)
            .field("extent", &self.state.extent)
            .field("layout", &self.state.layout.layout)
            .finish()
    }
}

impl Dataset {
    pub(crate) fn new(file: H5File, header: Arc<ObjectHeader>, path: String) -> H5Result<Dataset> {
        let f = &file.inner;
        let at = header.addr;
        let msg = |k: u16, what: &str| {
            header.first(k).ok_or_else(|| {
                corrupt(
                    "object header",
                    Some(at),
                    format!("a dataset without a {what} message"),
                )
            })
        };
        let dt_body = message_body(f, msg(kind::DATATYPE, "datatype")?, at)?;
        let dtype = datatype_from(&dt_body, f.sizes, Some(at))?;
        let ds_body = message_body(f, msg(kind::DATASPACE, "dataspace")?, at)?;
        let (extent, max) = dataspace_from(&ds_body, f.sizes, Some(at))?;
        let rank = extent.rank();
        let lay_body = message_body(f, msg(kind::LAYOUT, "data layout")?, at)?;
        let mut c = f.cursor(&lay_body, "data layout message", at);
        let mut layout = parse_layout(&mut c, rank)?;
        let filters = match header.first(kind::FILTERS) {
            Some(m) => {
                let body = message_body(f, m, at)?;
                parse_filters(&mut f.cursor(&body, "filter pipeline message", at))?
            }
            None => Vec::new(),
        };
        let fill = if let Some(m) = header.first(kind::FILL) {
            let body = message_body(f, m, at)?;
            parse_fill(&mut f.cursor(&body, "fill value message", at))?
        } else if let Some(m) = header.first(kind::FILL_OLD) {
            let body = message_body(f, m, at)?;
            parse_fill_old(&mut f.cursor(&body, "fill value message", at))?
        } else {
            FillValue::default()
        };
        let mut external = Vec::new();
        if let Some(m) = header.first(kind::EXTERNAL) {
            let body = message_body(f, m, at)?;
            let (heap, slots) =
                parse_external(&mut f.cursor(&body, "external data files message", at))?;
            let heap = LocalHeap::read(f, heap)?;
            for (name, offset, size) in slots {
                external.push(ExternalFile {
                    name: heap.string_at(name)?,
                    offset,
                    size,
                });
            }
        }
        let elem = dtype.size() as u64;
        // Absolute positions and sizes of contiguous data.
        if let Layout::Contiguous { byte_offset, size } = &mut layout.layout {
            if layout.version < 3 {
                *size = extent.count().saturating_mul(elem);
            }
            *byte_offset = match layout.address {
                Some(a) if external.is_empty() => Some(f.abs(a)?),
                _ => None,
            };
            if byte_offset.is_none() && external.is_empty() {
                // Never written: nothing is allocated.
                *size = 0;
            }
        }
        if let Layout::Chunked { chunk, .. } = &layout.layout {
            let bytes = chunk.iter().try_fold(elem, |a, &d| a.checked_mul(d));
            if bytes.is_none_or(|b| b > MAX_CHUNK_BYTES) || elem == 0 {
                return Err(corrupt(
                    "data layout message",
                    Some(at),
                    format!("chunks of {chunk:?} elements of {elem} bytes"),
                ));
            }
        }
        Ok(Dataset {
            file,
            header,
            path,
            state: Arc::new(State {
                dtype,
                extent,
                max,
                layout,
                filters,
                fill,
                external,
                chunks: OnceLock::new(),
            }),
        })
    }

    fn err(&self, e: H5Error) -> H5Error {
        self.file.err(e, &self.path)
    }

    /// Its object header address (its identity).
    pub fn address(&self) -> u64 {
        self.header.addr
    }

    /// The path it was opened by.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The file it belongs to.
    pub fn file(&self) -> &H5File {
        &self.file
    }

    /// Its modification time (seconds since 1970, UTC), when the file tracks it.
    pub fn modification_time(&self) -> Option<u64> {
        self.header.mtime()
    }

    /// Its element type.
    pub fn dtype(&self) -> &Datatype {
        &self.state.dtype
    }

    /// Its extent.
    pub fn extent(&self) -> &Extent {
        &self.state.extent
    }

    /// Its shape (empty for scalar and null extents).
    pub fn shape(&self) -> &[u64] {
        self.state.extent.dims()
    }

    /// Its maximum shape (`None` per unlimited axis), when the file stores one.
    pub fn maxshape(&self) -> Option<&[Option<u64>]> {
        self.state.max.as_deref()
    }

    /// How its data is stored.
    pub fn layout(&self) -> &Layout {
        &self.state.layout.layout
    }

    /// The chunk shape of a chunked dataset.
    pub fn chunk_shape(&self) -> Option<&[u64]> {
        match &self.state.layout.layout {
            Layout::Chunked { chunk, .. } => Some(chunk),
            _ => None,
        }
    }

    /// Its filter pipeline, in the order applied when writing.
    pub fn filters(&self) -> &[Filter] {
        &self.state.filters
    }

    /// Its fill value.
    pub fn fill_value(&self) -> &FillValue {
        &self.state.fill
    }

    /// The external files holding its data (empty unless the file uses them; reading such
    /// data is refused).
    pub fn external_files(&self) -> &[ExternalFile] {
        &self.state.external
    }

    /// Its attributes, sorted by name.
    pub fn attributes(&self) -> H5Result<Vec<Attribute>> {
        read_attributes(&self.file, &self.header).map_err(|e| self.err(e))
    }

    /// The attribute called `name`, if any.
    pub fn attribute(&self, name: &str) -> H5Result<Option<Attribute>> {
        Ok(self.attributes()?.into_iter().find(|a| a.name() == name))
    }

    /// The number of elements.
    pub fn len(&self) -> u64 {
        self.state.extent.count()
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One element of the fill value in the file's representation (zeros when undefined).
    pub fn fill_bytes(&self) -> Vec<u8> {
        let n = self.state.dtype.size();
        match &self.state.fill.value {
            Some(v) if v.len() == n => v.clone(),
            _ => vec![0; n],
        }
    }

    /// One element of the fill value with its numbers in native byte order.
    pub fn fill_native(&self) -> Vec<u8> {
        let mut v = self.fill_bytes();
        to_native(&self.state.dtype, &mut v);
        v
    }

    fn geometry(&self) -> H5Result<Geometry> {
        let Layout::Chunked { chunk, .. } = &self.state.layout.layout else {
            return Err(invalid("not a chunked dataset"));
        };
        let dims = self.shape().to_vec();
        if dims.len() != chunk.len() {
            return Err(corrupt(
                "data layout message",
                Some(self.address()),
                format!(
                    "chunks of rank {} for a dataset of rank {}",
                    chunk.len(),
                    dims.len()
                ),
            ));
        }
        let max_dims = match &self.state.max {
            Some(m) if m.len() == dims.len() => m.clone(),
            _ => dims.iter().map(|&d| Some(d)).collect(),
        };
        let elem = self.state.dtype.size() as u64;
        Ok(Geometry {
            chunk_bytes: chunk.iter().fold(elem, |a, &d| a.saturating_mul(d)),
            dims,
            max_dims,
            chunk: chunk.clone(),
        })
    }

    /// Every stored chunk of a chunked dataset (chunks never written are absent), sorted by
    /// coordinates. The index is read once and kept.
    pub fn chunks(&self) -> H5Result<Vec<ChunkInfo>> {
        let all = self
            .state
            .chunks
            .get_or_init(|| {
                let geom = self.geometry()?;
                let mut v = lookup(&self.file.inner, &self.state.layout, &geom, None)?;
                v.sort_by(|a, b| a.coords.cmp(&b.coords));
                Ok(Arc::new(v))
            })
            .as_ref()
            .map_err(|e| self.err(e.clone()))?;
        Ok(all.as_ref().clone())
    }

    /// Where the chunk at grid coordinates `coords` is stored (`None`: never written).
    pub fn chunk(&self, coords: &[u64]) -> H5Result<Option<ChunkInfo>> {
        let geom = self.geometry().map_err(|e| self.err(e))?;
        if coords.len() != geom.chunk.len() {
            return Err(self.err(invalid(format!(
                "{} coordinates for rank {}",
                coords.len(),
                geom.chunk.len()
            ))));
        }
        let found = lookup(
            &self.file.inner,
            &self.state.layout,
            &geom,
            Some(&[coords.to_vec()]),
        )
        .map_err(|e| self.err(e))?;
        Ok(found.into_iter().find(|c| c.coords == coords))
    }

    /// The chunk containing the element at `offset` (element coordinates).
    pub fn chunk_at(&self, offset: &[u64]) -> H5Result<Option<ChunkInfo>> {
        let geom = self.geometry().map_err(|e| self.err(e))?;
        if offset.len() != geom.chunk.len() {
            return Err(self.err(invalid(format!(
                "{} coordinates for rank {}",
                offset.len(),
                geom.chunk.len()
            ))));
        }
        let coords: Vec<u64> = offset
            .iter()
            .zip(&geom.chunk)
            .map(|(&o, &c)| o / c)
            .collect();
        self.chunk(&coords)
    }

    /// The stored (still filtered) bytes of a chunk.
    pub fn read_chunk_stored(&self, info: &ChunkInfo) -> H5Result<Vec<u8>> {
        let io = &self.file.inner.io;
        io.read_uncached(info.byte_offset, info.size)
            .map(|b| b.to_vec())
            .map_err(|e| self.err(e))
    }

    /// The stored (still filtered) bytes of many chunks, fetched in batches of requests
    /// (chunks less than [`crate::OpenOptions::read_gap`] apart with one request), in the
    /// order given.
    pub fn read_chunks_stored(&self, chunks: &[ChunkInfo]) -> H5Result<Vec<Bytes>> {
        let io = &self.file.inner.io;
        let gap = self.file.inner.read_gap;
        let mut order: Vec<usize> = (0..chunks.len()).collect();
        order.sort_by_key(|&i| chunks[i].byte_offset);
        let mut windows: Vec<(u64, u64)> = Vec::new();
        let mut assigned = vec![0usize; chunks.len()];
        for i in order {
            let c = &chunks[i];
            let end = c.byte_offset.checked_add(c.size).ok_or_else(|| {
                self.err(corrupt(
                    "chunk index",
                    None,
                    "a chunk past the end of the file",
                ))
            })?;
            match windows.last_mut() {
                Some(w)
                    if c.byte_offset <= w.1.saturating_add(gap)
                        && end.max(w.1) - w.0 <= CONTIGUOUS_WINDOW =>
                {
                    w.1 = w.1.max(end);
                }
                _ => windows.push((c.byte_offset, end)),
            }
            assigned[i] = windows.len() - 1;
        }
        let spans: Vec<(u64, u64)> = windows.iter().map(|&(a, e)| (a, e - a)).collect();
        let parts = io.read_many(&spans).map_err(|e| self.err(e))?;
        Ok(chunks
            .iter()
            .zip(&assigned)
            .map(|(c, &w)| {
                let from = (c.byte_offset - windows[w].0) as usize;
                parts[w].slice(from..from + c.size as usize)
            })
            .collect())
    }

    /// The stored bytes of the chunk `info` (as [`Dataset::read_chunk_stored`] or
    /// [`Dataset::read_chunks_stored`] returned them) decoded through the filter pipeline,
    /// honouring the chunk's filter mask: the whole chunk's elements as stored in the file
    /// (its byte order), edge chunks at full size.
    pub fn decode_stored(&self, info: &ChunkInfo, stored: Vec<u8>) -> H5Result<Vec<u8>> {
        self.check_readable().map_err(|e| self.err(e))?;
        let geom = self.geometry().map_err(|e| self.err(e))?;
        self.decode(&geom, info, stored)
    }

    /// A chunk decoded through the filter pipeline: the whole chunk's elements (edge chunks
    /// included at full size), or `None` when it was never written.
    pub fn read_chunk(&self, coords: &[u64]) -> H5Result<Option<Vec<u8>>> {
        let Some(info) = self.chunk(coords)? else {
            return Ok(None);
        };
        let geom = self.geometry().map_err(|e| self.err(e))?;
        let stored = self.read_chunk_stored(&info)?;
        self.decode(&geom, &info, stored).map(Some)
    }

    /// The filters skipped for the chunk `info` (bit `i`: filter `i` not applied): its own
    /// filter mask, or every filter for an edge chunk of a dataset created not to filter
    /// partial chunks (`H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS`).
    pub fn skipped_filters(&self, info: &ChunkInfo) -> u32 {
        match self.geometry() {
            Ok(geom) => self.mask_of(&geom, info),
            Err(_) => info.filter_mask,
        }
    }

    fn mask_of(&self, geom: &Geometry, info: &ChunkInfo) -> u32 {
        let partial = info
            .offset
            .iter()
            .zip(&geom.chunk)
            .zip(&geom.dims)
            .any(|((&o, &c), &d)| o.saturating_add(c) > d);
        if self.state.layout.dont_filter_partial && partial {
            u32::MAX
        } else {
            info.filter_mask
        }
    }

    fn decode(&self, geom: &Geometry, info: &ChunkInfo, stored: Vec<u8>) -> H5Result<Vec<u8>> {
        let expected = geom.chunk_bytes as usize;
        let mask = self.mask_of(geom, info);
        let mut out = decode_chunk(
            &self.state.filters,
            mask,
            stored,
            expected,
            self.state.dtype.size(),
        )
        .map_err(|e| self.err(e))?;
        if out.len() < expected {
            return Err(self.err(corrupt(
                "chunk",
                Some(info.byte_offset),
                format!("decoded to {} bytes, the chunk has {expected}", out.len()),
            )));
        }
        out.truncate(expected);
        Ok(out)
    }

    /// Check that this dataset's data can be read.
    fn check_readable(&self) -> H5Result<()> {
        if !self.state.external.is_empty() {
            return Err(unsupported(format!(
                "data in {} external file(s) ('{}')",
                self.state.external.len(),
                self.state.external[0].name
            )));
        }
        if let Layout::Virtual = self.state.layout.layout {
            return Err(refuse_virtual());
        }
        if let Layout::Chunked { .. } = self.state.layout.layout {
            if let Some(f) = unsupported_filter(&self.state.filters) {
                return Err(unsupported(format!(
                    "the {} filter (id {}) of its pipeline",
                    if f.name.is_empty() {
                        filter_name(f.id)
                    } else {
                        &f.name
                    },
                    f.id
                )));
            }
        }
        Ok(())
    }

    /// The elements of the hyperslab `slices` (one per axis; none for a scalar), in C order,
    /// as stored (the file's byte order; variable-length elements and region references as
    /// heap IDs).
    pub fn read_raw(&self, slices: &[Slice]) -> H5Result<Vec<u8>> {
        let count = self.selection_count(slices)?;
        let n = count
            .checked_mul(self.state.dtype.size() as u64)
            .filter(|&n| n <= isize::MAX as u64)
            .ok_or_else(|| self.err(too_large(format!("a selection of {count} elements"))))?;
        let mut out = vec![0u8; n as usize];
        self.read_raw_into(slices, &mut out)?;
        Ok(out)
    }

    /// Every element, as [`Dataset::read_raw`] reads them.
    pub fn read_raw_all(&self) -> H5Result<Vec<u8>> {
        let slices = self.full_selection();
        self.read_raw(&slices)
    }

    /// The selection of every element.
    pub fn full_selection(&self) -> Vec<Slice> {
        self.shape().iter().map(|&d| Slice::full(d)).collect()
    }

    fn selection_count(&self, slices: &[Slice]) -> H5Result<u64> {
        if let Extent::Null = self.state.extent {
            return if slices.is_empty() {
                Ok(0)
            } else {
                Err(self.err(invalid("a selection of a null dataspace")))
            };
        }
        check_slices(slices, self.shape()).map_err(|e| self.err(e))?;
        Ok(slices.iter().fold(1u64, |a, s| a.saturating_mul(s.count())))
    }

    /// Read the hyperslab `slices` into `out` (exactly its size in bytes).
    pub fn read_raw_into(&self, slices: &[Slice], out: &mut [u8]) -> H5Result<()> {
        let count = self.selection_count(slices)?;
        let elem = self.state.dtype.size();
        if count.checked_mul(elem as u64) != Some(out.len() as u64) {
            return Err(self.err(invalid(format!(
                "a buffer of {} bytes for {count} elements of {elem} bytes",
                out.len()
            ))));
        }
        if count == 0 {
            return Ok(());
        }
        self.check_readable().map_err(|e| self.err(e))?;
        fill_with(out, &self.fill_bytes());
        let dims = self.shape().to_vec();
        match &self.state.layout.layout {
            Layout::Compact { .. } => {
                let data = self.state.layout.compact.clone().unwrap_or_default();
                self.copy_from_whole(&data, &dims, slices, out)
            }
            Layout::Contiguous { byte_offset, size } => match byte_offset {
                None => Ok(()),
                Some(at) => self.read_contiguous(*at, *size, &dims, slices, out),
            },
            Layout::Chunked { .. } => self.read_chunked(slices, out),
            Layout::Virtual => Err(self.err(refuse_virtual())),
        }
    }

    /// Copy the selection out of the whole dataset's bytes held in memory.
    fn copy_from_whole(
        &self,
        data: &Bytes,
        dims: &[u64],
        slices: &[Slice],
        out: &mut [u8],
    ) -> H5Result<()> {
        let elem = self.state.dtype.size();
        let total = self.state.extent.count().saturating_mul(elem as u64);
        if (data.len() as u64) < total {
            return Err(self.err(corrupt(
                "compact data",
                Some(self.address()),
                format!("{} bytes for {total} bytes of elements", data.len()),
            )));
        }
        let data = &data[..total as usize];
        if dims.is_empty() {
            out.copy_from_slice(&data[..elem]);
            return Ok(());
        }
        let src_shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let dst_shape: Vec<usize> = slices.iter().map(|s| s.count() as usize).collect();
        let axes: Vec<AxisMap> = slices
            .iter()
            .map(|s| AxisMap::new(s.start as usize, s.step as isize, 0, 1, s.count() as usize))
            .collect();
        nd_copy(data, &src_shape, out, &dst_shape, &axes, elem);
        Ok(())
    }

    fn read_contiguous(
        &self,
        at: u64,
        size: u64,
        dims: &[u64],
        slices: &[Slice],
        out: &mut [u8],
    ) -> H5Result<()> {
        let elem = self.state.dtype.size() as u64;
        let total = self.state.extent.count().saturating_mul(elem);
        if size < total || at.checked_add(total).is_none_or(|e| e > self.file.size()) {
            return Err(self.err(corrupt(
                "contiguous data",
                Some(at),
                format!("{total} bytes of elements do not fit its {size} bytes in the file"),
            )));
        }
        // Runs of consecutive elements: (byte in the data, byte in `out`, length).
        let runs = runs(dims, slices, elem);
        // Windows: runs close together read as one range.
        let gap = self.file.inner.read_gap;
        let mut windows: Vec<(u64, u64, usize, usize)> = Vec::new(); // start, end, first run, last run
        for (i, &(src, _, len)) in runs.iter().enumerate() {
            match windows.last_mut() {
                Some(w) if src <= w.1 + gap && src + len - w.0 <= CONTIGUOUS_WINDOW => {
                    w.1 = w.1.max(src + len);
                    w.3 = i;
                }
                _ => windows.push((src, src + len, i, i)),
            }
        }
        let io = &self.file.inner.io;
        let per_batch = 64;
        for batch in windows.chunks(per_batch) {
            let spans: Vec<(u64, u64)> = batch.iter().map(|w| (at + w.0, w.1 - w.0)).collect();
            let parts = io.read_many(&spans).map_err(|e| self.err(e))?;
            for (w, part) in batch.iter().zip(parts) {
                for &(src, dst, len) in &runs[w.2..=w.3] {
                    let s = (src - w.0) as usize;
                    let d = dst as usize;
                    out[d..d + len as usize].copy_from_slice(&part[s..s + len as usize]);
                }
            }
        }
        Ok(())
    }

    fn read_chunked(&self, slices: &[Slice], out: &mut [u8]) -> H5Result<()> {
        let geom = self.geometry().map_err(|e| self.err(e))?;
        let elem = self.state.dtype.size();
        // The chunks each axis touches.
        let per_axis: Vec<Vec<u64>> = slices
            .iter()
            .zip(&geom.chunk)
            .map(|(s, &c)| {
                let mut v: Vec<u64> = Vec::new();
                for k in 0..s.count() {
                    let ci = (s.start + k * s.step) / c;
                    if v.last() != Some(&ci) {
                        v.push(ci);
                    }
                }
                v
            })
            .collect();
        let total = per_axis
            .iter()
            .try_fold(1u64, |a, v| a.checked_mul(v.len() as u64));
        if total.is_none_or(|t| t > 1 << 24) {
            return Err(self.err(too_large("a read touching more than 2^24 chunks")));
        }
        let mut wanted: Vec<Vec<u64>> = vec![Vec::new()];
        for axis in &per_axis {
            let mut next = Vec::with_capacity(wanted.len() * axis.len());
            for w in &wanted {
                for &c in axis {
                    let mut x = w.clone();
                    x.push(c);
                    next.push(x);
                }
            }
            wanted = next;
        }
        let found = match self.state.chunks.get() {
            Some(Ok(all)) => {
                let set: std::collections::HashSet<&Vec<u64>> = wanted.iter().collect();
                all.iter()
                    .filter(|c| set.contains(&c.coords))
                    .cloned()
                    .collect()
            }
            _ => lookup(&self.file.inner, &self.state.layout, &geom, Some(&wanted))
                .map_err(|e| self.err(e))?,
        };
        let mut found: Vec<ChunkInfo> = {
            let mut by: HashMap<Vec<u64>, ChunkInfo> = HashMap::new();
            for c in found {
                by.insert(c.coords.clone(), c);
            }
            by.into_values().collect()
        };
        found.sort_by_key(|c| c.byte_offset);
        let file_size = self.file.size();
        for c in &found {
            if c.byte_offset
                .checked_add(c.size)
                .is_none_or(|e| e > file_size)
                || c.size > MAX_CHUNK_BYTES
            {
                return Err(self.err(corrupt(
                    "chunk index",
                    None,
                    format!(
                        "chunk {:?} of {} bytes at byte {} does not fit the file",
                        c.coords, c.size, c.byte_offset
                    ),
                )));
            }
        }
        let dst_shape: Vec<usize> = slices.iter().map(|s| s.count() as usize).collect();
        let src_shape: Vec<usize> = geom.chunk.iter().map(|&c| c as usize).collect();
        let io = &self.file.inner.io;
        let max_batch = (io.concurrency() * 4).clamp(16, 256);
        // Windows of the file: chunks (sorted by position) less than the read gap apart are
        // fetched with one range. Each window holds the chunks `first..last`.
        let gap = self.file.inner.read_gap;
        let mut windows: Vec<(u64, u64, usize, usize)> = Vec::new();
        for (k, c) in found.iter().enumerate() {
            let end = c.byte_offset + c.size;
            match windows.last_mut() {
                Some(w)
                    if c.byte_offset <= w.1.saturating_add(gap)
                        && end.max(w.1) - w.0 <= CONTIGUOUS_WINDOW =>
                {
                    w.1 = w.1.max(end);
                    w.3 = k + 1;
                }
                _ => windows.push((c.byte_offset, end, k, k + 1)),
            }
        }
        // Batches: consecutive windows, at most `max_batch` requests and about BATCH_BYTES
        // bytes each.
        let mut batches: Vec<(usize, usize)> = Vec::new();
        let mut wi = 0;
        while wi < windows.len() {
            let mut wj = wi;
            let mut bytes = 0u64;
            while wj < windows.len()
                && wj - wi < max_batch
                && (bytes == 0 || bytes + (windows[wj].1 - windows[wj].0) <= BATCH_BYTES)
            {
                bytes += windows[wj].1 - windows[wj].0;
                wj += 1;
            }
            batches.push((wi, wj));
            wi = wj;
        }
        let fetch = |b: (usize, usize)| -> H5Result<Vec<Bytes>> {
            let spans: Vec<(u64, u64)> =
                windows[b.0..b.1].iter().map(|w| (w.0, w.1 - w.0)).collect();
            io.read_many(&spans).map_err(|e| self.err(e))
        };
        // Decode a fetched batch (chunks in parallel): (chunk, elements) in order.
        let decode = |b: (usize, usize), fetched: Vec<Bytes>| -> H5Result<Vec<(usize, Vec<u8>)>> {
            let mut parts = Vec::new();
            for (w, bytes) in windows[b.0..b.1].iter().zip(&fetched) {
                for (k, c) in found.iter().enumerate().take(w.3).skip(w.2) {
                    let from = (c.byte_offset - w.0) as usize;
                    parts.push((k, bytes.slice(from..from + c.size as usize)));
                }
            }
            parts
                .into_par_iter()
                .map(|(k, part)| Ok((k, self.decode(&geom, &found[k], part.to_vec())?)))
                .collect()
        };
        // The next batch is fetched while the current one is decoded.
        let mut pending = match batches.first() {
            Some(&b) => Some(fetch(b)?),
            None => None,
        };
        for (n, &b) in batches.iter().enumerate() {
            let Some(fetched) = pending.take() else { break };
            let next = batches.get(n + 1).copied();
            let (decoded, prefetched) =
                rayon::join(|| decode(b, fetched), || next.map(&fetch).transpose());
            pending = prefetched?;
            for (k, d) in decoded? {
                let c = &found[k];
                let mut axes = Vec::with_capacity(slices.len());
                let mut empty = false;
                for (a, s) in slices.iter().enumerate() {
                    // Selected indices start + n * step in [c0, c1).
                    let c0 = c.offset[a];
                    let c1 = c0.saturating_add(geom.chunk[a]);
                    let first = if c0 > s.start {
                        (c0 - s.start).div_ceil(s.step)
                    } else {
                        0
                    };
                    let count = s.count();
                    if first >= count || s.start + first * s.step >= c1 {
                        empty = true;
                        break;
                    }
                    let last = ((c1 - 1 - s.start) / s.step).min(count - 1);
                    axes.push(AxisMap::new(
                        (s.start + first * s.step - c0) as usize,
                        s.step as isize,
                        first as usize,
                        1,
                        (last - first + 1) as usize,
                    ));
                }
                if !empty {
                    nd_copy(&d, &src_shape, out, &dst_shape, &axes, elem);
                }
            }
        }
        Ok(())
    }

    /// The elements of the hyperslab `slices` with numbers in native byte order (same layout
    /// as [`Dataset::read_raw`]).
    pub fn read_native(&self, slices: &[Slice]) -> H5Result<Vec<u8>> {
        let mut raw = self.read_raw(slices)?;
        to_native(&self.state.dtype, &mut raw);
        Ok(raw)
    }

    /// The elements of the hyperslab `slices` decoded, in C order.
    pub fn read_values(&self, slices: &[Slice]) -> H5Result<Vec<Value>> {
        let count = self.selection_count(slices)? as usize;
        let raw = self.read_raw(slices)?;
        decode_elements(&self.file.inner, &self.state.dtype, &raw, count).map_err(|e| self.err(e))
    }

    /// Every element decoded, in C order.
    pub fn read_values_all(&self) -> H5Result<Vec<Value>> {
        let slices = self.full_selection();
        self.read_values(&slices)
    }
}

/// Fill `out` with copies of `pattern`.
fn fill_with(out: &mut [u8], pattern: &[u8]) {
    if pattern.iter().all(|&b| b == 0) {
        out.fill(0);
        return;
    }
    for chunk in out.chunks_mut(pattern.len().max(1)) {
        let n = chunk.len();
        chunk.copy_from_slice(&pattern[..n]);
    }
}

/// The runs of consecutive bytes a hyperslab selects in a C-ordered array of `dims`: (byte
/// offset in the array, byte offset in the output, length), in increasing order.
fn runs(dims: &[u64], slices: &[Slice], elem: u64) -> Vec<(u64, u64, u64)> {
    let rank = dims.len();
    if rank == 0 {
        return vec![(0, 0, elem)];
    }
    // Axes from the innermost that are selected whole merge into one run.
    let mut inner = rank; // axes inner..rank are whole
    while inner > 0 {
        let s = slices[inner - 1];
        let whole = s.start == 0 && s.step == 1 && s.stop == dims[inner - 1];
        if !whole {
            break;
        }
        inner -= 1;
    }
    let inner_elems: u64 = dims[inner..].iter().product();
    // The run axis: inner - 1 when its step is 1 (its selected indices are consecutive).
    let (run_axis, run_len) = if inner > 0 && slices[inner - 1].step == 1 {
        (inner - 1, slices[inner - 1].count() * inner_elems)
    } else {
        (inner, inner_elems)
    };
    let strides: Vec<u64> = (0..rank)
        .map(|i| dims[i + 1..].iter().product::<u64>())
        .collect();
    let outer: Vec<Slice> = slices[..run_axis].to_vec();
    let run_start: u64 = if run_axis < rank {
        slices[run_axis].start * strides[run_axis]
    } else {
        0
    };
    let mut out = Vec::new();
    let mut idx = vec![0u64; outer.len()];
    let counts: Vec<u64> = outer.iter().map(|s| s.count()).collect();
    let total: u64 = counts.iter().product();
    let mut dst = 0u64;
    for _ in 0..total {
        let src: u64 = idx
            .iter()
            .zip(&outer)
            .enumerate()
            .map(|(i, (&k, s))| (s.start + k * s.step) * strides[i])
            .sum::<u64>()
            + run_start;
        out.push((src * elem, dst * elem, run_len * elem));
        dst += run_len;
        for a in (0..idx.len()).rev() {
            idx[a] += 1;
            if idx[a] < counts[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    out
}
