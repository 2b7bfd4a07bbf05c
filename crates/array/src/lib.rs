#![warn(missing_docs)]
//! Chunked N-dimensional arrays and their hierarchies, over any [`Store`].
//!
//! This is the format layer: it parses Zarr v2 (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`),
//! Zarr v3 (`zarr.json`), N5 (`attributes.json`, see [`n5`]) and Neuroglancer precomputed
//! (`info`, see [`precomputed`]) documents, each format into
//! its own typed serde document ([`ArrayDocumentV2`], [`ArrayDocumentV3`],
//! [`n5::DatasetAttributesN5`], …), and builds from them one format-neutral [`ArrayMetadata`]
//! with a codec chain, and lets one region reader/writer
//! ([`Array`]) serve every format. Groups, walking a hierarchy, consolidated metadata and
//! streaming conversion live here too.
//!
//! Data flow on read: plan → fetch → decode → scatter. The chunks a selection touches are
//! fetched in bounded batches, each with one [`Store::get_many`]
//! call (two for sharded arrays: indexes, then inner-chunk byte ranges), the next batch while
//! the current one is decoded in parallel (rayon) straight into the output buffer; so a read
//! needs the output plus about two batches.
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_array::{selection, Array, ArrayBuilder, Codec, DataType, MemoryStore, Store, ZarrFormat};
//!
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! // A Zarr v2 array (zarr-python 2 reads it), written and read back typed.
//! let traces = ArrayBuilder::new([4, 1000], DataType::Float32)
//!     .format(ZarrFormat::V2)
//!     .chunks([1, 500])
//!     .codecs([Codec::Zlib { level: 1 }])
//!     .create(store.clone(), "ephys/traces")?;
//! let samples: Vec<f32> = (0..4000).map(|i| (i as f32).sin()).collect();
//! traces.write_elements(&selection![..], &samples)?;
//! // Any node opens by path, whatever its format.
//! let again = Array::open(store, "ephys/traces")?;
//! let (shape, channel_2) = again.read_elements::<f32>(&selection![2_i64, 100..200_u64])?;
//! assert_eq!(shape, vec![100]);
//! assert_eq!(channel_2[0], samples[2100]);
//! # Ok::<(), neurochunk_array::ArrayError>(())
//! ```

mod array;
mod builder;
mod cache;
mod chunk_locks;
mod error;
mod hierarchy;
mod metadata;
pub mod n5;
pub mod precomputed;
mod read;
mod selection;
mod sharded;
mod typed;

pub mod convert;
pub mod fork_merge;

pub use array::{Array, ArrayOptions, Ragged};
pub use builder::{default_chunk_shape, default_codecs, ArrayBuilder, FillValue};
pub use cache::{CacheStats, DEFAULT_CACHE_BYTES};
pub use error::{ArrayError, ArrayResult};
pub use hierarchy::{
    consolidate, create_group, list_documents, list_nodes, list_nodes_with, open_node,
    open_node_with, read_node_documents, walk_documents, walk_nodes, DocumentKind, DocumentWalk,
    Node, NodeDocuments, NodeEntry, NodeInfo, NodeTree,
};
pub use metadata::{
    ArrayDocumentV2, ArrayDocumentV3, ArrayMetadata, ChunkKeyEncoding, ConsolidatedEntry,
    GroupDocumentV2, GroupDocumentV3, GroupMetadata, MetadataEntryV3, NodeMetadata, OrderV2,
    ZarrFormat,
};
pub use selection::{parse_selection, slabs, AxisSelection, IndexRun, Selection, Slab};
pub use typed::Element;

pub use n5::{N5AxisOrder, N5BlockCodec, OpenOptions};
pub use neurochunk_codec::{ArrayBytes, Codec, CodecChain, CodecKind};
pub use neurochunk_dtype::DataType;
pub use neurochunk_store::{Durability, FsStore, MemoryStore, Store};
pub use precomputed::{PrecomputedCodec, PrecomputedOptions, ShardingSpec};

/// Display form of a node path: `/` for the root, `/a/b` otherwise.
pub fn display_path(path: &str) -> String {
    format!("/{}", path.trim_matches('/'))
}
