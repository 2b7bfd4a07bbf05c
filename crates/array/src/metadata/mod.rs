//! Metadata documents: Zarr v2 `.zarray`/`.zgroup`/`.zattrs` and Zarr v3 `zarr.json` (N5's
//! `attributes.json` lives in [`crate::n5`]).
//!
//! Each format has its own typed serde documents ([`v2`], [`v3`]); the runtime description
//! ([`ArrayMetadata`], [`GroupMetadata`]) is built from them and written back through them, in
//! the form the reference writers (zarr-python 2 and 3) produce. serde's errors become
//! metadata errors naming the file, the node and what is wrong.

use std::sync::Arc;

use neurochunk_codec::{ChunkRepr, CodecChain};
use neurochunk_dtype::json::{parse_lenient, to_python_json, PyJsonStyle};
use neurochunk_dtype::DataType;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub mod v2;
pub mod v3;

pub use v2::{ArrayDocumentV2, GroupDocumentV2, OrderV2};
pub use v3::{ArrayDocumentV3, GroupDocumentV3, MetadataEntryV3};

use crate::error::{ArrayError, ArrayResult};

/// Which on-disk format a node uses: Zarr v2, Zarr v3 or N5 (the name predates N5 support).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ZarrFormat {
    /// Zarr v2: `.zarray` / `.zgroup` / `.zattrs`.
    V2,
    /// Zarr v3: `zarr.json`.
    V3,
    /// N5 (filesystem spec 4.0.0): `attributes.json`, see [`crate::n5`].
    N5,
    /// Neuroglancer precomputed: a layer's `info`, its scales as arrays, see
    /// [`crate::precomputed`].
    Precomputed,
}

impl ZarrFormat {
    /// The Zarr format number (2 or 3); 0 for N5 and precomputed, which have none.
    pub fn number(self) -> u8 {
        match self {
            ZarrFormat::V2 => 2,
            ZarrFormat::V3 => 3,
            ZarrFormat::N5 | ZarrFormat::Precomputed => 0,
        }
    }

    /// A short name for messages and listings: `zarr v2`, `zarr v3`, `n5` or `precomputed`.
    pub fn label(self) -> &'static str {
        match self {
            ZarrFormat::V2 => "zarr v2",
            ZarrFormat::V3 => "zarr v3",
            ZarrFormat::N5 => "n5",
            ZarrFormat::Precomputed => "precomputed",
        }
    }
}

/// How a chunk's grid position becomes a store key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkKeyEncoding {
    /// `true` for the v3 `default` encoding (`c/1/2`), `false` for `v2` (`1.2`).
    pub c_prefix: bool,
    /// The separator between the indices (`.` or `/`).
    pub separator: char,
}

impl ChunkKeyEncoding {
    /// Zarr v2's default: `1.2`.
    pub const V2_DOT: Self = ChunkKeyEncoding {
        c_prefix: false,
        separator: '.',
    };
    /// Zarr v3's `default` encoding: `c/1/2`.
    pub const V3_DEFAULT: Self = ChunkKeyEncoding {
        c_prefix: true,
        separator: '/',
    };

    /// The key (relative to the array's prefix) of the chunk at `index`.
    pub fn key(&self, index: &[u64]) -> String {
        use std::fmt::Write;
        let mut key = String::with_capacity(4 + index.len() * 4);
        if self.c_prefix {
            key.push('c');
        } else if index.is_empty() {
            key.push('0');
        }
        for (i, x) in index.iter().enumerate() {
            if i > 0 || self.c_prefix {
                key.push(self.separator);
            }
            let _ = write!(key, "{x}");
        }
        key
    }

    /// The grid index of a chunk key of an array of `rank` dimensions, or `None` when `key`
    /// is not a chunk key of this encoding.
    pub fn parse(&self, key: &str, rank: usize) -> Option<Vec<u64>> {
        let body = if self.c_prefix {
            if rank == 0 {
                return (key == "c").then(Vec::new);
            }
            key.strip_prefix('c')?.strip_prefix(self.separator)?
        } else {
            if rank == 0 {
                return (key == "0").then(Vec::new);
            }
            key
        };
        let index: Vec<u64> = body
            .split(self.separator)
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        (index.len() == rank).then_some(index)
    }
}

/// A format-neutral description of an array.
#[derive(Clone, Debug)]
pub struct ArrayMetadata {
    /// The format the array is stored in.
    pub format: ZarrFormat,
    /// Extent per dimension (empty for a 0-d array).
    pub shape: Vec<u64>,
    /// The stored chunk shape (for a sharded array, the shard shape).
    pub chunk_shape: Vec<usize>,
    /// The element type.
    pub data_type: DataType,
    /// The fill value's element bytes; `None` is Zarr v2's `null` (read as zeros / empty).
    pub fill_value: Option<Vec<u8>>,
    /// How chunk grid positions become store keys.
    pub key_encoding: ChunkKeyEncoding,
    /// The codec chain every chunk goes through (Zarr v2's order, filters and compressor
    /// included; N5's block codec).
    pub codecs: Arc<CodecChain>,
    /// User attributes (format-reserved keys removed).
    pub attributes: Map<String, Value>,
    /// Dimension names (Zarr v3 `dimension_names`, tensorstore's N5 `axes`), when given.
    pub dimension_names: Option<Vec<Option<String>>>,
}

/// Group metadata: its attributes and, when present, consolidated metadata of the subtree.
#[derive(Clone, Debug)]
pub struct GroupMetadata {
    /// The format the group is stored in.
    pub format: ZarrFormat,
    /// User attributes.
    pub attributes: Map<String, Value>,
    /// Relative path (`a/b`) → that node's documents, from `.zmetadata` / `consolidated_metadata`.
    /// An entry that cannot be understood (e.g. an unknown codec) holds its error message, so
    /// that one bad node does not hide the others.
    pub consolidated: Option<Vec<ConsolidatedEntry>>,
}

/// One node of consolidated metadata: its path relative to the group, and its metadata or why
/// it could not be understood.
pub type ConsolidatedEntry = (String, Result<NodeMetadata, Arc<ArrayError>>);

/// Either kind of node.
#[derive(Clone, Debug)]
pub enum NodeMetadata {
    /// An array.
    Array(Box<ArrayMetadata>),
    /// A group.
    Group(GroupMetadata),
}

/// The name of the metadata documents.
pub(crate) const ZARRAY: &str = ".zarray";
pub(crate) const ZGROUP: &str = ".zgroup";
pub(crate) const ZATTRS: &str = ".zattrs";
pub(crate) const ZMETADATA: &str = ".zmetadata";
pub(crate) const ZARR_JSON: &str = "zarr.json";

/// Read a typed document from its JSON, mapping serde's errors to metadata errors that name
/// the file and the node (a missing member, or what a member must be).
pub(crate) fn typed_document<T: DeserializeOwned>(
    doc: &Value,
    path: &str,
    file: &str,
) -> ArrayResult<T> {
    if !doc.is_object() {
        return Err(ArrayError::metadata(
            path,
            format!("{file} must be a JSON object"),
        ));
    }
    T::deserialize(doc).map_err(|e| ArrayError::metadata(path, serde_message(&e, file)))
}

/// A serde error as a sentence naming the file.
fn serde_message(error: &serde_json::Error, file: &str) -> String {
    let message = error.to_string();
    match message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.strip_suffix('`'))
    {
        Some(key) => format!("{file} is missing the required key '{key}'"),
        None => format!("{file}: {message}"),
    }
}

/// A document as JSON (no document type fails to serialise; should one, the error names the
/// node rather than panicking).
fn document_json<T: Serialize>(doc: &T, path: &str, file: &str) -> ArrayResult<Value> {
    serde_json::to_value(doc)
        .map_err(|e| ArrayError::metadata(path, format!("{file} cannot be written: {e}")))
}

/// The chunk shape of a document, checked against the array's rank.
fn chunk_shape_from(
    chunks: &[u64],
    key: &str,
    path: &str,
    file: &str,
    rank: usize,
) -> ArrayResult<Vec<usize>> {
    if chunks.len() != rank {
        return Err(ArrayError::metadata(
            path,
            format!(
                "{file}: '{key}' has {} dimensions but the shape has {rank}",
                chunks.len()
            ),
        ));
    }
    if chunks.contains(&0) {
        return Err(ArrayError::metadata(
            path,
            format!("{file}: '{key}' has a zero-length chunk dimension"),
        ));
    }
    chunks
        .iter()
        .map(|&c| {
            usize::try_from(c).map_err(|_| {
                ArrayError::metadata(path, format!("{file}: chunk size {c} too large"))
            })
        })
        .collect()
}

/// Parse a metadata document's bytes (lenient: bare NaN/Infinity are accepted).
pub(crate) fn parse_document(bytes: &[u8], path: &str, file: &str) -> ArrayResult<Value> {
    parse_lenient(bytes)
        .map_err(|e| ArrayError::metadata(path, format!("{file} is not valid JSON: {e}")))
}

impl ArrayMetadata {
    /// For a ragged array (numcodecs `vlen-array`, every element a one-dimensional array of
    /// numbers): the type of those numbers. Such an array's data type is variable-length
    /// bytes, each element holding its numbers little-endian; [`crate::Array::read_ragged`]
    /// returns them as numbers and offsets.
    pub fn ragged_element_type(&self) -> Option<DataType> {
        self.codecs
            .serializer::<neurochunk_codec::VlenArrayCodec>()
            .map(neurochunk_codec::VlenArrayCodec::element_type)
    }

    /// The representation of one stored chunk, as codecs see it.
    pub fn chunk_repr(&self) -> ChunkRepr {
        ChunkRepr {
            shape: self.chunk_shape.clone(),
            data_type: self.data_type.clone(),
            fill_value: self.effective_fill(),
        }
    }

    /// `self`, when its sizes can be computed: the element count and byte size of the array
    /// fit in 64 bits, and those of one chunk in memory addresses. A document declaring, say,
    /// a shape of 2^63 by 4 is refused here, naming the node, rather than overflowing later.
    pub(crate) fn checked(self, path: &str) -> ArrayResult<Self> {
        let element = self.data_type.fixed_size().unwrap_or(1).max(1);
        let too_large = |what: &str, shape: String| {
            ArrayError::metadata(
                path,
                format!("the {what} {shape} holds more elements or bytes than 64 bits can count"),
            )
        };
        let array_bytes = self
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(element as u64));
        if array_bytes.is_none() {
            return Err(too_large("shape", format!("{:?}", self.shape)));
        }
        let chunk_bytes = self
            .chunk_shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(element));
        if chunk_bytes.is_none_or(|b| b > isize::MAX as usize) {
            return Err(too_large("chunk shape", format!("{:?}", self.chunk_shape)));
        }
        Ok(self)
    }

    /// The fill value bytes used for missing chunks (zeros when the v2 fill value is null).
    pub fn effective_fill(&self) -> Vec<u8> {
        match &self.fill_value {
            Some(f) => f.clone(),
            None => self.data_type.zero_fill(),
        }
    }

    /// Replace the array→bytes codec, when it is a `T`, by `f` of it (see
    /// [`CodecChain::map_serializer`]); returns whether it was a `T`.
    pub fn map_serializer<T: neurochunk_codec::ArrayToBytesCodec + Clone>(
        &mut self,
        f: impl FnOnce(T) -> T,
    ) -> bool {
        match self.codecs.map_serializer(f) {
            Some(chain) => {
                self.codecs = Arc::new(chain);
                true
            }
            None => false,
        }
    }

    /// Number of chunks along each axis.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunk_shape)
            .map(|(&s, &c)| s.div_ceil(c as u64))
            .collect()
    }

    /// Parse a Zarr v2 `.zarray` document (with `.zattrs` when given).
    pub fn from_v2(doc: &Value, attrs: Option<&Value>, path: &str) -> ArrayResult<Self> {
        check_format(doc, ZARRAY, 2, path)?;
        let document: ArrayDocumentV2 = typed_document(doc, path, ZARRAY)?;
        let attributes = attributes_from(attrs, path, ZATTRS)?;
        Self::from_v2_document(&document, attributes, path)
    }

    /// The description of a Zarr v2 array from its `.zarray` document and attributes.
    pub fn from_v2_document(
        doc: &ArrayDocumentV2,
        attributes: Map<String, Value>,
        path: &str,
    ) -> ArrayResult<Self> {
        let file = ZARRAY;
        if doc.zarr_format != 2 {
            return Err(ArrayError::metadata(
                path,
                format!("{file}: zarr_format must be 2, found {}", doc.zarr_format),
            ));
        }
        let shape = doc.shape.clone();
        let chunk_shape = chunk_shape_from(&doc.chunks, "chunks", path, file, shape.len())?;
        let filters = doc.filters.clone().filter(|list| !list.is_empty());
        let object_codec = filters
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| f.get("id"))
            .and_then(Value::as_str);
        let (data_type, endian) =
            neurochunk_dtype::v2::dtype_from_json(&doc.dtype, object_codec)
                .map_err(|e| ArrayError::metadata(path, format!("{file}: dtype: {e}")))?;
        let fill_value = neurochunk_dtype::v2::fill_value_from_v2_json(&doc.fill_value, &data_type)
            .map_err(|e| ArrayError::metadata(path, format!("{file}: fill_value: {e}")))?;
        let repr = ChunkRepr {
            shape: chunk_shape.clone(),
            data_type: data_type.clone(),
            fill_value: fill_value.clone().unwrap_or_else(|| data_type.zero_fill()),
        };
        // A pickled structured array with object fields keeps its record layout in the
        // codec, so that it is written back as records under the same dtype.
        let filters = match (filters, &doc.dtype) {
            (Some(mut list), dtype @ Value::Array(_))
                if list
                    .first()
                    .and_then(|f| f.get("id"))
                    .and_then(Value::as_str)
                    == Some(neurochunk_dtype::v2::PICKLE) =>
            {
                if let Some(Value::Object(first)) = list.first_mut() {
                    first.insert(neurochunk_codec::PICKLE_RECORD_KEY.into(), dtype.clone());
                }
                Some(list)
            }
            (filters, _) => filters,
        };
        let chain = CodecChain::from_v2(
            doc.order == OrderV2::F,
            filters.as_deref(),
            doc.compressor.as_ref(),
            endian,
            &repr,
        )
        .map_err(|source| ArrayError::Codecs {
            path: crate::display_path(path),
            source,
        })?;
        ArrayMetadata {
            format: ZarrFormat::V2,
            shape,
            chunk_shape,
            data_type,
            fill_value,
            key_encoding: ChunkKeyEncoding {
                c_prefix: false,
                separator: doc.dimension_separator.unwrap_or('.'),
            },
            codecs: Arc::new(chain),
            attributes,
            dimension_names: None,
        }
        .checked(path)
    }

    /// Parse a Zarr v3 array `zarr.json` document.
    pub fn from_v3(doc: &Value, path: &str) -> ArrayResult<Self> {
        check_v3_header(doc, "array", path)?;
        let document: ArrayDocumentV3 = typed_document(doc, path, ZARR_JSON)?;
        Self::from_v3_document(&document, path)
    }

    /// The description of a Zarr v3 array from its `zarr.json` document.
    pub fn from_v3_document(doc: &ArrayDocumentV3, path: &str) -> ArrayResult<Self> {
        let file = ZARR_JSON;
        if doc.zarr_format != 3 {
            return Err(ArrayError::metadata(
                path,
                format!(
                    "zarr.json: zarr_format must be 3, found {}",
                    doc.zarr_format
                ),
            ));
        }
        if doc.node_type != "array" {
            return Err(ArrayError::metadata(
                path,
                format!(
                    "zarr.json: node_type must be \"array\", found {}",
                    Value::String(doc.node_type.clone())
                ),
            ));
        }
        let shape = doc.shape.clone();
        let grid = &doc.chunk_grid;
        if grid.name != "regular" {
            return Err(ArrayError::metadata(
                path,
                format!(
                    "unsupported chunk grid '{}' (only 'regular' is supported)",
                    grid.name
                ),
            ));
        }
        let chunk_value = grid
            .configuration_object()
            .and_then(|c| c.get("chunk_shape"))
            .ok_or_else(|| {
                ArrayError::metadata(path, "chunk_grid is missing configuration.chunk_shape")
            })?;
        let chunks: Vec<u64> = Vec::<u64>::deserialize(chunk_value).map_err(|_| {
            ArrayError::metadata(
                path,
                format!(
                    "{file}: 'chunk_shape' must be a list of non-negative integers, found {chunk_value}"
                ),
            )
        })?;
        let chunk_shape = chunk_shape_from(&chunks, "chunk_shape", path, file, shape.len())?;
        let kenc = &doc.chunk_key_encoding;
        let c_prefix = match kenc.name.as_str() {
            "default" => true,
            "v2" => false,
            other => {
                return Err(ArrayError::metadata(
                    path,
                    format!("unsupported chunk key encoding '{other}'"),
                ))
            }
        };
        let separator = match kenc.configuration_object().and_then(|c| c.get("separator")) {
            None => {
                if c_prefix {
                    '/'
                } else {
                    '.'
                }
            }
            Some(Value::String(s)) if s == "/" => '/',
            Some(Value::String(s)) if s == "." => '.',
            Some(other) => {
                return Err(ArrayError::metadata(
                    path,
                    format!("invalid chunk key separator {other}"),
                ))
            }
        };
        let data_type = DataType::from_v3_json(&doc.data_type)
            .map_err(|e| ArrayError::metadata(path, format!("data_type: {e}")))?;
        let fill_value = neurochunk_dtype::v3::fill_value_from_v3_json(&doc.fill_value, &data_type)
            .map_err(|e| ArrayError::metadata(path, format!("fill_value: {e}")))?;
        if !doc
            .storage_transformers
            .iter()
            .all(MetadataEntryV3::may_be_ignored)
        {
            let list: Vec<Value> = doc
                .storage_transformers
                .iter()
                .map(MetadataEntryV3::to_json)
                .collect();
            return Err(ArrayError::metadata(
                path,
                format!("unsupported storage transformers {}", Value::Array(list)),
            ));
        }
        for (key, value) in &doc.extra {
            if value.get("must_understand") != Some(&Value::Bool(false)) {
                return Err(ArrayError::metadata(
                    path,
                    format!("unknown member '{key}' must be understood"),
                ));
            }
        }
        let dimension_names = match &doc.dimension_names {
            Some(names) if names.len() != shape.len() => {
                return Err(ArrayError::metadata(
                    path,
                    format!(
                        "dimension_names must list one name per dimension, found {}",
                        serde_json::json!(names)
                    ),
                ))
            }
            other => other.clone(),
        };
        let codecs_json: Vec<Value> = doc.codecs.iter().map(MetadataEntryV3::to_json).collect();
        let repr = ChunkRepr {
            shape: chunk_shape.clone(),
            data_type: data_type.clone(),
            fill_value: fill_value.clone(),
        };
        let chain =
            CodecChain::from_v3_json(&codecs_json, &repr).map_err(|source| ArrayError::Codecs {
                path: crate::display_path(path),
                source,
            })?;
        ArrayMetadata {
            format: ZarrFormat::V3,
            shape,
            chunk_shape,
            data_type,
            fill_value: Some(fill_value),
            key_encoding: ChunkKeyEncoding {
                c_prefix,
                separator,
            },
            codecs: Arc::new(chain),
            attributes: doc.attributes.clone(),
            dimension_names,
        }
        .checked(path)
    }

    /// The Zarr v2 `.zarray` document (attributes go to `.zattrs`), as zarr-python 2 writes it.
    pub fn to_v2_document(&self, path: &str) -> ArrayResult<Value> {
        document_json(&self.v2_document(path)?, path, ZARRAY)
    }

    /// The typed Zarr v2 `.zarray` document of this array (attributes go to `.zattrs`).
    pub fn v2_document(&self, path: &str) -> ArrayResult<ArrayDocumentV2> {
        let v2 = self.codecs.to_v2().map_err(|source| ArrayError::Codecs {
            path: crate::display_path(path),
            source,
        })?;
        let neurochunk_dtype::v2::V2Dtype {
            dtype,
            object_codec_id: object_codec,
        } = neurochunk_dtype::v2::dtype_to_json(
            &self.data_type,
            v2.endian.unwrap_or(neurochunk_dtype::Endian::Little),
        )
        .map_err(|e| ArrayError::metadata(path, format!("data type has no Zarr v2 form: {e}")))?;
        let mut filters = v2.filters.unwrap_or_default();
        if let Some(id) = object_codec {
            if !filters.iter().any(|f| {
                f.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|f| f == id || neurochunk_dtype::v2::is_object_codec_id(f))
            }) {
                filters.insert(0, serde_json::json!({ "id": id }));
            }
        }
        let fill_value = match &self.fill_value {
            Some(bytes) => neurochunk_dtype::v2::fill_value_to_v2_json(bytes, &self.data_type),
            None => Value::Null,
        };
        Ok(ArrayDocumentV2 {
            chunks: self.chunk_shape.iter().map(|&c| c as u64).collect(),
            compressor: v2.compressor,
            dimension_separator: Some(self.key_encoding.separator),
            dtype: v2.dtype.clone().unwrap_or(dtype),
            fill_value,
            filters: (!filters.is_empty()).then_some(filters),
            order: if v2.order_f { OrderV2::F } else { OrderV2::C },
            shape: self.shape.clone(),
            zarr_format: 2,
        })
    }

    /// The Zarr v3 `zarr.json` document, in zarr-python 3's key order.
    pub fn to_v3_document(&self, path: &str) -> ArrayResult<Value> {
        document_json(&self.v3_document(path)?, path, ZARR_JSON)
    }

    /// The typed Zarr v3 `zarr.json` document of this array.
    pub fn v3_document(&self, path: &str) -> ArrayResult<ArrayDocumentV3> {
        let data_type = self.data_type.to_v3_json().map_err(|e| {
            ArrayError::metadata(path, format!("data type has no Zarr v3 form: {e}"))
        })?;
        let fill_value =
            neurochunk_dtype::v3::fill_value_to_v3_json(&self.effective_fill(), &self.data_type);
        let kenc_name = if self.key_encoding.c_prefix {
            "default"
        } else {
            "v2"
        };
        let codecs = self
            .codecs
            .to_v3_json()
            .iter()
            .map(|c| {
                MetadataEntryV3::from_json(c)
                    .map_err(|e| ArrayError::metadata(path, format!("codec {e}: {c}")))
            })
            .collect::<ArrayResult<Vec<_>>>()?;
        Ok(ArrayDocumentV3 {
            shape: self.shape.clone(),
            data_type,
            chunk_grid: MetadataEntryV3::new(
                "regular",
                Some(serde_json::json!({"chunk_shape": self.chunk_shape})),
            ),
            chunk_key_encoding: MetadataEntryV3::new(
                kenc_name,
                Some(serde_json::json!({"separator": self.key_encoding.separator.to_string()})),
            ),
            fill_value,
            codecs,
            attributes: self.attributes.clone(),
            dimension_names: self.dimension_names.clone(),
            zarr_format: 3,
            node_type: "array".into(),
            storage_transformers: Vec::new(),
            extra: Map::new(),
        })
    }
}

impl GroupMetadata {
    /// Parse a Zarr v3 group `zarr.json`.
    pub fn from_v3(doc: &Value, path: &str) -> ArrayResult<Self> {
        check_v3_header(doc, "group", path)?;
        let document: GroupDocumentV3 = typed_document(doc, path, ZARR_JSON)?;
        Self::from_v3_document(&document, path)
    }

    /// The description of a Zarr v3 group from its `zarr.json` document.
    pub fn from_v3_document(doc: &GroupDocumentV3, path: &str) -> ArrayResult<Self> {
        let consolidated = match &doc.consolidated_metadata {
            None => None,
            Some(cm) => Some(parse_v3_consolidated(cm, path)?),
        };
        Ok(GroupMetadata {
            format: ZarrFormat::V3,
            attributes: doc.attributes.clone(),
            consolidated,
        })
    }

    /// The Zarr v3 group document, in zarr-python 3's key order.
    pub fn to_v3_document(&self) -> Value {
        let doc = self.v3_document();
        let mut out = Map::new();
        out.insert("attributes".into(), Value::Object(doc.attributes));
        out.insert("zarr_format".into(), Value::from(doc.zarr_format));
        out.insert("node_type".into(), Value::String(doc.node_type));
        Value::Object(out)
    }

    /// The typed Zarr v3 group document (without consolidated metadata).
    pub fn v3_document(&self) -> GroupDocumentV3 {
        GroupDocumentV3 {
            attributes: self.attributes.clone(),
            zarr_format: 3,
            node_type: "group".into(),
            consolidated_metadata: None,
            extra: Map::new(),
        }
    }
}

/// Check the format number of a document before reading it as that format's type, so that a
/// document of another version is named as such rather than by its first odd member.
fn check_format(doc: &Value, file: &str, expected: u64, path: &str) -> ArrayResult<()> {
    let Some(map) = doc.as_object() else {
        return Err(ArrayError::metadata(
            path,
            format!("{file} must be a JSON object"),
        ));
    };
    let format = map.get("zarr_format").ok_or_else(|| {
        ArrayError::metadata(
            path,
            format!("{file} is missing the required key 'zarr_format'"),
        )
    })?;
    if format.as_u64() != Some(expected) {
        return Err(ArrayError::metadata(
            path,
            format!("{file}: zarr_format must be {expected}, found {format}"),
        ));
    }
    Ok(())
}

fn check_v3_header(doc: &Value, expected: &str, path: &str) -> ArrayResult<()> {
    check_format(doc, ZARR_JSON, 3, path)?;
    let node_type = doc.get("node_type").ok_or_else(|| {
        ArrayError::metadata(
            path,
            format!("{ZARR_JSON} is missing the required key 'node_type'"),
        )
    })?;
    if node_type.as_str() != Some(expected) {
        return Err(ArrayError::metadata(
            path,
            format!("zarr.json: node_type must be \"{expected}\", found {node_type}"),
        ));
    }
    Ok(())
}

fn attributes_from(
    value: Option<&Value>,
    path: &str,
    file: &str,
) -> ArrayResult<Map<String, Value>> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map.clone()),
        Some(other) => Err(ArrayError::metadata(
            path,
            format!("{file}: attributes must be a JSON object, found {other}"),
        )),
    }
}

fn parse_v3_consolidated(value: &Value, path: &str) -> ArrayResult<Vec<ConsolidatedEntry>> {
    let metadata = value
        .get("metadata")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ArrayError::metadata(
                path,
                "consolidated_metadata is missing its 'metadata' object",
            )
        })?;
    let mut nodes = Vec::with_capacity(metadata.len());
    for (rel, doc) in metadata {
        let full = crate::hierarchy::child_path(path, rel);
        let node = match doc.get("node_type").and_then(Value::as_str) {
            Some("array") => {
                ArrayMetadata::from_v3(doc, &full).map(|meta| NodeMetadata::Array(Box::new(meta)))
            }
            Some("group") => GroupMetadata::from_v3(doc, &full).map(|mut group| {
                group.consolidated = None;
                NodeMetadata::Group(group)
            }),
            _ => Err(ArrayError::metadata(
                &full,
                "consolidated entry has no valid node_type",
            )),
        };
        nodes.push((rel.clone(), node.map_err(Arc::new)));
    }
    Ok(nodes)
}

/// Parse a v2 `.zmetadata` document into node metadata keyed by relative path.
pub(crate) fn parse_v2_consolidated(
    doc: &Value,
    path: &str,
) -> ArrayResult<Vec<ConsolidatedEntry>> {
    let metadata = doc
        .get("metadata")
        .and_then(Value::as_object)
        .ok_or_else(|| ArrayError::metadata(path, ".zmetadata is missing its 'metadata' object"))?;
    let mut nodes = Vec::new();
    for (key, value) in metadata {
        let (rel, kind) = match key.rsplit_once('/') {
            Some((rel, name)) => (rel, name),
            None => ("", key.as_str()),
        };
        let full = crate::hierarchy::child_path(path, rel);
        let attrs_key = if rel.is_empty() {
            ZATTRS.to_string()
        } else {
            format!("{rel}/{ZATTRS}")
        };
        let attrs = metadata.get(&attrs_key);
        let node = match kind {
            ZARRAY => ArrayMetadata::from_v2(value, attrs, &full)
                .map(|meta| NodeMetadata::Array(Box::new(meta))),
            ZGROUP => attributes_from(attrs, &full, ZATTRS).map(|attributes| {
                NodeMetadata::Group(GroupMetadata {
                    format: ZarrFormat::V2,
                    attributes,
                    consolidated: None,
                })
            }),
            _ => continue,
        };
        nodes.push((rel.to_string(), node.map_err(Arc::new)));
    }
    Ok(nodes)
}

/// Serialise a metadata document the way the given format's reference writer does.
pub(crate) fn document_bytes(doc: &Value, format: ZarrFormat) -> Vec<u8> {
    let style = match format {
        ZarrFormat::V2 => PyJsonStyle::ZARR_PYTHON2,
        ZarrFormat::V3 => PyJsonStyle::ZARR_PYTHON3,
        ZarrFormat::N5 => return crate::n5::document_bytes(doc),
        ZarrFormat::Precomputed => return serde_json::to_vec(doc).unwrap_or_default(),
    };
    to_python_json(doc, style).into_bytes()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn v2_doc() -> Value {
        json!({"chunks": [2], "compressor": null, "dtype": "<u2", "fill_value": 0,
               "filters": null, "order": "C", "shape": [4], "zarr_format": 2})
    }

    fn v3_doc() -> Value {
        json!({"shape": [4], "data_type": "uint16",
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
               "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
               "fill_value": 0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
               "attributes": {"a": 1}, "zarr_format": 3, "node_type": "array",
               "storage_transformers": []})
    }

    fn message(result: ArrayResult<ArrayMetadata>) -> String {
        result.expect_err("must fail").to_string()
    }

    #[test]
    fn sizes_that_overflow_are_refused_naming_the_node() {
        let big = 1u64 << 63;
        let mut v2 = v2_doc();
        v2["shape"] = json!([big, 4]);
        v2["chunks"] = json!([1, 4]);
        let text = message(ArrayMetadata::from_v2(&v2, None, "a/b"));
        assert!(
            text.contains("a/b") && text.contains("shape [9223372036854775808, 4]"),
            "{text}"
        );
        let mut v2 = v2_doc();
        v2["chunks"] = json!([big]);
        let text = message(ArrayMetadata::from_v2(&v2, None, "a/b"));
        assert!(text.contains("chunk shape"), "{text}");
        let mut v3 = v3_doc();
        v3["shape"] = json!([big, big]);
        v3["chunk_grid"]["configuration"]["chunk_shape"] = json!([1, 1]);
        let text = message(ArrayMetadata::from_v3(&v3, "c"));
        assert!(
            text.contains("more elements or bytes than 64 bits"),
            "{text}"
        );
        let n5 = json!({"dimensions": [big, 2], "blockSize": [1, 1], "dataType": "uint8",
                        "compression": {"type": "raw"}});
        let err = crate::n5::parse_node(&n5, "d", crate::N5AxisOrder::Listed)
            .expect_err("must fail")
            .to_string();
        assert!(err.contains("'/d'"), "{err}");
        assert!(err.contains("64 bits"), "{err}");
        // The largest array that fits is fine.
        let mut v2 = v2_doc();
        v2["shape"] = json!([big / 2 - 1]);
        assert!(ArrayMetadata::from_v2(&v2, None, "ok").is_ok());
    }

    #[test]
    fn documents_round_trip_through_their_types() {
        let meta = ArrayMetadata::from_v2(&v2_doc(), None, "a").unwrap();
        let written = meta.to_v2_document("a").unwrap();
        let mut expected = v2_doc();
        expected["dimension_separator"] = json!(".");
        assert_eq!(written, expected);
        let meta = ArrayMetadata::from_v3(&v3_doc(), "b").unwrap();
        assert_eq!(meta.to_v3_document("b").unwrap(), v3_doc());
        let typed: ArrayDocumentV3 = serde_json::from_value(v3_doc()).unwrap();
        assert_eq!(typed.codecs[0].name, "bytes");
        assert!(typed.extra.is_empty());
    }

    #[test]
    fn errors_name_the_file_the_node_and_the_member() {
        let mut doc = v2_doc();
        doc.as_object_mut().unwrap().remove("fill_value");
        let m = message(ArrayMetadata::from_v2(&doc, None, "g/x"));
        assert!(
            m.contains("/g/x") && m.contains(".zarray is missing the required key 'fill_value'"),
            "{m}"
        );
        let mut doc = v2_doc();
        doc["shape"] = json!("big");
        let m = message(ArrayMetadata::from_v2(&doc, None, "x"));
        assert!(
            m.contains(".zarray: 'shape' must be a list of non-negative integers, found \"big\""),
            "{m}"
        );
        let mut doc = v2_doc();
        doc["order"] = json!("K");
        let m = message(ArrayMetadata::from_v2(&doc, None, "x"));
        assert!(m.contains("'order' must be \"C\" or \"F\""), "{m}");
        let m = message(ArrayMetadata::from_v2(&json!([1, 2]), None, "x"));
        assert!(m.contains(".zarray must be a JSON object"), "{m}");

        let mut doc = v3_doc();
        doc["codecs"] = json!({"name": "bytes"});
        let m = message(ArrayMetadata::from_v3(&doc, "y"));
        assert!(m.contains("zarr.json: 'codecs' must be a list"), "{m}");
        let mut doc = v3_doc();
        doc["chunk_grid"] = json!(7);
        let m = message(ArrayMetadata::from_v3(&doc, "y"));
        assert!(
            m.contains("chunk_grid must be a name or an object, found 7"),
            "{m}"
        );
        let mut doc = v3_doc();
        doc["dimension_names"] = json!(["t", 3]);
        let m = message(ArrayMetadata::from_v3(&doc, "y"));
        assert!(
            m.contains("dimension name must be a string or null, found 3"),
            "{m}"
        );
        let mut doc = v3_doc();
        doc["zarr_format"] = json!(2);
        let m = message(ArrayMetadata::from_v3(&doc, "y"));
        assert!(m.contains("zarr_format must be 3, found 2"), "{m}");
    }

    #[test]
    fn unknown_members_and_transformers_honour_must_understand() {
        let mut doc = v3_doc();
        doc["future"] = json!({"must_understand": false, "x": 1});
        doc["storage_transformers"] = json!([{"name": "t", "must_understand": false}]);
        let meta = ArrayMetadata::from_v3(&doc, "z").unwrap();
        assert_eq!(meta.shape, vec![4]);
        let mut doc = v3_doc();
        doc["future"] = json!({"x": 1});
        let m = message(ArrayMetadata::from_v3(&doc, "z"));
        assert!(
            m.contains("unknown member 'future' must be understood"),
            "{m}"
        );
        let mut doc = v3_doc();
        doc["storage_transformers"] = json!([{"name": "t"}]);
        let m = message(ArrayMetadata::from_v3(&doc, "z"));
        assert!(m.contains("unsupported storage transformers"), "{m}");
    }
}
