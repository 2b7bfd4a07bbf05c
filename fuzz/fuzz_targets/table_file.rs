//! neurarrow tables: the input is an Arrow IPC or a Parquet file (by its magic bytes), opened
//! from a memory store and run through the whole validator (schema, metadata, rows, trees).
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::table::io::TableSource;
use neurochunk::table::validate::{validate_source, ValidateOptions};
use neurochunk_fuzz::{allow_caught_decoder_panics, store_with};

fuzz_target!(|data: &[u8]| {
    allow_caught_decoder_panics();
    let key = if data.starts_with(b"PAR1") {
        "t.skeletons.parquet"
    } else {
        "t.skeletons.arrow"
    };
    let store = store_with(&[(key, data)]);
    if let Ok(source) = TableSource::open_store(store, key) {
        let _ = validate_source(&source, &ValidateOptions::default());
    }
});
