//! Table summaries: schema, metadata, row count and fragments (`table info`).

use crate::error::Result;
use crate::io::{Format, TableSource, DEFAULT_BATCH_SIZE};
use crate::schema::Registry;
use crate::validate::identify;
use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};

/// A table summary.
#[derive(Debug, Clone)]
pub struct TableInfo {
    /// Path.
    pub path: PathBuf,
    /// Storage format.
    pub format: Format,
    /// Identified neurarrow schema, if any.
    pub schema: Option<String>,
    /// `(name, arrow type, nullable)` per field.
    pub fields: Vec<(String, String, bool)>,
    /// Schema metadata (technical keys such as `ARROW:schema` left out).
    pub metadata: BTreeMap<String, String>,
    /// Rows.
    pub rows: u64,
    /// Data files.
    pub files: usize,
    /// Hive partition columns.
    pub partitions: Vec<String>,
    /// `(fragment_id, rows)` sorted by id, when the table has `fragment_id`.
    pub fragments: Option<Vec<(u64, u64)>>,
}

/// Summarises the table at `path`.
pub fn table_info(path: &Path) -> Result<TableInfo> {
    source_info(&TableSource::open(path)?)
}

/// Summarises an opened table (in any store); [`TableInfo::path`] is its display name.
pub fn source_info(src: &TableSource) -> Result<TableInfo> {
    let path = src.path();
    let schema = src.schema();
    let registry = Registry::standard();
    let name = identify(&registry, None, src).map(|(e, _)| e.name);
    let fields = schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().to_string(), f.is_nullable()))
        .collect();
    let metadata = schema
        .metadata()
        .iter()
        .filter(|(k, _)| !crate::schema::is_technical_key(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let fragments = if schema.field_with_name("fragment_id").is_ok() {
        let mut counts: HashMap<u64, u64> = HashMap::new();
        let mut last: Option<(u64, u64)> = None;
        for b in src.batches_projected(&["fragment_id".to_string()], DEFAULT_BATCH_SIZE)? {
            let b = b?;
            let col = crate::derive::u64_column(path, &b, "fragment_id")?;
            for v in col.iter().flatten() {
                match &mut last {
                    Some((l, c)) if *l == v => *c += 1,
                    _ => {
                        if let Some((l, c)) = last.take() {
                            *counts.entry(l).or_insert(0) += c;
                        }
                        last = Some((v, 1));
                    }
                }
            }
        }
        if let Some((l, c)) = last {
            *counts.entry(l).or_insert(0) += c;
        }
        let mut v: Vec<(u64, u64)> = counts.into_iter().collect();
        v.sort_unstable();
        Some(v)
    } else {
        None
    };
    let rows = match &fragments {
        Some(f) if src.format() != Format::Parquet => f.iter().map(|(_, c)| c).sum(),
        _ => src.num_rows()?,
    };
    Ok(TableInfo {
        path: path.to_path_buf(),
        format: src.format(),
        schema: name,
        fields,
        metadata,
        rows,
        files: src.files().len(),
        partitions: src
            .partition_fields()
            .iter()
            .map(|f| f.name().clone())
            .collect(),
        fragments,
    })
}

impl TableInfo {
    /// JSON form.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "path": self.path.display().to_string(),
            "format": self.format.as_str(),
            "schema": self.schema,
            "rows": self.rows,
            "files": self.files,
            "partitions": self.partitions,
            "fields": self.fields.iter().map(|(n, t, nullable)| json!({"name": n, "type": t, "nullable": nullable})).collect::<Vec<_>>(),
            "metadata": self.metadata,
            "fragments": self.fragments.as_ref().map(|f| json!({
                "count": f.len(),
                "rows": f.iter().map(|(id, c)| json!([id, c])).collect::<Vec<_>>(),
            })),
        })
    }
}

impl fmt::Display for TableInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "path:     {}", self.path.display())?;
        writeln!(f, "format:   {}", self.format.as_str())?;
        writeln!(
            f,
            "schema:   {}",
            self.schema.as_deref().unwrap_or("(not identified)")
        )?;
        writeln!(f, "rows:     {}", self.rows)?;
        if self.files > 1 || !self.partitions.is_empty() {
            writeln!(
                f,
                "files:    {} (partitioned by {})",
                self.files,
                self.partitions.join(", ")
            )?;
        }
        writeln!(f, "fields:")?;
        for (n, t, null) in &self.fields {
            writeln!(f, "  {n}: {t}{}", if *null { "" } else { " not null" })?;
        }
        writeln!(f, "metadata:")?;
        for (k, v) in &self.metadata {
            let shown: String = if v.chars().count() > 72 {
                format!(
                    "{}...",
                    v.chars().take(72).collect::<String>().replace('\n', "\\n")
                )
            } else {
                v.replace('\n', "\\n")
            };
            writeln!(f, "  {k} = {shown}")?;
        }
        if let Some(fr) = &self.fragments {
            write!(f, "fragments: {}", fr.len())?;
            let shown: Vec<String> = fr
                .iter()
                .take(10)
                .map(|(i, c)| format!("{i} ({c} rows)"))
                .collect();
            if !shown.is_empty() {
                write!(
                    f,
                    ": {}{}",
                    shown.join(", "),
                    if fr.len() > 10 { ", ..." } else { "" }
                )?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
