//! 32-bit checksum codecs (bytes→bytes): `crc32c` (Zarr v3 core and numcodecs), and the
//! numcodecs `crc32`, `adler32` and `fletcher32` (HDF5 variant). The checksum is a `u32`
//! little-endian, prepended or appended according to `location` (numcodecs defaults:
//! `crc32`/`adler32` start, `crc32c` end; `fletcher32` always end).

use serde_json::{json, Map, Value};

use crate::util::{config_err, corrupt, obj, v2_json, v3_json, Conf};
use crate::{BytesToBytesCodec, CodecResult};

/// Which checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumKind {
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// CRC-32 (zlib's, IEEE polynomial).
    Crc32,
    /// Adler-32.
    Adler32,
    /// Fletcher-32 as HDF5 computes it.
    Fletcher32,
}

impl ChecksumKind {
    /// The codec name / numcodecs id (`"crc32c"`, `"crc32"`, `"adler32"`, `"fletcher32"`).
    pub fn id(self) -> &'static str {
        match self {
            ChecksumKind::Crc32c => "crc32c",
            ChecksumKind::Crc32 => "crc32",
            ChecksumKind::Adler32 => "adler32",
            ChecksumKind::Fletcher32 => "fletcher32",
        }
    }

    fn default_location(self) -> Location {
        match self {
            ChecksumKind::Crc32 | ChecksumKind::Adler32 => Location::Start,
            ChecksumKind::Crc32c | ChecksumKind::Fletcher32 => Location::End,
        }
    }

    /// The checksum of `data`.
    pub fn compute(self, data: &[u8]) -> u32 {
        match self {
            ChecksumKind::Crc32c => crc32c::crc32c(data),
            ChecksumKind::Crc32 => crc32fast::hash(data),
            ChecksumKind::Adler32 => adler32(data),
            ChecksumKind::Fletcher32 => fletcher32(data),
        }
    }
}

/// Where the checksum goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Location {
    /// Prepended to the data.
    Start,
    /// Appended to the data.
    End,
}

/// A checksum codec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChecksumCodec {
    kind: ChecksumKind,
    location: Location,
    /// `location` was given explicitly (numcodecs then writes it into the JSON).
    explicit: bool,
    verify: bool,
}

impl ChecksumCodec {
    /// The checksum at its numcodecs default location.
    pub fn new(kind: ChecksumKind) -> Self {
        ChecksumCodec {
            kind,
            location: kind.default_location(),
            explicit: false,
            verify: true,
        }
    }

    /// CRC-32C, appended (Zarr v3 `crc32c`).
    pub fn crc32c() -> Self {
        Self::new(ChecksumKind::Crc32c)
    }

    /// A checksum at an explicit location (written into the JSON).
    pub fn with_location(kind: ChecksumKind, location: Location) -> CodecResult<Self> {
        if kind == ChecksumKind::Fletcher32 && location == Location::Start {
            return Err(config_err("fletcher32", "the checksum is always appended"));
        }
        Ok(ChecksumCodec {
            kind,
            location,
            explicit: true,
            verify: true,
        })
    }

    /// Do not check the stored checksum when decoding (for data written by tools with known
    /// checksum bugs).
    pub fn without_verification(mut self) -> Self {
        self.verify = false;
        self
    }

    /// Which checksum.
    pub fn kind(&self) -> ChecksumKind {
        self.kind
    }

    /// Where the checksum is stored.
    pub fn location(&self) -> Location {
        self.location
    }

    /// Parse a numcodecs / v3 configuration (`location` optional).
    pub fn from_config(kind: ChecksumKind, config: &Value) -> CodecResult<Self> {
        let c = Conf::new(kind.id(), config)?;
        match c.str("location")? {
            None => Ok(Self::new(kind)),
            Some("start") => Self::with_location(kind, Location::Start),
            Some("end") => Self::with_location(kind, Location::End),
            Some(other) => Err(config_err(
                kind.id(),
                format!("'location' must be \"start\" or \"end\", found \"{other}\""),
            )),
        }
    }

    fn config(&self) -> Map<String, Value> {
        if self.explicit && self.kind != ChecksumKind::Fletcher32 {
            let loc = if self.location == Location::Start {
                "start"
            } else {
                "end"
            };
            obj([("location", json!(loc))])
        } else {
            Map::new()
        }
    }
}

impl BytesToBytesCodec for ChecksumCodec {
    fn name(&self) -> &str {
        match self.kind {
            ChecksumKind::Crc32c if self.location == Location::End => "crc32c",
            ChecksumKind::Crc32c => "numcodecs.crc32c",
            ChecksumKind::Crc32 => "numcodecs.crc32",
            ChecksumKind::Adler32 => "numcodecs.adler32",
            ChecksumKind::Fletcher32 => "numcodecs.fletcher32",
        }
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        let sum = self.kind.compute(input).to_le_bytes();
        out.clear();
        out.reserve(input.len() + 4);
        match self.location {
            Location::Start => {
                out.extend_from_slice(&sum);
                out.extend_from_slice(input);
            }
            Location::End => {
                out.extend_from_slice(input);
                out.extend_from_slice(&sum);
            }
        }
        Ok(())
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        let id = self.kind.id();
        if input.len() < 4 {
            return Err(corrupt(
                id,
                format!("{} bytes cannot hold a 4-byte checksum", input.len()),
            ));
        }
        let (stored, payload) = match self.location {
            Location::Start => (&input[..4], &input[4..]),
            Location::End => (&input[input.len() - 4..], &input[..input.len() - 4]),
        };
        if let Some(e) = decoded_size {
            if payload.len() != e {
                return Err(corrupt(
                    id,
                    format!("payload has {} bytes, expected {e}", payload.len()),
                ));
            }
        }
        if self.verify {
            let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
            let computed = self.kind.compute(payload);
            if stored != computed {
                return Err(corrupt(
                    id,
                    format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
                ));
            }
        }
        out.clear();
        out.extend_from_slice(payload);
        Ok(())
    }

    fn fixed_encoded_size(&self, decoded_size: usize) -> Option<usize> {
        Some(decoded_size + 4)
    }

    fn to_v3_json(&self) -> Value {
        if self.kind == ChecksumKind::Crc32c && self.location == Location::End {
            return v3_json("crc32c", None);
        }
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(self.kind.id(), self.config()))
    }
}

/// Adler-32 (RFC 1950).
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    // Largest n such that 255 n (n + 1) / 2 + (n + 1) (MOD - 1) fits in u32.
    const NMAX: usize = 5552;
    let (mut a, mut b) = (1u32, 0u32);
    for block in data.chunks(NMAX) {
        let mut quads = block.chunks_exact(4);
        for q in &mut quads {
            a += q[0] as u32;
            b += a;
            a += q[1] as u32;
            b += a;
            a += q[2] as u32;
            b += a;
            a += q[3] as u32;
            b += a;
        }
        for &x in quads.remainder() {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

/// Fletcher-32 as HDF5 / netCDF compute it (big-endian 16-bit words, odd trailing byte as the
/// high byte of a last word).
pub fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let mut words = data.chunks_exact(2);
    loop {
        let mut block = 0;
        for w in words.by_ref() {
            sum1 += ((w[0] as u32) << 8) | w[1] as u32;
            sum2 += sum1;
            block += 1;
            if block == 360 {
                break;
            }
        }
        if block == 0 {
            break;
        }
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
        if block < 360 {
            break;
        }
    }
    if let [last] = words.remainder() {
        sum1 += (*last as u32) << 8;
        sum2 += sum1;
        sum1 = (sum1 & 0xffff) + (sum1 >> 16);
        sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// `crc32c` (Zarr v3 core: CRC-32C appended as `u32` LE) as its own type; the same codec as
/// [`ChecksumCodec::crc32c`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Crc32cCodec(ChecksumCodec);

impl Crc32cCodec {
    /// The `crc32c` codec (verifying when decoding).
    pub fn new() -> Self {
        Crc32cCodec(ChecksumCodec::crc32c())
    }
}

impl Default for Crc32cCodec {
    fn default() -> Self {
        Self::new()
    }
}

impl BytesToBytesCodec for Crc32cCodec {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        self.0.encode(input, out)
    }
    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        self.0.decode(input, out, decoded_size)
    }
    fn fixed_encoded_size(&self, decoded_size: usize) -> Option<usize> {
        self.0.fixed_encoded_size(decoded_size)
    }
    fn to_v3_json(&self) -> Value {
        self.0.to_v3_json()
    }
    fn to_v2_json(&self) -> Option<Value> {
        self.0.to_v2_json()
    }
}
