//! An N5 dataset's `attributes.json` as a typed serde value ([`DatasetAttributesN5`]): the
//! version, the four dataset keys (and the legacy `compressionType`), then the user
//! attributes. The `compression` object stays a JSON value: its members depend on its type
//! (see [`super::compression`]).

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

fn member_as<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
    message: impl FnOnce(&Value) -> String,
) -> Result<T, D::Error> {
    let value = Value::deserialize(d)?;
    T::deserialize(&value).map_err(|_| D::Error::custom(message(&value)))
}

fn dimensions<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    member_as(d, |v| {
        format!("'dimensions' must be a list of non-negative integers, found {v}")
    })
}

fn block_size<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u64>>, D::Error> {
    member_as::<_, Vec<u64>>(d, |v| {
        format!("'blockSize' must be a list of non-negative integers, found {v}")
    })
    .map(Some)
}

fn data_type<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    member_as(d, |v| format!("'dataType' must be a string, found {v}"))
}

/// Any value present, `null` included (the compression mapping says what is wrong with it).
fn compression<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn compression_type<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    member_as::<_, String>(d, |v| {
        format!("'compressionType' must be a string, found {v}")
    })
    .map(Some)
}

/// The `attributes.json` of an N5 dataset. Serialised in the order the Java reference writes
/// it: version, dataset keys, then the user attributes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetAttributesN5 {
    /// The container version (`"n5"`, usually only at the root), kept as written.
    #[serde(rename = "n5", default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Value>,
    /// The dataset's size per dimension, in the listed (N5) order.
    #[serde(deserialize_with = "dimensions")]
    pub dimensions: Vec<u64>,
    /// The block size per dimension (n5 3.x allowed it to be absent: the whole dataset).
    #[serde(
        rename = "blockSize",
        default,
        deserialize_with = "block_size",
        skip_serializing_if = "Option::is_none"
    )]
    pub block_size: Option<Vec<u64>>,
    /// `uint8` … `float64`, `string` or `object`.
    #[serde(rename = "dataType", deserialize_with = "data_type")]
    pub data_type: String,
    /// The `compression` object (`{"type": …, …}`), as written.
    #[serde(
        default,
        deserialize_with = "compression",
        skip_serializing_if = "Option::is_none"
    )]
    pub compression: Option<Value>,
    /// The compression type of old containers (`compressionType`), read when `compression`
    /// is absent; never written.
    #[serde(
        rename = "compressionType",
        default,
        deserialize_with = "compression_type",
        skip_serializing_if = "Option::is_none"
    )]
    pub compression_type: Option<String>,
    /// Every other member: the user attributes (and tensorstore's `axes`).
    #[serde(flatten)]
    pub attributes: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn dataset_attributes_keep_user_attributes_and_their_order() {
        let doc = json!({"n5": "4.0.0", "dimensions": [5, 4], "blockSize": [2, 2],
                         "dataType": "uint16", "compression": {"type": "raw"}, "axes": ["x", "y"], "k": 1});
        let typed: DatasetAttributesN5 = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(typed.dimensions, vec![5, 4]);
        assert_eq!(typed.attributes.keys().collect::<Vec<_>>(), ["axes", "k"]);
        assert_eq!(serde_json::to_value(&typed).unwrap(), doc);
        let err = serde_json::from_value::<DatasetAttributesN5>(
            json!({"dimensions": "big", "dataType": "uint8"}),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("'dimensions' must be a list"), "{err}");
    }
}
