//! Writing tables through a [`Store`]: [`TableWriter`] streams Arrow IPC or Parquet into
//! [`Store::writer`] values that appear only when the writer finishes; Hive-partitioned
//! tables get one value per part file.

use super::parquet_parallel::ParallelParquetWriter;
use super::{percent_encode, Format, HIVE_NULL};
use crate::error::{Result, TableError};
use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use arrow::compute::{cast, take};
use arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use arrow::ipc::writer::FileWriter;
use neurochunk_store::replace::{self, Overwrite, TreeKind};
use neurochunk_store::staging::{remove_stale_temp_files, resolve_target, StagedDir};
use neurochunk_store::{join_key, Durability, FsStore, Store, StoreResult, ValueWriter};
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use std::collections::{HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// What an existing output may be to be replaced: by default ([`Overwrite::Own`]) only
    /// a table (a Parquet or Arrow IPC file, a Hive directory of Parquet files), never a file
    /// of another kind or a directory holding anything else; [`Overwrite::Never`] refuses
    /// any existing output, [`Overwrite::Anything`] replaces whatever is there.
    pub overwrite: Overwrite,
    /// How durable [`TableWriter::create`]'s files are when it finishes: with
    /// [`Durability::Fsync`] each file is synced before it is renamed into place and its
    /// directory after, and a Hive directory's part files and directories are synced before
    /// the directory is published and the directory holding it after. (For
    /// [`TableWriter::create_in`], the store's own durability applies.)
    pub durability: Durability,
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
            overwrite: Overwrite::Own,
            durability: Durability::Buffered,
        }
    }
}

/// Chooses the output format from the options and the path's extension.
pub fn output_format(path: &Path, opts: &WriteOptions) -> Result<Format> {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    format_for(&file_name, &path.display().to_string(), opts)
}

/// The output format from the options and the extension of `file_name`; errors name `name`.
fn format_for(file_name: &str, name: &str, opts: &WriteOptions) -> Result<Format> {
    if let Some(f) = opts.format {
        return Ok(f);
    }
    if opts.partition_by.is_some() {
        return Ok(Format::Hive);
    }
    let lower = file_name.to_ascii_lowercase();
    if lower.ends_with(".arrow") || lower.ends_with(".feather") || lower.ends_with(".ipc") {
        Ok(Format::ArrowIpc)
    } else if lower.ends_with(".parquet") || lower.ends_with(".parq") || lower.ends_with(".pq") {
        Ok(Format::Parquet)
    } else {
        Err(TableError::Usage(format!(
            "{name}: cannot tell the output format: use a .arrow, .feather or .parquet extension, or --partition-by for a Hive directory"
        )))
    }
}

/// What a table file output may replace: a Parquet or Arrow IPC (file or stream) file.
pub const TABLE_FILE: &str = "a Parquet or Arrow IPC file";

/// Whether a file starting with `head` and ending with `tail` is a table file
/// ([`TABLE_FILE`]): Parquet's `PAR1` at both ends, Arrow IPC's `ARROW1` (the file format and
/// Feather v2) or Feather v1's `FEA1` at the start, or the continuation marker of an Arrow IPC
/// stream.
pub fn is_table_file(head: &[u8], tail: &[u8]) -> bool {
    (head.starts_with(b"PAR1") && tail.ends_with(b"PAR1"))
        || head.starts_with(b"ARROW1")
        || head.starts_with(b"FEA1")
        || head.starts_with(&[0xff, 0xff, 0xff, 0xff])
}

/// Hive-partitioned tables as [`TableWriter`] and pyarrow write them: directories named
/// `column=value` (any depth) holding `.parquet` part files, and `_common_metadata` /
/// `_metadata` at the top. What a Hive table output may replace.
#[derive(Clone, Copy, Debug, Default)]
pub struct HiveTable;

impl TreeKind for HiveTable {
    fn name(&self) -> &'static str {
        "a Hive-partitioned Parquet table"
    }

    fn is_anchor(&self, _file_name: &str) -> bool {
        false
    }

    fn owns(&self, rest: &[&str], _anchored: bool) -> bool {
        match rest {
            ["_common_metadata" | "_metadata"] => true,
            [dirs @ .., file] => {
                dirs.iter().all(|d| d.contains('='))
                    && file.to_ascii_lowercase().ends_with(".parquet")
            }
            [] => false,
        }
    }
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

/// The Parquet writer properties of a table of `schema`. Floating-point columns are written
/// without a dictionary: measured coordinates and values rarely repeat, and trying one costs
/// a hash of every value until the dictionary page overflows.
fn parquet_props(schema: &Schema, opts: &WriteOptions) -> WriterProperties {
    let mut builder = WriterProperties::builder()
        .set_compression(opts.compression)
        .set_max_row_group_row_count(Some(opts.row_group_rows.max(1)))
        .set_key_value_metadata(Some(footer_kv(schema)))
        .set_created_by(format!("neurochunk-table {}", env!("CARGO_PKG_VERSION")));
    for field in schema.fields() {
        if field.data_type().is_floating() {
            builder = builder
                .set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), false);
        }
    }
    builder.build()
}

/// A value being streamed into a store through a writer that holds its own handle on the
/// store ([`Store::owned_writer`]), so that writers need no lifetime: nothing is visible until
/// [`StoreSink::commit`], and dropping it abandons the value.
struct StoreSink {
    writer: Box<dyn ValueWriter>,
    key: String,
}

impl StoreSink {
    /// Starts the value at `key`.
    fn new(store: Arc<dyn Store>, key: &str) -> StoreResult<Self> {
        Ok(StoreSink {
            writer: store.owned_writer(key)?,
            key: key.to_string(),
        })
    }

    /// Makes the written bytes the value of the key.
    fn commit(self) -> StoreResult<()> {
        self.writer.commit()
    }
}

impl Write for StoreSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

enum Sink {
    Ipc(FileWriter<BufWriter<StoreSink>>),
    Parquet(ParallelParquetWriter<StoreSink>),
    Hive(Box<HiveWriter>),
}

/// Where [`TableWriter::create`] puts the finished table on the local filesystem.
struct FsTarget {
    /// The output path (symbolic links to the directory holding it resolved, for a Hive
    /// table).
    target: PathBuf,
    /// The hidden staging directory of a Hive table, published at `target` when finished
    /// (and removed when dropped unpublished).
    staging: Option<StagedDir>,
}

/// Where a table is written: a file or Hive directory on the local filesystem, or a key of a
/// store (an object storage URL's bucket and key, for one).
#[derive(Clone, Debug)]
pub enum TableTarget {
    /// A path, written by [`TableWriter::create`] (staged and renamed into place).
    Path(PathBuf),
    /// `key` of `store`, written by [`TableWriter::create_in_named`]; errors name `name`.
    Store {
        /// The store.
        store: Arc<dyn Store>,
        /// The key of the file, or the prefix of a Hive directory.
        key: String,
        /// The name errors give the table (e.g. its URL).
        name: String,
    },
}

impl TableTarget {
    /// Where a table at a path or URL is written: a path, or the key of the URL's store
    /// (opened with `remote`'s settings).
    #[cfg(feature = "remote")]
    pub fn at(
        location: &neurochunk_store::StoreLocation,
        remote: &neurochunk_store::RemoteOptions,
    ) -> Result<Self> {
        if let Some(path) = location.local_path() {
            return Ok(TableTarget::Path(path.to_path_buf()));
        }
        let name = location.display();
        let (store, key) = location
            .open(remote)
            .map_err(|e| TableError::store(&name, e))?;
        Ok(TableTarget::Store { store, key, name })
    }

    /// The name errors give the table: the path, or the store target's name.
    pub fn name(&self) -> String {
        match self {
            TableTarget::Path(path) => path.display().to_string(),
            TableTarget::Store { name, .. } => name.clone(),
        }
    }

    /// The last segment of the path or key (a file name, whose extension picks the format).
    pub fn file_name(&self) -> String {
        match self {
            TableTarget::Path(path) => path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            TableTarget::Store { key, .. } => key
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or_default()
                .to_string(),
        }
    }

    /// A writer of `schema` at the target.
    pub fn create(&self, schema: SchemaRef, opts: &WriteOptions) -> Result<TableWriter> {
        match self {
            TableTarget::Path(path) => TableWriter::create(path, schema, opts),
            TableTarget::Store { store, key, name } => {
                TableWriter::create_in_named(store.clone(), key, name, schema, opts)
            }
        }
    }
}

/// Writes a table through a [`Store`]: Arrow IPC (file format) or Parquet into one value,
/// or a Hive-partitioned Parquet directory (one value per part file).
///
/// The data stream into [`Store::writer`] values, committed by [`TableWriter::finish`]: a
/// writer dropped (or failed) before that leaves nothing visible. Memory is bounded by the
/// batch and Parquet row group, plus what the store buffers (the filesystem store buffers
/// nothing; the default [`Store::writer`] keeps the value in memory).
pub struct TableWriter {
    /// Display name (path or key) for errors.
    name: String,
    store: Arc<dyn Store>,
    key: String,
    schema: SchemaRef,
    sink: Option<Sink>,
    rows: u64,
    format: Format,
    overwrite: Overwrite,
    /// Set for [`TableWriter::create`].
    fs: Option<FsTarget>,
    finished: bool,
}

impl TableWriter {
    /// Creates a writer for `schema` (its metadata is written as table metadata) at `path` on
    /// the local filesystem: a convenience over [`TableWriter::create_in`] with an [`FsStore`]
    /// rooted at the file's directory, errors naming the path. A file is streamed to a hidden
    /// temporary file renamed over `path` by [`TableWriter::finish`] (an existing file is
    /// replaced atomically; temporary files that killed writers left in the directory are
    /// removed first); a Hive directory is staged in a hidden sibling directory
    /// ([`StagedDir`]) that replaces `path` when finished (an atomic exchange with an existing
    /// directory where the platform offers it). [`WriteOptions::durability`] says whether the
    /// result is synced to the disk before `finish` returns.
    pub fn create(path: impl AsRef<Path>, schema: SchemaRef, opts: &WriteOptions) -> Result<Self> {
        let target = path.as_ref().to_path_buf();
        let format = output_format(&target, opts)?;
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
        let name = target.display().to_string();
        if format == Format::Hive {
            hive_column(&name, opts)?;
            // Staged beside the real destination (where symbolic links lead).
            let target =
                resolve_target(&target, &target).map_err(|e| TableError::store(&name, e))?;
            let staged = StagedDir::replacing(&target, &HiveTable, opts.overwrite)
                .map_err(|e| TableError::replace(&name, e))?
                .with_durability(opts.durability);
            let store: Arc<dyn Store> =
                Arc::new(FsStore::new(staged.path()).with_durability(opts.durability));
            let fs = FsTarget {
                target,
                staging: Some(staged),
            };
            // Dropping the staging directory unpublished (on an error) removes it.
            return Self::start(store, "", name, format, schema, opts, Some(fs));
        }
        replace::check_file(&target, TABLE_FILE, is_table_file, opts.overwrite)
            .map_err(|e| TableError::replace(&name, e))?;
        let (dir, file_name) = super::split_file_path(&target)?;
        remove_stale_temp_files(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &dir
        });
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir).with_durability(opts.durability));
        let fs = FsTarget {
            target,
            staging: None,
        };
        Self::start(store, &file_name, name, format, schema, opts, Some(fs))
    }

    /// Creates a writer for `schema` at `key` of `store`: an Arrow IPC or Parquet file
    /// (format from the options, else the key's extension), or with
    /// [`WriteOptions::partition_by`] a Hive directory under the prefix `key` (`""` for the
    /// store's root). Errors name the key.
    ///
    /// A file becomes visible, whole, when [`TableWriter::finish`] commits it. A Hive table's
    /// part files are committed as they are closed (when evicted or finished) and removed
    /// again if the writer is dropped or fails; when it finishes, any other value under the
    /// prefix (an earlier table's) is removed, so the prefix holds exactly the new table.
    pub fn create_in(
        store: Arc<dyn Store>,
        key: &str,
        schema: SchemaRef,
        opts: &WriteOptions,
    ) -> Result<Self> {
        Self::create_in_named(store, key, key, schema, opts)
    }

    /// Like [`TableWriter::create_in`], but errors name the table `name` (for example a URL
    /// of the store) instead of the key.
    pub fn create_in_named(
        store: Arc<dyn Store>,
        key: &str,
        name: &str,
        schema: SchemaRef,
        opts: &WriteOptions,
    ) -> Result<Self> {
        let key = key.trim_end_matches('/');
        let file_name = key.rsplit('/').next().unwrap_or(key);
        let format = format_for(file_name, name, opts)?;
        check_store_target(store.as_ref(), key, name, format, opts.overwrite)?;
        Self::start(store, key, name.to_string(), format, schema, opts, None)
    }

    /// Opens the sink of a new writer.
    fn start(
        store: Arc<dyn Store>,
        key: &str,
        name: String,
        format: Format,
        schema: SchemaRef,
        opts: &WriteOptions,
        fs: Option<FsTarget>,
    ) -> Result<Self> {
        let sink = match format {
            Format::ArrowIpc => {
                let out =
                    StoreSink::new(store.clone(), key).map_err(|e| TableError::store(&name, e))?;
                Sink::Ipc(
                    FileWriter::try_new(BufWriter::with_capacity(1 << 20, out), &schema)
                        .map_err(|e| TableError::arrow(&name, e))?,
                )
            }
            Format::Parquet => {
                let out =
                    StoreSink::new(store.clone(), key).map_err(|e| TableError::store(&name, e))?;
                Sink::Parquet(
                    ParallelParquetWriter::try_new(
                        out,
                        schema.clone(),
                        parquet_props(&schema, opts),
                    )
                    .map_err(|e| TableError::arrow(&name, e))?,
                )
            }
            Format::Hive => {
                let col = hive_column(&name, opts)?;
                let mut hive =
                    HiveWriter::new(store.clone(), key, &name, schema.clone(), &col, opts)?;
                // A staging directory is removed whole; in a store, the writer removes the
                // part files it committed.
                hive.discard = fs.is_none();
                Sink::Hive(Box::new(hive))
            }
            Format::ArrowStream => {
                return Err(TableError::Usage(
                    "writing the Arrow IPC stream format is not supported; use .arrow".into(),
                ))
            }
        };
        Ok(TableWriter {
            name,
            store,
            key: key.to_string(),
            schema,
            sink: Some(sink),
            rows: 0,
            format,
            overwrite: opts.overwrite,
            fs,
            finished: false,
        })
    }

    /// Appends a batch.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.rows = super::add_rows(self.rows, batch.num_rows() as u64, Path::new(&self.name))?;
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
                    &self.name,
                    format!("batch does not fit the table schema: {e}"),
                )
            })?;
            &conformed
        };
        match self.sink.as_mut() {
            Some(Sink::Ipc(w)) => w.write(batch).map_err(|e| TableError::arrow(&self.name, e)),
            Some(Sink::Parquet(w)) => w.write(batch).map_err(|e| TableError::arrow(&self.name, e)),
            Some(Sink::Hive(h)) => h.write(batch),
            None => Err(TableError::Usage("writer already finished".into())),
        }
    }

    /// Finishes the file(s) and makes them visible (commits the values; for
    /// [`TableWriter::create`], moves them into place); returns the rows written.
    pub fn finish(mut self) -> Result<u64> {
        match self.sink.take() {
            Some(Sink::Ipc(w)) => {
                let buffered = w
                    .into_inner()
                    .map_err(|e| TableError::arrow(&self.name, e))?;
                let out = buffered
                    .into_inner()
                    .map_err(|e| TableError::io(&self.name, e.into_error()))?;
                self.make_room()?;
                out.commit().map_err(|e| TableError::store(&self.name, e))?;
            }
            Some(Sink::Parquet(w)) => {
                let out = w
                    .into_inner()
                    .map_err(|e| TableError::arrow(&self.name, e))?;
                self.make_room()?;
                out.commit().map_err(|e| TableError::store(&self.name, e))?;
            }
            Some(Sink::Hive(h)) => {
                if self.fs.is_none() {
                    // In a store, finishing removes the other values under the prefix.
                    self.make_room()?;
                }
                h.finish(self.fs.is_none())?
            }
            None => {}
        }
        if self.fs.as_ref().is_some_and(|fs| fs.staging.is_some()) {
            self.make_room()?;
        }
        if let Some(staged) = self.fs.as_mut().and_then(|fs| fs.staging.take()) {
            let target = staged.target().to_path_buf();
            staged.publish().map_err(|e| {
                TableError::io(&target, std::io::Error::new(e.source.kind(), e.to_string()))
            })?;
        }
        self.finished = true;
        Ok(self.rows)
    }

    /// Before the finished table takes its place, the check of [`WriteOptions::overwrite`]
    /// again (the output may have changed while the table was written), and for a file, what
    /// its rename cannot replace by itself removed: a directory, which the check allows only
    /// when it is empty or anything may be replaced. A staged Hive directory is checked by its
    /// publish.
    fn make_room(&self) -> Result<()> {
        match &self.fs {
            Some(fs) if fs.staging.is_some() => Ok(()),
            Some(fs) => {
                replace::check_file(&fs.target, TABLE_FILE, is_table_file, self.overwrite)
                    .map_err(|e| TableError::replace(&self.name, e))?;
                match std::fs::symlink_metadata(&fs.target) {
                    Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(&fs.target)
                        .map_err(|e| TableError::io(&fs.target, e)),
                    // The rename of the new file replaces the old one atomically.
                    _ => Ok(()),
                }
            }
            None => check_store_target(
                self.store.as_ref(),
                &self.key,
                &self.name,
                self.format,
                self.overwrite,
            ),
        }
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Unfinished (dropped, or finish failed): dropping the sinks abandons their values,
        // the Hive writer removes the part files it committed, and a staging directory
        // dropped unpublished is removed.
        self.sink = None;
        self.fs = None;
    }
}

/// Whether the table at `key` of `store` may be written over what is there now (see
/// [`WriteOptions::overwrite`]): a Hive directory's prefix, or a file's key.
fn check_store_target(
    store: &dyn Store,
    key: &str,
    name: &str,
    format: Format,
    overwrite: Overwrite,
) -> Result<()> {
    let checked = if format == Format::Hive {
        replace::check_prefix(store, key, name, &HiveTable, overwrite)
    } else {
        replace::check_value(store, key, name, TABLE_FILE, is_table_file, overwrite)
    };
    checked.map_err(|e| TableError::replace(name, e))
}

/// The partition column of a Hive output.
fn hive_column(name: &str, opts: &WriteOptions) -> Result<String> {
    opts.partition_by.clone().ok_or_else(|| {
        TableError::Usage(format!(
            "{name}: a Hive directory needs a partition column (--partition-by)"
        ))
    })
}

struct OpenPart {
    writer: ParallelParquetWriter<StoreSink>,
    last_use: u64,
}

/// Writes a Hive directory: one subdirectory per partition value, the partition
/// column left out of the files (as pyarrow does), plus a `_common_metadata`
/// file holding the full schema. Each file is a value of the store under the
/// table's prefix, committed when the file is closed.
struct HiveWriter {
    store: Arc<dyn Store>,
    /// The table's prefix (no trailing `/`; `""` for the store's root).
    prefix: String,
    /// Display name of the table.
    name: String,
    schema: SchemaRef,
    file_schema: SchemaRef,
    col_index: usize,
    col_name: String,
    opts: WriteOptions,
    open: HashMap<Option<String>, OpenPart>,
    part_counter: HashMap<Option<String>, usize>,
    tick: u64,
    /// Keys committed so far.
    written: Vec<String>,
    /// Remove the committed keys when dropped unfinished.
    discard: bool,
    done: bool,
}

impl HiveWriter {
    fn new(
        store: Arc<dyn Store>,
        prefix: &str,
        name: &str,
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
            store,
            prefix: prefix.to_string(),
            name: name.to_string(),
            schema,
            file_schema,
            col_index,
            col_name: col.to_string(),
            opts: opts.clone(),
            open: HashMap::new(),
            part_counter: HashMap::new(),
            tick: 0,
            written: Vec::new(),
            discard: true,
            done: false,
        })
    }

    fn key_strings(&self, col: &ArrayRef) -> Result<Vec<Option<String>>> {
        let as_str = cast(col, &DataType::Utf8).map_err(|e| TableError::arrow(&self.name, e))?;
        let s = as_str
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| TableError::data(&self.name, "partition column cast failed"))?;
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
        .map_err(|e| TableError::arrow(&self.name, e))?;
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
                .map_err(|e| TableError::arrow(&self.name, e))?;
            let part = RecordBatch::try_new_with_options(
                self.file_schema.clone(),
                cols,
                &RecordBatchOptions::new().with_row_count(Some(idx.len())),
            )
            .map_err(|e| TableError::arrow(&self.name, e))?;
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
                if let Some((_, old)) = oldest.and_then(|k| self.open.remove_entry(&k)) {
                    self.close(old.writer)?;
                }
            }
            let seg = match &key {
                Some(v) => percent_encode(v),
                None => HIVE_NULL.to_string(),
            };
            let n = self.part_counter.entry(key.clone()).or_insert(0);
            let file = match &self.opts.file_infix {
                Some(inf) => format!("part-{n}.{inf}.parquet"),
                None => format!("part-{n}.parquet"),
            };
            *n += 1;
            let rel = format!("{}={}/{file}", percent_encode(&self.col_name), seg);
            let writer = self.parquet_file(&rel, &self.file_schema)?;
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
            .map_err(|e| TableError::arrow(&self.name, e))
    }

    /// A Parquet writer of `schema` into a new value at `rel` below the table's prefix.
    fn parquet_file(
        &self,
        rel: &str,
        schema: &SchemaRef,
    ) -> Result<ParallelParquetWriter<StoreSink>> {
        let name = super::join_name(&self.name, rel);
        let out = StoreSink::new(self.store.clone(), &join_key(&self.prefix, rel))
            .map_err(|e| TableError::store(&name, e))?;
        ParallelParquetWriter::try_new(out, schema.clone(), parquet_props(schema, &self.opts))
            .map_err(|e| TableError::arrow(&name, e))
    }

    /// Finishes a part file and commits it.
    fn close(&mut self, writer: ParallelParquetWriter<StoreSink>) -> Result<()> {
        let out = writer
            .into_inner()
            .map_err(|e| TableError::arrow(&self.name, e))?;
        let key = out.key.clone();
        out.commit().map_err(|e| TableError::store(&self.name, e))?;
        self.written.push(key);
        Ok(())
    }

    /// Closes the open part files, writes `_common_metadata`, and with `replace` removes every
    /// other value under the prefix.
    fn finish(mut self, replace: bool) -> Result<()> {
        let open: Vec<OpenPart> = self.open.drain().map(|(_, p)| p).collect();
        for p in open {
            self.close(p.writer)?;
        }
        // _common_metadata: the full logical schema, no rows.
        let common = self.parquet_file("_common_metadata", &self.schema)?;
        self.close(common)?;
        if replace {
            let under = if self.prefix.is_empty() {
                String::new()
            } else {
                format!("{}/", self.prefix)
            };
            let written: HashSet<&String> = self.written.iter().collect();
            let keys = self
                .store
                .list_prefix(&under)
                .map_err(|e| TableError::store(&self.name, e))?;
            for key in keys.iter().filter(|k| !written.contains(k)) {
                self.store
                    .delete(key)
                    .map_err(|e| TableError::store(&self.name, e))?;
            }
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for HiveWriter {
    fn drop(&mut self) {
        if self.done || !self.discard {
            return;
        }
        // Unfinished: abandon the open part files, remove the committed ones.
        self.open.clear();
        for key in &self.written {
            let _ = self.store.delete(key);
        }
    }
}
