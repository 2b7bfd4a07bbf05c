//! Chunked N-dimensional arrays and their hierarchies, over any [`Store`].
//!
//! This is the format layer: it parses Zarr v2 (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`),
//! Zarr v3 (`zarr.json`) and N5 (`attributes.json`, see [`n5`]) documents into one
//! format-neutral [`ArrayMetadata`] with a codec chain, and lets one region reader/writer
//! ([`Array`]) serve every format. Groups, walking a hierarchy, consolidated metadata and
//! streaming conversion live here too.
//!
//! Data flow on read: store → chunk bytes → codec chain → decoded chunk → copied into the
//! caller's region. Chunks are decoded in parallel (rayon) straight into the output buffer, so
//! a read needs the output plus about one decoded chunk per worker.

mod array;
mod copy;
mod error;
mod hierarchy;
mod metadata;
pub mod n5;
mod selection;
mod sharded;

pub mod convert;

pub use array::{Array, ArrayOptions};
pub use error::{ArrayError, ArrayResult};
pub use hierarchy::{
    consolidate, create_group, list_documents, list_nodes, list_nodes_with, open_node,
    open_node_with, read_node_documents, walk_documents, walk_nodes, DocumentKind, DocumentWalk,
    Node, NodeDocuments, NodeEntry, NodeInfo,
};
pub use metadata::{
    ArrayMetadata, ChunkKeyEncoding, ConsolidatedEntry, GroupMetadata, NodeMetadata, ZarrFormat,
};
pub use selection::{parse_selection, AxisSelection, Selection};

pub use n5::OpenOptions;
pub use neurochunk_codec::{ArrayBytes, CodecChain, N5AxisOrder};
pub use neurochunk_dtype::DataType;
pub use neurochunk_store::{FsStore, MemoryStore, Store};

/// Display form of a node path: `/` for the root, `/a/b` otherwise.
pub fn display_path(path: &str) -> String {
    format!("/{}", path.trim_matches('/'))
}
