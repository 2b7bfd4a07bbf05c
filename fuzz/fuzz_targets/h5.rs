//! HDF5 files: the reader's whole-file walk (`neurochunk_h5::fuzz_parse`: every object, link,
//! attribute, chunk index and small dataset), then the file opened as an NWB file through its
//! Zarr view (`Hdf5Store`: attributes, references, links and small datasets mapped), every
//! array's corner read through the engine and the NWB layer's links and references listed.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use neurochunk::array::{walk_nodes, OpenOptions};
use neurochunk::hdf5::Hdf5Store;
use neurochunk::nwb::{FileLocation, NwbFile, ReadOptions};
use neurochunk::store::{Bytes, MemoryStore};
use neurochunk::{Array, NodeMetadata, Store};
use neurochunk_fuzz::read_corner;

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    neurochunk::hdf5::h5::fuzz_parse(data);
    let file = MemoryStore::new();
    if file.set("f.nwb", Bytes::copy_from_slice(data)).is_err() {
        return;
    }
    let Ok(view) = Hdf5Store::open(Arc::new(file), "f.nwb", "fuzz.nwb") else {
        return;
    };
    let store: Arc<dyn Store> = Arc::new(view);
    if let Ok(nodes) = walk_nodes(store.as_ref(), "", &OpenOptions::default()) {
        for node in nodes.iter().take(64) {
            if let Ok(NodeMetadata::Array(_)) = &node.metadata {
                if let Ok(array) = Array::open(store.clone(), &node.path) {
                    read_corner(&array);
                }
            }
        }
    }
    let location = FileLocation::named(store, "", "fuzz.nwb");
    if let Ok(file) = NwbFile::open_location(location, ReadOptions::default()) {
        let _ = file.links();
        let _ = file.attribute_references();
        let _ = file.dataset_references();
    }
});
