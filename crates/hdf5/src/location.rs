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
        // No request for the object's existence: probing it answers that too.
        let opened = location
            .open_for(options, Access::Read)
            .map_err(|e| Hdf5Error::file(&display, e.to_string()))?;
        if opened.key.is_empty() || !neurochunk_hdmf::location::may_be_single_file(&opened.key) {
            return Ok(None);
        }
        (opened.store, opened.key)
    };
    let name = match &inside {
        i if i.is_empty() => display.clone(),
        i => display
            .strip_suffix(i.as_str())
            .map_or(display.clone(), |f| f.trim_end_matches('/').to_string()),
    };
    let Some(view) = Hdf5Store::probe(store, &key, &name)? else {
        return Ok(None);
    };
    Ok(Some(OpenedLocation {
        store: Arc::new(view),
        key: inside,
        display,
    }))
}

/// The HDF5 file at a URL: its store and key, checked to exist.
fn remote_source(
    location: &StoreLocation,
    options: &RemoteOptions,
) -> Hdf5Result<(Arc<dyn Store>, String)> {
    let display = location.display();
    let opened = location
        .open_for(options, Access::Read)
        .map_err(|e| Hdf5Error::file(&display, e.to_string()))?;
    let exists = !opened.key.is_empty()
        && opened
            .store
            .size(&opened.key)
            .map_err(|e| Hdf5Error::file(&display, e.to_string()))?
            .is_some();
    if !exists {
        return Err(Hdf5Error::file(&display, "no such file"));
    }
    Ok((opened.store, opened.key))
}

/// Import the HDF5 file at `source` (a path, or a URL read by ranged requests as the import
/// goes: nothing is downloaded first) into a new NWB Zarr file at `destination`
/// ([`crate::import_file`], [`crate::import_store`]).
pub fn import_location(
    source: &StoreLocation,
    remote: &RemoteOptions,
    destination: &std::path::Path,
    options: &crate::ImportOptions,
    progress: &dyn crate::Progress,
) -> Hdf5Result<crate::ImportSummary> {
    if let Some(path) = source.local_path() {
        return crate::import_file(path, destination, options, progress);
    }
    let writer =
        neurochunk_hdmf::NwbWriter::create(destination, options.convention, options.write.clone())?;
    import_location_into(source, remote, writer, options, progress)
}

/// Import the HDF5 file at `source` (a path, or a URL read by ranged requests) into the file
/// `writer` writes (any store: a bucket's prefix, a session of an Icechunk repository), and
/// finish it.
pub fn import_location_into(
    source: &StoreLocation,
    remote: &RemoteOptions,
    writer: neurochunk_hdmf::NwbWriter,
    options: &crate::ImportOptions,
    progress: &dyn crate::Progress,
) -> Hdf5Result<crate::ImportSummary> {
    if let Some(path) = source.local_path() {
        return crate::import_into(path, writer, options, progress);
    }
    let (store, key) = remote_source(source, remote)?;
    crate::import_store(store, &key, &source.display(), writer, options, progress)
}

/// Write the LINDI reference file `output` for the HDF5 file at `source` (a path, or a URL
/// whose chunk entries then name that URL unless [`crate::VirtualOptions::url`] says
/// otherwise), from its metadata only.
pub fn write_reference_location(
    source: &StoreLocation,
    remote: &RemoteOptions,
    output: &std::path::Path,
    options: &crate::VirtualOptions,
) -> Hdf5Result<crate::VirtualSummary> {
    if let Some(path) = source.local_path() {
        return crate::write_reference_file(path, output, options);
    }
    let (store, key) = remote_source(source, remote)?;
    let display = source.display();
    crate::write_reference_store(store, &key, &display, &display, output, options)
}
