//! The table of every group and dataset of a file with its attributes and raw array metadata,
//! built from consolidated metadata in one read when the file has it, else by walking the store.

use std::collections::BTreeMap;
use std::path::Path;

use neurochunk_dtype::json::parse_lenient;
use neurochunk_store::{join_key, Store};
use serde_json::{Map, Value};

use crate::convention::Convention;
use crate::error::{HdmfError, HdmfResult};

const ZGROUP: &str = ".zgroup";
const ZARRAY: &str = ".zarray";
const ZATTRS: &str = ".zattrs";
const ZMETADATA: &str = ".zmetadata";
const ZARR_JSON: &str = "zarr.json";

/// Whether a node is a group or a dataset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeKind {
    Group,
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

/// The absolute node path of a store prefix.
fn node_path(prefix: &str) -> String {
    format!("/{}", prefix.trim_matches('/'))
}

fn parse(file: &Path, store: &dyn Store, key: &str) -> HdmfResult<Option<Value>> {
    match store.get(key).map_err(|e| HdmfError::store(file, e))? {
        None => Ok(None),
        Some(bytes) => parse_lenient(&bytes).map(Some).map_err(|e| {
            HdmfError::malformed(file, &node_path(key), format!("not valid JSON: {e}"))
        }),
    }
}

fn object(
    file: &Path,
    path: &str,
    what: &str,
    value: Option<Value>,
) -> HdmfResult<Map<String, Value>> {
    match value {
        None => Ok(Map::new()),
        Some(Value::Object(map)) => Ok(map),
        Some(other) => Err(HdmfError::malformed(
            file,
            path,
            format!("{what} must be a JSON object, found {other}"),
        )),
    }
}

/// Detect the convention of the file at the store's root.
pub(crate) fn detect(file: &Path, store: &dyn Store) -> HdmfResult<Convention> {
    let has = |key: &str| store.exists(key).map_err(|e| HdmfError::store(file, e));
    if has(ZARR_JSON)? {
        Ok(Convention::V3)
    } else if has(ZGROUP)? || has(ZMETADATA)? {
        Ok(Convention::Legacy)
    } else {
        Err(HdmfError::NotNwb {
            file: file.to_path_buf(),
            message: "not a Zarr group (no zarr.json, .zgroup or .zmetadata at its root)".into(),
        })
    }
}

impl NodeIndex {
    /// Build the table; `use_consolidated` prefers consolidated metadata when present.
    pub fn build(
        file: &Path,
        store: &dyn Store,
        convention: Convention,
        use_consolidated: bool,
    ) -> HdmfResult<Self> {
        if use_consolidated {
            let found = match convention {
                Convention::Legacy => Self::from_zmetadata(file, store)?,
                Convention::V3 => Self::from_inline(file, store)?,
            };
            if let Some(index) = found {
                return Ok(index);
            }
        }
        Self::walk(file, store, convention)
    }

    fn from_zmetadata(file: &Path, store: &dyn Store) -> HdmfResult<Option<Self>> {
        let Some(mut doc) = parse(file, store, ZMETADATA)? else {
            return Ok(None);
        };
        let Some(Value::Object(metadata)) = doc.get_mut("metadata").map(Value::take) else {
            return Err(HdmfError::malformed(
                file,
                "/",
                ".zmetadata has no 'metadata' object",
            ));
        };
        // Documents are moved out of the parsed tree, never copied: large files hold
        // hundreds of thousands of them.
        let mut groups: Vec<String> = Vec::new();
        let mut arrays: BTreeMap<String, Value> = BTreeMap::new();
        let mut attrs: BTreeMap<String, Value> = BTreeMap::new();
        for (key, value) in metadata {
            let (dir, name) = match key.rsplit_once('/') {
                Some((dir, name)) => (dir, name),
                None => ("", key.as_str()),
            };
            let path = node_path(dir);
            match name {
                ZGROUP => groups.push(path),
                ZARRAY => {
                    arrays.insert(path, value);
                }
                ZATTRS => {
                    attrs.insert(path, value);
                }
                _ => {}
            }
        }
        let mut index = NodeIndex {
            nodes: BTreeMap::new(),
            consolidated: true,
        };
        for path in groups {
            let attributes = object(file, &path, ".zattrs", attrs.remove(&path))?;
            index.nodes.insert(
                path,
                NodeDoc {
                    kind: NodeKind::Group,
                    attributes,
                    array_doc: None,
                },
            );
        }
        for (path, doc) in arrays {
            let attributes = object(file, &path, ".zattrs", attrs.remove(&path))?;
            index.nodes.insert(
                path,
                NodeDoc {
                    kind: NodeKind::Dataset,
                    attributes,
                    array_doc: Some(doc),
                },
            );
        }
        if !index.nodes.contains_key("/") {
            // .zmetadata without the root's own .zgroup: read it directly.
            let attributes = object(file, "/", ".zattrs", parse(file, store, ZATTRS)?)?;
            index.nodes.insert(
                "/".into(),
                NodeDoc {
                    kind: NodeKind::Group,
                    attributes,
                    array_doc: None,
                },
            );
        }
        Ok(Some(index))
    }

    fn from_inline(file: &Path, store: &dyn Store) -> HdmfResult<Option<Self>> {
        let Some(mut root) = parse(file, store, ZARR_JSON)? else {
            return Ok(None);
        };
        let Some(Value::Object(entries)) = root
            .get_mut("consolidated_metadata")
            .and_then(|c| c.get_mut("metadata"))
            .map(Value::take)
        else {
            return Ok(None);
        };
        let mut index = NodeIndex {
            nodes: BTreeMap::new(),
            consolidated: true,
        };
        index.insert_v3(file, "/", root)?;
        for (rel, doc) in entries {
            index.insert_v3(file, &node_path(&rel), doc)?;
        }
        Ok(Some(index))
    }

    fn insert_v3(&mut self, file: &Path, path: &str, mut doc: Value) -> HdmfResult<()> {
        let obj = doc
            .as_object_mut()
            .ok_or_else(|| HdmfError::malformed(file, path, "zarr.json must be a JSON object"))?;
        obj.remove("consolidated_metadata");
        let attributes = object(
            file,
            path,
            "zarr.json 'attributes'",
            obj.get("attributes").cloned(),
        )?;
        let kind = match obj.get("node_type").and_then(Value::as_str) {
            Some("group") => NodeKind::Group,
            Some("array") => NodeKind::Dataset,
            other => {
                return Err(HdmfError::malformed(
                    file,
                    path,
                    format!("zarr.json node_type must be \"group\" or \"array\", found {other:?}"),
                ))
            }
        };
        self.nodes.insert(
            path.to_string(),
            NodeDoc {
                kind,
                attributes,
                array_doc: (kind == NodeKind::Dataset).then_some(doc),
            },
        );
        Ok(())
    }

    /// Read one node's documents directly from the store (no consolidated metadata).
    pub fn read_node(
        file: &Path,
        store: &dyn Store,
        convention: Convention,
        path: &str,
    ) -> HdmfResult<Option<NodeDoc>> {
        let key = store_key(path);
        match convention {
            Convention::V3 => {
                let Some(doc) = parse(file, store, &join_key(key, ZARR_JSON))? else {
                    return Ok(None);
                };
                let mut one = NodeIndex::default();
                one.insert_v3(file, path, doc)?;
                Ok(one.nodes.into_values().next())
            }
            Convention::Legacy => {
                let array = parse(file, store, &join_key(key, ZARRAY))?;
                let is_group = array.is_none()
                    && store
                        .exists(&join_key(key, ZGROUP))
                        .map_err(|e| HdmfError::store(file, e))?;
                if array.is_none() && !is_group {
                    return Ok(None);
                }
                let attributes = object(
                    file,
                    path,
                    ".zattrs",
                    parse(file, store, &join_key(key, ZATTRS))?,
                )?;
                Ok(Some(NodeDoc {
                    kind: if is_group {
                        NodeKind::Group
                    } else {
                        NodeKind::Dataset
                    },
                    attributes,
                    array_doc: array,
                }))
            }
        }
    }

    fn walk(file: &Path, store: &dyn Store, convention: Convention) -> HdmfResult<Self> {
        let mut index = NodeIndex::default();
        let mut pending = vec!["/".to_string()];
        while let Some(path) = pending.pop() {
            let Some(node) = Self::read_node(file, store, convention, &path)? else {
                if path == "/" {
                    return Err(HdmfError::NotNwb {
                        file: file.to_path_buf(),
                        message: "the root is not a Zarr group".into(),
                    });
                }
                continue;
            };
            if node.kind == NodeKind::Group {
                let listing = store
                    .list_dir(store_key(&path))
                    .map_err(|e| HdmfError::store(file, e))?;
                for name in listing.prefixes {
                    let name = name.trim_matches('/');
                    // Leftovers of interrupted writes are not part of the file.
                    if name.starts_with(".neurochunk-tmp-") {
                        continue;
                    }
                    pending.push(child(&path, name));
                }
            }
            index.nodes.insert(path, node);
        }
        Ok(index)
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
