//! The chunk encodings of Neuroglancer's *precomputed* volumes, as array→bytes codecs of
//! 4-d chunks `[x, y, z, channel]` (3-d chunks `[x, y, z]` count as one channel) in C order:
//!
//! * [`NeuroglancerRawCodec`] (`neuroglancer_raw`): little-endian elements in Fortran order per
//!   channel (`x` fastest, channel slowest), no header;
//! * [`CompressedSegmentationCodec`] (`compressed_segmentation`): Neuroglancer's block-wise
//!   lookup-table encoding of uint32 / uint64 label volumes;
//! * [`NeuroglancerJpegCodec`] (`neuroglancer_jpeg`): a 1- or 3-channel uint8 JPEG of width `x`
//!   and height `y·z`;
//! * [`NeuroglancerPngCodec`] (`neuroglancer_png`): a PNG of width `x` and height `y·z` with
//!   1–4 channels of 8 or 16 bits.
//!
//! The formats store chunks at the upper bound of the volume truncated, so each codec encodes
//! the leading `extent` of a chunk ([`crate::ArrayToBytesCodec::encode_extent`]) and decodes into a
//! full chunk whose elements outside the extent are the fill value. They know nothing of the
//! `info` document, chunk keys or sharding (the array layer's precomputed front end).

/// `encode` and `decode` of a whole chunk, as the extent-taking methods with the full shape
/// (expanded inside each codec's `ArrayToBytesCodec` impl).
macro_rules! whole_chunk_by_extent {
    () => {
        fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
            self.encode_extent(data, repr, &repr.shape.clone())
        }

        fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
            self.decode_extent(bytes, repr, &repr.shape.clone())
        }
    };
}

mod cseg;
mod image;
mod raw;

pub use cseg::CompressedSegmentationCodec;
pub use image::{NeuroglancerJpegCodec, NeuroglancerPngCodec};
pub use raw::NeuroglancerRawCodec;

use crate::util::unsupported;
use crate::{ChunkRepr, CodecResult};

/// A chunk's geometry: its full shape `(x, y, z)` and channel count, the extent stored and
/// the element size.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Full chunk shape `x, y, z`.
    pub full: [usize; 3],
    /// Channels.
    pub channels: usize,
    /// The stored (truncated) extent `x, y, z`.
    pub ext: [usize; 3],
    /// Bytes per element.
    pub elem: usize,
}

impl Layout {
    /// The geometry of `repr` stored to `extent` (`None`: the whole chunk).
    pub fn new(codec: &str, repr: &ChunkRepr, extent: Option<&[usize]>) -> CodecResult<Layout> {
        let (full, channels) = match repr.shape.as_slice() {
            &[x, y, z] => ([x, y, z], 1),
            &[x, y, z, c] => ([x, y, z], c),
            other => {
                return Err(unsupported(
                    codec,
                    format!(
                        "encodes chunks of 3 (x, y, z) or 4 (x, y, z, channel) dimensions, not \
                         {} ({other:?})",
                        other.len()
                    ),
                ))
            }
        };
        let elem = repr.data_type.fixed_size().ok_or_else(|| {
            unsupported(
                codec,
                format!("cannot encode variable-length data type {}", repr.data_type),
            )
        })?;
        let mut ext = full;
        if let Some(extent) = extent {
            if extent.len() != repr.shape.len() {
                return Err(unsupported(
                    codec,
                    format!(
                        "extent {extent:?} does not match chunk shape {:?}",
                        repr.shape
                    ),
                ));
            }
            for axis in 0..3 {
                ext[axis] = extent[axis].min(full[axis]);
            }
        }
        Ok(Layout {
            full,
            channels,
            ext,
            elem,
        })
    }

    /// Elements of the stored extent, all channels.
    pub fn stored_elements(&self) -> usize {
        self.ext.iter().product::<usize>() * self.channels
    }

    /// Elements of the full chunk.
    pub fn full_elements(&self) -> usize {
        self.full.iter().product::<usize>() * self.channels
    }

    /// Element index in the C-order chunk of `(x, y, z, c)`.
    #[inline]
    fn chunk_index(&self, x: usize, y: usize, z: usize, c: usize) -> usize {
        ((x * self.full[1] + y) * self.full[2] + z) * self.channels + c
    }

    /// The same geometry with the full chunk as its extent.
    pub fn whole(&self) -> Layout {
        Layout {
            ext: self.full,
            ..*self
        }
    }
}

/// Order of the stored elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    /// Channel slowest, then `z`, `y`, `x` fastest (raw, compressed_segmentation).
    Planar,
    /// `z` slowest, then `y`, `x`, channel fastest (image pixels of width `x`).
    Interleaved,
}

/// Call `f(stored_index, chunk_index)` for every stored element, in stored order.
#[inline]
fn for_each_element(layout: &Layout, order: Order, mut f: impl FnMut(usize, usize)) {
    let [ex, ey, ez] = layout.ext;
    let mut p = 0;
    match order {
        Order::Planar => {
            for c in 0..layout.channels {
                for z in 0..ez {
                    for y in 0..ey {
                        for x in 0..ex {
                            f(p, layout.chunk_index(x, y, z, c));
                            p += 1;
                        }
                    }
                }
            }
        }
        Order::Interleaved => {
            for z in 0..ez {
                for y in 0..ey {
                    for x in 0..ex {
                        for c in 0..layout.channels {
                            f(p, layout.chunk_index(x, y, z, c));
                            p += 1;
                        }
                    }
                }
            }
        }
    }
}

/// The stored elements of `chunk` (a full C-order chunk) in `order`.
pub(crate) fn gather(chunk: &[u8], layout: &Layout, order: Order) -> Vec<u8> {
    let e = layout.elem;
    let mut out = vec![0u8; layout.stored_elements() * e];
    for_each_element(layout, order, |p, m| {
        out[p * e..(p + 1) * e].copy_from_slice(&chunk[m * e..(m + 1) * e]);
    });
    out
}

/// A full C-order chunk from its stored elements `stored` in `order` (which must hold exactly
/// the extent's elements), the rest the fill value.
pub(crate) fn scatter(stored: &[u8], layout: &Layout, order: Order, fill: &[u8]) -> Vec<u8> {
    let e = layout.elem;
    let mut out = full_of_fill(layout, fill);
    for_each_element(layout, order, |p, m| {
        out[m * e..(m + 1) * e].copy_from_slice(&stored[p * e..(p + 1) * e]);
    });
    out
}

/// A full chunk of the fill value (zeros when `fill` is not one element).
pub(crate) fn full_of_fill(layout: &Layout, fill: &[u8]) -> Vec<u8> {
    let n = layout.full_elements();
    if fill.len() != layout.elem || fill.iter().all(|&b| b == 0) {
        return vec![0u8; n * layout.elem];
    }
    let mut out = Vec::with_capacity(n * layout.elem);
    for _ in 0..n {
        out.extend_from_slice(fill);
    }
    out
}

/// The elements of a chunk as [`ArrayBytes::Fixed`](crate::ArrayBytes) bytes of the expected
/// size, or an error naming the codec.
pub(crate) fn fixed_chunk<'a>(
    codec: &str,
    data: &'a crate::ArrayBytes,
    layout: &Layout,
) -> CodecResult<&'a [u8]> {
    match data {
        crate::ArrayBytes::Fixed(bytes) if bytes.len() == layout.full_elements() * layout.elem => {
            Ok(bytes)
        }
        crate::ArrayBytes::Fixed(bytes) => Err(unsupported(
            codec,
            format!(
                "chunk has {} bytes, expected {} for {} elements",
                bytes.len(),
                layout.full_elements() * layout.elem,
                layout.full_elements()
            ),
        )),
        crate::ArrayBytes::Variable { .. } => {
            Err(unsupported(codec, "cannot encode variable-length elements"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use neurochunk_dtype::DataType;

    #[test]
    fn planar_and_interleaved_orders() {
        let repr = ChunkRepr {
            shape: vec![2, 2, 1, 2],
            data_type: DataType::UInt8,
            fill_value: vec![0],
        };
        let layout = Layout::new("t", &repr, None).unwrap();
        // C order [x, y, z, c]: value = 10x + 5y + c
        let chunk: Vec<u8> = (0..2)
            .flat_map(|x| (0..2).flat_map(move |y| (0..2).map(move |c| 10 * x + 5 * y + c)))
            .collect();
        assert_eq!(
            gather(&chunk, &layout, Order::Planar),
            [0, 10, 5, 15, 1, 11, 6, 16]
        );
        assert_eq!(
            gather(&chunk, &layout, Order::Interleaved),
            [0, 1, 10, 11, 5, 6, 15, 16]
        );
        let planar = gather(&chunk, &layout, Order::Planar);
        assert_eq!(scatter(&planar, &layout, Order::Planar, &[0]), chunk);
    }
}
