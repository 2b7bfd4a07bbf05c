//! N5's `lz4` compression: the lz4-java `LZ4BlockOutputStream` stream (internal name
//! `n5-lz4`). Blocks of at most `blockSize` bytes, each a 21-byte header (magic `LZ4Block`,
//! token = method | level, compressed and decompressed lengths, XXH32 checksum of the
//! decompressed bytes with seed `0x9747b28c` masked to 28 bits) followed by an LZ4 raw block
//! or the raw bytes; the stream ends with an empty RAW block.

use serde_json::{json, Value};
use xxhash_rust::xxh32::xxh32;

use crate::util::{check_size, config_err, corrupt, obj, v3_json, Conf, MAX_UNKNOWN_DECODED};
use crate::{BytesToBytesCodec, CodecResult};

const NAME: &str = "n5-lz4";
const MAGIC: &[u8; 8] = b"LZ4Block";
const HEADER: usize = 21;
const METHOD_RAW: u8 = 0x10;
const METHOD_LZ4: u8 = 0x20;
const SEED: u32 = 0x9747_b28c;
const MIN_BLOCK: usize = 64;
const MAX_BLOCK: usize = 1 << 25;

/// The lz4-java block stream with a block size (N5 default 65536).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct N5Lz4Codec {
    block_size: usize,
}

impl Default for N5Lz4Codec {
    fn default() -> Self {
        N5Lz4Codec { block_size: 65536 }
    }
}

fn checksum(data: &[u8]) -> u32 {
    xxh32(data, SEED) & 0x0FFF_FFFF
}

/// lz4-java's compression level field: `ceil(log2(blockSize)) - 10`, at least 0.
fn level_bits(block_size: usize) -> u8 {
    let ceil_log2 = usize::BITS - (block_size - 1).leading_zeros();
    ceil_log2.saturating_sub(10) as u8
}

fn read_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl N5Lz4Codec {
    /// A stream of blocks of `block_size` bytes; errors unless 64 ≤ `block_size` ≤ 32 MiB.
    pub fn new(block_size: usize) -> CodecResult<Self> {
        if !(MIN_BLOCK..=MAX_BLOCK).contains(&block_size) {
            return Err(config_err(
                NAME,
                format!(
                    "blockSize must be between {MIN_BLOCK} and {MAX_BLOCK}, found {block_size}"
                ),
            ));
        }
        Ok(N5Lz4Codec { block_size })
    }

    /// Parse `{"blockSize": n}` (N5 attributes; default 65536).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        Self::new(c.usize("blockSize")?.unwrap_or(65536))
    }

    /// The uncompressed size of each block, in bytes.
    pub fn block_size(&self) -> usize {
        self.block_size
    }

    fn header(&self, out: &mut Vec<u8>, method: u8, clen: usize, dlen: usize, check: u32) {
        out.extend_from_slice(MAGIC);
        out.push(method | level_bits(self.block_size));
        out.extend_from_slice(&(clen as u32).to_le_bytes());
        out.extend_from_slice(&(dlen as u32).to_le_bytes());
        out.extend_from_slice(&check.to_le_bytes());
    }
}

impl BytesToBytesCodec for N5Lz4Codec {
    fn name(&self) -> &str {
        NAME
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        out.clear();
        let nblocks = input.len().div_ceil(self.block_size);
        out.reserve(input.len() + (nblocks + 1) * HEADER + nblocks * 16);
        let mut scratch =
            vec![0u8; lz4_flex::block::get_maximum_output_size(self.block_size.min(input.len()))];
        for block in input.chunks(self.block_size) {
            let check = checksum(block);
            let clen = lz4_flex::block::compress_into(block, &mut scratch)
                .map_err(|e| corrupt(NAME, format!("compression failed: {e}")))?;
            if clen >= block.len() {
                self.header(out, METHOD_RAW, block.len(), block.len(), check);
                out.extend_from_slice(block);
            } else {
                self.header(out, METHOD_LZ4, clen, block.len(), check);
                out.extend_from_slice(&scratch[..clen]);
            }
        }
        self.header(out, METHOD_RAW, 0, 0, 0);
        Ok(())
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        out.clear();
        let limit = decoded_size.unwrap_or(MAX_UNKNOWN_DECODED);
        if let Some(n) = decoded_size {
            out.reserve_exact(n);
        }
        let mut pos = 0usize;
        let mut index = 0usize;
        loop {
            let h = input.get(pos..pos + HEADER).ok_or_else(|| {
                corrupt(
                    NAME,
                    format!("stream ended before block {index} (no end marker)"),
                )
            })?;
            if &h[..8] != MAGIC {
                return Err(corrupt(NAME, format!("block {index}: bad magic")));
            }
            let token = h[8];
            let method = token & 0xF0;
            let level = 10 + (token & 0x0F) as u32;
            let clen = read_i32(h, 9);
            let dlen = read_i32(h, 13);
            let stored = read_i32(h, 17) as u32;
            if method != METHOD_RAW && method != METHOD_LZ4 {
                return Err(corrupt(
                    NAME,
                    format!("block {index}: unknown method {method:#04x}"),
                ));
            }
            if clen < 0
                || dlen < 0
                || level > 25
                || dlen as u64 > 1u64 << level
                || (dlen == 0) != (clen == 0)
                || (method == METHOD_RAW && dlen != clen)
            {
                return Err(corrupt(
                    NAME,
                    format!("block {index}: invalid lengths {clen}/{dlen}"),
                ));
            }
            pos += HEADER;
            if dlen == 0 {
                if stored != 0 {
                    return Err(corrupt(NAME, "end marker with a non-zero checksum"));
                }
                break;
            }
            let (clen, dlen) = (clen as usize, dlen as usize);
            let body = input.get(pos..pos + clen).ok_or_else(|| {
                corrupt(
                    NAME,
                    format!("block {index}: {clen} bytes run past the end"),
                )
            })?;
            if out.len() + dlen > limit {
                return Err(corrupt(
                    NAME,
                    format!("decodes to more than the expected {limit} bytes"),
                ));
            }
            let start = out.len();
            if method == METHOD_RAW {
                out.extend_from_slice(body);
            } else {
                out.resize(start + dlen, 0);
                let got = lz4_flex::block::decompress_into(body, &mut out[start..])
                    .map_err(|e| corrupt(NAME, format!("block {index}: invalid LZ4 data: {e}")))?;
                if got != dlen {
                    return Err(corrupt(
                        NAME,
                        format!("block {index}: decoded {got} bytes, header says {dlen}"),
                    ));
                }
            }
            let computed = checksum(&out[start..]);
            if computed != stored {
                return Err(corrupt(
                    NAME,
                    format!("block {index}: checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
                ));
            }
            pos += clen;
            index += 1;
        }
        check_size(NAME, out.len(), decoded_size)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(NAME, Some(obj([("blockSize", json!(self.block_size))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}
