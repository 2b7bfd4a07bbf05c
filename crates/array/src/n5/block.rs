//! N5 blocks as a codec ([`N5BlockCodec`]); the compression inside a block is mapped by
//! [`super::compression`].
//!
//! An N5 block (filesystem spec 4.0.0) is an uncompressed big-endian header — `u16 mode`,
//! `u16 ndim`, `ndim × u32 size` (N5 order, fastest-varying dimension first) and, for mode 1
//! (varlength), `u32 num_elements`; mode 2 (object) is `u16 mode`, `u32 num_elements` — then
//! the compressed payload: the block's elements, big-endian, first dimension fastest.
//!
//! The codec is the array→bytes step of an N5 dataset's chain and owns the compression (the
//! header is not compressed, so the compression cannot be a separate bytes→bytes step). It
//! presents the chunk in one of two axis orders ([`N5AxisOrder`]):
//! * `Listed` (N5 Java API, tensorstore): chunk axes in the order `attributes.json` lists them;
//!   the payload is the transpose (column-major) of the C-ordered chunk.
//! * `Reversed` (zarr-python 2's `N5Store`, z5): chunk axes reversed; the payload is the
//!   C-ordered chunk as is.
//!
//! Edge blocks: [`ArrayToBytesCodec::encode_extent`] writes the block truncated to the part
//! inside the array (as the Java reference does); decoding accepts both truncated and
//! full-size (padded) blocks and pads truncated ones with zeros.
//!
//! Data types: fixed-size numbers (mode 0), `string` (DataType::String; mode 1 with
//! NUL-terminated UTF-8 payload whose byte length is `num_elements`) and `object`
//! (DataType::Bytes; mode 2, the block's opaque bytes as element 0 of the chunk).

use std::sync::Arc;

use neurochunk_codec::nd::{extract_region, insert_region};
use neurochunk_codec::subset::{fill_for_repr, permute, permute_variable};
use neurochunk_codec::{
    corrupt, unsupported, ArrayBytes, ArrayToBytesCodec, BytesToBytesCodec, ChunkRepr, CodecResult,
};
use neurochunk_dtype::DataType;
use serde_json::{json, Map, Value};

use super::compression::{
    compression_from_n5_json, compression_to_n5_json, n5_compatible_compression,
};

/// The codec's name (in errors and in its Zarr v3 style JSON).
pub(crate) const NAME: &str = "n5";

/// Block mode 0: header sizes give the element count.
pub const MODE_DEFAULT: u16 = 0;
/// Block mode 1: an element count follows the sizes.
pub const MODE_VARLENGTH: u16 = 1;
/// Block mode 2: opaque bytes, no sizes.
pub const MODE_OBJECT: u16 = 2;

/// Which axis order an N5 dataset is presented in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum N5AxisOrder {
    /// Axes as `attributes.json` lists them (N5 Java API, tensorstore). The default.
    #[default]
    Listed,
    /// Axes reversed (zarr-python 2's `N5Store`, z5).
    Reversed,
}

impl N5AxisOrder {
    /// `"listed"` or `"reversed"`.
    pub fn name(self) -> &'static str {
        match self {
            N5AxisOrder::Listed => "listed",
            N5AxisOrder::Reversed => "reversed",
        }
    }

    /// The order named `listed` or `reversed` (the inverse of `name`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "listed" => Some(N5AxisOrder::Listed),
            "reversed" => Some(N5AxisOrder::Reversed),
            _ => None,
        }
    }

    /// `values` (in N5 order) in this presentation order, or back (the map is its own inverse).
    pub fn apply<T: Clone>(self, values: &[T]) -> Vec<T> {
        match self {
            N5AxisOrder::Listed => values.to_vec(),
            N5AxisOrder::Reversed => values.iter().rev().cloned().collect(),
        }
    }
}

/// A parsed block header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct N5BlockHeader {
    /// 0 default, 1 varlength (element count given), 2 object (no sizes).
    pub mode: u16,
    /// Block size per dimension, N5 order (empty for mode 2).
    pub size: Vec<u32>,
    /// The element count of mode 1 and 2 headers.
    pub num_elements: Option<u32>,
    /// Bytes the header occupies; the (compressed) payload follows.
    pub len: usize,
}

impl N5BlockHeader {
    /// The number of elements the header describes: `num_elements` for modes 1 and 2, else
    /// the product of the sizes.
    pub fn element_count(&self) -> u64 {
        match self.num_elements {
            Some(n) => n as u64,
            None => self.size.iter().map(|&s| s as u64).product(),
        }
    }
}

fn be_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        *b.get(at + 3)?,
    ]))
}

/// Parse the header at the start of a stored block.
pub fn parse_block_header(bytes: &[u8]) -> CodecResult<N5BlockHeader> {
    let truncated = |need: usize| {
        corrupt(
            NAME,
            format!(
                "block is truncated: {} bytes, but its header needs {need}",
                bytes.len()
            ),
        )
    };
    let mode = be_u16(bytes, 0).ok_or_else(|| truncated(4))?;
    match mode {
        MODE_DEFAULT | MODE_VARLENGTH => {
            let ndim = be_u16(bytes, 2).ok_or_else(|| truncated(4))? as usize;
            let len = 4 + 4 * ndim + if mode == MODE_VARLENGTH { 4 } else { 0 };
            if bytes.len() < len {
                return Err(truncated(len));
            }
            let size: Vec<u32> = (0..ndim)
                .map(|d| be_u32(bytes, 4 + 4 * d).unwrap_or(0))
                .collect();
            let num_elements =
                (mode == MODE_VARLENGTH).then(|| be_u32(bytes, 4 + 4 * ndim).unwrap_or(0));
            Ok(N5BlockHeader {
                mode,
                size,
                num_elements,
                len,
            })
        }
        MODE_OBJECT => {
            let n = be_u32(bytes, 2).ok_or_else(|| truncated(6))?;
            Ok(N5BlockHeader {
                mode,
                size: Vec::new(),
                num_elements: Some(n),
                len: 6,
            })
        }
        other => Err(corrupt(
            NAME,
            format!("unknown block mode {other} (0 default, 1 varlength, 2 object)"),
        )),
    }
}

/// Append a block header to `out`.
pub fn write_block_header(out: &mut Vec<u8>, header: &N5BlockHeader) -> CodecResult<()> {
    out.extend_from_slice(&header.mode.to_be_bytes());
    if header.mode == MODE_OBJECT {
        out.extend_from_slice(&header.num_elements.unwrap_or(0).to_be_bytes());
        return Ok(());
    }
    let ndim = u16::try_from(header.size.len())
        .map_err(|_| unsupported(NAME, "more than 65535 dimensions"))?;
    out.extend_from_slice(&ndim.to_be_bytes());
    for s in &header.size {
        out.extend_from_slice(&s.to_be_bytes());
    }
    if header.mode == MODE_VARLENGTH {
        out.extend_from_slice(&header.num_elements.unwrap_or(0).to_be_bytes());
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// The block codec
// ------------------------------------------------------------------------------------------

/// The array→bytes codec of an N5 dataset: block header, big-endian column-major payload,
/// and the dataset's compression.
#[derive(Clone, Debug)]
pub struct N5BlockCodec {
    axis_order: N5AxisOrder,
    compression: Option<Arc<dyn BytesToBytesCodec>>,
    /// The `compression` object as stored (kept verbatim so rewriting metadata loses nothing).
    compression_json: Value,
}

impl N5BlockCodec {
    /// A codec with the given compression (`None` = raw); numcodecs `lz4` becomes the Java
    /// `LZ4Block` stream. Errors when the compression has no N5 form.
    pub fn new(
        axis_order: N5AxisOrder,
        compression: Option<Arc<dyn BytesToBytesCodec>>,
    ) -> CodecResult<Self> {
        let compression = compression.map(n5_compatible_compression).transpose()?;
        let compression_json = compression_to_n5_json(compression.as_deref())?;
        Ok(N5BlockCodec {
            axis_order,
            compression,
            compression_json,
        })
    }

    /// The codec of a dataset whose `compression` object is `json`; `typesize` is the
    /// element size.
    pub fn from_n5_json(
        axis_order: N5AxisOrder,
        json: &Value,
        typesize: usize,
    ) -> CodecResult<Self> {
        Ok(N5BlockCodec {
            axis_order,
            compression: compression_from_n5_json(json, typesize)?,
            compression_json: json.clone(),
        })
    }

    /// The order the dataset's axes are presented in.
    pub fn axis_order(&self) -> N5AxisOrder {
        self.axis_order
    }

    /// The compression (`None` for raw).
    pub fn compression(&self) -> Option<&Arc<dyn BytesToBytesCodec>> {
        self.compression.as_ref()
    }

    /// The `compression` object for `attributes.json`.
    pub fn compression_json(&self) -> &Value {
        &self.compression_json
    }

    fn compress(&self, payload: Vec<u8>, out: &mut Vec<u8>) -> CodecResult<()> {
        match &self.compression {
            None => out.extend_from_slice(&payload),
            Some(c) => {
                let mut body = Vec::new();
                c.encode(&payload, &mut body)?;
                out.extend_from_slice(&body);
            }
        }
        Ok(())
    }

    fn decompress(&self, body: &[u8], expected: usize, what: &str) -> CodecResult<Vec<u8>> {
        let payload = match &self.compression {
            None => body.to_vec(),
            Some(c) => {
                let mut out = Vec::new();
                // The expected size comes from the block header: never preallocate from it
                // beyond what the compressed body could plausibly expand to.
                let hint =
                    (expected <= body.len().saturating_mul(1024).max(1 << 20)).then_some(expected);
                c.decode(body, &mut out, hint)
                    .map_err(|e| corrupt(NAME, format!("payload of {what}: {e}")))?;
                out
            }
        };
        if payload.len() != expected {
            return Err(corrupt(
                NAME,
                format!(
                    "payload holds {} bytes, but {what} needs {expected}",
                    payload.len()
                ),
            ));
        }
        Ok(payload)
    }

    fn encode_impl(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        let rank = repr.shape.len();
        if extent.len() != rank
            || extent
                .iter()
                .zip(&repr.shape)
                .any(|(e, s)| e > s || *e == 0)
        {
            return Err(unsupported(
                NAME,
                format!(
                    "block extent {extent:?} does not fit the block shape {:?}",
                    repr.shape
                ),
            ));
        }
        let size: Vec<u32> = self
            .axis_order
            .apply(extent)
            .iter()
            .map(|&e| u32::try_from(e).map_err(|_| unsupported(NAME, "block larger than 2^32")))
            .collect::<CodecResult<_>>()?;
        let mut out = Vec::new();
        match (&repr.data_type, data) {
            (DataType::Bytes, ArrayBytes::Variable { data, offsets }) => {
                // Object blocks: the opaque bytes are element 0; the others must be empty.
                let first = offsets.get(1).copied().unwrap_or(0);
                if offsets.last().copied().unwrap_or(0) != first {
                    return Err(unsupported(
                        NAME,
                        "an N5 'object' block holds one opaque value (element 0 of the block)",
                    ));
                }
                let payload = data.get(..first).unwrap_or(&[]).to_vec();
                let n = u32::try_from(payload.len())
                    .map_err(|_| unsupported(NAME, "object block larger than 4 GiB"))?;
                write_block_header(
                    &mut out,
                    &N5BlockHeader {
                        mode: MODE_OBJECT,
                        size: Vec::new(),
                        num_elements: Some(n),
                        len: 6,
                    },
                )?;
                self.compress(payload, &mut out)?;
            }
            (DataType::String, data @ ArrayBytes::Variable { .. }) => {
                let sub = self.to_payload_order(data, repr, extent, 1)?;
                let ArrayBytes::Variable { data, offsets } = sub else {
                    return Err(unsupported(NAME, "string block is not variable-length"));
                };
                let mut payload = Vec::with_capacity(data.len() + offsets.len());
                for w in offsets.windows(2) {
                    let s = data.get(w[0]..w[1]).unwrap_or(&[]);
                    if s.contains(&0) {
                        return Err(unsupported(
                            NAME,
                            "N5 strings are NUL-terminated and cannot contain NUL",
                        ));
                    }
                    payload.extend_from_slice(s);
                    payload.push(0);
                }
                let n = u32::try_from(payload.len())
                    .map_err(|_| unsupported(NAME, "string block larger than 4 GiB"))?;
                write_block_header(
                    &mut out,
                    &N5BlockHeader {
                        mode: MODE_VARLENGTH,
                        size,
                        num_elements: Some(n),
                        len: 0,
                    },
                )?;
                self.compress(payload, &mut out)?;
            }
            (dt, data @ ArrayBytes::Fixed(_)) if !dt.is_variable_length() => {
                let elem = element_size(dt)?;
                let ArrayBytes::Fixed(mut payload) =
                    self.to_payload_order(data, repr, extent, elem)?
                else {
                    return Err(unsupported(NAME, "numeric block is not fixed-size"));
                };
                swap_bytes(&mut payload, elem);
                write_block_header(
                    &mut out,
                    &N5BlockHeader {
                        mode: MODE_DEFAULT,
                        size,
                        num_elements: None,
                        len: 0,
                    },
                )?;
                self.compress(payload, &mut out)?;
            }
            (dt, _) => {
                return Err(unsupported(
                    NAME,
                    format!("data type {dt} has no N5 block form"),
                ))
            }
        }
        Ok(out)
    }

    /// Cut the block's in-array part out of a chunk and put it into payload order.
    fn to_payload_order(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
        elem: usize,
    ) -> CodecResult<ArrayBytes> {
        let n: usize = repr.shape.iter().product();
        let ok = match &data {
            ArrayBytes::Fixed(b) => b.len() == n * elem,
            ArrayBytes::Variable { data, offsets } => {
                offsets.len() == n + 1
                    && offsets.windows(2).all(|w| w[0] <= w[1])
                    && offsets.last().is_some_and(|&l| l <= data.len())
            }
        };
        if !ok {
            return Err(unsupported(
                NAME,
                format!(
                    "chunk buffer does not match the block shape {:?}",
                    repr.shape
                ),
            ));
        }
        let sub = if extent == repr.shape.as_slice() {
            data
        } else {
            extract_region(&data, &repr.shape, &vec![0; extent.len()], extent, elem)
        };
        Ok(match self.axis_order {
            N5AxisOrder::Reversed => sub,
            N5AxisOrder::Listed => transpose_reversed(sub, extent, elem),
        })
    }

    fn decode_impl(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: Option<&[usize]>,
    ) -> CodecResult<ArrayBytes> {
        let header = parse_block_header(&bytes)?;
        let body = &bytes[header.len..];
        let rank = repr.shape.len();
        let extent = extent.filter(|e| e.len() == rank);
        if header.mode == MODE_OBJECT {
            if !matches!(repr.data_type, DataType::Bytes) {
                return Err(corrupt(
                    NAME,
                    format!(
                        "object block (mode 2) in a dataset of data type {}",
                        repr.data_type
                    ),
                ));
            }
            let n = header.num_elements.unwrap_or(0) as usize;
            let payload = self.decompress(body, n, &format!("an object block of {n} bytes"))?;
            let count = repr.num_elements();
            let mut offsets = vec![0usize; count + 1];
            for o in offsets.iter_mut().skip(1) {
                *o = payload.len();
            }
            return Ok(ArrayBytes::Variable {
                data: payload,
                offsets,
            });
        }
        if header.size.len() != rank {
            return Err(corrupt(
                NAME,
                format!(
                    "block header has {} dimensions, the dataset has {rank}",
                    header.size.len()
                ),
            ));
        }
        // The block's extent in presentation order, checked against the block size.
        let listed_hdr: Vec<usize> = header.size.iter().map(|&s| s as usize).collect();
        let hdr = self.axis_order.apply(&listed_hdr);
        let fits = hdr.iter().enumerate().all(|(d, &h)| {
            h <= repr.shape[d] && (h == repr.shape[d] || extent.is_none_or(|e| e[d] == h))
        });
        if !fits {
            let listed_block = self.axis_order.apply(&repr.shape);
            let expected = match extent {
                Some(e) if e != repr.shape.as_slice() => format!(
                    "{:?} (truncated) or {listed_block:?} (full)",
                    self.axis_order.apply(e)
                ),
                _ => format!("{listed_block:?}"),
            };
            return Err(corrupt(
                NAME,
                format!(
                    "block header size {listed_hdr:?} disagrees with blockSize {listed_block:?}: expected {expected}"
                ),
            ));
        }
        let count: usize = hdr.iter().product();
        let block = match &repr.data_type {
            DataType::String => {
                if header.mode != MODE_VARLENGTH {
                    return Err(corrupt(
                        NAME,
                        format!(
                            "string block has mode {}, expected 1 (varlength)",
                            header.mode
                        ),
                    ));
                }
                let n = header.num_elements.unwrap_or(0) as usize;
                let payload = self.decompress(body, n, &format!("a string block of {n} bytes"))?;
                split_strings(payload, count)?
            }
            DataType::Bytes => {
                return Err(corrupt(
                    NAME,
                    format!(
                        "block of an 'object' dataset has mode {}, expected 2",
                        header.mode
                    ),
                ))
            }
            dt => {
                let elem = element_size(dt)?;
                // Varlength (mode 1) numeric blocks, as the Java reference writes when a
                // block's element count differs from its size: the payload holds
                // `num_elements` elements; they fill the block from its first element (N5
                // order) and the rest reads as 0. Elements past the block's size are ignored.
                let stored = header.num_elements.map_or(count, |n| n as usize);
                let mut payload = self.decompress(
                    body,
                    stored.checked_mul(elem).ok_or_else(|| {
                        corrupt(NAME, format!("varlength block declares {stored} elements"))
                    })?,
                    &format!(
                        "a block of size {listed_hdr:?} with {stored} elements of {elem} bytes"
                    ),
                )?;
                payload.resize(count * elem, 0);
                swap_bytes(&mut payload, elem);
                ArrayBytes::Fixed(payload)
            }
        };
        let elem = repr.data_type.fixed_size().unwrap_or(1);
        // Payload order → C order of the presentation axes.
        let block = match self.axis_order {
            N5AxisOrder::Reversed => block,
            N5AxisOrder::Listed => transpose_reversed(block, &listed_hdr_rev(&hdr), elem),
        };
        if hdr == repr.shape {
            return Ok(block);
        }
        let mut full = fill_for_repr(repr);
        insert_region(&mut full, &repr.shape, &vec![0; rank], &block, &hdr, elem);
        Ok(full)
    }
}

/// The reversed shape (the payload's C-order shape in the listed view).
fn listed_hdr_rev(hdr: &[usize]) -> Vec<usize> {
    hdr.iter().rev().copied().collect()
}

/// Reverse the axes of a C-ordered block of `shape` (C order ↔ F order).
fn transpose_reversed(data: ArrayBytes, shape: &[usize], elem: usize) -> ArrayBytes {
    if shape.iter().filter(|&&s| s > 1).count() <= 1 {
        return data;
    }
    let order: Vec<usize> = (0..shape.len()).rev().collect();
    match data {
        ArrayBytes::Fixed(src) => {
            let mut dst = vec![0u8; src.len()];
            permute(&src, shape, &order, elem, &mut dst);
            ArrayBytes::Fixed(dst)
        }
        ArrayBytes::Variable { data, offsets } => permute_variable(&data, &offsets, shape, &order),
    }
}

fn element_size(dt: &DataType) -> CodecResult<usize> {
    dt.fixed_size()
        .ok_or_else(|| unsupported(NAME, format!("data type {dt} has no N5 block form")))
}

/// Swap each `elem`-byte element between little- and big-endian.
fn swap_bytes(buf: &mut [u8], elem: usize) {
    match elem {
        2 => buf.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
        4 => buf.chunks_exact_mut(4).for_each(|c| c.reverse()),
        8 => buf.chunks_exact_mut(8).for_each(|c| c.reverse()),
        _ => {}
    }
}

/// Split a NUL-terminated string payload into `count` elements (missing trailing strings are
/// empty, as Java's `String.split` drops them).
fn split_strings(payload: Vec<u8>, count: usize) -> CodecResult<ArrayBytes> {
    let mut data = Vec::with_capacity(payload.len());
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0);
    let body = payload.strip_suffix(&[0]).unwrap_or(&payload);
    if !body.is_empty() || payload.len() > body.len() {
        for s in body.split(|&b| b == 0) {
            if std::str::from_utf8(s).is_err() {
                return Err(corrupt(NAME, "string block holds invalid UTF-8"));
            }
            data.extend_from_slice(s);
            offsets.push(data.len());
        }
    }
    if offsets.len() > count + 1 {
        return Err(corrupt(
            NAME,
            format!(
                "string block holds {} strings, but its size holds {count}",
                offsets.len() - 1
            ),
        ));
    }
    offsets.resize(count + 1, data.len());
    Ok(ArrayBytes::Variable { data, offsets })
}

impl ArrayToBytesCodec for N5BlockCodec {
    fn name(&self) -> &str {
        NAME
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        self.encode_impl(data, repr, &repr.shape)
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.decode_impl(bytes, repr, None)
    }

    fn encode_extent(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        self.encode_impl(data, repr, extent)
    }

    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        self.decode_impl(bytes, repr, Some(extent))
    }

    fn to_v3_json(&self) -> Value {
        let mut config = Map::new();
        config.insert("axis_order".into(), json!(self.axis_order.name()));
        config.insert("compression".into(), self.compression_json.clone());
        json!({"name": NAME, "configuration": config})
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neurochunk_codec::{Lz4Codec, N5Lz4Codec};

    fn u16_repr(shape: &[usize]) -> ChunkRepr {
        ChunkRepr {
            shape: shape.to_vec(),
            data_type: DataType::UInt16,
            fill_value: vec![0, 0],
        }
    }

    fn le(values: &[u16]) -> ArrayBytes {
        ArrayBytes::Fixed(values.iter().flat_map(|v| v.to_le_bytes()).collect())
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn raw(order: N5AxisOrder) -> N5BlockCodec {
        N5BlockCodec::new(order, None).unwrap()
    }

    #[test]
    fn varlength_numeric_blocks_fill_from_the_first_element_like_java() {
        // Reversed view of a 3×2 (N5 order) uint16 block: C order is the payload order.
        let codec = raw(N5AxisOrder::Reversed);
        let repr = u16_repr(&[2, 3]);
        let header = "0001 0002 00000003 00000002";
        // As many elements as the block holds: the same as mode 0.
        let full = hex(&format!("{header} 00000006 0001 0002 0003 0004 0005 0006"));
        assert_eq!(codec.decode(full, &repr).unwrap(), le(&[1, 2, 3, 4, 5, 6]));
        // Fewer: they fill the block from its first element, the rest reads as 0.
        let fewer = hex(&format!("{header} 00000004 0001 0002 0003 0004"));
        assert_eq!(codec.decode(fewer, &repr).unwrap(), le(&[1, 2, 3, 4, 0, 0]));
        // More: the elements past the block's size are ignored.
        let more = hex(&format!(
            "{header} 00000007 0001 0002 0003 0004 0005 0006 0007"
        ));
        assert_eq!(codec.decode(more, &repr).unwrap(), le(&[1, 2, 3, 4, 5, 6]));
        // A count the payload does not hold is corrupt, not a huge allocation.
        let lying = hex(&format!("{header} ffffffff 0001"));
        let err = codec.decode(lying, &repr).unwrap_err();
        assert!(err.to_string().contains("payload holds 2 bytes"), "{err}");
    }

    #[test]
    fn readme_block_n5_03() {
        // 1×2×3 (N5 order) block of 1..6, raw. Listed view: chunk shape [1, 2, 3] in C order,
        // whose element (0, j, k) is payload element j + 2k.
        let codec = raw(N5AxisOrder::Listed);
        let repr = u16_repr(&[1, 2, 3]);
        let expected = hex("0000 0003 00000001 00000002 00000003 0001 0002 0003 0004 0005 0006");
        // C order over [1,2,3]: (0,0,0)=1 (0,0,1)=3 (0,0,2)=5 (0,1,0)=2 (0,1,1)=4 (0,1,2)=6.
        let data = le(&[1, 3, 5, 2, 4, 6]);
        assert_eq!(codec.encode(data.clone(), &repr).unwrap(), expected);
        assert_eq!(codec.decode(expected.clone(), &repr).unwrap(), data);
        // Reversed view: chunk shape [3, 2, 1] in C order is the payload order.
        let codec = raw(N5AxisOrder::Reversed);
        let repr = u16_repr(&[3, 2, 1]);
        let data = le(&[1, 2, 3, 4, 5, 6]);
        assert_eq!(codec.encode(data.clone(), &repr).unwrap(), expected);
        assert_eq!(codec.decode(expected, &repr).unwrap(), data);
    }

    #[test]
    fn padded_and_truncated_edge_blocks_n5_01_n5_02() {
        // Zarr view [[1,2,3],[4,5,6]] chunks (2,2) = N5 dims [3,2] blockSize [2,2]; reversed view.
        let codec = raw(N5AxisOrder::Reversed);
        let repr = u16_repr(&[2, 2]);
        let block00 = hex("0000 0002 00000002 00000002 0001 0002 0004 0005");
        assert_eq!(codec.encode(le(&[1, 2, 4, 5]), &repr).unwrap(), block00);
        let padded = hex("0000 0002 00000002 00000002 0003 0000 0006 0000");
        let truncated = hex("0000 0002 00000001 00000002 0003 0006");
        // The edge block (zarr chunk (0,1)) has extent [2, 1].
        assert_eq!(
            codec
                .encode_extent(le(&[3, 0, 6, 0]), &repr, &[2, 1])
                .unwrap(),
            truncated
        );
        for stored in [padded, truncated] {
            assert_eq!(
                codec.decode_extent(stored, &repr, &[2, 1]).unwrap(),
                le(&[3, 0, 6, 0])
            );
        }
    }

    #[test]
    fn listed_edge_block_transposes_the_sub_block() {
        // Listed view, block shape [3, 2], extent [2, 2]: C-order chunk rows (a,b),(c,d),(pad).
        let codec = raw(N5AxisOrder::Listed);
        let repr = u16_repr(&[3, 2]);
        let chunk = le(&[1, 2, 3, 4, 0, 0]);
        let encoded = codec.encode_extent(chunk.clone(), &repr, &[2, 2]).unwrap();
        // Header sizes [2, 2]; payload F order of [[1,2],[3,4]] = 1,3,2,4.
        assert_eq!(
            encoded,
            hex("0000 0002 00000002 00000002 0001 0003 0002 0004")
        );
        assert_eq!(codec.decode_extent(encoded, &repr, &[2, 2]).unwrap(), chunk);
    }

    #[test]
    fn header_sizes_that_disagree_with_the_block_size_are_refused() {
        let codec = raw(N5AxisOrder::Listed);
        let repr = u16_repr(&[2, 2]);
        let too_big = hex("0000 0002 00000003 00000002 0001 0002 0003 0004 0005 0006");
        let err = codec.decode(too_big, &repr).unwrap_err().to_string();
        assert!(err.contains("disagrees with blockSize [2, 2]"), "{err}");
        // An interior block may not be truncated.
        let small = hex("0000 0002 00000001 00000002 0001 0002");
        let err = codec
            .decode_extent(small, &repr, &[2, 2])
            .unwrap_err()
            .to_string();
        assert!(err.contains("disagrees"), "{err}");
        let wrong_rank = hex("0000 0001 00000004 0001 0002 0003 0004");
        let err = codec.decode(wrong_rank, &repr).unwrap_err().to_string();
        assert!(err.contains("1 dimensions, the dataset has 2"), "{err}");
    }

    #[test]
    fn short_payload_and_truncated_header_are_errors() {
        let codec = raw(N5AxisOrder::Listed);
        let repr = u16_repr(&[2, 2]);
        let short = hex("0000 0002 00000002 00000002 0001 0002 0003");
        let err = codec.decode(short, &repr).unwrap_err().to_string();
        assert!(err.contains("payload holds 6 bytes"), "{err}");
        for cut in [0, 1, 3, 7, 11] {
            let full = hex("0000 0002 00000002 00000002");
            let err = codec.decode(full[..cut].to_vec(), &repr).unwrap_err();
            assert!(err.to_string().contains("truncated"), "{err}");
        }
        let err = codec.decode(hex("0007 0000"), &repr).unwrap_err();
        assert!(err.to_string().contains("unknown block mode 7"), "{err}");
    }

    fn readme_payload_decoded(codec: &N5BlockCodec, body: &[u8]) -> ArrayBytes {
        let mut block = hex("0000 0003 00000001 00000002 00000003");
        block.extend_from_slice(body);
        codec.decode(block, &u16_repr(&[3, 2, 1])).unwrap()
    }

    fn with_compression(json: Value) -> N5BlockCodec {
        N5BlockCodec::from_n5_json(N5AxisOrder::Reversed, &json, 2).unwrap()
    }

    #[test]
    fn compressed_payloads_n5_04_to_n5_10() {
        let expected = le(&[1, 2, 3, 4, 5, 6]);
        let cases: Vec<(Value, Vec<u8>)> = vec![
            // N5-04 gzip, zarr-python 2 header (MTIME, OS ff) and Java's (MTIME 0, OS 00).
            (
                json!({"type": "gzip", "level": 6, "useZlib": false}),
                hex("1f8b0800 5d1e7a66 00ff 6360646062606660616065600300 aaea6dbf 0c000000"),
            ),
            (
                json!({"type": "gzip"}),
                hex("1f8b0800 00000000 0000 6360646062606660616065600300 aaea6dbf 0c000000"),
            ),
            // N5-05 zlib.
            (
                json!({"type": "gzip", "level": -1, "useZlib": true}),
                hex("789c 636064606260666061606560 0300 00670016"),
            ),
            // N5-06 bzip2 (libbzip2 stream).
            (
                json!({"type": "bzip2", "blockSize": 9}),
                hex("425a6839 31415926 5359023e 0dd20000 0040007f 00200022 1a635086 00e72866 f8bb9229 c2848011 f06e90"),
            ),
            // N5-06 bzip2 (the N5 README's commons-compress stream).
            (
                json!({"type": "bzip2"}),
                hex("425a6839 31415926 5359023e 0dd20000 0040007f 00200031 0c010d31 a8739433 7c5dc914 e1424008 f83748"),
            ),
            // N5-07 xz.
            (
                json!({"type": "xz", "preset": 6}),
                hex("fd377a58 5a000004 e6d6b446 02002101 16000000 742fe5a3 01000b00 01000200 03000400 05000600 0d0309ca 34ec15a7 0001240c a618d8d8 1fb6f37d 01000000 0004595a"),
            ),
            // N5-08 lz4 (Java LZ4Block, RAW method) with its end marker.
            (
                json!({"type": "lz4", "blockSize": 65536}),
                hex("4c5a34426c6f636b 16 0c000000 0c000000 90258b06 000100020003000400050006 4c5a34426c6f636b 16 00000000 00000000 00000000"),
            ),
            // zarr-python 2's lz4 (numcodecs framing under type lz4).
            (
                json!({"acceleration": 1, "id": "lz4", "type": "lz4"}),
                hex("0c000000 c0 000100020003000400050006"),
            ),
            // N5-09 blosc (memcpy'd, typesize 2).
            (
                json!({"blocksize": 0, "clevel": 5, "cname": "lz4", "shuffle": 1, "type": "blosc"}),
                hex("02013302 0c000000 0c000000 1c000000 000100020003000400050006"),
            ),
            // N5-10 zstd with zarr-python 2's stray keys.
            (
                json!({"checksum": false, "id": "zstd", "level": 3, "type": "zstd"}),
                hex("28b52ffd 20 0c 61 0000 000100020003000400050006"),
            ),
        ];
        for (json, body) in cases {
            let codec = with_compression(json.clone());
            assert_eq!(readme_payload_decoded(&codec, &body), expected, "{json}");
            // And our own encoding of each decodes back.
            let repr = u16_repr(&[3, 2, 1]);
            let encoded = codec.encode(expected.clone(), &repr).unwrap();
            assert_eq!(
                &encoded[..16],
                &hex("0000 0003 00000001 00000002 00000003")[..]
            );
            assert_eq!(codec.decode(encoded, &repr).unwrap(), expected, "{json}");
        }
    }

    #[test]
    fn java_lz4_block_bytes_n5_08() {
        let codec = N5BlockCodec::new(N5AxisOrder::Reversed, Some(Arc::new(N5Lz4Codec::default())))
            .unwrap();
        let repr = u16_repr(&[3, 2, 1]);
        let encoded = codec.encode(le(&[1, 2, 3, 4, 5, 6]), &repr).unwrap();
        let mut expected = hex("0000 0003 00000001 00000002 00000003");
        expected.extend(hex(
            "4c5a34426c6f636b 16 0c000000 0c000000 90258b06 000100020003000400050006 4c5a34426c6f636b 16 00000000 00000000 00000000",
        ));
        assert_eq!(encoded, expected);
        assert_eq!(
            codec.compression_json(),
            &json!({"type": "lz4", "blockSize": 65536})
        );
        // A corrupted checksum is caught.
        let mut bad = expected.clone();
        bad[16 + 17] ^= 1;
        let err = codec.decode(bad, &repr).unwrap_err().to_string();
        assert!(err.contains("checksum"), "{err}");
    }

    #[test]
    fn mode_1_and_mode_2_n5_11() {
        // string dataset, block ["a", "bc"], size [2].
        let codec = raw(N5AxisOrder::Listed);
        let repr = ChunkRepr {
            shape: vec![2],
            data_type: DataType::String,
            fill_value: Vec::new(),
        };
        let stored = hex("0001 0001 00000002 00000005 61 00 62 63 00");
        let header = parse_block_header(&stored).unwrap();
        assert_eq!(
            header,
            N5BlockHeader {
                mode: 1,
                size: vec![2],
                num_elements: Some(5),
                len: 12
            }
        );
        let strings = ArrayBytes::Variable {
            data: b"abc".to_vec(),
            offsets: vec![0, 1, 3],
        };
        assert_eq!(codec.decode(stored.clone(), &repr).unwrap(), strings);
        assert_eq!(codec.encode(strings, &repr).unwrap(), stored);
        // object dataset, 3 opaque bytes.
        let repr = ChunkRepr {
            shape: vec![1],
            data_type: DataType::Bytes,
            fill_value: Vec::new(),
        };
        let stored = hex("0002 00000003 aabbcc");
        let header = parse_block_header(&stored).unwrap();
        assert_eq!(
            (header.mode, header.num_elements, header.len),
            (2, Some(3), 6)
        );
        let object = ArrayBytes::Variable {
            data: vec![0xaa, 0xbb, 0xcc],
            offsets: vec![0, 3],
        };
        assert_eq!(codec.decode(stored.clone(), &repr).unwrap(), object);
        assert_eq!(codec.encode(object, &repr).unwrap(), stored);
        // A mode 2 block in a numeric dataset is an error.
        let err = codec
            .decode(stored, &u16_repr(&[1]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("object block"), "{err}");
    }

    #[test]
    fn compression_json_round_trips_and_unknown_types_are_named() {
        for json in [
            json!({"type": "raw"}),
            json!({"type": "gzip", "level": 6, "useZlib": false}),
            json!({"type": "gzip", "level": 1, "useZlib": true}),
            json!({"type": "bzip2", "blockSize": 9}),
            json!({"type": "xz", "preset": 6}),
            json!({"type": "lz4", "blockSize": 65536}),
            json!({"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
            json!({"type": "zstd", "level": 3}),
        ] {
            let codec = compression_from_n5_json(&json, 2).unwrap();
            assert_eq!(
                compression_to_n5_json(codec.as_deref()).unwrap(),
                json,
                "{json}"
            );
        }
        let err = compression_from_n5_json(&json!({"type": "snappy9"}), 1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown compression type 'snappy9'"), "{err}");
        // numcodecs lz4 becomes the Java stream when writing N5.
        let codec =
            N5BlockCodec::new(N5AxisOrder::Listed, Some(Arc::new(Lz4Codec::new(1)))).unwrap();
        assert_eq!(
            codec.compression_json(),
            &json!({"type": "lz4", "blockSize": 65536})
        );
        assert!(N5BlockCodec::new(
            N5AxisOrder::Listed,
            Some(Arc::new(neurochunk_codec::ChecksumCodec::crc32c()))
        )
        .is_err());
    }

    #[test]
    fn three_d_listed_round_trip_matches_a_naive_transpose() {
        let codec = raw(N5AxisOrder::Listed);
        let shape = [3usize, 4, 5];
        let repr = u16_repr(&shape);
        let values: Vec<u16> = (0..60).collect();
        let encoded = codec.encode(le(&values), &repr).unwrap();
        let payload: Vec<u16> = encoded[16..]
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        // Payload element (i0 + 3*(i1 + 4*i2)) is C element (i0*20 + i1*5 + i2).
        for i2 in 0..5 {
            for i1 in 0..4 {
                for i0 in 0..3 {
                    assert_eq!(
                        payload[i0 + 3 * (i1 + 4 * i2)],
                        values[i0 * 20 + i1 * 5 + i2]
                    );
                }
            }
        }
        assert_eq!(codec.decode(encoded, &repr).unwrap(), le(&values));
    }
}
