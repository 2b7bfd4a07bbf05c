//! The numcodecs `lz4` codec (bytes→bytes; Zarr v3 `numcodecs.lz4`): a `u32` little-endian
//! uncompressed size followed by one raw LZ4 block. (Not the LZ4 frame format, and not N5's
//! Java `LZ4Block` stream, which is [`crate::codecs::n5_lz4`].)

use serde_json::{json, Value};

use crate::util::{check_declared, corrupt, obj, unsupported, v2_json, v3_json, Conf};
use crate::{BytesToBytesCodec, CodecResult};

const ID: &str = "lz4";

/// numcodecs `lz4`. `acceleration` is kept for the JSON; the encoder always uses the default
/// (acceleration 1) speed/ratio trade-off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lz4Codec {
    acceleration: i64,
}

impl Lz4Codec {
    /// `lz4` recording `acceleration` (numcodecs default 1) in its JSON.
    pub fn new(acceleration: i64) -> Self {
        Lz4Codec { acceleration }
    }

    /// Parse a numcodecs / v3 configuration (`acceleration`, default 1).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        Ok(Lz4Codec {
            acceleration: c.i64("acceleration")?.unwrap_or(1),
        })
    }
}

/// Encode one raw LZ4 block after a `u32` LE size into `out` (replacing it).
pub(crate) fn compress_block_prefixed(input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
    let n = u32::try_from(input.len()).map_err(|_| unsupported(ID, "input larger than 4 GiB"))?;
    out.clear();
    out.resize(4 + lz4_flex::block::get_maximum_output_size(input.len()), 0);
    out[..4].copy_from_slice(&n.to_le_bytes());
    let written = lz4_flex::block::compress_into(input, &mut out[4..])
        .map_err(|e| corrupt(ID, format!("compression failed: {e}")))?;
    out.truncate(4 + written);
    Ok(())
}

impl BytesToBytesCodec for Lz4Codec {
    fn name(&self) -> &str {
        "numcodecs.lz4"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        compress_block_prefixed(input, out)
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        let head = input
            .get(..4)
            .ok_or_else(|| corrupt(ID, "missing the 4-byte size header"))?;
        let declared = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as u64;
        // An LZ4 sequence expands at most ~255 times.
        let bound = (input.len() as u64).saturating_mul(255) + 64;
        let n = check_declared(ID, declared, decoded_size, bound)?;
        out.clear();
        out.resize(n, 0);
        let got = lz4_flex::block::decompress_into(&input[4..], out)
            .map_err(|e| corrupt(ID, format!("invalid LZ4 block: {e}")))?;
        if got != n {
            return Err(corrupt(
                ID,
                format!("decoded {got} bytes, header declares {n}"),
            ));
        }
        Ok(())
    }

    fn to_v3_json(&self) -> Value {
        v3_json(
            self.name(),
            Some(obj([("acceleration", json!(self.acceleration))])),
        )
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(
            ID,
            obj([("acceleration", json!(self.acceleration))]),
        ))
    }
}
