//! Groups and hierarchies: opening any node (Zarr v2, Zarr v3 or N5), creating groups, walking
//! a tree (from consolidated metadata when the root has it), and writing consolidated metadata.
//!
//! Two walks: [`walk_nodes`] / [`list_nodes`] parse every node's metadata (codec chains
//! included) into [`NodeMetadata`]; [`walk_documents`] returns every node's attributes and raw
//! array document only ([`NodeDocuments`]), for callers that open few of the arrays they list
//! (the NWB layer's node table) and must not fail on codecs they never read.

use std::sync::Arc;

use neurochunk_store::{join_key, Store};
use serde_json::{json, Map, Value};

use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{
    document_bytes, parse_document, parse_v2_consolidated, typed_document, ArrayMetadata,
    GroupDocumentV2, GroupMetadata, NodeMetadata, ZarrFormat, ZARRAY, ZARR_JSON, ZATTRS, ZGROUP,
    ZMETADATA,
};
use crate::n5::{OpenOptions, ATTRIBUTES_JSON};

/// A node of a hierarchy.
#[derive(Clone, Debug)]
pub struct Node {
    /// Path within the store (`""` for the root).
    pub path: String,
    /// The node's metadata.
    pub metadata: NodeMetadata,
}

/// A node found by [`list_nodes`], with its path relative to the walk's start.
pub type NodeInfo = Node;

/// `parent` + `/` + `rel`, without empty segments.
pub(crate) fn child_path(parent: &str, rel: &str) -> String {
    join_key(parent.trim_matches('/'), rel.trim_matches('/'))
}

fn read_doc(store: &dyn Store, path: &str, file: &str) -> ArrayResult<Option<Value>> {
    match store.get(&join_key(path, file))? {
        Some(bytes) => Ok(Some(parse_document(&bytes, path, file)?)),
        None => Ok(None),
    }
}

/// Read the metadata of the node at `path`, whichever format it is in (`options` choose
/// the axis order of N5 datasets).
pub(crate) fn read_node_metadata_with(
    store: &dyn Store,
    path: &str,
    options: &OpenOptions,
) -> ArrayResult<NodeMetadata> {
    let path = path.trim_matches('/');
    if let Some(doc) = read_doc(store, path, ZARR_JSON)? {
        return match doc.get("node_type").and_then(Value::as_str) {
            Some("array") => Ok(NodeMetadata::Array(Box::new(ArrayMetadata::from_v3(
                &doc, path,
            )?))),
            Some("group") => Ok(NodeMetadata::Group(GroupMetadata::from_v3(&doc, path)?)),
            other => Err(ArrayError::metadata(
                path,
                format!(
                    "zarr.json: node_type must be \"array\" or \"group\", found {}",
                    other.unwrap_or("nothing")
                ),
            )),
        };
    }
    let attrs = read_doc(store, path, ZATTRS)?;
    if let Some(doc) = read_doc(store, path, ZARRAY)? {
        return Ok(NodeMetadata::Array(Box::new(ArrayMetadata::from_v2(
            &doc,
            attrs.as_ref(),
            path,
        )?)));
    }
    if let Some(doc) = read_doc(store, path, ZGROUP)? {
        let group: GroupDocumentV2 = typed_document(&doc, path, ZGROUP)?;
        if group.zarr_format != 2 {
            return Err(ArrayError::metadata(
                path,
                format!(
                    ".zgroup: zarr_format must be 2, found {}",
                    group.zarr_format
                ),
            ));
        }
        let attributes = match attrs {
            None => Map::new(),
            Some(Value::Object(map)) => map,
            Some(other) => {
                return Err(ArrayError::metadata(
                    path,
                    format!(".zattrs must be a JSON object, found {other}"),
                ))
            }
        };
        let consolidated = match read_doc(store, path, ZMETADATA)? {
            Some(doc) => Some(parse_v2_consolidated(&doc, path)?),
            None => None,
        };
        return Ok(NodeMetadata::Group(GroupMetadata {
            format: ZarrFormat::V2,
            attributes,
            consolidated,
        }));
    }
    if let Some(doc) = read_doc(store, path, ATTRIBUTES_JSON)? {
        return crate::n5::parse_node(&doc, path, options.n5_axis_order);
    }
    if let Some(node) = crate::precomputed::read_node(store, path)? {
        return Ok(node);
    }
    if crate::n5::implicit_group(store, path)? {
        return Ok(NodeMetadata::Group(GroupMetadata {
            format: ZarrFormat::N5,
            attributes: Map::new(),
            consolidated: None,
        }));
    }
    Err(ArrayError::NotFound(crate::display_path(path)))
}

/// Open the node at `path`.
pub fn open_node(store: &dyn Store, path: &str) -> ArrayResult<Node> {
    open_node_with(store, path, &OpenOptions::default())
}

/// [`open_node`] with options (the axis order of N5 datasets).
pub fn open_node_with(store: &dyn Store, path: &str, options: &OpenOptions) -> ArrayResult<Node> {
    Ok(Node {
        path: path.trim_matches('/').to_string(),
        metadata: read_node_metadata_with(store, path, options)?,
    })
}

/// Create a group (and any missing parents) with the given attributes.
pub fn create_group(
    store: &dyn Store,
    path: &str,
    format: ZarrFormat,
    attributes: Map<String, Value>,
) -> ArrayResult<()> {
    let path = path.trim_matches('/');
    if !path.is_empty() {
        ensure_parent_groups(store, path, format)?;
    }
    write_group(store, path, format, &attributes)
}

/// Write a group's metadata document(s).
pub(crate) fn write_group(
    store: &dyn Store,
    path: &str,
    format: ZarrFormat,
    attributes: &Map<String, Value>,
) -> ArrayResult<()> {
    match format {
        ZarrFormat::V2 => {
            store.set(
                &join_key(path, ZGROUP),
                document_bytes(
                    &serde_json::to_value(GroupDocumentV2::default()).map_err(|e| {
                        ArrayError::metadata(path, format!("{ZGROUP} cannot be written: {e}"))
                    })?,
                    format,
                )
                .into(),
            )?;
            let attrs_key = join_key(path, ZATTRS);
            if attributes.is_empty() {
                store.delete(&attrs_key)?;
            } else {
                store.set(
                    &attrs_key,
                    document_bytes(&Value::Object(attributes.clone()), format).into(),
                )?;
            }
        }
        ZarrFormat::V3 => {
            let group = GroupMetadata {
                format,
                attributes: attributes.clone(),
                consolidated: None,
            };
            store.set(
                &join_key(path, ZARR_JSON),
                document_bytes(&group.to_v3_document(), format).into(),
            )?;
        }
        ZarrFormat::N5 => crate::n5::write_group(store, path, attributes)?,
        ZarrFormat::Precomputed => {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(path),
                message: "a precomputed layer is created with its first scale (ArrayBuilder \
                          with ZarrFormat::Precomputed at LAYER/KEY), not as an empty group"
                    .into(),
            })
        }
    }
    Ok(())
}

/// Trees of Zarr v2, Zarr v3 and N5 nodes (arrays, groups, and the NWB files stored in them):
/// what a writer of such a node may replace ([`neurochunk_store::replace`]). A directory
/// holding a metadata document (`.zarray`, `.zgroup`, `.zattrs`, `.zmetadata`, `zarr.json`,
/// `attributes.json`) is a node; below a node, its metadata documents, XML documents beside
/// them (BigDataViewer's `dataset.xml`, bioformats2raw's `METADATA.ome.xml`) and chunk keys
/// (`c`, numbers, numbers joined by `.`, `c.` and numbers, in any depth of directories) are
/// its own, and so are nested nodes. A directory holding a Neuroglancer precomputed `info` is a
/// layer: the files of its scale directories named like chunks (`0-64_0-64_0-16`, with `.gz`)
/// or shards (`0a.shard`) are its own. Anything else (a file of another name, a directory with
/// no node above it) is not.
///
/// ```
/// use neurochunk_array::NodeTree;
/// use neurochunk_store::replace::{check_prefix, Overwrite};
/// use neurochunk_store::{Bytes, MemoryStore, Store};
///
/// let store = MemoryStore::new();
/// for key in ["img/zarr.json", "img/0/zarr.json", "img/0/c/0/1/2", "img/labels/.zattrs"] {
///     store.set(key, Bytes::from_static(b"{}"))?;
/// }
/// check_prefix(&store, "img", "img", &NodeTree, Overwrite::Own)?;
/// store.set("img/0/c/README.md", Bytes::from_static(b"notes"))?;
/// assert!(check_prefix(&store, "img", "img", &NodeTree, Overwrite::Own).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeTree;

impl neurochunk_store::replace::TreeKind for NodeTree {
    fn name(&self) -> &'static str {
        "a Zarr, N5 or precomputed node"
    }

    fn is_anchor(&self, file_name: &str) -> bool {
        [
            ZARRAY,
            ZGROUP,
            ZATTRS,
            ZMETADATA,
            ZARR_JSON,
            ATTRIBUTES_JSON,
            crate::precomputed::INFO,
        ]
        .contains(&file_name)
    }

    fn owns(&self, rest: &[&str], anchored: bool) -> bool {
        // An XML document at a node: BigDataViewer's `dataset.xml` at an N5 container's
        // root, bioformats2raw's `OME/METADATA.ome.xml`.
        anchored
            && (matches!(rest, [doc] if self.is_anchor(doc) || doc.ends_with(".xml"))
                || rest.iter().all(|part| is_chunk_key_part(part))
                || matches!(rest, [_scale, file] if crate::precomputed::is_scale_file(file)))
    }
}

/// Whether `part` can be a component of a chunk key of any format: `c` (Zarr v3's default
/// encoding), a number, numbers joined by `.` (Zarr v2), or `c.` followed by such numbers.
fn is_chunk_key_part(part: &str) -> bool {
    let numbers = part.strip_prefix("c.").unwrap_or(part);
    part == "c"
        || (!numbers.is_empty()
            && numbers
                .split('.')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())))
}

/// The child directories of `dir` that can be nodes: names starting with `.` are skipped
/// (metadata documents are keys, not directories; hidden directories are writers' staging
/// directories and other tools' files, never nodes).
pub(crate) fn child_names(store: &dyn Store, dir: &str) -> ArrayResult<Vec<String>> {
    let mut names = store.list_dir(dir)?.prefixes;
    names.retain(|name| !name.starts_with('.'));
    Ok(names)
}

/// Make sure every ancestor of `path` (the root included) is a group.
pub(crate) fn ensure_parent_groups(
    store: &dyn Store,
    path: &str,
    format: ZarrFormat,
) -> ArrayResult<()> {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    for depth in 0..segments.len() {
        let parent = segments[..depth].join("/");
        let has_node = match format {
            ZarrFormat::V2 => {
                store.exists(&join_key(&parent, ZGROUP))?
                    || store.exists(&join_key(&parent, ZARRAY))?
            }
            ZarrFormat::V3 => store.exists(&join_key(&parent, ZARR_JSON))?,
            ZarrFormat::N5 => store.exists(&join_key(&parent, ATTRIBUTES_JSON))?,
            // A layer's directories need no documents; its `info` is written with the scale.
            ZarrFormat::Precomputed => return Ok(()),
        };
        if !has_node {
            write_group(store, &parent, format, &Map::new())?;
        }
    }
    Ok(())
}

/// Every node at and below `path`, sorted by path. When the start is a group with
/// consolidated metadata, it is used instead of listing the store. The first node that
/// cannot be read fails the whole listing (see [`walk_nodes`] for a listing that keeps going).
pub fn list_nodes(store: &dyn Store, path: &str) -> ArrayResult<Vec<Node>> {
    list_nodes_with(store, path, &OpenOptions::default())
}

/// [`list_nodes`] with options (the axis order of N5 datasets).
pub fn list_nodes_with(
    store: &dyn Store,
    path: &str,
    options: &OpenOptions,
) -> ArrayResult<Vec<Node>> {
    walk_nodes(store, path, options)?
        .into_iter()
        .map(|entry| {
            entry
                .metadata
                .map(|metadata| Node {
                    path: entry.path,
                    metadata,
                })
                .map_err(ArrayError::Kept)
        })
        .collect()
}

/// A node found by [`walk_nodes`]: its path and its metadata, or why it could not be read.
#[derive(Clone, Debug)]
pub struct NodeEntry {
    /// Path within the store (`""` for the root).
    pub path: String,
    /// The node's metadata, or why it could not be read (an unknown codec, a malformed
    /// document).
    pub metadata: Result<NodeMetadata, Arc<ArrayError>>,
}

/// Every node at and below `path`, sorted by path, like [`list_nodes_with`], but a node whose
/// metadata cannot be read (an unknown codec, a malformed document) is listed with its error
/// instead of failing the walk, so one bad node does not hide the rest. Only the start node
/// itself must be readable. The children of an unreadable node are not visited.
pub fn walk_nodes(
    store: &dyn Store,
    path: &str,
    options: &OpenOptions,
) -> ArrayResult<Vec<NodeEntry>> {
    let root = open_node_with(store, path, options)?;
    if let NodeMetadata::Group(group) = &root.metadata {
        if let Some(entries) = &group.consolidated {
            let mut nodes = vec![NodeEntry {
                path: root.path.clone(),
                metadata: Ok(root.metadata.clone()),
            }];
            nodes.extend(
                entries
                    .iter()
                    .filter(|(rel, _)| !rel.is_empty())
                    .map(|(rel, meta)| NodeEntry {
                        path: child_path(&root.path, rel),
                        metadata: meta.clone(),
                    }),
            );
            nodes.sort_by(|a, b| a.path.cmp(&b.path));
            return Ok(nodes);
        }
    }
    walk(store, root, options)
}

/// Walk the store below `root` by listing (ignores consolidated metadata).
fn walk(store: &dyn Store, root: Node, options: &OpenOptions) -> ArrayResult<Vec<NodeEntry>> {
    let mut nodes = Vec::new();
    let mut pending = vec![root.path.clone()];
    nodes.push(NodeEntry {
        path: root.path,
        metadata: Ok(root.metadata),
    });
    while !pending.is_empty() {
        let mut next = Vec::new();
        for (child, meta) in level_children(store, &pending, |child| {
            read_node_metadata_with(store, child, options)
        })? {
            match meta {
                Ok(meta) => {
                    if matches!(meta, NodeMetadata::Group(_)) {
                        next.push(child.clone());
                    }
                    nodes.push(NodeEntry {
                        path: child,
                        metadata: Ok(meta),
                    });
                }
                // A directory without metadata (an implicit v2 group) may still hold nodes.
                Err(ArrayError::NotFound(_)) => next.push(child),
                // A store failure is not a property of one node: it ends the walk.
                Err(e @ ArrayError::Store(_)) => return Err(e),
                Err(e) => nodes.push(NodeEntry {
                    path: child,
                    metadata: Err(Arc::new(e)),
                }),
            }
        }
        pending = next;
    }
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(nodes)
}

/// Write consolidated metadata for the group at `path` (v2 `.zmetadata`, v3 inline
/// `consolidated_metadata` in the group's `zarr.json`). Returns the number of nodes covered.
pub fn consolidate(store: &dyn Store, path: &str) -> ArrayResult<usize> {
    let path = path.trim_matches('/');
    let root = open_node(store, path)?;
    let NodeMetadata::Group(group) = &root.metadata else {
        return Err(ArrayError::Unsupported {
            path: crate::display_path(path),
            message: "consolidated metadata is written for groups, not arrays".into(),
        });
    };
    if matches!(group.format, ZarrFormat::N5 | ZarrFormat::Precomputed) {
        return Err(ArrayError::Unsupported {
            path: crate::display_path(path),
            message: format!("{} has no consolidated metadata", group.format.label()),
        });
    }
    // Only the node paths are needed (the documents are read again below, as stored): no
    // codec chain is built, so unknown codecs do not matter, and no document is kept.
    let mut nodes: Vec<String> = Vec::new();
    visit_documents(store, path, &mut |node| nodes.push(node.path))?;
    nodes.sort();
    let relative = |p: &str| p[path.len()..].trim_start_matches('/').to_string();
    let workers = store.concurrent_reads();
    match group.format {
        ZarrFormat::V2 => {
            let mut metadata = Map::new();
            let docs = neurochunk_store::map_concurrent(&nodes, workers, |node| {
                [ZGROUP, ZARRAY, ZATTRS].map(|file| read_doc(store, node, file))
            });
            for (node, docs) in nodes.iter().zip(docs) {
                let rel = relative(node);
                for (file, doc) in [ZGROUP, ZARRAY, ZATTRS].into_iter().zip(docs) {
                    if let Some(doc) = doc? {
                        metadata.insert(join_key(&rel, file), doc);
                    }
                }
            }
            let doc = json!({"metadata": metadata, "zarr_consolidated_format": 1});
            store.set(
                &join_key(path, ZMETADATA),
                document_bytes(&doc, ZarrFormat::V2).into(),
            )?;
        }
        ZarrFormat::V3 => {
            let mut entries: Vec<(String, Value)> = Vec::new();
            let children: Vec<&String> = nodes.iter().filter(|n| **n != root.path).collect();
            let docs = neurochunk_store::map_concurrent(&children, workers, |node| {
                read_doc(store, node, ZARR_JSON)
            });
            for (node, doc) in children.into_iter().zip(docs) {
                let Some(mut doc) = doc? else {
                    continue;
                };
                let is_group = doc.get("node_type").and_then(Value::as_str) == Some("group");
                if let (Some(obj), true) = (doc.as_object_mut(), is_group) {
                    obj.remove("consolidated_metadata");
                    let node_type = obj.remove("node_type");
                    obj.insert(
                        "consolidated_metadata".into(),
                        json!({"kind": "inline", "must_understand": false, "metadata": {}}),
                    );
                    if let Some(t) = node_type {
                        obj.insert("node_type".into(), t);
                    }
                }
                entries.push((relative(node), doc));
            }
            // zarr-python orders entries by depth, then by path.
            entries.sort_by(|a, b| {
                (a.0.matches('/').count(), a.0.to_lowercase())
                    .cmp(&(b.0.matches('/').count(), b.0.to_lowercase()))
            });
            let mut doc = Map::new();
            doc.insert("attributes".into(), Value::Object(group.attributes.clone()));
            doc.insert("zarr_format".into(), json!(3));
            doc.insert(
                "consolidated_metadata".into(),
                json!({"kind": "inline", "must_understand": false, "metadata": Map::from_iter(entries)}),
            );
            doc.insert("node_type".into(), json!("group"));
            store.set(
                &join_key(path, ZARR_JSON),
                document_bytes(&Value::Object(doc), ZarrFormat::V3).into(),
            )?;
        }
        ZarrFormat::N5 | ZarrFormat::Precomputed => {}
    }
    Ok(nodes.len())
}

/// Whether a node found by a document walk is a group or an array.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DocumentKind {
    /// A group (`.zgroup`, or `zarr.json` with `node_type: "group"`).
    Group,
    /// An array (`.zarray`, or `zarr.json` with `node_type: "array"`).
    Array,
}

/// One node's metadata documents as stored, parsed as JSON only: no codec chain or data type
/// is built, so a walk is cheap and does not fail on codecs its caller never uses. Build an
/// [`ArrayMetadata`] from [`array_document`](Self::array_document) when the array is read.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeDocuments {
    /// Path within the store (`""` for the root).
    pub path: String,
    /// Group or array.
    pub kind: DocumentKind,
    /// Zarr v2 or v3.
    pub format: ZarrFormat,
    /// The node's attributes (`.zattrs`, or the `attributes` of `zarr.json`); empty when it has
    /// none.
    pub attributes: Map<String, Value>,
    /// For arrays, the raw array metadata document: `.zarray`, or the whole `zarr.json`
    /// (attributes included). `None` for groups.
    pub array_document: Option<Value>,
}

/// Every node at and below a path with its documents ([`walk_documents`], [`list_documents`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentWalk {
    /// The format of the start node.
    pub format: ZarrFormat,
    /// Whether the nodes came from the start group's consolidated metadata (one read) rather
    /// than from listing the store.
    pub consolidated: bool,
    /// The nodes, the start node included, sorted by path.
    pub nodes: Vec<NodeDocuments>,
}

/// Every node at and below `path` with its attributes and raw array metadata document
/// ([`NodeDocuments`]), from the start group's consolidated metadata in one read when it has
/// some (v2 `.zmetadata`, v3 inline `consolidated_metadata`; [`DocumentWalk::consolidated`]
/// says so), else by listing the store ([`list_documents`]).
///
/// Consolidated metadata can be stale: look up a path it lacks with [`read_node_documents`].
/// Zarr v2 and v3 only; N5 (which has no consolidated metadata) is
/// [`ArrayError::Unsupported`]. A start path without a node is [`ArrayError::NotFound`]; an
/// unparsable document fails the walk, naming the node.
pub fn walk_documents(store: &dyn Store, path: &str) -> ArrayResult<DocumentWalk> {
    let path = path.trim_matches('/');
    if let Some(walk) = consolidated_documents(store, path)? {
        return Ok(walk);
    }
    list_documents(store, path)
}

/// [`walk_documents`] by listing the store, ignoring consolidated metadata. Directories
/// without metadata (implicit groups) are looked into but not listed; the children of arrays
/// are not looked at.
pub fn list_documents(store: &dyn Store, path: &str) -> ArrayResult<DocumentWalk> {
    let mut nodes = Vec::new();
    let format = visit_documents(store, path, &mut |node| nodes.push(node))?;
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(DocumentWalk {
        format,
        consolidated: false,
        nodes,
    })
}

/// The listing walk of [`list_documents`], handing each node to `visit` (in no particular
/// order) instead of keeping them all; returns the start node's format.
fn visit_documents(
    store: &dyn Store,
    path: &str,
    visit: &mut dyn FnMut(NodeDocuments),
) -> ArrayResult<ZarrFormat> {
    let path = path.trim_matches('/');
    let root = read_documents(store, path, None)?
        .ok_or_else(|| ArrayError::NotFound(crate::display_path(path)))?;
    let format = root.format;
    let mut pending = Vec::new();
    if root.kind == DocumentKind::Group {
        pending.push(root.path.clone());
    }
    visit(root);
    let mut level = pending;
    while !level.is_empty() {
        // Each level of the tree: its directories listed, then its children's documents
        // read, as many at once as the store serves (one at a time from a local store).
        let mut next = Vec::new();
        for (child, node) in level_children(store, &level, |child| {
            read_documents(store, child, Some(format))
        })? {
            match node? {
                Some(node) => {
                    if node.kind == DocumentKind::Group {
                        next.push(child);
                    }
                    visit(node);
                }
                None => next.push(child),
            }
        }
        level = next;
    }
    Ok(format)
}

/// The children of the directories `level` (their paths), each with what `read` gives for
/// it: the listings and the reads each as many at once as `store` serves.
fn level_children<R: Send>(
    store: &dyn Store,
    level: &[String],
    read: impl Fn(&str) -> R + Sync,
) -> ArrayResult<Vec<(String, R)>> {
    let workers = store.concurrent_reads();
    let mut children = Vec::new();
    let listings = neurochunk_store::map_concurrent(level, workers, |dir| child_names(store, dir));
    for (dir, names) in level.iter().zip(listings) {
        children.extend(names?.iter().map(|name| child_path(dir, name)));
    }
    let read = neurochunk_store::map_concurrent(&children, workers, |child| read(child));
    Ok(children.into_iter().zip(read).collect())
}

/// The documents of the one node at `path`, read from the store (never from consolidated
/// metadata), or `None` when there is no Zarr node there. With `format` (a hierarchy has one,
/// e.g. [`DocumentWalk::format`]) only that format's documents are read; with `None` v3, v2 and
/// N5 are tried in turn, and an N5 node is [`ArrayError::Unsupported`].
pub fn read_node_documents(
    store: &dyn Store,
    path: &str,
    format: Option<ZarrFormat>,
) -> ArrayResult<Option<NodeDocuments>> {
    read_documents(store, path.trim_matches('/'), format)
}

fn read_documents(
    store: &dyn Store,
    path: &str,
    format: Option<ZarrFormat>,
) -> ArrayResult<Option<NodeDocuments>> {
    if format.is_none_or(|f| f == ZarrFormat::V3) {
        if let Some(doc) = read_doc(store, path, ZARR_JSON)? {
            return v3_documents(path, doc).map(Some);
        }
    }
    if format.is_none_or(|f| f == ZarrFormat::V2) {
        let array = read_doc(store, path, ZARRAY)?;
        if array.is_some() || store.exists(&join_key(path, ZGROUP))? {
            let attributes = object_or_empty(read_doc(store, path, ZATTRS)?, path, ZATTRS)?;
            return Ok(Some(NodeDocuments {
                path: path.to_string(),
                kind: match array {
                    Some(_) => DocumentKind::Array,
                    None => DocumentKind::Group,
                },
                format: ZarrFormat::V2,
                attributes,
                array_document: array,
            }));
        }
    }
    if format.is_none_or(|f| f == ZarrFormat::N5)
        && store.exists(&join_key(path, ATTRIBUTES_JSON))?
    {
        return Err(n5_unsupported(path));
    }
    Ok(None)
}

fn n5_unsupported(path: &str) -> ArrayError {
    ArrayError::Unsupported {
        path: crate::display_path(path),
        message: "N5 has no document walk (open the node instead)".into(),
    }
}

/// A v3 node from its `zarr.json` (consolidated metadata removed). Attributes are moved out of
/// group documents and copied out of array documents, which are kept whole.
fn v3_documents(path: &str, mut doc: Value) -> ArrayResult<NodeDocuments> {
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| ArrayError::metadata(path, "zarr.json must be a JSON object"))?;
    obj.remove("consolidated_metadata");
    let kind = match obj.get("node_type").and_then(Value::as_str) {
        Some("group") => DocumentKind::Group,
        Some("array") => DocumentKind::Array,
        other => {
            return Err(ArrayError::metadata(
                path,
                format!(
                    "zarr.json: node_type must be \"array\" or \"group\", found {}",
                    other.unwrap_or("nothing")
                ),
            ))
        }
    };
    let attributes = match kind {
        DocumentKind::Group => obj.remove("attributes"),
        DocumentKind::Array => obj.get("attributes").cloned(),
    };
    let attributes = object_or_empty(attributes, path, "zarr.json 'attributes'")?;
    Ok(NodeDocuments {
        path: path.to_string(),
        kind,
        format: ZarrFormat::V3,
        attributes,
        array_document: (kind == DocumentKind::Array).then_some(doc),
    })
}

fn object_or_empty(
    value: Option<Value>,
    path: &str,
    what: &str,
) -> ArrayResult<Map<String, Value>> {
    match value {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(ArrayError::metadata(
            path,
            format!("{what} must be a JSON object, found {other}"),
        )),
    }
}

/// The walk from the consolidated metadata of the group at `path`, or `None` when it has none.
/// Documents are moved out of the parsed tree, never copied: large hierarchies hold hundreds
/// of thousands of them.
fn consolidated_documents(store: &dyn Store, path: &str) -> ArrayResult<Option<DocumentWalk>> {
    if let Some(mut root) = read_doc(store, path, ZARR_JSON)? {
        let entries = root
            .get_mut("consolidated_metadata")
            .filter(|c| !c.is_null())
            .map(|c| match c.get_mut("metadata").map(Value::take) {
                Some(Value::Object(entries)) => Ok(entries),
                _ => Err(ArrayError::metadata(
                    path,
                    "zarr.json: consolidated_metadata is missing its 'metadata' object",
                )),
            })
            .transpose()?;
        let root = v3_documents(path, root)?;
        let Some(entries) = entries else {
            return Ok(None);
        };
        if root.kind != DocumentKind::Group {
            return Ok(None);
        }
        let mut nodes = Vec::with_capacity(entries.len() + 1);
        nodes.push(root);
        for (rel, doc) in entries {
            let full = child_path(path, &rel);
            nodes.push(v3_documents(&full, doc)?);
        }
        nodes.sort_by(|a, b| a.path.cmp(&b.path));
        return Ok(Some(DocumentWalk {
            format: ZarrFormat::V3,
            consolidated: true,
            nodes,
        }));
    }
    let Some(mut doc) = read_doc(store, path, ZMETADATA)? else {
        return Ok(None);
    };
    let Some(Value::Object(metadata)) = doc.get_mut("metadata").map(Value::take) else {
        return Err(ArrayError::metadata(
            path,
            ".zmetadata is missing its 'metadata' object",
        ));
    };
    let mut groups: Vec<String> = Vec::new();
    let mut arrays: Vec<(String, Value)> = Vec::new();
    let mut attrs: std::collections::HashMap<String, Value> = std::collections::HashMap::new();
    for (key, value) in metadata {
        let (rel, name) = match key.rsplit_once('/') {
            Some((rel, name)) => (rel, name),
            None => ("", key.as_str()),
        };
        let full = child_path(path, rel);
        match name {
            ZGROUP => groups.push(full),
            ZARRAY => arrays.push((full, value)),
            ZATTRS => {
                attrs.insert(full, value);
            }
            _ => {}
        }
    }
    let mut nodes = Vec::with_capacity(groups.len() + arrays.len() + 1);
    let mut node = |path: String, array_document: Option<Value>| -> ArrayResult<()> {
        let attributes = object_or_empty(attrs.remove(&path), &path, ZATTRS)?;
        nodes.push(NodeDocuments {
            kind: match array_document {
                Some(_) => DocumentKind::Array,
                None => DocumentKind::Group,
            },
            path,
            format: ZarrFormat::V2,
            attributes,
            array_document,
        });
        Ok(())
    };
    for group in groups {
        node(group, None)?;
    }
    for (array, doc) in arrays {
        node(array, Some(doc))?;
    }
    if !nodes.iter().any(|n| n.path == path) {
        // `.zmetadata` without the start group's own `.zgroup`: read its attributes directly.
        let attributes = object_or_empty(read_doc(store, path, ZATTRS)?, path, ZATTRS)?;
        nodes.push(NodeDocuments {
            path: path.to_string(),
            kind: DocumentKind::Group,
            format: ZarrFormat::V2,
            attributes,
            array_document: None,
        });
    }
    nodes.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Some(DocumentWalk {
        format: ZarrFormat::V2,
        consolidated: true,
        nodes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use neurochunk_store::{Bytes, MemoryStore};

    /// An array document of `format` with attributes `{"n": 1}` and a codec nobody knows (a
    /// document walk builds no codec chain, so it does not matter).
    fn put_array(store: &dyn Store, path: &str, format: ZarrFormat) {
        match format {
            ZarrFormat::V2 => {
                let doc = json!({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<u2",
                    "compressor": {"id": "no-such-codec"}, "fill_value": 0, "filters": null,
                    "order": "C"});
                store
                    .set(&join_key(path, ZARRAY), Bytes::from(doc.to_string()))
                    .unwrap();
                store
                    .set(&join_key(path, ZATTRS), Bytes::from_static(b"{\"n\": 1}"))
                    .unwrap();
            }
            _ => {
                let doc = json!({"zarr_format": 3, "node_type": "array", "shape": [2],
                    "data_type": "uint16", "chunk_grid": {"name": "regular",
                    "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding":
                    {"name": "default"}, "fill_value": 0, "codecs": [{"name": "no-such-codec"}],
                    "attributes": {"n": 1}});
                store
                    .set(&join_key(path, ZARR_JSON), Bytes::from(doc.to_string()))
                    .unwrap();
            }
        }
    }

    #[test]
    fn document_walks_come_from_consolidated_metadata_or_listing() {
        for format in [ZarrFormat::V2, ZarrFormat::V3] {
            let s = MemoryStore::new();
            let mut attrs = Map::new();
            attrs.insert("root".into(), json!(true));
            create_group(&s, "", format, attrs).unwrap();
            create_group(&s, "g", format, Map::new()).unwrap();
            put_array(&s, "g/x", format);
            put_array(&s, "g/implicit/y", format);
            s.set("g/x/0", Bytes::from_static(b"chunk")).unwrap();

            let listed = walk_documents(&s, "").unwrap();
            assert!(!listed.consolidated);
            assert_eq!(listed.format, format);
            let paths: Vec<&str> = listed.nodes.iter().map(|n| n.path.as_str()).collect();
            assert_eq!(paths, ["", "g", "g/implicit/y", "g/x"], "{format:?}");
            assert_eq!(listed.nodes[0].attributes["root"], json!(true));
            let x = &listed.nodes[3];
            assert_eq!((x.kind, x.format), (DocumentKind::Array, format));
            assert_eq!(x.attributes["n"], json!(1));
            assert_eq!(x.array_document.as_ref().unwrap()["shape"], json!([2]));
            assert_eq!(listed.nodes[1].kind, DocumentKind::Group);
            assert!(listed.nodes[1].array_document.is_none());

            assert_eq!(consolidate(&s, "").unwrap(), 4);
            let consolidated = walk_documents(&s, "").unwrap();
            assert!(consolidated.consolidated);
            assert_eq!(consolidated.nodes, listed.nodes, "{format:?}");
            assert!(!list_documents(&s, "").unwrap().consolidated);
            // From a sub-group: paths stay store paths.
            let sub = walk_documents(&s, "g").unwrap();
            let paths: Vec<&str> = sub.nodes.iter().map(|n| n.path.as_str()).collect();
            assert_eq!(paths, ["g", "g/implicit/y", "g/x"]);

            // A node added after consolidation is missing from the walk but can be looked up.
            create_group(&s, "late", format, Map::new()).unwrap();
            let stale = walk_documents(&s, "").unwrap();
            assert!(stale.nodes.iter().all(|n| n.path != "late"));
            let late = read_node_documents(&s, "late", None).unwrap().unwrap();
            assert_eq!((late.kind, late.format), (DocumentKind::Group, format));
            assert!(read_node_documents(&s, "absent", Some(format))
                .unwrap()
                .is_none());
            assert!(matches!(
                walk_documents(&s, "absent"),
                Err(ArrayError::NotFound(_))
            ));
        }
    }

    #[test]
    fn document_walks_name_bad_documents_and_refuse_n5() {
        let s = MemoryStore::new();
        create_group(&s, "", ZarrFormat::V3, Map::new()).unwrap();
        s.set("bad/zarr.json", Bytes::from_static(b"{\"node_type\": 3}"))
            .unwrap();
        let err = walk_documents(&s, "").unwrap_err().to_string();
        assert!(err.contains("/bad") && err.contains("node_type"), "{err}");

        let s = MemoryStore::new();
        s.set(ATTRIBUTES_JSON, Bytes::from_static(b"{\"n5\": \"2.0.0\"}"))
            .unwrap();
        let err = walk_documents(&s, "").unwrap_err();
        assert!(matches!(err, ArrayError::Unsupported { .. }), "{err}");
    }
}
