//! Locations that name HDF5 files: [`open_hdf5_location`] opens a path or URL of an HDF5 file
//! as its [`Hdf5Store`] view, for the commands and functions that read any store (`tree`,
//! `info`, `get`, `nc.open`).

use std::sync::Arc;

use neurochunk_store::remote::{Access, OpenedLocation};
use neurochunk_store::{FsStore, RemoteOptions, Store, StoreLocation};

use crate::error::{Hdf5Error, Hdf5Result};
use crate::view::Hdf5Store;

/// The HDF5 file `location` names (a local file, or an object at a URL) opened as its
/// read-only Zarr view, the location's key being the object path inside the file for a local
/// path through the file (`session.nwb/acquisition/x`); `None` when the location names anything else (a
/// directory, a prefix, a file of another kind), which the caller opens as usual.
pub fn open_hdf5_location(
    location: &StoreLocation,
    options: &RemoteOptions,
) -> Hdf5Result<Option<OpenedLocation>> {
    let display = location.display();
    // For a local path: the object path inside the file (`session.nwb/acquisition/x`).
    let mut inside = String::new();
    let (store, key): (Arc<dyn Store>, String) = if let Some(path) = location.local_path() {
        // The file is the path itself or the first of its ancestors that is a file.
        let Some(file) = path.ancestors().find(|p| p.is_file()) else {
            return Ok(None);
        };
        if let Ok(rest) = path.strip_prefix(file) {
            inside = rest
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
        }
        let dir = match file.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => std::path::Path::new("."),
        };
        let Some(name) = file.file_name().and_then(|n| n.to_str()) else {
            return Ok(None);
        };
        (Arc::new(FsStore::read_only(dir)), name.to_string())
    } else {
        let opened = location
            .open_for(options, Access::Read)
            .map_err(|e| Hdf5Error::file(&display, e.to_string()))?;
        let is_object = !opened.key.is_empty()
            && opened
                .store
                .size(&opened.key)
                .map_err(|e| Hdf5Error::file(&display, e.to_string()))?
                .is_some();
        if !is_object {
            return Ok(None);
        }
        (opened.store, opened.key)
    };
    if !neurochunk_h5::is_hdf5(store.as_ref(), &key)
        .map_err(|e| Hdf5Error::file(&display, e.to_string()))?
    {
        return Ok(None);
    }
    let name = match &inside {
        i if i.is_empty() => display.clone(),
        i => display
            .strip_suffix(i.as_str())
            .map_or(display.clone(), |f| f.trim_end_matches('/').to_string()),
    };
    let view = Hdf5Store::open(store, &key, &name)?;
    Ok(Some(OpenedLocation {
        store: Arc::new(view),
        key: inside,
        display,
    }))
}
