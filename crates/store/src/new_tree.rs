//! [`NewTreeStore`]: writing a new tree (an NWB file, a converted hierarchy) into an empty
//! prefix of a store that pays a round trip per request, such as S3.
//!
//! A writer of a hierarchy makes many small requests one after the other: it checks that a
//! parent group exists, writes a node's metadata, reads it back to add an attribute, writes it
//! again. Against a local directory each is a system call; behind 20 ms of network each is a
//! round trip, and a 1,000-node NWB file took minutes. Because the tree is new (the prefix
//! held nothing when writing began, and nothing else writes there), every answer about it
//! is known locally:
//!
//! - **Writes are gathered** and uploaded together with [`Store::set_many`] (which a remote
//!   store issues concurrently) once enough are waiting, and by [`NewTreeStore::flush`].
//! - **Reads are answered from what was written**: a key never written is missing, without
//!   asking; a value not yet uploaded, or a small one already uploaded (metadata documents),
//!   is returned from memory; only large uploaded values (chunks) are read back from the
//!   inner store. Listings come from the written keys.
//!
//! Nothing written is visible in the inner store until it is uploaded, and an upload is a
//! plain `set_many` (each value atomic, as the store makes it). Uploads happen one batch at a
//! time, and deletes wait for the batch in flight, so a later value of a key is never
//! overtaken by an earlier one. A writer that stops must call [`NewTreeStore::flush`]; what
//! is still waiting when the store is dropped is discarded (an abandoned write leaves less
//! behind, never a value that was not asked for).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::memory::{list_sorted_dir, list_sorted_prefix};
use crate::{
    validate_key, validate_prefix, ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, Store,
    StoreError, StoreResult, ValueWriter,
};

/// Values up to this size stay in memory once uploaded, so that reading them back (metadata
/// documents read again to add an attribute) costs no request.
const KEEP_VALUE_BYTES: usize = 64 << 10;
/// The most bytes of uploaded values kept in memory.
const KEEP_TOTAL_BYTES: usize = 64 << 20;
/// Waiting values are uploaded once they hold this many bytes...
const UPLOAD_BYTES: usize = 64 << 20;
/// ...or number this many times the inner store's requests in flight.
const UPLOAD_REQUESTS_PER_SLOT: usize = 2;

/// What the store knows of one key of the tree.
#[derive(Clone, Debug)]
enum Entry {
    /// The value, in memory: waiting for upload, or uploaded and small.
    Held(Bytes),
    /// Uploaded, of this size; read from the inner store.
    Stored(u64),
}

#[derive(Debug, Default)]
struct State {
    /// Every key of the tree.
    entries: BTreeMap<String, Entry>,
    /// Keys whose (latest) value waits for upload.
    waiting: BTreeSet<String>,
    waiting_bytes: usize,
    /// Bytes of uploaded values held in memory.
    kept_bytes: usize,
}

/// A store for writing a new tree into an empty prefix of `inner`: writes gathered and
/// uploaded many at a time, reads answered from what was written (see the module docs).
///
/// ```
/// use std::sync::Arc;
/// use neurochunk_store::{Bytes, MemoryStore, NewTreeStore, Store};
///
/// let inner = Arc::new(MemoryStore::new());
/// let tree = NewTreeStore::new(inner.clone());
/// tree.set("a/zarr.json", Bytes::from_static(b"{}"))?;
/// // Read back from memory; not yet in the inner store.
/// assert_eq!(tree.get("a/zarr.json")?, Some(Bytes::from_static(b"{}")));
/// assert_eq!(inner.get("a/zarr.json")?, None);
/// tree.flush()?;
/// assert_eq!(inner.get("a/zarr.json")?, Some(Bytes::from_static(b"{}")));
/// # Ok::<(), neurochunk_store::StoreError>(())
/// ```
#[derive(Debug)]
pub struct NewTreeStore {
    inner: Arc<dyn Store>,
    state: Mutex<State>,
    /// Held while a batch is uploaded or a stored value deleted: one at a time.
    upload: Mutex<()>,
    /// Values waiting that start an upload.
    batch: usize,
}

impl NewTreeStore {
    /// A new tree written into `inner`, which must hold nothing (under the prefix it stands
    /// for) and must not be written by anyone else meanwhile: keys not written through this
    /// store read as missing.
    pub fn new(inner: Arc<dyn Store>) -> Self {
        let batch = inner.concurrent_reads().max(1) * UPLOAD_REQUESTS_PER_SLOT;
        NewTreeStore {
            inner,
            state: Mutex::new(State::default()),
            upload: Mutex::new(()),
            batch,
        }
    }

    /// Upload once `values` values wait (default: twice the inner store's requests in
    /// flight), or 64 MiB.
    pub fn with_batch(mut self, values: usize) -> Self {
        self.batch = values.max(1);
        self
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn upload_lock(&self) -> MutexGuard<'_, ()> {
        self.upload.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Upload every value still waiting. Call it when the tree is written; the first failed
    /// upload is returned (the values of that batch may then be stored or not).
    pub fn flush(&self) -> StoreResult<()> {
        let _one_at_a_time = self.upload_lock();
        let batch: Vec<(String, Bytes)> = {
            let mut state = self.state();
            let keys = std::mem::take(&mut state.waiting);
            state.waiting_bytes = 0;
            keys.into_iter()
                .filter_map(|key| match state.entries.get(&key) {
                    Some(Entry::Held(value)) => Some((key, value.clone())),
                    _ => None,
                })
                .collect()
        };
        if batch.is_empty() {
            return Ok(());
        }
        let uploaded: Vec<(String, Bytes)> = batch.clone();
        self.inner.set_many(batch)?;
        let mut state = self.state();
        for (key, value) in uploaded {
            // A key written again meanwhile waits for the next upload with its new value.
            let unchanged = matches!(state.entries.get(&key),
                Some(Entry::Held(held)) if held.as_ptr() == value.as_ptr() && held.len() == value.len());
            if !unchanged || state.waiting.contains(&key) {
                continue;
            }
            if value.len() <= KEEP_VALUE_BYTES && state.kept_bytes + value.len() <= KEEP_TOTAL_BYTES
            {
                state.kept_bytes += value.len();
            } else {
                state.entries.insert(key, Entry::Stored(value.len() as u64));
            }
        }
        Ok(())
    }

    /// Record `values` as waiting, and upload when enough wait.
    fn hold(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        for (key, _) in &values {
            validate_key(key)?;
        }
        let full = {
            let mut state = self.state();
            for (key, value) in values {
                state.waiting_bytes += value.len();
                if let Some(Entry::Held(old)) = state.entries.get(&key) {
                    // Replacing an uploaded small value frees its place in memory.
                    if !state.waiting.contains(&key) {
                        state.kept_bytes = state.kept_bytes.saturating_sub(old.len());
                    }
                }
                state.waiting.insert(key.clone());
                state.entries.insert(key, Entry::Held(value));
            }
            state.waiting_bytes >= UPLOAD_BYTES || state.waiting.len() >= self.batch
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// What is known of `key`: `None` when it is not in the tree.
    fn entry(&self, key: &str) -> StoreResult<Option<Entry>> {
        validate_key(key)?;
        Ok(self.state().entries.get(key).cloned())
    }
}

impl Store for NewTreeStore {
    /// References go to the inner store at once, after the values waiting (the metadata of
    /// the arrays they belong to); they are then known as stored values of their length.
    fn set_virtual_many(&self, refs: Vec<(String, crate::VirtualRef)>) -> StoreResult<bool> {
        for (key, _) in &refs {
            validate_key(key)?;
        }
        self.flush()?;
        let lengths: Vec<(String, u64)> = refs.iter().map(|(k, r)| (k.clone(), r.length)).collect();
        if !self.inner.set_virtual_many(refs)? {
            return Ok(false);
        }
        let mut state = self.state();
        for (key, length) in lengths {
            state.waiting.remove(&key);
            if let Some(Entry::Held(old)) = state.entries.insert(key, Entry::Stored(length)) {
                state.kept_bytes = state.kept_bytes.saturating_sub(old.len());
            }
        }
        Ok(true)
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        match self.entry(key)? {
            None => Ok(None),
            Some(Entry::Held(value)) => Ok(Some(value)),
            Some(Entry::Stored(_)) => self.inner.get(key),
        }
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        match self.entry(key)? {
            None => Ok(None),
            Some(Entry::Held(value)) => ByteRange::slice_all(key, &value, ranges).map(Some),
            Some(Entry::Stored(_)) => self.inner.get_ranges(key, ranges),
        }
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        Ok(self.entry(key)?.map(|entry| match entry {
            Entry::Held(value) => value.len() as u64,
            Entry::Stored(size) => size,
        }))
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.hold(vec![(key.to_string(), value)])
    }

    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        self.hold(values)
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        validate_key(key)?;
        let _after_uploads = self.upload_lock();
        let removed = {
            let mut state = self.state();
            state.waiting.remove(key);
            state.entries.remove(key)
        };
        if removed.is_some() {
            // Uploaded before, or not: a delete of a missing key is no error.
            self.inner.delete(key)?;
        }
        Ok(())
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        validate_prefix(prefix)?;
        let _after_uploads = self.upload_lock();
        {
            let mut state = self.state();
            let keys = list_sorted_prefix(&state.entries, prefix);
            for key in &keys {
                state.entries.remove(key);
            }
            state.waiting.retain(|k| !k.starts_with(prefix));
        }
        self.inner.delete_prefix(prefix)
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        validate_prefix(prefix)?;
        Ok(list_sorted_prefix(&self.state().entries, prefix))
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        validate_prefix(prefix)?;
        Ok(list_sorted_dir(&self.state().entries, prefix))
    }

    fn concurrent_reads(&self) -> usize {
        self.inner.concurrent_reads()
    }

    /// Answers what it holds in memory, and reads the rest from the inner store with one
    /// `get_many` call.
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        let mut answers: Vec<Option<StoreResult<ReadResponse>>> = Vec::new();
        let mut remote = Vec::new();
        let mut slots = Vec::new();
        for request in requests {
            let answer = match self.entry(&request.key) {
                Err(e) => Some(Err(e)),
                Ok(None) => Some(Ok(ReadResponse::Missing)),
                Ok(Some(Entry::Held(value))) => Some(match &request.ranges {
                    None => Ok(ReadResponse::Whole(value)),
                    Some(ranges) => {
                        ByteRange::slice_all(&request.key, &value, ranges).map(ReadResponse::Ranges)
                    }
                }),
                Ok(Some(Entry::Stored(_))) => {
                    slots.push(answers.len());
                    remote.push(request.clone());
                    None
                }
            };
            answers.push(answer);
        }
        if !remote.is_empty() {
            for (slot, answer) in slots.into_iter().zip(self.inner.get_many(&remote)) {
                answers[slot] = Some(answer);
            }
        }
        answers
            .into_iter()
            .map(|answer| {
                answer.unwrap_or_else(|| {
                    Err(StoreError::backend(
                        "new tree",
                        "",
                        "a read of the batch was not answered",
                    ))
                })
            })
            .collect()
    }

    /// A large value streamed to the inner store's writer (a multipart upload on S3), known
    /// to the tree once committed.
    fn writer(&self, key: &str) -> StoreResult<Box<dyn ValueWriter + '_>> {
        validate_key(key)?;
        Ok(Box::new(TreeWriter {
            tree: self,
            key: key.to_string(),
            inner: self.inner.writer(key)?,
            written: 0,
        }))
    }

    fn owned_writer(self: Arc<Self>, key: &str) -> StoreResult<Box<dyn ValueWriter>> {
        validate_key(key)?;
        let inner = self.inner.clone().owned_writer(key)?;
        Ok(Box::new(TreeWriter {
            tree: self,
            key: key.to_string(),
            inner,
            written: 0,
        }))
    }
}

/// [`NewTreeStore::writer`]: the inner store's writer, which records the key on commit;
/// `H` is the handle on the tree (borrowed, or shared for [`Store::owned_writer`]).
struct TreeWriter<'a, H: Deref<Target = NewTreeStore>> {
    tree: H,
    key: String,
    inner: Box<dyn ValueWriter + 'a>,
    written: u64,
}

impl<H: Deref<Target = NewTreeStore>> std::io::Write for TreeWriter<'_, H> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<H: Deref<Target = NewTreeStore> + Send> ValueWriter for TreeWriter<'_, H> {
    fn commit(self: Box<Self>) -> StoreResult<()> {
        let TreeWriter {
            tree,
            key,
            inner,
            written,
        } = *self;
        // A value of the key still waiting would overwrite this one when uploaded.
        let _after_uploads = tree.upload_lock();
        {
            let mut state = tree.state();
            state.waiting.remove(&key);
        }
        inner.commit()?;
        tree.state().entries.insert(key, Entry::Stored(written));
        Ok(())
    }
}
