//! The `zstd` codec (bytes→bytes; Zarr v3 registered extension and numcodecs `zstd`): one
//! Zstandard frame per chunk, with the content size, optionally with a checksum.
//!
//! Compression and decompression contexts are cached per thread. Frames that declare their
//! content size are decoded in one call into an exactly sized buffer; frames without it
//! (streaming writers) are decoded with the streaming decoder.

use std::cell::RefCell;

use serde_json::{json, Value};
use zstd::zstd_safe::{self, CCtx, CParameter, DCtx, InBuffer, OutBuffer, ResetDirective};

use crate::util::{
    check_declared, check_size, corrupt, grow_stream_output, obj, stalled_stream,
    start_stream_output, v2_json, v3_json, Conf,
};
use crate::{BytesToBytesCodec, CodecResult};

const NAME: &str = "zstd";

thread_local! {
    static CCTX: RefCell<Option<CCtx<'static>>> = const { RefCell::new(None) };
    static DCTX: RefCell<Option<DCtx<'static>>> = const { RefCell::new(None) };
}

/// `zstd` with a compression level (0 = library default) and optional content checksum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZstdCodec {
    level: i32,
    checksum: bool,
}

impl ZstdCodec {
    /// `zstd` at `level` (negative: faster; 0: library default), with a content checksum in
    /// each frame when `checksum`.
    pub fn new(level: i32, checksum: bool) -> Self {
        ZstdCodec { level, checksum }
    }

    /// Parse a v3 or numcodecs configuration (`level` default 0, `checksum` default false).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        // Only the encoder uses the level; like zstd itself, take out-of-range values (numcodecs
        // writes e.g. 100) as the nearest valid one rather than refusing to read.
        let level = c.i64("level")?.unwrap_or(0).clamp(-131072, 22) as i32;
        let checksum = c.bool("checksum")?.unwrap_or(false);
        Ok(ZstdCodec { level, checksum })
    }

    /// The compression level.
    pub fn level(&self) -> i32 {
        self.level
    }

    /// Whether frames carry a content checksum.
    pub fn checksum(&self) -> bool {
        self.checksum
    }
}

fn zerr(what: &str, code: usize) -> crate::CodecError {
    corrupt(NAME, format!("{what}: {}", zstd_safe::get_error_name(code)))
}

/// Compress `input` into `out` (replacing it) as one frame with the content size.
pub(crate) fn compress(
    input: &[u8],
    out: &mut Vec<u8>,
    level: i32,
    checksum: bool,
) -> CodecResult<()> {
    out.clear();
    out.reserve(zstd_safe::compress_bound(input.len()));
    CCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                CCtx::try_create()
                    .ok_or_else(|| corrupt(NAME, "cannot create a compression context"))?,
            );
        }
        let Some(cctx) = slot.as_mut() else {
            return Err(corrupt(NAME, "cannot create a compression context"));
        };
        cctx.reset(ResetDirective::SessionAndParameters)
            .map_err(|c| zerr("reset failed", c))?;
        cctx.set_parameter(CParameter::CompressionLevel(level))
            .map_err(|c| zerr("invalid level", c))?;
        cctx.set_parameter(CParameter::ChecksumFlag(checksum))
            .map_err(|c| zerr("invalid parameter", c))?;
        cctx.compress2(out, input)
            .map_err(|c| zerr("compression failed", c))?;
        Ok(())
    })
}

/// Decode all frames of `input` into `out` (replacing it).
pub(crate) fn decompress(
    input: &[u8],
    out: &mut Vec<u8>,
    decoded_size: Option<usize>,
) -> CodecResult<()> {
    out.clear();
    let declared =
        zstd_safe::get_frame_content_size(input).map_err(|_| corrupt(NAME, "not a zstd frame"))?;
    DCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                DCtx::try_create()
                    .ok_or_else(|| corrupt(NAME, "cannot create a decompression context"))?,
            );
        }
        let Some(dctx) = slot.as_mut() else {
            return Err(corrupt(NAME, "cannot create a decompression context"));
        };
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| zerr("reset failed", c))?;
        match declared {
            Some(n) => {
                // One 128 KiB block can come from as little as 4 input bytes.
                let bound = (input.len() as u64 / 4 + 1).saturating_mul(128 * 1024);
                let n = check_declared(NAME, n, decoded_size, bound)?;
                out.reserve_exact(n);
                dctx.decompress(out, input)
                    .map_err(|c| zerr("invalid data", c))?;
                if out.len() != n {
                    return Err(corrupt(
                        NAME,
                        format!("decoded {} bytes, frame declares {n}", out.len()),
                    ));
                }
                Ok(())
            }
            None => stream_decode(dctx, input, out, decoded_size),
        }
    })?;
    check_size(NAME, out.len(), decoded_size)
}

fn stream_decode(
    dctx: &mut DCtx<'static>,
    input: &[u8],
    out: &mut Vec<u8>,
    decoded_size: Option<usize>,
) -> CodecResult<()> {
    let limit = start_stream_output(out, input.len(), decoded_size);
    let mut inbuf = InBuffer::around(input);
    let mut frame_done = false;
    loop {
        grow_stream_output(out, limit);
        let (pos_before, len_before) = (inbuf.pos(), out.len());
        let hint = {
            let len = out.len();
            let mut outbuf = OutBuffer::around_pos(out, len);
            dctx.decompress_stream(&mut outbuf, &mut inbuf)
                .map_err(|c| zerr("invalid data", c))?
        };
        let progressed = inbuf.pos() != pos_before || out.len() != len_before;
        if hint == 0 {
            frame_done = true;
            if inbuf.pos() == input.len() {
                return Ok(());
            }
        } else if !progressed {
            let truncated = if frame_done {
                "truncated trailing frame"
            } else {
                "truncated frame"
            };
            return Err(stalled_stream(NAME, out, truncated, limit));
        }
    }
}

impl BytesToBytesCodec for ZstdCodec {
    fn name(&self) -> &str {
        NAME
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        compress(input, out, self.level, self.checksum)
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
        v3_json(
            NAME,
            Some(obj([
                ("level", json!(self.level)),
                ("checksum", json!(self.checksum)),
            ])),
        )
    }

    fn to_v2_json(&self) -> Option<Value> {
        let mut c = obj([("level", json!(self.level))]);
        if self.checksum {
            c.insert("checksum".into(), json!(true));
        }
        Some(v2_json(NAME, c))
    }
}
