//! Neuroglancer precomputed skeletons: a framed input whose document is a skeleton layer's
//! `info` and whose payload is one stored segment (selector even: the file `5`, or `5.gz` when
//! bit 1 is set) or one shard file `0.shard` (selector odd). Runs the `info` parser, the
//! skeleton decoder, the shard reader, and the conversion into a skeletons table (parents from
//! the edges, fragments per tree).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use neurochunk::array::precomputed::skeleton::{Skeleton, SkeletonInfo, SkeletonLayer};
use neurochunk::table::precomputed::{
    parents_from_edges, skeletons_to_batch, PrecomputedImportOptions,
};
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
    if let Ok(info) = SkeletonInfo::parse(&doc, "sk") {
        if let Ok(skeleton) = Skeleton::decode(input.payload, &info.vertex_attributes) {
            let _ = parents_from_edges(skeleton.vertices.len(), &skeleton.edges);
        }
    }
    let store = Arc::new(MemoryStore::new());
    let key = match (input.selector & 1, input.selector & 2) {
        (1, _) => "sk/0.shard",
        (_, 2) => "sk/5.gz",
        _ => "sk/5",
    };
    if store
        .set("sk/info", Bytes::copy_from_slice(input.document))
        .and_then(|()| store.set(key, Bytes::copy_from_slice(input.payload)))
        .is_err()
    {
        return;
    }
    let Ok(layer) = SkeletonLayer::open(store, "sk") else {
        return;
    };
    let _ = layer.segment_ids();
    let _ = layer.read(5);
    let options = PrecomputedImportOptions {
        context: "urn:fuzz".into(),
        space: None,
    };
    let _ = skeletons_to_batch(&layer, "sk", &options);
});
