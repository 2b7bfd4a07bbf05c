//! Groups and hierarchies: opening any node (Zarr v2, Zarr v3 or N5), creating groups, walking
//! a tree (from consolidated metadata when the root has it), and writing consolidated metadata.

use std::sync::Arc;

use neurochunk_store::{join_key, Store};
use serde_json::{json, Map, Value};

use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{
    document_bytes, parse_document, parse_v2_consolidated, ArrayMetadata, GroupMetadata,
    NodeMetadata, ZarrFormat, ZARRAY, ZARR_JSON, ZATTRS, ZGROUP, ZMETADATA,
};
use crate::n5::{OpenOptions, ATTRIBUTES_JSON};

/// A node of a hierarchy.
#[derive(Clone, Debug)]
pub struct Node {
    /// Path within the store (`""` for the root).
    pub path: String,
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
        if doc.get("zarr_format").and_then(Value::as_u64) != Some(2) {
            return Err(ArrayError::metadata(path, ".zgroup: zarr_format must be 2"));
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
                document_bytes(&json!({"zarr_format": 2}), format).into(),
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
    }
    Ok(())
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
    while let Some(dir) = pending.pop() {
        for name in store.list_dir(&dir)?.prefixes {
            let child = child_path(&dir, &name);
            match read_node_metadata_with(store, &child, options) {
                Ok(meta) => {
                    if matches!(meta, NodeMetadata::Group(_)) {
                        pending.push(child.clone());
                    }
                    nodes.push(NodeEntry {
                        path: child,
                        metadata: Ok(meta),
                    });
                }
                // A directory without metadata (an implicit v2 group) may still hold nodes.
                Err(ArrayError::NotFound(_)) => pending.push(child),
                // A store failure is not a property of one node: it ends the walk.
                Err(e @ ArrayError::Store(_)) => return Err(e),
                Err(e) => nodes.push(NodeEntry {
                    path: child,
                    metadata: Err(Arc::new(e)),
                }),
            }
        }
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
    if group.format == ZarrFormat::N5 {
        return Err(ArrayError::Unsupported {
            path: crate::display_path(path),
            message: "N5 has no consolidated metadata".into(),
        });
    }
    let nodes = walk(store, root.clone(), &OpenOptions::default())?;
    let relative = |p: &str| p[path.len()..].trim_start_matches('/').to_string();
    match group.format {
        ZarrFormat::V2 => {
            let mut metadata = Map::new();
            for node in &nodes {
                let rel = relative(&node.path);
                for file in [ZGROUP, ZARRAY, ZATTRS] {
                    if let Some(doc) = read_doc(store, &node.path, file)? {
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
            for node in nodes.iter().filter(|n| n.path != root.path) {
                let Some(mut doc) = read_doc(store, &node.path, ZARR_JSON)? else {
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
                entries.push((relative(&node.path), doc));
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
        ZarrFormat::N5 => {}
    }
    Ok(nodes.len())
}
