//! `neurochunk pyramid`, `ome info`, `ome validate`, multiscale `convert`, `tree` and `info`
//! on images built from a small volume in a temporary directory.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use neurochunk_array::{Array, ArrayBuilder, DataType, FsStore, Selection, Store};
use serde_json::Value;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .output()
        .expect("runs")
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn store(path: &Path) -> Arc<dyn Store> {
    Arc::new(FsStore::new(path))
}

/// A uint16 (13, 17, 19) volume with values `(z * 7 + y * 3 + x) % 251`.
fn volume(dir: &Path) -> (String, Vec<u16>) {
    let path = dir.join("raw.zarr");
    let array = ArrayBuilder::new([13, 17, 19], DataType::UInt16)
        .chunks([5, 6, 7])
        .create(store(&path), "")
        .unwrap();
    let mut values = Vec::new();
    for z in 0..13u16 {
        for y in 0..17u16 {
            for x in 0..19u16 {
                values.push((z * 7 + y * 3 + x) % 251);
            }
        }
    }
    array.write_elements(&Selection::all(), &values).unwrap();
    (path.to_str().unwrap().to_string(), values)
}

fn level(path: &str, level: &str) -> Vec<u16> {
    let array = Array::open(store(Path::new(path)), level).unwrap();
    array.read_elements::<u16>(&Selection::all()).unwrap().1
}

#[test]
fn pyramid_info_tree_validate() {
    let dir = tempfile::tempdir().unwrap();
    let (src, values) = volume(dir.path());
    let dst = dir.path().join("img.ome.zarr");
    let dst = dst.to_str().unwrap();
    let out = run(&[
        "pyramid",
        &src,
        dst,
        "--levels",
        "3",
        "--method",
        "max",
        "--format",
        "zarr3",
        "--chunks",
        "4,4,4",
        "--shards",
        "8,8,8",
        "--units",
        "micrometer,micrometer,micrometer",
        "--scale",
        "2,1,1",
        "--name",
        "vol",
        "--codec",
        "zstd:1,crc32c",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: Value = serde_json::from_str(&ok(&["ome", "info", dst, "--json"])).unwrap();
    assert_eq!(info["layout"], "ome-zarr-0.5");
    assert_eq!(info["name"], "vol");
    assert_eq!(info["type"], "max");
    assert_eq!(info["axes"][0]["unit"], "micrometer");
    let shapes: Vec<Value> = info["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["shape"].clone())
        .collect();
    assert_eq!(
        shapes,
        [
            serde_json::json!([13, 17, 19]),
            serde_json::json!([7, 9, 10]),
            serde_json::json!([4, 5, 5])
        ]
    );
    assert_eq!(
        info["levels"][2]["scale"],
        serde_json::json!([8.0, 4.0, 4.0])
    );
    assert_eq!(
        info["levels"][1]["translation"],
        serde_json::json!([1.0, 0.5, 0.5])
    );
    assert_eq!(info["levels"][0]["shards"], serde_json::json!([8, 8, 8]));
    assert_eq!(level(dst, "0"), values);
    // Level 1, voxel (6, 8, 9): the block z {12}, y {16}, x {18} alone.
    assert_eq!(level(dst, "1")[(6 * 9 + 8) * 10 + 9], 12 * 7 + 16 * 3 + 18);
    let tree = ok(&["tree", dst]);
    assert!(
        tree.contains("multiscale ome-zarr-0.5: 3 levels, axes z micrometer"),
        "{tree}"
    );
    let tree: Value = serde_json::from_str(&ok(&["tree", dst, "--json"])).unwrap();
    assert_eq!(tree["nodes"][0]["multiscale"]["layout"], "ome-zarr-0.5");
    let text = ok(&["info", dst]);
    assert!(
        text.contains("multiscale:  ome-zarr-0.5 (version 0.5)")
            && text.contains("scale [4.0, 2.0, 2.0]"),
        "{text}"
    );
    assert!(ok(&["ome", "validate", dst]).contains("valid (0 errors"));
}

#[test]
fn convert_between_layouts_keeps_levels_and_scales() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = volume(dir.path());
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&[
        "pyramid",
        &src,
        &p("a.zarr"),
        "--levels",
        "3",
        "--format",
        "zarr2",
        "--method",
        "mode",
        "--scale",
        "3,1,1",
        "--translation",
        "10,0,0",
    ]);
    ok(&["convert", &p("a.zarr"), &p("b.n5"), "--format", "n5"]);
    ok(&[
        "convert",
        &p("b.n5"),
        &p("c.n5"),
        "--format",
        "n5",
        "--n5-layout",
        "n5-viewer",
    ]);
    ok(&[
        "convert",
        &p("c.n5"),
        &p("d.zarr"),
        "--format",
        "zarr3",
        "--shards",
        "16,16,16",
        "--chunks",
        "8,8,8",
    ]);
    let describe = |path: &str| -> Value {
        serde_json::from_str(&ok(&["ome", "info", path, "--json"])).unwrap()
    };
    let (a, b, c, d) = (
        describe(&p("a.zarr")),
        describe(&p("b.n5")),
        describe(&p("c.n5")),
        describe(&p("d.zarr")),
    );
    assert_eq!(a["layout"], "ome-zarr-0.4");
    assert_eq!(b["layout"], "n5-bdv");
    assert_eq!(c["layout"], "n5-viewer");
    assert_eq!(d["layout"], "ome-zarr-0.5");
    for k in 0..3 {
        for x in [&b, &c, &d] {
            assert_eq!(x["levels"][k]["shape"], a["levels"][k]["shape"]);
            assert_eq!(x["levels"][k]["scale"], a["levels"][k]["scale"]);
        }
        let level_a = level(&p("a.zarr"), &k.to_string());
        assert_eq!(level(&p("d.zarr"), &k.to_string()), level_a);
    }
    // The N5 layouts hold no offset of level 0: the translation of level 0 is dropped there.
    assert_eq!(
        a["levels"][1]["translation"],
        serde_json::json!([11.5, 0.5, 0.5])
    );
    assert_eq!(
        c["levels"][1]["translation"],
        serde_json::json!([1.5, 0.5, 0.5])
    );
    let bdv = std::fs::read_to_string(dir.path().join("b.n5/setup0/attributes.json")).unwrap();
    assert!(
        bdv.contains("\"downsamplingFactors\":[[1,1,1],[2,2,2],[4,4,4]]"),
        "{bdv}"
    );
    assert!(bdv.contains("\"resolution\":[1.0,1.0,3.0]"), "{bdv}");
    assert!(dir.path().join("b.n5/dataset.xml").is_file());
    for path in ["a.zarr", "b.n5", "c.n5", "d.zarr"] {
        assert!(
            run(&["ome", "validate", &p(path)]).status.success(),
            "{path}"
        );
    }
}

#[test]
fn errors_and_exit_status() {
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = volume(dir.path());
    let dst = dir.path().join("out.zarr");
    let dst = dst.to_str().unwrap();
    let out = run(&["pyramid", &src, dst, "--levels", "9"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("raw.zarr") && err.contains("would not be smaller"),
        "{err}"
    );
    assert!(
        !Path::new(dst).exists(),
        "nothing is left at the destination"
    );
    let out = run(&["pyramid", &src, dst, "--levels", "2", "--factors", "2,2"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("3 positive integers"));
    let out = run(&[
        "pyramid", &src, dst, "--levels", "2", "--format", "zarr2", "--shards", "8,8,8",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("shards need OME-Zarr 0.5"));
    // The source must be an array.
    ok(&["pyramid", &src, dst, "--levels", "2"]);
    let out = run(&[
        "pyramid",
        dst,
        &dir.path().join("x").to_string_lossy(),
        "--levels",
        "2",
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a group, not an array"));
    // ome validate: 1 invalid, 2 unreadable; --json lists problems.
    let zarr_json = Path::new(dst).join("zarr.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&zarr_json).unwrap()).unwrap();
    doc["attributes"]["ome"]["multiscales"][0]["axes"][2]["type"] = "time".into();
    std::fs::write(&zarr_json, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = run(&["ome", "validate", dst, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let problems: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(problems[0]["rule"], "axes.order");
    assert_eq!(problems[0]["path"], "/");
    assert_eq!(problems[0]["severity"], "error");
    let missing = dir.path().join("missing.zarr");
    assert_eq!(
        run(&["ome", "validate", missing.to_str().unwrap()])
            .status
            .code(),
        Some(2)
    );
    let out = run(&["ome", "info", &src]);
    assert!(
        !out.status.success()
            && String::from_utf8_lossy(&out.stderr).contains("is not a multiscale image")
    );
}

#[test]
fn convert_with_resume_and_consolidate_keeps_the_multiscale_layout() {
    // `--resume` and `--consolidate` go with a layout change too: the image is converted as an
    // image (not copied as a plain hierarchy), and the result's metadata consolidated.
    let dir = tempfile::tempdir().unwrap();
    let (src, _) = volume(dir.path());
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&[
        "pyramid",
        &src,
        &p("a.zarr"),
        "--levels",
        "3",
        "--format",
        "zarr2",
    ]);
    let out = run(&[
        "convert",
        &p("a.zarr"),
        &p("e.zarr"),
        "--format",
        "zarr3",
        "--resume",
        "--consolidate",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: Value = serde_json::from_str(&ok(&["ome", "info", &p("e.zarr"), "--json"])).unwrap();
    assert_eq!(info["layout"], "ome-zarr-0.5");
    let root: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("e.zarr/zarr.json")).unwrap())
            .unwrap();
    assert_eq!(root["attributes"]["ome"]["version"], "0.5");
    let consolidated = &root["consolidated_metadata"]["metadata"];
    assert!(consolidated["2"].is_object(), "{root}");
    assert!(!dir.path().join("e.zarr/.neurochunk-convert.json").exists());
    for k in 0..3 {
        assert_eq!(
            level(&p("e.zarr"), &k.to_string()),
            level(&p("a.zarr"), &k.to_string())
        );
    }
    assert!(run(&["ome", "validate", &p("e.zarr")]).status.success());
}

/// Copy the directory tree `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

#[test]
fn containers_of_several_images_in_tree_and_convert() {
    let dir = tempfile::tempdir().unwrap();
    let (src, values) = volume(dir.path());
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&[
        "pyramid",
        &src,
        &p("b.n5"),
        "--levels",
        "2",
        "--format",
        "n5",
        "--n5-layout",
        "bdv",
    ]);
    copy_dir(
        &dir.path().join("b.n5/setup0"),
        &dir.path().join("b.n5/setup1"),
    );

    let tree = ok(&["tree", &p("b.n5")]);
    assert!(
        tree.contains("= BigDataViewer container of 2 images"),
        "{tree}"
    );
    assert_eq!(tree.matches("= multiscale n5-bdv").count(), 2, "{tree}");

    ok(&["convert", &p("b.n5"), &p("c.zarr"), "--format", "zarr3"]);
    let tree = ok(&["tree", &p("c.zarr")]);
    assert!(
        tree.contains("= bioformats2raw container of 2 images"),
        "{tree}"
    );
    assert_eq!(
        tree.matches("= multiscale ome-zarr-0.5").count(),
        2,
        "{tree}"
    );
    let json: Value = serde_json::from_str(&ok(&["tree", &p("c.zarr"), "--json"])).unwrap();
    assert_eq!(
        json["nodes"][0]["container"],
        serde_json::json!({"kind": "bioformats2raw", "images": ["/0", "/1"]})
    );
    let info: Value = serde_json::from_str(&ok(&[
        "ome",
        "info",
        &format!("{}/1", p("c.zarr")),
        "--json",
    ]))
    .unwrap();
    assert_eq!(info["name"], "setup1/timepoint0");
    assert_eq!(level(&p("c.zarr"), "1/0"), values);

    // Into N5 (one image per layout): refused, naming an image to convert instead.
    let out = run(&["convert", &p("c.zarr"), &p("d.n5"), "--format", "n5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("one at a time") && err.contains("'/0'"),
        "{err}"
    );
    assert!(!dir.path().join("d.n5").exists());
}

#[test]
fn bigdataviewer_xml_beside_the_container_gives_the_voxel_size() {
    // As BigDataViewer exports it: `dataset.xml` beside `dataset.n5`, whose setup attributes
    // hold no resolution.
    let dir = tempfile::tempdir().unwrap();
    let (src, values) = volume(dir.path());
    let p = |name: &str| dir.path().join(name).to_str().unwrap().to_string();
    ok(&[
        "pyramid",
        &src,
        &p("dataset.n5"),
        "--levels",
        "2",
        "--format",
        "n5",
        "--n5-layout",
        "bdv",
        "--scale",
        "3,0.5,0.25",
        "--units",
        "micrometer,micrometer,micrometer",
    ]);
    let container = dir.path().join("dataset.n5");
    let xml = std::fs::read_to_string(container.join("dataset.xml")).unwrap();
    std::fs::remove_file(container.join("dataset.xml")).unwrap();
    let xml = xml.replace(
        "<n5 type=\"relative\">.</n5>",
        "<n5 type=\"relative\">dataset.n5</n5>",
    );
    assert!(xml.contains("dataset.n5"), "{xml}");
    std::fs::write(dir.path().join("dataset.xml"), xml).unwrap();
    let setup = container.join("setup0/attributes.json");
    let mut attrs: Value = serde_json::from_slice(&std::fs::read(&setup).unwrap()).unwrap();
    for key in ["resolution", "units", "axes"] {
        attrs.as_object_mut().unwrap().remove(key);
    }
    std::fs::write(&setup, serde_json::to_vec(&attrs).unwrap()).unwrap();

    for source in [p("dataset.n5"), p("dataset.xml")] {
        let info: Value = serde_json::from_str(&ok(&["ome", "info", &source, "--json"])).unwrap();
        assert_eq!(info["layout"], "n5-bdv", "{source}");
        assert_eq!(
            info["levels"][0]["scale"],
            serde_json::json!([3.0, 0.5, 0.25]),
            "{source}"
        );
        assert_eq!(info["axes"][0]["unit"], "micrometer", "{source}");
    }
    // Converted from the XML: the voxel size travels into OME-Zarr.
    ok(&[
        "convert",
        &p("dataset.xml"),
        &p("out.zarr"),
        "--format",
        "zarr3",
    ]);
    let info: Value =
        serde_json::from_str(&ok(&["ome", "info", &p("out.zarr"), "--json"])).unwrap();
    assert_eq!(
        info["levels"][1]["scale"],
        serde_json::json!([6.0, 1.0, 0.5])
    );
    assert_eq!(level(&p("out.zarr"), "0"), values);

    // An XML file that is no BigDataViewer description is refused by name.
    std::fs::write(dir.path().join("other.xml"), "<a/>").unwrap();
    let out = run(&["ome", "info", &p("other.xml")]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("other.xml") && err.contains("bdv.n5"),
        "{err}"
    );
}
