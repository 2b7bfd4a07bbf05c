//! The `blosc` codec (bytes→bytes; Zarr v3 core, numcodecs `blosc`, N5 `blosc`): c-blosc 1.x
//! chunks through the thread-safe `blosc_compress_ctx` / `blosc_decompress_ctx` functions
//! with one internal thread. Decoding reads everything (shuffle, type size, sizes) from the
//! 16-byte chunk header, never from metadata, and validates it before calling c-blosc.

use std::ffi::{c_int, c_void, CStr};

use serde_json::{json, Map, Value};

use crate::util::{check_declared, config_err, corrupt, obj, unsupported, v2_json, v3_json, Conf};
use crate::{BytesToBytesCodec, CodecResult};

const NAME: &str = "blosc";
const HEADER: usize = 16;
const MAX_BUFFERSIZE: usize = blosc_src::BLOSC_MAX_BUFFERSIZE as usize;

/// The compressor inside blosc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BloscCompressor {
    /// `blosclz`, blosc's own LZ77 variant.
    BloscLz,
    /// `lz4`.
    Lz4,
    /// `lz4hc`, LZ4 high compression.
    Lz4Hc,
    /// `zstd`.
    Zstd,
    /// `zlib` (deflate).
    Zlib,
    /// `snappy`.
    Snappy,
}

impl BloscCompressor {
    /// The `cname` spelling (`"blosclz"`, `"lz4"`, …).
    pub fn name(self) -> &'static str {
        match self {
            BloscCompressor::BloscLz => "blosclz",
            BloscCompressor::Lz4 => "lz4",
            BloscCompressor::Lz4Hc => "lz4hc",
            BloscCompressor::Zstd => "zstd",
            BloscCompressor::Zlib => "zlib",
            BloscCompressor::Snappy => "snappy",
        }
    }

    fn c_name(self) -> &'static CStr {
        match self {
            BloscCompressor::BloscLz => c"blosclz",
            BloscCompressor::Lz4 => c"lz4",
            BloscCompressor::Lz4Hc => c"lz4hc",
            BloscCompressor::Zstd => c"zstd",
            BloscCompressor::Zlib => c"zlib",
            BloscCompressor::Snappy => c"snappy",
        }
    }

    /// From a `cname` spelling; `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "blosclz" => BloscCompressor::BloscLz,
            "lz4" => BloscCompressor::Lz4,
            "lz4hc" => BloscCompressor::Lz4Hc,
            "zstd" => BloscCompressor::Zstd,
            "zlib" => BloscCompressor::Zlib,
            "snappy" => BloscCompressor::Snappy,
            _ => return None,
        })
    }
}

/// The shuffle filter. `Auto` (numcodecs −1) means bit-shuffle for 1-byte elements and
/// byte-shuffle otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BloscShuffle {
    /// No shuffle (numcodecs 0, v3 `"noshuffle"`).
    NoShuffle,
    /// Byte shuffle (numcodecs 1, v3 `"shuffle"`).
    Shuffle,
    /// Bit shuffle (numcodecs 2, v3 `"bitshuffle"`).
    BitShuffle,
    /// Chosen by element size (numcodecs −1), when encoding and in Zarr v3 JSON.
    Auto,
}

impl BloscShuffle {
    /// From the Zarr v3 spelling (`"noshuffle"`, `"shuffle"`, `"bitshuffle"`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "noshuffle" => BloscShuffle::NoShuffle,
            "shuffle" => BloscShuffle::Shuffle,
            "bitshuffle" => BloscShuffle::BitShuffle,
            _ => return None,
        })
    }

    /// From the numcodecs integer (−1, 0, 1, 2).
    pub fn from_int(i: i64) -> Option<Self> {
        Some(match i {
            -1 => BloscShuffle::Auto,
            0 => BloscShuffle::NoShuffle,
            1 => BloscShuffle::Shuffle,
            2 => BloscShuffle::BitShuffle,
            _ => return None,
        })
    }

    fn resolve(self, typesize: usize) -> BloscShuffle {
        match self {
            BloscShuffle::Auto if typesize == 1 => BloscShuffle::BitShuffle,
            BloscShuffle::Auto => BloscShuffle::Shuffle,
            s => s,
        }
    }

    fn to_int(self) -> i64 {
        match self {
            BloscShuffle::Auto => -1,
            BloscShuffle::NoShuffle => 0,
            BloscShuffle::Shuffle => 1,
            BloscShuffle::BitShuffle => 2,
        }
    }

    fn name(self) -> &'static str {
        match self {
            BloscShuffle::NoShuffle => "noshuffle",
            BloscShuffle::Shuffle | BloscShuffle::Auto => "shuffle",
            BloscShuffle::BitShuffle => "bitshuffle",
        }
    }
}

/// `blosc` with its compression parameters; `typesize` is the element size used for
/// shuffling (numcodecs: the item size of the buffer it is given).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BloscCodec {
    cname: BloscCompressor,
    clevel: u8,
    shuffle: BloscShuffle,
    typesize: usize,
    blocksize: usize,
}

impl BloscCodec {
    /// A codec with `clevel` 0–9 (else an error), `typesize` in bytes (0 is taken as 1) and
    /// `blocksize` in bytes (0: c-blosc chooses).
    pub fn new(
        cname: BloscCompressor,
        clevel: u8,
        shuffle: BloscShuffle,
        typesize: usize,
        blocksize: usize,
    ) -> CodecResult<Self> {
        if clevel > 9 {
            return Err(config_err(
                NAME,
                format!("clevel must be 0-9, found {clevel}"),
            ));
        }
        Ok(BloscCodec {
            cname,
            clevel,
            shuffle,
            typesize: typesize.max(1),
            blocksize,
        })
    }

    /// Parse a Zarr v3 configuration; `typesize` defaults to `default_typesize` (the element
    /// size of the incoming representation).
    pub fn from_v3_config(config: &Value, default_typesize: usize) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        let shuffle = match c.get("shuffle") {
            None => {
                if default_typesize == 1 {
                    BloscShuffle::BitShuffle
                } else {
                    BloscShuffle::Shuffle
                }
            }
            Some(Value::String(s)) => BloscShuffle::parse(s).ok_or_else(|| {
                config_err(
                    NAME,
                    format!("unknown shuffle \"{s}\" (noshuffle, shuffle, bitshuffle)"),
                )
            })?,
            Some(Value::Number(n)) => n
                .as_i64()
                .and_then(BloscShuffle::from_int)
                .ok_or_else(|| config_err(NAME, format!("unknown shuffle {n}")))?,
            Some(other) => return Err(config_err(NAME, format!("invalid shuffle {other}"))),
        };
        Self::from_common(
            &c,
            shuffle,
            c.usize("typesize")?.unwrap_or(default_typesize),
            "zstd",
        )
    }

    /// Parse a numcodecs configuration (integer `shuffle`, default 1; `typesize` ignored:
    /// numcodecs uses the item size of the buffer, `typesize`).
    pub fn from_v2_config(config: &Value, typesize: usize) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        let shuffle = match c.i64("shuffle")? {
            None => BloscShuffle::Shuffle,
            Some(i) => BloscShuffle::from_int(i)
                .ok_or_else(|| config_err(NAME, format!("unknown shuffle {i} (-1, 0, 1, 2)")))?,
        };
        Self::from_common(&c, shuffle, typesize, "lz4")
    }

    fn from_common(
        c: &Conf,
        shuffle: BloscShuffle,
        typesize: usize,
        default_cname: &str,
    ) -> CodecResult<Self> {
        let cname_s = c.str("cname")?.unwrap_or(default_cname);
        let cname = BloscCompressor::parse(cname_s).ok_or_else(|| {
            config_err(
                NAME,
                format!("unknown cname \"{cname_s}\" (blosclz, lz4, lz4hc, zstd, zlib, snappy)"),
            )
        })?;
        // clevel and blocksize only steer the encoder (a chunk's header says how it was
        // made): values c-blosc would not take are clamped rather than stopping a read.
        let clevel = c.i64("clevel")?.unwrap_or(5).clamp(0, 9) as u8;
        let blocksize = c.i64("blocksize")?.unwrap_or(0).clamp(0, 1 << 30) as usize;
        // c-blosc silently disables shuffling for type sizes above 255.
        if typesize == 0 {
            return Err(config_err(NAME, "typesize must be at least 1"));
        }
        Self::new(cname, clevel, shuffle, typesize, blocksize)
    }

    /// The compressor inside blosc.
    pub fn cname(&self) -> BloscCompressor {
        self.cname
    }

    /// Compression level, 0 (none) to 9.
    pub fn clevel(&self) -> u8 {
        self.clevel
    }

    /// The shuffle filter, as configured (`Auto` is resolved by `typesize` when used).
    pub fn shuffle(&self) -> BloscShuffle {
        self.shuffle
    }

    /// Element size in bytes used for shuffling, at least 1.
    pub fn typesize(&self) -> usize {
        self.typesize
    }

    /// Block size in bytes (0: chosen by c-blosc).
    pub fn blocksize(&self) -> usize {
        self.blocksize
    }
}

/// Compress `input` into `out` (replacing it).
pub(crate) fn compress(
    input: &[u8],
    out: &mut Vec<u8>,
    cname: BloscCompressor,
    clevel: u8,
    shuffle: BloscShuffle,
    typesize: usize,
    blocksize: usize,
) -> CodecResult<()> {
    if input.len() > MAX_BUFFERSIZE {
        return Err(unsupported(
            NAME,
            format!("chunk of {} bytes exceeds blosc's 2 GiB limit", input.len()),
        ));
    }
    let doshuffle = shuffle.resolve(typesize).to_int() as c_int;
    let dest_size = input.len() + HEADER;
    out.clear();
    out.reserve_exact(dest_size);
    // SAFETY: `input` is readable for `input.len()` bytes and `out` has `dest_size` bytes of
    // spare capacity; blosc never writes past `destsize`. The context functions use no
    // global state.
    let written = unsafe {
        blosc_src::blosc_compress_ctx(
            clevel as c_int,
            doshuffle,
            typesize,
            input.len(),
            input.as_ptr() as *const c_void,
            out.as_mut_ptr() as *mut c_void,
            dest_size,
            cname.c_name().as_ptr(),
            blocksize,
            1,
        )
    };
    if written <= 0 {
        return Err(corrupt(
            NAME,
            format!("compression failed (code {written})"),
        ));
    }
    // SAFETY: blosc initialised the first `written` bytes (≤ dest_size).
    unsafe { out.set_len(written as usize) };
    Ok(())
}

/// Decode a blosc chunk into `out` (replacing it), after validating its header.
pub(crate) fn decompress(
    input: &[u8],
    out: &mut Vec<u8>,
    decoded_size: Option<usize>,
) -> CodecResult<()> {
    let h = input.get(..HEADER).ok_or_else(|| {
        corrupt(
            NAME,
            format!("{} bytes cannot hold the 16-byte header", input.len()),
        )
    })?;
    let version = h[0];
    let flags = h[2];
    let typesize = h[3] as usize;
    let nbytes = u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize;
    let blocksize = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
    let cbytes = u32::from_le_bytes([h[12], h[13], h[14], h[15]]) as usize;
    if version == 0 || version > 2 {
        return Err(corrupt(
            NAME,
            format!("unsupported blosc format version {version}"),
        ));
    }
    if cbytes < HEADER || cbytes > input.len() {
        return Err(corrupt(
            NAME,
            format!(
                "header declares {cbytes} compressed bytes, chunk has {}",
                input.len()
            ),
        ));
    }
    if nbytes > MAX_BUFFERSIZE {
        return Err(corrupt(
            NAME,
            format!("header declares {nbytes} bytes, more than blosc allows"),
        ));
    }
    let memcpyed = flags & 0x02 != 0;
    // Bound the allocation by what the compressed bytes can describe.
    let bound = if nbytes == 0 {
        0
    } else if memcpyed {
        if nbytes + HEADER != cbytes {
            return Err(corrupt(
                NAME,
                format!(
                    "raw chunk of {nbytes} bytes needs {} bytes, header says {cbytes}",
                    nbytes + HEADER
                ),
            ));
        }
        nbytes as u64
    } else {
        if blocksize == 0 || typesize == 0 {
            return Err(corrupt(NAME, "zero block size or type size"));
        }
        let nblocks = nbytes.div_ceil(blocksize);
        if nblocks > (cbytes - HEADER) / 4 {
            return Err(corrupt(NAME, "block table does not fit in the chunk"));
        }
        (nblocks as u64).saturating_mul(blocksize.min(nbytes) as u64)
    };
    let n = check_declared(NAME, nbytes as u64, decoded_size, bound.max(nbytes as u64))?;
    out.clear();
    if n == 0 {
        return Ok(());
    }
    out.reserve_exact(n);
    // SAFETY: the header was checked: `cbytes` ≤ `input.len()` so c-blosc only reads inside
    // `input`; `out` has `n` bytes of spare capacity and c-blosc writes at most `destsize`.
    let got = unsafe {
        blosc_src::blosc_decompress_ctx(
            input.as_ptr() as *const c_void,
            out.as_mut_ptr() as *mut c_void,
            n,
            1,
        )
    };
    if got < 0 || got as usize != n {
        return Err(corrupt(NAME, format!("decompression failed (code {got})")));
    }
    // SAFETY: c-blosc wrote exactly `n` bytes.
    unsafe { out.set_len(n) };
    Ok(())
}

impl BytesToBytesCodec for BloscCodec {
    fn name(&self) -> &str {
        NAME
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        compress(
            input,
            out,
            self.cname,
            self.clevel,
            self.shuffle,
            self.typesize,
            self.blocksize,
        )
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
        let shuffle = self.shuffle.resolve(self.typesize);
        let c: Map<String, Value> = obj([
            ("typesize", json!(self.typesize)),
            ("cname", json!(self.cname.name())),
            ("clevel", json!(self.clevel)),
            ("shuffle", json!(shuffle.name())),
            ("blocksize", json!(self.blocksize)),
        ]);
        v3_json(NAME, Some(c))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(
            NAME,
            obj([
                ("cname", json!(self.cname.name())),
                ("clevel", json!(self.clevel)),
                ("shuffle", json!(self.shuffle.to_int())),
                ("blocksize", json!(self.blocksize)),
            ]),
        ))
    }
}
