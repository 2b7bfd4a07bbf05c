//! The built-in codecs, one module per family.

pub mod blosc;
pub mod bytes;
pub mod bz2;
pub mod categorize;
pub mod checksum;
pub mod deflate;
pub mod filters;
pub mod json2;
pub mod lossy;
pub mod lz4;
pub mod n5_lz4;
pub mod neuroglancer;
pub mod pcodec;
pub mod pickle;
pub mod shuffle;
pub mod transpose;
pub mod vlen;
pub mod vlen_array;
pub mod xz;
pub mod zfpy;
pub mod zstd;
