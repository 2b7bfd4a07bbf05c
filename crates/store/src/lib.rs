#![warn(missing_docs)]
//! Key/value storage for neurochunk.
//!
//! Every format (Zarr v2, Zarr v3, N5) stores its metadata documents and chunks as values
//! under `/`-separated keys. This crate defines the one narrow trait the format layers use
//! ([`Store`]), with a filesystem backend ([`FsStore`]: atomic writes, durable on request
//! with [`Durability::Fsync`], never written through a symbolic link out of its root), an
//! in-memory backend ([`MemoryStore`]) and a view of a sub-tree of another store
//! ([`PrefixStore`]). It knows nothing about arrays or formats. [`fs_publish`] puts a
//! directory tree built aside in place of another without a moment where neither is there;
//! [`NewTreeStore`] writes a new tree into a remote store with few round trips; [`replace`]
//! tells whether an existing destination may be replaced without losing what is not ours.
//!
//! ```
//! use std::io::Write;
//! use neurochunk_store::{ByteRange, Bytes, MemoryStore, ReadRequest, ReadResponse, Store};
//!
//! let store = MemoryStore::new();
//! store.set("data/zarr.json", Bytes::from_static(b"{}"))?;
//! store.set("data/c/0/0", Bytes::from_static(b"0123456789"))?;
//!
//! // Whole values, byte ranges, and a missing key, which is not an error.
//! assert_eq!(store.get("data/zarr.json")?.as_deref(), Some(&b"{}"[..]));
//! let parts = store
//!     .get_ranges("data/c/0/0", &[ByteRange::FromStart { offset: 2, length: Some(3) },
//!                                 ByteRange::Suffix { length: 2 }])?
//!     .unwrap();
//! assert_eq!(parts, [Bytes::from_static(b"234"), Bytes::from_static(b"89")]);
//! assert_eq!(store.get("data/c/1/0")?, None);
//!
//! // Batched reads answer each request on its own.
//! let answers = store.get_many(&[ReadRequest::whole("data/zarr.json"),
//!                                ReadRequest::whole("data/c/1/0")]);
//! assert!(matches!(answers[1], Ok(ReadResponse::Missing)));
//!
//! // A streamed value appears only on commit.
//! let mut writer = store.writer("data/c/1/0")?;
//! writer.write_all(b"streamed")?;
//! writer.commit()?;
//!
//! // Listings: every key under a prefix, or one directory level.
//! assert_eq!(store.list_prefix("data/c/")?, ["data/c/0/0", "data/c/1/0"]);
//! let dir = store.list_dir("data")?;
//! assert_eq!((dir.keys, dir.prefixes), (vec!["zarr.json".to_string()], vec!["c".to_string()]));
//!
//! // Keys cannot escape the store.
//! assert!(store.get("../outside").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The trait is shaped for remote object storage as well as local files: values are
//! [`Bytes`] (cheap to clone and slice, no copy when a backend already holds them), errors
//! name keys rather than file paths ([`StoreError::Backend`] carries any backend's error),
//! reads can be batched ([`Store::get_many`]) and large values can be streamed
//! ([`Store::writer`]). Every implementation is expected to pass the [`conformance`] kit.
//!
//! Keys are relative, `/`-separated, and may not contain empty, `.` or `..` segments, a
//! leading `/`, a backslash or a NUL byte: such keys are refused with [`StoreError::InvalidKey`]
//! so no key can escape the store's root.

mod concurrent;
pub mod conformance;
mod counting;
mod filesystem;
pub mod fs_publish;
pub mod fsync;
#[cfg(feature = "icechunk")]
pub mod icechunk;
mod key;
pub mod lindi;
mod memory;
mod new_tree;
mod overlay;
mod pool;
mod prefix;
#[cfg(feature = "remote")]
pub mod remote;
pub mod replace;
pub mod staging;
mod writer;

pub use bytes::Bytes;
pub use concurrent::map_concurrent;
pub use counting::{CountingStore, StoreCounts};
pub use filesystem::{Durability, FsStore};
pub use key::{join_key, validate_key, validate_prefix};
pub use lindi::LindiStore;
pub use memory::MemoryStore;
pub use new_tree::NewTreeStore;
pub use overlay::OverlayStore;
pub use pool::{recycle_buffer, take_buffer};
pub use prefix::PrefixStore;
#[cfg(feature = "remote")]
pub use remote::{open_url, traffic, RemoteOptions, RemoteStore, StoreLocation, Traffic};
pub use writer::{BufferedWriter, ValueWriter};

use std::fmt::Debug;
use std::ops::Range;
use std::sync::Arc;

/// Sorted ranges merged where they overlap or lie less than `gap` bytes apart: how a ranged
/// read of many pieces of one value (a shard's inner chunks) becomes few reads.
pub(crate) fn merge_ranges(sorted: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut merged: Vec<Range<u64>> = Vec::new();
    for r in sorted {
        match merged.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => {
                last.end = last.end.max(r.end);
            }
            _ => merged.push(r.clone()),
        }
    }
    merged
}

/// Errors from a store, each naming the key concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The key does not exist, where its absence is an error (e.g. [`Store::get_required`]).
    /// [`Store::get`] and friends report a missing key as `Ok(None)` instead.
    #[error("no value at '{key}'")]
    NotFound {
        /// The missing key.
        key: String,
    },
    /// The key (or prefix) is malformed or would escape the store's root.
    #[error("invalid key '{key}': {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A byte range does not fit the value.
    #[error("byte range {range} is past the end of '{key}' ({size} bytes)")]
    RangeOutOfBounds {
        /// The key read.
        key: String,
        /// The range asked for.
        range: ByteRange,
        /// The size of the value in bytes.
        size: u64,
    },
    /// The store refuses writes.
    #[error("store is read-only: cannot write '{key}'")]
    ReadOnly {
        /// The key (or prefix) that was to be written or removed.
        key: String,
    },
    /// A filesystem write or removal would pass through a symbolic link that leads outside
    /// the store's root (see [`FsStore`]'s symbolic link policy); nothing was written.
    #[error(
        "cannot {action} '{key}': '{link}' is a symbolic link to '{target}', outside the \
         store's root (writes never follow a symbolic link out of it)"
    )]
    SymlinkOutsideRoot {
        /// The key (or prefix) that was to be written or removed.
        key: String,
        /// `"write"` or `"remove"`.
        action: &'static str,
        /// The symbolic link on the key's path (the store's root joined with part of the key).
        link: Box<str>,
        /// Where it leads (as resolved, or as written when it does not resolve).
        target: Box<str>,
    },
    /// A URL that names no store this build can open (unknown scheme, no bucket, a path
    /// that is not a valid key).
    #[error("invalid URL '{url}': {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A remote service refused the credentials (HTTP 401) or the operation (HTTP 403).
    #[error("access denied to {url}: {source}")]
    AccessDenied {
        /// The object (or prefix) concerned, as a URL (`s3://bucket/key`).
        url: String,
        /// The service's answer.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A response ended before all the bytes it announced had arrived.
    #[error("truncated response from {url}: received {received} of {expected} bytes")]
    Truncated {
        /// The object read, as a URL.
        url: String,
        /// How many bytes arrived.
        received: u64,
        /// How many bytes the response announced.
        expected: u64,
    },
    /// A remote request failed (network, service or protocol error, after any retries).
    #[error("{url}: {source}")]
    Remote {
        /// The object (or prefix) concerned, as a URL (`s3://bucket/key`).
        url: String,
        /// The underlying error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The backend failed: a file system, network or service error.
    #[error("{store}: error on '{key}': {source}")]
    Backend {
        /// The store, described so a person can find it (a root directory, a bucket URL).
        store: String,
        /// The key (or prefix) concerned.
        key: String,
        /// The backend's own error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl StoreError {
    /// A [`StoreError::Backend`] error.
    pub fn backend(
        store: impl Into<String>,
        key: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        StoreError::Backend {
            store: store.into(),
            key: key.into(),
            source: source.into(),
        }
    }
}

/// A version of an Icechunk repository: a branch's head, a tag or a snapshot id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepoVersion {
    /// The newest snapshot of a branch.
    Branch(String),
    /// The snapshot a tag names.
    Tag(String),
    /// A snapshot, by its id (20 characters of Crockford base 32).
    Snapshot(String),
}

impl std::fmt::Display for RepoVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RepoVersion::Branch(name) => write!(f, "branch '{name}'"),
            RepoVersion::Tag(name) => write!(f, "tag '{name}'"),
            RepoVersion::Snapshot(id) => write!(f, "snapshot {id}"),
        }
    }
}

/// True when a local path is in an Icechunk repository (always false in builds without
/// the `icechunk` feature).
pub(crate) fn icechunk_path(path: &std::path::Path) -> bool {
    #[cfg(feature = "icechunk")]
    {
        icechunk::split_repository_path(path).is_some()
    }
    #[cfg(not(feature = "icechunk"))]
    {
        let _ = path;
        false
    }
}

/// Results of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// A byte range within one value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByteRange {
    /// `length` bytes from `offset`; `None` reads to the end.
    FromStart {
        /// The first byte.
        offset: u64,
        /// How many bytes; `None` for everything from `offset` on.
        length: Option<u64>,
    },
    /// The last `length` bytes.
    Suffix {
        /// How many bytes.
        length: u64,
    },
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
            ByteRange::Suffix { length } => size.checked_sub(length).map(|start| (start, size)),
        }
    }

    /// Like [`ByteRange::resolve`], but a range that does not fit is a
    /// [`StoreError::RangeOutOfBounds`] naming `key`.
    pub fn resolve_for(&self, key: &str, size: u64) -> StoreResult<(u64, u64)> {
        self.resolve(size)
            .ok_or_else(|| StoreError::RangeOutOfBounds {
                key: key.to_string(),
                range: *self,
                size,
            })
    }

    /// Slices `ranges` out of the whole `value` of `key` (an out-of-bounds range is an error
    /// naming `key`): how a store holding whole values answers a ranged read.
    pub fn slice_all(key: &str, value: &Bytes, ranges: &[ByteRange]) -> StoreResult<Vec<Bytes>> {
        let size = value.len() as u64;
        ranges
            .iter()
            .map(|range| {
                let (start, end) = range.resolve_for(key, size)?;
                Ok(value.slice(start as usize..end as usize))
            })
            .collect()
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
    /// Names of the values directly under the prefix.
    pub keys: Vec<String>,
    /// Names of the sub-prefixes directly under the prefix.
    pub prefixes: Vec<String>,
}

impl DirListing {
    /// The listing of the directory `prefix` (with or without its trailing `/`) made from
    /// keys: those directly below it are its keys, the first segment of the deeper ones its
    /// sub-prefixes; keys outside it are skipped. Both lists come out sorted, without repeats.
    pub fn from_keys<S: AsRef<str>>(prefix: &str, keys: impl IntoIterator<Item = S>) -> Self {
        let base = match prefix.trim_end_matches('/') {
            "" => String::new(),
            p => format!("{p}/"),
        };
        let mut listing = DirListing::default();
        for key in keys {
            let Some(rest) = key.as_ref().strip_prefix(base.as_str()) else {
                continue;
            };
            match rest.split_once('/') {
                Some((dir, _)) => listing.prefixes.push(dir.to_string()),
                None => listing.keys.push(rest.to_string()),
            }
        }
        for names in [&mut listing.keys, &mut listing.prefixes] {
            names.sort();
            names.dedup();
        }
        listing
    }
}

/// One read of a batch ([`Store::get_many`]): a key and what to read of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadRequest {
    /// The key to read.
    pub key: String,
    /// The byte ranges to read, in order; `None` reads the whole value.
    pub ranges: Option<Vec<ByteRange>>,
}

impl ReadRequest {
    /// Read the whole value at `key`.
    pub fn whole(key: impl Into<String>) -> Self {
        ReadRequest {
            key: key.into(),
            ranges: None,
        }
    }

    /// Read these byte ranges of the value at `key`.
    pub fn ranges(key: impl Into<String>, ranges: Vec<ByteRange>) -> Self {
        ReadRequest {
            key: key.into(),
            ranges: Some(ranges),
        }
    }
}

impl ReadRequest {
    /// Answer this request with one [`get`](Store::get) or [`get_ranges`](Store::get_ranges)
    /// call on `store`: the building block of a [`Store::get_many`] implementation.
    pub fn answer_from<S: Store + ?Sized>(&self, store: &S) -> StoreResult<ReadResponse> {
        match &self.ranges {
            None => Ok(store
                .get(&self.key)?
                .map_or(ReadResponse::Missing, ReadResponse::Whole)),
            Some(ranges) => Ok(store
                .get_ranges(&self.key, ranges)?
                .map_or(ReadResponse::Missing, ReadResponse::Ranges)),
        }
    }
}

/// The answer to one [`ReadRequest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReadResponse {
    /// The key does not exist.
    Missing,
    /// The whole value (the request had no ranges).
    Whole(Bytes),
    /// One part per requested range, in the order asked.
    Ranges(Vec<Bytes>),
}

/// A key/value store. Implementations are safe to share between threads.
///
/// # How the array layer uses a store
///
/// The array layer's read path is *plan → fetch → decode → scatter*: a selection is planned
/// into the chunks (and, for sharded arrays, the inner chunks and byte ranges) it touches;
/// their bytes are fetched from the store; each chunk is decoded by its codec chain; and the
/// decoded elements are scattered into the caller's output buffer. Only the fetch step talks
/// to the store, and only through [`get_many`](Store::get_many): one call per batch of chunks
/// (for sharded arrays, one for the shard indexes and one for the inner-chunk byte ranges).
/// A local backend can serve a batch with [`get`](Store::get) and
/// [`get_ranges`](Store::get_ranges) calls ([`FsStore`] reads its files in parallel); a remote
/// backend (S3, GCS, HTTP) overrides [`get_many`](Store::get_many) to issue the requests of a
/// batch concurrently, and [`writer`](Store::writer) to upload large values in parts (whole
/// shards are written through it).
///
/// # Contract
///
/// - A missing key is `Ok(None)` for [`get`](Store::get), [`get_ranges`](Store::get_ranges)
///   and [`size`](Store::size), [`ReadResponse::Missing`] in [`get_many`](Store::get_many),
///   and [`StoreError::NotFound`] only where a value is required.
/// - A prefix is not a value: reading it as a key reads as missing.
/// - Keys are checked with [`validate_key`], prefixes with [`validate_prefix`]; a bad one is
///   [`StoreError::InvalidKey`].
/// - Writes are atomic: readers see the old or the new value, never a mix.
///
/// [`conformance::check_store`] checks all of this for an implementation.
pub trait Store: Send + Sync + Debug {
    /// The whole value, or `None` when the key does not exist.
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>>;
    /// Several byte ranges of one value, in the order asked, or `None` when the key does not
    /// exist. A range that does not fit is [`StoreError::RangeOutOfBounds`].
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>>;
    /// Size of the value in bytes, or `None` when the key does not exist.
    fn size(&self, key: &str) -> StoreResult<Option<u64>>;
    /// Store a value; readers see either the old or the new value, never a mix.
    fn set(&self, key: &str, value: Bytes) -> StoreResult<()>;
    /// Remove a value; removing a missing key is not an error.
    fn delete(&self, key: &str) -> StoreResult<()>;
    /// Every key that starts with `prefix` (`""` for all), sorted. The match is on the text
    /// of the key: `"a"` matches `a/b` and `a-b/c`, `"a/"` only `a/b`.
    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>>;
    /// The direct children of the directory `prefix` (`""` for the root, a trailing `/` is
    /// optional), each list sorted.
    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing>;

    /// The whole value; a missing key is [`StoreError::NotFound`].
    fn get_required(&self, key: &str) -> StoreResult<Bytes> {
        self.get(key)?.ok_or_else(|| StoreError::NotFound {
            key: key.to_string(),
        })
    }

    /// How many reads the store serves at once (requests in flight): `1` for local stores,
    /// [`RemoteOptions::max_requests`](crate::RemoteOptions) for a remote one. The array layer
    /// sizes its batches of [`get_many`](Store::get_many) reads by it, so that a batch keeps
    /// that many requests in flight; wrappers pass on their inner store's.
    fn concurrent_reads(&self) -> usize {
        1
    }

    /// Answer a batch of reads, one result per request in the same order. One failed request
    /// does not fail the others.
    ///
    /// The default makes one [`get`](Store::get) or [`get_ranges`](Store::get_ranges) call per
    /// request, in turn ([`ReadRequest::answer_from`]); [`FsStore`] reads the files of a batch
    /// in parallel, and a remote backend overrides it to issue the requests concurrently.
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        requests
            .iter()
            .map(|request| request.answer_from(self))
            .collect()
    }

    /// Store several values, each as [`set`](Store::set) stores one: atomically, and as
    /// durably as the store's `set` by the time this returns. A backend may write them
    /// together: the default makes one `set` call per value in turn; [`FsStore`] writes them
    /// in parallel and, with [`Durability::Fsync`], syncs each directory the batch wrote into
    /// once, after all of its values are in place, instead of once per value. Stops at the
    /// first error (values of the batch may then be stored or not).
    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        for (key, value) in values {
            self.set(&key, value)?;
        }
        Ok(())
    }

    /// The *write group* of `key`, for a store that keeps several keys' values in one object
    /// and rewrites that object whole when any of them is written (the chunks of a
    /// Neuroglancer precomputed shard): keys of one group are best written together, with one
    /// [`set_many`](Store::set_many) call, so the object is read and rewritten once instead of
    /// once per call. Writers that store many keys (the array engine) order and batch their
    /// values by it. `None` (the default) when the key's value is stored on its own.
    fn write_group(&self, key: &str) -> Option<u64> {
        let _ = key;
        None
    }

    /// A writer that streams a (large) value to `key`. Nothing is visible until
    /// [`ValueWriter::commit`]; dropping the writer without committing abandons the value.
    ///
    /// The default buffers the value in memory and [`set`](Store::set)s it on commit.
    fn writer(&self, key: &str) -> StoreResult<Box<dyn ValueWriter + '_>> {
        validate_key(key)?;
        Ok(Box::new(BufferedWriter::new(self, key)))
    }

    /// Like [`Store::writer`], but the writer holds a handle of its own on the store, so it
    /// can be kept beside other state (a table writer's sink) without borrowing: the same
    /// streaming (a temporary file renamed on commit, a multipart upload), the same
    /// atomicity. The default buffers the value in memory.
    fn owned_writer(self: Arc<Self>, key: &str) -> StoreResult<Box<dyn ValueWriter>>
    where
        Self: 'static,
    {
        validate_key(key)?;
        Ok(Box::new(BufferedWriter::new(self, key)))
    }

    /// Remove several values, each as [`delete`](Store::delete) removes one. The default
    /// makes one `delete` call per key in turn; a store that keeps several keys in one object
    /// ([`write_group`](Store::write_group)) rewrites each object once. Stops at the first
    /// error.
    fn delete_many(&self, keys: Vec<String>) -> StoreResult<()> {
        for key in keys {
            self.delete(&key)?;
        }
        Ok(())
    }

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

    /// Where the value or directory `key_or_prefix` lives on the local filesystem, for a
    /// store whose values are local files ([`FsStore`], and views of one); `None` for any
    /// other store, and for a key that could escape the store. Lets a caller look at what a
    /// listing does not show ([`replace::check_prefix`] walks the directory itself).
    fn local_path(&self, key_or_prefix: &str) -> Option<std::path::PathBuf> {
        let _ = key_or_prefix;
        None
    }

    /// Where the values at `keys` lie byte for byte in other files, for a store that is a
    /// view of such a file and was asked to say (an HDF5 file's view opened for virtual
    /// references); `None` for a value that must be read (one made up or encoded again by
    /// the view), and for every value of any other store.
    fn locate(&self, keys: &[&str]) -> StoreResult<Vec<Option<VirtualRef>>> {
        Ok(vec![None; keys.len()])
    }

    /// Record values as references to byte ranges of other files rather than as bytes, for
    /// a store that keeps such references (an Icechunk session's virtual chunks). `Ok(false)`,
    /// with nothing written, from a store that does not; the caller then copies the bytes.
    fn set_virtual_many(&self, refs: Vec<(String, VirtualRef)>) -> StoreResult<bool> {
        let _ = refs;
        Ok(false)
    }
}

/// A value that is a byte range of another file: what [`Store::locate`] finds and
/// [`Store::set_virtual_many`] records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualRef {
    /// The file: an absolute `file://` URL, or the `s3://`, `gs://` or `https://` URL it was
    /// read from.
    pub url: String,
    /// The first byte of the value in the file.
    pub offset: u64,
    /// The value's length in bytes.
    pub length: u64,
    /// When the file was last modified (seconds since the Unix epoch), if known: a reader
    /// then refuses the reference once the file has changed since.
    pub modified: Option<u64>,
}

#[cfg(test)]
mod tests;

#[cfg(all(test, unix))]
mod fs_policy_tests;
