//! Writing an NWB file in either convention: typed groups and datasets, links, references in
//! attributes and datasets (object and region), compounds, cached specifications, and
//! consolidated metadata at the end of the session.
//!
//! [`NwbWriter::create_in`] writes a file under a prefix of any [`Store`].
//! [`NwbWriter::create`] (the filesystem convenience, see [`crate::fs`]) writes into a hidden
//! sibling directory that [`NwbWriter::finish`] publishes in place of the destination, so
//! readers never see a half-written file.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use neurochunk_array::convert::{convert_array, ConvertOptions};
use neurochunk_array::{consolidate, create_group, Array, ArrayBuilder, DataType};
use neurochunk_codec::{ArrayBytes, Codec};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_dtype::Endian;
use neurochunk_pickle::{encode_object_array, RecordField, RecordKind};
use neurochunk_store::{PrefixStore, Store};
use serde_json::{json, Map, Value};

use crate::convention::{
    numeric_type_name, Convention, ARRAY_DIMENSIONS, LEGACY_DTYPE, SPECLOC, V3_DTYPE,
    V3_REFERENCE_FIELDS,
};
use crate::error::{HdmfError, HdmfResult};
use crate::file::{AttributeValue, FileLocation};
use crate::index::{split_parent, store_key};
use crate::reference::Reference;
use crate::values::{compound_to_structured, Dataset, DatasetValue, FieldKind, FieldValue};

/// The data type of a typed object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeInfo {
    /// The type's name (`neurodata_type`).
    pub neurodata_type: String,
    /// The namespace defining it.
    pub namespace: String,
    /// `None`: a new UUID4 is generated.
    pub object_id: Option<String>,
}

impl TypeInfo {
    /// A type from `namespace` with a fresh object id.
    pub fn new(namespace: &str, neurodata_type: &str) -> Self {
        TypeInfo {
            neurodata_type: neurodata_type.into(),
            namespace: namespace.into(),
            object_id: None,
        }
    }
}

/// How datasets are stored.
#[derive(Clone, Debug, Default)]
pub struct DatasetOptions {
    /// Chunk shape (default: one chunk up to about 1 MiB, else halved per axis in turn).
    pub chunks: Option<Vec<usize>>,
    /// Dimension names written as `_ARRAY_DIMENSIONS`.
    pub dims: Option<Vec<String>>,
}

/// How [`NwbWriter::copy_array`] lays out the copy: `None` keeps the source's.
#[derive(Clone, Debug, Default)]
pub struct CopyLayout {
    /// The chunk shape.
    pub chunks: Option<Vec<usize>>,
    /// The bytes→bytes codecs (compressions).
    pub compressors: Option<Vec<neurochunk_codec::Codec>>,
}

/// Options of a write session.
#[derive(Clone, Debug, Default)]
pub struct WriteOptions {
    /// Compressions of numeric datasets (e.g. `vec![Codec::zstd(3)]`); default Blosc/LZ4
    /// (legacy) or Zstandard level 0 (v3), as hdmf-zarr writes.
    pub compressors: Option<Vec<neurochunk_codec::Codec>>,
    /// How durable a file written by [`NwbWriter::create`] is when [`NwbWriter::finish`]
    /// returns: with [`Durability::Fsync`](neurochunk_store::Durability::Fsync) every file is
    /// synced before it is renamed into place and its directory after, and the directory
    /// holding the file after it is published. (For [`NwbWriter::create_at`], the store's own
    /// durability applies.)
    pub durability: neurochunk_store::Durability,
    /// What an existing file at the destination of [`NwbWriter::create`] may be to be
    /// replaced: by default ([`Overwrite::Own`](neurochunk_store::replace::Overwrite::Own))
    /// only a Zarr tree (an earlier NWB file, any Zarr or N5 node), never a directory holding
    /// anything else ([`NodeTree`](neurochunk_array::NodeTree) says what belongs to one).
    pub overwrite: neurochunk_store::replace::Overwrite,
}

/// How a dataset's elements are stored: the array's shape and data type, the array→bytes
/// codec, and whether the session's compressors apply (numeric datasets).
struct StoredArray<'a> {
    shape: &'a [usize],
    data_type: DataType,
    serializer: Codec,
    compressible: bool,
}

/// A namespace to cache: its name, version, and documents (`namespace` plus one per schema
/// source, each a JSON value).
#[derive(Clone, Debug, PartialEq)]
pub struct NamespaceDocs {
    /// The namespace's name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// (document name, document) pairs, the `namespace` document first.
    pub documents: Vec<(String, Value)>,
}

/// A write session; call [`NwbWriter::finish`] to publish the file.
#[derive(Debug)]
pub struct NwbWriter {
    /// The file's display name, for errors.
    name: String,
    /// The store seen from the file's root.
    store: Arc<dyn Store>,
    /// How the file is published and abandoned when it was staged aside (filesystem).
    staging: Option<Staging>,
    /// For a store that pays a round trip per request (a remote one): the same store as
    /// `store`, which gathers the writes and answers reads of the new file from memory;
    /// flushed by [`NwbWriter::finish`].
    new_tree: Option<Arc<neurochunk_store::NewTreeStore>>,
    convention: Convention,
    options: WriteOptions,
    groups: BTreeMap<String, Map<String, Value>>,
    links: BTreeMap<String, Vec<(String, String, String)>>,
    datasets: BTreeSet<String>,
    finished: bool,
    /// Write consolidated metadata at [`NwbWriter::finish`].
    consolidated: bool,
}

/// A file written aside: what [`NwbWriter::finish`] does to put it in place, and what dropping
/// an unfinished writer does to clean up.
pub(crate) struct Staging {
    /// Called once the file is complete.
    pub publish: Box<dyn FnOnce() -> HdmfResult<()> + Send + Sync>,
    /// Called when the writer is dropped unfinished (or publishing failed).
    pub abandon: Box<dyn FnOnce() + Send + Sync>,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Staging")
    }
}

/// Elements per chunk aimed at (bytes), as zarr-python's chunk guess does.
const TARGET_CHUNK_BYTES: usize = 1 << 20;
/// Minimum characters of v3 compound text fields (hdmf-zarr's constant).
const V3_MIN_COMPOUND_CHARS: usize = 512;

impl NwbWriter {
    /// Start writing a file whose root is `prefix` in `store` (`""`: the whole store), named by
    /// its prefix in errors. The prefix must hold nothing yet; the keys are written as the
    /// session goes, and dropping the writer unfinished removes them.
    pub fn create_in(
        store: Arc<dyn Store>,
        prefix: &str,
        convention: Convention,
        options: WriteOptions,
    ) -> HdmfResult<Self> {
        Self::create_at(FileLocation::new(store, prefix), convention, options)
    }

    /// [`NwbWriter::create_in`] at `location` (which names the file in errors).
    pub fn create_at(
        location: FileLocation,
        convention: Convention,
        options: WriteOptions,
    ) -> HdmfResult<Self> {
        let name = location.name;
        let store: Arc<dyn Store> = if location.prefix.is_empty() {
            location.store
        } else {
            Arc::new(
                PrefixStore::new(location.store, &location.prefix)
                    .map_err(|e| HdmfError::store(&name, e))?,
            )
        };
        let existing = store.list_dir("").map_err(|e| HdmfError::store(&name, e))?;
        if !existing.keys.is_empty() || !existing.prefixes.is_empty() {
            return Err(HdmfError::input(
                name,
                "the destination already holds data: a new file is written into an empty prefix",
            ));
        }
        // The prefix is empty and the file is ours: over a network, its writes go out many at
        // a time and its reads are answered from what was written.
        let new_tree = (store.concurrent_reads() > 1)
            .then(|| Arc::new(neurochunk_store::NewTreeStore::new(store.clone())));
        let store = match &new_tree {
            Some(tree) => tree.clone(),
            None => store,
        };
        let mut groups = BTreeMap::new();
        groups.insert("/".to_string(), Map::new());
        Ok(NwbWriter {
            name,
            store,
            staging: None,
            new_tree,
            convention,
            options,
            groups,
            links: BTreeMap::new(),
            datasets: BTreeSet::new(),
            finished: false,
            consolidated: true,
        })
    }

    /// Publish the file with `staging` at [`NwbWriter::finish`] instead of leaving it where
    /// it was written (the filesystem convenience writes aside and renames into place).
    pub(crate) fn with_staging(mut self, staging: Staging) -> Self {
        self.staging = Some(staging);
        self
    }

    /// Finish without writing consolidated metadata (for a file that is read once, where it
    /// was written: a view built in memory, whose readers list the store instead).
    pub fn without_consolidated_metadata(mut self) -> Self {
        self.consolidated = false;
        self
    }

    /// The file's display name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The convention being written.
    pub fn convention(&self) -> Convention {
        self.convention
    }

    fn err(&self, path: &str, message: impl Into<String>) -> HdmfError {
        HdmfError::malformed(&self.name, path, message)
    }

    fn array_err(&self, e: neurochunk_array::ArrayError) -> HdmfError {
        HdmfError::array(&self.name, e)
    }

    /// Set the root's NWBFile type attributes.
    pub fn root(
        &mut self,
        nwb_version: &str,
        typed: &TypeInfo,
        attrs: &[(String, AttributeValue)],
    ) -> HdmfResult<()> {
        let mut map = self.encode_attributes(Some(typed), attrs);
        map.insert("nwb_version".into(), nwb_version.into());
        let root = self.groups.entry("/".into()).or_default();
        root.extend(map);
        Ok(())
    }

    /// Create (or add attributes to) a group.
    pub fn group(
        &mut self,
        path: &str,
        typed: Option<&TypeInfo>,
        attrs: &[(String, AttributeValue)],
    ) -> HdmfResult<()> {
        let path = crate::reference::absolute(path);
        if self.datasets.contains(&path) {
            return Err(self.err(&path, "a dataset already exists at this path"));
        }
        let map = self.encode_attributes(typed, attrs);
        self.groups.entry(path).or_default().extend(map);
        Ok(())
    }

    /// Add a soft link `name` on group `parent` to `target` in `source` (`"."`: this file).
    pub fn link(&mut self, parent: &str, name: &str, target: &str, source: &str) -> HdmfResult<()> {
        if name.is_empty() || name.contains('/') {
            return Err(self.err(parent, format!("invalid link name {name:?}")));
        }
        let parent = crate::reference::absolute(parent);
        self.groups.entry(parent.clone()).or_default();
        self.links.entry(parent).or_default().push((
            name.to_string(),
            source.to_string(),
            crate::reference::absolute(target),
        ));
        Ok(())
    }

    fn encode_attributes(
        &self,
        typed: Option<&TypeInfo>,
        attrs: &[(String, AttributeValue)],
    ) -> Map<String, Value> {
        let mut map = Map::new();
        for (k, v) in attrs {
            map.insert(
                k.clone(),
                match v {
                    AttributeValue::Value(v) => v.clone(),
                    AttributeValue::Reference(r) => r.to_attribute(self.convention),
                },
            );
        }
        if let Some(t) = typed {
            map.insert("namespace".into(), t.namespace.clone().into());
            map.insert("neurodata_type".into(), t.neurodata_type.clone().into());
            map.insert(
                "object_id".into(),
                t.object_id.clone().unwrap_or_else(new_object_id).into(),
            );
        }
        map
    }

    /// Write a dataset.
    pub fn dataset(
        &mut self,
        path: &str,
        typed: Option<&TypeInfo>,
        data: &Dataset,
        attrs: &[(String, AttributeValue)],
        options: &DatasetOptions,
    ) -> HdmfResult<()> {
        let path = crate::reference::absolute(path);
        if self.groups.contains_key(&path) || !self.datasets.insert(path.clone()) {
            return Err(self.err(&path, "an object already exists at this path"));
        }
        let expected: usize = data.shape.iter().product();
        if data.value.len() != expected {
            return Err(self.err(
                &path,
                format!(
                    "{} elements do not fill shape {:?}",
                    data.value.len(),
                    data.shape
                ),
            ));
        }
        let mut map = self.encode_attributes(typed, attrs);
        if let Some(dims) = &options.dims {
            map.insert(ARRAY_DIMENSIONS.into(), json!(dims));
        }
        match self.convention {
            Convention::Legacy => self.legacy_dataset(&path, data, map, options),
            Convention::V3 => self.v3_dataset(&path, data, map, options),
        }
    }

    fn stored_shape(&self, data: &Dataset) -> Vec<usize> {
        match (self.convention, data.scalar) {
            (Convention::Legacy, true) => vec![1],
            (Convention::V3, true) => Vec::new(),
            _ => data.shape.clone(),
        }
    }

    fn legacy_dataset(
        &mut self,
        path: &str,
        data: &Dataset,
        mut attrs: Map<String, Value>,
        options: &DatasetOptions,
    ) -> HdmfResult<()> {
        let shape = self.stored_shape(data);
        let marker = |name: &str| -> Value {
            if data.scalar {
                "scalar".into()
            } else {
                name.into()
            }
        };
        match &data.value {
            DatasetValue::Numeric { data_type, bytes } => {
                let name = numeric_type_name(data_type).unwrap_or("object");
                attrs.insert(LEGACY_DTYPE.into(), marker(name));
                let stored = StoredArray {
                    shape: &shape,
                    data_type: data_type.clone(),
                    serializer: Codec::Bytes {
                        endian: Endian::Little,
                    },
                    compressible: true,
                };
                let data = ArrayBytes::Fixed(bytes.clone());
                self.write_array(path, stored, attrs, data, options)
            }
            DatasetValue::Text { values, bytes } => {
                let (data_type, serializer, name) = if *bytes {
                    (DataType::Bytes, Codec::VlenBytes, "bytes")
                } else {
                    (DataType::String, Codec::VlenUtf8, "str")
                };
                attrs.insert(LEGACY_DTYPE.into(), marker(name));
                let stored = StoredArray {
                    shape: &shape,
                    data_type,
                    serializer,
                    compressible: false,
                };
                let data = variable(values.iter().map(String::as_bytes));
                self.write_array(path, stored, attrs, data, options)
            }
            DatasetValue::References(refs) => {
                if shape.len() != 1 {
                    return Err(self.err(
                        path,
                        "legacy reference datasets must be one-dimensional (or scalar)",
                    ));
                }
                let region = refs.iter().flatten().any(|r| r.region.is_some());
                attrs.insert(
                    LEGACY_DTYPE.into(),
                    if region { "region" } else { "object" }.into(),
                );
                let items: Vec<Value> = refs
                    .iter()
                    .map(|r| r.as_ref().map_or(Value::Null, |r| r.to_json(false)))
                    .collect();
                self.legacy_json2(path, &shape, &items, attrs)
            }
            DatasetValue::Compound { fields, rows } => {
                let field_list: Vec<Value> = fields
                    .iter()
                    .map(|f| {
                        let dtype = match &f.kind {
                            FieldKind::Numeric(dt) => numeric_type_name(dt).unwrap_or("object"),
                            FieldKind::Text => "str",
                            FieldKind::Reference => "object",
                        };
                        json!({"dtype": dtype, "name": f.name})
                    })
                    .collect();
                attrs.insert(LEGACY_DTYPE.into(), Value::Array(field_list));
                if fields
                    .iter()
                    .all(|f| matches!(f.kind, FieldKind::Numeric(_)))
                {
                    let (data_type, bytes) =
                        compound_to_structured(fields, rows, 0).map_err(|m| self.err(path, m))?;
                    let stored = StoredArray {
                        shape: &shape,
                        data_type,
                        serializer: Codec::Bytes {
                            endian: Endian::Little,
                        },
                        compressible: false,
                    };
                    let data = ArrayBytes::Fixed(bytes);
                    return self.write_array(path, stored, attrs, data, options);
                }
                // References or text in a compound: a pickled structured array, the one
                // encoding every legacy reader accepts.
                let mut record = Vec::with_capacity(fields.len());
                let mut dtype_list = Vec::with_capacity(fields.len());
                for f in fields {
                    let (kind, typestr) = match &f.kind {
                        FieldKind::Numeric(dt) => {
                            let t = neurochunk_dtype::v2::typestr(dt, Endian::Little)
                                .map_err(|e| self.err(path, e.to_string()))?;
                            (RecordKind::Numeric(t.clone()), t)
                        }
                        FieldKind::Text | FieldKind::Reference => {
                            (RecordKind::Object, "|O".to_string())
                        }
                    };
                    record.push(RecordField {
                        name: f.name.clone(),
                        kind,
                    });
                    dtype_list.push(json!([f.name, typestr]));
                }
                let items: Vec<Value> = rows
                    .iter()
                    .map(|row| {
                        let mut obj = Map::new();
                        for (f, cell) in fields.iter().zip(row) {
                            obj.insert(
                                f.name.clone(),
                                match cell {
                                    FieldValue::Number(v) => v.clone(),
                                    FieldValue::Text(t) => t.clone().into(),
                                    FieldValue::Reference(r) => {
                                        r.as_ref().map_or(Value::Null, |r| r.to_json(false))
                                    }
                                },
                            );
                        }
                        Value::Object(obj)
                    })
                    .collect();
                let payload = encode_object_array(&shape, &items, Some(&record))
                    .map_err(|e| self.err(path, format!("cannot pickle the compound data: {e}")))?;
                let doc = json!({"chunks": chunk_or_one(&shape), "compressor": null, "dtype": dtype_list, "fill_value": null, "filters": [{"id": "pickle", "protocol": 2}], "order": "C", "shape": shape, "zarr_format": 2});
                self.raw_write(path, &doc, attrs, payload)
            }
        }
    }

    /// A legacy object array encoded with numcodecs' json2 (one chunk, uncompressed).
    fn legacy_json2(
        &mut self,
        path: &str,
        shape: &[usize],
        items: &[Value],
        attrs: Map<String, Value>,
    ) -> HdmfResult<()> {
        let filter = json!({"allow_nan": true, "check_circular": true, "encoding": "utf-8", "ensure_ascii": true, "id": "json2", "indent": null, "separators": [",", ":"], "skipkeys": false, "sort_keys": true, "strict": true});
        let doc = json!({"chunks": chunk_or_one(shape), "compressor": null, "dtype": "|O", "fill_value": 0, "filters": [filter], "order": "C", "shape": shape, "zarr_format": 2});
        let mut list: Vec<Value> = items.to_vec();
        list.push("|O".into());
        list.push(json!(shape));
        let payload = to_python_json(&Value::Array(list), PyJsonStyle::COMPACT).into_bytes();
        self.raw_write(path, &doc, attrs, payload)
    }

    /// Write `.zarray`, `.zattrs` and chunk `0` as given (object arrays whose encoding the
    /// engine does not produce).
    fn raw_write(
        &mut self,
        path: &str,
        doc: &Value,
        attrs: Map<String, Value>,
        chunk: Vec<u8>,
    ) -> HdmfResult<()> {
        let key = store_key(path);
        let set = |name: &str, bytes: neurochunk_store::Bytes| {
            self.store
                .set(&neurochunk_store::join_key(key, name), bytes)
                .map_err(|e| HdmfError::store(&self.name, e))
        };
        set(
            ".zarray",
            to_python_json(doc, PyJsonStyle::ZARR_PYTHON2).into(),
        )?;
        set(
            ".zattrs",
            to_python_json(&Value::Object(attrs), PyJsonStyle::ZARR_PYTHON2).into(),
        )?;
        let empty = doc
            .get("shape")
            .and_then(Value::as_array)
            .is_some_and(|s| s.iter().any(|d| d.as_u64() == Some(0)));
        if !empty {
            set("0", chunk.into())?;
        }
        Ok(())
    }

    fn v3_dataset(
        &mut self,
        path: &str,
        data: &Dataset,
        mut attrs: Map<String, Value>,
        options: &DatasetOptions,
    ) -> HdmfResult<()> {
        let shape = self.stored_shape(data);
        let little = Codec::Bytes {
            endian: Endian::Little,
        };
        let (data_type, serializer, payload, compressible) = match &data.value {
            DatasetValue::Numeric { data_type, bytes } => {
                attrs.insert(
                    V3_DTYPE.into(),
                    numeric_type_name(data_type).unwrap_or("object").into(),
                );
                let payload = ArrayBytes::Fixed(bytes.clone());
                (data_type.clone(), little, payload, true)
            }
            DatasetValue::Text { values, .. } => {
                attrs.insert(V3_DTYPE.into(), "str".into());
                let payload = variable(values.iter().map(String::as_bytes));
                (DataType::String, Codec::VlenUtf8, payload, false)
            }
            DatasetValue::References(refs) => {
                let region = refs.iter().flatten().any(|r| r.region.is_some());
                attrs.insert(
                    V3_DTYPE.into(),
                    if region {
                        "region_reference"
                    } else {
                        "object_reference"
                    }
                    .into(),
                );
                let texts: Vec<String> = refs
                    .iter()
                    .map(|r| r.as_ref().map(Reference::to_v3_element).unwrap_or_default())
                    .collect();
                let payload = variable(texts.iter().map(String::as_bytes));
                (DataType::String, Codec::VlenUtf8, payload, false)
            }
            DatasetValue::Compound { fields, rows } => {
                let reference_fields: Vec<&str> = fields
                    .iter()
                    .filter(|f| f.kind == FieldKind::Reference)
                    .map(|f| f.name.as_str())
                    .collect();
                if !reference_fields.is_empty() {
                    attrs.insert(V3_REFERENCE_FIELDS.into(), json!(reference_fields));
                }
                let (data_type, bytes) =
                    compound_to_structured(fields, rows, V3_MIN_COMPOUND_CHARS)
                        .map_err(|m| self.err(path, m))?;
                (data_type, little, ArrayBytes::Fixed(bytes), false)
            }
        };
        let stored = StoredArray {
            shape: &shape,
            data_type,
            serializer,
            compressible,
        };
        self.write_array(path, stored, attrs, payload, options)
    }

    /// Describe a dataset's array as hdmf-zarr stores it in this convention (its chunks from
    /// `options`, the serializer `stored` names, then Blosc/LZ4 (legacy) or Zstandard level 0
    /// (v3) as hdmf-zarr writes them, or the session's compressors for a numeric dataset), create
    /// it through the array layer's [`ArrayBuilder`] and write `data`.
    fn write_array(
        &mut self,
        path: &str,
        stored: StoredArray<'_>,
        attrs: Map<String, Value>,
        data: ArrayBytes,
        options: &DatasetOptions,
    ) -> HdmfResult<()> {
        let compressors = match (&self.options.compressors, stored.compressible) {
            (Some(chosen), true) => chosen.clone(),
            _ => self.convention.default_compressors(),
        };
        let mut codecs = vec![stored.serializer];
        codecs.extend(compressors);
        // A variable-length element counts as 64 bytes when chunks are sized.
        let item_size = stored.data_type.fixed_size().unwrap_or(64);
        let chunks = chunk_shape(stored.shape, item_size, options);
        let shape: Vec<u64> = stored.shape.iter().map(|&d| d as u64).collect();
        let key = store_key(path);
        let array = ArrayBuilder::new(shape, stored.data_type)
            .format(self.convention.zarr_format())
            .chunk_key_separator(self.convention.chunk_key_separator())
            .chunks(chunks)
            .codecs(codecs)
            .attributes(attrs)
            .create(self.store.clone(), key)
            .map_err(|e| self.array_err(e))?;
        if array.shape().iter().all(|&d| d > 0) {
            array.write_all(&data).map_err(|e| self.array_err(e))?;
        }
        Ok(())
    }

    /// Copy a numeric array chunk by chunk (no whole-array buffer) into a dataset of this
    /// file, with `attrs` (the type marker is added). `layout` re-chunks or re-compresses it
    /// (the session's [`WriteOptions::compressors`] win over its compressors); `progress(n)`
    /// counts chunks of the destination's grid. Chunks are copied as stored when the
    /// destination stores them as the same bytes. Returns the new array.
    pub fn copy_array(
        &mut self,
        path: &str,
        source: &Array,
        typed: Option<&TypeInfo>,
        attrs: &[(String, AttributeValue)],
        layout: CopyLayout,
        progress: &(dyn Fn(u64) + Sync),
    ) -> HdmfResult<Array> {
        let path = crate::reference::absolute(path);
        if !self.datasets.insert(path.clone()) {
            return Err(self.err(&path, "an object already exists at this path"));
        }
        let data_type = &source.metadata().data_type;
        let name = numeric_type_name(data_type)
            .ok_or_else(|| self.err(&path, format!("{data_type} is not a numeric type")))?;
        let mut map = self.encode_attributes(typed, attrs);
        map.insert(self.convention.dtype_attribute().into(), name.into());
        let options = ConvertOptions {
            format: Some(self.convention.zarr_format()),
            compressors: self.options.compressors.clone().or(layout.compressors),
            separator: Some(self.convention.chunk_key_separator()),
            chunks: layout.chunks,
            copy_stored: true,
            ..ConvertOptions::default()
        };
        let key = store_key(&path).to_string();
        let (mut dst, _) = convert_array(source, self.store.clone(), &key, &options, progress)
            .map_err(|e| self.array_err(e))?;
        dst.set_attributes(map).map_err(|e| self.array_err(e))?;
        Ok(dst)
    }

    /// Create an empty numeric dataset that the caller fills chunk by chunk (through the
    /// returned [`Array`]: `store_chunk`, `write`, or raw encoded chunks at `chunk_key`), with
    /// the convention's type marker and `attrs`. `codecs` are the bytes→bytes codecs
    /// (compressions, filters) and `endian` the byte order of the stored elements; `None`
    /// takes the session's [`WriteOptions::compressors`], else the convention's default
    /// (Blosc/LZ4 legacy, Zstandard v3, as hdmf-zarr writes).
    #[allow(clippy::too_many_arguments)]
    pub fn create_array(
        &mut self,
        path: &str,
        typed: Option<&TypeInfo>,
        attrs: &[(String, AttributeValue)],
        shape: &[u64],
        data_type: &DataType,
        chunks: &[usize],
        endian: Endian,
        codecs: Option<Vec<neurochunk_codec::Codec>>,
        fill_value: neurochunk_array::FillValue,
    ) -> HdmfResult<Array> {
        let path = crate::reference::absolute(path);
        if self.groups.contains_key(&path) || !self.datasets.insert(path.clone()) {
            return Err(self.err(&path, "an object already exists at this path"));
        }
        let name = numeric_type_name(data_type)
            .ok_or_else(|| self.err(&path, format!("{data_type} is not a numeric type")))?;
        let mut map = self.encode_attributes(typed, attrs);
        map.insert(self.convention.dtype_attribute().into(), name.into());
        let compressors = match (codecs, &self.options.compressors) {
            (Some(c), _) => c,
            (None, Some(c)) => c.clone(),
            (None, None) => self.convention.default_compressors(),
        };
        let mut all = vec![Codec::Bytes { endian }];
        all.extend(compressors);
        let builder = ArrayBuilder::new(shape.to_vec(), data_type.clone())
            .format(self.convention.zarr_format())
            .chunk_key_separator(self.convention.chunk_key_separator())
            .chunks(chunks.iter().map(|&c| c.max(1)).collect::<Vec<_>>())
            .codecs(all)
            .fill_value(fill_value)
            .attributes(map);
        builder
            .create(self.store.clone(), store_key(&path))
            .map_err(|e| self.array_err(e))
    }

    /// The compressors every numeric dataset of this session gets, when the caller chose them
    /// ([`WriteOptions::compressors`]).
    pub fn compressors(&self) -> Option<&[neurochunk_codec::Codec]> {
        self.options.compressors.as_deref()
    }

    /// Cache a namespace under `/specifications/<name>/<version>/<document>`.
    pub fn cache_namespace(&mut self, namespace: &NamespaceDocs) -> HdmfResult<()> {
        for (doc_name, doc) in &namespace.documents {
            let path = format!(
                "/specifications/{}/{}/{}",
                namespace.name, namespace.version, doc_name
            );
            let text = serde_json::to_string(doc).map_err(|e| self.err(&path, e.to_string()))?;
            let data = Dataset {
                shape: Vec::new(),
                scalar: true,
                value: DatasetValue::Text {
                    values: vec![text],
                    bytes: false,
                },
            };
            match self.convention {
                Convention::Legacy => {
                    let mut attrs = Map::new();
                    attrs.insert(LEGACY_DTYPE.into(), "scalar".into());
                    self.datasets.insert(path.clone());
                    // hdmf-zarr stores specifications with json2 and no compressor.
                    let items = [Value::String(match &data.value {
                        DatasetValue::Text { values, .. } => values[0].clone(),
                        _ => String::new(),
                    })];
                    self.legacy_json2(&path, &[1], &items, attrs)?;
                }
                Convention::V3 => {
                    self.datasets.insert(path.clone());
                    self.v3_dataset(&path, &data, Map::new(), &DatasetOptions::default())?;
                    // hdmf-zarr 0.14 writes no type marker on cached specifications.
                    let mut array = Array::open(self.store.clone(), store_key(&path))
                        .map_err(|e| self.array_err(e))?;
                    array
                        .set_attributes(Map::new())
                        .map_err(|e| self.array_err(e))?;
                }
            }
        }
        self.groups
            .entry("/".into())
            .or_default()
            .insert(SPECLOC.into(), "specifications".into());
        Ok(())
    }

    /// Write the groups and links and consolidate the metadata; a file written aside (the
    /// filesystem convenience) is then published in place of the destination. Returns the
    /// file's display name.
    pub fn finish(mut self) -> HdmfResult<String> {
        // Every ancestor of a node is a group.
        let mut all: BTreeSet<String> = self.groups.keys().cloned().collect();
        all.extend(self.datasets.iter().cloned());
        for path in all {
            let mut p = path;
            while p != "/" {
                let (parent, _) = split_parent(&p);
                self.groups.entry(parent.clone()).or_default();
                p = parent;
            }
        }
        for (parent, links) in std::mem::take(&mut self.links) {
            let entries: Vec<Value> = links
                .into_iter()
                .map(|(name, source, path)| match self.convention {
                    Convention::Legacy => json!({"name": name, "path": path, "source": source}),
                    Convention::V3 => json!({"source": source, "path": path, "name": name}),
                })
                .collect();
            self.groups.entry(parent).or_default().insert(
                self.convention.links_attribute().into(),
                Value::Array(entries),
            );
        }
        let format = self.convention.zarr_format();
        for (path, attrs) in &self.groups {
            create_group(self.store.as_ref(), store_key(path), format, attrs.clone())
                .map_err(|e| HdmfError::array(&self.name, e))?;
        }
        if self.consolidated {
            consolidate(self.store.as_ref(), "").map_err(|e| HdmfError::array(&self.name, e))?;
        }
        if let Some(tree) = &self.new_tree {
            tree.flush().map_err(|e| HdmfError::store(&self.name, e))?;
        }
        if let Some(staging) = self.staging.take() {
            if let Err(e) = (staging.publish)() {
                (staging.abandon)();
                self.finished = true;
                return Err(e);
            }
        }
        self.finished = true;
        Ok(self.name.clone())
    }
}

impl Drop for NwbWriter {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        match self.staging.take() {
            Some(staging) => (staging.abandon)(),
            // The prefix was empty when the session started: everything under it is ours.
            None => {
                let _ = self.store.delete_prefix("");
            }
        }
    }
}

/// A fresh UUID4 object id.
pub fn new_object_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

fn variable<'a>(items: impl Iterator<Item = &'a [u8]>) -> ArrayBytes {
    let mut data = Vec::new();
    let mut offsets = vec![0];
    for item in items {
        data.extend_from_slice(item);
        offsets.push(data.len());
    }
    ArrayBytes::Variable { data, offsets }
}

fn chunk_or_one(shape: &[usize]) -> Vec<usize> {
    shape.iter().map(|&d| d.max(1)).collect()
}

/// The chunk shape: the caller's, or the whole array when small, else each axis halved in turn
/// until a chunk holds about 1 MiB.
fn chunk_shape(shape: &[usize], item_size: usize, options: &DatasetOptions) -> Vec<usize> {
    if let Some(c) = &options.chunks {
        if c.len() == shape.len() {
            return c.iter().map(|&d| d.max(1)).collect();
        }
    }
    let mut chunks = chunk_or_one(shape);
    let bytes = |c: &[usize]| c.iter().product::<usize>().saturating_mul(item_size.max(1));
    let mut axis = 0;
    while bytes(&chunks) > TARGET_CHUNK_BYTES && chunks.iter().any(|&c| c > 1) {
        if chunks[axis] > 1 {
            chunks[axis] = chunks[axis].div_ceil(2);
        }
        axis = (axis + 1) % chunks.len();
    }
    chunks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_guess_keeps_small_arrays_whole_and_splits_large_ones() {
        let o = DatasetOptions::default();
        assert_eq!(chunk_shape(&[10, 3], 2, &o), vec![10, 3]);
        assert_eq!(chunk_shape(&[0], 8, &o), vec![1]);
        let big = chunk_shape(&[1_000_000, 64], 2, &o);
        assert!(big.iter().product::<usize>() * 2 <= TARGET_CHUNK_BYTES);
        assert!(big.iter().product::<usize>() * 2 > TARGET_CHUNK_BYTES / 4);
        assert_eq!(
            chunk_shape(
                &[100],
                8,
                &DatasetOptions {
                    chunks: Some(vec![7]),
                    dims: None
                }
            ),
            vec![7]
        );
    }
}
