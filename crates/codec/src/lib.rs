//! Codec pipelines for neurochunk.
//!
//! A chunk goes from an N-d array of elements to stored bytes through a chain of codecs, as in
//! Zarr v3: zero or more array→array codecs ([`ArrayToArrayCodec`]), exactly one array→bytes
//! codec ([`ArrayToBytesCodec`]) and zero or more bytes→bytes codecs ([`BytesToBytesCodec`]).
//! Zarr v2 `order`/`filters`/`compressor` and N5 compressions are mapped onto the same chain.
//!
//! This crate knows element types (from `neurochunk-dtype`) but nothing about stores, keys or
//! array metadata documents beyond the codec JSON itself.

mod api;

pub use api::*;
