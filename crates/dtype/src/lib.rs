#![warn(missing_docs)]
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
//! ```
//! use serde_json::json;
//! use neurochunk_dtype::DataType;
//!
//! // A Zarr v3 `data_type` and a Zarr v2 `dtype` naming the same structured type.
//! let v3 = DataType::from_v3_json(&json!({"name": "struct", "configuration": {"fields": [
//!     {"name": "t", "data_type": "float64"}, {"name": "id", "data_type": "uint32"}]}})).unwrap();
//! let (v2, _) = neurochunk_dtype::v2::dtype_from_json(&json!([["t", "<f8"], ["id", "<u4"]]), None).unwrap();
//! // Zarr v2 records each field's byte order; Zarr v3 has one for the whole element.
//! assert!(v2.has_field_byte_orders());
//! assert_eq!(v3, v2.without_field_byte_orders());
//! assert_eq!(v3.fixed_size(), Some(12));
//! ```
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
