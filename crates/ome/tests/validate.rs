//! Validation: images we write are valid; each broken rule is reported with its rule name
//! and the path concerned.

use std::sync::Arc;

use neurochunk_array::{ArrayBuilder, DataType, MemoryStore, Selection, Store};
use neurochunk_ome::{build_pyramid, validate, Layout, Method, PyramidOptions, Severity};
use serde_json::{json, Value};

/// A small valid OME-Zarr image of `layout` at `img`, with units.
fn image(layout: Layout) -> Arc<dyn Store> {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let src = ArrayBuilder::new([2, 9, 10, 11], DataType::UInt8)
        .dimension_names(["c", "z", "y", "x"])
        .create(store.clone(), "src")
        .unwrap();
    src.write_elements(&Selection::all(), &vec![7u8; 2 * 9 * 10 * 11])
        .unwrap();
    let mut options = PyramidOptions::new(3, Method::Mean, layout);
    options.units = Some(vec![
        "".into(),
        "micrometer".into(),
        "micrometer".into(),
        "micrometer".into(),
    ]);
    build_pyramid(&src, store.clone(), "img", &options, &|_| {}).unwrap();
    store
}

fn attrs_key(layout: Layout) -> &'static str {
    if layout == Layout::OmeZarr05 {
        "img/zarr.json"
    } else {
        "img/.zattrs"
    }
}

/// Edit the image's multiscales entry (0.4 and 0.5 alike) and return the problems' rules.
fn broken(layout: Layout, edit: impl Fn(&mut Value)) -> Vec<(Severity, String, String)> {
    let store = image(layout);
    let key = attrs_key(layout);
    let mut doc: Value = serde_json::from_slice(&store.get(key).unwrap().unwrap()).unwrap();
    {
        let ms = if layout == Layout::OmeZarr05 {
            &mut doc["attributes"]["ome"]["multiscales"][0]
        } else {
            &mut doc["multiscales"][0]
        };
        edit(ms);
    }
    store
        .set(key, serde_json::to_vec(&doc).unwrap().into())
        .unwrap();
    validate(store, "img")
        .unwrap()
        .into_iter()
        .map(|p| (p.severity, p.rule, p.path))
        .collect()
}

fn has(problems: &[(Severity, String, String)], rule: &str, path: &str) -> bool {
    problems
        .iter()
        .any(|(s, r, p)| *s == Severity::Error && r == rule && p == path)
}

#[test]
fn written_images_are_valid() {
    for layout in [Layout::OmeZarr04, Layout::OmeZarr05, Layout::N5Viewer] {
        assert_eq!(validate(image(layout), "img").unwrap(), [], "{layout}");
    }
}

#[test]
fn each_rule_is_reported() {
    for layout in [Layout::OmeZarr04, Layout::OmeZarr05] {
        let p = broken(layout, |ms| {
            ms["axes"][2]["type"] = json!("time");
            ms["axes"][3]["type"] = json!("time");
        });
        assert!(
            has(&p, "axes.space-count", "/img") && has(&p, "axes.time-count", "/img"),
            "{p:?}"
        );
        assert!(has(&p, "axes.order", "/img"), "{p:?}");
        let p = broken(layout, |ms| ms["axes"][2]["name"] = json!("x"));
        assert!(has(&p, "axes.name-unique", "/img"), "{p:?}");
        let p = broken(layout, |ms| {
            ms["axes"].as_array_mut().unwrap().pop();
        });
        assert!(has(&p, "transformations.length", "/img"), "{p:?}");
        assert!(has(&p, "datasets.ndim", "/img/0"), "{p:?}");
        let p = broken(layout, |ms| {
            ms["datasets"][1]["coordinateTransformations"] = json!([{"type": "translation", "translation": [0, 0, 0, 0]}, {"type": "scale", "scale": [1, 0.5, 0.5, 0.5]}]);
        });
        assert!(has(&p, "transformations.kinds", "/img"), "{p:?}");
        assert!(has(&p, "datasets.order", "/img"), "{p:?}");
        let p = broken(layout, |ms| ms["datasets"][2]["path"] = json!("nowhere"));
        assert!(has(&p, "datasets.array", "/img"), "{p:?}");
        let p = broken(layout, |ms| ms["axes"][3]["unit"] = json!("parsecs"));
        assert!(
            p.iter()
                .any(|(s, r, _)| *s == Severity::Warning && r == "axes.unit"),
            "{p:?}"
        );
        let p = broken(layout, |ms| {
            ms.as_object_mut().unwrap().remove("datasets");
        });
        assert!(has(&p, "datasets.missing", "/img"), "{p:?}");
        let p = broken(layout, |ms| {
            ms["datasets"][0]["coordinateTransformations"][0]["scale"][1] = json!(0)
        });
        assert!(has(&p, "transformations.scale-positive", "/img"), "{p:?}");
    }
    let p = broken(Layout::OmeZarr04, |ms| ms["version"] = json!("0.3"));
    assert!(has(&p, "version", "/img"), "{p:?}");
}

#[test]
fn dimension_names_and_labels() {
    let store = image(Layout::OmeZarr05);
    let key = "img/1/zarr.json";
    let mut doc: Value = serde_json::from_slice(&store.get(key).unwrap().unwrap()).unwrap();
    doc["dimension_names"] = json!(["c", "z", "x", "y"]);
    store
        .set(key, serde_json::to_vec(&doc).unwrap().into())
        .unwrap();
    let p: Vec<_> = validate(store.clone(), "img")
        .unwrap()
        .into_iter()
        .map(|p| (p.severity, p.rule, p.path))
        .collect();
    assert!(has(&p, "datasets.dimension-names", "/img/1"), "{p:?}");
    // A label image listed but missing, and one with a float array and bad colours.
    let store = image(Layout::OmeZarr04);
    neurochunk_array::create_group(
        store.as_ref(),
        "img/labels",
        neurochunk_array::ZarrFormat::V2,
        json!({"labels": ["cells", "ghost"]})
            .as_object()
            .unwrap()
            .clone(),
    )
    .unwrap();
    let src = ArrayBuilder::new([4, 4], DataType::Float32)
        .format(neurochunk_array::ZarrFormat::V2)
        .create(store.clone(), "lab")
        .unwrap();
    let mut options = PyramidOptions::new(1, Method::Mode, Layout::OmeZarr04);
    options.axes = Some(vec!["y".into(), "x".into()]);
    build_pyramid(&src, store.clone(), "img/labels/cells", &options, &|_| {}).unwrap();
    let key = "img/labels/cells/.zattrs";
    let mut doc: Value = serde_json::from_slice(&store.get(key).unwrap().unwrap()).unwrap();
    doc["image-label"] =
        json!({"colors": [{"label-value": 1, "rgba": [255, 0, 0]}, {"label-value": 1}]});
    store
        .set(key, serde_json::to_vec(&doc).unwrap().into())
        .unwrap();
    let p: Vec<_> = validate(store, "img")
        .unwrap()
        .into_iter()
        .map(|p| (p.severity, p.rule, p.path))
        .collect();
    assert!(has(&p, "labels.image", "/img/labels"), "{p:?}");
    assert!(has(&p, "image-label.rgba", "/img/labels/cells"), "{p:?}");
    assert!(
        has(&p, "image-label.label-value-unique", "/img/labels/cells"),
        "{p:?}"
    );
    assert!(has(&p, "image-label.dtype", "/img/labels/cells"), "{p:?}");
}

#[test]
fn open_refuses_what_it_cannot_understand() {
    let store = image(Layout::OmeZarr04);
    let mut doc: Value =
        serde_json::from_slice(&store.get("img/.zattrs").unwrap().unwrap()).unwrap();
    doc["multiscales"][0]["datasets"][1]["coordinateTransformations"][0]["scale"] = json!([1, 2]);
    store
        .set("img/.zattrs", serde_json::to_vec(&doc).unwrap().into())
        .unwrap();
    let err = neurochunk_ome::MultiscaleImage::open(store.clone(), "img")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'/img'") && err.contains("has 2 values for 4 axes"),
        "{err}"
    );
    doc["multiscales"] = json!({"not": "a list"});
    store
        .set("img/.zattrs", serde_json::to_vec(&doc).unwrap().into())
        .unwrap();
    let err = neurochunk_ome::MultiscaleImage::open(store, "img")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'/img'") && err.contains("must be a list"),
        "{err}"
    );
}
