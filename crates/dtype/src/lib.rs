//! Zarr's data type model for neurochunk.
//!
//! This crate describes *what one element is*: its kind, size and layout in memory, how it is
//! named in Zarr v2 (`dtype`) and Zarr v3 (`data_type`) metadata, how fill values are spelled in
//! JSON for each format, and how a user-given name resolves to a type (the registry). It also
//! holds the JSON helpers every metadata writer needs (lenient parsing of bare `NaN`,
//! Python-compatible output) and NumPy `.npy` file IO.
//!
//! It knows nothing about chunks, codecs or storage.
//!
//! Modules: [`v2`] (`.zarray` `dtype` and `fill_value`), [`v3`] (`zarr.json` `data_type` and
//! `fill_value`, plus [`DataType::from_v3_json`] / [`DataType::to_v3_json`]), [`registry`]
//! (name resolution and custom types), [`json`] (lenient parsing, Python-identical writing),
//! [`npy`] (NumPy `.npy` files). Errors are [`DtypeError`]s that say what was found and what
//! was expected.
//!
//! In-memory layout: every fixed-size element is stored packed and **little-endian**
//! (the layout of the platforms we build for); endianness on disk is the business of the
//! `bytes` codec, which calls [`DataType::swap_endian_in_place`]. Variable-length strings and
//! bytes have no fixed size: their elements live in an offsets + data buffer (see
//! `neurochunk-codec`'s `ArrayBytes`).

#[cfg(not(target_endian = "little"))]
compile_error!("neurochunk assumes a little-endian host");

mod error;
mod fill;
pub mod json;
mod names;
pub mod npy;
pub mod registry;
mod types;
pub mod v2;
pub mod v3;

pub use error::DtypeError;
pub use registry::{register_default, resolve, with_default_registry, DataTypeRegistry};
pub use types::*;
