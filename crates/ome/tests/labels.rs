//! Label images built on an image's grid (`label_pyramid_options` + `build_pyramid`) and
//! registered (`add_label`), for OME-Zarr 0.4 and 0.5, and the errors for labels that do not
//! fit.

use std::sync::Arc;

use neurochunk_array::{Array, ArrayBuilder, DataType, MemoryStore, Selection, Store};
use neurochunk_ome::{
    add_label, build_pyramid, label_pyramid_options, validate, Factors, Layout, Method,
    MultiscaleImage, PyramidOptions,
};

fn array(store: &Arc<dyn Store>, path: &str, shape: &[u64], data_type: DataType) -> Array {
    let array = ArrayBuilder::new(shape.to_vec(), data_type)
        .chunks(shape.iter().map(|&n| n.min(8) as usize).collect::<Vec<_>>())
        .create(store.clone(), path)
        .unwrap();
    let n: u64 = shape.iter().product();
    let values = (0..n).map(|i| i / 37 % 5);
    let all = Selection::all();
    match array.metadata().data_type {
        DataType::Float32 => array.write_elements(&all, &vec![0.5f32; n as usize]),
        DataType::UInt8 => array.write_elements(&all, &values.map(|v| v as u8).collect::<Vec<_>>()),
        DataType::UInt16 => {
            array.write_elements(&all, &values.map(|v| v as u16).collect::<Vec<_>>())
        }
        _ => array.write_elements(&all, &values.map(|v| v as u32).collect::<Vec<_>>()),
    }
    .unwrap();
    array
}

/// An image of `shape` with a voxel size, units and an offset, and 3 levels.
fn image(store: &Arc<dyn Store>, layout: Layout, shape: &[u64], factors: Option<Factors>) {
    let raw = array(store, "raw", shape, DataType::UInt32);
    let mut options = PyramidOptions::new(3, Method::Mean, layout);
    let rank = shape.len();
    options.scale = Some([2.0, 1.0, 0.5][3 - rank.min(3)..].to_vec());
    if rank == 4 {
        options.axes = Some(vec!["c".into(), "z".into(), "y".into(), "x".into()]);
        options.scale = Some(vec![1.0, 2.0, 1.0, 0.5]);
    }
    options.units = Some(
        options
            .axes
            .as_ref()
            .map_or(vec!["micrometer".to_string(); rank], |a| {
                a.iter()
                    .map(|n| {
                        if n == "c" {
                            String::new()
                        } else {
                            "micrometer".into()
                        }
                    })
                    .collect()
            }),
    );
    options.translation = Some(vec![3.0; rank]);
    options.factors = factors;
    build_pyramid(&raw, store.clone(), "img", &options, &|_| {}).unwrap();
}

fn label(
    store: &Arc<dyn Store>,
    name: &str,
    shape: &[u64],
    data_type: DataType,
) -> MultiscaleImage {
    let image = MultiscaleImage::open(store.clone(), "img").unwrap();
    let seg = array(store, &format!("seg-{name}"), shape, data_type);
    let mut options = label_pyramid_options(&image, shape, None, Method::Mode).unwrap();
    options.name = Some(name.into());
    build_pyramid(
        &seg,
        store.clone(),
        &format!("img/labels/{name}"),
        &options,
        &|_| {},
    )
    .unwrap();
    add_label(store, "img", name).unwrap()
}

#[test]
fn labels_follow_the_image_grid_and_are_listed() {
    for layout in [Layout::OmeZarr05, Layout::OmeZarr04] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        image(&store, layout, &[10, 21, 30], None);
        let cells = label(&store, "cells", &[10, 21, 30], DataType::UInt32);
        let nuclei = label(&store, "nuclei", &[10, 21, 30], DataType::UInt32);
        let image = MultiscaleImage::open(store.clone(), "img").unwrap();
        assert_eq!(image.labels(), ["cells", "nuclei"]);
        // Adding a label again does not list it twice.
        add_label(&store, "img", "cells").unwrap();
        assert_eq!(
            MultiscaleImage::open(store.clone(), "img")
                .unwrap()
                .labels(),
            ["cells", "nuclei"]
        );
        for label in [&cells, &nuclei] {
            assert_eq!(label.layout(), layout);
            assert_eq!(label.method(), Some("mode"));
            assert_eq!(label.image_label().unwrap()["source"]["image"], "../../");
            for k in 0..3 {
                assert_eq!(
                    label.level_array(k).unwrap().shape(),
                    image.level_array(k).unwrap().shape()
                );
                assert_eq!(label.levels()[k].scale, image.levels()[k].scale);
                assert_eq!(label.levels()[k].translation, image.levels()[k].translation);
            }
            assert_eq!(label.axes(), image.axes());
        }
        for path in ["img", "img/labels/cells", "img/labels/nuclei"] {
            assert!(validate(store.clone(), path).unwrap().is_empty(), "{path}");
        }
    }
}

#[test]
fn labels_of_images_with_channels_and_auto_isotropic_levels() {
    // A (c, z, y, x) image: a label without the channel axis.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    image(&store, Layout::OmeZarr05, &[2, 10, 21, 30], None);
    let l = label(&store, "cells", &[10, 21, 30], DataType::UInt16);
    let names: Vec<&str> = l.axes().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["z", "y", "x"]);
    assert_eq!(l.level_array(2).unwrap().shape(), [3, 6, 8]);

    // Levels built auto-isotropic are followed.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    image(
        &store,
        Layout::OmeZarr05,
        &[10, 21, 30],
        Some(Factors::AutoIsotropic),
    );
    let image_shapes: Vec<Vec<u64>> = (0..3)
        .map(|k| {
            MultiscaleImage::open(store.clone(), "img")
                .unwrap()
                .level_array(k)
                .unwrap()
                .shape()
                .to_vec()
        })
        .collect();
    // Voxels 2 × 1 × 0.5: y and x halve, then x alone, so no one factor per axis fits.
    assert_eq!(
        image_shapes,
        [vec![10, 21, 30], vec![10, 11, 15], vec![10, 11, 8]]
    );
    let l = label(&store, "cells", &[10, 21, 30], DataType::UInt8);
    for (k, want) in image_shapes.iter().enumerate() {
        assert_eq!(l.level_array(k).unwrap().shape(), want.as_slice());
    }
}

#[test]
fn labels_that_do_not_fit_are_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    image(&store, Layout::OmeZarr05, &[10, 21, 30], None);
    let img = MultiscaleImage::open(store.clone(), "img").unwrap();
    let err = |e: neurochunk_ome::OmeError| e.to_string();
    let e = err(label_pyramid_options(&img, &[10, 20, 30], None, Method::Mode).unwrap_err());
    assert!(
        e.contains("[10, 20, 30]") && e.contains("[10, 21, 30]"),
        "{e}"
    );
    let e = err(label_pyramid_options(&img, &[21, 30], None, Method::Mode).unwrap_err());
    assert!(e.contains("2 dimensions"), "{e}");
    let e = err(label_pyramid_options(&img, &[10, 21, 30], Some(4), Method::Mode).unwrap_err());
    assert!(e.contains("3 levels"), "{e}");

    // Floating-point labels and names that are not one path segment.
    let seg = array(&store, "float-seg", &[10, 21, 30], DataType::Float32);
    let options = label_pyramid_options(&img, &[10, 21, 30], None, Method::Stride).unwrap();
    build_pyramid(&seg, store.clone(), "img/labels/f", &options, &|_| {}).unwrap();
    let e = err(add_label(&store, "img", "f").unwrap_err());
    assert!(e.contains("not integers"), "{e}");
    let e = err(add_label(&store, "img", "a/b").unwrap_err());
    assert!(e.contains("one path segment"), "{e}");
    // Nothing was listed.
    assert!(MultiscaleImage::open(store.clone(), "img")
        .unwrap()
        .labels()
        .is_empty());

    // N5 images have no labels.
    let n5: Arc<dyn Store> = Arc::new(MemoryStore::new());
    image(&n5, Layout::N5Viewer, &[10, 21, 30], None);
    let img = MultiscaleImage::open(n5.clone(), "img").unwrap();
    let e = err(label_pyramid_options(&img, &[10, 21, 30], None, Method::Mode).unwrap_err());
    assert!(e.contains("OME-Zarr"), "{e}");
}
