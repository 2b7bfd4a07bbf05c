//! NWB / HDMF on Zarr: read and write files in both hdmf-zarr conventions — the legacy Zarr v2
//! one (`zarr_dtype`, `zarr_link`, one-element scalars, JSON or pickled references) and the
//! Zarr v3 one (`_DTYPE`, `_LINKS`, `_REFERENCE`, 0-d scalars, path-string references).
//!
//! [`NwbFile`] opens a file (from consolidated metadata in one read when present), walks its
//! typed objects, follows links (also into other files, within the directories the caller
//! allows), resolves object and region references and reads datasets and cached
//! specifications. [`NwbWriter`] writes typed groups and datasets, links, references and
//! specifications and publishes the file atomically with consolidated metadata.
//! [`convert_file`] moves a file between the conventions; [`demo`] writes a realistic
//! extracellular-electrophysiology file.

pub mod convention;
pub mod convert;
pub mod demo;
pub mod error;
pub mod file;
mod index;
pub mod inspect;
pub mod reference;
pub mod specs;
pub mod values;
pub mod write;

pub use convention::Convention;
pub use convert::{convert_file, ConvertSummary};
pub use error::{HdmfError, HdmfResult};
pub use file::{
    AttributeRef, AttributeValue, CachedNamespace, DatasetRef, Link, NwbFile, ReadOptions, Target,
    TypedObject,
};
pub use index::NodeKind;
pub use inspect::{check, Inventory, Problem};
pub use reference::{Reference, Region, RegionSlice};
pub use specs::{cached_namespaces, load_namespace_file};
pub use values::{to_npy, CompoundField, Dataset, DatasetValue, FieldKind, FieldValue};
pub use write::{DatasetOptions, NamespaceDocs, NwbWriter, TypeInfo, WriteOptions};
