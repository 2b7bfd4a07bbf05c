//! `neurochunk table …`: validate, inspect, convert and derive neurarrow tables,
//! and convert SWC files to and from skeleton tables.
//!
//! Exit codes: 0 success (for `validate`: every table valid), 1 invalid tables
//! or data that does not allow the operation, 2 unreadable input or bad usage.
//! Errors are printed on stderr as one line naming the file.

use arrow::datatypes::Schema;
use neurochunk_array::precomputed::skeleton::{SkeletonLayer, SKELETON_TYPE};
use neurochunk_store::replace::TreeKind;
use neurochunk_store::staging::{resolve_target, StagedDir};
use neurochunk_store::{join_key, FsStore};
use neurochunk_table::derive::{derive, derive_to, DeriveOptions};
use neurochunk_table::info::source_info;
use neurochunk_table::io::{output_format, Durability, TableSource, WriteOptions};
use neurochunk_table::precomputed::{
    default_sharding, export_precomputed, import_precomputed, PrecomputedExportOptions,
    PrecomputedImportOptions, PrecomputedSummary,
};
use neurochunk_table::swc::{
    export_swc_from, export_swc_to_store, import_swc_files, parse_swc_bytes, read_swc_files,
    SwcFile, SwcImportOptions,
};
use neurochunk_table::validate::{validate_results, ValidateOptions};
use neurochunk_table::{Format, Registry, RowFilter, TableError, TableTarget};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::store_args::{remote_options, Location, ReplaceArgs, URL_FORMS};
use std::process::ExitCode;

/// Parquet compression codecs offered on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Codec {
    /// No compression.
    None,
    /// Snappy (pyarrow's default).
    Snappy,
    /// Zstandard (level 3).
    Zstd,
    /// LZ4 (raw).
    Lz4,
    /// Gzip.
    Gzip,
}

/// Output options shared by the writing subcommands.
#[derive(Debug, Clone, clap::Args)]
pub struct OutputArgs {
    /// Write a Hive-partitioned Parquet directory split by this column
    /// (e.g. fragment_id).
    #[arg(long, value_name = "COLUMN")]
    pub partition_by: Option<String>,
    /// Parquet compression.
    #[arg(long, value_enum, default_value_t = Codec::Snappy)]
    pub compression: Codec,
    /// Rows per Parquet row group.
    #[arg(long, default_value_t = 512 * 1024)]
    pub row_group_rows: usize,
    /// Make the output durable before the command returns: fsync each file before it is
    /// renamed into place and its directory after (slower; see docs/durability.md).
    #[arg(long)]
    pub fsync: bool,
    #[command(flatten)]
    pub replace: ReplaceArgs,
}

impl OutputArgs {
    pub(crate) fn options(&self) -> WriteOptions {
        use neurochunk_table::io::Compression as C;
        let compression = match self.compression {
            Codec::None => C::UNCOMPRESSED,
            Codec::Snappy => C::SNAPPY,
            Codec::Zstd => C::ZSTD(Default::default()),
            Codec::Lz4 => C::LZ4_RAW,
            Codec::Gzip => C::GZIP(Default::default()),
        };
        WriteOptions {
            partition_by: self.partition_by.clone(),
            compression,
            row_group_rows: self.row_group_rows,
            durability: if self.fsync {
                Durability::Fsync
            } else {
                Durability::Buffered
            },
            overwrite: self.replace.policy(),
            ..WriteOptions::default()
        }
    }
}

/// neurarrow tables: skeletons, point clouds, dotprops, connections.
#[derive(Debug, clap::Subcommand)]
pub enum TableCommand {
    /// Validate tables against the neurarrow spec. Several tables of one context
    /// are also checked against each other (ids, references, space).
    #[command(after_help = URL_FORMS)]
    Validate {
        /// Arrow IPC files, Parquet files or Hive-partitioned directories (paths or URLs).
        #[arg(required = true, value_name = "FILE_OR_DIR")]
        paths: Vec<Location>,
        /// Schema to validate against (skeletons, pointclouds, dotprops,
        /// connections, net.clbarnes.connectors); default: from the file name,
        /// then from the columns.
        #[arg(long)]
        schema: Option<String>,
        /// Grade configurable rules (stale derived fields, unknown keys and
        /// fields, castable types, nullability flags) as errors.
        #[arg(long)]
        strict: bool,
        /// Print one JSON object per table: {"valid", "errors", "warnings", ...}.
        #[arg(long)]
        json: bool,
        /// Report at most this many violations per rule and table.
        #[arg(long, default_value_t = 20)]
        max_per_rule: usize,
    },
    /// Show a table's schema, metadata, row count and fragments.
    #[command(after_help = URL_FORMS)]
    Info {
        /// Arrow IPC file, Parquet file or Hive directory (a path or a URL).
        path: Location,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Convert between Arrow IPC (.arrow/.feather), Parquet (.parquet) and
    /// Hive-partitioned Parquet (--partition-by), keeping metadata; between skeletons
    /// tables and Neuroglancer precomputed skeleton layers, and between point cloud or
    /// connections tables and precomputed annotation collections (`convert LAYER OUT
    /// --context ID`, `convert IN LAYER --format precomputed [--sharded]`).
    #[command(after_help = URL_FORMS)]
    Convert {
        /// Input table (a path or a URL).
        input: Location,
        /// Output path or URL; the extension picks the format.
        output: Location,
        /// Only these columns, in this order (comma-separated). Parquet inputs are read
        /// column by column: other columns' bytes are not fetched.
        #[arg(long, value_name = "COL,...", value_delimiter = ',')]
        columns: Vec<String>,
        /// Only the rows of this fragment (the `fragment_id` column; repeatable). Parquet row
        /// groups whose statistics rule the fragments out, and Hive partitions of other
        /// fragments, are not read.
        #[arg(long = "fragment", value_name = "ID")]
        fragments: Vec<u64>,
        /// `precomputed`: write a Neuroglancer precomputed skeleton layer (a directory) from a
        /// skeletons table, an annotation collection from a point cloud (points) or connections
        /// table (lines). A precomputed skeleton layer or annotation collection as input (or a
        /// volume whose info names a skeleton layer) is read into a table without it.
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
        /// Context identifier of the table read from a precomputed skeleton layer.
        #[arg(long)]
        context: Option<String>,
        /// Space identifier of the table read from a precomputed skeleton layer.
        #[arg(long)]
        space: Option<String>,
        /// With --format precomputed: write a sharded layer (neuroglancer_uint64_sharded_v1,
        /// murmurhash3_x86_128, gzip).
        #[arg(long)]
        sharded: bool,
        /// With --format precomputed and a connections table: write the connections as
        /// `line` annotations (pre → post position, the default) or `point` annotations (at
        /// the post position).
        #[arg(long, value_name = "TYPE", value_parser = ["line", "point"])]
        annotation_type: Option<String>,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Add or recompute derived fields: child_ids, n_children, strahler for
    /// skeletons; src_fragment_id, tgt_fragment_id for connections.
    #[command(after_help = URL_FORMS)]
    Derive {
        /// Input table (a path or a URL).
        input: Location,
        /// Output path or URL.
        output: Location,
        /// Schema of the input (default: identified).
        #[arg(long)]
        schema: Option<String>,
        /// Skeleton/point-cloud tables the connections refer to (paths or URLs).
        #[arg(long, value_name = "TABLE")]
        samples: Vec<Location>,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Import SWC files (or directories of them) into a skeletons table using the
    /// net.clbarnes.swc extension: `from-swc IN.swc... OUT --context ID`.
    #[command(after_help = URL_FORMS)]
    FromSwc {
        /// SWC files or directories (paths or URLs; a URL not ending in .swc is a prefix whose
        /// .swc objects are read), then the output table.
        #[arg(required = true, num_args = 2.., value_name = "IN.swc... OUT")]
        paths: Vec<Location>,
        /// Context identifier (an IRI or UUID is recommended).
        #[arg(long)]
        context: String,
        /// Unit of the coordinates.
        #[arg(long, default_value = "micrometer")]
        unit: String,
        /// Space identifier.
        #[arg(long)]
        space: Option<String>,
        /// Fragment id of the (first) file; default: the file stem if numeric,
        /// else the file's position.
        #[arg(long)]
        fragment_id: Option<u64>,
        /// Write files that are not one tree (duplicate sample numbers, dangling parents,
        /// no root, cycles), with a note each, instead of refusing them. A file of several
        /// trees (several roots, nothing else wrong) needs no flag: each tree becomes a
        /// fragment of its own, every sample kept.
        #[arg(long)]
        allow_invalid: bool,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Export a skeletons table to SWC: OUT.swc for one fragment, else a
    /// directory of {fragment_id}.swc files.
    #[command(after_help = URL_FORMS)]
    ToSwc {
        /// Input skeletons table (a path or a URL).
        input: Location,
        /// Output .swc file or directory (a path or a URL).
        output: Location,
        /// Export only this fragment.
        #[arg(long)]
        fragment: Option<u64>,
    },
}

fn fail(e: &TableError) -> ExitCode {
    eprintln!("neurochunk table: {}", one_line(&e.to_string()));
    match e {
        TableError::Data { .. } => ExitCode::from(1),
        _ => ExitCode::from(2),
    }
}

fn one_line(s: &str) -> String {
    crate::output::with_overwrite_hint(&s.replace('\n', " "))
}

/// Runs a `table` subcommand; prints its own output and errors.
pub fn run(cmd: TableCommand) -> ExitCode {
    match cmd {
        TableCommand::Validate {
            paths,
            schema,
            strict,
            json,
            max_per_rule,
        } => {
            let opts = ValidateOptions {
                strict,
                schema,
                max_per_rule,
                ..ValidateOptions::default()
            };
            let opened = paths
                .iter()
                .map(|p| (PathBuf::from(p.display()), open_table(p)))
                .collect();
            let reports = match validate_results(opened, &opts) {
                Ok(r) => r,
                Err(e) => return fail(&e),
            };
            let mut code = 0u8;
            for r in &reports {
                if r.unreadable {
                    code = 2;
                } else if !r.is_valid() && code == 0 {
                    code = 1;
                }
                if json {
                    outln!("{}", r.to_json());
                    continue;
                }
                if r.unreadable {
                    for l in r.lines() {
                        eprintln!("{}", one_line(&l));
                    }
                    continue;
                }
                for l in r.lines() {
                    outln!("{}", one_line(&l));
                }
                outln!(
                    "{}: {} ({}, {} rows, {} error(s), {} warning(s))",
                    r.path.display(),
                    if r.is_valid() { "valid" } else { "invalid" },
                    r.schema.as_deref().unwrap_or("unknown schema"),
                    r.rows,
                    r.errors.len(),
                    r.warnings.len()
                );
            }
            ExitCode::from(code)
        }
        TableCommand::Info { path, json } => {
            match open_table(&path).and_then(|s| source_info(&s)) {
                Ok(i) => {
                    if json {
                        outln!("{}", i.to_json());
                    } else {
                        out!("{i}");
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        TableCommand::Convert {
            input,
            output,
            columns,
            fragments,
            format,
            context,
            space,
            sharded,
            annotation_type,
            out,
        } => {
            let skeletons = SkeletonArgs {
                format,
                context,
                space,
                sharded,
                annotation_type,
            };
            match crate::table_annotations::convert_annotations(&input, &output, &skeletons, &out) {
                Ok(Some(s)) => {
                    for n in &s.notes {
                        eprintln!("neurochunk table: note: {}", one_line(n));
                    }
                    outln!(
                        "{output}: {} {} annotation(s) ({} table), {} propert{}, {} relationship(s)",
                        s.annotations,
                        s.annotation_type.name(),
                        s.table.name(),
                        s.properties.len(),
                        if s.properties.len() == 1 { "y" } else { "ies" },
                        s.relationships.len()
                    );
                    return ExitCode::SUCCESS;
                }
                Ok(None) => {}
                Err(e) => return fail(&e),
            }
            if skeletons.annotation_type.is_some() {
                return fail(&TableError::Usage(
                    "--annotation-type is for connections tables written with --format \
                     precomputed"
                        .into(),
                ));
            }
            match convert_skeletons(&input, &output, &skeletons, &out) {
                Ok(Some(s)) => {
                    for n in &s.notes {
                        eprintln!("neurochunk table: note: {}", one_line(n));
                    }
                    outln!(
                        "{output}: {} vertices in {} segment(s), {} fragment(s)",
                        s.rows,
                        s.segments,
                        s.fragments
                    );
                    return ExitCode::SUCCESS;
                }
                Ok(None) => {}
                Err(e) => return fail(&e),
            }
            match convert(&input, &output, &columns, &fragments, &out) {
                Ok(rows) => {
                    outln!("{output}: {rows} rows written");
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        TableCommand::Derive {
            input,
            output,
            schema,
            samples,
            out,
        } => {
            let local_samples: Option<Vec<PathBuf>> = samples
                .iter()
                .map(|s| s.local().map(Path::to_path_buf))
                .collect();
            let result = match (input.local(), output.local(), local_samples) {
                (Some(input), Some(output), Some(samples)) => {
                    let opts = DeriveOptions {
                        schema,
                        samples,
                        write: out.options(),
                        batch_size: 0,
                    };
                    derive(input, output, &opts)
                }
                _ => {
                    let opts = DeriveOptions {
                        schema,
                        samples: Vec::new(),
                        write: out.options(),
                        batch_size: 0,
                    };
                    open_table(&input).and_then(|src| {
                        let samples = samples
                            .iter()
                            .map(open_table)
                            .collect::<Result<Vec<_>, _>>()?;
                        derive_to(&src, &samples, &table_target(&output)?, &opts)
                    })
                }
            };
            match result {
                Ok(s) => {
                    outln!(
                        "{}: {} rows, {} derived ({})",
                        output,
                        s.rows,
                        s.columns.join(", "),
                        s.schema
                    );
                    if s.unresolved > 0 {
                        eprintln!(
                            "neurochunk table: {} connection endpoint(s) refer to samples not found in --samples; their fragment ids are null",
                            s.unresolved
                        );
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        TableCommand::FromSwc {
            mut paths,
            context,
            unit,
            space,
            fragment_id,
            allow_invalid,
            out,
        } => {
            let Some(output) = paths.pop() else {
                eprintln!("neurochunk table: from-swc needs inputs and an output");
                return ExitCode::from(2);
            };
            let opts = SwcImportOptions {
                context,
                unit,
                space,
                fragment_id,
                allow_invalid,
            };
            let result = read_swc_inputs(&paths).and_then(|files| {
                import_swc_files(&files, &table_target(&output)?, &opts, &out.options())
            });
            match result {
                Ok(s) => {
                    for n in &s.notes {
                        eprintln!("neurochunk table: note: {}", one_line(n));
                    }
                    outln!(
                        "{}: {} samples in {} fragment(s)",
                        output,
                        s.rows,
                        s.fragments.len()
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            }
        }
        TableCommand::ToSwc {
            input,
            output,
            fragment,
        } => match to_swc(&input, &output, fragment) {
            Ok(files) => {
                for f in &files {
                    outln!("{f}");
                }
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        },
    }
}

/// The table at a path (a file or a Hive directory) or a URL
/// ([`TableSource::open_location`]).
pub(crate) fn open_table(location: &Location) -> Result<TableSource, TableError> {
    TableSource::open_location(location.store_location(), remote_options())
}

/// Where a table at a path or URL is written ([`TableTarget::at`]).
pub(crate) fn table_target(location: &Location) -> Result<TableTarget, TableError> {
    TableTarget::at(location.store_location(), remote_options())
}

/// The SWC files named by paths (files or directories of them) and URLs (an object ending in
/// `.swc`, else a prefix whose `.swc` objects are read, in name order), parsed.
fn read_swc_inputs(inputs: &[Location]) -> Result<Vec<(PathBuf, SwcFile)>, TableError> {
    let mut files = Vec::new();
    for input in inputs {
        if let Some(path) = input.local() {
            files.extend(read_swc_files(&[path.to_path_buf()])?);
            continue;
        }
        let name = input.display();
        let (store, key) = input.open_parts().map_err(|e| TableError::Usage(e.0))?;
        let failed = |e| TableError::store(&name, e);
        let is_swc = |k: &str| {
            k.rsplit_once('.')
                .is_some_and(|(stem, ext)| !stem.is_empty() && ext.eq_ignore_ascii_case("swc"))
        };
        let keys: Vec<String> = if is_swc(&key) {
            vec![key.clone()]
        } else {
            let listing = store.list_dir(&key).map_err(failed)?;
            let mut keys: Vec<String> = listing
                .keys
                .iter()
                .filter(|k| is_swc(k))
                .map(|k| join_key(&key, k))
                .collect();
            keys.sort();
            if keys.is_empty() {
                return Err(TableError::format(Path::new(&name), "holds no .swc files"));
            }
            keys
        };
        for k in keys {
            let url = PathBuf::from(input.display_key(&k));
            let bytes = store
                .get(&k)
                .map_err(|e| TableError::store(&url, e))?
                .ok_or_else(|| TableError::format(&url, "no such SWC file"))?;
            let parsed = parse_swc_bytes(bytes.to_vec(), &url)?;
            files.push((url, parsed));
        }
    }
    Ok(files)
}

/// Writes `input`'s fragments as SWC to a path or URL; the files (keys as URLs) written.
fn to_swc(
    input: &Location,
    output: &Location,
    fragment: Option<u64>,
) -> Result<Vec<String>, TableError> {
    let src = open_table(input)?;
    if let Some(path) = output.local() {
        let written = export_swc_from(&src, path, fragment)?;
        return Ok(written.iter().map(|p| p.display().to_string()).collect());
    }
    let (store, key) = output.open_parts().map_err(|e| TableError::Usage(e.0))?;
    let keys = export_swc_to_store(&src, store.as_ref(), &key, &output.display(), fragment)?;
    Ok(keys.iter().map(|k| output.display_key(k)).collect())
}

/// The precomputed skeleton and annotation options of `table convert`.
pub(crate) struct SkeletonArgs {
    pub(crate) format: Option<String>,
    pub(crate) context: Option<String>,
    pub(crate) space: Option<String>,
    pub(crate) sharded: bool,
    pub(crate) annotation_type: Option<String>,
}

/// Whether the location holds a precomputed skeleton layer, or a volume naming one.
fn is_skeleton_layer(store: &dyn neurochunk_store::Store, key: &str) -> bool {
    let Ok(Some(bytes)) = store.get(&join_key(key, "info")) else {
        return false;
    };
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
        return false;
    };
    doc.get("@type").and_then(|t| t.as_str()) == Some(SKELETON_TYPE)
        || doc.get("skeletons").is_some_and(|s| s.is_string())
}

/// `table convert` between a skeletons table and a precomputed skeleton layer: `None` when
/// neither side is one (an ordinary table conversion).
fn convert_skeletons(
    input: &Location,
    output: &Location,
    args: &SkeletonArgs,
    out: &OutputArgs,
) -> Result<Option<PrecomputedSummary>, TableError> {
    match args.format.as_deref() {
        Some("precomputed") => {
            let src = open_table(input)?;
            let (store, key, staged) = staged_layer(output, out)?;
            let sharding = if args.sharded {
                Some(default_sharding(count_segments(&src)?))
            } else {
                None
            };
            let opts = PrecomputedExportOptions { sharding };
            let summary = export_precomputed(&src, store, &key, &output.display(), &opts)?;
            publish_layer(staged, output)?;
            return Ok(Some(summary));
        }
        Some(other) => {
            return Err(TableError::Usage(format!(
                "--format {other:?}: only \"precomputed\" is known (a table's format comes from \
                 the output's extension)"
            )))
        }
        None => {}
    }
    // Table files (and, remotely, objects named like them) are no layers: no request for an
    // `info` beside them.
    let name = input.file_name().to_ascii_lowercase();
    let table_file = [".parquet", ".arrow", ".feather", ".ipc"]
        .iter()
        .any(|ext| name.ends_with(ext));
    let plain = || {
        if args.sharded {
            return Err(TableError::Usage(
                "--sharded needs --format precomputed".into(),
            ));
        }
        if args.context.is_some() || args.space.is_some() {
            return Err(TableError::Usage(format!(
                "{input} is no precomputed skeleton layer: --context and --space are for those \
                 (a table keeps its own)"
            )));
        }
        Ok(None)
    };
    if table_file || input.local().is_some_and(|p| !p.is_dir()) {
        return plain();
    }
    let Ok((store, key)) = input.open_parts() else {
        return plain();
    };
    if !is_skeleton_layer(store.as_ref(), &key) {
        return plain();
    }
    let layer = SkeletonLayer::open(store, &key)
        .map_err(|e| TableError::data(input.display(), e.to_string()))?;
    let opts = PrecomputedImportOptions {
        context: args.context.clone().ok_or_else(|| {
            TableError::Usage(format!(
                "{input} is a precomputed skeleton layer: a context identifier is required \
                 (--context)"
            ))
        })?,
        space: args.space.clone(),
    };
    import_precomputed(
        &layer,
        &input.display(),
        &table_target(output)?,
        &opts,
        &out.options(),
    )
    .map(Some)
}

/// What a precomputed skeleton layer or annotation collection written by `table convert`
/// holds: its `info`, segment files, shards (`*.shard`, `.gz` files), and an annotation
/// collection's index directories (`by_id`, `rel_*`, `spatial*`). An existing output holding
/// nothing else is replaced without `--overwrite`.
#[derive(Debug)]
pub(crate) struct PrecomputedLayerTree;

impl TreeKind for PrecomputedLayerTree {
    fn name(&self) -> &'static str {
        "a precomputed skeleton layer or annotation collection"
    }

    fn is_anchor(&self, file_name: &str) -> bool {
        file_name == "info"
    }

    fn owns(&self, rest: &[&str], anchored: bool) -> bool {
        let file = |name: &str| {
            let stem = name
                .strip_suffix(".gz")
                .or_else(|| name.strip_suffix(".shard"))
                .unwrap_or(name);
            name == "info" || (!stem.is_empty() && stem.bytes().all(|b| b.is_ascii_hexdigit()))
        };
        let index_dir = |d: &str| d == "by_id" || d.starts_with("rel_") || d.starts_with("spatial");
        anchored
            && match rest {
                [name] => file(name),
                [dir, name] => {
                    index_dir(dir)
                        && (file(name) || name.bytes().all(|b| b.is_ascii_digit() || b == b'_'))
                }
                _ => false,
            }
    }
}

/// The store a layer is written into, the layer's key in it, and the staging directory to
/// publish (local outputs).
pub(crate) type StagedLayer = (Arc<dyn neurochunk_store::Store>, String, Option<StagedDir>);

/// Where a new precomputed layer at `output` is written: for a local path a store over a
/// staging directory beside it (published by [`publish_layer`] once complete, so a failed
/// conversion leaves the destination as it was), for a URL its prefix, emptied first. An
/// existing destination is replaced only when it holds such a layer ([`PrecomputedLayerTree`])
/// or with `--overwrite`.
pub(crate) fn staged_layer(output: &Location, out: &OutputArgs) -> Result<StagedLayer, TableError> {
    let policy = out.replace.policy();
    match output.local() {
        Some(path) => {
            let real = resolve_target(path, path).map_err(|e| TableError::store(path, e))?;
            if let Some(parent) = real.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| TableError::io(parent, e))?;
            }
            let durability = if out.fsync {
                Durability::Fsync
            } else {
                Durability::Buffered
            };
            let staged = StagedDir::replacing(&real, &PrecomputedLayerTree, policy)
                .map_err(|e| TableError::replace(path, e))?
                .with_durability(durability);
            let store: Arc<dyn neurochunk_store::Store> =
                Arc::new(FsStore::new(staged.path()).with_durability(durability));
            Ok((store, String::new(), Some(staged)))
        }
        None => {
            let store = output
                .open_remote_replace(&PrecomputedLayerTree, policy)
                .map_err(|e| TableError::Usage(e.0))?;
            Ok((store, String::new(), None))
        }
    }
}

/// Puts a staged layer in place ([`staged_layer`]).
pub(crate) fn publish_layer(
    staged: Option<StagedDir>,
    output: &Location,
) -> Result<(), TableError> {
    if let Some(staged) = staged {
        staged
            .publish()
            .map_err(|e| TableError::data(output.display(), e.to_string()))?;
    }
    Ok(())
}

/// The number of segments (distinct fragment ids) of a table, to size its shards.
fn count_segments(src: &TableSource) -> Result<u64, TableError> {
    let mut ids = std::collections::BTreeSet::new();
    for b in src.batches_projected(&["fragment_id".to_string()], 1 << 16)? {
        let b = b?;
        let col = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::UInt64)
            .map_err(|e| TableError::arrow(src.path(), e))?;
        if let Some(a) = col.as_any().downcast_ref::<arrow::array::UInt64Array>() {
            ids.extend(a.iter().flatten());
        }
    }
    Ok(ids.len() as u64)
}

/// Streams `input` into `output` (format from the extension or --partition-by).
fn convert(
    input: &Location,
    output: &Location,
    columns: &[String],
    fragments: &[u64],
    out: &OutputArgs,
) -> Result<u64, TableError> {
    let src = open_table(input)?;
    let schema = src.schema();
    let columns: Vec<String> = if columns.is_empty() {
        schema.fields().iter().map(|f| f.name().clone()).collect()
    } else {
        columns.iter().map(|c| c.trim().to_string()).collect()
    };
    let mut fields = Vec::with_capacity(columns.len());
    for c in &columns {
        let field = schema.field_with_name(c).map_err(|_| {
            TableError::Usage(format!("{input}: no column {c:?} in the table (--columns)"))
        })?;
        fields.push(field.clone());
    }
    let out_schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    let filter = (!fragments.is_empty()).then(|| RowFilter {
        column: "fragment_id".into(),
        values: fragments.to_vec(),
    });
    let mut opts = out.options();
    let output_name = PathBuf::from(output.file_name());
    output_format(output.local().unwrap_or(&output_name), &opts)?;
    if opts.file_infix.is_none() {
        let registry = Registry::standard();
        let name = input.file_name();
        let from_name = registry.from_file_name(&name).map(|d| d.name.clone());
        let schema = src.schema();
        let from_cols = registry
            .from_columns(schema.fields().iter().map(|f| f.name().as_str()))
            .map(|d| d.name.clone());
        opts.file_infix = from_name.or(from_cols);
    }
    if src.format() == Format::Hive
        && opts.partition_by.is_none()
        && output.local().is_some_and(Path::is_dir)
    {
        return Err(TableError::Usage(format!(
            "{output}: output is a directory; pass --partition-by to write a Hive table"
        )));
    }
    let mut w = table_target(output)?.create(out_schema, &opts)?;
    let batches = src.batches_filtered(
        &columns,
        filter.as_ref(),
        neurochunk_table::io::DEFAULT_BATCH_SIZE,
    )?;
    for b in batches {
        w.write(&b?)?;
    }
    w.finish()
}
