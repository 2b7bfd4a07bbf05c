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
use crate::tree::{build_forest, resolve_parents, FragmentInterner, IdIndex, Tree, TreeProblems};
use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Float64Type, Int64Type, Schema, UInt16Type, UInt32Type, UInt64Type,
};
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
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

    fn report(
        &mut self,
        id: &'static str,
        location: impl Into<String>,
        message: impl Into<String>,
    ) {
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
    let d = s
        .strip_prefix('-')
        .or_else(|| s.strip_prefix('+'))
        .unwrap_or(s);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) && d.parse::<i64>().is_ok()
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
            // Reinterpret the bits: Parquet readers without the unsigned annotation
            // show ids >= 2^63 as negative int64.
            let vals: arrow::buffer::ScalarBuffer<u64> =
                a.values().iter().map(|&v| v as u64).collect();
            return Ok(Arc::new(arrow::array::UInt64Array::new(
                vals,
                a.nulls().cloned(),
            )));
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

fn row_loc(row: u64, id_name: &str, id: Option<u64>) -> String {
    match id {
        Some(v) => format!("row {row} ({id_name} {v})"),
        None => format!("row {row}"),
    }
}

struct TableRun<'a> {
    opts: &'a ValidateOptions,
    src: &'a TableSource,
    schema: EffectiveSchema,
    meta: HashMap<String, String>,
    rep: Reporter,
    plans: Vec<ColumnPlan>,
    used_prefixes: BTreeMap<String, String>,
    frag_keys: Vec<(String, u64)>,
    col: Collected,
    null_counts: BTreeMap<String, (u64, u64)>,
    counters: BTreeMap<&'static str, (u64, u64, String)>,
}

impl<'a> TableRun<'a> {
    fn new(opts: &'a ValidateOptions, src: &'a TableSource, schema: EffectiveSchema) -> Self {
        TableRun {
            opts,
            src,
            schema,
            meta: HashMap::from(src.schema().metadata()),
            rep: Reporter::new(opts.strict, opts.max_per_rule),
            plans: vec![],
            used_prefixes: BTreeMap::new(),
            frag_keys: vec![],
            col: Collected::default(),
            null_counts: BTreeMap::new(),
            counters: BTreeMap::new(),
        }
    }

    fn plan(&self, name: &str) -> Option<&ColumnPlan> {
        self.plans.iter().find(|p| p.name == name && !p.unusable)
    }

    fn has_usable(&self, name: &str) -> bool {
        self.plan(name).is_some()
    }

    /// Counts an aggregated row-level problem; reported once after the pass.
    fn tally(&mut self, id: &'static str, n: u64, first_row: u64, what: impl FnOnce() -> String) {
        if n == 0 {
            return;
        }
        match self.counters.get_mut(id) {
            Some(e) => e.0 += n,
            None => {
                self.counters.insert(id, (n, first_row, what()));
            }
        }
    }

    // ---------------------------------------------------------------- file level

    fn check_file(&mut self) {
        for n in self.src.notes() {
            self.rep
                .report(n.rule, n.location.clone(), n.message.clone());
        }
        let registry = &self.opts.registry;
        for f in self.src.files() {
            let name = f
                .path
                .file_name()
                .map(|n| n.to_string_lossy().to_ascii_lowercase())
                .unwrap_or_default();
            let ipc_ext = [".arrow", ".feather", ".ipc"]
                .iter()
                .any(|e| name.ends_with(e));
            let pq_ext = [".parquet", ".parq", ".pq"]
                .iter()
                .any(|e| name.ends_with(e));
            if ipc_ext && f.format != Format::ArrowIpc {
                self.rep.report(
                    "file-format",
                    f.path.display().to_string(),
                    format!(
                        "file named like Arrow IPC is {} (the spec asks for the IPC file format)",
                        f.format.as_str()
                    ),
                );
            }
            if pq_ext && f.format != Format::Parquet {
                self.rep.report(
                    "file-format",
                    f.path.display().to_string(),
                    format!("file named .parquet is {}", f.format.as_str()),
                );
            }
        }
        // Naming: `{name}.{schema}.{arrow|parquet}`.
        let named = match self.src.format() {
            Format::Hive => self.src.files().first().map(|f| f.path.clone()),
            _ => Some(self.src.path().to_path_buf()),
        };
        if let Some(p) = named {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match registry.from_file_name(&name) {
                None => self.rep.report(
                    "file-name",
                    p.display().to_string(),
                    format!(
                        "file name {name:?} has no schema infix (expected e.g. name.{}.parquet)",
                        self.schema.name
                    ),
                ),
                Some(d) if !self.schema.is_a(&d.name) => self.rep.report(
                    "file-name",
                    p.display().to_string(),
                    format!(
                        "file name says {:?} but the table is validated as {:?}",
                        d.name, self.schema.name
                    ),
                ),
                _ => {}
            }
        }
        if self.schema.is_abstract {
            self.rep.report(
                "abstract-schema",
                "table",
                format!(
                    "{:?} is an abstract schema and SHOULD NOT be written as a file",
                    self.schema.name
                ),
            );
        }
    }

    // ------------------------------------------------------------------ metadata

    fn check_version(&mut self, key: &str, value: &str, spec_version: bool) {
        let loc = format!("metadata {key:?}");
        match pep440::parse(value) {
            Err(e) => self.rep.report("version-pep440", loc, e.to_string()),
            Ok(v) => {
                if v.to_string() != value {
                    self.rep.report(
                        "version-normalized",
                        loc.clone(),
                        format!(
                            "{value:?} is valid PEP 440 but its normal form is {:?}",
                            v.to_string()
                        ),
                    );
                }
                if spec_version {
                    let mm = (v.major(), v.minor());
                    if mm < (0, 2) {
                        self.rep.report(
                            "version-unsupported",
                            loc,
                            format!("neurarrow {value} predates 0.2 and is not supported"),
                        );
                    } else if mm > (0, 2) {
                        self.rep.report(
                            "version-newer",
                            loc,
                            format!("neurarrow {value} is newer than 0.2; checked as 0.2"),
                        );
                    }
                }
            }
        }
    }

    fn check_meta_value(&mut self, key: &str, value: &str, check: MetaCheck) {
        let loc = format!("metadata {key:?}");
        match check {
            MetaCheck::Any => {}
            MetaCheck::SpecVersion => self.check_version(key, value, true),
            MetaCheck::Version => self.check_version(key, value, false),
            MetaCheck::Unit => {
                if !is_valid_unit(value) {
                    self.rep.report(
                        "unit-invalid",
                        loc,
                        format!("{value:?} is not \"\" or one of the 27 unit names (e.g. \"nanometer\", \"micrometer\")"),
                    );
                }
            }
            MetaCheck::Context | MetaCheck::Space => {
                let rule = if check == MetaCheck::Context {
                    "context-format"
                } else {
                    "space-format"
                };
                if value.is_empty() {
                    self.rep.report(rule, loc, "empty identifier");
                } else if !is_iri(value) && !is_uuid(value) {
                    self.rep.report(
                        rule,
                        loc,
                        format!("{value:?} is neither an IRI nor a UUID (RECOMMENDED)"),
                    );
                }
            }
            MetaCheck::UnsignedDecimal => {
                if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
                    self.rep.report(
                        "neighborhood-size",
                        loc,
                        format!("{value:?} is not an ASCII base-10 unsigned integer"),
                    );
                } else if value.parse::<u64>().is_err() {
                    self.rep.report(
                        "neighborhood-size",
                        loc,
                        format!("{value:?} does not fit in u64"),
                    );
                } else if value.len() > 1 && value.starts_with('0') {
                    self.rep.report(
                        "neighborhood-size-format",
                        loc,
                        format!("{value:?} has leading zeros"),
                    );
                } else if value == "0" {
                    self.rep
                        .report("neighborhood-size-format", loc, "neighborhood size is 0");
                }
            }
        }
    }

    fn naming(&mut self, what: &str, name: &str) {
        let local = local_part(name);
        if local.is_empty() || is_signed_decimal(local) || name == "attr" {
            return;
        }
        if !is_snake_case(local) {
            self.rep.report(
                "naming",
                format!("{what} {name:?}"),
                format!("{local:?} is not snake_case"),
            );
        }
    }

    fn check_metadata(&mut self) {
        let specs = self.schema.metadata.clone();
        for m in &specs {
            if m.presence == Presence::Required && !self.meta.contains_key(&m.key) {
                self.rep.report(
                    "metadata-required",
                    format!("metadata {:?}", m.key),
                    format!(
                        "required metadata key {:?} (from {}) is missing",
                        m.key, m.origin
                    ),
                );
            }
        }
        let mut keys: Vec<(String, String)> = self
            .meta
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        keys.sort();
        for (k, v) in keys {
            if is_technical_key(&k) {
                continue;
            }
            if let Some(spec) = self.schema.meta(&k) {
                let check = spec.check;
                if let Some((p, _)) = split_prefix(&k) {
                    self.used_prefixes
                        .entry(p.to_string())
                        .or_insert(format!("metadata {k:?}"));
                }
                self.check_meta_value(&k, &v, check);
                self.naming("metadata", &k);
                continue;
            }
            match split_prefix(&k) {
                None => {
                    self.rep.report(
                        "metadata-unknown",
                        format!("metadata {k:?}"),
                        format!(
                            "key is not defined by {:?}; use an attr: or extension prefix",
                            self.schema.name
                        ),
                    );
                    self.naming("metadata", &k);
                }
                Some(("attr", rest)) => {
                    if rest.is_empty() {
                        self.rep.report(
                            "attr-empty-name",
                            format!("metadata {k:?}"),
                            "attribute key with nothing after attr:",
                        );
                    }
                }
                Some(("frag", rest)) => {
                    if !self.schema.traits.fragment_metadata {
                        self.rep.report(
                            "frag-key-schema",
                            format!("metadata {k:?}"),
                            format!(
                                "frag: keys are only allowed in point-cloud schemas, not {:?}",
                                self.schema.name
                            ),
                        );
                        continue;
                    }
                    match rest.split_once(':') {
                        Some((id, key))
                            if !key.is_empty()
                                && id.bytes().all(|b| b.is_ascii_digit())
                                && id.parse::<u64>().is_ok() =>
                        {
                            let fid = id.parse::<u64>().unwrap_or_default();
                            self.frag_keys.push((k.clone(), fid));
                            self.naming("metadata", &k);
                        }
                        _ => self.rep.report(
                            "frag-key-format",
                            format!("metadata {k:?}"),
                            "expected frag:{fragment_id}:{key} with a decimal fragment id",
                        ),
                    }
                }
                Some((p, rest)) if !is_reserved_prefix(p) => {
                    self.used_prefixes
                        .entry(p.to_string())
                        .or_insert(format!("metadata {k:?}"));
                    if rest == "version" {
                        self.check_version(&k, &v, false);
                        continue;
                    }
                    self.check_extension_key(&k, p, rest);
                }
                Some(_) => {}
            }
        }
    }

    fn check_extension_key(&mut self, key: &str, prefix: &str, rest: &str) {
        let Some(ext) = self.opts.registry.extension(prefix) else {
            self.naming("metadata", key);
            return;
        };
        let patterns = ext.key_patterns.clone();
        for pat in patterns {
            match pat {
                KeyPattern::Version => {}
                KeyPattern::PerFragment(name) => {
                    if rest == name {
                        return; // legacy single-value form
                    }
                    if let Some(id) = rest.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
                        if id.parse::<u64>().is_err() || !id.bytes().all(|b| b.is_ascii_digit()) {
                            self.rep.report(
                                "extension-key",
                                format!("metadata {key:?}"),
                                format!("{name} key must end in a decimal fragment id"),
                            );
                        }
                        return;
                    }
                }
                KeyPattern::PerInteger(name) => {
                    if let Some(id) = rest.strip_prefix(name).and_then(|r| r.strip_prefix(':')) {
                        if !is_signed_decimal(id) {
                            self.rep.report(
                                "extension-key",
                                format!("metadata {key:?}"),
                                format!("the last segment of a {name} key MUST be a signed decimal integer"),
                            );
                        }
                        return;
                    }
                }
            }
        }
        self.rep.report(
            "extension-unknown-key",
            format!("metadata {key:?}"),
            format!("extension {prefix} defines no such key"),
        );
    }

    // -------------------------------------------------------------------- fields

    fn check_fields(&mut self) {
        let schema = self.src.schema();
        let fields = schema.fields();
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for f in fields.iter() {
            *seen.entry(f.name().as_str()).or_insert(0) += 1;
        }
        for (name, n) in &seen {
            if *n > 1 {
                self.rep.report(
                    "field-duplicate",
                    format!("field {name:?}"),
                    format!("{n} fields share this name"),
                );
            }
        }
        // Known fields of the effective schema.
        let specs = self.schema.fields.clone();
        for spec in &specs {
            match fields.iter().find(|f| f.name() == &spec.name) {
                None => {
                    if spec.presence == Presence::Required {
                        self.rep.report(
                            "field-required",
                            format!("field {:?}", spec.name),
                            format!(
                                "required field {:?} ({}, from {}) is missing",
                                spec.name,
                                spec.ty.describe(),
                                spec.origin
                            ),
                        );
                    }
                }
                Some(f) => {
                    let plan = self.plan_field(spec, f.data_type(), f.is_nullable());
                    self.plans.push(plan);
                }
            }
        }
        // Extension, attribute and unknown fields.
        let ext_specs: Vec<(String, FieldSpec)> = self
            .opts
            .registry
            .extensions_for(&self.schema)
            .flat_map(|e| e.fields.iter().map(move |f| (e.prefix.clone(), f.clone())))
            .collect();
        for f in fields.iter() {
            let name = f.name().as_str();
            for (k, _) in f.metadata() {
                if !k.starts_with("attr:") && !is_technical_key(k) {
                    self.rep.report(
                        "field-metadata",
                        format!("field {name:?}"),
                        format!("field metadata key {k:?}: writers SHOULD NOT add field metadata"),
                    );
                }
            }
            if self.schema.field(name).is_some() {
                self.naming("field", name);
                continue;
            }
            match split_prefix(name) {
                None => {
                    self.rep.report(
                        "field-unknown",
                        format!("field {name:?}"),
                        format!(
                            "field is not defined by {:?}; use an attr: or extension prefix",
                            self.schema.name
                        ),
                    );
                    self.naming("field", name);
                }
                Some(("attr", rest)) => {
                    if rest.is_empty() {
                        self.rep.report(
                            "attr-empty-name",
                            format!("field {name:?}"),
                            "attribute field with nothing after attr:",
                        );
                    }
                }
                Some((p, _)) if !is_reserved_prefix(p) => {
                    self.used_prefixes
                        .entry(p.to_string())
                        .or_insert(format!("field {name:?}"));
                    if let Some((_, spec)) = ext_specs.iter().find(|(_, s)| s.name == name) {
                        let plan = self.plan_field(spec, f.data_type(), f.is_nullable());
                        self.plans.push(plan);
                    }
                    self.naming("field", name);
                }
                Some(_) => {}
            }
        }
        // Required fields of extensions in use.
        for (prefix, spec) in &ext_specs {
            let used = self.used_prefixes.contains_key(prefix);
            if used
                && spec.presence == Presence::Required
                && !fields.iter().any(|f| f.name() == &spec.name)
            {
                self.rep.report(
                    "field-required",
                    format!("field {:?}", spec.name),
                    format!(
                        "extension {prefix} is used, so its required field {:?} ({}) must exist",
                        spec.name,
                        spec.ty.describe()
                    ),
                );
            }
        }
        // Every used extension prefix needs `{prefix}:version`.
        let used: Vec<(String, String)> = self
            .used_prefixes
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for (p, first) in used {
            let key = format!("{p}:version");
            if !self.meta.contains_key(&key) {
                self.rep.report(
                    "extension-version",
                    format!("metadata {key:?}"),
                    format!("extension prefix {p:?} is used ({first}) but {key:?} is missing"),
                );
            }
        }
    }

    fn plan_field(&mut self, spec: &FieldSpec, dt: &DataType, nullable: bool) -> ColumnPlan {
        let loc = format!("field {:?}", spec.name);
        let mut plan = ColumnPlan {
            name: spec.name.clone(),
            spec: spec.clone(),
            cast: false,
            unusable: false,
        };
        if spec.ty == TypeSpec::AttrMap {
            if attr_map_value_type(dt).is_none() {
                self.rep.report(
                    "attr-field",
                    loc.clone(),
                    format!("attr must be map<utf8, utf8|binary>, found {dt}"),
                );
                plan.unusable = true;
            }
            if !nullable {
                self.rep.report("attr-field", loc, "attr must be nullable");
            }
            return plan;
        }
        if !spec.ty.matches(dt) {
            if spec.ty.lenient_castable(dt) {
                self.rep.report(
                    "field-type-cast",
                    loc.clone(),
                    format!(
                        "type is {dt}, spec says {} (cast applied)",
                        spec.ty.describe()
                    ),
                );
                plan.cast = true;
            } else {
                self.rep.report(
                    "field-type",
                    loc.clone(),
                    format!("type is {dt}, spec says {}", spec.ty.describe()),
                );
                plan.unusable = true;
            }
        }
        // A4: lenient mode only checks the data (no nulls where the spec says
        // non-nullable); the declared flag is compared in strict mode.
        if nullable != spec.nullable && self.opts.strict {
            self.rep.report(
                "field-nullability",
                loc,
                format!(
                    "declared {}, spec says {}",
                    if nullable { "nullable" } else { "non-nullable" },
                    if spec.nullable {
                        "nullable"
                    } else {
                        "non-nullable"
                    }
                ),
            );
        }
        plan
    }

    // ------------------------------------------------------------------ row pass

    fn prepared(&mut self, batch: &RecordBatch, plan_idx: usize) -> Option<ArrayRef> {
        let plan = &self.plans[plan_idx];
        if plan.unusable {
            return None;
        }
        let col = batch.column_by_name(&plan.name)?.clone();
        if !plan.cast {
            return Some(col);
        }
        let ty = plan.spec.ty;
        match lenient_cast(&col, ty) {
            Ok(c) => Some(c),
            Err(e) => {
                let name = plan.name.clone();
                self.plans[plan_idx].unusable = true;
                self.rep.report(
                    "field-type",
                    format!("field {name:?}"),
                    format!("cannot cast to {}: {e}", ty.describe()),
                );
                None
            }
        }
    }

    fn row_pass(&mut self) -> Result<(), TableError> {
        let cols: Vec<String> = self
            .plans
            .iter()
            .filter(|p| !p.unusable)
            .map(|p| p.name.clone())
            .collect();
        let iter = self.src.batches_projected(&cols, self.opts.batch_size)?;
        if let Some(n) = self.src.known_rows() {
            // Exact capacities: no doubling slack in the kept columns.
            let n = usize::try_from(n).unwrap_or(0);
            let t = self.schema.traits;
            if t.samples {
                self.col.sample_ids.reserve_exact(n);
                self.col.frag_rows.reserve_exact(n);
            }
            if t.tree {
                self.col.parents.reserve_exact(n);
                self.col.parent_valid.reserve_exact(n);
            }
        }
        let mut offset = 0u64;
        for batch in iter {
            let batch = batch?;
            self.process_batch(&batch, offset);
            offset += batch.num_rows() as u64;
        }
        self.col.rows = offset;
        // Aggregated reports.
        let nulls = std::mem::take(&mut self.null_counts);
        for (name, (n, first)) in nulls {
            self.rep.report(
                "field-null",
                format!("field {name:?}"),
                format!("{n} null value(s) in a non-nullable field (first at row {first})"),
            );
        }
        let counters = std::mem::take(&mut self.counters);
        for (id, (n, first, what)) in counters {
            self.rep.report(
                id,
                format!("row {first}"),
                format!("{what} ({n} row(s) in total, first at row {first})"),
            );
        }
        Ok(())
    }

    fn process_batch(&mut self, batch: &RecordBatch, offset: u64) {
        let n = batch.num_rows();
        let traits = self.schema.traits;
        let mut arrays: HashMap<String, ArrayRef> = HashMap::new();
        for i in 0..self.plans.len() {
            if let Some(a) = self.prepared(batch, i) {
                let plan = &self.plans[i];
                if !plan.spec.nullable && a.null_count() > 0 {
                    let first = (0..a.len()).find(|&r| a.is_null(r)).unwrap_or(0) as u64;
                    let e = self
                        .null_counts
                        .entry(plan.name.clone())
                        .or_insert((0, offset + first));
                    e.0 += a.null_count() as u64;
                }
                arrays.insert(plan.name.clone(), a);
            }
        }
        let u64col = |name: &str| -> Option<&arrow::array::UInt64Array> {
            arrays
                .get(name)
                .and_then(|a| a.as_primitive_opt::<UInt64Type>())
        };
        let f64col = |name: &str| -> Option<&arrow::array::Float64Array> {
            arrays
                .get(name)
                .and_then(|a| a.as_primitive_opt::<Float64Type>())
        };
        if traits.samples {
            if let Some(a) = u64col("sample_id") {
                self.col.sample_ids.extend_from_slice(a.values());
            }
            if let Some(a) = u64col("fragment_id") {
                let fr = &mut self.col.fragments;
                self.col
                    .frag_rows
                    .extend(a.values().iter().map(|&v| fr.intern(v)));
            }
        }
        if traits.tree {
            if let Some(a) = u64col("parent_id") {
                self.col.parents.extend_from_slice(a.values());
                match a.nulls() {
                    Some(nb) => self.col.parent_valid.extend(nb.iter()),
                    None => self.col.parent_valid.extend(std::iter::repeat_n(true, n)),
                }
            }
            if let Some(a) = f64col("radius") {
                let mut bad = 0u64;
                let mut first = None;
                for (r, v) in a.values().iter().enumerate() {
                    if a.is_valid(r) && !(v.is_finite() && *v >= 0.0) {
                        bad += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally("radius-value", bad, f, || {
                    "radius is negative, NaN or infinite".into()
                });
            }
            if let Some(a) = arrays.get("child_ids").and_then(|a| a.as_list_opt::<i32>()) {
                if a.values().null_count() > 0 {
                    let mut bad = 0u64;
                    let mut first = None;
                    let offs = a.value_offsets();
                    let vals = a.values();
                    for r in 0..a.len() {
                        if a.is_valid(r) {
                            let (s, e) = (offs[r] as usize, offs[r + 1] as usize);
                            if (s..e).any(|i| vals.is_null(i)) {
                                bad += 1;
                                first.get_or_insert(r);
                            }
                        }
                    }
                    let f = offset + first.unwrap_or(0) as u64;
                    self.tally("derived-null-item", bad, f, || {
                        "child_ids list holds a null item".into()
                    });
                }
            }
            for name in ["child_ids", "n_children", "strahler"] {
                if let Some(a) = arrays.get(name) {
                    *self
                        .col
                        .derived_non_null
                        .entry(name.to_string())
                        .or_insert(0) += a.len() - a.null_count();
                }
            }
        }
        if traits.coordinates {
            for name in ["x", "y", "z"] {
                if let Some(a) = f64col(name) {
                    if a.values().iter().all(|v| v.is_finite()) {
                        continue;
                    }
                    let mut bad = 0u64;
                    let mut first = None;
                    for (r, v) in a.values().iter().enumerate() {
                        if a.is_valid(r) && !v.is_finite() {
                            bad += 1;
                            first.get_or_insert(r);
                        }
                    }
                    let f = offset + first.unwrap_or(0) as u64;
                    self.tally("coordinate-finite", bad, f, || {
                        "coordinate is not finite".into()
                    });
                }
            }
        }
        if traits.tangents {
            if let (Some(x), Some(y), Some(z)) = (
                f64col("tangent_x"),
                f64col("tangent_y"),
                f64col("tangent_z"),
            ) {
                let mut bad = 0u64;
                let mut first = None;
                for r in 0..n {
                    let (a, b, c) = (x.values()[r], y.values()[r], z.values()[r]);
                    let len = (a * a + b * b + c * c).sqrt();
                    if ((len - 1.0).abs() > 1e-6 || len.is_nan())
                        && x.is_valid(r)
                        && y.is_valid(r)
                        && z.is_valid(r)
                    {
                        bad += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally("tangent-normalized", bad, f, || {
                    "tangent vector does not have unit length".into()
                });
            }
            if let Some(a) = f64col("colinearity") {
                let mut bad = 0u64;
                let mut first = None;
                for (r, v) in a.values().iter().enumerate() {
                    if a.is_valid(r) && !(0.0..=1.0).contains(v) {
                        bad += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally("colinearity-range", bad, f, || {
                    "colinearity outside [0, 1]".into()
                });
            }
        }
        // Other context-unique ids.
        let unique_names: Vec<String> = self
            .plans
            .iter()
            .filter(|p| p.spec.unique_in_context && p.name != "sample_id")
            .map(|p| p.name.clone())
            .collect();
        for name in unique_names {
            if let Some(a) = u64col(&name) {
                self.col
                    .unique
                    .entry(name.clone())
                    .or_default()
                    .extend_from_slice(a.values());
            }
        }
        if traits.connections {
            let src = u64col("src_sample_id");
            let tgt = u64col("tgt_sample_id");
            if let (Some(s), Some(t)) = (src, tgt) {
                self.col.conn_src.extend_from_slice(s.values());
                self.col.conn_tgt.extend_from_slice(t.values());
                let mut selfc = 0u64;
                let mut first = None;
                for r in 0..n {
                    if s.values()[r] == t.values()[r] {
                        selfc += 1;
                        first.get_or_insert(r);
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally("self-connection", selfc, f, || {
                    "src_sample_id equals tgt_sample_id".into()
                });
            }
            for (name, which) in [("src_fragment_id", 0), ("tgt_fragment_id", 1)] {
                if let Some(a) = u64col(name) {
                    let v = if which == 0 {
                        &mut self.col.conn_src_frag
                    } else {
                        &mut self.col.conn_tgt_frag
                    };
                    v.extend(a.iter());
                }
            }
            if let Some(t) = arrays.get("type").cloned() {
                self.check_types(&t, src, tgt, offset);
            }
        }
        if let Some(a) = arrays.get("attr").and_then(|a| a.as_map_opt()) {
            let keys = a.keys();
            let keys = keys.as_string_opt::<i32>();
            if let Some(keys) = keys {
                let offs = a.value_offsets();
                let mut bad = 0u64;
                let mut first = None;
                for r in 0..a.len() {
                    if a.is_valid(r) {
                        for i in offs[r] as usize..offs[r + 1] as usize {
                            if keys.is_valid(i) && keys.value(i).starts_with("attr:") {
                                bad += 1;
                                first.get_or_insert(r);
                            }
                        }
                    }
                }
                let f = offset + first.unwrap_or(0) as u64;
                self.tally("attr-key-prefix", bad, f, || {
                    "attr map key starts with attr:".into()
                });
            }
        }
    }

    fn check_types(
        &mut self,
        col: &ArrayRef,
        src: Option<&arrow::array::UInt64Array>,
        tgt: Option<&arrow::array::UInt64Array>,
        offset: u64,
    ) {
        let Some(dict) = col.as_dictionary_opt::<UInt16Type>() else {
            return;
        };
        let Some(values) = dict.values().as_string_opt::<i32>() else {
            return;
        };
        let keys = dict.keys();
        let mut used = vec![false; values.len()];
        let mut gap = vec![false; values.len()];
        for k in keys.iter().flatten() {
            if let Some(u) = used.get_mut(k as usize) {
                *u = true;
            }
        }
        let already = self
            .col
            .checked_dicts
            .iter()
            .any(|d| Arc::ptr_eq(d, dict.values()));
        let mut null_value_rows = 0u64;
        let mut first_null = None;
        for (i, u) in used.iter().enumerate() {
            if !*u {
                continue;
            }
            if values.is_null(i) {
                for (r, k) in keys.iter().enumerate() {
                    if k == Some(i as u16) {
                        null_value_rows += 1;
                        first_null.get_or_insert(r);
                    }
                }
                continue;
            }
            let v = values.value(i);
            if v == "gap_junction" {
                gap[i] = true;
            }
            if already || v == "synapse" || v == "gap_junction" {
                continue;
            }
            let first_row =
                keys.iter().position(|k| k == Some(i as u16)).unwrap_or(0) as u64 + offset;
            match split_prefix(v) {
                Some((p, name)) if !name.is_empty() && !p.is_empty() && !is_reserved_prefix(p) => {
                    let key = format!("{p}:version");
                    if !self.meta.contains_key(&key) {
                        self.rep.report(
                            "connection-type",
                            format!("row {first_row}"),
                            format!("extension type {v:?} requires metadata {key:?}"),
                        );
                    }
                }
                _ => self.rep.report(
                    "connection-type",
                    format!("row {first_row}"),
                    format!("{v:?} is not a connection type (synapse, gap_junction or {{ext}}:{{name}})"),
                ),
            }
        }
        if null_value_rows > 0 {
            let e = self
                .null_counts
                .entry("type".into())
                .or_insert((0, offset + first_null.unwrap_or(0) as u64));
            e.0 += null_value_rows;
        }
        if !already {
            self.col.checked_dicts.push(dict.values().clone());
        }
        if let (Some(s), Some(t)) = (src, tgt) {
            if gap.iter().any(|&g| g) {
                for (r, k) in keys.iter().enumerate() {
                    if let Some(k) = k {
                        if gap.get(k as usize).copied().unwrap_or(false) {
                            self.col.gap.push((
                                s.values()[r],
                                t.values()[r],
                                (offset + r as u64) as u32,
                            ));
                        }
                    }
                }
            }
        }
    }

    // --------------------------------------------------------------- after rows

    fn post(&mut self) -> Result<(), TableError> {
        let traits = self.schema.traits;
        let n = self.col.rows as usize;
        if n >= (u32::MAX - 1) as usize {
            return Err(TableError::data(
                self.src.path(),
                "tables of 4 billion rows or more are not supported",
            ));
        }
        if traits.samples && self.has_usable("sample_id") && self.col.sample_ids.len() == n {
            let ids = std::mem::take(&mut self.col.sample_ids);
            let (index, dups) = IdIndex::build(&ids);
            for d in &dups {
                self.rep.lazy("sample-id-unique", || {
                    (
                        row_loc(d.second as u64, "sample_id", Some(d.id)),
                        format!("sample_id {} also at row {}", d.id, d.first),
                    )
                });
            }
            let frag_ok = self.has_usable("fragment_id") && self.col.frag_rows.len() == n;
            if frag_ok {
                for (key, fid) in std::mem::take(&mut self.frag_keys) {
                    if !self.col.fragments.contains(fid) {
                        self.rep.report(
                            "frag-key-fragment",
                            format!("metadata {key:?}"),
                            format!("fragment {fid} does not occur in the table"),
                        );
                    }
                }
            }
            if traits.tree && frag_ok && self.has_usable("parent_id") && self.col.parents.len() == n
            {
                let parents = std::mem::take(&mut self.col.parents);
                let valid = std::mem::take(&mut self.col.parent_valid);
                let (parent_row, problems) = resolve_parents(&ids, &parents, &valid, &index);
                drop((parents, valid, index));
                let (tree, problems) = build_forest(
                    parent_row,
                    &self.col.frag_rows,
                    &self.col.fragments.ids,
                    problems,
                );
                self.report_tree(&ids, &problems);
                if problems.is_clean() && dups.is_empty() {
                    self.check_derived(&ids, &tree)?;
                }
            }
            self.col.sample_ids = ids;
        }
        let unique = std::mem::take(&mut self.col.unique);
        for (name, ids) in &unique {
            if ids.len() != n {
                continue;
            }
            let (_, dups) = IdIndex::build(ids);
            let rule = if name == "connection_id" {
                "connection-id-unique"
            } else {
                "id-unique"
            };
            for d in &dups {
                self.rep.lazy(rule, || {
                    (
                        row_loc(d.second as u64, name, Some(d.id)),
                        format!("{name} {} also at row {}", d.id, d.first),
                    )
                });
            }
        }
        self.col.unique = unique;
        if !self.col.gap.is_empty() {
            let mut g: Vec<(u64, u64, bool, u32)> = self
                .col
                .gap
                .iter()
                .filter(|(s, t, _)| s != t)
                .map(|&(s, t, r)| (s.min(t), s.max(t), s <= t, r))
                .collect();
            g.sort_unstable();
            let mut i = 0;
            while i < g.len() {
                let mut j = i;
                while j < g.len() && g[j].0 == g[i].0 && g[j].1 == g[i].1 {
                    j += 1;
                }
                let fwd = g[i..j].iter().find(|e| e.2);
                let back = g[i..j].iter().find(|e| !e.2);
                if let (Some(a), Some(b)) = (fwd, back) {
                    let (lo, hi) = (g[i].0, g[i].1);
                    let (ra, rb) = (a.3.min(b.3), a.3.max(b.3));
                    self.rep.lazy("gap-junction-duplicate", || {
                        (
                            format!("row {rb}"),
                            format!("gap_junction between samples {lo} and {hi} is stored in both directions (also row {ra})"),
                        )
                    });
                }
                i = j;
            }
        }
        Ok(())
    }

    fn report_tree(&mut self, ids: &[u64], p: &TreeProblems) {
        for (fid, count, rows) in &p.root_counts {
            let roots: Vec<String> = rows.iter().map(|&r| ids[r as usize].to_string()).collect();
            let msg = if *count == 0 {
                "fragment has no root (no sample with a null parent_id)".to_string()
            } else {
                format!(
                    "fragment has {count} roots (samples {}{}); exactly one is required",
                    roots.join(", "),
                    if (*count as usize) > roots.len() {
                        ", ..."
                    } else {
                        ""
                    }
                )
            };
            self.rep
                .report("skeleton-root-count", format!("fragment {fid}"), msg);
        }
        for &(r, parent) in &p.missing_parent {
            let r = r as usize;
            self.rep.report(
                "skeleton-parent-missing",
                row_loc(r as u64, "sample_id", Some(ids[r])),
                format!("parent_id {parent} is not a sample_id of the table"),
            );
        }
        for &r in &p.self_parent {
            let r = r as usize;
            self.rep.report(
                "skeleton-self-parent",
                row_loc(r as u64, "sample_id", Some(ids[r])),
                "sample is its own parent",
            );
        }
        for &(r, pr) in &p.cross_fragment {
            let (r, pr) = (r as usize, pr as usize);
            let (fc, fp) = (
                self.col.fragments.ids[self.col.frag_rows[r] as usize],
                self.col.fragments.ids[self.col.frag_rows[pr] as usize],
            );
            self.rep.report(
                "skeleton-parent-fragment",
                row_loc(r as u64, "sample_id", Some(ids[r])),
                format!(
                    "parent {} is in fragment {fp}, the sample in fragment {fc}",
                    ids[pr]
                ),
            );
        }
        for (members, len) in &p.cycles {
            let m: Vec<String> = members
                .iter()
                .map(|&r| ids[r as usize].to_string())
                .collect();
            let fid = self.col.fragments.ids[self.col.frag_rows[members[0] as usize] as usize];
            self.rep.report(
                "skeleton-cycle",
                format!("fragment {fid}"),
                format!(
                    "parent links form a cycle of {len} sample(s): {}{}",
                    m.join(" -> "),
                    if *len > m.len() { " -> ..." } else { "" }
                ),
            );
        }
        for (i, total) in p.counts.iter().enumerate() {
            let (rule, kept) = match i {
                0 => ("skeleton-parent-missing", p.missing_parent.len()),
                1 => ("skeleton-self-parent", p.self_parent.len()),
                2 => ("skeleton-parent-fragment", p.cross_fragment.len()),
                3 => ("skeleton-root-count", p.root_counts.len()),
                _ => ("skeleton-cycle", p.cycles.len()),
            };
            if *total > kept {
                // Make the summary count right: register the unreported ones.
                for _ in kept..*total {
                    self.rep
                        .lazy(rule, || ("table".into(), "(not kept)".into()));
                }
            }
        }
    }

    fn check_derived(&mut self, ids: &[u64], tree: &Tree) -> Result<(), TableError> {
        let cols: Vec<String> = ["child_ids", "n_children", "strahler"]
            .iter()
            .filter(|c| self.has_usable(c))
            .map(|c| c.to_string())
            .collect();
        if cols.is_empty() {
            return Ok(());
        }
        let populated =
            |name: &str, m: &HashMap<String, usize>| m.get(name).copied().unwrap_or(0) > 0;
        let pop_children = populated("child_ids", &self.col.derived_non_null);
        let pop_n = populated("n_children", &self.col.derived_non_null);
        let plan_idx: Vec<Option<usize>> = ["child_ids", "n_children", "strahler"]
            .iter()
            .map(|c| self.plans.iter().position(|p| p.name == *c && !p.unusable))
            .collect();
        let mut offset = 0usize;
        let mut got: Vec<u64> = Vec::new();
        let mut want: Vec<u64> = Vec::new();
        let mut stats = [(0u64, 0usize); 5];
        for batch in self.src.batches_projected(&cols, self.opts.batch_size)? {
            let batch = batch?;
            let rows = batch.num_rows();
            if offset + rows > tree.len() {
                return Err(TableError::data(
                    self.src.path(),
                    "the table changed while it was being read",
                ));
            }
            if let Some(Some(a)) = plan_idx[0].map(|i| self.prepared(&batch, i)) {
                if let Some(l) = a.as_list_opt::<i32>() {
                    if let Some(vals) = l.values().as_primitive_opt::<UInt64Type>() {
                        let offs = l.value_offsets();
                        for r in 0..rows {
                            let row = offset + r;
                            let kids = tree.children_of(row);
                            if l.is_null(r) {
                                if kids.is_empty() && pop_children {
                                    stats[3].0 += 1;
                                    if stats[3].0 == 1 {
                                        stats[3].1 = row;
                                    }
                                }
                                continue;
                            }
                            let (s, e) = (offs[r] as usize, offs[r + 1] as usize);
                            let same = if e - s != kids.len() {
                                false
                            } else {
                                got.clear();
                                got.extend_from_slice(&vals.values()[s..e]);
                                want.clear();
                                want.extend(kids.iter().map(|&k| ids[k as usize]));
                                got.sort_unstable();
                                want.sort_unstable();
                                got == want
                            };
                            if !same {
                                stats[0].0 += 1;
                                if stats[0].0 <= self.opts.max_per_rule as u64 {
                                    want.clear();
                                    want.extend(kids.iter().map(|&k| ids[k as usize]));
                                    want.sort_unstable();
                                    let g: Vec<u64> = vals.values()[s..e].to_vec();
                                    let w = want.clone();
                                    self.rep.lazy("derived-child-ids", || {
                                        (
                                            row_loc(row as u64, "sample_id", Some(ids[row])),
                                            format!("child_ids {g:?}, computed {w:?}"),
                                        )
                                    });
                                } else {
                                    self.rep.lazy("derived-child-ids", || {
                                        (String::new(), String::new())
                                    });
                                }
                            }
                        }
                    }
                }
            }
            if let Some(Some(a)) = plan_idx[1].map(|i| self.prepared(&batch, i)) {
                if let Some(a) = a.as_primitive_opt::<UInt32Type>() {
                    for r in 0..rows {
                        let row = offset + r;
                        let k = tree.children_of(row).len() as u32;
                        if a.is_null(r) {
                            if k == 0 && pop_n {
                                stats[4].0 += 1;
                                if stats[4].0 == 1 {
                                    stats[4].1 = row;
                                }
                            }
                            continue;
                        }
                        let v = a.values()[r];
                        if v != k {
                            self.rep.lazy("derived-n-children", || {
                                (
                                    row_loc(row as u64, "sample_id", Some(ids[row])),
                                    format!("n_children {v}, computed {k}"),
                                )
                            });
                        }
                    }
                }
            }
            if let Some(Some(a)) = plan_idx[2].map(|i| self.prepared(&batch, i)) {
                if let Some(a) = a.as_primitive_opt::<UInt32Type>() {
                    for r in 0..rows {
                        let row = offset + r;
                        if a.is_null(r) {
                            continue;
                        }
                        let (v, s) = (a.values()[r], tree.strahler[row]);
                        if v != s {
                            self.rep.lazy("derived-strahler", || {
                                (
                                    row_loc(row as u64, "sample_id", Some(ids[row])),
                                    format!("strahler {v}, computed {s}"),
                                )
                            });
                        }
                    }
                }
            }
            offset += rows;
        }
        for (i, name) in [(3, "child_ids"), (4, "n_children")] {
            let (count, first) = stats[i];
            if count > 0 {
                self.rep.report(
                    "derived-leaf-null",
                    format!("row {first}"),
                    format!(
                        "{count} leaf row(s) have a null {name}; known leaves SHOULD have {}",
                        if name == "child_ids" { "[]" } else { "0" }
                    ),
                );
            }
        }
        Ok(())
    }

    fn facts(&mut self, report: usize) -> Facts {
        let m = &self.meta;
        let swc_types: BTreeMap<String, String> = m
            .iter()
            .filter(|(k, _)| k.starts_with("net.clbarnes.swc:type:"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let n = self.col.rows as usize;
        let samples = (self.schema.traits.samples
            && self.col.sample_ids.len() == n
            && self.col.frag_rows.len() == n)
            .then(|| {
                let f: Vec<u64> = self
                    .col
                    .frag_rows
                    .iter()
                    .map(|&i| self.col.fragments.ids[i as usize])
                    .collect();
                (std::mem::take(&mut self.col.sample_ids), f)
            });
        let mut unique: Vec<(String, Vec<u64>)> = std::mem::take(&mut self.col.unique)
            .into_iter()
            .filter(|(_, v)| v.len() == n)
            .collect();
        if let Some((ids, _)) = &samples {
            unique.push(("sample_id".into(), ids.clone()));
        }
        let conns = (self.schema.traits.connections
            && self.col.conn_src.len() == n
            && self.col.conn_tgt.len() == n)
            .then(|| ConnFacts {
                ids: unique
                    .iter()
                    .find(|(k, _)| k == "connection_id")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default(),
                src: std::mem::take(&mut self.col.conn_src),
                tgt: std::mem::take(&mut self.col.conn_tgt),
                src_frag: std::mem::take(&mut self.col.conn_src_frag),
                tgt_frag: std::mem::take(&mut self.col.conn_tgt_frag),
            });
        Facts {
            report,
            schema: self.schema.clone(),
            context: m.get("context").cloned(),
            space: m.get("space").cloned(),
            unit: m.get("unit").cloned(),
            swc_types,
            unique,
            samples,
            conns,
        }
    }
}

/// A decoder error caused by metadata (or names) that are not UTF-8: the table
/// breaks the "strings MUST be UTF-8" rule rather than being unreadable.
fn is_utf8_error(err: &TableError) -> bool {
    let s = err.to_string().to_ascii_lowercase();
    matches!(err, TableError::Format { .. }) && (s.contains("utf-8") || s.contains("utf8error"))
}

fn unreadable(path: &Path, err: &TableError, format: Option<Format>) -> TableReport {
    if is_utf8_error(err) {
        return TableReport {
            path: path.to_path_buf(),
            schema: None,
            schema_source: None,
            format,
            rows: 0,
            errors: vec![Violation {
                severity: Severity::Error,
                rule: "metadata-encoding",
                check: 1,
                location: "schema".into(),
                message: format!(
                    "metadata or names are not valid UTF-8 ({})",
                    err.to_string().chars().take(160).collect::<String>()
                ),
            }],
            warnings: vec![],
            unreadable: false,
        };
    }
    TableReport {
        path: path.to_path_buf(),
        schema: None,
        schema_source: None,
        format,
        rows: 0,
        errors: vec![Violation {
            severity: Severity::Error,
            rule: "table-unreadable",
            check: 0,
            location: path.display().to_string(),
            message: err.to_string(),
        }],
        warnings: vec![],
        unreadable: true,
    }
}

fn run_table(
    src: &TableSource,
    opts: &ValidateOptions,
    keep_facts: bool,
    report_index: usize,
) -> (TableReport, Option<Facts>) {
    let path = src.path().to_path_buf();
    let Some((schema, how)) = identify(&opts.registry, opts.schema.as_deref(), src) else {
        let mut rep = Reporter::new(opts.strict, opts.max_per_rule);
        rep.report(
            "schema-unknown",
            "table",
            "cannot identify the schema from the file name or the columns; pass --schema",
        );
        let (errors, warnings) = rep.finish();
        return (
            TableReport {
                path,
                schema: None,
                schema_source: None,
                format: Some(src.format()),
                rows: 0,
                errors,
                warnings,
                unreadable: false,
            },
            None,
        );
    };
    let mut run = TableRun::new(opts, src, schema);
    run.check_file();
    run.check_metadata();
    run.check_fields();
    let result = run.row_pass().and_then(|_| run.post());
    if let Err(e) = result {
        return (unreadable(&path, &e, Some(src.format())), None);
    }
    let facts = keep_facts.then(|| run.facts(report_index));
    let rows = run.col.rows;
    let name = run.schema.name.clone();
    let (errors, warnings) = run.rep.finish();
    (
        TableReport {
            path,
            schema: Some(name),
            schema_source: Some(how),
            format: Some(src.format()),
            rows,
            errors,
            warnings,
            unreadable: false,
        },
        facts,
    )
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
    if let Some(s) = &opts.schema {
        opts.registry
            .effective(s)
            .map_err(|e| TableError::Usage(e.to_string()))?;
    }
    let keep = paths.len() > 1;
    let mut reports = Vec::with_capacity(paths.len());
    let mut facts = Vec::new();
    for (i, p) in paths.iter().enumerate() {
        match TableSource::open(p) {
            Ok(src) => {
                let (r, f) = run_table(&src, opts, keep, i);
                reports.push(r);
                facts.extend(f);
            }
            Err(e) => reports.push(unreadable(p, &e, None)),
        }
    }
    if keep {
        dataset_checks(&mut reports, &facts, opts);
    }
    Ok(reports)
}

fn dataset_checks(reports: &mut [TableReport], facts: &[Facts], opts: &ValidateOptions) {
    let mut reps: Vec<Reporter> = (0..reports.len())
        .map(|_| Reporter::new(opts.strict, opts.max_per_rule))
        .collect();
    let mut contexts: BTreeMap<&str, Vec<&Facts>> = BTreeMap::new();
    for f in facts {
        if let Some(c) = &f.context {
            contexts.entry(c.as_str()).or_default().push(f);
        }
    }
    let name = |i: usize| reports[i].path.display().to_string();
    for (ctx, group) in &contexts {
        if group.len() < 2 {
            continue;
        }
        // 39/40: one space (and unit) per context.
        let spatial: Vec<&&Facts> = group.iter().filter(|f| f.schema.is_a("spatial")).collect();
        if let Some(first) = spatial.iter().find(|f| f.space.is_some()) {
            let s0 = first.space.clone().unwrap_or_default();
            for f in &spatial {
                match &f.space {
                    Some(s) if *s != s0 => reps[f.report].report(
                        "context-space",
                        "metadata \"space\"",
                        format!(
                            "space {s:?} differs from {s0:?} in {} (context {ctx:?})",
                            name(first.report)
                        ),
                    ),
                    None => reps[f.report].report(
                        "context-space-missing",
                        "metadata \"space\"",
                        format!(
                            "no space, while {} sets {s0:?} (context {ctx:?})",
                            name(first.report)
                        ),
                    ),
                    _ => {}
                }
            }
        }
        if let Some(first) = spatial.iter().find(|f| f.unit.is_some()) {
            let u0 = first.unit.clone().unwrap_or_default();
            for f in &spatial {
                if let Some(u) = &f.unit {
                    if *u != u0 {
                        reps[f.report].report(
                            "context-unit",
                            "metadata \"unit\"",
                            format!("unit {u:?} differs from {u0:?} in {}", name(first.report)),
                        );
                    }
                }
            }
        }
        // 35/36: ids unique across the context's tables.
        let mut by_field: BTreeMap<&str, Vec<(&Facts, &Vec<u64>)>> = BTreeMap::new();
        for f in group {
            for (k, v) in &f.unique {
                by_field.entry(k.as_str()).or_default().push((f, v));
            }
        }
        for (field, tables) in by_field {
            if tables.len() < 2 {
                continue;
            }
            let mut all: Vec<(u64, usize, u32)> = Vec::new();
            for (t, ids) in &tables {
                all.extend(
                    ids.iter()
                        .enumerate()
                        .map(|(r, &id)| (id, t.report, r as u32)),
                );
            }
            all.sort_unstable();
            for w in all.windows(2) {
                if w[0].0 == w[1].0 && w[0].1 != w[1].1 {
                    let (id, other, row) = (w[0].0, w[0].1, w[1].2);
                    let other_name = name(other);
                    reps[w[1].1].lazy("context-id-unique", || {
                        (
                            row_loc(row as u64, field, Some(id)),
                            format!("{field} {id} also appears in {other_name} (context {ctx:?})"),
                        )
                    });
                }
            }
        }
        // 37/38: connections refer to samples of the context.
        let skel: Vec<&&Facts> = group
            .iter()
            .filter(|f| f.samples.is_some() && f.schema.is_a("skeletons"))
            .collect();
        let other: Vec<&&Facts> = group
            .iter()
            .filter(|f| f.samples.is_some() && !f.schema.is_a("skeletons"))
            .collect();
        let conns: Vec<&&Facts> = group.iter().filter(|f| f.conns.is_some()).collect();
        if conns.is_empty() || (skel.is_empty() && (opts.strict || other.is_empty())) {
            continue;
        }
        let build = |tables: &[&&Facts]| -> Vec<(u64, u64)> {
            let mut v: Vec<(u64, u64)> = Vec::new();
            for t in tables {
                if let Some((ids, frags)) = &t.samples {
                    v.extend(ids.iter().copied().zip(frags.iter().copied()));
                }
            }
            v.sort_unstable();
            v
        };
        let primary = if opts.strict {
            build(&skel)
        } else {
            let mut all = skel.clone();
            all.extend(other.iter());
            build(&all)
        };
        let secondary = if opts.strict { build(&other) } else { vec![] };
        let lookup = |v: &[(u64, u64)], id: u64| -> Option<u64> {
            let i = v.partition_point(|p| p.0 < id);
            v.get(i).filter(|p| p.0 == id).map(|p| p.1)
        };
        for c in conns {
            let Some(cf) = &c.conns else { continue };
            let rep = &mut reps[c.report];
            for (which, ends, frags) in [
                ("src", &cf.src, &cf.src_frag),
                ("tgt", &cf.tgt, &cf.tgt_frag),
            ] {
                for (r, &sid) in ends.iter().enumerate() {
                    let cid = cf.ids.get(r).copied();
                    match lookup(&primary, sid) {
                        None => {
                            let elsewhere = lookup(&secondary, sid).is_some();
                            rep.lazy("connection-sample-missing", || {
                                (
                                    row_loc(r as u64, "connection_id", cid),
                                    if elsewhere {
                                        format!("{which}_sample_id {sid} is only in a non-skeleton table (strict mode resolves against skeletons)")
                                    } else {
                                        format!("{which}_sample_id {sid} is not a sample of any skeleton table of context {ctx:?}")
                                    },
                                )
                            });
                        }
                        Some(fid) => {
                            if let Some(Some(g)) = frags.get(r) {
                                if *g != fid {
                                    let g = *g;
                                    rep.lazy("derived-fragment-id", || {
                                        (
                                            row_loc(r as u64, "connection_id", cid),
                                            format!("{which}_fragment_id {g}, but sample {sid} is in fragment {fid}"),
                                        )
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        // 42: SWC type mappings agree.
        let swc: Vec<&&Facts> = group.iter().filter(|f| !f.swc_types.is_empty()).collect();
        if let Some(first) = swc.first() {
            for f in swc.iter().skip(1) {
                let differ: Vec<&String> = f
                    .swc_types
                    .iter()
                    .filter(|(k, v)| first.swc_types.get(*k).is_some_and(|v0| v0 != *v))
                    .map(|(k, _)| k)
                    .collect();
                if !differ.is_empty() {
                    reps[f.report].report(
                        "extension-consistency",
                        "metadata",
                        format!(
                            "SWC type mapping differs from {} for {}",
                            name(first.report),
                            differ
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                }
            }
        }
    }
    for (i, rep) in reps.into_iter().enumerate() {
        let (e, w) = rep.finish();
        reports[i].errors.extend(e);
        reports[i].warnings.extend(w);
    }
}

/// Validates tables already in memory (tests, demo): writes nothing.
pub fn schema_of(path: &Path) -> Result<Arc<Schema>, TableError> {
    Ok(TableSource::open(path)?.schema())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert!(is_iri("urn:uuid:00000000-0000-4000-8000-000000000001"));
        assert!(is_iri("https://example.org/space/FAFB"));
        assert!(!is_iri("some-uuid"));
        assert!(!is_iri("a b:c"));
        assert!(is_uuid("0123456789abcdef0123456789abcdef"));
        assert!(is_uuid("00000000-0000-4000-8000-000000000001"));
        assert!(!is_uuid("00000000-0000-4000-8000-00000000000g"));
        assert!(is_snake_case("sample_id") && !is_snake_case("SampleId") && !is_snake_case("1x"));
        assert!(is_signed_decimal("-1") && is_signed_decimal("42") && !is_signed_decimal("x"));
        assert_eq!(local_part("net.clbarnes.swc:type_id"), "type_id");
    }
}
