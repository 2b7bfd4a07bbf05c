//! What validation found: one [`Finding`] per problem, naming the object, its type and the
//! [`Rule`] broken, with a [`Severity`]; the [`Report`] of a file as text or JSON.

use std::fmt::{self, Write as _};

use serde_json::{json, Value};

/// How serious a finding is (the one severity of neurochunk's validators).
pub use neurochunk_report::Severity;

/// The rule a finding is about. [`Rule::id`] is the stable name used in reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// `unknown-type`: a `neurodata_type` no loaded namespace defines.
    UnknownType,
    /// `missing-namespace`: a namespace an object or another namespace names is not loaded.
    MissingNamespace,
    /// `missing-attribute`: a required attribute is absent.
    MissingAttribute,
    /// `missing-dataset`: a required dataset is absent.
    MissingDataset,
    /// `missing-group`: a required group is absent.
    MissingGroup,
    /// `missing-link`: a required link is absent.
    MissingLink,
    /// `quantity`: more (or fewer) objects than the specification's quantity allows.
    Quantity,
    /// `dtype`: the stored data type is not one the specification allows.
    Dtype,
    /// `shape`: the shape or rank is not one the specification allows.
    Shape,
    /// `value`: a fixed `value` differs.
    Value,
    /// `timezone`: an ISO 8601 date-time without a time zone.
    Timezone,
    /// `wrong-type`: an object of a type the specification does not allow in its place.
    WrongType,
    /// `reference-target`: a reference to an object of the wrong type.
    ReferenceTarget,
    /// `link-target`: a link to an object of the wrong type.
    LinkTarget,
    /// `illegal-link`: a link where the specification wants the object itself.
    IllegalLink,
    /// `unresolved`: a link or reference that leads nowhere.
    Unresolved,
    /// `table-colnames`: a DynamicTable's `colnames` names a column it does not have.
    TableColnames,
    /// `table-column-length`: a DynamicTable column whose row count differs from the table's.
    TableColumnLength,
    /// `vector-index`: a VectorIndex that decreases or points past the end of its target.
    VectorIndex,
    /// `table-region`: a DynamicTableRegion index outside its table.
    TableRegion,
    /// `duplicate-ids`: ElementIdentifiers that are not unique.
    DuplicateIds,
    /// `unreadable`: an object a rule needs could not be read.
    Unreadable,
    /// `unmatched`: an object its parent's specification does not describe (warning).
    Unmatched,
    /// `schema`: a problem in the specifications themselves (warning).
    Schema,
    /// `external`: an object in another file, not validated here (warning).
    External,
}

impl Rule {
    /// Every rule.
    pub const ALL: [Rule; 25] = [
        Rule::UnknownType,
        Rule::MissingNamespace,
        Rule::MissingAttribute,
        Rule::MissingDataset,
        Rule::MissingGroup,
        Rule::MissingLink,
        Rule::Quantity,
        Rule::Dtype,
        Rule::Shape,
        Rule::Value,
        Rule::Timezone,
        Rule::WrongType,
        Rule::ReferenceTarget,
        Rule::LinkTarget,
        Rule::IllegalLink,
        Rule::Unresolved,
        Rule::TableColnames,
        Rule::TableColumnLength,
        Rule::VectorIndex,
        Rule::TableRegion,
        Rule::DuplicateIds,
        Rule::Unreadable,
        Rule::Unmatched,
        Rule::Schema,
        Rule::External,
    ];

    /// The rule's name in reports (`missing-attribute`, `dtype`, …).
    pub fn id(self) -> &'static str {
        match self {
            Rule::UnknownType => "unknown-type",
            Rule::MissingNamespace => "missing-namespace",
            Rule::MissingAttribute => "missing-attribute",
            Rule::MissingDataset => "missing-dataset",
            Rule::MissingGroup => "missing-group",
            Rule::MissingLink => "missing-link",
            Rule::Quantity => "quantity",
            Rule::Dtype => "dtype",
            Rule::Shape => "shape",
            Rule::Value => "value",
            Rule::Timezone => "timezone",
            Rule::WrongType => "wrong-type",
            Rule::ReferenceTarget => "reference-target",
            Rule::LinkTarget => "link-target",
            Rule::IllegalLink => "illegal-link",
            Rule::Unresolved => "unresolved",
            Rule::TableColnames => "table-colnames",
            Rule::TableColumnLength => "table-column-length",
            Rule::VectorIndex => "vector-index",
            Rule::TableRegion => "table-region",
            Rule::DuplicateIds => "duplicate-ids",
            Rule::Unreadable => "unreadable",
            Rule::Unmatched => "unmatched",
            Rule::Schema => "schema",
            Rule::External => "external",
        }
    }

    /// The rule named `id`.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.id() == id)
    }

    /// The severity of its findings.
    pub fn severity(self) -> Severity {
        match self {
            Rule::Unmatched | Rule::Schema | Rule::External => Severity::Warning,
            _ => Severity::Error,
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

/// One problem.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// The object concerned (absolute path; `/` for the file).
    pub path: String,
    /// Its type: the `neurodata_type`, or for an untyped object the specification it falls
    /// under (`TimeSeries/data`, as pynwb names it).
    pub data_type: String,
    /// The rule broken.
    pub rule: Rule,
    /// The attribute concerned, for attribute findings.
    pub attribute: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Finding {
    /// The finding as one line: `error [rule] /path (Type): message`.
    pub fn line(&self) -> String {
        let attribute = self
            .attribute
            .as_deref()
            .map(|a| format!(" attribute '{a}':"))
            .unwrap_or_default();
        format!(
            "{} [{}] {} ({}):{attribute} {}",
            self.severity.name(),
            self.rule,
            self.path,
            self.data_type,
            self.message
        )
    }

    /// The finding as a JSON object (`file` is the file's display name).
    pub fn to_json(&self, file: &str) -> Value {
        let mut v = json!({
            "file": file,
            "severity": self.severity.name(),
            "path": self.path,
            "type": self.data_type,
            "rule": self.rule.id(),
            "message": self.message,
        });
        if let Some(a) = &self.attribute {
            v["attribute"] = Value::String(a.clone());
        }
        v
    }
}

/// The outcome of validating one file.
#[derive(Clone, Debug)]
pub struct Report {
    /// The file's display name.
    pub file: String,
    /// The namespaces validated against, as (name, version).
    pub namespaces: Vec<(String, String)>,
    /// How many typed objects were checked.
    pub objects: usize,
    /// Every finding, errors first, each group sorted by path.
    pub findings: Vec<Finding>,
}

impl Report {
    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }

    /// Whether the file conforms (no errors; warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.errors().next().is_none()
    }

    /// Every finding as a JSON object (see [`Finding::to_json`]).
    pub fn to_json(&self) -> Vec<Value> {
        self.findings
            .iter()
            .map(|f| f.to_json(&self.file))
            .collect()
    }

    /// A summary line, then the errors and the warnings, one line each.
    pub fn to_text(&self) -> String {
        let errors = self.errors().count();
        let warnings = self.warnings().count();
        let namespaces: Vec<String> = self
            .namespaces
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        let verdict = if errors == 0 { "valid" } else { "invalid" };
        let mut out = format!(
            "{}: {verdict}: {errors} error(s), {warnings} warning(s) ({} typed objects; {})\n",
            self.file,
            self.objects,
            namespaces.join(", ")
        );
        for (title, severity) in [("errors", Severity::Error), ("warnings", Severity::Warning)] {
            let lines: Vec<&Finding> = self
                .findings
                .iter()
                .filter(|f| f.severity == severity)
                .collect();
            if lines.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{title}:");
            for f in lines {
                let _ = writeln!(out, "  {}", f.line());
            }
        }
        out
    }
}
