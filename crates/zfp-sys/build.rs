//! Compiles the vendored zfp 1.0.0 C library (`zfp/`) into a static library with the `cc`
//! crate. Only a C compiler is needed: the Rust declarations in `src/lib.rs` are written by
//! hand, so there is no bindgen and no libclang, and no system zfp is looked for.
//!
//! The library is built serial (no OpenMP, no CUDA) with zfp's default build options, as
//! zfp's CMake and Makefile builds configure it by default: 64-bit bit-stream words, no
//! rounding, no strided bit streams.

use std::path::{Path, PathBuf};

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("zfp");
    let src = root.join("src");

    // The library's translation units are the .c files directly in zfp/src; those under
    // src/template and src/share are #included by them.
    let mut units: Vec<PathBuf> = std::fs::read_dir(&src)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", src.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|ext| ext == "c"))
        .collect();
    units.sort();
    // zfp.c, bitstream.c and an encoder and a decoder per dimensionality (1-4) and scalar type
    // (int32, int64, float, double).
    assert!(
        units.iter().any(|p| p.ends_with("zfp.c")) && units.len() >= 2 + 2 * 4 * 4,
        "the vendored zfp sources in {} are incomplete",
        src.display()
    );

    cc::Build::new()
        .files(&units)
        .include(root.join("include"))
        // zfp is always built optimised (as its own builds do), also in debug profiles:
        // -O3 with GCC/Clang, /O2 with MSVC.
        .opt_level(3)
        // Third-party code: its compiler warnings are not this workspace's to fix.
        .warnings(false)
        .compile("zfp");

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=zfp");
}
