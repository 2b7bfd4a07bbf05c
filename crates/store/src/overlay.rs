//! A store seen with a few extra values laid over it: reads of those keys are answered from
//! memory, every other read and every write goes to the inner store, and listings include the
//! extra keys. Used to show a file that belongs to a tree but lives outside its root (the
//! BigDataViewer XML written beside an N5 container) to code that reads the tree's root.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::{
    ByteRange, Bytes, DirListing, MemoryStore, ReadRequest, ReadResponse, Store, StoreResult,
};

/// `inner` plus read-only values at keys of their own (see the module documentation).
#[derive(Debug)]
pub struct OverlayStore {
    inner: Arc<dyn Store>,
    extra: MemoryStore,
    extra_keys: BTreeSet<String>,
}

impl OverlayStore {
    /// `inner` with `values` laid over it: each key reads as its value, whatever `inner` holds
    /// there.
    pub fn new(
        inner: Arc<dyn Store>,
        values: impl IntoIterator<Item = (String, Bytes)>,
    ) -> StoreResult<OverlayStore> {
        let extra = MemoryStore::new();
        let mut extra_keys = BTreeSet::new();
        for (key, value) in values {
            extra.set(&key, value)?;
            extra_keys.insert(key);
        }
        Ok(OverlayStore {
            inner,
            extra,
            extra_keys,
        })
    }

    fn is_extra(&self, key: &str) -> bool {
        self.extra_keys.contains(key)
    }
}

impl Store for OverlayStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        if self.is_extra(key) {
            return self.extra.get(key);
        }
        self.inner.get(key)
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        if self.is_extra(key) {
            return self.extra.get_ranges(key, ranges);
        }
        self.inner.get_ranges(key, ranges)
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        if self.is_extra(key) {
            return self.extra.size(key);
        }
        self.inner.size(key)
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.inner.set(key, value)
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        self.inner.delete(key)
    }

    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        self.inner.set_many(values)
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        let mut keys: BTreeSet<String> = self.inner.list_prefix(prefix)?.into_iter().collect();
        keys.extend(
            self.extra_keys
                .iter()
                .filter(|k| k.starts_with(prefix))
                .cloned(),
        );
        Ok(keys.into_iter().collect())
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        let mut listing = self.inner.list_dir(prefix)?;
        let extra = self.extra.list_dir(prefix)?;
        for (ours, theirs) in [
            (&mut listing.keys, extra.keys),
            (&mut listing.prefixes, extra.prefixes),
        ] {
            let mut merged: BTreeSet<String> = ours.drain(..).collect();
            merged.extend(theirs);
            ours.extend(merged);
        }
        Ok(listing)
    }

    fn concurrent_reads(&self) -> usize {
        self.inner.concurrent_reads()
    }

    /// The requests for extra keys are answered here; the rest go to the inner store as one
    /// batch (so its concurrency is used).
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        let inner_requests: Vec<ReadRequest> = requests
            .iter()
            .filter(|r| !self.is_extra(&r.key))
            .cloned()
            .collect();
        let mut inner_answers = self.inner.get_many(&inner_requests).into_iter();
        requests
            .iter()
            .map(|request| {
                if self.is_extra(&request.key) {
                    request.answer_from(&self.extra)
                } else {
                    inner_answers.next().unwrap_or_else(|| {
                        Err(crate::StoreError::backend(
                            format!("{:?}", self.inner),
                            request.key.clone(),
                            "the store answered fewer reads than asked",
                        ))
                    })
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_values_read_and_list_beside_the_inner_ones() {
        let inner = Arc::new(MemoryStore::new());
        inner.set("a/b", Bytes::from_static(b"inner")).unwrap();
        inner.set("x.xml", Bytes::from_static(b"hidden")).unwrap();
        let store = OverlayStore::new(
            inner.clone(),
            [("x.xml".to_string(), Bytes::from_static(b"<xml/>"))],
        )
        .unwrap();
        assert_eq!(store.get("x.xml").unwrap().unwrap(), "<xml/>");
        assert_eq!(store.size("x.xml").unwrap(), Some(6));
        assert_eq!(
            store
                .get_ranges("x.xml", &[ByteRange::Suffix { length: 2 }])
                .unwrap()
                .unwrap(),
            [Bytes::from_static(b"/>")]
        );
        assert_eq!(store.get("a/b").unwrap().unwrap(), "inner");
        assert_eq!(store.list_prefix("").unwrap(), ["a/b", "x.xml"]);
        let root = store.list_dir("").unwrap();
        assert_eq!(
            (root.keys, root.prefixes),
            (vec!["x.xml".to_string()], vec!["a".to_string()])
        );
        let answers = store.get_many(&[
            ReadRequest::whole("a/b"),
            ReadRequest::whole("x.xml"),
            ReadRequest::whole("missing"),
        ]);
        assert!(matches!(&answers[0], Ok(ReadResponse::Whole(b)) if b == "inner"));
        assert!(matches!(&answers[1], Ok(ReadResponse::Whole(b)) if b == "<xml/>"));
        assert!(matches!(&answers[2], Ok(ReadResponse::Missing)));
        // Writes go to the inner store.
        store.set("c", Bytes::from_static(b"new")).unwrap();
        assert_eq!(inner.get("c").unwrap().unwrap(), "new");
    }
}
