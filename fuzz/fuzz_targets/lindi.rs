//! LINDI reference files (`.lindi.json`): `LindiStore::from_slice` over the bytes (byte ranges
//! resolve against an empty directory, so none can be read), every key read, the hierarchy
//! walked, each array opened and its corner read, and the file opened as an NWB file.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use neurochunk::array::{walk_nodes, OpenOptions};
use neurochunk::nwb::{NwbFile, ReadOptions};
use neurochunk::store::LindiStore;
use neurochunk::{Array, NodeMetadata, Store};
use neurochunk_fuzz::read_corner;

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let base = neurochunk_fuzz::empty_dir();
    let Ok(store) = LindiStore::from_slice("fuzz.lindi.json", data, &base, &[]) else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(store);
    if let Ok(keys) = store.list_prefix("") {
        for key in keys.iter().take(256) {
            let _ = store.get(key);
        }
    }
    if let Ok(nodes) = walk_nodes(store.as_ref(), "", &OpenOptions::default()) {
        for node in nodes.iter().take(64) {
            if let Ok(NodeMetadata::Array(_)) = &node.metadata {
                if let Ok(array) = Array::open(store.clone(), &node.path) {
                    read_corner(&array);
                }
            }
        }
    }
    if let Ok(file) = NwbFile::open_store(store, "", ReadOptions::default()) {
        let _ = file.links();
        let _ = file.attribute_references();
        let _ = file.dataset_references();
    }
});
