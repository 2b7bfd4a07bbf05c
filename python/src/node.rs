//! Arrays and groups: handles the Python classes wrap, creation, conversion.

use std::sync::{Arc, Mutex, RwLock};

use neurochunk::array::{walk_nodes, N5AxisOrder, N5BlockCodec, NodeTree, OpenOptions};
use neurochunk::dtype::{v2 as dtype_v2, Endian};
use neurochunk::store::join_key;
use neurochunk::store::replace::{check_prefix, Overwrite};
use neurochunk::{
    Array, ArrayBuilder, ArrayBytes, ArrayError, ConvertOptions, DataType, FillValue, IndexRun,
    NodeMetadata, Selection, Store, ZarrFormat, DEFAULT_CACHE_BYTES,
};
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};
use serde_json::{json, Map, Value};

use crate::codecs::Role;
use crate::errors::{detached, detached_at, invalid, py_error, replace_to_py, store_to_py};
use crate::store::{open_store, Location};

/// Reads and writes larger than this run in slabs of about this size, with a check for
/// signals (Ctrl-C) between slabs.
const SLAB_BYTES: usize = 64 << 20;

/// One axis of a selection as the Python side resolves it (`_indexing.py`): first index,
/// step, count and whether the axis is dropped (an integer index); the engine's
/// [`IndexRun`], taken as it is.
pub(crate) type Run = (u64, i64, u64, bool);

/// The engine's runs of the Python side's.
pub(crate) fn index_runs(runs: &[Run]) -> Vec<IndexRun> {
    runs.iter().map(|&r| IndexRun::from(r)).collect()
}

/// The NumPy description of a data type as the Python side builds its dtype from: a typestr
/// or a field list (in-memory layout, little-endian), `"str"` / `"bytes"` for
/// variable-length text and bytes, `null` for a type NumPy cannot hold.
pub(crate) fn numpy_descr(data_type: &DataType) -> Value {
    match data_type {
        DataType::String => json!("str"),
        DataType::Bytes => json!("bytes"),
        DataType::Custom(_) => Value::Null,
        other => dtype_v2::dtype_to_json(&other.without_field_byte_orders(), Endian::Little)
            .map(|d| d.dtype)
            .unwrap_or(Value::Null),
    }
}

fn format_name(format: ZarrFormat) -> &'static str {
    match format {
        ZarrFormat::V2 => "v2",
        ZarrFormat::V3 => "v3",
        ZarrFormat::N5 => "n5",
        ZarrFormat::Precomputed => "precomputed",
    }
}

fn parse_format(name: &str) -> PyResult<ZarrFormat> {
    match name {
        "v2" | "2" => Ok(ZarrFormat::V2),
        "v3" | "3" => Ok(ZarrFormat::V3),
        "n5" => Ok(ZarrFormat::N5),
        "precomputed" => Ok(ZarrFormat::Precomputed),
        other => Err(invalid(format!(
            "unknown format '{other}' (expected 2, 3, \"n5\" or \"precomputed\")"
        ))),
    }
}

/// The N5 axis order named `name` (`None`: the default, as `attributes.json` lists them).
pub(crate) fn parse_axis_order(name: Option<&str>) -> PyResult<N5AxisOrder> {
    match name {
        None => Ok(N5AxisOrder::Listed),
        Some(n) => N5AxisOrder::parse(n).ok_or_else(|| {
            invalid(format!(
                "n5_axis_order must be 'listed' (N5 Java, tensorstore) or 'reversed' \
                 (zarr-python 2's N5Store, z5), not {n:?}"
            ))
        }),
    }
}

fn parse_json(text: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| invalid(format!("{what} are not valid JSON: {e}")))
}

fn attributes_of(text: &str) -> PyResult<Map<String, Value>> {
    match parse_json(text, "attributes")? {
        Value::Object(map) => Ok(map),
        _ => Err(invalid("attributes must be a dict")),
    }
}

/// Whether a node (array or group) of any format has metadata at `path`.
/// Refuse to replace `path` of `store` when it holds anything that is not part of a Zarr or N5
/// node: zarr-python's `mode="w"` empties whatever is there, but a directory holding files
/// that are not part of a store is refused here ([`NodeTree`], [`replace_to_py`]).
fn check_replaceable(store: &dyn Store, path: &str, display: &str) -> PyResult<()> {
    check_prefix(store, path, display, &NodeTree, Overwrite::Own).map_err(replace_to_py)
}

fn node_exists(store: &dyn Store, path: &str) -> PyResult<bool> {
    for doc in [".zarray", ".zgroup", "zarr.json", "attributes.json"] {
        if store.exists(&join_key(path, doc)).map_err(store_to_py)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The cache budget of an array handle: the one asked for, otherwise
/// [`DEFAULT_CACHE_BYTES`] for a read-only handle and none for a writable one (another
/// writer's changes would not be seen by a reader holding cached chunks; see docs/python.md).
pub(crate) fn cache_bytes_for(read_only: bool, asked: Option<usize>) -> usize {
    asked.unwrap_or(if read_only { DEFAULT_CACHE_BYTES } else { 0 })
}

/// Wrap an opened node for Python: `("array", RawArray)` or `("group", RawGroup)`.
#[allow(clippy::too_many_arguments)]
fn wrap_node(
    py: Python<'_>,
    store: Arc<dyn Store>,
    path: &str,
    display: &str,
    read_only: bool,
    options: &str,
    n5_order: N5AxisOrder,
    cache_bytes: Option<usize>,
    metadata: NodeMetadata,
) -> PyResult<(String, Py<PyAny>)> {
    Ok(match metadata {
        NodeMetadata::Array(meta) => (
            "array".into(),
            Py::new(
                py,
                RawArray::new(
                    Array::from_metadata(store, path, *meta)
                        .with_cache_bytes(cache_bytes_for(read_only, cache_bytes)),
                    display,
                    read_only,
                    options,
                ),
            )?
            .into_any(),
        ),
        NodeMetadata::Group(group) => (
            "group".into(),
            Py::new(
                py,
                RawGroup {
                    store,
                    path: path.to_string(),
                    display: display.to_string(),
                    read_only,
                    format: group.format,
                    options: options.to_string(),
                    n5_order,
                    cache_bytes,
                },
            )?
            .into_any(),
        ),
    })
}

/// `err`, with the message `message()` when it is a missing node (the engine names the node
/// by its path inside the store; the user knows it by the location they gave).
fn not_found_as(py: Python<'_>, err: PyErr, message: impl FnOnce() -> String) -> PyErr {
    let missing = py
        .import("neurochunk._errors")
        .and_then(|m| m.getattr("NodeNotFoundError"))
        .is_ok_and(|class| err.is_instance(py, &class));
    if missing {
        py_error("NodeNotFoundError", message())
    } else {
        err
    }
}

fn display_child(display: &str, rel: &str) -> String {
    if rel.is_empty() {
        display.to_string()
    } else {
        format!("{}/{}", display.trim_end_matches('/'), rel)
    }
}

/// Open the node at `location` (a local path): `("array" | "group", handle)`. Arrays (and
/// the arrays of a group) get `cache_bytes` of cache, by default [`cache_bytes_for`]'s.
#[pyfunction]
#[pyo3(signature = (location, read_only, options="{}", n5_axis_order=None, cache_bytes=None))]
pub(crate) fn open_node(
    py: Python<'_>,
    location: &str,
    read_only: bool,
    options: &str,
    n5_axis_order: Option<&str>,
    cache_bytes: Option<usize>,
) -> PyResult<(String, Py<PyAny>)> {
    let n5_order = parse_axis_order(n5_axis_order)?;
    let Location {
        store,
        path,
        display,
    } = open_store(location, read_only, options)?;
    let opened = store.clone();
    let at = path.clone();
    let open = OpenOptions {
        n5_axis_order: n5_order,
    };
    let node = detached_at(py, &display, move || {
        neurochunk::array::open_node_with(opened.as_ref(), &at, &open)
    })
    .map_err(|e| not_found_as(py, e, || format!("no array or group at '{display}'")))?;
    wrap_node(
        py,
        store,
        &path,
        &display,
        read_only,
        options,
        n5_order,
        cache_bytes,
        node.metadata,
    )
}

/// Remove every key of the node at `location` (its metadata and data, its children).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn remove_node(py: Python<'_>, location: &str, options: &str) -> PyResult<()> {
    let Location {
        store,
        path,
        display,
    } = open_store(location, false, options)?;
    check_replaceable(store.as_ref(), &path, &display)?;
    detached(py, move || {
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}/")
        };
        store.delete_prefix(&prefix).map_err(ArrayError::from)
    })
}

/// Create an array from a JSON specification (see `neurochunk/_core.py`, `_array_spec`).
fn create_array_in(
    py: Python<'_>,
    store: Arc<dyn Store>,
    path: &str,
    display: &str,
    spec: &str,
    fill_value: Option<Vec<u8>>,
    options: &str,
) -> PyResult<RawArray> {
    let spec = parse_json(spec, "array specification")?;
    let get = |key: &str| spec.get(key).cloned().unwrap_or(Value::Null);
    let shape: Vec<u64> = serde_json::from_value(get("shape")).map_err(|e| {
        invalid(format!(
            "shape must be a list of non-negative integers: {e}"
        ))
    })?;
    let object_codec = get("object_codec");
    let (data_type, _) = dtype_v2::dtype_from_json(&get("dtype"), object_codec.as_str())
        .map_err(|e| invalid(format!("unsupported dtype: {e}")))?;
    let data_type = data_type.without_field_byte_orders();
    let format = parse_format(get("format").as_str().unwrap_or("v3"))?;
    let mut builder = ArrayBuilder::new(shape, data_type).format(format);
    let sizes = |key: &str| -> PyResult<Option<Vec<usize>>> {
        serde_json::from_value::<Option<Vec<usize>>>(get(key))
            .map_err(|e| invalid(format!("{key} must be a list of positive integers: {e}")))
    };
    if let Some(chunks) = sizes("chunks")? {
        builder = builder.chunks(chunks);
    }
    if let Some(shards) = sizes("shards")? {
        builder = builder.shards(shards);
    }
    // filters, then the serializer, then the compressors (the format's default when only
    // filters or a serializer are given).
    let list = |key: &str, role| {
        spec.get(key)
            .filter(|v| !v.is_null())
            .map(|v| crate::codecs::parse_codecs(&v.to_string(), role))
            .transpose()
    };
    let filters = list("filters", Role::Filters)?;
    let serializer = list("serializer", Role::Serializer)?;
    let compressors = list("compressors", Role::Compressors)?;
    if filters.is_some() || serializer.is_some() || compressors.is_some() {
        let mut codecs = filters.unwrap_or_default();
        codecs.extend(serializer.unwrap_or_default());
        codecs.extend(compressors.unwrap_or_else(|| neurochunk::array::default_codecs(format)));
        builder = builder.codecs(codecs);
    }
    if let Some(fill) = fill_value {
        builder = builder.fill_value(FillValue::Bytes(fill));
    }
    match get("attributes") {
        Value::Object(attrs) => builder = builder.attributes(attrs),
        Value::Null => {}
        _ => return Err(invalid("attributes must be a dict")),
    }
    match get("dimension_names") {
        Value::Null => {}
        Value::Array(names) => {
            let names = names
                .iter()
                .map(|n| match n {
                    Value::String(s) => Ok(s.clone()),
                    Value::Null => Ok(String::new()),
                    _ => Err(invalid("dimension_names must be strings or None")),
                })
                .collect::<PyResult<Vec<_>>>()?;
            builder = builder.dimension_names(names);
        }
        _ => return Err(invalid("dimension_names must be a list")),
    }
    if let Some(sep) = get("separator").as_str() {
        let mut chars = sep.chars();
        match (chars.next(), chars.next()) {
            (Some(c @ ('/' | '.')), None) => builder = builder.chunk_key_separator(c),
            _ => return Err(invalid("the chunk key separator must be '/' or '.'")),
        }
    }
    if let Some(order) = get("n5_axis_order").as_str() {
        builder = builder.n5_axis_order(parse_axis_order(Some(order))?);
    }
    if let Some(write_empty) = get("write_empty_chunks").as_bool() {
        builder = builder.write_empty_chunks(write_empty);
    }
    let overwrite = get("overwrite").as_bool().unwrap_or(false);
    if !overwrite && node_exists(store.as_ref(), path)? {
        return Err(py_error(
            "NodeExistsError",
            format!("'{display}': a node already exists there (pass overwrite=True to replace it)"),
        ));
    }
    if overwrite {
        check_replaceable(store.as_ref(), path, display)?;
    }
    let path_owned = path.to_string();
    let array = detached_at(py, display, move || {
        if overwrite {
            let prefix = if path_owned.is_empty() {
                String::new()
            } else {
                format!("{path_owned}/")
            };
            store.delete_prefix(&prefix)?;
        }
        builder.create(store, &path_owned)
    })?;
    Ok(RawArray::new(array, display, false, options))
}

/// Create an array at `location` (the store's root).
#[pyfunction]
#[pyo3(signature = (location, spec, fill_value=None, options="{}"))]
pub(crate) fn create_array(
    py: Python<'_>,
    location: &str,
    spec: &str,
    fill_value: Option<Vec<u8>>,
    options: &str,
) -> PyResult<RawArray> {
    let Location {
        store,
        path,
        display,
    } = open_store(location, false, options)?;
    create_array_in(py, store, &path, &display, spec, fill_value, options)
}

/// Create a group at `location` in `format`, replacing what is there when `overwrite`.
#[pyfunction]
#[pyo3(signature = (location, format, attributes, overwrite, options="{}", n5_axis_order=None))]
pub(crate) fn create_group(
    py: Python<'_>,
    location: &str,
    format: &str,
    attributes: &str,
    overwrite: bool,
    options: &str,
    n5_axis_order: Option<&str>,
) -> PyResult<RawGroup> {
    let n5_order = parse_axis_order(n5_axis_order)?;
    let Location {
        store,
        path,
        display,
    } = open_store(location, false, options)?;
    let format = parse_format(format)?;
    let attributes = attributes_of(attributes)?;
    if !overwrite && node_exists(store.as_ref(), &path)? {
        return Err(py_error(
            "NodeExistsError",
            format!("'{display}': a node already exists there (pass overwrite=True to replace it)"),
        ));
    }
    if overwrite {
        check_replaceable(store.as_ref(), &path, &display)?;
    }
    let (s, p) = (store.clone(), path.clone());
    detached_at(py, &display, move || {
        if overwrite {
            s.delete_prefix(&if p.is_empty() {
                String::new()
            } else {
                format!("{p}/")
            })?;
        }
        neurochunk::create_group(s.as_ref(), &p, format, attributes)
    })?;
    Ok(RawGroup {
        store,
        path,
        display,
        read_only: false,
        format,
        options: options.to_string(),
        n5_order,
        cache_bytes: None,
    })
}

/// Convert the node (array or hierarchy) at `src` to `dst`; returns the notes about what the
/// destination format changed, one per line.
#[pyfunction]
#[pyo3(signature = (src, dst, format=None, chunks=None, shards=None, compressors=None, progress=None, src_options="{}", dst_options="{}", n5_axis_order=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn convert(
    py: Python<'_>,
    src: &str,
    dst: &str,
    format: Option<&str>,
    chunks: Option<Vec<usize>>,
    shards: Option<Vec<usize>>,
    compressors: Option<&str>,
    progress: Option<Py<PyAny>>,
    src_options: &str,
    dst_options: &str,
    n5_axis_order: Option<&str>,
) -> PyResult<Vec<String>> {
    let n5_order = parse_axis_order(n5_axis_order)?;
    let source = open_store(src, true, src_options)?;
    let target = open_store(dst, false, dst_options)?;
    if node_exists(target.store.as_ref(), &target.path)? {
        return Err(py_error(
            "NodeExistsError",
            format!("'{dst}': the destination already holds a node"),
        ));
    }
    let options = ConvertOptions {
        format: format.map(parse_format).transpose()?,
        chunks,
        shards,
        compressors: compressors
            .map(|c| crate::codecs::parse_codecs(c, Role::Compressors))
            .transpose()?,
        n5_axis_order: n5_order,
        ..ConvertOptions::default()
    };
    let notes = Mutex::new(Vec::new());
    let report = |done: u64| {
        if let Some(callback) = &progress {
            Python::attach(|py| {
                if let Err(err) = callback.call1(py, (done,)) {
                    err.write_unraisable(py, None);
                }
            });
        }
    };
    let note = |path: &str, changes: &[String]| {
        if let Ok(mut notes) = notes.lock() {
            notes.extend(
                changes
                    .iter()
                    .map(|c| format!("/{}: {c}", path.trim_matches('/'))),
            );
        }
    };
    detached(py, || {
        neurochunk::convert_hierarchy(
            source.store.clone(),
            &source.path,
            target.store.clone(),
            &target.path,
            &options,
            &report,
            &note,
        )
    })?;
    Ok(notes.into_inner().unwrap_or_default())
}

/// A handle on one array: its metadata and region reads and writes (the Python `Array`
/// class wraps it).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawArray {
    inner: RwLock<Array>,
    display: String,
    read_only: bool,
    /// The `storage_options` (JSON) the location was opened with, to reopen it.
    options: String,
}

impl RawArray {
    pub(crate) fn new(array: Array, display: &str, read_only: bool, options: &str) -> Self {
        RawArray {
            inner: RwLock::new(array),
            display: display.to_string(),
            read_only,
            options: options.to_string(),
        }
    }

    fn array(&self) -> Array {
        match self.inner.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn check_writable(&self) -> PyResult<()> {
        if self.read_only {
            Err(py_error(
                "ReadOnlyError",
                format!("'{}' was opened read-only (mode='r')", self.display),
            ))
        } else {
            Ok(())
        }
    }
}

/// The data pointer and byte length of a C-contiguous NumPy array (writable if asked).
fn buffer_of(array: &Bound<'_, PyUntypedArray>, writable: bool) -> PyResult<(*mut u8, usize)> {
    if !array.is_c_contiguous() {
        return Err(invalid("the buffer must be a C-contiguous NumPy array"));
    }
    let raw = array.as_array_ptr();
    // SAFETY: `raw` is a live NumPy array object (borrowed by `array`); we read its fields.
    let (flags, data) = unsafe { ((*raw).fields.flags, (*raw).fields.data as *mut u8) };
    if writable && flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(invalid("the output array is not writable"));
    }
    let len = array
        .len()
        .checked_mul(array.dtype().itemsize())
        .ok_or_else(|| invalid("the buffer is too large"))?;
    Ok((data, len))
}

/// The bytes of `(data, len)` from [`buffer_of`].
///
/// # Safety
/// The array must stay alive and unresized while the slice is used, and nothing else may
/// access its memory meanwhile (the Python side passes arrays it allocated for the call, or
/// contiguous copies it made).
unsafe fn bytes_mut<'a>((data, len): (*mut u8, usize)) -> &'a mut [u8] {
    if len == 0 {
        &mut []
    } else {
        // SAFETY: a C-contiguous array holds `len` bytes at `data` (the caller's contract).
        unsafe { std::slice::from_raw_parts_mut(data, len) }
    }
}

#[pymethods]
impl RawArray {
    /// The array's description as JSON: format, shape, chunks, shards, dtype, codecs,
    /// attributes, dimension names, path.
    fn meta(&self) -> PyResult<String> {
        let array = self.array();
        let meta = array.metadata();
        let (chunks, shards) = match meta.codecs.sharding() {
            Some(sharding) => (
                sharding.inner_chunk_shape().to_vec(),
                Some(meta.chunk_shape.clone()),
            ),
            None => (meta.chunk_shape.clone(), None),
        };
        let description = json!({
            "format": format_name(meta.format),
            "shape": meta.shape,
            "chunks": chunks,
            "shards": shards,
            "dtype": numpy_descr(&meta.data_type),
            // numcodecs `vlen-array`: the numbers of each (one-dimensional) element.
            "ragged_dtype": meta.ragged_element_type().as_ref().map(numpy_descr),
            "data_type": meta.data_type_name(),
            "codecs": meta.codecs.to_v3_json(),
            "attributes": meta.attributes,
            "dimension_names": meta.dimension_names,
            "path": array.path(),
            "display": self.display,
            "read_only": self.read_only,
            "storage_options": parse_json(&self.options, "storage_options")?,
            "n5_axis_order": meta
                .codecs
                .only::<N5BlockCodec>()
                .map(|c| c.axis_order().name()),
        });
        Ok(description.to_string())
    }

    /// The fill value as one element's bytes (in-memory layout; the text or bytes of a
    /// variable-length element), `None` when the array has none (Zarr v2 `null`).
    fn fill_value<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyBytes>> {
        let array = self.array();
        array
            .metadata()
            .fill_value
            .as_ref()
            .map(|f| PyBytes::new(py, f))
    }

    /// The stored metadata document (`.zarray`, `zarr.json`, `attributes.json` or a
    /// precomputed scale's layer `info`) as JSON.
    fn document(&self, py: Python<'_>) -> PyResult<String> {
        let array = self.array();
        let (store, path) = (array.store().clone(), array.path().to_string());
        let format = array.metadata().format;
        detached_at(py, &self.display, move || {
            let key = match format {
                ZarrFormat::V2 => join_key(&path, ".zarray"),
                ZarrFormat::V3 => join_key(&path, "zarr.json"),
                ZarrFormat::N5 => join_key(&path, "attributes.json"),
                // A scale is described by its layer's `info`.
                ZarrFormat::Precomputed => {
                    let layer = path.rsplit_once('/').map_or("", |(layer, _)| layer);
                    join_key(layer, neurochunk::array::precomputed::INFO)
                }
            };
            let bytes = store.get_required(&key)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        })
    }

    /// Read the region `runs` into `out`, a C-contiguous array of the region's shape and the
    /// array's in-memory dtype, chunk by chunk straight into its buffer.
    fn read_into(
        &self,
        py: Python<'_>,
        runs: Vec<Run>,
        out: &Bound<'_, PyUntypedArray>,
    ) -> PyResult<()> {
        let array = self.array();
        let elem = array
            .metadata()
            .data_type
            .fixed_size()
            .ok_or_else(|| invalid("variable-length elements are read with read_variable"))?;
        // SAFETY: `out` is borrowed for the whole call; the Python side allocated it for this
        // read and holds no other reference to it.
        let buffer = unsafe { bytes_mut(buffer_of(out, true)?) };
        let pieces = array.slabs(&index_runs(&runs), SLAB_BYTES);
        let needed = pieces.last().map_or(0, |p| p.elements.end) * elem;
        if buffer.len() != needed {
            return Err(invalid(format!(
                "the output holds {} bytes; the region needs {needed}",
                buffer.len()
            )));
        }
        for slab in pieces {
            let part = &mut buffer[slab.elements.start * elem..slab.elements.end * elem];
            let a = &array;
            detached_at(py, &self.display, move || {
                a.read_runs_into(&slab.runs, part)
            })?;
            py.check_signals()?;
        }
        Ok(())
    }

    /// Read the region `runs` of a variable-length array: a flat list of `str` (strings) or
    /// `bytes`, in C order.
    fn read_variable<'py>(&self, py: Python<'py>, runs: Vec<Run>) -> PyResult<Bound<'py, PyList>> {
        let array = self.array();
        let text = matches!(array.metadata().data_type, DataType::String);
        let sel = Selection::from_runs(&index_runs(&runs));
        let a = &array;
        let (_, data) = detached_at(py, &self.display, move || a.read(&sel))?;
        let ArrayBytes::Variable { data, offsets } = data else {
            return Err(invalid(
                "the array's elements have a fixed size; use read_into",
            ));
        };
        let list = PyList::empty(py);
        for w in offsets.windows(2) {
            let bytes = &data[w[0]..w[1]];
            if text {
                let s = std::str::from_utf8(bytes).map_err(|e| {
                    py_error(
                        "CorruptDataError",
                        format!(
                            "array '{}': a string element is not UTF-8: {e}",
                            self.display
                        ),
                    )
                })?;
                list.append(PyString::new(py, s))?;
            } else {
                list.append(PyBytes::new(py, bytes))?;
            }
        }
        Ok(list)
    }

    /// Write `data` (C-contiguous, the region's shape, the array's in-memory dtype) into the
    /// region `runs`.
    fn write(
        &self,
        py: Python<'_>,
        runs: Vec<Run>,
        data: &Bound<'_, PyUntypedArray>,
    ) -> PyResult<()> {
        self.check_writable()?;
        let array = self.array();
        let elem =
            array.metadata().data_type.fixed_size().ok_or_else(|| {
                invalid("variable-length elements are written with write_variable")
            })?;
        let (ptr, len) = buffer_of(data, false)?;
        // SAFETY: `data` is borrowed for the whole call and only read here; the Python side
        // passes a C-contiguous array of the region's shape and the array's dtype.
        let buffer: &[u8] = if len == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(ptr, len) }
        };
        let pieces = array.slabs(&index_runs(&runs), SLAB_BYTES);
        let needed = pieces.last().map_or(0, |p| p.elements.end) * elem;
        if buffer.len() != needed {
            return Err(invalid(format!(
                "the data holds {} bytes; the region needs {needed}",
                buffer.len()
            )));
        }
        for slab in pieces {
            let part = &buffer[slab.elements.start * elem..slab.elements.end * elem];
            let a = &array;
            // The engine reads the caller's buffer in place (no copy of the slab).
            detached_at(py, &self.display, move || {
                a.write_runs_from(&slab.runs, part)
            })?;
            py.check_signals()?;
        }
        Ok(())
    }

    /// Write a flat list of `str` (or `bytes`) elements, in C order, into the region `runs`
    /// of a variable-length array.
    fn write_variable(
        &self,
        py: Python<'_>,
        runs: Vec<Run>,
        items: &Bound<'_, PyList>,
    ) -> PyResult<()> {
        self.check_writable()?;
        let array = self.array();
        let text = match array.metadata().data_type {
            DataType::String => true,
            DataType::Bytes => false,
            _ => return Err(invalid("the array's elements have a fixed size; use write")),
        };
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(items.len() + 1);
        offsets.push(0);
        for item in items.iter() {
            if text {
                let s = item.cast::<PyString>().map_err(|_| {
                    invalid(format!(
                        "a string array takes str elements, not {}",
                        item.get_type()
                    ))
                })?;
                data.extend_from_slice(s.to_str()?.as_bytes());
            } else {
                let b = item.cast::<PyBytes>().map_err(|_| {
                    invalid(format!(
                        "a bytes array takes bytes elements, not {}",
                        item.get_type()
                    ))
                })?;
                data.extend_from_slice(b.as_bytes());
            }
            offsets.push(data.len());
        }
        let sel = Selection::from_runs(&index_runs(&runs));
        let a = &array;
        detached_at(py, &self.display, move || {
            a.write(&sel, &ArrayBytes::Variable { data, offsets })
        })
    }

    /// Change the shape (chunks wholly outside the new shape are deleted).
    fn resize(&self, py: Python<'_>, shape: Vec<u64>) -> PyResult<()> {
        self.check_writable()?;
        let mut array = self.array();
        let a = &mut array;
        detached_at(py, &self.display, move || a.resize(shape))?;
        if let Ok(mut guard) = self.inner.write() {
            *guard = array;
        }
        Ok(())
    }

    /// Replace the user attributes (a JSON object) and rewrite the metadata.
    fn set_attributes(&self, py: Python<'_>, attributes: &str) -> PyResult<()> {
        self.check_writable()?;
        let attributes = attributes_of(attributes)?;
        let mut array = self.array();
        let a = &mut array;
        detached_at(py, &self.display, move || a.set_attributes(attributes))?;
        if let Ok(mut guard) = self.inner.write() {
            *guard = array;
        }
        Ok(())
    }

    /// The budget of the handle's cache of decoded chunks, in bytes (0: off).
    fn cache_bytes(&self) -> usize {
        self.array().cache_bytes()
    }

    /// Change the budget of the handle's cache (0 turns it off and drops what it holds).
    fn set_cache_bytes(&self, bytes: usize) {
        self.array().set_cache_bytes(bytes);
    }

    /// What the cache holds and its hits and misses: `(bytes, entries, hits, misses)`.
    fn cache_stats(&self) -> (usize, usize, u64, u64) {
        let stats = self.array().cache_stats();
        (stats.bytes, stats.entries, stats.hits, stats.misses)
    }

    /// The number of chunks (shards) stored.
    fn nchunks_stored(&self, py: Python<'_>) -> PyResult<usize> {
        let array = self.array();
        let a = &array;
        detached_at(py, &self.display, move || {
            a.stored_chunks().map(|c| c.len())
        })
    }
}

/// The direct members of the group at `path` (and the group itself first): from its
/// consolidated metadata when it has some, otherwise by listing its directory and reading
/// each child's metadata only (a deep hierarchy is not walked to list one level).
fn direct_members(
    store: &dyn Store,
    path: &str,
    open: &OpenOptions,
) -> Result<Vec<neurochunk::array::NodeEntry>, ArrayError> {
    let root = neurochunk::array::open_node_with(store, path, open)?;
    if matches!(&root.metadata, NodeMetadata::Group(g) if g.consolidated.is_some()) {
        return walk_nodes(store, path, open);
    }
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let mut names = store.list_dir(&prefix)?.prefixes;
    names.retain(|name| !name.starts_with('.'));
    names.sort();
    let mut nodes = Vec::with_capacity(names.len());
    for name in names {
        let child = join_key(path, name.trim_end_matches('/'));
        match neurochunk::array::open_node_with(store, &child, open) {
            Ok(node) => nodes.push(neurochunk::array::NodeEntry {
                path: child,
                metadata: Ok(node.metadata),
            }),
            // A directory without metadata is no node of this level.
            Err(ArrayError::NotFound(_)) => {}
            Err(e @ ArrayError::Store(_)) => return Err(e),
            Err(e) => nodes.push(neurochunk::array::NodeEntry {
                path: child,
                metadata: Err(Arc::new(e)),
            }),
        }
    }
    Ok(nodes)
}

/// A handle on one group (the Python `Group` class wraps it).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawGroup {
    store: Arc<dyn Store>,
    path: String,
    display: String,
    read_only: bool,
    format: ZarrFormat,
    /// The `storage_options` (JSON) the location was opened with, to reopen it.
    options: String,
    /// The axis order N5 members are opened in.
    n5_order: N5AxisOrder,
    /// The cache budget of the arrays opened through the group (`None`: the mode's default).
    cache_bytes: Option<usize>,
}

impl RawGroup {
    fn child_path(&self, name: &str) -> PyResult<String> {
        let name = name.trim_matches('/');
        if name.is_empty()
            || name
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
        {
            return Err(invalid(format!("'{name}' is not a valid node name")));
        }
        Ok(join_key(&self.path, name))
    }

    fn rel<'a>(&self, path: &'a str) -> &'a str {
        path[self.path.len().min(path.len())..].trim_start_matches('/')
    }

    fn check_writable(&self) -> PyResult<()> {
        if self.read_only {
            Err(py_error(
                "ReadOnlyError",
                format!("'{}' was opened read-only (mode='r')", self.display),
            ))
        } else {
            Ok(())
        }
    }
}

#[pymethods]
impl RawGroup {
    /// The group's format (`"v2"`, `"v3"`, `"n5"`), path and attributes, as JSON.
    fn meta(&self, py: Python<'_>) -> PyResult<String> {
        let (store, path) = (self.store.clone(), self.path.clone());
        let node = detached_at(py, &self.display, move || {
            neurochunk::open_node(store.as_ref(), &path)
        })?;
        let (attributes, consolidated) = match node.metadata {
            NodeMetadata::Group(g) => (g.attributes, g.consolidated.is_some()),
            NodeMetadata::Array(_) => return Err(invalid("the node is no longer a group")),
        };
        Ok(json!({
            "format": format_name(self.format),
            "path": self.path,
            "display": self.display,
            "attributes": attributes,
            "consolidated": consolidated,
            "read_only": self.read_only,
            "storage_options": parse_json(&self.options, "storage_options")?,
            "n5_axis_order": (self.format == ZarrFormat::N5).then(|| self.n5_order.name()),
        })
        .to_string())
    }

    /// Every node below the group (all depths when `recursive`, else the direct children):
    /// `(relative path, kind, shape, data type name, error)` sorted by path; `kind` is
    /// `"array"`, `"group"` or `"error"` for a node whose metadata cannot be read.
    #[pyo3(signature = (recursive=false))]
    #[allow(clippy::type_complexity)]
    fn members(
        &self,
        py: Python<'_>,
        recursive: bool,
    ) -> PyResult<
        Vec<(
            String,
            String,
            Option<Vec<u64>>,
            Option<String>,
            Option<String>,
        )>,
    > {
        let (store, path) = (self.store.clone(), self.path.clone());
        let open = OpenOptions {
            n5_axis_order: self.n5_order,
        };
        let nodes = detached_at(py, &self.display, move || {
            if recursive {
                return walk_nodes(store.as_ref(), &path, &open);
            }
            direct_members(store.as_ref(), &path, &open)
        })?;
        let mut out = Vec::new();
        for node in nodes {
            let rel = self.rel(&node.path).to_string();
            if rel.is_empty() || (!recursive && rel.contains('/')) {
                continue;
            }
            out.push(match &node.metadata {
                Ok(NodeMetadata::Array(meta)) => (
                    rel,
                    "array".into(),
                    Some(meta.shape.clone()),
                    Some(meta.data_type_name()),
                    None,
                ),
                Ok(NodeMetadata::Group(_)) => (rel, "group".into(), None, None, None),
                Err(err) => (rel, "error".into(), None, None, Some(err.to_string())),
            });
        }
        Ok(out)
    }

    /// Open the child `name` (a relative path, `a/b` allowed): `("array" | "group", handle)`.
    fn child(&self, py: Python<'_>, name: &str) -> PyResult<(String, Py<PyAny>)> {
        let path = self.child_path(name)?;
        let (store, at) = (self.store.clone(), path.clone());
        let open = OpenOptions {
            n5_axis_order: self.n5_order,
        };
        let node = detached_at(py, &self.display, move || {
            neurochunk::array::open_node_with(store.as_ref(), &at, &open)
        })
        .map_err(|e| {
            not_found_as(py, e, || {
                format!("'{}' has no member '{name}'", self.display)
            })
        })?;
        let display = display_child(&self.display, self.rel(&path));
        wrap_node(
            py,
            self.store.clone(),
            &path,
            &display,
            self.read_only,
            &self.options,
            self.n5_order,
            self.cache_bytes,
            node.metadata,
        )
    }

    /// Whether a child node `name` exists.
    fn contains(&self, name: &str) -> PyResult<bool> {
        match self.child_path(name) {
            Ok(path) => node_exists(self.store.as_ref(), &path),
            Err(_) => Ok(false),
        }
    }

    /// Create (or with `overwrite`, replace) the child group `name` with `attributes` (JSON).
    fn create_group(
        &self,
        py: Python<'_>,
        name: &str,
        attributes: &str,
        overwrite: bool,
    ) -> PyResult<RawGroup> {
        self.check_writable()?;
        let path = self.child_path(name)?;
        let attributes = attributes_of(attributes)?;
        if !overwrite && node_exists(self.store.as_ref(), &path)? {
            return Err(py_error(
                "NodeExistsError",
                format!("'{}': a node named '{name}' already exists", self.display),
            ));
        }
        if overwrite {
            let display = display_child(&self.display, self.rel(&path));
            check_replaceable(self.store.as_ref(), &path, &display)?;
        }
        let (store, at, format) = (self.store.clone(), path.clone(), self.format);
        detached_at(py, &self.display, move || {
            if overwrite {
                store.delete_prefix(&format!("{at}/"))?;
            }
            neurochunk::create_group(store.as_ref(), &at, format, attributes)
        })?;
        Ok(RawGroup {
            store: self.store.clone(),
            display: display_child(&self.display, self.rel(&path)),
            path,
            read_only: false,
            format: self.format,
            options: self.options.clone(),
            n5_order: self.n5_order,
            cache_bytes: self.cache_bytes,
        })
    }

    /// Create the child array `name` from a JSON specification (the group's format unless
    /// the specification names one).
    #[pyo3(signature = (name, spec, fill_value=None))]
    fn create_array(
        &self,
        py: Python<'_>,
        name: &str,
        spec: &str,
        fill_value: Option<Vec<u8>>,
    ) -> PyResult<RawArray> {
        self.check_writable()?;
        let path = self.child_path(name)?;
        let mut spec = parse_json(spec, "array specification")?;
        if let Value::Object(map) = &mut spec {
            map.entry("format")
                .or_insert_with(|| json!(format_name(self.format)));
            if map.get("format").is_some_and(Value::is_null) {
                map.insert("format".into(), json!(format_name(self.format)));
            }
            if map.get("n5_axis_order").is_none_or(Value::is_null) {
                map.insert("n5_axis_order".into(), json!(self.n5_order.name()));
            }
        }
        let display = display_child(&self.display, self.rel(&path));
        create_array_in(
            py,
            self.store.clone(),
            &path,
            &display,
            &spec.to_string(),
            fill_value,
            &self.options,
        )
    }

    /// Remove the child `name` and everything below it.
    fn delete(&self, py: Python<'_>, name: &str) -> PyResult<()> {
        self.check_writable()?;
        let path = self.child_path(name)?;
        if !node_exists(self.store.as_ref(), &path)? {
            return Err(py_error(
                "NodeNotFoundError",
                format!("'{}' has no member '{name}'", self.display),
            ));
        }
        let store = self.store.clone();
        detached_at(py, &self.display, move || {
            store
                .delete_prefix(&format!("{path}/"))
                .map_err(ArrayError::from)
        })
    }

    /// Replace the group's attributes (a JSON object).
    fn set_attributes(&self, py: Python<'_>, attributes: &str) -> PyResult<()> {
        self.check_writable()?;
        let attributes = attributes_of(attributes)?;
        let (store, path, format) = (self.store.clone(), self.path.clone(), self.format);
        detached_at(py, &self.display, move || {
            neurochunk::create_group(store.as_ref(), &path, format, attributes)
        })
    }

    /// Write consolidated metadata for the group; returns the number of nodes covered.
    fn consolidate(&self, py: Python<'_>) -> PyResult<usize> {
        self.check_writable()?;
        let (store, path) = (self.store.clone(), self.path.clone());
        detached_at(py, &self.display, move || {
            neurochunk::consolidate(store.as_ref(), &path)
        })
    }
}
