//! File-level checks: notes from opening the table (Hive part files with
//! differing metadata, Parquet footer metadata, undecodable metadata), file
//! format against the extension, the `{name}.{schema}.{ext}` file name, abstract
//! schemas written as files; and the report of an input that cannot be read.

use super::run::TableRun;
use super::{Severity, TableReport, Violation};
use crate::error::TableError;
use crate::io::Format;
use crate::rules::RuleId;
use std::path::Path;

impl TableRun<'_> {
    /// Reports the notes from opening the table, then checks each file's format
    /// against its extension, the file name and abstract schemas.
    pub(super) fn check_file(&mut self) {
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
                    RuleId::FileFormat,
                    f.path.display().to_string(),
                    format!(
                        "file named like Arrow IPC is {} (the spec asks for the IPC file format)",
                        f.format.as_str()
                    ),
                );
            }
            if pq_ext && f.format != Format::Parquet {
                self.rep.report(
                    RuleId::FileFormat,
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
                    RuleId::FileName,
                    p.display().to_string(),
                    format!(
                        "file name {name:?} has no schema infix (expected e.g. name.{}.parquet)",
                        self.schema.name
                    ),
                ),
                Some(d) if !self.schema.is_a(&d.name) => self.rep.report(
                    RuleId::FileName,
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
                RuleId::AbstractSchema,
                "table",
                format!(
                    "{:?} is an abstract schema and SHOULD NOT be written as a file",
                    self.schema.name
                ),
            );
        }
    }
}

/// A decoder error caused by metadata (or names) that are not UTF-8: the table
/// breaks the "strings MUST be UTF-8" rule rather than being unreadable.
fn is_utf8_error(err: &TableError) -> bool {
    let s = err.to_string().to_ascii_lowercase();
    matches!(err, TableError::Format { .. }) && (s.contains("utf-8") || s.contains("utf8error"))
}

/// The report of an input that cannot be opened or decoded (or whose metadata
/// is not UTF-8, which is the rule `metadata-encoding` instead).
pub(super) fn unreadable(path: &Path, err: &TableError, format: Option<Format>) -> TableReport {
    let encoding = is_utf8_error(err);
    let (rule, location, message) = if encoding {
        (
            RuleId::MetadataEncoding,
            "schema".to_string(),
            format!(
                "metadata or names are not valid UTF-8 ({})",
                err.to_string().chars().take(160).collect::<String>()
            ),
        )
    } else {
        // The location names the file; the error's own copy of the name is not repeated.
        let location = path.display().to_string();
        let text = err.to_string();
        let message = text
            .strip_prefix(&format!("{location}: "))
            .unwrap_or(&text)
            .to_string();
        (RuleId::TableUnreadable, location, message)
    };
    TableReport {
        path: path.to_path_buf(),
        schema: None,
        schema_source: None,
        format,
        rows: 0,
        errors: vec![Violation {
            severity: Severity::Error,
            rule,
            check: rule.rule().check,
            location,
            message,
        }],
        warnings: vec![],
        unreadable: !encoding,
    }
}
