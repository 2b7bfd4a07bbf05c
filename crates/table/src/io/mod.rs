//! Reading and writing neurarrow tables: Arrow IPC (file and stream format),
//! Parquet, and Hive-partitioned Parquet directories, in any [`Store`].
//!
//! [`TableSource`] opens any of them, exposes the logical schema (with metadata)
//! and streams record batches with an optional column projection, so memory is
//! bounded by the batch (or Parquet row group), not the table. Every byte is read
//! through the store with ranged reads: the format is sniffed from a file's first
//! and last bytes, Parquet is read footer first and then only the column chunks of
//! the projected columns, Arrow IPC through a buffered `Read + Seek` adapter, and
//! Hive directories are listed with [`Store::list_dir`].
//!
//! [`TableWriter`] streams into [`Store::writer`] values, so nothing is visible
//! before [`TableWriter::finish`], and puts the neurarrow schema metadata both in
//! the embedded Arrow schema and in the Parquet footer key/value pairs, where
//! pyarrow and navis look for it.
//!
//! [`TableSource::open`] and [`TableWriter::create`] are the filesystem
//! conveniences: an [`FsStore`] rooted at the file's directory, paths in errors.

mod guard;
mod page_header;
mod parquet_parallel;
mod ranged;
mod write;

pub use guard::decoder_panic_is_caught;
pub use neurochunk_store::Durability;
pub use write::{
    is_table_file, output_format, HiveTable, TableTarget, TableWriter, WriteOptions, TABLE_FILE,
};

use crate::error::{Result, TableError};
use crate::rules::RuleId;
use crate::schema::{is_technical_key, Registry, TypeSpec};
use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Schema, SchemaRef};
use arrow::error::ArrowError;
use arrow::ipc::reader::{FileReader, StreamReader};
use neurochunk_store::{join_key, FsStore, Store, StoreError};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
pub use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use ranged::{ParquetChunks, RangeReader, StoreValue, READ_AHEAD};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
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
    /// Display name of the file: its path for a table opened with [`TableSource::open`],
    /// else the table's name joined with the file's key below the table.
    pub path: PathBuf,
    /// The file's key in the table's store ([`TableSource::store`]).
    pub key: String,
    /// Size of the file in bytes.
    pub size: u64,
    /// File format (`ArrowIpc`, `ArrowStream` or `Parquet`).
    pub format: Format,
    /// Partition values from the directory names, in partition-column order.
    pub partition: Vec<Option<String>>,
    /// The file's own Arrow schema (with metadata).
    pub schema: SchemaRef,
    /// Row count when known without reading the data.
    pub rows: Option<u64>,
    /// The opened value (size and last bytes).
    value: StoreValue,
    /// The Parquet footer, read once when the file is opened.
    parquet: Option<ArrowReaderMetadata>,
}

/// An opened table: its logical schema and how to stream its rows.
///
/// A table lives in a [`Store`]: one value (an Arrow IPC or Parquet file) or the values under
/// a prefix (a Hive-partitioned directory). [`TableSource::open`] opens a path on the local
/// filesystem; [`TableSource::open_store`] opens a key or prefix of any store.
#[derive(Debug, Clone)]
pub struct TableSource {
    store: Arc<dyn Store>,
    /// The file's key, or the Hive directory's prefix (without a trailing `/`, `""` for the
    /// store's root).
    key: String,
    /// Display name (the path given, or the key).
    name: String,
    format: Format,
    schema: SchemaRef,
    files: Vec<DataFile>,
    partition_fields: Vec<FieldRef>,
    notes: Vec<SourceNote>,
    /// Set by [`TableSource::batches_filtered`] on its copy: the row groups to read.
    row_filter: Option<Arc<RowFilter>>,
}

/// Which rows to read: those whose integer column `column` holds one of `values` (for
/// example the fragments to export).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowFilter {
    /// The column (a data column or a Hive partition column).
    pub column: String,
    /// The values kept.
    pub values: Vec<u64>,
}

/// The rows of `batch` whose filter column holds one of the filter's values.
fn filter_rows(batch: &RecordBatch, filter: &RowFilter, name: &str) -> Result<RecordBatch> {
    use arrow::array::{AsArray, BooleanArray};
    use arrow::datatypes::UInt64Type;
    let column = batch.column_by_name(&filter.column).ok_or_else(|| {
        TableError::data(
            name,
            format!("column {:?} missing from batch", filter.column),
        )
    })?;
    // Negative values never match (they are not u64); casting would fail on them.
    let as_u64 = arrow::compute::kernels::cast::cast_with_options(
        column,
        &DataType::UInt64,
        &arrow::compute::CastOptions {
            safe: true,
            ..Default::default()
        },
    )
    .map_err(|e| TableError::arrow(name, e))?;
    let values = as_u64.as_primitive::<UInt64Type>();
    let mask: BooleanArray = values
        .iter()
        .map(|v| Some(v.is_some_and(|v| filter.values.contains(&v))))
        .collect();
    arrow::compute::filter_record_batch(batch, &mask).map_err(|e| TableError::arrow(name, e))
}

/// The row groups of `metadata` whose statistics of the filter's column do not rule out
/// every value of the filter (all of them when the column or its statistics are missing).
fn row_groups_for(
    metadata: &parquet::file::metadata::ParquetMetaData,
    filter: &RowFilter,
) -> Vec<usize> {
    use parquet::file::statistics::Statistics;
    let schema = metadata.file_metadata().schema_descr();
    let leaf = (0..schema.num_columns()).find(|&i| {
        let c = schema.column(i);
        c.path().parts().len() == 1 && c.name() == filter.column
    });
    let unsigned = leaf.is_some_and(|i| {
        matches!(
            schema.column(i).logical_type_ref(),
            Some(parquet::basic::LogicalType::Integer(int)) if !int.is_signed
        )
    });
    (0..metadata.num_row_groups())
        .filter(|&g| {
            let Some(stats) = leaf.and_then(|i| metadata.row_group(g).column(i).statistics())
            else {
                return true;
            };
            // (min, max) as i128, so that signed and unsigned columns compare alike.
            let range: Option<(i128, i128)> = match stats {
                Statistics::Int32(s) => match (s.min_opt(), s.max_opt()) {
                    (Some(&lo), Some(&hi)) if unsigned => {
                        Some(((lo as u32).into(), (hi as u32).into()))
                    }
                    (Some(&lo), Some(&hi)) => Some((lo.into(), hi.into())),
                    _ => None,
                },
                Statistics::Int64(s) => match (s.min_opt(), s.max_opt()) {
                    (Some(&lo), Some(&hi)) if unsigned => {
                        Some(((lo as u64).into(), (hi as u64).into()))
                    }
                    (Some(&lo), Some(&hi)) => Some((lo.into(), hi.into())),
                    _ => None,
                },
                _ => None,
            };
            match range {
                Some((lo, hi)) => filter
                    .values
                    .iter()
                    .any(|&v| (lo..=hi).contains(&i128::from(v))),
                None => true,
            }
        })
        .collect()
}

/// A boxed stream of record batches.
pub type BatchIter = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// The format of a file from its first bytes (up to 8), its last 4 bytes and its size.
fn sniff(name: &str, head: &[u8], tail: &[u8], len: u64) -> Result<Format> {
    if head.starts_with(b"PAR1") {
        if len < 12 {
            return Err(TableError::format(
                name,
                "truncated Parquet file (no footer)",
            ));
        }
        if !tail.ends_with(b"PAR1") {
            return Err(TableError::format(
                name,
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
            name,
            "empty file: not an Arrow IPC or Parquet file",
        ));
    }
    Err(TableError::format(
        name,
        "not an Arrow IPC or Parquet file (no ARROW1 or PAR1 magic)",
    ))
}

/// `f` applied to every item on up to `workers` threads (at most [`MAX_OPEN_THREADS`]), with
/// the results in the items' order: [`neurochunk_store::map_concurrent`].
fn map_concurrent<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    neurochunk_store::map_concurrent(items, workers.min(MAX_OPEN_THREADS), f)
}

/// The most threads opening a table's part files at once.
const MAX_OPEN_THREADS: usize = 16;

/// Opens one data file of a store (format sniffed from its first and last bytes) and reads
/// its schema (and, for Parquet, the footer: row count and notes). `name` is its display name.
fn open_file(
    store: &Arc<dyn Store>,
    key: &str,
    name: &str,
    notes: &mut Vec<SourceNote>,
) -> Result<DataFile> {
    let (value, head) = StoreValue::open(store.clone(), key, name, 8)?;
    let format = sniff(name, &head, value.tail(), value.size())?;
    let mut parquet = None;
    let (schema, rows) = match format {
        Format::Parquet => {
            let meta = load_parquet_metadata(&value, Path::new(name))?;
            let md = meta.metadata().file_metadata();
            let rows = u64::try_from(md.num_rows()).ok();
            parquet_footer_notes(name, md.key_value_metadata(), meta.schema(), notes);
            let schema = meta.schema().clone();
            parquet = Some(meta);
            (schema, rows)
        }
        Format::ArrowIpc | Format::ArrowStream => {
            (ipc_batches(&value, format, None, Path::new(name))?.0, None)
        }
        Format::Hive => unreachable!("sniff never returns Hive"),
    };
    Ok(DataFile {
        path: PathBuf::from(name),
        key: key.to_string(),
        size: value.size(),
        format,
        partition: vec![],
        schema,
        rows,
        value,
        parquet,
    })
}

/// Checks that the neurarrow metadata is present as plain footer key/values.
fn parquet_footer_notes(
    name: &str,
    kv: Option<&Vec<KeyValue>>,
    schema: &SchemaRef,
    notes: &mut Vec<SourceNote>,
) {
    let kv: &[KeyValue] = kv.map(|v| v.as_slice()).unwrap_or(&[]);
    for e in kv {
        if e.value.is_none() {
            notes.push(SourceNote {
                rule: RuleId::MetadataEncoding,
                location: format!("{name} metadata {:?}", e.key),
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
            location: name.to_string(),
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

pub(crate) fn percent_encode(s: &str) -> String {
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

/// Joins a display name and a key below it with `/` (an empty side gives the other).
fn join_name(root: &str, rel: &str) -> String {
    if root.is_empty() || rel.is_empty() || root.ends_with('/') {
        format!("{root}{rel}")
    } else {
        format!("{root}/{rel}")
    }
}

/// Collects the data files below `rel` (a directory of the Hive table at `prefix`, named
/// `name`) with the partition segments of their directories, as keys relative to `prefix`.
/// Names starting with `.` or `_` are skipped.
fn walk(
    store: &dyn Store,
    prefix: &str,
    name: &str,
    rel: &str,
    segs: &mut Vec<(String, String)>,
    out: &mut Vec<(String, Vec<(String, String)>)>,
) -> Result<()> {
    let listing = store
        .list_dir(&join_key(prefix, rel))
        .map_err(|e| TableError::store(join_name(name, rel), e))?;
    let mut entries: Vec<(&str, bool)> = listing
        .keys
        .iter()
        .map(|k| (k.as_str(), false))
        .chain(listing.prefixes.iter().map(|p| (p.as_str(), true)))
        .collect();
    entries.sort_unstable();
    for (entry, is_dir) in entries {
        if entry.starts_with('.') || entry.starts_with('_') {
            continue;
        }
        let child = join_key(rel, entry);
        if is_dir {
            let Some((k, v)) = entry.split_once('=') else {
                return Err(TableError::format(
                    join_name(name, &child),
                    format!("directory {entry:?} in a Hive-partitioned table is not of the form column=value"),
                ));
            };
            segs.push((percent_decode(k), percent_decode(v)));
            walk(store, prefix, name, &child, segs, out)?;
            segs.pop();
        } else if is_data_file_name(entry) {
            out.push((child, segs.clone()));
        }
    }
    Ok(())
}

/// The Parquet footer of `value` (named `path` in errors).
fn load_parquet_metadata(value: &StoreValue, path: &Path) -> Result<ArrowReaderMetadata> {
    guard::guarded(path, "Parquet metadata", || {
        ArrowReaderMetadata::load(
            &ParquetChunks::new(value.clone()),
            ArrowReaderOptions::new(),
        )
        .map_err(|e| TableError::format(path, format!("cannot read Parquet: {e}")))
    })
}

/// Refuse an Arrow IPC file whose footer places a record batch or dictionary outside the file.
/// The arrow reader allocates (and zeroes) each block's declared body before reading it, so a
/// corrupt length would take many gigabytes of memory before failing.
fn check_ipc_blocks(value: &StoreValue, path: &Path) -> Result<()> {
    const TRAILER: u64 = 10; // footer length (i32) + "ARROW1"
    const HEADER: u64 = 8; // "ARROW1" + padding
    let corrupt = |message: String| {
        TableError::format(path, format!("cannot read Arrow IPC file: {message}"))
    };
    let size = value.size();
    if size < HEADER + TRAILER {
        // The reader would take a footer length from the magic bytes themselves (hundreds of
        // megabytes) and allocate it before finding out.
        return Err(corrupt(format!(
            "the file of {size} bytes is too short to hold a footer"
        )));
    }
    let read = |start: u64, len: u64| {
        value
            .read_at(start, len)
            .map_err(|e| TableError::io(path, e))
    };
    let trailer = read(size - TRAILER, 4)?;
    let footer_len = i32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    let footer_len = u64::try_from(footer_len)
        .ok()
        .filter(|&len| len <= size - TRAILER - HEADER)
        .ok_or_else(|| {
            corrupt(format!(
                "footer length {footer_len} does not fit the file of {size} bytes"
            ))
        })?;
    let footer_start = size - TRAILER - footer_len;
    let footer_bytes = read(footer_start, footer_len)?;
    let footer =
        arrow::ipc::root_as_footer(&footer_bytes).map_err(|e| corrupt(format!("footer: {e}")))?;
    let blocks = footer
        .recordBatches()
        .into_iter()
        .flat_map(|v| v.iter())
        .chain(footer.dictionaries().into_iter().flat_map(|v| v.iter()));
    for block in blocks {
        let end = u64::try_from(block.offset())
            .ok()
            .zip(u64::try_from(block.metaDataLength()).ok())
            .zip(u64::try_from(block.bodyLength()).ok())
            .and_then(|((offset, meta), body)| offset.checked_add(meta)?.checked_add(body));
        if end.is_none_or(|end| end > footer_start) {
            return Err(corrupt(format!(
                "a block at offset {} claims {} + {} bytes, past the data of the file ({footer_start} bytes)",
                block.offset(),
                block.metaDataLength(),
                block.bodyLength()
            )));
        }
    }
    Ok(())
}

/// An Arrow IPC reader of the file or stream `format` over `value`: the (projected) schema
/// and the batches, errors naming `path`.
fn ipc_batches(
    value: &StoreValue,
    format: Format,
    projection: Option<Vec<usize>>,
    path: &Path,
) -> Result<(SchemaRef, BatchIter)> {
    type Batches = Box<dyn Iterator<Item = std::result::Result<RecordBatch, ArrowError>> + Send>;
    let reader = RangeReader::new(value.clone(), READ_AHEAD);
    let kind = if format == Format::ArrowStream {
        "stream"
    } else {
        "file"
    };
    let (schema, batches) = guard::guarded(path, &format!("Arrow IPC {kind}"), || {
        if format == Format::ArrowIpc {
            check_ipc_blocks(value, path)?;
        }
        let opened = if format == Format::ArrowStream {
            StreamReader::try_new(reader, projection).map(|r| (r.schema(), Box::new(r) as Batches))
        } else {
            FileReader::try_new(reader, projection).map(|r| (r.schema(), Box::new(r) as Batches))
        };
        opened.map_err(|e| TableError::format(path, format!("cannot read Arrow IPC {kind}: {e}")))
    })?;
    Ok((
        schema,
        named_errors(batches, path.to_path_buf(), "Arrow IPC data"),
    ))
}

/// The batches of a reader, its errors as "`path`: cannot decode `what`: …".
/// The batches of several row groups in order, the groups decoded a window at a time on
/// rayon's workers (one group per worker): decompressing and decoding Parquet pages is most of
/// the cost of reading a table, and one group's pages are decoded in turn. A window of decoded
/// groups is held in memory until it is consumed.
struct ParallelGroups {
    waiting: std::collections::VecDeque<BatchIter>,
    ready: std::collections::VecDeque<Result<RecordBatch>>,
}

impl ParallelGroups {
    fn new(groups: Vec<BatchIter>) -> Self {
        ParallelGroups {
            waiting: groups.into(),
            ready: Default::default(),
        }
    }
}

impl Iterator for ParallelGroups {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        use rayon::prelude::*;
        while self.ready.is_empty() && !self.waiting.is_empty() {
            let take = rayon::current_num_threads().min(self.waiting.len());
            let window: Vec<BatchIter> = self.waiting.drain(..take).collect();
            let decoded: Vec<Vec<Result<RecordBatch>>> = window
                .into_par_iter()
                .with_max_len(1)
                .map(|group| {
                    let mut batches = Vec::new();
                    for batch in group {
                        let failed = batch.is_err();
                        batches.push(batch);
                        if failed {
                            break;
                        }
                    }
                    batches
                })
                .collect();
            for group in decoded {
                let failed = group.last().is_some_and(|b| b.is_err());
                self.ready.extend(group);
                if failed {
                    // Nothing after a damaged group is read.
                    self.waiting.clear();
                    break;
                }
            }
        }
        self.ready.pop_front()
    }
}

fn named_errors<E: std::fmt::Display>(
    reader: impl Iterator<Item = std::result::Result<RecordBatch, E>> + Send + 'static,
    path: PathBuf,
    what: &'static str,
) -> BatchIter {
    let named = {
        let path = path.clone();
        reader.map(move |r| {
            let batch =
                r.map_err(|e| TableError::format(&path, format!("cannot decode {what}: {e}")))?;
            // Arrow takes a batch's row count from the file as given; with no columns read
            // nothing checks it, and a negative count arrives as a huge one.
            if i64::try_from(batch.num_rows()).is_err() {
                return Err(TableError::format(
                    &path,
                    format!(
                        "cannot decode {what}: a record batch declares {} rows \
                         (a negative count in the file)",
                        batch.num_rows() as i64
                    ),
                ));
            }
            Ok(batch)
        })
    };
    Box::new(guard::PanicGuard::new(named, path, what))
}

/// `total + rows`, or an error naming `path` when a corrupt row count makes the sum overflow.
pub(crate) fn add_rows(total: u64, rows: u64, path: &Path) -> Result<u64> {
    total.checked_add(rows).ok_or_else(|| {
        TableError::format(
            path,
            "the row counts in the file add up to more than 2^64 rows",
        )
    })
}

/// The directory (`.` for a bare file name) and file name of a file's path.
fn split_file_path(path: &Path) -> Result<(PathBuf, String)> {
    let file_name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| TableError::format(path, "not a file name the table store can use"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, file_name.to_string()))
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
    /// Opens a file (format sniffed from its magic bytes) or a Hive directory on the local
    /// filesystem: a convenience over [`TableSource::open_store_named`] with an [`FsStore`]
    /// rooted at the file's directory (or at the Hive directory). Errors and
    /// [`TableSource::path`] name the path as given.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(|e| TableError::io(path, e))?;
        let name = path.display().to_string();
        if meta.is_dir() {
            let store: Arc<dyn Store> = Arc::new(FsStore::read_only(path));
            return Self::open_hive(store, "", name);
        }
        let (dir, file_name) = split_file_path(path)?;
        let store: Arc<dyn Store> = Arc::new(FsStore::read_only(dir));
        Self::open_file_source(store, &file_name, name)
    }

    /// Opens the table at `key_or_prefix` of `store`: the value at that key (an Arrow IPC or
    /// Parquet file, format sniffed from its first and last bytes), else the Hive directory
    /// under that prefix (`""` for the whole store). Errors name the key.
    pub fn open_store(store: Arc<dyn Store>, key_or_prefix: &str) -> Result<Self> {
        Self::open_store_named(store, key_or_prefix, key_or_prefix)
    }

    /// Opens the table at a path (a file or a Hive directory) or a URL (the object at the
    /// URL's key, else the Hive directory under it), read with `remote`'s settings; errors
    /// name the location as given. The command line and the Python package open tables
    /// through it.
    #[cfg(feature = "remote")]
    pub fn open_location(
        location: &neurochunk_store::StoreLocation,
        remote: &neurochunk_store::RemoteOptions,
    ) -> Result<Self> {
        if let Some(path) = location.local_path() {
            return Self::open(path);
        }
        let name = location.display();
        let (store, key) = location
            .open(remote)
            .map_err(|e| TableError::store(&name, e))?;
        Self::open_store_named(store, &key, &name)
    }

    /// Like [`TableSource::open_store`], but errors, [`TableSource::path`] and the files'
    /// display names use `name` (for example a URL of the store) instead of the key.
    pub fn open_store_named(
        store: Arc<dyn Store>,
        key_or_prefix: &str,
        name: &str,
    ) -> Result<Self> {
        let key = key_or_prefix.trim_end_matches('/');
        let is_value = !key.is_empty()
            && key.len() == key_or_prefix.len()
            && store.exists(key).map_err(|e| TableError::store(name, e))?;
        if is_value {
            return Self::open_file_source(store, key, name.to_string());
        }
        Self::open_hive(store, key, name.to_string())
    }

    /// A table of one file.
    fn open_file_source(store: Arc<dyn Store>, key: &str, name: String) -> Result<Self> {
        let mut notes = Vec::new();
        let file = open_file(&store, key, &name, &mut notes)?;
        Ok(TableSource {
            store,
            key: key.to_string(),
            name,
            format: file.format,
            schema: file.schema.clone(),
            files: vec![file],
            partition_fields: vec![],
            notes,
            row_filter: None,
        })
    }

    /// A Hive-partitioned table under `prefix` (no trailing `/`; `""` for the root).
    fn open_hive(store: Arc<dyn Store>, prefix: &str, name: String) -> Result<Self> {
        let mut notes = Vec::new();
        let mut found = Vec::new();
        walk(
            store.as_ref(),
            prefix,
            &name,
            "",
            &mut Vec::new(),
            &mut found,
        )?;
        let common_key = join_key(prefix, "_common_metadata");
        let common_name = join_name(&name, "_common_metadata");
        let has_common = store
            .exists(&common_key)
            .map_err(|e| TableError::store(&common_name, e))?;
        if found.is_empty() && has_common {
            // A zero-row table written by us: only the common metadata exists.
            let f = open_file(&store, &common_key, &common_name, &mut notes)?;
            return Ok(TableSource {
                store,
                key: prefix.to_string(),
                name,
                format: Format::Hive,
                schema: f.schema.clone(),
                files: vec![],
                partition_fields: vec![],
                notes,
                row_filter: None,
            });
        }
        if found.is_empty() {
            if !prefix.is_empty()
                && store
                    .list_prefix(&format!("{prefix}/"))
                    .is_ok_and(|k| k.is_empty())
            {
                // Neither a value nor a directory.
                return Err(TableError::store(
                    &name,
                    StoreError::NotFound {
                        key: prefix.to_string(),
                    },
                ));
            }
            return Err(TableError::format(
                &name,
                "directory holds no .parquet/.arrow files (not a Hive-partitioned table)",
            ));
        }
        let keys: Vec<String> = found[0].1.iter().map(|(k, _)| k.clone()).collect();
        for (rel, segs) in &found {
            let k: Vec<&String> = segs.iter().map(|(k, _)| k).collect();
            if k.len() != keys.len() || k.iter().zip(&keys).any(|(a, b)| *a != b) {
                return Err(TableError::format(
                    join_name(&name, rel),
                    format!(
                        "partition directories {:?} differ from the first file's {:?}",
                        k, keys
                    ),
                ));
            }
        }
        let common: Option<Schema> = if has_common {
            let mut ignore = Vec::new();
            match open_file(&store, &common_key, &common_name, &mut ignore) {
                Ok(f) => Some(f.schema.as_ref().clone()),
                Err(e) => {
                    notes.push(SourceNote {
                        rule: RuleId::HiveMetadata,
                        location: common_name.clone(),
                        message: format!("unreadable _common_metadata ignored: {e}"),
                    });
                    None
                }
            }
        } else {
            None
        };
        // The part files' footers are read concurrently: over a remote store each is a HEAD
        // and a ranged GET, so one after the other a table of many parts opens slowly.
        let opened = map_concurrent(&found, store.concurrent_reads(), |(rel, _)| {
            let mut file_notes = Vec::new();
            open_file(
                &store,
                &join_key(prefix, rel),
                &join_name(&name, rel),
                &mut file_notes,
            )
            .map(|f| (f, file_notes))
        });
        let mut files = Vec::with_capacity(found.len());
        for ((_, segs), result) in found.iter().zip(opened) {
            let (mut f, file_notes) = result?;
            notes.extend(file_notes);
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
            .map(|c| (PathBuf::from(&common_name), neuro_meta(c)))
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
            let mut differences = Vec::new();
            for field in schema.fields() {
                if keys.contains(field.name()) {
                    continue;
                }
                match f.schema.field_with_name(field.name()) {
                    Err(_) => {
                        return Err(TableError::format(
                            &f.path,
                            format!("Hive partition file lacks column {:?}", field.name()),
                        ))
                    }
                    Ok(here) if here.data_type() != field.data_type() => differences.push(format!(
                        "column {:?} is {} here but {} in the table",
                        field.name(),
                        here.data_type(),
                        field.data_type()
                    )),
                    Ok(_) => {}
                }
            }
            for extra in f
                .schema
                .fields()
                .iter()
                .filter(|c| schema.field_with_name(c.name()).is_err())
            {
                differences.push(format!(
                    "extra column {:?} (not part of the table, not read)",
                    extra.name()
                ));
            }
            if !differences.is_empty() {
                notes.push(SourceNote {
                    rule: RuleId::HiveSchema,
                    location: f.path.display().to_string(),
                    message: differences.join("; "),
                });
            }
        }
        Ok(TableSource {
            store,
            key: prefix.to_string(),
            name,
            format: Format::Hive,
            schema: Arc::new(schema),
            files,
            partition_fields,
            notes,
            row_filter: None,
        })
    }

    /// Display name of the table: the path given to [`TableSource::open`], else the key or
    /// the name given to [`TableSource::open_store_named`].
    pub fn path(&self) -> &Path {
        Path::new(&self.name)
    }

    /// Display name of the table (see [`TableSource::path`]).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store holding the table.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Key of the table's file, or prefix of its Hive directory (`""` for a store's root).
    pub fn key(&self) -> &str {
        &self.key
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

    /// The Hive partition values of `file` (one of [`TableSource::files`]) as a one-row
    /// batch of the partition columns, typed as in the table's schema (no columns for a
    /// table without partitions): what a filter on partition columns can be tested against
    /// before the file is read.
    pub fn partition_values(&self, file: &DataFile) -> Result<RecordBatch> {
        let arrays = self
            .partition_fields
            .iter()
            .enumerate()
            .map(|(i, f)| {
                partition_array(
                    &file.path,
                    f,
                    file.partition.get(i).and_then(|v| v.as_deref()),
                    1,
                )
            })
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new_with_options(
            Arc::new(Schema::new(self.partition_fields.clone())),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .map_err(|e| TableError::arrow(&file.path, e))
    }

    /// Keeps only the data files for which `keep` is true (for example the Hive partitions
    /// a filter leaves); the schema stays the table's.
    pub fn retain_files(&mut self, keep: impl FnMut(&DataFile) -> bool) {
        self.files.retain(keep);
    }

    /// Things noticed while opening (for the validator).
    pub fn notes(&self) -> &[SourceNote] {
        &self.notes
    }

    /// Row count when every file's footer states it (Parquet), without reading data.
    pub fn known_rows(&self) -> Option<u64> {
        self.files
            .iter()
            .try_fold(0u64, |total, f| total.checked_add(f.rows?))
    }

    /// Row count, read from Parquet footers when possible, else by scanning.
    pub fn num_rows(&self) -> Result<u64> {
        let mut total = 0u64;
        for f in &self.files {
            match f.rows {
                Some(r) => total = add_rows(total, r, &f.path)?,
                None => {
                    for b in self.file_batches(f, &[], DEFAULT_BATCH_SIZE)? {
                        total = add_rows(total, b?.num_rows() as u64, &f.path)?;
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
        self.batches_filtered(columns, None, batch_size)
    }

    /// Streams the named columns of the rows `filter` keeps (all rows for `None`).
    ///
    /// What the filter rules out is not read: a Hive file whose partition value is not one
    /// of the filter's values is skipped, and so is a Parquet row group whose statistics
    /// (minimum and maximum of the filter's column) exclude every value; the rows left are
    /// then filtered one by one. The filter's column is read when needed, whether or not it
    /// is among `columns`.
    pub fn batches_filtered(
        &self,
        columns: &[String],
        filter: Option<&RowFilter>,
        batch_size: usize,
    ) -> Result<BatchIter> {
        let Some(filter) = filter else {
            return self.batches_unfiltered(columns, batch_size);
        };
        let field = self.schema.field_with_name(&filter.column).map_err(|_| {
            TableError::data(
                &self.name,
                format!("no column {:?} in the table to filter on", filter.column),
            )
        })?;
        if !matches!(
            field.data_type(),
            DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::UInt64
                | DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
        ) {
            return Err(TableError::data(
                &self.name,
                format!(
                    "column {:?} is {}, not an integer column to filter on",
                    filter.column,
                    field.data_type()
                ),
            ));
        }
        let mut this = self.clone();
        if let Some(i) = self
            .partition_fields
            .iter()
            .position(|f| f.name() == &filter.column)
        {
            // Whole files of other partitions are never opened.
            this.files.retain(|f| {
                f.partition
                    .get(i)
                    .and_then(|v| v.as_deref())
                    .and_then(|v| v.parse::<u64>().ok())
                    .is_some_and(|v| filter.values.contains(&v))
            });
            return this.batches_unfiltered(columns, batch_size);
        }
        let mut read: Vec<String> = columns.to_vec();
        let extra = !read.contains(&filter.column);
        if extra {
            read.push(filter.column.clone());
        }
        this.row_filter = Some(Arc::new(filter.clone()));
        let name = self.name.clone();
        let filter = filter.clone();
        let keep = columns.len();
        let inner = this.batches_unfiltered(&read, batch_size)?;
        Ok(Box::new(inner.filter_map(move |b| {
            let b = match b {
                Ok(b) => b,
                Err(e) => return Some(Err(e)),
            };
            match filter_rows(&b, &filter, &name) {
                Ok(b) if b.num_rows() == 0 => None,
                Ok(b) if extra => Some(
                    b.project(&(0..keep).collect::<Vec<_>>())
                        .map_err(|e| TableError::arrow(&name, e)),
                ),
                other => Some(other),
            }
        })))
    }

    fn batches_unfiltered(&self, columns: &[String], batch_size: usize) -> Result<BatchIter> {
        let mut fields = Vec::with_capacity(columns.len());
        for c in columns {
            let f = self.schema.field_with_name(c).map_err(|_| {
                TableError::data(&self.name, format!("no column {c:?} in the table"))
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
        match f.format {
            Format::Parquet => {
                let meta = match &f.parquet {
                    Some(meta) => meta.clone(),
                    None => load_parquet_metadata(&f.value, &path)?,
                };
                let groups = match &self.row_filter {
                    Some(filter) => row_groups_for(meta.metadata(), filter),
                    None => (0..meta.metadata().num_row_groups()).collect(),
                };
                // The whole set-up reads the (untrusted) footer: `byte_range` asserts on
                // negative sizes, for one.
                let reader_of = |groups: Vec<usize>| {
                    let reader = guard::guarded(&path, "Parquet data", || {
                        let mask = ProjectionMask::roots(meta.parquet_schema(), indices.clone());
                        let chunks = ParquetChunks::planned(
                            f.value.clone(),
                            meta.metadata(),
                            |g| groups.contains(&g),
                            |leaf| mask.leaf_included(leaf),
                        );
                        ParquetRecordBatchReaderBuilder::new_with_metadata(chunks, meta.clone())
                            .with_batch_size(batch_size.max(1))
                            .with_projection(mask)
                            .with_row_groups(groups)
                            .build()
                            .map_err(|e| TableError::arrow(&path, e))
                    })?;
                    Ok(named_errors(reader, path.clone(), "Parquet data"))
                };
                // A remote file is read through one planned reader, whose windows of column
                // chunks are fetched concurrently ahead of the decoder; a local one a row
                // group per worker.
                if groups.len() < 2 || rayon::current_num_threads() < 2 || !f.value.is_local() {
                    return reader_of(groups);
                }
                let per_group = groups
                    .into_iter()
                    .map(|g| reader_of(vec![g]))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Box::new(ParallelGroups::new(per_group)))
            }
            Format::ArrowIpc | Format::ArrowStream => {
                Ok(ipc_batches(&f.value, f.format, Some(indices), &path)?.1)
            }
            Format::Hive => Err(TableError::Usage(
                "nested Hive tables are not supported".into(),
            )),
        }
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
