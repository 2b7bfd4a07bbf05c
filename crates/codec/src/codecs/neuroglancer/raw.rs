//! `neuroglancer_raw`: the precomputed `raw` encoding (little-endian elements, Fortran order
//! per channel, channel slowest, no header; edge chunks truncated).

use serde_json::Value;

use super::{fixed_chunk, gather, scatter, Layout, Order};
use crate::util::{corrupt, v3_json};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const NAME: &str = "neuroglancer_raw";

/// The precomputed `raw` chunk encoding (see the [module](super) documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NeuroglancerRawCodec;

impl NeuroglancerRawCodec {
    /// The codec.
    pub fn new() -> Self {
        NeuroglancerRawCodec
    }
}

impl ArrayToBytesCodec for NeuroglancerRawCodec {
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
        let layout = Layout::new(NAME, repr, Some(extent))?;
        let chunk = fixed_chunk(NAME, &data, &layout)?;
        Ok(gather(chunk, &layout, Order::Planar))
    }

    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        let mut layout = Layout::new(NAME, repr, Some(extent))?;
        let truncated = layout.stored_elements() * layout.elem;
        if bytes.len() != truncated {
            // A writer that stores edge chunks at full size is read too.
            if bytes.len() == layout.full_elements() * layout.elem {
                layout = layout.whole();
            } else {
                return Err(corrupt(
                    NAME,
                    format!(
                        "chunk has {} bytes, but its extent {:?} with {} channel(s) of {}-byte \
                         elements needs {truncated}",
                        bytes.len(),
                        layout.ext,
                        layout.channels,
                        layout.elem
                    ),
                ));
            }
        }
        Ok(ArrayBytes::Fixed(scatter(
            &bytes,
            &layout,
            Order::Planar,
            &repr.fill_value,
        )))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(NAME, None)
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}
