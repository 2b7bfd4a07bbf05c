//! What a file stores, in the terms of the specification language: a dataset's element type
//! and shape from its array metadata (no chunk is read), and an attribute's from its JSON
//! value. ISO 8601 text is recognised here too.

use neurochunk_dtype::{v2, DataType};
use serde_json::{Map, Value};

use super::schema::{RefType, Stored};
use crate::convention::{
    is_text_type_name, numeric_type_from_name, Convention, LEGACY_DTYPE, V3_DTYPE,
    V3_REFERENCE_FIELDS, V3_SCALAR,
};
use crate::reference::{attribute_reference, Reference};

/// A dataset's element type.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum StoredType {
    /// Numbers, bools or text.
    Primitive(Stored),
    /// Object or region references.
    Reference(RefType),
    /// Compound elements, field by field.
    Compound(Vec<(String, StoredType)>),
}

impl StoredType {
    /// The name used in messages.
    pub fn describe(&self) -> String {
        match self {
            StoredType::Primitive(p) => p.name().to_string(),
            StoredType::Reference(r) => format!("{} reference", r.name()),
            StoredType::Compound(fields) => {
                let inner: Vec<String> = fields
                    .iter()
                    .map(|(n, t)| format!("{n}: {}", t.describe()))
                    .collect();
                format!("compound ({})", inner.join(", "))
            }
        }
    }
}

/// The element type a legacy type-name marker (`zarr_dtype` or a compound field's `dtype`)
/// stands for.
fn legacy_named(value: &Value) -> Option<StoredType> {
    match value {
        Value::String(s) if s == "object" => Some(StoredType::Reference(RefType::Object)),
        Value::String(s) if s == "region" => Some(StoredType::Reference(RefType::Region)),
        Value::String(s) if matches!(s.as_str(), "bytes" | "ascii") => {
            Some(StoredType::Primitive(Stored::Ascii))
        }
        Value::String(s) if is_text_type_name(s) => Some(StoredType::Primitive(Stored::Utf8)),
        Value::String(s) => {
            numeric_type_from_name(s).map(|d| StoredType::Primitive(Stored::of(&d)))
        }
        Value::Object(o) if o.contains_key("target_type") || o.contains_key("reftype") => {
            let region = o.get("reftype").and_then(Value::as_str) == Some("region");
            Some(StoredType::Reference(if region {
                RefType::Region
            } else {
                RefType::Object
            }))
        }
        _ => None,
    }
}

/// The legacy compound field list (`zarr_dtype: [{"name", "dtype"}, …]`) by field name.
fn legacy_fields(attrs: &Map<String, Value>) -> Option<Vec<(String, Option<StoredType>)>> {
    attrs.get(LEGACY_DTYPE)?.as_array().map(|list| {
        list.iter()
            .filter_map(|f| {
                let name = f.get("name")?.as_str()?.to_string();
                Some((name, f.get("dtype").and_then(legacy_named)))
            })
            .collect()
    })
}

/// A dataset as stored: element type (or why it cannot be told) and shape (`None`: scalar).
#[derive(Clone, Debug)]
pub(crate) struct StoredDataset {
    pub dtype: Result<StoredType, String>,
    pub shape: Option<Vec<u64>>,
}

/// Classify a dataset from its array metadata document and attributes.
pub(crate) fn classify(
    convention: Convention,
    attrs: &Map<String, Value>,
    doc: &Value,
) -> StoredDataset {
    let shape: Vec<u64> = doc
        .get("shape")
        .and_then(Value::as_array)
        .map(|d| d.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let scalar = shape.is_empty()
        || (shape == [1]
            && (attrs.get(LEGACY_DTYPE).and_then(Value::as_str) == Some("scalar")
                || attrs.get(V3_SCALAR).and_then(Value::as_bool) == Some(true)));
    let dtype = match convention {
        Convention::Legacy => classify_v2(attrs, doc),
        Convention::V3 => classify_v3(attrs, doc),
    };
    StoredDataset {
        dtype,
        shape: (!scalar).then_some(shape),
    }
}

fn classify_v2(attrs: &Map<String, Value>, doc: &Value) -> Result<StoredType, String> {
    let dtype = doc.get("dtype").ok_or("the array has no dtype")?;
    let object_codec = doc
        .get("filters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("id").and_then(Value::as_str))
        .find(|id| v2::is_object_codec_id(id));
    let marker = attrs.get(LEGACY_DTYPE);
    match dtype {
        Value::String(s) if s == "|O" => match object_codec {
            Some("vlen-utf8") | Some("categorize") => Ok(StoredType::Primitive(Stored::Utf8)),
            Some("vlen-bytes") => Ok(StoredType::Primitive(Stored::Ascii)),
            Some("json2") | Some("pickle") => {
                if let Some(fields) = legacy_fields(attrs) {
                    return Ok(StoredType::Compound(
                        fields
                            .into_iter()
                            .map(|(n, t)| (n, t.unwrap_or(StoredType::Primitive(Stored::Other))))
                            .collect(),
                    ));
                }
                Ok(marker
                    .and_then(legacy_named)
                    .unwrap_or(StoredType::Primitive(Stored::Utf8)))
            }
            Some(other) => Ok(StoredType::Primitive(if other == "vlen-array" {
                Stored::Other
            } else {
                Stored::Utf8
            })),
            None => Err("an object array without an object codec".into()),
        },
        Value::Array(entries) => {
            // A structured dtype, `[[name, typestr], …]`; its `|O` fields (pickled) hold what
            // the legacy field list says.
            let markers = legacy_fields(attrs).unwrap_or_default();
            let mut fields = Vec::with_capacity(entries.len());
            for entry in entries {
                let parts = entry
                    .as_array()
                    .ok_or("a structured dtype entry is not a list")?;
                let name = parts
                    .first()
                    .and_then(Value::as_str)
                    .ok_or("a structured dtype entry has no name")?;
                let marked = markers
                    .iter()
                    .find(|(n, _)| n == name)
                    .and_then(|(_, t)| t.clone());
                let kind = match (parts.get(1), marked) {
                    (Some(Value::String(t)), Some(m)) if t == "|O" => m,
                    (Some(Value::String(t)), _) if t == "|O" => StoredType::Primitive(Stored::Utf8),
                    (Some(t), _) => {
                        let (data_type, _) = v2::dtype_from_json(t, object_codec)
                            .map_err(|e| format!("field '{name}': {e}"))?;
                        StoredType::Primitive(Stored::of(&data_type))
                    }
                    (None, _) => return Err(format!("field '{name}' has no type")),
                };
                fields.push((name.to_string(), kind));
            }
            Ok(StoredType::Compound(fields))
        }
        other => {
            let (data_type, _) =
                v2::dtype_from_json(other, object_codec).map_err(|e| e.to_string())?;
            Ok(StoredType::Primitive(Stored::of(&data_type)))
        }
    }
}

fn classify_v3(attrs: &Map<String, Value>, doc: &Value) -> Result<StoredType, String> {
    let json = doc.get("data_type").ok_or("the array has no data_type")?;
    let data_type = DataType::from_v3_json(json).map_err(|e| e.to_string())?;
    let marker = attrs.get(V3_DTYPE).and_then(Value::as_str);
    match data_type {
        DataType::String | DataType::FixedUtf32 { .. } => Ok(match marker {
            Some("object_reference") => StoredType::Reference(RefType::Object),
            Some("region_reference") => StoredType::Reference(RefType::Region),
            _ => StoredType::Primitive(Stored::Utf8),
        }),
        DataType::Structured(fields) => {
            let refs: Vec<&str> = attrs
                .get(V3_REFERENCE_FIELDS)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            Ok(StoredType::Compound(
                fields
                    .iter()
                    .map(|f| {
                        let kind = if refs.contains(&f.name.as_str()) {
                            StoredType::Reference(RefType::Object)
                        } else {
                            StoredType::Primitive(Stored::of(&f.data_type))
                        };
                        (f.name.clone(), kind)
                    })
                    .collect(),
            ))
        }
        other => Ok(StoredType::Primitive(Stored::of(&other))),
    }
}

/// One element of an attribute value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AttrElement {
    /// A number, bool or text, with the type JSON gives it (integers are `int64`, or
    /// `uint64` past its range; non-integers `float64`).
    Primitive(Stored),
    /// A reference (either convention's wrapper).
    Reference(Reference),
    /// Something no dtype describes (a malformed reference, a mapping, null).
    Other(String),
}

/// An attribute's value as stored: its shape (`None`: scalar) and elements.
#[derive(Clone, Debug)]
pub(crate) struct StoredAttribute<'v> {
    pub shape: Option<Vec<u64>>,
    pub elements: Vec<(AttrElement, &'v Value)>,
}

/// Classify a JSON attribute value.
pub(crate) fn classify_attribute(value: &Value) -> StoredAttribute<'_> {
    fn element(v: &Value) -> AttrElement {
        if let Some(r) = attribute_reference(v) {
            return match r {
                Ok(r) => AttrElement::Reference(r),
                Err(e) => AttrElement::Other(format!("a malformed reference ({e})")),
            };
        }
        match v {
            Value::Bool(_) => AttrElement::Primitive(Stored::Bool),
            Value::String(_) => AttrElement::Primitive(Stored::Utf8),
            Value::Number(n) if n.is_i64() => AttrElement::Primitive(Stored::Int64),
            Value::Number(n) if n.is_u64() => AttrElement::Primitive(Stored::UInt64),
            Value::Number(_) => AttrElement::Primitive(Stored::Float64),
            Value::Null => AttrElement::Other("null".into()),
            Value::Object(_) => AttrElement::Other("a mapping".into()),
            Value::Array(_) => AttrElement::Other("a nested list".into()),
        }
    }
    match value {
        Value::Array(items) => {
            // Nested lists: a rectangular multi-dimensional value.
            let mut shape = vec![items.len() as u64];
            let mut level: Vec<&Value> = items.iter().collect();
            while let Some(Value::Array(first)) = level.first() {
                let n = first.len();
                if !level
                    .iter()
                    .all(|v| v.as_array().is_some_and(|a| a.len() == n))
                {
                    break;
                }
                shape.push(n as u64);
                level = level
                    .iter()
                    .flat_map(|v| v.as_array().into_iter().flatten())
                    .collect();
            }
            StoredAttribute {
                shape: Some(shape),
                elements: level.into_iter().map(|v| (element(v), v)).collect(),
            }
        }
        other => StoredAttribute {
            shape: None,
            elements: vec![(element(other), other)],
        },
    }
}

/// Whether `text` is an ISO 8601 date or date-time as hdmf writes them:
/// `[-]YYYY-MM-DD[THH:MM:SS[.f…][Z|±HH:MM]]`.
pub(crate) fn is_iso8601(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    let digits = |from: usize, n: usize| -> bool {
        b.len() >= from + n && b[from..from + n].iter().all(u8::is_ascii_digit)
    };
    let two = |from: usize| -> Option<u32> {
        digits(from, 2).then(|| u32::from(b[from] - b'0') * 10 + u32::from(b[from + 1] - b'0'))
    };
    if b.first() == Some(&b'-') {
        i += 1;
    }
    let year_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let year_len = i - year_start;
    if year_len < 4 || (year_len > 4 && b[year_start] == b'0') {
        return false;
    }
    if b.get(i) != Some(&b'-') {
        return false;
    }
    let Some(month) = two(i + 1) else {
        return false;
    };
    if !(1..=12).contains(&month) || b.get(i + 3) != Some(&b'-') {
        return false;
    }
    let Some(day) = two(i + 4) else {
        return false;
    };
    if !(1..=31).contains(&day) {
        return false;
    }
    i += 6;
    if i == b.len() {
        return true;
    }
    if b[i] != b'T' {
        return false;
    }
    let (Some(h), Some(m), Some(s)) = (two(i + 1), two(i + 4), two(i + 7)) else {
        return false;
    };
    if h > 23 || m > 59 || s > 59 || b.get(i + 3) != Some(&b':') || b.get(i + 6) != Some(&b':') {
        return false;
    }
    i += 9;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match b.get(i) {
        None => true,
        Some(b'Z') => i + 1 == b.len(),
        Some(b'+' | b'-') => {
            let (Some(h), Some(m)) = (two(i + 1), two(i + 4)) else {
                return false;
            };
            h <= 23 && m <= 59 && b.get(i + 3) == Some(&b':') && i + 6 == b.len()
        }
        Some(_) => false,
    }
}

/// Whether an ISO 8601 text carries a time zone (`Z` or an offset after the time).
pub(crate) fn has_timezone(text: &str) -> bool {
    if text.ends_with('Z') {
        return true;
    }
    let Some(t) = text.find('T') else {
        return false;
    };
    text.contains('+') || text.rfind('-').is_some_and(|d| d > t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn iso8601_forms_and_time_zones() {
        for ok in [
            "2024-01-02",
            "2024-01-02T03:04:05",
            "2024-01-02T03:04:05.123456+00:00",
            "2024-01-02T03:04:05Z",
            "-12345-12-31T23:59:59-05:30",
        ] {
            assert!(is_iso8601(ok), "{ok}");
        }
        for bad in [
            "yesterday",
            "2024-13-02",
            "2024-01-32",
            "2024-1-02",
            "2024-01-02 03:04:05",
            "2024-01-02T24:00:00",
            "2024-01-02T03:04:05.",
            "2024-01-02T03:04:05+0000",
            "02024-01-02",
        ] {
            assert!(!is_iso8601(bad), "{bad}");
        }
        assert!(has_timezone("2024-01-02T03:04:05Z"));
        assert!(has_timezone("2024-01-02T03:04:05-05:00"));
        assert!(!has_timezone("2024-01-02T03:04:05"));
        assert!(!has_timezone("2024-01-02"));
    }

    #[test]
    fn datasets_are_classified_from_metadata_and_markers() {
        let attrs = |v: Value| v.as_object().cloned().unwrap_or_default();
        let legacy = classify(
            Convention::Legacy,
            &attrs(json!({"zarr_dtype": "scalar"})),
            &json!({"dtype": "|O", "filters": [{"id": "vlen-bytes"}], "shape": [1]}),
        );
        assert_eq!(legacy.shape, None);
        assert_eq!(legacy.dtype, Ok(StoredType::Primitive(Stored::Ascii)));
        let refs = classify(
            Convention::Legacy,
            &attrs(json!({"zarr_dtype": "object"})),
            &json!({"dtype": "|O", "filters": [{"id": "pickle"}], "shape": [4]}),
        );
        assert_eq!(refs.dtype, Ok(StoredType::Reference(RefType::Object)));
        assert_eq!(refs.shape, Some(vec![4]));
        let compound = classify(
            Convention::Legacy,
            &attrs(
                json!({"zarr_dtype": [{"name": "a", "dtype": "int32"}, {"name": "r", "dtype": "object"}]}),
            ),
            &json!({"dtype": [["a", "<i4"], ["r", "|O"]], "filters": [{"id": "pickle"}], "shape": [3]}),
        );
        assert_eq!(
            compound.dtype,
            Ok(StoredType::Compound(vec![
                ("a".into(), StoredType::Primitive(Stored::Int32)),
                ("r".into(), StoredType::Reference(RefType::Object)),
            ]))
        );
        let v3 = classify(
            Convention::V3,
            &attrs(json!({"_REFERENCE_FIELDS": ["r"]})),
            &json!({"shape": [2], "data_type": {"name": "struct", "configuration": {"fields": [
                {"name": "a", "data_type": "uint16"},
                {"name": "r", "data_type": {"name": "fixed_length_utf32", "configuration": {"length_bytes": 2048}}}
            ]}}}),
        );
        assert_eq!(
            v3.dtype,
            Ok(StoredType::Compound(vec![
                ("a".into(), StoredType::Primitive(Stored::UInt16)),
                ("r".into(), StoredType::Reference(RefType::Object)),
            ]))
        );
        let v3_refs = classify(
            Convention::V3,
            &attrs(json!({"_DTYPE": "object_reference"})),
            &json!({"shape": [], "data_type": "string"}),
        );
        assert_eq!(v3_refs.shape, None);
        assert_eq!(v3_refs.dtype, Ok(StoredType::Reference(RefType::Object)));
        let numbers = classify(
            Convention::V3,
            &Map::new(),
            &json!({"shape": [10, 3], "data_type": "float32"}),
        );
        assert_eq!(numbers.shape, Some(vec![10, 3]));
        assert_eq!(numbers.dtype, Ok(StoredType::Primitive(Stored::Float32)));
    }

    #[test]
    fn attributes_are_classified_from_json() {
        let matrix = json!([[1, 2, 3], [4, 5, 6]]);
        let a = classify_attribute(&matrix);
        assert_eq!(a.shape, Some(vec![2, 3]));
        assert_eq!(a.elements.len(), 6);
        assert_eq!(a.elements[0].0, AttrElement::Primitive(Stored::Int64));
        assert_eq!(a.elements[5].1, &json!(6));
        let text = json!("text");
        let s = classify_attribute(&text);
        assert_eq!(s.shape, None);
        assert_eq!(s.elements[0].0, AttrElement::Primitive(Stored::Utf8));
        let reference = json!({"_REFERENCE": {"source": ".", "path": "/a"}});
        let r = classify_attribute(&reference);
        assert!(matches!(&r.elements[0].0, AttrElement::Reference(r) if r.path == "/a"));
        let float = json!(2.5);
        let f = classify_attribute(&float);
        assert_eq!(f.elements[0].0, AttrElement::Primitive(Stored::Float64));
        let ragged = json!([[1], [2, 3]]);
        let ragged = classify_attribute(&ragged);
        assert_eq!(ragged.shape, Some(vec![2]));
    }
}
