//! The restricted pickle reader, under both allow-lists: it must never run code, never panic
//! and never allocate what the input merely claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::pickle::{decode_object_array, decode_value, AllowList};

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    for allow in [AllowList::numpy(), AllowList::hdmf_zarr()] {
        let _ = decode_object_array(data, &allow);
        let _ = decode_value(data, &allow);
    }
});
