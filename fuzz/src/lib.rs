//! What the fuzz targets share: the layout of a framed input and a bounded read.
//!
//! A framed input is `selector (1 byte) | document length (u16, little-endian) | document |
//! payload`. The selector picks what the document is (e.g. a Zarr v2 `.zarray` or an N5
//! `attributes.json`); the payload is the rest (a chunk, attributes). Seeds in this layout are
//! written by the `fuzz_seeds` example of the `neurochunk` crate.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use neurochunk::array::Selection;
use neurochunk::{Array, Bytes, MemoryStore, Store};

/// The parts of a framed input.
pub struct Framed<'a> {
    /// What the document is; each target reads it modulo its number of cases.
    pub selector: u8,
    /// The document (metadata, attributes).
    pub document: &'a [u8],
    /// The rest of the input.
    pub payload: &'a [u8],
}

impl<'a> Framed<'a> {
    /// Split an input; `None` when it is too short to hold the frame.
    pub fn split(data: &'a [u8]) -> Option<Self> {
        let (&selector, rest) = data.split_first()?;
        if rest.len() < 2 {
            return None;
        }
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        let rest = &rest[2..];
        let document = rest.get(..len)?;
        Some(Framed {
            selector,
            document,
            payload: &rest[len..],
        })
    }

    /// The frame of `document` and `payload` (what the seed writer uses).
    pub fn join(selector: u8, document: &[u8], payload: &[u8]) -> Vec<u8> {
        let len = u16::try_from(document.len()).expect("documents of seeds are small");
        let mut out = Vec::with_capacity(3 + document.len() + payload.len());
        out.push(selector);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(document);
        out.extend_from_slice(payload);
        out
    }
}

/// A memory store holding `entries`.
pub fn store_with(entries: &[(&str, &[u8])]) -> Arc<dyn Store> {
    let store = MemoryStore::new();
    for (key, value) in entries {
        store
            .set(key, Bytes::copy_from_slice(value))
            .expect("keys of the targets are valid");
    }
    Arc::new(store)
}

/// An empty directory (created once): what the `lindi` target resolves byte ranges against,
/// so that no range can read a file.
pub fn empty_dir() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir =
            std::env::temp_dir().join(format!("neurochunk-fuzz-empty-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        dir.canonicalize().unwrap_or(dir)
    })
    .clone()
}

/// Arrays up to this many elements are read whole by [`read_small_or_corner`].
pub const WHOLE_READ_LIMIT: u64 = 1 << 16;

/// Read the whole array when it is small (at most [`WHOLE_READ_LIMIT`] elements), else only
/// its corner ([`read_corner`]).
pub fn read_small_or_corner(array: &Array) {
    let elements = array
        .shape()
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d));
    match elements {
        Some(n) if n <= WHOLE_READ_LIMIT => {
            let _ = array.read_all();
        }
        _ => read_corner(array),
    }
}

/// Read at most 4 elements along each axis from the array's origin: whatever the metadata
/// declares, the output is small, so any large allocation is the library's doing.
pub fn read_corner(array: &Array) {
    let shape = array.shape().to_vec();
    let start = vec![0; shape.len()];
    let extent: Vec<u64> = shape.iter().map(|&d| d.min(4)).collect();
    let _ = array.read(&Selection::from_box(&start, &extent));
}

/// Let panics inside the arrow and parquet decoders unwind to the table layer, which turns them
/// into errors naming the file (`neurochunk_table::io::decoder_panic_is_caught`); any other panic
/// still ends the run as a crash. libFuzzer's hook aborts on every panic, so this wraps it,
/// once, from inside the first run.
pub fn allow_caught_decoder_panics() {
    apply_heap_cap();
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let crash = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !neurochunk::table::io::decoder_panic_is_caught() {
                crash(info);
            }
        }));
    });
}

/// The allocator of every target: the system allocator, counting the bytes live at once.
///
/// libFuzzer's `-rss_limit_mb` reads the process's peak RSS once a second, so a short spike is
/// blamed on whichever input runs when it is noticed, often not the one that made it. With
/// `NEUROCHUNK_FUZZ_HEAP_MB=N` in the environment, the allocation that takes the live heap past
/// N MiB aborts at once instead, and libFuzzer saves the input that asked for it.
#[global_allocator]
static HEAP: CappedHeap = CappedHeap;

/// See [`HEAP`].
pub struct CappedHeap;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);
/// The cap in bytes; `usize::MAX` until [`apply_heap_cap`] reads the environment.
static CAP_BYTES: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Read `NEUROCHUNK_FUZZ_HEAP_MB` (once; called by [`allow_caught_decoder_panics`] and the
/// targets' set-up).
pub fn apply_heap_cap() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if let Some(mb) = std::env::var("NEUROCHUNK_FUZZ_HEAP_MB")
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
        {
            CAP_BYTES.store(mb.saturating_mul(1 << 20), Ordering::Relaxed);
        }
    });
}

impl CappedHeap {
    fn grow(&self, by: usize) {
        let live = LIVE_BYTES
            .fetch_add(by, Ordering::Relaxed)
            .saturating_add(by);
        if live > CAP_BYTES.load(Ordering::Relaxed) {
            // No allocation from here on: a fixed message, then the abort libFuzzer reports.
            let _ = std::io::Write::write_all(
                &mut std::io::stderr(),
                b"neurochunk-fuzz: the live heap passed NEUROCHUNK_FUZZ_HEAP_MB\n",
            );
            std::process::abort();
        }
    }

    fn shrink(&self, by: usize) {
        LIVE_BYTES.fetch_sub(by, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to the system allocator with the same arguments; the
// counters only observe the sizes.
unsafe impl GlobalAlloc for CappedHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.grow(layout.size());
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.grow(layout.size());
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.shrink(layout.size());
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            self.grow(new_size - layout.size());
        } else {
            self.shrink(layout.size() - new_size);
        }
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
