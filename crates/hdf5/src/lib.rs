#![warn(missing_docs)]
//! NWB from HDF5: import an HDF5 NWB file (as pynwb's `NWBHDF5IO` writes them) into either
//! hdmf-zarr convention, through the HDF5 C library (`hdf5-metno`; see `docs/hdf5.md` for why).
//!
//! [`import_file`] writes a new file on disk (aside, published atomically when complete);
//! [`import_into`] writes into any [`NwbWriter`](neurochunk_hdmf::NwbWriter). Every HDMF
//! construct is carried over: groups, datasets (scalars, n-d numbers, fixed and
//! variable-length text, compounds, enums and h5py booleans), attributes (arrays and
//! references too), soft links, external links (confined to the allowed directories), hard
//! links (as soft links to the first path), object and region references (in attributes,
//! datasets and compound fields), cached specifications and object ids. Numeric datasets keep
//! their chunk shape, and their chunks are copied as stored when Zarr has the same codecs
//! (deflate → `zlib`, shuffle → `shuffle`, the Zstandard and Blosc plugins); otherwise they
//! are decoded by the library and encoded by the Zarr chain.

pub mod error;
pub mod h5;
pub mod import;
pub mod lindi;
#[cfg(feature = "remote")]
pub mod location;
mod mapping;
pub mod validate;
pub mod view;

pub use error::{Hdf5Error, Hdf5Result};
pub use import::{import_file, import_into, ImportOptions, ImportSummary, Progress};
pub use lindi::{write_reference_file, VirtualOptions, VirtualSummary};
#[cfg(feature = "remote")]
pub use location::open_hdf5_location;
pub use validate::{is_hdf5_file, open_hdf5_file, validate_hdf5};
pub use view::{hdf5_files, Hdf5Files, Hdf5Store};
