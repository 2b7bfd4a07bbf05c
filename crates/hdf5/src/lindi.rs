//! Virtual Zarr views of HDF5 files: a reference file in the LINDI JSON format (`.lindi.json`,
//! read by the `lindi` package and by `neurochunk_store::LindiStore`), whose chunk entries are
//! `[url, offset, length]` byte ranges of the HDF5 file, so that no data is copied.
//!
//! The layout is LINDI's: Zarr v2 metadata (`.zgroup`, `.zarray`, `.zattrs` as JSON objects)
//! under `refs`, soft links as groups with a `_SOFT_LINK` attribute, references as
//! `{"_REFERENCE": {object_id, path, source, source_object_id}}` (region references add our
//! `region` selection), scalars as one-element arrays marked `_SCALAR`, text, references and
//! compounds inline as numcodecs JSON (`json2`) arrays (compounds marked `_COMPOUND_DTYPE`).
//! Numeric datasets are referenced chunk by chunk when their HDF5 filters have numcodecs
//! equivalents (deflate → `zlib`, shuffle, the Zstandard and Blosc plugins) and their chunks
//! were stored with every filter; small ones (under 1000 elements), compact ones and those
//! with other filters are inlined (base64), each listed in the summary's notes when it was not
//! small. External links, which LINDI has no form for, are reported, never dropped silently.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use hdf5_metno::{Dataset, File, Group};
use neurochunk_array::{Array, ArrayBytes, ArrayMetadata};
use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_dtype::{DataType, Endian};
use neurochunk_hdmf::{AttributeValue, Reference};
use neurochunk_store::{MemoryStore, Store};
use serde_json::{json, Map, Value};

use crate::error::{Hdf5Error, Hdf5Result};
use crate::h5::{self, Cell, DatasetInfo, Extent, Kind, Layout};
use crate::import::{absolute_target, attribute_value, data_type, walk_file, Item, WalkOptions};

/// Options of a reference file.
#[derive(Clone, Debug, Default)]
pub struct VirtualOptions {
    /// The URL (or path) chunk entries point at (default: the source file's absolute path).
    pub url: Option<String>,
    /// Directories external links may lead into (checked even though they are not written).
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
    /// Things that could not be referenced (inlined) or not represented at all.
    pub notes: Vec<String>,
}

/// Numeric datasets with fewer elements are inlined (as LINDI does).
const INLINE_ELEMENTS: u64 = 1000;

/// Write the reference file `output` (its name should end in `.lindi.json`) for the HDF5 file
/// `source`.
pub fn write_reference_file(
    source: &Path,
    output: &Path,
    options: &VirtualOptions,
) -> Hdf5Result<VirtualSummary> {
    let name = source.display().to_string();
    neurochunk_store::replace::check_file(
        output,
        neurochunk_store::lindi::REFERENCE_FILE,
        neurochunk_store::lindi::is_reference_file,
        options.overwrite,
    )
    .map_err(neurochunk_hdmf::HdmfError::from)?;
    let file = h5::open_file(source).map_err(|m| Hdf5Error::file(&name, m))?;
    let url = match &options.url {
        Some(u) => u.clone(),
        None => source
            .canonicalize()
            .map_err(|e| Hdf5Error::file(&name, e.to_string()))?
            .display()
            .to_string(),
    };
    let walk = WalkOptions {
        allowed_roots: options.allowed_roots.clone(),
        allow_any_external: options.allow_any_external,
    };
    let items = walk_file(source, &file, &walk)?;
    let userblock = h5::userblock(&file).map_err(|m| Hdf5Error::file(&name, m))?;
    let mut writer = RefWriter {
        name: name.clone(),
        file: &file,
        url,
        userblock,
        refs: Map::new(),
        summary: VirtualSummary::default(),
        object_ids: HashMap::new(),
        root_object_id: None,
    };
    writer.root_object_id = writer.object_id("/");
    writer.group("", &file, "/")?;
    for item in &items {
        match item {
            Item::Group(p) => {
                let g = file.group(p).map_err(|e| writer.err(p, e.to_string()))?;
                writer.group(&p[1..], &g, p)?;
            }
            Item::Dataset(p) => {
                let ds = file.dataset(p).map_err(|e| writer.err(p, e.to_string()))?;
                writer.dataset(&p[1..], &ds, p)?;
            }
            Item::Soft(parent, name, target) => {
                let key = absolute_target(parent, name);
                writer.put_json(&format!("{}/.zgroup", &key[1..]), json!({"zarr_format": 2}));
                writer.put_json(
                    &format!("{}/.zattrs", &key[1..]),
                    json!({"_SOFT_LINK": {"path": target}}),
                );
                writer.summary.links += 1;
            }
            Item::External(parent, name, file_name, object) => {
                writer.summary.notes.push(format!(
                    "{}: an external link to '{object}' in '{file_name}' has no form in a LINDI file (not written)",
                    absolute_target(parent, name)
                ));
            }
        }
    }
    let document = json!({
        "version": 1,
        "refs": Value::Object(std::mem::take(&mut writer.refs)),
        "generationMetadata": {"generatedBy": "neurochunk", "sourceUrl": writer.url},
    });
    let text =
        serde_json::to_string(&document).map_err(|e| Hdf5Error::file(&name, e.to_string()))?;
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
    file: &'a File,
    url: String,
    /// Chunk addresses are relative to the end of the user block.
    userblock: u64,
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

    /// The `object_id` attribute of the object at `path`, if it has one.
    fn object_id(&mut self, path: &str) -> Option<String> {
        if let Some(id) = self.object_ids.get(path) {
            return id.clone();
        }
        let id = (|| {
            let attrs = if path == "/" {
                h5::attributes(self.file, self.file)
            } else if let Ok(g) = self.file.group(path) {
                h5::attributes(self.file, &g)
            } else {
                let d = self.file.dataset(path).ok()?;
                h5::attributes(self.file, &d)
            }
            .ok()?;
            attrs.into_iter().find_map(|(n, d)| match (n.as_str(), d) {
                ("object_id", Ok(data)) => match data.cells.first() {
                    Some(Cell::Text(t, _)) => Some(t.clone()),
                    _ => None,
                },
                _ => None,
            })
        })();
        self.object_ids.insert(path.to_string(), id.clone());
        id
    }

    /// A reference as LINDI stores it.
    fn reference(&mut self, r: &Reference) -> Value {
        let mut inner = Map::new();
        inner.insert(
            "object_id".into(),
            self.object_id(&r.path).map_or(Value::Null, Value::String),
        );
        inner.insert("path".into(), Value::String(r.path.clone()));
        inner.insert("source".into(), Value::String(".".into()));
        inner.insert(
            "source_object_id".into(),
            self.root_object_id
                .clone()
                .map_or(Value::Null, Value::String),
        );
        if let Some(region) = &r.region {
            inner.insert("region".into(), region.to_json());
        }
        json!({ "_REFERENCE": inner })
    }

    fn attributes(
        &mut self,
        loc: &hdf5_metno::Location,
        path: &str,
    ) -> Hdf5Result<Map<String, Value>> {
        let attrs = h5::attributes(self.file, loc).map_err(|m| self.err(path, m))?;
        let mut out = Map::new();
        for (name, data) in attrs {
            let data = data.map_err(|m| self.err(path, format!("attribute '{name}': {m}")))?;
            let value = attribute_value(&data)
                .map_err(|m| self.err(path, format!("attribute '{name}': {m}")))?;
            out.insert(
                name,
                match value {
                    AttributeValue::Value(v) => v,
                    AttributeValue::Reference(r) => self.reference(&r),
                },
            );
        }
        Ok(out)
    }

    fn group(&mut self, key: &str, group: &Group, path: &str) -> Hdf5Result<()> {
        let attrs = self.attributes(group, path)?;
        self.put_json(&join_key(key, ".zgroup"), json!({"zarr_format": 2}));
        if !attrs.is_empty() {
            self.put_json(&join_key(key, ".zattrs"), Value::Object(attrs));
        }
        self.summary.groups += 1;
        Ok(())
    }

    fn dataset(&mut self, key: &str, ds: &Dataset, path: &str) -> Hdf5Result<()> {
        let info = h5::dataset_info(ds).map_err(|m| self.err(path, m))?;
        let mut attrs = self.attributes(ds, path)?;
        self.summary.datasets += 1;
        if let Kind::Unsupported(what) = &info.ty.kind {
            return Err(self.err(path, format!("unsupported element type: {what}")));
        }
        let dims: Vec<u64> = match &info.extent {
            Extent::Simple(d) => d.clone(),
            Extent::Scalar => Vec::new(),
            Extent::Null => {
                self.summary.notes.push(format!(
                    "{path}: a null dataspace, written as an empty array"
                ));
                vec![0]
            }
        };
        if let Some(dt) = data_type(&info.ty.kind) {
            if !dims.is_empty() {
                return self.numeric(key, ds, path, &info, &dims, &dt, attrs);
            }
        }
        // Inline: scalars, text, references, compounds.
        let cells = if matches!(info.extent, Extent::Null) {
            Vec::new()
        } else {
            h5::read_dataset_cells(self.file, ds, &info).map_err(|m| self.err(path, m))?
        };
        let scalar = dims.is_empty();
        let shape: Vec<u64> = if scalar { vec![1] } else { dims.clone() };
        if scalar {
            attrs.insert("_SCALAR".into(), Value::Bool(true));
        }
        if let Some(dt) = data_type(&info.ty.kind) {
            // A numeric scalar: one element, uncompressed.
            let mut bytes = Vec::new();
            for c in &cells {
                push_le(&mut bytes, &dt, c).map_err(|m| self.err(path, m))?;
            }
            self.inline_numeric(key, path, &shape, &dt, bytes, attrs)?;
            return Ok(());
        }
        if let Kind::FixedString { size, .. } = info.ty.kind {
            // Fixed-length text stays NumPy `|S<n>` (NUL padded), as h5py reads it.
            let size = size.max(1);
            let mut bytes = Vec::with_capacity(cells.len() * size);
            for c in &cells {
                let mut b = match c {
                    Cell::Text(t, _) => t.as_bytes().to_vec(),
                    _ => Vec::new(),
                };
                b.resize(size, 0);
                bytes.extend(b);
            }
            self.inline_array(
                key,
                &shape,
                json!(format!("|S{size}")),
                json!(""),
                &bytes,
                attrs,
            );
            return Ok(());
        }
        let items: Vec<Value> = cells.iter().map(|c| self.cell_value(c)).collect();
        if let Kind::Compound { fields, .. } = &info.ty.kind {
            let names: Vec<Value> = fields
                .iter()
                .map(|(name, _, k)| json!([name, lindi_type_name(k)]))
                .collect();
            attrs.insert("_COMPOUND_DTYPE".into(), Value::Array(names));
        }
        self.inline_json(key, &shape, &items, attrs);
        self.summary.inline += 1;
        Ok(())
    }

    fn cell_value(&mut self, cell: &Cell) -> Value {
        match cell {
            Cell::Int(v) => json!(v),
            Cell::UInt(v) => json!(v),
            Cell::Float(v) => serde_json::Number::from_f64(*v).map_or_else(
                || neurochunk_dtype::json::non_finite_value(*v),
                Value::Number,
            ),
            Cell::Bool(b) => json!(b),
            Cell::Text(t, _) => json!(t),
            Cell::Object(None) | Cell::Region(None) => Value::Null,
            Cell::Object(Some(p)) => self.reference(&Reference::to(p.clone())),
            Cell::Region(Some((p, s))) => {
                let r = Reference::to(p.clone()).with_region(crate::import::region(s));
                self.reference(&r)
            }
            Cell::Compound(fields) => {
                Value::Array(fields.iter().map(|c| self.cell_value(c)).collect())
            }
        }
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
        path: &str,
        shape: &[u64],
        dt: &DataType,
        bytes: Vec<u8>,
        attrs: Map<String, Value>,
    ) -> Hdf5Result<()> {
        let v2 = neurochunk_dtype::v2::dtype_to_json(dt, Endian::Little)
            .map_err(|e| self.err(path, e.to_string()))?;
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

    #[allow(clippy::too_many_arguments)]
    fn numeric(
        &mut self,
        key: &str,
        ds: &Dataset,
        path: &str,
        info: &DatasetInfo,
        dims: &[u64],
        dt: &DataType,
        attrs: Map<String, Value>,
    ) -> Hdf5Result<()> {
        let count: u64 = dims.iter().product();
        let item = info.ty.kind.size();
        let filters = numcodecs_filters(&info.filters, item);
        let referable = match &info.layout {
            Layout::Chunked { .. } => filters.is_some(),
            Layout::Contiguous {
                address: Some(_),
                external: false,
                ..
            } => true,
            _ => false,
        } && info.ty.file_size == item;
        if count < INLINE_ELEMENTS || count == 0 || !referable {
            if !referable && count >= INLINE_ELEMENTS {
                self.summary.notes.push(format!(
                    "{path}: its storage ({}) cannot be referenced by byte ranges; inlined",
                    describe_storage(info)
                ));
            }
            let mut bytes = vec![0u8; (count as usize) * item];
            if count > 0 {
                h5::read_box(ds, info, &vec![0; dims.len()], dims, &mut bytes)
                    .map_err(|m| self.err(path, m))?;
            }
            return self.inline_numeric(key, path, dims, dt, bytes, attrs);
        }
        let endian = if info.ty.big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        let v2 = neurochunk_dtype::v2::dtype_to_json(dt, endian)
            .map_err(|e| self.err(path, e.to_string()))?;
        let fill = info.fill.clone().unwrap_or_else(|| dt.zero_fill());
        let chunks: Vec<u64> = match &info.layout {
            Layout::Chunked { chunks } => chunks.clone(),
            _ => dims.to_vec(),
        };
        let filters = filters.unwrap_or_default();
        let doc = json!({
            "chunks": chunks,
            "compressor": null,
            "dtype": v2.dtype,
            "fill_value": neurochunk_dtype::v2::fill_value_to_v2_json(&fill, dt),
            "filters": if filters.is_empty() { Value::Null } else { Value::Array(filters) },
            "order": "C",
            "shape": dims,
            "zarr_format": 2,
        });
        self.put_json(&join_key(key, ".zarray"), doc.clone());
        if !attrs.is_empty() {
            self.put_json(&join_key(key, ".zattrs"), Value::Object(attrs));
        }
        if let Layout::Contiguous {
            address: Some(address),
            size,
            ..
        } = info.layout
        {
            let chunk = vec!["0"; dims.len()].join(".");
            self.put_json(&join_key(key, &chunk), json!([self.url, address, size]));
            self.summary.chunk_refs += 1;
            return Ok(());
        }
        // Chunked: one entry per stored chunk; a chunk stored with a filter skipped is
        // re-encoded inline with the declared filters.
        let grid: Vec<u64> = dims
            .iter()
            .zip(&chunks)
            .map(|(&d, &c)| d.div_ceil(c.max(1)))
            .collect();
        let total: u64 = grid.iter().product();
        let mut encoder: Option<Array> = None;
        for n in 0..total {
            let idx = crate::import::unravel(n, &grid);
            let offset: Vec<u64> = idx.iter().zip(&chunks).map(|(&i, &c)| i * c).collect();
            let Some((address, size, mask)) =
                h5::chunk_location(ds, &offset).map_err(|m| self.err(path, m))?
            else {
                continue;
            };
            let chunk_key = join_key(
                key,
                &idx.iter().map(u64::to_string).collect::<Vec<_>>().join("."),
            );
            if mask == 0 {
                self.put_json(
                    &chunk_key,
                    json!([self.url, address + self.userblock, size]),
                );
                self.summary.chunk_refs += 1;
                continue;
            }
            if encoder.is_none() {
                let meta = ArrayMetadata::from_v2(&doc, None, "x")
                    .map_err(|e| self.err(path, e.to_string()))?;
                let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
                encoder = Some(
                    Array::create(store, "x", meta).map_err(|e| self.err(path, e.to_string()))?,
                );
            }
            let Some(array) = &encoder else { continue };
            let full: Vec<u64> = chunks.clone();
            let shape: Vec<u64> = offset
                .iter()
                .zip(&full)
                .zip(dims)
                .map(|((&o, &c), &d)| c.min(d - o))
                .collect();
            let mut buf = vec![0u8; shape.iter().product::<u64>() as usize * item];
            h5::read_box(ds, info, &offset, &shape, &mut buf).map_err(|m| self.err(path, m))?;
            array
                .write(
                    &neurochunk_array::Selection::from_box(&offset, &shape),
                    &ArrayBytes::Fixed(buf),
                )
                .map_err(|e| self.err(path, e.to_string()))?;
            let stored = array
                .store()
                .get(&array.chunk_key(&idx))
                .map_err(|e| self.err(path, e.to_string()))?;
            if let Some(bytes) = stored {
                self.put_bytes(&chunk_key, &bytes);
            }
        }
        Ok(())
    }
}

fn describe_storage(info: &DatasetInfo) -> String {
    let layout = match &info.layout {
        Layout::Compact => "compact",
        Layout::Contiguous { external: true, .. } => "external raw files",
        Layout::Contiguous { .. } => "contiguous",
        Layout::Chunked { .. } => "chunked",
        Layout::Virtual => "virtual dataset",
    };
    if info.filters.is_empty() {
        layout.to_string()
    } else {
        format!(
            "{layout}, filters {}",
            info.filters
                .iter()
                .map(|f| f.id.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// numcodecs configurations equal to an HDF5 filter pipeline (in the pipeline's order).
pub(crate) fn numcodecs_filters(filters: &[h5::Filter], element_size: usize) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    for f in filters {
        out.push(match f.id {
            1 => json!({"id": "zlib", "level": f.values.first().copied().unwrap_or(6).min(9)}),
            2 if f.values.first().is_none_or(|&s| s as usize == element_size) => {
                json!({"elementsize": element_size, "id": "shuffle"})
            }
            32015 => json!({"id": "zstd", "level": f.values.first().map_or(0, |&l| l as i32)}),
            32001 if f.values.len() >= 7 => {
                let cname = match f.values[6] {
                    0 => "blosclz",
                    1 => "lz4",
                    2 => "lz4hc",
                    4 => "zlib",
                    5 => "zstd",
                    _ => return None,
                };
                json!({"blocksize": 0, "clevel": f.values[4].min(9), "cname": cname, "id": "blosc", "shuffle": f.values[5]})
            }
            _ => return None,
        });
    }
    Some(out)
}

fn lindi_type_name(kind: &Kind) -> String {
    match kind {
        Kind::ObjectRef | Kind::RegionRef => "<REFERENCE>".into(),
        Kind::FixedString { size, .. } => format!("|S{size}"),
        Kind::VlenString { .. } => "object".into(),
        k => data_type(k).map_or_else(|| "object".into(), |dt| dt.to_string()),
    }
}

fn join_key(key: &str, name: &str) -> String {
    if key.is_empty() {
        name.to_string()
    } else {
        format!("{key}/{name}")
    }
}

fn push_le(out: &mut Vec<u8>, dt: &DataType, cell: &Cell) -> Result<(), String> {
    crate::import::push_number(out, dt, cell)
}
