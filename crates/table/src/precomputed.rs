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
use arrow::buffer::NullBuffer;
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema};
use neurochunk_array::precomputed::skeleton::{
    AttributeType, Skeleton, SkeletonError, SkeletonInfo, SkeletonLayer, VertexAttribute,
    IDENTITY_TRANSFORM,
};
use neurochunk_array::precomputed::ShardingSpec;
use neurochunk_store::Store;
use rayon::prelude::*;
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
        rows: total as u64,
        ..PrecomputedSummary::default()
    };
    let attrs = &info.vertex_attributes;
    // Each segment's parents and roots, on rayon's workers.
    let trees = skeletons
        .par_iter()
        .map(|(segment, skeleton)| {
            let parent = parents_from_edges(skeleton.vertices.len(), &skeleton.edges)
                .map_err(|e| TableError::data(name, format!("segment {segment}: {e}")))?;
            let root = roots_of(&parent);
            Ok((parent, root))
        })
        .collect::<Result<Vec<_>>>()?;
    // In segment order: where each segment's sample ids start, and the fragment of each of
    // its trees (the tree of the lowest root keeps the segment id).
    let mut next_fragment = skeletons.last().map_or(0, |(id, _)| id.saturating_add(1));
    let mut base = 0u64;
    let mut placed: Vec<(u64, Vec<(u32, u64)>)> = Vec::with_capacity(skeletons.len());
    for ((segment, skeleton), (parent, _)) in skeletons.iter().zip(&trees) {
        let roots: Vec<u32> = (0..parent.len() as u32)
            .filter(|&v| parent[v as usize].is_none())
            .collect();
        let mut fragments = Vec::with_capacity(roots.len());
        for (i, &v) in roots.iter().enumerate() {
            let fragment = if i == 0 {
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
            fragments.push((v, fragment));
        }
        summary.fragments += fragments.len() as u64;
        if fragments.len() > 1 {
            let listed: Vec<String> = fragments
                .iter()
                .map(|(v, f)| format!("vertex {v} -> fragment {f}"))
                .collect();
            summary.notes.push(format!(
                "segment {segment}: {} trees, one fragment each ({})",
                fragments.len(),
                listed.join(", ")
            ));
        }
        placed.push((base, fragments));
        base = base
            .checked_add(skeleton.vertices.len() as u64)
            .ok_or_else(|| TableError::data(name, "sample ids overflow"))?;
    }
    // Each segment's rows, written by rayon's workers into its part of the columns.
    let value_columns: usize = attrs.iter().map(|a| a.num_components as usize).sum();
    let mut rows = Columns::zeroed(total, value_columns);
    let lengths: Vec<usize> = skeletons.iter().map(|(_, s)| s.vertices.len()).collect();
    rows.split(&lengths)
        .into_par_iter()
        .zip(skeletons.par_iter())
        .zip(trees.par_iter())
        .zip(placed.par_iter())
        .for_each(
            |(((out, (_, skeleton)), (parent, root)), (base, fragments))| {
                segment_rows(info, skeleton, parent, root, *base, fragments, out)
            },
        );
    drop(trees);
    drop(skeletons);
    let mut fields = vec![
        Field::new("sample_id", DataType::UInt64, false),
        Field::new("fragment_id", DataType::UInt64, false),
        Field::new("x", DataType::Float64, false),
        Field::new("y", DataType::Float64, false),
        Field::new("z", DataType::Float64, false),
        Field::new("parent_id", DataType::UInt64, true),
    ];
    let [xs, ys, zs] = rows.position;
    let mut arrays: Vec<ArrayRef> = vec![
        Arc::new(UInt64Array::from(rows.sample)),
        Arc::new(UInt64Array::from(rows.fragment)),
        Arc::new(Float64Array::from(xs)),
        Arc::new(Float64Array::from(ys)),
        Arc::new(Float64Array::from(zs)),
        Arc::new(UInt64Array::new(
            rows.parent.into(),
            Some(NullBuffer::from(rows.has_parent)),
        )),
    ];
    let mut values = rows.values.into_iter().zip(rows.valid);
    for a in attrs {
        let dt = if is_radius(a) {
            DataType::Float64
        } else {
            arrow_type(a.data_type)
        };
        for column in attribute_columns(a) {
            let (data, valid) = values.next().unwrap_or_default();
            let data = Float64Array::new(data.into(), Some(NullBuffer::from(valid)));
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

/// The columns of a skeletons table being filled.
struct Columns {
    sample: Vec<u64>,
    fragment: Vec<u64>,
    position: [Vec<f64>; 3],
    parent: Vec<u64>,
    has_parent: Vec<bool>,
    /// Per attribute column, its values and whether each is valid.
    values: Vec<Vec<f64>>,
    valid: Vec<Vec<bool>>,
}

/// One segment's rows of [`Columns`].
struct SegmentColumns<'a> {
    sample: &'a mut [u64],
    fragment: &'a mut [u64],
    position: [&'a mut [f64]; 3],
    parent: &'a mut [u64],
    has_parent: &'a mut [bool],
    values: Vec<&'a mut [f64]>,
    valid: Vec<&'a mut [bool]>,
}

/// `all` cut into consecutive parts of `lengths` (which sum to at most its length).
fn split_by_lengths<'a, T>(all: &'a mut [T], lengths: &[usize]) -> Vec<&'a mut [T]> {
    let mut rest = all;
    let mut parts = Vec::with_capacity(lengths.len());
    for &n in lengths {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(n);
        parts.push(part);
        rest = tail;
    }
    parts
}

impl Columns {
    fn zeroed(rows: usize, value_columns: usize) -> Self {
        Columns {
            sample: vec![0; rows],
            fragment: vec![0; rows],
            position: std::array::from_fn(|_| vec![0.0; rows]),
            parent: vec![0; rows],
            has_parent: vec![false; rows],
            values: vec![vec![0.0; rows]; value_columns],
            valid: vec![vec![false; rows]; value_columns],
        }
    }

    /// The columns cut into consecutive segments of `lengths` rows.
    fn split(&mut self, lengths: &[usize]) -> Vec<SegmentColumns<'_>> {
        let [x, y, z] = &mut self.position;
        let mut sample = split_by_lengths(&mut self.sample, lengths).into_iter();
        let mut fragment = split_by_lengths(&mut self.fragment, lengths).into_iter();
        let mut xs = split_by_lengths(x, lengths).into_iter();
        let mut ys = split_by_lengths(y, lengths).into_iter();
        let mut zs = split_by_lengths(z, lengths).into_iter();
        let mut parent = split_by_lengths(&mut self.parent, lengths).into_iter();
        let mut has_parent = split_by_lengths(&mut self.has_parent, lengths).into_iter();
        let mut values: Vec<_> = self
            .values
            .iter_mut()
            .map(|c| split_by_lengths(c, lengths).into_iter())
            .collect();
        let mut valid: Vec<_> = self
            .valid
            .iter_mut()
            .map(|c| split_by_lengths(c, lengths).into_iter())
            .collect();
        let mut parts = Vec::with_capacity(lengths.len());
        while let (
            Some(sample),
            Some(fragment),
            Some(x),
            Some(y),
            Some(z),
            Some(parent),
            Some(has_parent),
        ) = (
            sample.next(),
            fragment.next(),
            xs.next(),
            ys.next(),
            zs.next(),
            parent.next(),
            has_parent.next(),
        ) {
            parts.push(SegmentColumns {
                sample,
                fragment,
                position: [x, y, z],
                parent,
                has_parent,
                values: values.iter_mut().filter_map(Iterator::next).collect(),
                valid: valid.iter_mut().filter_map(Iterator::next).collect(),
            });
        }
        parts
    }
}

/// Fills one skeleton's rows: sample ids from `base`, each vertex's fragment that of its
/// tree's root (`fragments`: root vertex and fragment id), positions in nanometres, and the
/// attribute values (a missing or negative radius, and every value of a skeleton stored
/// without attributes, invalid).
fn segment_rows(
    info: &SkeletonInfo,
    skeleton: &Skeleton,
    parent: &[Option<u32>],
    root: &[u32],
    base: u64,
    fragments: &[(u32, u64)],
    out: SegmentColumns<'_>,
) {
    let single = match fragments {
        [(_, only)] => Some(*only),
        _ => None,
    };
    let fragment_of_root: HashMap<u32, u64> = fragments.iter().copied().collect();
    let [xs, ys, zs] = out.position;
    for (v, position) in skeleton.vertices.iter().enumerate() {
        out.sample[v] = base + v as u64;
        out.fragment[v] =
            single.unwrap_or_else(|| fragment_of_root.get(&root[v]).copied().unwrap_or_default());
        out.parent[v] = parent[v].map_or(0, |p| base + p as u64);
        out.has_parent[v] = parent[v].is_some();
        let [x, y, z] = info.to_nm(*position);
        (xs[v], ys[v], zs[v]) = (x, y, z);
    }
    let mut columns = out.values.into_iter().zip(out.valid);
    for (a, attr) in info.vertex_attributes.iter().enumerate() {
        let k = attr.num_components as usize;
        for c in 0..k {
            let Some((values, valid)) = columns.next() else {
                return;
            };
            // A skeleton stored without attributes keeps the zeroed, invalid values.
            let Some(stored) = skeleton.attributes.get(a) else {
                continue;
            };
            for (v, (value, ok)) in values.iter_mut().zip(valid.iter_mut()).enumerate() {
                *value = stored[v * k + c];
                *ok = !(is_radius(attr) && (value.is_nan() || *value < 0.0));
            }
        }
    }
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

/// The rows of a skeletons table, gathered column by column for export.
#[derive(Default)]
struct Gathered {
    sample: Vec<u64>,
    parent: Vec<Option<u64>>,
    position: Vec<[f32; 3]>,
    /// Per attribute column (of `value_columns`), each row's value.
    values: Vec<Vec<Option<f64>>>,
    /// Row indexes by segment.
    segments: BTreeMap<u64, Vec<u32>>,
}

/// The skeleton of one segment from its rows (`members`, indexes into `rows`): vertices in
/// `sample_id` order, one (child, parent) edge per row with a parent, the attributes `attrs`
/// (radii converted by `scale`) unless no row has a value; the error says what is wrong.
fn segment_skeleton(
    rows: &Gathered,
    mut members: Vec<u32>,
    attrs: &[VertexAttribute],
    scale: f64,
) -> std::result::Result<Skeleton, String> {
    let sample = |m: &u32| rows.sample[*m as usize];
    if !members.is_sorted_by_key(sample) {
        members.sort_by_key(sample);
    }
    let (Some(first), Some(last)) = (members.first(), members.last()) else {
        return Ok(Skeleton::default());
    };
    let (first, last) = (sample(first), sample(last));
    // Consecutive sample ids (the common case) index themselves; others go through a map.
    let consecutive = last - first == members.len() as u64 - 1;
    let index: HashMap<u64, u32> = if consecutive {
        HashMap::new()
    } else {
        let index: HashMap<u64, u32> = members
            .iter()
            .enumerate()
            .map(|(i, m)| (sample(m), i as u32))
            .collect();
        if index.len() != members.len() {
            return Err("repeated sample ids".into());
        }
        index
    };
    let local = |id: u64| -> Option<u32> {
        if consecutive {
            (first..=last).contains(&id).then(|| (id - first) as u32)
        } else {
            index.get(&id).copied()
        }
    };
    let mut edges = Vec::with_capacity(members.len());
    for (i, m) in members.iter().enumerate() {
        if let Some(p) = rows.parent[*m as usize] {
            let parent = local(p).ok_or_else(|| {
                format!(
                    "the parent {p} of sample {} is not in the segment",
                    sample(m)
                )
            })?;
            edges.push([i as u32, parent]);
        }
    }
    // A segment none of whose vertices has attribute values is written without them.
    let any = rows
        .values
        .iter()
        .any(|column| members.iter().any(|m| column[*m as usize].is_some()));
    let mut attributes = Vec::new();
    if any {
        let mut column = 0;
        for a in attrs {
            let k = a.num_components as usize;
            let mut values = Vec::with_capacity(members.len() * k);
            for m in &members {
                for c in 0..k {
                    let v = match (rows.values[column + c][*m as usize], a.data_type) {
                        (Some(v), _) if is_radius(a) => v * scale,
                        (Some(v), _) => v,
                        (None, AttributeType::Float32) => f64::NAN,
                        (None, _) => {
                            return Err(format!(
                                "sample {} has no value for the integer vertex attribute '{}'",
                                sample(m),
                                a.id
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
    Ok(Skeleton {
        vertices: members.iter().map(|m| rows.position[*m as usize]).collect(),
        edges,
        attributes,
    })
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
    // The segment of a fragment: `frag:{id}:segment_id` when the table names one.
    let segment_of_fragment: HashMap<u64, u64> = md
        .iter()
        .filter_map(|(k, v)| {
            let fragment = k.strip_prefix("frag:")?.strip_suffix(":segment_id")?;
            Some((fragment.parse().ok()?, v.parse().ok()?))
        })
        .collect();
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
    let mut rows = Gathered {
        values: vec![Vec::new(); value_columns.len()],
        ..Gathered::default()
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
        let first = rows.sample.len();
        if first + b.num_rows() > u32::MAX as usize {
            return Err(TableError::data(
                input,
                format!("more than {} rows are too many", u32::MAX),
            ));
        }
        rows.sample.extend(ids.values().iter().copied());
        rows.parent.extend(parents.iter());
        rows.position.extend((0..b.num_rows()).map(|r| {
            [
                (x.value(r) * scale) as f32,
                (y.value(r) * scale) as f32,
                (z.value(r) * scale) as f32,
            ]
        }));
        for (c, out) in value_columns.iter().zip(rows.values.iter_mut()) {
            out.extend(f64_column(&b, c)?.iter());
        }
        // Rows of one fragment usually come together: look the segment up once per run.
        let mut run: Option<(u64, &mut Vec<u32>)> = None;
        for (r, &fragment) in frags.values().iter().enumerate() {
            let row = (first + r) as u32;
            match &mut run {
                Some((current, members)) if *current == fragment => members.push(row),
                _ => {
                    let segment = segment_of_fragment
                        .get(&fragment)
                        .copied()
                        .unwrap_or(fragment);
                    let members = rows.segments.entry(segment).or_default();
                    members.push(row);
                    run = Some((fragment, members));
                }
            }
        }
    }
    let summary = PrecomputedSummary {
        segments: rows.segments.len() as u64,
        fragments: rows.segments.len() as u64,
        rows: rows.sample.len() as u64,
        ..PrecomputedSummary::default()
    };
    let info = SkeletonInfo {
        transform: IDENTITY_TRANSFORM,
        vertex_attributes: attrs.clone(),
        sharding: opts.sharding.clone(),
        ..SkeletonInfo::default()
    };
    let layer = SkeletonLayer::create(store, path, info)
        .map_err(|e| TableError::data(name, e.to_string()))?;
    // Each segment's skeleton, on rayon's workers, in batches: the files of one batch are
    // stored while the next is built and encoded.
    let segments: Vec<(u64, Vec<u32>)> = std::mem::take(&mut rows.segments).into_iter().collect();
    let per_batch = segments.len().div_ceil(SKELETON_BATCHES).max(1);
    let mut batches: Vec<Vec<(u64, Vec<u32>)>> = Vec::new();
    let mut segments = segments.into_iter().peekable();
    while segments.peek().is_some() {
        batches.push(segments.by_ref().take(per_batch).collect());
    }
    let count = batches.len();
    let build = |k: usize| -> std::result::Result<Vec<(u64, Skeleton)>, ExportFailure> {
        std::mem::take(&mut batches[k])
            .into_par_iter()
            .map(|(segment, members)| {
                segment_skeleton(&rows, members, &attrs, scale)
                    .map(|skeleton| (segment, skeleton))
                    .map_err(|message| {
                        ExportFailure::Table(TableError::data(
                            input,
                            format!("segment {segment}: {message}"),
                        ))
                    })
            })
            .collect()
    };
    layer
        .write_batches(count, build)
        .map_err(|failure| match failure {
            ExportFailure::Table(e) => e,
            ExportFailure::Layer(e) => TableError::data(name, e.to_string()),
        })?;
    Ok(summary)
}

/// Batches a skeleton layer is written in (see [`export_precomputed`]).
const SKELETON_BATCHES: usize = 8;

/// What stopped writing a skeleton layer: the table's rows, or the layer.
enum ExportFailure {
    Table(TableError),
    Layer(SkeletonError),
}

impl From<SkeletonError> for ExportFailure {
    fn from(e: SkeletonError) -> Self {
        ExportFailure::Layer(e)
    }
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
