#![warn(missing_docs)]
//! NWB in HDF5 files (as pynwb's `NWBHDF5IO` writes them), read in place by the project's own
//! HDF5 reader ([`neurochunk_h5`], over any [`Store`](neurochunk_store::Store): local files
//! and objects at URLs alike, by ranged reads, with no C library; see `docs/hdf5.md`).
//!
//! - [`Hdf5Store`] shows an HDF5 file as an NWB file on Zarr (legacy hdmf-zarr convention):
//!   its documents are built from the file's metadata, and the chunks of numeric datasets are
//!   answered from the file when asked for. [`hdf5_files`] plugs it into
//!   [`NwbFile::open_any`](neurochunk_hdmf::NwbFile::open_any) and the external-link
//!   resolvers, so HDF5 files open wherever NWB files do; [`open_hdf5_location`] opens a path
//!   or URL as the view, for the commands that read any store.
//! - [`import_file`] / [`import_into`] / [`import::import_store`] copy an HDF5 file into
//!   either hdmf-zarr convention through the view: every HDMF construct is carried over
//!   (groups, datasets, attributes, soft and external links, hard links as soft links, object
//!   and region references, compounds, cached specifications), numeric chunks copied as stored
//!   where Zarr has the same codecs (deflate → `zlib`, shuffle, the Zstandard and Blosc
//!   plugins).
//! - [`write_reference_file`] writes a LINDI reference file from the metadata alone.
//! - [`validate`] validates HDF5 files in place.

pub mod error;
pub mod import;
pub mod lindi;
#[cfg(feature = "remote")]
pub mod location;
mod mapping;
pub mod validate;
pub mod view;

pub use error::{Hdf5Error, Hdf5Result};
pub use import::{import_file, import_into, import_store, ImportOptions, ImportSummary, Progress};
pub use lindi::{write_reference_file, write_reference_store, VirtualOptions, VirtualSummary};
#[cfg(feature = "remote")]
pub use location::{
    import_location, import_location_into, open_hdf5_location, write_reference_location,
};
/// The HDF5 format reader this crate is built on.
pub use neurochunk_h5 as h5;
pub use validate::{is_hdf5_file, open_hdf5_file, validate_hdf5};
pub use view::{hdf5_files, Hdf5Files, Hdf5Store};
