//! Icechunk repositories from Python: creating one, its history and names, and sessions
//! (`nc.icechunk.session`) that every path inside the repository opens as until they commit.

use std::sync::Mutex;

use neurochunk::array::fork_merge::ElementMerge;
use neurochunk::store::icechunk::{Fork, ForkSession, Repo, Session, Version};
use neurochunk::store::{RemoteOptions, StoreLocation};
use neurochunk::StoreError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{json, Value};

use crate::errors::{detached, invalid, store_to_py};
use crate::store::remote_options;

/// A location and the remote options (with the version) of its `storage_options` JSON.
fn parse(location: &str, options: &str) -> PyResult<(StoreLocation, RemoteOptions)> {
    let options: Value = serde_json::from_str(options)
        .map_err(|e| invalid(format!("storage_options are not valid JSON: {e}")))?;
    let remote = remote_options(&options).map_err(|reason| {
        store_to_py(StoreError::InvalidUrl {
            url: location.to_string(),
            reason,
        })
    })?;
    Ok((StoreLocation::parse(location).map_err(store_to_py)?, remote))
}

/// Run a store call without the GIL.
fn run<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, StoreError> + Send) -> PyResult<T> {
    detached(py, || f().map_err(Into::into))
}

/// Create an empty repository at `location` (with its `main` branch).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn icechunk_init(py: Python<'_>, location: &str, options: &str) -> PyResult<()> {
    let (location, remote) = parse(location, options)?;
    run(py, || Repo::create(&location, &remote).map(|_| ()))
}

/// The history of the version `options` names (newest first), the branches and the tags,
/// as JSON: `{"snapshots": [{id, parent, time, message}], "branches": {name: id},
/// "tags": {name: id}}`.
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn icechunk_log(py: Python<'_>, location: &str, options: &str) -> PyResult<String> {
    let (location, remote) = parse(location, options)?;
    run(py, || {
        let repo = Repo::open(&location, &remote)?;
        let version = remote.version.clone().unwrap_or_default();
        let snapshots: Vec<Value> = repo
            .log(&version)?
            .into_iter()
            .map(|s| json!({"id": s.id, "parent": s.parent, "time": s.time, "message": s.message}))
            .collect();
        let named = |refs: Vec<neurochunk::store::icechunk::NamedRef>| -> Value {
            refs.into_iter()
                .map(|r| (r.name, Value::String(r.snapshot)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        };
        Ok(json!({
            "snapshots": snapshots,
            "branches": named(repo.branches()?),
            "tags": named(repo.tags()?),
        })
        .to_string())
    })
}

/// Create a tag (`kind` "tag") or a branch at the version `options` names; returns the
/// snapshot id.
#[pyfunction]
#[pyo3(signature = (location, kind, name, options="{}"))]
pub(crate) fn icechunk_create_ref(
    py: Python<'_>,
    location: &str,
    kind: &str,
    name: &str,
    options: &str,
) -> PyResult<String> {
    let (location, remote) = parse(location, options)?;
    let is_tag = match kind {
        "tag" => true,
        "branch" => false,
        other => {
            return Err(invalid(format!(
                "kind must be 'tag' or 'branch', not {other:?}"
            )))
        }
    };
    run(py, || {
        let repo = Repo::open(&location, &remote)?;
        let from = remote.version.clone().unwrap_or_default();
        if is_tag {
            repo.create_tag(name, &from)
        } else {
            repo.create_branch(name, &from)
        }
    })
}

/// An open session on a branch (see `neurochunk.icechunk.session`).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawSession {
    session: Mutex<Option<Session>>,
    branch: String,
    repository: String,
}

impl RawSession {
    /// The session while open (a panic elsewhere leaves it as it was).
    fn held(&self) -> std::sync::MutexGuard<'_, Option<Session>> {
        self.session.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self) -> PyResult<Session> {
        self.held().take().ok_or_else(|| self.closed())
    }
}

#[pymethods]
impl RawSession {
    /// The branch the session commits to.
    #[getter]
    fn branch(&self) -> String {
        self.branch.clone()
    }

    /// The repository, as given.
    #[getter]
    fn repository(&self) -> String {
        self.repository.clone()
    }

    /// True while the session is open.
    #[getter]
    fn open(&self) -> bool {
        self.held().is_some()
    }

    /// True when the session holds changes not committed yet.
    #[getter]
    fn has_changes(&self) -> bool {
        self.held().as_ref().is_some_and(Session::has_changes)
    }

    /// Commit and close; the new snapshot's id, or None when nothing changed.
    fn commit(&self, py: Python<'_>, message: &str) -> PyResult<Option<String>> {
        let session = self.take()?;
        run(py, || Ok(session.commit(message)?.map(|c| c.snapshot)))
    }

    /// Close without committing: the changes are discarded.
    fn abort(&self) -> PyResult<()> {
        drop(self.take()?);
        Ok(())
    }

    /// A fork of the session for another process, as bytes.
    fn fork<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = {
            let held = self.held();
            let session = held.as_ref().ok_or_else(|| self.closed())?;
            detached(py, || {
                session.fork().map(|f| f.to_bytes()).map_err(Into::into)
            })?
        };
        Ok(PyBytes::new(py, &bytes))
    }

    /// Merge forks (bytes given back by workers) into the session; the number of chunks
    /// several forks wrote, combined element by element.
    fn merge(&self, py: Python<'_>, forks: Vec<Vec<u8>>) -> PyResult<usize> {
        let held = self.held();
        let session = held.as_ref().ok_or_else(|| self.closed())?;
        detached(py, || {
            let forks = forks
                .iter()
                .map(|b| Fork::from_bytes(b))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(session.merge(forks, &ElementMerge)?.chunks_combined)
        })
    }
}

impl RawSession {
    fn closed(&self) -> PyErr {
        invalid(format!("the session on branch '{}' is closed", self.branch))
    }
}

/// A fork open in this process (see `neurochunk.icechunk.Fork`).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawFork {
    fork: Mutex<Option<ForkSession>>,
}

#[pymethods]
impl RawFork {
    /// Close the fork here; its bytes, with what was written, for the session's merge.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let fork = self
            .fork
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| invalid("the fork is not open"))?;
        let bytes = detached(py, || {
            fork.finish().map(|f| f.to_bytes()).map_err(Into::into)
        })?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// Open the fork `state` (bytes from `RawSession.fork`) in this process.
#[pyfunction]
pub(crate) fn icechunk_fork_open(py: Python<'_>, state: Vec<u8>) -> PyResult<RawFork> {
    let opened = run(py, || Fork::from_bytes(&state)?.open())?;
    Ok(RawFork {
        fork: Mutex::new(Some(opened)),
    })
}

/// Begin a session on `branch` of the repository at `location`.
#[pyfunction]
#[pyo3(signature = (location, branch, options="{}"))]
pub(crate) fn icechunk_session(
    py: Python<'_>,
    location: &str,
    branch: &str,
    options: &str,
) -> PyResult<RawSession> {
    let (parsed, remote) = parse(location, options)?;
    let session = run(py, || Session::begin(&parsed, branch, &remote))?;
    Ok(RawSession {
        session: Mutex::new(Some(session)),
        branch: branch.to_string(),
        repository: location.to_string(),
    })
}

/// The repository keys of `storage_options` (the version read, where virtual chunks may be
/// read from), which local paths take too.
pub(crate) const VERSION_KEYS: [&str; 5] = [
    "branch",
    "tag",
    "snapshot",
    "allow_virtual",
    "allow_any_virtual",
];

/// Read `allow_virtual` (a list of directories and URL prefixes) into `out`.
pub(crate) fn allow_virtual_option(value: &Value, out: &mut RemoteOptions) -> Result<(), String> {
    let bad = || "storage_options[\"allow_virtual\"] must be a list of str".to_string();
    let Value::Array(items) = value else {
        return Err(bad());
    };
    out.allowed_virtual = items
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    Ok(())
}

/// Read the version keys of `storage_options` into `out`: at most one of them.
pub(crate) fn version_option(
    key: &str,
    value: &Value,
    out: &mut RemoteOptions,
) -> Result<(), String> {
    let Value::String(name) = value else {
        return if value.is_null() {
            Ok(())
        } else {
            Err(format!("storage_options[{key:?}] must be a str"))
        };
    };
    if out.version.is_some() {
        return Err("give at most one of branch, tag and snapshot".into());
    }
    out.version = Some(match key {
        "branch" => Version::Branch(name.clone()),
        "tag" => Version::Tag(name.clone()),
        _ => Version::Snapshot(name.clone()),
    });
    Ok(())
}
