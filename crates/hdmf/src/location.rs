//! Opening an NWB file wherever it is, with one policy for where its external links may lead:
//! [`NwbFile::open_any`] and [`ExternalPolicy`]. The command line and the Python package both
//! open files through it, so a file opened by path or by URL behaves the same from either.

use std::path::PathBuf;
use std::sync::Arc;

use neurochunk_store::remote::{Access, RemoteOptions};
use neurochunk_store::{FsStore, Store, StoreLocation};

use crate::error::{HdmfError, HdmfResult};
use crate::file::{
    ExternalResolver, FileLocation, FileOpener, NwbFile, ReadOptions, ScopedStoreResolver,
};
use crate::fs::FsResolver;

/// Where the external links and references of a file may lead.
///
/// - A file on disk: into the directory holding it, and into the directories `allowed`
///   names ([`FsResolver`]).
/// - A file opened by URL (or through a LINDI reference file): below the prefix holding it in
///   the same store, and below the prefixes `allowed` names in that store
///   ([`ScopedStoreResolver`]); never into another bucket.
///
/// `allow_any` lifts the confinement to the whole disk, or to the whole bucket.
#[derive(Clone, Debug, Default)]
pub struct ExternalPolicy {
    /// More places external files may be in: directories for a file on disk, URLs in the
    /// file's own bucket for a file opened by URL.
    pub allowed: Vec<StoreLocation>,
    /// Allow external files anywhere (on disk), or anywhere in the file's bucket (by URL).
    pub allow_any: bool,
    /// Opens files stored as one file or object (HDF5 NWB files, through
    /// `neurochunk_hdf5::hdf5_files()`): the file opened, and the external files it links to,
    /// may then be such files. `None`: Zarr trees only.
    pub files: Option<Arc<dyn FileOpener>>,
}

impl ExternalPolicy {
    /// The resolver of a file on disk.
    fn on_disk(&self) -> HdmfResult<FsResolver> {
        let mut allowed_roots: Vec<PathBuf> = Vec::new();
        for root in &self.allowed {
            match root.local_path() {
                Some(path) => allowed_roots.push(path.to_path_buf()),
                None => {
                    return Err(HdmfError::Input {
                        file: root.display(),
                        message: "a file on disk allows external files in directories, not \
                                  at URLs"
                            .into(),
                    })
                }
            }
        }
        Ok(FsResolver {
            allowed_roots,
            allow_any: self.allow_any,
            files: self.files.clone(),
        })
    }

    /// The resolver of a file at `key` of the store `location` names (a URL's bucket, a
    /// reference file's tree); `name_of(key)` names a key of that store in errors.
    fn in_store(
        &self,
        location: &StoreLocation,
        key: &str,
        name_of: impl Fn(&str) -> String,
    ) -> HdmfResult<ScopedStoreResolver> {
        if self.allow_any {
            return Ok(ScopedStoreResolver {
                roots: vec![String::new()],
                root_names: vec![name_of("")],
                files: self.files.clone(),
            });
        }
        if self.allowed.is_empty() {
            return Ok(ScopedStoreResolver {
                files: self.files.clone(),
                ..ScopedStoreResolver::parent_of(key, name_of)
            });
        }
        let mut roots = Vec::new();
        let mut root_names = Vec::new();
        for root in &self.allowed {
            match root.key_in_store_of(location) {
                Some(prefix) => {
                    roots.push(prefix);
                    root_names.push(root.display());
                }
                None => {
                    return Err(HdmfError::Input {
                        file: root.display(),
                        message: format!(
                            "not in the bucket of {} (the external files of a file opened by \
                             URL stay in its bucket)",
                            location.display()
                        ),
                    })
                }
            }
        }
        Ok(ScopedStoreResolver {
            roots,
            root_names,
            files: self.files.clone(),
        })
    }
}

impl NwbFile {
    /// Open the NWB file at `location`, however it is stored: a directory on disk (a Zarr
    /// tree), a LINDI reference file (`session.lindi.json`, on disk or by URL), or a prefix of
    /// a bucket (`s3://…`, `gs://…`, `az://…`, `https://…`), read with `remote`'s settings.
    /// External links and references lead only where `external` allows; consolidated
    /// metadata is used when `use_consolidated` and present.
    ///
    /// ```
    /// use neurochunk_hdmf::demo::{write_demo, DemoOptions};
    /// use neurochunk_hdmf::{Convention, ExternalPolicy, NwbFile, WriteOptions};
    /// use neurochunk_store::{RemoteOptions, StoreLocation};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("demo.nwb.zarr");
    /// let demo = DemoOptions {
    ///     convention: Convention::V3,
    ///     scale: 0,
    ///     namespaces: Vec::new(),
    ///     write: WriteOptions::default(),
    /// };
    /// write_demo(&path, &demo)?;
    /// let url = StoreLocation::parse(&format!("file://{}", path.display()))?;
    /// let file = NwbFile::open_any(&url, &RemoteOptions::default(), true, &ExternalPolicy::default())?;
    /// assert!(!file.find_by_type("ElectricalSeries").is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_any(
        location: &StoreLocation,
        remote: &RemoteOptions,
        use_consolidated: bool,
        external: &ExternalPolicy,
    ) -> HdmfResult<NwbFile> {
        if let Some(path) = location.local_path() {
            let resolver: Arc<dyn ExternalResolver> = Arc::new(external.on_disk()?);
            if let (Some(files), true) = (&external.files, path.is_file()) {
                let (dir, name) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
                    (Some(dir), Some(name)) => (dir, name),
                    _ => return Err(not_nwb(location, "not a file name")),
                };
                let dir = if dir.as_os_str().is_empty() {
                    std::path::Path::new(".")
                } else {
                    dir
                };
                let store: Arc<dyn Store> = Arc::new(FsStore::read_only(dir));
                let Some(file) = files.open_file(store, name, &path.display().to_string())? else {
                    return Err(not_nwb(
                        location,
                        "neither a directory tree nor an HDF5 file",
                    ));
                };
                return NwbFile::open_location(
                    file,
                    ReadOptions {
                        use_consolidated,
                        resolver: Some(resolver),
                    },
                );
            }
            return NwbFile::open_with(
                path,
                ReadOptions {
                    use_consolidated,
                    resolver: Some(resolver),
                },
            );
        }
        let display = location.display();
        let opened = location
            .open_for(remote, Access::Read)
            .map_err(|e| HdmfError::Store {
                file: display.clone(),
                source: Box::new(e),
            })?;
        let resolver = external.in_store(location, &opened.key, |key| opened.display_key(key))?;
        let options = ReadOptions {
            use_consolidated,
            resolver: Some(Arc::new(resolver)),
        };
        // A single object (an HDF5 file) rather than a prefix of a tree.
        if let Some(files) = external
            .files
            .as_ref()
            .filter(|_| may_be_single_file(&opened.key))
        {
            let is_object = !opened.key.is_empty()
                && opened
                    .store
                    .size(&opened.key)
                    .map_err(|e| HdmfError::store(&display, e))?
                    .is_some();
            if is_object {
                let Some(file) = files.open_file(opened.store.clone(), &opened.key, &display)?
                else {
                    return Err(not_nwb(location, "an object that is not an HDF5 file"));
                };
                return NwbFile::open_location(file, options);
            }
        }
        NwbFile::open_location(
            FileLocation::named(opened.store.clone(), &opened.key, display),
            options,
        )
    }
}

fn not_nwb(location: &StoreLocation, message: &str) -> HdmfError {
    HdmfError::NotNwb {
        file: location.display(),
        message: message.into(),
    }
}

/// Whether the object at `key` may be a file stored as one value (an HDF5 file), worth one
/// size request to find out: not a key naming a Zarr or N5 tree by its suffix (`.zarr`,
/// `.n5`), which is opened as a tree without that request.
pub fn may_be_single_file(key: &str) -> bool {
    let name = key.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let lower = name.to_ascii_lowercase();
    !name.is_empty() && !lower.ends_with(".zarr") && !lower.ends_with(".n5") && !key.ends_with('/')
}
