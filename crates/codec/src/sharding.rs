//! The `sharding_indexed` array→bytes codec (Zarr v3): a shard is a grid of inner chunks,
//! each encoded with the inner codec chain and stored back to back, plus an index of
//! `(offset, nbytes)` pairs (`u64`, both `2^64-1` for an empty inner chunk) encoded with the
//! index codecs and placed at the start or the end of the shard.
//!
//! Full-shard encode and decode run the inner chunks in parallel (rayon). The array layer
//! drives partial reads itself with [`ShardingCodec::decode_index`] and
//! [`ShardingCodec::decode_inner_chunk`].

use std::sync::Arc;

use neurochunk_dtype::{DataType, Endian};
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::codecs::bytes::BytesCodec;
use crate::codecs::checksum::ChecksumCodec;
use crate::nd::{box_axes, extract_region, gather_variable, SharedBuffer, VariablePart};
use crate::subset::{fill_buffer, fill_for_repr, fill_variable, is_all_fill};
use crate::util::{config_err, corrupt, obj, unsupported, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecChain, CodecResult};

const NAME: &str = "sharding_indexed";
const EMPTY: u64 = u64::MAX;

/// Where the shard index is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexLocation {
    /// The index precedes the inner chunks.
    Start,
    /// The index follows the inner chunks (the default).
    End,
}

/// `sharding_indexed`.
#[derive(Clone, Debug)]
pub struct ShardingCodec {
    inner_chunk_shape: Vec<usize>,
    inner: CodecChain,
    index: CodecChain,
    index_location: IndexLocation,
}

/// C-order coordinates of linear index `i` in a grid of `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut c = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            c[d] = i % shape[d];
            i /= shape[d];
        }
    }
    c
}

/// The origin (element coordinates in the shard) of inner chunk `i` (C order) of a grid of
/// `cps` inner chunks of `inner` elements.
fn inner_origin(i: usize, cps: &[usize], inner: &[usize]) -> Vec<usize> {
    unravel(i, cps)
        .iter()
        .zip(inner)
        .map(|(c, s)| c * s)
        .collect()
}

impl ShardingCodec {
    /// Shards of inner chunks of `inner_chunk_shape`, each encoded with `inner`, and an index
    /// encoded with `index` at `index_location`. Not checked here; [`Self::from_v3_config`]
    /// checks the index chain has a fixed encoded size and the inner shape divides the shard.
    pub fn new(
        inner_chunk_shape: Vec<usize>,
        inner: CodecChain,
        index: CodecChain,
        index_location: IndexLocation,
    ) -> ShardingCodec {
        ShardingCodec {
            inner_chunk_shape,
            inner,
            index,
            index_location,
        }
    }

    /// The default index codecs: `[bytes little, crc32c]`.
    pub fn default_index_chain() -> CodecChain {
        CodecChain::new(
            Vec::new(),
            Arc::new(BytesCodec::new(Some(Endian::Little))),
            vec![Arc::new(ChecksumCodec::crc32c())],
        )
    }

    /// Parse the v3 configuration for shards of `repr` (the outer chunk).
    pub fn from_v3_config(config: &Value, repr: &ChunkRepr) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        let shape_v = c.required("chunk_shape", c.get("chunk_shape"))?;
        let inner_chunk_shape: Vec<usize> = shape_v
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|v| v.as_u64().and_then(|u| usize::try_from(u).ok()))
                    .collect()
            })
            .ok_or_else(|| {
                config_err(
                    NAME,
                    format!("'chunk_shape' must be a list of integers, found {shape_v}"),
                )
            })?;
        let index_location = match c.str("index_location")? {
            None | Some("end") => IndexLocation::End,
            Some("start") => IndexLocation::Start,
            Some(other) => {
                return Err(config_err(
                    NAME,
                    format!("'index_location' must be \"start\" or \"end\", found \"{other}\""),
                ))
            }
        };
        let placeholder = ShardingCodec {
            inner_chunk_shape: inner_chunk_shape.clone(),
            inner: Self::default_index_chain(),
            index: Self::default_index_chain(),
            index_location,
        };
        let cps = placeholder
            .chunks_per_shard(&repr.shape)
            .map_err(|e| config_err(NAME, e.to_string()))?;
        let codecs = c
            .required("codecs", c.get("codecs"))?
            .as_array()
            .ok_or_else(|| config_err(NAME, "'codecs' must be a list"))?;
        let inner = CodecChain::from_v3_json(codecs, &placeholder.inner_repr(repr))?;
        let index = match c.get("index_codecs") {
            None => Self::default_index_chain(),
            Some(v) => {
                let list = v
                    .as_array()
                    .ok_or_else(|| config_err(NAME, "'index_codecs' must be a list"))?;
                CodecChain::from_v3_json(list, &index_repr(&cps))?
            }
        };
        let codec = ShardingCodec {
            inner,
            index,
            ..placeholder
        };
        if codec.index.fixed_encoded_size(&index_repr(&cps)).is_none() {
            return Err(config_err(
                NAME,
                "'index_codecs' must produce a fixed-size encoding (e.g. bytes + crc32c)",
            ));
        }
        Ok(codec)
    }

    /// Shape of the inner chunks, in elements.
    pub fn inner_chunk_shape(&self) -> &[usize] {
        &self.inner_chunk_shape
    }

    /// The codec chain of each inner chunk.
    pub fn inner_chain(&self) -> &CodecChain {
        &self.inner
    }

    /// The codec chain of the shard index (`[bytes little, crc32c]` by default).
    pub fn index_chain(&self) -> &CodecChain {
        &self.index
    }

    /// Where the index is stored in the shard.
    pub fn index_location(&self) -> IndexLocation {
        self.index_location
    }

    /// Inner chunks per shard along each dimension; errors if the inner chunk shape does not
    /// divide the shard shape.
    pub fn chunks_per_shard(&self, shard_shape: &[usize]) -> CodecResult<Vec<usize>> {
        if shard_shape.len() != self.inner_chunk_shape.len() {
            return Err(unsupported(
                NAME,
                format!("inner chunk shape {:?} has a different rank than the shard shape {shard_shape:?}", self.inner_chunk_shape),
            ));
        }
        shard_shape
            .iter()
            .zip(&self.inner_chunk_shape)
            .map(|(&s, &i)| {
                if i == 0 || s % i != 0 {
                    Err(unsupported(
                        NAME,
                        format!("inner chunk shape {:?} does not divide the shard shape {shard_shape:?}", self.inner_chunk_shape),
                    ))
                } else {
                    Ok(s / i)
                }
            })
            .collect()
    }

    /// The representation of one inner chunk of a shard of `shard_repr`.
    pub fn inner_repr(&self, shard_repr: &ChunkRepr) -> ChunkRepr {
        ChunkRepr {
            shape: self.inner_chunk_shape.clone(),
            data_type: shard_repr.data_type.clone(),
            fill_value: shard_repr.fill_value.clone(),
        }
    }

    /// The origin (element coordinates in the shard) of inner chunk `i` (C order).
    pub fn inner_chunk_origin(&self, i: usize, shard_shape: &[usize]) -> CodecResult<Vec<usize>> {
        let cps = self.chunks_per_shard(shard_shape)?;
        Ok(inner_origin(i, &cps, &self.inner_chunk_shape))
    }

    /// Size in bytes of the encoded index, from the index codecs (not assumed).
    pub fn index_encoded_size(&self, shard_shape: &[usize]) -> CodecResult<usize> {
        let cps = self.chunks_per_shard(shard_shape)?;
        self.index
            .fixed_encoded_size(&index_repr(&cps))
            .ok_or_else(|| unsupported(NAME, "index codecs do not have a fixed encoded size"))
    }

    /// The byte range of the index inside a shard of `shard_len` bytes.
    pub fn index_range(
        &self,
        shard_len: usize,
        shard_shape: &[usize],
    ) -> CodecResult<std::ops::Range<usize>> {
        let size = self.index_encoded_size(shard_shape)?;
        if shard_len < size {
            return Err(corrupt(
                NAME,
                format!("shard of {shard_len} bytes is smaller than its {size}-byte index"),
            ));
        }
        Ok(match self.index_location {
            IndexLocation::Start => 0..size,
            IndexLocation::End => shard_len - size..shard_len,
        })
    }

    /// Decode the encoded index bytes: one entry per inner chunk in C order, `None` for an
    /// empty inner chunk.
    pub fn decode_index(
        &self,
        bytes: &[u8],
        shard_shape: &[usize],
    ) -> CodecResult<Vec<Option<(u64, u64)>>> {
        let cps = self.chunks_per_shard(shard_shape)?;
        let n: usize = cps.iter().product();
        let decoded = self
            .index
            .decode_from_slice(bytes, &index_repr(&cps))
            .map_err(|e| corrupt(NAME, format!("shard index: {e}")))?;
        let ArrayBytes::Fixed(raw) = decoded else {
            return Err(corrupt(NAME, "shard index decoded to variable-length data"));
        };
        if raw.len() != n * 16 {
            return Err(corrupt(
                NAME,
                format!("shard index has {} bytes, expected {}", raw.len(), n * 16),
            ));
        }
        raw.chunks_exact(16)
            .enumerate()
            .map(|(i, e)| {
                let mut a = [0u8; 8];
                a.copy_from_slice(&e[..8]);
                let off = u64::from_le_bytes(a);
                a.copy_from_slice(&e[8..]);
                let len = u64::from_le_bytes(a);
                match (off, len) {
                    (EMPTY, EMPTY) => Ok(None),
                    (EMPTY, _) | (_, EMPTY) => Err(corrupt(
                        NAME,
                        format!("inner chunk #{i}: half-empty index entry"),
                    )),
                    _ => Ok(Some((off, len))),
                }
            })
            .collect()
    }

    /// Check that every index entry lies inside a shard of `shard_len` bytes; the error
    /// names the inner chunk (C-order linear number).
    pub fn validate_index(index: &[Option<(u64, u64)>], shard_len: u64) -> CodecResult<()> {
        validate(index, shard_len, None)
    }

    /// [`ShardingCodec::validate_index`] naming inner chunks by their grid coordinates.
    pub fn validate_index_for(
        &self,
        index: &[Option<(u64, u64)>],
        shard_len: u64,
        shard_shape: &[usize],
    ) -> CodecResult<()> {
        let cps = self.chunks_per_shard(shard_shape)?;
        validate(index, shard_len, Some(&cps))
    }

    /// Read and validate the index of a complete shard.
    pub fn read_index(
        &self,
        shard: &[u8],
        shard_shape: &[usize],
    ) -> CodecResult<Vec<Option<(u64, u64)>>> {
        let range = self.index_range(shard.len(), shard_shape)?;
        let index = self.decode_index(&shard[range], shard_shape)?;
        self.validate_index_for(&index, shard.len() as u64, shard_shape)?;
        Ok(index)
    }

    /// Encode index entries (C order over the inner-chunk grid).
    pub fn encode_index(
        &self,
        index: &[Option<(u64, u64)>],
        shard_shape: &[usize],
    ) -> CodecResult<Vec<u8>> {
        let cps = self.chunks_per_shard(shard_shape)?;
        let n: usize = cps.iter().product();
        if index.len() != n {
            return Err(unsupported(
                NAME,
                format!("{} index entries for {n} inner chunks", index.len()),
            ));
        }
        let mut raw = Vec::with_capacity(16 * n);
        for e in index {
            let (o, l) = e.unwrap_or((EMPTY, EMPTY));
            raw.extend_from_slice(&o.to_le_bytes());
            raw.extend_from_slice(&l.to_le_bytes());
        }
        self.index.encode(ArrayBytes::Fixed(raw), &index_repr(&cps))
    }

    /// Build a shard from encoded inner chunks (C order, `None` = empty): chunks back to back
    /// in order, index at the start (offsets then include the index size) or the end.
    pub fn assemble_shard(
        &self,
        encoded_inner: Vec<Option<Vec<u8>>>,
        shard_shape: &[usize],
    ) -> CodecResult<Vec<u8>> {
        let index_size = self.index_encoded_size(shard_shape)?;
        let base = match self.index_location {
            IndexLocation::Start => index_size,
            IndexLocation::End => 0,
        };
        let mut offset = base as u64;
        let entries: Vec<Option<(u64, u64)>> = encoded_inner
            .iter()
            .map(|e| {
                e.as_ref().map(|b| {
                    let entry = (offset, b.len() as u64);
                    offset += b.len() as u64;
                    entry
                })
            })
            .collect();
        let index = self.encode_index(&entries, shard_shape)?;
        if index.len() != index_size {
            return Err(unsupported(
                NAME,
                format!(
                    "index codecs produced {} bytes, expected {index_size}",
                    index.len()
                ),
            ));
        }
        let data_len = (offset as usize) - base;
        let mut out = Vec::with_capacity(index_size + data_len);
        if self.index_location == IndexLocation::Start {
            out.extend_from_slice(&index);
        }
        for chunk in encoded_inner.iter().flatten() {
            out.extend_from_slice(chunk);
        }
        if self.index_location == IndexLocation::End {
            out.extend_from_slice(&index);
        }
        Ok(out)
    }

    /// Decode one inner chunk's bytes (as located by the index).
    pub fn decode_inner_chunk(
        &self,
        bytes: &[u8],
        shard_repr: &ChunkRepr,
    ) -> CodecResult<ArrayBytes> {
        self.inner
            .decode_from_slice(bytes, &self.inner_repr(shard_repr))
    }

    /// Encode one inner chunk (all-fill chunks are the caller's business).
    pub fn encode_inner_chunk(
        &self,
        data: ArrayBytes,
        shard_repr: &ChunkRepr,
    ) -> CodecResult<Vec<u8>> {
        self.inner.encode(data, &self.inner_repr(shard_repr))
    }
}

/// The representation of the index: `u64` of shape `chunks_per_shard + [2]`, empty = max.
fn index_repr(cps: &[usize]) -> ChunkRepr {
    let mut shape = cps.to_vec();
    shape.push(2);
    ChunkRepr {
        shape,
        data_type: DataType::UInt64,
        fill_value: EMPTY.to_le_bytes().to_vec(),
    }
}

fn validate(
    index: &[Option<(u64, u64)>],
    shard_len: u64,
    cps: Option<&[usize]>,
) -> CodecResult<()> {
    for (i, e) in index.iter().enumerate() {
        if let Some((o, l)) = *e {
            if o.checked_add(l).is_none_or(|end| end > shard_len) {
                let which = match cps {
                    Some(cps) => format!("{:?}", unravel(i, cps)),
                    None => format!("#{i}"),
                };
                return Err(corrupt(
                    NAME,
                    format!(
                        "inner chunk {which}: byte range {o}..{} points past the end of the shard ({shard_len} bytes)",
                        o as u128 + l as u128
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Merge variable-length inner chunks (C order over `grid`) into one shard buffer.
fn assemble_variable(
    blocks: &[ArrayBytes],
    grid: &[usize],
    block: &[usize],
) -> CodecResult<ArrayBytes> {
    let shard: Vec<usize> = grid.iter().zip(block).map(|(g, b)| g * b).collect();
    let zeros = vec![0; grid.len()];
    let axes: Vec<_> = (0..blocks.len())
        .map(|i| box_axes(&zeros, &inner_origin(i, grid, block), block))
        .collect();
    let parts = blocks
        .iter()
        .zip(&axes)
        .map(|(b, axes)| {
            VariablePart::of(b, block, axes).ok_or_else(|| {
                corrupt(
                    NAME,
                    "inner chunk decoded to fixed-size data for a variable-length type",
                )
            })
        })
        .collect::<CodecResult<Vec<_>>>()?;
    Ok(gather_variable(&shard, &parts))
}

fn check_variable(b: &ArrayBytes, n: usize) -> CodecResult<()> {
    if let ArrayBytes::Variable { data, offsets } = b {
        if offsets.len() != n + 1
            || offsets.windows(2).any(|w| w[0] > w[1])
            || offsets.last().is_some_and(|&l| l > data.len())
        {
            return Err(corrupt(NAME, "inner chunk has inconsistent offsets"));
        }
    }
    Ok(())
}

impl ArrayToBytesCodec for ShardingCodec {
    fn name(&self) -> &str {
        NAME
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        let cps = self.chunks_per_shard(&repr.shape)?;
        let n: usize = cps.iter().product();
        let inner_repr = self.inner_repr(repr);
        let elem = repr.data_type.fixed_size().unwrap_or(0);
        match &data {
            ArrayBytes::Fixed(b) if b.len() != elem * repr.num_elements() => {
                return Err(unsupported(
                    NAME,
                    format!(
                        "shard has {} bytes, expected {}",
                        b.len(),
                        elem * repr.num_elements()
                    ),
                ));
            }
            ArrayBytes::Variable { offsets, .. } if offsets.len() != repr.num_elements() + 1 => {
                return Err(unsupported(
                    NAME,
                    "shard buffer does not match the shard shape",
                ));
            }
            _ => {}
        }
        // Inner chunks equal to the fill value are left out, when the fill value is usable.
        let skip_fill = elem == 0 || repr.fill_value.len() == elem;
        let encoded: Vec<Option<Vec<u8>>> = if n == 1 {
            if skip_fill && is_all_fill(&data, &repr.fill_value) {
                vec![None]
            } else {
                vec![Some(self.inner.encode(data, &inner_repr)?)]
            }
        } else {
            let data = &data;
            (0..n)
                .into_par_iter()
                .map(|i| {
                    let origin = inner_origin(i, &cps, &self.inner_chunk_shape);
                    let chunk =
                        extract_region(data, &repr.shape, &origin, &self.inner_chunk_shape, elem);
                    if skip_fill && is_all_fill(&chunk, &repr.fill_value) {
                        return Ok(None);
                    }
                    self.inner.encode(chunk, &inner_repr).map(Some)
                })
                .collect::<CodecResult<_>>()?
        };
        self.assemble_shard(encoded, &repr.shape)
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let cps = self.chunks_per_shard(&repr.shape)?;
        let n: usize = cps.iter().product();
        let index = self.read_index(&bytes, &repr.shape)?;
        let inner_repr = self.inner_repr(repr);
        let inner_n = inner_repr.num_elements();
        let slice = |e: (u64, u64)| &bytes[e.0 as usize..(e.0 + e.1) as usize];
        if index.iter().all(Option::is_none) {
            return Ok(fill_for_repr(repr));
        }
        if n == 1 {
            if let Some(Some(e)) = index.first() {
                let d = self.inner.decode_from_slice(slice(*e), &inner_repr)?;
                check_variable(&d, inner_n)?;
                return Ok(d);
            }
        }
        match repr.data_type.fixed_size() {
            Some(elem) => {
                let total = repr.num_elements() * elem;
                let fill_zero = repr.fill_value.iter().all(|&b| b == 0);
                let mut out = vec![0u8; total];
                let zeros = vec![0usize; cps.len()];
                let dst = SharedBuffer::new(&mut out);
                let fill_chunk = if fill_zero {
                    None
                } else {
                    match fill_buffer(&repr.fill_value, inner_n) {
                        ArrayBytes::Fixed(f) => Some(f),
                        ArrayBytes::Variable { .. } => None,
                    }
                };
                let identity = self.inner.is_identity_for(&inner_repr);
                index
                    .par_iter()
                    .enumerate()
                    .try_for_each(|(i, e)| -> CodecResult<()> {
                        let chunk;
                        let src: &[u8] = match e {
                            // Stored bytes are the elements: copy straight from the shard.
                            Some(e) if identity => {
                                let raw = slice(*e);
                                if raw.len() != inner_n * elem {
                                    return Err(corrupt(
                                        NAME,
                                        format!(
                                            "inner chunk has {} bytes, expected {}",
                                            raw.len(),
                                            inner_n * elem
                                        ),
                                    ));
                                }
                                raw
                            }
                            Some(e) => {
                                let ArrayBytes::Fixed(c) =
                                    self.inner.decode_from_slice(slice(*e), &inner_repr)?
                                else {
                                    return Err(corrupt(
                                        NAME,
                                        "inner chunk decoded to variable-length data",
                                    ));
                                };
                                if c.len() != inner_n * elem {
                                    return Err(corrupt(
                                        NAME,
                                        format!(
                                            "inner chunk decoded to {} bytes, expected {}",
                                            c.len(),
                                            inner_n * elem
                                        ),
                                    ));
                                }
                                chunk = c;
                                &chunk
                            }
                            None => match &fill_chunk {
                                Some(f) => f,
                                None => return Ok(()),
                            },
                        };
                        let origin = inner_origin(i, &cps, &self.inner_chunk_shape);
                        let axes = box_axes(&zeros, &origin, &self.inner_chunk_shape);
                        // SAFETY: task `i` writes only the box of inner chunk `i` in the shard
                        // (origin `i`'s grid position times the inner chunk shape, which
                        // divides the shard shape), and the inner chunks of a shard tile it
                        // without overlap, so no two tasks write the same bytes. `out` is
                        // borrowed by `dst` until the parallel loop has ended.
                        unsafe {
                            dst.copy(src, &self.inner_chunk_shape, &repr.shape, &axes, elem);
                        }
                        Ok(())
                    })?;
                Ok(ArrayBytes::Fixed(out))
            }
            None => {
                let blocks: Vec<ArrayBytes> = index
                    .par_iter()
                    .map(|e| match e {
                        Some(e) => {
                            let d = self.inner.decode_from_slice(slice(*e), &inner_repr)?;
                            check_variable(&d, inner_n)?;
                            Ok(d)
                        }
                        None => Ok(fill_variable(&repr.fill_value, inner_n)),
                    })
                    .collect::<CodecResult<_>>()?;
                assemble_variable(&blocks, &cps, &self.inner_chunk_shape)
            }
        }
    }

    fn to_v3_json(&self) -> Value {
        let loc = match self.index_location {
            IndexLocation::Start => "start",
            IndexLocation::End => "end",
        };
        v3_json(
            NAME,
            Some(obj([
                ("chunk_shape", json!(self.inner_chunk_shape)),
                ("codecs", Value::Array(self.inner.to_v3_json())),
                ("index_codecs", Value::Array(self.index.to_v3_json())),
                ("index_location", json!(loc)),
            ])),
        )
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}
