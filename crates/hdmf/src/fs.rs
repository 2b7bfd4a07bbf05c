//! Filesystem conveniences on top of the store-based core: opening a file by its directory
//! ([`NwbFile::open`]), resolving external links on disk ([`FsResolver`]), and writing a file
//! to a directory aside and publishing it in place ([`NwbWriter::create`]).
//!
//! Everything else in this crate reads and writes through [`Store`] only.

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use neurochunk_array::NodeTree;
use neurochunk_store::staging::{resolve_target, StagedDir};
use neurochunk_store::{FsStore, Store};

use crate::convention::Convention;
use crate::error::{HdmfError, HdmfResult};
use crate::file::{ExternalResolver, FileLocation, FileOpener, NwbFile, ReadOptions};
use crate::write::{NwbWriter, Staging, WriteOptions};

/// The resolver of files opened from disk ([`NwbFile::open`]): a `source` is a path relative
/// to the file's directory (or, as hdmf-zarr 0.10 wrote it, to the directory holding it), or
/// an absolute path (hdmf-zarr 0.1). Paths are canonicalised (symbolic links followed) before
/// they are checked.
///
/// A file may only lead into the directory that holds it, unless [`allowed_roots`] lists
/// other trees or [`allow_any`] lifts the limit; anything else is refused
/// ([`HdmfError::ExternalRefused`], naming the link, its source and the allowed trees).
///
/// It reads the referring file's [`FileLocation::name`] as its path, as [`NwbFile::open`]
/// names files.
///
/// [`allowed_roots`]: FsResolver::allowed_roots
/// [`allow_any`]: FsResolver::allow_any
#[derive(Clone, Debug, Default)]
pub struct FsResolver {
    /// Directory trees external files may be in. Empty: the directory holding the file.
    pub allowed_roots: Vec<PathBuf>,
    /// Follow external links and references anywhere.
    pub allow_any: bool,
    /// Opens external files stored as one file (HDF5 files); `None`: only Zarr trees.
    pub files: Option<Arc<dyn FileOpener>>,
}

impl ExternalResolver for FsResolver {
    fn resolve(
        &self,
        from: &FileLocation,
        source: &str,
        referrer: &str,
    ) -> HdmfResult<Option<FileLocation>> {
        let here = canonical(Path::new(&from.name));
        let candidates: Vec<PathBuf> = if Path::new(source).is_absolute() {
            // hdmf-zarr 0.1 wrote absolute paths.
            vec![PathBuf::from(source)]
        } else {
            // Relative to this file's root; hdmf-zarr 0.10 wrote them relative to its parent.
            let mut c = vec![normalize(&here.join(source))];
            if let Some(parent) = here.parent() {
                c.push(normalize(&parent.join(source)));
            }
            c
        };
        let Some(target) = candidates
            .iter()
            .find(|c| c.is_dir() || (self.files.is_some() && c.is_file()))
        else {
            return Err(HdmfError::malformed(
                &from.name,
                referrer,
                format!("external file '{source}' does not exist"),
            ));
        };
        let target = canonical(target);
        if target == here {
            return Ok(None);
        }
        if !self.allow_any {
            let roots: Vec<PathBuf> = if self.allowed_roots.is_empty() {
                here.parent().map(Path::to_path_buf).into_iter().collect()
            } else {
                self.allowed_roots.iter().map(|r| canonical(r)).collect()
            };
            if !roots.iter().any(|r| target.starts_with(r)) {
                return Err(HdmfError::ExternalRefused {
                    file: from.name.clone(),
                    path: referrer.to_string(),
                    source_path: source.to_string(),
                    allowed: roots
                        .iter()
                        .map(|r| format!("'{}'", r.display()))
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            }
        }
        let name = target.display().to_string();
        if let (Some(files), Some(dir), Some(file_name)) = (
            self.files.as_ref().filter(|_| target.is_file()),
            target.parent(),
            target.file_name().and_then(|n| n.to_str()),
        ) {
            let store: Arc<dyn Store> = Arc::new(FsStore::read_only(dir));
            return match files.open_file(store, file_name, &name)? {
                Some(file) => Ok(Some(file)),
                None => Err(HdmfError::malformed(
                    &from.name,
                    referrer,
                    format!("external file '{source}' is not an NWB file"),
                )),
            };
        }
        Ok(Some(FileLocation::named(
            Arc::new(FsStore::read_only(target)),
            "",
            name,
        )))
    }
}

impl NwbFile {
    /// Open the file (a directory tree) at `path` with default options.
    pub fn open(path: impl AsRef<Path>) -> HdmfResult<Self> {
        Self::open_with(path, ReadOptions::default())
    }

    /// Open the file (a directory tree) at `path`, named by its path in errors. External
    /// links resolve on disk with [`FsResolver::default`] (inside the file's directory) unless
    /// `options` give another resolver.
    pub fn open_with(path: impl AsRef<Path>, mut options: ReadOptions) -> HdmfResult<Self> {
        let path = path.as_ref();
        let name = path.display().to_string();
        if !path.is_dir() {
            return Err(HdmfError::NotNwb {
                file: name,
                message: "not a directory (a Zarr NWB file is a directory tree)".into(),
            });
        }
        options
            .resolver
            .get_or_insert_with(|| Arc::new(FsResolver::default()));
        let store: Arc<dyn Store> = Arc::new(FsStore::read_only(path));
        Self::open_location(FileLocation::named(store, "", name), options)
    }
}

impl NwbWriter {
    /// Start writing a file (a directory tree) at `path`, replacing it when the session
    /// finishes. The file is written into a hidden sibling directory
    /// (`.<name>.neurochunk-staging-<pid>-<n>`, see [`neurochunk_store::staging`]) which
    /// [`NwbWriter::finish`] publishes in place of `path` with [`replace_dir`] (an atomic
    /// exchange where the filesystem offers it, so readers of `path` always find the old file
    /// or the new one, even when the writer is killed). A session that fails or is dropped
    /// removes its directory; the directories of killed writers of `path` are removed when
    /// the next session of `path` starts. When `path` is (or lies below) a symbolic link, the
    /// file is staged and published where the link leads. An existing `path` is replaced
    /// only as [`WriteOptions::overwrite`] allows: by default when it holds nothing but Zarr
    /// or N5 nodes (an earlier file), otherwise [`HdmfError::Replace`] before anything is
    /// written. [`WriteOptions::durability`] says
    /// whether the file is synced to the disk before `finish` returns.
    ///
    /// [`replace_dir`]: neurochunk_store::fs_publish::replace_dir
    pub fn create(
        path: impl AsRef<Path>,
        convention: Convention,
        options: WriteOptions,
    ) -> HdmfResult<Self> {
        let final_path = path.as_ref().to_path_buf();
        let display = final_path.display().to_string();
        if final_path.file_name().is_none() {
            return Err(HdmfError::input(
                &display,
                "the output path has no file name",
            ));
        }
        if let Some(parent) = final_path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                HdmfError::input(
                    parent.display().to_string(),
                    format!("cannot create the output directory: {e}"),
                )
            })?;
        }
        // Staged beside the real destination (where symbolic links lead).
        let real_path = resolve_target(&final_path, &final_path)
            .map_err(|e| HdmfError::input(&display, e.to_string()))?;
        let staged = StagedDir::replacing(&real_path, &NodeTree, options.overwrite)?
            .with_durability(options.durability);
        let store: Arc<dyn Store> =
            Arc::new(FsStore::new(staged.path()).with_durability(options.durability));
        let staged = Arc::new(Mutex::new(Some(staged)));
        let publish = {
            let (staged, display) = (staged.clone(), display.clone());
            Box::new(move || {
                let staged = staged.lock().ok().and_then(|mut s| s.take());
                match staged {
                    Some(staged) => staged
                        .publish()
                        .map(|_| ())
                        .map_err(|e| HdmfError::input(display, e.to_string())),
                    None => Ok(()),
                }
            })
        };
        let abandon = {
            let staged = staged.clone();
            Box::new(move || {
                // Dropping the staging directory unpublished removes it.
                drop(staged.lock().ok().and_then(|mut s| s.take()));
            })
        };
        let writer =
            NwbWriter::create_at(FileLocation::named(store, "", display), convention, options)?;
        Ok(writer.with_staging(Staging { publish, abandon }))
    }
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| normalize(path))
}

/// Remove `.` and `..` components lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}
