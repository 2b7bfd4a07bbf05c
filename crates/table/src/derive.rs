//! Derived fields: `child_ids`, `n_children` and `strahler` for skeletons, and
//! `src_fragment_id` / `tgt_fragment_id` for connections.
//!
//! Derivation streams twice: a first pass reads only the id columns to build the
//! tree (or the sample → fragment lookup), the second streams every column,
//! drops stale derived columns and appends freshly computed ones, batch by batch.

use crate::error::{Result, TableError};
use crate::io::{TableSource, TableTarget, TableWriter, WriteOptions, DEFAULT_BATCH_SIZE};
use crate::schema::{Registry, TypeSpec};
use crate::tree::{build_forest, resolve_parents, FragmentInterner, IdIndex, Tree, TreeProblems};
use crate::validate::identify;
use arrow::array::{Array, ArrayRef, AsArray, ListArray, RecordBatch, UInt32Array, UInt64Array};
use arrow::buffer::{OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type, Schema, SchemaRef, UInt64Type};
use neurochunk_store::Store;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Names of the skeleton derived fields.
pub const SKELETON_DERIVED: [&str; 3] = ["child_ids", "n_children", "strahler"];
/// Names of the connection derived fields.
pub const CONNECTION_DERIVED: [&str; 2] = ["src_fragment_id", "tgt_fragment_id"];

/// Options for [`derive()`].
#[derive(Debug, Clone, Default)]
pub struct DeriveOptions {
    /// Force a schema (else identified like the validator does).
    pub schema: Option<String>,
    /// Tables holding the samples connections refer to (connections only).
    pub samples: Vec<PathBuf>,
    /// Output options.
    pub write: WriteOptions,
    /// Rows per batch (0 = default).
    pub batch_size: usize,
}

/// What [`derive()`] did.
#[derive(Debug, Clone)]
pub struct DeriveSummary {
    /// Schema the table was treated as.
    pub schema: String,
    /// Rows written.
    pub rows: u64,
    /// Derived columns written.
    pub columns: Vec<String>,
    /// Connection endpoints whose sample was not found (fragment left null).
    pub unresolved: u64,
}

/// Reads a u64 column (accepting int64 by bit reinterpretation).
pub(crate) fn u64_column(path: &Path, batch: &RecordBatch, name: &str) -> Result<UInt64Array> {
    let col = batch
        .column_by_name(name)
        .ok_or_else(|| TableError::data(path, format!("missing column {name:?}")))?;
    if let Some(a) = col.as_primitive_opt::<UInt64Type>() {
        return Ok(a.clone());
    }
    if let Some(a) = col.as_primitive_opt::<Int64Type>() {
        let v: ScalarBuffer<u64> = a.values().iter().map(|&x| x as u64).collect();
        return Ok(UInt64Array::new(v, a.nulls().cloned()));
    }
    Err(TableError::data(
        path,
        format!("column {name:?} is {}, expected uint64", col.data_type()),
    ))
}

/// The id columns of a skeleton table, read in one projected pass.
pub struct SkeletonIds {
    /// `sample_id` per row.
    pub ids: Vec<u64>,
    /// `parent_id` per row.
    pub parents: Vec<u64>,
    /// `parent_id` validity per row.
    pub parent_valid: Vec<bool>,
    /// Fragment index per row.
    pub frag_rows: Vec<u32>,
    /// Distinct fragment ids.
    pub fragments: FragmentInterner,
}

/// Reads `sample_id`, `parent_id` and `fragment_id` of a skeleton table.
pub fn read_skeleton_ids(src: &TableSource, batch_size: usize) -> Result<SkeletonIds> {
    let cols: Vec<String> = ["sample_id", "parent_id", "fragment_id"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let n = src
        .known_rows()
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or(0);
    let mut out = SkeletonIds {
        ids: Vec::with_capacity(n),
        parents: Vec::with_capacity(n),
        parent_valid: Vec::with_capacity(n),
        frag_rows: Vec::with_capacity(n),
        fragments: FragmentInterner::default(),
    };
    for b in src.batches_projected(&cols, batch_size)? {
        let b = b?;
        let path = src.path();
        let ids = u64_column(path, &b, "sample_id")?;
        let parents = u64_column(path, &b, "parent_id")?;
        let frags = u64_column(path, &b, "fragment_id")?;
        if ids.null_count() > 0 || frags.null_count() > 0 {
            return Err(TableError::data(path, "null sample_id or fragment_id"));
        }
        out.ids.extend_from_slice(ids.values());
        out.parents.extend_from_slice(parents.values());
        match parents.nulls() {
            Some(n) => out.parent_valid.extend(n.iter()),
            None => out
                .parent_valid
                .extend(std::iter::repeat_n(true, parents.len())),
        }
        let fr = &mut out.fragments;
        out.frag_rows
            .extend(frags.values().iter().map(|&f| fr.intern(f)));
    }
    if out.ids.len() >= u32::MAX as usize - 2 {
        return Err(TableError::data(
            src.path(),
            "more than 4 billion rows are not supported",
        ));
    }
    Ok(out)
}

fn describe_problems(p: &TreeProblems) -> String {
    let names = [
        "missing parents",
        "self-parents",
        "cross-fragment parents",
        "fragments without exactly one root",
        "cycles",
    ];
    p.counts
        .iter()
        .zip(names)
        .filter(|(c, _)| **c > 0)
        .map(|(c, n)| format!("{c} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds the tree of a skeleton table; fails when it is not a valid forest.
pub fn skeleton_tree(src: &TableSource, batch_size: usize) -> Result<(Vec<u64>, Tree)> {
    let s = read_skeleton_ids(src, batch_size)?;
    let (index, dups) = IdIndex::build(&s.ids);
    if let Some(d) = dups.first() {
        return Err(TableError::data(
            src.path(),
            format!(
                "cannot derive fields: sample_id {} is duplicated ({} duplicates)",
                d.id,
                dups.len()
            ),
        ));
    }
    let SkeletonIds {
        ids,
        parents,
        parent_valid,
        frag_rows,
        fragments,
    } = s;
    let (parent_row, problems) = resolve_parents(&ids, &parents, &parent_valid, &index);
    drop((parents, parent_valid, index));
    let (tree, problems) = build_forest(parent_row, &frag_rows, &fragments.ids, problems);
    if !problems.is_clean() {
        return Err(TableError::data(
            src.path(),
            format!(
                "cannot derive fields: the skeleton is not a forest ({}); run `neurochunk table validate`",
                describe_problems(&problems)
            ),
        ));
    }
    Ok((ids, tree))
}

/// Builds the derived skeleton columns for rows `start..start + len`.
pub fn skeleton_derived_arrays(
    ids: &[u64],
    tree: &Tree,
    start: usize,
    len: usize,
) -> [ArrayRef; 3] {
    let mut offsets: Vec<i32> = Vec::with_capacity(len + 1);
    offsets.push(0);
    let end_child = tree.child_offsets[start + len] as usize;
    let begin_child = tree.child_offsets[start] as usize;
    let mut values: Vec<u64> = Vec::with_capacity(end_child - begin_child);
    let mut counts: Vec<u32> = Vec::with_capacity(len);
    for row in start..start + len {
        let kids = tree.children_of(row);
        let from = values.len();
        values.extend(kids.iter().map(|&k| ids[k as usize]));
        if kids.len() > 1 {
            values[from..].sort_unstable();
        }
        offsets.push(values.len() as i32);
        counts.push(kids.len() as u32);
    }
    let item = Arc::new(Field::new("item", DataType::UInt64, true));
    let list = ListArray::new(
        item,
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(UInt64Array::from(values)),
        None,
    );
    let strahler = UInt32Array::from(tree.strahler[start..start + len].to_vec());
    [
        Arc::new(list),
        Arc::new(UInt32Array::from(counts)),
        Arc::new(strahler),
    ]
}

fn output_schema(input: &Schema, drop: &[&str], add: &[Field]) -> SchemaRef {
    let mut fields: Vec<FieldRef> = input
        .fields()
        .iter()
        .filter(|f| !drop.contains(&f.name().as_str()))
        .cloned()
        .collect();
    fields.extend(add.iter().map(|f| Arc::new(f.clone())));
    Arc::new(Schema::new_with_metadata(fields, input.metadata().clone()))
}

/// The sample tables of a connections table: paths opened when needed, or opened tables.
enum Samples<'a> {
    Paths(&'a [PathBuf]),
    Sources(&'a [TableSource]),
}

/// Where the derived table is written.
enum Output<'a> {
    Path(&'a Path),
    Store(Arc<dyn Store>, &'a str),
    Target(&'a TableTarget),
}

impl Output<'_> {
    fn create(&self, schema: SchemaRef, opts: &WriteOptions) -> Result<TableWriter> {
        match self {
            Output::Path(p) => TableWriter::create(p, schema, opts),
            Output::Store(store, key) => TableWriter::create_in(store.clone(), key, schema, opts),
            Output::Target(target) => target.create(schema, opts),
        }
    }
}

/// Adds (or recomputes) the derived fields of a skeletons or connections table.
pub fn derive(input: &Path, output: &Path, opts: &DeriveOptions) -> Result<DeriveSummary> {
    let src = TableSource::open(input)?;
    derive_with(
        &src,
        Samples::Paths(&opts.samples),
        Output::Path(output),
        opts,
    )
}

/// Like [`derive()`], for opened tables and a store: derives the fields of `src` (for
/// connections, from the sample tables `samples`; `opts.samples` is not used) and writes
/// the result at `key` of `store` (see [`TableWriter::create_in`]).
pub fn derive_source(
    src: &TableSource,
    samples: &[TableSource],
    store: Arc<dyn Store>,
    key: &str,
    opts: &DeriveOptions,
) -> Result<DeriveSummary> {
    derive_with(
        src,
        Samples::Sources(samples),
        Output::Store(store, key),
        opts,
    )
}

/// Like [`derive_source`], writing to `target` (a path or a store key with its name).
pub fn derive_to(
    src: &TableSource,
    samples: &[TableSource],
    target: &TableTarget,
    opts: &DeriveOptions,
) -> Result<DeriveSummary> {
    derive_with(src, Samples::Sources(samples), Output::Target(target), opts)
}

fn derive_with(
    src: &TableSource,
    samples: Samples<'_>,
    output: Output<'_>,
    opts: &DeriveOptions,
) -> Result<DeriveSummary> {
    let input = src.path();
    let registry = Registry::standard();
    let (schema, _) = identify(&registry, opts.schema.as_deref(), src)
        .ok_or_else(|| TableError::data(input, "cannot identify the schema; pass --schema"))?;
    let bs = if opts.batch_size == 0 {
        DEFAULT_BATCH_SIZE
    } else {
        opts.batch_size
    };
    let in_schema = src.schema();
    let keep: Vec<String>;
    let mut write_opts = opts.write.clone();
    if write_opts.file_infix.is_none() {
        write_opts.file_infix = Some(schema.name.clone());
    }
    if schema.is_a("skeletons") {
        let (ids, tree) = skeleton_tree(src, bs)?;
        let spec = registry
            .effective("skeletons")
            .map_err(|e| TableError::Usage(e.to_string()))?;
        let add: Vec<Field> = SKELETON_DERIVED
            .iter()
            .filter_map(|n| spec.field(n).map(|f| f.arrow_field()))
            .collect();
        let out_schema = output_schema(&in_schema, &SKELETON_DERIVED, &add);
        keep = in_schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| !SKELETON_DERIVED.contains(&n.as_str()))
            .collect();
        let mut w = output.create(out_schema.clone(), &write_opts)?;
        let mut offset = 0usize;
        for b in src.batches_projected(&keep, bs)? {
            let b = b?;
            let n = b.num_rows();
            if offset + n > tree.len() {
                return Err(TableError::data(
                    input,
                    "the table changed while it was being read",
                ));
            }
            let mut cols: Vec<ArrayRef> = b.columns().to_vec();
            cols.extend(skeleton_derived_arrays(&ids, &tree, offset, n));
            let batch = RecordBatch::try_new(out_schema.clone(), cols)
                .map_err(|e| TableError::arrow(input, e))?;
            w.write(&batch)?;
            offset += n;
        }
        let rows = w.finish()?;
        return Ok(DeriveSummary {
            schema: schema.name,
            rows,
            columns: SKELETON_DERIVED.iter().map(|s| s.to_string()).collect(),
            unresolved: 0,
        });
    }
    if schema.is_a("connections") {
        let no_samples = match samples {
            Samples::Paths(p) => p.is_empty(),
            Samples::Sources(s) => s.is_empty(),
        };
        if no_samples {
            return Err(TableError::Usage(
                "deriving src/tgt_fragment_id needs the skeleton (or point cloud) tables: pass --samples PATH".into(),
            ));
        }
        let mut ids: Vec<u64> = Vec::new();
        let mut frags: Vec<u64> = Vec::new();
        let cols = vec!["sample_id".to_string(), "fragment_id".to_string()];
        let mut read_samples = |s: &TableSource| -> Result<()> {
            for b in s.batches_projected(&cols, bs)? {
                let b = b?;
                ids.extend_from_slice(u64_column(s.path(), &b, "sample_id")?.values());
                frags.extend_from_slice(u64_column(s.path(), &b, "fragment_id")?.values());
            }
            Ok(())
        };
        match samples {
            Samples::Paths(paths) => {
                for p in paths {
                    read_samples(&TableSource::open(p)?)?;
                }
            }
            Samples::Sources(sources) => sources.iter().try_for_each(read_samples)?,
        }
        let (index, _) = IdIndex::build(&ids);
        let add: Vec<Field> = CONNECTION_DERIVED
            .iter()
            .map(|n| Field::new(*n, TypeSpec::UInt64.data_type(), true))
            .collect();
        let out_schema = output_schema(&in_schema, &CONNECTION_DERIVED, &add);
        keep = in_schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| !CONNECTION_DERIVED.contains(&n.as_str()))
            .collect();
        let mut w = output.create(out_schema.clone(), &write_opts)?;
        let mut unresolved = 0u64;
        for b in src.batches_projected(&keep, bs)? {
            let b = b?;
            let mut cols: Vec<ArrayRef> = b.columns().to_vec();
            for end in ["src_sample_id", "tgt_sample_id"] {
                let s = u64_column(input, &b, end)?;
                let out: UInt64Array = s
                    .iter()
                    .map(|v| {
                        let r = v
                            .and_then(|v| index.get(&ids, v))
                            .map(|r| frags[r as usize]);
                        if r.is_none() {
                            unresolved += 1;
                        }
                        r
                    })
                    .collect();
                cols.push(Arc::new(out));
            }
            let batch = RecordBatch::try_new(out_schema.clone(), cols)
                .map_err(|e| TableError::arrow(input, e))?;
            w.write(&batch)?;
        }
        let rows = w.finish()?;
        return Ok(DeriveSummary {
            schema: schema.name,
            rows,
            columns: CONNECTION_DERIVED.iter().map(|s| s.to_string()).collect(),
            unresolved,
        });
    }
    Err(TableError::Usage(format!(
        "{}: {:?} tables have no derived fields (skeletons and connections do)",
        input.display(),
        schema.name
    )))
}
