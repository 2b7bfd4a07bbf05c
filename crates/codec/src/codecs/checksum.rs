//! 32-bit checksum codecs (bytes→bytes): `crc32c` (Zarr v3 core and numcodecs), and the
//! numcodecs `crc32`, `adler32`, `fletcher32` (HDF5 variant) and `jenkins_lookup3` (HDF5's
//! lookup3 hash). The checksum is a `u32` little-endian, prepended or appended according to
//! `location` (numcodecs defaults: `crc32`/`adler32` start, `crc32c` end; `fletcher32` and
//! `jenkins_lookup3` always end). One codec type, [`ChecksumCodec`], frames and verifies every
//! kind; the kinds differ only in the function they compute (and `jenkins_lookup3` in its seed
//! and prefix).

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
    /// Bob Jenkins' lookup3 hash as HDF5 computes it (`H5_checksum_lookup3`); the kind alone
    /// hashes with seed 0 and no prefix.
    JenkinsLookup3,
}

impl ChecksumKind {
    /// Every kind.
    pub const ALL: [ChecksumKind; 5] = [
        ChecksumKind::Crc32c,
        ChecksumKind::Crc32,
        ChecksumKind::Adler32,
        ChecksumKind::Fletcher32,
        ChecksumKind::JenkinsLookup3,
    ];

    /// The codec name / numcodecs id (`"crc32c"`, `"crc32"`, `"adler32"`, `"fletcher32"`,
    /// `"jenkins_lookup3"`).
    pub fn id(self) -> &'static str {
        match self {
            ChecksumKind::Crc32c => "crc32c",
            ChecksumKind::Crc32 => "crc32",
            ChecksumKind::Adler32 => "adler32",
            ChecksumKind::Fletcher32 => "fletcher32",
            ChecksumKind::JenkinsLookup3 => "jenkins_lookup3",
        }
    }

    fn default_location(self) -> Location {
        match self {
            ChecksumKind::Crc32 | ChecksumKind::Adler32 => Location::Start,
            ChecksumKind::Crc32c | ChecksumKind::Fletcher32 | ChecksumKind::JenkinsLookup3 => {
                Location::End
            }
        }
    }

    /// numcodecs has no `location` for this kind: the checksum is always appended.
    fn always_appended(self) -> bool {
        matches!(
            self,
            ChecksumKind::Fletcher32 | ChecksumKind::JenkinsLookup3
        )
    }

    /// The checksum of `data` (lookup3 with seed 0 and no prefix).
    pub fn compute(self, data: &[u8]) -> u32 {
        match self {
            ChecksumKind::Crc32c => crc32c::crc32c(data),
            ChecksumKind::Crc32 => crc32fast::hash(data),
            ChecksumKind::Adler32 => adler32(data),
            ChecksumKind::Fletcher32 => fletcher32(data),
            ChecksumKind::JenkinsLookup3 => jenkins_lookup3(&[], data, 0),
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
    /// `jenkins_lookup3`'s seed (`initval`); 0 for the other kinds.
    initval: u32,
    /// `jenkins_lookup3`'s `prefix`: bytes hashed before the data, not stored.
    prefix: Option<Vec<u8>>,
}

impl ChecksumCodec {
    /// The checksum at its numcodecs default location.
    pub fn new(kind: ChecksumKind) -> Self {
        ChecksumCodec {
            kind,
            location: kind.default_location(),
            explicit: false,
            verify: true,
            initval: 0,
            prefix: None,
        }
    }

    /// numcodecs `jenkins_lookup3` with seed `initval`, hashing `prefix` (not stored) before
    /// the data.
    pub fn jenkins_lookup3(initval: u32, prefix: Option<Vec<u8>>) -> Self {
        ChecksumCodec {
            initval,
            prefix,
            ..Self::new(ChecksumKind::JenkinsLookup3)
        }
    }

    /// CRC-32C, appended (Zarr v3 `crc32c`).
    pub fn crc32c() -> Self {
        Self::new(ChecksumKind::Crc32c)
    }

    /// A checksum at an explicit location (written into the JSON).
    pub fn with_location(kind: ChecksumKind, location: Location) -> CodecResult<Self> {
        if kind.always_appended() && location == Location::Start {
            return Err(config_err(kind.id(), "the checksum is always appended"));
        }
        Ok(ChecksumCodec {
            location,
            explicit: true,
            ..Self::new(kind)
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

    /// Parse a numcodecs / v3 configuration (`location` optional; for `jenkins_lookup3`,
    /// `initval` (default 0) and `prefix` (a list of byte values or `null`) instead).
    pub fn from_config(kind: ChecksumKind, config: &Value) -> CodecResult<Self> {
        let c = Conf::new(kind.id(), config)?;
        if kind == ChecksumKind::JenkinsLookup3 {
            return Self::lookup3_from_config(&c);
        }
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

    fn lookup3_from_config(c: &Conf) -> CodecResult<Self> {
        const ID: &str = "jenkins_lookup3";
        let initval = c.i64("initval")?.unwrap_or(0);
        let initval = u32::try_from(initval)
            .or_else(|_| i32::try_from(initval).map(|v| v as u32))
            .map_err(|_| config_err(ID, format!("'initval' {initval} is not a 32-bit value")))?;
        let prefix = match c.get("prefix") {
            None => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| v.as_u64().and_then(|b| u8::try_from(b).ok()))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| config_err(ID, "'prefix' must be a list of byte values"))?,
            ),
            Some(Value::String(s)) => Some(s.as_bytes().to_vec()),
            Some(v) => {
                return Err(config_err(
                    ID,
                    format!("'prefix' must be a list of byte values, found {v}"),
                ))
            }
        };
        Ok(Self::jenkins_lookup3(initval, prefix))
    }

    /// The checksum of `data` with this codec's parameters.
    fn checksum(&self, data: &[u8]) -> u32 {
        match self.kind {
            ChecksumKind::JenkinsLookup3 => {
                jenkins_lookup3(self.prefix.as_deref().unwrap_or(&[]), data, self.initval)
            }
            kind => kind.compute(data),
        }
    }

    fn config(&self) -> Map<String, Value> {
        if self.kind == ChecksumKind::JenkinsLookup3 {
            // numcodecs writes both members always.
            return obj([
                ("initval", json!(self.initval)),
                ("prefix", json!(self.prefix)),
            ]);
        }
        if self.explicit && !self.kind.always_appended() {
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
            ChecksumKind::JenkinsLookup3 => "numcodecs.jenkins_lookup3",
        }
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        let sum = self.checksum(input).to_le_bytes();
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
            let computed = self.checksum(payload);
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

/// The lookup3 hash of `data` with seed `initval`, continuing over `prefix` then `data`.
pub fn jenkins_lookup3(prefix: &[u8], data: &[u8], initval: u32) -> u32 {
    if prefix.is_empty() {
        return lookup3(data, initval);
    }
    let mut all = Vec::with_capacity(prefix.len() + data.len());
    all.extend_from_slice(prefix);
    all.extend_from_slice(data);
    lookup3(&all, initval)
}

fn lookup3(k: &[u8], initval: u32) -> u32 {
    let len = k.len();
    let init = 0xdead_beef_u32
        .wrapping_add(len as u32)
        .wrapping_add(initval);
    let (mut a, mut b, mut c) = (init, init, init);
    let word = |s: &[u8]| {
        s.iter().enumerate().fold(0u32, |acc, (i, byte)| {
            acc.wrapping_add(u32::from(*byte) << (8 * i))
        })
    };
    let mut rest = k;
    while rest.len() > 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        // lookup3's `mix`: x -= z; x ^= rot(z, r); z += y, the roles cycling.
        mix_step(&mut a, &mut c, b, 4);
        mix_step(&mut b, &mut a, c, 6);
        mix_step(&mut c, &mut b, a, 8);
        mix_step(&mut a, &mut c, b, 16);
        mix_step(&mut b, &mut a, c, 19);
        mix_step(&mut c, &mut b, a, 4);
        rest = &rest[12..];
    }
    if rest.is_empty() {
        return c;
    }
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]));
    }
    // lookup3's `final`: x ^= y; x -= rot(y, r), the roles cycling.
    final_step(&mut c, b, 14);
    final_step(&mut a, c, 11);
    final_step(&mut b, a, 25);
    final_step(&mut c, b, 16);
    final_step(&mut a, c, 4);
    final_step(&mut b, a, 14);
    final_step(&mut c, b, 24);
    c
}

fn mix_step(x: &mut u32, z: &mut u32, y: u32, r: u32) {
    *x = x.wrapping_sub(*z) ^ z.rotate_left(r);
    *z = z.wrapping_add(y);
}

fn final_step(x: &mut u32, y: u32, r: u32) {
    *x = (*x ^ y).wrapping_sub(y.rotate_left(r));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup3_values_short_inputs_and_corruption() {
        // lookup3 of nothing is its initial value.
        assert_eq!(jenkins_lookup3(&[], b"", 0), 0xdead_beef);
        // Values of numcodecs.jenkins.jenkins_lookup3.
        assert_eq!(jenkins_lookup3(&[], b"", 7), 0xdead_bef6);
        assert_eq!(jenkins_lookup3(&[], b"a", 0), 0x58d6_8708);
        assert_eq!(jenkins_lookup3(&[], b"a", 7), 0xcb4e_a349);
        assert_eq!(jenkins_lookup3(&[], b"hello world!", 0), 0x4b89_46db);
        assert_eq!(jenkins_lookup3(&[], b"hello world!x", 0), 0xda58_b051);
        let bytes: Vec<u8> = (0..40).collect();
        assert_eq!(jenkins_lookup3(&[], &bytes, 0), 0x1c9f_a888);
        assert_eq!(jenkins_lookup3(&bytes[..3], &bytes[3..], 7), 0x6280_137e);
        let codec = ChecksumCodec::new(ChecksumKind::JenkinsLookup3);
        let mut enc = Vec::new();
        codec.encode(b"hello world!x", &mut enc).unwrap();
        let mut dec = Vec::new();
        codec.decode(&enc, &mut dec, Some(13)).unwrap();
        assert_eq!(dec, b"hello world!x");
        enc[0] ^= 1;
        assert!(codec.decode(&enc, &mut dec, None).is_err());
        assert!(codec.decode(&enc[..3], &mut dec, None).is_err());
    }

    #[test]
    fn lookup3_seed_and_prefix_come_from_the_configuration_and_go_back_into_it() {
        let config = json!({"initval": 7, "prefix": [0, 1, 2]});
        let codec = ChecksumCodec::from_config(ChecksumKind::JenkinsLookup3, &config).unwrap();
        assert_eq!(
            codec,
            ChecksumCodec::jenkins_lookup3(7, Some(vec![0, 1, 2]))
        );
        let bytes: Vec<u8> = (3..40).collect();
        let mut enc = Vec::new();
        codec.encode(&bytes, &mut enc).unwrap();
        let stored = jenkins_lookup3(&[0, 1, 2], &bytes, 7);
        assert_eq!(enc[bytes.len()..], stored.to_le_bytes());
        assert_eq!(
            codec.to_v2_json(),
            Some(json!({"id": "jenkins_lookup3", "initval": 7, "prefix": [0, 1, 2]}))
        );
        assert_eq!(
            ChecksumCodec::new(ChecksumKind::JenkinsLookup3).to_v3_json(),
            json!({"name": "numcodecs.jenkins_lookup3", "configuration": {"initval": 0, "prefix": null}})
        );
        // A negative seed is the same 32 bits; the checksum is always appended.
        let negative = json!({"initval": -1});
        let codec = ChecksumCodec::from_config(ChecksumKind::JenkinsLookup3, &negative).unwrap();
        assert_eq!(codec, ChecksumCodec::jenkins_lookup3(u32::MAX, None));
        assert!(
            ChecksumCodec::with_location(ChecksumKind::JenkinsLookup3, Location::Start).is_err()
        );
        assert!(ChecksumCodec::from_config(
            ChecksumKind::JenkinsLookup3,
            &json!({"prefix": [256]})
        )
        .is_err());
    }
}
