//! Helpers shared by the integration tests.
#![allow(dead_code)]

use neurochunk_codec::{ArrayBytes, ChunkRepr};
use neurochunk_dtype::DataType;

pub fn repr(shape: &[usize], data_type: DataType, fill: &[u8]) -> ChunkRepr {
    ChunkRepr {
        shape: shape.to_vec(),
        data_type,
        fill_value: fill.to_vec(),
    }
}

pub fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn u16s(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn i32s(v: &[i32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn f32s(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn strings(items: &[&[u8]]) -> ArrayBytes {
    let mut data = Vec::new();
    let mut offsets = vec![0];
    for it in items {
        data.extend_from_slice(it);
        offsets.push(data.len());
    }
    ArrayBytes::Variable { data, offsets }
}

/// Deterministic pseudo-random bytes (xorshift), with runs so compressors have work to do.
pub fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let run = (x >> 60) as usize % 4 + 1;
        for _ in 0..run {
            if out.len() < n {
                out.push((x >> 24) as u8 & 0x3f);
            }
        }
    }
    out
}
