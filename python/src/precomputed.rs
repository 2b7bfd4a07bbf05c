//! Neuroglancer precomputed skeletons, meshes and annotations (`neurochunk.precomputed`).
//!
//! Thin handles over the engine's readers and writers
//! (`neurochunk::array::precomputed::{skeleton, mesh, annotation}`, the skeleton tables of
//! `neurochunk::table::precomputed`). Geometry crosses as flat NumPy arrays (the Python side
//! reshapes and casts them), tables as Arrow C streams, descriptions as JSON. The GIL is
//! released while the engine reads or writes; every error names the location the user gave.

use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use arrow::array::{Array as _, RecordBatchIterator, RecordBatchReader, UInt64Array};
use arrow::compute::cast;
use arrow::datatypes::DataType as ArrowType;
use neurochunk::array::precomputed::annotation::{
    Annotation, AnnotationCollection, AnnotationError, AnnotationInfo, PropertyType, PropertyValue,
};
use neurochunk::array::precomputed::mesh::{
    write_legacy_meshes, LegacyWriteOptions, MeshDir, MeshError, MeshFragment, MeshKind,
    SegmentMesh,
};
use neurochunk::array::precomputed::skeleton::{
    Skeleton, SkeletonError, SkeletonInfo, SkeletonLayer,
};
use neurochunk::store::join_key;
use neurochunk::table::io::{Format, WriteOptions, DEFAULT_BATCH_SIZE};
use neurochunk::table::precomputed::{
    default_sharding, export_precomputed, skeletons_to_batch, PrecomputedExportOptions,
    PrecomputedImportOptions,
};
use neurochunk::table::{TableError, TableSource, TableWriter};
use neurochunk::{MemoryStore, Store, StoreError};
use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use serde_json::{json, Value};

use crate::errors::{invalid, panic_error, py_error, store_class};
use crate::store::open_store;
use crate::table::{export_stream, import_stream, table_class};

/// An error on its way to Python: the exception class (of `neurochunk._errors`) and message.
type Failure = (&'static str, String);

/// Run `f` without the GIL; its error becomes an exception whose message starts with
/// `display` (the location as the user gave it), a panic a `neurochunk.Error`.
fn run<T: Send>(
    py: Python<'_>,
    display: &str,
    f: impl FnOnce() -> Result<T, Failure> + Send,
) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(value)) => Ok(value),
        Ok(Err((class, message))) => Err(py_error(class, format!("{display}: {message}"))),
        Err(panic) => Err(panic_error(panic)),
    }
}

/// Open `location` (read-only) and build an object of it with `open` (given the store and
/// the object's path in it) without the GIL; returns the object and the location as the user
/// gave it.
fn open_object<T: Send>(
    py: Python<'_>,
    location: &str,
    options: &str,
    open: impl FnOnce(Arc<dyn Store>, &str) -> Result<T, Failure> + Send,
) -> PyResult<(T, String)> {
    let at = open_store(location, true, options)?;
    let (store, path) = (at.store, at.path);
    let object = run(py, &at.display, move || open(store, &path))?;
    Ok((object, at.display))
}

fn store_failure(e: StoreError) -> Failure {
    (store_class(&e), e.to_string())
}

fn skeleton_failure(e: SkeletonError) -> Failure {
    #[allow(unreachable_patterns)]
    let class = match &e {
        SkeletonError::Store(s) => store_class(s),
        SkeletonError::Info { message, .. } if message.starts_with("no 'info'") => {
            "NodeNotFoundError"
        }
        SkeletonError::Info { message, .. } if message.contains("'@type'") => "InvalidInputError",
        SkeletonError::Info { .. }
        | SkeletonError::Corrupt { .. }
        | SkeletonError::Shard { .. } => "CorruptDataError",
        SkeletonError::Invalid { .. } => "InvalidInputError",
        _ => "Error",
    };
    (class, e.to_string())
}

fn mesh_failure(e: MeshError) -> Failure {
    #[allow(unreachable_patterns)]
    let class = match &e {
        MeshError::Store(s) => store_class(s),
        MeshError::NotFound { .. } => "NodeNotFoundError",
        MeshError::Corrupt { .. } => "CorruptDataError",
        MeshError::Unsupported { .. } => "UnsupportedError",
        MeshError::Invalid(_) => "InvalidInputError",
        _ => "Error",
    };
    (class, e.to_string())
}

fn annotation_failure(e: AnnotationError) -> Failure {
    #[allow(unreachable_patterns)]
    let class = match &e {
        AnnotationError::Store(s) => store_class(s),
        AnnotationError::Info { message, .. } if message.starts_with("no info") => {
            "NodeNotFoundError"
        }
        AnnotationError::Info { message, .. } if message.contains("'@type'") => "InvalidInputError",
        AnnotationError::Info { .. } | AnnotationError::Corrupt { .. } => "CorruptDataError",
        AnnotationError::Invalid(_) => "InvalidInputError",
        _ => "Error",
    };
    (class, e.to_string())
}

fn table_failure(e: TableError) -> Failure {
    (table_class(&e), e.to_string())
}

fn bad(message: impl Into<String>) -> Failure {
    ("InvalidInputError", message.into())
}

/// A contiguous NumPy array's values (the Python side passes contiguous arrays).
fn values<T: numpy::Element + Copy>(a: &PyReadonlyArray1<'_, T>, what: &str) -> PyResult<Vec<T>> {
    a.as_slice()
        .map(<[T]>::to_vec)
        .map_err(|_| invalid(format!("{what} must be a contiguous array")))
}

/// Refuse to write where an `info` exists, unless `overwrite`.
fn check_new(store: &dyn Store, path: &str, overwrite: bool) -> Result<(), Failure> {
    if !overwrite
        && store
            .exists(&join_key(path, "info"))
            .map_err(store_failure)?
    {
        return Err((
            "NodeExistsError",
            "an 'info' exists there already (pass overwrite=True to write over it)".into(),
        ));
    }
    Ok(())
}

// --- skeletons -------------------------------------------------------------------------------

/// Flat vertices (the transform applied when `transform`), flat edges and the attributes.
type SkeletonArrays<'py> = (
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<u32>>,
    Vec<Bound<'py, PyArray1<f64>>>,
);

fn skeleton_arrays<'py>(
    py: Python<'py>,
    info: &SkeletonInfo,
    s: Skeleton,
    transform: bool,
) -> SkeletonArrays<'py> {
    let vertices: Vec<f32> = if transform {
        s.vertices
            .iter()
            .flat_map(|v| info.to_nm(*v).map(|c| c as f32))
            .collect()
    } else {
        s.vertices.iter().flatten().copied().collect()
    };
    let edges: Vec<u32> = s.edges.iter().flatten().copied().collect();
    (
        PyArray1::from_vec(py, vertices),
        PyArray1::from_vec(py, edges),
        s.attributes
            .into_iter()
            .map(|a| PyArray1::from_vec(py, a))
            .collect(),
    )
}

/// An opened skeleton layer (`neurochunk.precomputed.SkeletonLayer` wraps it).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawSkeletons {
    layer: SkeletonLayer,
    display: String,
}

#[pymethods]
impl RawSkeletons {
    /// The layer's `info` as JSON.
    fn info(&self) -> String {
        self.layer.info().to_json().to_string()
    }

    /// The segment ids, ascending.
    fn segment_ids(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        let layer = &self.layer;
        run(py, &self.display, || {
            layer.segment_ids().map_err(skeleton_failure)
        })
    }

    /// Segment `id`'s skeleton as flat arrays, `None` when the layer has none.
    #[pyo3(signature = (id, transform=true))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        id: u64,
        transform: bool,
    ) -> PyResult<Option<SkeletonArrays<'py>>> {
        let layer = &self.layer;
        let s = run(py, &self.display, || {
            layer.read(id).map_err(skeleton_failure)
        })?;
        Ok(s.map(|s| skeleton_arrays(py, layer.info(), s, transform)))
    }

    /// Every skeleton of the layer, by segment id (each shard read once).
    #[pyo3(signature = (transform=true))]
    fn get_all<'py>(
        &self,
        py: Python<'py>,
        transform: bool,
    ) -> PyResult<Vec<(u64, SkeletonArrays<'py>)>> {
        let layer = &self.layer;
        let all = run(py, &self.display, || {
            layer.read_all().map_err(skeleton_failure)
        })?;
        Ok(all
            .into_iter()
            .map(|(id, s)| (id, skeleton_arrays(py, layer.info(), s, transform)))
            .collect())
    }

    /// The layer as a neurarrow skeletons table: an `arrow_array_stream` capsule.
    #[pyo3(signature = (context, space=None))]
    fn to_table<'py>(
        &self,
        py: Python<'py>,
        context: String,
        space: Option<String>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let layer = &self.layer;
        let display = self.display.clone();
        let opts = PrecomputedImportOptions { context, space };
        let batch = run(py, &self.display, || {
            skeletons_to_batch(layer, &display, &opts)
                .map(|(batch, _)| batch)
                .map_err(table_failure)
        })?;
        let schema = batch.schema();
        export_stream(py, RecordBatchIterator::new(vec![Ok(batch)], schema))
    }
}

/// Open the skeleton layer at `location` (or the one a volume's `info` names).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn skeletons_open(
    py: Python<'_>,
    location: &str,
    options: &str,
) -> PyResult<RawSkeletons> {
    let (layer, display) = open_object(py, location, options, |store, path| {
        SkeletonLayer::open(store, path).map_err(skeleton_failure)
    })?;
    Ok(RawSkeletons { layer, display })
}

/// One skeleton to write: segment id, flat vertices, flat edges, attributes (flat, f64).
type SkeletonInput<'py> = (
    u64,
    PyReadonlyArray1<'py, f32>,
    PyReadonlyArray1<'py, u32>,
    Vec<PyReadonlyArray1<'py, f64>>,
);

/// Write skeletons with the `info` `info` (JSON; its sharding is replaced: the default
/// layout when `sharded`, else none); returns the number of segments written.
#[pyfunction]
#[pyo3(signature = (location, info, skeletons, sharded=false, overwrite=false, options="{}"))]
pub(crate) fn skeletons_write(
    py: Python<'_>,
    location: &str,
    info: &str,
    skeletons: Vec<SkeletonInput<'_>>,
    sharded: bool,
    overwrite: bool,
    options: &str,
) -> PyResult<usize> {
    let doc: Value =
        serde_json::from_str(info).map_err(|e| invalid(format!("info is not JSON: {e}")))?;
    let mut parsed = Vec::with_capacity(skeletons.len());
    for (id, vertices, edges, attributes) in &skeletons {
        let vertices = values(vertices, "vertices")?;
        let edges = values(edges, "edges")?;
        let attributes = attributes
            .iter()
            .map(|a| values(a, "attribute values"))
            .collect::<PyResult<Vec<_>>>()?;
        parsed.push((*id, vertices, edges, attributes));
    }
    let at = open_store(location, false, options)?;
    let (store, path) = (at.store, at.path);
    let n = parsed.len();
    run(py, &at.display, move || {
        let mut info = SkeletonInfo::parse(&doc, &path).map_err(|e| bad(e.to_string()))?;
        info.sharding = sharded.then(|| default_sharding(n as u64));
        check_new(store.as_ref(), &path, overwrite)?;
        let mut list = Vec::with_capacity(n);
        let mut seen = BTreeSet::new();
        for (id, vertices, edges, attributes) in parsed {
            if !seen.insert(id) {
                return Err(bad(format!("segment {id} is given twice")));
            }
            if vertices.len() % 3 != 0 || edges.len() % 2 != 0 {
                return Err(bad(format!(
                    "segment {id}: vertices must be N×3 and edges M×2"
                )));
            }
            let skeleton = Skeleton {
                vertices: vertices
                    .chunks_exact(3)
                    .map(|c| [c[0], c[1], c[2]])
                    .collect(),
                edges: edges.chunks_exact(2).map(|c| [c[0], c[1]]).collect(),
                attributes,
            };
            list.push((id, skeleton));
        }
        let layer = SkeletonLayer::create(store, &path, info).map_err(skeleton_failure)?;
        layer.write(&list).map_err(skeleton_failure)?;
        Ok(n)
    })
}

/// Write the neurarrow skeletons table in `capsule` (an `arrow_array_stream` capsule,
/// consumed) as a skeleton layer at `location`; returns the summary as JSON.
#[pyfunction]
#[pyo3(signature = (capsule, location, sharded=false, overwrite=false, options="{}"))]
pub(crate) fn skeletons_from_table(
    py: Python<'_>,
    capsule: &Bound<'_, PyAny>,
    location: &str,
    sharded: bool,
    overwrite: bool,
    options: &str,
) -> PyResult<String> {
    let reader = import_stream(capsule)?;
    let at = open_store(location, false, options)?;
    let (store, path, display) = (at.store, at.path, at.display.clone());
    run(py, &at.display, move || {
        check_new(store.as_ref(), &path, overwrite)?;
        // The table, staged in memory as an Arrow IPC file: the exporter reads a table source.
        let staged: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let opts = WriteOptions {
            format: Some(Format::ArrowIpc),
            ..WriteOptions::default()
        };
        let mut writer =
            TableWriter::create_in(staged.clone(), "input.arrow", reader.schema(), &opts)
                .map_err(table_failure)?;
        for batch in reader {
            let batch = batch.map_err(|e| bad(format!("reading the input stream: {e}")))?;
            writer.write(&batch).map_err(table_failure)?;
        }
        writer.finish().map_err(table_failure)?;
        let src = TableSource::open_store_named(staged, "input.arrow", "the input table")
            .map_err(table_failure)?;
        let sharding = if sharded {
            Some(default_sharding(count_fragments(&src)?))
        } else {
            None
        };
        let summary = export_precomputed(
            &src,
            store,
            &path,
            &display,
            &PrecomputedExportOptions { sharding },
        )
        .map_err(table_failure)?;
        Ok(json!({
            "rows": summary.rows,
            "segments": summary.segments,
            "fragments": summary.fragments,
            "notes": summary.notes,
        })
        .to_string())
    })
}

/// The number of distinct fragment ids of a table (sizes the default shard layout).
fn count_fragments(src: &TableSource) -> Result<u64, Failure> {
    let mut ids = BTreeSet::new();
    let batches = src
        .batches_projected(&["fragment_id".to_string()], DEFAULT_BATCH_SIZE)
        .map_err(table_failure)?;
    for batch in batches {
        let batch = batch.map_err(table_failure)?;
        let column = cast(batch.column(0), &ArrowType::UInt64)
            .map_err(|e| bad(format!("fragment_id: {e}")))?;
        if let Some(column) = column.as_any().downcast_ref::<UInt64Array>() {
            ids.extend(column.iter().flatten());
        }
    }
    Ok(ids.len() as u64)
}

// --- meshes ----------------------------------------------------------------------------------

/// An opened mesh directory (`neurochunk.precomputed.MeshLayer` wraps it).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawMeshes {
    store: Arc<dyn Store>,
    /// The mesh directory (after following a volume layer's `mesh` member).
    dir: String,
    display: String,
    multires: bool,
    info: Option<String>,
}

impl RawMeshes {
    fn open_dir(&self) -> Result<MeshDir<'_>, Failure> {
        MeshDir::open(self.store.as_ref(), &self.dir).map_err(mesh_failure)
    }
}

/// Flat vertices and flat triangles.
type MeshArrays<'py> = (Bound<'py, PyArray1<f32>>, Bound<'py, PyArray1<u32>>);

fn mesh_arrays<'py>(
    py: Python<'py>,
    vertices: &[[f32; 3]],
    triangles: &[[u32; 3]],
) -> MeshArrays<'py> {
    (
        PyArray1::from_vec(py, vertices.iter().flatten().copied().collect()),
        PyArray1::from_vec(py, triangles.iter().flatten().copied().collect()),
    )
}

#[pymethods]
impl RawMeshes {
    /// `"legacy"` or `"multires"`.
    fn kind(&self) -> &'static str {
        if self.multires {
            "multires"
        } else {
            "legacy"
        }
    }

    /// The mesh directory's `info` as JSON (None when it has none).
    fn info(&self) -> Option<String> {
        self.info.clone()
    }

    /// The segment ids with a mesh, ascending.
    fn segment_ids(&self, py: Python<'_>) -> PyResult<Vec<u64>> {
        run(py, &self.display, || {
            self.open_dir()?.segments().map_err(mesh_failure)
        })
    }

    /// Segment `id`'s fragments: (name, flat vertices, flat triangles) each. Legacy meshes:
    /// the manifest's fragments; multi-resolution meshes: the fragments of `lod`.
    #[pyo3(signature = (id, lod=0))]
    fn fragments<'py>(
        &self,
        py: Python<'py>,
        id: u64,
        lod: usize,
    ) -> PyResult<Vec<(String, MeshArrays<'py>)>> {
        let fragments = run(py, &self.display, || {
            let dir = self.open_dir()?;
            match dir.kind() {
                MeshKind::Legacy => {
                    if lod != 0 {
                        return Err(bad(format!(
                            "legacy meshes have one level of detail (lod=0), not lod={lod}"
                        )));
                    }
                    Ok(dir.read_legacy(id).map_err(mesh_failure)?.fragments)
                }
                _ => {
                    let (manifest, _, _) = dir.read_multires_manifest(id).map_err(mesh_failure)?;
                    let Some(level) = manifest.lods.get(lod) else {
                        return Err(bad(format!(
                            "segment {id} has {} levels of detail, not lod={lod}",
                            manifest.lods.len()
                        )));
                    };
                    let mut out = Vec::with_capacity(level.fragments.len());
                    for i in 0..level.fragments.len() {
                        let mut fragment = dir
                            .read_multires_fragment(id, lod, i)
                            .map_err(mesh_failure)?;
                        if fragment.name.is_empty() {
                            fragment.name = format!("lod {lod} fragment {i}");
                        }
                        out.push(fragment);
                    }
                    Ok(out)
                }
            }
        })?;
        Ok(fragments
            .into_iter()
            .map(|f| (f.name.clone(), mesh_arrays(py, &f.vertices, &f.triangles)))
            .collect())
    }

    /// Segment `id`'s multi-resolution manifest as JSON (legacy meshes: an error).
    fn manifest(&self, py: Python<'_>, id: u64) -> PyResult<String> {
        run(py, &self.display, || {
            let dir = self.open_dir()?;
            let (manifest, data, start) = dir.read_multires_manifest(id).map_err(mesh_failure)?;
            let mut value = manifest.to_json();
            value["segment"] = json!(id);
            value["data"] = json!(data);
            value["data_start"] = json!(start);
            Ok(value.to_string())
        })
    }
}

/// Open the mesh directory at `location` (or the one a segmentation layer's `info` names).
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn meshes_open(py: Python<'_>, location: &str, options: &str) -> PyResult<RawMeshes> {
    let at = open_store(location, true, options)?;
    let (store, path) = (at.store.clone(), at.path.clone());
    let (dir, multires, info) = run(py, &at.display, move || {
        let dir = MeshDir::open(store.as_ref(), &path).map_err(mesh_failure)?;
        if dir.info().is_none() {
            let listing = store.list_dir(dir.dir()).map_err(store_failure)?;
            if listing.keys.is_empty() && listing.prefixes.is_empty() {
                return Err((
                    "NodeNotFoundError",
                    "no mesh directory (no 'info' and no files)".into(),
                ));
            }
        }
        Ok((
            dir.dir().to_string(),
            matches!(dir.kind(), MeshKind::Multires(_)),
            dir.info().map(Value::to_string),
        ))
    })?;
    Ok(RawMeshes {
        store: at.store,
        dir,
        display: at.display,
        multires,
        info,
    })
}

/// One segment's mesh to write: its id and fragments (flat vertices, flat triangles).
type MeshInput<'py> = (
    u64,
    Vec<(PyReadonlyArray1<'py, f32>, PyReadonlyArray1<'py, u32>)>,
);

/// Write legacy meshes into the directory `location`; returns the number of segments.
#[pyfunction]
#[pyo3(signature = (location, meshes, gzip=false, overwrite=false, options="{}"))]
pub(crate) fn meshes_write(
    py: Python<'_>,
    location: &str,
    meshes: Vec<MeshInput<'_>>,
    gzip: bool,
    overwrite: bool,
    options: &str,
) -> PyResult<usize> {
    let mut segments = Vec::with_capacity(meshes.len());
    for (id, fragments) in &meshes {
        let mut parts = Vec::with_capacity(fragments.len());
        for (vertices, triangles) in fragments {
            parts.push((values(vertices, "vertices")?, values(triangles, "faces")?));
        }
        segments.push((*id, parts));
    }
    let at = open_store(location, false, options)?;
    let (store, path) = (at.store, at.path);
    run(py, &at.display, move || {
        check_new(store.as_ref(), &path, overwrite)?;
        let mut seen = BTreeSet::new();
        let mut out = Vec::with_capacity(segments.len());
        for (id, parts) in segments {
            if !seen.insert(id) {
                return Err(bad(format!("segment {id} is given twice")));
            }
            let mut fragments = Vec::with_capacity(parts.len());
            for (vertices, triangles) in parts {
                if vertices.len() % 3 != 0 || triangles.len() % 3 != 0 {
                    return Err(bad(format!(
                        "segment {id}: vertices must be N×3 and faces M×3"
                    )));
                }
                fragments.push(MeshFragment {
                    name: String::new(),
                    vertices: vertices
                        .chunks_exact(3)
                        .map(|c| [c[0], c[1], c[2]])
                        .collect(),
                    triangles: triangles
                        .chunks_exact(3)
                        .map(|c| [c[0], c[1], c[2]])
                        .collect(),
                });
            }
            out.push(SegmentMesh {
                segment: id,
                fragments,
            });
        }
        let n = out.len();
        let options = LegacyWriteOptions {
            gzip,
            ..LegacyWriteOptions::default()
        };
        write_legacy_meshes(store.as_ref(), &path, &out, &options).map_err(mesh_failure)?;
        Ok(n)
    })
}

// --- annotations -----------------------------------------------------------------------------

/// Annotations as columns: ids, flat geometry and its offsets (`n + 1`), per property its
/// values as f64 (rgb and rgba: 3 and 4 per annotation), per relationship the flat related ids
/// and their offsets.
type AnnotationColumns<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<f32>>,
    Bound<'py, PyArray1<u64>>,
    Vec<Bound<'py, PyArray1<f64>>>,
    Vec<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>)>,
);

fn annotation_columns<'py>(
    py: Python<'py>,
    info: &AnnotationInfo,
    list: &[Annotation],
) -> AnnotationColumns<'py> {
    let ids: Vec<u64> = list.iter().map(|a| a.id).collect();
    let mut geometry = Vec::new();
    let mut offsets = Vec::with_capacity(list.len() + 1);
    offsets.push(0u64);
    for a in list {
        geometry.extend_from_slice(&a.geometry);
        offsets.push(geometry.len() as u64);
    }
    let properties = (0..info.properties.len())
        .map(|p| {
            let mut column = Vec::with_capacity(list.len());
            for a in list {
                match a.properties.get(p) {
                    Some(PropertyValue::Int(v)) => column.push(*v as f64),
                    Some(PropertyValue::Float(v)) => column.push(f64::from(*v)),
                    Some(PropertyValue::Rgb(c)) => column.extend(c.iter().map(|&x| f64::from(x))),
                    Some(PropertyValue::Rgba(c)) => column.extend(c.iter().map(|&x| f64::from(x))),
                    None => {
                        let k = match info.properties[p].kind {
                            PropertyType::Rgb => 3,
                            PropertyType::Rgba => 4,
                            _ => 1,
                        };
                        column.extend((0..k).map(|_| f64::NAN));
                    }
                }
            }
            PyArray1::from_vec(py, column)
        })
        .collect();
    let relationships = (0..info.relationships.len())
        .map(|r| {
            let mut related = Vec::new();
            let mut offsets = Vec::with_capacity(list.len() + 1);
            offsets.push(0u64);
            for a in list {
                if let Some(ids) = a.relationships.get(r) {
                    related.extend_from_slice(ids);
                }
                offsets.push(related.len() as u64);
            }
            (
                PyArray1::from_vec(py, related),
                PyArray1::from_vec(py, offsets),
            )
        })
        .collect();
    (
        PyArray1::from_vec(py, ids),
        PyArray1::from_vec(py, geometry),
        PyArray1::from_vec(py, offsets),
        properties,
        relationships,
    )
}

/// An opened annotation collection (`neurochunk.precomputed.AnnotationCollection` wraps it).
#[pyclass(frozen, module = "neurochunk._neurochunk")]
pub(crate) struct RawAnnotations {
    collection: AnnotationCollection,
    display: String,
}

#[pymethods]
impl RawAnnotations {
    /// The collection's `info` as JSON.
    fn info(&self) -> String {
        self.collection.info().to_json().to_string()
    }

    /// Annotation `id` (with its relationships) as columns of one row, or of none.
    fn get<'py>(&self, py: Python<'py>, id: u64) -> PyResult<AnnotationColumns<'py>> {
        let collection = &self.collection;
        let found = run(py, &self.display, || {
            collection.get(id).map_err(annotation_failure)
        })?;
        let list: Vec<Annotation> = found.into_iter().collect();
        Ok(annotation_columns(py, collection.info(), &list))
    }

    /// The annotations related to `segment` by relationship number `relationship` (their
    /// relationships are not carried by that index: empty).
    fn related<'py>(
        &self,
        py: Python<'py>,
        relationship: usize,
        segment: u64,
    ) -> PyResult<AnnotationColumns<'py>> {
        let collection = &self.collection;
        let list = run(py, &self.display, || {
            collection
                .related(relationship, segment)
                .map_err(annotation_failure)
        })?;
        Ok(annotation_columns(py, collection.info(), &list))
    }

    /// Every annotation, by id, with its relationships.
    fn all<'py>(&self, py: Python<'py>) -> PyResult<AnnotationColumns<'py>> {
        let collection = &self.collection;
        let list = run(py, &self.display, || {
            collection.read_all().map_err(annotation_failure)
        })?;
        Ok(annotation_columns(py, collection.info(), &list))
    }
}

/// Open the annotation collection at `location`.
#[pyfunction]
#[pyo3(signature = (location, options="{}"))]
pub(crate) fn annotations_open(
    py: Python<'_>,
    location: &str,
    options: &str,
) -> PyResult<RawAnnotations> {
    let (collection, display) = open_object(py, location, options, |store, path| {
        AnnotationCollection::open(store, path).map_err(annotation_failure)
    })?;
    Ok(RawAnnotations {
        collection,
        display,
    })
}

/// Write an annotation collection: `info` (JSON: dimensions, type, properties,
/// relationships; bounds and indexes are computed), the ids, the flat geometry with its
/// offsets (`n + 1`), per property its flat values, per relationship flat ids and offsets.
#[pyfunction]
#[pyo3(signature = (location, info, ids, geometry, offsets, properties, relationships, limit=10000, sharded=false, overwrite=false, options="{}"))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn annotations_write(
    py: Python<'_>,
    location: &str,
    info: &str,
    ids: PyReadonlyArray1<'_, u64>,
    geometry: PyReadonlyArray1<'_, f32>,
    offsets: PyReadonlyArray1<'_, u64>,
    properties: Vec<PyReadonlyArray1<'_, f64>>,
    relationships: Vec<(PyReadonlyArray1<'_, u64>, PyReadonlyArray1<'_, u64>)>,
    limit: u64,
    sharded: bool,
    overwrite: bool,
    options: &str,
) -> PyResult<usize> {
    let doc: Value =
        serde_json::from_str(info).map_err(|e| invalid(format!("info is not JSON: {e}")))?;
    let ids = values(&ids, "ids")?;
    let geometry = values(&geometry, "geometry")?;
    let offsets = values(&offsets, "geometry offsets")?;
    let properties = properties
        .iter()
        .map(|p| values(p, "property values"))
        .collect::<PyResult<Vec<_>>>()?;
    let relationships = relationships
        .iter()
        .map(|(v, o)| Ok((values(v, "related ids")?, values(o, "related offsets")?)))
        .collect::<PyResult<Vec<_>>>()?;
    let at = open_store(location, false, options)?;
    let (store, path) = (at.store, at.path);
    run(py, &at.display, move || {
        let info = AnnotationInfo::parse(&doc, &path).map_err(|e| bad(e.to_string()))?;
        check_new(store.as_ref(), &path, overwrite)?;
        let n = ids.len();
        let span =
            |o: &[u64], i: usize, len: usize, what: &str| -> Result<(usize, usize), Failure> {
                let (a, b) = (o[i] as usize, o[i + 1] as usize);
                if a > b || b > len {
                    return Err(bad(format!(
                        "{what} offsets are not ascending within the values"
                    )));
                }
                Ok((a, b))
            };
        if offsets.len() != n + 1 {
            return Err(bad("one geometry per annotation is needed"));
        }
        if properties.len() != info.properties.len()
            || relationships.len() != info.relationships.len()
        {
            return Err(bad(
                "one value list per property and relationship is needed",
            ));
        }
        for (r, (_, o)) in relationships.iter().enumerate() {
            if o.len() != n + 1 {
                return Err(bad(format!(
                    "relationship '{}': one list of segment ids per annotation is needed",
                    info.relationships[r].id
                )));
            }
        }
        let mut list = Vec::with_capacity(n);
        for (i, &id) in ids.iter().enumerate() {
            let (g0, g1) = span(&offsets, i, geometry.len(), "geometry")?;
            let mut props = Vec::with_capacity(info.properties.len());
            for (spec, column) in info.properties.iter().zip(&properties) {
                let at = |k: usize, j: usize| column.get(i * k + j).copied();
                let value = match spec.kind {
                    PropertyType::Rgb | PropertyType::Rgba => {
                        let k = if spec.kind == PropertyType::Rgb { 3 } else { 4 };
                        let mut c = [0u8; 4];
                        for (j, slot) in c.iter_mut().enumerate().take(k) {
                            let v = at(k, j).ok_or_else(|| {
                                bad(format!("property '{}': too few values", spec.id))
                            })?;
                            if !(0.0..=255.0).contains(&v) || v.fract() != 0.0 {
                                return Err(bad(format!(
                                    "property '{}' of annotation {id}: {v} is not a colour \
                                     component (0 to 255)",
                                    spec.id
                                )));
                            }
                            *slot = v as u8;
                        }
                        if k == 3 {
                            PropertyValue::Rgb([c[0], c[1], c[2]])
                        } else {
                            PropertyValue::Rgba(c)
                        }
                    }
                    PropertyType::Float32 => PropertyValue::Float(
                        at(1, 0)
                            .ok_or_else(|| bad(format!("property '{}': too few values", spec.id)))?
                            as f32,
                    ),
                    _ => {
                        let v = at(1, 0).ok_or_else(|| {
                            bad(format!("property '{}': too few values", spec.id))
                        })?;
                        if v.fract() != 0.0 || !v.is_finite() {
                            return Err(bad(format!(
                                "property '{}' of annotation {id}: {v} is not an integer",
                                spec.id
                            )));
                        }
                        PropertyValue::Int(v as i64)
                    }
                };
                props.push(value);
            }
            let mut related = Vec::with_capacity(relationships.len());
            for (values, o) in &relationships {
                let (a, b) = span(o, i, values.len(), "relationship")?;
                related.push(values[a..b].to_vec());
            }
            list.push(Annotation {
                id,
                geometry: geometry[g0..g1].to_vec(),
                properties: props,
                relationships: related,
            });
        }
        let sharding = sharded.then(|| default_sharding(n as u64));
        AnnotationCollection::create(store, &path, info, &list, limit, sharding)
            .map_err(annotation_failure)?;
        Ok(n)
    })
}
