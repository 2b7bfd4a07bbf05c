//! Decoding chunks through a dataset's filter pipeline: deflate (1), shuffle (2), fletcher32
//! (3, verified and stripped), lzf (32000), blosc (32001), lz4 (32004, HDF5's framing) and
//! zstd (32015). szip, nbit, scale-offset and unknown filters are refused by name.
//!
//! Every decoder bounds its output: a chunk never decodes to more than its stated size (plus a
//! small slack for checksums), whatever its headers claim.

use flate2::{Decompress, FlushDecompress, Status};

use crate::error::{ErrorKind, H5Error, H5Result};
use crate::messages::Filter;

/// Filter ids.
pub(crate) mod id {
    pub const DEFLATE: u16 = 1;
    pub const SHUFFLE: u16 = 2;
    pub const FLETCHER32: u16 = 3;
    pub const SZIP: u16 = 4;
    pub const NBIT: u16 = 5;
    pub const SCALEOFFSET: u16 = 6;
    pub const LZF: u16 = 32000;
    pub const BLOSC: u16 = 32001;
    pub const LZ4: u16 = 32004;
    pub const ZSTD: u16 = 32015;
}

/// The usual name of a filter id.
pub fn filter_name(fid: u16) -> &'static str {
    match fid {
        id::DEFLATE => "deflate",
        id::SHUFFLE => "shuffle",
        id::FLETCHER32 => "fletcher32",
        id::SZIP => "szip",
        id::NBIT => "nbit",
        id::SCALEOFFSET => "scaleoffset",
        id::LZF => "lzf",
        id::BLOSC => "blosc",
        id::LZ4 => "lz4",
        id::ZSTD => "zstd",
        307 => "bzip2",
        32008 => "bitshuffle",
        32013 => "zfp",
        32017 => "sz",
        _ => "unknown",
    }
}

/// Whether this reader can decode filter `fid`.
pub fn filter_supported(fid: u16) -> bool {
    matches!(
        fid,
        id::DEFLATE | id::SHUFFLE | id::FLETCHER32 | id::LZF | id::BLOSC | id::LZ4 | id::ZSTD
    )
}

fn ferr(f: &Filter, message: impl Into<String>) -> H5Error {
    H5Error::new(ErrorKind::Filter {
        id: f.id,
        name: if f.name.is_empty() {
            filter_name(f.id).to_string()
        } else {
            f.name.clone()
        },
        message: message.into(),
    })
}

/// The first filter of `filters` this reader cannot decode.
pub(crate) fn unsupported_filter(filters: &[Filter]) -> Option<&Filter> {
    filters.iter().find(|f| !filter_supported(f.id))
}

/// Decode one stored chunk: undo the filters of `filters` (in reverse order) not masked out by
/// `mask`. `expected` is the size of the unfiltered chunk; `elem` the element size (for
/// shuffle).
pub(crate) fn decode_chunk(
    filters: &[Filter],
    mask: u32,
    data: Vec<u8>,
    expected: usize,
    elem: usize,
) -> H5Result<Vec<u8>> {
    let limit = expected.saturating_add(64);
    let mut buf = data;
    for (i, f) in filters.iter().enumerate().rev() {
        if i < 32 && mask & (1 << i) != 0 {
            continue;
        }
        buf = match f.id {
            id::DEFLATE => inflate(f, &buf, limit)?,
            id::SHUFFLE => {
                let size = f.values.first().map(|&v| v as usize).unwrap_or(elem);
                unshuffle(&buf, size)
            }
            id::FLETCHER32 => {
                if buf.len() < 4 {
                    return Err(ferr(f, "chunk shorter than its checksum"));
                }
                let n = buf.len() - 4;
                let stored = u32::from_le_bytes([buf[n], buf[n + 1], buf[n + 2], buf[n + 3]]);
                let computed = neurochunk_codec::codecs::checksum::fletcher32(&buf[..n]);
                // Files written before HDF5 1.6.3 on some machines stored it byte-swapped.
                if stored != computed && stored != computed.swap_bytes() {
                    return Err(ferr(
                        f,
                        format!(
                            "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                        ),
                    ));
                }
                buf.truncate(n);
                buf
            }
            id::LZF => lzf_decompress(&buf, limit).map_err(|m| ferr(f, m))?,
            id::ZSTD => zstd_decompress(f, &buf, limit)?,
            id::LZ4 => lz4_decompress(f, &buf, limit)?,
            id::BLOSC => blosc_decompress(f, &buf, limit)?,
            _ => {
                return Err(ferr(
                    f,
                    format!("this reader cannot decode the {} filter", filter_name(f.id)),
                ))
            }
        };
        if buf.len() > limit {
            return Err(ferr(
                f,
                format!(
                    "decoded {} bytes, more than the chunk's {expected}",
                    buf.len()
                ),
            ));
        }
    }
    Ok(buf)
}

fn inflate(f: &Filter, input: &[u8], limit: usize) -> H5Result<Vec<u8>> {
    let mut d = Decompress::new(true);
    let mut out = Vec::with_capacity(limit.min(input.len().saturating_mul(4).max(4096)));
    loop {
        if out.len() == out.capacity() {
            if out.len() >= limit {
                return Err(ferr(f, "decompresses to more than the chunk's size"));
            }
            out.reserve((out.len().max(4096)).min(limit - out.len()));
        }
        let (before_in, before_out) = (d.total_in(), d.total_out());
        let consumed = d.total_in() as usize;
        let status = d
            .decompress_vec(
                &input[consumed.min(input.len())..],
                &mut out,
                FlushDecompress::None,
            )
            .map_err(|e| ferr(f, format!("invalid deflate stream: {e}")))?;
        let stalled = d.total_in() == before_in && d.total_out() == before_out;
        match status {
            Status::StreamEnd => return Ok(out),
            _ if stalled && out.len() < out.capacity() => {
                return Err(ferr(f, "truncated deflate stream"));
            }
            _ => {}
        }
    }
}

fn unshuffle(input: &[u8], size: usize) -> Vec<u8> {
    if size <= 1 || input.len() < size {
        return input.to_vec();
    }
    let n = input.len() / size;
    let mut out = vec![0u8; input.len()];
    neurochunk_codec::codecs::shuffle::unshuffle_bytes(
        &input[..n * size],
        &mut out[..n * size],
        size,
    );
    // Trailing bytes that do not make a whole element are stored as they are.
    out[n * size..].copy_from_slice(&input[n * size..]);
    out
}

/// Decompress LZF (liblzf's format, as the h5py lzf filter stores it), at most `limit` bytes.
pub(crate) fn lzf_decompress(input: &[u8], limit: usize) -> Result<Vec<u8>, String> {
    let mut out: Vec<u8> = Vec::with_capacity(limit.min(input.len().saturating_mul(4)));
    let mut i = 0usize;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            // A literal run of ctrl + 1 bytes.
            let n = ctrl + 1;
            let lit = input
                .get(i..i + n)
                .ok_or_else(|| "truncated literal run".to_string())?;
            if out.len() + n > limit {
                return Err("decompresses to more than the chunk's size".into());
            }
            out.extend_from_slice(lit);
            i += n;
        } else {
            // A back reference: length (ctrl >> 5) + 2, or 7 + next byte + 2.
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input
                    .get(i)
                    .ok_or_else(|| "truncated back reference".to_string())?
                    as usize;
                i += 1;
            }
            len += 2;
            let low = *input
                .get(i)
                .ok_or_else(|| "truncated back reference".to_string())?
                as usize;
            i += 1;
            let dist = ((ctrl & 0x1f) << 8) + low + 1;
            if dist > out.len() {
                return Err("back reference before the start of the output".into());
            }
            if out.len() + len > limit {
                return Err("decompresses to more than the chunk's size".into());
            }
            let start = out.len() - dist;
            for k in 0..len {
                let b = out[start + k];
                out.push(b);
            }
        }
    }
    Ok(out)
}

fn zstd_decompress(f: &Filter, input: &[u8], limit: usize) -> H5Result<Vec<u8>> {
    use std::io::Read;
    // Streamed, so the output grows with what the frames really hold (a header cannot make
    // the reader allocate the limit up front).
    let decoder = zstd::stream::read::Decoder::with_buffer(input)
        .map_err(|e| ferr(f, format!("invalid zstd data: {e}")))?;
    let mut out = Vec::with_capacity(limit.min(input.len().saturating_mul(4)));
    decoder
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ferr(f, format!("invalid zstd data: {e}")))?;
    if out.len() > limit {
        return Err(ferr(f, "decompresses to more than the chunk's size"));
    }
    Ok(out)
}

/// HDF5's lz4 filter: the original size (8 bytes, big-endian), the block size (4 bytes,
/// big-endian), then per block its stored size (4 bytes, big-endian) and bytes, stored raw
/// when the stored size equals the block's size.
fn lz4_decompress(f: &Filter, input: &[u8], limit: usize) -> H5Result<Vec<u8>> {
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    if input.len() < 12 {
        return Err(ferr(f, "chunk shorter than the lz4 header"));
    }
    let total = be(&input[..8]);
    let block = be(&input[8..12]);
    // An LZ4 block expands at most about 255 times.
    if total > limit as u64 || total > (input.len() as u64).saturating_mul(256) {
        return Err(ferr(
            f,
            format!("declares {total} bytes, more than the chunk's size"),
        ));
    }
    let total = total as usize;
    let block = if block == 0 {
        total.max(1)
    } else {
        block as usize
    };
    let mut out = vec![0u8; total];
    let mut pos = 12usize;
    let mut done = 0usize;
    while done < total {
        let want = block.min(total - done);
        let n = input
            .get(pos..pos + 4)
            .map(|b| be(b) as usize)
            .ok_or_else(|| ferr(f, "truncated block header"))?;
        pos += 4;
        let data = input
            .get(pos..pos.saturating_add(n))
            .ok_or_else(|| ferr(f, "truncated block"))?;
        pos += n;
        let dst = &mut out[done..done + want];
        if n == want {
            dst.copy_from_slice(data);
        } else {
            let got = lz4_flex::block::decompress_into(data, dst)
                .map_err(|e| ferr(f, format!("invalid lz4 block: {e}")))?;
            if got != want {
                return Err(ferr(
                    f,
                    format!("a block decoded to {got} bytes, not {want}"),
                ));
            }
        }
        done += want;
    }
    Ok(out)
}

fn blosc_decompress(f: &Filter, input: &[u8], limit: usize) -> H5Result<Vec<u8>> {
    use neurochunk_codec::BytesToBytesCodec;
    if input.len() >= 16 {
        let nbytes = u32::from_le_bytes([input[4], input[5], input[6], input[7]]) as usize;
        if nbytes > limit {
            return Err(ferr(
                f,
                format!("declares {nbytes} bytes, more than the chunk's size"),
            ));
        }
    }
    let codec = neurochunk_codec::BloscCodec::new(
        neurochunk_codec::BloscCompressor::Lz4,
        5,
        neurochunk_codec::BloscShuffle::NoShuffle,
        1,
        0,
    )
    .map_err(|e| ferr(f, e.to_string()))?;
    let mut out = Vec::new();
    codec
        .decode(input, &mut out, None)
        .map_err(|e| ferr(f, e.to_string()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lzf_literals_and_references() {
        // "abcabcabc": literal "abc", then a back reference of 6 at distance 3.
        let input = [2u8, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(lzf_decompress(&input, 100).unwrap(), b"abcabcabc");
        assert!(lzf_decompress(&input, 5).is_err());
        assert!(lzf_decompress(&[(1 << 5), 0], 100).is_err());
        assert!(lzf_decompress(&[5, b'a'], 100).is_err());
    }
}
