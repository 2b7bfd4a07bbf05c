//! The `neuroglancer_uint64_sharded_v1` layout of a precomputed scale: chunk ids (compressed
//! Morton codes of grid positions), the hash that maps them to shards and minishards
//! (identity or MurmurHash3_x86_128), the shard index, minishard indexes and whole shards.
//!
//! A shard file `SHARD.shard` (SHARD: the shard number in lowercase hex, zero padded to
//! `ceil(shard_bits / 4)` digits) starts with the *shard index*: per minishard, the byte range
//! `[start, end)` of its *minishard index* (uint64 little-endian pairs, relative to the end of
//! the shard index). A minishard index is `[3, n]` uint64 little-endian values (optionally
//! gzip-compressed): chunk ids, delta-encoded; data offsets, each relative to the end of the
//! previous chunk (the first to the end of the shard index); data sizes.
//!
//! Everything read from a shard is checked before use: truncated indexes, offsets past the end
//! of the shard, overflowing sums and oversized indexes are errors naming the shard, never
//! panics or unbounded allocations.

use std::collections::BTreeMap;
use std::io::Read;

use serde_json::{json, Map, Value};

/// How minishard indexes or chunk data are stored in a shard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardEncoding {
    /// As they are.
    Raw,
    /// gzip-compressed.
    Gzip,
}

impl ShardEncoding {
    fn parse(value: Option<&Value>, member: &str) -> Result<Self, String> {
        match value {
            None | Some(Value::Null) => Ok(ShardEncoding::Raw),
            Some(Value::String(s)) if s == "raw" => Ok(ShardEncoding::Raw),
            Some(Value::String(s)) if s == "gzip" => Ok(ShardEncoding::Gzip),
            Some(other) => Err(format!(
                "'{member}' must be \"raw\" or \"gzip\", found {other}"
            )),
        }
    }

    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            ShardEncoding::Raw => "raw",
            ShardEncoding::Gzip => "gzip",
        }
    }
}

/// The hash from (preshifted) chunk ids to shard and minishard bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardHash {
    /// The id itself.
    Identity,
    /// MurmurHash3_x86_128 of the id's 8 little-endian bytes, seed 0; the low 8 bytes of the
    /// hash as a little-endian uint64.
    Murmurhash3X86_128,
}

impl ShardHash {
    /// The JSON name.
    pub fn name(self) -> &'static str {
        match self {
            ShardHash::Identity => "identity",
            ShardHash::Murmurhash3X86_128 => "murmurhash3_x86_128",
        }
    }

    /// The hashed id.
    pub fn apply(self, id: u64) -> u64 {
        match self {
            ShardHash::Identity => id,
            ShardHash::Murmurhash3X86_128 => {
                let h = murmurhash3_x86_128(&id.to_le_bytes(), 0);
                h as u64
            }
        }
    }
}

/// A scale's `sharding` member (`neuroglancer_uint64_sharded_v1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardingSpec {
    /// Low bits of the chunk id that do not take part in the hash.
    pub preshift_bits: u32,
    /// The hash.
    pub hash: ShardHash,
    /// Bits of the hashed id that choose the minishard.
    pub minishard_bits: u32,
    /// Bits of the hashed id (above the minishard bits) that choose the shard.
    pub shard_bits: u32,
    /// How minishard indexes are stored.
    pub minishard_index_encoding: ShardEncoding,
    /// How chunk data are stored.
    pub data_encoding: ShardEncoding,
}

/// Where a chunk lives: its shard and minishard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkPlace {
    /// Shard number.
    pub shard: u64,
    /// Minishard number within the shard.
    pub minishard: u64,
}

/// Most minishards a shard may have (2^32: a shard index of 64 GiB is already absurd).
const MAX_MINISHARD_BITS: u32 = 32;

impl ShardingSpec {
    /// Parse a `sharding` member.
    pub fn from_json(value: &Value) -> Result<ShardingSpec, String> {
        let map = value
            .as_object()
            .ok_or_else(|| format!("'sharding' must be an object, found {value}"))?;
        match map.get("@type").and_then(Value::as_str) {
            Some("neuroglancer_uint64_sharded_v1") => {}
            other => {
                return Err(format!(
                    "'sharding' has '@type' {}, only \"neuroglancer_uint64_sharded_v1\" is known",
                    other.map_or("missing".to_string(), |t| format!("\"{t}\""))
                ))
            }
        }
        let bits = |member: &str, max: u32| -> Result<u32, String> {
            let v = map
                .get(member)
                .and_then(Value::as_u64)
                .ok_or_else(|| format!("'sharding' needs '{member}', a non-negative integer"))?;
            if v > max as u64 {
                return Err(format!(
                    "'sharding.{member}' is {v}, at most {max} is allowed"
                ));
            }
            Ok(v as u32)
        };
        let hash = match map.get("hash").and_then(Value::as_str) {
            Some("identity") => ShardHash::Identity,
            Some("murmurhash3_x86_128") => ShardHash::Murmurhash3X86_128,
            other => {
                return Err(format!(
                    "'sharding.hash' must be \"identity\" or \"murmurhash3_x86_128\", found {}",
                    other.unwrap_or("nothing")
                ))
            }
        };
        let spec = ShardingSpec {
            preshift_bits: bits("preshift_bits", 64)?,
            hash,
            minishard_bits: bits("minishard_bits", MAX_MINISHARD_BITS)?,
            shard_bits: bits("shard_bits", 64)?,
            minishard_index_encoding: ShardEncoding::parse(
                map.get("minishard_index_encoding"),
                "minishard_index_encoding",
            )?,
            data_encoding: ShardEncoding::parse(map.get("data_encoding"), "data_encoding")?,
        };
        if spec.minishard_bits + spec.shard_bits > 64 {
            return Err(format!(
                "'sharding' has minishard_bits {} + shard_bits {} > 64",
                spec.minishard_bits, spec.shard_bits
            ));
        }
        Ok(spec)
    }

    /// The `sharding` member as tensorstore writes it (keys sorted).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("@type".into(), json!("neuroglancer_uint64_sharded_v1"));
        map.insert("data_encoding".into(), json!(self.data_encoding.name()));
        map.insert("hash".into(), json!(self.hash.name()));
        map.insert("minishard_bits".into(), json!(self.minishard_bits));
        map.insert(
            "minishard_index_encoding".into(),
            json!(self.minishard_index_encoding.name()),
        );
        map.insert("preshift_bits".into(), json!(self.preshift_bits));
        map.insert("shard_bits".into(), json!(self.shard_bits));
        Value::Object(map)
    }

    /// Shard and minishard of chunk `id`.
    pub fn place(&self, id: u64) -> ChunkPlace {
        let shifted = id.checked_shr(self.preshift_bits).unwrap_or(0);
        let hashed = self.hash.apply(shifted);
        let minishard = hashed & low_mask(self.minishard_bits);
        let shard =
            hashed.checked_shr(self.minishard_bits).unwrap_or(0) & low_mask(self.shard_bits);
        ChunkPlace { shard, minishard }
    }

    /// Number of minishards per shard.
    pub fn minishards(&self) -> u64 {
        1u64 << self.minishard_bits
    }

    /// Bytes of the shard index at the start of every shard.
    pub fn shard_index_bytes(&self) -> u64 {
        self.minishards() * 16
    }

    /// The file name of shard `shard`: lowercase hex, `ceil(shard_bits / 4)` digits, `.shard`.
    pub fn shard_file(&self, shard: u64) -> String {
        let digits = self.shard_bits.div_ceil(4) as usize;
        format!("{shard:0digits$x}.shard")
    }

    /// The shard number of a shard file name (inverse of [`ShardingSpec::shard_file`]).
    pub fn parse_shard_file(&self, name: &str) -> Option<u64> {
        let hex = name.strip_suffix(".shard")?;
        // One digit at least: with no shard bits the only shard is `0.shard`.
        let digits = self.shard_bits.div_ceil(4).max(1) as usize;
        if hex.len() != digits
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return None;
        }
        u64::from_str_radix(hex, 16)
            .ok()
            .filter(|&s| s <= low_mask(self.shard_bits))
    }
}

fn low_mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    }
}

/// Bits per grid axis of the compressed Morton code: `ceil(log2(grid[d]))`.
pub fn morton_bits(grid: &[u64]) -> Vec<u32> {
    grid.iter()
        .map(|&g| 64 - g.saturating_sub(1).leading_zeros())
        .collect()
}

/// The compressed Morton code of grid position `pos` in a grid of `grid` chunks: bit `i` of
/// each axis that still has bits, axes `x, y, z` in turn, lowest bits first.
pub fn compressed_morton_code(pos: &[u64], grid: &[u64]) -> u64 {
    let bits = morton_bits(grid);
    let max = bits.iter().copied().max().unwrap_or(0);
    let mut code = 0u64;
    let mut j = 0u32;
    for i in 0..max {
        for (d, &b) in bits.iter().enumerate() {
            if i < b {
                if j < 64 {
                    code |= ((pos[d] >> i) & 1) << j;
                }
                j += 1;
            }
        }
    }
    code
}

/// The grid position of a compressed Morton code (inverse of [`compressed_morton_code`]).
pub fn morton_position(code: u64, grid: &[u64]) -> Vec<u64> {
    let bits = morton_bits(grid);
    let max = bits.iter().copied().max().unwrap_or(0);
    let mut pos = vec![0u64; grid.len()];
    let mut j = 0u32;
    for i in 0..max {
        for (d, &b) in bits.iter().enumerate() {
            if i < b {
                if j < 64 {
                    pos[d] |= ((code >> j) & 1) << i;
                }
                j += 1;
            }
        }
    }
    pos
}

/// MurmurHash3_x86_128 of `data` with `seed`: the 128-bit hash with `h1` in the lowest 32
/// bits, then `h2`, `h3`, `h4` (so its first 8 little-endian bytes are `h1`, `h2`).
pub fn murmurhash3_x86_128(data: &[u8], seed: u32) -> u128 {
    const C1: u32 = 0x239b_961b;
    const C2: u32 = 0xab0e_9789;
    const C3: u32 = 0x38b3_4ae5;
    const C4: u32 = 0xa1e3_8b93;
    fn fmix(mut h: u32) -> u32 {
        h ^= h >> 16;
        h = h.wrapping_mul(0x85eb_ca6b);
        h ^= h >> 13;
        h = h.wrapping_mul(0xc2b2_ae35);
        h ^= h >> 16;
        h
    }
    let (mut h1, mut h2, mut h3, mut h4) = (seed, seed, seed, seed);
    let blocks = data.chunks_exact(16);
    let tail = blocks.remainder();
    let word = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for block in blocks {
        let (mut k1, mut k2, mut k3, mut k4) = (
            word(&block[0..4]),
            word(&block[4..8]),
            word(&block[8..12]),
            word(&block[12..16]),
        );
        k1 = k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(19)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x561c_cd1b);
        k2 = k2.wrapping_mul(C2).rotate_left(16).wrapping_mul(C3);
        h2 ^= k2;
        h2 = h2
            .rotate_left(17)
            .wrapping_add(h3)
            .wrapping_mul(5)
            .wrapping_add(0x0bca_a747);
        k3 = k3.wrapping_mul(C3).rotate_left(17).wrapping_mul(C4);
        h3 ^= k3;
        h3 = h3
            .rotate_left(15)
            .wrapping_add(h4)
            .wrapping_mul(5)
            .wrapping_add(0x96cd_1c35);
        k4 = k4.wrapping_mul(C4).rotate_left(18).wrapping_mul(C1);
        h4 ^= k4;
        h4 = h4
            .rotate_left(13)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x32ac_3b17);
    }
    if !tail.is_empty() {
        let mut padded = [0u8; 16];
        padded[..tail.len()].copy_from_slice(tail);
        let (k1, k2, k3, k4) = (
            word(&padded[0..4]),
            word(&padded[4..8]),
            word(&padded[8..12]),
            word(&padded[12..16]),
        );
        let n = tail.len();
        if n > 12 {
            h4 ^= k4.wrapping_mul(C4).rotate_left(18).wrapping_mul(C1);
        }
        if n > 8 {
            h3 ^= k3.wrapping_mul(C3).rotate_left(17).wrapping_mul(C4);
        }
        if n > 4 {
            h2 ^= k2.wrapping_mul(C2).rotate_left(16).wrapping_mul(C3);
        }
        h1 ^= k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    }
    let len = data.len() as u32;
    h1 ^= len;
    h2 ^= len;
    h3 ^= len;
    h4 ^= len;
    h1 = h1.wrapping_add(h2).wrapping_add(h3).wrapping_add(h4);
    h2 = h2.wrapping_add(h1);
    h3 = h3.wrapping_add(h1);
    h4 = h4.wrapping_add(h1);
    h1 = fmix(h1);
    h2 = fmix(h2);
    h3 = fmix(h3);
    h4 = fmix(h4);
    h1 = h1.wrapping_add(h2).wrapping_add(h3).wrapping_add(h4);
    h2 = h2.wrapping_add(h1);
    h3 = h3.wrapping_add(h1);
    h4 = h4.wrapping_add(h1);
    h1 as u128 | (h2 as u128) << 32 | (h3 as u128) << 64 | (h4 as u128) << 96
}

/// One chunk of a minishard index: its id and the byte range of its data in the shard file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MinishardEntry {
    /// The chunk id.
    pub id: u64,
    /// First byte of the chunk's data in the shard file.
    pub start: u64,
    /// Bytes of data.
    pub size: u64,
}

/// gzip `data` (level 6).
pub fn gzip(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    // Writing into a Vec cannot fail.
    let _ = encoder.write_all(data);
    encoder.finish().unwrap_or_default()
}

/// gunzip `data`, refusing output beyond `limit` bytes.
pub fn gunzip(data: &[u8], limit: u64) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    gunzip_into(data, limit, &mut out)?;
    Ok(out)
}

/// [`gunzip`] into `out` (cleared first), reusing its allocation. The gzip trailer's size (the
/// last member's, modulo 2^32) sizes `out` up front when it is within `limit`, so a single
/// member decompresses without growing the buffer step by step.
pub fn gunzip_into(data: &[u8], limit: u64, out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    if let Some(trailer) = data.len().checked_sub(4).map(|at| &data[at..]) {
        let size = u64::from(u32::from_le_bytes([
            trailer[0], trailer[1], trailer[2], trailer[3],
        ]));
        // A hint only: never more than the limit, nor more than a 1032:1 deflate ratio allows.
        let plausible = (data.len() as u64).saturating_mul(1032);
        if size <= limit && size <= plausible {
            out.reserve(size as usize + 1);
        }
    }
    flate2::read::MultiGzDecoder::new(data)
        .take(limit.saturating_add(1))
        .read_to_end(out)
        .map_err(|e| format!("not valid gzip data: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!("gzip data decompress to more than {limit} bytes"));
    }
    Ok(())
}

/// Parse a decoded minishard index. `index_end` is the size of the shard index; `shard_size`
/// (when known) bounds the data ranges.
pub fn parse_minishard_index(
    bytes: &[u8],
    index_end: u64,
    shard_size: Option<u64>,
) -> Result<Vec<MinishardEntry>, String> {
    if bytes.len() % 24 != 0 {
        return Err(format!(
            "minishard index of {} bytes is not a whole number of 24-byte entries",
            bytes.len()
        ));
    }
    let n = bytes.len() / 24;
    let value = |row: usize, i: usize| {
        let at = (row * n + i) * 8;
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(b)
    };
    let mut entries = Vec::with_capacity(n);
    let mut id = 0u64;
    let mut end = index_end;
    for i in 0..n {
        id = id.wrapping_add(value(0, i));
        let start = end
            .checked_add(value(1, i))
            .ok_or("minishard index offsets overflow")?;
        let size = value(2, i);
        end = start
            .checked_add(size)
            .ok_or("minishard index sizes overflow")?;
        if let Some(shard_size) = shard_size {
            if end > shard_size {
                return Err(format!(
                    "chunk {id} at bytes {start}..{end} lies past the end of the shard \
                     ({shard_size} bytes)"
                ));
            }
        }
        entries.push(MinishardEntry { id, start, size });
    }
    Ok(entries)
}

/// Encode a minishard index of `entries` (sorted by id; starts absolute in the shard file).
pub fn encode_minishard_index(entries: &[MinishardEntry], index_end: u64) -> Vec<u8> {
    let n = entries.len();
    let mut rows = vec![0u64; 3 * n];
    let mut prev_id = 0u64;
    let mut prev_end = index_end;
    for (i, e) in entries.iter().enumerate() {
        rows[i] = e.id.wrapping_sub(prev_id);
        rows[n + i] = e.start.wrapping_sub(prev_end);
        rows[2 * n + i] = e.size;
        prev_id = e.id;
        prev_end = e.start + e.size;
    }
    rows.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Parse the shard index: per minishard, the absolute byte range of its index in the shard.
pub fn parse_shard_index(
    bytes: &[u8],
    spec: &ShardingSpec,
    shard_size: Option<u64>,
) -> Result<Vec<(u64, u64)>, String> {
    let index_end = spec.shard_index_bytes();
    if bytes.len() as u64 != index_end {
        return Err(format!(
            "shard index has {} bytes, {index_end} expected ({} minishards)",
            bytes.len(),
            spec.minishards()
        ));
    }
    bytes
        .chunks_exact(16)
        .enumerate()
        .map(|(m, pair)| minishard_range(pair, m as u64, index_end, shard_size))
        .collect()
}

/// The absolute byte range of minishard `m`'s index from its 16-byte shard index entry.
pub fn minishard_range(
    pair: &[u8],
    m: u64,
    index_end: u64,
    shard_size: Option<u64>,
) -> Result<(u64, u64), String> {
    if pair.len() != 16 {
        return Err(format!(
            "shard index entry of minishard {m} has {} bytes, 16 expected",
            pair.len()
        ));
    }
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a.copy_from_slice(&pair[..8]);
    b.copy_from_slice(&pair[8..]);
    let (start, end) = (u64::from_le_bytes(a), u64::from_le_bytes(b));
    if start > end {
        return Err(format!(
            "minishard {m} index range {start}..{end} ends before it starts"
        ));
    }
    let (start, end) = match (index_end.checked_add(start), index_end.checked_add(end)) {
        (Some(s), Some(e)) => (s, e),
        _ => {
            return Err(format!(
                "minishard {m} index range {start}..{end} overflows"
            ))
        }
    };
    if (end - start) % 24 != 0 && end - start > (1 << 40) {
        return Err(format!(
            "minishard {m} index of {} bytes is too large",
            end - start
        ));
    }
    if let Some(size) = shard_size {
        if end > size {
            return Err(format!(
                "minishard {m} index at bytes {start}..{end} lies past the end of the shard \
                 ({size} bytes)"
            ));
        }
    }
    Ok((start, end))
}

/// Every entry of a whole shard file: the chunk ids and the absolute byte ranges of their
/// data, from the shard index and every minishard index (checked against the shard's size).
pub fn shard_entries(
    shard: &[u8],
    spec: &ShardingSpec,
    max_index_bytes: u64,
) -> Result<Vec<MinishardEntry>, String> {
    let index_end = spec.shard_index_bytes();
    let size = shard.len() as u64;
    if size < index_end {
        return Err(format!(
            "the shard has {size} bytes, less than its index ({index_end} bytes)"
        ));
    }
    let ranges = parse_shard_index(&shard[..index_end as usize], spec, Some(size))?;
    let mut entries = Vec::new();
    for (m, (start, end)) in ranges.into_iter().enumerate() {
        if start == end {
            continue;
        }
        let raw = &shard[start as usize..end as usize];
        let decoded;
        let index = match spec.minishard_index_encoding {
            ShardEncoding::Raw => raw,
            ShardEncoding::Gzip => {
                decoded = gunzip(raw, max_index_bytes)
                    .map_err(|e| format!("minishard {m} index: {e}"))?;
                &decoded[..]
            }
        };
        entries.extend(
            parse_minishard_index(index, index_end, Some(size))
                .map_err(|e| format!("minishard {m} index: {e}"))?,
        );
    }
    Ok(entries)
}

/// Every chunk of a whole shard file: id → its stored (possibly gzip-compressed) data.
pub fn parse_shard(
    shard: &[u8],
    spec: &ShardingSpec,
    max_index_bytes: u64,
) -> Result<BTreeMap<u64, Vec<u8>>, String> {
    Ok(shard_entries(shard, spec, max_index_bytes)?
        .into_iter()
        .map(|e| {
            let data = shard[e.start as usize..(e.start + e.size) as usize].to_vec();
            (e.id, data)
        })
        .collect())
}

/// A whole shard file of `chunks` (id → stored data, already in the data encoding): the
/// shard index, then per minishard its chunks' data (by id) and its index.
pub fn assemble_shard<B: AsRef<[u8]>>(chunks: &BTreeMap<u64, B>, spec: &ShardingSpec) -> Vec<u8> {
    let parts = shard_parts(chunks, spec);
    let mut shard = Vec::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in &parts {
        shard.extend_from_slice(part);
    }
    shard
}

/// The shard file of `chunks` ([`assemble_shard`]) as the pieces it is made of, in order:
/// the shard index, then per minishard its chunks' data (borrowed) and its encoded index.
/// A writer streams them to the store without building the shard in memory.
pub fn shard_parts<'a, B: AsRef<[u8]>>(
    chunks: &'a BTreeMap<u64, B>,
    spec: &ShardingSpec,
) -> Vec<std::borrow::Cow<'a, [u8]>> {
    use std::borrow::Cow;
    let index_end = spec.shard_index_bytes();
    let mut by_minishard: BTreeMap<u64, Vec<(u64, &'a [u8])>> = BTreeMap::new();
    for (&id, data) in chunks {
        by_minishard
            .entry(spec.place(id).minishard)
            .or_default()
            .push((id, data.as_ref()));
    }
    let mut index = vec![0u8; index_end as usize];
    let mut body: Vec<Cow<'a, [u8]>> = Vec::with_capacity(chunks.len() + by_minishard.len());
    // Bytes after the shard index so far.
    let mut at = 0u64;
    for (m, members) in by_minishard {
        let mut entries = Vec::with_capacity(members.len());
        for (id, data) in members {
            entries.push(MinishardEntry {
                id,
                start: index_end + at,
                size: data.len() as u64,
            });
            at += data.len() as u64;
            body.push(Cow::Borrowed(data));
        }
        let mut encoded = encode_minishard_index(&entries, index_end);
        if spec.minishard_index_encoding == ShardEncoding::Gzip {
            encoded = gzip(&encoded);
        }
        let (start, end) = (at, at + encoded.len() as u64);
        at = end;
        body.push(Cow::Owned(encoded));
        let slot = (m * 16) as usize;
        index[slot..slot + 8].copy_from_slice(&start.to_le_bytes());
        index[slot + 8..slot + 16].copy_from_slice(&end.to_le_bytes());
    }
    let mut parts = Vec::with_capacity(body.len() + 1);
    parts.push(Cow::Owned(index));
    parts.extend(body);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmurhash3_x86_128_vectors() {
        // Values of the Python mmh3 package (`mmh3.hash128(data, seed, x64arch=False)`).
        let vectors: [(&[u8], u32, u128); 8] = [
            (b"", 0, 0),
            (b"", 1, 0x54d201b954d201b954d201b988c4adec),
            (b"hello", 0, 0x9adb31b69adb31b6db91def72b2444a0),
            (
                b"The quick brown fox jumps over the lazy dog",
                0,
                0xe5e91d2c5d7bf66cecee2c672f1583c3,
            ),
            (&0u64.to_le_bytes(), 0, 0x4772b0844772b0844772b084e028ae41),
            (&1u64.to_le_bytes(), 0, 0xe8bd67d6e8bd67d6e8bd67d616d4ce9a),
            (
                &123456789u64.to_le_bytes(),
                0,
                0x126576fc126576fc126576fc191a1827,
            ),
            (
                &[
                    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                    22, 23, 24, 25, 26, 27, 28, 29, 30,
                ],
                42,
                0x026beefc906b12fa724814a32a0301fb,
            ),
        ];
        for (data, seed, expected) in vectors {
            assert_eq!(murmurhash3_x86_128(data, seed), expected, "{data:?}");
        }
        assert_eq!(ShardHash::Murmurhash3X86_128.apply(1), 0xe8bd67d616d4ce9a);
    }

    #[test]
    fn morton_codes() {
        // A 3 x 3 x 2 grid: 2 bits for x and y, 1 for z.
        let grid = [3, 3, 2];
        assert_eq!(compressed_morton_code(&[0, 0, 0], &grid), 0);
        assert_eq!(compressed_morton_code(&[1, 0, 0], &grid), 1);
        assert_eq!(compressed_morton_code(&[0, 1, 0], &grid), 2);
        assert_eq!(compressed_morton_code(&[0, 0, 1], &grid), 4);
        assert_eq!(compressed_morton_code(&[2, 0, 0], &grid), 8);
        assert_eq!(compressed_morton_code(&[0, 2, 0], &grid), 16);
        assert_eq!(compressed_morton_code(&[2, 2, 1], &grid), 28);
        for x in 0..3 {
            for y in 0..3 {
                for z in 0..2 {
                    let code = compressed_morton_code(&[x, y, z], &grid);
                    assert_eq!(morton_position(code, &grid), [x, y, z]);
                }
            }
        }
    }

    fn spec(encoding: ShardEncoding) -> ShardingSpec {
        ShardingSpec {
            preshift_bits: 1,
            hash: ShardHash::Murmurhash3X86_128,
            minishard_bits: 2,
            shard_bits: 3,
            minishard_index_encoding: encoding,
            data_encoding: encoding,
        }
    }

    #[test]
    fn shard_round_trip() {
        for encoding in [ShardEncoding::Raw, ShardEncoding::Gzip] {
            let spec = spec(encoding);
            let chunks: BTreeMap<u64, Vec<u8>> = (0..20u64)
                .map(|id| (id * 7, vec![id as u8; id as usize]))
                .collect();
            let shard = assemble_shard(&chunks, &spec);
            assert_eq!(parse_shard(&shard, &spec, 1 << 20).unwrap(), chunks);
        }
    }

    #[test]
    fn minishard_index_round_trip() {
        let entries = [
            MinishardEntry {
                id: 3,
                start: 64,
                size: 10,
            },
            MinishardEntry {
                id: 9,
                start: 74,
                size: 0,
            },
            MinishardEntry {
                id: 12,
                start: 100,
                size: 5,
            },
        ];
        let bytes = encode_minishard_index(&entries, 64);
        assert_eq!(
            parse_minishard_index(&bytes, 64, Some(105)).unwrap(),
            entries
        );
        assert!(parse_minishard_index(&bytes, 64, Some(104)).is_err());
        assert!(parse_minishard_index(&bytes[..20], 64, None).is_err());
    }

    #[test]
    fn hostile_shards_are_errors() {
        let spec = spec(ShardEncoding::Raw);
        // Truncated shard index.
        assert!(parse_shard(&[0u8; 10], &spec, 1 << 20)
            .unwrap_err()
            .contains("less than its index"));
        // A minishard index range past the end of the shard.
        let mut shard = vec![0u8; 64];
        shard[8..16].copy_from_slice(&1000u64.to_le_bytes());
        assert!(parse_shard(&shard, &spec, 1 << 20)
            .unwrap_err()
            .contains("past the end"));
        // A range that ends before it starts.
        let mut shard = vec![0u8; 64 + 24];
        shard[0..8].copy_from_slice(&24u64.to_le_bytes());
        assert!(parse_shard(&shard, &spec, 1 << 20)
            .unwrap_err()
            .contains("ends before"));
        // A chunk whose data lies past the end of the shard.
        let mut shard = vec![0u8; 64 + 24];
        shard[8..16].copy_from_slice(&24u64.to_le_bytes());
        shard[64 + 16..64 + 24].copy_from_slice(&1u64.to_le_bytes());
        shard[64 + 8..64 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(parse_shard(&shard, &spec, 1 << 20).is_err());
        // gzip that is not gzip.
        let gz = spec_gzip_shard_with_bad_index();
        assert!(parse_shard(&gz, &self::spec(ShardEncoding::Gzip), 1 << 20)
            .unwrap_err()
            .contains("gzip"));
    }

    fn spec_gzip_shard_with_bad_index() -> Vec<u8> {
        let mut shard = vec![0u8; 64 + 5];
        shard[8..16].copy_from_slice(&5u64.to_le_bytes());
        shard[64..].copy_from_slice(b"hello");
        shard
    }
}
