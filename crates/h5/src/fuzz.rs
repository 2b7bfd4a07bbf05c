//! A whole-file walk over an in-memory file, for fuzzing.

use std::sync::Arc;

use neurochunk_store::{Bytes, MemoryStore, Store};

use crate::file::{H5File, Object, OpenOptions};
use crate::selection::Slice;

/// Datasets of at most this many bytes are read whole by [`fuzz_parse`].
const SMALL: u64 = 1 << 20;

/// Open `bytes` as an HDF5 file held in memory and walk everything: every object reachable
/// from the root, every link, every attribute's values, the chunk list of every chunked
/// dataset, and the values of every small dataset (and a corner of large ones). Errors are
/// expected on malformed input and ignored; the function must never panic and never allocate
/// beyond what the input's size justifies. A libFuzzer target calls it.
pub fn fuzz_parse(bytes: &[u8]) {
    let store = MemoryStore::new();
    if store.set("f.h5", Bytes::copy_from_slice(bytes)).is_err() {
        return;
    }
    let options = OpenOptions {
        page_size: 4096,
        initial_read: 4096,
        tail_read: 0,
        cache_bytes: 1 << 22,
        read_gap: 4096,
    };
    let Ok(file) = H5File::open_with(Arc::new(store), "f.h5", "fuzz.h5", options) else {
        return;
    };
    let _ = file.superblock_version();
    let Ok(objects) = file.walk() else {
        // Still try the root alone.
        if let Ok(root) = file.root() {
            let _ = root.links();
            if let Ok(attrs) = root.attributes() {
                for a in attrs {
                    let _ = a.values();
                }
            }
        }
        return;
    };
    for (path, obj) in objects.iter().take(10_000) {
        let _ = file.object(path);
        if let Ok(attrs) = obj.attributes() {
            for a in attrs {
                let _ = a.values();
                let _ = a.native();
            }
        }
        match obj {
            Object::Group(g) => {
                let _ = g.links();
            }
            Object::Dataset(d) => {
                let _ = d.chunks();
                let bytes = d.len().saturating_mul(d.dtype().size() as u64);
                if bytes <= SMALL {
                    let _ = d.read_values_all();
                } else {
                    let corner: Vec<Slice> = d
                        .shape()
                        .iter()
                        .enumerate()
                        .map(|(i, &n)| Slice::range(0, n.min(if i == 0 { 2 } else { 1 })))
                        .collect();
                    let _ = d.read_raw(&corner);
                }
            }
            Object::NamedType(t) => {
                let _ = t.dtype();
            }
        }
    }
}
