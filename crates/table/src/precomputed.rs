//! Neuroglancer precomputed skeleton layers to and from neurarrow skeleton tables.
//!
//! Import ([`skeletons_to_batch`], [`import_precomputed`]): one row per vertex. A segment's
//! edges become parent pointers: when every vertex is the first member of at most one edge and
//! following those edges never loops, each edge is read as (child, parent), which is how
//! [`export_precomputed`] and cloud-volume's SWC import write them; otherwise each connected
//! part is rooted at its lowest vertex index and walked breadth first. A segment whose edges
//! hold a cycle (or an edge from a vertex to itself) is an error naming the layer and segment.
//! A segment of several trees becomes one fragment per tree, as `from-swc` does for a forest:
//! the tree of the lowest root keeps the segment id, the others take ids after every
//! segment's, each with `frag:{id}:name` and `frag:{id}:segment_id`. Positions have the
//! `transform` applied (nanometres, `unit` = `nanometer`); sample ids number the vertices of
//! all segments in turn (segment order, then vertex index). A single-component `radius`
//! attribute becomes the `radius` column (NaN and negative values null); every other attribute
//! becomes `attr:{id}` (or `attr:{id}:{component}`) in its own Arrow type. The layer's `info`
//! is kept in the metadata key `attr:precomputed:info`.
//!
//! Export ([`export_precomputed`]): one skeleton per segment (`frag:{id}:segment_id`, else the
//! fragment id), its vertices the segment's rows in `sample_id` order, one edge (child,
//! parent) per row with a parent. Coordinates and radii are converted from the table's unit to
//! nanometres and stored with the identity transform; the vertex attributes are those of
//! `attr:precomputed:info` when the table has their columns, else `radius` and every
//! `attr:{id}` column of a precomputed attribute type.

use crate::error::{Result, TableError};
use crate::io::{TableSource, TableTarget, WriteOptions, DEFAULT_BATCH_SIZE};
use crate::schema::SPEC_VERSION;
use arrow::array::{Array, ArrayRef, Float64Array, RecordBatch, UInt64Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use neurochunk_array::precomputed::skeleton::{
    AttributeType, Skeleton, SkeletonInfo, SkeletonLayer, VertexAttribute, IDENTITY_TRANSFORM,
};
use neurochunk_array::precomputed::ShardingSpec;
use neurochunk_store::Store;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

/// The metadata key holding the skeleton layer's `info`.
pub const INFO_KEY: &str = "attr:precomputed:info";

/// Options for reading a skeleton layer into a table.
#[derive(Debug, Clone, Default)]
pub struct PrecomputedImportOptions {
    /// Context identifier (required metadata).
    pub context: String,
    /// Optional space identifier.
    pub space: Option<String>,
}

/// What an import or export did.
#[derive(Debug, Clone, Default)]
pub struct PrecomputedSummary {
    /// Vertices (rows).
    pub rows: u64,
    /// Segments.
    pub segments: u64,
    /// Fragments (trees).
    pub fragments: u64,
    /// Notes (segments split into several fragments, ...).
    pub notes: Vec<String>,
}

fn arrow_type(t: AttributeType) -> DataType {
    match t {
        AttributeType::Float32 => DataType::Float32,
        AttributeType::Uint8 => DataType::UInt8,
        AttributeType::Int8 => DataType::Int8,
        AttributeType::Uint16 => DataType::UInt16,
        AttributeType::Int16 => DataType::Int16,
        AttributeType::Uint32 => DataType::UInt32,
        AttributeType::Int32 => DataType::Int32,
    }
}

fn attribute_type_of(dt: &DataType) -> Option<AttributeType> {
    Some(match dt {
        DataType::Float32 | DataType::Float64 | DataType::Float16 => AttributeType::Float32,
        DataType::UInt8 => AttributeType::Uint8,
        DataType::Int8 => AttributeType::Int8,
        DataType::UInt16 => AttributeType::Uint16,
        DataType::Int16 => AttributeType::Int16,
        DataType::UInt32 => AttributeType::Uint32,
        DataType::Int32 => AttributeType::Int32,
        _ => return None,
    })
}

/// Whether `a` becomes the `radius` column.
fn is_radius(a: &VertexAttribute) -> bool {
    a.id == "radius" && a.num_components == 1
}

/// The column names of attribute `a`.
fn attribute_columns(a: &VertexAttribute) -> Vec<String> {
    if is_radius(a) {
        vec!["radius".into()]
    } else if a.num_components == 1 {
        vec![format!("attr:{}", a.id)]
    } else {
        (0..a.num_components)
            .map(|c| format!("attr:{}:{c}", a.id))
            .collect()
    }
}

/// Each vertex's parent (`None` for roots), or why the edges are not a forest.
pub fn parents_from_edges(
    num_vertices: usize,
    edges: &[[u32; 2]],
) -> std::result::Result<Vec<Option<u32>>, String> {
    for (e, &[a, b]) in edges.iter().enumerate() {
        if a == b {
            return Err(format!("edge {e} joins vertex {a} to itself"));
        }
        if a as usize >= num_vertices || b as usize >= num_vertices {
            return Err(format!(
                "edge {e} joins vertices {a} and {b}, but there are {num_vertices} vertices"
            ));
        }
    }
    // (child, parent) edges: every vertex a child at most once, and no loop.
    let mut parent: Vec<Option<u32>> = vec![None; num_vertices];
    let mut oriented = true;
    for &[a, b] in edges {
        if parent[a as usize].replace(b).is_some() {
            oriented = false;
            break;
        }
    }
    if oriented && !has_loop(&parent) {
        return Ok(parent);
    }
    // Undirected: root each connected part at its lowest vertex, breadth first.
    let mut offsets = vec![0usize; num_vertices + 1];
    for &[a, b] in edges {
        offsets[a as usize + 1] += 1;
        offsets[b as usize + 1] += 1;
    }
    for i in 0..num_vertices {
        offsets[i + 1] += offsets[i];
    }
    let mut fill = offsets.clone();
    let mut adjacent = vec![(0u32, 0usize); edges.len() * 2];
    for (e, &[a, b]) in edges.iter().enumerate() {
        adjacent[fill[a as usize]] = (b, e);
        fill[a as usize] += 1;
        adjacent[fill[b as usize]] = (a, e);
        fill[b as usize] += 1;
    }
    let mut parent: Vec<Option<u32>> = vec![None; num_vertices];
    let mut via = vec![usize::MAX; num_vertices];
    let mut seen = vec![false; num_vertices];
    let mut queue = VecDeque::new();
    for root in 0..num_vertices {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        queue.push_back(root);
        while let Some(v) = queue.pop_front() {
            for &(w, e) in &adjacent[offsets[v]..offsets[v + 1]] {
                if e == via[v] {
                    continue;
                }
                let w = w as usize;
                if seen[w] {
                    return Err(format!(
                        "the edges hold a cycle (edge {e} joins vertices {v} and {w}, which \
                         other edges already connect)"
                    ));
                }
                seen[w] = true;
                parent[w] = Some(v as u32);
                via[w] = e;
                queue.push_back(w);
            }
        }
    }
    Ok(parent)
}

/// Whether following parents from some vertex comes back to it.
fn has_loop(parent: &[Option<u32>]) -> bool {
    // 0: not visited, 1: on the current path, 2: known to reach a root.
    let mut state = vec![0u8; parent.len()];
    let mut path = Vec::new();
    for start in 0..parent.len() {
        let mut v = start;
        path.clear();
        loop {
            match state[v] {
                2 => break,
                1 => return true,
                _ => {}
            }
            state[v] = 1;
            path.push(v);
            match parent[v] {
                Some(p) => v = p as usize,
                None => break,
            }
        }
        for &p in &path {
            state[p] = 2;
        }
    }
    false
}

/// The root of each vertex's tree.
fn roots_of(parent: &[Option<u32>]) -> Vec<u32> {
    const UNSET: u32 = u32::MAX;
    let mut root = vec![UNSET; parent.len()];
    let mut path = Vec::new();
    for start in 0..parent.len() {
        let mut v = start;
        path.clear();
        while root[v] == UNSET {
            path.push(v);
            match parent[v] {
                Some(p) => v = p as usize,
                None => {
                    root[v] = v as u32;
                    break;
                }
            }
        }
        let r = root[v];
        for &p in &path {
            root[p] = r;
        }
    }
    root
}

/// The skeletons of a layer as one skeletons record batch; `name` names the layer in errors.
pub fn skeletons_to_batch(
    layer: &SkeletonLayer,
    name: &str,
    opts: &PrecomputedImportOptions,
) -> Result<(RecordBatch, PrecomputedSummary)> {
    if opts.context.is_empty() {
        return Err(TableError::Usage(
            "a context identifier is required (--context)".into(),
        ));
    }
    let skeletons = layer
        .read_all()
        .map_err(|e| TableError::data(name, e.to_string()))?;
    let info = layer.info();
    let mut md: BTreeMap<String, String> = BTreeMap::new();
    md.insert("version".into(), SPEC_VERSION.into());
    md.insert("context".into(), opts.context.clone());
    md.insert("unit".into(), "nanometer".into());
    if let Some(s) = &opts.space {
        md.insert("space".into(), s.clone());
    }
    md.insert(INFO_KEY.into(), info.to_json().to_string());
    let total: usize = skeletons.iter().map(|(_, s)| s.vertices.len()).sum();
    let mut summary = PrecomputedSummary {
        segments: skeletons.len() as u64,
        ..PrecomputedSummary::default()
    };
    let (mut sid, mut fid, mut par) = (
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::<Option<u64>>::with_capacity(total),
    );
    let (mut xs, mut ys, mut zs) = (
        Vec::with_capacity(total),
        Vec::with_capacity(total),
        Vec::with_capacity(total),
    );
    let attrs = &info.vertex_attributes;
    // Per attribute column: values, None for a segment without attributes.
    let mut columns: Vec<Vec<Option<f64>>> = attrs
        .iter()
        .flat_map(attribute_columns)
        .map(|_| Vec::with_capacity(total))
        .collect();
    let mut next_fragment = skeletons.last().map_or(0, |(id, _)| id.saturating_add(1));
    let mut base = 0u64;
    for (segment, skeleton) in &skeletons {
        let nv = skeleton.vertices.len();
        let parent = parents_from_edges(nv, &skeleton.edges)
            .map_err(|e| TableError::data(name, format!("segment {segment}: {e}")))?;
        let root = roots_of(&parent);
        // Fragments: the tree of the lowest root keeps the segment id.
        let mut fragment_of_root: HashMap<u32, u64> = HashMap::new();
        let mut listed = Vec::new();
        for (v, p) in parent.iter().enumerate() {
            if p.is_some() {
                continue;
            }
            let fragment = if fragment_of_root.is_empty() {
                *segment
            } else {
                let f = next_fragment;
                next_fragment = next_fragment
                    .checked_add(1)
                    .ok_or_else(|| TableError::data(name, "fragment ids overflow"))?;
                md.insert(
                    format!("frag:{f}:name"),
                    format!("segment {segment} (the tree of vertex {v})"),
                );
                md.insert(format!("frag:{f}:segment_id"), segment.to_string());
                f
            };
            listed.push(format!("vertex {v} -> fragment {fragment}"));
            fragment_of_root.insert(v as u32, fragment);
        }
        summary.fragments += fragment_of_root.len() as u64;
        if fragment_of_root.len() > 1 {
            summary.notes.push(format!(
                "segment {segment}: {} trees, one fragment each ({})",
                fragment_of_root.len(),
                listed.join(", ")
            ));
        }
        for (v, position) in skeleton.vertices.iter().enumerate() {
            sid.push(base + v as u64);
            fid.push(fragment_of_root[&root[v]]);
            par.push(parent[v].map(|p| base + p as u64));
            let [x, y, z] = info.to_nm(*position);
            xs.push(x);
            ys.push(y);
            zs.push(z);
        }
        let mut column = 0;
        for (a, attr) in attrs.iter().enumerate() {
            let k = attr.num_components as usize;
            let stored = skeleton.attributes.get(a);
            for c in 0..k {
                let out = &mut columns[column + c];
                match stored {
                    Some(values) => {
                        for v in 0..nv {
                            let value = values[v * k + c];
                            out.push(if is_radius(attr) && (value.is_nan() || value < 0.0) {
                                None
                            } else {
                                Some(value)
                            });
                        }
                    }
                    None => out.extend(std::iter::repeat_n(None, nv)),
                }
            }
            column += k;
        }
        base = base
            .checked_add(nv as u64)
            .ok_or_else(|| TableError::data(name, "sample ids overflow"))?;
    }
    summary.rows = total as u64;
    let mut fields = vec![
        Field::new("sample_id", DataType::UInt64, false),
        Field::new("fragment_id", DataType::UInt64, false),
        Field::new("x", DataType::Float64, false),
        Field::new("y", DataType::Float64, false),
        Field::new("z", DataType::Float64, false),
        Field::new("parent_id", DataType::UInt64, true),
    ];
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(sid)),
        Arc::new(UInt64Array::from(fid)),
        Arc::new(Float64Array::from(xs)),
        Arc::new(Float64Array::from(ys)),
        Arc::new(Float64Array::from(zs)),
        Arc::new(UInt64Array::from(par)),
    ];
    let mut values = columns.into_iter();
    for a in attrs {
        let dt = if is_radius(a) {
            DataType::Float64
        } else {
            arrow_type(a.data_type)
        };
        for column in attribute_columns(a) {
            let data = Float64Array::from(values.next().unwrap_or_default());
            let array = cast(&data, &dt).map_err(|e| TableError::arrow(name, e))?;
            fields.push(Field::new(column, dt.clone(), true));
            arrays.push(array);
        }
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, md));
    let batch = RecordBatch::try_new(schema, arrays)
        .map_err(|e| TableError::Usage(format!("building the skeletons table: {e}")))?;
    Ok((batch, summary))
}

/// Reads a skeleton layer into a skeletons table at `target` (see the module documentation).
pub fn import_precomputed(
    layer: &SkeletonLayer,
    name: &str,
    target: &TableTarget,
    opts: &PrecomputedImportOptions,
    write: &WriteOptions,
) -> Result<PrecomputedSummary> {
    let (batch, summary) = skeletons_to_batch(layer, name, opts)?;
    crate::swc::write_skeletons_batch(&batch, target, write)?;
    Ok(summary)
}

/// Nanometres per `unit` (a neurarrow unit name).
pub fn nanometers_per(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "nanometer" => 1.0,
        "yoctometer" => 1e-15,
        "zeptometer" => 1e-12,
        "attometer" => 1e-9,
        "femtometer" => 1e-6,
        "picometer" => 1e-3,
        "angstrom" => 0.1,
        "micrometer" => 1e3,
        "millimeter" => 1e6,
        "centimeter" => 1e7,
        "inch" => 2.54e7,
        "decimeter" => 1e8,
        "foot" => 3.048e8,
        "yard" => 9.144e8,
        "meter" => 1e9,
        "dekameter" => 1e10,
        "hectometer" => 1e11,
        "kilometer" => 1e12,
        "mile" => 1.609344e12,
        _ => return None,
    })
}

/// Options for writing a skeleton layer from a table.
#[derive(Debug, Clone, Default)]
pub struct PrecomputedExportOptions {
    /// The shard layout, `None` for one file per segment.
    pub sharding: Option<ShardingSpec>,
}

/// A sharding spec for `segments` segments: murmurhash3_x86_128, gzip indexes and data, about
/// 1024 segments per shard and 64 minishards at most per shard (cloud-volume's defaults for
/// skeletons, with simpler sizing).
pub fn default_sharding(segments: u64) -> ShardingSpec {
    let bits = |n: u64| 64 - n.saturating_sub(1).leading_zeros();
    let total = bits(segments.max(1));
    let shard_bits = total.saturating_sub(10);
    let minishard_bits = total.saturating_sub(shard_bits).min(6);
    ShardingSpec {
        preshift_bits: 0,
        hash: neurochunk_array::precomputed::ShardHash::Murmurhash3X86_128,
        minishard_bits,
        shard_bits,
        minishard_index_encoding: neurochunk_array::precomputed::ShardEncoding::Gzip,
        data_encoding: neurochunk_array::precomputed::ShardEncoding::Gzip,
    }
}

/// One row of a segment being gathered.
struct Row {
    sample: u64,
    parent: Option<u64>,
    position: [f32; 3],
    values: Vec<Option<f64>>,
}

/// Writes a skeletons table as a skeleton layer at `path` in `store` (see the module
/// documentation); `name` names the output in errors.
pub fn export_precomputed(
    src: &TableSource,
    store: Arc<dyn Store>,
    path: &str,
    name: &str,
    opts: &PrecomputedExportOptions,
) -> Result<PrecomputedSummary> {
    let input = src.path();
    let schema = src.schema();
    let md = schema.metadata();
    for need in ["sample_id", "fragment_id", "parent_id", "x", "y", "z"] {
        if schema.field_with_name(need).is_err() {
            return Err(TableError::data(
                input,
                format!("not a skeletons table: no {need:?} column"),
            ));
        }
    }
    let unit = md.get("unit").map(String::as_str).unwrap_or("");
    let scale = nanometers_per(unit).ok_or_else(|| {
        TableError::data(
            input,
            format!("unit {unit:?} cannot be converted to nanometers"),
        )
    })?;
    // The vertex attributes and the columns holding them.
    let column_type = |c: &str| {
        schema
            .field_with_name(c)
            .ok()
            .map(|f| f.data_type().clone())
    };
    let declared: Option<Vec<VertexAttribute>> = md
        .get(INFO_KEY)
        .and_then(|text| serde_json::from_str(text).ok())
        .and_then(|doc| SkeletonInfo::parse(&doc, path).ok())
        .map(|info| info.vertex_attributes)
        .filter(|attrs| {
            attrs.iter().all(|a| {
                attribute_columns(a)
                    .iter()
                    .all(|c| column_type(c).is_some_and(|t| attribute_type_of(&t).is_some()))
            })
        });
    let attrs: Vec<VertexAttribute> = match declared {
        Some(attrs) => attrs,
        None => {
            let mut attrs = Vec::new();
            if column_type("radius").is_some_and(|t| attribute_type_of(&t).is_some()) {
                attrs.push(VertexAttribute::new("radius", AttributeType::Float32));
            }
            for f in schema.fields() {
                if let Some(id) = f.name().strip_prefix("attr:") {
                    if let (false, Some(t)) = (id.is_empty(), attribute_type_of(f.data_type())) {
                        if id != "radius" {
                            attrs.push(VertexAttribute::new(id, t));
                        }
                    }
                }
            }
            attrs
        }
    };
    let value_columns: Vec<String> = attrs.iter().flat_map(attribute_columns).collect();
    let mut columns: Vec<String> = ["sample_id", "fragment_id", "parent_id", "x", "y", "z"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    columns.extend(value_columns.iter().cloned());
    let segment_of = |fragment: u64| -> u64 {
        md.get(&format!("frag:{fragment}:segment_id"))
            .and_then(|v| v.parse().ok())
            .unwrap_or(fragment)
    };
    let mut segments: BTreeMap<u64, Vec<Row>> = BTreeMap::new();
    let f64_column = |b: &RecordBatch, c: &str| -> Result<Float64Array> {
        let col = b
            .column_by_name(c)
            .ok_or_else(|| TableError::data(input, format!("missing column {c:?}")))?;
        let casted = cast(col, &DataType::Float64).map_err(|e| TableError::arrow(input, e))?;
        casted
            .as_any()
            .downcast_ref::<Float64Array>()
            .cloned()
            .ok_or_else(|| TableError::data(input, format!("column {c:?} is not numeric")))
    };
    for b in src.batches_projected(&columns, DEFAULT_BATCH_SIZE)? {
        let b = b?;
        let ids = crate::derive::u64_column(input, &b, "sample_id")?;
        let frags = crate::derive::u64_column(input, &b, "fragment_id")?;
        let parents = crate::derive::u64_column(input, &b, "parent_id")?;
        let (x, y, z) = (
            f64_column(&b, "x")?,
            f64_column(&b, "y")?,
            f64_column(&b, "z")?,
        );
        let values = value_columns
            .iter()
            .map(|c| f64_column(&b, c))
            .collect::<Result<Vec<_>>>()?;
        for r in 0..b.num_rows() {
            let row = Row {
                sample: ids.value(r),
                parent: parents.is_valid(r).then(|| parents.value(r)),
                position: [
                    (x.value(r) * scale) as f32,
                    (y.value(r) * scale) as f32,
                    (z.value(r) * scale) as f32,
                ],
                values: values
                    .iter()
                    .map(|a| a.is_valid(r).then(|| a.value(r)))
                    .collect(),
            };
            segments
                .entry(segment_of(frags.value(r)))
                .or_default()
                .push(row);
        }
    }
    let mut skeletons = Vec::with_capacity(segments.len());
    let mut summary = PrecomputedSummary {
        segments: segments.len() as u64,
        ..PrecomputedSummary::default()
    };
    for (segment, mut rows) in segments {
        rows.sort_by_key(|r| r.sample);
        let index: HashMap<u64, u32> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r.sample, i as u32))
            .collect();
        if index.len() != rows.len() {
            return Err(TableError::data(
                input,
                format!("segment {segment}: repeated sample ids"),
            ));
        }
        if rows.len() > u32::MAX as usize {
            return Err(TableError::data(
                input,
                format!("segment {segment}: {} vertices are too many", rows.len()),
            ));
        }
        let mut edges = Vec::with_capacity(rows.len());
        for (i, r) in rows.iter().enumerate() {
            if let Some(p) = r.parent {
                let parent = index.get(&p).ok_or_else(|| {
                    TableError::data(
                        input,
                        format!(
                            "segment {segment}: the parent {p} of sample {} is not in the segment",
                            r.sample
                        ),
                    )
                })?;
                edges.push([i as u32, *parent]);
            }
        }
        // A segment none of whose vertices has attribute values is written without them.
        let any = rows.iter().any(|r| r.values.iter().any(Option::is_some));
        let mut attributes = Vec::new();
        if any {
            let mut column = 0;
            for a in &attrs {
                let k = a.num_components as usize;
                let mut values = Vec::with_capacity(rows.len() * k);
                for r in &rows {
                    for c in 0..k {
                        let v = match (r.values[column + c], a.data_type) {
                            (Some(v), _) if is_radius(a) => v * scale,
                            (Some(v), _) => v,
                            (None, AttributeType::Float32) => f64::NAN,
                            (None, _) => {
                                return Err(TableError::data(
                                    input,
                                    format!(
                                        "segment {segment}: sample {} has no value for the \
                                         integer vertex attribute '{}'",
                                        r.sample, a.id
                                    ),
                                ))
                            }
                        };
                        values.push(v);
                    }
                }
                attributes.push(values);
                column += k;
            }
        }
        summary.rows += rows.len() as u64;
        summary.fragments += 1;
        skeletons.push((
            segment,
            Skeleton {
                vertices: rows.iter().map(|r| r.position).collect(),
                edges,
                attributes,
            },
        ));
    }
    let info = SkeletonInfo {
        transform: IDENTITY_TRANSFORM,
        vertex_attributes: attrs,
        sharding: opts.sharding.clone(),
        ..SkeletonInfo::default()
    };
    let layer = SkeletonLayer::create(store, path, info)
        .map_err(|e| TableError::data(name, e.to_string()))?;
    layer
        .write(&skeletons)
        .map_err(|e| TableError::data(name, e.to_string()))?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_from_oriented_and_undirected_edges() {
        // (child, parent) edges are kept as they are.
        let p = parents_from_edges(4, &[[1, 0], [2, 1], [3, 1]]).unwrap();
        assert_eq!(p, [None, Some(0), Some(1), Some(1)]);
        // Vertex 1 is a child twice: rooted at vertex 0, breadth first.
        let p = parents_from_edges(4, &[[1, 0], [1, 2], [3, 2]]).unwrap();
        assert_eq!(p, [None, Some(0), Some(1), Some(2)]);
        // A forest.
        let p = parents_from_edges(5, &[[0, 1], [3, 4]]).unwrap();
        assert_eq!(roots_of(&p), [1, 1, 2, 4, 4]);
        // Cycles and self edges are errors.
        assert!(parents_from_edges(3, &[[0, 1], [1, 2], [2, 0]])
            .unwrap_err()
            .contains("cycle"));
        assert!(parents_from_edges(2, &[[0, 1], [0, 1]])
            .unwrap_err()
            .contains("cycle"));
        assert!(parents_from_edges(2, &[[1, 1]])
            .unwrap_err()
            .contains("itself"));
    }

    #[test]
    fn default_sharding_sizes() {
        assert_eq!(default_sharding(1).shard_bits, 0);
        assert_eq!(default_sharding(1).minishard_bits, 0);
        assert_eq!(default_sharding(100).minishard_bits, 6);
        assert_eq!(default_sharding(1 << 14).shard_bits, 4);
    }
}
