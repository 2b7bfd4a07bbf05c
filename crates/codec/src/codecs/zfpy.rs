//! numcodecs `zfpy` (array→bytes; Zarr v3 `numcodecs.zfpy`): the zfp 1.0 library (through
//! `neurochunk-zfp-sys`, which builds it from vendored source), one zfp stream per chunk with
//! the full zfp header (type, shape, mode), as `zfpy.compress_numpy(chunk, write_header=True)`
//! writes it.
//!
//! Modes (numcodecs' numbering, zfp's `zfp_mode`): 2 fixed rate (`rate` bits per value),
//! 3 fixed precision (`precision` bit planes), 4 fixed accuracy (`tolerance`), 5 reversible
//! (lossless). As in zfpy, a negative parameter falls through to the next one given and,
//! when none is, to reversible. Elements are int32, int64, float32 or float64; chunks have 1–4
//! dimensions (the last axis is zfp's fastest, `nx`).
//!
//! Decoding reads everything from the stream's header and checks it against the chunk before
//! allocating. zfp's bit reader does not check the end of its buffer, so the stream is copied
//! into a zero-padded, word-aligned buffer as large as the header's mode can ever consume;
//! a stream that needs the padding is reported as truncated.

use std::ffi::c_void;

use neurochunk_dtype::DataType;
use neurochunk_zfp_sys as zfp;
use serde_json::{json, Map, Value};

use crate::util::{config_err, corrupt, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const ID: &str = "zfpy";
const HEADER_FULL: u32 = 0x7;
/// zfp's `zfp_type` values.
const TYPE_INT32: u32 = 1;
const TYPE_INT64: u32 = 2;
const TYPE_FLOAT: u32 = 3;
const TYPE_DOUBLE: u32 = 4;

/// The zfp compression mode.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ZfpMode {
    /// Fixed rate: this many compressed bits per value.
    FixedRate(f64),
    /// Fixed precision: this many uncompressed bit planes.
    FixedPrecision(u32),
    /// Fixed accuracy: absolute error at most this tolerance.
    FixedAccuracy(f64),
    /// Lossless.
    Reversible,
}

/// numcodecs `zfpy`.
#[derive(Clone, Debug, PartialEq)]
pub struct ZfpyCodec {
    mode: i64,
    tolerance: f64,
    rate: f64,
    precision: i64,
}

impl ZfpyCodec {
    /// `zfpy` in `mode`. Reversible is written as numcodecs writes it, fixed accuracy with
    /// every parameter −1 (numcodecs' `ZFPY` accepts no mode 5 for encoding).
    pub fn new(mode: ZfpMode) -> Self {
        let mut c = ZfpyCodec {
            mode: 4,
            tolerance: -1.0,
            rate: -1.0,
            precision: -1,
        };
        match mode {
            ZfpMode::FixedRate(r) => {
                c.mode = 2;
                c.rate = r;
            }
            ZfpMode::FixedPrecision(p) => {
                c.mode = 3;
                c.precision = p.into();
            }
            ZfpMode::FixedAccuracy(t) => {
                c.mode = 4;
                c.tolerance = t;
            }
            ZfpMode::Reversible => {}
        }
        c
    }

    /// Parse a numcodecs / v3 configuration (`mode` default 4; `tolerance`, `rate`,
    /// `precision` default −1; numcodecs' derived `compression_kwargs` is ignored).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        Ok(ZfpyCodec {
            mode: c.i64("mode")?.unwrap_or(4),
            tolerance: c.f64("tolerance")?.unwrap_or(-1.0),
            rate: c.f64("rate")?.unwrap_or(-1.0),
            precision: c.i64("precision")?.unwrap_or(-1),
        })
    }

    /// The mode zfpy compresses with: the mode's parameter when given (non-negative), else
    /// reversible (zfpy's fall-through).
    pub fn effective_mode(&self) -> CodecResult<ZfpMode> {
        Ok(match self.mode {
            2 if self.rate >= 0.0 => ZfpMode::FixedRate(self.rate),
            3 if self.precision >= 0 => {
                ZfpMode::FixedPrecision(u32::try_from(self.precision.min(64)).unwrap_or(64))
            }
            4 if self.tolerance >= 0.0 => ZfpMode::FixedAccuracy(self.tolerance),
            2..=5 => ZfpMode::Reversible,
            other => {
                return Err(config_err(
                    ID,
                    format!(
                        "'mode' {other} is not supported (2 fixed rate, 3 fixed precision, \
                         4 fixed accuracy, 5 reversible)"
                    ),
                ))
            }
        })
    }

    fn config(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("mode".into(), json!(self.mode));
        let kwargs = match self.mode {
            2 => Some(("rate", json!(self.rate))),
            3 => Some(("precision", json!(self.precision))),
            4 => Some(("tolerance", json!(self.tolerance))),
            _ => None,
        };
        if let Some((k, v)) = kwargs {
            let mut kw = Map::new();
            kw.insert(k.into(), v);
            m.insert("compression_kwargs".into(), Value::Object(kw));
        }
        m.insert("tolerance".into(), json!(self.tolerance));
        m.insert("rate".into(), json!(self.rate));
        m.insert("precision".into(), json!(self.precision));
        m
    }

    /// Check that chunks of `repr` can be stored (int32/int64/float32/float64, 1–4 axes).
    pub fn check_type(repr: &ChunkRepr) -> CodecResult<()> {
        zfp_type(&repr.data_type)?;
        if repr.shape.is_empty() || repr.shape.len() > 4 {
            return Err(unsupported(
                ID,
                format!(
                    "zfp compresses chunks of 1 to 4 dimensions, not {}",
                    repr.shape.len()
                ),
            ));
        }
        Ok(())
    }
}

fn zfp_type(dt: &DataType) -> CodecResult<u32> {
    Ok(match dt {
        DataType::Int32 => TYPE_INT32,
        DataType::Int64 => TYPE_INT64,
        DataType::Float32 => TYPE_FLOAT,
        DataType::Float64 => TYPE_DOUBLE,
        other => {
            return Err(unsupported(
                ID,
                format!(
                    "zfp stores int32, int64, float32 and float64, not {other} \
                     (choose another compressor, e.g. zstd)"
                ),
            ))
        }
    })
}

/// Owns a zfp stream, field and bit stream; frees them on drop.
struct Zfp {
    stream: *mut zfp::zfp_stream,
    field: *mut zfp::zfp_field,
    bits: *mut zfp::bitstream,
}

impl Drop for Zfp {
    fn drop(&mut self) {
        // SAFETY: each pointer is null or was returned by the matching zfp allocator and is
        // freed once here.
        unsafe {
            if !self.bits.is_null() {
                zfp::stream_close(self.bits);
            }
            if !self.field.is_null() {
                zfp::zfp_field_free(self.field);
            }
            if !self.stream.is_null() {
                zfp::zfp_stream_close(self.stream);
            }
        }
    }
}

impl Zfp {
    fn new() -> CodecResult<Zfp> {
        // SAFETY: plain allocations; null results are checked.
        let z = unsafe {
            Zfp {
                stream: zfp::zfp_stream_open(std::ptr::null_mut()),
                field: zfp::zfp_field_alloc(),
                bits: std::ptr::null_mut(),
            }
        };
        if z.stream.is_null() || z.field.is_null() {
            return Err(unsupported(ID, "cannot allocate a zfp stream"));
        }
        Ok(z)
    }

    /// Attach `buf` as the bit stream (the buffer must outlive every use of `self`).
    fn attach(&mut self, buf: &mut [u64]) -> CodecResult<()> {
        // SAFETY: `buf` is a valid, word-aligned region of `len * 8` bytes.
        unsafe {
            self.bits = zfp::stream_open(buf.as_mut_ptr() as *mut c_void, buf.len() * 8);
            if self.bits.is_null() {
                return Err(unsupported(ID, "cannot open a zfp bit stream"));
            }
            zfp::zfp_stream_set_bit_stream(self.stream, self.bits);
            zfp::zfp_stream_rewind(self.stream);
        }
        Ok(())
    }
}

fn set_size(field: *mut zfp::zfp_field, ty: u32, shape: &[usize]) {
    let mut dims = [0usize; 4];
    for (i, d) in shape.iter().rev().enumerate() {
        dims[i] = *d;
    }
    // SAFETY: `field` is a live field from zfp_field_alloc.
    unsafe {
        zfp::zfp_field_set_type(field, ty as _);
        match shape.len() {
            1 => zfp::zfp_field_set_size_1d(field, dims[0]),
            2 => zfp::zfp_field_set_size_2d(field, dims[0], dims[1]),
            3 => zfp::zfp_field_set_size_3d(field, dims[0], dims[1], dims[2]),
            _ => zfp::zfp_field_set_size_4d(field, dims[0], dims[1], dims[2], dims[3]),
        }
    }
}

impl ArrayToBytesCodec for ZfpyCodec {
    fn name(&self) -> &str {
        "numcodecs.zfpy"
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        Self::check_type(repr)?;
        let ty = zfp_type(&repr.data_type)?;
        let mode = self.effective_mode()?;
        let ArrayBytes::Fixed(mut bytes) = data else {
            return Err(unsupported(
                ID,
                "variable-length elements are not supported",
            ));
        };
        let size = repr.data_type.fixed_size().unwrap_or(0);
        if bytes.len() != size * repr.num_elements() {
            return Err(corrupt(
                ID,
                format!(
                    "chunk has {} bytes, expected {}",
                    bytes.len(),
                    size * repr.num_elements()
                ),
            ));
        }
        let mut z = Zfp::new()?;
        set_size(z.field, ty, &repr.shape);
        // SAFETY: the stream and field are live; the field points at `bytes`, which holds
        // exactly the field's elements and outlives the compression; the output buffer is
        // as large as zfp_stream_maximum_size says the stream can ever need.
        unsafe {
            zfp::zfp_field_set_pointer(z.field, bytes.as_mut_ptr() as *mut c_void);
            match mode {
                ZfpMode::FixedRate(r) => {
                    zfp::zfp_stream_set_rate(z.stream, r, ty as _, repr.shape.len() as _, 0 as _);
                }
                ZfpMode::FixedPrecision(p) => {
                    zfp::zfp_stream_set_precision(z.stream, p as _);
                }
                ZfpMode::FixedAccuracy(t) => {
                    zfp::zfp_stream_set_accuracy(z.stream, t);
                }
                ZfpMode::Reversible => zfp::zfp_stream_set_reversible(z.stream),
            }
            let max = zfp::zfp_stream_maximum_size(z.stream, z.field);
            if max == 0 {
                return Err(config_err(ID, format!("invalid parameters for {mode:?}")));
            }
            let mut out = vec![0u64; max.div_ceil(8) + 1];
            z.attach(&mut out)?;
            if zfp::zfp_write_header(z.stream, z.field, HEADER_FULL) == 0 {
                return Err(unsupported(ID, "cannot write the zfp header"));
            }
            let n = zfp::zfp_compress(z.stream, z.field);
            if n == 0 {
                return Err(unsupported(ID, "compression failed"));
            }
            drop(z);
            let mut result = Vec::with_capacity(n);
            for w in &out {
                result.extend_from_slice(&w.to_ne_bytes());
                if result.len() >= n {
                    break;
                }
            }
            result.truncate(n);
            Ok(result)
        }
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let expected_ty = zfp_type(&repr.data_type)?;
        // Header: at most 96 bits of magic + metadata and 64 bits of mode.
        const HEADER_WORDS: usize = 4;
        let words = |n: usize| n.div_ceil(8);
        let mut head = vec![0u64; HEADER_WORDS.max(words(bytes.len()).min(HEADER_WORDS)) + 1];
        copy_in(&mut head, &bytes);
        let mut z = Zfp::new()?;
        z.attach(&mut head)?;
        // SAFETY: live stream and field; the bit stream reads at most the header's 160 bits
        // from a buffer of at least 256.
        let read = unsafe { zfp::zfp_read_header(z.stream, z.field, HEADER_FULL) };
        if read == 0 || read.div_ceil(8) > bytes.len() {
            return Err(corrupt(ID, "not a zfp stream with a full header"));
        }
        // SAFETY: the field was filled in by zfp_read_header.
        let (ty, count, dims) = unsafe {
            (
                (*z.field).type_,
                zfp::zfp_field_size(z.field, std::ptr::null_mut()),
                zfp::zfp_field_dimensionality(z.field),
            )
        };
        if ty != expected_ty {
            return Err(corrupt(
                ID,
                format!(
                    "stream holds zfp type {ty}, the array's {} is type {expected_ty}",
                    repr.data_type
                ),
            ));
        }
        if count != repr.num_elements() || dims == 0 {
            return Err(corrupt(
                ID,
                format!(
                    "stream holds {count} values, the chunk has {}",
                    repr.num_elements()
                ),
            ));
        }
        // SAFETY: the stream's mode was set by the header; the field's size is checked.
        let max = unsafe { zfp::zfp_stream_maximum_size(z.stream, z.field) };
        if max == 0 {
            return Err(corrupt(ID, "the header's compression mode is invalid"));
        }
        let mut buf = vec![0u64; words(max.max(bytes.len())) + HEADER_WORDS + 1];
        copy_in(&mut buf, &bytes);
        let mut out = vec![0u8; count * repr.data_type.fixed_size().unwrap_or(0)];
        let mut z2 = Zfp::new()?;
        z2.attach(&mut buf)?;
        // SAFETY: the header is read again from the padded copy (same bytes), the field
        // points at `out`, sized for exactly `count` elements of the header's type, and the
        // bit stream can never run past `buf`, which covers the stream's maximum size.
        let consumed = unsafe {
            if zfp::zfp_read_header(z2.stream, z2.field, HEADER_FULL) == 0 {
                return Err(corrupt(ID, "not a zfp stream with a full header"));
            }
            zfp::zfp_field_set_pointer(z2.field, out.as_mut_ptr() as *mut c_void);
            zfp::zfp_decompress(z2.stream, z2.field)
        };
        drop(z2);
        if consumed == 0 {
            return Err(corrupt(ID, "decompression failed"));
        }
        if consumed > bytes.len() {
            return Err(corrupt(
                ID,
                format!(
                    "stream is truncated: decoding needed {consumed} bytes, {} stored",
                    bytes.len()
                ),
            ));
        }
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config()))
    }
}

/// Copy `bytes` into the start of `words` (native order: zfp reads words from memory).
fn copy_in(words: &mut [u64], bytes: &[u8]) {
    for (w, c) in words.iter_mut().zip(bytes.chunks(8)) {
        let mut a = [0u8; 8];
        a[..c.len()].copy_from_slice(c);
        *w = u64::from_ne_bytes(a);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_roundtrip_and_corrupt_streams_error() {
        let repr = ChunkRepr {
            shape: vec![7, 9],
            data_type: DataType::Float64,
            fill_value: vec![0; 8],
        };
        let vals: Vec<f64> = (0..63).map(|i| (i as f64 * 0.37).sin() * 100.0).collect();
        let data: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
        for mode in [
            ZfpMode::Reversible,
            ZfpMode::FixedAccuracy(0.01),
            ZfpMode::FixedPrecision(20),
            ZfpMode::FixedRate(16.0),
        ] {
            let codec = ZfpyCodec::new(mode);
            let enc = codec
                .encode(ArrayBytes::Fixed(data.clone()), &repr)
                .unwrap();
            let ArrayBytes::Fixed(dec) = codec.decode(enc.clone(), &repr).unwrap() else {
                panic!()
            };
            if mode == ZfpMode::Reversible {
                assert_eq!(dec, data);
            }
            if let ZfpMode::FixedAccuracy(t) = mode {
                for (a, b) in dec.chunks(8).zip(&vals) {
                    assert!((f64::from_le_bytes(a.try_into().unwrap()) - b).abs() <= t);
                }
            }
            for cut in [0, 3, 8, 12, enc.len() / 2] {
                assert!(
                    codec.decode(enc[..cut].to_vec(), &repr).is_err(),
                    "{mode:?} {cut}"
                );
            }
            let mut bad = enc.clone();
            for b in bad.iter_mut().skip(16) {
                *b = 0xff;
            }
            let _ = codec.decode(bad, &repr);
            let other = ChunkRepr {
                shape: vec![63],
                data_type: DataType::Float32,
                fill_value: vec![0; 4],
            };
            assert!(codec.decode(enc, &other).is_err());
        }
        assert!(ZfpyCodec::new(ZfpMode::Reversible)
            .encode(
                ArrayBytes::Fixed(vec![0; 4]),
                &ChunkRepr {
                    shape: vec![4],
                    data_type: DataType::UInt8,
                    fill_value: vec![0],
                }
            )
            .is_err());
    }
}
