//! `.npy` headers (magic, version, header length, the Python dict of `descr`, `fortran_order`
//! and `shape`), and the data type descriptions they carry.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::dtype::npy::read_npy_header;

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let _ = read_npy_header(&mut &data[..]);
});
