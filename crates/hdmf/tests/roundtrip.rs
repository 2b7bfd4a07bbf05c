//! Write files in both conventions and read them back through the public API: typed objects,
//! links, references (object and region), scalars, text, compounds, specifications,
//! consolidated metadata, and conversion between the conventions.

use neurochunk_dtype::DataType;
use neurochunk_hdmf::demo::{f64s, i64s, numeric, scalar_text, write_demo, DemoOptions};
use neurochunk_hdmf::{
    convert_file, AttributeValue, Convention, DatasetOptions, DatasetValue, FieldKind, FieldValue,
    Inventory, NamespaceDocs, NodeKind, NwbFile, NwbWriter, Reference, Region, RegionSlice,
    TypeInfo, WriteOptions,
};
use serde_json::json;

const BOTH: [Convention; 2] = [Convention::Legacy, Convention::V3];

fn demo(dir: &std::path::Path, convention: Convention, scale: usize) -> std::path::PathBuf {
    let path = dir.join(format!("demo-{}.nwb.zarr", convention.label()));
    let namespaces = vec![NamespaceDocs {
        name: "ndx-test".into(),
        version: "0.1.0".into(),
        documents: vec![
            (
                "namespace".into(),
                json!({"namespaces": [{"name": "ndx-test", "version": "0.1.0", "schema": [{"source": "ndx-test.extensions"}]}]}),
            ),
            (
                "ndx-test.extensions".into(),
                json!({"groups": [{"neurodata_type_def": "Probe", "neurodata_type_inc": "Device", "doc": "a probe"}]}),
            ),
        ],
    }];
    write_demo(
        &path,
        &DemoOptions {
            convention,
            scale,
            namespaces,
            write: WriteOptions::default(),
        },
    )
    .unwrap();
    path
}

#[test]
fn demo_reads_back_with_links_references_and_scalars_in_both_conventions() {
    let dir = tempfile::tempdir().unwrap();
    for convention in BOTH {
        let path = demo(dir.path(), convention, 3);
        let file = NwbFile::open(&path).unwrap();
        assert_eq!(file.convention(), convention);
        assert!(
            file.used_consolidated_metadata(),
            "{convention}: consolidated metadata not used"
        );
        assert_eq!(file.nwb_version(), Some("2.11.0"));
        assert_eq!(file.specloc().as_deref(), Some("/specifications"));

        let objects = file.typed_objects();
        assert_eq!(objects[0].path, "/");
        assert_eq!(objects[0].neurodata_type, "NWBFile");
        assert_eq!(file.find_by_type("TimeSeries").len(), 2 + 3);
        let probe = file.find_by_type("Device").pop().unwrap();
        assert_eq!(
            file.find_by_object_id(probe.object_id.as_deref().unwrap())
                .unwrap()
                .path,
            "/general/devices/probe"
        );

        // Scalars are 0-d whichever way they are stored.
        let id = file.read_dataset("/identifier", None).unwrap();
        assert!(id.scalar && id.shape.is_empty(), "{convention}: {id:?}");
        assert_eq!(
            id.value,
            DatasetValue::Text {
                values: vec!["neurochunk-demo-ecephys".into()],
                bytes: false
            }
        );
        let start = file.read_dataset("/session_start_time", None).unwrap();
        let DatasetValue::Text { values, bytes } = &start.value else {
            panic!()
        };
        assert_eq!(values[0], "2024-03-05T09:30:00.000000-05:00");
        assert_eq!(
            *bytes,
            convention == Convention::Legacy,
            "isodatetimes are bytes only in the legacy convention"
        );

        // A link to a group and a link to a dataset resolve to the originals.
        let device = file
            .resolve("/general/extracellular_ephys/shank1/device")
            .unwrap();
        assert_eq!(
            (device.path.as_str(), device.kind),
            ("/general/devices/probe", NodeKind::Group)
        );
        let shared = file
            .read_dataset("/acquisition/position_y/timestamps", None)
            .unwrap();
        let original = file
            .read_dataset("/acquisition/position_x/timestamps", None)
            .unwrap();
        assert_eq!(shared, original);

        // References: the electrodes' group column, an attribute, and the trials compound.
        let groups = file
            .read_dataset("/general/extracellular_ephys/electrodes/group", None)
            .unwrap();
        let DatasetValue::References(refs) = &groups.value else {
            panic!("{convention}: {groups:?}")
        };
        let targets: Vec<&str> = refs
            .iter()
            .map(|r| r.as_ref().unwrap().path.as_str())
            .collect();
        assert_eq!(targets[0], "/general/extracellular_ephys/shank0");
        assert_eq!(targets[7], "/general/extracellular_ephys/shank1");
        match file
            .attribute("/acquisition/ElectricalSeries/electrodes", "table")
            .unwrap()
        {
            Some(AttributeValue::Reference(r)) => {
                assert_eq!(r.path, "/general/extracellular_ephys/electrodes")
            }
            other => panic!("{convention}: {other:?}"),
        }
        let trials = file
            .read_dataset("/intervals/trials/timeseries", None)
            .unwrap();
        let DatasetValue::Compound { fields, rows } = &trials.value else {
            panic!("{convention}: {trials:?}")
        };
        assert_eq!(fields[2].kind, FieldKind::Reference);
        assert_eq!(fields[0].kind, FieldKind::Numeric(DataType::Int32));
        assert_eq!(rows[1][0], FieldValue::Number(json!(750)));
        assert_eq!(
            rows[3][2],
            FieldValue::Reference(Some(Reference::to("/acquisition/ElectricalSeries")))
        );

        let inventory = Inventory::of(&file).unwrap();
        assert_eq!(inventory.links.len(), 3);
        assert_eq!(inventory.dataset_refs.len(), 8 + 5 + 4);
        assert!(neurochunk_hdmf::check(&file).is_empty());

        let specs = file.specifications().unwrap();
        assert_eq!(specs.len(), 1);
        assert_eq!(
            specs[0].sources,
            vec!["namespace".to_string(), "ndx-test.extensions".into()]
        );
        let doc = file
            .specification("ndx-test", "0.1.0", "ndx-test.extensions")
            .unwrap();
        assert_eq!(doc["groups"][0]["neurodata_type_def"], "Probe");
    }
}

#[test]
fn conversion_keeps_objects_links_references_and_specs_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    for (from, to) in [
        (Convention::Legacy, Convention::V3),
        (Convention::V3, Convention::Legacy),
    ] {
        let source_path = demo(dir.path(), from, 2);
        let source = NwbFile::open(&source_path).unwrap();
        let out = dir
            .path()
            .join(format!("converted-{}.nwb.zarr", to.label()));
        let (_, summary) =
            convert_file(&source, &out, to, WriteOptions::default(), &|_| {}).unwrap();
        assert_eq!(summary.namespaces, 1);
        let converted = NwbFile::open(&out).unwrap();
        assert_eq!(converted.convention(), to);
        let a = Inventory::of(&source).unwrap().to_json();
        let b = Inventory::of(&converted).unwrap().to_json();
        assert_eq!(a, b, "{from} -> {to}: the inventories differ");
        for path in [
            "/acquisition/ElectricalSeries/data",
            "/units/spike_times_index",
            "/intervals/trials/timeseries",
            "/identifier",
            "/file_create_date",
        ] {
            let x = source.read_dataset(path, None).unwrap();
            let y = converted.read_dataset(path, None).unwrap();
            assert_eq!(x.shape, y.shape, "{path}");
            assert_eq!(x.scalar, y.scalar, "{path}");
            match (&x.value, &y.value) {
                // Bytes-typed text becomes plain text in v3.
                (DatasetValue::Text { values: a, .. }, DatasetValue::Text { values: b, .. }) => {
                    assert_eq!(a, b, "{path}")
                }
                (a, b) => assert_eq!(a, b, "{path}"),
            }
        }
        assert_eq!(
            source
                .specification("ndx-test", "0.1.0", "namespace")
                .unwrap(),
            converted
                .specification("ndx-test", "0.1.0", "namespace")
                .unwrap()
        );
    }
}

#[test]
fn region_references_select_slices_and_points_in_attributes_and_datasets() {
    let dir = tempfile::tempdir().unwrap();
    for convention in BOTH {
        let path = dir
            .path()
            .join(format!("region-{}.nwb.zarr", convention.label()));
        let mut w = NwbWriter::create(&path, convention, WriteOptions::default()).unwrap();
        w.root("2.11.0", &TypeInfo::new("core", "NWBFile"), &[])
            .unwrap();
        let grid: Vec<u8> = (0..60i32).flat_map(|x| x.to_le_bytes()).collect();
        w.dataset(
            "/data/grid",
            None,
            &numeric(DataType::Int32, vec![6, 10], grid),
            &[],
            &DatasetOptions::default(),
        )
        .unwrap();
        let slice = Region::Slices(vec![
            Some(RegionSlice {
                start: 1,
                stop: 5,
                step: 2,
            }),
            None,
        ]);
        let points = Region::Points(vec![vec![0, 0], vec![5, 9], vec![2, 3]]);
        let attr = Reference::to("/data/grid").with_region(slice.clone());
        w.group(
            "/data",
            None,
            &[("rows".into(), AttributeValue::Reference(attr.clone()))],
        )
        .unwrap();
        let refs = neurochunk_hdmf::Dataset {
            shape: vec![2],
            scalar: false,
            value: DatasetValue::References(vec![
                Some(Reference::to("/data/grid").with_region(points.clone())),
                Some(attr.clone()),
            ]),
        };
        w.dataset(
            "/data/selections",
            None,
            &refs,
            &[],
            &DatasetOptions::default(),
        )
        .unwrap();
        w.finish().unwrap();

        let file = NwbFile::open(&path).unwrap();
        let Some(AttributeValue::Reference(read_attr)) = file.attribute("/data", "rows").unwrap()
        else {
            panic!()
        };
        assert_eq!(read_attr.region.as_ref(), Some(&slice));
        let rows = file.read_reference(&read_attr).unwrap();
        assert_eq!(rows.shape, vec![2, 10]);
        let DatasetValue::Numeric { bytes, .. } = &rows.value else {
            panic!()
        };
        let values: Vec<i32> = bytes
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(values[..3], [10, 11, 12]);
        assert_eq!(values[10..13], [30, 31, 32]);

        let DatasetValue::References(stored) =
            file.read_dataset("/data/selections", None).unwrap().value
        else {
            panic!()
        };
        let picked = file.read_reference(stored[0].as_ref().unwrap()).unwrap();
        assert_eq!(picked.shape, vec![3]);
        let DatasetValue::Numeric { bytes, .. } = &picked.value else {
            panic!()
        };
        let values: Vec<i32> = bytes
            .chunks(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(values, [0, 59, 23]);

        let json = Inventory::of(&file).unwrap().to_json();
        assert_eq!(
            json["attribute_refs"][0]["region"],
            json!([[1, 5, 2], null])
        );
        assert_eq!(
            json["dataset_refs"][0]["region"],
            json!({"points": [[0, 0], [5, 9], [2, 3]]})
        );
        let marker = match convention {
            Convention::Legacy => ("zarr_dtype", "region"),
            Convention::V3 => ("_DTYPE", "region_reference"),
        };
        let raw = file.open_array("/data/selections").unwrap();
        assert_eq!(raw.metadata().attributes[marker.0], marker.1);
        assert!(neurochunk_hdmf::check(&file).is_empty());
    }
}

#[test]
fn stale_consolidated_metadata_falls_back_to_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(dir.path(), Convention::Legacy, 0);
    // A dataset added by another tool after consolidation.
    let mut w = NwbWriter::create(
        dir.path().join("extra.nwb.zarr"),
        Convention::Legacy,
        WriteOptions::default(),
    )
    .unwrap();
    w.dataset(
        "/late",
        None,
        &f64s(&[1.5, 2.5]),
        &[],
        &DatasetOptions::default(),
    )
    .unwrap();
    let extra = std::path::PathBuf::from(w.finish().unwrap());
    std::fs::rename(extra.join("late"), path.join("analysis").join("late")).unwrap();
    let file = NwbFile::open(&path).unwrap();
    assert!(file.used_consolidated_metadata());
    let late = file.read_dataset("/analysis/late", None).unwrap();
    assert_eq!(late, f64s(&[1.5, 2.5]));
    let walked = NwbFile::open_with(
        &path,
        neurochunk_hdmf::ReadOptions {
            use_consolidated: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(walked.nodes().any(|(p, _)| p == "/analysis/late"));
}

/// hdmf-zarr (2024, zarr 2) consolidated the metadata before it cached the specifications, so
/// `.zmetadata` lacks both the `specifications/` nodes and the root's `.specloc` (the case of
/// `consolidated.nwb.zarr` in bjhardcastle/test-hdmf-zarr at ffec317, reproduced here by
/// removing them from a consolidated demo file's `.zmetadata`).
#[test]
fn specifications_missing_from_consolidated_metadata_are_found_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = demo(dir.path(), Convention::Legacy, 0);
    let zmeta_path = path.join(".zmetadata");
    let mut zmeta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&zmeta_path).unwrap()).unwrap();
    let metadata = zmeta["metadata"].as_object_mut().unwrap();
    let before = metadata.len();
    metadata.retain(|k, _| !k.starts_with("specifications/"));
    assert!(metadata.len() < before, "the demo caches specifications");
    let root = metadata
        .get_mut(".zattrs")
        .unwrap()
        .as_object_mut()
        .unwrap();
    assert!(root.remove(".specloc").is_some());
    std::fs::write(&zmeta_path, serde_json::to_vec_pretty(&zmeta).unwrap()).unwrap();

    let file = NwbFile::open(&path).unwrap();
    assert!(file.used_consolidated_metadata());
    assert_eq!(file.specloc().as_deref(), Some("/specifications"));
    let specs = file.specifications().unwrap();
    let names: Vec<&str> = specs.iter().map(|n| n.name.as_str()).collect();
    assert!(names.contains(&"ndx-test"), "{names:?}");
    let ns = specs.iter().find(|n| n.name == "ndx-test").unwrap();
    assert_eq!(ns.version, "0.1.0");
    let doc = file
        .specification("ndx-test", "0.1.0", "ndx-test.extensions")
        .unwrap();
    assert_eq!(doc["groups"][0]["neurodata_type_def"], "Probe");
}

#[test]
fn external_links_resolve_inside_the_allowed_tree_only() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("session");
    std::fs::create_dir_all(&base).unwrap();
    let mut w = NwbWriter::create(
        base.join("raw.nwb.zarr"),
        Convention::V3,
        WriteOptions::default(),
    )
    .unwrap();
    w.dataset(
        "/acquisition/data",
        None,
        &i64s(&[7, 8, 9]),
        &[],
        &DatasetOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    let mut w = NwbWriter::create(
        base.join("main.nwb.zarr"),
        Convention::V3,
        WriteOptions::default(),
    )
    .unwrap();
    w.group(
        "/acquisition/view",
        Some(&TypeInfo::new("core", "TimeSeries")),
        &[],
    )
    .unwrap();
    w.link(
        "/acquisition/view",
        "data",
        "/acquisition/data",
        "../raw.nwb.zarr",
    )
    .unwrap();
    w.dataset(
        "/scalar",
        None,
        &scalar_text("x", false),
        &[],
        &DatasetOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    let file = NwbFile::open(base.join("main.nwb.zarr")).unwrap();
    assert_eq!(
        file.read_dataset("/acquisition/view/data", None).unwrap(),
        i64s(&[7, 8, 9])
    );
    let target = file.resolve("/acquisition/view/data").unwrap();
    assert!(target.file.unwrap().name().ends_with("raw.nwb.zarr"));

    // Allowing only the file's own directory tree refuses the sibling.
    let strict = NwbFile::open_with(
        base.join("main.nwb.zarr"),
        neurochunk_hdmf::ReadOptions {
            resolver: Some(std::sync::Arc::new(neurochunk_hdmf::FsResolver {
                allowed_roots: vec![base.join("main.nwb.zarr")],
                allow_any: false,
                files: None,
            })),
            ..Default::default()
        },
    )
    .unwrap();
    let err = strict
        .read_dataset("/acquisition/view/data", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("outside the allowed directory") && err.contains("../raw.nwb.zarr"),
        "{err}"
    );
}

#[test]
fn generic_zarr_conversion_keeps_pickled_compounds_and_reference_dictionaries() {
    use neurochunk_array::convert::{convert_hierarchy, ConvertOptions};
    use neurochunk_array::{FsStore, Store, ZarrFormat};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let source_path = demo(dir.path(), Convention::Legacy, 0);
    // Make the reference column pickled too, as pynwb writes it.
    let column = source_path.join("general/extracellular_ephys/electrodes/group");
    let source = NwbFile::open(&source_path).unwrap();
    let DatasetValue::References(refs) = source
        .read_dataset("/general/extracellular_ephys/electrodes/group", None)
        .unwrap()
        .value
    else {
        panic!()
    };
    let items: Vec<serde_json::Value> = refs
        .iter()
        .map(|r| r.as_ref().unwrap().to_json(true))
        .collect();
    let pickled = neurochunk_pickle::encode_object_array(&[items.len()], &items, None).unwrap();
    std::fs::write(column.join("0"), pickled).unwrap();
    let zarray = column.join(".zarray");
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&zarray).unwrap()).unwrap();
    doc["filters"] = json!([{"id": "pickle", "protocol": 5}]);
    std::fs::write(&zarray, serde_json::to_vec(&doc).unwrap()).unwrap();
    std::fs::remove_file(source_path.join(".zmetadata")).unwrap();

    let out = dir.path().join("recompressed.nwb.zarr");
    let src: Arc<dyn Store> = Arc::new(FsStore::new(&source_path));
    let dst: Arc<dyn Store> = Arc::new(FsStore::new(&out));
    let options = ConvertOptions {
        format: Some(ZarrFormat::V2),
        compressors: Some(vec![neurochunk_codec::Codec::zstd(3)]),
        source_adapter: Some(neurochunk_hdmf::reference_source_adapter()),
        ..Default::default()
    };
    convert_hierarchy(src, "", dst, "", &options, &|_| {}, &|_, _| {}).unwrap();

    let written: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("intervals/trials/timeseries/.zarray")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        written["dtype"],
        json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]])
    );
    assert_eq!(written["filters"], json!([{"id": "pickle", "protocol": 2}]));
    // The chunks are records and dictionaries again, not JSON text.
    let chunk = std::fs::read(out.join("intervals/trials/timeseries/0")).unwrap();
    let zstd = neurochunk_codec::ZstdCodec::new(3, false);
    let mut decoded = Vec::new();
    neurochunk_codec::BytesToBytesCodec::decode(&zstd, &chunk, &mut decoded, None).unwrap();
    let array = neurochunk_pickle::decode_object_array(
        &decoded,
        &neurochunk_pickle::AllowList::hdmf_zarr(),
    )
    .unwrap();
    assert_eq!(
        array.items[0]["timeseries"]["path"],
        "/acquisition/ElectricalSeries"
    );
    // json2 reference columns keep dictionaries too (not their JSON text as strings).
    let chunk = std::fs::read(out.join("units/electrode_group/0")).unwrap();
    let mut decoded = Vec::new();
    neurochunk_codec::BytesToBytesCodec::decode(&zstd, &chunk, &mut decoded, None).unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&decoded).unwrap();
    assert_eq!(
        listed[0],
        json!({"path": "/general/extracellular_ephys/shank0", "source": "."})
    );
    let zarray: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("units/electrode_group/.zarray")).unwrap())
            .unwrap();
    assert!(
        zarray["filters"][0].get("neurochunk_objects").is_none(),
        "internal keys must not be written"
    );
    let converted = NwbFile::open(&out).unwrap();
    let source = NwbFile::open(&source_path).unwrap();
    for path in [
        "/intervals/trials/timeseries",
        "/general/extracellular_ephys/electrodes/group",
        "/units/electrode_group",
    ] {
        assert_eq!(
            converted.read_dataset(path, None).unwrap().value,
            source.read_dataset(path, None).unwrap().value,
            "{path}"
        );
    }
}
