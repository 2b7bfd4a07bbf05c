//! Object storage through the `object_store` crate: [`RemoteStore`] (S3, GCS, Azure, HTTP,
//! `file://`, or any [`ObjectStore`]), URLs ([`StoreLocation`], [`open_url`]) and their
//! options ([`RemoteOptions`]). Feature `remote`.
//!
//! The [`Store`] trait is synchronous; a [`RemoteStore`] owns a small tokio runtime (two
//! I/O threads) and blocks on it at each call. Batches ([`Store::get_many`]) put up to
//! [`RemoteOptions::max_requests`] requests in flight at once, ranges of one value are
//! coalesced, listings of one level use the service's delimiter listing, large streamed values
//! are uploaded in parts, and failed requests are retried with backoff and jitter. See
//! `docs/remote.md`.

mod http_index;
mod location;
mod partial;
mod profile;
#[cfg(test)]
mod tests;
mod writer;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use futures::stream::{StreamExt, TryStreamExt};
use object_store::limit::LimitStore;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use tokio::runtime::Runtime;

use crate::merge_ranges;
use tokio::sync::OnceCell;

pub use location::{
    is_url, open_url, Access, OpenedLocation, RemoteOptions, Scheme, StoreLocation,
};

use crate::{
    validate_key, validate_prefix, ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, Store,
    StoreError, StoreResult, ValueWriter,
};

/// A [`Store`] over an [`ObjectStore`]: a bucket of S3, GCS or Azure, an HTTP server, a local
/// directory through `object_store`, or an in-memory store.
///
/// Keys are the objects' paths in the bucket; errors name objects by URL (`s3://bucket/key`).
/// A missing object is `None`, 401/403 answers are [`StoreError::AccessDenied`], a response
/// shorter than it announced is [`StoreError::Truncated`].
///
/// Servers that ignore `Range` headers (answering 200 with the whole object) are detected on
/// the first ranged read: the store then remembers it and reads whole objects (once per key
/// and batch) and slices them.
///
/// Writes are atomic per object: [`Store::set`] is one `PUT`, [`Store::writer`] one `PUT` for
/// small values and a multipart upload (aborted when the writer fails or is dropped) for large
/// ones.
///
/// ```
/// use std::sync::Arc;
/// use neurochunk_store::{Bytes, RemoteOptions, RemoteStore, Store};
/// use object_store::memory::InMemory;
///
/// let store = RemoteStore::new(Arc::new(InMemory::new()), "memory://", &RemoteOptions::default())?;
/// store.set("a/zarr.json", Bytes::from_static(b"{}"))?;
/// assert_eq!(store.get("a/zarr.json")?.as_deref(), Some(&b"{}"[..]));
/// assert_eq!(store.list_dir("")?.prefixes, ["a"]);
/// assert_eq!(store.url_of("a/zarr.json"), "memory:///a/zarr.json");
/// # Ok::<(), neurochunk_store::StoreError>(())
/// ```
pub struct RemoteStore {
    inner: Arc<dyn ObjectStore>,
    runtime: Runtime,
    base: String,
    read_only: bool,
    max_requests: usize,
    part_size: usize,
    coalesce_gap: u64,
    ignores_ranges: AtomicBool,
    /// HTTP stores: the store listings go to first (without retries): WebDAV `PROPFIND`.
    http_lister: Option<Arc<dyn ObjectStore>>,
    /// HTTP stores: HTML directory indexes, read when the server refuses `PROPFIND` (as plain
    /// web servers do; remembered in `propfind_refused`).
    http_index: Option<http_index::HttpIndex>,
    propfind_refused: AtomicBool,
    /// Servers that ignore ranges: the whole values read last, kept for the next ranged reads
    /// of the same keys (a Parquet file is read footer first, then column by column).
    wholes: Mutex<WholeCache>,
}

/// Requests made and bytes moved by every [`RemoteStore`] of the process (see [`traffic`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Requests sent: GET, HEAD, PUT, DELETE, listings (a listing of several pages counts
    /// once), upload parts.
    pub requests: u64,
    /// Bytes of response bodies received (object data).
    pub bytes_read: u64,
    /// Bytes of object data sent.
    pub bytes_written: u64,
}

static REQUESTS: AtomicU64 = AtomicU64::new(0);
static BYTES_READ: AtomicU64 = AtomicU64::new(0);
static BYTES_WRITTEN: AtomicU64 = AtomicU64::new(0);

/// The requests and bytes of every [`RemoteStore`] of the process so far, for progress
/// displays (counted as they happen: a body being received counts as it arrives).
pub fn traffic() -> Traffic {
    Traffic {
        requests: REQUESTS.load(Ordering::Relaxed),
        bytes_read: BYTES_READ.load(Ordering::Relaxed),
        bytes_written: BYTES_WRITTEN.load(Ordering::Relaxed),
    }
}

/// The address of the cloud instance metadata service, which the S3 client asks for
/// credentials when it finds none elsewhere.
const INSTANCE_METADATA_HOST: &str = "169.254.169.254";

fn count_requests(n: u64) {
    REQUESTS.fetch_add(n, Ordering::Relaxed);
}

fn count_read(bytes: usize) {
    BYTES_READ.fetch_add(bytes as u64, Ordering::Relaxed);
}

fn count_written(bytes: usize) {
    BYTES_WRITTEN.fetch_add(bytes as u64, Ordering::Relaxed);
}

/// Bytes of whole values a store keeps for a server that ignores ranges.
const WHOLE_CACHE_BYTES: usize = 64 << 20;

/// Whole values, most recently used last, at most [`WHOLE_CACHE_BYTES`] in all.
#[derive(Default)]
struct WholeCache {
    values: std::collections::VecDeque<(String, Bytes)>,
    bytes: usize,
}

impl WholeCache {
    fn get(&mut self, key: &str) -> Option<Bytes> {
        let i = self.values.iter().position(|(k, _)| k == key)?;
        let entry = self.values.remove(i)?;
        let value = entry.1.clone();
        self.values.push_back(entry);
        Some(value)
    }

    fn put(&mut self, key: &str, value: &Bytes) {
        self.forget(key);
        if value.len() > WHOLE_CACHE_BYTES {
            return;
        }
        self.bytes += value.len();
        self.values.push_back((key.to_string(), value.clone()));
        while self.bytes > WHOLE_CACHE_BYTES {
            match self.values.pop_front() {
                Some((_, v)) => self.bytes -= v.len(),
                None => break,
            }
        }
    }

    fn forget(&mut self, key: &str) {
        if let Some(i) = self.values.iter().position(|(k, _)| k == key) {
            if let Some((_, v)) = self.values.remove(i) {
                self.bytes -= v.len();
            }
        }
    }

    fn forget_prefix(&mut self, prefix: &str) {
        self.values.retain(|(k, _)| !k.starts_with(prefix));
        self.bytes = self.values.iter().map(|(_, v)| v.len()).sum();
    }
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore")
            .field("url", &self.base)
            .field("read_only", &self.read_only)
            .field("max_requests", &self.max_requests)
            .finish_non_exhaustive()
    }
}

/// Whole values fetched once per key in one batch, when the server ignores ranges.
#[derive(Default)]
struct Batch {
    wholes: Mutex<HashMap<String, Arc<OnceCell<Option<Bytes>>>>>,
}

/// Why a ranged GET failed.
enum Failed {
    /// The service's error.
    Service(object_store::Error),
    /// Our own finding (a truncated body).
    Store(StoreError),
}

impl RemoteStore {
    /// A store over `inner`, named `base` in errors (the URL of its root, such as
    /// `s3://bucket`), with the concurrency and upload sizes of `options` (the service's
    /// endpoint, credentials and retries are `inner`'s own). Starts the store's runtime.
    pub fn new(
        inner: Arc<dyn ObjectStore>,
        base: impl Into<String>,
        options: &RemoteOptions,
    ) -> StoreResult<Self> {
        let mut base = base.into();
        while base.ends_with('/') && !base.ends_with("://") {
            base.pop();
        }
        let max_requests = options.max_requests.max(1);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("neurochunk-io")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Remote {
                url: base.clone(),
                source: Box::new(e),
            })?;
        Ok(RemoteStore {
            inner: Arc::new(LimitStore::new(inner, max_requests)),
            runtime,
            base,
            read_only: false,
            max_requests,
            part_size: options.part_size.max(5 << 20),
            coalesce_gap: options.coalesce_gap,
            ignores_ranges: AtomicBool::new(false),
            http_lister: None,
            http_index: None,
            propfind_refused: AtomicBool::new(false),
            wholes: Mutex::default(),
        })
    }

    /// The same store, refusing every write with [`StoreError::ReadOnly`] (HTTP servers).
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// List through `lister` (an HTTP store without retries, so that a server that cannot
    /// list says so at once), and when the server refuses WebDAV `PROPFIND` (plain web
    /// servers do), through its HTML directory indexes (`index`). A server that offers
    /// neither can only serve what is named (arrays, files, groups with consolidated
    /// metadata).
    pub(crate) fn with_http_lister(
        mut self,
        lister: Arc<dyn ObjectStore>,
        index: Option<http_index::HttpIndex>,
    ) -> Self {
        self.http_lister = Some(lister);
        self.http_index = index;
        self
    }

    /// Uploads larger than `bytes` through [`Store::writer`] go in parts of this size (at
    /// least 5 MiB, the smallest part S3 accepts).
    pub fn with_part_size(mut self, bytes: usize) -> Self {
        self.part_size = bytes.max(5 << 20);
        self
    }

    /// The URL of `key` (the store's URL for `""`).
    pub fn url_of(&self, key: &str) -> String {
        let key = key.trim_start_matches('/');
        if key.is_empty() {
            self.base.clone()
        } else {
            format!("{}/{key}", self.base)
        }
    }

    /// True once the server was found to ignore `Range` headers; the store then reads whole
    /// objects and slices them.
    pub fn ignores_ranges(&self) -> bool {
        self.ignores_ranges.load(Ordering::Relaxed)
    }

    /// The `object_store` backend (behind the store's request limit).
    pub fn object_store(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    fn path(key: &str) -> StoreResult<Path> {
        validate_key(key)?;
        Path::parse(key).map_err(|_| StoreError::InvalidKey {
            key: key.to_string(),
            reason: "an object path may not hold control characters",
        })
    }

    fn prefix_path(prefix: &str) -> StoreResult<Option<Path>> {
        validate_prefix(prefix)?;
        let trimmed = prefix.trim_end_matches('/');
        if trimmed.is_empty() {
            return Ok(None);
        }
        Path::parse(trimmed)
            .map(Some)
            .map_err(|_| StoreError::InvalidKey {
                key: prefix.to_string(),
                reason: "an object path may not hold control characters",
            })
    }

    /// The [`StoreError`] of a failed request on `key`.
    fn error(&self, key: &str, e: object_store::Error) -> StoreError {
        let url = self.url_of(key);
        match e {
            object_store::Error::PermissionDenied { source, .. }
            | object_store::Error::Unauthenticated { source, .. } => {
                StoreError::AccessDenied { url, source }
            }
            // No credentials in the environment or a profile: the S3 client asked the EC2
            // instance metadata service last, and its failure says nothing useful by itself.
            other if other.to_string().contains(INSTANCE_METADATA_HOST) => StoreError::Remote {
                url,
                source: format!(
                    "no credentials were found: set AWS_ACCESS_KEY_ID and \
                     AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), or read a public bucket without \
                     them (--anon, NEUROCHUNK_ANON=true, storage_options={{\"anon\": True}}); \
                     asking the instance metadata service failed: {other}"
                )
                .into(),
            },
            other => StoreError::Remote {
                url,
                source: Box::new(other),
            },
        }
    }

    /// The error of a listing an HTTP server refused.
    fn unlistable(&self, prefix: &str, e: &str) -> StoreError {
        StoreError::Remote {
            url: self.url_of(prefix),
            source: format!(
                "this HTTP server cannot list its files: it refuses WebDAV PROPFIND and gives no \
                 HTML directory index (read arrays and files by name, or groups with consolidated \
                 metadata): {e}"
            )
            .into(),
        }
    }

    /// A directory of an HTTP server through `PROPFIND` (until the server refused it once),
    /// then through its HTML index: the names of its values and sub-directories, or `None`
    /// when the server has no such directory.
    async fn http_list_dir(
        &self,
        lister: &Arc<dyn ObjectStore>,
        dir: &str,
    ) -> Result<Option<(Vec<String>, Vec<String>)>, String> {
        let mut refused = String::new();
        if !self.propfind_refused.load(Ordering::Relaxed) {
            let path = Self::prefix_path(dir).map_err(|e| e.to_string())?;
            count_requests(1);
            match lister.list_with_delimiter(path.as_ref()).await {
                Ok(result) => {
                    let name = |p: &Path| p.filename().unwrap_or_default().to_string();
                    return Ok(Some((
                        result.objects.iter().map(|m| name(&m.location)).collect(),
                        result.common_prefixes.iter().map(name).collect(),
                    )));
                }
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => {
                    self.propfind_refused.store(true, Ordering::Relaxed);
                    refused = format!("PROPFIND: {e}; ");
                }
            }
        }
        match &self.http_index {
            Some(index) => {
                count_requests(1);
                match index.list(dir).await {
                    Ok(found) => Ok(found.map(|i| (i.keys, i.prefixes))),
                    Err(e) => Err(format!("{refused}{e}")),
                }
            }
            None => Err(refused),
        }
    }

    /// Every value under the directory `dir` of an HTTP server, recursively, one directory
    /// listing at a time.
    async fn http_list_all(
        &self,
        lister: &Arc<dyn ObjectStore>,
        dir: &str,
    ) -> Result<Vec<String>, String> {
        let mut keys = Vec::new();
        let mut pending = vec![dir.trim_end_matches('/').to_string()];
        while let Some(dir) = pending.pop() {
            let Some((names, prefixes)) = self.http_list_dir(lister, &dir).await? else {
                continue;
            };
            keys.extend(names.iter().map(|n| crate::join_key(&dir, n)));
            pending.extend(prefixes.iter().map(|p| crate::join_key(&dir, p)));
        }
        Ok(keys)
    }

    fn fail(&self, key: &str, e: Failed) -> StoreError {
        match e {
            Failed::Service(e) => self.error(key, e),
            Failed::Store(e) => e,
        }
    }

    fn refuse_write(&self, key: &str) -> StoreResult<()> {
        if self.read_only {
            return Err(StoreError::ReadOnly {
                key: self.url_of(key),
            });
        }
        Ok(())
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }

    /// A GET of `range` (the whole object for `None`): the body, checked against the length
    /// the response announced, and the object's size.
    async fn fetch(
        &self,
        key: &str,
        path: &Path,
        range: Option<GetRange>,
    ) -> Result<(Bytes, u64), Failed> {
        let options = GetOptions {
            range,
            ..GetOptions::default()
        };
        count_requests(1);
        let result = self
            .inner
            .get_opts(path, options)
            .await
            .map_err(Failed::Service)?;
        let size = result.meta.size;
        let expected = result.range.end.saturating_sub(result.range.start);
        let truncated = |received: u64| {
            Failed::Store(StoreError::Truncated {
                url: self.url_of(key),
                received,
                expected,
            })
        };
        // The body, chunk by chunk, so that a connection that breaks off (after the client's
        // own retries) is reported with what arrived. A body that comes in one piece is kept
        // as it is; otherwise each piece is copied as it arrives into one buffer of the
        // announced length (a piece is then freed at once, not held until the end).
        let mut stream = result.into_stream();
        let mut first: Option<Bytes> = None;
        let mut whole = bytes::BytesMut::new();
        let mut received = 0u64;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    received += chunk.len() as u64;
                    count_read(chunk.len());
                    if whole.is_empty() && first.is_none() {
                        first = Some(chunk);
                        continue;
                    }
                    if let Some(first) = first.take() {
                        whole.reserve((expected as usize).max(received as usize));
                        whole.extend_from_slice(&first);
                    }
                    whole.extend_from_slice(&chunk);
                }
                Err(_) if received < expected => return Err(truncated(received)),
                Err(e) => return Err(Failed::Service(e)),
            }
        }
        if received != expected {
            return Err(truncated(received));
        }
        let bytes = first.unwrap_or_else(|| whole.freeze());
        Ok((bytes, size))
    }

    /// The whole value, or `None` when missing; fetched once per key within `batch`, and
    /// when the server ignores ranges, kept for later reads (up to [`WHOLE_CACHE_BYTES`]).
    async fn whole(&self, key: &str, path: &Path, batch: &Batch) -> StoreResult<Option<Bytes>> {
        let keep = self.ignores_ranges();
        if keep {
            if let Some(value) = self.whole_cache().get(key) {
                return Ok(Some(value));
            }
        }
        let cell = {
            let mut wholes = batch.wholes.lock().unwrap_or_else(|e| e.into_inner());
            wholes.entry(key.to_string()).or_default().clone()
        };
        let value = cell
            .get_or_try_init(|| async {
                match self.fetch(key, path, None).await {
                    Ok((bytes, _)) => Ok(Some(bytes)),
                    Err(Failed::Service(object_store::Error::NotFound { .. })) => Ok(None),
                    Err(e) => Err(self.fail(key, e)),
                }
            })
            .await
            .cloned()?;
        if let (true, Some(value)) = (keep, &value) {
            self.whole_cache().put(key, value);
        }
        Ok(value)
    }

    fn whole_cache(&self) -> std::sync::MutexGuard<'_, WholeCache> {
        self.wholes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Forget what is kept of `key` (it is being written or removed).
    pub(crate) fn forget(&self, key: &str) {
        self.whole_cache().forget(key);
    }

    /// The object's size, or `None` when missing.
    async fn head_size(&self, key: &str, path: &Path) -> StoreResult<Option<u64>> {
        count_requests(1);
        match self.inner.head(path).await {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.error(key, e)),
        }
    }

    /// `ranges` of `key`, or `None` when missing.
    async fn read_ranges(
        &self,
        key: &str,
        path: &Path,
        ranges: &[ByteRange],
        batch: &Batch,
    ) -> StoreResult<Option<Vec<Bytes>>> {
        if self.ignores_ranges() {
            return match self.whole(key, path, batch).await? {
                Some(value) => ByteRange::slice_all(key, &value, ranges).map(Some),
                None => Ok(None),
            };
        }
        if ranges.is_empty() {
            return Ok(self.head_size(key, path).await?.map(|_| Vec::new()));
        }
        if let [ByteRange::FromStart {
            offset: 0,
            length: None,
        }] = ranges
        {
            return Ok(self.whole(key, path, batch).await?.map(|v| vec![v]));
        }
        if let [ByteRange::Suffix { length }] = ranges {
            if *length > 0 {
                return match self.fetch(key, path, Some(GetRange::Suffix(*length))).await {
                    Ok((bytes, size)) => {
                        if *length > size {
                            return Err(StoreError::RangeOutOfBounds {
                                key: key.to_string(),
                                range: ranges[0],
                                size,
                            });
                        }
                        Ok(Some(vec![bytes]))
                    }
                    Err(e) => self.after_failure(key, path, ranges, e, batch).await,
                };
            }
        }
        // Absolute spans, known without the size when every range is a bounded, non-empty
        // one; otherwise the size is asked for first.
        let bounded: Option<Vec<(u64, u64)>> = ranges
            .iter()
            .map(|r| match *r {
                ByteRange::FromStart {
                    offset,
                    length: Some(len),
                } if len > 0 => offset.checked_add(len).map(|end| (offset, end)),
                _ => None,
            })
            .collect();
        let (spans, known_size) = match bounded {
            Some(spans) => (spans, None),
            None => {
                let Some(size) = self.head_size(key, path).await? else {
                    return Ok(None);
                };
                let spans = ranges
                    .iter()
                    .map(|r| r.resolve_for(key, size))
                    .collect::<StoreResult<Vec<_>>>()?;
                (spans, Some(size))
            }
        };
        let mut fetch: Vec<Range<u64>> = spans
            .iter()
            .filter(|(start, end)| end > start)
            .map(|&(start, end)| start..end)
            .collect();
        fetch.sort_by_key(|r| r.start);
        let merged = merge_ranges(&fetch, self.coalesce_gap);
        let fetched = futures::future::join_all(
            merged
                .iter()
                .map(|r| self.fetch(key, path, Some(GetRange::Bounded(r.clone())))),
        )
        .await;
        let mut parts = Vec::with_capacity(merged.len());
        let mut size = known_size;
        for result in fetched {
            match result {
                Ok((bytes, object_size)) => {
                    size = Some(object_size);
                    parts.push(bytes);
                }
                Err(e) => return self.after_failure(key, path, ranges, e, batch).await,
            }
        }
        let Some(size) = size else {
            // Only empty ranges: the size is known from the HEAD above.
            return Ok(Some(vec![Bytes::new(); ranges.len()]));
        };
        // A bounded range past the end comes back short (servers clamp it): out of bounds.
        for (range, &(_, end)) in ranges.iter().zip(&spans) {
            if end > size {
                return Err(StoreError::RangeOutOfBounds {
                    key: key.to_string(),
                    range: *range,
                    size,
                });
            }
        }
        let mut out = Vec::with_capacity(ranges.len());
        for &(start, end) in &spans {
            if start == end {
                out.push(Bytes::new());
                continue;
            }
            let i = merged.partition_point(|m| m.start <= start) - 1;
            let (m, part) = (&merged[i], &parts[i]);
            let (from, to) = ((start - m.start) as usize, (end - m.start) as usize);
            if to > part.len() {
                return Err(StoreError::Truncated {
                    url: self.url_of(key),
                    received: part.len() as u64,
                    expected: m.end - m.start,
                });
            }
            out.push(part.slice(from..to));
        }
        Ok(Some(out))
    }

    /// What a failed ranged read means: a missing key, a server that ignores ranges (then
    /// the whole object is read and sliced, and the store remembers), a range past the end
    /// (found by asking the size), or the service's error.
    async fn after_failure(
        &self,
        key: &str,
        path: &Path,
        ranges: &[ByteRange],
        failure: Failed,
        batch: &Batch,
    ) -> StoreResult<Option<Vec<Bytes>>> {
        let e = match failure {
            Failed::Store(e) => return Err(e),
            Failed::Service(object_store::Error::NotFound { .. }) => return Ok(None),
            Failed::Service(e) => e,
        };
        if is_non_partial(&e) {
            self.ignores_ranges.store(true, Ordering::Relaxed);
            return match self.whole(key, path, batch).await? {
                Some(value) => ByteRange::slice_all(key, &value, ranges).map(Some),
                None => Ok(None),
            };
        }
        if matches!(
            e,
            object_store::Error::PermissionDenied { .. }
                | object_store::Error::Unauthenticated { .. }
        ) {
            return Err(self.error(key, e));
        }
        let Some(size) = self.head_size(key, path).await? else {
            return Ok(None);
        };
        for range in ranges {
            range.resolve_for(key, size)?;
        }
        Err(self.error(key, e))
    }

    async fn answer(&self, request: &ReadRequest, batch: &Batch) -> StoreResult<ReadResponse> {
        let path = Self::path(&request.key)?;
        match &request.ranges {
            None => Ok(self
                .whole(&request.key, &path, batch)
                .await?
                .map_or(ReadResponse::Missing, ReadResponse::Whole)),
            Some(ranges) => Ok(self
                .read_ranges(&request.key, &path, ranges, batch)
                .await?
                .map_or(ReadResponse::Missing, ReadResponse::Ranges)),
        }
    }

    /// Every object under the directory `prefix` (`None`: the root), recursively.
    async fn list_all(&self, shown: &str, prefix: Option<&Path>) -> StoreResult<Vec<String>> {
        if let Some(lister) = &self.http_lister {
            let dir = prefix.map(|p| p.to_string()).unwrap_or_default();
            return self
                .http_list_all(lister, &dir)
                .await
                .map_err(|e| self.unlistable(shown, &e));
        }
        count_requests(1);
        self.inner
            .list(prefix)
            .map_ok(|meta| meta.location.to_string())
            .try_collect::<Vec<_>>()
            .await
            .map_err(|e| self.error(shown, e))
    }
}

/// True for `object_store`'s errors about a `200 OK` answer to a ranged request.
fn is_non_partial(e: &object_store::Error) -> bool {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(&s.to_string());
        source = s.source();
    }
    // The S3, GCS and Azure clients' message, and the HTTP client's.
    text.contains("non-partial response") || text.contains("Range request not supported")
}

impl Store for RemoteStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let path = Self::path(key)?;
        self.block_on(self.whole(key, &path, &Batch::default()))
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        let path = Self::path(key)?;
        self.block_on(self.read_ranges(key, &path, ranges, &Batch::default()))
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        let path = Self::path(key)?;
        self.block_on(self.head_size(key, &path))
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        let path = Self::path(key)?;
        self.refuse_write(key)?;
        self.forget(key);
        count_requests(1);
        count_written(value.len());
        self.block_on(self.inner.put(&path, PutPayload::from_bytes(value)))
            .map(drop)
            .map_err(|e| self.error(key, e))
    }

    /// Puts up to [`RemoteOptions::max_requests`] values at once (each PUT is atomic: an
    /// object is replaced whole or not at all). Every key is checked before the first PUT;
    /// the first failure is returned once the PUTs in flight have ended (values of the batch
    /// may then be stored or not, as the trait allows).
    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        let mut puts = Vec::with_capacity(values.len());
        for (key, value) in values {
            let path = Self::path(&key)?;
            self.refuse_write(&key)?;
            puts.push((key, path, value));
        }
        for (key, _, value) in &puts {
            self.forget(key);
            count_written(value.len());
        }
        count_requests(puts.len() as u64);
        self.block_on(async {
            let mut stored = futures::stream::iter(puts)
                .map(|(key, path, value)| async move {
                    self.inner
                        .put(&path, PutPayload::from_bytes(value))
                        .await
                        .map(drop)
                        .map_err(|e| self.error(&key, e))
                })
                .buffer_unordered(self.max_requests);
            let mut first_error = None;
            while let Some(result) = stored.next().await {
                if let Err(error) = result {
                    first_error.get_or_insert(error);
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        let path = Self::path(key)?;
        self.refuse_write(key)?;
        self.forget(key);
        count_requests(1);
        match self.block_on(self.inner.delete(&path)) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.error(key, e)),
        }
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        validate_prefix(prefix)?;
        // Object stores match prefixes on whole segments; the trait matches on text, so the
        // directory holding the prefix is listed and filtered.
        let dir = match prefix.rsplit_once('/') {
            Some((dir, _)) => dir,
            None => "",
        };
        let dir_path = Self::prefix_path(dir)?;
        let mut keys = self.block_on(self.list_all(prefix, dir_path.as_ref()))?;
        keys.retain(|k| k.starts_with(prefix));
        keys.sort();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        let path = Self::prefix_path(prefix)?;
        if let Some(lister) = &self.http_lister {
            let dir = path.as_ref().map(|p| p.to_string()).unwrap_or_default();
            let (keys, prefixes) = self
                .block_on(self.http_list_dir(lister, &dir))
                .map_err(|e| self.unlistable(prefix, &e))?
                .unwrap_or_default();
            let mut listing = DirListing { keys, prefixes };
            listing.keys.sort();
            listing.prefixes.sort();
            listing.prefixes.dedup();
            return Ok(listing);
        }
        count_requests(1);
        let listed = self.block_on(self.inner.list_with_delimiter(path.as_ref()));
        let result = match listed {
            Ok(result) => result,
            Err(object_store::Error::NotFound { .. }) => return Ok(DirListing::default()),
            Err(e) => return Err(self.error(prefix, e)),
        };
        let name = |p: &Path| p.filename().unwrap_or_default().to_string();
        let mut listing = DirListing {
            keys: result.objects.iter().map(|m| name(&m.location)).collect(),
            prefixes: result.common_prefixes.iter().map(name).collect(),
        };
        listing.keys.sort();
        listing.prefixes.sort();
        listing.prefixes.dedup();
        Ok(listing)
    }

    fn concurrent_reads(&self) -> usize {
        self.max_requests
    }

    /// Puts up to [`RemoteOptions::max_requests`] requests in flight at once; when the server
    /// ignores ranges, each key of the batch is read once.
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        let batch = Batch::default();
        let batch = &batch;
        self.block_on(async {
            let mut answers: Vec<Option<StoreResult<ReadResponse>>> =
                (0..requests.len()).map(|_| None).collect();
            let mut stream = futures::stream::iter(requests.iter().enumerate())
                .map(|(i, request)| async move { (i, self.answer(request, batch).await) })
                .buffer_unordered(self.max_requests);
            while let Some((i, answer)) = stream.next().await {
                answers[i] = Some(answer);
            }
            answers
                .into_iter()
                .map(|a| {
                    a.unwrap_or_else(|| {
                        Err(StoreError::Remote {
                            url: self.base.clone(),
                            source: "a read of the batch was not answered".into(),
                        })
                    })
                })
                .collect()
        })
    }

    fn writer(&self, key: &str) -> StoreResult<Box<dyn ValueWriter + '_>> {
        let path = Self::path(key)?;
        self.refuse_write(key)?;
        self.forget(key);
        Ok(Box::new(writer::RemoteWriter::new(self, key, path)))
    }

    fn owned_writer(self: Arc<Self>, key: &str) -> StoreResult<Box<dyn ValueWriter>> {
        let path = Self::path(key)?;
        self.refuse_write(key)?;
        self.forget(key);
        Ok(Box::new(writer::RemoteWriter::new(self, key, path)))
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        validate_prefix(prefix)?;
        self.refuse_write(prefix)?;
        self.whole_cache().forget_prefix(prefix);
        let keys = self.list_prefix(prefix)?;
        // S3 deletes up to 1000 keys per request.
        count_requests(keys.len().div_ceil(1000) as u64);
        let paths: Vec<object_store::Result<Path>> =
            keys.iter().map(|k| Ok(Path::parse(k)?)).collect();
        let results: Vec<object_store::Result<Path>> = self.block_on(
            self.inner
                .delete_stream(futures::stream::iter(paths).boxed())
                .collect(),
        );
        for result in results {
            match result {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(self.error(prefix, e)),
            }
        }
        Ok(())
    }
}
