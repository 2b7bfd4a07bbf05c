//! Validating NWB files wherever they are: an HDF5 file is validated in place, through its
//! [`Hdf5Store`] view (nothing is imported or copied); the view keeps every object path, so
//! the problems name the HDF5 objects, and the report names the HDF5 file.

use std::path::Path;
use std::sync::Arc;

use neurochunk_hdmf::validate::{validate_with, Report, SchemaSet, ValidateOptions};
use neurochunk_hdmf::NwbFile;
use neurochunk_store::FsStore;

use crate::error::{Hdf5Error, Hdf5Result};
use crate::view::{Hdf5Files, Hdf5Store};

/// Whether `path` is an HDF5 file (its signature, also after a user block).
pub fn is_hdf5_file(path: &Path) -> bool {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return false;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    path.is_file() && neurochunk_h5::is_hdf5(&FsStore::read_only(dir), name).unwrap_or(false)
}

/// Open the HDF5 NWB file at `path` where it is (external links resolved beside it).
pub fn open_hdf5_file(path: &Path) -> Hdf5Result<NwbFile> {
    let name = path.display().to_string();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Hdf5Error::file(&name, "not a file name"))?;
    let store = Arc::new(FsStore::read_only(dir));
    if !neurochunk_h5::is_hdf5(store.as_ref(), file_name)
        .map_err(|e| Hdf5Error::file(&name, e.to_string()))?
    {
        return Err(Hdf5Error::file(&name, "not an HDF5 file"));
    }
    let view = Hdf5Store::open(store, file_name, &name)?;
    let resolver = neurochunk_hdmf::FsResolver {
        files: Some(Arc::new(Hdf5Files)),
        ..Default::default()
    };
    Ok(NwbFile::open_location(
        neurochunk_hdmf::FileLocation::named(Arc::new(view), "", name),
        neurochunk_hdmf::ReadOptions {
            use_consolidated: true,
            resolver: Some(Arc::new(resolver)),
        },
    )?)
}

/// Validate the HDF5 NWB file `source` against the namespaces it caches (or those `options`
/// give), in place.
pub fn validate_hdf5(source: &Path, options: &ValidateOptions) -> Hdf5Result<Report> {
    let file = open_hdf5_file(source)?;
    let name = source.display().to_string();
    validate_opened(&file, &name, options).map_err(|m| Hdf5Error::file(&name, m))
}

/// Open the NWB file at `location` to validate it, its external links confined by
/// `external` ([`NwbFile::open_any`], HDF5 files included whatever `external.files` says):
/// a Zarr tree, a LINDI reference file or an HDF5 file, local or remote, opened where it is.
/// Errors are one line naming the file. The one way the command line and the Python package
/// open files for validation.
#[cfg(feature = "remote")]
pub fn open_for_validation(
    location: &neurochunk_store::StoreLocation,
    remote: &neurochunk_store::RemoteOptions,
    external: &neurochunk_hdmf::ExternalPolicy,
) -> Result<NwbFile, String> {
    if let Some(path) = location.local_path() {
        if !path.exists() {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    let mut policy = external.clone();
    policy.files.get_or_insert_with(crate::view::hdf5_files);
    NwbFile::open_any(location, remote, true, &policy).map_err(|e| e.to_string())
}

/// Validate the file `file` against the namespaces `options` name (cached, or given), the
/// report naming the file `name`.
pub fn validate_opened(
    file: &NwbFile,
    name: &str,
    options: &ValidateOptions,
) -> Result<Report, String> {
    let docs =
        neurochunk_hdmf::validate::namespaces_for(file, options).map_err(|e| e.to_string())?;
    let mut report = validate_with(file, &SchemaSet::from_namespace_docs(&docs));
    report.file = name.to_string();
    Ok(report)
}
