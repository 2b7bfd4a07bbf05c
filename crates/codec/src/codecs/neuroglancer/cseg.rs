//! `compressed_segmentation`: Neuroglancer's encoding of uint32 / uint64 label volumes.
//!
//! Per channel, the (truncated) chunk is cut into blocks of `block_size`; each block stores a
//! lookup table of its distinct values and, per voxel, the index into that table in 0, 1, 2, 4,
//! 8, 16 or 32 bits, packed little-endian into 32-bit words. The data starts with one 32-bit
//! word per channel: the offset (in words, from the start of the data) of the channel's
//! encoding. A channel's encoding starts with one 64-bit header per block (`x` fastest, then
//! `y`, `z`): the lookup table's offset (24 bits) and the bit width (8 bits), then the offset
//! of the encoded values (32 bits), both in words from the start of the channel's encoding.
//! Blocks at the chunk's upper bound are padded with a value of the block.
//!
//! Decoding trusts nothing it reads: every offset and bit width is checked against the data
//! before use, and the output's size comes from the chunk shape alone.

use std::collections::HashMap;

use neurochunk_dtype::DataType;
use serde_json::{json, Value};

use super::{fixed_chunk, full_of_fill, Layout};
use crate::util::{config_err, corrupt, obj, unsupported, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const NAME: &str = "compressed_segmentation";

/// Most voxels a block may hold (the encoder keeps one block in memory).
const MAX_BLOCK_ELEMENTS: usize = 1 << 24;

/// Largest lookup table offset a block header holds (24 bits).
const MAX_TABLE_OFFSET: usize = (1 << 24) - 1;

/// The `compressed_segmentation` encoding with its block size `[x, y, z]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompressedSegmentationCodec {
    block_size: [usize; 3],
}

impl CompressedSegmentationCodec {
    /// The codec with blocks of `block_size` (`[x, y, z]`, each at least 1).
    pub fn new(block_size: [usize; 3]) -> CodecResult<Self> {
        if block_size.contains(&0) || block_size.iter().product::<usize>() > MAX_BLOCK_ELEMENTS {
            return Err(config_err(
                NAME,
                format!(
                    "block_size {block_size:?} must be at least 1 on every axis and hold at \
                     most {MAX_BLOCK_ELEMENTS} voxels"
                ),
            ));
        }
        Ok(CompressedSegmentationCodec { block_size })
    }

    /// The block size `[x, y, z]`.
    pub fn block_size(&self) -> [usize; 3] {
        self.block_size
    }

    /// Parse `{"block_size": [x, y, z]}`.
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        let list = c
            .get("block_size")
            .and_then(Value::as_array)
            .ok_or_else(|| config_err(NAME, "needs 'block_size', a list of 3 integers"))?;
        let sizes: Option<Vec<usize>> = list
            .iter()
            .map(|v| v.as_u64().and_then(|v| usize::try_from(v).ok()))
            .collect();
        match sizes.as_deref() {
            Some(&[x, y, z]) => Self::new([x, y, z]),
            _ => Err(config_err(
                NAME,
                format!("'block_size' must be 3 non-negative integers, found {list:?}"),
            )),
        }
    }

    /// Check that chunks of `repr` can be encoded (uint32 or uint64, 3 or 4 dimensions).
    pub fn check_type(repr: &ChunkRepr) -> CodecResult<()> {
        words_per_value(&repr.data_type)?;
        Layout::new(NAME, repr, None).map(|_| ())
    }
}

fn words_per_value(data_type: &DataType) -> CodecResult<usize> {
    match data_type {
        DataType::UInt32 => Ok(1),
        DataType::UInt64 => Ok(2),
        other => Err(unsupported(
            NAME,
            format!("encodes uint32 and uint64 labels, not {other}"),
        )),
    }
}

/// The bit width for a table of `n` values.
fn bits_for(n: usize) -> u32 {
    match n {
        0 | 1 => 0,
        2 => 1,
        3..=4 => 2,
        5..=16 => 4,
        17..=256 => 8,
        257..=65536 => 16,
        _ => 32,
    }
}

/// Reads one element (`wpv` words) of a little-endian chunk as a `u64`.
#[inline]
fn element(chunk: &[u8], index: usize, wpv: usize) -> u64 {
    if wpv == 1 {
        let b = &chunk[index * 4..index * 4 + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64
    } else {
        let b = &chunk[index * 8..index * 8 + 8];
        u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

impl CompressedSegmentationCodec {
    /// Encode one channel of the chunk into `out` (words), offsets relative to its start.
    fn encode_channel(
        &self,
        chunk: &[u8],
        layout: &Layout,
        channel: usize,
        wpv: usize,
        out: &mut Vec<u32>,
    ) -> CodecResult<()> {
        let base = out.len();
        let [bx, by, bz] = self.block_size;
        let [ex, ey, ez] = layout.ext;
        let grid = [ex.div_ceil(bx), ey.div_ceil(by), ez.div_ceil(bz)];
        let blocks = grid[0] * grid[1] * grid[2];
        out.resize(base + 2 * blocks, 0);
        let block_len = bx * by * bz;
        let mut tables: HashMap<Vec<u64>, usize> = HashMap::new();
        // Per block: its distinct values in order of first appearance, each voxel's position
        // among them (`PADDING` outside the extent), the distinct values sorted (the table)
        // and each first-appearance position's rank in the table. A block holds few labels,
        // so they are found by comparing with the previous voxel's and then a short list;
        // a block with many uses a hash map.
        const PADDING: u32 = u32::MAX;
        const SHORT_LIST: usize = 16;
        let mut distinct: Vec<u64> = Vec::with_capacity(SHORT_LIST);
        let mut many: HashMap<u64, u32> = HashMap::new();
        let mut positions: Vec<u32> = vec![PADDING; block_len];
        let mut values: Vec<u64> = Vec::with_capacity(block_len);
        let mut order: Vec<u32> = Vec::with_capacity(block_len);
        let mut rank: Vec<u32> = vec![0; block_len];
        let mut block = 0usize;
        for gz in 0..grid[2] {
            for gy in 0..grid[1] {
                for gx in 0..grid[0] {
                    distinct.clear();
                    many.clear();
                    let mut last: Option<(u64, u32)> = None;
                    for lz in 0..bz {
                        let z = gz * bz + lz;
                        for ly in 0..by {
                            let y = gy * by + ly;
                            let row = (lz * by + ly) * bx;
                            for lx in 0..bx {
                                let x = gx * bx + lx;
                                if x >= ex || y >= ey || z >= ez {
                                    positions[row + lx] = PADDING;
                                    continue;
                                }
                                let v = element(chunk, layout.chunk_index(x, y, z, channel), wpv);
                                let position = match last {
                                    Some((value, position)) if value == v => position,
                                    _ => {
                                        let position = if many.is_empty() {
                                            match distinct.iter().position(|&d| d == v) {
                                                Some(p) => p as u32,
                                                None => {
                                                    distinct.push(v);
                                                    if distinct.len() > SHORT_LIST {
                                                        many.extend(
                                                            distinct
                                                                .iter()
                                                                .enumerate()
                                                                .map(|(p, &d)| (d, p as u32)),
                                                        );
                                                    }
                                                    (distinct.len() - 1) as u32
                                                }
                                            }
                                        } else {
                                            let next = distinct.len() as u32;
                                            let p = *many.entry(v).or_insert(next);
                                            if p == next {
                                                distinct.push(v);
                                            }
                                            p
                                        };
                                        last = Some((v, position));
                                        position
                                    }
                                };
                                positions[row + lx] = position;
                            }
                        }
                    }
                    order.clear();
                    order.extend(0..distinct.len() as u32);
                    order.sort_unstable_by_key(|&p| distinct[p as usize]);
                    values.clear();
                    values.extend(order.iter().map(|&p| distinct[p as usize]));
                    for (r, &p) in order.iter().enumerate() {
                        rank[p as usize] = r as u32;
                    }
                    let bits = bits_for(values.len());
                    let values_offset = out.len() - base;
                    let words = (block_len * bits as usize).div_ceil(32);
                    let start = out.len();
                    out.resize(start + words, 0);
                    if bits > 0 {
                        for (i, &p) in positions.iter().enumerate() {
                            // Padding takes index 0, a value of the block.
                            let index = if p == PADDING { 0 } else { rank[p as usize] };
                            let bit = i * bits as usize;
                            out[start + bit / 32] |= index << (bit % 32);
                        }
                    }
                    let table_offset = match tables.get(&values) {
                        Some(&offset) => offset,
                        None => {
                            let offset = out.len() - base;
                            for &v in &values {
                                out.push(v as u32);
                                if wpv == 2 {
                                    out.push((v >> 32) as u32);
                                }
                            }
                            tables.insert(values.clone(), offset);
                            offset
                        }
                    };
                    if table_offset > MAX_TABLE_OFFSET || values_offset > u32::MAX as usize {
                        return Err(unsupported(
                            NAME,
                            format!(
                                "the chunk's encoding is too large for the format's 24-bit \
                                 table offsets (block size {:?}); use smaller chunks",
                                self.block_size
                            ),
                        ));
                    }
                    out[base + 2 * block] = table_offset as u32 | bits << 24;
                    out[base + 2 * block + 1] = values_offset as u32;
                    block += 1;
                }
            }
        }
        Ok(())
    }

    fn encode_layout(&self, chunk: &[u8], layout: &Layout, wpv: usize) -> CodecResult<Vec<u8>> {
        let mut words: Vec<u32> = vec![0; layout.channels];
        for channel in 0..layout.channels {
            let offset = u32::try_from(words.len())
                .map_err(|_| unsupported(NAME, "the chunk's encoding exceeds 2^32 words"))?;
            words[channel] = offset;
            self.encode_channel(chunk, layout, channel, wpv, &mut words)?;
        }
        Ok(words.iter().flat_map(|w| w.to_le_bytes()).collect())
    }

    fn decode_layout(
        &self,
        bytes: &[u8],
        layout: &Layout,
        wpv: usize,
        fill: &[u8],
    ) -> CodecResult<Vec<u8>> {
        if bytes.len() % 4 != 0 {
            return Err(corrupt(
                NAME,
                format!(
                    "{} bytes is not a whole number of 32-bit words",
                    bytes.len()
                ),
            ));
        }
        let word = |i: usize| -> Option<u32> {
            let b = bytes.get(i.checked_mul(4)?..i.checked_mul(4)?.checked_add(4)?)?;
            Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let n_words = bytes.len() / 4;
        let mut out = full_of_fill(layout, fill);
        let elem = layout.elem;
        let [bx, by, bz] = self.block_size;
        let [ex, ey, ez] = layout.ext;
        let grid = [ex.div_ceil(bx), ey.div_ceil(by), ez.div_ceil(bz)];
        for channel in 0..layout.channels {
            let base = word(channel).ok_or_else(|| {
                corrupt(
                    NAME,
                    format!(
                        "{n_words} words hold no offset for channel {channel} of {}",
                        layout.channels
                    ),
                )
            })? as usize;
            let mut block = 0usize;
            for gz in 0..grid[2] {
                for gy in 0..grid[1] {
                    for gx in 0..grid[0] {
                        let header = base + 2 * block;
                        let (h0, h1) = match (word(header), word(header + 1)) {
                            (Some(a), Some(b)) => (a, b),
                            _ => {
                                return Err(corrupt(
                                    NAME,
                                    format!(
                                        "channel {channel}: the header of block {block} (word \
                                         {header}) lies past the end of the data ({n_words} words)"
                                    ),
                                ))
                            }
                        };
                        let table = base + (h0 & 0xff_ffff) as usize;
                        let bits = h0 >> 24;
                        if !matches!(bits, 0 | 1 | 2 | 4 | 8 | 16 | 32) {
                            return Err(corrupt(
                                NAME,
                                format!("channel {channel}, block {block}: bit width {bits} is not 0, 1, 2, 4, 8, 16 or 32"),
                            ));
                        }
                        let values = base + h1 as usize;
                        let mask: u64 = (1u64 << bits) - 1;
                        let x_end = ((gx + 1) * bx).min(ex);
                        let y_end = ((gy + 1) * by).min(ey);
                        let z_end = ((gz + 1) * bz).min(ez);
                        for z in gz * bz..z_end {
                            for y in gy * by..y_end {
                                for x in gx * bx..x_end {
                                    let index = if bits == 0 {
                                        0
                                    } else {
                                        let i = (x - gx * bx)
                                            + bx * ((y - gy * by) + by * (z - gz * bz));
                                        let bit = i * bits as usize;
                                        let w = word(values + bit / 32).ok_or_else(|| {
                                            corrupt(NAME, format!("channel {channel}, block {block}: encoded values at word {values} lie past the end of the data ({n_words} words)"))
                                        })?;
                                        ((w as u64 >> (bit % 32)) & mask) as usize
                                    };
                                    let at = table + index * wpv;
                                    let value = match (wpv, word(at), word(at + 1)) {
                                        (1, Some(lo), _) => lo as u64,
                                        (2, Some(lo), Some(hi)) => lo as u64 | (hi as u64) << 32,
                                        _ => {
                                            return Err(corrupt(
                                                NAME,
                                                format!("channel {channel}, block {block}: lookup table entry {index} at word {at} lies past the end of the data ({n_words} words)"),
                                            ))
                                        }
                                    };
                                    let m = layout.chunk_index(x, y, z, channel) * elem;
                                    out[m..m + elem].copy_from_slice(&value.to_le_bytes()[..elem]);
                                }
                            }
                        }
                        block += 1;
                    }
                }
            }
        }
        Ok(out)
    }
}

impl ArrayToBytesCodec for CompressedSegmentationCodec {
    fn name(&self) -> &str {
        NAME
    }

    whole_chunk_by_extent!();

    fn encode_extent(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        let wpv = words_per_value(&repr.data_type)?;
        let layout = Layout::new(NAME, repr, Some(extent))?;
        let chunk = fixed_chunk(NAME, &data, &layout)?;
        self.encode_layout(chunk, &layout, wpv)
    }

    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        let wpv = words_per_value(&repr.data_type)?;
        let layout = Layout::new(NAME, repr, Some(extent))?;
        Ok(ArrayBytes::Fixed(self.decode_layout(
            &bytes,
            &layout,
            wpv,
            &repr.fill_value,
        )?))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(NAME, Some(obj([("block_size", json!(self.block_size))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(shape: &[usize], data_type: DataType) -> ChunkRepr {
        let fill_value = vec![0; data_type.fixed_size().unwrap()];
        ChunkRepr {
            shape: shape.to_vec(),
            data_type,
            fill_value,
        }
    }

    #[test]
    fn bit_widths() {
        assert_eq!(
            [1, 2, 3, 4, 5, 16, 17, 256, 257, 65536, 65537].map(bits_for),
            [0, 1, 2, 2, 4, 4, 8, 8, 16, 16, 32]
        );
    }

    #[test]
    fn single_value_block_layout() {
        // One channel, one 2x2x1 block of the value 7: channel offset, header, no encoded
        // values, a one-entry table.
        let codec = CompressedSegmentationCodec::new([2, 2, 1]).unwrap();
        let r = repr(&[2, 2, 1, 1], DataType::UInt32);
        let data = ArrayBytes::Fixed([7u32; 4].iter().flat_map(|v| v.to_le_bytes()).collect());
        let bytes = codec.encode(data.clone(), &r).unwrap();
        let words: Vec<u32> = bytes
            .chunks(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(words, [1, 2, 2, 7]);
        assert_eq!(codec.decode(bytes, &r).unwrap(), data);
    }

    /// The encoding spelled out: per block, the sorted distinct values and each voxel's
    /// position among them (padding 0), tables shared between blocks with equal ones.
    fn reference_encode(
        data: &[u64],
        shape: [usize; 3],
        ext: [usize; 3],
        b: [usize; 3],
    ) -> Vec<u32> {
        let grid = [0, 1, 2].map(|d| ext[d].div_ceil(b[d]));
        let blocks = grid[0] * grid[1] * grid[2];
        let mut out = vec![1u32];
        out.resize(1 + 2 * blocks, 0);
        let mut tables: HashMap<Vec<u64>, usize> = HashMap::new();
        let mut block = 0;
        for gz in 0..grid[2] {
            for gy in 0..grid[1] {
                for gx in 0..grid[0] {
                    let mut voxels = Vec::new();
                    for i in 0..b[0] * b[1] * b[2] {
                        let (x, y, z) = (
                            gx * b[0] + i % b[0],
                            gy * b[1] + (i / b[0]) % b[1],
                            gz * b[2] + i / (b[0] * b[1]),
                        );
                        voxels.push(
                            (x < ext[0] && y < ext[1] && z < ext[2])
                                .then(|| data[(x * shape[1] + y) * shape[2] + z]),
                        );
                    }
                    let mut values: Vec<u64> = voxels.iter().flatten().copied().collect();
                    values.sort_unstable();
                    values.dedup();
                    let bits = bits_for(values.len());
                    let values_offset = out.len() - 1;
                    let start = out.len();
                    out.resize(start + (voxels.len() * bits as usize).div_ceil(32), 0);
                    if bits > 0 {
                        for (i, v) in voxels.iter().enumerate() {
                            let index = v.map_or(0, |v| values.binary_search(&v).unwrap()) as u32;
                            out[start + i * bits as usize / 32] |=
                                index << (i * bits as usize % 32);
                        }
                    }
                    let table = *tables.entry(values.clone()).or_insert_with(|| {
                        let offset = out.len() - 1;
                        out.extend(values.iter().flat_map(|&v| [v as u32, (v >> 32) as u32]));
                        offset
                    });
                    out[1 + 2 * block] = table as u32 | bits << 24;
                    out[2 + 2 * block] = values_offset as u32;
                    block += 1;
                }
            }
        }
        out
    }

    #[test]
    fn encodes_as_the_reference_for_few_and_many_labels() {
        let codec = CompressedSegmentationCodec::new([8, 4, 4]).unwrap();
        let shape = [24usize, 16, 12];
        let r = repr(&[shape[0], shape[1], shape[2], 1], DataType::UInt64);
        // Few labels per block in one half (cells), a different label at almost every voxel
        // in the other (more than a short list holds, so the hash map is used).
        let mut data = Vec::new();
        for x in 0..shape[0] {
            for y in 0..shape[1] {
                for z in 0..shape[2] {
                    let v = if x < 12 {
                        ((x / 5 + y / 3 + z / 7) as u64 * 0x9E37_79B9_7F4A_7C15) >> 3
                    } else {
                        ((x * 131 + y * 17 + z) as u64 % 97) << 33 | 1
                    };
                    data.push(v);
                }
            }
        }
        for ext in [shape, [21, 13, 11], [3, 16, 1]] {
            let bytes = ArrayBytes::Fixed(data.iter().flat_map(|v| v.to_le_bytes()).collect());
            let encoded = codec
                .encode_extent(bytes, &r, &[ext[0], ext[1], ext[2], 1])
                .unwrap();
            let words: Vec<u32> = encoded
                .chunks(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            assert_eq!(
                words,
                reference_encode(&data, shape, ext, [8, 4, 4]),
                "{ext:?}"
            );
        }
    }

    #[test]
    fn hostile_offsets_are_errors() {
        let codec = CompressedSegmentationCodec::new([2, 2, 1]).unwrap();
        let r = repr(&[2, 2, 1, 1], DataType::UInt64);
        for words in [
            vec![],
            vec![5u32],
            vec![1, 0x0100_0000 | 9, 3],
            vec![1, 0x0300_0000, 3],
            vec![1, 0x0100_0000 | 2, 0xffff_fff0],
            vec![u32::MAX, 0, 0],
        ] {
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            let err = codec.decode(bytes, &r).unwrap_err();
            assert!(err.to_string().contains("compressed_segmentation"), "{err}");
        }
        assert!(codec.decode(vec![1, 2, 3], &r).is_err());
    }
}
