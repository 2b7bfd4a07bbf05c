//! A store over a directory tree. Writes go to a temporary file in the destination directory
//! and are renamed into place, so a killed writer never leaves a torn value behind; with
//! [`Durability::Fsync`] they are also flushed to the disk before a write returns. Writes and
//! removals never leave the root through a symbolic link (see [`FsStore`]).

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind, Read, Seek, SeekFrom, Write};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rayon::prelude::*;

use crate::fsync::{sync_dir, sync_file};
use crate::{
    validate_key, validate_prefix, ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, Store,
    StoreError, StoreResult, ValueWriter,
};

/// Names of in-flight temporary files start with this; listings skip them.
pub(crate) const TEMP_PREFIX: &str = ".neurochunk-tmp-";
/// Values of [`Store::set_many`] at least this large are written in parallel even when they
/// share a directory; smaller ones of one directory are written in turn.
const PARALLEL_WRITE_BYTES: usize = 256 << 10;

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Ranges of one file closer than this are read together (reading a few KiB more costs less
/// than another read call).
const FS_COALESCE_GAP: u64 = 64 << 10;

/// How far an [`FsStore`] write has reached when it returns.
///
/// Every write is atomic either way (a temporary file renamed into place): a reader or a
/// killed writer never sees a torn value. Durability is about a crash of the operating system
/// or a power loss, after which writes that only reached the page cache may be lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Durability {
    /// Leave flushing to the operating system (the default). Fast; after an OS crash or a
    /// power loss the latest writes may be missing (the old value, or no value, is there).
    #[default]
    Buffered,
    /// `fsync` each value's temporary file before it is renamed into place, and the parent
    /// directory after the rename (and after a removal), and the parent of every directory the
    /// store creates: when a write returns, the value survives an OS crash or a power loss.
    /// Costs one or two disk flushes per value (see `docs/durability.md`).
    Fsync,
}

/// A filesystem store rooted at a directory.
///
/// Errors name the root directory and the key, so together they name the file. Directories
/// are created as values are written; removing values leaves their (possibly empty)
/// directories, which [`Store::list_dir`] still lists as prefixes.
///
/// Writes are atomic (a temporary file beside the value, renamed into place) and, with
/// [`FsStore::with_durability`]`(`[`Durability::Fsync`]`)`, durable when they return.
///
/// # Symbolic links
///
/// *Reading* follows symbolic links anywhere below the root, so a store may be assembled from
/// links to other directories. *Writing never leaves the root*: before a value is written or
/// removed (and before a directory is created), every existing directory on the key's path
/// below the root is checked, and a symbolic link among them must resolve to a directory
/// inside the root (compared after resolving the root's own links); a link leading outside
/// the root, or one that does not resolve, is refused with
/// [`StoreError::SymlinkOutsideRoot`] naming the key and the link, and nothing is written.
/// Removing a key or a prefix that is itself a symbolic link removes the link, never what it
/// points to. The root itself may be a symbolic link. There is no opt-out: to write into
/// another directory, open a store rooted there.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
    read_only: bool,
    durability: Durability,
}

impl FsStore {
    /// A store rooted at `root` (created on the first write if missing), with
    /// [`Durability::Buffered`] writes.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsStore {
            root: root.into(),
            read_only: false,
            durability: Durability::default(),
        }
    }

    /// A store that refuses writes.
    pub fn read_only(root: impl Into<PathBuf>) -> Self {
        FsStore {
            root: root.into(),
            read_only: true,
            durability: Durability::default(),
        }
    }

    /// The same store with writes made as durable as `durability` says:
    ///
    /// ```
    /// use neurochunk_store::{Durability, FsStore};
    ///
    /// let store = FsStore::new("out.zarr").with_durability(Durability::Fsync);
    /// assert_eq!(store.durability(), Durability::Fsync);
    /// ```
    pub fn with_durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// How durable this store's writes are.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    fn fsync(&self) -> bool {
        self.durability == Durability::Fsync
    }

    /// Writes one value of a batch: its temporary file (synced with [`Durability::Fsync`])
    /// renamed into place, leaving its directory to the caller to sync; returns the directory.
    fn set_deferred(&self, key: &str, value: &[u8]) -> StoreResult<PathBuf> {
        let mut writer = self.temp_writer(self, key)?;
        writer
            .write_all(value)
            .and_then(|()| writer.finish(false))
            .map_err(|e| self.io_error(key, e))?;
        Ok(writer.path.parent().unwrap_or(&self.root).to_path_buf())
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The filesystem path of a (validated) key.
    pub fn key_path(&self, key: &str) -> StoreResult<PathBuf> {
        validate_key(key)?;
        Ok(self.root.join(key))
    }

    fn prefix_path(&self, prefix: &str) -> StoreResult<PathBuf> {
        validate_prefix(prefix)?;
        let trimmed = prefix.trim_end_matches('/');
        Ok(if trimmed.is_empty() {
            self.root.clone()
        } else {
            self.root.join(trimmed)
        })
    }

    fn check_writable(&self, key: &str) -> StoreResult<()> {
        if self.read_only {
            Err(StoreError::ReadOnly {
                key: key.to_string(),
            })
        } else {
            Ok(())
        }
    }

    /// A [`StoreError::Backend`] for an I/O error on `key` (a key, a prefix or `""` for the
    /// root directory), naming this store's root.
    fn io_error(&self, key: &str, source: std::io::Error) -> StoreError {
        StoreError::backend(self.root.display().to_string(), key, source)
    }

    /// `fsync` the directory `dir` (with [`Durability::Fsync`]), so that entries just added
    /// to or removed from it persist.
    fn sync_dir(&self, key: &str, dir: &Path) -> StoreResult<()> {
        if self.fsync() {
            sync_dir(dir).map_err(|e| self.io_error(key, e))?;
        }
        Ok(())
    }

    /// Creates the root directory (and its missing ancestors) if it does not exist.
    fn ensure_root(&self, key: &str) -> StoreResult<()> {
        if self.root.is_dir() {
            return Ok(());
        }
        if !self.fsync() {
            return fs::create_dir_all(&self.root).map_err(|e| self.io_error(key, e));
        }
        // The missing ancestors, outermost first, each synced into its parent.
        let missing: Vec<&Path> = self
            .root
            .ancestors()
            .take_while(|p| !p.as_os_str().is_empty() && fs::symlink_metadata(p).is_err())
            .collect();
        for dir in missing.into_iter().rev() {
            match fs::create_dir(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::AlreadyExists && dir.is_dir() => continue,
                Err(e) => return Err(self.io_error(key, e)),
            }
            let parent = match dir.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            self.sync_dir(key, parent)?;
        }
        Ok(())
    }

    /// Checks the directories on the way from the root to the last component of `key` (a key,
    /// or a prefix without its trailing `/`): none may be a symbolic link resolving outside the
    /// root. With `create`, missing directories are created (without following any link out);
    /// without, the walk stops at the first missing one. Returns whether every directory
    /// exists (or now exists).
    fn check_parents(&self, key: &str, action: &'static str, create: bool) -> StoreResult<bool> {
        let Some((parents, _)) = key.rsplit_once('/') else {
            return Ok(true);
        };
        let mut dir = self.root.clone();
        for part in parents.split('/') {
            dir.push(part);
            loop {
                match fs::symlink_metadata(&dir) {
                    Ok(meta) if meta.file_type().is_symlink() => {
                        self.check_link(key, action, &dir)?;
                        break;
                    }
                    // A directory, or a file, which the write itself will fail on.
                    Ok(_) => break,
                    Err(e) if e.kind() == ErrorKind::NotFound && create => {
                        match fs::create_dir(&dir) {
                            Ok(()) => {
                                self.sync_dir(key, dir.parent().unwrap_or(&self.root))?;
                                break;
                            }
                            // Created meanwhile by another writer: check what it is.
                            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                            Err(e) => return Err(self.io_error(key, e)),
                        }
                    }
                    Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
                    Err(e) => return Err(self.io_error(key, e)),
                }
            }
        }
        Ok(true)
    }

    /// A symbolic link at `link` on the path of `key` is acceptable if it resolves to
    /// somewhere inside the (resolved) root.
    fn check_link(&self, key: &str, action: &'static str, link: &Path) -> StoreResult<()> {
        let root = fs::canonicalize(&self.root).map_err(|e| self.io_error(key, e))?;
        let refuse = |target: PathBuf| StoreError::SymlinkOutsideRoot {
            key: key.to_string(),
            action,
            link: link.display().to_string().into(),
            target: target.display().to_string().into(),
        };
        match fs::canonicalize(link) {
            Ok(target) if target.starts_with(&root) => Ok(()),
            Ok(target) => Err(refuse(target)),
            // Dangling or a loop: where a write would go cannot be vouched for.
            Err(_) => Err(refuse(fs::read_link(link).unwrap_or_default())),
        }
    }

    /// Removes everything in the root directory (other writers' temporary files aside):
    /// directories with their contents, files, and symbolic links as links.
    fn clear_root(&self) -> StoreResult<()> {
        let entries = match fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(self.io_error("", e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| self.io_error("", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_temp_name(&name) {
                continue;
            }
            let file_type = entry.file_type().map_err(|e| self.io_error(&name, e))?;
            let removed = if file_type.is_dir() {
                fs::remove_dir_all(entry.path())
            } else {
                fs::remove_file(entry.path())
            };
            match removed {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(self.io_error(&name, e)),
            }
        }
        self.sync_dir("", &self.root)
    }

    /// A writer to a new temporary file beside the file of `key`.
    fn temp_writer<H: Deref<Target = FsStore>>(
        &self,
        store: H,
        key: &str,
    ) -> StoreResult<FsValueWriter<H>> {
        self.check_writable(key)?;
        let path = self.key_path(key)?;
        self.ensure_root(key)?;
        self.check_parents(key, "write", true)?;
        let dir = path.parent().unwrap_or(&self.root);
        let temp = dir.join(format!(
            "{TEMP_PREFIX}{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| self.io_error(key, e))?;
        Ok(FsValueWriter {
            store,
            key: key.to_string(),
            path,
            temp,
            file: Some(BufWriter::new(file)),
            committed: false,
        })
    }
}

/// A value being written to a temporary file; [`ValueWriter::commit`] renames it into place,
/// dropping it uncommitted removes it.
struct FsValueWriter<H: Deref<Target = FsStore>> {
    store: H,
    key: String,
    path: PathBuf,
    temp: PathBuf,
    /// `None` once the file is closed for the rename.
    file: Option<BufWriter<File>>,
    /// The temporary file has been renamed into place.
    committed: bool,
}

impl<H: Deref<Target = FsStore>> FsValueWriter<H> {
    fn file(&mut self) -> std::io::Result<&mut BufWriter<File>> {
        self.file
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the value's file is already closed"))
    }

    /// Flushes the file (and with [`Durability::Fsync`] syncs it), renames it into place, and
    /// with `sync_parent` (and `Fsync`) syncs its directory.
    fn finish(&mut self, sync_parent: bool) -> std::io::Result<()> {
        let fsync = self.store.fsync();
        let file = self.file()?;
        file.flush()?;
        if fsync {
            // The value's bytes reach the disk before its name does.
            sync_file(file.get_ref())?;
        }
        // Close the file before it is renamed.
        drop(self.file.take());
        fs::rename(&self.temp, &self.path)?;
        self.committed = true;
        if fsync && sync_parent {
            sync_dir(self.path.parent().unwrap_or(&self.store.root))?;
        }
        Ok(())
    }
}

impl<H: Deref<Target = FsStore>> Write for FsValueWriter<H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.file()?.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file()?.flush()
    }
}

impl<H: Deref<Target = FsStore> + Send> ValueWriter for FsValueWriter<H> {
    fn commit(mut self: Box<Self>) -> StoreResult<()> {
        match self.finish(true) {
            Ok(()) => Ok(()),
            // Dropping `self` removes the temporary file.
            Err(e) => Err(self.store.io_error(&self.key, e)),
        }
    }
}

impl<H: Deref<Target = FsStore>> Drop for FsValueWriter<H> {
    fn drop(&mut self) {
        // Uncommitted (or a failed commit): the temporary file must not stay behind.
        if !self.committed {
            drop(self.file.take());
            let _ = fs::remove_file(&self.temp);
        }
    }
}

/// The whole file, read into a buffer from the pool (`crate::take_buffer`).
fn read_pooled(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let len = file.metadata()?.len() as usize;
    let mut buffer = crate::take_buffer(len);
    file.read_to_end(&mut buffer)?;
    Ok(buffer)
}

/// Hand a value's buffer, once written, to the pool (`crate::recycle_buffer`) when nothing
/// else holds it, so that the next chunk is built in memory already mapped.
fn recycle_value(value: Bytes) {
    if let Ok(buffer) = value.try_into_mut() {
        crate::recycle_buffer(buffer.into());
    }
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

impl Store for FsStore {
    fn local_path(&self, key_or_prefix: &str) -> Option<PathBuf> {
        self.prefix_path(key_or_prefix).ok()
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let path = self.key_path(key)?;
        match read_pooled(&path) {
            Ok(bytes) => Ok(Some(Bytes::from(bytes))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            // A directory where a value was expected reads as missing (e.g. `c` in v3).
            Err(_) if path.is_dir() => Ok(None),
            Err(e) => Err(self.io_error(key, e)),
        }
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        let path = self.key_path(key)?;
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io_error(key, e)),
        };
        let metadata = file.metadata().map_err(|e| self.io_error(key, e))?;
        if metadata.is_dir() {
            // As in `get`: a directory is not a value.
            return Ok(None);
        }
        let size = metadata.len();
        let spans = ranges
            .iter()
            .map(|range| range.resolve_for(key, size))
            .collect::<StoreResult<Vec<_>>>()?;
        // Ranges that are adjacent or close (a shard's consecutive inner chunks) are read
        // with one read each group; every range is then a slice of its group's buffer.
        let mut sorted: Vec<std::ops::Range<u64>> = spans
            .iter()
            .filter(|(start, end)| end > start)
            .map(|&(start, end)| start..end)
            .collect();
        sorted.sort_by_key(|r| r.start);
        let merged = crate::merge_ranges(&sorted, FS_COALESCE_GAP);
        let mut blocks = Vec::with_capacity(merged.len());
        for r in &merged {
            let mut buf = vec![0u8; (r.end - r.start) as usize];
            file.seek(SeekFrom::Start(r.start))
                .map_err(|e| self.io_error(key, e))?;
            file.read_exact(&mut buf)
                .map_err(|e| self.io_error(key, e))?;
            blocks.push(Bytes::from(buf));
        }
        let out = spans
            .iter()
            .map(|&(start, end)| {
                if end == start {
                    return Bytes::new();
                }
                // The group holding this range: the last one starting at or before it.
                let g = merged.partition_point(|m| m.start <= start) - 1;
                let base = merged[g].start;
                blocks[g].slice((start - base) as usize..(end - base) as usize)
            })
            .collect();
        Ok(Some(out))
    }

    /// Reads the files of a batch in parallel (rayon), so a local disk serves a batch of
    /// chunks with every core.
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        if requests.len() < 2 {
            return requests.iter().map(|r| r.answer_from(self)).collect();
        }
        requests
            .par_iter()
            .with_max_len(1)
            .map(|r| r.answer_from(self))
            .collect()
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        let path = self.key_path(key)?;
        match fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_error(key, e)),
        }
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        let mut writer = Box::new(self.temp_writer(self, key)?);
        writer
            .write_all(&value)
            .map_err(|e| self.io_error(key, e))?;
        writer.commit()
    }

    /// Writes the values in parallel (rayon; small values of one directory in turn), each to a
    /// temporary file renamed into place like
    /// [`Store::set`]. With [`Durability::Fsync`] every file is synced before its rename and
    /// each directory the batch wrote into is synced once, after all its values are in place
    /// (instead of once per value), before this returns.
    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        if values.len() < 2 {
            return values
                .into_iter()
                .try_for_each(|(key, value)| self.set(&key, value));
        }
        // Creating and renaming files takes their directory's lock: small values of one
        // directory are written one after another (threads would mostly wait on that lock,
        // or spin on it), each directory's in parallel with the others and with large values.
        let mut work: Vec<Vec<(String, Bytes)>> = Vec::new();
        let mut small: std::collections::BTreeMap<String, Vec<(String, Bytes)>> =
            Default::default();
        for (key, value) in values {
            if value.len() >= PARALLEL_WRITE_BYTES {
                work.push(vec![(key, value)]);
            } else {
                let dir = key.rsplit_once('/').map_or("", |(dir, _)| dir).to_string();
                small.entry(dir).or_default().push((key, value));
            }
        }
        work.extend(small.into_values());
        let written: Vec<(PathBuf, String)> = work
            .into_par_iter()
            .with_max_len(1)
            .map(|group| {
                let mut written = Vec::with_capacity(group.len());
                for (key, value) in group {
                    let dir = self.set_deferred(&key, &value)?;
                    recycle_value(value);
                    written.push((dir, key));
                }
                Ok(written)
            })
            .collect::<StoreResult<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        if !self.fsync() {
            return Ok(());
        }
        let mut dirs: std::collections::BTreeMap<PathBuf, String> = Default::default();
        for (dir, key) in written {
            dirs.entry(dir).or_insert(key);
        }
        let dirs: Vec<(PathBuf, String)> = dirs.into_iter().collect();
        dirs.into_par_iter()
            .with_max_len(1)
            .try_for_each(|(dir, key)| sync_dir(&dir).map_err(|e| self.io_error(&key, e)))
    }

    /// Streams into a temporary file in the value's directory, renamed into place on commit
    /// (the same atomicity as [`Store::set`]) and removed when dropped uncommitted.
    fn writer(&self, key: &str) -> StoreResult<Box<dyn ValueWriter + '_>> {
        Ok(Box::new(self.temp_writer(self, key)?))
    }

    fn owned_writer(self: Arc<Self>, key: &str) -> StoreResult<Box<dyn ValueWriter>> {
        Ok(Box::new(self.temp_writer(self.clone(), key)?))
    }

    /// Removes the value's file; a key that is a symbolic link removes the link. Refuses,
    /// like a write, a key whose directories lead out of the root through a symbolic link.
    fn delete(&self, key: &str) -> StoreResult<()> {
        self.check_writable(key)?;
        let path = self.key_path(key)?;
        if !self.check_parents(key, "remove", false)? {
            return Ok(());
        }
        match fs::remove_file(&path) {
            Ok(()) => self.sync_dir(key, path.parent().unwrap_or(&self.root)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(self.io_error(key, e)),
        }
    }

    /// Removes the prefix's directory tree; a prefix that is a symbolic link removes the link,
    /// never what it points to. Refuses, like a write, a prefix whose directories lead out of
    /// the root through a symbolic link.
    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        self.check_writable(prefix)?;
        let path = self.prefix_path(prefix)?;
        let trimmed = prefix.trim_end_matches('/');
        if trimmed.is_empty() {
            // Never remove the root directory itself, only what is in it.
            return self.clear_root();
        }
        if !self.check_parents(trimmed, "remove", false)? {
            return Ok(());
        }
        // `remove_dir_all` removes a symbolic link itself, without following it.
        match fs::remove_dir_all(&path) {
            Ok(()) => self.sync_dir(prefix, path.parent().unwrap_or(&self.root)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) if path.is_file() => {
                let _ = e;
                self.delete(trimmed)
            }
            Err(e) => Err(self.io_error(prefix, e)),
        }
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        validate_prefix(prefix)?;
        // Walk from the deepest directory named by the prefix, then filter by prefix text.
        let dir_part = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let start = self.prefix_path(dir_part)?;
        let mut keys = Vec::new();
        let mut stack = vec![(start, dir_part.to_string())];
        while let Some((dir, key_prefix)) = stack.pop() {
            let entries = match fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e)
                    if e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory =>
                {
                    continue
                }
                Err(e) => return Err(self.io_error(&key_prefix, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| self.io_error(&key_prefix, e))?;
                let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                    continue;
                };
                if is_temp_name(&name) {
                    continue;
                }
                let key = if key_prefix.is_empty() {
                    name
                } else {
                    format!("{key_prefix}/{name}")
                };
                let file_type = entry.file_type().map_err(|e| self.io_error(&key, e))?;
                let is_dir = if file_type.is_symlink() {
                    entry.path().is_dir()
                } else {
                    file_type.is_dir()
                };
                if is_dir {
                    if key.starts_with(prefix) || prefix.starts_with(&format!("{key}/")) {
                        stack.push((entry.path(), key));
                    }
                } else if key.starts_with(prefix) {
                    keys.push(key);
                }
            }
        }
        keys.sort();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        let dir = self.prefix_path(prefix)?;
        let mut listing = DirListing::default();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == ErrorKind::NotFound || e.kind() == ErrorKind::NotADirectory => {
                return Ok(listing)
            }
            Err(e) => return Err(self.io_error(prefix, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| self.io_error(prefix, e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if is_temp_name(&name) {
                continue;
            }
            if entry.path().is_dir() {
                listing.prefixes.push(name);
            } else {
                listing.keys.push(name);
            }
        }
        listing.keys.sort();
        listing.prefixes.sort();
        Ok(listing)
    }
}
