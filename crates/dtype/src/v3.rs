//! Zarr v3 data types and fill values: the `data_type` member of `zarr.json` (core names,
//! `r<N>`, and the extension forms `string`, `bytes`, `numpy.datetime64`,
//! `numpy.timedelta64`, `fixed_length_utf32`, `struct`, plus the names zarr-python 3 writes),
//! custom types through a [`DataTypeRegistry`], and the `fill_value` spellings.
//!
//! Writing produces what zarr-python 3.4 writes and reads, since it is the peer that must read
//! our files: `S<n>` as `null_terminated_bytes`, `V<n>` as `raw_bytes` (zarr-python does not
//! read `r<N>`), variable-length bytes as `variable_length_bytes`.

use serde_json::{json, Map, Value};

use crate::error::show_json;
use crate::fill::{fill_from_json, fill_to_json, Flavor};
use crate::registry::with_default_registry;
use crate::v2::checked_struct_size;
use crate::{DataType, DataTypeRegistry, DtypeError, StructField, TimeUnit, MAX_ELEMENT_BYTES};

const FORMAT: &str = "Zarr v3";

/// Structured types nested deeper than this are refused (hostile input).
const MAX_NESTING: usize = 32;

/// The core and extension names that are plain strings.
fn named_type(name: &str) -> Option<DataType> {
    Some(match name {
        "bool" => DataType::Bool,
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "float16" => DataType::Float16,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        "complex64" => DataType::Complex64,
        "complex128" => DataType::Complex128,
        "string" => DataType::String,
        "bytes" | "variable_length_bytes" => DataType::Bytes,
        _ => return None,
    })
}

/// A built-in type spelled as a bare string: the names above and `r<N>`. `Ok(None)` when the
/// string is not a built-in name.
pub(crate) fn builtin_from_name(name: &str) -> Result<Option<DataType>, DtypeError> {
    if let Some(data_type) = named_type(name) {
        return Ok(Some(data_type));
    }
    let Some(bits) = name.strip_prefix('r') else {
        return Ok(None);
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    let invalid = |reason: String| DtypeError::InvalidDataType {
        format: FORMAT,
        found: format!("{name:?}"),
        reason,
    };
    let bits: usize = bits
        .parse()
        .map_err(|_| invalid("the bit count is too large".into()))?;
    if bits == 0 || bits % 8 != 0 {
        return Err(invalid(
            "raw bits r<N> need N to be a positive multiple of 8".into(),
        ));
    }
    if bits / 8 > MAX_ELEMENT_BYTES {
        return Err(invalid(format!(
            "the element would be larger than {MAX_ELEMENT_BYTES} bytes"
        )));
    }
    Ok(Some(DataType::RawBits { bytes: bits / 8 }))
}

impl DataType {
    /// Parse a Zarr v3 `data_type`, consulting the process-wide default registry for custom
    /// types (see [`crate::register_default`]).
    pub fn from_v3_json(json: &Value) -> Result<DataType, DtypeError> {
        with_default_registry(|registry| DataType::from_v3_json_with(json, registry))
    }

    /// Parse a Zarr v3 `data_type`, consulting `registry` for custom types. A name that both a
    /// built-in and a registered type answer to is an error listing both.
    pub fn from_v3_json_with(
        json: &Value,
        registry: &DataTypeRegistry,
    ) -> Result<DataType, DtypeError> {
        parse_with_depth(json, registry, 0)
    }

    /// Write this type as a Zarr v3 `data_type`, as zarr-python 3.4 writes it.
    pub fn to_v3_json(&self) -> Result<Value, DtypeError> {
        let length_bytes = |name: &str, length: usize| json!({"name": name, "configuration": {"length_bytes": length}});
        Ok(match self {
            DataType::RawBits { bytes } => length_bytes("raw_bytes", *bytes),
            DataType::FixedBytes { len } => length_bytes("null_terminated_bytes", *len),
            DataType::FixedUtf32 { chars } => {
                length_bytes("fixed_length_utf32", chars.saturating_mul(4))
            }
            DataType::Bytes => Value::from("variable_length_bytes"),
            DataType::DateTime64 { unit, scale } => time_json("numpy.datetime64", *unit, *scale)?,
            DataType::TimeDelta64 { unit, scale } => time_json("numpy.timedelta64", *unit, *scale)?,
            DataType::Structured(fields) => {
                let fields = fields
                    .iter()
                    .map(struct_field_json)
                    .collect::<Result<Vec<_>, _>>()?;
                json!({"name": "struct", "configuration": {"fields": fields}})
            }
            DataType::Custom(custom) => custom.0.to_v3_json(),
            // Every other type's Display is its v3 name.
            simple => Value::String(simple.to_string()),
        })
    }
}

fn time_json(name: &str, unit: TimeUnit, scale: u32) -> Result<Value, DtypeError> {
    if scale == 0 || scale > i32::MAX as u32 {
        return Err(DtypeError::Unsupported {
            format: FORMAT,
            found: format!("{name} with scale factor {scale}"),
            reason: format!("the scale factor must be in 1..={}", i32::MAX),
        });
    }
    Ok(json!({"name": name, "configuration": {"unit": unit.code(), "scale_factor": scale}}))
}

fn struct_field_json(field: &StructField) -> Result<Value, DtypeError> {
    let unsupported = |reason: String| DtypeError::Unsupported {
        format: FORMAT,
        found: format!("struct field {:?} ({})", field.name, field.data_type),
        reason,
    };
    if !field.shape.is_empty() {
        return Err(unsupported(format!(
            "it is a sub-array of shape {:?}, and Zarr v3 struct fields cannot be sub-arrays; \
             split it into scalar fields or store the array as Zarr v2",
            field.shape
        )));
    }
    if field.data_type.is_variable_length() {
        return Err(unsupported("struct fields must have a fixed size".into()));
    }
    if field.endian.is_some() {
        // Zarr v3 has one byte order for the whole element (the `bytes` codec's); writing a
        // field with its own order under it would store bytes the declaration misreads.
        return Err(unsupported(
            "it carries its own byte order, which Zarr v3 cannot express; \
             use DataType::without_field_byte_orders() (conversion does this)"
                .into(),
        ));
    }
    Ok(json!({"name": field.name, "data_type": field.data_type.to_v3_json()?}))
}

fn parse_with_depth(
    json: &Value,
    registry: &DataTypeRegistry,
    depth: usize,
) -> Result<DataType, DtypeError> {
    let builtin = parse_builtin(json, registry, depth)?;
    let custom = registry.custom_types_matching_v3(json);
    match (builtin, custom.as_slice()) {
        (Some(data_type), []) => Ok(data_type),
        (None, [only]) => Ok(DataType::Custom(only.clone())),
        (None, []) => {
            let registered = registry
                .custom_types()
                .map(|c| c.0.name().to_string())
                .collect::<Vec<_>>();
            Err(DtypeError::Unsupported {
                format: FORMAT,
                found: show_json(json),
                reason: format!(
                    "unknown data type; expected a core name (bool, int8..int64, \
                     uint8..uint64, float16, float32, float64, complex64, complex128, r<N>), \
                     string, bytes, an extension object (numpy.datetime64, \
                     numpy.timedelta64, fixed_length_utf32, struct, null_terminated_bytes, \
                     raw_bytes) or a registered custom type{}",
                    if registered.is_empty() {
                        " (none are registered)".to_string()
                    } else {
                        format!(" ({})", registered.join(", "))
                    }
                ),
            })
        }
        (builtin, custom) => Err(DtypeError::Ambiguous {
            name: show_json(json),
            candidates: builtin
                .map(|b| format!("built-in {b}"))
                .into_iter()
                .chain(custom.iter().map(|c| format!("custom type {}", c.0.name())))
                .collect(),
        }),
    }
}

fn parse_builtin(
    json: &Value,
    registry: &DataTypeRegistry,
    depth: usize,
) -> Result<Option<DataType>, DtypeError> {
    let invalid = |reason: String| DtypeError::InvalidDataType {
        format: FORMAT,
        found: show_json(json),
        reason,
    };
    let object = match json {
        Value::String(name) => return builtin_from_name(name),
        Value::Object(object) => object,
        _ => {
            return Err(invalid(
                "expected a data type name or an object with \"name\" and \"configuration\"".into(),
            ))
        }
    };
    let name = object
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("a data type object needs a string \"name\"".into()))?;
    let empty = Map::new();
    let config = match object.get("configuration") {
        None => &empty,
        Some(Value::Object(config)) => config,
        Some(_) => return Err(invalid("\"configuration\" must be an object".into())),
    };
    let length_bytes = || -> Result<usize, DtypeError> {
        let n = config
            .get("length_bytes")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| invalid("configuration needs an integer \"length_bytes\"".into()))?;
        if n == 0 || n > MAX_ELEMENT_BYTES {
            return Err(invalid(format!(
                "\"length_bytes\" must be in 1..={MAX_ELEMENT_BYTES}"
            )));
        }
        Ok(n)
    };
    Ok(Some(match name {
        "numpy.datetime64" | "numpy.timedelta64" => {
            let unit = config
                .get("unit")
                .and_then(Value::as_str)
                .and_then(TimeUnit::from_code)
                .ok_or_else(|| {
                    invalid(
                        "configuration needs a \"unit\" among Y M W D h m s ms us ns ps fs as \
                         generic"
                            .into(),
                    )
                })?;
            let scale = config
                .get("scale_factor")
                .and_then(Value::as_u64)
                .filter(|s| (1..=i32::MAX as u64).contains(s))
                .ok_or_else(|| {
                    invalid(format!(
                        "configuration needs an integer \"scale_factor\" in 1..={}",
                        i32::MAX
                    ))
                })? as u32;
            if name == "numpy.datetime64" {
                DataType::DateTime64 { unit, scale }
            } else {
                DataType::TimeDelta64 { unit, scale }
            }
        }
        "fixed_length_utf32" => {
            let bytes = length_bytes()?;
            if bytes % 4 != 0 {
                return Err(invalid(
                    "\"length_bytes\" of fixed_length_utf32 must be a multiple of 4".into(),
                ));
            }
            DataType::FixedUtf32 { chars: bytes / 4 }
        }
        "null_terminated_bytes" => DataType::FixedBytes {
            len: length_bytes()?,
        },
        "raw_bytes" => DataType::RawBits {
            bytes: length_bytes()?,
        },
        "struct" | "structured" => {
            let entries = config
                .get("fields")
                .and_then(Value::as_array)
                .ok_or_else(|| invalid("configuration needs a \"fields\" list".into()))?;
            DataType::Structured(parse_struct_fields(entries, registry, depth)?)
        }
        // `{"name": "uint8"}` and the like: a plain name in object form.
        other if config.is_empty() => match builtin_from_name(other)? {
            Some(data_type) => data_type,
            None => return Ok(None),
        },
        _ => return Ok(None),
    }))
}

fn parse_struct_fields(
    entries: &[Value],
    registry: &DataTypeRegistry,
    depth: usize,
) -> Result<Vec<StructField>, DtypeError> {
    let invalid = |found: &Value, reason: String| DtypeError::InvalidDataType {
        format: FORMAT,
        found: show_json(found),
        reason,
    };
    let all = Value::Array(entries.to_vec());
    if depth >= MAX_NESTING {
        return Err(invalid(
            &all,
            format!("structs nest deeper than {MAX_NESTING} levels"),
        ));
    }
    if entries.is_empty() {
        return Err(invalid(&all, "a struct needs at least one field".into()));
    }
    let mut fields: Vec<StructField> = Vec::with_capacity(entries.len());
    for entry in entries {
        // `{"name": .., "data_type": ..}`, or the legacy `[name, data_type]` pair.
        let (name, type_json) = match entry {
            Value::Object(field) => (field.get("name"), field.get("data_type")),
            Value::Array(pair) if pair.len() == 2 => (pair.first(), pair.get(1)),
            _ => (None, None),
        };
        let (Some(Value::String(name)), Some(type_json)) = (name, type_json) else {
            return Err(invalid(
                entry,
                "a field must be {\"name\": <string>, \"data_type\": <type>} (or a legacy \
                 [name, type] pair)"
                    .into(),
            ));
        };
        if name.is_empty() || fields.iter().any(|f| &f.name == name) {
            return Err(invalid(
                entry,
                format!("field names must be non-empty and unique; {name:?} is not"),
            ));
        }
        let data_type = parse_with_depth(type_json, registry, depth + 1)?;
        if data_type.is_variable_length() {
            return Err(invalid(
                entry,
                format!("field {name:?} has variable-length type {data_type}; struct fields must have a fixed size"),
            ));
        }
        fields.push(StructField {
            name: name.clone(),
            data_type,
            shape: Vec::new(),
            endian: None,
        });
    }
    if checked_struct_size(&fields).is_none_or(|size| size > MAX_ELEMENT_BYTES) {
        return Err(invalid(
            &all,
            format!("the element would be larger than {MAX_ELEMENT_BYTES} bytes"),
        ));
    }
    Ok(fields)
}

/// Read a `zarr.json` `fill_value` as one element's in-memory bytes (little-endian; the UTF-8
/// text or raw bytes for variable-length types).
///
/// Floats: numbers, `"NaN"`, `"Infinity"`, `"-Infinity"`, or `"0x…"` bit patterns (payload
/// kept exactly). Complex: `[re, im]`. Raw bits and bytes: lists of byte values or base64.
/// Datetimes: integers or `"NaT"`. Structs: an object with one member per field (or, legacy,
/// base64 of the packed element). Custom types: their own reader.
pub fn fill_value_from_v3_json(json: &Value, data_type: &DataType) -> Result<Vec<u8>, DtypeError> {
    fill_from_json(json, data_type, Flavor::V3)
}

/// Write one element (in-memory bytes, as [`fill_value_from_v3_json`] returns) as a
/// `zarr.json` `fill_value`, the way zarr-python 3 writes it: `"NaN"` for the canonical NaN
/// (other NaN payloads as `"0x…"` so they survive), `-0.0` kept, structs as objects, raw and
/// variable-length bytes as base64, datetimes as integers.
pub fn fill_value_to_v3_json(bytes: &[u8], data_type: &DataType) -> Value {
    fill_to_json(bytes, data_type, Flavor::V3)
}
