//! Metadata documents: Zarr v2 `.zarray`/`.zgroup`/`.zattrs` and Zarr v3 `zarr.json` (N5's
//! `attributes.json` lives in [`crate::n5`]), parsed into one format-neutral description and written back in the form the reference writers
//! (zarr-python 2 and 3) produce.

use std::sync::Arc;

use neurochunk_codec::{ChunkRepr, CodecChain};
use neurochunk_dtype::json::{parse_lenient, to_python_json, PyJsonStyle};
use neurochunk_dtype::DataType;
use serde_json::{json, Map, Value};

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
}

impl ZarrFormat {
    /// The Zarr format number (2 or 3); 0 for N5, which has none.
    pub fn number(self) -> u8 {
        match self {
            ZarrFormat::V2 => 2,
            ZarrFormat::V3 => 3,
            ZarrFormat::N5 => 0,
        }
    }

    /// A short name for messages and listings: `zarr v2`, `zarr v3` or `n5`.
    pub fn label(self) -> &'static str {
        match self {
            ZarrFormat::V2 => "zarr v2",
            ZarrFormat::V3 => "zarr v3",
            ZarrFormat::N5 => "n5",
        }
    }
}

/// How a chunk's grid position becomes a store key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkKeyEncoding {
    /// `true` for the v3 `default` encoding (`c/1/2`), `false` for `v2` (`1.2`).
    pub c_prefix: bool,
    pub separator: char,
}

impl ChunkKeyEncoding {
    pub const V2_DOT: Self = ChunkKeyEncoding {
        c_prefix: false,
        separator: '.',
    };
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
    pub format: ZarrFormat,
    pub shape: Vec<u64>,
    /// The stored chunk shape (for a sharded array, the shard shape).
    pub chunk_shape: Vec<usize>,
    pub data_type: DataType,
    /// The fill value's element bytes; `None` is Zarr v2's `null` (read as zeros / empty).
    pub fill_value: Option<Vec<u8>>,
    pub key_encoding: ChunkKeyEncoding,
    pub codecs: Arc<CodecChain>,
    pub attributes: Map<String, Value>,
    pub dimension_names: Option<Vec<Option<String>>>,
}

/// Group metadata: its attributes and, when present, consolidated metadata of the subtree.
#[derive(Clone, Debug)]
pub struct GroupMetadata {
    pub format: ZarrFormat,
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
    Array(Box<ArrayMetadata>),
    Group(GroupMetadata),
}

/// The name of the metadata documents.
pub(crate) const ZARRAY: &str = ".zarray";
pub(crate) const ZGROUP: &str = ".zgroup";
pub(crate) const ZATTRS: &str = ".zattrs";
pub(crate) const ZMETADATA: &str = ".zmetadata";
pub(crate) const ZARR_JSON: &str = "zarr.json";

fn field<'a>(
    doc: &'a Map<String, Value>,
    key: &str,
    path: &str,
    file: &str,
) -> ArrayResult<&'a Value> {
    doc.get(key).ok_or_else(|| {
        ArrayError::metadata(path, format!("{file} is missing the required key '{key}'"))
    })
}

fn as_u64_list(value: &Value, key: &str, path: &str, file: &str) -> ArrayResult<Vec<u64>> {
    let err = || {
        ArrayError::metadata(
            path,
            format!("{file}: '{key}' must be a list of non-negative integers, found {value}"),
        )
    };
    value
        .as_array()
        .ok_or_else(err)?
        .iter()
        .map(|v| v.as_u64().ok_or_else(err))
        .collect()
}

fn chunk_shape_from(
    value: &Value,
    key: &str,
    path: &str,
    file: &str,
    rank: usize,
) -> ArrayResult<Vec<usize>> {
    let chunks = as_u64_list(value, key, path, file)?;
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
        .into_iter()
        .map(|c| {
            usize::try_from(c).map_err(|_| {
                ArrayError::metadata(path, format!("{file}: chunk size {c} too large"))
            })
        })
        .collect()
}

fn as_object<'a>(value: &'a Value, path: &str, file: &str) -> ArrayResult<&'a Map<String, Value>> {
    value
        .as_object()
        .ok_or_else(|| ArrayError::metadata(path, format!("{file} must be a JSON object")))
}

/// Parse a metadata document's bytes (lenient: bare NaN/Infinity are accepted).
pub(crate) fn parse_document(bytes: &[u8], path: &str, file: &str) -> ArrayResult<Value> {
    parse_lenient(bytes)
        .map_err(|e| ArrayError::metadata(path, format!("{file} is not valid JSON: {e}")))
}

impl ArrayMetadata {
    /// The representation of one stored chunk, as codecs see it.
    pub fn chunk_repr(&self) -> ChunkRepr {
        ChunkRepr {
            shape: self.chunk_shape.clone(),
            data_type: self.data_type.clone(),
            fill_value: self.effective_fill(),
        }
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
        let file = ZARRAY;
        let doc = as_object(doc, path, file)?;
        let format = field(doc, "zarr_format", path, file)?;
        if format.as_u64() != Some(2) {
            return Err(ArrayError::metadata(
                path,
                format!("{file}: zarr_format must be 2, found {format}"),
            ));
        }
        let shape = as_u64_list(field(doc, "shape", path, file)?, "shape", path, file)?;
        let chunk_shape = chunk_shape_from(
            field(doc, "chunks", path, file)?,
            "chunks",
            path,
            file,
            shape.len(),
        )?;
        let filters = match field(doc, "filters", path, file)? {
            Value::Null => None,
            Value::Array(list) if list.is_empty() => None,
            Value::Array(list) => Some(list.clone()),
            other => {
                return Err(ArrayError::metadata(
                    path,
                    format!("{file}: 'filters' must be a list or null, found {other}"),
                ))
            }
        };
        let object_codec = filters
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| f.get("id"))
            .and_then(Value::as_str);
        let (data_type, endian) =
            neurochunk_dtype::v2::dtype_from_json(field(doc, "dtype", path, file)?, object_codec)
                .map_err(|e| ArrayError::metadata(path, format!("{file}: dtype: {e}")))?;
        let compressor = match field(doc, "compressor", path, file)? {
            Value::Null => None,
            c @ Value::Object(_) => Some(c),
            other => {
                return Err(ArrayError::metadata(
                    path,
                    format!("{file}: 'compressor' must be an object or null, found {other}"),
                ))
            }
        };
        let order_f = match field(doc, "order", path, file)?.as_str() {
            Some("C") => false,
            Some("F") => true,
            _ => {
                return Err(ArrayError::metadata(
                    path,
                    format!("{file}: 'order' must be \"C\" or \"F\""),
                ))
            }
        };
        let separator = match doc.get("dimension_separator") {
            None | Some(Value::Null) => '.',
            Some(Value::String(s)) if s == "." => '.',
            Some(Value::String(s)) if s == "/" => '/',
            Some(other) => {
                return Err(ArrayError::metadata(
                    path,
                    format!("{file}: 'dimension_separator' must be \".\" or \"/\", found {other}"),
                ))
            }
        };
        let fill_value = neurochunk_dtype::v2::fill_value_from_v2_json(
            field(doc, "fill_value", path, file)?,
            &data_type,
        )
        .map_err(|e| ArrayError::metadata(path, format!("{file}: fill_value: {e}")))?;
        let repr = ChunkRepr {
            shape: chunk_shape.clone(),
            data_type: data_type.clone(),
            fill_value: fill_value.clone().unwrap_or_else(|| data_type.zero_fill()),
        };
        // A pickled structured array with object fields keeps its record layout in the
        // codec, so that it is written back as records under the same dtype.
        let filters = match (filters, doc.get("dtype")) {
            (Some(mut list), Some(dtype @ Value::Array(_)))
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
        let chain = CodecChain::from_v2(order_f, filters.as_deref(), compressor, endian, &repr)
            .map_err(|source| ArrayError::Codecs {
                path: crate::display_path(path),
                source,
            })?;
        Ok(ArrayMetadata {
            format: ZarrFormat::V2,
            shape,
            chunk_shape,
            data_type,
            fill_value,
            key_encoding: ChunkKeyEncoding {
                c_prefix: false,
                separator,
            },
            codecs: Arc::new(chain),
            attributes: attributes_from(attrs, path, ZATTRS)?,
            dimension_names: None,
        })
    }

    /// Parse a Zarr v3 array `zarr.json` document.
    pub fn from_v3(doc: &Value, path: &str) -> ArrayResult<Self> {
        let file = ZARR_JSON;
        let doc = as_object(doc, path, file)?;
        check_v3_header(doc, "array", path)?;
        let shape = as_u64_list(field(doc, "shape", path, file)?, "shape", path, file)?;
        let grid = field(doc, "chunk_grid", path, file)?;
        let (grid_name, grid_config) = extension_parts(grid, "chunk_grid", path)?;
        if grid_name != "regular" {
            return Err(ArrayError::metadata(
                path,
                format!("unsupported chunk grid '{grid_name}' (only 'regular' is supported)"),
            ));
        }
        let chunk_value = grid_config
            .and_then(|c| c.get("chunk_shape"))
            .ok_or_else(|| {
                ArrayError::metadata(path, "chunk_grid is missing configuration.chunk_shape")
            })?;
        let chunk_shape = chunk_shape_from(chunk_value, "chunk_shape", path, file, shape.len())?;
        let (kenc_name, kenc_config) = extension_parts(
            field(doc, "chunk_key_encoding", path, file)?,
            "chunk_key_encoding",
            path,
        )?;
        let c_prefix = match kenc_name {
            "default" => true,
            "v2" => false,
            other => {
                return Err(ArrayError::metadata(
                    path,
                    format!("unsupported chunk key encoding '{other}'"),
                ))
            }
        };
        let separator = match kenc_config.and_then(|c| c.get("separator")) {
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
        let data_type = DataType::from_v3_json(field(doc, "data_type", path, file)?)
            .map_err(|e| ArrayError::metadata(path, format!("data_type: {e}")))?;
        let fill_value = neurochunk_dtype::v3::fill_value_from_v3_json(
            field(doc, "fill_value", path, file)?,
            &data_type,
        )
        .map_err(|e| ArrayError::metadata(path, format!("fill_value: {e}")))?;
        if let Some(st) = doc.get("storage_transformers") {
            match st.as_array() {
                Some(list)
                    if list
                        .iter()
                        .all(|t| t.get("must_understand") == Some(&Value::Bool(false))) => {}
                _ => {
                    return Err(ArrayError::metadata(
                        path,
                        format!("unsupported storage transformers {st}"),
                    ))
                }
            }
        }
        for (key, value) in doc {
            let known = matches!(
                key.as_str(),
                "zarr_format"
                    | "node_type"
                    | "shape"
                    | "data_type"
                    | "chunk_grid"
                    | "chunk_key_encoding"
                    | "fill_value"
                    | "codecs"
                    | "attributes"
                    | "storage_transformers"
                    | "dimension_names"
            );
            if !known && value.get("must_understand") != Some(&Value::Bool(false)) {
                return Err(ArrayError::metadata(
                    path,
                    format!("unknown member '{key}' must be understood"),
                ));
            }
        }
        let dimension_names = match doc.get("dimension_names") {
            None | Some(Value::Null) => None,
            Some(Value::Array(names)) if names.len() == shape.len() => Some(
                names
                    .iter()
                    .map(|n| match n {
                        Value::String(s) => Ok(Some(s.clone())),
                        Value::Null => Ok(None),
                        other => Err(ArrayError::metadata(
                            path,
                            format!("dimension name must be a string or null, found {other}"),
                        )),
                    })
                    .collect::<ArrayResult<Vec<_>>>()?,
            ),
            Some(other) => {
                return Err(ArrayError::metadata(
                    path,
                    format!("dimension_names must list one name per dimension, found {other}"),
                ))
            }
        };
        let codecs_json = field(doc, "codecs", path, file)?
            .as_array()
            .ok_or_else(|| ArrayError::metadata(path, "'codecs' must be a list"))?;
        let repr = ChunkRepr {
            shape: chunk_shape.clone(),
            data_type: data_type.clone(),
            fill_value: fill_value.clone(),
        };
        let chain =
            CodecChain::from_v3_json(codecs_json, &repr).map_err(|source| ArrayError::Codecs {
                path: crate::display_path(path),
                source,
            })?;
        Ok(ArrayMetadata {
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
            attributes: attributes_from(doc.get("attributes"), path, file)?,
            dimension_names,
        })
    }

    /// The Zarr v2 `.zarray` document (attributes go to `.zattrs`), as zarr-python 2 writes it.
    pub fn to_v2_document(&self, path: &str) -> ArrayResult<Value> {
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
                filters.insert(0, json!({ "id": id }));
            }
        }
        let fill = match &self.fill_value {
            Some(bytes) => neurochunk_dtype::v2::fill_value_to_v2_json(bytes, &self.data_type),
            None => Value::Null,
        };
        let mut doc = Map::new();
        doc.insert("chunks".into(), json!(self.chunk_shape));
        doc.insert("compressor".into(), v2.compressor.unwrap_or(Value::Null));
        doc.insert(
            "dimension_separator".into(),
            json!(self.key_encoding.separator.to_string()),
        );
        doc.insert("dtype".into(), v2.dtype.clone().unwrap_or(dtype));
        doc.insert("fill_value".into(), fill);
        doc.insert(
            "filters".into(),
            if filters.is_empty() {
                Value::Null
            } else {
                Value::Array(filters)
            },
        );
        doc.insert("order".into(), json!(if v2.order_f { "F" } else { "C" }));
        doc.insert("shape".into(), json!(self.shape));
        doc.insert("zarr_format".into(), json!(2));
        Ok(Value::Object(doc))
    }

    /// The Zarr v3 `zarr.json` document, in zarr-python 3's key order.
    pub fn to_v3_document(&self, path: &str) -> ArrayResult<Value> {
        let data_type = self.data_type.to_v3_json().map_err(|e| {
            ArrayError::metadata(path, format!("data type has no Zarr v3 form: {e}"))
        })?;
        let fill =
            neurochunk_dtype::v3::fill_value_to_v3_json(&self.effective_fill(), &self.data_type);
        let kenc_name = if self.key_encoding.c_prefix {
            "default"
        } else {
            "v2"
        };
        let mut doc = Map::new();
        doc.insert("shape".into(), json!(self.shape));
        doc.insert("data_type".into(), data_type);
        doc.insert(
            "chunk_grid".into(),
            json!({"name": "regular", "configuration": {"chunk_shape": self.chunk_shape}}),
        );
        doc.insert(
            "chunk_key_encoding".into(),
            json!({"name": kenc_name, "configuration": {"separator": self.key_encoding.separator.to_string()}}),
        );
        doc.insert("fill_value".into(), fill);
        doc.insert("codecs".into(), Value::Array(self.codecs.to_v3_json()));
        doc.insert("attributes".into(), Value::Object(self.attributes.clone()));
        if let Some(names) = &self.dimension_names {
            doc.insert("dimension_names".into(), json!(names));
        }
        doc.insert("zarr_format".into(), json!(3));
        doc.insert("node_type".into(), json!("array"));
        doc.insert("storage_transformers".into(), json!([]));
        Ok(Value::Object(doc))
    }
}

impl GroupMetadata {
    /// Parse a Zarr v3 group `zarr.json`.
    pub fn from_v3(doc: &Value, path: &str) -> ArrayResult<Self> {
        let doc = as_object(doc, path, ZARR_JSON)?;
        check_v3_header(doc, "group", path)?;
        let consolidated = match doc.get("consolidated_metadata") {
            None | Some(Value::Null) => None,
            Some(cm) => Some(parse_v3_consolidated(cm, path)?),
        };
        Ok(GroupMetadata {
            format: ZarrFormat::V3,
            attributes: attributes_from(doc.get("attributes"), path, ZARR_JSON)?,
            consolidated,
        })
    }

    /// The Zarr v3 group document, in zarr-python 3's key order.
    pub fn to_v3_document(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("attributes".into(), Value::Object(self.attributes.clone()));
        doc.insert("zarr_format".into(), json!(3));
        doc.insert("node_type".into(), json!("group"));
        Value::Object(doc)
    }
}

fn check_v3_header(doc: &Map<String, Value>, expected: &str, path: &str) -> ArrayResult<()> {
    let format = field(doc, "zarr_format", path, ZARR_JSON)?;
    if format.as_u64() != Some(3) {
        return Err(ArrayError::metadata(
            path,
            format!("zarr.json: zarr_format must be 3, found {format}"),
        ));
    }
    let node_type = field(doc, "node_type", path, ZARR_JSON)?;
    if node_type.as_str() != Some(expected) {
        return Err(ArrayError::metadata(
            path,
            format!("zarr.json: node_type must be \"{expected}\", found {node_type}"),
        ));
    }
    Ok(())
}

/// Split an extension point (`"name"` or `{"name", "configuration"}`) into its parts.
fn extension_parts<'a>(
    value: &'a Value,
    what: &str,
    path: &str,
) -> ArrayResult<(&'a str, Option<&'a Map<String, Value>>)> {
    match value {
        Value::String(name) => Ok((name, None)),
        Value::Object(obj) => {
            let name = obj
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| ArrayError::metadata(path, format!("{what} is missing 'name'")))?;
            Ok((name, obj.get("configuration").and_then(Value::as_object)))
        }
        other => Err(ArrayError::metadata(
            path,
            format!("{what} must be a name or an object, found {other}"),
        )),
    }
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
    };
    to_python_json(doc, style).into_bytes()
}
