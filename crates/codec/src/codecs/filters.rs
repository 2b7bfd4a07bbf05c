//! The numcodecs numeric filters (array→array): `delta`, `fixedscaleoffset` and `astype`.
//! In Zarr v3 they are `numcodecs.<id>` with the numcodecs configuration minus `id`.
//! They work on the flattened chunk and may change the element type (`astype`).

use serde_json::{Map, Value};

use crate::numeric::{
    cast_buffer, delta_decode, delta_encode, dispatch2, fso_decode, fso_encode, NumType, ScaleMode,
    TypeStr,
};
use crate::util::{config_err, obj, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToArrayCodec, ChunkRepr, CodecResult};

fn parse_type(codec: &str, c: &Conf, key: &str) -> CodecResult<Option<TypeStr>> {
    match c.str(key)? {
        None => Ok(None),
        Some(s) => TypeStr::parse(s).map(Some).ok_or_else(|| {
            unsupported(
                codec,
                format!("'{key}' {s:?} is not a supported numeric type"),
            )
        }),
    }
}

/// The fixed buffer of a chunk whose element type must be `expected`.
fn input_buffer(
    codec: &str,
    data: ArrayBytes,
    repr: &ChunkRepr,
    expected: TypeStr,
) -> CodecResult<Vec<u8>> {
    let size = repr.data_type.fixed_size().unwrap_or(0);
    if size != expected.num.size() {
        return Err(unsupported(
            codec,
            format!(
                "data type {:?} does not match the codec's dtype {}",
                repr.data_type,
                expected.to_numpy()
            ),
        ));
    }
    match data {
        ArrayBytes::Fixed(b) if b.len() == size * repr.num_elements() => Ok(b),
        ArrayBytes::Fixed(b) => Err(unsupported(
            codec,
            format!(
                "chunk has {} bytes, expected {}",
                b.len(),
                size * repr.num_elements()
            ),
        )),
        ArrayBytes::Variable { .. } => Err(unsupported(
            codec,
            "variable-length elements are not supported",
        )),
    }
}

/// The representation after converting the element type to `to` (fill value cast too).
fn converted_repr(input: &ChunkRepr, from: NumType, to: NumType) -> ChunkRepr {
    let mut fill = Vec::new();
    if input.fill_value.len() == from.size() {
        dispatch2!(from, to, cast_buffer(&input.fill_value, &mut fill));
    } else {
        fill = vec![0; to.size()];
    }
    ChunkRepr {
        shape: input.shape.clone(),
        data_type: to.data_type(),
        fill_value: fill,
    }
}

/// numcodecs `delta`: the first element, then differences between neighbours.
///
/// For booleans (`|b1`) the difference is NumPy's `diff`, exclusive or; decoding undoes it
/// exactly (numcodecs' own decoder ORs the differences together instead, so it reads back
/// only runs of leading `True`s correctly; the stored bytes are the same).
#[derive(Clone, Debug, PartialEq)]
pub struct DeltaCodec {
    dtype: TypeStr,
    astype: TypeStr,
    boolean: bool,
}

fn is_bool_type(s: Option<&str>) -> bool {
    matches!(s, Some("|b1" | "bool" | "?" | "b1"))
}

impl DeltaCodec {
    /// Parse a numcodecs configuration (`dtype` required, `astype` optional).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new("delta", config)?;
        if is_bool_type(c.str("dtype")?) {
            let astype = c.str("astype")?;
            if astype.is_some() && !is_bool_type(astype) {
                return Err(unsupported(
                    "delta",
                    format!("a bool dtype needs a bool astype, not {astype:?}"),
                ));
            }
            let u1 = TypeStr::parse("|u1").ok_or_else(|| config_err("delta", "u1"))?;
            return Ok(DeltaCodec {
                dtype: u1,
                astype: u1,
                boolean: true,
            });
        }
        let dtype = c.required("dtype", parse_type("delta", &c, "dtype")?)?;
        let astype = parse_type("delta", &c, "astype")?.unwrap_or(dtype);
        Ok(DeltaCodec {
            dtype,
            astype,
            boolean: false,
        })
    }

    fn config(&self) -> Map<String, Value> {
        if self.boolean {
            return obj([
                ("dtype", Value::String("|b1".into())),
                ("astype", Value::String("|b1".into())),
            ]);
        }
        obj([
            ("dtype", Value::String(self.dtype.to_numpy())),
            ("astype", Value::String(self.astype.to_numpy())),
        ])
    }

    fn bool_input(data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        if repr.data_type != neurochunk_dtype::DataType::Bool {
            return Err(unsupported(
                "delta",
                format!(
                    "data type {} does not match the codec's dtype |b1",
                    repr.data_type
                ),
            ));
        }
        match data {
            ArrayBytes::Fixed(b) if b.len() == repr.num_elements() => Ok(b),
            _ => Err(unsupported(
                "delta",
                format!("chunk does not hold {} booleans", repr.num_elements()),
            )),
        }
    }

    /// The byte order the encoded elements are declared in (`>` in `astype`).
    pub fn encoded_big_endian(&self) -> bool {
        self.astype.big
    }
}

impl ArrayToArrayCodec for DeltaCodec {
    fn name(&self) -> &str {
        "numcodecs.delta"
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        if self.boolean {
            return Ok(input.clone());
        }
        Ok(converted_repr(input, self.dtype.num, self.astype.num))
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        if self.boolean {
            let src = Self::bool_input(data, input)?;
            let mut prev = 0u8;
            let out = src
                .iter()
                .map(|b| {
                    let v = u8::from(*b != 0);
                    let d = v ^ prev;
                    prev = v;
                    d
                })
                .collect();
            return Ok(ArrayBytes::Fixed(out));
        }
        let src = input_buffer("delta", data, input, self.dtype)?;
        let mut out = Vec::new();
        dispatch2!(
            self.dtype.num,
            self.astype.num,
            delta_encode(&src, &mut out)
        );
        Ok(ArrayBytes::Fixed(out))
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        if self.boolean {
            let src = Self::bool_input(data, decoded)?;
            let mut acc = 0u8;
            let out = src
                .iter()
                .map(|b| {
                    acc ^= u8::from(*b != 0);
                    acc
                })
                .collect();
            return Ok(ArrayBytes::Fixed(out));
        }
        let enc = self.encoded_repr(decoded)?;
        let src = input_buffer("delta", data, &enc, self.astype)?;
        let mut out = Vec::new();
        dispatch2!(
            self.dtype.num,
            self.astype.num,
            delta_decode(&src, &mut out)
        );
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("delta", self.config()))
    }
}

/// numcodecs `fixedscaleoffset`: `round_half_even((x - offset) * scale)` stored as `astype`.
#[derive(Clone, Debug, PartialEq)]
pub struct FixedScaleOffsetCodec {
    offset_json: Value,
    scale_json: Value,
    offset: f64,
    scale: f64,
    dtype: TypeStr,
    astype: TypeStr,
}

impl FixedScaleOffsetCodec {
    /// Parse a numcodecs configuration (`offset`, `scale`, `dtype` required; `astype`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        const ID: &str = "fixedscaleoffset";
        let c = Conf::new(ID, config)?;
        let offset = c.required("offset", c.f64("offset")?)?;
        let scale = c.required("scale", c.f64("scale")?)?;
        if scale == 0.0 {
            return Err(config_err(ID, "'scale' must not be 0"));
        }
        let dtype = c.required("dtype", parse_type(ID, &c, "dtype")?)?;
        let astype = parse_type(ID, &c, "astype")?.unwrap_or(dtype);
        Ok(FixedScaleOffsetCodec {
            offset_json: c.get("offset").cloned().unwrap_or(Value::Null),
            scale_json: c.get("scale").cloned().unwrap_or(Value::Null),
            offset,
            scale,
            dtype,
            astype,
        })
    }

    fn config(&self) -> Map<String, Value> {
        obj([
            ("scale", self.scale_json.clone()),
            ("offset", self.offset_json.clone()),
            ("dtype", Value::String(self.dtype.to_numpy())),
            ("astype", Value::String(self.astype.to_numpy())),
        ])
    }

    fn mode(&self) -> ScaleMode {
        let int_json = |v: &Value| v.as_i64().filter(|_| v.is_i64() || v.is_u64());
        match (
            self.dtype.num.is_float(),
            int_json(&self.offset_json),
            int_json(&self.scale_json),
        ) {
            (false, Some(offset), Some(scale)) => ScaleMode::Int { offset, scale },
            _ if matches!(self.dtype.num, NumType::F16 | NumType::F32) => ScaleMode::F32 {
                offset: self.offset as f32,
                scale: self.scale as f32,
            },
            _ => ScaleMode::F64 {
                offset: self.offset,
                scale: self.scale,
            },
        }
    }

    /// The byte order the encoded elements are declared in (`>` in `astype`).
    pub fn encoded_big_endian(&self) -> bool {
        self.astype.big
    }
}

impl ArrayToArrayCodec for FixedScaleOffsetCodec {
    fn name(&self) -> &str {
        "numcodecs.fixedscaleoffset"
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        let mut r = converted_repr(input, self.dtype.num, self.astype.num);
        if input.fill_value.len() == self.dtype.num.size() {
            let mut fill = Vec::new();
            let mode = self.mode();
            dispatch2!(
                self.dtype.num,
                self.astype.num,
                fso_encode(&input.fill_value, &mut fill, mode)
            );
            r.fill_value = fill;
        }
        Ok(r)
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let src = input_buffer("fixedscaleoffset", data, input, self.dtype)?;
        let mut out = Vec::new();
        let mode = self.mode();
        dispatch2!(
            self.dtype.num,
            self.astype.num,
            fso_encode(&src, &mut out, mode)
        );
        Ok(ArrayBytes::Fixed(out))
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let enc = ChunkRepr {
            shape: decoded.shape.clone(),
            data_type: self.astype.num.data_type(),
            fill_value: Vec::new(),
        };
        let src = input_buffer("fixedscaleoffset", data, &enc, self.astype)?;
        let mut out = Vec::new();
        dispatch2!(
            self.dtype.num,
            self.astype.num,
            fso_decode(&src, &mut out, self.offset, self.scale)
        );
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("fixedscaleoffset", self.config()))
    }
}

/// numcodecs `astype`: store `decode_dtype` elements as `encode_dtype`.
#[derive(Clone, Debug, PartialEq)]
pub struct AsTypeCodec {
    encode_dtype: TypeStr,
    decode_dtype: TypeStr,
}

impl AsTypeCodec {
    /// Parse a numcodecs configuration (`encode_dtype`, `decode_dtype`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new("astype", config)?;
        let encode_dtype = c.required("encode_dtype", parse_type("astype", &c, "encode_dtype")?)?;
        let decode_dtype = c.required("decode_dtype", parse_type("astype", &c, "decode_dtype")?)?;
        Ok(AsTypeCodec {
            encode_dtype,
            decode_dtype,
        })
    }

    fn config(&self) -> Map<String, Value> {
        obj([
            ("encode_dtype", Value::String(self.encode_dtype.to_numpy())),
            ("decode_dtype", Value::String(self.decode_dtype.to_numpy())),
        ])
    }

    /// The byte order the encoded elements are declared in.
    pub fn encoded_big_endian(&self) -> bool {
        self.encode_dtype.big
    }
}

impl ArrayToArrayCodec for AsTypeCodec {
    fn name(&self) -> &str {
        "numcodecs.astype"
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        Ok(converted_repr(
            input,
            self.decode_dtype.num,
            self.encode_dtype.num,
        ))
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let src = input_buffer("astype", data, input, self.decode_dtype)?;
        let mut out = Vec::new();
        dispatch2!(
            self.decode_dtype.num,
            self.encode_dtype.num,
            cast_buffer(&src, &mut out)
        );
        Ok(ArrayBytes::Fixed(out))
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let enc = self.encoded_repr(decoded)?;
        let src = input_buffer("astype", data, &enc, self.encode_dtype)?;
        let mut out = Vec::new();
        dispatch2!(
            self.encode_dtype.num,
            self.decode_dtype.num,
            cast_buffer(&src, &mut out)
        );
        Ok(ArrayBytes::Fixed(out))
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json("astype", self.config()))
    }
}
