//! Neuroglancer precomputed annotation collections to and from point cloud and connections
//! tables: Neuroglancer's own collections read into tables, round trips (unsharded and
//! sharded, lines and points), and bad tables.

use arrow::array::{Array, ArrayRef, AsArray, DictionaryArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{
    DataType, Field, Float64Type, Int16Type, Int32Type, Schema, UInt16Type, UInt64Type, UInt8Type,
};
use neurochunk_array::precomputed::annotation::{AnnotationCollection, AnnotationType};
use neurochunk_store::{FsStore, Store};
use neurochunk_table::annotation::{
    export_annotations, import_annotations, AnnotationExportOptions, AnnotationImportOptions,
    AnnotationTable,
};
use neurochunk_table::io::read_all;
use neurochunk_table::precomputed::{default_sharding, INFO_KEY};
use neurochunk_table::{
    validate_path, TableSource, TableTarget, TableWriter, ValidateOptions, WriteOptions,
};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const CTX: &str = "urn:uuid:5f2c1d8e-precomputed-annotations";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../array/tests/data/annotations")
}

fn open(root: &Path, path: &str) -> AnnotationCollection {
    AnnotationCollection::open(Arc::new(FsStore::new(root)), path).unwrap()
}

fn table(path: &Path) -> RecordBatch {
    let (schema, batches) = read_all(path).unwrap();
    concat_batches(&schema, &batches).unwrap()
}

fn u64s(b: &RecordBatch, c: &str) -> Vec<Option<u64>> {
    b.column_by_name(c)
        .unwrap_or_else(|| panic!("no column {c}"))
        .as_primitive::<UInt64Type>()
        .iter()
        .collect()
}

fn f64s(b: &RecordBatch, c: &str) -> Vec<f64> {
    b.column_by_name(c)
        .unwrap_or_else(|| panic!("no column {c}"))
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

fn strings(b: &RecordBatch, c: &str) -> Vec<String> {
    let col = arrow::compute::cast(b.column_by_name(c).unwrap(), &DataType::Utf8).unwrap();
    col.as_string::<i32>()
        .iter()
        .map(|s| s.unwrap().to_string())
        .collect()
}

fn import(root: &Path, layer: &str, out: &Path, table: Option<AnnotationTable>) {
    import_annotations(
        &open(root, layer),
        layer,
        &TableTarget::Path(out.to_path_buf()),
        &AnnotationImportOptions {
            context: CTX.into(),
            space: None,
            table,
        },
        &WriteOptions::default(),
    )
    .unwrap();
}

fn assert_valid(path: &Path) {
    let report = validate_path(
        path,
        &ValidateOptions {
            strict: true,
            ..Default::default()
        },
    );
    assert!(report.is_valid(), "{:?}", report.lines());
}

fn write_table(path: &Path, batch: &RecordBatch) {
    let mut w = TableWriter::create(path, batch.schema(), &WriteOptions::default()).unwrap();
    w.write(batch).unwrap();
    w.finish().unwrap();
}

#[test]
fn neuroglancer_points_read_as_a_point_cloud() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("points.pointclouds.parquet");
    import(&fixtures(), "points", &out, None);
    let b = table(&out);
    assert_eq!(
        u64s(&b, "sample_id"),
        (100..105).map(Some).collect::<Vec<_>>()
    );
    // x, y, z of 4, 4, 40 nm: positions in nanometres.
    for (i, x) in f64s(&b, "x").iter().enumerate() {
        assert_eq!(*x, 4.0 * (10 + i) as f64);
    }
    for (i, z) in f64s(&b, "z").iter().enumerate() {
        assert!((z - 40.0 * (3 + i) as f64).abs() < 1e-9);
    }
    // `segment` has two ids for odd i: fragment_id is the first, the list kept.
    assert_eq!(u64s(&b, "fragment_id"), [7, 8, 7, 8, 7].map(Some).to_vec());
    let lists = b.column_by_name("attr:segment").unwrap().as_list::<i32>();
    assert_eq!(
        lists
            .value(1)
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec(),
        vec![8, 42]
    );
    let kinds = b
        .column_by_name("attr:kind")
        .unwrap()
        .as_primitive::<UInt8Type>();
    assert_eq!(kinds.values().to_vec(), vec![0, 1, 2, 3, 4]);
    let depth = b
        .column_by_name("attr:depth")
        .unwrap()
        .as_primitive::<Int16Type>();
    assert_eq!(depth.value(2), -14);
    let count = b
        .column_by_name("attr:count")
        .unwrap()
        .as_primitive::<Int32Type>();
    assert_eq!(count.value(3), 3000);
    let red = b
        .column_by_name("attr:color:0")
        .unwrap()
        .as_primitive::<UInt8Type>();
    assert_eq!(red.value(4), 40);
    let md = b.schema().metadata().clone();
    assert_eq!(md["unit"], "nanometer");
    assert!(md[INFO_KEY].contains("neuroglancer_annotations_v1"));
    assert_valid(&out);
}

#[test]
fn neuroglancer_lines_read_as_connections() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("synapses.parquet");
    import(&fixtures(), "synapses", &out, None);
    // A directory target names its file; a file target keeps the name.
    let b = table(&out);
    assert_eq!(u64s(&b, "connection_id"), [1, 2, 3].map(Some).to_vec());
    assert_eq!(u64s(&b, "src_fragment_id"), [11, 12, 13].map(Some).to_vec());
    assert_eq!(u64s(&b, "tgt_fragment_id"), [21, 22, 23].map(Some).to_vec());
    assert_eq!(u64s(&b, "src_sample_id"), [2, 4, 6].map(Some).to_vec());
    assert_eq!(u64s(&b, "tgt_sample_id"), [3, 5, 7].map(Some).to_vec());
    assert_eq!(strings(&b, "type"), ["synapse"; 3]);
    // From (i, 2, 3) to (4, 5 i, 6), i = 0, 1, 2, in 4, 4, 40 nm steps.
    assert_eq!(f64s(&b, "attr:pre_x"), vec![0.0, 4.0, 8.0]);
    assert_eq!(f64s(&b, "attr:post_y"), vec![0.0, 20.0, 40.0]);
    assert_eq!(f64s(&b, "attr:post_z"), vec![240.0; 3]);
    assert_eq!(b.schema().metadata()["attr:unit"], "nanometer");
    assert!(b.column_by_name("attr:pre").is_none());
    assert_valid(&out);
    // Read as a point cloud, lines are refused.
    let err = import_annotations(
        &open(&fixtures(), "synapses"),
        "synapses",
        &TableTarget::Path(dir.path().join("x.pointclouds.parquet")),
        &AnnotationImportOptions {
            context: CTX.into(),
            space: None,
            table: Some(AnnotationTable::Pointclouds),
        },
        &WriteOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("line annotations"), "{err}");
}

#[test]
fn point_cloud_round_trips_unsharded_and_sharded() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.pointclouds.parquet");
    import(&fixtures(), "points", &src, None);
    let original = table(&src);
    for sharded in [false, true] {
        let layer = format!("layer_{sharded}");
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
        let summary = export_annotations(
            &TableSource::open(&src).unwrap(),
            store,
            &layer,
            &AnnotationExportOptions {
                sharding: sharded.then(|| default_sharding(5)),
                annotation_type: None,
                limit: 2,
            },
        )
        .unwrap();
        assert_eq!(summary.annotations, 5);
        assert_eq!(summary.annotation_type, AnnotationType::Point);
        let collection = open(dir.path(), &layer);
        let info = collection.info();
        // The earlier info's dimensions are kept; the relationships `segments` (from the
        // fragment) and `segment` (the list column, as Neuroglancer wrote it).
        assert_eq!(info.dimensions[2].scale, 4e-8);
        assert_eq!(
            info.relationships
                .iter()
                .map(|r| r.id.as_str())
                .collect::<Vec<_>>(),
            ["segments", "segment"]
        );
        assert_eq!(info.by_id.sharding.is_some(), sharded);
        assert!(info.spatial.len() > 1, "limit 2 makes finer levels");
        let a = collection.get(101).unwrap().unwrap();
        assert_eq!(a.geometry, vec![11.0, 22.0, 4.0]);
        let related = collection.related(1, 42).unwrap();
        let mut ids: Vec<u64> = related.iter().map(|a| a.id).collect();
        ids.sort();
        assert_eq!(ids, vec![101, 103]);
        let back = dir
            .path()
            .join(format!("back_{sharded}.pointclouds.parquet"));
        import(dir.path(), &layer, &back, None);
        let b = table(&back);
        for c in ["sample_id", "fragment_id"] {
            assert_eq!(u64s(&b, c), u64s(&original, c), "{c}");
        }
        for c in ["x", "y", "z"] {
            assert_eq!(f64s(&b, c), f64s(&original, c), "{c}");
        }
        for c in [
            "attr:score",
            "attr:kind",
            "attr:depth",
            "attr:count",
            "attr:color:1",
        ] {
            assert_eq!(
                b.column_by_name(c).unwrap().to_data(),
                original.column_by_name(c).unwrap().to_data(),
                "{c}"
            );
        }
        assert_valid(&back);
    }
}

/// A connections table with positions, a fragment left out and two types.
fn connections_table(path: &Path) {
    let types: DictionaryArray<UInt16Type> = ["synapse", "gap_junction", "synapse"]
        .into_iter()
        .map(Some)
        .collect();
    let columns: Vec<(&str, ArrayRef, bool)> = vec![
        (
            "connection_id",
            Arc::new(arrow::array::UInt64Array::from(vec![10, 11, 12])),
            false,
        ),
        (
            "src_sample_id",
            Arc::new(arrow::array::UInt64Array::from(vec![1, 2, 3])),
            false,
        ),
        (
            "tgt_sample_id",
            Arc::new(arrow::array::UInt64Array::from(vec![4, 5, 6])),
            false,
        ),
        ("type", Arc::new(types), false),
        (
            "src_fragment_id",
            Arc::new(arrow::array::UInt64Array::from(vec![
                Some(100),
                None,
                Some(100),
            ])),
            true,
        ),
        (
            "tgt_fragment_id",
            Arc::new(arrow::array::UInt64Array::from(vec![200, 201, 202])),
            true,
        ),
        (
            "attr:pre_x",
            Arc::new(arrow::array::Float64Array::from(vec![1.0, 2.0, 3.0])),
            false,
        ),
        (
            "attr:pre_y",
            Arc::new(arrow::array::Float64Array::from(vec![1.5, 2.5, 3.5])),
            false,
        ),
        (
            "attr:pre_z",
            Arc::new(arrow::array::Float64Array::from(vec![0.0, 0.0, 0.0])),
            false,
        ),
        (
            "attr:post_x",
            Arc::new(arrow::array::Float64Array::from(vec![5.0, 6.0, 7.0])),
            false,
        ),
        (
            "attr:post_y",
            Arc::new(arrow::array::Float64Array::from(vec![5.5, 6.5, 7.5])),
            false,
        ),
        (
            "attr:post_z",
            Arc::new(arrow::array::Float64Array::from(vec![1.0, 1.0, 1.0])),
            false,
        ),
        (
            "attr:weight",
            Arc::new(arrow::array::Float32Array::from(vec![0.25, 0.5, 1.0])),
            false,
        ),
    ];
    let md: HashMap<String, String> = [
        ("version", "0.2.1"),
        ("context", CTX),
        ("attr:unit", "micrometer"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let schema = Arc::new(Schema::new_with_metadata(
        columns
            .iter()
            .map(|(n, a, null)| Field::new(*n, a.data_type().clone(), *null))
            .collect::<Vec<_>>(),
        md,
    ));
    let batch =
        RecordBatch::try_new(schema, columns.into_iter().map(|(_, a, _)| a).collect()).unwrap();
    write_table(path, &batch);
}

#[test]
fn connections_round_trip_as_lines_and_points() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.connections.parquet");
    connections_table(&src);
    assert_valid(&src);
    let original = table(&src);
    for kind in [AnnotationType::Line, AnnotationType::Point] {
        let layer = format!("syn_{}", kind.name());
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
        export_annotations(
            &TableSource::open(&src).unwrap(),
            store,
            &layer,
            &AnnotationExportOptions {
                sharding: None,
                annotation_type: Some(kind),
                limit: 0,
            },
        )
        .unwrap();
        let collection = open(dir.path(), &layer);
        let info = collection.info();
        assert_eq!(info.annotation_type, kind);
        assert_eq!(info.dimensions[0].scale, 1e-6);
        let rels: Vec<&str> = info.relationships.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            rels,
            ["pre_segment", "post_segment", "pre_sample", "post_sample"]
        );
        // Listed as encoded: float32 `weight` before the uint8 enum `type`.
        assert_eq!(info.properties[0].id, "weight");
        let type_spec = &info.properties[1];
        assert_eq!(type_spec.id, "type");
        assert_eq!(
            type_spec.extra["enum_labels"],
            serde_json::json!(["gap_junction", "synapse"])
        );
        let a = collection.get(11).unwrap().unwrap();
        assert_eq!(
            a.relationships[0],
            Vec::<u64>::new(),
            "a null fragment is no id"
        );
        assert_eq!(a.relationships[1], vec![201]);
        let pre = collection.related(0, 100).unwrap();
        assert_eq!(pre.len(), 2);
        if kind == AnnotationType::Line {
            assert_eq!(a.geometry, vec![2.0, 2.5, 0.0, 6.0, 6.5, 1.0]);
        } else {
            assert_eq!(a.geometry, vec![6.0, 6.5, 1.0]);
        }
        let back = dir
            .path()
            .join(format!("back_{}.connections.parquet", kind.name()));
        import(
            dir.path(),
            &layer,
            &back,
            Some(AnnotationTable::Connections),
        );
        let b = table(&back);
        for c in [
            "connection_id",
            "src_sample_id",
            "tgt_sample_id",
            "src_fragment_id",
            "tgt_fragment_id",
        ] {
            assert_eq!(u64s(&b, c), u64s(&original, c), "{c}");
        }
        assert_eq!(strings(&b, "type"), strings(&original, "type"));
        for c in ["attr:post_x", "attr:post_y", "attr:post_z"] {
            assert_eq!(f64s(&b, c), f64s(&original, c), "{c}");
        }
        assert_eq!(
            b.column_by_name("attr:pre_x").is_some(),
            kind == AnnotationType::Line
        );
        assert_eq!(b.schema().metadata()["attr:unit"], "micrometer");
        assert_valid(&back);
    }
}

#[test]
fn bad_tables_are_errors_naming_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("in.connections.parquet");
    connections_table(&src);
    let original = table(&src);
    let export = |batch: &RecordBatch, name: &str| {
        let path = dir.path().join(name);
        write_table(&path, batch);
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
        export_annotations(
            &TableSource::open(&path).unwrap(),
            store,
            "out",
            &AnnotationExportOptions::default(),
        )
        .unwrap_err()
        .to_string()
    };
    // No post position.
    let without = original
        .project(
            &(0..original.num_columns())
                .filter(|&i| original.schema().field(i).name() != "attr:post_y")
                .collect::<Vec<_>>(),
        )
        .unwrap();
    let err = export(&without, "a.connections.parquet");
    assert!(err.contains("attr:post_y"), "{err}");
    // A property of a type annotations cannot hold.
    let mut fields: Vec<Field> = original
        .schema()
        .fields()
        .iter()
        .map(|f| (**f).clone())
        .collect();
    let mut columns = original.columns().to_vec();
    fields.push(Field::new("attr:big", DataType::UInt64, false));
    columns.push(Arc::new(arrow::array::UInt64Array::from(vec![1, 2, 3])));
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new_with_metadata(
            fields,
            original.schema().metadata().clone(),
        )),
        columns,
    )
    .unwrap();
    let err = export(&batch, "b.connections.parquet");
    assert!(err.contains("attr:big"), "{err}");
    assert!(!dir.path().join("out/info").exists());
    // Neither kind of table.
    let only = original.project(&[3]).unwrap();
    let err = export(&only, "c.parquet");
    assert!(err.contains("connection_id"), "{err}");
}
