//! Virtual Zarr views of HDF5 files: a reference file in the LINDI JSON format (`.lindi.json`,
//! read by the `lindi` package and by `neurochunk_store::LindiStore`), whose chunk entries are
//! `[url, offset, length]` byte ranges of the HDF5 file, so that no data is copied. It is
//! built from the file's metadata only (the chunk indexes give the byte ranges): no chunk is
//! read, except those that must be inlined (below).
//!
//! The layout is LINDI's: Zarr v2 metadata (`.zgroup`, `.zarray`, `.zattrs` as JSON objects)
//! under `refs`, soft links as groups with a `_SOFT_LINK` attribute, references as
//! `{"_REFERENCE": {object_id, path, source, source_object_id}}` (region references add our
//! `region` selection; HDF5 1.12 references into other files name that file as `source`),
//! scalars as one-element arrays marked `_SCALAR`, text, references and compounds inline as
//! numcodecs JSON (`json2`) arrays (compounds marked `_COMPOUND_DTYPE`). External links to
//! datasets are arrays marked `_EXTERNAL_ARRAY_LINK` (`{"link_type": "hdf5_dataset", "url",
//! "name"}`, which lindi follows); external links to groups, which LINDI has no form for, are
//! groups marked `_EXTERNAL_LINK` (`{"url", "name"}`), which neurochunk follows. Numeric
//! datasets are referenced chunk by chunk when their HDF5 filters have numcodecs equivalents
//! (deflate → `zlib`, shuffle, the Zstandard and Blosc plugins); a chunk stored with a filter
//! skipped is encoded again and inlined; small datasets (under 1000 elements), compact ones
//! and those with other filters are inlined (base64), each listed in the notes when it was not
//! small.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use neurochunk_array::ArrayMetadata;
use neurochunk_codec::{BloscCompressor, BloscShuffle, Codec};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_dtype::{DataType, Endian};
use neurochunk_h5::{Dataset, Datatype, Extent, H5File, Layout, Object, Value as H5Value};
use neurochunk_hdmf::{AttributeValue, Reference};
use neurochunk_store::Store;
use serde_json::{json, Map, Value};

use crate::error::{Hdf5Error, Hdf5Result};
use crate::import::{local_source, open_external, source_dir, Confinement};
use crate::mapping::{self, Pipeline};
use crate::view::{self, Found};

/// Options of a reference file.
#[derive(Clone, Debug, Default)]
pub struct VirtualOptions {
    /// The URL (or path) chunk entries point at (default: the source file's absolute path, or
    /// its URL).
    pub url: Option<String>,
    /// Directories external links may lead into.
    pub allowed_roots: Vec<PathBuf>,
    /// Follow external links anywhere.
    pub allow_any_external: bool,
    /// What an existing file at the output may be to be replaced: by default only a LINDI
    /// reference file.
    pub overwrite: neurochunk_store::replace::Overwrite,
}

/// What a reference file holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VirtualSummary {
    /// Groups.
    pub groups: usize,
    /// Datasets.
    pub datasets: usize,
    /// Chunk entries pointing into the HDF5 file.
    pub chunk_refs: u64,
    /// Datasets stored inline.
    pub inline: usize,
    /// Soft links (and second hard links).
    pub links: usize,
    /// External links.
    pub external_links: usize,
    /// Things that could not be referenced (inlined) or not represented at all.
    pub notes: Vec<String>,
}

/// Numeric datasets with fewer elements are inlined (as LINDI does).
const INLINE_ELEMENTS: u64 = 1000;

/// Write the reference file `output` (its name should end in `.lindi.json`) for the HDF5 file
/// `source` on disk.
pub fn write_reference_file(
    source: &Path,
    output: &Path,
    options: &VirtualOptions,
) -> Hdf5Result<VirtualSummary> {
    let name = source.display().to_string();
    let (store, key) = local_source(source)?;
    let url = match &options.url {
        Some(u) => u.clone(),
        None => source
            .canonicalize()
            .map_err(|e| Hdf5Error::file(&name, e.to_string()))?
            .display()
            .to_string(),
    };
    write_reference(
        store,
        &key,
        &name,
        &url,
        Some(&source_dir(source)),
        output,
        options,
    )
}

/// Write the reference file `output` for the HDF5 file at `key` of `store` (an object in a
/// bucket), named `name`, whose chunk entries name `url` (default: [`VirtualOptions::url`]).
/// External links are written without being checked (their targets are not in a directory
/// to look into), as groups marked `_EXTERNAL_LINK`.
pub fn write_reference_store(
    store: Arc<dyn Store>,
    key: &str,
    name: &str,
    url: &str,
    output: &Path,
    options: &VirtualOptions,
) -> Hdf5Result<VirtualSummary> {
    let url = options.url.clone().unwrap_or_else(|| url.to_string());
    write_reference(store, key, name, &url, None, output, options)
}

fn write_reference(
    store: Arc<dyn Store>,
    key: &str,
    name: &str,
    url: &str,
    dir: Option<&Path>,
    output: &Path,
    options: &VirtualOptions,
) -> Hdf5Result<VirtualSummary> {
    neurochunk_store::replace::check_file(
        output,
        neurochunk_store::lindi::REFERENCE_FILE,
        neurochunk_store::lindi::is_reference_file,
        options.overwrite,
    )
    .map_err(neurochunk_hdmf::HdmfError::from)?;
    if !neurochunk_h5::is_hdf5(store.as_ref(), key)
        .map_err(|e| Hdf5Error::file(name, e.to_string()))?
    {
        return Err(Hdf5Error::file(name, "not an HDF5 file"));
    }
    let file = H5File::open(store, key, name).map_err(|e| Hdf5Error::file(name, e.to_string()))?;
    let mut writer = RefWriter {
        name: name.to_string(),
        file: &file,
        url: url.to_string(),
        dir,
        options,
        refs: Map::new(),
        summary: VirtualSummary::default(),
        object_ids: HashMap::new(),
        root_object_id: None,
    };
    writer.root_object_id = writer.object_id("/");
    let mut notes = Vec::new();
    let found = view::walk(&file, &mut notes)?;
    writer.summary.notes.extend(notes);
    for item in found {
        match item {
            Found::Group(path, group) => {
                let attrs = group
                    .attributes()
                    .map_err(|e| writer.err(&path, e.to_string()))?;
                writer.group(&path, attrs)?;
            }
            Found::Dataset(path, ds) => writer.dataset(&path, &ds)?,
            Found::Link {
                parent,
                name,
                target,
                source,
            } => {
                let key = view::join(&parent, &name);
                if source == "." {
                    writer.put_json(&join_key(&key, ".zgroup"), json!({"zarr_format": 2}));
                    writer.put_json(
                        &join_key(&key, ".zattrs"),
                        json!({"_SOFT_LINK": {"path": target}}),
                    );
                    writer.summary.links += 1;
                } else {
                    writer.external(&key, &source, &target)?;
                }
            }
        }
    }
    let document = json!({
        "version": 1,
        "refs": Value::Object(std::mem::take(&mut writer.refs)),
        "generationMetadata": {"generatedBy": "neurochunk", "sourceUrl": writer.url},
    });
    let text =
        serde_json::to_string(&document).map_err(|e| Hdf5Error::file(name, e.to_string()))?;
    // Non-finite floats as the bare tokens Python's json module (and so LINDI) reads.
    let text = neurochunk_store::lindi::bare_non_finite(&text);
    write_atomically(output, text.as_bytes())
        .map_err(|e| Hdf5Error::file(&output.display().to_string(), e.to_string()))?;
    Ok(writer.summary)
}

/// Write `bytes` to a temporary file beside `path` and rename it into place.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .ok_or_else(|| std::io::Error::other("the output path has no file name"))?;
    let tmp = parent.join(format!(
        ".{}.neurochunk-tmp-{}",
        file_name.to_string_lossy(),
        std::process::id()
    ));
    let result = std::fs::write(&tmp, bytes).and_then(|_| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

struct RefWriter<'a> {
    name: String,
    file: &'a H5File,
    url: String,
    /// The directory of a source on disk (external links are opened there).
    dir: Option<&'a Path>,
    options: &'a VirtualOptions,
    refs: Map<String, Value>,
    summary: VirtualSummary,
    object_ids: HashMap<String, Option<String>>,
    root_object_id: Option<String>,
}

impl RefWriter<'_> {
    fn err(&self, path: &str, message: impl Into<String>) -> Hdf5Error {
        Hdf5Error::object(&self.name, path, message)
    }

    fn put_json(&mut self, key: &str, value: Value) {
        self.refs
            .insert(key.trim_start_matches('/').to_string(), value);
    }

    fn put_bytes(&mut self, key: &str, bytes: &[u8]) {
        let value = match std::str::from_utf8(bytes) {
            Ok(text) if text.is_ascii() && !text.starts_with("base64:") => text.to_string(),
            _ => format!(
                "base64:{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            ),
        };
        self.refs.insert(
            key.trim_start_matches('/').to_string(),
            Value::String(value),
        );
    }

    fn dims_of(&self, path: &str) -> Vec<u64> {
        self.file
            .dataset(path)
            .map(|d| d.shape().to_vec())
            .unwrap_or_default()
    }

    /// The `object_id` attribute of the object at `path`, if it has one.
    fn object_id(&mut self, path: &str) -> Option<String> {
        if let Some(id) = self.object_ids.get(path) {
            return id.clone();
        }
        let id = self
            .file
            .object(path)
            .and_then(|o| o.attributes())
            .ok()
            .and_then(|attrs| {
                let attr = attrs.into_iter().find(|a| a.name() == "object_id")?;
                match attr.values().ok()?.into_iter().next()? {
                    H5Value::Text(t) => Some(t),
                    H5Value::Bytes(b) => Some(String::from_utf8_lossy(&b).into_owned()),
                    _ => None,
                }
            });
        self.object_ids.insert(path.to_string(), id.clone());
        id
    }

    /// A reference as LINDI stores it.
    fn reference(&mut self, r: &Reference) -> Value {
        let mut inner = Map::new();
        let same_file = r.source.is_empty() || r.source == ".";
        inner.insert(
            "object_id".into(),
            if same_file {
                self.object_id(&r.path).map_or(Value::Null, Value::String)
            } else {
                Value::Null
            },
        );
        inner.insert("path".into(), Value::String(r.path.clone()));
        inner.insert(
            "source".into(),
            Value::String(if same_file {
                ".".into()
            } else {
                r.source.clone()
            }),
        );
        inner.insert(
            "source_object_id".into(),
            self.root_object_id
                .clone()
                .filter(|_| same_file)
                .map_or(Value::Null, Value::String),
        );
        if let Some(region) = &r.region {
            inner.insert("region".into(), region.to_json());
        }
        json!({ "_REFERENCE": inner })
    }

    fn attributes(
        &mut self,
        path: &str,
        attrs: Vec<neurochunk_h5::Attribute>,
    ) -> Hdf5Result<Map<String, Value>> {
        let mut notes = Vec::new();
        let mut out = Map::new();
        for attr in &attrs {
            let values = attr
                .values()
                .map_err(|e| self.err(path, format!("attribute '{}': {e}", attr.name())))?;
            let value = mapping::attribute_value(attr, values, &|p| self.dims_of(p), &mut notes)
                .map_err(|m| self.err(path, format!("attribute '{}': {m}", attr.name())))?;
            let value = match value {
                AttributeValue::Value(v) => v,
                AttributeValue::Reference(r) => self.reference(&r),
            };
            out.insert(attr.name().to_string(), value);
        }
        self.summary
            .notes
            .extend(notes.into_iter().map(|n| format!("{path}: {n}")));
        Ok(out)
    }

    fn group(&mut self, path: &str, attrs: Vec<neurochunk_h5::Attribute>) -> Hdf5Result<()> {
        let attrs = self.attributes(path, attrs)?;
        self.put_json(&join_key(path, ".zgroup"), json!({"zarr_format": 2}));
        if !attrs.is_empty() {
            self.put_json(&join_key(path, ".zattrs"), Value::Object(attrs));
        }
        self.summary.groups += 1;
        Ok(())
    }

    /// An external link at `key` to `object` in the file `target_file`: checked and described
    /// from the target when the source is on disk, else marked as a link to a group.
    fn external(&mut self, key: &str, target_file: &str, object: &str) -> Hdf5Result<()> {
        self.summary.external_links += 1;
        let Some(dir) = self.dir else {
            self.summary.notes.push(format!(
                "{key}: an external link to '{object}' in '{target_file}', written unchecked \
                 (a remote source's neighbours are not looked into)"
            ));
            let url = sibling_url(&self.url, target_file);
            self.put_json(&join_key(key, ".zgroup"), json!({"zarr_format": 2}));
            self.put_json(
                &join_key(key, ".zattrs"),
                json!({"_EXTERNAL_LINK": {"url": url, "name": object}}),
            );
            return Ok(());
        };
        let confinement = Confinement {
            allowed_roots: &self.options.allowed_roots,
            allow_any: self.options.allow_any_external,
        };
        let (real, other) = open_external(&self.name, dir, key, target_file, object, &confinement)?;
        let url = if self.url.contains("://") {
            sibling_url(&self.url, target_file)
        } else {
            real.display().to_string()
        };
        match other
            .object(object)
            .map_err(|e| self.err(key, e.to_string()))?
        {
            Object::Dataset(ds) => {
                let (dtype, fill) = match mapping::numeric_type(ds.dtype()) {
                    Some((dt, endian)) => {
                        let v2 = neurochunk_dtype::v2::dtype_to_json(&dt, endian)
                            .map_err(|e| self.err(key, e.to_string()))?;
                        (
                            json!(v2.dtype),
                            neurochunk_dtype::v2::fill_value_to_v2_json(&dt.zero_fill(), &dt),
                        )
                    }
                    None => (json!("|O"), json!(0)),
                };
                let shape: Vec<u64> = match ds.extent() {
                    Extent::Simple(d) => d.clone(),
                    _ => vec![1],
                };
                let chunks: Vec<u64> = ds
                    .chunk_shape()
                    .map(<[u64]>::to_vec)
                    .unwrap_or_else(|| shape.iter().map(|&d| d.max(1)).collect());
                self.put_json(
                    &join_key(key, ".zarray"),
                    json!({"chunks": chunks, "compressor": null, "dtype": dtype, "fill_value": fill, "filters": null, "order": "C", "shape": shape, "zarr_format": 2}),
                );
                self.put_json(
                    &join_key(key, ".zattrs"),
                    json!({"_EXTERNAL_ARRAY_LINK": {"link_type": "hdf5_dataset", "url": url, "name": object}}),
                );
            }
            _ => {
                self.put_json(&join_key(key, ".zgroup"), json!({"zarr_format": 2}));
                self.put_json(
                    &join_key(key, ".zattrs"),
                    json!({"_EXTERNAL_LINK": {"url": url, "name": object}}),
                );
            }
        }
        Ok(())
    }

    fn dataset(&mut self, path: &str, ds: &Dataset) -> Hdf5Result<()> {
        let raw_attrs = ds.attributes().map_err(|e| self.err(path, e.to_string()))?;
        let mut attrs = self.attributes(path, raw_attrs)?;
        self.summary.datasets += 1;
        if matches!(ds.layout(), Layout::Virtual) || !ds.external_files().is_empty() {
            return Err(self.err(
                path,
                "a virtual dataset or one stored in external files cannot be referenced",
            ));
        }
        let dims: Vec<u64> = match ds.extent() {
            Extent::Simple(d) => d.clone(),
            Extent::Scalar => Vec::new(),
            Extent::Null => {
                self.summary.notes.push(format!(
                    "{path}: a null dataspace, written as an empty array"
                ));
                vec![0]
            }
        };
        let numeric = mapping::numeric_type(ds.dtype());
        if let (Some((dt, endian)), false) = (&numeric, dims.is_empty()) {
            return self.numeric(path, ds, &dims, dt, *endian, attrs);
        }
        // Inline: scalars, text, references, compounds.
        let values = if matches!(ds.extent(), Extent::Null) {
            Vec::new()
        } else {
            ds.read_values_all()
                .map_err(|e| self.err(path, e.to_string()))?
        };
        let scalar = dims.is_empty();
        let shape: Vec<u64> = if scalar { vec![1] } else { dims.clone() };
        if scalar {
            attrs.insert("_SCALAR".into(), Value::Bool(true));
        }
        if let Some((dt, _)) = numeric {
            // A numeric scalar: one element, uncompressed.
            let bytes = mapping::numeric_bytes(&dt, &values).map_err(|m| self.err(path, m))?;
            return self.inline_numeric(path, &shape, &dt, bytes, attrs);
        }
        if let Datatype::FixedString { size, .. } = ds.dtype() {
            // Fixed-length text stays NumPy `|S<n>` (NUL padded), as h5py reads it.
            let size = (*size).max(1);
            let mut bytes = Vec::with_capacity(values.len() * size);
            for v in &values {
                let mut b = match v {
                    H5Value::Text(t) => t.as_bytes().to_vec(),
                    H5Value::Bytes(b) => b.clone(),
                    _ => Vec::new(),
                };
                b.resize(size, 0);
                bytes.extend(b);
            }
            self.inline_array(
                path,
                &shape,
                json!(format!("|S{size}")),
                json!(""),
                &bytes,
                attrs,
            );
            return Ok(());
        }
        let items = values
            .iter()
            .map(|v| self.cell_value(v))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|m| self.err(path, m))?;
        if let Datatype::Compound { fields, .. } = ds.dtype() {
            let names: Vec<Value> = fields
                .iter()
                .map(|f| json!([f.name, lindi_type_name(&f.dtype)]))
                .collect();
            attrs.insert("_COMPOUND_DTYPE".into(), Value::Array(names));
        }
        self.inline_json(path, &shape, &items, attrs);
        self.summary.inline += 1;
        Ok(())
    }

    fn cell_value(&mut self, value: &H5Value) -> Result<Value, String> {
        Ok(match value {
            H5Value::Reference(Some(r)) => match mapping::reference(r, &|p| self.dims_of(p))? {
                Some(r) => self.reference(&r),
                None => Value::Null,
            },
            H5Value::Compound(fields) => Value::Array(
                fields
                    .iter()
                    .map(|(_, v)| self.cell_value(v))
                    .collect::<Result<_, _>>()?,
            ),
            H5Value::Array(items) | H5Value::Sequence(items) => Value::Array(
                items
                    .iter()
                    .map(|v| self.cell_value(v))
                    .collect::<Result<_, _>>()?,
            ),
            other => mapping::value_json(other, &|_| Vec::new())?,
        })
    }

    /// A numcodecs JSON (`json2`) object array in one chunk.
    fn inline_json(
        &mut self,
        key: &str,
        shape: &[u64],
        items: &[Value],
        attrs: Map<String, Value>,
    ) {
        let filter = json!({"allow_nan": true, "check_circular": true, "encoding": "utf-8", "ensure_ascii": true, "id": "json2", "indent": null, "separators": [",", ":"], "skipkeys": false, "sort_keys": true, "strict": true});
        let chunks: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
        self.put_json(
            &join_key(key, ".zarray"),
            json!({"chunks": chunks, "compressor": null, "dtype": "|O", "fill_value": 0, "filters": [filter], "order": "C", "shape": shape, "zarr_format": 2}),
        );
        if !attrs.is_empty() {
            self.put_json(&join_key(key, ".zattrs"), Value::Object(attrs));
        }
        if shape.iter().all(|&d| d > 0) {
            let mut list: Vec<Value> = items.to_vec();
            list.push("|O".into());
            list.push(json!(shape));
            let payload = to_python_json(&Value::Array(list), PyJsonStyle::COMPACT);
            let chunk = vec!["0"; shape.len()].join(".");
            self.put_bytes(&join_key(key, &chunk), payload.as_bytes());
        }
    }

    /// Numeric data inline: one chunk, uncompressed, in little-endian order.
    fn inline_numeric(
        &mut self,
        key: &str,
        shape: &[u64],
        dt: &DataType,
        bytes: Vec<u8>,
        attrs: Map<String, Value>,
    ) -> Hdf5Result<()> {
        let v2 = neurochunk_dtype::v2::dtype_to_json(dt, Endian::Little)
            .map_err(|e| self.err(key, e.to_string()))?;
        let fill = neurochunk_dtype::v2::fill_value_to_v2_json(&dt.zero_fill(), dt);
        self.inline_array(key, shape, json!(v2.dtype), fill, &bytes, attrs);
        Ok(())
    }

    /// An array inline as one uncompressed Zarr v2 chunk of `bytes` (C order), with its
    /// `.zarray` (`dtype` and `fill_value` as Zarr v2 JSON) and, when any, `.zattrs`.
    fn inline_array(
        &mut self,
        key: &str,
        shape: &[u64],
        dtype: Value,
        fill_value: Value,
        bytes: &[u8],
        attrs: Map<String, Value>,
    ) {
        let chunks: Vec<u64> = shape.iter().map(|&d| d.max(1)).collect();
        let doc = json!({"chunks": chunks, "compressor": null, "dtype": dtype, "fill_value": fill_value, "filters": null, "order": "C", "shape": shape, "zarr_format": 2});
        self.put_json(&join_key(key, ".zarray"), doc);
        if !attrs.is_empty() {
            self.put_json(&join_key(key, ".zattrs"), Value::Object(attrs));
        }
        if shape.iter().all(|&d| d > 0) {
            let chunk = vec!["0"; shape.len()].join(".");
            self.put_bytes(&join_key(key, &chunk), bytes);
        }
        self.summary.inline += 1;
    }

    fn numeric(
        &mut self,
        path: &str,
        ds: &Dataset,
        dims: &[u64],
        dt: &DataType,
        endian: Endian,
        attrs: Map<String, Value>,
    ) -> Hdf5Result<()> {
        let count: u64 = dims.iter().product();
        let item = ds.dtype().size();
        let pipeline = mapping::pipeline(ds.filters(), item);
        let referable = match ds.layout() {
            Layout::Chunked { .. } => matches!(
                pipeline,
                Pipeline::Zarr {
                    strip_checksum: false,
                    ..
                }
            ),
            Layout::Contiguous {
                byte_offset: Some(_),
                ..
            } => true,
            _ => false,
        };
        if count < INLINE_ELEMENTS || !referable {
            if !referable && count >= INLINE_ELEMENTS {
                self.summary.notes.push(format!(
                    "{path}: its storage ({}) cannot be referenced by byte ranges; inlined",
                    describe_storage(ds)
                ));
            }
            let bytes = if count > 0 {
                ds.read_native(&ds.full_selection())
                    .map_err(|e| self.err(path, e.to_string()))?
            } else {
                Vec::new()
            };
            return self.inline_numeric(path, dims, dt, bytes, attrs);
        }
        let v2 = neurochunk_dtype::v2::dtype_to_json(dt, endian)
            .map_err(|e| self.err(path, e.to_string()))?;
        let chunks: Vec<u64> = match ds.chunk_shape() {
            Some(c) => c.to_vec(),
            None => dims.to_vec(),
        };
        let filters: Vec<Value> = match &pipeline {
            Pipeline::Zarr { codecs, .. } => codecs
                .iter()
                .map(|c| numcodecs_config(c, item))
                .collect::<Option<_>>()
                .unwrap_or_default(),
            Pipeline::Decoded => Vec::new(),
        };
        let doc = json!({
            "chunks": chunks,
            "compressor": null,
            "dtype": v2.dtype,
            "fill_value": neurochunk_dtype::v2::fill_value_to_v2_json(&ds.fill_native(), dt),
            "filters": if filters.is_empty() { Value::Null } else { Value::Array(filters) },
            "order": "C",
            "shape": dims,
            "zarr_format": 2,
        });
        self.put_json(&join_key(path, ".zarray"), doc.clone());
        if !attrs.is_empty() {
            self.put_json(&join_key(path, ".zattrs"), Value::Object(attrs));
        }
        if let Layout::Contiguous {
            byte_offset: Some(offset),
            size,
        } = ds.layout()
        {
            let chunk = vec!["0"; dims.len()].join(".");
            self.put_json(&join_key(path, &chunk), json!([self.url, offset, size]));
            self.summary.chunk_refs += 1;
            return Ok(());
        }
        // Chunked: one entry per stored chunk; a chunk stored with a filter skipped is
        // encoded again with the declared filters and inlined.
        let grid: Vec<u64> = dims
            .iter()
            .zip(&chunks)
            .map(|(&d, &c)| d.div_ceil(c.max(1)))
            .collect();
        let mut meta: Option<ArrayMetadata> = None;
        for info in ds.chunks().map_err(|e| self.err(path, e.to_string()))? {
            if info.coords.iter().zip(&grid).any(|(&i, &n)| i >= n) {
                continue;
            }
            let chunk_key = join_key(
                path,
                &info
                    .coords
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join("."),
            );
            if ds.skipped_filters(&info) == 0 {
                self.put_json(&chunk_key, json!([self.url, info.byte_offset, info.size]));
                self.summary.chunk_refs += 1;
                continue;
            }
            if meta.is_none() {
                meta = Some(
                    ArrayMetadata::from_v2(&doc, None, path)
                        .map_err(|e| self.err(path, e.to_string()))?,
                );
            }
            let Some(meta) = &meta else { continue };
            let stored = ds
                .read_chunk_stored(&info)
                .and_then(|s| ds.decode_stored(&info, s))
                .map_err(|e| self.err(path, e.to_string()))?;
            let bytes = view::encode_chunk(meta, ds.dtype(), &info.coords, stored)
                .map_err(|m| self.err(path, m))?;
            self.put_bytes(&chunk_key, &bytes);
        }
        Ok(())
    }
}

/// The URL of `file` beside the file at `url` (a relative external link's target).
fn sibling_url(url: &str, file: &str) -> String {
    if file.contains("://") || file.starts_with('/') {
        return file.to_string();
    }
    match url.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{file}"),
        None => file.to_string(),
    }
}

fn describe_storage(ds: &Dataset) -> String {
    let layout = match ds.layout() {
        Layout::Compact { .. } => "compact",
        Layout::Contiguous { .. } => "contiguous",
        Layout::Chunked { .. } => "chunked",
        Layout::Virtual => "virtual dataset",
    };
    if ds.filters().is_empty() {
        layout.to_string()
    } else {
        format!(
            "{layout}, filters {}",
            ds.filters()
                .iter()
                .map(|f| f.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// The numcodecs configuration of a codec of an HDF5 filter pipeline ([`mapping::pipeline`]).
fn numcodecs_config(codec: &Codec, element_size: usize) -> Option<Value> {
    Some(match codec {
        Codec::Zlib { level } => json!({"id": "zlib", "level": level}),
        Codec::Shuffle => json!({"elementsize": element_size, "id": "shuffle"}),
        Codec::Zstd { level, .. } => json!({"id": "zstd", "level": level}),
        Codec::Blosc {
            clevel,
            shuffle,
            cname,
        } => {
            let cname = match cname {
                BloscCompressor::BloscLz => "blosclz",
                BloscCompressor::Lz4 => "lz4",
                BloscCompressor::Lz4Hc => "lz4hc",
                BloscCompressor::Zlib => "zlib",
                BloscCompressor::Zstd => "zstd",
                _ => return None,
            };
            let shuffle = match shuffle {
                BloscShuffle::NoShuffle => 0,
                BloscShuffle::Shuffle | BloscShuffle::Auto => 1,
                BloscShuffle::BitShuffle => 2,
            };
            json!({"blocksize": 0, "clevel": clevel, "cname": cname, "id": "blosc", "shuffle": shuffle})
        }
        _ => return None,
    })
}

fn lindi_type_name(dtype: &Datatype) -> String {
    match dtype {
        Datatype::ObjectRef { .. } | Datatype::RegionRef { .. } | Datatype::Reference { .. } => {
            "<REFERENCE>".into()
        }
        Datatype::FixedString { size, .. } => format!("|S{size}"),
        Datatype::VlenString { .. } => "object".into(),
        other => {
            mapping::numeric_type(other).map_or_else(|| "object".into(), |(dt, _)| dt.to_string())
        }
    }
}

fn join_key(key: &str, name: &str) -> String {
    let key = key.trim_matches('/');
    if key.is_empty() {
        name.to_string()
    } else {
        format!("{key}/{name}")
    }
}
