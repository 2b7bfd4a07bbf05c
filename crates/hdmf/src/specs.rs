//! Specifications to cache: parsed from a namespace YAML document and the schema sources it
//! names (as pynwb and HDMF extensions ship them), or copied from another file's cache.
//!
//! [`parse_namespaces`] takes the documents' contents (from anywhere);
//! [`load_namespace_file`] is its filesystem convenience, reading the sources from the
//! directory of the namespace file.

use std::path::Path;

use serde_json::Value;

use crate::error::{HdmfError, HdmfResult};
use crate::file::NwbFile;
use crate::write::NamespaceDocs;

/// Every namespace declared in a namespace YAML (or JSON) file, with its schema sources read
/// from the same directory: the filesystem convenience over [`parse_namespaces`].
pub fn load_namespace_file(path: &Path) -> HdmfResult<Vec<NamespaceDocs>> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map_err(|e| HdmfError::input(path.display().to_string(), format!("cannot read: {e}")))
    };
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    parse_namespaces(
        &path.display().to_string(),
        &read(path)?,
        &mut |source: &str| {
            let source_path = dir.join(source);
            Ok((source_path.display().to_string(), read(&source_path)?))
        },
    )
}

/// Every namespace declared in the namespace YAML (or JSON) document `text` (named `name` in
/// errors). `read_source` returns each schema source the namespaces list, by its `source`
/// name, as (a name for errors, its text). Source names lose their extension
/// (`nwb.base.yaml` → `nwb.base`), as hdmf-zarr caches them.
pub fn parse_namespaces(
    name: &str,
    text: &str,
    read_source: &mut dyn FnMut(&str) -> HdmfResult<(String, String)>,
) -> HdmfResult<Vec<NamespaceDocs>> {
    let input = |message: String| HdmfError::input(name, message);
    let doc = parse_yaml(name, text)?;
    let namespaces = doc
        .get("namespaces")
        .and_then(Value::as_array)
        .ok_or_else(|| input("a namespace file needs a 'namespaces' list".into()))?;
    let mut out = Vec::new();
    for ns in namespaces {
        let ns_name = ns
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| input("a namespace has no 'name'".into()))?;
        let version = match ns.get("version") {
            Some(Value::String(v)) => v.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "unversioned".into(),
        };
        let mut cached_ns = ns.clone();
        let mut documents = Vec::new();
        if let Some(schema) = cached_ns.get_mut("schema").and_then(Value::as_array_mut) {
            for entry in schema.iter_mut() {
                let Some(source) = entry
                    .get("source")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                else {
                    continue;
                };
                let stem = strip_extension(&source);
                let (source_name, source_text) = read_source(&source)?;
                documents.push((stem.clone(), parse_yaml(&source_name, &source_text)?));
                if let Some(obj) = entry.as_object_mut() {
                    obj.insert("source".into(), stem.into());
                }
            }
        }
        documents.insert(
            0,
            (
                "namespace".to_string(),
                serde_json::json!({ "namespaces": [cached_ns] }),
            ),
        );
        out.push(NamespaceDocs {
            name: ns_name.to_string(),
            version,
            documents,
        });
    }
    Ok(out)
}

/// Every namespace cached in `file`.
pub fn cached_namespaces(file: &NwbFile) -> HdmfResult<Vec<NamespaceDocs>> {
    let mut out = Vec::new();
    for ns in file.specifications()? {
        let mut documents = Vec::new();
        // The namespace document first, then the sources in their cached order.
        let mut names = ns.sources.clone();
        names.sort_by_key(|n| n != "namespace");
        for source in names {
            documents.push((
                source.clone(),
                file.specification(&ns.name, &ns.version, &source)?,
            ));
        }
        out.push(NamespaceDocs {
            name: ns.name,
            version: ns.version,
            documents,
        });
    }
    Ok(out)
}

fn strip_extension(source: &str) -> String {
    for ext in [".yaml", ".yml", ".json"] {
        if let Some(stem) = source.strip_suffix(ext) {
            return stem.to_string();
        }
    }
    source.to_string()
}

fn parse_yaml(name: &str, text: &str) -> HdmfResult<Value> {
    serde_yaml_ng::from_str::<Value>(text)
        .map_err(|e| HdmfError::input(name, format!("not valid YAML: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_yaml_with_sources_is_loaded_and_extensions_stripped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("ns.yaml"),
            "namespaces:\n- name: ndx-demo\n  version: 0.1.0\n  schema:\n  - namespace: core\n  - source: ndx-demo.extensions.yaml\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("ndx-demo.extensions.yaml"),
            "groups:\n- neurodata_type_def: Probe\n  neurodata_type_inc: Device\n  doc: a probe\n",
        )
        .unwrap();
        let loaded = load_namespace_file(&dir.path().join("ns.yaml")).unwrap();
        assert_eq!(loaded.len(), 1);
        let ns = &loaded[0];
        assert_eq!(
            (ns.name.as_str(), ns.version.as_str()),
            ("ndx-demo", "0.1.0")
        );
        let names: Vec<&str> = ns.documents.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["namespace", "ndx-demo.extensions"]);
        assert_eq!(
            ns.documents[0].1["namespaces"][0]["schema"][1]["source"],
            "ndx-demo.extensions"
        );
        assert_eq!(
            ns.documents[1].1["groups"][0]["neurodata_type_def"],
            "Probe"
        );
        std::fs::write(dir.path().join("bad.yaml"), "namespaces: 3\n").unwrap();
        let err = load_namespace_file(&dir.path().join("bad.yaml"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.yaml") && err.contains("'namespaces' list"),
            "{err}"
        );
    }
}
