//! What the fuzz targets share: the layout of a framed input and a bounded read.
//!
//! A framed input is `selector (1 byte) | document length (u16, little-endian) | document |
//! payload`. The selector picks what the document is (e.g. a Zarr v2 `.zarray` or an N5
//! `attributes.json`); the payload is the rest (a chunk, attributes). Seeds in this layout are
//! written by the `fuzz_seeds` example of the `neurochunk` crate.

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
