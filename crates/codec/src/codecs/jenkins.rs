//! numcodecs `jenkins_lookup3` (bytes→bytes; Zarr v3 `numcodecs.jenkins_lookup3`): Bob
//! Jenkins' lookup3 hash as HDF5 computes it (`H5_checksum_lookup3`), a `u32` little-endian
//! appended to the data. With a `prefix`, the hash covers the prefix bytes and then the data
//! (the prefix is not stored).

use serde_json::{json, Map, Value};

use crate::util::{config_err, corrupt, obj, v2_json, v3_json, Conf};
use crate::{BytesToBytesCodec, CodecResult};

const ID: &str = "jenkins_lookup3";

/// The lookup3 hash of `data` with seed `initval`, continuing over `prefix` then `data`.
pub fn jenkins_lookup3(prefix: &[u8], data: &[u8], initval: u32) -> u32 {
    if prefix.is_empty() {
        return hash(data, initval);
    }
    let mut all = Vec::with_capacity(prefix.len() + data.len());
    all.extend_from_slice(prefix);
    all.extend_from_slice(data);
    hash(&all, initval)
}

fn hash(k: &[u8], initval: u32) -> u32 {
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
        // mix
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(4);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(6);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(8);
        b = b.wrapping_add(a);
        a = a.wrapping_sub(c);
        a ^= c.rotate_left(16);
        c = c.wrapping_add(b);
        b = b.wrapping_sub(a);
        b ^= a.rotate_left(19);
        a = a.wrapping_add(c);
        c = c.wrapping_sub(b);
        c ^= b.rotate_left(4);
        b = b.wrapping_add(a);
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
    // final
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(14));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(11));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(25));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(16));
    a ^= c;
    a = a.wrapping_sub(c.rotate_left(4));
    b ^= a;
    b = b.wrapping_sub(a.rotate_left(14));
    c ^= b;
    c = c.wrapping_sub(b.rotate_left(24));
    c
}

/// numcodecs `jenkins_lookup3`: the data, then its lookup3 hash (`u32` LE).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JenkinsLookup3Codec {
    initval: u32,
    prefix: Option<Vec<u8>>,
}

impl JenkinsLookup3Codec {
    /// The hash with seed `initval` and no prefix.
    pub fn new(initval: u32) -> Self {
        JenkinsLookup3Codec {
            initval,
            prefix: None,
        }
    }

    /// Parse a numcodecs configuration (`initval` default 0; `prefix` a list of byte values
    /// or `null`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
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
        Ok(JenkinsLookup3Codec { initval, prefix })
    }

    fn config(&self) -> Map<String, Value> {
        obj([
            ("initval", json!(self.initval)),
            ("prefix", json!(self.prefix)),
        ])
    }

    fn checksum(&self, data: &[u8]) -> u32 {
        jenkins_lookup3(self.prefix.as_deref().unwrap_or(&[]), data, self.initval)
    }
}

impl BytesToBytesCodec for JenkinsLookup3Codec {
    fn name(&self) -> &str {
        "numcodecs.jenkins_lookup3"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        out.clear();
        out.reserve(input.len() + 4);
        out.extend_from_slice(input);
        out.extend_from_slice(&self.checksum(input).to_le_bytes());
        Ok(())
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        if input.len() < 4 {
            return Err(corrupt(ID, "shorter than the 4-byte checksum"));
        }
        let (data, tail) = input.split_at(input.len() - 4);
        crate::util::check_size(ID, data.len(), decoded_size)?;
        let stored = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
        let computed = self.checksum(data);
        if stored != computed {
            return Err(corrupt(
                ID,
                format!("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"),
            ));
        }
        out.clear();
        out.extend_from_slice(data);
        Ok(())
    }

    fn fixed_encoded_size(&self, decoded_size: usize) -> Option<usize> {
        Some(decoded_size + 4)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_short_inputs_and_corruption() {
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
        let codec = JenkinsLookup3Codec::new(0);
        let mut enc = Vec::new();
        codec.encode(b"hello world!x", &mut enc).unwrap();
        let mut dec = Vec::new();
        codec.decode(&enc, &mut dec, Some(13)).unwrap();
        assert_eq!(dec, b"hello world!x");
        enc[0] ^= 1;
        assert!(codec.decode(&enc, &mut dec, None).is_err());
        assert!(codec.decode(&enc[..3], &mut dec, None).is_err());
    }
}
