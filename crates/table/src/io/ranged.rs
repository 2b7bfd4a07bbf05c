//! Reading one value of a [`Store`] through byte ranges.
//!
//! [`StoreValue`] is a data file opened in a store: its key, its size and its last bytes
//! (fetched together with the first bytes when the file is opened, so format sniffing and the
//! Parquet / Arrow IPC footers need no further request when they fit). On top of it:
//! [`RangeReader`], a `Read + Seek` adapter with a read-ahead buffer for the Arrow IPC readers,
//! and [`ParquetChunks`], a Parquet [`ChunkReader`] that fetches the column chunks of the
//! projected columns only, a window at a time.

use super::page_header::{self, PageLimits};
use crate::error::{Result, TableError};
use neurochunk_store::{ByteRange, Bytes, ReadRequest, ReadResponse, Store, StoreError};
use parquet::errors::ParquetError;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::{ChunkReader, Length};
use std::fmt;
use std::io::{self, Read, Seek, SeekFrom};
use std::sync::{Arc, Mutex, PoisonError};

/// Bytes read from the end of a data file when it is opened: enough for the footer of most
/// Parquet and Arrow IPC files.
const TAIL_BYTES: u64 = 64 * 1024;

/// Read-ahead of the Arrow IPC readers: smaller reads are served from a buffer of this size,
/// larger ones are fetched as asked.
pub(crate) const READ_AHEAD: u64 = 1 << 20;

/// Bytes fetched at a time from one Parquet column chunk (a whole chunk when it is smaller).
const CHUNK_WINDOW: u64 = 4 << 20;

/// Column chunks read ahead together that lie at most this far apart share a request.
const ADJACENT_GAP: u64 = 8 * 1024;

/// Read-ahead of a Parquet reader outside the column chunks being decoded (the footer).
const FOOTER_READ_AHEAD: u64 = 64 * 1024;

/// The I/O error of a store error: a backend's own I/O error as it is (so a file on disk
/// reports what a direct read would), anything else wrapped.
pub(crate) fn store_io_error(err: StoreError) -> io::Error {
    match err {
        StoreError::Backend { store, key, source } => match source.downcast::<io::Error>() {
            Ok(e) => *e,
            Err(source) => io::Error::other(StoreError::Backend { store, key, source }),
        },
        StoreError::NotFound { key } => io::Error::new(
            io::ErrorKind::NotFound,
            StoreError::NotFound { key }.to_string(),
        ),
        other => io::Error::other(other),
    }
}

/// One value (a data file) of a store, read through byte ranges.
#[derive(Clone)]
pub(crate) struct StoreValue {
    store: Arc<dyn Store>,
    key: String,
    size: u64,
    /// The last `min(size, TAIL_BYTES)` bytes.
    tail: Bytes,
}

impl fmt::Debug for StoreValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreValue")
            .field("store", &self.store)
            .field("key", &self.key)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

impl StoreValue {
    /// Whether the value's store serves one read at a time (a local disk): its reads are
    /// cheap, and several readers may each fetch their own part without a plan.
    pub(crate) fn is_local(&self) -> bool {
        self.store.concurrent_reads() <= 1
    }

    /// Opens the value at `key` (named `name` in errors): its size, then its first `head`
    /// bytes and its last bytes in one ranged read. Returns the value and the first bytes.
    pub(crate) fn open(
        store: Arc<dyn Store>,
        key: &str,
        name: &str,
        head: u64,
    ) -> Result<(Self, Bytes)> {
        let missing = || {
            TableError::store(
                name,
                StoreError::NotFound {
                    key: key.to_string(),
                },
            )
        };
        let size = store
            .size(key)
            .map_err(|e| TableError::store(name, e))?
            .ok_or_else(missing)?;
        let ranges = [
            ByteRange::FromStart {
                offset: 0,
                length: Some(head.min(size)),
            },
            ByteRange::Suffix {
                length: TAIL_BYTES.min(size),
            },
        ];
        let parts = store
            .get_ranges(key, &ranges)
            .map_err(|e| TableError::store(name, e))?
            .ok_or_else(missing)?;
        let [first, tail]: [Bytes; 2] = parts.try_into().map_err(|_| {
            TableError::io(
                name,
                io::Error::other("the store answered a different number of byte ranges"),
            )
        })?;
        let value = StoreValue {
            store,
            key: key.to_string(),
            size,
            tail,
        };
        Ok((value, first))
    }

    /// Size of the value in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The last bytes of the value (up to 64 KiB).
    pub(crate) fn tail(&self) -> &Bytes {
        &self.tail
    }

    /// The bytes `start..end` of each span (inside the value, sorted by start), all in one
    /// `get_many` call, which a remote store puts in flight together. Spans at most
    /// [`ADJACENT_GAP`] apart (the projected columns of one row group, stored side by side)
    /// share a request, which the store may read as one range; others are requests of
    /// their own, so the bytes between them (other columns' chunks) are not fetched.
    fn read_spans(&self, spans: &[(u64, u64)]) -> io::Result<Vec<Bytes>> {
        let mut requests: Vec<ReadRequest> = Vec::new();
        let mut previous_end = None;
        for &(start, end) in spans {
            let range = ByteRange::FromStart {
                offset: start,
                length: Some(end - start),
            };
            match (requests.last_mut(), previous_end) {
                (Some(last), Some(prev)) if start >= prev && start - prev <= ADJACENT_GAP => {
                    if let Some(ranges) = last.ranges.as_mut() {
                        ranges.push(range);
                    }
                }
                _ => requests.push(ReadRequest::ranges(self.key.clone(), vec![range])),
            }
            previous_end = Some(end);
        }
        let mut out = Vec::with_capacity(spans.len());
        for (request, answer) in requests.iter().zip(self.store.get_many(&requests)) {
            let wanted = request.ranges.as_ref().map_or(0, Vec::len);
            match answer {
                Ok(ReadResponse::Ranges(parts)) if parts.len() == wanted => out.extend(parts),
                Ok(ReadResponse::Missing) => {
                    return Err(store_io_error(StoreError::NotFound {
                        key: self.key.clone(),
                    }))
                }
                Ok(_) => {
                    return Err(io::Error::other(
                        "the store did not answer the byte ranges asked for",
                    ))
                }
                Err(e) => return Err(store_io_error(e)),
            }
        }
        Ok(out)
    }

    /// Up to `len` bytes from `start`: fewer at the end of the value, none past it.
    pub(crate) fn read_at(&self, start: u64, len: u64) -> io::Result<Bytes> {
        let end = start.saturating_add(len).min(self.size);
        if start >= end {
            return Ok(Bytes::new());
        }
        let tail_start = self.size - self.tail.len() as u64;
        if start >= tail_start {
            return Ok(self
                .tail
                .slice((start - tail_start) as usize..(end - tail_start) as usize));
        }
        let range = ByteRange::FromStart {
            offset: start,
            length: Some(end - start),
        };
        match self.store.get_ranges(&self.key, &[range]) {
            Ok(Some(parts)) => match <[Bytes; 1]>::try_from(parts) {
                Ok([bytes]) => Ok(bytes),
                Err(_) => Err(io::Error::other(
                    "the store answered a different number of byte ranges",
                )),
            },
            Ok(None) => Err(store_io_error(StoreError::NotFound {
                key: self.key.clone(),
            })),
            Err(e) => Err(store_io_error(e)),
        }
    }
}

/// A `Read + Seek` view of a [`StoreValue`]: reads smaller than the read-ahead are served from
/// a buffer refilled `read_ahead` bytes at a time, larger ones are fetched as asked. Seeking
/// within the buffer keeps it.
pub(crate) struct RangeReader {
    value: StoreValue,
    pos: u64,
    buf: Bytes,
    /// Offset of `buf` in the value.
    buf_start: u64,
    read_ahead: u64,
}

impl RangeReader {
    /// A reader at the start of `value`.
    pub(crate) fn new(value: StoreValue, read_ahead: u64) -> Self {
        RangeReader {
            value,
            pos: 0,
            buf: Bytes::new(),
            buf_start: 0,
            read_ahead: read_ahead.max(1),
        }
    }
}

impl Read for RangeReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() || self.pos >= self.value.size {
            return Ok(0);
        }
        let buf_end = self.buf_start + self.buf.len() as u64;
        if self.pos < self.buf_start || self.pos >= buf_end {
            let want = out.len() as u64;
            if want >= self.read_ahead {
                let bytes = self.value.read_at(self.pos, want)?;
                out[..bytes.len()].copy_from_slice(&bytes);
                self.pos += bytes.len() as u64;
                return Ok(bytes.len());
            }
            self.buf = self.value.read_at(self.pos, self.read_ahead)?;
            self.buf_start = self.pos;
        }
        let offset = (self.pos - self.buf_start) as usize;
        let n = out.len().min(self.buf.len() - offset);
        out[..n].copy_from_slice(&self.buf[offset..offset + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for RangeReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let new = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.value.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match new {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(seek_before_start()),
        }
    }
}

/// The error of a seek before the start: what a file on disk reports (`EINVAL`), so that
/// messages about truncated files read the same through a store.
fn seek_before_start() -> io::Error {
    #[cfg(unix)]
    {
        io::Error::from_raw_os_error(22)
    }
    #[cfg(not(unix))]
    {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "invalid seek to a negative or overflowing position",
        )
    }
}

/// One column chunk a Parquet read decodes.
#[derive(Debug, Clone, Copy)]
struct PlannedChunk {
    start: u64,
    end: u64,
    /// The leaf column's index: the chunks of one column (one per row group) share a window.
    slot: usize,
    /// What its pages may claim.
    limits: PageLimits,
}

/// The column chunks a Parquet read decodes, and the window fetched from each.
#[derive(Debug, Default)]
struct ChunkPlan {
    /// Every column chunk to decode, sorted by start.
    chunks: Vec<PlannedChunk>,
    /// Per slot: the offset and bytes of the last window fetched.
    windows: Vec<Mutex<(u64, Bytes)>>,
    /// First windows of the chunks after the one being read, fetched ahead with it (by
    /// chunk start); at most `prefetch` bytes.
    ahead: Mutex<std::collections::BTreeMap<u64, Bytes>>,
    /// Bytes of first windows fetched together (see [`ParquetChunks::planned`]).
    prefetch: u64,
    /// The next group of first windows, being fetched in the background while the decoder
    /// works through the group before it.
    next: Mutex<Option<Prefetch>>,
}

/// A group of first windows fetched on a thread of its own.
#[derive(Debug)]
struct Prefetch {
    spans: Vec<(u64, u64)>,
    fetch: std::thread::JoinHandle<io::Result<Vec<Bytes>>>,
}

impl ChunkPlan {
    /// The chunk holding byte `at`, if any.
    fn find(&self, at: u64) -> Option<PlannedChunk> {
        let i = self.chunks.partition_point(|c| c.start <= at);
        let c = *self.chunks.get(i.checked_sub(1)?)?;
        (at < c.end).then_some(c)
    }
}

/// A Parquet [`ChunkReader`] over a [`StoreValue`]. The footer comes from the value's tail;
/// page reads inside the planned column chunks (those of the projected columns) are served
/// from one window per column, fetched [`CHUNK_WINDOW`] bytes at a time (the rest of the
/// chunk when shorter), so only the projected columns' bytes are read and memory stays
/// bounded by a window per column.
#[derive(Clone, Debug)]
pub(crate) struct ParquetChunks {
    value: StoreValue,
    plan: Arc<ChunkPlan>,
}

impl ParquetChunks {
    /// A reader with no planned chunks (enough for the footer).
    pub(crate) fn new(value: StoreValue) -> Self {
        ParquetChunks {
            value,
            plan: Arc::default(),
        }
    }

    /// A reader for the leaf columns `leaves` of the row groups `groups` of `metadata`.
    pub(crate) fn planned(
        value: StoreValue,
        metadata: &ParquetMetaData,
        groups: impl Fn(usize) -> bool,
        leaves: impl Fn(usize) -> bool,
    ) -> Self {
        let mut chunks = Vec::new();
        let mut slots = 0;
        for (_, rg) in metadata
            .row_groups()
            .iter()
            .enumerate()
            .filter(|(g, _)| groups(*g))
        {
            for (i, col) in rg.columns().iter().enumerate() {
                if leaves(i) {
                    let (start, len) = col.byte_range();
                    chunks.push(PlannedChunk {
                        start,
                        end: start.saturating_add(len),
                        slot: i,
                        limits: PageLimits::of(col),
                    });
                    slots = slots.max(i + 1);
                }
            }
        }
        chunks.sort_unstable_by_key(|c| (c.start, c.end, c.slot));
        let windows = (0..slots).map(|_| Mutex::new((0, Bytes::new()))).collect();
        // A store serving many reads at once gets the first windows of the next column
        // chunks (the other projected columns of the row group, the next row groups) in the
        // same request as the one the decoder asks for, in flight together, up to a window
        // per read it serves at once and at most 8; a local store reads one at a time.
        let prefetch = CHUNK_WINDOW * value.store.concurrent_reads().clamp(1, 8) as u64;
        ParquetChunks {
            value,
            plan: Arc::new(ChunkPlan {
                chunks,
                windows,
                ahead: Mutex::default(),
                prefetch,
                next: Mutex::default(),
            }),
        }
    }

    /// The first window of planned chunk `i` (`chunks[i]`): from those fetched ahead, from
    /// the group being fetched in the background, or fetched now together with the first
    /// windows of the chunks after it (up to the plan's `prefetch` bytes), which are kept for
    /// later. Each time, the group after those held is started in the background when none
    /// is in flight, so the next windows travel while the decoder works.
    fn first_window(&self, i: usize) -> io::Result<Bytes> {
        let plan = &*self.plan;
        let chunk = plan.chunks[i];
        let held = self.take_ahead(chunk.start);
        let bytes = match held {
            Some(bytes) => bytes,
            None => match self.join_next(chunk.start)? {
                Some(bytes) => bytes,
                None => {
                    let spans = self.group_from(i);
                    let mut parts = self.value.read_spans(&spans)?.into_iter();
                    let first = parts.next().unwrap_or_default();
                    self.keep_ahead(chunk.start, spans[1..].iter().zip(parts));
                    first
                }
            },
        };
        self.prefetch_after(i);
        Ok(bytes)
    }

    /// The first window of each planned chunk from `i` on (chunk `i`'s first, and the same
    /// chunk start once), up to the plan's `prefetch` bytes.
    fn group_from(&self, i: usize) -> Vec<(u64, u64)> {
        let plan = &*self.plan;
        let window = |c: &PlannedChunk| (c.start, c.end.min(c.start.saturating_add(CHUNK_WINDOW)));
        let mut spans = vec![window(&plan.chunks[i])];
        let mut bytes = spans[0].1 - spans[0].0;
        for c in &plan.chunks[i + 1..] {
            let span = window(c);
            if spans.iter().any(|s| s.0 == c.start) || span.1 <= span.0 {
                continue;
            }
            bytes = bytes.saturating_add(span.1 - span.0);
            if bytes > plan.prefetch {
                break;
            }
            spans.push(span);
        }
        spans
    }

    /// The window fetched ahead for the chunk starting at `start`, taken; windows of chunks
    /// before it (the decoder reads row groups in file order) are dropped.
    fn take_ahead(&self, start: u64) -> Option<Bytes> {
        let mut ahead = self
            .plan
            .ahead
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *ahead = ahead.split_off(&start);
        ahead.remove(&start)
    }

    /// Keep windows fetched ahead, dropping those of chunks before `start`.
    fn keep_ahead<'a>(&self, start: u64, parts: impl Iterator<Item = (&'a (u64, u64), Bytes)>) {
        let mut ahead = self
            .plan
            .ahead
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *ahead = ahead.split_off(&start);
        for (span, part) in parts {
            ahead.insert(span.0, part);
        }
    }

    /// When the group in flight holds the window of the chunk starting at `start`: wait for
    /// it, keep its other windows, and return that one.
    fn join_next(&self, start: u64) -> io::Result<Option<Bytes>> {
        let mut next = self
            .plan
            .next
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(group) = next.take_if(|group| group.spans.iter().any(|s| s.0 == start)) else {
            return Ok(None);
        };
        drop(next);
        let parts = group
            .fetch
            .join()
            .map_err(|_| io::Error::other("the thread reading ahead stopped"))??;
        self.keep_ahead(start, group.spans.iter().zip(parts));
        Ok(self.take_ahead(start))
    }

    /// Start fetching the group after the windows held (or in flight) once fewer than half a
    /// group's bytes are held, unless a group is in flight already.
    fn prefetch_after(&self, i: usize) {
        let plan = &*self.plan;
        let mut next = plan.next.lock().unwrap_or_else(PoisonError::into_inner);
        if next
            .as_ref()
            .is_some_and(|group| !group.fetch.is_finished())
            || next.as_ref().is_some_and(|group| {
                group
                    .spans
                    .last()
                    .is_some_and(|s| s.0 > plan.chunks[i].start)
            })
        {
            return;
        }
        let (held, last) = {
            let ahead = plan.ahead.lock().unwrap_or_else(PoisonError::into_inner);
            let held: usize = ahead.values().map(Bytes::len).sum();
            (held as u64, ahead.keys().next_back().copied())
        };
        if held > plan.prefetch / 2 {
            return;
        }
        let after = last.unwrap_or(plan.chunks[i].start);
        let first = plan.chunks.partition_point(|c| c.start <= after);
        if first >= plan.chunks.len() {
            return;
        }
        let spans = self.group_from(first);
        let value = self.value.clone();
        let fetching = spans.clone();
        let spawned = std::thread::Builder::new()
            .name("neurochunk-parquet-ahead".into())
            .spawn(move || value.read_spans(&fetching));
        // Without a thread, the windows are fetched when the decoder gets to them.
        if let Ok(fetch) = spawned {
            *next = Some(Prefetch { spans, fetch });
        }
    }

    /// Bytes from `start`: at least `min_len` of them unless the value ends first, more when
    /// a window (inside a planned chunk) or `read_ahead` (elsewhere) reaches further.
    fn fetch(&self, start: u64, min_len: u64, read_ahead: u64) -> io::Result<Bytes> {
        let end = start.saturating_add(min_len);
        if let Some(PlannedChunk {
            end: chunk_end,
            slot,
            ..
        }) = self.plan.find(start).filter(|c| end <= c.end)
        {
            let mut window = self.plan.windows[slot]
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (w_start, bytes) = &*window;
            if *w_start <= start && end <= w_start + bytes.len() as u64 {
                return Ok(bytes.slice((start - w_start) as usize..));
            }
            let len = (chunk_end - start).min(min_len.max(CHUNK_WINDOW));
            let chunk = self.plan.chunks.partition_point(|c| c.start <= start) - 1;
            let first = &self.plan.chunks[chunk];
            let bytes = if start == first.start
                && len == (chunk_end - start).min(CHUNK_WINDOW)
                && self.plan.prefetch > CHUNK_WINDOW
            {
                self.first_window(chunk)?
            } else {
                self.value.read_at(start, len)?
            };
            *window = (start, bytes.clone());
            return Ok(bytes);
        }
        self.value.read_at(start, min_len.max(read_ahead))
    }
}

impl ParquetChunks {
    /// An error when the page header at `start` of `chunk` claims sizes its page cannot
    /// have ([`PageLimits`]). The header is read from the column's window, which the
    /// decoder reads next, so the check costs no request of its own.
    fn check_page_header(&self, start: u64, chunk: &PlannedChunk) -> parquet::errors::Result<()> {
        /// Enough for any page header but one with very large statistics (then read whole).
        const HEADER_READ: u64 = 4096;
        let rest = chunk.end - start;
        let bytes = self.fetch(start, HEADER_READ.min(rest), 0)?;
        let mut facts = page_header::read_page_header(&bytes);
        if facts.is_none() && (bytes.len() as u64) < rest {
            // A header longer than the first read (large statistics): read the rest of the
            // chunk, which the decoder reads next anyway.
            facts = page_header::read_page_header(&self.fetch(start, rest, 0)?);
        }
        // A header this reader cannot read is one the decoder would misread or fail on:
        // refused rather than trusted.
        let Some(facts) = facts else {
            return Err(ParquetError::General(format!(
                "column chunk at offset {}, page at offset {start}: the page header cannot be \
                 read (corrupt, or cut short by the end of the column chunk)",
                chunk.start
            )));
        };
        match chunk.limits.refuse(&facts) {
            Some(why) => Err(ParquetError::General(format!(
                "column chunk at offset {}, page at offset {start}: {why}",
                chunk.start
            ))),
            None => Ok(()),
        }
    }
}

impl Length for ParquetChunks {
    fn len(&self) -> u64 {
        self.value.size
    }
}

impl ChunkReader for ParquetChunks {
    type T = ChunkRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<ChunkRead> {
        // Inside a planned column chunk, the decoder reads a page header here, and trusts its
        // sizes for allocations before it reads the page: check them first.
        if let Some(chunk) = self.plan.find(start) {
            self.check_page_header(start, &chunk)?;
        }
        Ok(ChunkRead {
            chunks: self.clone(),
            pos: start,
            buf: Bytes::new(),
            reads_at_end: 0,
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let bytes = self.fetch(start, length as u64, 0)?;
        if bytes.len() < length {
            // As a file reports it.
            return Err(ParquetError::EOF(format!(
                "Expected to read {} bytes, read only {}",
                length,
                bytes.len()
            )));
        }
        Ok(bytes.slice(..length))
    }
}

/// The [`Read`] of [`ParquetChunks::get_read`] (page headers, the footer).
pub(crate) struct ChunkRead {
    chunks: ParquetChunks,
    pos: u64,
    buf: Bytes,
    /// Reads answered "end of value" so far.
    reads_at_end: u32,
}

/// Reads at the end of the value [`ChunkRead`] answers with 0 bytes before it fails: the
/// parquet crate's Thrift reader skips bytes with `io::copy`, which stops quietly at the end,
/// so a corrupt list of 2^31 fixed-size elements in a page header would otherwise be skipped
/// element by element past the end of the file (minutes of work for a 4 KiB input).
const READS_AT_END: u32 = 16;

impl Read for ChunkRead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        if self.buf.is_empty() {
            self.buf = self.chunks.fetch(self.pos, 1, FOOTER_READ_AHEAD)?;
            if self.buf.is_empty() {
                self.reads_at_end += 1;
                if self.reads_at_end > READS_AT_END {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "a length in the file reaches past its end (offset {})",
                            self.pos
                        ),
                    ));
                }
                return Ok(0);
            }
        }
        let n = out.len().min(self.buf.len());
        out[..n].copy_from_slice(&self.buf[..n]);
        self.buf = self.buf.slice(n..);
        self.pos += n as u64;
        Ok(n)
    }
}
