#![warn(missing_docs)]
//! A pure-Rust, read-only reader of the HDF5 file format over neurochunk's [`Store`] trait.
//!
//! The file is read through byte ranges of one value of a store, so a local file and an object
//! in S3 or behind HTTP read the same way. No C library is involved.
//!
//! # What it is for
//!
//! Reading NWB files (written by pynwb and h5py) and HDF5 files in general: the hierarchy of
//! groups and links (hard, soft, external — reported, never followed across files), the
//! attributes, and the datasets: their types, extents, storage (compact, contiguous, chunked
//! with every chunk index of the format), filters, fill values, where each chunk is stored, and
//! their elements, raw or decoded. It is built for remote files: metadata is read through a
//! cache of aligned pages ([`OpenOptions`]), index nodes of one level and object headers of a
//! group's members are fetched in batches, and chunk reads go to the store in batches of many
//! requests and are decompressed in parallel.
//!
//! # What it is not for
//!
//! Writing or modifying files; virtual datasets and data in external raw files (reported,
//! refused when read); the szip, nbit and scale-offset filters and unregistered plugins
//! (refused by name); single-writer/multiple-reader files being written while read.
//!
//! # Reading from a remote store
//!
//! Opening reads the first [`OpenOptions::initial_read`] bytes (the superblock and, for most
//! files, the root group and much of the metadata) and the last [`OpenOptions::tail_read`]
//! bytes in one batch. Every later metadata read
//! goes through a cache of aligned pages of [`OpenOptions::page_size`] bytes; the nodes of one
//! level of a B-tree, the symbol table nodes of a group, the blocks of a chunk index and the
//! object headers of a group's members ([`Group::members`], [`H5File::walk`],
//! [`H5File::prefetch`]) are fetched in one batch (one [`Store::get_many`] call). A hyperslab
//! read looks up only the chunks it touches, fetches them in batches of many requests (chunks
//! less than [`OpenOptions::read_gap`] bytes apart with one request), fetches the next batch
//! while decompressing the current one in parallel, and scatters the elements into the output.
//! A contiguous dataset's read fetches only the byte ranges of the selected elements.
//!
//! # Addresses
//!
//! Object addresses ([`Object::address`], [`LinkTarget::Hard`], [`Reference::address`]) are
//! HDF5 addresses, relative to the superblock (after the user block, [`H5File::userblock`]):
//! an object's identity. Byte positions of data ([`ChunkInfo::byte_offset`],
//! [`Layout::Contiguous`]) are absolute positions in the stored file, as `h5py` reports them.
//!
//! # Robustness
//!
//! Every structure of the file is untrusted: offsets and lengths are checked against the file
//! size, declared counts against the bytes that hold them, checksums are verified, cycles
//! (links, continuation blocks, B-tree nodes) are detected and decompression is bounded by the
//! chunk's size. Errors ([`H5Error`]) name the file, the object and the structure at fault.
//! [`fuzz_parse`] walks a whole in-memory file for fuzzing.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_h5::{H5File, LinkTarget, Object, Slice, Value};
//! use neurochunk_store::{Bytes, MemoryStore, Store};
//!
//! let store = MemoryStore::new();
//! store.set("tiny.h5", Bytes::from_static(include_bytes!("../tests/data/tiny.h5")))?;
//! let file = H5File::open(Arc::new(store), "tiny.h5", "tiny.h5")?;
//!
//! // Links of the root group, by name.
//! let root = file.root()?;
//! let names: Vec<String> = root.links()?.into_iter().map(|l| l.name).collect();
//! assert_eq!(names, ["data", "group", "soft"]);
//! assert!(matches!(root.link("soft")?.unwrap().target, LinkTarget::Soft(_)));
//!
//! // A dataset: its description and a hyperslab of it.
//! let Object::Dataset(ds) = file.object("/data")? else { panic!("not a dataset") };
//! assert_eq!(ds.shape(), [4, 5]);
//! let values = ds.read_values(&[Slice::range(1, 2), Slice::new(0, 5, 2)])?;
//! assert_eq!(values, [Value::Int(5), Value::Int(7), Value::Int(9)]);
//!
//! // Attributes, decoded.
//! let attr = root.attribute("title")?.unwrap();
//! assert_eq!(attr.values()?, [Value::Text("tiny".into())]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Store`]: neurochunk_store::Store
//! [`Store::get_many`]: neurochunk_store::Store::get_many

mod attribute;
mod btree1;
mod btree2;
mod chunks;
mod cursor;
mod dataset;
mod datatype;
mod error;
mod file;
mod filters;
mod fuzz;
mod group;
mod heap;
mod io;
mod messages;
mod ohdr;
mod selection;
mod superblock;
mod value;

pub use attribute::Attribute;
pub use chunks::ChunkInfo;
pub use dataset::Dataset;
pub use datatype::{Charset, Datatype, EnumMember, Extent, Field, Padding, ReferenceKind};
pub use error::{ErrorKind, H5Error, H5Result};
pub use file::{is_hdf5, H5File, NamedType, Object, OpenOptions};
pub use filters::{filter_name, filter_supported};
pub use fuzz::fuzz_parse;
pub use group::Group;
pub use messages::{
    ChunkIndexKind, ExternalFile, FillDefined, FillValue, Filter, Layout, Link, LinkTarget,
};
pub use selection::{HyperslabDim, Selection, Slice};
pub use value::{Reference, ReferenceTarget, Value};
