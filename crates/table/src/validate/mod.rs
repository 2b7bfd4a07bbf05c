//! The neurarrow validator.
//!
//! [`validate_paths`] validates one or more tables: each table on its own
//! (metadata, fields, rows, skeleton trees, derived fields), then, across the
//! tables that share a context, the dataset rules (ids unique per context,
//! connections refer to existing samples, derived fragment ids, one space per
//! context). Rows are streamed in batches; only the columns needed afterwards
//! (ids, parents, fragments, connection endpoints) are kept, as compact vectors.
//! Every violation names a rule from [`crate::rules`] and a location.
//!
//! This module holds the public API (options, report types, entry points) and
//! schema identification; the checks live in one private submodule per concern:
//! `file` (file format, names, Hive notes, unreadable input), `metadata`
//! (metadata keys and values), `fields` (field names, types, nullability),
//! `rows` (the streamed row pass: nulls, values, ids), `skeleton` (tree
//! topology and derived fields), `connections` (types, self-connections, gap
//! junctions) and `dataset` (rules across the tables of a context). `run`
//! drives one table through them; `reporter` grades and caps violations;
//! `helpers` has the small string and location helpers.

mod connections;
mod dataset;
mod fields;
mod file;
mod helpers;
mod metadata;
mod reporter;
mod rows;
mod run;
mod skeleton;

use dataset::dataset_checks;
use file::unreadable;
use run::run_table;

use crate::error::TableError;
use crate::io::{Format, TableSource, DEFAULT_BATCH_SIZE};
use crate::rules::RuleId;
use crate::schema::{EffectiveSchema, Registry};
use arrow::datatypes::Schema;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Severity of a violation (the one severity of neurochunk's validators).
pub use neurochunk_report::Severity;

/// One broken rule.
#[derive(Debug, Clone)]
pub struct Violation {
    /// Error or warning.
    pub severity: Severity,
    /// Rule (printed as its kebab-case id).
    pub rule: RuleId,
    /// Checklist item.
    pub check: u8,
    /// Where: `metadata "unit"`, `field "x"`, `row 3 (sample_id 4)`, ...
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl Violation {
    /// JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "rule": self.rule.id(),
            "check": self.check,
            "location": self.location,
            "message": self.message,
        })
    }
}

/// Validation result of one table.
#[derive(Debug, Clone)]
pub struct TableReport {
    /// The path given.
    pub path: PathBuf,
    /// Identified schema name.
    pub schema: Option<String>,
    /// How the schema was identified (`explicit`, `file name`, `columns`).
    pub schema_source: Option<&'static str>,
    /// Storage format.
    pub format: Option<Format>,
    /// Rows read.
    pub rows: u64,
    /// Errors.
    pub errors: Vec<Violation>,
    /// Warnings.
    pub warnings: Vec<Violation>,
    /// The input could not be read (CLI exit code 2).
    pub unreadable: bool,
}

impl TableReport {
    /// No errors and readable.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty() && !self.unreadable
    }

    /// All violations of `rule` (errors and warnings).
    pub fn violations(&self, rule: RuleId) -> impl Iterator<Item = &Violation> {
        self.errors
            .iter()
            .chain(self.warnings.iter())
            .filter(move |v| v.rule == rule)
    }

    /// True when `rule` was reported with `severity`.
    pub fn has(&self, rule: RuleId, severity: Severity) -> bool {
        self.violations(rule).any(|v| v.severity == severity)
    }

    /// JSON form: `{"path", "schema", "format", "rows", "valid", "errors", "warnings"}`.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "path": self.path.display().to_string(),
            "schema": self.schema,
            "format": self.format.map(|f| f.as_str()),
            "rows": self.rows,
            "valid": self.is_valid(),
            "errors": self.errors.iter().map(Violation::to_json).collect::<Vec<_>>(),
            "warnings": self.warnings.iter().map(Violation::to_json).collect::<Vec<_>>(),
        })
    }

    /// One line per violation: `PATH: error[rule] LOCATION: MESSAGE`.
    pub fn lines(&self) -> Vec<String> {
        let p = self.path.display();
        self.errors
            .iter()
            .map(|v| format!("{p}: error[{}] {}: {}", v.rule, v.location, v.message))
            .chain(
                self.warnings
                    .iter()
                    .map(|v| format!("{p}: warning[{}] {}: {}", v.rule, v.location, v.message)),
            )
            .collect()
    }
}

/// Validator settings.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// Grade configurable rules as errors.
    pub strict: bool,
    /// Force a schema (otherwise file-name infix, then columns).
    pub schema: Option<String>,
    /// Rows per streamed batch.
    pub batch_size: usize,
    /// Report at most this many violations per rule and table (then a summary).
    pub max_per_rule: usize,
    /// Schemas and extensions.
    pub registry: Registry,
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            strict: false,
            schema: None,
            batch_size: DEFAULT_BATCH_SIZE,
            max_per_rule: 20,
            registry: Registry::standard(),
        }
    }
}

/// Identifies the schema of a table. Returns the effective schema and how.
pub(crate) fn identify(
    registry: &Registry,
    explicit: Option<&str>,
    src: &TableSource,
) -> Option<(EffectiveSchema, &'static str)> {
    if let Some(name) = explicit {
        return registry.effective(name).ok().map(|e| (e, "explicit"));
    }
    let mut names: Vec<String> = Vec::new();
    if let Some(n) = src.path().file_name() {
        let n = n.to_string_lossy().into_owned();
        if src.format() == Format::Hive {
            names.push(format!("{n}.dir"));
        } else {
            names.push(n);
        }
    }
    if let Some(f) = src.files().first() {
        if let Some(n) = f.path.file_name() {
            names.push(n.to_string_lossy().into_owned());
        }
    }
    for n in &names {
        if let Some(def) = registry.from_file_name(n) {
            if let Ok(e) = registry.effective(&def.name) {
                return Some((e, "file name"));
            }
        }
    }
    let schema = src.schema();
    let cols = schema.fields().iter().map(|f| f.name().as_str());
    let def = registry.from_columns(cols)?;
    registry.effective(&def.name).ok().map(|e| (e, "columns"))
}

/// Validates one opened table on its own.
pub fn validate_source(src: &TableSource, opts: &ValidateOptions) -> TableReport {
    run_table(src, opts, false, 0).0
}

/// Validates one path (file or Hive directory) on its own.
pub fn validate_path(path: impl AsRef<Path>, opts: &ValidateOptions) -> TableReport {
    let path = path.as_ref();
    match TableSource::open(path) {
        Ok(src) => validate_source(&src, opts),
        Err(e) => unreadable(path, &e, None),
    }
}

/// Validates several tables, then the dataset rules across tables sharing a
/// context. Fails only on a bad option (unknown `--schema`).
pub fn validate_paths(
    paths: &[PathBuf],
    opts: &ValidateOptions,
) -> Result<Vec<TableReport>, TableError> {
    validate_opened(paths.iter().map(|p| (p, TableSource::open(p))), opts)
}

/// Like [`validate_paths`], for tables already opened (from any store, see
/// [`TableSource::open_store`]).
pub fn validate_sources(
    sources: &[TableSource],
    opts: &ValidateOptions,
) -> Result<Vec<TableReport>, TableError> {
    validate_opened(sources.iter().map(|s| (s.path(), Ok(s))), opts)
}

/// Like [`validate_paths`], for tables opened by the caller (from any store, see
/// [`TableSource::open_store_named`]): each `(name, opened)` is a table's display name and the
/// result of opening it; a table that could not be opened is reported as unreadable under its
/// name, as [`validate_paths`] does.
pub fn validate_results(
    tables: Vec<(PathBuf, Result<TableSource, TableError>)>,
    opts: &ValidateOptions,
) -> Result<Vec<TableReport>, TableError> {
    validate_opened(tables.into_iter(), opts)
}

/// Validates each table (or reports why it could not be opened), then the dataset rules.
fn validate_opened<P, S>(
    tables: impl ExactSizeIterator<Item = (P, Result<S, TableError>)>,
    opts: &ValidateOptions,
) -> Result<Vec<TableReport>, TableError>
where
    P: AsRef<Path>,
    S: std::borrow::Borrow<TableSource>,
{
    if let Some(s) = &opts.schema {
        opts.registry
            .effective(s)
            .map_err(|e| TableError::Usage(e.to_string()))?;
    }
    let keep = tables.len() > 1;
    let mut reports = Vec::with_capacity(tables.len());
    let mut facts = Vec::new();
    for (i, (path, opened)) in tables.enumerate() {
        match opened {
            Ok(src) => {
                let (r, f) = run_table(src.borrow(), opts, keep, i);
                reports.push(r);
                facts.extend(f);
            }
            Err(e) => reports.push(unreadable(path.as_ref(), &e, None)),
        }
    }
    if keep {
        dataset_checks(&mut reports, &facts, opts);
    }
    Ok(reports)
}

/// The Arrow schema of the table at `path` (file or Hive directory).
pub fn schema_of(path: &Path) -> Result<Arc<Schema>, TableError> {
    Ok(TableSource::open(path)?.schema())
}
