//! Neuroglancer precomputed annotations: a framed input whose document is an annotation
//! collection's `info` and whose payload is one stored index file, placed by the selector:
//! `0` the id index entry `by_id/5`, `1` the related-object entry `rel/5` of the first
//! relationship, `2` the spatial cell `spatial0/0_0_0`, `3` a shard file `by_id/0.shard`
//! (keys as the `info` names them; the payload is also decoded directly as a single and a
//! multiple annotation encoding). Runs the `info` parser, both decoders, the shard reader and
//! the conversion into a table; a grid of more than 4096 cells is not walked cell by cell.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use neurochunk::array::precomputed::annotation::{AnnotationCollection, AnnotationInfo};
use neurochunk::table::annotation::{annotations_to_batch, AnnotationImportOptions};
use neurochunk::{Bytes, MemoryStore, Store};
use neurochunk_fuzz::Framed;

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Some(input) = Framed::split(data) else {
        return;
    };
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(input.document) else {
        return;
    };
    let Ok(info) = AnnotationInfo::parse(&doc, "an") else {
        return;
    };
    let _ = info.decode_one(input.payload, 5);
    let _ = info.decode_list(input.payload);
    let _ = info.to_json();
    let dir = match input.selector & 3 {
        0 | 3 => info.by_id.key.clone(),
        1 => match info.relationships.first() {
            Some(r) => r.index.key.clone(),
            None => return,
        },
        _ => match info.spatial.first() {
            Some(l) => l.index.key.clone(),
            None => return,
        },
    };
    let name = match input.selector & 3 {
        2 => "0_0_0",
        3 => "0.shard",
        _ => "5",
    };
    let store = Arc::new(MemoryStore::new());
    let key = format!("an/{}/{name}", dir.trim_matches('/'));
    if store
        .set("an/info", Bytes::copy_from_slice(input.document))
        .and_then(|()| store.set(&key, Bytes::copy_from_slice(input.payload)))
        .is_err()
    {
        return;
    }
    let Ok(collection) = AnnotationCollection::open(store, "an") else {
        return;
    };
    let _ = collection.get(5);
    let _ = collection.related(0, 5);
    let cells: u64 = info
        .spatial
        .iter()
        .map(|l| l.grid_shape.iter().fold(1u64, |a, &g| a.saturating_mul(g)))
        .fold(0u64, u64::saturating_add);
    if cells <= 4096 {
        let options = AnnotationImportOptions {
            context: "urn:fuzz".into(),
            space: None,
            table: None,
        };
        let _ = annotations_to_batch(&collection, "an", &options);
    }
});
