//! N5 containers (filesystem spec 4.0.0): every directory is a group, `attributes.json` holds
//! a node's attributes, and a dataset is a group whose attributes carry `dimensions`,
//! `blockSize`, `dataType` and `compression`.
//!
//! An N5 dataset is parsed into the same [`ArrayMetadata`] as a Zarr array: its chain is one
//! [`N5BlockCodec`] (block header, big-endian column-major payload, compression), its chunk
//! keys are the block paths `i/j/k`. The axis order it is presented in is chosen when opening
//! ([`OpenOptions::n5_axis_order`]): the listed order (N5 Java API, tensorstore; the default)
//! or the reversed one (zarr-python 2's `N5Store`, z5); shapes, chunk shapes, chunk indices and
//! dimension names are then in that order, and keys map back to the listed order.
//!
//! Attributes: the user attributes of a node are its `attributes.json` without the reserved
//! keys (`n5`, the four dataset keys, legacy `compressionType`); tensorstore's `axes` becomes
//! the dimension names. Writing merges with the stored document so reserved keys such as the
//! root's `"n5"` version are kept; new containers get `"n5": "4.0.0"`.
//!
//! The module owns everything N5-specific: the block codec ([`block`]: header, payload,
//! axis order), the `compression` JSON and its mapping onto the codec crate's compressors
//! ([`compression`]), block paths ([`ArrayMetadata::chunk_key`]) and the attributes document.

pub mod block;
pub mod compression;
pub mod document;

pub use block::{N5AxisOrder, N5BlockCodec};
pub use compression::{
    compression_from_n5_json, compression_to_n5_json, n5_compatible_compression,
    zarr_compatible_compression, N5_COMPRESSION_TYPES,
};
pub use document::DatasetAttributesN5;

use std::sync::Arc;

use neurochunk_codec::{BytesToBytesCodec, CodecChain};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_dtype::DataType;
use neurochunk_store::{join_key, Store};
use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{parse_document, ArrayMetadata, ChunkKeyEncoding, GroupMetadata};
use crate::metadata::{NodeMetadata, ZarrFormat};

/// The attributes document of every N5 node.
pub const ATTRIBUTES_JSON: &str = "attributes.json";
/// The N5 specification version written into new containers.
pub const N5_VERSION: &str = "4.0.0";
/// The highest major version read.
const MAX_MAJOR: u64 = 4;

const VERSION_KEY: &str = "n5";
const AXES_KEY: &str = "axes";
/// Keys the format reserves (never user attributes).
pub const RESERVED_KEYS: &[&str] = &[
    "n5",
    "dimensions",
    "blockSize",
    "dataType",
    "compression",
    "compressionType",
];

/// The keys a group's attributes cannot hold: the version, and `dimensions` (which would make
/// the group a dataset). The dataset keys are ordinary attributes of a group: BigDataViewer
/// states its setups' `dataType` there.
pub const GROUP_RESERVED_KEYS: &[&str] = &["n5", "dimensions"];

/// Block paths: `i/j/k`, no prefix.
pub const N5_KEY_ENCODING: ChunkKeyEncoding = ChunkKeyEncoding {
    c_prefix: false,
    separator: '/',
};

/// How nodes are presented when opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Axis order of N5 datasets (ignored for Zarr).
    pub n5_axis_order: N5AxisOrder,
}

/// The data type of an N5 `dataType` name.
pub fn n5_data_type(name: &str) -> Option<DataType> {
    Some(match name {
        "uint8" => DataType::UInt8,
        "uint16" => DataType::UInt16,
        "uint32" => DataType::UInt32,
        "uint64" => DataType::UInt64,
        "int8" => DataType::Int8,
        "int16" => DataType::Int16,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "float32" => DataType::Float32,
        "float64" => DataType::Float64,
        "string" => DataType::String,
        "object" => DataType::Bytes,
        _ => return None,
    })
}

/// The N5 `dataType` name of a data type, if N5 has it.
pub fn n5_data_type_name(data_type: &DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::UInt8 => "uint8",
        DataType::UInt16 => "uint16",
        DataType::UInt32 => "uint32",
        DataType::UInt64 => "uint64",
        DataType::Int8 => "int8",
        DataType::Int16 => "int16",
        DataType::Int32 => "int32",
        DataType::Int64 => "int64",
        DataType::Float32 => "float32",
        DataType::Float64 => "float64",
        DataType::String => "string",
        DataType::Bytes => "object",
        _ => return None,
    })
}

fn meta_err(path: &str, message: impl Into<String>) -> ArrayError {
    ArrayError::metadata(path, format!("{ATTRIBUTES_JSON}: {}", message.into()))
}

/// Refuse a version whose major number is newer than the one understood (as Java does); a
/// missing or older version (tensorstore writes none, zarr-python 2 "2.0.0") is fine.
fn check_version(doc: &Map<String, Value>, path: &str) -> ArrayResult<()> {
    if let Some(Value::String(v)) = doc.get(VERSION_KEY) {
        if let Some(major) = v
            .split('.')
            .next()
            .and_then(|m| m.trim().parse::<u64>().ok())
        {
            if major > MAX_MAJOR {
                return Err(meta_err(
                    path,
                    format!("N5 version \"{v}\" is newer than the supported {MAX_MAJOR}.x"),
                ));
            }
        }
    }
    Ok(())
}

fn user_attributes(doc: &Map<String, Value>, reserved: &[&str]) -> Map<String, Value> {
    doc.iter()
        .filter(|(k, _)| !reserved.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Parse a node's `attributes.json`: a dataset when it has `dimensions`, else a group.
pub(crate) fn parse_node(doc: &Value, path: &str, order: N5AxisOrder) -> ArrayResult<NodeMetadata> {
    let map = doc
        .as_object()
        .ok_or_else(|| meta_err(path, format!("must be a JSON object, found {doc}")))?;
    check_version(map, path)?;
    if map.contains_key("dimensions") {
        return Ok(NodeMetadata::Array(Box::new(parse_dataset(
            doc, path, order,
        )?)));
    }
    Ok(NodeMetadata::Group(GroupMetadata {
        format: ZarrFormat::N5,
        attributes: user_attributes(map, GROUP_RESERVED_KEYS),
        consolidated: None,
    }))
}

/// Read a dataset's `attributes.json` as its typed document, with errors naming the file,
/// the node and what is wrong.
fn dataset_document(doc: &Value, path: &str) -> ArrayResult<DatasetAttributesN5> {
    DatasetAttributesN5::deserialize(doc).map_err(|e| {
        let message = e.to_string();
        match message
            .strip_prefix("missing field `")
            .and_then(|rest| rest.strip_suffix('`'))
        {
            Some(key) => meta_err(path, format!("dataset is missing the required key '{key}'")),
            None => meta_err(path, message),
        }
    })
}

fn parse_dataset(doc: &Value, path: &str, order: N5AxisOrder) -> ArrayResult<ArrayMetadata> {
    let doc = dataset_document(doc, path)?;
    let dims = doc.dimensions;
    if dims.is_empty() {
        return Err(meta_err(
            path,
            "'dimensions' must list at least one dimension",
        ));
    }
    // n5 3.x defaulted a missing blockSize to the dimensions.
    let block = doc
        .block_size
        .unwrap_or_else(|| dims.iter().map(|&d| d.max(1)).collect());
    if block.len() != dims.len() {
        return Err(meta_err(
            path,
            format!(
                "'blockSize' has {} entries but 'dimensions' has {}",
                block.len(),
                dims.len()
            ),
        ));
    }
    if let Some(bad) = block.iter().find(|&&b| b == 0 || b > i32::MAX as u64) {
        return Err(meta_err(
            path,
            format!("'blockSize' entry {bad} is not between 1 and 2^31-1"),
        ));
    }
    let type_name = doc.data_type.as_str();
    let data_type = n5_data_type(type_name).ok_or_else(|| {
        meta_err(
            path,
            format!(
                "unknown dataType '{type_name}' (expected uint8, uint16, uint32, uint64, int8, \
                 int16, int32, int64, float32, float64, string or object)"
            ),
        )
    })?;
    let compression = match (doc.compression, doc.compression_type) {
        (Some(c), _) => c,
        (None, Some(kind)) => json!({ "type": kind }),
        (None, None) => json!({"type": "raw"}),
    };
    let typesize = data_type.fixed_size().unwrap_or(1);
    let codec = N5BlockCodec::from_n5_json(order, &compression, typesize).map_err(|source| {
        ArrayError::Codecs {
            path: crate::display_path(path),
            source,
        }
    })?;
    let chunk_shape = block
        .iter()
        .map(|&b| usize::try_from(b).map_err(|_| meta_err(path, "block size too large")))
        .collect::<ArrayResult<Vec<usize>>>()?;
    let mut attributes = doc.attributes;
    let dimension_names = match attributes.get(AXES_KEY) {
        Some(Value::Array(axes))
            if axes.len() == dims.len() && axes.iter().all(Value::is_string) =>
        {
            let names: Vec<Option<String>> = axes
                .iter()
                .map(|a| a.as_str().filter(|s| !s.is_empty()).map(str::to_string))
                .collect();
            attributes.remove(AXES_KEY);
            Some(order.apply(&names))
        }
        _ => None,
    };
    ArrayMetadata {
        format: ZarrFormat::N5,
        shape: order.apply(&dims),
        chunk_shape: order.apply(&chunk_shape),
        fill_value: Some(data_type.zero_fill()),
        data_type,
        key_encoding: N5_KEY_ENCODING,
        codecs: Arc::new(CodecChain::new(Vec::new(), Arc::new(codec), Vec::new())),
        attributes,
        dimension_names,
    }
    .checked(path)
}

/// The description of a new N5 dataset. `shape` and `chunk_shape` are in the presentation
/// order `axis_order`; `compression` `None` is raw (numcodecs `lz4` becomes the Java stream).
pub fn n5_array_metadata(
    shape: Vec<u64>,
    chunk_shape: Vec<usize>,
    data_type: DataType,
    compression: Option<Arc<dyn BytesToBytesCodec>>,
    axis_order: N5AxisOrder,
    attributes: Map<String, Value>,
    path: &str,
) -> ArrayResult<ArrayMetadata> {
    let unsupported = |message: String| ArrayError::Unsupported {
        path: crate::display_path(path),
        message,
    };
    if n5_data_type_name(&data_type).is_none() {
        return Err(unsupported(format!(
            "data type {data_type} has no N5 form (N5 has uint8-64, int8-64, float32, float64, string, object)"
        )));
    }
    if shape.is_empty() {
        return Err(unsupported(
            "N5 datasets need at least one dimension".into(),
        ));
    }
    if let Some(key) = attributes
        .keys()
        .find(|k| RESERVED_KEYS.contains(&k.as_str()))
    {
        return Err(unsupported(format!(
            "attribute '{key}' is reserved by N5 and cannot be stored as a user attribute"
        )));
    }
    let codec =
        N5BlockCodec::new(axis_order, compression).map_err(|source| ArrayError::Codecs {
            path: crate::display_path(path),
            source,
        })?;
    ArrayMetadata {
        format: ZarrFormat::N5,
        shape,
        chunk_shape,
        fill_value: Some(data_type.zero_fill()),
        data_type,
        key_encoding: N5_KEY_ENCODING,
        codecs: Arc::new(CodecChain::new(Vec::new(), Arc::new(codec), Vec::new())),
        attributes,
        dimension_names: None,
    }
    .checked(path)
}

/// Serialise an `attributes.json` the way the Java reference does: compact, keys in order,
/// no escaping of non-ASCII text.
pub(crate) fn document_bytes(doc: &Value) -> Vec<u8> {
    let style = PyJsonStyle {
        ensure_ascii: false,
        ..PyJsonStyle::COMPACT
    };
    to_python_json(doc, style).into_bytes()
}

fn read_existing(store: &dyn Store, path: &str) -> ArrayResult<Map<String, Value>> {
    match store.get(&join_key(path, ATTRIBUTES_JSON))? {
        None => Ok(Map::new()),
        Some(bytes) => match parse_document(&bytes, path, ATTRIBUTES_JSON)? {
            Value::Object(map) => Ok(map),
            other => Err(meta_err(
                path,
                format!("must be a JSON object, found {other}"),
            )),
        },
    }
}

/// The version entry to write: the stored one when present, else the current version for
/// the root.
fn version_entry(existing: &Map<String, Value>, path: &str) -> Option<Value> {
    existing
        .get(VERSION_KEY)
        .cloned()
        .or_else(|| path.is_empty().then(|| json!(N5_VERSION)))
}

fn add_user_attributes(
    doc: &mut Map<String, Value>,
    attributes: &Map<String, Value>,
    reserved: &[&str],
    path: &str,
) -> ArrayResult<()> {
    for (key, value) in attributes {
        if reserved.contains(&key.as_str()) || doc.contains_key(key) {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(path),
                message: format!(
                    "attribute '{key}' is reserved by N5 and cannot be stored as a user attribute"
                ),
            });
        }
        doc.insert(key.clone(), value.clone());
    }
    Ok(())
}

/// Write a dataset's `attributes.json` (keeping a stored `"n5"` version key).
pub(crate) fn write_dataset(
    store: &dyn Store,
    path: &str,
    meta: &ArrayMetadata,
) -> ArrayResult<()> {
    let n5 = meta.n5_block().ok_or_else(|| ArrayError::Unsupported {
        path: crate::display_path(path),
        message: "an N5 dataset needs the N5 block codec as its only codec".into(),
    })?;
    let order = n5.axis_order();
    let type_name = n5_data_type_name(&meta.data_type).ok_or_else(|| ArrayError::Unsupported {
        path: crate::display_path(path),
        message: format!("data type {} has no N5 form", meta.data_type),
    })?;
    let existing = read_existing(store, path)?;
    let mut attributes = Map::new();
    if let Some(names) = &meta.dimension_names {
        if names.len() == meta.shape.len()
            && names.iter().any(Option::is_some)
            && !meta.attributes.contains_key(AXES_KEY)
        {
            let axes: Vec<String> = order
                .apply(names)
                .into_iter()
                .map(Option::unwrap_or_default)
                .collect();
            attributes.insert(AXES_KEY.into(), json!(axes));
        }
    }
    add_user_attributes(&mut attributes, &meta.attributes, RESERVED_KEYS, path)?;
    let doc = DatasetAttributesN5 {
        version: version_entry(&existing, path),
        dimensions: order.apply(&meta.shape),
        block_size: Some(
            order
                .apply(&meta.chunk_shape)
                .into_iter()
                .map(|b| b as u64)
                .collect(),
        ),
        data_type: type_name.to_string(),
        compression: Some(n5.compression_json().clone()),
        compression_type: None,
        attributes,
    };
    let doc = serde_json::to_value(&doc)
        .map_err(|e| meta_err(path, format!("cannot be written: {e}")))?;
    store.set(
        &join_key(path, ATTRIBUTES_JSON),
        document_bytes(&doc).into(),
    )?;
    Ok(())
}

/// Write a group's `attributes.json` (always, so the group exists; keeping a stored `"n5"`
/// version key, adding the current version at the root).
pub(crate) fn write_group(
    store: &dyn Store,
    path: &str,
    attributes: &Map<String, Value>,
) -> ArrayResult<()> {
    let existing = read_existing(store, path)?;
    let mut doc = Map::new();
    if let Some(v) = version_entry(&existing, path) {
        doc.insert(VERSION_KEY.into(), v);
    }
    add_user_attributes(&mut doc, attributes, GROUP_RESERVED_KEYS, path)?;
    store.set(
        &join_key(path, ATTRIBUTES_JSON),
        document_bytes(&Value::Object(doc)).into(),
    )?;
    Ok(())
}

/// Directories searched and depth descended when deciding whether a directory without
/// metadata is an N5 group (tensorstore writes no root `attributes.json`).
const IMPLICIT_SEARCH_DIRS: usize = 256;
const IMPLICIT_SEARCH_DEPTH: usize = 4;

/// True when the directory at `path` has no metadata of its own but an N5 node below it
/// (within a few levels): in N5, every directory is a group.
pub(crate) fn implicit_group(store: &dyn Store, path: &str) -> ArrayResult<bool> {
    let mut level = vec![path.to_string()];
    let mut visited = 0usize;
    for _ in 0..IMPLICIT_SEARCH_DEPTH {
        let mut next = Vec::new();
        for dir in &level {
            for name in crate::hierarchy::child_names(store, dir)? {
                visited += 1;
                if visited > IMPLICIT_SEARCH_DIRS {
                    return Ok(false);
                }
                let child = join_key(dir, &name);
                if store.exists(&join_key(&child, ATTRIBUTES_JSON))? {
                    return Ok(true);
                }
                next.push(child);
            }
        }
        if next.is_empty() {
            break;
        }
        level = next;
    }
    Ok(false)
}

impl ArrayMetadata {
    /// The N5 block codec of an N5 dataset (`None` for Zarr arrays).
    pub fn n5_block(&self) -> Option<&N5BlockCodec> {
        self.codecs.only::<N5BlockCodec>()
    }

    /// The N5 axis order of an N5 dataset (`None` for Zarr arrays).
    pub fn n5_axis_order(&self) -> Option<N5AxisOrder> {
        self.n5_block().map(N5BlockCodec::axis_order)
    }

    /// The key (relative to the array) of the chunk at grid position `index` (presentation
    /// order; N5 block paths are in the listed order).
    pub fn chunk_key(&self, index: &[u64]) -> String {
        if let Some(precomputed) = self.precomputed() {
            return precomputed.scale().chunk_key(index);
        }
        match self.n5_axis_order() {
            Some(N5AxisOrder::Reversed) => {
                self.key_encoding.key(&N5AxisOrder::Reversed.apply(index))
            }
            _ => self.key_encoding.key(index),
        }
    }

    /// The grid position of a chunk key (inverse of [`ArrayMetadata::chunk_key`]).
    pub fn parse_chunk_key(&self, key: &str) -> Option<Vec<u64>> {
        if let Some(precomputed) = self.precomputed() {
            return precomputed.scale().parse_chunk_key(key);
        }
        let index = self.key_encoding.parse(key, self.shape.len())?;
        Some(match self.n5_axis_order() {
            Some(order) => order.apply(&index),
            None => index,
        })
    }

    /// Per axis, how many elements of the chunk at `index` lie inside the array.
    pub fn chunk_extent(&self, index: &[u64]) -> Vec<usize> {
        index
            .iter()
            .zip(&self.chunk_shape)
            .zip(&self.shape)
            .map(|((&i, &c), &s)| s.saturating_sub(i * c as u64).min(c as u64) as usize)
            .collect()
    }
}
