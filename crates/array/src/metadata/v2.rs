//! Zarr v2 documents as typed serde values: `.zarray` ([`ArrayDocumentV2`]) and `.zgroup`
//! ([`GroupDocumentV2`]); `.zattrs` is a plain JSON object. Members whose form depends on the
//! data type or the codec (`dtype`, `fill_value`, `compressor`, `filters`) stay JSON values.
//!
//! Each member that can be malformed is read by a function that says, naming the member, what
//! it must be; [`super::typed_document`] adds the file and the node.

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// A member's value as `T`, or the error `message(value)`.
pub(crate) fn member_as<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
    message: impl FnOnce(&Value) -> String,
) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    T::deserialize(&value).map_err(|_| D::Error::custom(message(&value)))
}

/// A list of non-negative integers named `key`.
pub(crate) fn u64_list<'de, D: Deserializer<'de>>(d: D, key: &str) -> Result<Vec<u64>, D::Error> {
    member_as(d, |v| {
        format!("'{key}' must be a list of non-negative integers, found {v}")
    })
}

fn shape<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    u64_list(d, "shape")
}

fn chunks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    u64_list(d, "chunks")
}

fn compressor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        c @ Value::Object(_) => Ok(Some(c)),
        other => Err(D::Error::custom(format!(
            "'compressor' must be an object or null, found {other}"
        ))),
    }
}

fn filters<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Value>>, D::Error> {
    member_as(d, |v| {
        format!("'filters' must be a list or null, found {v}")
    })
}

fn order<'de, D: Deserializer<'de>>(d: D) -> Result<OrderV2, D::Error> {
    member_as(d, |_| "'order' must be \"C\" or \"F\"".to_string())
}

fn separator<'de, D: Deserializer<'de>>(d: D) -> Result<Option<char>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(s) if s == "." => Ok(Some('.')),
        Value::String(s) if s == "/" => Ok(Some('/')),
        other => Err(D::Error::custom(format!(
            "'dimension_separator' must be \".\" or \"/\", found {other}"
        ))),
    }
}

fn zarr_format<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    member_as(d, |v| format!("zarr_format must be 2, found {v}"))
}

/// The memory order of a Zarr v2 chunk (`order`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrderV2 {
    /// Row-major (`"C"`).
    C,
    /// Column-major (`"F"`).
    F,
}

/// A Zarr v2 `.zarray` document. Serialised with its members in sorted order, as
/// zarr-python 2 writes them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrayDocumentV2 {
    /// Chunk shape.
    #[serde(deserialize_with = "chunks")]
    pub chunks: Vec<u64>,
    /// The numcodecs compressor configuration (`{"id": …}`), `None` for `null`.
    #[serde(deserialize_with = "compressor")]
    pub compressor: Option<Value>,
    /// Chunk key separator: `.` (the default when absent) or `/`.
    #[serde(
        default,
        deserialize_with = "separator",
        skip_serializing_if = "Option::is_none"
    )]
    pub dimension_separator: Option<char>,
    /// NumPy type string or structured field list.
    pub dtype: Value,
    /// Fill value in its Zarr v2 JSON form (depends on the dtype).
    pub fill_value: Value,
    /// numcodecs filter configurations, `None` for `null`.
    #[serde(deserialize_with = "filters")]
    pub filters: Option<Vec<Value>>,
    /// Memory order of a chunk.
    #[serde(deserialize_with = "order")]
    pub order: OrderV2,
    /// Array shape.
    #[serde(deserialize_with = "shape")]
    pub shape: Vec<u64>,
    /// Always 2.
    #[serde(deserialize_with = "zarr_format")]
    pub zarr_format: u64,
}

/// A Zarr v2 `.zgroup` document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupDocumentV2 {
    /// Always 2.
    #[serde(deserialize_with = "zarr_format")]
    pub zarr_format: u64,
}

impl Default for GroupDocumentV2 {
    fn default() -> Self {
        GroupDocumentV2 { zarr_format: 2 }
    }
}
