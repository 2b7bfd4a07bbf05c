//! NWB files on Zarr (`neurochunk.nwb`): typed objects, attributes, links, references and
//! region references, datasets (numeric ones as lazy arrays of the engine), cached
//! specifications, conversion between the conventions; validation (HDF5 files through an
//! import into scratch storage) and the import of HDF5 files.
//!
//! The Python side builds its objects from what this module returns; it never sees the
//! conventions' markers: attributes come with references decoded, datasets as numbers, text,
//! references or compound rows.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use neurochunk::dtype::json::{to_python_json, PyJsonStyle};
use neurochunk::hdf5::validate::{open_for_validation, validate_opened};
use neurochunk::hdf5::{
    import_location, write_reference_location, Hdf5Error, ImportOptions, VirtualOptions,
};
use neurochunk::nwb::load_namespace_file;
use neurochunk::nwb::validate::{result_json, status_of, ValidateOptions, VALID};

use neurochunk::nwb::demo::{write_demo, DemoOptions};
use neurochunk::nwb::{
    convert_file, AttributeValue, Convention, Dataset, DatasetValue, ExternalPolicy, FieldKind,
    FieldValue, HdmfError, NodeKind, NwbFile, Reference, WriteOptions,
};
use neurochunk::store::{RemoteOptions, StoreError, StoreLocation};
use neurochunk::{ArrayError, DataType};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{json, Value};

use crate::codecs::Role;
use crate::errors::{invalid, panic_error, py_error};
use crate::node::{index_runs, numpy_descr, RawArray, Run};
use crate::store::{is_url, remote_options};

fn hdmf_class(err: &HdmfError) -> &'static str {
    match err {
        HdmfError::Array { source, .. } => match source.as_ref() {
            ArrayError::NotFound(_) => "NodeNotFoundError",
            ArrayError::Selection { .. } | ArrayError::Unsupported { .. } => "InvalidInputError",
            ArrayError::Store(StoreError::NotFound { .. }) => "NodeNotFoundError",
            ArrayError::Store(_) => "StoreError",
            _ => "CorruptDataError",
        },
        HdmfError::Store { source, .. } => match source.as_ref() {
            StoreError::NotFound { .. } => "NodeNotFoundError",
            StoreError::ReadOnly { .. } => "ReadOnlyError",
            StoreError::InvalidKey { .. } | StoreError::InvalidUrl { .. } => "InvalidInputError",
            _ => "StoreError",
        },
        HdmfError::NotFound { .. } => "NodeNotFoundError",
        HdmfError::NotNwb { .. } | HdmfError::Input { .. } | HdmfError::Invalid { .. } => {
            "InvalidInputError"
        }
        HdmfError::ExternalRefused { .. } | HdmfError::ExternalOutsideStore { .. } => {
            "InvalidInputError"
        }
        HdmfError::Malformed { .. } | HdmfError::LinkCycle { .. } => "CorruptDataError",
        HdmfError::Replace(replace) => crate::errors::replace_class(replace),
    }
}

fn hdmf_err(err: HdmfError) -> PyErr {
    py_error(hdmf_class(&err), err.to_string())
}

/// Run `f` without the GIL, a panic becoming a `neurochunk.Error`.
fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, HdmfError> + Send,
) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(hdmf_err(e)),
        Err(panic) => Err(panic_error(panic)),
    }
}

fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Group => "group",
        NodeKind::Dataset => "dataset",
    }
}

fn convention_name(c: Convention) -> &'static str {
    match c {
        Convention::Legacy => "legacy",
        Convention::V3 => "v3",
    }
}

fn parse_convention(name: &str) -> PyResult<Convention> {
    match name.to_ascii_lowercase().as_str() {
        "v3" | "3" | "zarr3" => Ok(Convention::V3),
        "legacy" | "v2" | "2" | "zarr2" => Ok(Convention::Legacy),
        other => Err(invalid(format!(
            "unknown convention {other:?} (\"v3\" or \"legacy\")"
        ))),
    }
}

fn reference_json(r: &Reference) -> Value {
    r.to_json(true)
}

/// A dataset's elements as `(shape, kind, payload)` for the Python side: `kind` is
/// `"numeric"` (payload: `(descr JSON, bytes)`), `"text"` (a list of str), `"references"` or
/// `"compound"` (JSON text: reference dicts / `{"fields", "rows"}`).
fn dataset_payload(py: Python<'_>, d: Dataset) -> PyResult<(Vec<usize>, bool, String, Py<PyAny>)> {
    let Dataset {
        shape,
        scalar,
        value,
    } = d;
    let (kind, payload): (&str, Py<PyAny>) = match value {
        DatasetValue::Numeric { data_type, bytes } => {
            let descr = numpy_descr(&data_type).to_string();
            (
                "numeric",
                (descr, PyBytes::new(py, &bytes))
                    .into_pyobject(py)?
                    .into_any()
                    .unbind(),
            )
        }
        DatasetValue::Text { values, .. } => {
            ("text", values.into_pyobject(py)?.into_any().unbind())
        }
        DatasetValue::References(refs) => {
            let list: Vec<Value> = refs
                .iter()
                .map(|r| r.as_ref().map_or(Value::Null, reference_json))
                .collect();
            (
                "references",
                Value::Array(list)
                    .to_string()
                    .into_pyobject(py)?
                    .into_any()
                    .unbind(),
            )
        }
        DatasetValue::Compound { fields, rows } => {
            let fields: Vec<Value> = fields
                .iter()
                .map(|f| match &f.kind {
                    FieldKind::Numeric(dt) => json!([f.name, "numeric", numpy_descr(dt)]),
                    FieldKind::Text => json!([f.name, "text", null]),
                    FieldKind::Reference => json!([f.name, "reference", null]),
                })
                .collect();
            let rows: Vec<Value> = rows
                .iter()
                .map(|row| {
                    Value::Array(
                        row.iter()
                            .map(|cell| match cell {
                                FieldValue::Number(v) => v.clone(),
                                FieldValue::Text(t) => Value::String(t.clone()),
                                FieldValue::Reference(r) => {
                                    r.as_ref().map_or(Value::Null, reference_json)
                                }
                            })
                            .collect(),
                    )
                })
                .collect();
            (
                "compound",
                to_python_json(
                    &json!({"fields": fields, "rows": rows}),
                    PyJsonStyle::COMPACT,
                )
                .into_pyobject(py)?
                .into_any()
                .unbind(),
            )
        }
    };
    Ok((shape, scalar, kind.to_string(), payload))
}

/// An open NWB file (the Python `neurochunk.nwb.File` wraps it); files reached through
/// external links and references are handles of their own.
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawNwbFile {
    file: Arc<NwbFile>,
    display: String,
}

/// A handle on another file reached through a link or reference (`None`: the same file).
fn wrap(file: Option<Arc<NwbFile>>) -> Option<RawNwbFile> {
    file.map(|f| RawNwbFile {
        display: f.name().to_string(),
        file: f,
    })
}

#[pymethods]
impl RawNwbFile {
    /// The file's description as JSON: name, convention, NWB version, whether consolidated
    /// metadata was used, the root's attributes.
    fn info(&self) -> String {
        json!({
            "display": self.display,
            "convention": convention_name(self.file.convention()),
            "storage": if self.file.is_single_file() { "hdf5" } else { "zarr" },
            "nwb_version": self.file.nwb_version(),
            "consolidated": self.file.used_consolidated_metadata(),
        })
        .to_string()
    }

    /// Every typed object: `(path, kind, type, namespace, object_id)`, sorted by path.
    #[allow(clippy::type_complexity)]
    fn objects(&self) -> Vec<(String, String, String, Option<String>, Option<String>)> {
        self.file
            .typed_objects()
            .into_iter()
            .map(|o| {
                (
                    o.path,
                    kind_name(o.kind).to_string(),
                    o.neurodata_type,
                    o.namespace,
                    o.object_id,
                )
            })
            .collect()
    }

    /// Follow `path` through links: `(file handle, path in that file, kind)`; the handle is
    /// `None` when the target is in this file.
    fn resolve(
        &self,
        py: Python<'_>,
        path: &str,
    ) -> PyResult<(Option<RawNwbFile>, String, String)> {
        let file = self.file.clone();
        let p = path.to_string();
        let target = detached(py, move || file.resolve(&p))?;
        let kind = kind_name(target.kind).to_string();
        let path = target.path.clone();
        Ok((wrap(target.file), path, kind))
    }

    /// Where a reference (its dict form, JSON) leads: `(file handle, path, kind)` as
    /// [`RawNwbFile::resolve`].
    fn dereference(
        &self,
        py: Python<'_>,
        reference: &str,
    ) -> PyResult<(Option<RawNwbFile>, String, String)> {
        let value: Value = serde_json::from_str(reference)
            .map_err(|e| invalid(format!("not a reference: {e}")))?;
        let r = Reference::from_json(&value).map_err(invalid)?;
        let file = self.file.clone();
        let target = detached(py, move || file.dereference(&r))?;
        let kind = kind_name(target.kind).to_string();
        let path = target.path.clone();
        Ok((wrap(target.file), path, kind))
    }

    /// The data a reference selects (the target dataset, or its region), as
    /// [`dataset_payload`].
    fn read_reference(
        &self,
        py: Python<'_>,
        reference: &str,
    ) -> PyResult<(Vec<usize>, bool, String, Py<PyAny>)> {
        let value: Value = serde_json::from_str(reference)
            .map_err(|e| invalid(format!("not a reference: {e}")))?;
        let r = Reference::from_json(&value).map_err(invalid)?;
        let file = self.file.clone();
        let d = detached(py, move || file.read_reference(&r))?;
        dataset_payload(py, d)
    }

    /// The members of the group at `path` (in this file, links not followed): `(name, kind)`
    /// with kind `"group"`, `"dataset"` or `"link"`, sorted by name.
    fn children(&self, py: Python<'_>, path: &str) -> PyResult<Vec<(String, String)>> {
        let file = self.file.clone();
        let at = path.to_string();
        detached(py, move || {
            let prefix = if at == "/" {
                "/".to_string()
            } else {
                format!("{}/", at.trim_end_matches('/'))
            };
            let mut out: Vec<(String, String)> = file
                .nodes()
                .filter_map(|(p, kind)| {
                    let rest = p.strip_prefix(&prefix)?;
                    (!rest.is_empty() && !rest.contains('/'))
                        .then(|| (rest.to_string(), kind_name(kind).to_string()))
                })
                .collect();
            for link in file.links_of(&at)? {
                if !out.iter().any(|(n, _)| *n == link.name) {
                    out.push((link.name, "link".into()));
                }
            }
            out.sort();
            Ok(out)
        })
    }

    /// The attributes of the node at `path` in this file (reserved ones hidden) as JSON:
    /// `{name: {"value": v} | {"reference": dict}}`.
    fn attributes(&self, py: Python<'_>, path: &str) -> PyResult<String> {
        let file = self.file.clone();
        let p = path.to_string();
        let attrs = detached(py, move || file.attributes(&p))?;
        let mut out = serde_json::Map::new();
        for (k, v) in attrs {
            out.insert(
                k,
                match v {
                    AttributeValue::Value(v) => json!({ "value": v }),
                    AttributeValue::Reference(r) => json!({ "reference": reference_json(&r) }),
                },
            );
        }
        // Non-finite numbers as the bare `NaN` / `Infinity` tokens Python's json reads.
        Ok(to_python_json(&Value::Object(out), PyJsonStyle::COMPACT))
    }

    /// The links stored anywhere in the file: `(path, target, source)`.
    fn links(&self, py: Python<'_>) -> PyResult<Vec<(String, String, String)>> {
        let file = self.file.clone();
        let links = detached(py, move || file.links())?;
        Ok(links
            .into_iter()
            .map(|l| (l.path, l.target, l.source))
            .collect())
    }

    /// The dataset at `path` in this file: `(shape, scalar, kind, descr)` where `kind` is
    /// that of [`dataset_payload`] and `descr` the NumPy description of numeric data.
    fn dataset_info(
        &self,
        py: Python<'_>,
        path: &str,
    ) -> PyResult<(Vec<u64>, bool, String, Option<String>)> {
        let file = self.file.clone();
        let p = path.to_string();
        detached(py, move || {
            let array = file.open_array(&p)?;
            let shape = array.metadata().shape.clone();
            let scalar = file.is_scalar(&p)?;
            // The kind from an empty read (one element for 0-d and scalar datasets).
            let d = if shape.iter().any(|&n| n > 0) && !scalar {
                let mut axes = vec![neurochunk::AxisSelection::slice(0, 0, 1)];
                axes.extend((1..shape.len()).map(|_| neurochunk::AxisSelection::ALL));
                file.read_dataset(&p, Some(&neurochunk::Selection(axes)))?
            } else {
                file.read_dataset(&p, None)?
            };
            let (kind, descr) = match &d.value {
                DatasetValue::Numeric { data_type, .. } => {
                    ("numeric", Some(numpy_descr(data_type).to_string()))
                }
                DatasetValue::Text { .. } => ("text", None),
                DatasetValue::References(_) => ("references", None),
                DatasetValue::Compound { .. } => ("compound", None),
            };
            Ok((shape, scalar, kind.to_string(), descr))
        })
    }

    /// The engine's array behind the numeric dataset at `path` in this file (lazy reads).
    fn dataset_array(&self, py: Python<'_>, path: &str) -> PyResult<RawArray> {
        let file = self.file.clone();
        let p = path.to_string();
        let array = detached(py, move || file.open_array(&p))?;
        if matches!(array.metadata().data_type, DataType::Custom(_)) {
            return Err(invalid(format!("'{path}' has no NumPy data type")));
        }
        let display = format!("{}{}", self.display.trim_end_matches('/'), path);
        let array = array.with_cache_bytes(crate::node::cache_bytes_for(true, None));
        Ok(RawArray::new(array, &display, true, "{}"))
    }

    /// Read the dataset at `path` in this file, the region `runs` (None: all), as
    /// [`dataset_payload`].
    #[pyo3(signature = (path, runs=None))]
    fn read(
        &self,
        py: Python<'_>,
        path: &str,
        runs: Option<Vec<Run>>,
    ) -> PyResult<(Vec<usize>, bool, String, Py<PyAny>)> {
        let file = self.file.clone();
        let p = path.to_string();
        let selection = runs.map(|r| neurochunk::Selection::from_runs(&index_runs(&r)));
        let d = detached(py, move || file.read_dataset(&p, selection.as_ref()))?;
        dataset_payload(py, d)
    }

    /// The cached specifications: `(namespace, version, documents)`.
    fn specifications(&self, py: Python<'_>) -> PyResult<Vec<(String, String, Vec<String>)>> {
        let file = self.file.clone();
        let specs = detached(py, move || file.specifications())?;
        Ok(specs
            .into_iter()
            .map(|n| (n.name, n.version, n.sources))
            .collect())
    }

    /// One cached specification document as JSON.
    fn specification(
        &self,
        py: Python<'_>,
        namespace: &str,
        version: &str,
        source: &str,
    ) -> PyResult<String> {
        let file = self.file.clone();
        let (n, v, s) = (
            namespace.to_string(),
            version.to_string(),
            source.to_string(),
        );
        let doc = detached(py, move || file.specification(&n, &v, &s))?;
        Ok(doc.to_string())
    }
}

/// The NWB file at `location` (a directory, a LINDI reference file or a URL with its storage
/// options), its external links confined as the command line confines them
/// ([`NwbFile::open_any`]).
fn open_nwb(location: &str, options: &Value) -> Result<NwbFile, HdmfError> {
    let (parsed, remote) = parse_location(location, options).map_err(|e| HdmfError::Store {
        file: location.to_string(),
        source: Box::new(e),
    })?;
    NwbFile::open_any(&parsed, &remote, true, &external_policy())
}

/// External links confined as the command line confines them, HDF5 files opened in place.
fn external_policy() -> ExternalPolicy {
    ExternalPolicy {
        files: Some(neurochunk::hdf5::hdf5_files()),
        ..ExternalPolicy::default()
    }
}

/// A location and the remote options of its `storage_options`.
fn parse_location(
    location: &str,
    options: &Value,
) -> Result<(StoreLocation, RemoteOptions), StoreError> {
    let remote = remote_options(options).map_err(|reason| StoreError::InvalidUrl {
        url: location.to_string(),
        reason,
    })?;
    Ok((StoreLocation::parse(location)?, remote))
}

/// Open the NWB file at `location` (a directory or a URL; `options`: storage options JSON).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn nwb_open(py: Python<'_>, location: &str, options: &str) -> PyResult<RawNwbFile> {
    let options: Value = serde_json::from_str(options)
        .map_err(|e| invalid(format!("storage_options are not valid JSON: {e}")))?;
    if !is_url(location) && !std::path::Path::new(location).exists() {
        return Err(py_error(
            "NodeNotFoundError",
            format!("{location}: no such file or directory"),
        ));
    }
    let loc = location.to_string();
    let file = detached(py, move || open_nwb(&loc, &options))?;
    Ok(RawNwbFile {
        file: Arc::new(file),
        display: location.to_string(),
    })
}

/// Convert the NWB file at `src` into a new file at `dst` in `convention`; returns the
/// summary as JSON.
#[pyfunction]
pub(crate) fn nwb_convert(
    py: Python<'_>,
    src: &str,
    dst: PathBuf,
    convention: &str,
) -> PyResult<String> {
    let convention = parse_convention(convention)?;
    let src = src.to_string();
    let (_, s) = detached(py, move || {
        let file = NwbFile::open(&src)?;
        convert_file(&file, &dst, convention, WriteOptions::default(), &|_| {})
    })?;
    Ok(json!({
        "groups": s.groups,
        "datasets": s.datasets,
        "streamed": s.streamed,
        "links": s.links,
        "namespaces": s.namespaces,
    })
    .to_string())
}

/// Write the demo file (an extracellular electrophysiology session) at `path`; returns what
/// it holds as JSON.
#[pyfunction]
#[pyo3(signature = (path, convention="v3", scale=0))]
pub(crate) fn nwb_demo(
    py: Python<'_>,
    path: PathBuf,
    convention: &str,
    scale: usize,
) -> PyResult<String> {
    let options = DemoOptions {
        convention: parse_convention(convention)?,
        scale,
        namespaces: Vec::new(),
        write: WriteOptions::default(),
    };
    let s = detached(py, move || write_demo(&path, &options))?;
    Ok(json!({
        "electrodes": s.electrodes,
        "samples": s.samples,
        "units": s.units,
        "trials": s.trials,
        "extra_series": s.extra_series,
    })
    .to_string())
}

/// Validate every file at `locations` (NWB on Zarr, URLs, or HDF5 files, which are imported
/// into scratch storage first) against its cached namespaces, the namespace YAML files
/// `namespaces` replacing cached ones of the same name. Returns the problems of all files as
/// one JSON list (as `nwb validate --json` prints it) and the status (0 valid, 1 invalid, 2 a
/// file unreadable or without specifications).
#[pyfunction]
#[pyo3(signature = (locations, namespaces=Vec::new(), options="{}"))]
pub(crate) fn nwb_validate(
    py: Python<'_>,
    locations: Vec<String>,
    namespaces: Vec<PathBuf>,
    options: &str,
) -> PyResult<(String, u8)> {
    let options: Value = serde_json::from_str(options)
        .map_err(|e| invalid(format!("storage_options are not valid JSON: {e}")))?;
    let (problems, status) = detached(py, move || {
        let mut given = Vec::new();
        for path in &namespaces {
            given.extend(load_namespace_file(path)?);
        }
        let validate_options = ValidateOptions {
            namespaces: given,
            use_cached: true,
        };
        let mut status = VALID;
        let mut problems: Vec<Value> = Vec::new();
        let policy = external_policy();
        for location in &locations {
            let result = parse_location(location, &options)
                .map_err(|e| e.to_string())
                .and_then(|(parsed, remote)| open_for_validation(&parsed, &remote, &policy))
                .and_then(|opened| validate_opened(&opened, location, &validate_options));
            status = status.max(status_of(&result));
            problems.extend(result_json(location, &result));
        }
        Ok((problems, status))
    })?;
    Ok((Value::Array(problems).to_string(), status))
}

/// An import's progress, handed to a Python callable as `(done, total)` bytes.
struct PyProgress {
    callback: Py<PyAny>,
    total: AtomicU64,
    done: AtomicU64,
}

impl neurochunk::hdf5::Progress for PyProgress {
    fn total(&self, bytes: u64) {
        self.total.store(bytes, Ordering::Relaxed);
    }

    fn advance(&self, bytes: u64) {
        self.done.fetch_add(bytes, Ordering::Relaxed);
        // Read under the GIL, which serialises the calls: `done` never goes back.
        Python::attach(|py| {
            let done = self.done.load(Ordering::Relaxed);
            let total = self.total.load(Ordering::Relaxed);
            if let Err(err) = self.callback.call1(py, (done, total)) {
                err.write_unraisable(py, None);
            }
        });
    }
}

fn hdf5_err(err: Hdf5Error) -> PyErr {
    match err {
        Hdf5Error::Hdmf(e) => hdmf_err(e),
        other => py_error("InvalidInputError", other.to_string()),
    }
}

/// Import the HDF5 NWB file `src` into a new NWB Zarr file `dst` in `convention`, or with
/// `virtual_refs` write the LINDI reference file `dst` (chunk entries naming `url`, default
/// the source's absolute path). Returns the summary as JSON.
#[pyfunction]
#[pyo3(signature = (src, dst, convention, virtual_refs=false, url=None, chunk_bytes=None,
                    chunks=BTreeMap::new(), compressors=None, progress=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn nwb_import(
    py: Python<'_>,
    src: String,
    dst: PathBuf,
    convention: &str,
    virtual_refs: bool,
    url: Option<String>,
    chunk_bytes: Option<usize>,
    chunks: BTreeMap<String, Vec<usize>>,
    compressors: Option<&str>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let (source, remote) =
        parse_location(&src, &Value::Null).map_err(|e| invalid(format!("{src}: {e}")))?;
    if let Some(path) = source.local_path() {
        if !path.exists() {
            return Err(py_error(
                "NodeNotFoundError",
                format!("{}: no such file", path.display()),
            ));
        }
    }
    if virtual_refs {
        let options = VirtualOptions {
            url,
            ..VirtualOptions::default()
        };
        let s = py
            .detach(|| {
                catch_unwind(AssertUnwindSafe(|| {
                    write_reference_location(&source, &remote, &dst, &options)
                }))
            })
            .map_err(panic_error)?
            .map_err(hdf5_err)?;
        return Ok(json!({
            "groups": s.groups,
            "datasets": s.datasets,
            "inline": s.inline,
            "chunk_refs": s.chunk_refs,
            "links": s.links,
            "external_links": s.external_links,
            "notes": s.notes,
        })
        .to_string());
    }
    let options = ImportOptions {
        convention: parse_convention(convention)?,
        write: WriteOptions {
            compressors: compressors
                .map(|c| crate::codecs::parse_codecs(c, Role::Compressors))
                .transpose()?,
            ..WriteOptions::default()
        },
        chunk_bytes,
        chunks: chunks
            .into_iter()
            .map(|(p, s)| (format!("/{}", p.trim_matches('/')), s))
            .collect(),
        ..ImportOptions::default()
    };
    let progress = progress.map(|callback| PyProgress {
        callback,
        total: AtomicU64::new(0),
        done: AtomicU64::new(0),
    });
    let s = py
        .detach(|| {
            catch_unwind(AssertUnwindSafe(|| match &progress {
                Some(p) => import_location(&source, &remote, &dst, &options, p),
                None => import_location(&source, &remote, &dst, &options, &|_: u64| {}),
            }))
        })
        .map_err(panic_error)?
        .map_err(hdf5_err)?;
    Ok(json!({
        "groups": s.groups,
        "datasets": s.datasets,
        "streamed": s.streamed,
        "chunks_copied": s.chunks_copied,
        "chunks_encoded": s.chunks_encoded,
        "links": s.links,
        "external_links": s.external_links,
        "namespaces": s.namespaces,
        "bytes": s.bytes,
        "notes": s.notes,
    })
    .to_string())
}
