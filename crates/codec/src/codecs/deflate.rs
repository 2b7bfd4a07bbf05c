//! Deflate-based codecs (bytes→bytes): `gzip` (RFC 1952 member; Zarr v3 core and numcodecs)
//! and `zlib` (RFC 1950 stream; numcodecs `zlib`, Zarr v3 `numcodecs.zlib`).
//!
//! Compressor and decompressor states are cached per thread and reset between chunks.
//! Gzip output carries MTIME 0, XFL as Python writes it and OS 255; gzip input may hold
//! several members, each checked against its CRC-32 and length.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use serde_json::{json, Value};

use crate::util::{
    check_size, corrupt, first_output_capacity, grow_stream_output, obj, stalled_stream, v2_json,
    v3_json, Conf, MAX_UNKNOWN_DECODED,
};
use crate::{BytesToBytesCodec, CodecResult};

thread_local! {
    static DEFLATERS: RefCell<Vec<(u32, bool, Compress)>> = const { RefCell::new(Vec::new()) };
    static INFLATERS: RefCell<Vec<(bool, Decompress)>> = const { RefCell::new(Vec::new()) };
}

fn deflate_bound(n: usize) -> usize {
    n + (n >> 12) + (n >> 14) + (n >> 25) + 64
}

/// Deflate `input` (raw, or zlib-wrapped when `zlib_header`), appending to `out`.
fn deflate_append(
    codec: &str,
    input: &[u8],
    out: &mut Vec<u8>,
    level: u32,
    zlib_header: bool,
) -> CodecResult<()> {
    let cached = DEFLATERS.with(|c| {
        let mut c = c.borrow_mut();
        let pos = c
            .iter()
            .position(|(l, h, _)| *l == level && *h == zlib_header);
        pos.map(|p| c.swap_remove(p).2)
    });
    let mut comp = match cached {
        Some(mut c) => {
            c.reset();
            c
        }
        None => Compress::new(Compression::new(level), zlib_header),
    };
    out.reserve(deflate_bound(input.len()));
    let mut consumed = 0usize;
    let result = loop {
        let before_in = comp.total_in();
        let status = comp.compress_vec(&input[consumed..], out, FlushCompress::Finish);
        consumed += (comp.total_in() - before_in) as usize;
        match status {
            Ok(Status::StreamEnd) => break Ok(()),
            Ok(_) => out.reserve(out.capacity().max(1024)),
            Err(e) => break Err(corrupt(codec, format!("compression failed: {e}"))),
        }
    };
    DEFLATERS.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() < 4 {
            c.push((level, zlib_header, comp));
        }
    });
    result
}

/// Inflate one stream starting at `input`, appending to `out` (at most `limit` bytes in
/// total). Returns the number of input bytes consumed.
fn inflate_append(
    codec: &str,
    input: &[u8],
    out: &mut Vec<u8>,
    limit: usize,
    zlib_header: bool,
) -> CodecResult<usize> {
    let cached = INFLATERS.with(|c| {
        let mut c = c.borrow_mut();
        let pos = c.iter().position(|(h, _)| *h == zlib_header);
        pos.map(|p| c.swap_remove(p).1)
    });
    let mut d = match cached {
        Some(mut d) => {
            d.reset(zlib_header);
            d
        }
        None => Decompress::new(zlib_header),
    };
    let mut consumed = 0usize;
    let result = loop {
        grow_stream_output(out, limit);
        let (before_in, before_out) = (d.total_in(), d.total_out());
        let status = d.decompress_vec(&input[consumed..], out, FlushDecompress::None);
        consumed += (d.total_in() - before_in) as usize;
        let progressed = d.total_in() != before_in || d.total_out() != before_out;
        match status {
            Ok(Status::StreamEnd) => break Ok(consumed),
            Ok(_) if !progressed => {
                break Err(stalled_stream(codec, out, "truncated stream", limit))
            }
            Ok(_) => {}
            Err(e) => break Err(corrupt(codec, format!("invalid deflate data: {e}"))),
        }
    };
    INFLATERS.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() < 2 {
            c.push((zlib_header, d));
        }
    });
    result
}

fn parse_level(codec: &str, config: &Value, default: u32) -> CodecResult<u32> {
    let c = Conf::new(codec, config)?;
    // The level only steers the encoder: values zlib would not take are clamped (negative:
    // zlib's default 6, above 9: 9) rather than stopping a read.
    Ok(match c.i64("level")? {
        None => default,
        Some(l) if l < 0 => 6,
        Some(l) => l.min(9) as u32,
    })
}

/// `gzip`: one RFC 1952 member per chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GzipCodec {
    level: u32,
}

impl GzipCodec {
    /// `gzip` at `level` 0–9 (larger values are taken as 9).
    pub fn new(level: u32) -> Self {
        GzipCodec {
            level: level.min(9),
        }
    }

    /// Parse a configuration; `default_level` applies when `level` is absent (zarr-python 3
    /// uses 5, numcodecs 1).
    pub fn from_config(config: &Value, default_level: u32) -> CodecResult<Self> {
        Ok(GzipCodec {
            level: parse_level("gzip", config, default_level)?,
        })
    }

    /// The compression level, 0–9.
    pub fn level(&self) -> u32 {
        self.level
    }
}

/// Skip a NUL-terminated header field.
fn skip_cstr(input: &[u8], pos: usize) -> Option<usize> {
    input
        .get(pos..)?
        .iter()
        .position(|&b| b == 0)
        .map(|i| pos + i + 1)
}

/// Parse a gzip member header at `pos`, returning the offset of the deflate data.
fn gzip_header(input: &[u8], pos: usize) -> CodecResult<usize> {
    let h = input
        .get(pos..pos + 10)
        .ok_or_else(|| corrupt("gzip", "truncated gzip header"))?;
    if h[0] != 0x1f || h[1] != 0x8b {
        return Err(corrupt(
            "gzip",
            format!("bad gzip magic {:02x} {:02x}", h[0], h[1]),
        ));
    }
    if h[2] != 8 {
        return Err(corrupt(
            "gzip",
            format!("unknown compression method {}", h[2]),
        ));
    }
    let flags = h[3];
    if flags & 0xe0 != 0 {
        return Err(corrupt("gzip", "reserved header flags set"));
    }
    let mut p = pos + 10;
    let trunc = || corrupt("gzip", "truncated gzip header");
    if flags & 0x04 != 0 {
        let x = input.get(p..p + 2).ok_or_else(trunc)?;
        p += 2 + u16::from_le_bytes([x[0], x[1]]) as usize;
    }
    if flags & 0x08 != 0 {
        p = skip_cstr(input, p).ok_or_else(trunc)?;
    }
    if flags & 0x10 != 0 {
        p = skip_cstr(input, p).ok_or_else(trunc)?;
    }
    if flags & 0x02 != 0 {
        p += 2;
    }
    if p > input.len() {
        return Err(trunc());
    }
    Ok(p)
}

/// Decode every gzip member in `input` into `out` (replacing it).
pub(crate) fn gunzip(
    input: &[u8],
    out: &mut Vec<u8>,
    decoded_size: Option<usize>,
) -> CodecResult<()> {
    out.clear();
    let limit = decoded_size.unwrap_or(MAX_UNKNOWN_DECODED);
    crate::util::reserve_total(out, first_output_capacity(input.len(), decoded_size));
    let mut pos = 0;
    loop {
        let data = gzip_header(input, pos)?;
        let start = out.len();
        let used = inflate_append("gzip", &input[data..], out, limit, false)?;
        let t = data + used;
        let trailer = input
            .get(t..t + 8)
            .ok_or_else(|| corrupt("gzip", "missing CRC-32 / length trailer"))?;
        let stored_crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let stored_len = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        let member = &out[start..];
        let crc = crc32fast::hash(member);
        if crc != stored_crc {
            return Err(corrupt(
                "gzip",
                format!("CRC-32 mismatch: stored {stored_crc:#010x}, computed {crc:#010x}"),
            ));
        }
        if member.len() as u32 != stored_len {
            return Err(corrupt(
                "gzip",
                format!(
                    "length mismatch: stored {stored_len}, decoded {}",
                    member.len()
                ),
            ));
        }
        pos = t + 8;
        // Another member follows unless only padding is left.
        if input[pos..].iter().all(|&b| b == 0) {
            break;
        }
    }
    check_size("gzip", out.len(), decoded_size)
}

/// Encode `input` as one gzip member (MTIME 0, OS 255) into `out` (replacing it).
pub(crate) fn gzip_member(input: &[u8], out: &mut Vec<u8>, level: u32) -> CodecResult<()> {
    out.clear();
    let xfl = match level {
        9 => 2,
        1 => 4,
        _ => 0,
    };
    out.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, xfl, 0xff]);
    deflate_append("gzip", input, out, level, false)?;
    out.extend_from_slice(&crc32fast::hash(input).to_le_bytes());
    out.extend_from_slice(&(input.len() as u32).to_le_bytes());
    Ok(())
}

impl BytesToBytesCodec for GzipCodec {
    fn name(&self) -> &str {
        "gzip"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        gzip_member(input, out, self.level)
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        gunzip(input, out, decoded_size)
    }

    fn to_v3_json(&self) -> Value {
        v3_json("gzip", Some(obj([("level", json!(self.level))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("gzip", obj([("level", json!(self.level))])))
    }
}

/// `zlib`: one RFC 1950 stream per chunk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZlibCodec {
    level: u32,
}

impl ZlibCodec {
    /// `zlib` at `level` 0–9 (larger values are taken as 9).
    pub fn new(level: u32) -> Self {
        ZlibCodec {
            level: level.min(9),
        }
    }

    /// Parse a numcodecs configuration (`level`, default 1).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        Ok(ZlibCodec {
            level: parse_level("zlib", config, 1)?,
        })
    }

    /// The compression level, 0–9.
    pub fn level(&self) -> u32 {
        self.level
    }
}

/// Decode one zlib stream (trailing bytes after its end are ignored, as Python does).
pub(crate) fn unzlib(
    input: &[u8],
    out: &mut Vec<u8>,
    decoded_size: Option<usize>,
) -> CodecResult<()> {
    out.clear();
    crate::util::reserve_total(out, first_output_capacity(input.len(), decoded_size));
    inflate_append(
        "zlib",
        input,
        out,
        decoded_size.unwrap_or(MAX_UNKNOWN_DECODED),
        true,
    )?;
    check_size("zlib", out.len(), decoded_size)
}

/// Encode `input` as one zlib stream into `out` (replacing it).
pub(crate) fn zlib_stream(input: &[u8], out: &mut Vec<u8>, level: u32) -> CodecResult<()> {
    out.clear();
    deflate_append("zlib", input, out, level, true)
}

impl BytesToBytesCodec for ZlibCodec {
    fn name(&self) -> &str {
        "numcodecs.zlib"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        zlib_stream(input, out, self.level)
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        unzlib(input, out, decoded_size)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(obj([("level", json!(self.level))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("zlib", obj([("level", json!(self.level))])))
    }
}
