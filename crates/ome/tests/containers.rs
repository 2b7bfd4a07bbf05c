//! Containers of several multiscale images: a BigDataViewer N5 container with several setups
//! and time points, converted into an OME-Zarr bioformats2raw container and listed back.

use std::sync::Arc;

use neurochunk_array::{ArrayBuilder, DataType, MemoryStore, Selection, Store};
use neurochunk_ome::{
    build_pyramid, container_images, convert_container, validate, ContainerKind,
    ConvertImageOptions, Layout, Method, MultiscaleImage, PyramidOptions,
};

/// A two-level BigDataViewer pyramid of `values` (shape 6 × 10 × 12) written under `path`.
fn bdv_pyramid(store: &Arc<dyn Store>, path: &str, values: &[u16]) {
    let raw_path = format!("{path}-raw");
    let raw = ArrayBuilder::new([6u64, 10, 12], DataType::UInt16)
        .chunks([4, 4, 4])
        .create(store.clone(), &raw_path)
        .unwrap();
    raw.write_elements(&Selection::all(), values).unwrap();
    let mut options = PyramidOptions::new(2, Method::Mean, Layout::N5Bdv);
    options.scale = Some(vec![2.0, 0.5, 0.5]);
    build_pyramid(&raw, store.clone(), path, &options, &|_| {}).unwrap();
}

/// Copy every key under `from/` to the same key under `to/`.
fn copy_prefix(store: &Arc<dyn Store>, from: &str, to: &str) {
    for key in store.list_prefix(&format!("{from}/")).unwrap() {
        let value = store.get(&key).unwrap().unwrap();
        store
            .set(&format!("{to}{}", &key[from.len()..]), value)
            .unwrap();
    }
}

fn level0(image: &MultiscaleImage) -> Vec<u16> {
    let array = image.level_array(0).unwrap();
    array.read_elements::<u16>(&Selection::all()).unwrap().1
}

#[test]
fn bigdataviewer_setups_and_timepoints_become_bioformats2raw_series() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let n = 6 * 10 * 12;
    let first: Vec<u16> = (0..n).map(|i| i as u16).collect();
    let second: Vec<u16> = (0..n).map(|i| (3 * i + 7) as u16).collect();
    bdv_pyramid(&store, "bdv", &first);
    bdv_pyramid(&store, "other", &second);
    // setup1 holds the second volume; setup0 gains a second time point equal to its first.
    copy_prefix(&store, "other/setup0", "bdv/setup1");
    copy_prefix(&store, "bdv/setup0/timepoint0", "bdv/setup0/timepoint1");

    let (kind, images) = container_images(store.as_ref(), "bdv").unwrap().unwrap();
    assert_eq!(kind, ContainerKind::BigDataViewer);
    assert_eq!(
        images,
        [
            "bdv/setup0/timepoint0",
            "bdv/setup0/timepoint1",
            "bdv/setup1/timepoint0"
        ]
    );
    // A setup on its own, or an image, is not a container.
    assert!(container_images(store.as_ref(), "bdv/setup0")
        .unwrap()
        .is_none());

    for layout in [Layout::OmeZarr05, Layout::OmeZarr04] {
        let out = format!("out-{}", layout.name());
        let converted = convert_container(
            &store,
            "bdv",
            store.clone(),
            &out,
            &ConvertImageOptions::new(layout),
            &|_| {},
        )
        .unwrap();
        assert_eq!(converted.len(), 3);
        let (kind, series) = container_images(store.as_ref(), &out).unwrap().unwrap();
        assert_eq!(kind, ContainerKind::Bioformats2Raw);
        assert_eq!(series, [0, 1, 2].map(|i| format!("{out}/{i}")));
        for (path, (want, name)) in series.iter().zip([
            (&first, "setup0/timepoint0"),
            (&first, "setup0/timepoint1"),
            (&second, "setup1/timepoint0"),
        ]) {
            let image = MultiscaleImage::open(store.clone(), path).unwrap();
            assert_eq!(image.layout(), layout);
            assert_eq!(image.name(), Some(name));
            assert_eq!(&level0(&image), want, "{path}");
            assert_eq!(image.levels()[1].scale, [4.0, 1.0, 1.0]);
            assert!(validate(store.clone(), path).unwrap().is_empty(), "{path}");
        }
        // The root says what it is; the OME group lists the series.
        let root = MultiscaleImage::open(store.clone(), &out)
            .unwrap_err()
            .to_string();
        assert!(root.contains("bioformats2raw"), "{root}");
    }
    let root_attrs: serde_json::Value =
        serde_json::from_slice(&store.get("out-ome-zarr-0.5/zarr.json").unwrap().unwrap()).unwrap();
    assert_eq!(root_attrs["attributes"]["ome"]["bioformats2raw.layout"], 3);
    let ome_attrs: serde_json::Value =
        serde_json::from_slice(&store.get("out-ome-zarr-0.4/OME/.zattrs").unwrap().unwrap())
            .unwrap();
    assert_eq!(ome_attrs["series"], serde_json::json!(["0", "1", "2"]));

    // The N5 layouts hold one image: several are refused, naming one to convert instead.
    let err = convert_container(
        &store,
        "bdv",
        store.clone(),
        "n5-out",
        &ConvertImageOptions::new(Layout::N5Viewer),
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("3 images") && err.contains("'/bdv/setup0/timepoint0'"),
        "{err}"
    );
    assert!(store.list_prefix("n5-out").unwrap().is_empty());
}
