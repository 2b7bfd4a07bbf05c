//! numcodecs `categorize` (array→array; Zarr v3 `numcodecs.categorize`): text elements from a
//! fixed list of `labels` stored as small integers, `i + 1` for `labels[i]` and 0 for anything
//! else, as numcodecs' `Categorize(labels, dtype, astype)` does.
//!
//! The elements are variable-length strings (`dtype` `|O`) or fixed-length UTF-32 (`<U<n>`);
//! the codes are the integer type `astype` (default `|u1`), flattened to one dimension in C
//! order. Decoding gives `labels[code - 1]`, and `""` for 0 or a code past the labels (numcodecs
//! leaves those elements empty). Encoding refuses a non-empty value that is not a label instead
//! of storing it as 0, which would lose it silently; `""` and the fill value (which pads edge
//! chunks) are stored as 0 when they are not labels (a label `""` gets its code, as in numcodecs).

use std::collections::HashMap;

use neurochunk_dtype::DataType;
use serde_json::{Map, Value};

use crate::numeric::{NumType, TypeStr};
use crate::util::{config_err, corrupt, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToArrayCodec, ChunkRepr, CodecResult};

const ID: &str = "categorize";

/// numcodecs `categorize`.
#[derive(Clone, Debug, PartialEq)]
pub struct CategorizeCodec {
    labels: Vec<String>,
    /// The element type as written in the configuration (`|O` or `<U<n>`).
    dtype: String,
    astype: TypeStr,
}

impl CategorizeCodec {
    /// `categorize` of `labels` for elements of `data_type` (variable-length strings or
    /// fixed-length UTF-32), codes stored as `astype` (a NumPy integer type string, `|u1` for
    /// up to 255 labels).
    pub fn new(labels: Vec<String>, data_type: &DataType, astype: &str) -> CodecResult<Self> {
        let dtype = match data_type {
            DataType::String => "|O".to_string(),
            DataType::FixedUtf32 { chars } => format!("<U{chars}"),
            other => {
                return Err(unsupported(
                    ID,
                    format!("needs text elements (|O or <U), not {other}"),
                ))
            }
        };
        let astype = parse_astype(astype)?;
        let codec = CategorizeCodec {
            labels,
            dtype,
            astype,
        };
        codec.check_capacity()?;
        Ok(codec)
    }

    /// Parse a numcodecs configuration (`labels` and `dtype` required, `astype` default `|u1`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        let labels = match c.get("labels") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s.clone()),
                    other => Err(config_err(
                        ID,
                        format!("'labels' must hold strings, found {other}"),
                    )),
                })
                .collect::<CodecResult<Vec<_>>>()?,
            Some(other) => {
                return Err(config_err(
                    ID,
                    format!("'labels' must be a list of strings, found {other}"),
                ))
            }
            None => return Err(config_err(ID, "'labels' is required")),
        };
        let dtype = c.required("dtype", c.str("dtype")?)?;
        let kind = dtype.trim_start_matches(['<', '>', '|', '=']);
        if !(kind == "O" || kind.starts_with('U')) {
            return Err(unsupported(
                ID,
                format!("'dtype' {dtype:?} is not text (numcodecs takes |O or <U only)"),
            ));
        }
        let astype = parse_astype(c.str("astype")?.unwrap_or("|u1"))?;
        let codec = CategorizeCodec {
            labels,
            dtype: dtype.to_string(),
            astype,
        };
        Ok(codec)
    }

    /// The labels, code `i + 1` for `labels[i]`.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    fn check_capacity(&self) -> CodecResult<()> {
        let max: u128 = match self.astype.num {
            NumType::U8 => u8::MAX.into(),
            NumType::U16 => u16::MAX.into(),
            NumType::U32 => u32::MAX.into(),
            NumType::U64 => u64::MAX.into(),
            NumType::I8 => i8::MAX as u128,
            NumType::I16 => i16::MAX as u128,
            NumType::I32 => i32::MAX as u128,
            _ => i64::MAX as u128,
        };
        if self.labels.len() as u128 > max {
            return Err(unsupported(
                ID,
                format!(
                    "{} labels do not fit in {} (choose a wider 'astype')",
                    self.labels.len(),
                    self.astype.to_numpy()
                ),
            ));
        }
        Ok(())
    }

    fn check_input(repr: &ChunkRepr) -> CodecResult<()> {
        match repr.data_type {
            DataType::String | DataType::FixedUtf32 { .. } => Ok(()),
            ref other => Err(unsupported(
                ID,
                format!("needs text elements (|O or <U), not {other}"),
            )),
        }
    }

    fn put_code(&self, out: &mut Vec<u8>, code: u64) {
        let size = self.astype.num.size();
        let bytes = code.to_le_bytes();
        if self.astype.big {
            out.extend(bytes[..size].iter().rev());
        } else {
            out.extend_from_slice(&bytes[..size]);
        }
    }

    fn get_code(&self, b: &[u8]) -> Option<usize> {
        let mut buf = [0u8; 8];
        let size = b.len();
        if self.astype.big {
            for (i, x) in b.iter().rev().enumerate() {
                buf[i] = *x;
            }
        } else {
            buf[..size].copy_from_slice(b);
        }
        let signed = matches!(
            self.astype.num,
            NumType::I8 | NumType::I16 | NumType::I32 | NumType::I64
        );
        if signed && buf[size - 1] & 0x80 != 0 {
            return None; // negative: no label
        }
        usize::try_from(u64::from_le_bytes(buf)).ok()
    }
}

fn parse_astype(s: &str) -> CodecResult<TypeStr> {
    match TypeStr::parse(s) {
        Some(t) if !t.num.is_float() => Ok(t),
        _ => Err(unsupported(
            ID,
            format!("'astype' {s:?} is not an integer type (e.g. |u1, <u2)"),
        )),
    }
}

/// The elements of a text chunk as strings (fixed UTF-32 without its trailing NULs).
fn texts(data: &ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<String>> {
    match (data, &repr.data_type) {
        (ArrayBytes::Variable { data, offsets }, DataType::String) => offsets
            .windows(2)
            .map(|w| {
                let item = data
                    .get(w[0]..w[1])
                    .ok_or_else(|| unsupported(ID, "element offsets are out of range"))?;
                String::from_utf8(item.to_vec())
                    .map_err(|_| unsupported(ID, "element is not valid UTF-8"))
            })
            .collect(),
        (ArrayBytes::Fixed(bytes), DataType::FixedUtf32 { chars }) => {
            let width = 4 * chars;
            if width == 0 {
                return Ok(vec![String::new(); repr.num_elements()]);
            }
            if bytes.len() != width * repr.num_elements() {
                return Err(unsupported(ID, "chunk size does not match its elements"));
            }
            Ok(bytes
                .chunks_exact(width)
                .map(|e| {
                    e.chunks_exact(4)
                        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                        .take_while(|&u| u != 0)
                        .map(|u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
                        .collect()
                })
                .collect())
        }
        _ => Err(unsupported(
            ID,
            format!("elements do not match the data type {}", repr.data_type),
        )),
    }
}

impl ArrayToArrayCodec for CategorizeCodec {
    fn name(&self) -> &str {
        "numcodecs.categorize"
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        Self::check_input(input)?;
        let data_type = self.astype.num.data_type();
        Ok(ChunkRepr {
            shape: vec![input.num_elements()],
            fill_value: vec![0; data_type.fixed_size().unwrap_or(1)],
            data_type,
        })
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        Self::check_input(input)?;
        self.check_capacity()?;
        let values = texts(&data, input)?;
        let mut codes: HashMap<&str, u64> = HashMap::with_capacity(self.labels.len());
        // numcodecs assigns in label order, so a repeated label ends with its last code.
        for (i, label) in self.labels.iter().enumerate() {
            codes.insert(label.as_str(), i as u64 + 1);
        }
        // The fill value pads edge chunks; outside the labels it is stored as 0, as numcodecs
        // stores it.
        let fill_repr = ChunkRepr {
            shape: vec![1],
            ..input.clone()
        };
        let fill_data = match input.data_type {
            DataType::String => ArrayBytes::Variable {
                data: input.fill_value.clone(),
                offsets: vec![0, input.fill_value.len()],
            },
            _ => ArrayBytes::Fixed(input.fill_value.clone()),
        };
        let fill = texts(&fill_data, &fill_repr)
            .ok()
            .and_then(|f| f.into_iter().next())
            .unwrap_or_default();
        let mut out = Vec::with_capacity(values.len() * self.astype.num.size());
        for v in &values {
            let code = match codes.get(v.as_str()) {
                Some(&c) => c,
                None if v.is_empty() || *v == fill => 0,
                None => {
                    let shown: String = v.chars().take(40).collect();
                    return Err(unsupported(
                        ID,
                        format!(
                            "value {shown:?} is not one of the codec's {} labels",
                            self.labels.len()
                        ),
                    ));
                }
            };
            self.put_code(&mut out, code);
        }
        Ok(ArrayBytes::Fixed(out))
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        Self::check_input(decoded)?;
        let n = decoded.num_elements();
        let size = self.astype.num.size();
        let ArrayBytes::Fixed(bytes) = data else {
            return Err(corrupt(ID, "codes must be fixed-size integers"));
        };
        if bytes.len() != n * size {
            return Err(corrupt(
                ID,
                format!(
                    "{} bytes of codes, expected {} for {n} elements",
                    bytes.len(),
                    n * size
                ),
            ));
        }
        let label = |b: &[u8]| -> &str {
            match self.get_code(b) {
                Some(c) if c >= 1 && c <= self.labels.len() => &self.labels[c - 1],
                _ => "",
            }
        };
        match decoded.data_type {
            DataType::FixedUtf32 { chars } => {
                let mut out = vec![0u8; n * 4 * chars];
                for (i, b) in bytes.chunks_exact(size).enumerate() {
                    // NumPy truncates a label longer than the element.
                    for (j, ch) in label(b).chars().take(chars).enumerate() {
                        let at = (i * chars + j) * 4;
                        out[at..at + 4].copy_from_slice(&(ch as u32).to_le_bytes());
                    }
                }
                Ok(ArrayBytes::Fixed(out))
            }
            _ => {
                let mut out = Vec::new();
                let mut offsets = Vec::with_capacity(n + 1);
                offsets.push(0);
                for b in bytes.chunks_exact(size) {
                    out.extend_from_slice(label(b).as_bytes());
                    offsets.push(out.len());
                }
                Ok(ArrayBytes::Variable { data: out, offsets })
            }
        }
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config()))
    }
}

impl CategorizeCodec {
    fn config(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "labels".into(),
            Value::Array(self.labels.iter().cloned().map(Value::String).collect()),
        );
        m.insert("dtype".into(), Value::String(self.dtype.clone()));
        m.insert("astype".into(), Value::String(self.astype.to_numpy()));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> ArrayBytes {
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for s in items {
            data.extend_from_slice(s.as_bytes());
            offsets.push(data.len());
        }
        ArrayBytes::Variable { data, offsets }
    }

    fn repr(n: usize, data_type: DataType) -> ChunkRepr {
        ChunkRepr {
            shape: vec![n],
            data_type,
            fill_value: vec![],
        }
    }

    #[test]
    fn codes_as_numcodecs_writes_them() {
        let c = CategorizeCodec::from_config(&serde_json::json!({
            "id": "categorize", "labels": ["ß", "b", "c"], "dtype": "|O", "astype": "<u2"
        }))
        .unwrap();
        let r = repr(4, DataType::String);
        let enc = c.encode(strings(&["b", "", "ß", "c"]), &r).unwrap();
        assert_eq!(enc, ArrayBytes::Fixed(vec![2, 0, 0, 0, 1, 0, 3, 0]));
        assert_eq!(c.decode(enc, &r).unwrap(), strings(&["b", "", "ß", "c"]));
        let err = c.encode(strings(&["x"]), &repr(1, DataType::String));
        assert!(err.unwrap_err().to_string().contains("\"x\""));
        // Codes past the labels decode to "" as in numcodecs.
        let dec = c.decode(ArrayBytes::Fixed(vec![9, 0]), &repr(1, DataType::String));
        assert_eq!(dec.unwrap(), strings(&[""]));
    }

    #[test]
    fn fixed_utf32_and_big_endian_codes() {
        let c = CategorizeCodec::new(
            vec!["ab".into(), "xyz".into()],
            &DataType::FixedUtf32 { chars: 2 },
            ">u2",
        )
        .unwrap();
        let r = repr(2, DataType::FixedUtf32 { chars: 2 });
        let mut text = Vec::new();
        for ch in ['a', 'b', '\0', '\0'] {
            text.extend_from_slice(&(ch as u32).to_le_bytes());
        }
        let enc = c.encode(ArrayBytes::Fixed(text.clone()), &r).unwrap();
        assert_eq!(enc, ArrayBytes::Fixed(vec![0, 1, 0, 0]));
        assert_eq!(c.decode(enc, &r).unwrap(), ArrayBytes::Fixed(text));
        // A label longer than the element is truncated (NumPy's assignment).
        let dec = c.decode(
            ArrayBytes::Fixed(vec![0, 2]),
            &repr(1, DataType::FixedUtf32 { chars: 2 }),
        );
        let want: Vec<u8> = ['x', 'y']
            .iter()
            .flat_map(|c| (*c as u32).to_le_bytes())
            .collect();
        assert_eq!(dec.unwrap(), ArrayBytes::Fixed(want));
        assert!(CategorizeCodec::new(vec![], &DataType::Int32, "|u1").is_err());
        let many: Vec<String> = (0..300).map(|i| i.to_string()).collect();
        assert!(CategorizeCodec::new(many, &DataType::String, "|u1").is_err());
    }
}
