//! The inventory of a file (typed objects, links, attribute and dataset references) as the
//! `nwb inspect` JSON document and as a readable tree, and the `nwb check` resolution of every
//! link and reference.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use crate::convention::{
    is_text_type_name, numeric_type_from_name, LEGACY_DTYPE, SPECLOC, V3_DTYPE,
};
use crate::error::HdmfResult;
use crate::file::{AttributeRef, DatasetRef, Link, NwbFile, TypedObject};
use crate::index::NodeKind;
use crate::reference::Reference;
use neurochunk_array::{list_documents, walk_documents, NodeDocuments};

/// Everything `nwb inspect` reports.
#[derive(Clone, Debug)]
pub struct Inventory {
    /// Every typed object, sorted by path.
    pub objects: Vec<TypedObject>,
    /// Every link, sorted by path.
    pub links: Vec<Link>,
    /// Every reference stored in an attribute, sorted by (path, attribute).
    pub attribute_refs: Vec<AttributeRef>,
    /// Every reference stored in a dataset, sorted by (path, index, field).
    pub dataset_refs: Vec<DatasetRef>,
}

impl Inventory {
    /// Collect the inventory (reads every reference dataset).
    pub fn of(file: &NwbFile) -> HdmfResult<Self> {
        Ok(Inventory {
            objects: file.typed_objects(),
            links: file.links()?,
            attribute_refs: file.attribute_references()?,
            dataset_refs: file.dataset_references()?,
        })
    }

    /// The `nwb inspect --json` document.
    pub fn to_json(&self) -> Value {
        let objects: Vec<Value> = self
            .objects
            .iter()
            .map(|o| {
                json!({
                    "path": o.path,
                    "neurodata_type": o.neurodata_type,
                    "namespace": o.namespace,
                    "object_id": o.object_id,
                })
            })
            .collect();
        let links: Vec<Value> = self
            .links
            .iter()
            .map(|l| json!({"path": l.path, "target": l.target, "source": l.source}))
            .collect();
        let attribute_refs: Vec<Value> = self
            .attribute_refs
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("path".into(), r.path.clone().into());
                m.insert("attribute".into(), r.attribute.clone().into());
                m.insert("target".into(), r.reference.path.clone().into());
                add_region(&mut m, &r.reference);
                m.into()
            })
            .collect();
        let dataset_refs: Vec<Value> = self
            .dataset_refs
            .iter()
            .map(|r| {
                let mut m = Map::new();
                m.insert("path".into(), r.path.clone().into());
                m.insert("index".into(), r.index.into());
                if let Some(f) = &r.field {
                    m.insert("field".into(), f.clone().into());
                }
                m.insert("target".into(), r.reference.path.clone().into());
                add_region(&mut m, &r.reference);
                m.into()
            })
            .collect();
        json!({
            "objects": objects,
            "links": links,
            "attribute_refs": attribute_refs,
            "dataset_refs": dataset_refs,
        })
    }

    /// A readable tree: each typed object with the links and references it holds.
    pub fn to_text(&self, file: &NwbFile) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} ({}, NWB {})",
            file.name(),
            file.storage_description(),
            file.nwb_version().unwrap_or("unknown")
        );
        // Group links and references under the nearest typed object at or above them.
        let owner = |path: &str| -> String {
            let mut p = path.to_string();
            loop {
                if self.objects.iter().any(|o| o.path == p) {
                    return p;
                }
                if p == "/" {
                    return p;
                }
                p = crate::file::parent_of(&p);
            }
        };
        let mut notes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for l in &self.links {
            let src = if l.source == "." {
                String::new()
            } else {
                format!(" in {}", l.source)
            };
            notes
                .entry(owner(&l.parent))
                .or_default()
                .push(format!("link {} -> {}{src}", l.path, l.target));
        }
        for r in &self.attribute_refs {
            notes.entry(owner(&r.path)).or_default().push(format!(
                "{}@{} -> {}{}",
                r.path,
                r.attribute,
                r.reference.path,
                region_note(&r.reference)
            ));
        }
        let mut per_dataset: BTreeMap<&str, Vec<&DatasetRef>> = BTreeMap::new();
        for r in &self.dataset_refs {
            per_dataset.entry(r.path.as_str()).or_default().push(r);
        }
        for (path, refs) in per_dataset {
            let mut targets: Vec<&str> = refs.iter().map(|r| r.reference.path.as_str()).collect();
            targets.sort();
            targets.dedup();
            let shown: Vec<&str> = targets.iter().take(3).copied().collect();
            let more = if targets.len() > 3 {
                format!(", … ({} targets)", targets.len())
            } else {
                String::new()
            };
            notes.entry(owner(path)).or_default().push(format!(
                "{path}: {} reference(s) -> {}{more}",
                refs.len(),
                shown.join(", ")
            ));
        }
        for o in &self.objects {
            let depth = if o.path == "/" {
                0
            } else {
                o.path.matches('/').count()
            };
            let indent = "  ".repeat(depth);
            let kind = match o.kind {
                NodeKind::Group => "",
                NodeKind::Dataset => " [dataset]",
            };
            let _ = writeln!(
                out,
                "{indent}{} {}{kind} ({}){}",
                o.path,
                o.neurodata_type,
                o.namespace.as_deref().unwrap_or("?"),
                o.object_id
                    .as_deref()
                    .map(|id| format!(" {id}"))
                    .unwrap_or_default()
            );
            for note in notes.remove(&o.path).unwrap_or_default() {
                let _ = writeln!(out, "{indent}  - {note}");
            }
        }
        for (path, rest) in notes {
            for note in rest {
                let _ = writeln!(out, "{path}: {note}");
            }
        }
        let _ = writeln!(
            out,
            "{} typed objects, {} links, {} attribute references, {} dataset references",
            self.objects.len(),
            self.links.len(),
            self.attribute_refs.len(),
            self.dataset_refs.len()
        );
        out
    }
}

fn add_region(m: &mut Map<String, Value>, r: &Reference) {
    if let Some(region) = &r.region {
        m.insert("region".into(), region.to_json());
    }
}

fn region_note(r: &Reference) -> String {
    r.region
        .as_ref()
        .map(|g| format!(" region {}", g.to_json()))
        .unwrap_or_default()
}

/// One unresolvable link or reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// Where the link or reference is stored.
    pub path: String,
    /// Why it does not resolve.
    pub message: String,
}

/// Attributes that name a type or identify an object: text wherever they appear.
const TEXT_ATTRIBUTES: &[&str] = &["neurodata_type", "data_type", "namespace", "object_id"];

/// Whether a `zarr_dtype` / `_DTYPE` value is one hdmf-zarr writes: a numeric or text type
/// name, a reference or scalar marker, or a compound's list of `{name, dtype}` fields.
fn known_dtype_marker(value: &Value) -> bool {
    match value {
        Value::String(name) => {
            matches!(
                name.as_str(),
                "object" | "region" | "scalar" | "object_reference" | "region_reference"
            ) || is_text_type_name(name)
                || numeric_type_from_name(name).is_some()
        }
        Value::Array(fields) => fields.iter().all(|f| {
            f.get("name").is_some_and(Value::is_string)
                && f.get("dtype").is_some_and(known_field_dtype)
        }),
        _ => false,
    }
}

/// Whether the `dtype` of a compound field is one hdmf-zarr writes: a type name or marker,
/// a nested field list, or a reference's `{reftype, target_type}` description.
fn known_field_dtype(dtype: &Value) -> bool {
    match dtype {
        Value::Object(o) => o.contains_key("reftype") || o.contains_key("target_type"),
        other => known_dtype_marker(other),
    }
}

/// What makes the file not an NWB (or HDMF) file, or makes its typed structure unreadable:
/// a root group with no `neurodata_type`, `data_type` or `nwb_version`; a type, namespace or
/// object id attribute that is not text; a `zarr_dtype` / `_DTYPE` hdmf-zarr does not write.
/// Each problem names the node and the attribute.
pub fn structure_problems(file: &NwbFile) -> Vec<Problem> {
    let mut problems = Vec::new();
    let root = file.root_attributes();
    let typed_root = ["neurodata_type", "data_type", "nwb_version"]
        .iter()
        .any(|k| root.get(*k).is_some_and(Value::is_string));
    if !typed_root {
        problems.push(Problem {
            path: "/".into(),
            message: "not an NWB or HDMF file: the root group has no neurodata_type, data_type \
                      or nwb_version attribute"
                .into(),
        });
    }
    problems.extend(attribute_problems(file));
    problems
}

/// Type, namespace or object id attributes that are not text, and `zarr_dtype` / `_DTYPE`
/// values hdmf-zarr does not write, on every node.
fn attribute_problems(file: &NwbFile) -> Vec<Problem> {
    let mut problems = Vec::new();
    let paths: Vec<String> = file.nodes().map(|(p, _)| p.to_string()).collect();
    for path in paths {
        let Ok(Some(node)) = file.node(&path) else {
            continue;
        };
        for key in TEXT_ATTRIBUTES {
            if let Some(value) = node.attributes.get(*key).filter(|v| !v.is_string()) {
                problems.push(Problem {
                    path: path.clone(),
                    message: format!("attribute '{key}' must be text, found {value}"),
                });
            }
        }
        for key in [LEGACY_DTYPE, V3_DTYPE] {
            if let Some(value) = node.attributes.get(key) {
                if !known_dtype_marker(value) {
                    problems.push(Problem {
                        path: path.clone(),
                        message: format!(
                            "unknown {key} {value}: a data type hdmf-zarr does not write"
                        ),
                    });
                }
            }
        }
    }
    problems
}

/// The members of an array document that describe its data; two copies of a document agree
/// when these do (a member absent from one and `null` in the other counts as equal).
const DATA_MEMBERS: &[&str] = &[
    "shape",
    "chunks",
    "chunk_grid",
    "dtype",
    "data_type",
    "compressor",
    "filters",
    "codecs",
    "order",
    "fill_value",
];

/// Attributes without hdmf-zarr's `.specloc`, which hdmf-zarr writes to the root after it
/// consolidates the metadata (so the consolidated copy of a fine file lacks it).
fn without_specloc(attributes: &Map<String, Value>) -> Map<String, Value> {
    let mut kept = attributes.clone();
    kept.remove(SPECLOC);
    kept
}

/// Where a file opened from consolidated metadata no longer matches its store: nodes the
/// consolidated metadata lists that the store lacks, and nodes whose attributes or array
/// description differ from their consolidated copy (what an interrupted or outside edit
/// leaves). Nodes only in the store are not reported: hdmf-zarr leaves the cached
/// specifications out of its consolidated metadata. Empty for files opened by listing.
pub fn consolidated_problems(file: &NwbFile) -> Vec<Problem> {
    if !file.used_consolidated_metadata() {
        return Vec::new();
    }
    let location = file.location();
    let store = location.store.as_ref();
    let consolidated = match walk_documents(store, &location.prefix) {
        Ok(walk) if walk.consolidated => walk,
        _ => return Vec::new(),
    };
    let listed = match list_documents(store, &location.prefix) {
        Ok(walk) => walk,
        Err(e) => {
            return vec![Problem {
                path: "/".into(),
                message: format!(
                    "the store cannot be listed to compare with its consolidated metadata: {e}"
                ),
            }]
        }
    };
    let stored: BTreeMap<&str, &NodeDocuments> =
        listed.nodes.iter().map(|n| (n.path.as_str(), n)).collect();
    let member = |doc: &Option<Value>, key: &str| -> Value {
        doc.as_ref()
            .and_then(|d| d.get(key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut problems = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    for node in &consolidated.nodes {
        let within = node
            .path
            .strip_prefix(location.prefix.as_str())
            .unwrap_or(&node.path)
            .trim_start_matches('/');
        let path = format!("/{within}");
        let Some(actual) = stored.get(node.path.as_str()) else {
            // One line for a missing subtree: its children are missing with it.
            if !missing.iter().any(|m| path.starts_with(&format!("{m}/"))) {
                problems.push(Problem {
                    path: path.clone(),
                    message: "listed in the consolidated metadata but missing from the store"
                        .into(),
                });
                missing.push(path);
            }
            continue;
        };
        let differs = if actual.kind != node.kind {
            Some("is a group in one and an array in the other".to_string())
        } else if without_specloc(&actual.attributes) != without_specloc(&node.attributes) {
            Some("its attributes differ from the consolidated copy".to_string())
        } else {
            DATA_MEMBERS
                .iter()
                .find(|k| member(&actual.array_document, k) != member(&node.array_document, k))
                .map(|k| format!("its '{k}' differs from the consolidated copy"))
        };
        if let Some(message) = differs {
            problems.push(Problem { path, message });
        }
    }
    problems
}

/// Compare the store with its consolidated metadata ([`consolidated_problems`]), check the
/// file's typed attributes (as [`structure_problems`] does, except for the root's type, which
/// only `nwb inspect` requires) and resolve every link and reference; each failure becomes a
/// [`Problem`] (the rest of the file is still checked).
pub fn check(file: &NwbFile) -> Vec<Problem> {
    let mut problems = consolidated_problems(file);
    problems.extend(attribute_problems(file));
    match file.links() {
        Ok(links) => {
            for l in links {
                if let Err(e) = file.resolve(&l.path) {
                    problems.push(Problem {
                        path: l.path.clone(),
                        message: format!(
                            "link to '{}' ({}) does not resolve: {e}",
                            l.target, l.source
                        ),
                    });
                }
            }
        }
        Err(e) => problems.push(problem_from(e)),
    }
    let check_reference = |where_: String, r: &Reference| -> Option<Problem> {
        if let Err(e) = file.dereference(r) {
            return Some(Problem {
                path: where_,
                message: format!(
                    "reference to '{}' ({}) does not resolve: {e}",
                    r.path, r.source
                ),
            });
        }
        if r.region.is_some() {
            if let Err(e) = file.read_reference(r) {
                return Some(Problem {
                    path: where_,
                    message: format!("region of '{}' cannot be read: {e}", r.path),
                });
            }
        }
        None
    };
    match file.attribute_references() {
        Ok(refs) => {
            for r in refs {
                problems.extend(check_reference(
                    format!("{}@{}", r.path, r.attribute),
                    &r.reference,
                ));
            }
        }
        Err(e) => problems.push(problem_from(e)),
    }
    for path in file.reference_datasets() {
        match file.read_dataset(&path, None) {
            Ok(ds) => {
                // Resolve each distinct target once; report the first element using it.
                let mut seen = std::collections::HashSet::new();
                for (index, field, r) in ds.value.references() {
                    if seen.insert((
                        r.source.clone(),
                        r.path.clone(),
                        r.region.clone().map(|g| g.to_json().to_string()),
                    )) {
                        let at = match field {
                            Some(f) => format!("{path}[{index}].{f}"),
                            None => format!("{path}[{index}]"),
                        };
                        problems.extend(check_reference(at, r));
                    }
                }
            }
            Err(e) => problems.push(Problem {
                path: path.clone(),
                message: e.to_string(),
            }),
        }
    }
    problems
}

/// A file-level failure as a problem at the object it names.
fn problem_from(error: crate::HdmfError) -> Problem {
    let path = match &error {
        crate::HdmfError::Malformed { path, .. } | crate::HdmfError::Invalid { path, .. } => {
            path.clone()
        }
        _ => "/".into(),
    };
    Problem {
        path,
        message: error.to_string(),
    }
}
