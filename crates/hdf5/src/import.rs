//! Importing an HDF5 NWB file into either hdmf-zarr convention.
//!
//! The walk visits every link of the file by name: groups and datasets (hard links; an object
//! reached a second time is written as a soft link to its first path, Zarr having no hard
//! links), soft links and external links. Attributes are decoded into JSON values or
//! references; small datasets (scalars, text, references, compounds) are read whole and
//! re-encoded by [`NwbWriter::dataset`]; numeric arrays are streamed chunk by chunk into an
//! array created by [`NwbWriter::create_array`]: chunks whose HDF5 filters Zarr can express
//! (deflate, shuffle, Zstandard, Blosc) are copied as stored, without decoding; the others
//! are read through the library and encoded by the Zarr chain. The cached specifications
//! become the target's `/specifications`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use hdf5_metno::{Dataset, File, Group};
use neurochunk_array::{ArrayBytes, FillValue, Selection};
use neurochunk_codec::{BloscCompressor, BloscShuffle, Codec};
use neurochunk_dtype::{DataType, Endian};
use neurochunk_hdmf::{
    AttributeValue, CompoundField, Convention, Dataset as NwbDataset, DatasetOptions, DatasetValue,
    FieldKind, FieldValue, NamespaceDocs, NwbWriter, Reference, Region, RegionSlice, WriteOptions,
};
use rayon::prelude::*;
use serde_json::Value;

use crate::error::{Hdf5Error, Hdf5Result};
use crate::h5::{
    self, Cell, DatasetInfo, Extent, Kind, Layout, LinkKind, ObjectKind, Selection as H5Selection,
};

/// Options of an import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The convention written.
    pub convention: Convention,
    /// Compressors (replacing the HDF5 filters of every numeric dataset) and durability.
    pub write: WriteOptions,
    /// Re-chunk every numeric dataset to chunks of about this many bytes (default: keep the
    /// HDF5 chunk shape; contiguous and compact datasets get chunks of about 1 MiB).
    pub chunk_bytes: Option<usize>,
    /// Chunk shapes of particular datasets (absolute paths), over everything else.
    pub chunks: BTreeMap<String, Vec<usize>>,
    /// Directories external links may lead into (default: the source file's directory).
    pub allowed_roots: Vec<PathBuf>,
    /// Follow external links anywhere.
    pub allow_any_external: bool,
    /// Appended to the file name of an external link's target: the name that file gets when
    /// it is imported too (default `.zarr`: `other.nwb` → `other.nwb.zarr`).
    pub external_suffix: String,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            convention: Convention::V3,
            write: WriteOptions::default(),
            chunk_bytes: None,
            chunks: BTreeMap::new(),
            allowed_roots: Vec::new(),
            allow_any_external: false,
            external_suffix: ".zarr".into(),
        }
    }
}

impl ImportOptions {
    /// Default options for `convention`.
    pub fn new(convention: Convention) -> Self {
        ImportOptions {
            convention,
            ..Self::default()
        }
    }

    /// Options for `convention` whose external links may lead where `external` allows (its
    /// places must be directories: an HDF5 file is read from disk).
    #[cfg(feature = "remote")]
    pub fn with_external(
        convention: Convention,
        external: &neurochunk_hdmf::ExternalPolicy,
    ) -> Result<Self, String> {
        let mut allowed_roots = Vec::new();
        for root in &external.allowed {
            match root.local_path() {
                Some(path) => allowed_roots.push(path.to_path_buf()),
                None => {
                    return Err(format!(
                        "{}: an HDF5 file allows external files in directories, not at URLs",
                        root.display()
                    ))
                }
            }
        }
        Ok(ImportOptions {
            convention,
            allowed_roots,
            allow_any_external: external.allow_any,
            ..Self::default()
        })
    }
}

/// What an import wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Groups written.
    pub groups: usize,
    /// Datasets written.
    pub datasets: usize,
    /// Numeric datasets streamed chunk by chunk.
    pub streamed: usize,
    /// Chunks copied as stored (no decoding).
    pub chunks_copied: u64,
    /// Chunks decoded and encoded again.
    pub chunks_encoded: u64,
    /// Soft links written (including second paths of hard-linked objects).
    pub links: usize,
    /// External links written.
    pub external_links: usize,
    /// Cached namespaces written.
    pub namespaces: usize,
    /// Bytes of numeric data (decoded).
    pub bytes: u64,
    /// Things worth knowing that did not stop the import (one line each).
    pub notes: Vec<String>,
}

/// Progress of an import: bytes of numeric data done and in total.
pub trait Progress: Sync {
    /// The total became known.
    fn total(&self, _bytes: u64) {}
    /// `bytes` more are done.
    fn advance(&self, bytes: u64);
}

impl<F: Fn(u64) + Sync> Progress for F {
    fn advance(&self, bytes: u64) {
        self(bytes)
    }
}

/// Import the HDF5 file `source` into a new NWB Zarr file at `destination` (written aside and
/// published atomically when complete: nothing appears at `destination` on error).
pub fn import_file(
    source: &Path,
    destination: &Path,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    let name = source.display().to_string();
    let file = h5::open_file(source).map_err(|m| Hdf5Error::file(&name, m))?;
    let writer = NwbWriter::create(destination, options.convention, options.write.clone())?;
    import_opened(source, &file, writer, options, progress)
}

/// Import the HDF5 file `source` into the file `writer` writes (any store), and finish it.
pub fn import_into(
    source: &Path,
    writer: NwbWriter,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    let name = source.display().to_string();
    let file = h5::open_file(source).map_err(|m| Hdf5Error::file(&name, m))?;
    import_opened(source, &file, writer, options, progress)
}

/// One thing the walk found.
pub(crate) enum Item {
    Group(String),
    Dataset(String),
    /// A soft link (or second hard link): parent, name, absolute target.
    Soft(String, String, String),
    /// An external link: parent, name, the target file's source as written, object path.
    External(String, String, String, String),
}

struct Ctx<'a> {
    name: String,
    file: &'a File,
    options: &'a ImportOptions,
    raw: std::fs::File,
    /// Bytes in the file (stored chunks must lie inside).
    file_len: u64,
    userblock: u64,
    /// Stored chunks to copy (or decode and encode) after the walk, all datasets together.
    jobs: std::sync::Mutex<Vec<CopyJob>>,
}

/// The stored chunks of one dataset whose HDF5 chunks are Zarr chunks of the same description:
/// copied as stored (`source: None`) or decoded with `source`'s chain and encoded by the
/// array's, after the walk, in parallel with every other dataset's.
struct CopyJob {
    path: String,
    array: neurochunk_array::Array,
    source: Option<neurochunk_array::ArrayMetadata>,
    /// Per stored chunk: its linear index in the grid, address and size.
    chunks: Vec<(u64, u64, u64)>,
    grid: Vec<u64>,
    chunk_shape: Vec<usize>,
    dims: Vec<u64>,
    item: usize,
}

impl Ctx<'_> {
    fn err(&self, path: &str, message: impl Into<String>) -> Hdf5Error {
        Hdf5Error::object(&self.name, path, message)
    }
}

/// Where external links may lead.
#[derive(Clone, Debug, Default)]
pub(crate) struct WalkOptions {
    pub allowed_roots: Vec<PathBuf>,
    pub allow_any_external: bool,
}

/// The walk's view of the file.
struct WalkCtx<'a> {
    name: String,
    file: &'a File,
    dir: PathBuf,
    options: &'a WalkOptions,
}

impl WalkCtx<'_> {
    fn err(&self, path: &str, message: impl Into<String>) -> Hdf5Error {
        Hdf5Error::object(&self.name, path, message)
    }
}

/// The directory holding `source` (external links are relative to it).
fn source_dir(source: &Path) -> PathBuf {
    source
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Every link of the file, by name, depth first (the root excluded).
pub(crate) fn walk_file(
    source: &Path,
    file: &File,
    options: &WalkOptions,
) -> Hdf5Result<Vec<Item>> {
    let ctx = WalkCtx {
        name: source.display().to_string(),
        file,
        dir: source_dir(source),
        options,
    };
    let root: &Group = file;
    let mut seen = HashMap::new();
    if let Ok(info) = root.loc_info() {
        seen.insert(format!("{:?}", info.token), "/".to_string());
    }
    let mut items = Vec::new();
    walk(&ctx, root, "/", &mut seen, &mut items)?;
    Ok(items)
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// `target` (absolute, or relative to `parent`) as a normalised absolute path.
pub(crate) fn absolute_target(parent: &str, target: &str) -> String {
    let joined = if target.starts_with('/') {
        target.to_string()
    } else {
        join(parent, target)
    };
    let mut parts: Vec<&str> = Vec::new();
    for p in joined.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    format!("/{}", parts.join("/"))
}

fn walk(
    ctx: &WalkCtx,
    group: &Group,
    path: &str,
    seen: &mut HashMap<String, String>,
    items: &mut Vec<Item>,
) -> Hdf5Result<()> {
    let links =
        h5::links(group).map_err(|m| ctx.err(path, format!("cannot list the group: {m}")))?;
    for (name, kind) in links {
        let child = join(path, &name);
        match kind {
            LinkKind::Hard => {
                let (kind, token) =
                    h5::object_info(group, &name).map_err(|m| ctx.err(&child, m))?;
                if let Some(first) = seen.get(&token) {
                    items.push(Item::Soft(path.to_string(), name, first.clone()));
                    continue;
                }
                seen.insert(token, child.clone());
                match kind {
                    ObjectKind::Group => {
                        items.push(Item::Group(child.clone()));
                        let g = group
                            .group(&name)
                            .map_err(|e| ctx.err(&child, e.to_string()))?;
                        walk(ctx, &g, &child, seen, items)?;
                    }
                    ObjectKind::Dataset => items.push(Item::Dataset(child)),
                    ObjectKind::Datatype => {}
                }
            }
            LinkKind::Soft(target) => {
                let target = absolute_target(path, &target);
                if !h5::exists(ctx.file, &target) {
                    return Err(ctx.err(
                        &child,
                        format!("soft link to '{target}', which does not exist (dangling link)"),
                    ));
                }
                items.push(Item::Soft(path.to_string(), name, target));
            }
            LinkKind::External(file, object) => {
                check_external(ctx, &child, &file, &object)?;
                items.push(Item::External(
                    path.to_string(),
                    name,
                    file,
                    absolute_target("/", &object),
                ));
            }
        }
    }
    Ok(())
}

/// An external link must lead to an existing file inside the allowed directories, and to an
/// object that exists in it.
fn check_external(ctx: &WalkCtx, link: &str, file: &str, object: &str) -> Hdf5Result<()> {
    let target = ctx.dir.join(file);
    let real = target.canonicalize().map_err(|e| {
        ctx.err(
            link,
            format!("external link to '{file}', which cannot be opened: {e}"),
        )
    })?;
    if !ctx.options.allow_any_external {
        let roots: Vec<PathBuf> = if ctx.options.allowed_roots.is_empty() {
            vec![ctx.dir.canonicalize().unwrap_or_else(|_| ctx.dir.clone())]
        } else {
            ctx.options
                .allowed_roots
                .iter()
                .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()))
                .collect()
        };
        if !roots.iter().any(|r| real.starts_with(r)) {
            return Err(Hdf5Error::ExternalRefused {
                file: ctx.name.clone(),
                path: link.to_string(),
                target: file.to_string(),
                allowed: roots
                    .iter()
                    .map(|r| format!("'{}'", r.display()))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    let other = h5::open_file(&real)
        .map_err(|m| ctx.err(link, format!("external link to '{file}': {m}")))?;
    if !h5::exists(&other, &absolute_target("/", object)) {
        return Err(ctx.err(
            link,
            format!(
                "external link to '{object}' in '{file}', which does not exist (dangling link)"
            ),
        ));
    }
    Ok(())
}

fn import_opened(
    source: &Path,
    file: &File,
    mut writer: NwbWriter,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    let name = source.display().to_string();
    let raw = std::fs::File::open(source).map_err(|e| Hdf5Error::file(&name, e.to_string()))?;
    let userblock = h5::userblock(file).map_err(|m| Hdf5Error::file(&name, m))?;
    let file_len = raw
        .metadata()
        .map_err(|e| Hdf5Error::file(&name, e.to_string()))?
        .len();
    let walk_options = WalkOptions {
        allowed_roots: options.allowed_roots.clone(),
        allow_any_external: options.allow_any_external,
    };
    let items = walk_file(source, file, &walk_options)?;
    let ctx = Ctx {
        name,
        file,
        options,
        raw,
        file_len,
        userblock,
        jobs: std::sync::Mutex::new(Vec::new()),
    };
    let mut summary = ImportSummary::default();

    // The root's attributes; `.specloc` (an object reference in HDF5) names the cache.
    let mut root_attrs = read_attributes(&ctx, file, "/")?;
    let mut specloc = None;
    root_attrs.retain(|(k, v)| {
        if k == ".specloc" {
            specloc = match v {
                AttributeValue::Reference(r) => Some(r.path.clone()),
                AttributeValue::Value(Value::String(s)) => Some(absolute_target("/", s)),
                _ => None,
            };
            false
        } else {
            true
        }
    });
    writer.group("/", None, &root_attrs)?;
    let in_specs = |p: &str| {
        specloc
            .as_deref()
            .is_some_and(|s| p == s || p.starts_with(&format!("{s}/")))
    };

    // The bytes to stream, for the progress bar.
    let mut total = 0u64;
    for item in &items {
        if let Item::Dataset(p) = item {
            if in_specs(p) {
                continue;
            }
            if let Ok(ds) = file.dataset(p) {
                if let Ok(info) = h5::dataset_info(&ds) {
                    // What is streamed (numeric arrays, not scalars), as it advances.
                    if info.ty.kind.is_numeric()
                        && matches!(info.extent, Extent::Simple(_))
                        && data_type(&info.ty.kind).is_some()
                    {
                        total += info.extent.count() * info.ty.kind.size() as u64;
                    }
                }
            }
        }
    }
    progress.total(total);

    let mut namespaces: BTreeMap<(String, String), Vec<(String, Value)>> = BTreeMap::new();
    for item in &items {
        match item {
            Item::Group(p) => {
                if in_specs(p) {
                    continue;
                }
                let g = file.group(p).map_err(|e| ctx.err(p, e.to_string()))?;
                let attrs = read_attributes(&ctx, &g, p)?;
                writer.group(p, None, &attrs)?;
                summary.groups += 1;
            }
            Item::Dataset(p) => {
                if in_specs(p) {
                    if let Some(spec) = specloc.as_deref() {
                        let rel: Vec<&str> = p[spec.len()..].trim_matches('/').split('/').collect();
                        if let [ns, version, doc] = rel.as_slice() {
                            let ds = file.dataset(p).map_err(|e| ctx.err(p, e.to_string()))?;
                            let text = read_spec_text(&ctx, &ds, p)?;
                            let value: Value = serde_json::from_str(&text).map_err(|e| {
                                ctx.err(p, format!("cached specification is not JSON: {e}"))
                            })?;
                            namespaces
                                .entry((ns.to_string(), version.to_string()))
                                .or_default()
                                .push((doc.to_string(), value));
                        } else {
                            summary.notes.push(format!(
                                "{p}: not a cached specification document (skipped)"
                            ));
                        }
                    }
                    continue;
                }
                let ds = file.dataset(p).map_err(|e| ctx.err(p, e.to_string()))?;
                let attrs = read_attributes(&ctx, &ds, p)?;
                import_dataset(&ctx, &ds, p, &attrs, &mut writer, &mut summary, progress)?;
                summary.datasets += 1;
            }
            Item::Soft(parent, name, target) => {
                if in_specs(parent) || in_specs(&join(parent, name)) {
                    continue;
                }
                writer.link(parent, name, target, ".")?;
                summary.links += 1;
            }
            Item::External(parent, name, ext, object) => {
                let source = external_source(ext, &options.external_suffix);
                writer.link(parent, name, object, &source)?;
                summary.external_links += 1;
            }
        }
    }
    let jobs = std::mem::take(
        &mut *ctx
            .jobs
            .lock()
            .map_err(|_| Hdf5Error::file(&ctx.name, "chunk job list poisoned"))?,
    );
    let (copied, encoded) = run_copy_jobs(&ctx, &jobs, progress)?;
    summary.chunks_copied += copied;
    summary.chunks_encoded += encoded;
    drop(jobs);
    for ((ns, version), mut docs) in namespaces {
        docs.sort_by_key(|(d, _)| d != "namespace");
        writer.cache_namespace(&NamespaceDocs {
            name: ns,
            version,
            documents: docs,
        })?;
        summary.namespaces += 1;
    }
    writer.finish()?;
    Ok(summary)
}

/// The `source` of an external link in the Zarr file: the target file's name with `suffix`,
/// relative to this file's root (hence `../` for a sibling).
fn external_source(file: &str, suffix: &str) -> String {
    let named = if file.ends_with(suffix) {
        file.to_string()
    } else {
        format!("{file}{suffix}")
    };
    if Path::new(&named).is_absolute() {
        named
    } else {
        format!("../{named}")
    }
}

fn read_spec_text(ctx: &Ctx, ds: &Dataset, path: &str) -> Hdf5Result<String> {
    let info = h5::dataset_info(ds).map_err(|m| ctx.err(path, m))?;
    let cells = h5::read_dataset_cells(ctx.file, ds, &info).map_err(|m| ctx.err(path, m))?;
    match cells.as_slice() {
        [Cell::Text(t, _)] => Ok(t.clone()),
        _ => Err(ctx.err(path, "a cached specification must be one string")),
    }
}

// ---------------------------------------------------------------------------------------------
// Attributes

fn read_attributes(
    ctx: &Ctx,
    loc: &hdf5_metno::Location,
    path: &str,
) -> Hdf5Result<Vec<(String, AttributeValue)>> {
    let attrs = h5::attributes(ctx.file, loc).map_err(|m| ctx.err(path, m))?;
    let mut out = Vec::with_capacity(attrs.len());
    for (name, data) in attrs {
        let data = data.map_err(|m| ctx.err(path, format!("attribute '{name}': {m}")))?;
        let value = attribute_value(&data)
            .map_err(|m| ctx.err(path, format!("attribute '{name}': {m}")))?;
        out.push((name, value));
    }
    Ok(out)
}

pub(crate) fn attribute_value(data: &h5::AttributeData) -> Result<AttributeValue, String> {
    match &data.extent {
        Extent::Null => Ok(AttributeValue::Value(Value::Null)),
        Extent::Scalar => match data.cells.first() {
            Some(Cell::Object(Some(p))) => Ok(AttributeValue::Reference(Reference::to(p.clone()))),
            Some(Cell::Region(Some((p, s)))) => Ok(AttributeValue::Reference(
                Reference::to(p.clone()).with_region(region(s)),
            )),
            Some(c) => Ok(AttributeValue::Value(cell_json(c)?)),
            None => Ok(AttributeValue::Value(Value::Null)),
        },
        Extent::Simple(dims) => {
            if matches!(data.kind, Kind::ObjectRef | Kind::RegionRef) {
                if let ([1], [cell]) = (dims.as_slice(), data.cells.as_slice()) {
                    // One reference in a one-element array: hdmf writes and reads it as the reference.
                    return attribute_value(&h5::AttributeData {
                        extent: Extent::Scalar,
                        kind: data.kind.clone(),
                        cells: vec![cell.clone()],
                    });
                }
                return Err(
                    "an array of references in an attribute cannot be stored in Zarr attributes"
                        .into(),
                );
            }
            let values = data
                .cells
                .iter()
                .map(cell_json)
                .collect::<Result<Vec<_>, _>>()?;
            Ok(AttributeValue::Value(nest(&values, dims)))
        }
    }
}

/// Nested lists of `dims` over `flat` (C order).
fn nest(flat: &[Value], dims: &[u64]) -> Value {
    match dims {
        [] => flat.first().cloned().unwrap_or(Value::Null),
        [_] => Value::Array(flat.to_vec()),
        [first, rest @ ..] => {
            let inner: u64 = rest.iter().product();
            let inner = inner as usize;
            if inner == 0 {
                return Value::Array((0..*first).map(|_| nest(&[], rest)).collect());
            }
            Value::Array(flat.chunks(inner).map(|c| nest(c, rest)).collect())
        }
    }
}

/// A float as JSON; non-finite values as the dtype crate's markers, written as the bare tokens
/// zarr-python writes (`NaN`, `Infinity`).
fn float_json(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or_else(
        || neurochunk_dtype::json::non_finite_value(v),
        Value::Number,
    )
}

fn cell_json(cell: &Cell) -> Result<Value, String> {
    Ok(match cell {
        Cell::Int(v) => Value::from(*v),
        Cell::UInt(v) => Value::from(*v),
        Cell::Float(v) => float_json(*v),
        Cell::Bool(b) => Value::Bool(*b),
        Cell::Text(t, _) => Value::String(t.clone()),
        Cell::Object(None) | Cell::Region(None) => Value::Null,
        Cell::Object(Some(p)) => Reference::to(p.clone()).to_json(false),
        Cell::Region(Some((p, s))) => Reference::to(p.clone())
            .with_region(region(s))
            .to_json(false),
        Cell::Compound(fields) => {
            Value::Array(fields.iter().map(cell_json).collect::<Result<_, _>>()?)
        }
    })
}

pub(crate) fn region(selection: &H5Selection) -> Region {
    match selection {
        H5Selection::All => Region::Slices(Vec::new()),
        H5Selection::Slices(axes) => Region::Slices(
            axes.iter()
                .map(|&(start, stop, step)| Some(RegionSlice { start, stop, step }))
                .collect(),
        ),
        H5Selection::Points(points) => Region::Points(points.clone()),
    }
}

// ---------------------------------------------------------------------------------------------
// Datasets

pub(crate) fn data_type(kind: &Kind) -> Option<DataType> {
    Some(match kind {
        Kind::Bool => DataType::Bool,
        Kind::Int { size, signed } | Kind::Enum { size, signed } => match (size, signed) {
            (1, true) => DataType::Int8,
            (2, true) => DataType::Int16,
            (4, true) => DataType::Int32,
            (8, true) => DataType::Int64,
            (1, false) => DataType::UInt8,
            (2, false) => DataType::UInt16,
            (4, false) => DataType::UInt32,
            (8, false) => DataType::UInt64,
            _ => return None,
        },
        Kind::Float { size: 2 } => DataType::Float16,
        Kind::Float { size: 4 } => DataType::Float32,
        Kind::Float { size: 8 } => DataType::Float64,
        _ => return None,
    })
}

fn import_dataset(
    ctx: &Ctx,
    ds: &Dataset,
    path: &str,
    attrs: &[(String, AttributeValue)],
    writer: &mut NwbWriter,
    summary: &mut ImportSummary,
    progress: &dyn Progress,
) -> Hdf5Result<()> {
    let info = h5::dataset_info(ds).map_err(|m| ctx.err(path, m))?;
    if let Kind::Unsupported(what) = &info.ty.kind {
        return Err(ctx.err(path, format!("unsupported element type: {what}")));
    }
    if matches!(info.layout, Layout::Virtual) {
        summary
            .notes
            .push(format!("{path}: a virtual dataset, copied as its values"));
    }
    let dims = match &info.extent {
        Extent::Simple(d) => Some(d.clone()),
        Extent::Scalar => None,
        Extent::Null => {
            summary.notes.push(format!(
                "{path}: an empty (null) dataspace, written as an empty 1-d dataset"
            ));
            Some(vec![0])
        }
    };
    if let (Some(dims), Some(dt)) = (&dims, data_type(&info.ty.kind)) {
        if matches!(info.extent, Extent::Simple(_)) {
            stream_numeric(
                ctx, ds, path, attrs, &info, dims, &dt, writer, summary, progress,
            )?;
            summary.streamed += 1;
            return Ok(());
        }
    }
    let cells = if matches!(info.extent, Extent::Null) {
        Vec::new()
    } else {
        h5::read_dataset_cells(ctx.file, ds, &info).map_err(|m| ctx.err(path, m))?
    };
    let shape: Vec<usize> = dims
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|&d| d as usize)
        .collect();
    let value = dataset_value(&info.ty.kind, &cells).map_err(|m| ctx.err(path, m))?;
    let data = NwbDataset {
        shape,
        scalar: dims.is_none(),
        value,
    };
    let options = DatasetOptions {
        chunks: ctx.options.chunks.get(path).cloned(),
        dims: None,
    };
    writer.dataset(path, None, &data, attrs, &options)?;
    Ok(())
}

fn dataset_value(kind: &Kind, cells: &[Cell]) -> Result<DatasetValue, String> {
    if let Some(dt) = data_type(kind) {
        let size = dt.fixed_size().unwrap_or(1);
        let mut bytes = Vec::with_capacity(cells.len() * size);
        for c in cells {
            push_number(&mut bytes, &dt, c)?;
        }
        return Ok(DatasetValue::Numeric {
            data_type: dt,
            bytes,
        });
    }
    Ok(match kind {
        Kind::FixedString { utf8, .. } | Kind::VlenString { utf8 } => DatasetValue::Text {
            values: cells
                .iter()
                .map(|c| match c {
                    Cell::Text(t, _) => t.clone(),
                    _ => String::new(),
                })
                .collect(),
            bytes: !utf8,
        },
        Kind::ObjectRef | Kind::RegionRef => {
            DatasetValue::References(cells.iter().map(cell_reference).collect())
        }
        Kind::Compound { fields, .. } => {
            let mut out_fields = Vec::with_capacity(fields.len());
            for (name, _, k) in fields {
                let kind = if let Some(dt) = data_type(k) {
                    FieldKind::Numeric(dt)
                } else {
                    match k {
                        Kind::FixedString { .. } | Kind::VlenString { .. } => FieldKind::Text,
                        Kind::ObjectRef | Kind::RegionRef => FieldKind::Reference,
                        other => {
                            return Err(format!(
                                "compound field '{name}' of type {other:?} cannot be stored"
                            ))
                        }
                    }
                };
                out_fields.push(CompoundField {
                    name: name.clone(),
                    kind,
                });
            }
            let rows = cells
                .iter()
                .map(|c| match c {
                    Cell::Compound(values) => values
                        .iter()
                        .zip(&out_fields)
                        .map(|(v, f)| {
                            Ok(match (&f.kind, v) {
                                (FieldKind::Reference, v) => {
                                    FieldValue::Reference(cell_reference(v))
                                }
                                (FieldKind::Text, Cell::Text(t, _)) => FieldValue::Text(t.clone()),
                                (FieldKind::Text, _) => FieldValue::Text(String::new()),
                                (FieldKind::Numeric(_), v) => FieldValue::Number(cell_json(v)?),
                            })
                        })
                        .collect::<Result<Vec<_>, String>>(),
                    _ => Err("expected a compound element".to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?;
            DatasetValue::Compound {
                fields: out_fields,
                rows,
            }
        }
        other => return Err(format!("unsupported element type {other:?}")),
    })
}

fn cell_reference(cell: &Cell) -> Option<Reference> {
    match cell {
        Cell::Object(Some(p)) => Some(Reference::to(p.clone())),
        Cell::Region(Some((p, s))) => Some(Reference::to(p.clone()).with_region(region(s))),
        _ => None,
    }
}

pub(crate) fn push_number(out: &mut Vec<u8>, dt: &DataType, cell: &Cell) -> Result<(), String> {
    let (i, u, f) = match *cell {
        Cell::Int(v) => (v, v as u64, v as f64),
        Cell::UInt(v) => (v as i64, v, v as f64),
        Cell::Float(v) => (v as i64, v as u64, v),
        Cell::Bool(b) => (i64::from(b), u64::from(b), f64::from(u8::from(b))),
        _ => return Err("expected a number".into()),
    };
    match dt {
        DataType::Bool => out.push(u8::from(u != 0)),
        DataType::Int8 => out.extend((i as i8).to_le_bytes()),
        DataType::Int16 => out.extend((i as i16).to_le_bytes()),
        DataType::Int32 => out.extend((i as i32).to_le_bytes()),
        DataType::Int64 => out.extend(i.to_le_bytes()),
        DataType::UInt8 => out.extend((u as u8).to_le_bytes()),
        DataType::UInt16 => out.extend((u as u16).to_le_bytes()),
        DataType::UInt32 => out.extend((u as u32).to_le_bytes()),
        DataType::UInt64 => out.extend(u.to_le_bytes()),
        DataType::Float16 => out.extend(f64_to_f16(f).to_le_bytes()),
        DataType::Float32 => out.extend((f as f32).to_le_bytes()),
        DataType::Float64 => out.extend(f.to_le_bytes()),
        other => return Err(format!("unexpected numeric type {other}")),
    }
    Ok(())
}

fn f64_to_f16(v: f64) -> u16 {
    let bits = (v as f32).to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let frac = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if frac != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 31 {
        sign | 0x7c00
    } else if e <= 0 {
        if e < -10 {
            sign
        } else {
            let m = (frac | 0x80_0000) >> (1 - e + 13);
            sign | m as u16
        }
    } else {
        sign | ((e as u16) << 10) | (frac >> 13) as u16
    }
}

/// The Zarr codecs equal to an HDF5 filter pipeline, when every filter has one whose stored
/// bytes are the same (so chunks can be copied as they are).
fn zarr_codecs(filters: &[h5::Filter], element_size: usize) -> Option<Vec<Codec>> {
    let mut out = Vec::new();
    for f in filters {
        out.push(match f.id {
            // deflate: zlib streams (numcodecs `zlib`).
            1 => Codec::Zlib {
                level: f.values.first().copied().unwrap_or(6).min(9),
            },
            2 if f.values.first().is_none_or(|&s| s as usize == element_size) => Codec::Shuffle,
            // The Zstandard plugin stores plain frames.
            32015 => Codec::Zstd {
                level: f.values.first().map_or(0, |&l| l as i32),
                checksum: false,
            },
            // The Blosc plugin stores Blosc frames: [rev, version, typesize, size, clevel,
            // shuffle, compressor].
            32001 if f.values.len() >= 7 => Codec::Blosc {
                clevel: f.values[4].min(9) as u8,
                shuffle: match f.values[5] {
                    0 => BloscShuffle::NoShuffle,
                    2 => BloscShuffle::BitShuffle,
                    _ => BloscShuffle::Shuffle,
                },
                cname: match f.values[6] {
                    0 => BloscCompressor::BloscLz,
                    1 => BloscCompressor::Lz4,
                    2 => BloscCompressor::Lz4Hc,
                    4 => BloscCompressor::Zlib,
                    5 => BloscCompressor::Zstd,
                    _ => return None,
                },
            },
            _ => return None,
        });
    }
    Some(out)
}

/// Whether the library can apply every filter of the pipeline.
fn check_filters(ctx: &Ctx, path: &str, filters: &[h5::Filter]) -> Hdf5Result<()> {
    for f in filters {
        if !h5::filter_available(f.id) {
            return Err(ctx.err(
                path,
                format!(
                    "HDF5 filter id {} ({}) is not available: no Zarr codec stores the same bytes and the HDF5 library has no plugin to decode it",
                    f.id,
                    if f.name.is_empty() { "unnamed" } else { f.name.as_str() }
                ),
            ));
        }
    }
    Ok(())
}

/// About `target` bytes per chunk: the whole array when small, else each axis halved in turn.
fn guess_chunks(shape: &[u64], item: usize, target: usize) -> Vec<usize> {
    let mut chunks: Vec<usize> = shape.iter().map(|&d| (d as usize).max(1)).collect();
    let bytes = |c: &[usize]| c.iter().product::<usize>().saturating_mul(item.max(1));
    let mut axis = 0;
    while bytes(&chunks) > target && chunks.iter().any(|&c| c > 1) {
        if chunks[axis] > 1 {
            chunks[axis] = chunks[axis].div_ceil(2);
        }
        axis = (axis + 1) % chunks.len();
    }
    chunks
}

const DEFAULT_CHUNK_BYTES: usize = 1 << 20;
/// The largest chunk read into memory (HDF5's own limit is 4 GiB).
const MAX_CHUNK_BYTES: u64 = 1 << 31;

/// A box of elements read through the library: start, shape, little-endian elements.
type DecodedBox = (Vec<u64>, Vec<u64>, Vec<u8>);

#[allow(clippy::too_many_arguments)]
fn stream_numeric(
    ctx: &Ctx,
    ds: &Dataset,
    path: &str,
    attrs: &[(String, AttributeValue)],
    info: &DatasetInfo,
    dims: &[u64],
    dt: &DataType,
    writer: &mut NwbWriter,
    summary: &mut ImportSummary,
    progress: &dyn Progress,
) -> Hdf5Result<()> {
    let item = info.ty.kind.size();
    let hdf5_chunks: Option<Vec<usize>> = match &info.layout {
        Layout::Chunked { chunks } => Some(chunks.iter().map(|&c| c as usize).collect()),
        _ => None,
    };
    let chunks = if let Some(c) = ctx.options.chunks.get(path) {
        if c.len() != dims.len() || c.contains(&0) {
            return Err(ctx.err(
                path,
                format!("chunk shape {c:?} does not fit the dataset's shape {dims:?}"),
            ));
        }
        c.clone()
    } else if let Some(target) = ctx.options.chunk_bytes {
        guess_chunks(dims, item, target)
    } else if let Some(c) = &hdf5_chunks {
        c.clone()
    } else {
        guess_chunks(dims, item, DEFAULT_CHUNK_BYTES)
    };
    let mapped = zarr_codecs(&info.filters, item);
    // The stored chunks are Zarr chunks of the same description (same chunk shape, element
    // layout and codecs): they are copied as they are, or (other compressors asked for)
    // decoded here in parallel; anything else goes through the library.
    let direct =
        hdf5_chunks.as_ref() == Some(&chunks) && mapped.is_some() && info.ty.file_size == item;
    let raw = direct && writer.compressors().is_none();
    if !direct {
        check_filters(ctx, path, &info.filters)?;
    }
    let source_chain = if direct && !raw {
        let filters = crate::lindi::numcodecs_filters(&info.filters, item).unwrap_or_default();
        let file_endian = if info.ty.big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        let v2 = neurochunk_dtype::v2::dtype_to_json(dt, file_endian)
            .map_err(|e| ctx.err(path, e.to_string()))?;
        let doc = serde_json::json!({
            "chunks": chunks, "compressor": null, "dtype": v2.dtype, "fill_value": null,
            "filters": if filters.is_empty() { Value::Null } else { Value::Array(filters) },
            "order": "C", "shape": dims, "zarr_format": 2,
        });
        let meta = neurochunk_array::ArrayMetadata::from_v2(&doc, None, "hdf5")
            .map_err(|e| ctx.err(path, e.to_string()))?;
        Some(meta)
    } else {
        None
    };
    let endian = if raw && info.ty.big_endian {
        Endian::Big
    } else {
        Endian::Little
    };
    let fill = info.fill.clone().map_or(FillValue::Zero, FillValue::Bytes);
    // Filters the chain cannot express are dropped for the convention's default compression.
    let codecs = match &mapped {
        Some(c) => Some(c.clone()),
        None if info.filters.is_empty() => None,
        None => {
            summary.notes.push(format!(
                "{path}: HDF5 filters {} have no Zarr equivalent; re-compressed",
                info.filters
                    .iter()
                    .map(|f| f.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            None
        }
    };
    let array = writer.create_array(path, None, attrs, dims, dt, &chunks, endian, codecs, fill)?;
    if dims.contains(&0) {
        return Ok(());
    }
    let grid: Vec<u64> = dims
        .iter()
        .zip(&chunks)
        .map(|(&d, &c)| d.div_ceil(c as u64))
        .collect();
    let count: u64 = grid.iter().product();
    let chunk_elements: u64 = chunks.iter().map(|&c| c as u64).product();
    if chunk_elements.saturating_mul(item as u64) > MAX_CHUNK_BYTES {
        return Err(ctx.err(
            path,
            format!("chunk shape {chunks:?} holds more than {MAX_CHUNK_BYTES} bytes"),
        ));
    }
    if direct {
        // Where each chunk is, under the library's lock; the stored chunks are moved after
        // the walk, together with every other dataset's. A chunk stored with a filter skipped
        // (its mask) is read through the library here.
        let mut stored = Vec::new();
        for n in 0..count {
            let idx = unravel(n, &grid);
            let (start, shape) = chunk_box(&idx, &chunks, dims);
            match h5::chunk_location(ds, &start)
                .map_err(|m| ctx.err(path, format!("chunk {idx:?}: {m}")))?
            {
                None => progress.advance(chunk_elements_in(&idx, &chunks, dims) * item as u64),
                Some((addr, size, 0)) => stored.push((n, addr, size)),
                Some(_) => {
                    let buf = read_through_library(ctx, ds, info, path, &start, &shape)?;
                    array
                        .write(
                            &Selection::from_box(&start, &shape),
                            &ArrayBytes::Fixed(buf),
                        )
                        .map_err(|e| ctx.err(path, e.to_string()))?;
                    summary.chunks_encoded += 1;
                    progress.advance(chunk_elements_in(&idx, &chunks, dims) * item as u64);
                }
            }
        }
        ctx.jobs
            .lock()
            .map_err(|_| ctx.err(path, "chunk job list poisoned"))?
            .push(CopyJob {
                path: path.to_string(),
                array,
                source: source_chain,
                chunks: stored,
                grid,
                chunk_shape: chunks,
                dims: dims.to_vec(),
                item,
            });
        summary.bytes += dims.iter().product::<u64>() * item as u64;
        return Ok(());
    }
    // Chunks the library decodes (other filters, other chunking): read in batches under its
    // lock, encoded and written in parallel.
    let batch = (rayon::current_num_threads() as u64 * 4)
        .max(8)
        .min((64u64 << 20) / (chunk_elements * item as u64).max(1))
        .max(1);
    let mut next = 0u64;
    while next < count {
        let end = (next + batch).min(count);
        let mut decoded: Vec<DecodedBox> = Vec::with_capacity((end - next) as usize);
        for n in next..end {
            let (start, shape) = chunk_box(&unravel(n, &grid), &chunks, dims);
            let buf = read_through_library(ctx, ds, info, path, &start, &shape)?;
            decoded.push((start, shape, buf));
        }
        next = end;
        summary.chunks_encoded += decoded.len() as u64;
        decoded
            .into_par_iter()
            .try_for_each(|(start, shape, buf)| -> Hdf5Result<()> {
                let elements: u64 = shape.iter().product();
                let selection = Selection::from_box(&start, &shape);
                array
                    .write(&selection, &ArrayBytes::Fixed(buf))
                    .map_err(|e| ctx.err(path, e.to_string()))?;
                progress.advance(elements * item as u64);
                Ok(())
            })?;
    }
    summary.bytes += dims.iter().product::<u64>() * item as u64;
    Ok(())
}

/// Move the stored chunks of every job: one parallel pass over the chunks of all datasets
/// (no barrier between datasets or batches; each worker holds one chunk at a time, so memory
/// stays at a few chunks per core). Returns the chunks copied as stored and those re-encoded.
fn run_copy_jobs(ctx: &Ctx, jobs: &[CopyJob], progress: &dyn Progress) -> Hdf5Result<(u64, u64)> {
    let copied = AtomicU64::new(0);
    let encoded = AtomicU64::new(0);
    jobs.par_iter()
        .flat_map(|job| job.chunks.par_iter().map(move |chunk| (job, chunk)))
        .try_for_each(|(job, &(n, addr, size))| -> Hdf5Result<()> {
            let path = job.path.as_str();
            let idx = unravel(n, &job.grid);
            let start = addr.checked_add(ctx.userblock);
            if start
                .and_then(|s| s.checked_add(size))
                .is_none_or(|end| end > ctx.file_len)
                || size > MAX_CHUNK_BYTES
            {
                return Err(ctx.err(
                    path,
                    format!("chunk {idx:?}: {size} bytes at byte {addr} lie outside the file (truncated or corrupt)"),
                ));
            }
            let bytes = read_at(&ctx.raw, addr + ctx.userblock, size)
                .map_err(|e| ctx.err(path, format!("chunk {idx:?} at byte {addr}: {e}")))?;
            match &job.source {
                None => {
                    job.array
                        .store()
                        .set(&job.array.chunk_key(&idx), bytes.into())
                        .map_err(|e| ctx.err(path, e.to_string()))?;
                    copied.fetch_add(1, Ordering::Relaxed);
                }
                Some(meta) => {
                    let decoded = meta
                        .codecs
                        .decode(bytes, &meta.chunk_repr())
                        .map_err(|e| ctx.err(path, format!("chunk {idx:?} at byte {addr}: {e}")))?;
                    job.array
                        .store_chunk(&idx, decoded)
                        .map_err(|e| ctx.err(path, e.to_string()))?;
                    encoded.fetch_add(1, Ordering::Relaxed);
                }
            }
            progress.advance(chunk_elements_in(&idx, &job.chunk_shape, &job.dims) * job.item as u64);
            Ok(())
        })?;
    Ok((copied.into_inner(), encoded.into_inner()))
}

/// The first element of chunk `idx` and its shape inside the array (cut at the edge).
fn chunk_box(idx: &[u64], chunks: &[usize], dims: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let start: Vec<u64> = idx
        .iter()
        .zip(chunks)
        .map(|(&i, &c)| i * c as u64)
        .collect();
    let shape = start
        .iter()
        .zip(chunks)
        .zip(dims)
        .map(|((&s, &c), &d)| (c as u64).min(d - s))
        .collect();
    (start, shape)
}

/// The elements of the box at `start` of `shape`, read (and decoded) through the library.
fn read_through_library(
    ctx: &Ctx,
    ds: &Dataset,
    info: &DatasetInfo,
    path: &str,
    start: &[u64],
    shape: &[u64],
) -> Hdf5Result<Vec<u8>> {
    let mut buf = vec![0u8; shape.iter().product::<u64>() as usize * info.ty.kind.size()];
    h5::read_box(ds, info, start, shape, &mut buf)
        .map_err(|m| ctx.err(path, format!("reading elements at {start:?}: {m}")))?;
    Ok(buf)
}

/// Elements of chunk `idx` inside the array.
fn chunk_elements_in(idx: &[u64], chunks: &[usize], dims: &[u64]) -> u64 {
    idx.iter()
        .zip(chunks)
        .zip(dims)
        .map(|((&i, &c), &d)| (c as u64).min(d - i * c as u64))
        .product()
}

pub(crate) fn unravel(mut n: u64, grid: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; grid.len()];
    for axis in (0..grid.len()).rev() {
        idx[axis] = n % grid[axis];
        n /= grid[axis];
    }
    idx
}

fn read_at(file: &std::fs::File, offset: u64, size: u64) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt;
    let mut buf = vec![0u8; size as usize];
    file.read_exact_at(&mut buf, offset)?;
    Ok(buf)
}
