//! A directory of values keyed by uint64 ids, as precomputed skeleton layers and annotation
//! indexes store them: unsharded, one file per id named by its decimal form (or another name,
//! such as a spatial cell's `i_j_k`), possibly gzip-compressed as `NAME.gz`; or sharded
//! (`neuroglancer_uint64_sharded_v1`), the id being the key in the shard. Reads return the
//! decompressed value and the file it came from (for error messages).

use std::collections::BTreeMap;
use std::sync::Arc;

use neurochunk_store::{join_key, ByteRange, Bytes, ReadRequest, ReadResponse, Store, StoreError};
use rayon::prelude::*;

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

/// The id an unsharded file is named by: its decimal form, without leading zeros.
fn decimal_id(name: &str) -> Option<u64> {
    let canonical = !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_digit())
        && (name == "0" || !name.starts_with('0'));
    canonical.then(|| name.parse().ok()).flatten()
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
        if self.is_zipped(stored, gzipped) {
            sharding::gunzip(stored, self.max_bytes).map_err(|m| self.corrupt(key, m))
        } else {
            Ok(stored.to_vec())
        }
    }

    /// Whether a value stored as `stored` is unzipped: when stored `gzipped`, or when it looks
    /// gzipped and the index sniffs.
    fn is_zipped(&self, stored: &[u8], gzipped: bool) -> bool {
        gzipped || (self.sniff_gzip && looks_gzipped(stored))
    }

    /// `f` of the value stored as `stored` at `key` (see [`Uint64Index::is_zipped`]); a gzipped
    /// value is unzipped into a buffer of the thread's, kept for its next value, so reading many
    /// values allocates (and faults in) memory for a few rather than for each.
    fn with_value<T, E: From<IndexError>>(
        &self,
        key: &str,
        stored: &[u8],
        gzipped: bool,
        f: impl FnOnce(&[u8]) -> Result<T, E>,
    ) -> Result<T, E> {
        thread_local! {
            static UNZIPPED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        if !self.is_zipped(stored, gzipped) {
            return f(stored);
        }
        UNZIPPED.with(|buffer| {
            // Borrowed already when `f` itself reads values on this thread: use a fresh one.
            let mut fresh = Vec::new();
            let mut held = buffer.try_borrow_mut();
            let out = match held.as_deref_mut() {
                Ok(reused) => reused,
                Err(_) => &mut fresh,
            };
            sharding::gunzip_into(stored, self.max_bytes, out)
                .map_err(|m| E::from(self.corrupt(key, m)))?;
            let result = f(out);
            // A buffer grown for an unusually large value is not kept.
            if out.capacity() > 64 << 20 {
                *out = Vec::new();
            }
            result
        })
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
                .filter_map(|k| decimal_id(k.strip_suffix(".gz").unwrap_or(k)))
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
        self.map_all(|_, file, value| Ok::<_, IndexError>((file.to_string(), value.to_vec())))
            .map(|all| {
                all.into_iter()
                    .map(|(id, (file, value))| (id, file, value))
                    .collect()
            })
    }

    /// Every value, each passed through `decode(id, file, value)` on rayon's workers as the
    /// files arrive: `(id, decoded)` ascending by id. The files are listed once and read in
    /// batches through [`Store::get_many`] (in parallel locally, concurrently from a remote
    /// store); shards are read whole, their values unzipped and decoded in parallel. A file
    /// that vanishes between the listing and the read is left out, as [`Uint64Index::get`]
    /// would find it absent.
    pub fn map_all<T, E, F>(&self, decode: F) -> Result<Vec<(u64, T)>, E>
    where
        T: Send,
        E: From<IndexError> + Send,
        F: Fn(u64, &str, &[u8]) -> Result<T, E> + Sync,
    {
        let mut out: Vec<(u64, T)> = Vec::new();
        match &self.sharding {
            None => {
                // One file per id: the plain name wins over `NAME.gz`, as in `get`.
                let mut files: BTreeMap<u64, (String, bool)> = BTreeMap::new();
                let listing = self.store.list_dir(&self.dir).map_err(IndexError::Store)?;
                for key in listing.keys {
                    let (name, gzipped) = match key.strip_suffix(".gz") {
                        Some(name) => (name, true),
                        None => (key.as_str(), false),
                    };
                    let Some(id) = decimal_id(name) else { continue };
                    let entry = files.entry(id).or_insert((key.clone(), gzipped));
                    if entry.1 && !gzipped {
                        *entry = (key.clone(), false);
                    }
                }
                let files: Vec<(u64, String, bool)> = files
                    .into_iter()
                    .map(|(id, (name, gzipped))| (id, self.file(&name), gzipped))
                    .collect();
                let batch = (self.store.concurrent_reads() * 4).max(256);
                for part in files.chunks(batch) {
                    let requests: Vec<ReadRequest> = part
                        .iter()
                        .map(|(_, key, _)| ReadRequest::whole(key.clone()))
                        .collect();
                    let responses = self.store.get_many(&requests);
                    let decoded = part
                        .par_iter()
                        .zip(responses)
                        .with_max_len(1)
                        .filter_map(|((id, key, gzipped), response)| {
                            let stored = match response {
                                Ok(ReadResponse::Whole(bytes)) => bytes,
                                Ok(ReadResponse::Missing) => return None,
                                Ok(ReadResponse::Ranges(_)) => {
                                    return Some(Err(E::from(self.corrupt(
                                        key,
                                        "the store answered a whole read with ranges".into(),
                                    ))))
                                }
                                Err(e) => return Some(Err(E::from(IndexError::Store(e)))),
                            };
                            let file = crate::display_path(key);
                            Some(
                                self.with_value(key, &stored, *gzipped, |value| {
                                    decode(*id, &file, value)
                                })
                                .map(|t| (*id, t)),
                            )
                        })
                        .collect::<Result<Vec<_>, E>>()?;
                    out.extend(decoded);
                }
            }
            Some(spec) => {
                let gzipped = spec.data_encoding == ShardEncoding::Gzip;
                for shard in self.shard_files(spec)? {
                    let key = self.file(&shard);
                    let file = crate::display_path(&key);
                    let values: Vec<(u64, Bytes)> =
                        self.read_shard(spec, &shard)?.into_iter().collect();
                    let decoded = values
                        .par_iter()
                        .map(|(id, stored)| {
                            self.with_value(&key, stored, gzipped, |value| {
                                decode(*id, &file, value)
                            })
                            .map(|t| (*id, t))
                        })
                        .collect::<Result<Vec<_>, E>>()?;
                    out.extend(decoded);
                }
                out.sort_by_key(|(id, _)| *id);
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

    /// The unsharded directory's gzip-compressed files (`ID.gz`), found in one listing.
    fn zipped_files(&self) -> IndexResult<std::collections::HashSet<String>> {
        Ok(self
            .store
            .list_dir(&self.dir)?
            .keys
            .into_iter()
            .filter(|k| k.ends_with(".gz"))
            .collect())
    }

    /// Remove the `ID.gz` files (of `zipped`) of the ids about to be written as `ID`.
    fn remove_stale(
        &self,
        zipped: &std::collections::HashSet<String>,
        entries: &[(u64, Vec<u8>)],
    ) -> IndexResult<()> {
        let stale: Vec<String> = entries
            .iter()
            .map(|(id, _)| format!("{id}.gz"))
            .filter(|name| zipped.contains(name))
            .map(|name| self.file(&name))
            .collect();
        if !stale.is_empty() {
            self.store.delete_many(stale)?;
        }
        Ok(())
    }

    /// [`Uint64Index::put_all`] for values made batch by batch: `make(k)` for `k` in
    /// `0..count`. Unsharded, each batch's files are stored by a thread of their own while
    /// the next batch is made, so making (on rayon's workers) and storing overlap; creating
    /// files takes their directory's lock, so that one thread creates them in turn. Sharded,
    /// every batch is made first and each shard written once. The first error stops both.
    pub fn put_batches<E, F>(&self, count: usize, mut make: F) -> Result<(), E>
    where
        E: From<IndexError> + Send,
        F: FnMut(usize) -> Result<Vec<(u64, Vec<u8>)>, E>,
    {
        if self.sharding.is_some() {
            let mut all = Vec::new();
            for k in 0..count {
                all.extend(make(k)?);
            }
            return self.put_all(all).map_err(E::from);
        }
        let zipped = self.zipped_files().map_err(E::from)?;
        std::thread::scope(|scope| {
            let (batches, received) = std::sync::mpsc::sync_channel::<Vec<(u64, Vec<u8>)>>(1);
            let zipped = &zipped;
            let writer = scope.spawn(move || -> IndexResult<()> {
                for entries in received {
                    self.remove_stale(zipped, &entries)?;
                    for (id, value) in entries {
                        self.store
                            .set(&self.file(&id.to_string()), Bytes::from(value))?;
                    }
                }
                Ok(())
            });
            let mut made = Ok(());
            for k in 0..count {
                match make(k) {
                    // A closed channel: the writer stopped on an error, reported below.
                    Ok(entries) => {
                        if batches.send(entries).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        made = Err(e);
                        break;
                    }
                }
            }
            drop(batches);
            let stored = writer.join().unwrap_or_else(|_| {
                Err(IndexError::Store(StoreError::backend(
                    &self.dir,
                    "",
                    "the thread storing the files panicked",
                )))
            });
            made?;
            stored.map_err(E::from)
        })
    }

    /// Write values by id: one file each (unsharded), or every shard they fall in, rewritten
    /// whole with the values it already holds kept unless replaced.
    pub fn put_all(&self, entries: Vec<(u64, Vec<u8>)>) -> IndexResult<()> {
        let Some(spec) = &self.sharding else {
            self.remove_stale(&self.zipped_files()?, &entries)?;
            let values = entries
                .into_iter()
                .map(|(id, value)| (self.file(&id.to_string()), Bytes::from(value)))
                .collect();
            self.store.set_many(values)?;
            return Ok(());
        };
        let gzipped = spec.data_encoding == ShardEncoding::Gzip;
        let entries: Vec<(u64, Vec<u8>)> = entries
            .into_par_iter()
            .map(|(id, value)| {
                (
                    id,
                    if gzipped {
                        sharding::gzip(&value)
                    } else {
                        value
                    },
                )
            })
            .collect();
        let mut by_shard: BTreeMap<u64, BTreeMap<u64, Vec<u8>>> = BTreeMap::new();
        for (id, value) in entries {
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

#[cfg(test)]
mod tests {
    use super::*;
    use neurochunk_store::MemoryStore;

    /// Unsharded reads of every value: decimal names only, the plain file winning over
    /// `NAME.gz` (as in `get`), gzip unzipped, ascending ids, and the decoder's error passed on.
    #[test]
    fn map_all_reads_every_unsharded_value_once() {
        let store = Arc::new(MemoryStore::new());
        store.set("d/7", Bytes::from_static(b"seven")).unwrap();
        store
            .set("d/7.gz", Bytes::from(sharding::gzip(b"stale seven")))
            .unwrap();
        store
            .set("d/12.gz", Bytes::from(sharding::gzip(b"twelve")))
            .unwrap();
        store.set("d/3", Bytes::from_static(b"three")).unwrap();
        for ignored in ["d/info", "d/007", "d/x.gz"] {
            store.set(ignored, Bytes::from_static(b"-")).unwrap();
        }
        let index = Uint64Index::new(store.clone(), "d", None, 1 << 20);
        let all = index
            .map_all(|id, file, value| {
                Ok::<_, IndexError>(format!("{id} {file} {}", String::from_utf8_lossy(value)))
            })
            .unwrap();
        let texts: Vec<&str> = all.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            ["3 /d/3 three", "7 /d/7 seven", "12 /d/12.gz twelve"]
        );
        assert_eq!(index.get(7).unwrap().unwrap().1, b"seven");
        let err = index
            .map_all(|id, file, _| {
                if id == 12 {
                    Err(IndexError::Corrupt {
                        file: file.to_string(),
                        message: "bad".into(),
                    })
                } else {
                    Ok(id)
                }
            })
            .unwrap_err();
        assert!(err.to_string().contains("d/12.gz"), "{err}");
    }
}
