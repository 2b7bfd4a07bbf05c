//! The table of every group and dataset of a file with its attributes and raw array metadata.
//! It is the array layer's document walk ([`neurochunk_array::walk_documents`]): from
//! consolidated metadata in one read when the file has it, else by listing the store. No codec
//! chain is built here; a dataset's metadata is parsed when it is read.

use std::collections::BTreeMap;

use neurochunk_array::{
    list_documents, read_node_documents, walk_documents, ArrayError, DocumentKind, NodeDocuments,
    ZarrFormat,
};
use neurochunk_store::Store;
use serde_json::{Map, Value};

use crate::convention::Convention;
use crate::error::{HdmfError, HdmfResult};

/// Whether a node is a group or a dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A group.
    Group,
    /// A dataset (a Zarr array).
    Dataset,
}

/// One node: its attributes and, for datasets, the array metadata document (`.zarray` or
/// `zarr.json`).
#[derive(Clone, Debug)]
pub(crate) struct NodeDoc {
    pub kind: NodeKind,
    pub attributes: Map<String, Value>,
    pub array_doc: Option<Value>,
}

impl From<NodeDocuments> for NodeDoc {
    fn from(node: NodeDocuments) -> Self {
        NodeDoc {
            kind: match node.kind {
                DocumentKind::Group => NodeKind::Group,
                DocumentKind::Array => NodeKind::Dataset,
            },
            attributes: node.attributes,
            array_doc: node.array_document,
        }
    }
}

/// Every node of a file by absolute path (`/` is the root).
#[derive(Debug, Default)]
pub(crate) struct NodeIndex {
    pub nodes: BTreeMap<String, NodeDoc>,
    /// Whether the table came from consolidated metadata.
    pub consolidated: bool,
}

/// The store key prefix of an absolute node path (`/a/b` → `a/b`, `/` → ``).
pub(crate) fn store_key(path: &str) -> &str {
    path.trim_matches('/')
}

/// The Zarr format of a convention.
fn format_of(convention: Convention) -> ZarrFormat {
    match convention {
        Convention::Legacy => ZarrFormat::V2,
        Convention::V3 => ZarrFormat::V3,
    }
}

/// An error of the document walk, in this layer's terms: a malformed document names the node
/// ([`HdmfError::Malformed`]), a missing or non-Zarr root is [`HdmfError::NotNwb`].
fn walk_error(file: &str, e: ArrayError) -> HdmfError {
    match e {
        ArrayError::Metadata { path, message } => HdmfError::malformed(file, &path, message),
        ArrayError::Store(e) => HdmfError::store(file, e),
        ArrayError::NotFound(_) => HdmfError::NotNwb {
            file: file.to_string(),
            message: "not a Zarr group (no zarr.json, .zgroup or .zmetadata at its root)".into(),
        },
        ArrayError::Unsupported { message, .. } => HdmfError::NotNwb {
            file: file.to_string(),
            message: format!("not an NWB file stored as Zarr v2 or v3 ({message})"),
        },
        e => HdmfError::array(file, e),
    }
}

impl NodeIndex {
    /// Build the table of the file at the root of `store` and detect its convention;
    /// `use_consolidated` prefers consolidated metadata when present.
    pub fn build(
        file: &str,
        store: &dyn Store,
        use_consolidated: bool,
    ) -> HdmfResult<(Convention, Self)> {
        let walk = if use_consolidated {
            walk_documents(store, "")
        } else {
            list_documents(store, "")
        }
        .map_err(|e| walk_error(file, e))?;
        let convention = match walk.format {
            ZarrFormat::V2 => Convention::Legacy,
            ZarrFormat::V3 => Convention::V3,
            ZarrFormat::N5 | ZarrFormat::Precomputed => {
                return Err(HdmfError::NotNwb {
                    file: file.to_string(),
                    message: if walk.format == ZarrFormat::N5 {
                        "an N5 hierarchy is not an NWB file".into()
                    } else {
                        "a precomputed layer is not an NWB file".into()
                    },
                })
            }
        };
        let mut nodes = walk
            .nodes
            .into_iter()
            .map(|node| (format!("/{}", node.path), NodeDoc::from(node)))
            .collect();
        if convention == Convention::Legacy {
            fold_lindi_soft_links(&mut nodes);
        }
        Ok((
            convention,
            NodeIndex {
                nodes,
                consolidated: walk.consolidated,
            },
        ))
    }

    /// Read one node's documents directly from the store (no consolidated metadata).
    pub fn read_node(
        file: &str,
        store: &dyn Store,
        convention: Convention,
        path: &str,
    ) -> HdmfResult<Option<NodeDoc>> {
        Ok(
            read_node_documents(store, store_key(path), Some(format_of(convention)))
                .map_err(|e| walk_error(file, e))?
                .map(NodeDoc::from),
        )
    }
}

/// The attribute LINDI reference files mark a soft link's group with: `{"path": target}`.
pub(crate) const LINDI_SOFT_LINK: &str = "_SOFT_LINK";

/// The attribute LINDI reference files mark a link to a dataset of another HDF5 file with
/// (on an array node): `{"link_type": "hdf5_dataset", "url": file, "name": path}`.
pub(crate) const LINDI_EXTERNAL_ARRAY_LINK: &str = "_EXTERNAL_ARRAY_LINK";
/// The attribute this crate's reference files mark a link to a group of another file with
/// (LINDI has no form for it): `{"url": file, "name": path}`.
pub(crate) const LINDI_EXTERNAL_LINK: &str = "_EXTERNAL_LINK";

/// The link a LINDI node stands for: `(target path, source file)`.
fn lindi_link(node: &NodeDoc) -> Option<(String, String)> {
    let attrs = &node.attributes;
    if node.kind == NodeKind::Group {
        if let Some(target) = attrs.get(LINDI_SOFT_LINK).and_then(|l| l.get("path")) {
            return Some((target.as_str()?.to_string(), ".".into()));
        }
    }
    let external = match node.kind {
        NodeKind::Group => attrs.get(LINDI_EXTERNAL_LINK)?,
        NodeKind::Dataset => attrs.get(LINDI_EXTERNAL_ARRAY_LINK)?,
    };
    Some((
        external.get("name")?.as_str()?.to_string(),
        external.get("url")?.as_str()?.to_string(),
    ))
}

/// LINDI reference files store a soft link as a group holding only a `_SOFT_LINK` attribute,
/// and an external link as a node marked `_EXTERNAL_ARRAY_LINK` (datasets) or
/// `_EXTERNAL_LINK` (groups): turn each into an entry of its parent's link list (as the
/// legacy convention stores links), so that links are followed, listed and checked alike.
fn fold_lindi_soft_links(nodes: &mut BTreeMap<String, NodeDoc>) {
    let links: Vec<(String, String, String)> = nodes
        .iter()
        .filter(|(p, _)| p.as_str() != "/")
        .filter_map(|(p, n)| lindi_link(n).map(|(target, source)| (p.clone(), target, source)))
        .collect();
    for (path, target, source) in links {
        nodes.remove(&path);
        let (parent, name) = split_parent(&path);
        let entry = serde_json::json!({"name": name, "path": target, "source": source});
        if let Some(p) = nodes.get_mut(&parent) {
            match p.attributes.get_mut(crate::convention::LEGACY_LINKS) {
                Some(Value::Array(list)) => list.push(entry),
                _ => {
                    p.attributes.insert(
                        crate::convention::LEGACY_LINKS.into(),
                        Value::Array(vec![entry]),
                    );
                }
            }
        }
    }
}

/// `parent` + `/` + `name` as an absolute path.
pub(crate) fn child(parent: &str, name: &str) -> String {
    if parent == "/" || parent.is_empty() {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The parent path and the last name of an absolute path (`/a/b` → (`/a`, `b`)).
pub(crate) fn split_parent(path: &str) -> (String, &str) {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rsplit_once('/') {
        Some(("", name)) => ("/".to_string(), name),
        Some((parent, name)) => (parent.to_string(), name),
        None => ("/".to_string(), trimmed),
    }
}
