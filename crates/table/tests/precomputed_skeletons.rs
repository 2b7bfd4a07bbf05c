//! Neuroglancer precomputed skeleton layers to and from skeletons tables: a layer built byte by
//! byte, round trips (unsharded and sharded), a real SWC file, damaged layers.

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{Float64Type, UInt64Type, UInt8Type};
use neurochunk_array::precomputed::skeleton::SkeletonLayer;
use neurochunk_store::{FsStore, Store};
use neurochunk_table::io::read_all;
use neurochunk_table::precomputed::{
    default_sharding, export_precomputed, import_precomputed, PrecomputedExportOptions,
    PrecomputedImportOptions, INFO_KEY,
};
use neurochunk_table::swc::{import_swc, SwcImportOptions};
use neurochunk_table::{validate_path, TableSource, TableTarget, ValidateOptions, WriteOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

const CTX: &str = "urn:uuid:7d0b6a5e-precomputed-skeletons";

/// One skeleton file: counts, positions, edges, radius (float32), vertex_types (uint8).
fn skeleton_bytes(
    vertices: &[[f32; 3]],
    edges: &[[u32; 2]],
    radius: &[f32],
    types: &[u8],
) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(vertices.len() as u32).to_le_bytes());
    b.extend_from_slice(&(edges.len() as u32).to_le_bytes());
    for v in vertices.iter().flatten() {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for e in edges.iter().flatten() {
        b.extend_from_slice(&e.to_le_bytes());
    }
    for r in radius {
        b.extend_from_slice(&r.to_le_bytes());
    }
    b.extend_from_slice(types);
    b
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

const INFO: &str = r#"{
  "@type": "neuroglancer_skeletons",
  "transform": [2, 0, 0, 10, 0, 2, 0, 20, 0, 0, 4, 30],
  "vertex_attributes": [
    {"id": "radius", "data_type": "float32", "num_components": 1},
    {"id": "vertex_types", "data_type": "uint8", "num_components": 1}
  ],
  "sharding": null,
  "spatial_index": null
}"#;

/// A volume layer `vol` whose skeletons are in `vol/skel`: segment 7 (one tree, (child,
/// parent) edges rooted at vertex 2) and segment 9 (two trees, gzip-compressed, a NaN radius).
fn fixture(dir: &Path) {
    let skel = dir.join("vol/skel");
    std::fs::create_dir_all(&skel).unwrap();
    std::fs::write(
        dir.join("vol/info"),
        r#"{"@type": "neuroglancer_multiscale_volume", "type": "segmentation", "data_type": "uint64", "num_channels": 1, "scales": [], "skeletons": "skel"}"#,
    )
    .unwrap();
    std::fs::write(skel.join("info"), INFO).unwrap();
    std::fs::write(
        skel.join("7"),
        skeleton_bytes(
            &[[0., 0., 0.], [1., 0., 0.], [2., 0., 0.], [1., 1., 0.]],
            &[[0, 1], [1, 2], [3, 1]],
            &[1.0, 1.5, 2.0, 0.5],
            &[3, 3, 1, 2],
        ),
    )
    .unwrap();
    std::fs::write(
        skel.join("9.gz"),
        gzip(&skeleton_bytes(
            &[[5., 5., 5.], [6., 5., 5.], [9., 9., 9.]],
            &[[1, 0]],
            &[f32::NAN, 2.0, 3.0],
            &[0, 0, 255],
        )),
    )
    .unwrap();
}

fn open_layer(root: &Path, path: &str) -> SkeletonLayer {
    SkeletonLayer::open(Arc::new(FsStore::new(root)), path).unwrap()
}

fn table(path: &Path) -> RecordBatch {
    let (schema, batches) = read_all(path).unwrap();
    concat_batches(&schema, &batches).unwrap()
}

fn u64s(b: &RecordBatch, c: &str) -> Vec<Option<u64>> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<UInt64Type>()
        .iter()
        .collect()
}

fn f64s(b: &RecordBatch, c: &str) -> Vec<Option<f64>> {
    b.column_by_name(c)
        .unwrap()
        .as_primitive::<Float64Type>()
        .iter()
        .collect()
}

fn import(
    root: &Path,
    layer: &str,
    out: &Path,
) -> neurochunk_table::precomputed::PrecomputedSummary {
    import_precomputed(
        &open_layer(root, layer),
        layer,
        &TableTarget::Path(out.to_path_buf()),
        &PrecomputedImportOptions {
            context: CTX.into(),
            space: None,
        },
        &WriteOptions::default(),
    )
    .unwrap()
}

#[test]
fn layer_reads_as_a_skeletons_table() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let out = dir.path().join("vol.skeletons.parquet");
    // Opened through the volume's `skeletons` member.
    let s = import(dir.path(), "vol", &out);
    assert_eq!((s.rows, s.segments, s.fragments), (7, 2, 3));
    assert!(s.notes[0].contains("segment 9: 2 trees"), "{:?}", s.notes);
    let b = table(&out);
    assert_eq!(u64s(&b, "sample_id"), (0..7).map(Some).collect::<Vec<_>>());
    assert_eq!(
        u64s(&b, "fragment_id"),
        [7, 7, 7, 7, 9, 9, 10].map(Some).to_vec()
    );
    // Segment 7's edges are (child, parent); segment 9's edge is rooted at vertex 0... as
    // written: vertex 1's parent is vertex 0.
    assert_eq!(
        u64s(&b, "parent_id"),
        [Some(1), Some(2), None, Some(1), None, Some(4), None]
    );
    // The transform: x' = 2x + 10, y' = 2y + 20, z' = 4z + 30.
    assert_eq!(
        f64s(&b, "x"),
        [10., 12., 14., 12., 20., 22., 28.].map(Some).to_vec()
    );
    assert_eq!(f64s(&b, "y")[3], Some(22.));
    assert_eq!(f64s(&b, "z")[6], Some(66.));
    assert_eq!(
        f64s(&b, "radius"),
        [
            Some(1.0),
            Some(1.5),
            Some(2.0),
            Some(0.5),
            None,
            Some(2.0),
            Some(3.0)
        ]
    );
    let types: Vec<Option<u8>> = b
        .column_by_name("attr:vertex_types")
        .unwrap()
        .as_primitive::<UInt8Type>()
        .iter()
        .collect();
    assert_eq!(types, [3, 3, 1, 2, 0, 0, 255].map(Some).to_vec());
    let md = b.schema().metadata().clone();
    assert_eq!(md["unit"], "nanometer");
    assert_eq!(md["context"], CTX);
    assert_eq!(md["frag:10:segment_id"], "9");
    assert!(md[INFO_KEY].contains("vertex_types"));
    let report = validate_path(
        &out,
        &ValidateOptions {
            strict: true,
            ..Default::default()
        },
    );
    assert!(report.is_valid(), "{:?}", report.lines());
}

#[test]
fn table_to_layer_and_back_unsharded_and_sharded() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let first = dir.path().join("first.skeletons.parquet");
    import(dir.path(), "vol/skel", &first);
    let src = TableSource::open(&first).unwrap();
    for (name, sharding) in [("plain", None), ("sharded", Some(default_sharding(2)))] {
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
        let s = export_precomputed(
            &src,
            store,
            name,
            name,
            &PrecomputedExportOptions {
                sharding: sharding.clone(),
            },
        )
        .unwrap();
        assert_eq!((s.rows, s.segments), (7, 2));
        let layer = open_layer(dir.path(), name);
        assert_eq!(layer.segment_ids().unwrap(), [7, 9]);
        assert_eq!(layer.info().sharding, sharding);
        // Segment 9's two trees are one skeleton again, its (child, parent) edges as written.
        let nine = layer.read(9).unwrap().unwrap();
        assert_eq!(nine.edges, [[1, 0]]);
        assert!(nine.attributes[0][0].is_nan());
        assert_eq!(nine.attributes[1], [0.0, 0.0, 255.0]);
        if sharding.is_some() {
            assert!(dir.path().join(name).join("0.shard").is_file());
        } else {
            assert!(dir.path().join(name).join("7").is_file());
        }
        let again = dir.path().join(format!("{name}.skeletons.parquet"));
        import(dir.path(), name, &again);
        let (a, b) = (table(&first), table(&again));
        for c in ["sample_id", "fragment_id", "parent_id"] {
            assert_eq!(u64s(&a, c), u64s(&b, c), "{name}: {c}");
        }
        for c in ["x", "y", "z", "radius"] {
            assert_eq!(f64s(&a, c), f64s(&b, c), "{name}: {c}");
        }
        assert_eq!(
            a.column_by_name("attr:vertex_types").unwrap(),
            b.column_by_name("attr:vertex_types").unwrap()
        );
    }
}

#[test]
fn swc_table_to_layer() {
    // MorphIO's multiple_soma.swc (micrometres, two trees): two fragments, two segments.
    let dir = tempfile::tempdir().unwrap();
    let swc = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/swc/multiple_soma.swc");
    let parquet = dir.path().join("swc.skeletons.parquet");
    import_swc(
        &[swc],
        &parquet,
        &SwcImportOptions {
            context: CTX.into(),
            ..Default::default()
        },
        &WriteOptions::default(),
    )
    .unwrap();
    let src = TableSource::open(&parquet).unwrap();
    let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    export_precomputed(
        &src,
        store,
        "swc",
        "swc",
        &PrecomputedExportOptions::default(),
    )
    .unwrap();
    let layer = open_layer(dir.path(), "swc");
    let ids = layer.segment_ids().unwrap();
    assert_eq!(ids.len(), 2);
    let first = layer.read(ids[0]).unwrap().unwrap();
    assert_eq!(first.vertices.len(), 9);
    // Sample 4 (x -5 µm, y 5 µm, radius 1.5 µm) in nanometres; its parent is sample 3.
    assert_eq!(first.vertices[3], [-5000.0, 5000.0, 0.0]);
    assert_eq!(first.attributes[0][3], 1500.0);
    assert!(first.edges.contains(&[3, 2]));
    assert_eq!(first.edges.len(), 8);
    let back = dir.path().join("back.skeletons.parquet");
    import(dir.path(), "swc", &back);
    let (a, b) = (table(&parquet), table(&back));
    assert_eq!(
        f64s(&a, "x")
            .iter()
            .map(|v| v.map(|v| v * 1000.0))
            .collect::<Vec<_>>(),
        f64s(&b, "x")
    );
}

#[test]
fn damaged_layers_are_errors_naming_file_and_segment() {
    let dir = tempfile::tempdir().unwrap();
    fixture(dir.path());
    let skel = dir.path().join("vol/skel");
    let good = std::fs::read(skel.join("7")).unwrap();
    let run = |dir: &Path| {
        let layer = open_layer(dir, "vol/skel");
        neurochunk_table::precomputed::skeletons_to_batch(
            &layer,
            "vol/skel",
            &PrecomputedImportOptions {
                context: CTX.into(),
                space: None,
            },
        )
        .unwrap_err()
        .to_string()
    };
    // Truncated.
    std::fs::write(skel.join("7"), &good[..40]).unwrap();
    let e = run(dir.path());
    assert!(
        e.contains("vol/skel/7") && e.contains("segment 7") && e.contains("need"),
        "{e}"
    );
    // Counts far past the end of the file.
    let mut huge = good.clone();
    huge[0..4].copy_from_slice(&0x4000_0000u32.to_le_bytes());
    std::fs::write(skel.join("7"), &huge).unwrap();
    let e = run(dir.path());
    assert!(e.contains("segment 7") && e.contains("need"), "{e}");
    // An edge naming a missing vertex.
    let mut bad = good.clone();
    bad[8 + 48..8 + 52].copy_from_slice(&40u32.to_le_bytes());
    std::fs::write(skel.join("7"), &bad).unwrap();
    let e = run(dir.path());
    assert!(
        e.contains("segment 7") && e.contains("edge 0 joins vertices 40 and 1"),
        "{e}"
    );
    // A cycle.
    std::fs::write(
        skel.join("7"),
        skeleton_bytes(&[[0.; 3]; 3], &[[0, 1], [1, 2], [2, 0]], &[1.0; 3], &[0; 3]),
    )
    .unwrap();
    let e = run(dir.path());
    assert!(e.contains("segment 7") && e.contains("cycle"), "{e}");
    // Not a skeleton layer.
    std::fs::write(
        skel.join("info"),
        "{\"@type\": \"neuroglancer_legacy_mesh\"}",
    )
    .unwrap();
    let e = SkeletonLayer::open(Arc::new(FsStore::new(dir.path())), "vol/skel")
        .unwrap_err()
        .to_string();
    assert!(e.contains("neuroglancer_skeletons"), "{e}");
}
