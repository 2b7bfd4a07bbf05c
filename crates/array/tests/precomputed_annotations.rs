//! Precomputed annotation collections: reading what Neuroglancer's own writer produced (the
//! fixtures in tests/data/annotations), writing collections (unsharded and sharded, every
//! geometry) and reading them back, and damaged files reported by name.

use std::path::Path;
use std::sync::Arc;

use neurochunk_array::precomputed::annotation::{
    Annotation, AnnotationCollection, AnnotationError, AnnotationInfo, AnnotationType, Dimension,
    IndexSpec, PropertySpec, PropertyType, PropertyValue, RelationshipSpec,
};
use neurochunk_array::precomputed::sharding::{ShardEncoding, ShardHash, ShardingSpec};
use neurochunk_store::{Bytes, CountingStore, FsStore, MemoryStore, Store};

fn fixtures() -> Arc<dyn Store> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/annotations");
    Arc::new(FsStore::new(dir))
}

#[test]
fn points_written_by_neuroglancer() {
    let collection = AnnotationCollection::open(fixtures(), "points").unwrap();
    let info = collection.info();
    assert_eq!(info.annotation_type, AnnotationType::Point);
    assert_eq!(info.rank(), 3);
    assert_eq!(info.dimensions[2].scale, 4e-8);
    let names: Vec<&str> = info.properties.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(names, ["score", "count", "depth", "kind", "color"]);
    let all = collection.read_all().unwrap();
    assert_eq!(all.len(), 5);
    for (i, a) in all.iter().enumerate() {
        let f = i as f32;
        let n = i as i64;
        assert_eq!(a.id, 100 + i as u64);
        assert_eq!(a.geometry, vec![10.0 + f, 20.0 + 2.0 * f, 3.0 + f]);
        assert_eq!(
            a.properties,
            vec![
                PropertyValue::Float(0.5 * f),
                PropertyValue::Int(1000 * n),
                PropertyValue::Int(-7 * n),
                PropertyValue::Int(n),
                PropertyValue::Rgb([10 * i as u8, 200, 30]),
            ]
        );
        let expected = if i % 2 == 1 {
            vec![7 + (i as u64 % 2), 42]
        } else {
            vec![7]
        };
        assert_eq!(a.relationships, vec![expected]);
    }
    // The related-object index: segment 42 is related to the odd annotations.
    let mut related: Vec<u64> = collection
        .related(0, 42)
        .unwrap()
        .iter()
        .map(|a| a.id)
        .collect();
    related.sort_unstable();
    assert_eq!(related, vec![101, 103]);
    assert!(collection.related(0, 999).unwrap().is_empty());
    assert_eq!(
        collection.get(102).unwrap().unwrap().geometry,
        vec![12.0, 24.0, 5.0]
    );
    assert!(collection.get(5).unwrap().is_none());
}

#[test]
fn lines_written_by_neuroglancer() {
    let collection = AnnotationCollection::open(fixtures(), "synapses").unwrap();
    assert_eq!(collection.info().annotation_type, AnnotationType::Line);
    let all = collection.read_all().unwrap();
    assert_eq!(all.len(), 3);
    for (i, a) in all.iter().enumerate() {
        let f = i as f32;
        assert_eq!(a.geometry, vec![f, 2.0, 3.0, 4.0, 5.0 * f, 6.0]);
        assert_eq!(
            a.relationships,
            vec![vec![11 + i as u64], vec![21 + i as u64]]
        );
    }
}

fn info(
    kind: AnnotationType,
    properties: Vec<PropertySpec>,
    relationships: &[&str],
) -> AnnotationInfo {
    AnnotationInfo {
        dimensions: ["x", "y", "z"]
            .iter()
            .map(|n| Dimension {
                name: n.to_string(),
                scale: 8e-9,
                unit: "m".into(),
            })
            .collect(),
        lower_bound: vec![],
        upper_bound: vec![],
        annotation_type: kind,
        properties,
        relationships: relationships
            .iter()
            .map(|id| RelationshipSpec {
                id: id.to_string(),
                index: IndexSpec {
                    key: String::new(),
                    sharding: None,
                },
            })
            .collect(),
        by_id: IndexSpec {
            key: String::new(),
            sharding: None,
        },
        spatial: vec![],
        other: Default::default(),
    }
}

/// Synapse-like lines spread over a volume, with a uint8 property listed before a float32 one
/// (the encoding puts the float first) and two relationships.
fn synapses(n: u64) -> Vec<Annotation> {
    (0..n)
        .map(|i| {
            let x = (i * 37 % 1000) as f32;
            let y = (i * 91 % 700) as f32;
            let z = (i * 13 % 90) as f32;
            Annotation {
                id: 1_000_000 + i * 3,
                geometry: vec![x, y, z, x + 5.0, y - 3.0, z + 1.0],
                properties: vec![
                    PropertyValue::Int((i % 7) as i64),
                    PropertyValue::Float(i as f32 / 8.0),
                ],
                relationships: vec![vec![i % 50 + 1], vec![i % 31 + 100, 7]],
            }
        })
        .collect()
}

fn check_round_trip(sharding: Option<ShardingSpec>) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let properties = vec![
        PropertySpec::new("confidence_class", PropertyType::Uint8),
        PropertySpec::new("score", PropertyType::Float32),
    ];
    let written = synapses(2000);
    let collection = AnnotationCollection::create(
        store.clone(),
        "layer/synapses",
        info(AnnotationType::Line, properties, &["pre", "post"]),
        &written,
        100,
        sharding.clone(),
    )
    .unwrap();
    let info = collection.info().clone();
    assert!(
        info.spatial.len() > 1,
        "2000 annotations at 100 per cell need finer levels"
    );
    assert!(info.spatial.iter().all(|l| l.limit == 100));
    let reopened = AnnotationCollection::open(store.clone(), "layer/synapses").unwrap();
    assert_eq!(reopened.info(), &info);
    let mut read = reopened.read_all().unwrap();
    read.sort_by_key(|a| a.id);
    assert_eq!(read, written);
    // Every annotation appears in the spatial index; cells keep to the limit but at the finest
    // level.
    let related: Vec<u64> = reopened
        .related(1, 7)
        .unwrap()
        .iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(related.len(), 2000);
    let pre_3: Vec<u64> = reopened
        .related(0, 3)
        .unwrap()
        .iter()
        .map(|a| a.id)
        .collect();
    assert_eq!(pre_3.len(), 40);
    assert!(pre_3.iter().all(|id| (id - 1_000_000) / 3 % 50 == 2));
    if sharding.is_some() {
        let keys = store.list_dir("layer/synapses/by_id").unwrap().keys;
        assert!(keys.iter().all(|k| k.ends_with(".shard")), "{keys:?}");
    }
}

#[test]
fn written_collections_read_back_unsharded() {
    check_round_trip(None);
}

#[test]
fn written_collections_read_back_sharded() {
    check_round_trip(Some(ShardingSpec {
        preshift_bits: 0,
        hash: ShardHash::Murmurhash3X86_128,
        minishard_bits: 3,
        shard_bits: 2,
        minishard_index_encoding: ShardEncoding::Gzip,
        data_encoding: ShardEncoding::Gzip,
    }));
}

#[test]
fn every_geometry_and_property_type_round_trips() {
    let all_types = [
        ("a_uint8", PropertyType::Uint8, PropertyValue::Int(255)),
        ("b_int8", PropertyType::Int8, PropertyValue::Int(-128)),
        ("c_uint16", PropertyType::Uint16, PropertyValue::Int(65535)),
        ("d_int16", PropertyType::Int16, PropertyValue::Int(-3)),
        (
            "e_uint32",
            PropertyType::Uint32,
            PropertyValue::Int(4_000_000_000),
        ),
        (
            "f_int32",
            PropertyType::Int32,
            PropertyValue::Int(-2_000_000_000),
        ),
        (
            "g_float32",
            PropertyType::Float32,
            PropertyValue::Float(-0.25),
        ),
        ("h_rgb", PropertyType::Rgb, PropertyValue::Rgb([1, 2, 3])),
        (
            "i_rgba",
            PropertyType::Rgba,
            PropertyValue::Rgba([4, 5, 6, 7]),
        ),
    ];
    let geometries = [
        (AnnotationType::Point, vec![1.0, 2.0, 3.0]),
        (AnnotationType::Line, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        (
            AnnotationType::AxisAlignedBoundingBox,
            vec![0.0, 0.0, 0.0, 9.0, 8.0, 7.0],
        ),
        (
            AnnotationType::Ellipsoid,
            vec![5.0, 5.0, 5.0, 2.0, 1.0, 0.5],
        ),
        (
            AnnotationType::Polyline,
            vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0, 3.0],
        ),
    ];
    for (kind, geometry) in geometries {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let properties = all_types
            .iter()
            .map(|(id, t, _)| PropertySpec::new(id, *t))
            .collect();
        let annotation = Annotation {
            id: 9,
            geometry: geometry.clone(),
            properties: all_types.iter().map(|(_, _, v)| *v).collect(),
            relationships: vec![vec![1, 2, 3]],
        };
        AnnotationCollection::create(
            store.clone(),
            "a",
            info(kind, properties, &["segments"]),
            std::slice::from_ref(&annotation),
            10,
            None,
        )
        .unwrap();
        let reopened = AnnotationCollection::open(store, "a").unwrap();
        assert_eq!(
            reopened.read_all().unwrap(),
            vec![annotation.clone()],
            "{kind:?}"
        );
    }
}

#[test]
fn values_that_do_not_fit_are_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let bad = Annotation {
        id: 1,
        geometry: vec![1.0, 2.0, 3.0],
        properties: vec![PropertyValue::Int(300)],
        relationships: vec![],
    };
    let err = AnnotationCollection::create(
        store.clone(),
        "a",
        info(
            AnnotationType::Point,
            vec![PropertySpec::new("k", PropertyType::Uint8)],
            &[],
        ),
        &[bad],
        10,
        None,
    )
    .unwrap_err();
    assert!(err.to_string().contains("property 'k'"), "{err}");
    let short = Annotation {
        id: 2,
        geometry: vec![1.0, 2.0],
        properties: vec![],
        relationships: vec![],
    };
    let err = AnnotationCollection::create(
        store,
        "b",
        info(AnnotationType::Point, vec![], &[]),
        &[short],
        10,
        None,
    )
    .unwrap_err();
    assert!(matches!(err, AnnotationError::Invalid(_)), "{err}");
}

fn copy_fixture(store: &dyn Store, from: &str) {
    let src = fixtures();
    for key in [
        "info",
        "by_id/100",
        "by_id/101",
        "spatial0/0_0_0",
        "rel_segment/42",
    ] {
        let value = src.get(&format!("{from}/{key}")).unwrap().unwrap();
        store.set(&format!("{from}/{key}"), value).unwrap();
    }
}

#[test]
fn damaged_files_are_named() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    copy_fixture(store.as_ref(), "points");
    // An id file cut short.
    let full = store.get("points/by_id/100").unwrap().unwrap();
    store
        .set("points/by_id/100", full.slice(..full.len() - 3))
        .unwrap();
    let collection = AnnotationCollection::open(store.clone(), "points").unwrap();
    let err = collection.get(100).unwrap_err().to_string();
    assert!(err.contains("by_id/100"), "{err}");
    // A spatial cell claiming more annotations than it holds.
    let mut cell = store
        .get("points/spatial0/0_0_0")
        .unwrap()
        .unwrap()
        .to_vec();
    cell[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    store
        .set("points/spatial0/0_0_0", Bytes::from(cell))
        .unwrap();
    let err = collection.read_all().unwrap_err().to_string();
    assert!(
        err.contains("spatial0/0_0_0") && err.contains("cannot fit"),
        "{err}"
    );
    // Trailing bytes after an annotation.
    let mut long = store.get("points/by_id/101").unwrap().unwrap().to_vec();
    long.extend_from_slice(&[0; 5]);
    store.set("points/by_id/101", Bytes::from(long)).unwrap();
    assert!(collection
        .get(101)
        .unwrap_err()
        .to_string()
        .contains("left over"));
    // An index key that climbs out of the store.
    let mut doc: serde_json::Value =
        serde_json::from_slice(&store.get("points/info").unwrap().unwrap()).unwrap();
    doc["by_id"]["key"] = serde_json::json!("../../../outside");
    store
        .set(
            "points/info",
            Bytes::from(serde_json::to_vec(&doc).unwrap()),
        )
        .unwrap();
    let collection = AnnotationCollection::open(store.clone(), "points").unwrap();
    assert!(collection
        .get(100)
        .unwrap_err()
        .to_string()
        .contains("outside the store"));
    // A malformed info.
    doc["annotation_type"] = serde_json::json!("cube");
    store
        .set(
            "points/info",
            Bytes::from(serde_json::to_vec(&doc).unwrap()),
        )
        .unwrap();
    let err = AnnotationCollection::open(store, "points")
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("annotation_type"), "{err}");
}

#[test]
fn a_huge_spatial_grid_is_listed_not_probed() {
    // An info claiming 2^36 cells (hostile, or a very fine level) with one cell present:
    // reading everything lists the level's directory instead of asking for every cell.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    copy_fixture(store.as_ref(), "points");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&store.get("points/info").unwrap().unwrap()).unwrap();
    doc["spatial"][0]["grid_shape"] = serde_json::json!([4096, 4096, 4096]);
    store
        .set(
            "points/info",
            Bytes::from(serde_json::to_vec(&doc).unwrap()),
        )
        .unwrap();
    let cell = store.get("points/spatial0/0_0_0").unwrap().unwrap();
    store.delete("points/spatial0/0_0_0").unwrap();
    store.set("points/spatial0/17_4095_3", cell).unwrap();
    // Names that are no cells of the grid are ignored.
    store
        .set("points/spatial0/4096_0_0", Bytes::from_static(b"junk"))
        .unwrap();
    store
        .set("points/spatial0/01_0_0", Bytes::from_static(b"junk"))
        .unwrap();
    let counting = Arc::new(CountingStore::new(store));
    let collection = AnnotationCollection::open(counting.clone(), "points").unwrap();
    let all = collection.read_all().unwrap();
    let ids: Vec<u64> = all.iter().map(|a| a.id).collect();
    assert_eq!(ids, [100, 101]);
    let reads = counting.counts().whole_reads;
    assert!(reads < 20, "{reads} reads for one cell and two annotations");
}
