//! Engine errors as the package's exception classes (`neurochunk/_errors.py`), and the guard
//! that keeps a panic inside the engine from surfacing as anything but a `neurochunk.Error`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use neurochunk::store::replace::ReplaceError;
use neurochunk::{ArrayError, StoreError};
use pyo3::prelude::*;
use pyo3::types::PyString;

/// An exception of class `name` from `neurochunk._errors` with `message`.
pub(crate) fn py_error(name: &str, message: impl Into<String>) -> PyErr {
    let message = message.into();
    Python::attach(|py| {
        let made = py
            .import("neurochunk._errors")
            .and_then(|m| m.getattr(name))
            .and_then(|class| class.call1((PyString::new(py, &message),)));
        match made {
            Ok(value) => PyErr::from_value(value),
            // The package is broken (e.g. the module was imported outside it): still an error.
            Err(err) => err,
        }
    })
}

/// Bad input from the caller (a `ValueError`).
pub(crate) fn invalid(message: impl Into<String>) -> PyErr {
    py_error("InvalidInputError", message)
}

/// The exception class an engine error belongs to.
fn class_of(err: &ArrayError) -> &'static str {
    match err {
        ArrayError::NotFound(_) => "NodeNotFoundError",
        ArrayError::Store(store) => store_class(store),
        ArrayError::Metadata { .. }
        | ArrayError::Codecs { .. }
        | ArrayError::Chunk { .. }
        | ArrayError::ChunkCorrupt { .. } => "CorruptDataError",
        ArrayError::Selection { .. } | ArrayError::Unsupported { .. } => "InvalidInputError",
        ArrayError::Kept(inner) => class_of(inner),
    }
}

pub(crate) fn store_class(err: &StoreError) -> &'static str {
    match err {
        StoreError::NotFound { .. } => "NodeNotFoundError",
        StoreError::InvalidKey { .. } | StoreError::InvalidUrl { .. } => "InvalidInputError",
        StoreError::ReadOnly { .. } => "ReadOnlyError",
        StoreError::RangeOutOfBounds { .. } => "CorruptDataError",
        _ => "StoreError",
    }
}

/// An engine error as a Python exception.
pub(crate) fn to_py(err: ArrayError) -> PyErr {
    py_error(class_of(&err), err.to_string())
}

/// The exception class of a check whether a destination may be replaced: a refusal is a
/// [`NodeExistsError`](../neurochunk/_errors.py) (a `FileExistsError`).
pub(crate) fn replace_class(err: &ReplaceError) -> &'static str {
    match err {
        ReplaceError::Store(store) => store_class(store),
        ReplaceError::Io { .. } => "StoreError",
        _ => "NodeExistsError",
    }
}

/// A failed check whether a destination may be replaced, as a Python exception.
pub(crate) fn replace_to_py(err: ReplaceError) -> PyErr {
    py_error(replace_class(&err), err.to_string())
}

/// A store error as a Python exception.
pub(crate) fn store_to_py(err: StoreError) -> PyErr {
    py_error(store_class(&err), err.to_string())
}

/// Run `f` without the GIL; a panic (a bug, never expected on any input) becomes a
/// `neurochunk.Error` instead of unwinding into the interpreter.
pub(crate) fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, ArrayError> + Send,
) -> PyResult<T> {
    detached_at(py, "", f)
}

/// [`detached`] for work on the node the user knows as `location`: its errors start with
/// the location (the engine names nodes by their path inside the store, `/` for its root).
pub(crate) fn detached_at<T: Send>(
    py: Python<'_>,
    location: &str,
    f: impl FnOnce() -> Result<T, ArrayError> + Send,
) -> PyResult<T> {
    let outcome = py.detach(|| catch_unwind(AssertUnwindSafe(f)));
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) if location.is_empty() => Err(to_py(err)),
        Ok(Err(err)) => Err(py_error(class_of(&err), format!("{location}: {err}"))),
        Err(panic) => Err(panic_error(panic)),
    }
}

/// A caught panic as a `neurochunk.Error`.
pub(crate) fn panic_error(panic: Box<dyn std::any::Any + Send>) -> PyErr {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    py_error(
        "Error",
        format!("internal error in neurochunk (please report): {what}"),
    )
}
