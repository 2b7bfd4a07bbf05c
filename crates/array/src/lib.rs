//! Chunked N-dimensional arrays and their hierarchies, over any [`Store`].
//!
//! This is the format layer: it parses Zarr v2 (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`)
//! and Zarr v3 (`zarr.json`) documents into one format-neutral [`ArrayMetadata`] with a codec
//! chain, and lets one region reader/writer ([`Array`]) serve every format. Groups, walking a
//! hierarchy, consolidated metadata and streaming conversion live here too.
//!
//! Data flow on read: store → chunk bytes → codec chain → decoded chunk → copied into the
//! caller's region. Chunks are decoded in parallel (rayon) straight into the output buffer, so
//! a read needs the output plus about one decoded chunk per worker.

mod array;
mod copy;
mod error;
mod hierarchy;
mod metadata;
mod selection;
mod sharded;

pub mod convert;

pub use array::{Array, ArrayOptions};
pub use error::{ArrayError, ArrayResult};
pub use hierarchy::{consolidate, create_group, list_nodes, open_node, Node, NodeInfo};
pub use metadata::{ArrayMetadata, ChunkKeyEncoding, GroupMetadata, NodeMetadata, ZarrFormat};
pub use selection::{parse_selection, AxisSelection, Selection};

pub use neurochunk_codec::{ArrayBytes, CodecChain};
pub use neurochunk_dtype::DataType;
pub use neurochunk_store::{FsStore, MemoryStore, Store};

/// Display form of a node path: `/` for the root, `/a/b` otherwise.
pub fn display_path(path: &str) -> String {
    format!("/{}", path.trim_matches('/'))
}
