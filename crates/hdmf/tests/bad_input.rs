//! Hostile and broken files: forbidden or truncated pickles, references and links to missing
//! objects, link cycles, external sources escaping the allowed tree, malformed link lists.
//! Each must give a clear error (or a reported problem) naming the object; none may panic or
//! run code from the file.

use std::path::{Path, PathBuf};

use neurochunk_hdmf::demo::{i64s, references};
use neurochunk_hdmf::{
    check, structure_problems, AttributeValue, Convention, DatasetOptions, Inventory, NwbFile,
    NwbWriter, Reference, TypeInfo, WriteOptions,
};
use serde_json::{json, Value};

fn small_legacy(dir: &Path) -> PathBuf {
    let path = dir.join("bad.nwb.zarr");
    let mut w = NwbWriter::create(&path, Convention::Legacy, WriteOptions::default()).unwrap();
    w.root("2.11.0", &TypeInfo::new("core", "NWBFile"), &[])
        .unwrap();
    w.group(
        "/general/devices/probe",
        Some(&TypeInfo::new("core", "Device")),
        &[],
    )
    .unwrap();
    w.dataset(
        "/table/group",
        None,
        &references(&["/general/devices/probe".into()]),
        &[],
        &DatasetOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    // Edits below bypass consolidated metadata.
    std::fs::remove_file(path.join(".zmetadata")).unwrap();
    path
}

fn edit_json(path: &Path, edit: impl FnOnce(&mut Value)) {
    let mut value: Value = match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(_) => json!({}),
    };
    edit(&mut value);
    std::fs::write(path, serde_json::to_vec(&value).unwrap()).unwrap();
}

/// Make `/table/group` a pickled object array holding `payload`.
fn use_pickle(file: &Path, payload: &[u8]) {
    edit_json(&file.join("table/group/.zarray"), |z| {
        z["filters"] = json!([{"id": "pickle", "protocol": 2}])
    });
    std::fs::write(file.join("table/group/0"), payload).unwrap();
}

#[test]
fn a_pickle_naming_os_system_is_refused_and_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_legacy(dir.path());
    let marker = dir.path().join("pwned");
    let command = format!("touch {}", marker.display());
    let mut payload = b"\x80\x02cos\nsystem\nX".to_vec();
    payload.extend_from_slice(&(command.len() as u32).to_le_bytes());
    payload.extend_from_slice(command.as_bytes());
    payload.extend_from_slice(b"\x85R.");
    use_pickle(&path, &payload);
    let file = NwbFile::open(&path).unwrap();
    let err = Inventory::of(&file).unwrap_err().to_string();
    assert!(err.contains("os.system"), "{err}");
    assert!(
        err.contains("table/group"),
        "the error must name the dataset: {err}"
    );
    assert!(!marker.exists(), "code from the file was run");
    let problems = check(&file);
    assert!(
        problems
            .iter()
            .any(|p| p.path == "/table/group" && p.message.contains("os.system")),
        "{problems:?}"
    );
}

#[test]
fn a_truncated_pickle_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_legacy(dir.path());
    // The start of a real protocol-2 object-array pickle, cut short.
    use_pickle(
        &path,
        b"\x80\x02cnumpy.core.multiarray\n_reconstruct\nq\x00cnumpy\nndarray\nq\x01K\x00\x85q\x02",
    );
    let file = NwbFile::open(&path).unwrap();
    let err = file
        .read_dataset("/table/group", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("table/group") && err.to_lowercase().contains("truncated"),
        "{err}"
    );
}

#[test]
fn references_and_links_to_missing_objects_are_reported_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dangling.nwb.zarr");
    let mut w = NwbWriter::create(&path, Convention::V3, WriteOptions::default()).unwrap();
    w.group(
        "/a",
        None,
        &[(
            "table".into(),
            AttributeValue::Reference(Reference::to("/nowhere/table")),
        )],
    )
    .unwrap();
    w.link("/a", "device", "/general/devices/missing", ".")
        .unwrap();
    w.dataset(
        "/a/ids",
        None,
        &i64s(&[1, 2]),
        &[],
        &DatasetOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    let file = NwbFile::open(&path).unwrap();
    // The rest of the file reads.
    assert_eq!(file.read_dataset("/a/ids", None).unwrap(), i64s(&[1, 2]));
    assert_eq!(Inventory::of(&file).unwrap().links.len(), 1);
    let problems = check(&file);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems
        .iter()
        .any(|p| p.path == "/a/device" && p.message.contains("/general/devices/missing")));
    assert!(problems
        .iter()
        .any(|p| p.path == "/a@table" && p.message.contains("/nowhere/table")));
    let err = file
        .read_dataset("/a/device", None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/general/devices/missing") || err.contains("/general/devices"),
        "{err}"
    );
}

#[test]
fn link_cycles_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cycle.nwb.zarr");
    let mut w = NwbWriter::create(&path, Convention::Legacy, WriteOptions::default()).unwrap();
    w.link("/a", "b", "/c/d", ".").unwrap();
    w.link("/c", "d", "/a/b", ".").unwrap();
    w.finish().unwrap();
    let file = NwbFile::open(&path).unwrap();
    let err = file.resolve("/a/b").unwrap_err().to_string();
    assert!(
        err.contains("link cycle") && err.contains("/a/b") && err.contains("/c/d"),
        "{err}"
    );
    let problems = check(&file);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| p.message.contains("link cycle")));
}

#[test]
fn external_sources_escaping_the_allowed_tree_are_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("elsewhere");
    let inside = dir.path().join("lab").join("session");
    std::fs::create_dir_all(&inside).unwrap();
    let mut w = NwbWriter::create(
        outside.join("secret.nwb.zarr"),
        Convention::V3,
        WriteOptions::default(),
    )
    .unwrap();
    w.dataset("/x", None, &i64s(&[1]), &[], &DatasetOptions::default())
        .unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    w.finish().unwrap();
    let path = inside.join("main.nwb.zarr");
    let mut w = NwbWriter::create(&path, Convention::V3, WriteOptions::default()).unwrap();
    w.link("/", "stolen", "/x", "../../../elsewhere/secret.nwb.zarr")
        .unwrap();
    w.finish().unwrap();
    let file = NwbFile::open(&path).unwrap();
    let err = file.read_dataset("/stolen", None).unwrap_err().to_string();
    assert!(err.contains("outside the allowed directory"), "{err}");
    assert_eq!(check(&file).len(), 1);
    let allowed = NwbFile::open_with(
        &path,
        neurochunk_hdmf::ReadOptions {
            resolver: Some(std::sync::Arc::new(neurochunk_hdmf::FsResolver {
                allowed_roots: vec![dir.path().to_path_buf()],
                allow_any: false,
                files: None,
            })),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(allowed.read_dataset("/stolen", None).unwrap(), i64s(&[1]));
}

#[test]
fn malformed_link_lists_and_reference_wrappers_name_the_group() {
    let dir = tempfile::tempdir().unwrap();
    for (edit, expect) in [
        (json!("not a list"), "must be a list of links"),
        (
            json!([{"name": "device", "source": "."}]),
            "has no string 'path'",
        ),
        (
            json!([{"name": "a/b", "path": "/x", "source": "."}]),
            "one non-empty path segment",
        ),
    ] {
        let path = small_legacy(dir.path());
        edit_json(&path.join("general/devices/.zattrs"), |a| {
            *a = json!({ "zarr_link": edit });
        });
        let file = NwbFile::open(&path).unwrap();
        let err = Inventory::of(&file).unwrap_err().to_string();
        assert!(
            err.contains("/general/devices") && err.contains("zarr_link") && err.contains(expect),
            "{err}"
        );
        std::fs::remove_dir_all(&path).unwrap();
    }
    let path = small_legacy(dir.path());
    edit_json(
        &path.join("general/devices/.zattrs"),
        |a| *a = json!({"table": {"zarr_dtype": "object", "value": {"source": "."}}}),
    );
    let err = Inventory::of(&NwbFile::open(&path).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/general/devices")
            && err.contains("attribute 'table'")
            && err.contains("'path'"),
        "{err}"
    );
}

#[test]
fn not_a_zarr_file_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let err = NwbFile::open(dir.path().join("missing.nwb.zarr"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("missing.nwb.zarr") && err.contains("not a directory"),
        "{err}"
    );
    let err = NwbFile::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("not a Zarr group"), "{err}");
}

#[test]
fn missing_chunks_of_a_pickled_compound_read_as_empty_rows() {
    use neurochunk_pickle::{encode_object_array, RecordField, RecordKind};
    let dir = tempfile::tempdir().unwrap();
    let path = small_legacy(dir.path());
    let array = path.join("table/group");
    edit_json(&array.join(".zarray"), |z| {
        z["dtype"] = json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]]);
        z["shape"] = json!([4]);
        z["chunks"] = json!([2]);
        z["fill_value"] = json!("gAVLAC4=");
        z["filters"] = json!([{"id": "pickle", "protocol": 5}]);
    });
    edit_json(&array.join(".zattrs"), |a| {
        a["zarr_dtype"] = json!([{"dtype": "int32", "name": "idx_start"}, {"dtype": "int32", "name": "count"}, {"dtype": "object", "name": "timeseries"}]);
    });
    let record = [
        RecordField {
            name: "idx_start".into(),
            kind: RecordKind::Numeric("<i4".into()),
        },
        RecordField {
            name: "count".into(),
            kind: RecordKind::Numeric("<i4".into()),
        },
        RecordField {
            name: "timeseries".into(),
            kind: RecordKind::Object,
        },
    ];
    let items = [
        json!({"idx_start": 0, "count": 10, "timeseries": {"source": ".", "path": "/general/devices/probe"}}),
        json!({"idx_start": 10, "count": 5, "timeseries": {"source": ".", "path": "/general/devices/probe"}}),
    ];
    std::fs::write(
        array.join("0"),
        encode_object_array(&[2], &items, Some(&record)).unwrap(),
    )
    .unwrap();
    let file = NwbFile::open(&path).unwrap();
    let data = file.read_dataset("/table/group", None).unwrap();
    let neurochunk_hdmf::DatasetValue::Compound { rows, .. } = &data.value else {
        panic!("{data:?}")
    };
    assert_eq!(rows.len(), 4);
    assert_eq!(rows[1][0], neurochunk_hdmf::FieldValue::Number(json!(10)));
    assert_eq!(rows[3][2], neurochunk_hdmf::FieldValue::Reference(None));
    assert_eq!(data.value.references().len(), 2);
}

#[test]
fn files_that_are_not_nwb_or_have_malformed_typed_attributes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    // A plain Zarr group.
    let plain = dir.path().join("plain.zarr");
    std::fs::create_dir(&plain).unwrap();
    std::fs::write(plain.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    let problems = structure_problems(&NwbFile::open(&plain).unwrap());
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].path, "/");
    assert!(problems[0].message.starts_with("not an NWB or HDMF file"));

    // A numeric type name, and a zarr_dtype hdmf-zarr never writes.
    let path = small_legacy(dir.path());
    edit_json(&path.join("general/devices/probe/.zattrs"), |a| {
        a["neurodata_type"] = json!(5)
    });
    edit_json(&path.join("table/group/.zattrs"), |a| {
        a["zarr_dtype"] = json!("quaternion")
    });
    let file = NwbFile::open(&path).unwrap();
    let problems = structure_problems(&file);
    let text: Vec<String> = problems
        .iter()
        .map(|p| format!("{}: {}", p.path, p.message))
        .collect();
    assert_eq!(problems.len(), 2, "{text:?}");
    assert!(
        text.contains(
            &"/general/devices/probe: attribute 'neurodata_type' must be text, found 5".to_string()
        ),
        "{text:?}"
    );
    assert!(
        text.iter()
            .any(|t| t.starts_with("/table/group: unknown zarr_dtype") && t.contains("quaternion")),
        "{text:?}"
    );
    // `check` reports them too, beside the links and references.
    let checked = check(&file);
    assert!(
        checked.iter().any(|p| p.message.contains("must be text")),
        "{checked:?}"
    );
}
