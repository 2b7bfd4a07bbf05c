//! SWC text: the parser, the tree checks, and the conversion into a skeletons table.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use neurochunk::table::swc::{parse_swc, swc_to_batch, SwcImportOptions};

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.swc");
    let Ok(file) = parse_swc(text, path) else {
        return;
    };
    let _ = file.tree_problems();
    let options = SwcImportOptions {
        context: "urn:fuzz".into(),
        allow_invalid: true,
        ..Default::default()
    };
    let _ = swc_to_batch(&[(PathBuf::from(path), file)], &options);
});
