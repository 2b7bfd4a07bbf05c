//! Reads from the store: a cache of aligned metadata pages between the parser and the store,
//! batched prefetches of many pages at once, and uncached batched reads of raw data.
//!
//! Every read is checked against the size of the object, so no structure can make the reader
//! ask for bytes past its end (or allocate for them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use neurochunk_store::{ByteRange, Bytes, ReadRequest, ReadResponse, Store};

use crate::error::{corrupt, not_found, H5Error, H5Result};

/// The page cache of one open file.
#[derive(Default)]
struct Cache {
    /// Page index → (bytes, last use).
    pages: HashMap<u64, (Bytes, u64)>,
    /// Bytes held.
    bytes: usize,
    /// A clock for the least-recently-used order.
    tick: u64,
}

/// The store, the key of the file in it and the metadata page cache.
pub(crate) struct Io {
    store: Arc<dyn Store>,
    key: String,
    size: u64,
    page: u64,
    budget: usize,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for Io {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Io")
            .field("key", &self.key)
            .field("size", &self.size)
            .field("page", &self.page)
            .finish()
    }
}

fn past_end(abs: u64, len: u64, size: u64) -> H5Error {
    corrupt(
        "file",
        None,
        format!("a read of {len} bytes at byte {abs} is past the end of the file ({size} bytes)"),
    )
}

impl Io {
    /// The store the file is read from, and its key there.
    pub fn location(&self) -> (&Arc<dyn Store>, &str) {
        (&self.store, &self.key)
    }

    /// Reads of `key` in `store` (`size` bytes), through pages of `page` bytes, keeping at most
    /// about `budget` bytes of pages.
    pub fn new(store: Arc<dyn Store>, key: &str, size: u64, page: u64, budget: usize) -> Self {
        Io {
            store,
            key: key.to_string(),
            size,
            page: page.max(512),
            budget,
            cache: Mutex::new(Cache::default()),
        }
    }

    /// The size of the file in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// How many reads the store serves at once.
    pub fn concurrency(&self) -> usize {
        self.store.concurrent_reads().max(1)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        // A poisoned lock only means a panic elsewhere; the map itself stays consistent.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Check that `abs..abs + len` lies in the file.
    pub fn check(&self, abs: u64, len: u64) -> H5Result<()> {
        match abs.checked_add(len) {
            Some(end) if end <= self.size => Ok(()),
            _ => Err(past_end(abs, len, self.size)),
        }
    }

    /// The pages `first..=last` covering `abs..abs + len` (`len` > 0).
    fn page_span(&self, abs: u64, len: u64) -> (u64, u64) {
        let last_byte = abs + len - 1;
        (abs / self.page, last_byte / self.page)
    }

    /// The error of a read that found nothing at the file's key: not found (what
    /// [`crate::H5File::probe`] takes for "no HDF5 file here"; a plain HTTP server may answer
    /// a size for a directory's index page and then nothing for its byte ranges).
    fn vanished(&self) -> H5Error {
        not_found(format!("the file '{}' is no longer in the store", self.key))
    }

    /// Fetch every page of `wanted` (page indices, sorted, unique) not in the cache, in one
    /// batch of byte ranges (pages less than [`MERGE_GAP_BYTES`] apart in one range).
    fn fetch_pages(&self, wanted: &[u64]) -> H5Result<()> {
        let missing: Vec<u64> = {
            let cache = self.lock();
            wanted
                .iter()
                .copied()
                .filter(|p| !cache.pages.contains_key(p))
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        // Runs of pages, each one byte range: missing pages less than MERGE_GAP_BYTES apart
        // share a run, the pages between them fetched (and cached) too. A remote store would
        // fetch those gaps anyway (it coalesces ranges that close), so this way every byte
        // transferred is kept, and a later read of the pages between costs no request.
        let gap_pages = (MERGE_GAP_BYTES / self.page).max(1);
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for p in missing {
            match runs.last_mut() {
                Some((_, end)) if p - *end <= gap_pages => *end = p,
                _ => runs.push((p, p)),
            }
        }
        let ranges: Vec<ByteRange> = runs
            .iter()
            .map(|&(a, b)| {
                let start = a * self.page;
                let end = ((b + 1) * self.page).min(self.size);
                ByteRange::FromStart {
                    offset: start,
                    length: Some(end - start),
                }
            })
            .collect();
        let parts = self.get_ranges(ranges.clone())?;
        let mut cache = self.lock();
        for ((a, _), part) in runs.iter().zip(parts) {
            let mut off = 0usize;
            let mut p = *a;
            while off < part.len() {
                let end = (off + self.page as usize).min(part.len());
                let slice = part.slice(off..end);
                cache.tick += 1;
                let tick = cache.tick;
                cache.bytes += slice.len();
                if let Some((old, _)) = cache.pages.insert(p, (slice, tick)) {
                    cache.bytes -= old.len();
                }
                off = end;
                p += 1;
            }
        }
        if cache.bytes > self.budget {
            evict(&mut cache, self.budget);
        }
        Ok(())
    }

    /// One batch (one `get_many` call) of byte ranges of the file, answered in order.
    fn get_ranges(&self, ranges: Vec<ByteRange>) -> H5Result<Vec<Bytes>> {
        let n = ranges.len();
        let expected: Vec<u64> = ranges
            .iter()
            .map(|r| match r {
                ByteRange::FromStart {
                    length: Some(l), ..
                } => *l,
                _ => 0,
            })
            .collect();
        let mut answers = self
            .store
            .get_many(&[ReadRequest::ranges(self.key.clone(), ranges)]);
        let answer = answers
            .pop()
            .ok_or_else(|| corrupt("store", None, "the store answered no request of a batch"))??;
        let parts = match answer {
            ReadResponse::Ranges(parts) => parts,
            ReadResponse::Whole(_) => {
                return Err(corrupt(
                    "store",
                    None,
                    "the store answered ranges with a value",
                ))
            }
            ReadResponse::Missing => return Err(self.vanished()),
        };
        if parts.len() != n
            || parts
                .iter()
                .zip(&expected)
                .any(|(p, &l)| p.len() as u64 != l)
        {
            return Err(corrupt(
                "store",
                None,
                "the store answered a range read with the wrong number of bytes",
            ));
        }
        Ok(parts)
    }

    /// Make sure the pages covering each of `spans` (absolute offset, length) are cached,
    /// fetching the missing ones in one batch. Spans past the end of the file are clipped.
    pub fn prefetch(&self, spans: &[(u64, u64)]) -> H5Result<()> {
        let mut pages = Vec::new();
        for &(abs, len) in spans {
            if abs >= self.size || len == 0 {
                continue;
            }
            let len = len.min(self.size - abs);
            let (a, b) = self.page_span(abs, len);
            // Never prefetch more than 1024 pages for one span.
            pages.extend(a..=b.min(a + 1023));
        }
        pages.sort_unstable();
        pages.dedup();
        self.fetch_pages(&pages)
    }

    /// `len` bytes at the absolute offset `abs`, through the page cache.
    pub fn read(&self, abs: u64, len: u64) -> H5Result<Bytes> {
        self.check(abs, len)?;
        if len == 0 {
            return Ok(Bytes::new());
        }
        let (a, b) = self.page_span(abs, len);
        let pages: Vec<u64> = (a..=b).collect();
        self.fetch_pages(&pages)?;
        let mut cache = self.lock();
        cache.tick += 1;
        let tick = cache.tick;
        let mut parts = Vec::with_capacity(pages.len());
        for p in &pages {
            match cache.pages.get_mut(p) {
                Some((bytes, used)) => {
                    *used = tick;
                    parts.push(bytes.clone());
                }
                None => {
                    // Evicted between the fetch and now (a tiny budget): read directly.
                    drop(cache);
                    return self.read_uncached(abs, len);
                }
            }
        }
        drop(cache);
        let start = (abs - a * self.page) as usize;
        if parts.len() == 1 {
            return Ok(parts[0].slice(start..start + len as usize));
        }
        let mut out = Vec::with_capacity(len as usize);
        let mut skip = start;
        for part in parts {
            let from = skip.min(part.len());
            skip -= from;
            let want = (len as usize - out.len()).min(part.len() - from);
            out.extend_from_slice(&part[from..from + want]);
        }
        Ok(Bytes::from(out))
    }

    /// `len` bytes at `abs`, read from the store without the cache.
    pub fn read_uncached(&self, abs: u64, len: u64) -> H5Result<Bytes> {
        self.check(abs, len)?;
        if len == 0 {
            return Ok(Bytes::new());
        }
        let mut parts = self.get_ranges(vec![ByteRange::FromStart {
            offset: abs,
            length: Some(len),
        }])?;
        parts
            .pop()
            .ok_or_else(|| corrupt("store", None, "the store answered no range"))
    }

    /// Many byte ranges (absolute offset, length), in the order asked. What the page cache
    /// holds (prefetched metadata, or metadata read nearby) is taken from it; the rest is read
    /// from the store without entering the cache, in batches of `get_many` requests (many in
    /// flight for a remote store). A span only partly cached is read in the pieces missing
    /// from the cache, so metadata read once is not read again inside a larger span.
    pub fn read_many(&self, spans: &[(u64, u64)]) -> H5Result<Vec<Bytes>> {
        for &(abs, len) in spans {
            self.check(abs, len)?;
        }
        let pieces: Vec<Vec<Piece>> = spans.iter().map(|&s| self.cached_pieces(s)).collect();
        let wanted: Vec<(u64, u64)> = pieces
            .iter()
            .flatten()
            .filter_map(|p| match p {
                Piece::Missing(abs, len) => Some((*abs, *len)),
                Piece::Cached(_) => None,
            })
            .collect();
        let mut fetched = self.read_many_uncached(&wanted)?.into_iter();
        let mut out = Vec::with_capacity(spans.len());
        for (span_pieces, &(_, len)) in pieces.into_iter().zip(spans) {
            let mut parts = span_pieces.into_iter().map(|p| match p {
                Piece::Cached(b) => b,
                Piece::Missing(..) => fetched.next().unwrap_or_default(),
            });
            match (parts.next(), parts.next()) {
                (None, _) => out.push(Bytes::new()),
                (Some(only), None) => out.push(only),
                (Some(first), Some(second)) => {
                    let mut joined = Vec::with_capacity(len as usize);
                    joined.extend_from_slice(&first);
                    joined.extend_from_slice(&second);
                    for part in parts {
                        joined.extend_from_slice(&part);
                    }
                    out.push(Bytes::from(joined));
                }
            }
        }
        Ok(out)
    }

    /// The span `abs`, `len` as runs of bytes held by cached pages and runs missing from the
    /// cache, in order.
    fn cached_pieces(&self, (abs, len): (u64, u64)) -> Vec<Piece> {
        if len == 0 {
            return Vec::new();
        }
        let (a, b) = self.page_span(abs, len);
        let end = abs + len;
        let cache = self.lock();
        let mut pieces: Vec<Piece> = Vec::new();
        for p in a..=b {
            let page_start = p * self.page;
            let from = abs.max(page_start);
            let to = end.min(page_start + self.page);
            let cached = cache.pages.get(&p).and_then(|(bytes, _)| {
                let lo = (from - page_start) as usize;
                let hi = (to - page_start) as usize;
                (hi <= bytes.len()).then(|| bytes.slice(lo..hi))
            });
            match (cached, pieces.last_mut()) {
                (Some(bytes), _) => pieces.push(Piece::Cached(bytes)),
                (None, Some(Piece::Missing(start, n))) if *start + *n == from => *n += to - from,
                (None, _) => pieces.push(Piece::Missing(from, to - from)),
            }
        }
        pieces
    }

    fn read_many_uncached(&self, spans: &[(u64, u64)]) -> H5Result<Vec<Bytes>> {
        let per_batch = (self.concurrency() * 4).clamp(16, 256);
        let mut out = Vec::with_capacity(spans.len());
        for batch in spans.chunks(per_batch) {
            let requests: Vec<ReadRequest> = batch
                .iter()
                .map(|&(abs, len)| {
                    ReadRequest::ranges(
                        self.key.clone(),
                        vec![ByteRange::FromStart {
                            offset: abs,
                            length: Some(len),
                        }],
                    )
                })
                .collect();
            let answers = self.store.get_many(&requests);
            if answers.len() != batch.len() {
                return Err(corrupt(
                    "store",
                    None,
                    "the store answered a batch with the wrong number of responses",
                ));
            }
            for (answer, &(_, len)) in answers.into_iter().zip(batch) {
                match answer? {
                    ReadResponse::Ranges(mut parts)
                        if parts.len() == 1 && parts[0].len() as u64 == len =>
                    {
                        out.extend(parts.pop());
                    }
                    ReadResponse::Missing => return Err(self.vanished()),
                    _ => {
                        return Err(corrupt(
                            "store",
                            None,
                            "the store answered a range read with the wrong number of bytes",
                        ))
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Missing pages closer than this share one read (the remote store's default coalescing gap).
const MERGE_GAP_BYTES: u64 = 1 << 20;

/// A part of a span read by [`Io::read_many`].
enum Piece {
    /// Bytes the page cache holds.
    Cached(Bytes),
    /// A byte range (absolute offset, length) to read from the store.
    Missing(u64, u64),
}

/// Drop the least recently used pages until the cache holds at most 3/4 of `budget` bytes.
fn evict(cache: &mut Cache, budget: usize) {
    let target = budget / 4 * 3;
    let mut order: Vec<(u64, u64, usize)> = cache
        .pages
        .iter()
        .map(|(&p, (b, used))| (*used, p, b.len()))
        .collect();
    order.sort_unstable();
    for (_, p, len) in order {
        if cache.bytes <= target {
            break;
        }
        cache.pages.remove(&p);
        cache.bytes -= len;
    }
}
