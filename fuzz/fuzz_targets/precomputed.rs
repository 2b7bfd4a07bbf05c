//! Neuroglancer precomputed scales: a layer's `info` (the document) and the file of its first
//! chunk or its shard (the payload), read through the array layer. Even selectors store the
//! payload as the chunk file of the scale `s` at the grid's origin (every encoding: raw,
//! compressed_segmentation, jpeg, png; `.gz` files when the selector's second bit is set), odd
//! ones as the shard file `s/0.shard` (shard and minishard indexes, raw or gzip). The seeds are
//! layers the library wrote, sharded and unsharded, in each encoding.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::Array;
use neurochunk_fuzz::{read_small_or_corner, store_with, Framed};


fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Some(input) = Framed::split(data) else {
        return;
    };
    let store = store_with(&[("info", input.document)]);
    let Ok(array) = Array::open(store.clone(), "s") else {
        return;
    };
    let key = if input.selector % 2 == 1 {
        "s/0.shard".to_string()
    } else {
        let origin = vec![0; array.shape().len()];
        let chunk = array.chunk_key(&origin);
        match input.selector & 2 {
            0 => chunk,
            _ => format!("{chunk}.gz"),
        }
    };
    if store
        .set(&key, neurochunk::Bytes::copy_from_slice(input.payload))
        .is_err()
    {
        return;
    }
    read_small_or_corner(&array);
});
