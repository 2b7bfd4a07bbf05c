//! Reading NWB values out of what the engine decodes: a dataset's markers (`zarr_dtype`,
//! `_DTYPE`, `_REFERENCE_FIELDS`, LINDI's `_COMPOUND_DTYPE`) turn text, structured and numeric
//! elements into [`DatasetValue`]s: references, compounds with their field kinds, text and
//! numbers. The file API (`file.rs`) reads the elements; this module says what they mean.

use std::collections::HashMap;

use neurochunk_array::{ArrayMetadata, DataType};
use neurochunk_codec::PickleCodec;
use serde_json::{Map, Value};

use crate::convention::{
    is_text_type_name, numeric_type_from_name, LEGACY_DTYPE, V3_DTYPE, V3_REFERENCE_FIELDS,
    V3_SCALAR,
};
use crate::index::NodeDoc;
use crate::reference::Reference;
use crate::values::{
    fixed_text_elements, structured_rows, text_elements, CompoundField, DatasetValue, FieldKind,
    FieldValue,
};

/// A JSON (`json2`) object array without hdmf-zarr's type marker: LINDI reference files store
/// text, references and compounds this way.
pub(crate) fn lindi_object_array(node: &NodeDoc) -> bool {
    !node.attributes.contains_key(LEGACY_DTYPE)
        && node
            .array_doc
            .as_ref()
            .and_then(|d| d.get("filters"))
            .and_then(Value::as_array)
            .is_some_and(|f| {
                f.iter()
                    .any(|c| c.get("id").and_then(Value::as_str) == Some("json2"))
            })
}

/// The attribute LINDI puts on compound datasets: `[[name, numpy type], ...]`, `"<REFERENCE>"`
/// for reference fields.
const LINDI_COMPOUND_DTYPE: &str = "_COMPOUND_DTYPE";

/// A LINDI compound: each element the JSON text of a row (a list of field values).
fn lindi_compound(list: &[Value], texts: &[String]) -> Result<DatasetValue, String> {
    let mut fields = Vec::with_capacity(list.len());
    for entry in list {
        let (Some(name), Some(ty)) = (
            entry.get(0).and_then(Value::as_str),
            entry.get(1).and_then(Value::as_str),
        ) else {
            return Err(format!(
                "'{LINDI_COMPOUND_DTYPE}' entry {entry} is not [name, type]"
            ));
        };
        let kind = if ty == "<REFERENCE>" {
            FieldKind::Reference
        } else if let Some(dt) = numeric_type_from_name(ty) {
            FieldKind::Numeric(dt)
        } else {
            FieldKind::Text
        };
        fields.push(CompoundField {
            name: name.to_string(),
            kind,
        });
    }
    let rows = texts
        .iter()
        .map(|t| {
            let row: Value = serde_json::from_str(t)
                .map_err(|e| format!("compound element is not JSON ({e}): {t}"))?;
            let cells = row
                .as_array()
                .filter(|c| c.len() == fields.len())
                .ok_or_else(|| {
                    format!("compound element {t} does not have {} fields", fields.len())
                })?;
            cells
                .iter()
                .zip(&fields)
                .map(|(cell, f)| {
                    Ok(match &f.kind {
                        FieldKind::Reference => FieldValue::Reference(match cell {
                            Value::Null => None,
                            v => Some(Reference::from_json(v)?),
                        }),
                        FieldKind::Text => FieldValue::Text(match cell {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        }),
                        FieldKind::Numeric(_) => FieldValue::Number(cell.clone()),
                    })
                })
                .collect::<Result<Vec<_>, String>>()
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(DatasetValue::Compound { fields, rows })
}

/// Whether every non-empty element is a LINDI reference (`{"_REFERENCE": {...}}`).
fn lindi_references(texts: &[String]) -> bool {
    let mut any = false;
    for t in texts {
        let t = t.trim();
        if t.is_empty() || t == "null" {
            continue;
        }
        if !t.starts_with(r#"{"_REFERENCE""#) {
            return false;
        }
        any = true;
    }
    any
}

/// Whether the dataset's type marker says its elements are references.
fn reference_marker(attrs: &Map<String, Value>) -> bool {
    let marker = |k: &str| attrs.get(k).and_then(Value::as_str);
    matches!(marker(LEGACY_DTYPE), Some("object" | "region"))
        || matches!(
            marker(V3_DTYPE),
            Some("object_reference" | "region_reference")
        )
}

/// Whether a dataset's markers say it holds references (plain or in compound fields).
pub(crate) fn holds_references(attrs: &Map<String, Value>) -> bool {
    if reference_marker(attrs) {
        return true;
    }
    if attrs
        .get(V3_REFERENCE_FIELDS)
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        return true;
    }
    legacy_field_list(attrs).is_some_and(|fields| {
        fields
            .iter()
            .any(|(_, kind)| *kind == LegacyField::Reference)
    })
}

#[derive(Clone, Debug, PartialEq)]
enum LegacyField {
    Reference,
    Text,
    Numeric(Option<DataType>),
}

/// The legacy compound field list (`zarr_dtype: [{"dtype", "name"}, …]`).
fn legacy_field_list(attrs: &Map<String, Value>) -> Option<Vec<(String, LegacyField)>> {
    let list = attrs.get(LEGACY_DTYPE)?.as_array()?;
    list.iter()
        .map(|entry| {
            let name = entry.get("name")?.as_str()?.to_string();
            let dtype = entry.get("dtype")?;
            let kind = match dtype {
                Value::String(s) if s == "object" || s == "region" => LegacyField::Reference,
                Value::String(s) if is_text_type_name(s) => LegacyField::Text,
                Value::String(s) => LegacyField::Numeric(numeric_type_from_name(s)),
                Value::Object(o) if o.contains_key("reftype") || o.contains_key("target_type") => {
                    LegacyField::Reference
                }
                _ => LegacyField::Numeric(None),
            };
            Some((name, kind))
        })
        .collect()
}

pub(crate) fn is_scalar(attrs: &Map<String, Value>, shape: &[u64]) -> bool {
    if shape.is_empty() {
        return true;
    }
    shape == [1]
        && (attrs.get(LEGACY_DTYPE).and_then(Value::as_str) == Some("scalar")
            || attrs.get(V3_SCALAR).and_then(Value::as_bool) == Some(true))
}

/// Turn engine output into NWB values using the dataset's markers.
pub(crate) fn interpret(
    meta: &ArrayMetadata,
    attrs: &Map<String, Value>,
    array_doc: Option<&Value>,
    data: neurochunk_codec::ArrayBytes,
) -> Result<DatasetValue, String> {
    let data_type = &meta.data_type;
    match data_type {
        DataType::String
        | DataType::Bytes
        | DataType::FixedUtf32 { .. }
        | DataType::FixedBytes { .. } => {
            let texts = if data_type.is_variable_length() {
                let mut texts = text_elements(&data)?;
                clear_pickled_fill(meta, &mut texts);
                texts
            } else {
                fixed_text_elements(data_type, &fixed_bytes(data)?)?
            };
            if reference_marker(attrs) {
                return texts
                    .iter()
                    .map(|t| Reference::from_element(t))
                    .collect::<Result<Vec<_>, _>>()
                    .map(DatasetValue::References);
            }
            if let Some(fields) = legacy_field_list(attrs) {
                return legacy_compound(&fields, array_doc, &texts);
            }
            if !attrs.contains_key(LEGACY_DTYPE) && !attrs.contains_key(V3_DTYPE) {
                if let Some(list) = attrs.get(LINDI_COMPOUND_DTYPE).and_then(Value::as_array) {
                    return lindi_compound(list, &texts);
                }
                if lindi_references(&texts) {
                    return texts
                        .iter()
                        .map(|t| Reference::from_element(t))
                        .collect::<Result<Vec<_>, _>>()
                        .map(DatasetValue::References);
                }
            }
            Ok(DatasetValue::Text {
                values: texts,
                bytes: matches!(data_type, DataType::Bytes | DataType::FixedBytes { .. }),
            })
        }
        DataType::Structured(fields) => {
            let mut reference_fields: Vec<String> = attrs
                .get(V3_REFERENCE_FIELDS)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(list) = legacy_field_list(attrs) {
                reference_fields.extend(
                    list.into_iter()
                        .filter(|(_, k)| *k == LegacyField::Reference)
                        .map(|(n, _)| n),
                );
            }
            let bytes = fixed_bytes(data)?;
            let (fields, rows) = structured_rows(fields, &bytes, &reference_fields)?;
            Ok(DatasetValue::Compound { fields, rows })
        }
        other if other.fixed_size().is_some() => Ok(DatasetValue::Numeric {
            data_type: other.clone(),
            bytes: fixed_bytes(data)?,
        }),
        other => Err(format!(
            "data type {other} is not supported for NWB datasets"
        )),
    }
}

/// Chunks never written read as the fill value, which for pickled arrays is the base64 text of
/// a pickled 0 (e.g. "gAVLAC4="): no element. Told from the array's codec chain (its
/// serializer is the `pickle` object codec) and its fill value.
fn clear_pickled_fill(meta: &ArrayMetadata, texts: &mut [String]) {
    if meta.codecs.serializer::<PickleCodec>().is_none() {
        return;
    }
    let fill = meta
        .fill_value
        .as_deref()
        .and_then(|f| std::str::from_utf8(f).ok())
        .filter(|f| !f.is_empty());
    if let Some(fill) = fill {
        for t in texts.iter_mut().filter(|t| t.as_str() == fill) {
            t.clear();
        }
    }
}

fn fixed_bytes(data: neurochunk_codec::ArrayBytes) -> Result<Vec<u8>, String> {
    match data {
        neurochunk_codec::ArrayBytes::Fixed(b) => Ok(b),
        neurochunk_codec::ArrayBytes::Variable { .. } => Err("expected fixed-size elements".into()),
    }
}

/// Legacy compounds stored as pickled objects: each element is the JSON text of a record
/// (an object keyed by field name, or a list in field order for hdmf-zarr ≤ 0.5).
fn legacy_compound(
    fields: &[(String, LegacyField)],
    array_doc: Option<&Value>,
    texts: &[String],
) -> Result<DatasetValue, String> {
    // Field types from the `.zarray` dtype when it lists them.
    let stored: HashMap<String, DataType> = array_doc
        .and_then(|d| d.get("dtype"))
        .and_then(Value::as_array)
        .map(|entries| {
            entries
                .iter()
                .filter_map(|e| {
                    let parts = e.as_array()?;
                    let name = parts.first()?.as_str()?;
                    let ty = parts.get(1)?;
                    let (dt, _) = neurochunk_dtype::v2::dtype_from_json(ty, None).ok()?;
                    Some((name.to_string(), dt))
                })
                .collect()
        })
        .unwrap_or_default();
    let compound_fields: Vec<CompoundField> = fields
        .iter()
        .map(|(name, kind)| CompoundField {
            name: name.clone(),
            kind: match kind {
                LegacyField::Reference => FieldKind::Reference,
                LegacyField::Text => FieldKind::Text,
                LegacyField::Numeric(dt) => match stored.get(name).filter(|d| {
                    d.fixed_size().is_some()
                        && !matches!(d, DataType::FixedUtf32 { .. } | DataType::FixedBytes { .. })
                }) {
                    Some(d) => FieldKind::Numeric(d.clone()),
                    None => dt
                        .clone()
                        .map(FieldKind::Numeric)
                        .unwrap_or(FieldKind::Text),
                },
            },
        })
        .collect();
    let mut rows = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let value: Value = if text.trim().is_empty() || text.trim() == "0" {
            Value::Null
        } else {
            serde_json::from_str(text)
                .map_err(|e| format!("compound element {i} is not JSON ({e})"))?
        };
        let cell = |pos: usize, name: &str| -> Value {
            match &value {
                Value::Object(o) => o.get(name).cloned().unwrap_or(Value::Null),
                Value::Array(a) => a.get(pos).cloned().unwrap_or(Value::Null),
                _ => Value::Null,
            }
        };
        let mut row = Vec::with_capacity(compound_fields.len());
        for (pos, f) in compound_fields.iter().enumerate() {
            let v = cell(pos, &f.name);
            row.push(match &f.kind {
                FieldKind::Reference => FieldValue::Reference(match &v {
                    Value::Object(_) => Some(Reference::from_json(&v)?),
                    Value::String(s) => Reference::from_element(s)?,
                    _ => None,
                }),
                FieldKind::Text => FieldValue::Text(match v {
                    Value::String(s) => s,
                    Value::Null => String::new(),
                    other => other.to_string(),
                }),
                FieldKind::Numeric(_) => {
                    FieldValue::Number(if v.is_null() { Value::from(0) } else { v })
                }
            });
        }
        rows.push(row);
    }
    Ok(DatasetValue::Compound {
        fields: compound_fields,
        rows,
    })
}
