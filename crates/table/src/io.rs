//! Reading and writing neurarrow tables: Arrow IPC (file and stream format),
//! Parquet, and Hive-partitioned Parquet directories.
//!
//! [`TableSource`] opens any of them, exposes the logical schema (with metadata)
//! and streams record batches with an optional column projection, so memory is
//! bounded by the batch (or Parquet row group), not the table. [`TableWriter`]
//! writes atomically (temporary name, then rename) and puts the neurarrow schema
//! metadata both in the embedded Arrow schema and in the Parquet footer key/value
//! pairs, where pyarrow and navis look for it.

use crate::error::{Result, TableError};
use crate::rules::RuleId;
use crate::schema::{is_technical_key, Registry, TypeSpec};
use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use arrow::ipc::reader::{FileReader, StreamReader};
use arrow::ipc::writer::FileWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
pub use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Default number of rows per streamed batch.
pub const DEFAULT_BATCH_SIZE: usize = 64 * 1024;

/// The value pyarrow writes for a null Hive partition.
pub const HIVE_NULL: &str = "__HIVE_DEFAULT_PARTITION__";

/// On-disk layout of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Arrow IPC file format (`ARROW1` magic), a.k.a. Feather V2.
    ArrowIpc,
    /// Arrow IPC stream format (read only, accepted as an extra).
    ArrowStream,
    /// A single Parquet file.
    Parquet,
    /// A directory of Parquet files partitioned as `column=value/`.
    Hive,
}

impl Format {
    /// Lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ArrowIpc => "arrow-ipc",
            Format::ArrowStream => "arrow-ipc-stream",
            Format::Parquet => "parquet",
            Format::Hive => "hive-parquet",
        }
    }
}

/// Something noticed while opening a table that the validator reports.
#[derive(Debug, Clone)]
pub struct SourceNote {
    /// Rule (see [`crate::rules`]).
    pub rule: RuleId,
    /// Where (file, key, ...).
    pub location: String,
    /// What.
    pub message: String,
}

/// One data file of a table (a single file, or one file of a Hive directory).
#[derive(Debug, Clone)]
pub struct DataFile {
    /// Path of the file.
    pub path: PathBuf,
    /// File format (`ArrowIpc`, `ArrowStream` or `Parquet`).
    pub format: Format,
    /// Partition values from the directory names, in partition-column order.
    pub partition: Vec<Option<String>>,
    /// The file's own Arrow schema (with metadata).
    pub schema: SchemaRef,
    /// Row count when known without reading the data.
    pub rows: Option<u64>,
}

/// An opened table: its logical schema and how to stream its rows.
#[derive(Debug, Clone)]
pub struct TableSource {
    path: PathBuf,
    format: Format,
    schema: SchemaRef,
    files: Vec<DataFile>,
    partition_fields: Vec<FieldRef>,
    notes: Vec<SourceNote>,
}

/// A boxed stream of record batches.
pub type BatchIter = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

fn sniff(path: &Path) -> Result<Format> {
    let mut f = File::open(path).map_err(|e| TableError::io(path, e))?;
    let len = f.metadata().map_err(|e| TableError::io(path, e))?.len();
    let mut head = [0u8; 8];
    let n = read_up_to(&mut f, &mut head).map_err(|e| TableError::io(path, e))?;
    let head = &head[..n];
    if head.starts_with(b"PAR1") {
        if len < 12 {
            return Err(TableError::format(
                path,
                "truncated Parquet file (no footer)",
            ));
        }
        let mut tail = [0u8; 4];
        f.seek(SeekFrom::End(-4))
            .and_then(|_| f.read_exact(&mut tail))
            .map_err(|e| TableError::io(path, e))?;
        if &tail != b"PAR1" {
            return Err(TableError::format(
                path,
                "truncated or corrupt Parquet file: the trailing PAR1 magic is missing",
            ));
        }
        return Ok(Format::Parquet);
    }
    if head.starts_with(b"ARROW1") {
        return Ok(Format::ArrowIpc);
    }
    if head.len() >= 4 && head[..4] == [0xff, 0xff, 0xff, 0xff] {
        return Ok(Format::ArrowStream);
    }
    if len == 0 {
        return Err(TableError::format(
            path,
            "empty file: not an Arrow IPC or Parquet file",
        ));
    }
    Err(TableError::format(
        path,
        "not an Arrow IPC or Parquet file (no ARROW1 or PAR1 magic)",
    ))
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Reads the schema (and, for Parquet, the row count and footer notes) of one file.
fn open_file(path: &Path, notes: &mut Vec<SourceNote>) -> Result<DataFile> {
    let format = sniff(path)?;
    let file = File::open(path).map_err(|e| TableError::io(path, e))?;
    let (schema, rows) = match format {
        Format::Parquet => {
            let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                .map_err(|e| TableError::format(path, format!("cannot read Parquet: {e}")))?;
            let md = builder.metadata().file_metadata();
            let rows = u64::try_from(md.num_rows()).ok();
            parquet_footer_notes(path, md.key_value_metadata(), builder.schema(), notes);
            (builder.schema().clone(), rows)
        }
        Format::ArrowIpc => {
            let reader = FileReader::try_new_buffered(file, None).map_err(|e| {
                TableError::format(path, format!("cannot read Arrow IPC file: {e}"))
            })?;
            (reader.schema(), None)
        }
        Format::ArrowStream => {
            let reader = StreamReader::try_new_buffered(file, None).map_err(|e| {
                TableError::format(path, format!("cannot read Arrow IPC stream: {e}"))
            })?;
            (reader.schema(), None)
        }
        Format::Hive => unreachable!("sniff never returns Hive"),
    };
    Ok(DataFile {
        path: path.to_path_buf(),
        format,
        partition: vec![],
        schema,
        rows,
    })
}

/// Checks that the neurarrow metadata is present as plain footer key/values.
fn parquet_footer_notes(
    path: &Path,
    kv: Option<&Vec<KeyValue>>,
    schema: &SchemaRef,
    notes: &mut Vec<SourceNote>,
) {
    let kv: &[KeyValue] = kv.map(|v| v.as_slice()).unwrap_or(&[]);
    for e in kv {
        if e.value.is_none() {
            notes.push(SourceNote {
                rule: RuleId::MetadataEncoding,
                location: format!("{} metadata {:?}", path.display(), e.key),
                message: "Parquet key/value entry has no value (metadata values MUST be strings)"
                    .into(),
            });
        }
    }
    let missing: Vec<&String> = schema
        .metadata()
        .keys()
        .filter(|k| !is_technical_key(k))
        .filter(|k| !kv.iter().any(|e| &e.key == *k))
        .collect();
    if !missing.is_empty() {
        let mut m: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        m.sort_unstable();
        notes.push(SourceNote {
            rule: RuleId::ParquetFooterMetadata,
            location: path.display().to_string(),
            message: format!(
                "metadata {} only inside the embedded ARROW:schema, not as Parquet footer key/values (invisible to pq.read_metadata and navis)",
                m.join(", ")
            ),
        });
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn is_data_file_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".parquet", ".parq", ".pq", ".arrow", ".feather", ".ipc"]
        .iter()
        .any(|e| lower.ends_with(e))
}

fn walk(
    dir: &Path,
    segs: &mut Vec<(String, String)>,
    out: &mut Vec<(PathBuf, Vec<(String, String)>)>,
) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| TableError::io(dir, e))?
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| TableError::io(dir, e))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let p = e.path();
        let ft = e.file_type().map_err(|err| TableError::io(&p, err))?;
        if ft.is_dir() {
            let Some((k, v)) = name.split_once('=') else {
                return Err(TableError::format(
                    &p,
                    format!("directory {name:?} in a Hive-partitioned table is not of the form column=value"),
                ));
            };
            segs.push((percent_decode(k), percent_decode(v)));
            walk(&p, segs, out)?;
            segs.pop();
        } else if is_data_file_name(&name) {
            out.push((p, segs.clone()));
        }
    }
    Ok(())
}

/// Restores the type of a partition column from the directory values.
fn partition_field(name: &str, values: &[Option<String>], common: Option<&Schema>) -> Field {
    if let Some(f) = common.and_then(|s| s.field_with_name(name).ok()) {
        return f.clone();
    }
    let has_null = values.iter().any(Option::is_none);
    let registry = Registry::standard();
    let spec = registry
        .schemas()
        .iter()
        .flat_map(|s| s.fields.iter())
        .find(|f| f.name == name);
    if let Some(spec) = spec {
        if values.iter().flatten().all(|v| v.parse::<u64>().is_ok()) && spec.ty == TypeSpec::UInt64
        {
            return Field::new(name, DataType::UInt64, spec.nullable || has_null);
        }
    }
    if values.iter().flatten().all(|v| v.parse::<i64>().is_ok()) {
        Field::new(name, DataType::Int64, true)
    } else {
        Field::new(name, DataType::Utf8, true)
    }
}

/// A constant column of `len` rows holding the partition `value`.
fn partition_array(
    path: &Path,
    field: &Field,
    value: Option<&str>,
    len: usize,
) -> Result<ArrayRef> {
    match value {
        None => {
            if !field.is_nullable() {
                return Err(TableError::data(
                    path,
                    format!(
                        "null Hive partition for non-nullable column {:?}",
                        field.name()
                    ),
                ));
            }
            Ok(new_null_array(field.data_type(), len))
        }
        Some(v) => {
            let s: ArrayRef = Arc::new(StringArray::from(vec![v; len]));
            let out = arrow::compute::kernels::cast::cast_with_options(
                &s,
                field.data_type(),
                &arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                },
            )
            .map_err(|e| {
                TableError::data(
                    path,
                    format!(
                        "Hive partition value {v:?} of column {:?} is not a {}: {e}",
                        field.name(),
                        field.data_type()
                    ),
                )
            })?;
            Ok(out)
        }
    }
}

impl TableSource {
    /// Opens a file (format sniffed from its magic bytes) or a Hive directory.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(|e| TableError::io(path, e))?;
        let mut notes = Vec::new();
        if meta.is_dir() {
            return Self::open_hive(path, notes);
        }
        let file = open_file(path, &mut notes)?;
        Ok(TableSource {
            path: path.to_path_buf(),
            format: file.format,
            schema: file.schema.clone(),
            files: vec![file],
            partition_fields: vec![],
            notes,
        })
    }

    fn open_hive(root: &Path, mut notes: Vec<SourceNote>) -> Result<Self> {
        let mut found = Vec::new();
        walk(root, &mut Vec::new(), &mut found)?;
        let common_path = root.join("_common_metadata");
        if found.is_empty() && common_path.is_file() {
            // A zero-row table written by us: only the common metadata exists.
            let f = open_file(&common_path, &mut notes)?;
            return Ok(TableSource {
                path: root.to_path_buf(),
                format: Format::Hive,
                schema: f.schema.clone(),
                files: vec![],
                partition_fields: vec![],
                notes,
            });
        }
        if found.is_empty() {
            return Err(TableError::format(
                root,
                "directory holds no .parquet/.arrow files (not a Hive-partitioned table)",
            ));
        }
        let keys: Vec<String> = found[0].1.iter().map(|(k, _)| k.clone()).collect();
        for (p, segs) in &found {
            let k: Vec<&String> = segs.iter().map(|(k, _)| k).collect();
            if k.len() != keys.len() || k.iter().zip(&keys).any(|(a, b)| *a != b) {
                return Err(TableError::format(
                    p,
                    format!(
                        "partition directories {:?} differ from the first file's {:?}",
                        k, keys
                    ),
                ));
            }
        }
        let common: Option<Schema> = if common_path.is_file() {
            let mut ignore = Vec::new();
            match open_file(&common_path, &mut ignore) {
                Ok(f) => Some(f.schema.as_ref().clone()),
                Err(e) => {
                    notes.push(SourceNote {
                        rule: RuleId::HiveMetadata,
                        location: common_path.display().to_string(),
                        message: format!("unreadable _common_metadata ignored: {e}"),
                    });
                    None
                }
            }
        } else {
            None
        };
        let mut files = Vec::with_capacity(found.len());
        for (p, segs) in &found {
            let mut f = open_file(p, &mut notes)?;
            f.partition = segs
                .iter()
                .map(|(_, v)| {
                    if v == HIVE_NULL {
                        None
                    } else {
                        Some(v.clone())
                    }
                })
                .collect();
            files.push(f);
        }
        // Every file must carry the same neurarrow metadata (check 41).
        let neuro_meta = |s: &Schema| -> BTreeMap<String, String> {
            s.metadata()
                .iter()
                .filter(|(k, _)| !is_technical_key(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let reference = common
            .as_ref()
            .map(|c| (common_path.clone(), neuro_meta(c)))
            .unwrap_or_else(|| (files[0].path.clone(), neuro_meta(&files[0].schema)));
        for f in &files {
            let m = neuro_meta(&f.schema);
            if m != reference.1 {
                let mut diff: Vec<String> = Vec::new();
                for (k, v) in &reference.1 {
                    match m.get(k) {
                        None => diff.push(format!("{k:?} missing")),
                        Some(v2) if v2 != v => diff.push(format!("{k:?} = {v2:?} (not {v:?})")),
                        _ => {}
                    }
                }
                for k in m.keys().filter(|k| !reference.1.contains_key(*k)) {
                    diff.push(format!("extra {k:?}"));
                }
                notes.push(SourceNote {
                    rule: RuleId::HiveMetadata,
                    location: f.path.display().to_string(),
                    message: format!(
                        "schema metadata differs from {}: {}",
                        reference.0.display(),
                        diff.join("; ")
                    ),
                });
            }
        }
        // Logical schema: the common metadata's when present, else the first file's
        // plus the partition columns.
        let partition_fields: Vec<FieldRef> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let vals: Vec<Option<String>> =
                    files.iter().map(|f| f.partition[i].clone()).collect();
                Arc::new(partition_field(k, &vals, common.as_ref()))
            })
            .collect();
        let schema = match &common {
            Some(c) => {
                let mut fields: Vec<FieldRef> = c.fields().iter().cloned().collect();
                for pf in &partition_fields {
                    if !fields.iter().any(|f| f.name() == pf.name()) {
                        fields.push(pf.clone());
                    }
                }
                Schema::new_with_metadata(fields, c.metadata().clone())
            }
            None => {
                let first = &files[0].schema;
                let mut fields: Vec<FieldRef> = first
                    .fields()
                    .iter()
                    .filter(|f| !keys.contains(f.name()))
                    .cloned()
                    .collect();
                fields.extend(partition_fields.iter().cloned());
                Schema::new_with_metadata(fields, first.metadata().clone())
            }
        };
        for f in &files {
            for field in schema.fields() {
                if keys.contains(field.name()) {
                    continue;
                }
                if f.schema.field_with_name(field.name()).is_err() {
                    return Err(TableError::format(
                        &f.path,
                        format!("Hive partition file lacks column {:?}", field.name()),
                    ));
                }
            }
        }
        Ok(TableSource {
            path: root.to_path_buf(),
            format: Format::Hive,
            schema: Arc::new(schema),
            files,
            partition_fields,
            notes,
        })
    }

    /// Path given to [`TableSource::open`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Storage format.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Logical schema, metadata included.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The data files (one, or the files of a Hive directory).
    pub fn files(&self) -> &[DataFile] {
        &self.files
    }

    /// Partition columns (Hive only).
    pub fn partition_fields(&self) -> &[FieldRef] {
        &self.partition_fields
    }

    /// Things noticed while opening (for the validator).
    pub fn notes(&self) -> &[SourceNote] {
        &self.notes
    }

    /// Row count when every file's footer states it (Parquet), without reading data.
    pub fn known_rows(&self) -> Option<u64> {
        self.files.iter().map(|f| f.rows).sum()
    }

    /// Row count, read from Parquet footers when possible, else by scanning.
    pub fn num_rows(&self) -> Result<u64> {
        let mut total = 0u64;
        for f in &self.files {
            match f.rows {
                Some(r) => total += r,
                None => {
                    for b in self.file_batches(f, &[], DEFAULT_BATCH_SIZE)? {
                        total += b?.num_rows() as u64;
                    }
                }
            }
        }
        Ok(total)
    }

    /// Streams all columns.
    pub fn batches(&self, batch_size: usize) -> Result<BatchIter> {
        let names: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        self.batches_projected(&names, batch_size)
    }

    /// Streams the named columns (in the order given; unknown names are an error).
    pub fn batches_projected(&self, columns: &[String], batch_size: usize) -> Result<BatchIter> {
        let mut fields = Vec::with_capacity(columns.len());
        for c in columns {
            let f = self.schema.field_with_name(c).map_err(|_| {
                TableError::data(&self.path, format!("no column {c:?} in the table"))
            })?;
            fields.push(Arc::new(f.clone()));
        }
        let out_schema = Arc::new(Schema::new_with_metadata(
            fields,
            self.schema.metadata().clone(),
        ));
        let files = self.files.clone();
        let this = self.clone();
        let columns = columns.to_vec();
        let iter = files.into_iter().flat_map(move |f| {
            let file_cols: Vec<String> = columns
                .iter()
                .filter(|c| f.schema.field_with_name(c).is_ok() && !this.is_partition_col(c))
                .cloned()
                .collect();
            let inner = match this.file_batches(&f, &file_cols, batch_size) {
                Ok(it) => it,
                Err(e) => return Box::new(std::iter::once(Err(e))) as BatchIter,
            };
            let this2 = this.clone();
            let columns = columns.clone();
            let out_schema = out_schema.clone();
            Box::new(inner.map(move |b| {
                let b = b?;
                this2.assemble(&f, &b, &columns, &out_schema)
            })) as BatchIter
        });
        Ok(Box::new(iter))
    }

    fn is_partition_col(&self, name: &str) -> bool {
        self.partition_fields.iter().any(|f| f.name() == name)
    }

    /// Builds an output batch from a file batch plus partition constants.
    fn assemble(
        &self,
        file: &DataFile,
        batch: &RecordBatch,
        columns: &[String],
        out_schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let n = batch.num_rows();
        let mut arrays = Vec::with_capacity(columns.len());
        for (c, field) in columns.iter().zip(out_schema.fields()) {
            if let Some(i) = self.partition_fields.iter().position(|f| f.name() == c) {
                arrays.push(partition_array(
                    &file.path,
                    field,
                    file.partition.get(i).and_then(|v| v.as_deref()),
                    n,
                )?);
                continue;
            }
            let col = batch.column_by_name(c).ok_or_else(|| {
                TableError::data(&file.path, format!("column {c:?} missing from batch"))
            })?;
            if col.data_type() != field.data_type() {
                let cast_col = cast(col, field.data_type()).map_err(|e| {
                    TableError::data(
                        &file.path,
                        format!(
                            "column {c:?} is {} here but {} in the table schema: {e}",
                            col.data_type(),
                            field.data_type()
                        ),
                    )
                })?;
                arrays.push(cast_col);
            } else {
                arrays.push(col.clone());
            }
        }
        // Nullability of the logical schema may be stricter than a file's declaration;
        // build with a schema whose flags accept the data and let the validator judge.
        let relaxed: Vec<FieldRef> = out_schema
            .fields()
            .iter()
            .zip(&arrays)
            .map(|(f, a)| {
                if !f.is_nullable() && a.null_count() > 0 {
                    Arc::new(f.as_ref().clone().with_nullable(true))
                } else {
                    f.clone()
                }
            })
            .collect();
        let schema = if relaxed.iter().zip(out_schema.fields()).all(|(a, b)| a == b) {
            out_schema.clone()
        } else {
            Arc::new(Schema::new_with_metadata(
                relaxed,
                out_schema.metadata().clone(),
            ))
        };
        RecordBatch::try_new_with_options(
            schema,
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| TableError::arrow(&file.path, e))
    }

    /// Streams `columns` of one data file.
    fn file_batches(
        &self,
        f: &DataFile,
        columns: &[String],
        batch_size: usize,
    ) -> Result<BatchIter> {
        let path = f.path.clone();
        let indices: Vec<usize> = columns
            .iter()
            .filter_map(|c| f.schema.index_of(c).ok())
            .collect();
        let file = File::open(&path).map_err(|e| TableError::io(&path, e))?;
        match f.format {
            Format::Parquet => {
                let builder = ParquetRecordBatchReaderBuilder::try_new(file)
                    .map_err(|e| TableError::format(&path, format!("cannot read Parquet: {e}")))?;
                let mask = ProjectionMask::roots(builder.parquet_schema(), indices);
                let reader = builder
                    .with_batch_size(batch_size.max(1))
                    .with_projection(mask)
                    .build()
                    .map_err(|e| TableError::arrow(&path, e))?;
                Ok(Box::new(reader.map(move |r| {
                    r.map_err(|e| {
                        TableError::format(&path, format!("cannot decode Parquet data: {e}"))
                    })
                })))
            }
            Format::ArrowIpc => {
                let reader =
                    FileReader::try_new(BufReader::new(file), Some(indices)).map_err(|e| {
                        TableError::format(&path, format!("cannot read Arrow IPC file: {e}"))
                    })?;
                Ok(Box::new(reader.map(move |r| {
                    r.map_err(|e| {
                        TableError::format(&path, format!("cannot decode Arrow IPC data: {e}"))
                    })
                })))
            }
            Format::ArrowStream => {
                let reader =
                    StreamReader::try_new(BufReader::new(file), Some(indices)).map_err(|e| {
                        TableError::format(&path, format!("cannot read Arrow IPC stream: {e}"))
                    })?;
                Ok(Box::new(reader.map(move |r| {
                    r.map_err(|e| {
                        TableError::format(&path, format!("cannot decode Arrow IPC data: {e}"))
                    })
                })))
            }
            Format::Hive => Err(TableError::Usage(
                "nested Hive tables are not supported".into(),
            )),
        }
    }
}

/// Output options for [`TableWriter`].
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Output format; inferred from the path when `None`.
    pub format: Option<Format>,
    /// Hive partition column (implies [`Format::Hive`]).
    pub partition_by: Option<String>,
    /// Parquet compression.
    pub compression: Compression,
    /// Parquet row-group size (rows).
    pub row_group_rows: usize,
    /// Schema infix of Hive part files (`part-0.{infix}.parquet`).
    pub file_infix: Option<String>,
    /// At most this many Hive partition files open at once.
    pub max_open_partitions: usize,
    /// Replace an existing output.
    pub overwrite: bool,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            format: None,
            partition_by: None,
            compression: Compression::SNAPPY,
            row_group_rows: 512 * 1024,
            file_infix: None,
            max_open_partitions: 32,
            overwrite: true,
        }
    }
}

/// Chooses the output format from the options and the path's extension.
pub fn output_format(path: &Path, opts: &WriteOptions) -> Result<Format> {
    if let Some(f) = opts.format {
        return Ok(f);
    }
    if opts.partition_by.is_some() {
        return Ok(Format::Hive);
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if name.ends_with(".arrow") || name.ends_with(".feather") || name.ends_with(".ipc") {
        Ok(Format::ArrowIpc)
    } else if name.ends_with(".parquet") || name.ends_with(".parq") || name.ends_with(".pq") {
        Ok(Format::Parquet)
    } else {
        Err(TableError::Usage(format!(
            "{}: cannot tell the output format: use a .arrow, .feather or .parquet extension, or --partition-by for a Hive directory",
            path.display()
        )))
    }
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

fn temp_sibling(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "table".into());
    let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

/// Footer key/values for Parquet: every schema metadata pair, so pyarrow's
/// `read_metadata().metadata` and navis see them (not only `ARROW:schema`).
fn footer_kv(schema: &Schema) -> Vec<KeyValue> {
    let mut kv: Vec<KeyValue> = schema
        .metadata()
        .iter()
        .filter(|(k, _)| !k.starts_with("ARROW:"))
        .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
        .collect();
    kv.sort_by(|a, b| a.key.cmp(&b.key));
    kv
}

fn parquet_props(schema: &Schema, opts: &WriteOptions) -> WriterProperties {
    WriterProperties::builder()
        .set_compression(opts.compression)
        .set_max_row_group_row_count(Some(opts.row_group_rows.max(1)))
        .set_key_value_metadata(Some(footer_kv(schema)))
        .set_created_by(format!("neurochunk-table {}", env!("CARGO_PKG_VERSION")))
        .build()
}

enum Sink {
    Ipc(FileWriter<BufWriter<File>>),
    Parquet(ArrowWriter<File>),
    Hive(Box<HiveWriter>),
}

/// Writes a table atomically: data goes to a temporary sibling that is renamed
/// into place by [`TableWriter::finish`]; dropping an unfinished writer removes it.
pub struct TableWriter {
    target: PathBuf,
    schema: SchemaRef,
    tmp: PathBuf,
    sink: Option<Sink>,
    rows: u64,
    overwrite: bool,
}

impl TableWriter {
    /// Creates a writer for `schema` (its metadata is written as table metadata).
    pub fn create(path: impl AsRef<Path>, schema: SchemaRef, opts: &WriteOptions) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        let format = output_format(&target, opts)?;
        if !opts.overwrite && target.exists() {
            return Err(TableError::Usage(format!(
                "{}: output exists",
                target.display()
            )));
        }
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            if !parent.is_dir() {
                return Err(TableError::io(
                    parent,
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "output directory does not exist",
                    ),
                ));
            }
        }
        let tmp = temp_sibling(&target);
        let sink = match format {
            Format::ArrowIpc => {
                let f = File::create(&tmp).map_err(|e| TableError::io(&tmp, e))?;
                Sink::Ipc(
                    FileWriter::try_new(BufWriter::with_capacity(1 << 20, f), &schema)
                        .map_err(|e| TableError::arrow(&target, e))?,
                )
            }
            Format::Parquet => {
                let f = File::create(&tmp).map_err(|e| TableError::io(&tmp, e))?;
                Sink::Parquet(
                    ArrowWriter::try_new(f, schema.clone(), Some(parquet_props(&schema, opts)))
                        .map_err(|e| TableError::arrow(&target, e))?,
                )
            }
            Format::Hive => {
                let col = opts.partition_by.clone().ok_or_else(|| {
                    TableError::Usage(format!(
                        "{}: a Hive directory needs a partition column (--partition-by)",
                        target.display()
                    ))
                })?;
                std::fs::create_dir(&tmp).map_err(|e| TableError::io(&tmp, e))?;
                match HiveWriter::new(&tmp, &target, schema.clone(), &col, opts) {
                    Ok(h) => Sink::Hive(Box::new(h)),
                    Err(e) => {
                        let _ = std::fs::remove_dir_all(&tmp);
                        return Err(e);
                    }
                }
            }
            Format::ArrowStream => {
                return Err(TableError::Usage(
                    "writing the Arrow IPC stream format is not supported; use .arrow".into(),
                ))
            }
        };
        Ok(TableWriter {
            target,
            schema,
            tmp,
            sink: Some(sink),
            rows: 0,
            overwrite: opts.overwrite,
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows += batch.num_rows() as u64;
        let conformed;
        let batch = if batch.schema() == self.schema {
            batch
        } else {
            // Same columns, possibly different metadata or nullability flags:
            // re-check against the writer's schema (nulls in a non-nullable field fail).
            conformed = RecordBatch::try_new_with_options(
                self.schema.clone(),
                batch.columns().to_vec(),
                &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
            )
            .map_err(|e| {
                TableError::data(
                    &self.target,
                    format!("batch does not fit the table schema: {e}"),
                )
            })?;
            &conformed
        };
        match self.sink.as_mut() {
            Some(Sink::Ipc(w)) => w
                .write(batch)
                .map_err(|e| TableError::arrow(&self.target, e)),
            Some(Sink::Parquet(w)) => w
                .write(batch)
                .map_err(|e| TableError::arrow(&self.target, e)),
            Some(Sink::Hive(h)) => h.write(batch),
            None => Err(TableError::Usage("writer already finished".into())),
        }
    }

    /// Finishes the file(s) and moves them into place; returns the rows written.
    pub fn finish(mut self) -> Result<u64> {
        match self.sink.take() {
            Some(Sink::Ipc(mut w)) => {
                w.finish().map_err(|e| TableError::arrow(&self.target, e))?;
                let mut inner = w
                    .into_inner()
                    .map_err(|e| TableError::arrow(&self.target, e))?;
                std::io::Write::flush(&mut inner).map_err(|e| TableError::io(&self.tmp, e))?;
            }
            Some(Sink::Parquet(w)) => {
                w.close().map_err(|e| TableError::arrow(&self.target, e))?;
            }
            Some(Sink::Hive(h)) => h.finish()?,
            None => {}
        }
        if self.target.exists() {
            if !self.overwrite {
                return Err(TableError::Usage(format!(
                    "{}: output exists",
                    self.target.display()
                )));
            }
            let r = if self.target.is_dir() {
                std::fs::remove_dir_all(&self.target)
            } else {
                std::fs::remove_file(&self.target)
            };
            r.map_err(|e| TableError::io(&self.target, e))?;
        }
        std::fs::rename(&self.tmp, &self.target).map_err(|e| TableError::io(&self.target, e))?;
        Ok(self.rows)
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        if self.sink.is_some() {
            // Unfinished: discard the partial output.
            self.sink = None;
            let _ = if self.tmp.is_dir() {
                std::fs::remove_dir_all(&self.tmp)
            } else {
                std::fs::remove_file(&self.tmp)
            };
        }
    }
}

struct OpenPart {
    writer: ArrowWriter<File>,
    last_use: u64,
}

/// Writes a Hive directory: one subdirectory per partition value, the partition
/// column left out of the files (as pyarrow does), plus a `_common_metadata`
/// file holding the full schema.
struct HiveWriter {
    dir: PathBuf,
    target: PathBuf,
    schema: SchemaRef,
    file_schema: SchemaRef,
    col_index: usize,
    col_name: String,
    opts: WriteOptions,
    open: HashMap<Option<String>, OpenPart>,
    part_counter: HashMap<Option<String>, usize>,
    tick: u64,
}

impl HiveWriter {
    fn new(
        dir: &Path,
        target: &Path,
        schema: SchemaRef,
        col: &str,
        opts: &WriteOptions,
    ) -> Result<Self> {
        let col_index = schema.index_of(col).map_err(|_| {
            TableError::Usage(format!("partition column {col:?} is not in the table"))
        })?;
        let dt = schema.field(col_index).data_type();
        let ok = dt.is_integer()
            || matches!(
                dt,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
            )
            || matches!(dt, DataType::Dictionary(_, v) if matches!(**v, DataType::Utf8 | DataType::LargeUtf8));
        if !ok {
            return Err(TableError::Usage(format!(
                "cannot partition by {col:?} of type {dt}: integer or string columns only"
            )));
        }
        let fields: Vec<FieldRef> = schema
            .fields()
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != col_index)
            .map(|(_, f)| f.clone())
            .collect();
        let file_schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        Ok(HiveWriter {
            dir: dir.to_path_buf(),
            target: target.to_path_buf(),
            schema,
            file_schema,
            col_index,
            col_name: col.to_string(),
            opts: opts.clone(),
            open: HashMap::new(),
            part_counter: HashMap::new(),
            tick: 0,
        })
    }

    fn key_strings(&self, col: &ArrayRef) -> Result<Vec<Option<String>>> {
        let as_str = cast(col, &DataType::Utf8).map_err(|e| TableError::arrow(&self.target, e))?;
        let s = as_str
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| TableError::data(&self.target, "partition column cast failed"))?;
        Ok((0..s.len())
            .map(|i| s.is_valid(i).then(|| s.value(i).to_string()))
            .collect())
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let col = batch.column(self.col_index).clone();
        let keys = self.key_strings(&col)?;
        let rest: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.col_index)
            .map(|(_, c)| c.clone())
            .collect();
        let rest = RecordBatch::try_new_with_options(
            self.file_schema.clone(),
            rest,
            &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
        )
        .map_err(|e| TableError::arrow(&self.target, e))?;
        if keys.iter().all(|k| k == &keys[0]) {
            let k = keys[0].clone();
            return self.write_part(k, &rest);
        }
        let mut groups: Vec<(Option<String>, Vec<u32>)> = Vec::new();
        let mut index: HashMap<&Option<String>, usize> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            let g = *index.entry(k).or_insert_with(|| {
                groups.push((k.clone(), Vec::new()));
                groups.len() - 1
            });
            groups[g].1.push(i as u32);
        }
        for (k, rows) in groups {
            let idx = arrow::array::UInt32Array::from(rows);
            let cols: Vec<ArrayRef> = rest
                .columns()
                .iter()
                .map(|c| take(c.as_ref(), &idx, None))
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| TableError::arrow(&self.target, e))?;
            let part = RecordBatch::try_new_with_options(
                self.file_schema.clone(),
                cols,
                &RecordBatchOptions::new().with_row_count(Some(idx.len())),
            )
            .map_err(|e| TableError::arrow(&self.target, e))?;
            self.write_part(k, &part)?;
        }
        Ok(())
    }

    fn write_part(&mut self, key: Option<String>, batch: &RecordBatch) -> Result<()> {
        self.tick += 1;
        if !self.open.contains_key(&key) {
            if self.open.len() >= self.opts.max_open_partitions.max(1) {
                let oldest = self
                    .open
                    .iter()
                    .min_by_key(|(_, p)| p.last_use)
                    .map(|(k, _)| k.clone());
                if let Some(old) = oldest.and_then(|k| self.open.remove_entry(&k)) {
                    old.1
                        .writer
                        .close()
                        .map_err(|e| TableError::arrow(&self.target, e))?;
                }
            }
            let seg = match &key {
                Some(v) => percent_encode(v),
                None => HIVE_NULL.to_string(),
            };
            let sub = self
                .dir
                .join(format!("{}={}", percent_encode(&self.col_name), seg));
            std::fs::create_dir_all(&sub).map_err(|e| TableError::io(&sub, e))?;
            let n = self.part_counter.entry(key.clone()).or_insert(0);
            let name = match &self.opts.file_infix {
                Some(inf) => format!("part-{n}.{inf}.parquet"),
                None => format!("part-{n}.parquet"),
            };
            *n += 1;
            let p = sub.join(name);
            let f = File::create(&p).map_err(|e| TableError::io(&p, e))?;
            let writer = ArrowWriter::try_new(
                f,
                self.file_schema.clone(),
                Some(parquet_props(&self.file_schema, &self.opts)),
            )
            .map_err(|e| TableError::arrow(&p, e))?;
            self.open.insert(
                key.clone(),
                OpenPart {
                    writer,
                    last_use: self.tick,
                },
            );
        }
        let part = self
            .open
            .get_mut(&key)
            .ok_or_else(|| TableError::Usage("partition writer vanished".into()))?;
        part.last_use = self.tick;
        part.writer
            .write(batch)
            .map_err(|e| TableError::arrow(&self.target, e))
    }

    fn finish(mut self) -> Result<()> {
        for (_, p) in self.open.drain() {
            p.writer
                .close()
                .map_err(|e| TableError::arrow(&self.target, e))?;
        }
        // _common_metadata: the full logical schema, no rows.
        let p = self.dir.join("_common_metadata");
        let f = File::create(&p).map_err(|e| TableError::io(&p, e))?;
        let w = ArrowWriter::try_new(
            f,
            self.schema.clone(),
            Some(parquet_props(&self.schema, &self.opts)),
        )
        .map_err(|e| TableError::arrow(&p, e))?;
        w.close().map_err(|e| TableError::arrow(&p, e))?;
        Ok(())
    }
}

/// Reads a whole table into memory (small tables, tests).
pub fn read_all(path: impl AsRef<Path>) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let src = TableSource::open(path)?;
    let batches = src
        .batches(DEFAULT_BATCH_SIZE)?
        .collect::<Result<Vec<_>>>()?;
    Ok((src.schema(), batches))
}

/// Writes `batches` with `schema` to `path` (format from the extension / options).
pub fn write_all(
    path: impl AsRef<Path>,
    schema: SchemaRef,
    batches: &[RecordBatch],
    opts: &WriteOptions,
) -> Result<u64> {
    let mut w = TableWriter::create(path, schema, opts)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_roundtrip() {
        for s in ["a b/c", "x=y", "üñí", "plain-1.0_~"] {
            assert_eq!(percent_decode(&percent_encode(s)), s);
        }
        assert_eq!(percent_decode("a%2Fb"), "a/b");
        assert_eq!(percent_decode("bad%zz"), "bad%zz");
        assert_eq!(percent_decode("end%4"), "end%4");
    }
}
