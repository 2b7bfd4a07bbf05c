//! The demo behind `neurochunk demo`: writes a skeletons table and a connections
//! table of one context, derives their fields, validates them together and
//! returns a printable summary.

use crate::derive::skeleton_derived_arrays;
use crate::error::{Result, TableError};
use crate::info::table_info;
use crate::io::{write_all, WriteOptions};
use crate::synth::{canonical_schema, mix, SkeletonSynth};
use crate::tree::{build_tree, FragmentInterner, IdIndex, TreeInput};
use crate::validate::{validate_paths, ValidateOptions};
use arrow::array::{ArrayRef, DictionaryArray, RecordBatch, StringArray, UInt16Array, UInt64Array};
use arrow::datatypes::UInt16Type;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Writes `demo.skeletons.parquet` and `demo.connections.parquet` into `dir`,
/// validates them as one dataset and returns a summary.
pub fn demo(dir: &Path) -> Result<String> {
    demo_with(dir, &WriteOptions::default())
}

/// [`demo`], writing the tables with `options` (e.g. their durability).
pub fn demo_with(dir: &Path, options: &WriteOptions) -> Result<String> {
    std::fs::create_dir_all(dir).map_err(|e| TableError::io(dir, e))?;
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
    let skel_path = dir.join("demo.skeletons.parquet");
    write_all(&skel_path, skel_schema, &[skel], options)?;

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
    let conn_path = dir.join("demo.connections.parquet");
    write_all(&conn_path, conn_schema, &[conn], options)?;

    let paths: Vec<PathBuf> = vec![skel_path.clone(), conn_path.clone()];
    let reports = validate_paths(&paths, &ValidateOptions::default())?;
    let mut out = String::new();
    let _ = writeln!(out, "neurarrow tables (context {context}):");
    for (p, r) in paths.iter().zip(&reports) {
        let info = table_info(p)?;
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
            dir,
            format!("demo tables failed validation:\n{out}"),
        ));
    }
    Ok(out)
}
