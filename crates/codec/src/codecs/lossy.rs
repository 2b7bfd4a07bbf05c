//! numcodecs' element-wise array→array filters that keep or narrow float precision, and the
//! bit packer: `bitround`, `quantize` and `packbits`. In Zarr v3 they are `numcodecs.<id>`
//! (zarrs also writes the bare name `bitround`).
//!
//! Decoding `bitround` is the identity and decoding `quantize` is a cast, so reading never
//! depends on an encoding-only parameter; encoding computes exactly what numcodecs computes
//! (bit-rounding in the integer view with round-half-to-even, NumPy's `around`), so chunks are
//! byte-identical.

use half::f16;
use neurochunk_dtype::DataType;
use serde_json::{json, Map, Value};

use crate::numeric::{NumType, TypeStr};
use crate::util::{config_err, corrupt, obj, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToArrayCodec, ChunkRepr, CodecResult};

fn fixed(codec: &str, data: ArrayBytes, len: usize) -> CodecResult<Vec<u8>> {
    match data {
        ArrayBytes::Fixed(b) if b.len() == len => Ok(b),
        ArrayBytes::Fixed(b) => Err(corrupt(
            codec,
            format!("chunk has {} bytes, expected {len}", b.len()),
        )),
        ArrayBytes::Variable { .. } => Err(unsupported(
            codec,
            "variable-length elements are not supported",
        )),
    }
}

/// Mantissa bits of a float type (numcodecs' `max_bits`).
fn mantissa_bits(dt: &DataType) -> Option<u32> {
    match dt {
        DataType::Float16 => Some(10),
        DataType::Float32 => Some(23),
        DataType::Float64 => Some(52),
        _ => None,
    }
}

/// `bitround`: keep `keepbits` mantissa bits of each float, rounding half to even in the
/// integer view (numcodecs `BitRound`). Decoding is the identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitRoundCodec {
    keepbits: i64,
    name: &'static str,
}

macro_rules! round_bits {
    ($t:ty, $buf:expr, $maskbits:expr) => {{
        let maskbits: u32 = $maskbits;
        let all: $t = -1;
        let mask = (all >> maskbits) << maskbits;
        let half: $t = (((1 as $t) << (maskbits - 1)) - 1);
        for c in $buf.chunks_exact_mut(std::mem::size_of::<$t>()) {
            let mut b = <$t>::from_le_bytes(c.try_into().unwrap_or_default());
            b = b.wrapping_add(((b >> maskbits) & 1).wrapping_add(half));
            b &= mask;
            c.copy_from_slice(&b.to_le_bytes());
        }
    }};
}

impl BitRoundCodec {
    /// `bitround` keeping `keepbits` mantissa bits.
    pub fn new(keepbits: u32) -> Self {
        BitRoundCodec {
            keepbits: keepbits.into(),
            name: "numcodecs.bitround",
        }
    }

    /// Parse a numcodecs configuration (`keepbits` required). `name` is the v3 name it was
    /// read under (kept for writing it back).
    pub fn from_config(config: &Value, name: &'static str) -> CodecResult<Self> {
        let c = Conf::new("bitround", config)?;
        let keepbits = c.required("keepbits", c.i64("keepbits")?)?;
        if keepbits < 0 {
            return Err(config_err(
                "bitround",
                format!("'keepbits' must not be negative, found {keepbits}"),
            ));
        }
        Ok(BitRoundCodec { keepbits, name })
    }

    /// Check that chunks of `repr` can be encoded (a float type with at least `keepbits`
    /// mantissa bits).
    pub fn check_encodable(&self, repr: &ChunkRepr) -> CodecResult<()> {
        let Some(max) = mantissa_bits(&repr.data_type) else {
            return Err(unsupported(
                "bitround",
                format!(
                    "encoding needs float16, float32 or float64 elements, not {} \
                     (reading is the identity for any type)",
                    repr.data_type
                ),
            ));
        };
        if self.keepbits > i64::from(max) {
            return Err(config_err(
                "bitround",
                format!(
                    "'keepbits' {} is more than the {max} mantissa bits of {}",
                    self.keepbits, repr.data_type
                ),
            ));
        }
        Ok(())
    }
}

impl ArrayToArrayCodec for BitRoundCodec {
    fn name(&self) -> &str {
        self.name
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        Ok(input.clone())
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.check_encodable(input)?;
        let size = input.data_type.fixed_size().unwrap_or(0);
        let mut buf = fixed("bitround", data, size * input.num_elements())?;
        let max = mantissa_bits(&input.data_type).unwrap_or(0);
        let maskbits = max - self.keepbits as u32;
        if maskbits == 0 {
            return Ok(ArrayBytes::Fixed(buf));
        }
        match size {
            2 => round_bits!(i16, buf, maskbits),
            4 => round_bits!(i32, buf, maskbits),
            _ => round_bits!(i64, buf, maskbits),
        }
        Ok(ArrayBytes::Fixed(buf))
    }

    fn decode(&self, data: ArrayBytes, _decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        Ok(data)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name, Some(obj([("keepbits", json!(self.keepbits))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(
            "bitround",
            obj([("keepbits", json!(self.keepbits))]),
        ))
    }
}

/// `quantize`: round floats to `digits` decimal digits (as a power-of-two scale, numcodecs
/// `Quantize`), stored as `astype`. Decoding casts back to `dtype`.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizeCodec {
    digits: i64,
    dtype: TypeStr,
    astype: TypeStr,
}

fn float_type(codec: &str, c: &Conf, key: &str) -> CodecResult<Option<TypeStr>> {
    match c.str(key)? {
        None => Ok(None),
        Some(s) => match TypeStr::parse(s) {
            Some(t) if t.num.is_float() => Ok(Some(t)),
            _ => Err(unsupported(
                codec,
                format!("'{key}' {s:?} is not a float type (float16, float32 or float64)"),
            )),
        },
    }
}

fn read_f64(t: NumType, b: &[u8]) -> f64 {
    match t {
        NumType::F16 => f16::from_le_bytes([b[0], b[1]]).to_f64(),
        NumType::F32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        _ => f64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
    }
}

fn write_f64(t: NumType, v: f64, out: &mut Vec<u8>) {
    match t {
        NumType::F16 => out.extend_from_slice(&f16::from_f64(v).to_le_bytes()),
        NumType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        _ => out.extend_from_slice(&v.to_le_bytes()),
    }
}

impl QuantizeCodec {
    /// `quantize` to `digits` decimal digits of float `dtype` elements, stored as `astype`
    /// (`None`: `dtype`). Errors for non-float types.
    pub fn new(digits: i64, dtype: &DataType, astype: Option<&DataType>) -> CodecResult<Self> {
        let t = |dt: &DataType| match dt {
            DataType::Float16 => Ok(NumType::F16),
            DataType::Float32 => Ok(NumType::F32),
            DataType::Float64 => Ok(NumType::F64),
            other => Err(unsupported(
                "quantize",
                format!("needs float16, float32 or float64 elements, not {other}"),
            )),
        };
        let dtype = TypeStr {
            num: t(dtype)?,
            big: false,
        };
        let astype = match astype {
            Some(a) => TypeStr {
                num: t(a)?,
                big: false,
            },
            None => dtype,
        };
        Ok(QuantizeCodec {
            digits,
            dtype,
            astype,
        })
    }

    /// Parse a numcodecs configuration (`digits`, `dtype` required; `astype`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        const ID: &str = "quantize";
        let c = Conf::new(ID, config)?;
        let digits = c.required("digits", c.i64("digits")?)?;
        let dtype = c.required("dtype", float_type(ID, &c, "dtype")?)?;
        let astype = float_type(ID, &c, "astype")?.unwrap_or(dtype);
        Ok(QuantizeCodec {
            digits,
            dtype,
            astype,
        })
    }

    fn config(&self) -> Map<String, Value> {
        obj([
            ("digits", json!(self.digits)),
            ("dtype", Value::String(self.dtype.to_numpy())),
            ("astype", Value::String(self.astype.to_numpy())),
        ])
    }

    /// numcodecs' scale: `2 ** ceil(log2(10 ** -exp))`, `exp` the rounded `log10(10 ** -digits)`.
    fn scale(&self) -> f64 {
        let precision = 10f64.powf(-(self.digits as f64));
        let e = precision.log10();
        let exp = if e < 0.0 { e.floor() } else { e.ceil() };
        let bits = 10f64.powf(-exp).log2().ceil();
        2f64.powf(bits)
    }

    fn check(&self, repr: &ChunkRepr, t: TypeStr) -> CodecResult<()> {
        if repr.data_type != t.num.data_type() {
            return Err(unsupported(
                "quantize",
                format!(
                    "data type {} does not match the codec's dtype {}",
                    repr.data_type,
                    t.to_numpy()
                ),
            ));
        }
        Ok(())
    }
}

impl ArrayToArrayCodec for QuantizeCodec {
    fn name(&self) -> &str {
        "numcodecs.quantize"
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        let mut fill = Vec::new();
        if input.fill_value.len() == self.dtype.num.size() {
            let v = read_f64(self.dtype.num, &input.fill_value);
            write_f64(self.astype.num, v, &mut fill);
        } else {
            fill = vec![0; self.astype.num.size()];
        }
        Ok(ChunkRepr {
            shape: input.shape.clone(),
            data_type: self.astype.num.data_type(),
            fill_value: fill,
        })
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.check(input, self.dtype)?;
        let size = self.dtype.num.size();
        let src = fixed("quantize", data, size * input.num_elements())?;
        let scale = self.scale();
        let mut out = Vec::with_capacity(input.num_elements() * self.astype.num.size());
        for c in src.chunks_exact(size) {
            // NumPy computes in the array's own precision (a Python float is a weak scalar).
            let v = match self.dtype.num {
                NumType::F16 => {
                    let x = f16::from_f32(scale as f32 * read_f64(NumType::F16, c) as f32);
                    let r = f16::from_f32(x.to_f32().round_ties_even());
                    f16::from_f32(r.to_f32() / scale as f32).to_f64()
                }
                NumType::F32 => {
                    let x = (scale as f32) * (read_f64(NumType::F32, c) as f32);
                    (x.round_ties_even() / scale as f32) as f64
                }
                _ => (scale * read_f64(NumType::F64, c)).round_ties_even() / scale,
            };
            write_f64(self.astype.num, v, &mut out);
        }
        Ok(ArrayBytes::Fixed(out))
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let size = self.astype.num.size();
        let src = fixed("quantize", data, size * decoded.num_elements())?;
        let mut out = Vec::with_capacity(decoded.num_elements() * self.dtype.num.size());
        for c in src.chunks_exact(size) {
            write_f64(self.dtype.num, read_f64(self.astype.num, c), &mut out);
        }
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("quantize", self.config()))
    }
}

/// `packbits`: booleans packed eight to a byte (most significant bit first) after one byte
/// giving the number of padding bits in the last byte (numcodecs `PackBits`). The encoded
/// chunk is 1-d `uint8` of `1 + ceil(n / 8)` elements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackBitsCodec;

impl PackBitsCodec {
    /// `packbits`.
    pub fn new() -> Self {
        PackBitsCodec
    }

    /// Parse a numcodecs configuration (no keys).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        Conf::new("packbits", config)?;
        Ok(PackBitsCodec)
    }

    fn check(repr: &ChunkRepr) -> CodecResult<()> {
        if repr.data_type != DataType::Bool {
            return Err(unsupported(
                "packbits",
                format!("needs bool elements, not {}", repr.data_type),
            ));
        }
        Ok(())
    }
}

impl ArrayToArrayCodec for PackBitsCodec {
    fn name(&self) -> &str {
        "numcodecs.packbits"
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        Self::check(input)?;
        Ok(ChunkRepr {
            shape: vec![1 + input.num_elements().div_ceil(8)],
            data_type: DataType::UInt8,
            fill_value: vec![0],
        })
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        Self::check(input)?;
        let n = input.num_elements();
        let src = fixed("packbits", data, n)?;
        let mut out = vec![0u8; 1 + n.div_ceil(8)];
        out[0] = ((8 - n % 8) % 8) as u8;
        for (i, b) in src.iter().enumerate() {
            if *b != 0 {
                out[1 + i / 8] |= 0x80 >> (i % 8);
            }
        }
        Ok(ArrayBytes::Fixed(out))
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let n = decoded.num_elements();
        let src = fixed("packbits", data, 1 + n.div_ceil(8))?;
        if usize::from(src[0]) != (8 - n % 8) % 8 {
            return Err(corrupt(
                "packbits",
                format!(
                    "header says {} padding bits, the chunk's {n} elements need {}",
                    src[0],
                    (8 - n % 8) % 8
                ),
            ));
        }
        let out = (0..n)
            .map(|i| (src[1 + i / 8] >> (7 - i % 8)) & 1)
            .collect();
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(Map::new()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("packbits", Map::new()))
    }
}
