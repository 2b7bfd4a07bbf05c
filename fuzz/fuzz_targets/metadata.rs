//! Metadata documents of every format, and consolidated metadata: parse, walk the hierarchy,
//! open each array and read its corner (no chunks are stored, so reads decode fill values).
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::array::{walk_documents, walk_nodes, OpenOptions};
use neurochunk::{Array, NodeMetadata};
use neurochunk_fuzz::{read_corner, store_with, Framed};

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Some(input) = Framed::split(data) else {
        return;
    };
    let (doc, extra) = (input.document, input.payload);
    let store = match input.selector % 5 {
        0 => store_with(&[(".zarray", doc), (".zattrs", extra)]),
        1 => store_with(&[(".zgroup", br#"{"zarr_format": 2}"#), (".zmetadata", doc)]),
        2 => store_with(&[("zarr.json", doc)]),
        3 => store_with(&[("attributes.json", doc)]),
        _ => store_with(&[
            ("attributes.json", br#"{"n5": "4.0.0"}"#),
            ("d/attributes.json", doc),
        ]),
    };
    let _ = walk_documents(store.as_ref(), "");
    if let Ok(nodes) = walk_nodes(store.as_ref(), "", &OpenOptions::default()) {
        for node in nodes {
            if let Ok(NodeMetadata::Array(_)) = &node.metadata {
                if let Ok(array) = Array::open(store.clone(), &node.path) {
                    read_corner(&array);
                }
            }
        }
    }
});
