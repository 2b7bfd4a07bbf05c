//! The numcodecs `shuffle` codec (bytes→bytes): byte `j` of element `i` goes to position
//! `j * count + i` (all first bytes, then all second bytes, …).

use serde_json::{json, Value};

use crate::util::{config_err, corrupt, obj, unsupported, v2_json, v3_json, Conf};
use crate::{BytesToBytesCodec, CodecResult};

const ID: &str = "shuffle";

/// `shuffle` with `elementsize` bytes per element (numcodecs default 4).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShuffleCodec {
    elementsize: usize,
}

impl ShuffleCodec {
    /// `shuffle` with `elementsize` bytes per element (0 or 1: the data passes unchanged).
    pub fn new(elementsize: usize) -> Self {
        ShuffleCodec { elementsize }
    }

    /// Parse a numcodecs / v3 configuration (`elementsize`, default 4, at most 1 MiB).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        let elementsize = c.usize("elementsize")?.unwrap_or(4);
        if elementsize > 1 << 20 {
            return Err(config_err(
                ID,
                format!("'elementsize' {elementsize} is too large"),
            ));
        }
        Ok(ShuffleCodec { elementsize })
    }
}

fn shuffle_generic(src: &[u8], dst: &mut [u8], es: usize) {
    let count = src.len() / es;
    for (i, elem) in src.chunks_exact(es).enumerate() {
        for (j, &b) in elem.iter().enumerate() {
            dst[j * count + i] = b;
        }
    }
}

fn unshuffle_generic(src: &[u8], dst: &mut [u8], es: usize) {
    let count = src.len() / es;
    for (i, elem) in dst.chunks_exact_mut(es).enumerate() {
        for (j, b) in elem.iter_mut().enumerate() {
            *b = src[j * count + i];
        }
    }
}

fn shuffle_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let count = src.len() / N;
    let mut planes: Vec<&mut [u8]> = dst.chunks_exact_mut(count).collect();
    if planes.len() != N {
        return;
    }
    for (i, elem) in src.chunks_exact(N).enumerate() {
        for j in 0..N {
            planes[j][i] = elem[j];
        }
    }
}

fn unshuffle_n<const N: usize>(src: &[u8], dst: &mut [u8]) {
    let count = src.len() / N;
    let planes: Vec<&[u8]> = src.chunks_exact(count).collect();
    if planes.len() != N {
        return;
    }
    for (i, elem) in dst.chunks_exact_mut(N).enumerate() {
        for j in 0..N {
            elem[j] = planes[j][i];
        }
    }
}

/// Byte-shuffle `src` (a whole number of `es`-byte elements) into `dst`.
pub fn shuffle_bytes(src: &[u8], dst: &mut [u8], es: usize) {
    if src.is_empty() {
        return;
    }
    match es {
        2 => shuffle_n::<2>(src, dst),
        4 => shuffle_n::<4>(src, dst),
        8 => shuffle_n::<8>(src, dst),
        _ => shuffle_generic(src, dst, es),
    }
}

/// Inverse of [`shuffle_bytes`].
pub fn unshuffle_bytes(src: &[u8], dst: &mut [u8], es: usize) {
    if src.is_empty() {
        return;
    }
    match es {
        2 => unshuffle_n::<2>(src, dst),
        4 => unshuffle_n::<4>(src, dst),
        8 => unshuffle_n::<8>(src, dst),
        _ => unshuffle_generic(src, dst, es),
    }
}

impl BytesToBytesCodec for ShuffleCodec {
    fn name(&self) -> &str {
        "numcodecs.shuffle"
    }

    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        let es = self.elementsize;
        out.clear();
        if es <= 1 {
            out.extend_from_slice(input);
            return Ok(());
        }
        if input.len() % es != 0 {
            return Err(unsupported(
                ID,
                format!(
                    "{} bytes are not a whole number of {es}-byte elements",
                    input.len()
                ),
            ));
        }
        out.resize(input.len(), 0);
        shuffle_bytes(input, out, es);
        Ok(())
    }

    fn decode(
        &self,
        input: &[u8],
        out: &mut Vec<u8>,
        decoded_size: Option<usize>,
    ) -> CodecResult<()> {
        let es = self.elementsize;
        if let Some(e) = decoded_size {
            if e != input.len() {
                return Err(corrupt(ID, format!("{} bytes, expected {e}", input.len())));
            }
        }
        out.clear();
        if es <= 1 {
            out.extend_from_slice(input);
            return Ok(());
        }
        if input.len() % es != 0 {
            return Err(corrupt(
                ID,
                format!(
                    "{} bytes are not a whole number of {es}-byte elements",
                    input.len()
                ),
            ));
        }
        out.resize(input.len(), 0);
        unshuffle_bytes(input, out, es);
        Ok(())
    }

    fn fixed_encoded_size(&self, decoded_size: usize) -> Option<usize> {
        Some(decoded_size)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(
            self.name(),
            Some(obj([("elementsize", json!(self.elementsize))])),
        )
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, obj([("elementsize", json!(self.elementsize))])))
    }
}
