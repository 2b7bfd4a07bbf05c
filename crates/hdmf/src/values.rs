//! Dataset contents as NWB sees them: numbers, text, references and compound rows, decoded
//! from what the Zarr engine returns for either convention, and turned into `.npy`-ready
//! fixed-width arrays.

use neurochunk_codec::ArrayBytes;
use neurochunk_dtype::json::{non_finite_token, non_finite_value};
use neurochunk_dtype::{DataType, StructField};
use serde_json::Value;
use std::borrow::Cow;

use crate::reference::Reference;

/// A dataset read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    /// Shape of the data (`[]` for scalars, in either convention).
    pub shape: Vec<usize>,
    /// Whether the dataset is a scalar (legacy `[1]` + `scalar` marker, v3 0-d).
    pub scalar: bool,
    /// The elements.
    pub value: DatasetValue,
}

/// The elements of a dataset, in C order.
#[derive(Clone, Debug, PartialEq)]
pub enum DatasetValue {
    /// Packed little-endian elements of a numeric (or other fixed-size, non-compound) type.
    Numeric {
        /// The element type.
        data_type: DataType,
        /// The elements' bytes.
        bytes: Vec<u8>,
    },
    /// Text; `bytes` records that it was stored as bytes (legacy ascii / isodatetime).
    Text {
        /// One string per element.
        values: Vec<String>,
        /// Stored as bytes rather than UTF-8 text.
        bytes: bool,
    },
    /// Object or region references; `None` for an empty element.
    References(Vec<Option<Reference>>),
    /// Compound rows.
    Compound {
        /// The fields, in order.
        fields: Vec<CompoundField>,
        /// One row per element, one cell per field.
        rows: Vec<Vec<FieldValue>>,
    },
}

/// One field of a compound dataset.
#[derive(Clone, Debug, PartialEq)]
pub struct CompoundField {
    /// The field's name.
    pub name: String,
    /// What it holds.
    pub kind: FieldKind,
}

/// What a compound field holds.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldKind {
    /// Numbers of this type.
    Numeric(DataType),
    /// Text.
    Text,
    /// Object or region references.
    Reference,
}

/// One cell of a compound row.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// A number or bool (JSON; non-finite floats use the dtype crate's markers).
    Number(Value),
    /// Text.
    Text(String),
    /// A reference, `None` when the cell is empty.
    Reference(Option<Reference>),
}

impl DatasetValue {
    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            DatasetValue::Numeric { data_type, bytes } => {
                bytes.len() / data_type.fixed_size().unwrap_or(1).max(1)
            }
            DatasetValue::Text { values, .. } => values.len(),
            DatasetValue::References(r) => r.len(),
            DatasetValue::Compound { rows, .. } => rows.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every reference in the data with its flat index and, for compounds, its field.
    pub fn references(&self) -> Vec<(usize, Option<&str>, &Reference)> {
        match self {
            DatasetValue::References(refs) => refs
                .iter()
                .enumerate()
                .filter_map(|(i, r)| r.as_ref().map(|r| (i, None, r)))
                .collect(),
            DatasetValue::Compound { fields, rows } => {
                let mut out = Vec::new();
                for (i, row) in rows.iter().enumerate() {
                    for (field, cell) in fields.iter().zip(row) {
                        if let FieldValue::Reference(Some(r)) = cell {
                            out.push((i, Some(field.name.as_str()), r));
                        }
                    }
                }
                out
            }
            _ => Vec::new(),
        }
    }
}

/// Split variable-length engine output into its elements.
pub(crate) fn variable_elements(data: &ArrayBytes) -> Result<Vec<&[u8]>, String> {
    match data {
        ArrayBytes::Variable { data, offsets } => offsets
            .windows(2)
            .map(|w| {
                data.get(w[0]..w[1])
                    .ok_or_else(|| "element offsets out of range".to_string())
            })
            .collect(),
        ArrayBytes::Fixed(_) => Err("expected variable-length elements".into()),
    }
}

/// UTF-8 text of each variable-length element.
pub(crate) fn text_elements(data: &ArrayBytes) -> Result<Vec<String>, String> {
    variable_elements(data)?
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            String::from_utf8(e.to_vec()).map_err(|_| format!("element {i} is not UTF-8 text"))
        })
        .collect()
}

/// Text of fixed-width elements (`<U`, `|S`).
pub(crate) fn fixed_text_elements(
    data_type: &DataType,
    bytes: &[u8],
) -> Result<Vec<String>, String> {
    let width = match data_type {
        DataType::FixedUtf32 { chars } => chars * 4,
        DataType::FixedBytes { len } => *len,
        other => return Err(format!("{other} is not a text type")),
    };
    if width == 0 {
        return Ok(Vec::new());
    }
    bytes
        .chunks(width)
        .map(|cell| fixed_text(data_type, cell))
        .collect()
}

/// The text of one fixed-width cell (`<U`: UTF-32, `|S`: bytes; trailing NULs dropped).
pub(crate) fn fixed_text(data_type: &DataType, cell: &[u8]) -> Result<String, String> {
    match data_type {
        DataType::FixedUtf32 { .. } => Ok(decode_utf32(cell)),
        DataType::FixedBytes { .. } => {
            let end = cell.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            Ok(String::from_utf8_lossy(&cell[..end]).into_owned())
        }
        other => Err(format!("{other} is not a text type")),
    }
}

fn decode_utf32(cell: &[u8]) -> String {
    cell.chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .take_while(|&u| u != 0)
        .map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect()
}

/// Encode text as `chars`-wide UTF-32LE cells.
pub(crate) fn encode_utf32(text: &str, chars: usize, out: &mut Vec<u8>) {
    let start = out.len();
    for c in text.chars().take(chars) {
        out.extend_from_slice(&(c as u32).to_le_bytes());
    }
    out.resize(start + chars * 4, 0);
}

/// A numeric element as JSON.
pub(crate) fn numeric_to_json(data_type: &DataType, b: &[u8]) -> Result<Value, String> {
    let arr = |n: usize| -> Result<&[u8], String> {
        b.get(..n)
            .ok_or_else(|| "truncated numeric element".to_string())
    };
    Ok(match data_type {
        DataType::Bool => Value::Bool(arr(1)?[0] != 0),
        DataType::Int8 => (arr(1)?[0] as i8).into(),
        DataType::UInt8 => arr(1)?[0].into(),
        DataType::Int16 => i16::from_le_bytes(arr(2)?.try_into().unwrap_or_default()).into(),
        DataType::UInt16 => u16::from_le_bytes(arr(2)?.try_into().unwrap_or_default()).into(),
        DataType::Int32 => i32::from_le_bytes(arr(4)?.try_into().unwrap_or_default()).into(),
        DataType::UInt32 => u32::from_le_bytes(arr(4)?.try_into().unwrap_or_default()).into(),
        DataType::Int64 => i64::from_le_bytes(arr(8)?.try_into().unwrap_or_default()).into(),
        DataType::UInt64 => u64::from_le_bytes(arr(8)?.try_into().unwrap_or_default()).into(),
        DataType::Float32 => {
            float_json(f32::from_le_bytes(arr(4)?.try_into().unwrap_or_default()) as f64)
        }
        DataType::Float64 => float_json(f64::from_le_bytes(arr(8)?.try_into().unwrap_or_default())),
        other => return Err(format!("compound fields of type {other} are not supported")),
    })
}

fn float_json(x: f64) -> Value {
    if x.is_finite() {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    } else {
        non_finite_value(x)
    }
}

/// Append a JSON number as a packed little-endian element of `data_type`.
pub(crate) fn json_to_numeric(
    data_type: &DataType,
    v: &Value,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let bad = || format!("{v} is not a valid {data_type} value");
    let as_f64 = || -> Result<f64, String> {
        match v {
            Value::Number(n) => n.as_f64().ok_or_else(bad),
            Value::Bool(b) => Ok(f64::from(u8::from(*b))),
            Value::String(s) => match non_finite_token(s) {
                Some("NaN") => Ok(f64::NAN),
                Some("Infinity") => Ok(f64::INFINITY),
                Some("-Infinity") => Ok(f64::NEG_INFINITY),
                _ => Err(bad()),
            },
            _ => Err(bad()),
        }
    };
    let as_i64 = || -> Result<i64, String> {
        match v {
            Value::Number(n) => n
                .as_i64()
                .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
                .ok_or_else(bad),
            Value::Bool(b) => Ok(i64::from(*b)),
            _ => Err(bad()),
        }
    };
    macro_rules! int {
        ($t:ty) => {{
            let x = as_i64()?;
            let y = <$t>::try_from(x).map_err(|_| bad())?;
            out.extend_from_slice(&y.to_le_bytes());
        }};
    }
    match data_type {
        DataType::Bool => out.push(u8::from(match v {
            Value::Bool(b) => *b,
            _ => as_i64()? != 0,
        })),
        DataType::Int8 => int!(i8),
        DataType::Int16 => int!(i16),
        DataType::Int32 => int!(i32),
        DataType::Int64 => int!(i64),
        DataType::UInt8 => int!(u8),
        DataType::UInt16 => int!(u16),
        DataType::UInt32 => int!(u32),
        DataType::UInt64 => match v {
            Value::Number(n) if n.as_u64().is_some() => {
                out.extend_from_slice(&n.as_u64().unwrap_or_default().to_le_bytes())
            }
            _ => int!(u64),
        },
        DataType::Float32 => out.extend_from_slice(&(as_f64()? as f32).to_le_bytes()),
        DataType::Float64 => out.extend_from_slice(&as_f64()?.to_le_bytes()),
        other => return Err(format!("compound fields of type {other} are not supported")),
    }
    Ok(())
}

/// Decode packed structured elements into rows; `reference_fields` are text fields holding
/// reference paths (v3 `_REFERENCE_FIELDS`).
pub(crate) fn structured_rows(
    fields: &[StructField],
    bytes: &[u8],
    reference_fields: &[String],
) -> Result<(Vec<CompoundField>, Vec<Vec<FieldValue>>), String> {
    let mut layout = Vec::with_capacity(fields.len());
    let mut offset = 0usize;
    for f in fields {
        if !f.shape.is_empty() {
            return Err(format!(
                "compound field '{}' is a sub-array, which NWB does not use",
                f.name
            ));
        }
        let size = f
            .data_type
            .fixed_size()
            .ok_or_else(|| format!("compound field '{}' has no fixed size", f.name))?;
        let kind = match &f.data_type {
            DataType::FixedUtf32 { .. } | DataType::FixedBytes { .. } => {
                if reference_fields.iter().any(|r| r == &f.name) {
                    FieldKind::Reference
                } else {
                    FieldKind::Text
                }
            }
            DataType::Structured(_) => {
                return Err(format!(
                    "nested compound field '{}' is not supported",
                    f.name
                ))
            }
            other => FieldKind::Numeric(other.clone()),
        };
        layout.push((offset, size, f, kind));
        offset += size;
    }
    let row_size = offset.max(1);
    let mut rows = Vec::with_capacity(bytes.len() / row_size);
    for row_bytes in bytes.chunks(row_size) {
        let mut row = Vec::with_capacity(layout.len());
        for (off, size, f, kind) in &layout {
            let cell = row_bytes
                .get(*off..off + size)
                .ok_or_else(|| "truncated compound element".to_string())?;
            row.push(match kind {
                // The engine hands structured elements over little-endian whatever the disk
                // order.
                FieldKind::Numeric(dt) => FieldValue::Number(numeric_to_json(dt, cell)?),
                FieldKind::Text => FieldValue::Text(fixed_text(&f.data_type, cell)?),
                FieldKind::Reference => FieldValue::Reference(Reference::from_element(
                    &fixed_text(&f.data_type, cell)?,
                )?),
            });
        }
        rows.push(row);
    }
    let fields = layout
        .into_iter()
        .map(|(_, _, f, kind)| CompoundField {
            name: f.name.clone(),
            kind,
        })
        .collect();
    Ok((fields, rows))
}

/// The `.npy` view of a dataset: a fixed-size data type and its packed little-endian bytes.
/// Text becomes `<U` as wide as the longest element, references become `<U` target paths
/// (JSON text for region and external references), compounds become structured types.
pub fn to_npy(value: &DatasetValue) -> Result<(DataType, Cow<'_, [u8]>), String> {
    let owned = |(data_type, bytes): (DataType, Vec<u8>)| (data_type, Cow::Owned(bytes));
    match value {
        // Numeric values are borrowed: a large dataset is not held twice.
        DatasetValue::Numeric { data_type, bytes } => {
            Ok((data_type.clone(), Cow::Borrowed(bytes.as_slice())))
        }
        DatasetValue::Text { values, .. } => {
            Ok(owned(utf32_column(values.iter().map(String::as_str))))
        }
        DatasetValue::References(refs) => {
            let texts: Vec<String> = refs.iter().map(reference_text).collect();
            Ok(owned(utf32_column(texts.iter().map(String::as_str))))
        }
        DatasetValue::Compound { fields, rows } => {
            compound_to_structured(fields, rows, 1).map(owned)
        }
    }
}

/// A reference as text: the path for an internal object reference, else the JSON dictionary.
fn reference_text(r: &Option<Reference>) -> String {
    r.as_ref().map(Reference::to_v3_element).unwrap_or_default()
}

/// Pack compound rows as a structured type: numeric fields keep their type, text and
/// reference fields become `<U` cells at least `min_text_chars` wide (wider when a value
/// needs it).
pub(crate) fn compound_to_structured(
    fields: &[CompoundField],
    rows: &[Vec<FieldValue>],
    min_text_chars: usize,
) -> Result<(DataType, Vec<u8>), String> {
    let cell_text = |cell: Option<&FieldValue>| -> String {
        match cell {
            Some(FieldValue::Text(t)) => t.clone(),
            Some(FieldValue::Reference(r)) => reference_text(r),
            _ => String::new(),
        }
    };
    let struct_fields: Vec<StructField> = fields
        .iter()
        .enumerate()
        .map(|(i, f)| match &f.kind {
            FieldKind::Numeric(dt) => StructField {
                name: f.name.clone(),
                data_type: dt.clone(),
                shape: Vec::new(),
                endian: Some(neurochunk_dtype::Endian::Little),
            },
            FieldKind::Text | FieldKind::Reference => StructField {
                name: f.name.clone(),
                data_type: DataType::FixedUtf32 {
                    chars: rows
                        .iter()
                        .map(|r| cell_text(r.get(i)).chars().count())
                        .max()
                        .unwrap_or(0)
                        .max(min_text_chars),
                },
                shape: Vec::new(),
                endian: None,
            },
        })
        .collect();
    let mut bytes = Vec::new();
    for row in rows {
        for (i, sf) in struct_fields.iter().enumerate() {
            match (&sf.data_type, row.get(i)) {
                (DataType::FixedUtf32 { chars }, cell) => {
                    encode_utf32(&cell_text(cell), *chars, &mut bytes)
                }
                (dt, Some(FieldValue::Number(v))) => json_to_numeric(dt, v, &mut bytes)?,
                (_, _) => {
                    return Err(format!(
                        "field '{}' holds a value of the wrong kind",
                        sf.name
                    ))
                }
            }
        }
    }
    Ok((DataType::Structured(struct_fields), bytes))
}

fn utf32_column<'a>(values: impl Iterator<Item = &'a str> + Clone) -> (DataType, Vec<u8>) {
    let chars = values
        .clone()
        .map(|v| v.chars().count())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut bytes = Vec::new();
    for v in values {
        encode_utf32(v, chars, &mut bytes);
    }
    (DataType::FixedUtf32 { chars }, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numeric_json_round_trip_keeps_width_and_refuses_overflow() {
        for (dt, v) in [
            (DataType::Int16, json!(-300)),
            (DataType::UInt64, json!(u64::MAX)),
            (DataType::Float32, json!(0.5)),
            (DataType::Bool, json!(true)),
        ] {
            let mut out = Vec::new();
            json_to_numeric(&dt, &v, &mut out).unwrap();
            assert_eq!(out.len(), dt.fixed_size().unwrap());
            assert_eq!(numeric_to_json(&dt, &out).unwrap(), v);
        }
        let mut out = Vec::new();
        assert!(json_to_numeric(&DataType::UInt8, &json!(300), &mut out).is_err());
        assert!(json_to_numeric(&DataType::Int32, &json!("x"), &mut out).is_err());
    }

    #[test]
    fn structured_rows_decode_reference_fields_as_references() {
        use neurochunk_dtype::Endian;
        let fields = vec![
            StructField {
                name: "idx_start".into(),
                data_type: DataType::Int32,
                shape: vec![],
                endian: Some(Endian::Little),
            },
            StructField {
                name: "ts".into(),
                data_type: DataType::FixedUtf32 { chars: 8 },
                shape: vec![],
                endian: None,
            },
        ];
        let mut bytes = 7i32.to_le_bytes().to_vec();
        encode_utf32("/a/b", 8, &mut bytes);
        let (kinds, rows) = structured_rows(&fields, &bytes, &["ts".into()]).unwrap();
        assert_eq!(kinds[1].kind, FieldKind::Reference);
        assert_eq!(rows[0][0], FieldValue::Number(json!(7)));
        assert_eq!(
            rows[0][1],
            FieldValue::Reference(Some(Reference::to("/a/b")))
        );
        let (plain, rows) = structured_rows(&fields, &bytes, &[]).unwrap();
        assert_eq!(plain[1].kind, FieldKind::Text);
        assert_eq!(rows[0][1], FieldValue::Text("/a/b".into()));
    }

    #[test]
    fn npy_view_of_a_compound_sizes_text_to_the_longest_cell() {
        let value = DatasetValue::Compound {
            fields: vec![
                CompoundField {
                    name: "n".into(),
                    kind: FieldKind::Numeric(DataType::Int32),
                },
                CompoundField {
                    name: "r".into(),
                    kind: FieldKind::Reference,
                },
            ],
            rows: vec![
                vec![
                    FieldValue::Number(json!(1)),
                    FieldValue::Reference(Some(Reference::to("/abc"))),
                ],
                vec![FieldValue::Number(json!(2)), FieldValue::Reference(None)],
            ],
        };
        let (dt, bytes) = to_npy(&value).unwrap();
        let DataType::Structured(f) = &dt else {
            panic!("not structured")
        };
        assert_eq!(f[1].data_type, DataType::FixedUtf32 { chars: 4 });
        assert_eq!(bytes.len(), 2 * (4 + 16));
        let (_, rows) = structured_rows(f, &bytes, &["r".into()]).unwrap();
        assert_eq!(rows[1][1], FieldValue::Reference(None));
    }
}
