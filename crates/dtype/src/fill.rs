//! Fill values: one element between its JSON spelling in Zarr v2 / v3 metadata and its
//! in-memory bytes (packed, little-endian; the UTF-8 text or raw bytes for variable-length
//! types). The two formats share most rules; where they differ the [`Flavor`] decides.

use base64::Engine;
use serde_json::{Map, Number, Value};

use crate::error::show_json;
use crate::{DataType, DtypeError, Endian, StructField};

/// Which metadata format's rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    V2,
    V3,
}

impl Flavor {
    fn format_name(self) -> &'static str {
        match self {
            Flavor::V2 => "Zarr v2",
            Flavor::V3 => "Zarr v3",
        }
    }
}

/// Read a fill value from its JSON form.
pub(crate) fn fill_from_json(
    json: &Value,
    data_type: &DataType,
    flavor: Flavor,
) -> Result<Vec<u8>, DtypeError> {
    element_from_json(json, data_type, flavor).map_err(|reason| DtypeError::InvalidFillValue {
        format: flavor.format_name(),
        found: show_json(json),
        data_type: data_type.to_string(),
        reason,
    })
}

/// Write a fill value's JSON form. `bytes` should hold exactly one element; missing bytes read
/// as zero and extra bytes are ignored.
pub(crate) fn fill_to_json(bytes: &[u8], data_type: &DataType, flavor: Flavor) -> Value {
    match data_type {
        DataType::Bool => Value::Bool(bytes.first().is_some_and(|b| *b != 0)),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let size = data_type.fixed_size().unwrap_or(8);
            Value::from(signed_from_le(bytes, size))
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            let size = data_type.fixed_size().unwrap_or(8);
            Value::from(unsigned_from_le(bytes, size))
        }
        DataType::Float16 => float_to_json(bytes, FloatWidth::F16, flavor),
        DataType::Float32 => float_to_json(bytes, FloatWidth::F32, flavor),
        DataType::Float64 => float_to_json(bytes, FloatWidth::F64, flavor),
        DataType::Complex64 => complex_to_json(bytes, FloatWidth::F32, flavor),
        DataType::Complex128 => complex_to_json(bytes, FloatWidth::F64, flavor),
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => {
            Value::from(signed_from_le(bytes, 8))
        }
        DataType::RawBits { bytes: len } => Value::String(base64_encode(&exactly(bytes, *len))),
        DataType::FixedBytes { len } => {
            // NumPy's `bytes_` scalar drops trailing NULs, and zarr-python encodes that.
            let value = exactly(bytes, *len);
            let end = value.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1);
            Value::String(base64_encode(value.get(..end).unwrap_or_default()))
        }
        DataType::FixedUtf32 { chars } => {
            Value::String(utf32_to_string(&exactly(bytes, chars.saturating_mul(4))))
        }
        DataType::String => Value::String(String::from_utf8_lossy(bytes).into_owned()),
        DataType::Bytes => Value::String(base64_encode(bytes)),
        DataType::Structured(fields) => {
            let size = data_type.fixed_size().unwrap_or(0);
            let mut value = exactly(bytes, size);
            if flavor == Flavor::V3 && !has_sub_array_field(fields) {
                return struct_to_object(&value, fields);
            }
            // Base64 of the element as stored: fields with their own byte order use it.
            data_type.swap_endian_in_place(&mut value, Endian::Little);
            Value::String(base64_encode(&value))
        }
        DataType::Custom(custom) => custom.0.fill_to_json(&exactly(bytes, custom.0.size())),
    }
}

fn struct_to_object(bytes: &[u8], fields: &[StructField]) -> Value {
    let mut object = Map::new();
    let mut offset = 0;
    for field in fields {
        let size = field.data_type.fixed_size().unwrap_or(0);
        let part = bytes.get(offset..offset + size).unwrap_or_default();
        object.insert(
            field.name.clone(),
            fill_to_json(part, &field.data_type, Flavor::V3),
        );
        offset += size;
    }
    Value::Object(object)
}

fn has_sub_array_field(fields: &[StructField]) -> bool {
    fields.iter().any(|f| {
        !f.shape.is_empty()
            || matches!(&f.data_type, DataType::Structured(inner) if has_sub_array_field(inner))
    })
}

/// `bytes` cut or zero-extended to `len`.
fn exactly(bytes: &[u8], len: usize) -> Vec<u8> {
    let mut out = bytes.get(..len).unwrap_or(bytes).to_vec();
    out.resize(len, 0);
    out
}

fn element_from_json(
    json: &Value,
    data_type: &DataType,
    flavor: Flavor,
) -> Result<Vec<u8>, String> {
    match data_type {
        DataType::Bool => match json {
            Value::Bool(b) => Ok(vec![u8::from(*b)]),
            Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => {
                Ok(vec![n.as_u64().unwrap_or(0) as u8])
            }
            _ => Err("expected true or false".to_string()),
        },
        DataType::Int8 => int_from_json(json, 1, true),
        DataType::Int16 => int_from_json(json, 2, true),
        DataType::Int32 => int_from_json(json, 4, true),
        DataType::Int64 => int_from_json(json, 8, true),
        DataType::UInt8 => int_from_json(json, 1, false),
        DataType::UInt16 => int_from_json(json, 2, false),
        DataType::UInt32 => int_from_json(json, 4, false),
        DataType::UInt64 => int_from_json(json, 8, false),
        DataType::Float16 => float_from_json(json, FloatWidth::F16),
        DataType::Float32 => float_from_json(json, FloatWidth::F32),
        DataType::Float64 => float_from_json(json, FloatWidth::F64),
        DataType::Complex64 => complex_from_json(json, FloatWidth::F32),
        DataType::Complex128 => complex_from_json(json, FloatWidth::F64),
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => match json {
            Value::String(s) if s.trim().eq_ignore_ascii_case("NaT") => {
                Ok(i64::MIN.to_le_bytes().to_vec())
            }
            _ => int_from_json(json, 8, true).map_err(|reason| format!("{reason}, or \"NaT\"")),
        },
        DataType::RawBits { bytes } => {
            let value = bytes_from_json(json)?;
            if value.len() != *bytes {
                return Err(format!(
                    "expected {bytes} bytes, found {} bytes",
                    value.len()
                ));
            }
            Ok(value)
        }
        DataType::FixedBytes { len } => {
            let value = match json {
                // zarr-python 2 reads what is not base64 (e.g. `0`) as the text itself.
                Value::Number(n) if flavor == Flavor::V2 => n.to_string().into_bytes(),
                Value::String(s) if flavor == Flavor::V2 => {
                    base64_decode(s).unwrap_or_else(|_| s.clone().into_bytes())
                }
                _ => bytes_from_json(json)?,
            };
            pad_to(value, *len, "bytes")
        }
        DataType::FixedUtf32 { chars } => {
            let text = match json {
                Value::String(s) => s.clone(),
                Value::Number(n) if flavor == Flavor::V2 => n.to_string(),
                _ => return Err("expected a JSON string".to_string()),
            };
            utf32_from_str(&text, *chars)
        }
        DataType::String => match json {
            Value::String(s) => Ok(s.clone().into_bytes()),
            // zarr-python 2 wrote `0` as the default fill of vlen-utf8 arrays; it means "".
            Value::Number(n) if flavor == Flavor::V2 && n.as_u64() == Some(0) => Ok(Vec::new()),
            _ => Err("expected a JSON string".to_string()),
        },
        DataType::Bytes => match json {
            Value::Number(n) if flavor == Flavor::V2 && n.as_u64() == Some(0) => Ok(Vec::new()),
            _ => bytes_from_json(json),
        },
        DataType::Structured(fields) => match json {
            Value::Object(object) => struct_from_object(object, fields, flavor),
            Value::String(s) => {
                let mut value = base64_decode(s)?;
                let size = data_type.fixed_size().unwrap_or(0);
                if value.len() != size {
                    return Err(format!(
                        "expected base64 of {size} bytes, found {} bytes",
                        value.len()
                    ));
                }
                // Fields with their own byte order are stored in it; bring them to memory order.
                data_type.swap_endian_in_place(&mut value, Endian::Little);
                Ok(value)
            }
            _ => Err("expected an object with one member per field, or a base64 string".into()),
        },
        DataType::Custom(custom) => custom.0.fill_from_json(json),
    }
}

fn struct_from_object(
    object: &Map<String, Value>,
    fields: &[StructField],
    flavor: Flavor,
) -> Result<Vec<u8>, String> {
    if let Some(extra) = object
        .keys()
        .find(|k| !fields.iter().any(|f| &f.name == *k))
    {
        return Err(format!("{extra:?} is not a field of the struct"));
    }
    let mut out = Vec::new();
    for field in fields {
        let value = object
            .get(&field.name)
            .ok_or_else(|| format!("missing a value for field {:?}", field.name))?;
        let in_field = |reason: String| format!("field {:?}: {reason}", field.name);
        if field.shape.is_empty() {
            out.extend(element_from_json(value, &field.data_type, flavor).map_err(in_field)?);
            continue;
        }
        let count: usize = field.shape.iter().product();
        let items = value
            .as_array()
            .filter(|items| items.len() == count)
            .ok_or_else(|| in_field(format!("expected a list of {count} values")))?;
        for item in items {
            out.extend(element_from_json(item, &field.data_type, flavor).map_err(in_field)?);
        }
    }
    Ok(out)
}

fn pad_to(mut value: Vec<u8>, len: usize, what: &str) -> Result<Vec<u8>, String> {
    if value.len() > len {
        return Err(format!("{} {what} do not fit in {len} {what}", value.len()));
    }
    value.resize(len, 0);
    Ok(value)
}

/// A JSON integer (or, leniently, an integral float or a numeric string) as `size` LE bytes.
fn int_from_json(json: &Value, size: usize, signed: bool) -> Result<Vec<u8>, String> {
    let bits = 8 * size as u32;
    let (min, max) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let value = json_integer(json).ok_or_else(|| "expected an integer".to_string())?;
    if value < min || value > max {
        return Err(format!("{value} is out of range {min}..={max}"));
    }
    Ok(value.to_le_bytes().get(..size).unwrap_or_default().to_vec())
}

fn json_integer(json: &Value) -> Option<i128> {
    let integral =
        |f: f64| (f.is_finite() && f.fract() == 0.0 && f.abs() < 1e38).then_some(f as i128);
    match json {
        Value::Number(n) => n
            .as_u64()
            .map(i128::from)
            .or_else(|| n.as_i64().map(i128::from))
            .or_else(|| n.as_f64().and_then(integral)),
        Value::String(s) => {
            let s = s.trim();
            s.parse::<i128>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().and_then(integral))
        }
        _ => None,
    }
}

fn signed_from_le(bytes: &[u8], size: usize) -> i64 {
    let raw = unsigned_from_le(bytes, size);
    let shift = 64 - 8 * size.clamp(1, 8) as u32;
    ((raw << shift) as i64) >> shift
}

fn unsigned_from_le(bytes: &[u8], size: usize) -> u64 {
    let mut buf = [0u8; 8];
    for (dst, src) in buf.iter_mut().zip(bytes.iter().take(size.min(8))) {
        *dst = *src;
    }
    u64::from_le_bytes(buf)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FloatWidth {
    F16,
    F32,
    F64,
}

impl FloatWidth {
    fn size(self) -> usize {
        match self {
            FloatWidth::F16 => 2,
            FloatWidth::F32 => 4,
            FloatWidth::F64 => 8,
        }
    }

    /// Quiet NaN with sign 0 and only the top mantissa bit set: what `"NaN"` means.
    fn canonical_nan(self) -> u64 {
        match self {
            FloatWidth::F16 => 0x7e00,
            FloatWidth::F32 => 0x7fc0_0000,
            FloatWidth::F64 => 0x7ff8_0000_0000_0000,
        }
    }

    fn bits_of(self, x: f64) -> u64 {
        if x.is_nan() {
            return self.canonical_nan();
        }
        match self {
            FloatWidth::F16 => u64::from(half::f16::from_f64(x).to_bits()),
            FloatWidth::F32 => u64::from((x as f32).to_bits()),
            FloatWidth::F64 => x.to_bits(),
        }
    }

    fn value_of(self, bits: u64) -> f64 {
        match self {
            FloatWidth::F16 => half::f16::from_bits(bits as u16).to_f64(),
            FloatWidth::F32 => f64::from(f32::from_bits(bits as u32)),
            FloatWidth::F64 => f64::from_bits(bits),
        }
    }
}

/// A float in any JSON form: a number, `"NaN"`, `"Infinity"`, `"-Infinity"`, a `"0x…"` bit
/// pattern with exactly 4/8/16 hex digits, or (leniently) a numeric string.
fn float_from_json(json: &Value, width: FloatWidth) -> Result<Vec<u8>, String> {
    let bits = match json {
        Value::Number(n) => width.bits_of(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => {
            let s =
                s.trim_matches(|c: char| c.is_whitespace() || c == crate::json::NON_FINITE_MARKER);
            if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                let digits = 2 * width.size();
                if hex.len() != digits {
                    return Err(format!(
                        "a hex bit pattern needs exactly {digits} hex digits, found {}",
                        hex.len()
                    ));
                }
                u64::from_str_radix(hex, 16).map_err(|_| format!("{s:?} is not hexadecimal"))?
            } else {
                let x = s.parse::<f64>().map_err(|_| {
                    "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a \"0x…\" bit pattern"
                        .to_string()
                })?;
                width.bits_of(x)
            }
        }
        _ => {
            return Err(
                "expected a number, \"NaN\", \"Infinity\", \"-Infinity\" or a \"0x…\" bit pattern"
                    .to_string(),
            )
        }
    };
    Ok(bits
        .to_le_bytes()
        .get(..width.size())
        .unwrap_or_default()
        .to_vec())
}

/// Zarr v3 writes a NaN with another bit pattern than the canonical one as hex, so that its
/// payload survives; Zarr v2 has no such form and writes `"NaN"`.
fn float_to_json(bytes: &[u8], width: FloatWidth, flavor: Flavor) -> Value {
    let bits = unsigned_from_le(bytes, width.size());
    let x = width.value_of(bits);
    if x.is_nan() {
        if flavor == Flavor::V3 && bits != width.canonical_nan() {
            return Value::String(format!("0x{bits:0digits$x}", digits = 2 * width.size()));
        }
        return Value::String("NaN".into());
    }
    if x.is_infinite() {
        return Value::String(if x > 0.0 { "Infinity" } else { "-Infinity" }.into());
    }
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn complex_from_json(json: &Value, width: FloatWidth) -> Result<Vec<u8>, String> {
    match json.as_array().map(Vec::as_slice) {
        Some([re, im]) => {
            let mut out = float_from_json(re, width).map_err(|r| format!("real part: {r}"))?;
            out.extend(float_from_json(im, width).map_err(|r| format!("imaginary part: {r}"))?);
            Ok(out)
        }
        _ => Err("expected a list [real, imaginary]".to_string()),
    }
}

fn complex_to_json(bytes: &[u8], width: FloatWidth, flavor: Flavor) -> Value {
    let size = width.size();
    let im = bytes.get(size..).unwrap_or_default();
    Value::Array(vec![
        float_to_json(bytes, width, flavor),
        float_to_json(im, width, flavor),
    ])
}

/// Bytes given as a list of integers 0..=255 or as a base64 string.
fn bytes_from_json(json: &Value) -> Result<Vec<u8>, String> {
    match json {
        Value::String(s) => base64_decode(s),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_u64()
                    .and_then(|b| u8::try_from(b).ok())
                    .ok_or_else(|| format!("{item} is not a byte value 0..=255"))
            })
            .collect(),
        _ => Err("expected a list of byte values or a base64 string".to_string()),
    }
}

pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn base64_decode(text: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|err| format!("not valid base64 ({err})"))
}

/// `text` as `chars` little-endian UTF-32 code units, zero-padded.
pub(crate) fn utf32_from_str(text: &str, chars: usize) -> Result<Vec<u8>, String> {
    let count = text.chars().count();
    if count > chars {
        return Err(format!(
            "{count} characters do not fit in {chars} characters"
        ));
    }
    let mut out = Vec::with_capacity(4 * chars);
    for c in text.chars() {
        out.extend_from_slice(&u32::from(c).to_le_bytes());
    }
    out.resize(4 * chars, 0);
    Ok(out)
}

/// Little-endian UTF-32 code units as text, trailing NULs removed (as NumPy does); invalid
/// code points become U+FFFD.
pub(crate) fn utf32_to_string(bytes: &[u8]) -> String {
    let units: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let end = units.iter().rposition(|u| *u != 0).map_or(0, |p| p + 1);
    units
        .iter()
        .take(end)
        .map(|u| char::from_u32(*u).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}
