//! A directory of values keyed by uint64 ids, as precomputed skeleton layers and annotation
//! indexes store them: unsharded, one file per id named by its decimal form (or another name,
//! such as a spatial cell's `i_j_k`), possibly gzip-compressed as `NAME.gz`; or sharded
//! (`neuroglancer_uint64_sharded_v1`), the id being the key in the shard. Reads return the
//! decompressed value and the file it came from (for error messages).

use std::collections::BTreeMap;
use std::sync::Arc;

use neurochunk_store::{join_key, ByteRange, Bytes, Store, StoreError};

use super::sharding::{self, ShardEncoding, ShardingSpec};

/// Errors of a uint64 index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file or shard is damaged.
    #[error("'{file}': {message}")]
    Corrupt {
        /// The file read.
        file: String,
        /// What is wrong.
        message: String,
    },
}

/// The result of index operations.
pub type IndexResult<T> = Result<T, IndexError>;

/// A uint64-keyed directory of a store.
pub struct Uint64Index {
    store: Arc<dyn Store>,
    dir: String,
    sharding: Option<ShardingSpec>,
    max_bytes: u64,
    sniff_gzip: bool,
}

/// gzip's first two bytes.
pub(crate) fn looks_gzipped(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

impl Uint64Index {
    /// The index in `dir` of `store`, sharded by `sharding` when given; a value may decompress
    /// to at most `max_bytes`.
    pub fn new(
        store: Arc<dyn Store>,
        dir: &str,
        sharding: Option<ShardingSpec>,
        max_bytes: u64,
    ) -> Uint64Index {
        Uint64Index {
            store,
            dir: dir.trim_matches('/').to_string(),
            sharding,
            max_bytes,
            sniff_gzip: false,
        }
    }

    /// Also take a value for gzip when it starts with gzip's magic bytes, whatever its name
    /// or the sharding say (skeleton files some writers compress without saying so). Not for
    /// values whose first bytes are numbers that may look like the magic.
    pub fn sniffing_gzip(mut self, sniff: bool) -> Uint64Index {
        self.sniff_gzip = sniff;
        self
    }

    /// The sharding, if the index is sharded.
    pub fn sharding(&self) -> Option<&ShardingSpec> {
        self.sharding.as_ref()
    }

    fn file(&self, name: &str) -> String {
        join_key(&self.dir, name)
    }

    fn corrupt(&self, key: &str, message: String) -> IndexError {
        IndexError::Corrupt {
            file: crate::display_path(key),
            message,
        }
    }

    /// `stored` as the value: gunzipped when `gzipped` or when it starts like gzip.
    fn unpack(&self, key: &str, stored: &[u8], gzipped: bool) -> IndexResult<Vec<u8>> {
        if gzipped || (self.sniff_gzip && looks_gzipped(stored)) {
            sharding::gunzip(stored, self.max_bytes).map_err(|m| self.corrupt(key, m))
        } else {
            Ok(stored.to_vec())
        }
    }

    /// The ids present, ascending (unsharded: the decimal file names; sharded: every shard's
    /// minishard indexes).
    pub fn ids(&self) -> IndexResult<Vec<u64>> {
        let mut ids: Vec<u64> = match &self.sharding {
            None => self
                .store
                .list_dir(&self.dir)?
                .keys
                .iter()
                .filter_map(|k| {
                    let name = k.strip_suffix(".gz").unwrap_or(k);
                    (!name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_digit())
                        && (name == "0" || !name.starts_with('0')))
                    .then(|| name.parse::<u64>().ok())
                    .flatten()
                })
                .collect(),
            Some(spec) => {
                let mut ids = Vec::new();
                for shard in self.shard_files(spec)? {
                    ids.extend(self.read_shard(spec, &shard)?.into_keys());
                }
                ids
            }
        };
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// The names of the unsharded files present (without `.gz`), ascending.
    pub fn names(&self) -> IndexResult<Vec<String>> {
        let mut names: Vec<String> = self
            .store
            .list_dir(&self.dir)?
            .keys
            .into_iter()
            .map(|k| k.strip_suffix(".gz").map(str::to_string).unwrap_or(k))
            .collect();
        names.sort_unstable();
        names.dedup();
        Ok(names)
    }

    /// The shard files present.
    fn shard_files(&self, spec: &ShardingSpec) -> IndexResult<Vec<String>> {
        Ok(self
            .store
            .list_dir(&self.dir)?
            .keys
            .iter()
            .filter(|k| spec.parse_shard_file(k).is_some())
            .cloned()
            .collect())
    }

    /// Every value of the shard file `name`, as stored.
    fn read_shard(&self, spec: &ShardingSpec, name: &str) -> IndexResult<BTreeMap<u64, Bytes>> {
        let key = self.file(name);
        let Some(bytes) = self.store.get(&key)? else {
            return Ok(BTreeMap::new());
        };
        let chunks = sharding::parse_shard(&bytes, spec, self.max_bytes)
            .map_err(|m| self.corrupt(&key, format!("shard: {m}")))?;
        Ok(chunks
            .into_iter()
            .map(|(id, data)| (id, Bytes::from(data)))
            .collect())
    }

    /// The unsharded file `name` (or `name.gz`): the file's key and the value.
    pub fn get_named(&self, name: &str) -> IndexResult<Option<(String, Vec<u8>)>> {
        let plain = self.file(name);
        if let Some(bytes) = self.store.get(&plain)? {
            let value = self.unpack(&plain, &bytes, false)?;
            return Ok(Some((crate::display_path(&plain), value)));
        }
        let gz = format!("{plain}.gz");
        match self.store.get(&gz)? {
            Some(bytes) => {
                let value = self.unpack(&gz, &bytes, true)?;
                Ok(Some((crate::display_path(&gz), value)))
            }
            None => Ok(None),
        }
    }

    /// The value of `id`: the file it came from and the value; `None` when absent.
    pub fn get(&self, id: u64) -> IndexResult<Option<(String, Vec<u8>)>> {
        let Some(spec) = &self.sharding else {
            return self.get_named(&id.to_string());
        };
        // Sharded: the shard index entry, the minishard index, the value's byte range.
        let place = spec.place(id);
        let key = self.file(&spec.shard_file(place.shard));
        let Some(size) = self.store.size(&key)? else {
            return Ok(None);
        };
        let index_end = spec.shard_index_bytes();
        if size < index_end {
            return Err(self.corrupt(
                &key,
                format!("the shard has {size} bytes, less than its index ({index_end} bytes)"),
            ));
        }
        let ranged = |offset: u64, length: u64| -> IndexResult<Bytes> {
            let range = ByteRange::FromStart {
                offset,
                length: Some(length),
            };
            self.store
                .get_ranges(&key, &[range])?
                .and_then(|mut parts| parts.pop())
                .ok_or_else(|| self.corrupt(&key, "the shard vanished while being read".into()))
        };
        let entry = ranged(place.minishard * 16, 16)?;
        let (start, end) =
            sharding::minishard_range(&entry, place.minishard, index_end, Some(size))
                .map_err(|m| self.corrupt(&key, m))?;
        if start == end {
            return Ok(None);
        }
        let raw = ranged(start, end - start)?;
        let index = match spec.minishard_index_encoding {
            ShardEncoding::Raw => raw.to_vec(),
            ShardEncoding::Gzip => sharding::gunzip(&raw, self.max_bytes).map_err(|e| {
                self.corrupt(&key, format!("minishard {} index: {e}", place.minishard))
            })?,
        };
        let entries = sharding::parse_minishard_index(&index, index_end, Some(size))
            .map_err(|e| self.corrupt(&key, format!("minishard {} index: {e}", place.minishard)))?;
        let Some(found) = entries.iter().find(|e| e.id == id) else {
            return Ok(None);
        };
        let data = ranged(found.start, found.size)?;
        let value = self.unpack(&key, &data, spec.data_encoding == ShardEncoding::Gzip)?;
        Ok(Some((crate::display_path(&key), value)))
    }

    /// Every value: `(id, file, value)` ascending by id.
    pub fn get_all(&self) -> IndexResult<Vec<(u64, String, Vec<u8>)>> {
        let mut out = Vec::new();
        match &self.sharding {
            None => {
                for id in self.ids()? {
                    if let Some((file, value)) = self.get(id)? {
                        out.push((id, file, value));
                    }
                }
            }
            Some(spec) => {
                for shard in self.shard_files(spec)? {
                    let key = self.file(&shard);
                    for (id, data) in self.read_shard(spec, &shard)? {
                        let value =
                            self.unpack(&key, &data, spec.data_encoding == ShardEncoding::Gzip)?;
                        out.push((id, crate::display_path(&key), value));
                    }
                }
                out.sort_by_key(|(id, _, _)| *id);
            }
        }
        Ok(out)
    }

    /// Write the unsharded file `name` (a stale `name.gz` is removed).
    pub fn put_named(&self, name: &str, value: Vec<u8>) -> IndexResult<()> {
        let gz = self.file(&format!("{name}.gz"));
        if self.store.exists(&gz)? {
            self.store.delete(&gz)?;
        }
        self.store.set(&self.file(name), Bytes::from(value))?;
        Ok(())
    }

    /// Write values by id: one file each (unsharded), or every shard they fall in, rewritten
    /// whole with the values it already holds kept unless replaced.
    pub fn put_all(&self, entries: Vec<(u64, Vec<u8>)>) -> IndexResult<()> {
        let Some(spec) = &self.sharding else {
            let mut values = Vec::with_capacity(entries.len());
            for (id, value) in entries {
                let gz = self.file(&format!("{id}.gz"));
                if self.store.exists(&gz)? {
                    self.store.delete(&gz)?;
                }
                values.push((self.file(&id.to_string()), Bytes::from(value)));
            }
            self.store.set_many(values)?;
            return Ok(());
        };
        let mut by_shard: BTreeMap<u64, BTreeMap<u64, Vec<u8>>> = BTreeMap::new();
        for (id, mut value) in entries {
            if spec.data_encoding == ShardEncoding::Gzip {
                value = sharding::gzip(&value);
            }
            by_shard
                .entry(spec.place(id).shard)
                .or_default()
                .insert(id, value);
        }
        let mut values = Vec::with_capacity(by_shard.len());
        for (shard, new) in by_shard {
            let name = spec.shard_file(shard);
            let mut chunks: BTreeMap<u64, Vec<u8>> = self
                .read_shard(spec, &name)?
                .into_iter()
                .map(|(id, b)| (id, b.to_vec()))
                .collect();
            chunks.extend(new);
            values.push((
                self.file(&name),
                Bytes::from(sharding::assemble_shard(&chunks, spec)),
            ));
        }
        self.store.set_many(values)?;
        Ok(())
    }
}
