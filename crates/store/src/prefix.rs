//! A view of a sub-tree of another store: [`PrefixStore`].

use std::sync::Arc;

use crate::{
    validate_key, validate_prefix, ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, Store,
    StoreError, StoreResult, ValueWriter,
};

/// The keys of another store under one prefix, seen as a store of their own.
///
/// Key `k` of the view is key `prefix/k` of the inner store; listings return keys relative
/// to the prefix. Keys and prefixes are validated before they are joined, so no key of the
/// view (`..`, a leading `/`, …) can reach outside the prefix. Errors from the inner store
/// name the inner store's keys.
///
/// ```
/// use std::sync::Arc;
/// use neurochunk_store::{Bytes, MemoryStore, PrefixStore, Store};
///
/// let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
/// let view = PrefixStore::new(inner.clone(), "experiments/run1").unwrap();
/// view.set("zarr.json", Bytes::from_static(b"{}")).unwrap();
/// assert!(inner.exists("experiments/run1/zarr.json").unwrap());
/// assert_eq!(view.list_prefix("").unwrap(), vec!["zarr.json"]);
/// assert!(view.get("../secret").is_err());
/// ```
#[derive(Debug, Clone)]
pub struct PrefixStore {
    inner: Arc<dyn Store>,
    /// Without a trailing `/`; `""` for the inner store's root.
    prefix: String,
}

impl PrefixStore {
    /// The view of `inner` under `prefix` (`""` for all of it; a trailing `/` is optional).
    /// A prefix that could escape the store is [`StoreError::InvalidKey`].
    pub fn new(inner: Arc<dyn Store>, prefix: &str) -> StoreResult<Self> {
        validate_prefix(prefix)?;
        Ok(PrefixStore {
            inner,
            prefix: prefix.trim_end_matches('/').to_string(),
        })
    }

    /// The prefix, without a trailing `/` (`""` when the view is the whole inner store).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The store this is a view of.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// The inner key of the view's `key`.
    fn inner_key(&self, key: &str) -> StoreResult<String> {
        validate_key(key)?;
        Ok(self.join(key))
    }

    /// The inner prefix of the view's `prefix`, keeping its text (and trailing `/`) so that
    /// [`Store::list_prefix`] matches the same keys.
    fn inner_prefix(&self, prefix: &str) -> StoreResult<String> {
        validate_prefix(prefix)?;
        Ok(self.join(prefix))
    }

    fn join(&self, rest: &str) -> String {
        if self.prefix.is_empty() {
            rest.to_string()
        } else {
            format!("{}/{rest}", self.prefix)
        }
    }

    /// The view's key of an inner key listed under the prefix.
    fn strip<'k>(&self, key: &'k str) -> Option<&'k str> {
        if self.prefix.is_empty() {
            Some(key)
        } else {
            key.strip_prefix(self.prefix.as_str())?.strip_prefix('/')
        }
    }
}

impl Store for PrefixStore {
    fn local_path(&self, key_or_prefix: &str) -> Option<std::path::PathBuf> {
        let inner = self.inner_prefix(key_or_prefix).ok()?;
        self.inner.local_path(inner.trim_end_matches('/'))
    }

    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        self.inner.get(&self.inner_key(key)?)
    }

    fn locate(&self, keys: &[&str]) -> StoreResult<Vec<Option<crate::VirtualRef>>> {
        let inner: Vec<String> = keys
            .iter()
            .map(|k| self.inner_key(k))
            .collect::<StoreResult<_>>()?;
        let inner: Vec<&str> = inner.iter().map(String::as_str).collect();
        self.inner.locate(&inner)
    }

    fn set_virtual_many(&self, refs: Vec<(String, crate::VirtualRef)>) -> StoreResult<bool> {
        let refs = refs
            .into_iter()
            .map(|(k, r)| Ok((self.inner_key(&k)?, r)))
            .collect::<StoreResult<Vec<_>>>()?;
        self.inner.set_virtual_many(refs)
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        self.inner.get_ranges(&self.inner_key(key)?, ranges)
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        self.inner.size(&self.inner_key(key)?)
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.inner.set(&self.inner_key(key)?, value)
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        self.inner.delete(&self.inner_key(key)?)
    }

    /// Passes the whole batch to the inner store.
    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        let values = values
            .into_iter()
            .map(|(key, value)| Ok((self.inner_key(&key)?, value)))
            .collect::<StoreResult<Vec<_>>>()?;
        self.inner.set_many(values)
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        let keys = self.inner.list_prefix(&self.inner_prefix(prefix)?)?;
        Ok(keys
            .iter()
            .filter_map(|key| self.strip(key).map(str::to_string))
            .collect())
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        self.inner.list_dir(&self.inner_prefix(prefix)?)
    }

    /// Passes the whole batch to the inner store (so its concurrency is used); requests with
    /// invalid keys are answered here.
    fn concurrent_reads(&self) -> usize {
        self.inner.concurrent_reads()
    }

    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        // Refused keys are answered here (`Some`); the rest go to the inner store as one batch.
        let mut inner_requests = Vec::with_capacity(requests.len());
        let mut answers: Vec<Option<StoreResult<ReadResponse>>> =
            Vec::with_capacity(requests.len());
        for request in requests {
            match self.inner_key(&request.key) {
                Ok(key) => {
                    inner_requests.push(ReadRequest {
                        key,
                        ranges: request.ranges.clone(),
                    });
                    answers.push(None);
                }
                Err(e) => answers.push(Some(Err(e))),
            }
        }
        let mut inner_answers = self.inner.get_many(&inner_requests).into_iter();
        answers
            .into_iter()
            .zip(requests)
            .map(|(answer, request)| {
                answer.or_else(|| inner_answers.next()).unwrap_or_else(|| {
                    Err(StoreError::backend(
                        format!("{:?}", self.inner),
                        self.join(&request.key),
                        "the store answered fewer reads than it was asked",
                    ))
                })
            })
            .collect()
    }

    /// Passes the whole batch to the inner store.
    fn delete_many(&self, keys: Vec<String>) -> StoreResult<()> {
        let keys = keys
            .iter()
            .map(|key| self.inner_key(key))
            .collect::<StoreResult<Vec<_>>>()?;
        self.inner.delete_many(keys)
    }

    fn write_group(&self, key: &str) -> Option<u64> {
        self.inner.write_group(&self.inner_key(key).ok()?)
    }

    fn writer(&self, key: &str) -> StoreResult<Box<dyn ValueWriter + '_>> {
        self.inner.writer(&self.inner_key(key)?)
    }

    fn owned_writer(self: Arc<Self>, key: &str) -> StoreResult<Box<dyn ValueWriter>> {
        self.inner.clone().owned_writer(&self.inner_key(key)?)
    }

    fn delete_prefix(&self, prefix: &str) -> StoreResult<()> {
        self.inner.delete_prefix(&self.inner_prefix(prefix)?)
    }

    fn exists(&self, key: &str) -> StoreResult<bool> {
        self.inner.exists(&self.inner_key(key)?)
    }
}
