//! The neurarrow validator.
//!
//! [`validate_paths`] validates one or more tables: each table on its own
//! (metadata, fields, rows, skeleton trees, derived fields), then, across the
//! tables that share a context, the dataset rules (ids unique per context,
//! connections refer to existing samples, derived fragment ids, one space per
//! context). Rows are streamed in batches; only the columns needed afterwards
//! (ids, parents, fragments, connection endpoints) are kept, as compact vectors.
//! Every violation names a rule from [`crate::rules`] and a location.

use crate::error::TableError;
use crate::io::{Format, TableSource, DEFAULT_BATCH_SIZE};
use crate::pep440;
use crate::rules::{rule, Grade};
use crate::schema::{
    attr_map_value_type, is_reserved_prefix, is_technical_key, is_valid_unit, split_prefix,
    EffectiveSchema, FieldSpec, KeyPattern, MetaCheck, Presence, Registry, TypeSpec,
};
use crate::tree::{build_tree, FragmentInterner, IdIndex, Tree, TreeInput, TreeProblems};
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Float64Type, Int64Type, Schema, UInt16Type, UInt32Type, UInt64Type,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Severity of a violation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// A MUST is broken (or a configurable rule in strict mode).
    Error,
    /// A SHOULD is broken, or a lint.
    Warning,
}

/// One broken rule.
#[derive(Debug, Clone)]
pub struct Violation {
    /// Error or warning.
    pub severity: Severity,
    /// Rule id.
    pub rule: &'static str,
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
            "rule": self.rule,
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
    pub fn violations(&self, rule: &str) -> impl Iterator<Item = &Violation> {
        let r = rule.to_string();
        self.errors
            .iter()
            .chain(self.warnings.iter())
            .filter(move |v| v.rule == r)
    }

    /// True when `rule` was reported with `severity`.
    pub fn has(&self, rule: &str, severity: Severity) -> bool {
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

struct Reporter {
    strict: bool,
    max: usize,
    counts: HashMap<&'static str, usize>,
    errors: Vec<Violation>,
    warnings: Vec<Violation>,
}

impl Reporter {
    fn new(strict: bool, max: usize) -> Self {
        Reporter {
            strict,
            max: max.max(1),
            counts: HashMap::new(),
            errors: vec![],
            warnings: vec![],
        }
    }

    fn severity(&self, id: &str) -> Severity {
        match rule(id).map(|r| r.grade) {
            Some(Grade::Warning) => Severity::Warning,
            Some(Grade::Configurable) if !self.strict => Severity::Warning,
            _ => Severity::Error,
        }
    }

    /// Counts a violation and builds it only when it will be kept.
    fn lazy(&mut self, id: &'static str, f: impl FnOnce() -> (String, String)) {
        let c = self.counts.entry(id).or_insert(0);
        *c += 1;
        if *c > self.max {
            return;
        }
        let (location, message) = f();
        let severity = self.severity(id);
        let v = Violation {
            severity,
            rule: id,
            check: rule(id).map(|r| r.check).unwrap_or(0),
            location,
            message,
        };
        match severity {
            Severity::Error => self.errors.push(v),
            Severity::Warning => self.warnings.push(v),
        }
    }

    fn report(&mut self, id: &'static str, location: impl Into<String>, message: impl Into<String>) {
        let (l, m) = (location.into(), message.into());
        self.lazy(id, || (l, m));
    }

    fn finish(mut self) -> (Vec<Violation>, Vec<Violation>) {
        let mut over: Vec<(&'static str, usize)> = self
            .counts
            .iter()
            .filter(|(_, &c)| c > self.max)
            .map(|(k, &c)| (*k, c - self.max))
            .collect();
        over.sort();
        for (id, more) in over {
            let severity = self.severity(id);
            let v = Violation {
                severity,
                rule: id,
                check: rule(id).map(|r| r.check).unwrap_or(0),
                location: "table".into(),
                message: format!("... and {more} more violations of this rule"),
            };
            match severity {
                Severity::Error => self.errors.push(v),
                Severity::Warning => self.warnings.push(v),
            }
        }
        (self.errors, self.warnings)
    }
}

fn is_iri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(char::is_whitespace)
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    match b.len() {
        32 => b.iter().all(u8::is_ascii_hexdigit),
        36 => b.iter().enumerate().all(|(i, c)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                *c == b'-'
            } else {
                c.is_ascii_hexdigit()
            }
        }),
        _ => false,
    }
}

fn is_snake_case(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The part of a name that the snake_case lint looks at (after the last `:`).
fn local_part(name: &str) -> &str {
    name.rsplit(':').next().unwrap_or(name)
}

fn is_signed_decimal(s: &str) -> bool {
    let d = s.strip_prefix('-').or_else(|| s.strip_prefix('+')).unwrap_or(s);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && d.parse::<i64>().is_ok()
}

/// Identifies the schema of a table. Returns the effective schema and how.
fn identify(
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

/// What to do with a known column during the row pass.
#[derive(Debug, Clone)]
struct ColumnPlan {
    name: String,
    spec: FieldSpec,
    /// Cast to the spec type before the row checks.
    cast: bool,
    /// Type unusable: skip row checks on this column.
    unusable: bool,
}

fn lenient_cast(col: &ArrayRef, ty: TypeSpec) -> Result<ArrayRef, String> {
    if ty == TypeSpec::UInt64 {
        if let Some(a) = col.as_primitive_opt::<Int64Type>() {
            return Ok(Arc::new(a.reinterpret_cast::<UInt64Type>()));
        }
    }
    cast(col, &ty.data_type()).map_err(|e| e.to_string())
}

/// Columns and state kept across batches.
#[derive(Default)]
struct Collected {
    rows: u64,
    sample_ids: Vec<u64>,
    fragments: FragmentInterner,
    frag_rows: Vec<u32>,
    parents: Vec<u64>,
    parent_valid: Vec<bool>,
    /// Other context-unique id columns (connection_id, connector_id).
    unique: BTreeMap<String, Vec<u64>>,
    conn_src: Vec<u64>,
    conn_tgt: Vec<u64>,
    conn_src_frag: Vec<Option<u64>>,
    conn_tgt_frag: Vec<Option<u64>>,
    /// `(src, tgt, row)` of gap junctions.
    gap: Vec<(u64, u64, u32)>,
    checked_dicts: Vec<ArrayRef>,
    derived_non_null: HashMap<String, usize>,
}

/// Facts about one table that the dataset rules need.
struct Facts {
    report: usize,
    schema: EffectiveSchema,
    context: Option<String>,
    space: Option<String>,
    unit: Option<String>,
    swc_types: BTreeMap<String, String>,
    /// `(field, ids)` of context-unique id fields.
    unique: Vec<(String, Vec<u64>)>,
    /// Per-row sample id and fragment id (sample tables).
    samples: Option<(Vec<u64>, Vec<u64>)>,
    /// Connection endpoints and derived fragment ids.
    conns: Option<ConnFacts>,
}

struct ConnFacts {
    ids: Vec<u64>,
    src: Vec<u64>,
    tgt: Vec<u64>,
    src_frag: Vec<Option<u64>>,
    tgt_frag: Vec<Option<u64>>,
}

