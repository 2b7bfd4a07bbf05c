//! Locations to stores: the one place that knows how a path (and later a URL) becomes a
//! [`Store`], so that remote stores plug in here without touching the rest.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurochunk::{FsStore, Store};
use pyo3::prelude::*;

/// An opened location: the store and the node path inside it (`""`: the store's root).
pub(crate) struct Location {
    /// The store holding the node.
    pub store: Arc<dyn Store>,
    /// The node's path within the store.
    pub path: String,
    /// How the location is named in messages and reprs.
    pub display: String,
}

/// Open `location` (a local directory path today, or a path through a LINDI reference file)
/// as a store rooted at it, writable unless `read_only`.
pub(crate) fn open_store(location: &str, read_only: bool) -> PyResult<Location> {
    if location.contains("://") {
        return Err(crate::errors::invalid(format!(
            "'{location}': URLs are not supported yet; give a local directory path"
        )));
    }
    // A path through a LINDI reference file (`x.lindi.json/group/array`): its read-only store
    // and the key after it.
    if let Some((file, key)) = neurochunk::store::lindi::split_reference_path(Path::new(location)) {
        if !read_only {
            return Err(crate::errors::invalid(format!(
                "'{location}': a LINDI reference file is read-only; open it with mode 'r'"
            )));
        }
        let store = neurochunk::store::LindiStore::open(&file, &[])
            .map_err(|e| crate::errors::invalid(format!("'{location}': {e}")))?;
        return Ok(Location {
            store: Arc::new(store),
            path: key,
            display: location.to_string(),
        });
    }
    let root: PathBuf = Path::new(location).to_path_buf();
    let store: Arc<dyn Store> = if read_only {
        Arc::new(FsStore::read_only(root))
    } else {
        Arc::new(FsStore::new(root))
    };
    Ok(Location {
        store,
        path: String::new(),
        display: location.to_string(),
    })
}
