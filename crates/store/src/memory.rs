//! An in-memory store, for tests and for staging small hierarchies.

use std::collections::BTreeMap;
use std::sync::RwLock;

use crate::{validate_key, validate_prefix, ByteRange, Bytes, DirListing, Store, StoreResult};

type Map = BTreeMap<String, Bytes>;

/// A store that keeps every value in memory. Values are kept as the [`Bytes`] given to
/// [`Store::set`], so reads (whole values and byte ranges) share them instead of copying.
#[derive(Debug, Default)]
pub struct MemoryStore {
    map: RwLock<Map>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Map> {
        // A poisoned lock only means another thread panicked mid-operation; the map itself is
        // always in a consistent state because every mutation is a single map call.
        self.map.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Map> {
        self.map.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Store for MemoryStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        validate_key(key)?;
        Ok(self.read().get(key).cloned())
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        validate_key(key)?;
        let map = self.read();
        let Some(value) = map.get(key) else {
            return Ok(None);
        };
        ByteRange::slice_all(key, value, ranges).map(Some)
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        validate_key(key)?;
        Ok(self.read().get(key).map(|v| v.len() as u64))
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        validate_key(key)?;
        self.write().insert(key.to_string(), value);
        Ok(())
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        validate_key(key)?;
        self.write().remove(key);
        Ok(())
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        validate_prefix(prefix)?;
        Ok(list_sorted_prefix(&self.read(), prefix))
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        validate_prefix(prefix)?;
        Ok(list_sorted_dir(&self.read(), prefix))
    }
}

/// The keys of `map` starting with `prefix`, sorted (for stores holding their keys in a
/// sorted map: memory, LINDI reference files).
pub(crate) fn list_sorted_prefix<V>(map: &BTreeMap<String, V>, prefix: &str) -> Vec<String> {
    map.range(prefix.to_string()..)
        .take_while(|(k, _)| k.starts_with(prefix))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The directory listing of `prefix` over the keys of `map`: the keys directly below it and
/// the names of the sub-directories, each sorted.
pub(crate) fn list_sorted_dir<V>(map: &BTreeMap<String, V>, prefix: &str) -> DirListing {
    let base = match prefix.trim_end_matches('/') {
        "" => String::new(),
        p => format!("{p}/"),
    };
    DirListing::from_keys(&base, list_sorted_prefix(map, &base))
}
