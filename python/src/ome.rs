//! Multiscale images (`neurochunk.ome`): the normalised description of an image
//! (`MultiscaleImage::to_json`, the same as `neurochunk ome info --json`) and the pyramid
//! builder. The Python side opens the level arrays itself from the description's paths.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use neurochunk::ome::{
    add_label, build_pyramid, label_path, label_pyramid_options, validate, Factors, Layout, Method,
    MultiscaleImage, OmeError, PyramidOptions,
};
use neurochunk::store::StoreError;
use neurochunk::{Array, ArrayError, Store};
use pyo3::prelude::*;
use serde::Deserialize;
use serde_json::json;

use crate::errors::{invalid, panic_error, py_error};
use crate::store::{open_store, Location};

/// The exception class of a multiscale-layer error.
fn ome_class(err: &OmeError) -> &'static str {
    match err {
        OmeError::Array(ArrayError::NotFound(_)) => "NodeNotFoundError",
        OmeError::Array(ArrayError::Selection { .. } | ArrayError::Unsupported { .. }) => {
            "InvalidInputError"
        }
        OmeError::Array(ArrayError::Store(StoreError::NotFound { .. }))
        | OmeError::Store(StoreError::NotFound { .. }) => "NodeNotFoundError",
        OmeError::Array(ArrayError::Store(_)) | OmeError::Store(_) => "StoreError",
        OmeError::Array(_) => "CorruptDataError",
        OmeError::NotAnImage { .. } | OmeError::Invalid { .. } => "InvalidInputError",
        OmeError::Metadata { .. } => "CorruptDataError",
    }
}

/// Run `f` without the GIL; errors name `location`, a panic becomes a `neurochunk.Error`.
fn detached_ome<T: Send>(
    py: Python<'_>,
    location: &str,
    f: impl FnOnce() -> Result<T, OmeError> + Send,
) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(py_error(ome_class(&err), format!("{location}: {err}"))),
        Err(panic) => Err(panic_error(panic)),
    }
}

/// Run `f` on the store and path of the image at `location` (read-only), without the GIL.
fn on_image<T: Send>(
    py: Python<'_>,
    location: &str,
    options: &str,
    f: impl FnOnce(Arc<dyn Store>, &str) -> Result<T, OmeError> + Send,
) -> PyResult<T> {
    let Location {
        store,
        path,
        display,
    } = open_store(location, true, options)?;
    detached_ome(py, &display, move || f(store, &path))
}

/// The normalised description (JSON) of the multiscale image at `location`.
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn ome_describe(py: Python<'_>, location: &str, options: &str) -> PyResult<String> {
    on_image(py, location, options, |store, path| {
        MultiscaleImage::open(store, path).map(|image| image.to_json().to_string())
    })
}

/// The NGFF rules the image at `location` breaks (JSON: a list of `{"path", "rule",
/// "message"}`; empty when valid).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn ome_validate(py: Python<'_>, location: &str, options: &str) -> PyResult<String> {
    on_image(py, location, options, |store, path| {
        let problems = validate(store, path)?;
        let list: Vec<_> = problems
            .iter()
            .map(|p| json!({"path": p.path, "rule": p.rule, "message": p.message}))
            .collect();
        Ok(serde_json::Value::Array(list).to_string())
    })
}

/// The options of `neurochunk.ome.pyramid`, as the Python side sends them (JSON).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PyramidSpec {
    /// `None`: 4 levels for an image, the image's count for a label.
    levels: Option<usize>,
    method: String,
    /// A label image of the OME-Zarr image at `dst`, built on its grid (see `add_label`).
    label: Option<String>,
    factors: Option<String>,
    format: String,
    n5_layout: Option<String>,
    chunks: Option<Vec<usize>>,
    shards: Option<Vec<usize>>,
    axes: Option<Vec<String>>,
    axis_types: Option<Vec<String>>,
    units: Option<Vec<String>>,
    scale: Option<Vec<f64>>,
    translation: Option<Vec<f64>>,
    name: Option<String>,
}

fn target_layout(format: &str, n5_layout: Option<&str>) -> PyResult<Layout> {
    match (format, n5_layout) {
        ("zarr2" | "2", None) => Ok(Layout::OmeZarr04),
        ("zarr3" | "3", None) => Ok(Layout::OmeZarr05),
        ("n5", None | Some("bdv")) => Ok(Layout::N5Bdv),
        ("n5", Some("n5-viewer")) => Ok(Layout::N5Viewer),
        ("n5", Some(other)) => Err(invalid(format!(
            "n5_layout must be \"bdv\" or \"n5-viewer\", not {other:?}"
        ))),
        (_, Some(_)) => Err(invalid("n5_layout is for format=\"n5\"")),
        (other, None) => Err(invalid(format!(
            "format must be \"zarr2\", \"zarr3\" or \"n5\", not {other:?}"
        ))),
    }
}

fn parse_factors(text: &str) -> PyResult<Factors> {
    if text == "auto-isotropic" {
        return Ok(Factors::AutoIsotropic);
    }
    text.split(',')
        .map(|f| match f.trim().parse::<u64>() {
            Ok(v) if v >= 1 => Ok(v),
            _ => Err(invalid(format!(
                "factors must be positive ints or \"auto-isotropic\", not {text:?}"
            ))),
        })
        .collect::<PyResult<Vec<u64>>>()
        .map(Factors::Explicit)
}

impl PyramidSpec {
    fn method(&self) -> PyResult<Method> {
        Method::parse(&self.method).ok_or_else(|| {
            invalid(format!(
                "method must be mean, mode, stride, min or max, not {:?}",
                self.method
            ))
        })
    }

    fn options(self) -> PyResult<PyramidOptions> {
        let method = self.method()?;
        let format = target_layout(&self.format, self.n5_layout.as_deref())?;
        let mut options = PyramidOptions::new(self.levels.unwrap_or(4), method, format);
        options.factors = self.factors.as_deref().map(parse_factors).transpose()?;
        options.chunks = self.chunks;
        options.shards = self.shards;
        options.axes = self.axes;
        options.axis_types = self.axis_types;
        options.units = self.units;
        options.scale = self.scale;
        options.translation = self.translation;
        options.name = self.name;
        Ok(options)
    }
}

/// Build a pyramid of the array at `src` into the new image group `dst`; returns its
/// description (JSON). `progress(n)` is called with each number of chunks written.
#[pyfunction]
#[pyo3(signature = (src, dst, spec, progress=None, src_options="{}", dst_options="{}"))]
pub(crate) fn ome_pyramid(
    py: Python<'_>,
    src: &str,
    dst: &str,
    spec: &str,
    progress: Option<Py<PyAny>>,
    src_options: &str,
    dst_options: &str,
) -> PyResult<String> {
    let spec: PyramidSpec = serde_json::from_str(spec)
        .map_err(|e| invalid(format!("pyramid options are not valid: {e}")))?;
    let source = open_store(src, true, src_options)?;
    let target = open_store(dst, false, dst_options)?;
    let report = |done: u64| {
        if let Some(callback) = &progress {
            Python::attach(|py| {
                if let Err(err) = callback.call1(py, (done,)) {
                    err.write_unraisable(py, None);
                }
            });
        }
    };
    let array = detached_ome(py, &source.display, || {
        Array::open(source.store.clone(), &source.path).map_err(OmeError::from)
    })?;
    if let Some(name) = spec.label.clone() {
        let method = spec.method()?;
        return detached_ome(py, &target.display, || {
            let path = label_path(&target.path, &name)?;
            let image = MultiscaleImage::open(target.store.clone(), &target.path)?;
            let mut options = label_pyramid_options(&image, array.shape(), spec.levels, method)?;
            options.chunks = spec.chunks.clone();
            options.shards = spec.shards.clone();
            options.name = Some(name.clone());
            build_pyramid(&array, target.store.clone(), &path, &options, &report)?;
            add_label(&target.store, &target.path, &name).map(|l| l.to_json().to_string())
        });
    }
    let options = spec.options()?;
    detached_ome(py, &target.display, || {
        build_pyramid(
            &array,
            target.store.clone(),
            &target.path,
            &options,
            &report,
        )
        .map(|image| image.to_json().to_string())
    })
}
