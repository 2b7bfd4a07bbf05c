//! The numcodecs `json2` object codec (array→bytes): the chunk's items as a JSON list
//! (nested per dimension, as NumPy's `tolist()` gives them), followed by the dtype string and
//! the shape, written with Python's `json` conventions (compact separators, `ensure_ascii`).
//!
//! Decoding turns JSON strings into their text and any other JSON value into its compact JSON
//! text; encoding writes every element as a JSON string, or, in objects mode
//! ([`Json2Codec::with_objects`]), an element whose text is a JSON object as that object.

use serde_json::{json, Map, Value};

use crate::util::{config_err, corrupt, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const ID: &str = "json2";

/// The `json2` codec; keeps the numcodecs configuration to write it back unchanged.
#[derive(Clone, Debug, PartialEq)]
pub struct Json2Codec {
    ensure_ascii: bool,
    item_sep: String,
    indent: bool,
    /// Write elements whose text is a JSON object as objects, not strings.
    objects: bool,
    config: Map<String, Value>,
}

impl Default for Json2Codec {
    fn default() -> Self {
        Json2Codec {
            ensure_ascii: true,
            item_sep: ",".into(),
            indent: false,
            objects: false,
            config: default_config(),
        }
    }
}

fn default_config() -> Map<String, Value> {
    let v = json!({
        "encoding": "utf-8",
        "skipkeys": false,
        "ensure_ascii": true,
        "check_circular": true,
        "allow_nan": true,
        "indent": null,
        "separators": [",", ":"],
        "sort_keys": true,
        "strict": true
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

impl Json2Codec {
    /// Parse a numcodecs configuration (with or without `id`).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        let mut full = default_config();
        if let Value::Object(m) = config {
            for (k, v) in m {
                if k != "id" {
                    full.insert(k.clone(), v.clone());
                }
            }
        }
        if let Some(enc) = c.str("encoding")? {
            let e = enc.to_ascii_lowercase().replace('_', "-");
            if e != "utf-8" && e != "utf8" && e != "ascii" {
                return Err(unsupported(
                    ID,
                    format!("text encoding '{enc}' is not supported"),
                ));
            }
        }
        let indent = c.has("indent");
        let item_sep = match c.get("separators") {
            None => {
                if indent {
                    ", ".to_string()
                } else {
                    ",".to_string()
                }
            }
            Some(Value::Array(a)) if a.len() == 2 => a[0]
                .as_str()
                .ok_or_else(|| config_err(ID, "'separators' must be two strings"))?
                .to_string(),
            Some(other) => {
                return Err(config_err(
                    ID,
                    format!("'separators' must be two strings, found {other}"),
                ))
            }
        };
        Ok(Json2Codec {
            ensure_ascii: c.bool("ensure_ascii")?.unwrap_or(true),
            item_sep,
            indent,
            objects: false,
            config: full,
        })
    }

    /// This codec in objects mode (`true`) or not: in objects mode an element whose text is a
    /// JSON object is written as that object rather than as a string (hdmf-zarr reference
    /// arrays hold dictionaries, which travel as their JSON text). The numcodecs configuration
    /// does not record the mode; whoever knows what the elements mean switches it on.
    pub fn with_objects(mut self, objects: bool) -> Self {
        self.objects = objects;
        self
    }

    /// Whether the codec is in objects mode (see [`Json2Codec::with_objects`]).
    pub fn objects(&self) -> bool {
        self.objects
    }
}

/// Append `s` as a JSON string the way Python's `json` module writes it.
pub(crate) fn write_py_json_str(out: &mut String, s: &str, ensure_ascii: bool) {
    use std::fmt::Write;
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if ensure_ascii && (c as u32) >= 0x7f => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    let _ = write!(out, "\\u{:04x}", unit);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Collect the leaf items of a (possibly nested) list for a chunk of `shape`.
fn flatten<'a>(items: &'a [Value], shape: &[usize], out: &mut Vec<&'a Value>) -> bool {
    if shape.len() <= 1 {
        out.extend(items.iter());
        return true;
    }
    if items.len() != shape[0] {
        return false;
    }
    for it in items {
        match it {
            Value::Array(inner) => {
                if !flatten(inner, &shape[1..], out) {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

impl Json2Codec {
    /// With the objects flag, the object an element's JSON text stands for.
    fn objects_value(&self, text: &str) -> Option<Value> {
        if !self.objects || !text.starts_with('{') {
            return None;
        }
        match neurochunk_dtype::json::parse_lenient(text.as_bytes()) {
            Ok(object @ Value::Object(_)) => Some(object),
            _ => None,
        }
    }
}

impl ArrayToBytesCodec for Json2Codec {
    fn name(&self) -> &str {
        "numcodecs.json2"
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        if self.indent {
            return Err(unsupported(ID, "writing with 'indent' is not supported"));
        }
        let ArrayBytes::Variable { data, offsets } = data else {
            return Err(unsupported(ID, "needs variable-length elements"));
        };
        let n = offsets.len().saturating_sub(1);
        if n != repr.num_elements() {
            return Err(unsupported(
                ID,
                format!("{n} elements for shape {:?}", repr.shape),
            ));
        }
        let sep = self.item_sep.as_str();
        let mut out = String::with_capacity(data.len() + 4 * n + 32);
        // Nested lists per dimension, as NumPy's tolist(); 0-d arrays become a 1-item list.
        let shape: Vec<usize> = if repr.shape.is_empty() {
            vec![1]
        } else {
            repr.shape.clone()
        };
        let nd = shape.len();
        let mut idx = vec![0usize; nd];
        out.push('[');
        if n > 0 {
            for _ in 0..nd - 1 {
                out.push('[');
            }
            for e in 0..n {
                let item = data
                    .get(offsets[e]..offsets[e + 1])
                    .ok_or_else(|| unsupported(ID, "element offsets are out of range"))?;
                let text = std::str::from_utf8(item)
                    .map_err(|_| unsupported(ID, format!("element {e} is not UTF-8 text")))?;
                match self.objects_value(text) {
                    Some(object) => out.push_str(&neurochunk_dtype::json::to_python_json(
                        &object,
                        neurochunk_dtype::json::PyJsonStyle {
                            ensure_ascii: self.ensure_ascii,
                            ..neurochunk_dtype::json::PyJsonStyle::COMPACT
                        }
                        .with_sorted_keys(true),
                    )),
                    None => write_py_json_str(&mut out, text, self.ensure_ascii),
                }
                // Advance the multi-index, closing and opening brackets as dimensions roll over.
                let mut d = nd;
                let mut closed = 0;
                while d > 0 {
                    d -= 1;
                    idx[d] += 1;
                    if idx[d] < shape[d] {
                        break;
                    }
                    idx[d] = 0;
                    closed += 1;
                }
                if e + 1 < n {
                    for _ in 0..closed {
                        out.push(']');
                    }
                    out.push_str(sep);
                    for _ in 0..closed {
                        out.push('[');
                    }
                } else {
                    for _ in 0..nd - 1 {
                        out.push(']');
                    }
                }
            }
        } else {
            // Empty dimensions: NumPy's tolist() of an empty array is [] at the first level.
        }
        if n > 0 {
            out.push_str(sep);
        }
        out.push_str("\"|O\"");
        out.push_str(sep);
        out.push('[');
        for (i, s) in repr.shape.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(&s.to_string());
        }
        out.push_str("]]");
        Ok(out.into_bytes())
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(ID, format!("invalid JSON: {e}")))?;
        let Value::Array(items) = v else {
            return Err(corrupt(ID, "chunk is not a JSON list"));
        };
        if items.len() < 2 {
            return Err(corrupt(ID, "chunk list lacks the dtype and shape"));
        }
        let shape_v = &items[items.len() - 1];
        let shape: Option<Vec<usize>> = shape_v.as_array().and_then(|a| {
            a.iter()
                .map(|x| x.as_u64().and_then(|u| usize::try_from(u).ok()))
                .collect()
        });
        let shape = shape.ok_or_else(|| corrupt(ID, format!("invalid shape {shape_v}")))?;
        if shape != repr.shape {
            return Err(corrupt(
                ID,
                format!(
                    "chunk shape {shape:?} differs from the expected {:?}",
                    repr.shape
                ),
            ));
        }
        let body = &items[..items.len() - 2];
        let n = repr.num_elements();
        let mut leaves = Vec::with_capacity(n);
        if !(flatten(body, &shape, &mut leaves) && leaves.len() == n) {
            leaves.clear();
            leaves.extend(body.iter());
        }
        if leaves.len() != n {
            return Err(corrupt(
                ID,
                format!("chunk holds {} items, expected {n}", leaves.len()),
            ));
        }
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        for leaf in leaves {
            match leaf {
                Value::String(s) => data.extend_from_slice(s.as_bytes()),
                other => data.extend_from_slice(other.to_string().as_bytes()),
            }
            offsets.push(data.len());
        }
        Ok(ArrayBytes::Variable { data, offsets })
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config.clone()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config.clone()))
    }
}
