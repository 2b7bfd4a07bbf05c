//! The numcodecs `pickle` object codec (array→bytes) for `|O` arrays and structured arrays with
//! `|O` fields, as hdmf-zarr writes them for NWB files. Chunks are read with the restricted
//! reader of [`neurochunk_pickle`] (nothing in a file is ever executed; the globals a chunk may
//! name come from the codec's [`AllowList`], hdmf-zarr's by default) and written as protocol 2
//! pickles of `|O` arrays of Python `str`.
//!
//! Elements are variable-length text, as for `json2`: a Python `str` element becomes its text,
//! anything else (dicts, `ZarrReference`s, structured elements, lists, numbers, `None`) its
//! compact JSON text. Non-finite floats are written as the bare tokens `NaN`, `Infinity` and
//! `-Infinity`, as Python's `json` module does.

use neurochunk_dtype::json::{non_finite_token, to_python_json, PyJsonStyle};
use neurochunk_dtype::DataType;
use neurochunk_pickle::{
    decode_object_array, encode_object_array, encode_text_array, AllowList, PickleError,
    RecordField, RecordKind,
};
use serde_json::{Map, Value};

use crate::util::{config_err, corrupt, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecError, CodecResult};

const ID: &str = "pickle";

/// Configuration key under which the array layer hands a structured `dtype` with object fields
/// to the codec; it is never written back.
pub const PICKLE_RECORD_KEY: &str = "neurochunk_record";

/// The `pickle` codec; keeps the numcodecs configuration (`protocol`) to write it back
/// unchanged. Chunks are always written with protocol 2, which every Python 3 reads.
///
/// Chunks are decoded under an [`AllowList`]: [`AllowList::hdmf_zarr`] unless the codec was
/// made with [`PickleCodec::new`] or [`PickleCodec::from_config_with`].
#[derive(Clone, Debug, PartialEq)]
pub struct PickleCodec {
    config: Map<String, Value>,
    /// For structured arrays with object fields: the fields and the v2 `dtype` they came from.
    record: Option<(Vec<RecordField>, Value)>,
    /// The globals a chunk may name.
    allow: AllowList,
}

impl Default for PickleCodec {
    /// Protocol 5 in the configuration, hdmf-zarr's allow-list.
    fn default() -> Self {
        PickleCodec::new(AllowList::hdmf_zarr())
    }
}

impl PickleCodec {
    /// The codec with protocol 5 in its configuration, decoding under `allow`.
    pub fn new(allow: AllowList) -> Self {
        let mut config = Map::new();
        config.insert("protocol".into(), Value::from(5));
        PickleCodec {
            config,
            record: None,
            allow,
        }
    }

    /// Parse a numcodecs configuration (with or without `id`); chunks are decoded under
    /// [`AllowList::hdmf_zarr`].
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        Self::from_config_with(config, AllowList::hdmf_zarr())
    }

    /// Parse a numcodecs configuration (with or without `id`); chunks are decoded under
    /// `allow`.
    pub fn from_config_with(config: &Value, allow: AllowList) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        c.i64_in("protocol", -1, 5)?;
        let mut full = Map::new();
        let mut record = None;
        if let Value::Object(m) = config {
            for (k, v) in m {
                if k == PICKLE_RECORD_KEY {
                    record = Some((record_fields(v)?, v.clone()));
                } else if k != "id" {
                    full.insert(k.clone(), v.clone());
                }
            }
        }
        Ok(PickleCodec {
            config: full,
            record,
            allow,
        })
    }

    /// [`PickleCodec::from_config`] for a chunk of `repr`: only object arrays (read as text)
    /// can use this codec.
    pub fn for_repr(config: &Value, repr: &ChunkRepr) -> CodecResult<Self> {
        if !matches!(repr.data_type, DataType::String) {
            return Err(config_err(
                ID,
                format!(
                    "only object (|O) arrays, read as text, can use the pickle codec; this \
                     array's data type is {}",
                    repr.data_type
                ),
            ));
        }
        Self::from_config(config)
    }

    /// The globals a chunk may name.
    pub fn allow_list(&self) -> &AllowList {
        &self.allow
    }
}

/// The record layout of a structured v2 `dtype` (`[[name, typestr], ...]`, `|O` for objects).
fn record_fields(dtype: &Value) -> CodecResult<Vec<RecordField>> {
    let bad = || {
        config_err(
            ID,
            format!(
                "a pickled record dtype must be a list of [name, typestr] fields, found {dtype}"
            ),
        )
    };
    dtype
        .as_array()
        .ok_or_else(bad)?
        .iter()
        .map(|field| match field.as_array().map(Vec::as_slice) {
            Some([Value::String(name), Value::String(typestr)]) => Ok(RecordField {
                name: name.clone(),
                kind: if typestr.ends_with('O') {
                    RecordKind::Object
                } else {
                    RecordKind::Numeric(typestr.clone())
                },
            }),
            _ => Err(bad()),
        })
        .collect()
}

fn codec_error(e: PickleError) -> CodecError {
    match e {
        PickleError::RefusedGlobal { .. }
        | PickleError::RefusedOpcode { .. }
        | PickleError::Unsupported { .. }
        | PickleError::Encode(_) => unsupported(ID, e.to_string()),
        _ => corrupt(ID, e.to_string()),
    }
}

fn contains_marker(v: &Value) -> bool {
    match v {
        Value::String(s) => non_finite_token(s).is_some(),
        Value::Array(items) => items.iter().any(contains_marker),
        Value::Object(m) => m.values().any(contains_marker),
        _ => false,
    }
}

/// The text of one decoded element.
fn element_text(item: &Value, out: &mut Vec<u8>) {
    match item {
        Value::String(s) => match non_finite_token(s) {
            // A Python float NaN / ±inf element.
            Some(token) => out.extend_from_slice(token.as_bytes()),
            None => out.extend_from_slice(s.as_bytes()),
        },
        other if contains_marker(other) => {
            let style = PyJsonStyle {
                ensure_ascii: false,
                ..PyJsonStyle::COMPACT
            };
            out.extend_from_slice(to_python_json(other, style).as_bytes());
        }
        other => {
            // Serialising a `Value` cannot fail.
            let text = serde_json::to_string(other).unwrap_or_default();
            out.extend_from_slice(text.as_bytes());
        }
    }
}

impl ArrayToBytesCodec for PickleCodec {
    fn name(&self) -> &str {
        "numcodecs.pickle"
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
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
        let mut texts = Vec::with_capacity(n);
        for e in 0..n {
            let item = data
                .get(offsets[e]..offsets[e + 1])
                .ok_or_else(|| unsupported(ID, "element offsets are out of range"))?;
            let text = std::str::from_utf8(item)
                .map_err(|_| unsupported(ID, format!("element {e} is not UTF-8 text")))?;
            texts.push(text);
        }
        match &self.record {
            // Objects (hdmf-zarr's reference dictionaries) travel as their JSON text; write
            // those back as dictionaries, everything else as text.
            None if texts.iter().any(|t| t.starts_with('{')) => {
                let items: Vec<Value> = texts
                    .iter()
                    .map(
                        |t| match t.starts_with('{').then(|| serde_json::from_str::<Value>(t)) {
                            Some(Ok(object @ Value::Object(_))) => object,
                            _ => Value::String((*t).to_string()),
                        },
                    )
                    .collect();
                encode_object_array(&repr.shape, &items, None).map_err(codec_error)
            }
            None => encode_text_array(&repr.shape, texts.into_iter()).map_err(codec_error),
            // Records travel as the JSON text the decoder produced; write them back as records.
            Some((fields, _)) => {
                let items = texts
                    .iter()
                    .enumerate()
                    .map(|(e, text)| {
                        if text.is_empty() {
                            return Ok(Value::Null);
                        }
                        neurochunk_dtype::json::parse_lenient(text.as_bytes()).map_err(|err| {
                            unsupported(ID, format!("element {e} is not a JSON record: {err}"))
                        })
                    })
                    .collect::<CodecResult<Vec<Value>>>()?;
                encode_object_array(&repr.shape, &items, Some(fields)).map_err(codec_error)
            }
        }
    }

    fn v2_dtype(&self) -> Option<Value> {
        self.record.as_ref().map(|(_, dtype)| dtype.clone())
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let array = decode_object_array(&bytes, &self.allow).map_err(codec_error)?;
        let n = repr.num_elements();
        // zarr-python reshapes the decoded chunk (`reshape(-1, order="A")`, then to the
        // chunk shape), so only the element count has to agree.
        if array.items.len() != n {
            return Err(corrupt(
                ID,
                format!(
                    "the chunk holds {} elements (shape {:?}), expected {n} (shape {:?})",
                    array.items.len(),
                    array.shape,
                    repr.shape
                ),
            ));
        }
        let order: Vec<usize> = if array.fortran {
            fortran_order(&array.shape)
        } else {
            (0..n).collect()
        };
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0);
        for i in order {
            let item = array
                .items
                .get(i)
                .ok_or_else(|| corrupt(ID, "element index out of range"))?;
            element_text(item, &mut data);
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

/// The C-order indices of the elements of `shape` listed in Fortran order.
fn fortran_order(shape: &[usize]) -> Vec<usize> {
    // Decoded shapes have a product that fits (checked from the left); with a zero dimension
    // there is nothing to order (and the strides could overflow).
    let n = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .unwrap_or(0);
    if n == 0 {
        return Vec::new();
    }
    let mut c_strides = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        c_strides[k] = c_strides[k + 1] * shape[k + 1];
    }
    let mut out = Vec::with_capacity(n);
    let mut idx = vec![0usize; shape.len()];
    for _ in 0..n {
        out.push(idx.iter().zip(&c_strides).map(|(i, s)| i * s).sum());
        for k in 0..shape.len() {
            idx[k] += 1;
            if idx[k] < shape[k] {
                break;
            }
            idx[k] = 0;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fortran_order_lists_columns_first() {
        assert_eq!(fortran_order(&[2, 3]), vec![0, 3, 1, 4, 2, 5]);
        assert_eq!(fortran_order(&[4]), vec![0, 1, 2, 3]);
        assert_eq!(fortran_order(&[]), vec![0]);
        assert!(fortran_order(&[0, 1 << 40, 1 << 40]).is_empty());
    }
}
