//! neurarrow tables (`neurochunk.table`): reading as Arrow C streams, writing from them,
//! validation, derived fields and SWC.
//!
//! The bridge to Python's Arrow libraries is the Arrow PyCapsule interface, written on the
//! workspace's own arrow (`arrow::ffi`, `arrow::ffi_stream`): a read hands out a capsule named
//! `arrow_array_stream` holding an `FFI_ArrowArrayStream` over the table's batches (pyarrow,
//! Polars and DuckDB import it without copying), and a write takes such a capsule from any
//! producer. No second arrow and no second PyO3 is linked.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array as _, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchReader,
    Scalar, StringArray, UInt64Array,
};
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::compute::{cast, filter_record_batch, is_not_null, is_null};
use arrow::datatypes::{Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::ffi::FFI_ArrowSchema;
use arrow::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use neurochunk::store::replace::Overwrite;
use neurochunk::store::{RemoteOptions, StoreError, StoreLocation};
use neurochunk::table::derive::{derive, DeriveOptions};
use neurochunk::table::io::{BatchIter, Compression, WriteOptions, DEFAULT_BATCH_SIZE};
use neurochunk::table::swc::{export_swc, import_swc, SwcImportOptions};
use neurochunk::table::validate::{validate_results, ValidateOptions};
use neurochunk::table::{TableError, TableSource, TableTarget};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use serde_json::{json, Value};

use crate::errors::{invalid, panic_error, py_error};
use crate::store::remote_options;

/// The capsule names of the Arrow PyCapsule interface.
const STREAM: &std::ffi::CStr = c"arrow_array_stream";
const SCHEMA: &std::ffi::CStr = c"arrow_schema";

/// The exception class of a table error.
pub(crate) fn table_class(err: &TableError) -> &'static str {
    match err {
        TableError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            "NodeNotFoundError"
        }
        TableError::Io { .. } => "StoreError",
        TableError::Store { source, .. } => match source {
            StoreError::NotFound { .. } => "NodeNotFoundError",
            StoreError::ReadOnly { .. } => "ReadOnlyError",
            StoreError::InvalidKey { .. } | StoreError::InvalidUrl { .. } => "InvalidInputError",
            _ => "StoreError",
        },
        TableError::Format { .. } | TableError::Arrow { .. } => "CorruptDataError",
        TableError::Data { .. } | TableError::Usage(_) => "InvalidInputError",
        TableError::Refused(_) => "NodeExistsError",
    }
}

fn table_err(err: TableError) -> PyErr {
    py_error(table_class(&err), err.to_string())
}

/// Run `f` without the GIL, a panic becoming a `neurochunk.Error`.
fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, TableError> + Send,
) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(table_err(e)),
        Err(panic) => Err(panic_error(panic)),
    }
}

fn parse_json(text: &str, what: &str) -> PyResult<Value> {
    serde_json::from_str(text).map_err(|e| invalid(format!("{what} is not valid JSON: {e}")))
}

/// The table at a path (a file or a Hive directory) or a URL
/// ([`TableSource::open_location`], as the command line opens it).
fn open_table(location: &str, options: &Value) -> Result<TableSource, TableError> {
    let (parsed, remote) = parse_location(location, options)?;
    TableSource::open_location(&parsed, &remote)
}

/// A location and the remote options of its `storage_options`.
fn parse_location(
    location: &str,
    options: &Value,
) -> Result<(StoreLocation, RemoteOptions), TableError> {
    let remote = remote_options(options).map_err(|reason| {
        TableError::store(
            location,
            StoreError::InvalidUrl {
                url: location.to_string(),
                reason,
            },
        )
    })?;
    let parsed = StoreLocation::parse(location).map_err(|e| TableError::store(location, e))?;
    Ok((parsed, remote))
}

// --- filters ---------------------------------------------------------------------------------

/// One comparison of a filter: `column op value`.
struct Condition {
    column: String,
    op: String,
    value: Value,
}

/// A filter in disjunctive normal form: rows matching every condition of any conjunction.
struct Filter(Vec<Vec<Condition>>);

impl Filter {
    /// Parse `[[[column, op, value], ...], ...]` (the Python side normalises the other forms).
    fn parse(text: &str) -> PyResult<Filter> {
        let bad = || {
            invalid(
                "filter must be a list of (column, op, value) tuples, or a list of such lists \
                 (any of which may match)",
            )
        };
        let Value::Array(any) = parse_json(text, "the filter")? else {
            return Err(bad());
        };
        let mut out = Vec::new();
        for conj in any {
            let Value::Array(conds) = conj else {
                return Err(bad());
            };
            let mut all = Vec::new();
            for cond in conds {
                let Value::Array(parts) = cond else {
                    return Err(bad());
                };
                let [Value::String(column), Value::String(op), value] = parts.as_slice() else {
                    return Err(bad());
                };
                let op = match op.trim().to_ascii_lowercase().as_str() {
                    "=" | "==" => "==",
                    "!=" | "<>" => "!=",
                    "<" => "<",
                    "<=" => "<=",
                    ">" => ">",
                    ">=" => ">=",
                    "in" => "in",
                    "not in" => "not in",
                    other => {
                        return Err(invalid(format!(
                            "unknown filter operator {other:?} (use ==, !=, <, <=, >, >=, in, \
                             not in)"
                        )))
                    }
                };
                if matches!(op, "in" | "not in") != value.is_array() {
                    return Err(invalid(format!(
                        "filter on {column:?}: 'in' and 'not in' take a list, the other \
                         operators one value"
                    )));
                }
                all.push(Condition {
                    column: column.clone(),
                    op: op.into(),
                    value: value.clone(),
                });
            }
            out.push(all);
        }
        Ok(Filter(out))
    }

    fn columns(&self) -> impl Iterator<Item = &str> {
        self.0.iter().flatten().map(|c| c.column.as_str())
    }

    /// Whether rows of a file whose partition values are `parts` (a one-row batch of the
    /// partition columns) may pass: false when every alternative has a condition on a
    /// partition column that the values fail.
    fn may_match(&self, parts: &RecordBatch) -> Result<bool, ArrowError> {
        'alternatives: for conj in &self.0 {
            for cond in conj {
                if parts.column_by_name(&cond.column).is_none() {
                    continue;
                }
                let m = cond.mask(parts)?;
                if !(m.is_valid(0) && m.value(0)) {
                    continue 'alternatives;
                }
            }
            return Ok(true);
        }
        Ok(self.0.is_empty())
    }

    /// The rows of `batch` the filter keeps (null: not kept).
    fn mask(&self, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
        let mut any: Option<BooleanArray> = None;
        for conj in &self.0 {
            let mut all: Option<BooleanArray> = None;
            for cond in conj {
                let m = cond.mask(batch)?;
                all = Some(match all {
                    Some(a) => and_kleene(&a, &m)?,
                    None => m,
                });
            }
            let all = all.unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()]));
            any = Some(match any {
                Some(a) => or_kleene(&a, &all)?,
                None => all,
            });
        }
        Ok(any.unwrap_or_else(|| BooleanArray::from(vec![true; batch.num_rows()])))
    }
}

/// `value` as a one-element array of `column`'s type.
fn scalar_for(
    column: &str,
    value: &Value,
    target: &arrow::datatypes::DataType,
) -> Result<ArrayRef, ArrowError> {
    let one: ArrayRef = match value {
        Value::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Arc::new(Int64Array::from(vec![i]))
            } else if let Some(u) = n.as_u64() {
                Arc::new(UInt64Array::from(vec![u]))
            } else {
                Arc::new(Float64Array::from(vec![n.as_f64().unwrap_or(f64::NAN)]))
            }
        }
        Value::String(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "filter on {column:?}: {other} is not a number, string or bool"
            )))
        }
    };
    let cast_one = cast(&one, target).map_err(|e| {
        ArrowError::InvalidArgumentError(format!(
            "filter on {column:?}: {value} is not a {target}: {e}"
        ))
    })?;
    if cast_one.null_count() > 0 {
        return Err(ArrowError::InvalidArgumentError(format!(
            "filter on {column:?}: {value} is not a {target}"
        )));
    }
    Ok(cast_one)
}

impl Condition {
    fn mask(&self, batch: &RecordBatch) -> Result<BooleanArray, ArrowError> {
        let col = batch.column_by_name(&self.column).ok_or_else(|| {
            ArrowError::InvalidArgumentError(format!("filter: no column {:?}", self.column))
        })?;
        let col = col.as_ref();
        if self.value.is_null() {
            return match self.op.as_str() {
                "==" => is_null(col),
                "!=" => is_not_null(col),
                _ => Err(ArrowError::InvalidArgumentError(format!(
                    "filter on {:?}: None compares with == and != only",
                    self.column
                ))),
            };
        }
        if let Value::Array(values) = &self.value {
            let mut any: Option<BooleanArray> = None;
            for v in values {
                let s = scalar_for(&self.column, v, col.data_type())?;
                let m = cmp::eq(&col, &Scalar::new(s))?;
                any = Some(match any {
                    Some(a) => or_kleene(&a, &m)?,
                    None => m,
                });
            }
            let any = any.unwrap_or_else(|| BooleanArray::from(vec![false; col.len()]));
            return if self.op == "in" { Ok(any) } else { not(&any) };
        }
        let s = Scalar::new(scalar_for(&self.column, &self.value, col.data_type())?);
        match self.op.as_str() {
            "==" => cmp::eq(&col, &s),
            "!=" => cmp::neq(&col, &s),
            "<" => cmp::lt(&col, &s),
            "<=" => cmp::lt_eq(&col, &s),
            ">" => cmp::gt(&col, &s),
            _ => cmp::gt_eq(&col, &s),
        }
    }
}

// --- reading ---------------------------------------------------------------------------------

/// The batches of a table as a `RecordBatchReader`: read with the projection plus the filter's
/// columns, filtered, then cut to the projection. A panic (a bug) becomes an error of the
/// stream, never an unwind through the C interface.
struct Reader {
    schema: SchemaRef,
    batches: BatchIter,
    filter: Option<Filter>,
    /// The output columns' positions in the batches read (when the filter added columns).
    keep: Option<Vec<usize>>,
    done: bool,
}

impl Reader {
    fn next_batch(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        loop {
            let batch = match self.batches.next()? {
                Ok(b) => b,
                Err(e) => return Some(Err(ArrowError::ExternalError(Box::new(e)))),
            };
            let batch = match &self.filter {
                Some(f) => match f.mask(&batch).and_then(|m| filter_record_batch(&batch, &m)) {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e)),
                },
                None => batch,
            };
            if batch.num_rows() == 0 && self.filter.is_some() {
                continue;
            }
            let batch = match &self.keep {
                Some(keep) => match batch.project(keep) {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e)),
                },
                None => batch,
            };
            // The stream's schema, whose nullability the batch may have relaxed (the
            // validator, not the reader, judges a table's nulls).
            let out = RecordBatch::try_new(self.schema.clone(), batch.columns().to_vec())
                .unwrap_or(batch);
            return Some(Ok(out));
        }
    }
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match catch_unwind(AssertUnwindSafe(|| self.next_batch())) {
            Ok(item) => {
                if !matches!(item, Some(Ok(_))) {
                    self.done = true;
                }
                item
            }
            Err(_) => {
                self.done = true;
                Some(Err(ArrowError::ExternalError(
                    "internal error in neurochunk while reading the table (please report)".into(),
                )))
            }
        }
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// An opened table (the Python `neurochunk.table.Table` wraps it); every stream it hands out
/// reads the table anew.
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawTable {
    source: TableSource,
    display: String,
}

impl RawTable {
    /// The output schema of `columns` (all when `None`).
    fn projected(&self, columns: Option<&[String]>) -> PyResult<SchemaRef> {
        let schema = self.source.schema();
        let Some(columns) = columns else {
            return Ok(schema);
        };
        let mut fields = Vec::with_capacity(columns.len());
        for c in columns {
            let f = schema
                .field_with_name(c)
                .map_err(|_| invalid(format!("{}: no column {c:?} in the table", self.display)))?;
            fields.push(f.clone());
        }
        Ok(Arc::new(Schema::new_with_metadata(
            fields,
            schema.metadata().clone(),
        )))
    }
}

#[pymethods]
impl RawTable {
    /// The table's description as JSON: format, columns, partition columns, files, row
    /// count when known without reading the data, schema metadata.
    fn info(&self) -> String {
        let schema = self.source.schema();
        json!({
            "display": self.display,
            "format": self.source.format().as_str(),
            "columns": schema.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>(),
            "types": schema.fields().iter().map(|f| f.data_type().to_string()).collect::<Vec<_>>(),
            "partition_columns": self.source.partition_fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>(),
            "files": self.source.files().iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>(),
            "known_rows": self.source.known_rows(),
            "metadata": schema
                .metadata()
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect::<serde_json::Map<_, _>>(),
        })
        .to_string()
    }

    /// The number of rows (from Parquet footers when possible, else by reading).
    fn num_rows(&self, py: Python<'_>) -> PyResult<u64> {
        let source = &self.source;
        detached(py, || source.num_rows())
    }

    /// An `arrow_schema` capsule of the columns `columns` (all when None).
    #[pyo3(signature = (columns=None))]
    fn schema_capsule<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = self.projected(columns.as_deref())?;
        let ffi = FFI_ArrowSchema::try_from(schema.as_ref())
            .map_err(|e| invalid(format!("{}: {e}", self.display)))?;
        PyCapsule::new_with_value(py, ffi, SCHEMA)
    }

    /// An `arrow_array_stream` capsule of the rows matching `filter` (JSON, see
    /// [`Filter::parse`]), columns `columns` (all when None), in batches of `batch_size` rows
    /// at most (0: the default).
    #[pyo3(signature = (columns=None, filter=None, batch_size=0))]
    fn stream<'py>(
        &self,
        py: Python<'py>,
        columns: Option<Vec<String>>,
        filter: Option<&str>,
        batch_size: usize,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = self.projected(columns.as_deref())?;
        let out: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
        let filter = filter.map(Filter::parse).transpose()?;
        let mut read = out.clone();
        if let Some(f) = &filter {
            let all = self.source.schema();
            for c in f.columns() {
                if all.field_with_name(c).is_err() {
                    return Err(invalid(format!(
                        "{}: filter on {c:?}: no such column in the table",
                        self.display
                    )));
                }
                if !read.iter().any(|r| r == c) {
                    read.push(c.to_string());
                }
            }
        }
        let keep = (read.len() != out.len()).then(|| (0..out.len()).collect());
        let batch_size = if batch_size == 0 {
            DEFAULT_BATCH_SIZE
        } else {
            batch_size
        };
        let mut source = self.source.clone();
        if let Some(f) = filter
            .as_ref()
            .filter(|_| !source.partition_fields().is_empty())
        {
            // Hive partitions the filter rules out are not read at all.
            let mut keep = Vec::with_capacity(source.files().len());
            for file in source.files() {
                let parts = source.partition_values(file).map_err(table_err)?;
                keep.push(
                    f.may_match(&parts)
                        .map_err(|e| invalid(format!("{}: {e}", self.display)))?,
                );
            }
            let mut keep = keep.into_iter();
            source.retain_files(|_| keep.next().unwrap_or(true));
        }
        let batches = detached(py, || source.batches_projected(&read, batch_size))?;
        let reader = Reader {
            schema,
            batches,
            filter,
            keep,
            done: false,
        };
        export_stream(py, reader)
    }
}

/// The batches of `reader` as an `arrow_array_stream` capsule (the Arrow PyCapsule interface).
pub(crate) fn export_stream<'py>(
    py: Python<'py>,
    reader: impl RecordBatchReader + Send + 'static,
) -> PyResult<Bound<'py, PyCapsule>> {
    let stream = FFI_ArrowArrayStream::new(Box::new(reader));
    PyCapsule::new_with_value(py, stream, STREAM)
}

/// The reader of the `arrow_array_stream` capsule an object's `__arrow_c_stream__()` returned.
pub(crate) fn import_stream(capsule: &Bound<'_, PyAny>) -> PyResult<RecordBatchStreamReader> {
    let capsule = capsule
        .cast::<PyCapsule>()
        .map_err(|_| invalid("__arrow_c_stream__() did not return a PyCapsule"))?;
    let ptr = capsule.pointer_checked(Some(STREAM)).map_err(|_| {
        invalid("__arrow_c_stream__() did not return an 'arrow_array_stream' capsule")
    })?;
    // SAFETY: the capsule holds an `ArrowArrayStream` (checked by its name, the interface's
    // contract); `from_raw` moves it out and marks the capsule's copy released, so the
    // capsule's destructor does not release it again.
    unsafe { RecordBatchStreamReader::from_raw(ptr.as_ptr().cast::<FFI_ArrowArrayStream>()) }
        .map_err(|e| invalid(format!("cannot import the Arrow stream: {e}")))
}

/// Open the table at `location` (a path or URL; `options`: the remote options as JSON).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn table_open(py: Python<'_>, location: &str, options: &str) -> PyResult<RawTable> {
    let options = parse_json(options, "storage_options")?;
    let source = detached(py, || open_table(location, &options))?;
    Ok(RawTable {
        source,
        display: location.to_string(),
    })
}

// --- writing ---------------------------------------------------------------------------------

/// Write options from the Python side's JSON: partition_by, compression, row_group_rows,
/// overwrite.
fn write_options(spec: &Value) -> PyResult<WriteOptions> {
    let mut opts = WriteOptions::default();
    if let Some(p) = spec.get("partition_by").and_then(Value::as_str) {
        opts.partition_by = Some(p.to_string());
    }
    if let Some(c) = spec.get("compression").and_then(Value::as_str) {
        opts.compression = match c.to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Compression::UNCOMPRESSED,
            "snappy" => Compression::SNAPPY,
            "zstd" => Compression::ZSTD(Default::default()),
            "lz4" => Compression::LZ4_RAW,
            "gzip" => Compression::GZIP(Default::default()),
            other => {
                return Err(invalid(format!(
                    "unknown compression {other:?} (none, snappy, zstd, lz4, gzip)"
                )))
            }
        };
    }
    if let Some(n) = spec.get("row_group_rows").and_then(Value::as_u64) {
        if n == 0 {
            return Err(invalid("row_group_rows must be positive"));
        }
        opts.row_group_rows = n as usize;
    }
    if let Some(o) = spec.get("overwrite").and_then(Value::as_bool) {
        // A table replaces only a table, never a file of another kind or a directory
        // holding other files (see `neurochunk_store::replace`).
        opts.overwrite = if o { Overwrite::Own } else { Overwrite::Never };
    }
    if let Some(s) = spec.get("schema").and_then(Value::as_str) {
        opts.file_infix = Some(s.to_string());
    }
    Ok(opts)
}

/// Write the Arrow stream in `capsule` (an `arrow_array_stream` capsule, consumed) to
/// `location` (a path or URL); returns the number of rows written.
#[pyfunction]
#[pyo3(signature = (capsule, location, spec="{}"))]
pub(crate) fn table_write(
    py: Python<'_>,
    capsule: &Bound<'_, PyAny>,
    location: &str,
    spec: &str,
) -> PyResult<u64> {
    let spec = parse_json(spec, "the write options")?;
    let opts = write_options(&spec)?;
    let remote = spec.get("storage_options").cloned().unwrap_or(json!({}));
    let reader = import_stream(capsule)?;
    let location = location.to_string();
    detached(py, move || {
        let schema = reader.schema();
        let (parsed, remote) = parse_location(&location, &remote)?;
        let mut writer = TableTarget::at(&parsed, &remote)?.create(schema, &opts)?;
        for batch in reader {
            let batch = batch.map_err(|e| TableError::Arrow {
                path: location.clone(),
                message: format!("reading the input stream: {e}"),
            })?;
            writer.write(&batch)?;
        }
        writer.finish()
    })
}

// --- validation, derived fields, SWC ---------------------------------------------------------

/// Validate the tables at `locations` together; returns one JSON report per table.
#[pyfunction]
#[pyo3(signature = (locations, schema=None, strict=false, max_per_rule=20, options="{}"))]
pub(crate) fn table_validate(
    py: Python<'_>,
    locations: Vec<String>,
    schema: Option<String>,
    strict: bool,
    max_per_rule: usize,
    options: &str,
) -> PyResult<Vec<String>> {
    let remote = parse_json(options, "storage_options")?;
    let opts = ValidateOptions {
        strict,
        schema,
        max_per_rule,
        ..ValidateOptions::default()
    };
    let reports = detached(py, move || {
        let opened = locations
            .iter()
            .map(|l| (PathBuf::from(l), open_table(l, &remote)))
            .collect();
        validate_results(opened, &opts)
    })?;
    Ok(reports
        .iter()
        .map(|r| {
            let mut j = r.to_json();
            if let Value::Object(m) = &mut j {
                m.insert("unreadable".into(), json!(r.unreadable));
                m.insert("schema_source".into(), json!(r.schema_source));
            }
            j.to_string()
        })
        .collect())
}

/// Add or recompute the derived fields of the table at `input`, written to `output`;
/// returns the summary as JSON.
#[pyfunction]
#[pyo3(signature = (input, output, spec="{}", samples=Vec::new(), schema=None))]
pub(crate) fn table_derive(
    py: Python<'_>,
    input: PathBuf,
    output: PathBuf,
    spec: &str,
    samples: Vec<PathBuf>,
    schema: Option<String>,
) -> PyResult<String> {
    let write = write_options(&parse_json(spec, "the write options")?)?;
    let opts = DeriveOptions {
        schema,
        samples,
        write,
        batch_size: 0,
    };
    let s = detached(py, move || derive(&input, &output, &opts))?;
    Ok(json!({
        "schema": s.schema,
        "rows": s.rows,
        "columns": s.columns,
        "unresolved": s.unresolved,
    })
    .to_string())
}

/// Import SWC files (or directories of them) into the skeletons table `output`; returns the
/// summary as JSON.
#[pyfunction]
#[pyo3(signature = (inputs, output, context, unit, space=None, fragment_id=None, allow_invalid=false, spec="{}"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn table_from_swc(
    py: Python<'_>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    context: String,
    unit: String,
    space: Option<String>,
    fragment_id: Option<u64>,
    allow_invalid: bool,
    spec: &str,
) -> PyResult<String> {
    let write = write_options(&parse_json(spec, "the write options")?)?;
    let opts = SwcImportOptions {
        context,
        unit,
        space,
        fragment_id,
        allow_invalid,
    };
    let s = detached(py, move || import_swc(&inputs, &output, &opts, &write))?;
    Ok(json!({
        "rows": s.rows,
        "fragments": s.fragments.iter().map(|(p, f)| json!([p.display().to_string(), f])).collect::<Vec<_>>(),
        "notes": s.notes,
    })
    .to_string())
}

/// Export the skeletons table `input` to SWC (`output` a file for one fragment, else a
/// directory); returns the files written.
#[pyfunction]
#[pyo3(signature = (input, output, fragment=None))]
pub(crate) fn table_to_swc(
    py: Python<'_>,
    input: PathBuf,
    output: PathBuf,
    fragment: Option<u64>,
) -> PyResult<Vec<String>> {
    let files = detached(py, move || export_swc(&input, &output, fragment))?;
    Ok(files
        .iter()
        .map(|p: &PathBuf| Path::new(p).display().to_string())
        .collect())
}
