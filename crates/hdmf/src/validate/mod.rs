//! Validation of an NWB (or HDMF) file against the specifications it caches, or others given:
//! what `neurochunk nwb validate` runs.
//!
//! - [`schema`] models the HDMF specification language: namespaces and their includes, type
//!   inheritance (`neurodata_type_def` / `neurodata_type_inc`, refined down the chain),
//!   quantities, dtypes with their allowed widening, references, compound fields, shape
//!   alternatives, values and links.
//! - The validator walks the file from its root the way hdmf's validator does (children are
//!   matched to child specifications by name and type) and checks attributes, datasets,
//!   groups, links, dtypes, shapes, fixed values, ISO 8601 dates with their time zone, and the
//!   types of reference and link targets; every typed object it does not reach is checked
//!   against its own type.
//! - On top, the rules hdmf-common states in prose: DynamicTable columns as long as its `id`
//!   and named by `colnames`, VectorIndex monotonic and within its target, DynamicTableRegion
//!   indices within their table, unique ElementIdentifiers.
//!
//! The file is read once, from its node table (consolidated metadata when it has it); dataset
//! values are read only where a rule needs them (ISO 8601 text, reference targets, fixed
//! values, and the table rules, whose index and id values are streamed slab by slab).
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_hdmf::validate::{validate, Rule, ValidateOptions};
//! use neurochunk_hdmf::{parse_namespaces, AttributeValue, Convention, NwbFile, NwbWriter,
//!                       ReadOptions, TypeInfo, WriteOptions};
//! use neurochunk_store::{MemoryStore, Store};
//! use serde_json::json;
//!
//! // A namespace with one type: a Session needs a text attribute 'subject'.
//! let namespace = "namespaces:\n- name: lab\n  version: 1.0.0\n  schema:\n  - source: lab.yaml\n";
//! let source = "groups:\n- neurodata_type_def: Session\n  attributes:\n  - name: subject\n    dtype: text\n";
//! let docs = parse_namespaces("lab.namespace.yaml", namespace, &mut |name: &str| {
//!     Ok((name.to_string(), source.to_string()))
//! })?;
//!
//! // A file whose root is a Session without the attribute, caching the namespace.
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let mut writer = NwbWriter::create_in(store.clone(), "s.nwb.zarr", Convention::V3,
//!                                       WriteOptions::default())?;
//! writer.root("2.8.0", &TypeInfo::new("lab", "Session"), &[])?;
//! writer.cache_namespace(&docs[0])?;
//! writer.finish()?;
//!
//! let file = NwbFile::open_store(store.clone(), "s.nwb.zarr", ReadOptions::default())?;
//! let report = validate(&file, &ValidateOptions::default())?;
//! assert!(!report.is_valid());
//! let finding = report.errors().next().expect("one error");
//! assert_eq!((finding.path.as_str(), finding.rule), ("/", Rule::MissingAttribute));
//! assert_eq!(finding.attribute.as_deref(), Some("subject"));
//! assert_eq!(finding.line(), "error [missing-attribute] / (Session): attribute 'subject': required attribute is missing");
//! # Ok::<(), neurochunk_hdmf::HdmfError>(())
//! ```

mod check;
pub mod report;
pub mod schema;
mod stored;
mod tables;

pub use report::{Finding, Report, Rule, Severity};
pub use schema::SchemaSet;

use crate::error::{HdmfError, HdmfResult};
use crate::file::NwbFile;
use crate::specs::cached_namespaces;
use crate::write::NamespaceDocs;

/// What to validate against.
#[derive(Clone, Debug)]
pub struct ValidateOptions {
    /// Namespaces given by the caller (e.g. [`crate::load_namespace_file`]); each replaces
    /// the cached namespace of the same name.
    pub namespaces: Vec<NamespaceDocs>,
    /// Use the namespaces cached in the file (`true` by default).
    pub use_cached: bool,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            namespaces: Vec::new(),
            use_cached: true,
        }
    }
}

/// The namespaces a file is validated against: those it caches (unless `use_cached` is off),
/// with the given ones in place of cached ones of the same name. An error when there are none,
/// or when the cache cannot be read.
pub fn namespaces_for(file: &NwbFile, options: &ValidateOptions) -> HdmfResult<Vec<NamespaceDocs>> {
    let mut docs = if options.use_cached {
        cached_namespaces(file)?
    } else {
        Vec::new()
    };
    docs.retain(|d| !options.namespaces.iter().any(|g| g.name == d.name));
    docs.extend(options.namespaces.iter().cloned());
    if docs.is_empty() {
        return Err(HdmfError::Invalid {
            file: file.name().to_string(),
            path: "/".into(),
            message: "the file caches no specifications and none were given (--namespace)".into(),
        });
    }
    Ok(docs)
}

/// Validate `file` against its cached namespaces (or those `options` give).
pub fn validate(file: &NwbFile, options: &ValidateOptions) -> HdmfResult<Report> {
    let docs = namespaces_for(file, options)?;
    let schema = SchemaSet::from_namespace_docs(&docs);
    Ok(validate_with(file, &schema))
}

/// Validate `file` against a loaded [`SchemaSet`] (to validate many files against the same
/// namespaces without loading them again).
pub fn validate_with(file: &NwbFile, schema: &SchemaSet) -> Report {
    let mut checker = check::Checker::new(file, schema);
    checker.run();
    checker.check_tables();
    let objects = checker.typed.len();
    let mut findings = std::mem::take(&mut checker.findings);
    findings.sort_by(|a, b| {
        (a.severity, &a.path, a.rule, &a.attribute, &a.message).cmp(&(
            b.severity,
            &b.path,
            b.rule,
            &b.attribute,
            &b.message,
        ))
    });
    findings.dedup();
    Report {
        file: file.name().to_string(),
        namespaces: schema
            .namespaces()
            .map(|n| (n.name.clone(), n.version.clone()))
            .collect(),
        objects,
        findings,
    }
}

/// The exit status of a validation of one file (as `neurochunk nwb validate` exits): 0 valid
/// (warnings allowed), 1 invalid, 2 not readable or without specifications (`Err`).
pub fn status_of(result: &Result<Report, String>) -> u8 {
    match result {
        Ok(report) if report.is_valid() => VALID,
        Ok(_) => INVALID,
        Err(_) => UNREADABLE,
    }
}

/// [`status_of`] a valid file.
pub const VALID: u8 = 0;
/// [`status_of`] a file that does not conform.
pub const INVALID: u8 = 1;
/// [`status_of`] a file that could not be read or validated.
pub const UNREADABLE: u8 = 2;

/// The findings of `result` as the JSON list `nwb validate --json` prints: a report's own, or
/// one `unreadable` error naming `file` for a file that could not be validated.
pub fn result_json(file: &str, result: &Result<Report, String>) -> Vec<serde_json::Value> {
    match result {
        Ok(report) => report.to_json(),
        Err(message) => vec![serde_json::json!({
            "file": file,
            "severity": "error",
            "path": "/",
            "type": "",
            "rule": "unreadable",
            "message": message,
        })],
    }
}
