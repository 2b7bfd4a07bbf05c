#![warn(missing_docs)]
//! NWB / HDMF on Zarr: read and write files in both hdmf-zarr conventions — the legacy Zarr v2
//! one (`zarr_dtype`, `zarr_link`, one-element scalars, JSON or pickled references) and the
//! Zarr v3 one (`_DTYPE`, `_LINKS`, `_REFERENCE`, 0-d scalars, path-string references).
//!
//! The layer reads and writes through the [`Store`](neurochunk_store::Store) trait only: a file
//! is a prefix of a store ([`FileLocation`]), named in errors by a display name (a path, a URL,
//! a prefix).
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
pub mod reference;
pub mod specs;
pub mod values;
pub mod write;

pub use convention::Convention;
pub use convert::{convert_file, convert_into, ConvertSummary};
pub use error::{HdmfError, HdmfResult};
pub use file::{
    json2_reference_objects, reference_source_adapter, AttributeRef, AttributeValue,
    CachedNamespace, DatasetRef, ExternalResolver, FileLocation, Link, NwbFile, ReadOptions,
    StoreResolver, Target, TypedObject,
};
pub use fs::FsResolver;
pub use index::NodeKind;
pub use inspect::{check, Inventory, Problem};
pub use reference::{Reference, Region, RegionSlice};
pub use specs::{cached_namespaces, load_namespace_file, parse_namespaces};
pub use values::{to_npy, CompoundField, Dataset, DatasetValue, FieldKind, FieldValue};
pub use write::{DatasetOptions, NamespaceDocs, NwbWriter, TypeInfo, WriteOptions};
