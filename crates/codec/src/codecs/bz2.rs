//! The numcodecs `bz2` codec (bytes→bytes; Zarr v3 `numcodecs.bz2`): a bzip2 stream with
//! `level` 1–9 (the block size in 100 kB). Decoding accepts several concatenated streams, as
//! Python's `bz2.decompress` does; N5's `bzip2` compression uses the same framing.

use bzip2::{Action, Compress, Compression, Decompress, Status};
use serde_json::{json, Value};

use crate::util::{
    check_size, corrupt, grow_stream_output, obj, stalled_stream, start_stream_output, v2_json,
    v3_json, Conf,
};
use crate::{BytesToBytesCodec, CodecResult};

const ID: &str = "bz2";

/// `bz2` with a block-size level 1–9 (numcodecs default 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bz2Codec {
    level: u32,
}

impl Bz2Codec {
    /// `bz2` at `level`, clamped to 1–9.
    pub fn new(level: u32) -> Self {
        Bz2Codec {
            level: level.clamp(1, 9),
        }
    }

    /// Parse a numcodecs / v3 configuration (`level` 1–9, default 1).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        Ok(Bz2Codec {
            // Only the encoder uses the level (the stream says its block size): clamp it.
            level: c.i64("level")?.unwrap_or(1).clamp(1, 9) as u32,
        })
    }

    /// The level, 1–9 (block size in 100 kB).
    pub fn level(&self) -> u32 {
        self.level
    }
}

/// Compress `input` into `out` (replacing it) as one bzip2 stream.
pub(crate) fn compress(input: &[u8], out: &mut Vec<u8>, level: u32) -> CodecResult<()> {
    out.clear();
    out.reserve(input.len() + input.len() / 100 + 600);
    let mut c = Compress::new(Compression::new(level), 30);
    let mut consumed = 0usize;
    loop {
        let before = c.total_in();
        let status = c
            .compress_vec(&input[consumed..], out, Action::Finish)
            .map_err(|e| corrupt(ID, format!("compression failed: {e:?}")))?;
        consumed += (c.total_in() - before) as usize;
        if status == Status::StreamEnd {
            return Ok(());
        }
        out.reserve(out.capacity().max(1024));
    }
}

/// Decode all bzip2 streams in `input` into `out` (replacing it).
pub(crate) fn decompress(
    input: &[u8],
    out: &mut Vec<u8>,
    decoded_size: Option<usize>,
) -> CodecResult<()> {
    out.clear();
    let limit = start_stream_output(out, input.len(), decoded_size);
    let mut pos = 0usize;
    while pos < input.len() {
        let mut d = Decompress::new(false);
        if pos > 0 && !input[pos..].starts_with(b"BZh") {
            // Like Python: data after the last complete stream that is not a stream is ignored.
            break;
        }
        loop {
            grow_stream_output(out, limit);
            let (bin, bout) = (d.total_in(), d.total_out());
            let status = d
                .decompress_vec(&input[pos..], out)
                .map_err(|e| corrupt(ID, format!("invalid bzip2 data: {e:?}")))?;
            pos += (d.total_in() - bin) as usize;
            if status == Status::StreamEnd {
                break;
            }
            if d.total_in() == bin && d.total_out() == bout {
                return Err(stalled_stream(ID, out, "truncated stream", limit));
            }
        }
    }
    if input.is_empty() {
        return Err(corrupt(ID, "empty input"));
    }
    check_size(ID, out.len(), decoded_size)
}

impl BytesToBytesCodec for Bz2Codec {
    fn name(&self) -> &str {
        "numcodecs.bz2"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        compress(input, out, self.level)
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        decompress(input, out, decoded_size)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(obj([("level", json!(self.level))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, obj([("level", json!(self.level))])))
    }
}
