//! The demo behind `neurochunk demo`: writes a skeletons table and a connections
//! table of one context, derives their fields, validates them together and
//! returns a printable summary.

use crate::derive::skeleton_derived_arrays;
use crate::error::{Result, TableError};
use crate::info::source_info;
use crate::io::{TableSource, TableTarget, WriteOptions};
use crate::synth::{canonical_schema, mix, SkeletonSynth};
use crate::tree::{build_tree, FragmentInterner, IdIndex, TreeInput};
use crate::validate::{validate_sources, ValidateOptions};
use arrow::array::{ArrayRef, DictionaryArray, RecordBatch, StringArray, UInt16Array, UInt64Array};
use arrow::datatypes::SchemaRef;
use arrow::datatypes::UInt16Type;
use neurochunk_store::{join_key, Store};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

/// Writes `batches` to `target`.
fn write_all_to(
    target: &TableTarget,
    schema: SchemaRef,
    batches: &[RecordBatch],
    options: &WriteOptions,
) -> Result<u64> {
    let mut w = target.create(schema, options)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

/// Writes `demo.skeletons.parquet` and `demo.connections.parquet` into `dir`,
/// validates them as one dataset and returns a summary.
pub fn demo(dir: &Path) -> Result<String> {
    demo_with(dir, &WriteOptions::default())
}

/// [`demo`], writing the tables with `options` (e.g. their durability).
pub fn demo_with(dir: &Path, options: &WriteOptions) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| TableError::io(dir, e))?;
    demo_to(
        &|file| TableTarget::Path(dir.join(file)),
        &|target| match target {
            TableTarget::Path(path) => TableSource::open(path),
            TableTarget::Store { store, key, name } => {
                TableSource::open_store_named(store.clone(), key, name)
            }
        },
        &dir.display().to_string(),
        options,
    )
}

/// [`demo`] into the prefix `prefix` of `store` (e.g. an object storage bucket), the tables
/// named `{name}/{file}` in the summary and in errors.
pub fn demo_in_store(
    store: Arc<dyn Store>,
    prefix: &str,
    name: &str,
    options: &WriteOptions,
) -> Result<String> {
    let prefix = prefix.trim_matches('/');
    let name = name.trim_end_matches('/');
    demo_to(
        &|file| TableTarget::Store {
            store: store.clone(),
            key: join_key(prefix, file),
            name: format!("{name}/{file}"),
        },
        &|target| match target {
            TableTarget::Path(path) => TableSource::open(path),
            TableTarget::Store { store, key, name } => {
                TableSource::open_store_named(store.clone(), key, name)
            }
        },
        name,
        options,
    )
}

/// The demo: `target(file)` says where each table goes, `open` opens it again.
fn demo_to(
    target: &dyn Fn(&str) -> TableTarget,
    open: &dyn Fn(&TableTarget) -> Result<TableSource>,
    dir_name: &str,
    options: &WriteOptions,
) -> Result<String> {
    let context = "urn:uuid:00000000-0000-4000-8000-00000000d3e0";
    // Skeletons: 3 neurons of 400 samples, with derived fields.
    let synth = SkeletonSynth::new(1200, 3, 1200, 1, context);
    let base = synth.schema();
    let batch = SkeletonSynth::new(1200, 3, 1200, 1, context)
        .next()
        .ok_or_else(|| TableError::Usage("demo generator produced nothing".into()))?;
    let ids: Vec<u64> = (1..=1200).collect();
    let mut fi = FragmentInterner::default();
    let frag_rows: Vec<u32> = (0..1200u64).map(|r| fi.intern(r / 400)).collect();
    let mut parents = vec![0u64; 1200];
    let mut valid = vec![false; 1200];
    for r in 0..1200u64 {
        if let Some(p) = synth.parent_of(r) {
            parents[r as usize] = p + 1;
            valid[r as usize] = true;
        }
    }
    let (index, _) = IdIndex::build(&ids);
    let (tree, _) = build_tree(
        &TreeInput {
            ids: &ids,
            parents: &parents,
            parent_valid: &valid,
            fragments: &frag_rows,
            fragment_ids: &fi.ids,
        },
        &index,
    );
    let mut md: Vec<(&str, &str)> = base
        .metadata()
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    md.push(("space", "https://example.org/space/demo"));
    md.push(("frag:0:name", "demo neuron A"));
    md.push(("frag:1:name", "demo neuron B"));
    md.push(("frag:2:name", "demo neuron C"));
    let skel_schema = canonical_schema(
        "skeletons",
        &["radius", "child_ids", "n_children", "strahler"],
        &md,
    );
    let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
    cols.extend(skeleton_derived_arrays(&ids, &tree, 0, 1200));
    let skel = RecordBatch::try_new(skel_schema.clone(), cols)
        .map_err(|e| TableError::Usage(format!("demo skeleton: {e}")))?;
    let skel_target = target("demo.skeletons.parquet");
    write_all_to(&skel_target, skel_schema, &[skel], options)?;

    // Connections: 150 synapses and a few gap junctions between the neurons.
    let n = 160usize;
    let mut cid = Vec::with_capacity(n);
    let (mut src, mut tgt, mut sf, mut tf, mut ty) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..n as u64 {
        let a = mix(i) % 1200;
        let mut b = mix(i + 7777) % 1200;
        if a / 400 == b / 400 {
            b = (b + 400) % 1200;
        }
        cid.push(i + 1);
        src.push(a + 1);
        tgt.push(b + 1);
        sf.push(Some(a / 400));
        tf.push(Some(b / 400));
        ty.push(if i % 16 == 15 { 1u16 } else { 0 });
    }
    let types = DictionaryArray::<UInt16Type>::try_new(
        UInt16Array::from(ty),
        Arc::new(StringArray::from(vec!["synapse", "gap_junction"])),
    )
    .map_err(|e| TableError::Usage(format!("demo connections: {e}")))?;
    let conn_schema = canonical_schema(
        "connections",
        &["src_fragment_id", "tgt_fragment_id"],
        &[("version", crate::SPEC_VERSION), ("context", context)],
    );
    let conn = RecordBatch::try_new(
        conn_schema.clone(),
        vec![
            Arc::new(UInt64Array::from(cid)),
            Arc::new(UInt64Array::from(src)),
            Arc::new(UInt64Array::from(tgt)),
            Arc::new(types),
            Arc::new(UInt64Array::from(sf)),
            Arc::new(UInt64Array::from(tf)),
        ],
    )
    .map_err(|e| TableError::Usage(format!("demo connections: {e}")))?;
    let conn_target = target("demo.connections.parquet");
    write_all_to(&conn_target, conn_schema, &[conn], options)?;

    let sources = vec![open(&skel_target)?, open(&conn_target)?];
    let reports = validate_sources(&sources, &ValidateOptions::default())?;
    let mut out = String::new();
    let _ = writeln!(out, "neurarrow tables (context {context}):");
    for (src, r) in sources.iter().zip(&reports) {
        let p = src.path();
        let info = source_info(src)?;
        let frags = info
            .fragments
            .as_ref()
            .map(|f| format!(", {} fragments", f.len()))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}: {} rows, schema {}{frags}, {}, {} error(s), {} warning(s)",
            p.display(),
            info.rows,
            info.schema.as_deref().unwrap_or("?"),
            if r.is_valid() { "valid" } else { "INVALID" },
            r.errors.len(),
            r.warnings.len()
        );
        for l in r.lines() {
            let _ = writeln!(out, "    {l}");
        }
    }
    if reports.iter().any(|r| !r.is_valid()) {
        return Err(TableError::data(
            dir_name,
            format!("demo tables failed validation:\n{out}"),
        ));
    }
    Ok(out)
}
