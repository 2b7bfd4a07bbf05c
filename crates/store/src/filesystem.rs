//! A store over a directory tree. Writes go to a temporary file in the destination directory
//! and are renamed into place, so a killed writer never leaves a torn value behind.

use std::fs::{self, File};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{validate_key, validate_prefix, ByteRange, DirListing, Store, StoreError, StoreResult};

/// Names of in-flight temporary files start with this; listings skip them.
const TEMP_PREFIX: &str = ".neurochunk-tmp-";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A filesystem store rooted at a directory.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
    read_only: bool,
}

fn io_error(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl FsStore {
    /// A store rooted at `root` (created on the first write if missing).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FsStore {
            root: root.into(),
            read_only: false,
        }
    }

    /// A store that refuses writes.
    pub fn read_only(root: impl Into<PathBuf>) -> Self {
        FsStore {
            root: root.into(),
            read_only: true,
        }
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
            Err(StoreError::ReadOnly(key.to_string()))
        } else {
            Ok(())
        }
    }
}

fn is_temp_name(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
}

impl Store for FsStore {
    fn get(&self, key: &str) -> StoreResult<Option<Vec<u8>>> {
        let path = self.key_path(key)?;
        match fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            // A directory where a value was expected reads as missing (e.g. `c` in v3).
            Err(_) if path.is_dir() => Ok(None),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Vec<u8>>>> {
        let path = self.key_path(key)?;
        let mut file = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_error(&path, e)),
        };
        let size = file.metadata().map_err(|e| io_error(&path, e))?.len();
        let mut out = Vec::with_capacity(ranges.len());
        for range in ranges {
            let (start, end) = range
                .resolve(size)
                .ok_or_else(|| StoreError::RangeOutOfBounds {
                    key: key.to_string(),
                    range: range.to_string(),
                    size,
                })?;
            let mut buf = vec![0u8; (end - start) as usize];
            file.seek(SeekFrom::Start(start))
                .map_err(|e| io_error(&path, e))?;
            file.read_exact(&mut buf).map_err(|e| io_error(&path, e))?;
            out.push(buf);
        }
        Ok(Some(out))
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        let path = self.key_path(key)?;
        match fs::metadata(&path) {
            Ok(m) if m.is_file() => Ok(Some(m.len())),
            Ok(_) => Ok(None),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    fn set(&self, key: &str, value: &[u8]) -> StoreResult<()> {
        self.check_writable(key)?;
        let path = self.key_path(key)?;
        let dir = path.parent().unwrap_or(&self.root).to_path_buf();
        fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let temp = dir.join(format!(
            "{TEMP_PREFIX}{}-{}",
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = File::create(&temp)?;
            file.write_all(value)?;
            drop(file);
            fs::rename(&temp, &path)
        })();
        if let Err(e) = result {
            let _ = fs::remove_file(&temp);
            return Err(io_error(&path, e));
        }
        Ok(())
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        self.check_writable(key)?;
        let path = self.key_path(key)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_error(&path, e)),
        }
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        self.check_writable(prefix)?;
        let path = self.prefix_path(prefix)?;
        if prefix.trim_end_matches('/').is_empty() {
            // Never remove the root directory itself, only what is in it.
            for key in self.list_prefix("")? {
                self.delete(&key)?;
            }
            return Ok(());
        }
        match fs::remove_dir_all(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) if path.is_file() => {
                let _ = e;
                self.delete(prefix)
            }
            Err(e) => Err(io_error(&path, e)),
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
                Err(e) => return Err(io_error(&dir, e)),
            };
            for entry in entries {
                let entry = entry.map_err(|e| io_error(&dir, e))?;
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
                let file_type = entry.file_type().map_err(|e| io_error(&entry.path(), e))?;
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
            Err(e) => return Err(io_error(&dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&dir, e))?;
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
