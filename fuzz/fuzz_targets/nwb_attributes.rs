//! NWB attributes on Zarr: the framed document is the root group's attributes and the payload
//! the attributes of a dataset `/x` (links, object and region references, `zarr_dtype`,
//! `neurodata_type`, ...), in the legacy (Zarr v2) or the v3 convention (selector). The file
//! is opened, inventoried and checked, and every link and reference it claims is followed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::nwb::{check, Inventory, NwbFile, ReadOptions};
use neurochunk_fuzz::{store_with, Framed};
use serde_json::{json, Map, Value};

const V2_DATASET: &[u8] = br#"{"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<i8",
    "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#;

/// A v3 document of `node_type` with the fuzzed attributes (`{}` when they are not a JSON
/// object: the attributes are the point, not the document's syntax).
fn v3_document(base: Value, attributes: &[u8]) -> Vec<u8> {
    let attributes = serde_json::from_slice::<Map<String, Value>>(attributes).unwrap_or_default();
    let mut doc = base;
    doc["attributes"] = Value::Object(attributes);
    serde_json::to_vec(&doc).unwrap_or_default()
}

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Some(input) = Framed::split(data) else {
        return;
    };
    let store = if input.selector % 2 == 0 {
        store_with(&[
            (".zgroup", br#"{"zarr_format": 2}"#),
            (".zattrs", input.document),
            ("x/.zarray", V2_DATASET),
            ("x/.zattrs", input.payload),
        ])
    } else {
        let root = v3_document(
            json!({"zarr_format": 3, "node_type": "group"}),
            input.document,
        );
        let x = v3_document(
            json!({"zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "int64",
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
                   "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
                   "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}),
            input.payload,
        );
        store_with(&[("zarr.json", &root), ("x/zarr.json", &x)])
    };
    let Ok(file) = NwbFile::open_store(store, "", ReadOptions::default()) else {
        return;
    };
    let _ = Inventory::of(&file);
    let _ = check(&file);
    let _ = file.links();
    let _ = file.attribute_references();
    let _ = file.dataset_references();
    let _ = file.attributes("/");
    let _ = file.attributes("/x");
    let _ = file.read_dataset("/x", None);
    let _ = file.specifications();
});
