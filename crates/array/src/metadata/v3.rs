//! Zarr v3 `zarr.json` documents as typed serde values: arrays ([`ArrayDocumentV3`]) and
//! groups ([`GroupDocumentV3`]). Extension points (chunk grid, chunk key encoding, codecs,
//! storage transformers) are [`MetadataEntryV3`] values, `{name, configuration}`; members the
//! specification does not define are kept ([`ArrayDocumentV3::extra`]) so that their
//! `must_understand` flag can be honoured. Members whose form depends on the data type
//! (`data_type`, `fill_value`) stay JSON values.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::v2::{member_as, u64_list};

/// One extension point: a name and an optional configuration; members besides these two
/// (such as `must_understand`) are kept in `extra`. Written as `{"name", "configuration"}`;
/// read from that form or from a bare name.
#[derive(Clone, Debug, PartialEq)]
pub struct MetadataEntryV3 {
    /// The extension's name (`regular`, `default`, `bytes`, `zstd`, …).
    pub name: String,
    /// Its configuration, kept as written (`None` when absent).
    pub configuration: Option<Value>,
    /// Any other members, in document order.
    pub extra: Map<String, Value>,
}

impl MetadataEntryV3 {
    /// An entry with a name and a configuration.
    pub fn new(name: impl Into<String>, configuration: Option<Value>) -> Self {
        MetadataEntryV3 {
            name: name.into(),
            configuration,
            extra: Map::new(),
        }
    }

    /// Read an entry from its JSON (a name, or an object with a string `name`); the error
    /// says what is wrong, for the caller to prefix with the member's name.
    pub fn from_json(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(name) => Ok(MetadataEntryV3::new(name.clone(), None)),
            Value::Object(obj) => {
                let name = obj
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| "is missing 'name'".to_string())?;
                let mut extra = obj.clone();
                extra.remove("name");
                let configuration = extra.remove("configuration");
                Ok(MetadataEntryV3 {
                    name: name.to_string(),
                    configuration,
                    extra,
                })
            }
            other => Err(format!("must be a name or an object, found {other}")),
        }
    }

    /// The entry as JSON: `{"name", "configuration"?, extra…}`.
    pub fn to_json(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("name".into(), Value::String(self.name.clone()));
        if let Some(c) = &self.configuration {
            obj.insert("configuration".into(), c.clone());
        }
        for (k, v) in &self.extra {
            obj.insert(k.clone(), v.clone());
        }
        Value::Object(obj)
    }

    /// The configuration when it is a JSON object.
    pub fn configuration_object(&self) -> Option<&Map<String, Value>> {
        self.configuration.as_ref().and_then(Value::as_object)
    }

    /// Whether the entry says readers may ignore it (`"must_understand": false`).
    pub fn may_be_ignored(&self) -> bool {
        self.extra.get("must_understand") == Some(&Value::Bool(false))
    }
}

impl Serialize for MetadataEntryV3 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(s)
    }
}

impl<'de> Deserialize<'de> for MetadataEntryV3 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        MetadataEntryV3::from_json(&value)
            .map_err(|e| D::Error::custom(format!("extension entry {e}")))
    }
}

fn entry<'de, D: Deserializer<'de>>(d: D, what: &str) -> Result<MetadataEntryV3, D::Error> {
    let value = Value::deserialize(d)?;
    MetadataEntryV3::from_json(&value).map_err(|e| D::Error::custom(format!("{what} {e}")))
}

fn chunk_grid<'de, D: Deserializer<'de>>(d: D) -> Result<MetadataEntryV3, D::Error> {
    entry(d, "chunk_grid")
}

fn chunk_key_encoding<'de, D: Deserializer<'de>>(d: D) -> Result<MetadataEntryV3, D::Error> {
    entry(d, "chunk_key_encoding")
}

fn codecs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<MetadataEntryV3>, D::Error> {
    let list: Vec<Value> = member_as(d, |_| "'codecs' must be a list".to_string())?;
    list.iter()
        .map(|v| MetadataEntryV3::from_json(v).map_err(|e| D::Error::custom(format!("codec {e}"))))
        .collect()
}

fn storage_transformers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<MetadataEntryV3>, D::Error> {
    let value = Value::deserialize(d)?;
    let err = || D::Error::custom(format!("unsupported storage transformers {value}"));
    value
        .as_array()
        .ok_or_else(err)?
        .iter()
        .map(|v| MetadataEntryV3::from_json(v).map_err(|_| err()))
        .collect()
}

fn shape<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    u64_list(d, "shape")
}

fn attributes<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(Map::new()),
        Value::Object(map) => Ok(map),
        other => Err(D::Error::custom(format!(
            "attributes must be a JSON object, found {other}"
        ))),
    }
}

fn dimension_names<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<Option<String>>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Array(names) => names
            .into_iter()
            .map(|n| match n {
                Value::String(s) => Ok(Some(s)),
                Value::Null => Ok(None),
                other => Err(D::Error::custom(format!(
                    "dimension name must be a string or null, found {other}"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        other => Err(D::Error::custom(format!(
            "dimension_names must list one name per dimension, found {other}"
        ))),
    }
}

fn zarr_format<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    member_as(d, |v| format!("zarr_format must be 3, found {v}"))
}

fn node_type<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    member_as(d, |v| format!("node_type must be a string, found {v}"))
}

/// A Zarr v3 array `zarr.json`. Serialised in zarr-python 3's member order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrayDocumentV3 {
    /// Array shape.
    #[serde(deserialize_with = "shape")]
    pub shape: Vec<u64>,
    /// Data type in its Zarr v3 JSON form.
    pub data_type: Value,
    /// Chunk grid (`regular` with `chunk_shape`).
    #[serde(deserialize_with = "chunk_grid")]
    pub chunk_grid: MetadataEntryV3,
    /// Chunk key encoding (`default` or `v2`, with a `separator`).
    #[serde(deserialize_with = "chunk_key_encoding")]
    pub chunk_key_encoding: MetadataEntryV3,
    /// Fill value in its Zarr v3 JSON form (depends on the data type).
    pub fill_value: Value,
    /// The codec chain, first to last.
    #[serde(deserialize_with = "codecs")]
    pub codecs: Vec<MetadataEntryV3>,
    /// User attributes (absent or `null` read as none).
    #[serde(default, deserialize_with = "attributes")]
    pub attributes: Map<String, Value>,
    /// One optional name per dimension.
    #[serde(
        default,
        deserialize_with = "dimension_names",
        skip_serializing_if = "Option::is_none"
    )]
    pub dimension_names: Option<Vec<Option<String>>>,
    /// Always 3.
    #[serde(deserialize_with = "zarr_format")]
    pub zarr_format: u64,
    /// Always `array`.
    #[serde(deserialize_with = "node_type")]
    pub node_type: String,
    /// Storage transformers (none are supported; ones that may be ignored are).
    #[serde(default, deserialize_with = "storage_transformers")]
    pub storage_transformers: Vec<MetadataEntryV3>,
    /// Members the specification does not define, kept so that a reader can refuse those
    /// that do not say `"must_understand": false`.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A Zarr v3 group `zarr.json`. Serialised in zarr-python 3's member order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupDocumentV3 {
    /// User attributes (absent or `null` read as none).
    #[serde(default, deserialize_with = "attributes")]
    pub attributes: Map<String, Value>,
    /// Always 3.
    #[serde(deserialize_with = "zarr_format")]
    pub zarr_format: u64,
    /// Always `group`.
    #[serde(deserialize_with = "node_type")]
    pub node_type: String,
    /// Inline consolidated metadata of the subtree, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consolidated_metadata: Option<Value>,
    /// Members the specification does not define.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
