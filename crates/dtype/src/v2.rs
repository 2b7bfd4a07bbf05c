//! Zarr v2 data types and fill values: the `.zarray` `dtype` (a NumPy typestr such as `<u2`,
//! `|S12`, `<M8[ns]`, `|O`, or a structured field list), the object codec that gives `|O` its
//! meaning, and the `fill_value` spellings of each kind. The same typestr grammar serves the
//! `descr` of `.npy` files.
//!
//! With the `pickle` object codec (hdmf-zarr / NWB), `|O` and structured dtypes with `|O`
//! fields are read as [`DataType::String`]: the codec turns each element into text (a `str`
//! as itself, anything else as compact JSON).

use serde_json::Value;

use crate::error::show_json;
use crate::fill::{fill_from_json, fill_to_json, Flavor};
use crate::names::{parse_time_unit_with_scale, time_unit_suffix};
use crate::{DataType, DtypeError, Endian, StructField, MAX_ELEMENT_BYTES};

const FORMAT: &str = "Zarr v2";

/// Object codec id for `|O` arrays of variable-length UTF-8 text.
pub const VLEN_UTF8: &str = "vlen-utf8";
/// Object codec id for `|O` arrays of variable-length bytes.
pub const VLEN_BYTES: &str = "vlen-bytes";
/// Object codec id for `|O` arrays of JSON values (read here as text).
pub const JSON2: &str = "json2";
/// Object codec id for pickled `|O` arrays and structured arrays with `|O` fields, as
/// hdmf-zarr writes them (read here as text: strings as themselves, other values as JSON).
pub const PICKLE: &str = "pickle";
/// numcodecs `categorize` as the first filter of a `|O` array: text from a list of labels.
pub const CATEGORIZE: &str = "categorize";
/// Object codec id for `|O` arrays of one-dimensional numeric arrays (ragged arrays; read
/// here as variable-length bytes holding the numbers).
pub const VLEN_ARRAY: &str = "vlen-array";

/// True for the ids of the object codecs this crate knows (`vlen-utf8`, `vlen-bytes`,
/// `json2`, `pickle`, `vlen-array`, and `categorize` of text): the codec in `filters` that
/// gives `|O` its meaning.
pub fn is_object_codec_id(id: &str) -> bool {
    matches!(
        id,
        VLEN_UTF8 | VLEN_BYTES | JSON2 | PICKLE | CATEGORIZE | VLEN_ARRAY
    )
}

/// What a `DataType` looks like in `.zarray`.
#[derive(Clone, Debug, PartialEq)]
pub struct V2Dtype {
    /// The `dtype` member.
    pub dtype: Value,
    /// For `|O`: the object codec to write as `filters[0]` (`{"id": <this>}`).
    pub object_codec_id: Option<&'static str>,
}

/// Parse a `.zarray` `dtype` into a data type and its on-disk byte order (`None` for types
/// without one: single bytes, `|S`, `|V`, `|O`, and structured types, whose fields carry
/// their own [`StructField::endian`]). `object_codec_id` is the `id` of `filters[0]`; it is
/// needed only for `|O` and for structured dtypes with `|O` fields (which need `pickle`).
pub fn dtype_from_json(
    json: &Value,
    object_codec_id: Option<&str>,
) -> Result<(DataType, Option<Endian>), DtypeError> {
    parse_descr(json, object_codec_id, FORMAT)
}

/// Parse a descr in any of its NumPy forms; `format` names the source in errors.
pub(crate) fn parse_descr(
    json: &Value,
    object_codec_id: Option<&str>,
    format: &'static str,
) -> Result<(DataType, Option<Endian>), DtypeError> {
    match json {
        Value::String(typestr) => match parse_leaf(typestr, format)? {
            Leaf::Type(data_type, endian) => Ok((data_type, endian)),
            Leaf::Object => Ok((object_type(object_codec_id, format)?, None)),
        },
        Value::Array(entries) => {
            if let [Value::Array(only)] = entries.as_slice() {
                if only.len() == 3 && only.first().and_then(Value::as_str) == Some("") {
                    return Err(DtypeError::Unsupported {
                        format,
                        found: show_json(json),
                        reason: "a top-level sub-array dtype is not an element type; zarr-python \
                                 folds the sub-array into the array's shape, so use the base \
                                 type and add the dimensions to `shape`"
                            .into(),
                    });
                }
            }
            let allow_objects = object_codec_id == Some(PICKLE);
            let mut saw_object = false;
            let fields = parse_fields(entries, format, 0, allow_objects, &mut saw_object)?;
            if saw_object {
                // The pickle codec hands over each element as one JSON object text.
                return Ok((DataType::String, None));
            }
            Ok((DataType::Structured(fields), None))
        }
        _ => Err(DtypeError::InvalidDataType {
            format,
            found: show_json(json),
            reason: "expected a typestr string such as \"<u2\" or a list of [name, type] / \
                     [name, type, shape] fields"
                .into(),
        }),
    }
}

fn object_type(
    object_codec_id: Option<&str>,
    format: &'static str,
) -> Result<DataType, DtypeError> {
    match object_codec_id {
        Some(VLEN_UTF8) | Some(JSON2) | Some(PICKLE) | Some(CATEGORIZE) => Ok(DataType::String),
        Some(VLEN_BYTES) | Some(VLEN_ARRAY) => Ok(DataType::Bytes),
        Some(other) => Err(DtypeError::Unsupported {
            format,
            found: "\"|O\"".into(),
            reason: format!(
                "object codec {other:?} is not supported; expected one of {VLEN_UTF8:?}, \
                 {VLEN_BYTES:?}, {JSON2:?}, {PICKLE:?}, {VLEN_ARRAY:?} or {CATEGORIZE:?} (convert \
                 the array with zarr-python / numcodecs to one of those)"
            ),
        }),
        None => Err(DtypeError::InvalidDataType {
            format,
            found: "\"|O\"".into(),
            reason: format!(
                "an object dtype needs an object codec as filters[0] ({VLEN_UTF8:?}, \
                 {VLEN_BYTES:?}, {JSON2:?} or {PICKLE:?}) to say what the objects are; none \
                 was given"
            ),
        }),
    }
}

/// Nested structured types deeper than this are refused (hostile input).
const MAX_NESTING: usize = 32;

/// Parse a structured dtype's field list. With `allow_objects` (the `pickle` object codec),
/// `|O` fields are accepted and reported through `saw_object` (they get an 8-byte placeholder
/// type: the caller reads such a dtype as text).
fn parse_fields(
    entries: &[Value],
    format: &'static str,
    depth: usize,
    allow_objects: bool,
    saw_object: &mut bool,
) -> Result<Vec<StructField>, DtypeError> {
    let invalid = |found: &Value, reason: String| DtypeError::InvalidDataType {
        format,
        found: show_json(found),
        reason,
    };
    if depth >= MAX_NESTING {
        return Err(invalid(
            &Value::Array(entries.to_vec()),
            format!("structured types nest deeper than {MAX_NESTING} levels"),
        ));
    }
    if entries.is_empty() {
        return Err(invalid(
            &Value::Array(Vec::new()),
            "a structured dtype needs at least one field".into(),
        ));
    }
    let mut fields: Vec<StructField> = Vec::with_capacity(entries.len());
    for entry in entries {
        let parts = entry.as_array().map(Vec::as_slice).unwrap_or_default();
        let (name, type_json, shape_json) = match parts {
            [name, ty] => (name, ty, None),
            [name, ty, shape] => (name, ty, Some(shape)),
            _ => {
                return Err(invalid(
                    entry,
                    "a field must be [name, type] or [name, type, shape]".into(),
                ))
            }
        };
        let name = name
            .as_str()
            .ok_or_else(|| invalid(entry, "a field name must be a string".into()))?;
        if fields.iter().any(|f| f.name == name) {
            return Err(invalid(entry, format!("field name {name:?} appears twice")));
        }
        let (data_type, endian) = match type_json {
            Value::String(typestr) => match parse_leaf(typestr, format)? {
                Leaf::Type(data_type, endian) => (data_type, endian),
                Leaf::Object if allow_objects => {
                    *saw_object = true;
                    (DataType::UInt64, None)
                }
                Leaf::Object if format == FORMAT => {
                    return Err(invalid(
                        entry,
                        format!(
                            "object (`|O`) fields of a structured dtype need the {PICKLE:?} \
                             object codec in filters[0] (as hdmf-zarr writes them)"
                        ),
                    ))
                }
                Leaf::Object => {
                    return Err(invalid(
                        entry,
                        "object (`|O`) fields cannot be stored in a structured dtype".into(),
                    ))
                }
            },
            Value::Array(nested) => (
                DataType::Structured(parse_fields(
                    nested,
                    format,
                    depth + 1,
                    allow_objects,
                    saw_object,
                )?),
                None,
            ),
            _ => {
                return Err(invalid(
                    entry,
                    "a field type must be a typestr or a list of fields".into(),
                ))
            }
        };
        let shape = match shape_json {
            None => Vec::new(),
            Some(shape) => parse_shape(shape)
                .ok_or_else(|| invalid(entry, "a field shape must be a list of sizes".into()))?,
        };
        fields.push(StructField {
            name: name.to_string(),
            data_type,
            shape,
            endian,
        });
    }
    if checked_struct_size(&fields).is_none_or(|size| size > MAX_ELEMENT_BYTES) {
        return Err(invalid(
            &Value::Array(entries.to_vec()),
            format!("the element would be larger than {MAX_ELEMENT_BYTES} bytes"),
        ));
    }
    Ok(fields)
}

fn parse_shape(json: &Value) -> Option<Vec<usize>> {
    match json {
        Value::Number(n) => Some(vec![usize::try_from(n.as_u64()?).ok()?]),
        Value::Array(dims) => dims
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect(),
        _ => None,
    }
}

/// Size of a structured element, or `None` on overflow or a variable-length field.
pub(crate) fn checked_struct_size(fields: &[StructField]) -> Option<usize> {
    fields.iter().try_fold(0usize, |total, field| {
        let count = field
            .shape
            .iter()
            .try_fold(1usize, |acc, d| acc.checked_mul(*d))?;
        let size = match &field.data_type {
            DataType::Structured(inner) => checked_struct_size(inner)?,
            other => other.fixed_size()?,
        };
        total.checked_add(count.checked_mul(size)?)
    })
}

enum Leaf {
    Type(DataType, Option<Endian>),
    /// `|O`: the meaning comes from the object codec.
    Object,
}

/// Parse one NumPy typestr (not `|O`): `<u2`, `|b1`, `>f8`, `<c16`, `|S12`, `<U3`, `|V8`,
/// `<M8[ns]`, `<m8[10s]`. The byte-order character may be left out (little-endian).
/// Returns the type and its byte order (`None` for single-byte, `S` and `V` types).
pub fn parse_typestr(typestr: &str) -> Result<(DataType, Option<Endian>), DtypeError> {
    match parse_leaf(typestr, "NumPy")? {
        Leaf::Type(data_type, endian) => Ok((data_type, endian)),
        Leaf::Object => object_type(None, "NumPy").map(|t| (t, None)),
    }
}

fn parse_leaf(typestr: &str, format: &'static str) -> Result<Leaf, DtypeError> {
    let invalid = |reason: String| DtypeError::InvalidDataType {
        format,
        found: format!("{typestr:?}"),
        reason,
    };
    let unsupported = |reason: &str| DtypeError::Unsupported {
        format,
        found: format!("{typestr:?}"),
        reason: reason.into(),
    };
    let (order, rest) = match typestr.as_bytes().first() {
        Some(b'<') | Some(b'=') => (Some(Endian::Little), &typestr[1..]),
        Some(b'>') => (Some(Endian::Big), &typestr[1..]),
        Some(b'|') => (None, &typestr[1..]),
        _ => (None, typestr),
    };
    if rest.starts_with('(') {
        return Err(unsupported(
            "a sub-array dtype is not an element type; zarr-python folds the sub-array into \
             the array's shape, so use the base type and add the dimensions to `shape`",
        ));
    }
    let mut chars = rest.chars();
    let kind = chars
        .next()
        .ok_or_else(|| invalid("the typestr is empty".into()))?;
    let size = chars.as_str();
    let multi_byte =
        |data_type: DataType| Leaf::Type(data_type, Some(order.unwrap_or(Endian::Little)));
    let single_byte = |data_type: DataType| Leaf::Type(data_type, None);
    let length = || -> Result<usize, DtypeError> {
        let n: usize = size
            .parse()
            .map_err(|_| invalid(format!("expected a length after {kind:?}")))?;
        if n == 0 {
            return Err(invalid("the length must be at least 1".into()));
        }
        Ok(n)
    };
    let too_large = || {
        invalid(format!(
            "the element would be larger than {MAX_ELEMENT_BYTES} bytes"
        ))
    };
    let leaf = match (kind, size) {
        ('b', "1") => single_byte(DataType::Bool),
        ('i', "1") => single_byte(DataType::Int8),
        ('u', "1") => single_byte(DataType::UInt8),
        ('i', "2") => multi_byte(DataType::Int16),
        ('i', "4") => multi_byte(DataType::Int32),
        ('i', "8") => multi_byte(DataType::Int64),
        ('u', "2") => multi_byte(DataType::UInt16),
        ('u', "4") => multi_byte(DataType::UInt32),
        ('u', "8") => multi_byte(DataType::UInt64),
        ('f', "2") => multi_byte(DataType::Float16),
        ('f', "4") => multi_byte(DataType::Float32),
        ('f', "8") => multi_byte(DataType::Float64),
        ('c', "8") => multi_byte(DataType::Complex64),
        ('c', "16") => multi_byte(DataType::Complex128),
        ('f', "12") | ('f', "16") | ('c', "24") | ('c', "32") => {
            return Err(unsupported(
                "extended-precision (long double) floats have no portable layout",
            ))
        }
        ('S', _) => {
            let len = length()?;
            if len > MAX_ELEMENT_BYTES {
                return Err(too_large());
            }
            single_byte(DataType::FixedBytes { len })
        }
        ('V', _) => {
            let bytes = length()?;
            if bytes > MAX_ELEMENT_BYTES {
                return Err(too_large());
            }
            single_byte(DataType::RawBits { bytes })
        }
        ('U', _) => {
            let chars = length()?;
            if chars > MAX_ELEMENT_BYTES / 4 {
                return Err(too_large());
            }
            multi_byte(DataType::FixedUtf32 { chars })
        }
        ('M', _) | ('m', _) => {
            let (unit, scale) = match size.strip_prefix('8') {
                Some("") => (crate::TimeUnit::Generic, 1),
                Some(bracketed) => bracketed
                    .strip_prefix('[')
                    .and_then(|b| b.strip_suffix(']'))
                    .and_then(parse_time_unit_with_scale)
                    .ok_or_else(|| {
                        invalid(
                            "expected a unit in brackets such as [ns] or [10s]; units are \
                             Y M W D h m s ms us ns ps fs as"
                                .into(),
                        )
                    })?,
                None => {
                    return Err(invalid(
                        "datetime64 / timedelta64 are 8 bytes (M8 / m8)".into(),
                    ))
                }
            };
            multi_byte(if kind == 'M' {
                DataType::DateTime64 { unit, scale }
            } else {
                DataType::TimeDelta64 { unit, scale }
            })
        }
        ('O', "") | ('O', "8") => Leaf::Object,
        ('b' | 'i' | 'u' | 'f' | 'c', _) => {
            return Err(invalid(format!(
                "{size:?} is not a valid size for kind {kind:?}"
            )))
        }
        _ => {
            return Err(invalid(
                "unknown typestr; expected one such as \"<u2\", \"|b1\", \">f8\", \"<c16\", \
                 \"|S12\", \"<U3\", \"|V8\", \"<M8[ns]\" or \"|O\""
                    .into(),
            ))
        }
    };
    Ok(leaf)
}

/// The NumPy typestr of a non-structured, fixed-size type in byte order `endian`: `|u1`,
/// `<u2`, `>f8`, `|S12`, `<U3`, `|V8`, `<M8[ns]`; `|O` for variable-length types.
pub fn typestr(data_type: &DataType, endian: Endian) -> Result<String, DtypeError> {
    let order = match endian {
        Endian::Little => '<',
        Endian::Big => '>',
    };
    let numeric = |kind: char, size: usize| format!("{order}{kind}{size}");
    Ok(match data_type {
        DataType::Bool => "|b1".into(),
        DataType::Int8 => "|i1".into(),
        DataType::UInt8 => "|u1".into(),
        DataType::Int16 => numeric('i', 2),
        DataType::Int32 => numeric('i', 4),
        DataType::Int64 => numeric('i', 8),
        DataType::UInt16 => numeric('u', 2),
        DataType::UInt32 => numeric('u', 4),
        DataType::UInt64 => numeric('u', 8),
        DataType::Float16 => numeric('f', 2),
        DataType::Float32 => numeric('f', 4),
        DataType::Float64 => numeric('f', 8),
        DataType::Complex64 => numeric('c', 8),
        DataType::Complex128 => numeric('c', 16),
        DataType::RawBits { bytes } => format!("|V{bytes}"),
        DataType::FixedBytes { len } => format!("|S{len}"),
        DataType::FixedUtf32 { chars } => format!("{order}U{chars}"),
        DataType::DateTime64 { unit, scale } => {
            format!("{order}M8{}", time_unit_suffix(*unit, *scale))
        }
        DataType::TimeDelta64 { unit, scale } => {
            format!("{order}m8{}", time_unit_suffix(*unit, *scale))
        }
        DataType::String | DataType::Bytes => "|O".into(),
        DataType::Structured(_) | DataType::Custom(_) => {
            return Err(DtypeError::Unsupported {
                format: "NumPy",
                found: data_type.to_string(),
                reason: "it has no typestr (structured types are written as a field list; \
                         custom types have no NumPy form)"
                    .into(),
            })
        }
    })
}

/// The object codec id a variable-length type needs in `filters[0]` (`None` for fixed-size
/// types).
pub fn object_codec_id(data_type: &DataType) -> Option<&'static str> {
    match data_type {
        DataType::String => Some(VLEN_UTF8),
        DataType::Bytes => Some(VLEN_BYTES),
        _ => None,
    }
}

/// Write a data type as a `.zarray` `dtype` with multi-byte values in byte order `endian`
/// (structured fields with their own [`StructField::endian`] keep it). Variable-length types
/// become `|O` plus the object codec id for `filters[0]`.
pub fn dtype_to_json(data_type: &DataType, endian: Endian) -> Result<V2Dtype, DtypeError> {
    Ok(V2Dtype {
        dtype: descr_json(data_type, endian, true)?,
        object_codec_id: object_codec_id(data_type),
    })
}

pub(crate) fn descr_json(
    data_type: &DataType,
    endian: Endian,
    top_level: bool,
) -> Result<Value, DtypeError> {
    match data_type {
        DataType::Structured(fields) => fields
            .iter()
            .map(|field| {
                let mut entry = vec![
                    Value::String(field.name.clone()),
                    descr_json(&field.data_type, field.endian.unwrap_or(endian), false)?,
                ];
                if !field.shape.is_empty() {
                    entry.push(Value::from(field.shape.clone()));
                }
                Ok(Value::Array(entry))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        DataType::String | DataType::Bytes if !top_level => Err(DtypeError::Unsupported {
            format: FORMAT,
            found: data_type.to_string(),
            reason: "a variable-length type cannot be a field of a structured dtype".into(),
        }),
        DataType::Custom(_) => Err(DtypeError::Unsupported {
            format: FORMAT,
            found: data_type.to_string(),
            reason: "custom data types have no Zarr v2 dtype; store the array as Zarr v3".into(),
        }),
        other => typestr(other, endian).map(Value::String),
    }
}

/// Read a `.zarray` `fill_value` as one element's in-memory bytes (little-endian; the UTF-8
/// text or raw bytes for variable-length types). `null` (no fill value) gives `None`.
///
/// Accepts every form zarr-python 2 and 3 write (`"NaN"`, `"Infinity"`, `[re, im]`, base64 for
/// `S`/`V`/structured, plain strings for `U`, `0` meaning `""` for vlen-utf8) and, leniently,
/// numeric strings for numbers.
pub fn fill_value_from_v2_json(
    json: &Value,
    data_type: &DataType,
) -> Result<Option<Vec<u8>>, DtypeError> {
    if json.is_null() {
        return Ok(None);
    }
    fill_from_json(json, data_type, Flavor::V2).map(Some)
}

/// Write one element (in-memory bytes, as [`fill_value_from_v2_json`] returns) as a
/// `.zarray` `fill_value`, the way zarr-python writes it. Floats are JSON floats (printed
/// `0.0`, never `0`), non-finite floats `"NaN"`/`"Infinity"`/`"-Infinity"`.
pub fn fill_value_to_v2_json(bytes: &[u8], data_type: &DataType) -> Value {
    fill_to_json(bytes, data_type, Flavor::V2)
}
