//! Every codec's decoder, through the array layer: a small array described by the framed
//! document (a Zarr v2 `.zarray`, a Zarr v3 `zarr.json` or an N5 `attributes.json`, chosen by
//! the selector) whose first chunk (or shard, or block) is the payload. The seeds cover every
//! codec: blosc, zstd, gzip, zlib, bz2, lzma, lz4, crc32c, the v2 filters, sharding with its
//! index, vlen strings and bytes, json2, pickle, and N5 blocks in default and varlength mode.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::Array;
use neurochunk_fuzz::{read_small_or_corner, store_with, Framed};


fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Some(input) = Framed::split(data) else {
        return;
    };
    let document = match input.selector % 3 {
        0 => ".zarray",
        1 => "zarr.json",
        _ => "attributes.json",
    };
    let store = store_with(&[(document, input.document)]);
    let Ok(array) = Array::open(store.clone(), "") else {
        return;
    };
    let origin = vec![0; array.shape().len()];
    let key = array.chunk_key(&origin);
    if store
        .set(&key, neurochunk::Bytes::copy_from_slice(input.payload))
        .is_err()
    {
        return;
    }
    read_small_or_corner(&array);
});
