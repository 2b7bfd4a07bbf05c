//! Importing an HDF5 NWB file into either hdmf-zarr convention: the file is opened in place
//! as its [`Hdf5Store`] view and copied by the NWB layer's [`copy_into`], so an import reads
//! exactly what `nwb inspect` shows of the file, locally or at a URL (by ranged reads, with no
//! download first).
//!
//! Groups, attributes, links, references, compounds, text and the cached specifications are
//! copied as the view presents them; numeric datasets are streamed chunk by chunk, their
//! chunks copied as stored when the destination stores the same bytes (the same chunk shape
//! and the codecs of the HDF5 filters, legacy convention) and decoded and encoded again
//! otherwise. An object reached by a second hard link is written as a soft link to its first
//! path. Soft links must resolve, and external links must lead to an existing object of a
//! file inside the allowed directories; their `source` is rewritten to the name the target
//! gets when it is imported beside this file (`other.nwb` → `../other.nwb.zarr`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurochunk_hdmf::{
    copy_into, Convention, CopyOptions, FileLocation, NwbFile, NwbWriter, ReadOptions, WriteOptions,
};
use neurochunk_store::{FsStore, Store};

use crate::error::{Hdf5Error, Hdf5Result};
use crate::view::{absolute_target, Hdf5Store};

/// Options of an import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// The convention written.
    pub convention: Convention,
    /// Compressors (replacing the HDF5 filters of every numeric dataset) and durability.
    pub write: WriteOptions,
    /// Re-chunk every numeric dataset to chunks of about this many bytes (default: keep the
    /// HDF5 chunk shape; contiguous datasets get chunks of whole rows of about 1 MiB).
    pub chunk_bytes: Option<usize>,
    /// Chunk shapes of particular datasets (absolute paths), over everything else.
    pub chunks: BTreeMap<String, Vec<usize>>,
    /// Directories external links may lead into (default: the source file's directory).
    pub allowed_roots: Vec<PathBuf>,
    /// Follow external links anywhere.
    pub allow_any_external: bool,
    /// Appended to the file name of an external link's target: the name that file gets when
    /// it is imported too (default `.zarr`: `other.nwb` → `other.nwb.zarr`).
    pub external_suffix: String,
    /// Record the chunks the Zarr arrays read as the HDF5 file stores them as references to
    /// their byte ranges (the file's `file://` URL, or the URL it was read from) instead of
    /// copying them, where the destination keeps such references (a session of an Icechunk
    /// repository: virtual chunks); the compression of the HDF5 file is kept. Elsewhere, and
    /// for chunks the view encodes again, the bytes are copied.
    pub virtual_refs: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            convention: Convention::V3,
            write: WriteOptions::default(),
            chunk_bytes: None,
            chunks: BTreeMap::new(),
            allowed_roots: Vec::new(),
            allow_any_external: false,
            external_suffix: ".zarr".into(),
            virtual_refs: false,
        }
    }
}

impl ImportOptions {
    /// Default options for `convention`.
    pub fn new(convention: Convention) -> Self {
        ImportOptions {
            convention,
            ..Self::default()
        }
    }
}

/// What an import wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportSummary {
    /// Groups written.
    pub groups: usize,
    /// Datasets written.
    pub datasets: usize,
    /// Numeric datasets streamed chunk by chunk.
    pub streamed: usize,
    /// Chunks copied as stored (no decoding), counted over the datasets' grids.
    pub chunks_copied: u64,
    /// Chunks decoded and encoded again, counted over the datasets' grids.
    pub chunks_encoded: u64,
    /// Soft links written (including second paths of hard-linked objects).
    pub links: usize,
    /// External links written.
    pub external_links: usize,
    /// Cached namespaces written.
    pub namespaces: usize,
    /// Bytes of numeric data streamed (decoded size).
    pub bytes: u64,
    /// Things worth knowing that did not stop the import (one line each).
    pub notes: Vec<String>,
}

/// Progress of an import: bytes of numeric data done and in total.
pub trait Progress: Sync {
    /// The total became known.
    fn total(&self, _bytes: u64) {}
    /// `bytes` more are done.
    fn advance(&self, bytes: u64);
}

impl<F: Fn(u64) + Sync> Progress for F {
    fn advance(&self, bytes: u64) {
        self(bytes)
    }
}

/// The HDF5 file at `path` as a store and key: its directory, read-only, and its name.
pub(crate) fn local_source(path: &Path) -> Hdf5Result<(Arc<dyn Store>, String)> {
    let name = path.display().to_string();
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Hdf5Error::file(&name, "not a file name"))?;
    if !path.is_file() {
        return Err(Hdf5Error::file(&name, "no such file"));
    }
    Ok((
        Arc::new(FsStore::read_only(source_dir(path))),
        file_name.to_string(),
    ))
}

/// The directory holding `source` (external links are relative to it).
pub(crate) fn source_dir(source: &Path) -> PathBuf {
    source
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Import the HDF5 file `source` into a new NWB Zarr file at `destination` (written aside and
/// published atomically when complete: nothing appears at `destination` on error).
pub fn import_file(
    source: &Path,
    destination: &Path,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    let view = open_local(source, options)?;
    check_links(&view, Some(&source_dir(source)), options)?;
    let writer = NwbWriter::create(destination, options.convention, options.write.clone())?;
    copy_view(&view, writer, options, progress)
}

/// Import the HDF5 file `source` into the file `writer` writes (any store), and finish it.
pub fn import_into(
    source: &Path,
    writer: NwbWriter,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    let view = open_local(source, options)?;
    check_links(&view, Some(&source_dir(source)), options)?;
    copy_view(&view, writer, options, progress)
}

/// Import the HDF5 file at `key` of `store` (an object in a bucket, read by ranged requests),
/// named `name`, into the file `writer` writes, and finish it. External links are carried
/// over unchecked (their targets are not in a directory to look into); soft links must
/// resolve.
pub fn import_store(
    store: Arc<dyn Store>,
    key: &str,
    name: &str,
    writer: NwbWriter,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    let refs = options.virtual_refs.then(|| (name.to_string(), None));
    let view = open_source(store, key, name, refs)?;
    check_links(&view, None, options)?;
    copy_view(&view, writer, options, progress)
}

/// The source opened as an NWB file over its view.
struct Source {
    view: Arc<Hdf5Store>,
    file: NwbFile,
    name: String,
}

/// The local HDF5 file `path` opened as an NWB file; for virtual references its chunks are
/// located by the file's `file://` URL and modification time.
fn open_local(path: &Path, options: &ImportOptions) -> Hdf5Result<Source> {
    let (store, key) = local_source(path)?;
    let name = path.display().to_string();
    let refs = if options.virtual_refs {
        Some(file_reference(path).map_err(|message| Hdf5Error::file(&name, message))?)
    } else {
        None
    };
    open_source(store, &key, &name, refs)
}

/// The `file://` URL of the file at `path` (absolute, symbolic links resolved) and when it
/// was last modified (seconds since the Unix epoch, rounded up).
pub fn file_reference(path: &Path) -> Result<(String, Option<u64>), String> {
    let absolute = std::fs::canonicalize(path).map_err(|e| e.to_string())?;
    let url = url::Url::from_file_path(&absolute)
        .map_err(|()| format!("{} has no file:// URL", absolute.display()))?;
    let modified = std::fs::metadata(&absolute)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        // Whole seconds, rounded up: readers compare the file's time with it (not later is
        // unchanged).
        .map(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0));
    Ok((url.to_string(), modified))
}

/// The HDF5 file at `key` of `store` opened as an NWB file, its chunks located by
/// `virtual_file` (the file's URL and modification time) when given.
fn open_source(
    store: Arc<dyn Store>,
    key: &str,
    name: &str,
    virtual_file: Option<(String, Option<u64>)>,
) -> Hdf5Result<Source> {
    let mut view = Hdf5Store::open(store, key, name)?;
    if let Some((url, modified)) = virtual_file {
        view = view.with_virtual_refs(url, modified);
    }
    let view = Arc::new(view);
    let file = NwbFile::open_location(
        FileLocation::named(view.clone(), "", name),
        ReadOptions::default(),
    )?;
    Ok(Source {
        view,
        file,
        name: name.to_string(),
    })
}

/// Soft links must resolve; external links (of a local file, `dir` its directory) must lead
/// to an existing object of an HDF5 file inside the allowed directories.
fn check_links(source: &Source, dir: Option<&Path>, options: &ImportOptions) -> Hdf5Result<()> {
    for link in source.file.links()? {
        let path = if link.parent == "/" {
            format!("/{}", link.name)
        } else {
            format!("{}/{}", link.parent, link.name)
        };
        if link.source == "." {
            if !source.view.file().exists(&link.target).unwrap_or(false) {
                return Err(Hdf5Error::object(
                    &source.name,
                    &path,
                    format!(
                        "soft link to '{}', which does not exist (dangling link)",
                        link.target
                    ),
                ));
            }
        } else if let Some(dir) = dir {
            check_external(source, dir, &path, &link.source, &link.target, options)?;
        }
    }
    Ok(())
}

/// An external link must lead to an existing file inside the allowed directories, and to an
/// object that exists in it.
fn check_external(
    source: &Source,
    dir: &Path,
    link: &str,
    file: &str,
    object: &str,
    options: &ImportOptions,
) -> Hdf5Result<()> {
    let confinement = Confinement {
        allowed_roots: &options.allowed_roots,
        allow_any: options.allow_any_external,
    };
    open_external(&source.name, dir, link, file, object, &confinement).map(|_| ())
}

/// Where the external links of a file on disk may lead.
pub(crate) struct Confinement<'a> {
    /// Directory trees (default: the directory holding the file).
    pub allowed_roots: &'a [PathBuf],
    /// Anywhere.
    pub allow_any: bool,
}

/// The HDF5 file an external link `link` of the file `source_name` (in `dir`) leads to, with
/// its canonical path: it must be inside the allowed directories and hold `object`.
pub(crate) fn open_external(
    source_name: &str,
    dir: &Path,
    link: &str,
    file: &str,
    object: &str,
    confinement: &Confinement<'_>,
) -> Hdf5Result<(PathBuf, neurochunk_h5::H5File)> {
    let err = |message: String| Hdf5Error::object(source_name, link, message);
    let real = dir.join(file).canonicalize().map_err(|e| {
        err(format!(
            "external link to '{file}', which cannot be opened: {e}"
        ))
    })?;
    if !confinement.allow_any {
        let roots: Vec<PathBuf> = if confinement.allowed_roots.is_empty() {
            vec![dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf())]
        } else {
            confinement
                .allowed_roots
                .iter()
                .map(|r| r.canonicalize().unwrap_or_else(|_| r.clone()))
                .collect()
        };
        if !roots.iter().any(|r| real.starts_with(r)) {
            return Err(Hdf5Error::ExternalRefused {
                file: source_name.to_string(),
                path: link.to_string(),
                target: file.to_string(),
                allowed: roots
                    .iter()
                    .map(|r| format!("'{}'", r.display()))
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
    }
    let (store, key) = local_source(&real).map_err(|e| err(format!("external link: {e}")))?;
    let other = neurochunk_h5::H5File::open(store, &key, &real.display().to_string())
        .map_err(|e| err(format!("external link to '{file}': {e}")))?;
    if !other
        .exists(&absolute_target("/", object))
        .map_err(|e| err(format!("external link to '{file}': {e}")))?
    {
        return Err(err(format!(
            "external link to '{object}' in '{file}', which does not exist (dangling link)"
        )));
    }
    Ok((real, other))
}

/// The `source` of an external link in the Zarr file: the target file's name with `suffix`,
/// relative to this file's root (hence `../` for a sibling).
fn external_source(file: &str, suffix: &str) -> String {
    let named = if file.ends_with(suffix) {
        file.to_string()
    } else {
        format!("{file}{suffix}")
    };
    if Path::new(&named).is_absolute() {
        named
    } else {
        format!("../{named}")
    }
}

/// About `target` bytes per chunk: the whole array when small, else each axis halved in turn.
fn guess_chunks(shape: &[u64], item: usize, target: usize) -> Vec<usize> {
    let mut chunks: Vec<usize> = shape.iter().map(|&d| (d as usize).max(1)).collect();
    let bytes = |c: &[usize]| c.iter().product::<usize>().saturating_mul(item.max(1));
    let mut axis = 0;
    while bytes(&chunks) > target && chunks.iter().any(|&c| c > 1) {
        if chunks[axis] > 1 {
            chunks[axis] = chunks[axis].div_ceil(2);
        }
        axis = (axis + 1) % chunks.len();
    }
    chunks
}

fn copy_view(
    source: &Source,
    writer: NwbWriter,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Hdf5Result<ImportSummary> {
    // Chunk shapes asked for must fit their datasets.
    for (path, chunks) in &options.chunks {
        let array = source.file.open_array(path)?;
        if chunks.len() != array.shape().len() || chunks.contains(&0) {
            return Err(Hdf5Error::object(
                &source.name,
                path,
                format!(
                    "chunk shape {chunks:?} does not fit the dataset's shape {:?}",
                    array.shape()
                ),
            ));
        }
    }
    let notes = std::sync::Mutex::new(Vec::new());
    let chunks = |path: &str, shape: &[u64], item: usize| {
        options
            .chunks
            .get(path)
            .cloned()
            .or_else(|| options.chunk_bytes.map(|b| guess_chunks(shape, item, b)))
    };
    // Data the HDF5 file stores uncompressed or with filters Zarr lacks (decoded by the
    // view) gets the convention's compression, as hdmf-zarr writes it.
    let default_compressors = options.convention.default_compressors();
    let compressors = |path: &str, meta: &neurochunk_array::ArrayMetadata| {
        let dataset = source.view.file().dataset(path).ok()?;
        let filtered = !dataset.filters().is_empty();
        // References keep the file's bytes, hence its compression (or none).
        if !meta.codecs.bytes_to_bytes().is_empty() || options.virtual_refs {
            return None;
        }
        if filtered {
            notes.lock().ok()?.push(format!(
                "{path}: HDF5 filters {} have no Zarr equivalent; compressed with the \
                 convention's default",
                dataset
                    .filters()
                    .iter()
                    .map(|f| f.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        Some(default_compressors.clone())
    };
    let link_source = |s: &str| external_source(s, &options.external_suffix);
    let advance = |n: u64| progress.advance(n);
    let total = |n: u64| progress.total(n);
    let copied = copy_into(
        &source.file,
        writer,
        &CopyOptions {
            chunks: &chunks,
            compressors: &compressors,
            link_source: &link_source,
            total_bytes: &total,
            progress_bytes: &advance,
            ..CopyOptions::default()
        },
    )?;
    Ok(ImportSummary {
        groups: copied.groups,
        datasets: copied.datasets,
        streamed: copied.streamed,
        chunks_copied: copied.chunks_copied,
        chunks_encoded: copied.chunks_encoded,
        links: copied.links - copied.external_links,
        external_links: copied.external_links,
        namespaces: copied.namespaces,
        bytes: copied.bytes,
        notes: source
            .view
            .notes()
            .iter()
            .cloned()
            .chain(notes.into_inner().unwrap_or_default())
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn external_sources_name_the_imported_sibling() {
        assert_eq!(external_source("other.nwb", ".zarr"), "../other.nwb.zarr");
        assert_eq!(external_source("a.zarr", ".zarr"), "../a.zarr");
        assert_eq!(external_source("/abs/x.nwb", ".zarr"), "/abs/x.nwb.zarr");
    }

    #[test]
    fn guessed_chunks_halve_axes_in_turn() {
        assert_eq!(guess_chunks(&[100, 100], 8, 1 << 20), [100, 100]);
        assert_eq!(guess_chunks(&[1000, 1000], 8, 1 << 20), [250, 500]);
    }
}
