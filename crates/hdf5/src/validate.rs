//! Validating HDF5 NWB files: the file is imported through [`import_into`] into a scratch
//! store that nothing else sees (memory for files up to [`HDF5_MEMORY_LIMIT`] bytes, a
//! temporary directory removed afterwards above that) and the import is validated. The import
//! keeps every object path, so the problems name the HDF5 objects; the report names the HDF5
//! file.

use std::path::Path;
use std::sync::Arc;

use neurochunk_hdmf::validate::{validate_with, Report, SchemaSet, ValidateOptions};
use neurochunk_hdmf::{Convention, FileLocation, NwbFile, NwbWriter, ReadOptions, WriteOptions};
use neurochunk_store::{FsStore, MemoryStore, Store};

use crate::error::{Hdf5Error, Hdf5Result};
use crate::import::{import_into, ImportOptions};

/// Files up to this size are imported into memory to be validated; larger ones into a
/// temporary directory.
pub const HDF5_MEMORY_LIMIT: u64 = 256 << 20;

/// Whether `path` is an HDF5 file (its signature, also after a user block).
pub fn is_hdf5_file(path: &Path) -> bool {
    path.is_file() && crate::h5::is_hdf5(path)
}

/// An HDF5 file imported for reading: the NWB file over the scratch store, which lives as long
/// as this value (a temporary directory is removed when it is dropped).
pub struct ImportedFile {
    /// The imported file (external links resolved beside the HDF5 file, as the import names
    /// them).
    pub file: NwbFile,
    _scratch: Option<tempfile::TempDir>,
}

impl ImportedFile {
    /// The temporary directory holding the import (`None`: it is in memory).
    pub fn scratch_dir(&self) -> Option<&Path> {
        self._scratch.as_ref().map(|d| d.path())
    }
}

/// Import the HDF5 file `source` into scratch storage (memory up to `memory_limit` bytes of
/// file, otherwise a temporary directory) with `options` (the convention and the external
/// link policy; compressors and chunking are kept as stored) and open the result.
pub fn import_scratch(
    source: &Path,
    options: &ImportOptions,
    memory_limit: u64,
) -> Hdf5Result<ImportedFile> {
    let name = source.display().to_string();
    let size = std::fs::metadata(source)
        .map_err(|e| Hdf5Error::file(&name, e.to_string()))?
        .len();
    let (store, scratch): (Arc<dyn Store>, _) = if size <= memory_limit {
        (Arc::new(MemoryStore::new()), None)
    } else {
        let dir = tempfile::Builder::new()
            .prefix("neurochunk-validate-")
            .tempdir()
            .map_err(|e| Hdf5Error::file(&name, format!("temporary directory: {e}")))?;
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
        (store, Some(dir))
    };
    let options = ImportOptions {
        write: WriteOptions {
            compressors: None,
            ..options.write.clone()
        },
        chunk_bytes: None,
        chunks: Default::default(),
        ..options.clone()
    };
    // Named after the HDF5 file, so that every error names it.
    let location = || FileLocation::named(store.clone(), "", name.clone());
    let writer = NwbWriter::create_at(location(), options.convention, options.write.clone())?;
    import_into(source, writer, &options, &|_: u64| {})?;
    let file = NwbFile::open_location(location(), ReadOptions::default())?;
    Ok(ImportedFile {
        file,
        _scratch: scratch,
    })
}

/// Validate the HDF5 NWB file `source` against the namespaces it caches (or those `options`
/// give), through an import into scratch storage.
pub fn validate_hdf5(source: &Path, options: &ValidateOptions) -> Hdf5Result<Report> {
    let imported = import_scratch(
        source,
        &ImportOptions::new(Convention::Legacy),
        HDF5_MEMORY_LIMIT,
    )?;
    let docs = neurochunk_hdmf::validate::namespaces_for(&imported.file, options)?;
    let schema = SchemaSet::from_namespace_docs(&docs);
    let mut report = validate_with(&imported.file, &schema);
    report.file = source.display().to_string();
    Ok(report)
}

/// A file opened to be validated: NWB on Zarr where it is, or an HDF5 file imported into
/// scratch storage (removed when this is dropped).
pub enum Validated {
    /// A file on Zarr (a directory, a URL, a LINDI reference file).
    Zarr(NwbFile),
    /// An HDF5 file, imported.
    Hdf5(ImportedFile),
}

impl Validated {
    /// The file to validate.
    pub fn file(&self) -> &NwbFile {
        match self {
            Validated::Zarr(file) => file,
            Validated::Hdf5(imported) => &imported.file,
        }
    }
}

/// Open the NWB file at `location` to validate it, its external links confined by
/// `external` ([`NwbFile::open_any`]): a local HDF5 file is imported into scratch storage
/// (the legacy convention, which keeps ASCII text apart from UTF-8); anything else is opened
/// where it is. Errors are one line naming the file. The one way the command line and the
/// Python package open files for validation.
#[cfg(feature = "remote")]
pub fn open_for_validation(
    location: &neurochunk_store::StoreLocation,
    remote: &neurochunk_store::RemoteOptions,
    external: &neurochunk_hdmf::ExternalPolicy,
) -> Result<Validated, String> {
    if let Some(path) = location.local_path() {
        if is_hdf5_file(path) {
            let options = ImportOptions::with_external(Convention::Legacy, external)
                .map_err(|e| e.to_string())?;
            return import_scratch(path, &options, HDF5_MEMORY_LIMIT)
                .map(Validated::Hdf5)
                .map_err(|e| e.to_string());
        }
        if !path.exists() {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    NwbFile::open_any(location, remote, true, external)
        .map(Validated::Zarr)
        .map_err(|e| e.to_string())
}

/// Validate the file `opened` against the namespaces `options` name (cached, or given), the
/// report naming the file `name`.
pub fn validate_opened(
    opened: &Validated,
    name: &str,
    options: &ValidateOptions,
) -> Result<Report, String> {
    let file = opened.file();
    let docs =
        neurochunk_hdmf::validate::namespaces_for(file, options).map_err(|e| e.to_string())?;
    let mut report = validate_with(file, &SchemaSet::from_namespace_docs(&docs));
    report.file = name.to_string();
    Ok(report)
}
