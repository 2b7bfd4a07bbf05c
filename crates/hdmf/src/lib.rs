#![warn(missing_docs)]
//! NWB / HDMF on Zarr: read and write files in both hdmf-zarr conventions — the legacy Zarr v2
//! one (`zarr_dtype`, `zarr_link`, one-element scalars, JSON or pickled references) and the
//! Zarr v3 one (`_DTYPE`, `_LINKS`, `_REFERENCE`, 0-d scalars, path-string references).
//!
//! The layer reads and writes through the [`Store`](neurochunk_store::Store) trait only: a file
//! is a prefix of a store ([`FileLocation`]), named in errors by a display name (a path, a URL,
//! a prefix).
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_dtype::DataType;
//! use neurochunk_hdmf::{
//!     AttributeValue, Convention, Dataset, DatasetOptions, DatasetValue, NwbFile, NwbWriter, ReadOptions,
//!     TypeInfo, WriteOptions,
//! };
//! use neurochunk_store::{MemoryStore, Store};
//! use serde_json::json;
//!
//! // Write a small NWB file in the Zarr v3 convention under a prefix of a memory store.
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let mut writer = NwbWriter::create_in(store.clone(), "session.nwb.zarr", Convention::V3,
//!                                       WriteOptions::default())?;
//! writer.root("2.8.0", &TypeInfo::new("core", "NWBFile"), &[])?;
//! writer.group("/acquisition/trace", Some(&TypeInfo::new("core", "TimeSeries")),
//!              &[("description".into(), AttributeValue::Value(json!("a short trace")))])?;
//! let samples = [0.5_f64, 1.5, -2.0];
//! let data = Dataset {
//!     shape: vec![samples.len()],
//!     scalar: false,
//!     value: DatasetValue::Numeric {
//!         data_type: DataType::Float64,
//!         bytes: samples.iter().flat_map(|v| v.to_le_bytes()).collect(),
//!     },
//! };
//! writer.dataset("/acquisition/trace/data", None, &data, &[], &DatasetOptions::default())?;
//! writer.link("/processing", "raw", "/acquisition/trace", ".")?;
//! writer.finish()?;
//!
//! // Open it from the store: typed objects, links and datasets.
//! let file = NwbFile::open_store(store, "session.nwb.zarr", ReadOptions::default())?;
//! assert_eq!(file.convention(), Convention::V3);
//! assert_eq!(file.nwb_version(), Some("2.8.0"));
//! let series = file.find_by_type("TimeSeries");
//! assert_eq!(series[0].path, "/acquisition/trace");
//! assert_eq!(file.resolve("/processing/raw/data")?.path, "/acquisition/trace/data");
//! assert_eq!(file.read_dataset("/processing/raw/data", None)?, data);
//! # Ok::<(), neurochunk_hdmf::HdmfError>(())
//! ```
//!
//! - [`NwbFile::open_store`] opens a file (from consolidated metadata in one read when present,
//!   through the array layer's [`walk_documents`](neurochunk_array::walk_documents)), walks its
//!   typed objects, follows links (also into other files, through an [`ExternalResolver`]:
//!   [`StoreResolver`] keeps them inside the same store), resolves object and region
//!   references and reads datasets and cached specifications.
//! - [`NwbWriter::create_in`] writes typed groups and datasets, links, references and
//!   specifications under an empty store prefix, with consolidated metadata at the end.
//! - [`convert_into`] moves a file between the conventions; [`demo`] writes a realistic
//!   extracellular-electrophysiology file ([`demo::write_demo_into`]).
//!
//! The filesystem conveniences sit on top ([`fs`]): [`NwbFile::open`] opens a directory with
//! [`FsResolver`] (external files confined to the file's directory unless allowed),
//! [`NwbWriter::create`] writes aside and publishes atomically at `finish`, and
//! [`convert_file`], [`demo::write_demo`] and [`load_namespace_file`] take paths.

pub mod convention;
pub mod convert;
pub mod demo;
pub mod error;
pub mod file;
pub mod fs;
mod index;
pub mod inspect;
mod interpret;
#[cfg(feature = "remote")]
pub mod location;
pub mod reference;
pub mod specs;
pub mod validate;
pub mod values;
pub mod write;

pub use convention::Convention;
pub use convert::{
    convert_file, convert_into, copy_into, ChunkChoice, CompressorChoice, ConvertSummary,
    CopyOptions,
};
pub use error::{HdmfError, HdmfResult};
pub use file::{
    json2_reference_objects, reference_source_adapter, AttributeRef, AttributeValue,
    CachedNamespace, Container, DatasetRef, ExternalResolver, FileLocation, FileOpener, Link,
    NwbFile, ReadOptions, ScopedStoreResolver, StoreResolver, Target, TypedObject,
};
pub use fs::FsResolver;
pub use index::NodeKind;
pub use inspect::{check, consolidated_problems, structure_problems, Inventory, Problem};
#[cfg(feature = "remote")]
pub use location::ExternalPolicy;
pub use neurochunk_store::Durability;
pub use reference::{Reference, Region, RegionSlice};
pub use specs::{cached_namespaces, load_namespace_file, parse_namespaces};
pub use values::{to_npy, CompoundField, Dataset, DatasetValue, FieldKind, FieldValue};
pub use write::{CopyLayout, DatasetOptions, NamespaceDocs, NwbWriter, TypeInfo, WriteOptions};
