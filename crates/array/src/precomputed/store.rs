//! [`ScaleStore`]: the store a precomputed scale's array reads and writes its chunks through.
//!
//! The engine asks for chunks by key (`xBegin-xEnd_yBegin-yEnd_zBegin-zEnd` under the scale's
//! directory). Unsharded, a chunk missing under its key is read from `KEY.gz` and gunzipped
//! (cloud-volume's compressed files), and a write replaces both. Sharded, a batch of chunk
//! reads becomes three batched reads of the inner store: the shard index entries of the
//! minishards concerned, those minishard indexes, then the chunks' byte ranges (one request
//! per shard file each time); a batch of chunk writes rewrites each shard it touches whole
//! (read what it keeps, merge, write), one writer per shard at a time within the process,
//! different shards in parallel. The shard of a chunk key is its write group
//! ([`Store::write_group`]), so the array engine hands over the chunks of a shard in one batch
//! and each shard is rewritten once per write. Every other key passes through unchanged.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use neurochunk_store::{
    join_key, ByteRange, Bytes, DirListing, ReadRequest, ReadResponse, Store, StoreError,
    StoreResult,
};

use super::sharding::{self, ChunkPlace, MinishardEntry, ShardEncoding, ShardingSpec};
use super::ScaleInfo;

/// The store of one precomputed scale (see the module documentation).
#[derive(Debug)]
pub struct ScaleStore {
    inner: Arc<dyn Store>,
    /// The scale's directory (the array's path), no trailing `/`.
    dir: String,
    scale: Arc<ScaleInfo>,
    /// Upper bound of one chunk's decoded bytes (for gunzip limits).
    chunk_limit: u64,
    gzip_writes: bool,
    shard_locks: Mutex<HashMap<u64, Arc<Mutex<()>>>>,
}

impl ScaleStore {
    /// The store of the scale `scale` at `dir` in `inner`; `element_bytes` and `channels`
    /// bound a chunk's size, `gzip_writes` stores unsharded chunks as `KEY.gz`.
    pub fn new(
        inner: Arc<dyn Store>,
        dir: &str,
        scale: Arc<ScaleInfo>,
        element_bytes: usize,
        channels: u64,
        gzip_writes: bool,
    ) -> ScaleStore {
        let voxels = scale
            .chunk_size
            .iter()
            .fold(1u64, |n, &c| n.saturating_mul(c))
            .saturating_mul(channels)
            .saturating_mul(element_bytes as u64);
        ScaleStore {
            inner,
            dir: dir.trim_matches('/').to_string(),
            scale,
            // compressed_segmentation may exceed the raw size a little (headers, tables).
            chunk_limit: voxels.saturating_mul(4).saturating_add(1 << 16),
            gzip_writes,
            shard_locks: Mutex::new(HashMap::new()),
        }
    }

    /// The store the scale lives in.
    pub fn inner(&self) -> &Arc<dyn Store> {
        &self.inner
    }

    /// The grid position of `key` when it is a chunk key of this scale.
    fn chunk_of(&self, key: &str) -> Option<Vec<u64>> {
        let rest = if self.dir.is_empty() {
            key
        } else {
            key.strip_prefix(&self.dir)?.strip_prefix('/')?
        };
        self.scale.parse_chunk_key(rest)
    }

    fn sharding(&self) -> Option<&ShardingSpec> {
        self.scale.sharding.as_ref()
    }

    fn chunk_id(&self, index: &[u64]) -> u64 {
        sharding::compressed_morton_code(&index[..3], &self.scale.grid_shape())
    }

    fn shard_key(&self, spec: &ShardingSpec, shard: u64) -> String {
        join_key(&self.dir, &spec.shard_file(shard))
    }

    fn error(&self, key: &str, message: impl Into<String>) -> StoreError {
        StoreError::backend(
            format!("precomputed scale '{}'", self.dir),
            key,
            message.into(),
        )
    }

    fn gunzip_chunk(&self, key: &str, bytes: &[u8]) -> StoreResult<Bytes> {
        sharding::gunzip(bytes, self.chunk_limit)
            .map(Bytes::from)
            .map_err(|e| self.error(key, format!("chunk: {e}")))
    }

    /// Minishard indexes bound: every chunk of the grid in one minishard.
    fn index_limit(&self) -> u64 {
        self.scale
            .grid_shape()
            .iter()
            .fold(24u64, |n, &g| n.saturating_mul(g))
    }

    fn lock_shard(&self, shard: u64) -> Arc<Mutex<()>> {
        let mut locks = self.shard_locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(shard).or_default().clone()
    }

    /// Unsharded reads: the keys, then `.gz` for those missing.
    fn get_unsharded(&self, keys: &[&str]) -> Vec<StoreResult<Option<Bytes>>> {
        let requests: Vec<ReadRequest> = keys.iter().map(|k| ReadRequest::whole(*k)).collect();
        let mut answers: Vec<StoreResult<Option<Bytes>>> = self
            .inner
            .get_many(&requests)
            .into_iter()
            .map(|a| a.map(whole))
            .collect();
        let missing: Vec<usize> = (0..keys.len())
            .filter(|&i| matches!(answers[i], Ok(None)))
            .collect();
        if missing.is_empty() {
            return answers;
        }
        let gz: Vec<ReadRequest> = missing
            .iter()
            .map(|&i| ReadRequest::whole(format!("{}.gz", keys[i])))
            .collect();
        for (&i, answer) in missing.iter().zip(self.inner.get_many(&gz)) {
            answers[i] = match answer.map(whole) {
                Ok(Some(bytes)) => self.gunzip_chunk(keys[i], &bytes).map(Some),
                other => other,
            };
        }
        answers
    }

    /// Sharded reads of the chunks `ids` (with their keys for messages).
    fn get_sharded(
        &self,
        spec: &ShardingSpec,
        chunks: &[(String, u64)],
    ) -> Vec<StoreResult<Option<Bytes>>> {
        let mut answers: Vec<Option<StoreResult<Option<Bytes>>>> =
            (0..chunks.len()).map(|_| None).collect();
        let index_end = spec.shard_index_bytes();
        // 1. The shard index entries of the minishards concerned, one request per shard.
        let mut places: BTreeMap<ChunkPlace, Vec<usize>> = BTreeMap::new();
        for (i, (_, id)) in chunks.iter().enumerate() {
            places.entry(spec.place(*id)).or_default().push(i);
        }
        let mut by_shard: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
        for place in places.keys() {
            by_shard
                .entry(place.shard)
                .or_default()
                .push(place.minishard);
        }
        let shards: Vec<u64> = by_shard.keys().copied().collect();
        let requests: Vec<ReadRequest> = shards
            .iter()
            .map(|&shard| {
                ReadRequest::ranges(
                    self.shard_key(spec, shard),
                    by_shard[&shard]
                        .iter()
                        .map(|&m| ByteRange::FromStart {
                            offset: m * 16,
                            length: Some(16),
                        })
                        .collect(),
                )
            })
            .collect();
        // Per place: the absolute range of its minishard index, `None` when empty or the
        // shard is missing, or what is wrong with the shard (named once, in step 3).
        let mut ranges: BTreeMap<ChunkPlace, Result<Option<(u64, u64)>, String>> = BTreeMap::new();
        for (shard, answer) in shards.iter().zip(self.inner.get_many(&requests)) {
            let minishards = &by_shard[shard];
            match answer {
                Ok(ReadResponse::Missing) => {
                    for &m in minishards {
                        ranges.insert(
                            ChunkPlace {
                                shard: *shard,
                                minishard: m,
                            },
                            Ok(None),
                        );
                    }
                }
                Ok(ReadResponse::Ranges(parts)) if parts.len() == minishards.len() => {
                    for (&m, part) in minishards.iter().zip(parts) {
                        let range = sharding::minishard_range(&part, m, index_end, None)
                            .map(|(s, e)| (s < e).then_some((s, e)));
                        ranges.insert(
                            ChunkPlace {
                                shard: *shard,
                                minishard: m,
                            },
                            range,
                        );
                    }
                }
                Ok(_) => {
                    for &m in minishards {
                        ranges.insert(
                            ChunkPlace {
                                shard: *shard,
                                minishard: m,
                            },
                            Err("unexpected answer to a ranged read".to_string()),
                        );
                    }
                }
                Err(e) => {
                    let message = match &e {
                        StoreError::RangeOutOfBounds { size, .. } => format!(
                            "the shard has {size} bytes, less than its index ({index_end} bytes): truncated"
                        ),
                        other => other.to_string(),
                    };
                    for &m in minishards {
                        ranges.insert(
                            ChunkPlace {
                                shard: *shard,
                                minishard: m,
                            },
                            Err(message.clone()),
                        );
                    }
                }
            }
        }
        // 2. The minishard indexes.
        let wanted: Vec<(ChunkPlace, (u64, u64))> = ranges
            .iter()
            .filter_map(|(p, r)| match r {
                Ok(Some(range)) => Some((*p, *range)),
                _ => None,
            })
            .collect();
        let mut index_shards: BTreeMap<u64, Vec<PlacedRange>> = BTreeMap::new();
        for (place, range) in wanted {
            index_shards
                .entry(place.shard)
                .or_default()
                .push((place, range));
        }
        let index_requests: Vec<(u64, ReadRequest)> = index_shards
            .iter()
            .map(|(&shard, list)| {
                (
                    shard,
                    ReadRequest::ranges(
                        self.shard_key(spec, shard),
                        list.iter()
                            .map(|(_, (s, e))| ByteRange::FromStart {
                                offset: *s,
                                length: Some(e - s),
                            })
                            .collect(),
                    ),
                )
            })
            .collect();
        let plain: Vec<ReadRequest> = index_requests.iter().map(|(_, r)| r.clone()).collect();
        let mut indexes: BTreeMap<ChunkPlace, Result<HashMap<u64, MinishardEntry>, String>> =
            BTreeMap::new();
        for ((shard, _), answer) in index_requests.iter().zip(self.inner.get_many(&plain)) {
            let list = &index_shards[shard];
            let parts = match answer {
                Ok(ReadResponse::Ranges(parts)) if parts.len() == list.len() => Ok(parts),
                Ok(ReadResponse::Missing) => Err("the shard disappeared while it was read".to_string()),
                Ok(_) => Err("unexpected answer to a ranged read".to_string()),
                Err(StoreError::RangeOutOfBounds { range, size, .. }) => Err(format!(
                    "a minishard index at bytes {range} lies past the end of the shard ({size} bytes)"
                )),
                Err(e) => Err(e.to_string()),
            };
            match parts {
                Ok(parts) => {
                    for ((place, _), part) in list.iter().zip(parts) {
                        let parsed = self.parse_minishard(spec, place.minishard, &part);
                        indexes.insert(*place, parsed);
                    }
                }
                Err(message) => {
                    for (place, _) in list {
                        indexes.insert(*place, Err(message.clone()));
                    }
                }
            }
        }
        // 3. The chunks' data.
        let mut data_requests: BTreeMap<u64, Vec<(usize, MinishardEntry)>> = BTreeMap::new();
        for (place, members) in &places {
            let shard_key = self.shard_key(spec, place.shard);
            match ranges.remove(place) {
                Some(Ok(None)) | None => {
                    for &i in members {
                        answers[i] = Some(Ok(None));
                    }
                }
                Some(Err(message)) => {
                    for &i in members {
                        answers[i] = Some(Err(
                            self.error(&shard_key, format!("chunk {}: {message}", chunks[i].0))
                        ));
                    }
                }
                Some(Ok(Some(_))) => match indexes.get(place) {
                    Some(Ok(index)) => {
                        for &i in members {
                            match index.get(&chunks[i].1) {
                                None => answers[i] = Some(Ok(None)),
                                Some(entry) => data_requests
                                    .entry(place.shard)
                                    .or_default()
                                    .push((i, *entry)),
                            }
                        }
                    }
                    Some(Err(message)) => {
                        for &i in members {
                            answers[i] = Some(Err(
                                self.error(&shard_key, format!("chunk {}: {message}", chunks[i].0))
                            ));
                        }
                    }
                    None => {
                        for &i in members {
                            answers[i] = Some(Ok(None));
                        }
                    }
                },
            }
        }
        let data_list: Vec<(u64, Vec<(usize, MinishardEntry)>)> =
            data_requests.into_iter().collect();
        let requests: Vec<ReadRequest> = data_list
            .iter()
            .map(|(shard, members)| {
                ReadRequest::ranges(
                    self.shard_key(spec, *shard),
                    members
                        .iter()
                        .map(|(_, e)| ByteRange::FromStart {
                            offset: e.start,
                            length: Some(e.size),
                        })
                        .collect(),
                )
            })
            .collect();
        for (((_, members), request), answer) in data_list
            .iter()
            .zip(&requests)
            .zip(self.inner.get_many(&requests))
        {
            match answer {
                Ok(ReadResponse::Ranges(parts)) if parts.len() == members.len() => {
                    for ((i, _), part) in members.iter().zip(parts) {
                        answers[*i] = Some(match spec.data_encoding {
                            ShardEncoding::Raw => Ok(Some(part)),
                            ShardEncoding::Gzip => {
                                self.gunzip_chunk(&chunks[*i].0, &part).map(Some)
                            }
                        });
                    }
                }
                other => {
                    let message = match other {
                        Ok(ReadResponse::Missing) => {
                            "the shard disappeared while it was read".to_string()
                        }
                        Err(StoreError::RangeOutOfBounds { range, size, .. }) => format!(
                            "its data at bytes {range} lie past the end of the shard ({size} bytes)"
                        ),
                        Err(e) => e.to_string(),
                        Ok(_) => "unexpected answer to a ranged read".to_string(),
                    };
                    for (i, _) in members {
                        answers[*i] = Some(Err(
                            self.error(&request.key, format!("chunk {}: {message}", chunks[*i].0))
                        ));
                    }
                }
            }
        }
        answers.into_iter().map(|a| a.unwrap_or(Ok(None))).collect()
    }

    fn parse_minishard(
        &self,
        spec: &ShardingSpec,
        minishard: u64,
        raw: &[u8],
    ) -> Result<HashMap<u64, MinishardEntry>, String> {
        let decoded;
        let bytes = match spec.minishard_index_encoding {
            ShardEncoding::Raw => raw,
            ShardEncoding::Gzip => {
                decoded = sharding::gunzip(raw, self.index_limit())
                    .map_err(|e| format!("minishard {minishard} index: {e}"))?;
                &decoded[..]
            }
        };
        let entries = sharding::parse_minishard_index(bytes, spec.shard_index_bytes(), None)
            .map_err(|e| format!("minishard {minishard} index: {e}"))?;
        Ok(entries.into_iter().map(|e| (e.id, e)).collect())
    }

    /// Rewrite the shards of the chunks `updates` (id → new stored value, `None` to remove),
    /// each shard once, different shards in parallel.
    fn write_sharded(
        &self,
        spec: &ShardingSpec,
        updates: Vec<(u64, Option<Bytes>)>,
    ) -> StoreResult<()> {
        let mut by_shard: BTreeMap<u64, Vec<(u64, Option<Bytes>)>> = BTreeMap::new();
        for (id, value) in updates {
            by_shard
                .entry(spec.place(id).shard)
                .or_default()
                .push((id, value));
        }
        if by_shard.len() == 1 {
            return by_shard
                .into_iter()
                .try_for_each(|(shard, changes)| self.rewrite_shard(spec, shard, changes));
        }
        by_shard
            .into_iter()
            .collect::<Vec<_>>()
            .into_par_iter()
            .with_max_len(1)
            .try_for_each(|(shard, changes)| self.rewrite_shard(spec, shard, changes))
    }

    /// Apply `changes` (id → new value as the engine encoded it, `None` to remove) to shard
    /// `shard` and store it whole again, atomically (the inner store's writer). The chunks
    /// the changes leave alone are read from the stored shard in one whole read, so they come
    /// from one version of it; when the changes replace every stored chunk (or there is no
    /// shard yet) only the shard's indexes are read. One writer per shard at a time within
    /// the process.
    fn rewrite_shard(
        &self,
        spec: &ShardingSpec,
        shard: u64,
        changes: Vec<(u64, Option<Bytes>)>,
    ) -> StoreResult<()> {
        // Compressed before the shard is locked (the lock is never held across rayon work).
        let encode = |(id, value): (u64, Option<Bytes>)| match (value, spec.data_encoding) {
            (Some(bytes), ShardEncoding::Gzip) => (id, Some(Bytes::from(sharding::gzip(&bytes)))),
            (value, _) => (id, value),
        };
        let changes: Vec<(u64, Option<Bytes>)> = match spec.data_encoding {
            ShardEncoding::Gzip if changes.len() > 1 => {
                changes.into_par_iter().map(encode).collect()
            }
            _ => changes.into_iter().map(encode).collect(),
        };
        // The last change of an id wins, as when they are applied in turn.
        let changes: BTreeMap<u64, Option<Bytes>> = changes.into_iter().collect();
        let lock = self.lock_shard(shard);
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let key = self.shard_key(spec, shard);
        let (existed, mut chunks) = self.kept_chunks(spec, &key, &changes)?;
        chunks.extend(
            changes
                .into_iter()
                .filter_map(|(id, value)| value.map(|bytes| (id, bytes))),
        );
        if chunks.is_empty() {
            return if existed {
                self.inner.delete(&key)
            } else {
                Ok(())
            };
        }
        let mut writer = self.inner.writer(&key)?;
        for part in sharding::shard_parts(&chunks, spec) {
            std::io::Write::write_all(&mut writer, &part)
                .map_err(|e| self.error(&key, format!("cannot be written: {e}")))?;
        }
        writer.commit()
    }

    /// Whether shard `key` is stored, and its chunks that `changes` leave alone (id → stored
    /// bytes, slices of one read of the shard).
    fn kept_chunks(
        &self,
        spec: &ShardingSpec,
        key: &str,
        changes: &BTreeMap<u64, Option<Bytes>>,
    ) -> StoreResult<(bool, BTreeMap<u64, Bytes>)> {
        let unreadable = |e: String| self.error(key, format!("cannot be updated: {e}"));
        let index_end = spec.shard_index_bytes();
        let index = match self.inner.get_ranges(
            key,
            &[ByteRange::FromStart {
                offset: 0,
                length: Some(index_end),
            }],
        ) {
            Ok(None) => return Ok((false, BTreeMap::new())),
            Ok(Some(mut parts)) if parts.len() == 1 => parts.pop().unwrap_or_default(),
            Ok(Some(_)) => return Err(unreadable("unexpected answer to a ranged read".into())),
            Err(StoreError::RangeOutOfBounds { size, .. }) => {
                return Err(unreadable(format!(
                    "the shard has {size} bytes, less than its index ({index_end} bytes): \
                     truncated"
                )))
            }
            Err(e) => return Err(e),
        };
        let ranges: Vec<(u64, u64)> = sharding::parse_shard_index(&index, spec, None)
            .map_err(unreadable)?
            .into_iter()
            .filter(|(start, end)| start < end)
            .collect();
        // The ids the shard holds, from its minishard indexes.
        let mut every_id_changed = true;
        if !ranges.is_empty() {
            let requests: Vec<ByteRange> = ranges
                .iter()
                .map(|&(start, end)| ByteRange::FromStart {
                    offset: start,
                    length: Some(end - start),
                })
                .collect();
            let parts = match self.inner.get_ranges(key, &requests) {
                Ok(Some(parts)) if parts.len() == ranges.len() => parts,
                // Replaced or removed meanwhile by another process: read whole below.
                Ok(_) | Err(StoreError::RangeOutOfBounds { .. }) => Vec::new(),
                Err(e) => return Err(e),
            };
            every_id_changed = parts.len() == ranges.len();
            for part in &parts {
                let decoded;
                let bytes = match spec.minishard_index_encoding {
                    ShardEncoding::Raw => &part[..],
                    ShardEncoding::Gzip => {
                        decoded = sharding::gunzip(part, self.index_limit()).map_err(unreadable)?;
                        &decoded[..]
                    }
                };
                let entries =
                    sharding::parse_minishard_index(bytes, index_end, None).map_err(unreadable)?;
                if entries.iter().any(|e| !changes.contains_key(&e.id)) {
                    every_id_changed = false;
                    break;
                }
            }
        }
        if every_id_changed {
            return Ok((true, BTreeMap::new()));
        }
        // Some chunks stay: the shard read whole, so index and data are of one version.
        let Some(shard) = self.inner.get(key)? else {
            return Ok((false, BTreeMap::new()));
        };
        let entries =
            sharding::shard_entries(&shard, spec, self.index_limit()).map_err(unreadable)?;
        let kept = entries
            .into_iter()
            .filter(|e| !changes.contains_key(&e.id))
            .map(|e| {
                (
                    e.id,
                    shard.slice(e.start as usize..(e.start + e.size) as usize),
                )
            })
            .collect();
        Ok((true, kept))
    }

    /// Every stored chunk key of a sharded scale (shard files listed, their indexes read).
    fn list_sharded(&self, spec: &ShardingSpec) -> StoreResult<Vec<String>> {
        let listing = self.inner.list_dir(&self.dir)?;
        let grid = self.scale.grid_shape();
        let mut keys = Vec::new();
        for name in listing.keys {
            if spec.parse_shard_file(&name).is_none() {
                continue;
            }
            let key = join_key(&self.dir, &name);
            let Some(bytes) = self.inner.get(&key)? else {
                continue;
            };
            let entries = sharding::shard_entries(&bytes, spec, self.index_limit())
                .map_err(|e| self.error(&key, e))?;
            for entry in entries {
                let mut index = sharding::morton_position(entry.id, &grid);
                if index.iter().zip(&grid).any(|(i, g)| i >= g) {
                    continue;
                }
                index.push(0);
                keys.push(join_key(&self.dir, &self.scale.chunk_key(&index)));
            }
        }
        keys.sort();
        Ok(keys)
    }

    fn set_impl(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        if let Some(spec) = self.sharding() {
            let mut passthrough = Vec::new();
            let mut updates = Vec::new();
            for (key, value) in values {
                match self.chunk_of(&key) {
                    Some(index) => updates.push((self.chunk_id(&index), Some(value))),
                    None => passthrough.push((key, value)),
                }
            }
            if !updates.is_empty() {
                self.write_sharded(spec, updates)?;
            }
            return self.inner.set_many(passthrough);
        }
        let mut out = Vec::with_capacity(values.len());
        let mut stale = Vec::new();
        for (key, value) in values {
            if self.chunk_of(&key).is_some() {
                if self.gzip_writes {
                    stale.push(key.clone());
                    out.push((format!("{key}.gz"), Bytes::from(sharding::gzip(&value))));
                } else {
                    stale.push(format!("{key}.gz"));
                    out.push((key, value));
                }
            } else {
                out.push((key, value));
            }
        }
        self.inner.set_many(out)?;
        for key in stale {
            self.inner.delete(&key)?;
        }
        Ok(())
    }
}

/// A minishard and the byte range of its index in the shard.
type PlacedRange = (ChunkPlace, (u64, u64));

fn whole(response: ReadResponse) -> Option<Bytes> {
    match response {
        ReadResponse::Whole(bytes) => Some(bytes),
        ReadResponse::Ranges(mut parts) if parts.len() == 1 => parts.pop(),
        _ => None,
    }
}

impl Store for ScaleStore {
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        let mut answers = self.get_many(&[ReadRequest::whole(key)]);
        match answers.pop() {
            Some(answer) => answer.map(whole),
            None => Ok(None),
        }
    }

    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        if self.chunk_of(key).is_none() {
            return self.inner.get_ranges(key, ranges);
        }
        match self.get(key)? {
            Some(value) => ByteRange::slice_all(key, &value, ranges).map(Some),
            None => Ok(None),
        }
    }

    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        if self.chunk_of(key).is_none() {
            return self.inner.size(key);
        }
        Ok(self.get(key)?.map(|v| v.len() as u64))
    }

    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.set_impl(vec![(key.to_string(), value)])
    }

    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        self.set_impl(values)
    }

    /// Sharded: the shard of a chunk key, which every write of its chunks rewrites.
    fn write_group(&self, key: &str) -> Option<u64> {
        let spec = self.sharding()?;
        let index = self.chunk_of(key)?;
        Some(spec.place(self.chunk_id(&index)).shard)
    }

    fn delete(&self, key: &str) -> StoreResult<()> {
        match (self.chunk_of(key), self.sharding()) {
            (Some(index), Some(spec)) => {
                let id = self.chunk_id(&index);
                self.write_sharded(spec, vec![(id, None)])
            }
            (Some(_), None) => {
                self.inner.delete(key)?;
                self.inner.delete(&format!("{key}.gz"))
            }
            (None, _) => self.inner.delete(key),
        }
    }

    /// Sharded: the chunks' shards rewritten once each.
    fn delete_many(&self, keys: Vec<String>) -> StoreResult<()> {
        let Some(spec) = self.sharding() else {
            return keys.iter().try_for_each(|key| self.delete(key));
        };
        let mut removed = Vec::new();
        for key in keys {
            match self.chunk_of(&key) {
                Some(index) => removed.push((self.chunk_id(&index), None)),
                None => self.inner.delete(&key)?,
            }
        }
        if removed.is_empty() {
            return Ok(());
        }
        self.write_sharded(spec, removed)
    }

    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        let mut keys = self.inner.list_prefix(prefix)?;
        let scale_prefix = format!("{}/", self.dir);
        if let Some(spec) = self.sharding() {
            if scale_prefix.starts_with(prefix) || prefix.starts_with(&scale_prefix) {
                keys.retain(|k| {
                    !k.starts_with(&scale_prefix)
                        || spec.parse_shard_file(&k[scale_prefix.len()..]).is_none()
                });
                keys.extend(
                    self.list_sharded(spec)?
                        .into_iter()
                        .filter(|k| k.starts_with(prefix)),
                );
            }
        } else {
            for key in keys.iter_mut() {
                if let Some(plain) = key.strip_suffix(".gz") {
                    if self.chunk_of(plain).is_some() {
                        *key = plain.to_string();
                    }
                }
            }
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        self.inner.list_dir(prefix)
    }

    fn concurrent_reads(&self) -> usize {
        self.inner.concurrent_reads()
    }

    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        let mut answers: Vec<Option<StoreResult<ReadResponse>>> =
            requests.iter().map(|_| None).collect();
        let mut chunk_requests: Vec<(usize, Vec<u64>)> = Vec::new();
        let mut other: Vec<usize> = Vec::new();
        for (i, request) in requests.iter().enumerate() {
            match self.chunk_of(&request.key) {
                Some(index) => chunk_requests.push((i, index)),
                None => other.push(i),
            }
        }
        if !other.is_empty() {
            let passthrough: Vec<ReadRequest> =
                other.iter().map(|&i| requests[i].clone()).collect();
            for (&i, answer) in other.iter().zip(self.inner.get_many(&passthrough)) {
                answers[i] = Some(answer);
            }
        }
        if !chunk_requests.is_empty() {
            let values = match self.sharding() {
                Some(spec) => {
                    let chunks: Vec<(String, u64)> = chunk_requests
                        .iter()
                        .map(|(i, index)| (requests[*i].key.clone(), self.chunk_id(index)))
                        .collect();
                    self.get_sharded(spec, &chunks)
                }
                None => {
                    let keys: Vec<&str> = chunk_requests
                        .iter()
                        .map(|(i, _)| requests[*i].key.as_str())
                        .collect();
                    self.get_unsharded(&keys)
                }
            };
            for ((i, _), value) in chunk_requests.iter().zip(values) {
                let request = &requests[*i];
                answers[*i] = Some(match value {
                    Ok(None) => Ok(ReadResponse::Missing),
                    Ok(Some(bytes)) => match &request.ranges {
                        None => Ok(ReadResponse::Whole(bytes)),
                        Some(ranges) => ByteRange::slice_all(&request.key, &bytes, ranges)
                            .map(ReadResponse::Ranges),
                    },
                    Err(e) => Err(e),
                });
            }
        }
        answers
            .into_iter()
            .map(|a| a.unwrap_or(Ok(ReadResponse::Missing)))
            .collect()
    }

    fn local_path(&self, key_or_prefix: &str) -> Option<std::path::PathBuf> {
        self.inner.local_path(key_or_prefix)
    }
}
