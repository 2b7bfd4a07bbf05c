//! Key/value storage for neurochunk.
//!
//! Every format (Zarr v2, Zarr v3, N5) stores its metadata documents and chunks as values
//! under `/`-separated keys. This crate defines the one narrow trait the format layers use
//! ([`Store`]), with a filesystem backend ([`FsStore`], atomic writes) and an in-memory
//! backend ([`MemoryStore`]). It knows nothing about arrays or formats.
//!
//! Keys are relative, `/`-separated, and may not contain empty, `.` or `..` segments, a
//! leading `/`, a backslash or a NUL byte: such keys are refused with [`StoreError::InvalidKey`]
//! so no key can escape the store's root.

mod filesystem;
mod key;
mod memory;

pub use filesystem::FsStore;
pub use key::{join_key, validate_key, validate_prefix};
pub use memory::MemoryStore;

use std::fmt::Debug;
use std::path::PathBuf;

/// Errors from a store, each naming the key or path concerned.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("invalid key '{key}': {reason}")]
    InvalidKey { key: String, reason: &'static str },
    #[error("I/O error on '{}': {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("byte range {range} is past the end of '{key}' ({size} bytes)")]
    RangeOutOfBounds {
        key: String,
        range: String,
        size: u64,
    },
    #[error("store is read-only: cannot write '{0}'")]
    ReadOnly(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

/// A byte range within one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// `length` bytes from `offset`; `None` reads to the end.
    FromStart { offset: u64, length: Option<u64> },
    /// The last `length` bytes.
    Suffix { length: u64 },
}

impl ByteRange {
    /// The absolute `start..end` of this range within a value of `size` bytes, or `None`
    /// when the range does not fit.
    pub fn resolve(&self, size: u64) -> Option<(u64, u64)> {
        match *self {
            ByteRange::FromStart { offset, length } => {
                let end = match length {
                    Some(len) => offset.checked_add(len)?,
                    None => size,
                };
                (offset <= end && end <= size).then_some((offset, end))
            }
            ByteRange::Suffix { length } => (length <= size).then_some((size - length, size)),
        }
    }
}

impl std::fmt::Display for ByteRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ByteRange::FromStart {
                offset,
                length: Some(len),
            } => {
                write!(f, "{}..{}", offset, offset.saturating_add(*len))
            }
            ByteRange::FromStart {
                offset,
                length: None,
            } => write!(f, "{offset}.."),
            ByteRange::Suffix { length } => write!(f, "last {length} bytes"),
        }
    }
}

/// The direct children of a prefix: values and sub-prefixes (without the trailing `/`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DirListing {
    pub keys: Vec<String>,
    pub prefixes: Vec<String>,
}

/// A key/value store. Implementations are safe to share between threads.
pub trait Store: Send + Sync + Debug {
    /// The whole value, or `None` when the key does not exist.
    fn get(&self, key: &str) -> StoreResult<Option<Vec<u8>>>;
    /// Several byte ranges of one value, or `None` when the key does not exist.
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Vec<u8>>>>;
    /// Size of the value in bytes, or `None` when the key does not exist.
    fn size(&self, key: &str) -> StoreResult<Option<u64>>;
    /// Store a value; readers see either the old or the new value, never a mix.
    fn set(&self, key: &str, value: &[u8]) -> StoreResult<()>;
    /// Remove a value; removing a missing key is not an error.
    fn delete(&self, key: &str) -> StoreResult<()>;
    /// Every key under `prefix` (`""` for all), sorted.
    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>>;
    /// The direct children of `prefix` (`""` for the root), each sorted.
    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing>;

    /// Remove every key under `prefix`.
    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        for key in self.list_prefix(prefix)? {
            self.delete(&key)?;
        }
        Ok(())
    }
    /// True when the key exists.
    fn exists(&self, key: &str) -> StoreResult<bool> {
        Ok(self.size(key)?.is_some())
    }
}

#[cfg(test)]
mod tests;
