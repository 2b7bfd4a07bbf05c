//! neurochunk: large neuroscience data in the formats the field writes, from Rust.
//!
//! One library over any key/value store (local disk, memory, and with the `remote` feature
//! S3, GCS, Azure and HTTP through `store::open_url`, all behind the same [`Store`] trait) for
//! * chunked N-d arrays in **Zarr v2**, **Zarr v3** (sharding, consolidated metadata) and
//!   **N5**, with Zarr's whole data type model ([`array`](mod@array), [`dtype`], [`codec`]);
//! * with the `nwb` feature, **NWB files on Zarr** as pynwb and hdmf-zarr write them, in both
//!   hdmf-zarr conventions (module `nwb`); with the `hdf5` feature, HDF5 NWB files read in
//!   place, locally and remotely, imported or referenced (module `hdf5`, the project's own
//!   HDF5 reader, no C library);
//! * with the `tables` feature, **neurarrow tables** as Arrow IPC, Parquet and Hive-partitioned
//!   Parquet, with the specification's validator (module `table`);
//! * with the `ome` feature, **multiscale images** (OME-Zarr 0.4 / 0.5, BigDataViewer and
//!   n5-viewer N5), their validation, conversion and a fast pyramid builder (module `ome`);
//! * the restricted **pickle** reader and writer ([`pickle`]) that numcodecs' object codec and
//!   hdmf-zarr's reference columns need: it runs no code and builds only allow-listed globals.
//!
//! A user who needs only Zarr and N5 compiles neither arrow/parquet nor the NWB layer: both are
//! off by default. The `neurochunk` command-line tool enables everything.
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk::{selection, ArrayBuilder, Codec, DataType, MemoryStore, Store};
//!
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let raw = ArrayBuilder::new([64, 64, 64], DataType::UInt16)
//!     .chunks([16, 16, 16])
//!     .shards([32, 32, 32])
//!     .codecs([Codec::zstd(3), Codec::Crc32c])
//!     .dimension_names(["z", "y", "x"])
//!     .create(store.clone(), "volume/raw")?;
//! let plane: Vec<u16> = (0..64 * 64).map(|i| i as u16).collect();
//! raw.write_elements(&selection![5_i64, .., ..], &plane)?;
//! let (shape, strided) = raw.read_elements::<u16>(&selection![5_i64, 0..8_u64, ..])?;
//! assert_eq!(shape, vec![8, 64]);
//! assert_eq!(strided[64 + 1], 65);
//! # Ok::<(), neurochunk::array::ArrayError>(())
//! ```
#![warn(missing_docs)]

pub use neurochunk_array as array;
pub use neurochunk_codec as codec;
pub use neurochunk_dtype as dtype;
pub use neurochunk_pickle as pickle;
pub use neurochunk_store as store;

/// NWB in HDF5 files, read in place, imported or referenced: see [`neurochunk_hdf5`].
#[cfg(feature = "hdf5")]
pub use neurochunk_hdf5 as hdf5;
/// NWB files on Zarr (both hdmf-zarr conventions): see [`neurochunk_hdmf`].
#[cfg(feature = "nwb")]
pub use neurochunk_hdmf as nwb;
/// Multiscale images (OME-Zarr, BigDataViewer / n5-viewer N5) and pyramids: see
/// [`neurochunk_ome`].
#[cfg(feature = "ome")]
pub use neurochunk_ome as ome;
/// neurarrow tables (Arrow IPC, Parquet, Hive): see [`neurochunk_table`].
#[cfg(feature = "tables")]
pub use neurochunk_table as table;

pub use neurochunk_array::convert::{convert_array, convert_hierarchy, ConvertOptions};
pub use neurochunk_array::{
    consolidate, create_group, list_nodes, open_node, selection, Array, ArrayBuilder, ArrayBytes,
    ArrayError, ArrayMetadata, AxisSelection, CacheStats, Codec, DataType, Element, FillValue,
    IndexRun, N5AxisOrder, NodeMetadata, Selection, Slab, ZarrFormat, DEFAULT_CACHE_BYTES,
};
pub use neurochunk_store::{
    Bytes, Durability, FsStore, MemoryStore, PrefixStore, Store, StoreError,
};
