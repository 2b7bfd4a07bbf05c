//! Multiscale images written by other software, read with the values their sources state.
//! The images are copies in `tests/data` (see the README there for sources and licenses).

use std::path::PathBuf;
use std::sync::Arc;

use neurochunk_array::{FsStore, Selection, Store};
use neurochunk_ome::{Layout, MultiscaleImage};

/// A sample under `tests/data`; it must be there (the copies belong to the repository).
fn sample(rel: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel);
    assert!(dir.is_dir(), "third-party sample {} missing", dir.display());
    dir
}

fn open(rel: &str) -> MultiscaleImage {
    let store: Arc<dyn Store> = Arc::new(FsStore::read_only(sample(rel)));
    MultiscaleImage::open(store, "").unwrap()
}

fn sum_f32(image: &MultiscaleImage, level: usize) -> f64 {
    let array = image.level_array(level).unwrap();
    let (_, values) = array.read_elements::<f32>(&Selection::all()).unwrap();
    values.iter().map(|&v| v as f64).sum()
}

#[test]
fn zarr_java_v04() {
    let image = open("zarr-java/ome/v0.4");
    assert_eq!(image.layout(), Layout::OmeZarr04);
    assert_eq!(image.version(), Some("0.4"));
    assert_eq!(image.name(), Some("test_image"));
    let names: Vec<&str> = image.axes().iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["t", "c", "z", "y", "x"]);
    assert_eq!(image.axes()[0].kind.as_deref(), Some("time"));
    assert_eq!(image.axes()[0].unit.as_deref(), Some("millisecond"));
    assert_eq!(image.axes()[1].unit, None);
    assert_eq!(image.axes()[4].unit.as_deref(), Some("micrometer"));
    assert_eq!(image.levels().len(), 2);
    assert_eq!(image.levels()[0].scale, [1.0, 1.0, 0.5, 0.5, 0.5]);
    assert_eq!(image.levels()[1].scale, [1.0, 1.0, 1.0, 1.0, 1.0]);
    assert_eq!(image.method(), Some("gaussian"));
    assert_eq!(image.level_array(0).unwrap().shape(), [1, 2, 8, 16, 16]);
    assert_eq!(image.level_array(1).unwrap().shape(), [1, 2, 4, 8, 8]);
    assert!((sum_f32(&image, 0) - 2025.011).abs() < 1e-3);
    assert!((sum_f32(&image, 1) - 250.715).abs() < 1e-3);
    assert_eq!(image.labels(), ["nuclei"]);
    let omero = image.omero().unwrap();
    assert_eq!(omero["channels"][1]["label"], "GFP");
    let json = image.to_json();
    assert_eq!(json["layout"], "ome-zarr-0.4");
    assert_eq!(
        json["levels"][1]["shape"],
        serde_json::json!([1, 2, 4, 8, 8])
    );
    assert_eq!(json["levels"][0]["dtype"], "float32");
    assert_eq!(json["labels"], serde_json::json!(["nuclei"]));
}

#[test]
fn zarr_java_v05_and_labels() {
    let image = open("zarr-java/ome/v0.5");
    assert_eq!(image.layout(), Layout::OmeZarr05);
    assert_eq!(image.version(), Some("0.5"));
    assert_eq!(image.axes().len(), 5);
    assert_eq!(image.levels()[0].scale, [1.0, 1.0, 0.5, 0.5, 0.5]);
    assert!((sum_f32(&image, 0) - 2049.505).abs() < 1e-3);
    assert!((sum_f32(&image, 1) - 264.762).abs() < 1e-3);
    assert_eq!(image.labels(), ["nuclei"]);
    for (sample, sum) in [("v0.4", 2008u64), ("v0.5", 2010)] {
        let label = open(&format!("zarr-java/ome/{sample}/labels/nuclei"));
        assert_eq!(label.name(), Some("nuclei"));
        let array = label.level_array(0).unwrap();
        assert_eq!(array.shape(), [8, 16, 16]);
        let (_, values) = array.read_elements::<u32>(&Selection::all()).unwrap();
        assert_eq!(values.iter().map(|&v| v as u64).sum::<u64>(), sum);
        assert!(values.iter().all(|&v| v <= 2));
    }
}

#[test]
fn ngff_zarr_simple() {
    let level1 = [
        [2u16, 3, 6, 7, 9],
        [20, 21, 23, 25, 26],
        [39, 41, 43, 45, 47],
        [59, 61, 63, 65, 67],
        [79, 81, 82, 85, 86],
    ];
    for (version, layout) in [("0.4", Layout::OmeZarr04), ("0.5", Layout::OmeZarr05)] {
        let image = open(&format!("neuroglancer/ome_zarr/simple_{version}"));
        assert_eq!(image.layout(), layout);
        let paths: Vec<&str> = image.levels().iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["scale0/image", "scale1/image", "scale2/image"]);
        assert_eq!(image.axes()[0].unit.as_deref(), Some("nanometer"));
        assert_eq!(image.levels()[1].scale, [8.0, 60.0]);
        assert_eq!(
            image.levels()[1].translation.as_deref(),
            Some(&[2.0, 15.0][..])
        );
        let (_, l0) = image
            .level_array(0)
            .unwrap()
            .read_elements::<u16>(&Selection::all())
            .unwrap();
        assert_eq!(l0, (0..100u16).collect::<Vec<_>>());
        let (_, l1) = image
            .level_array(1)
            .unwrap()
            .read_elements::<u16>(&Selection::all())
            .unwrap();
        assert_eq!(l1, level1.concat());
        let (_, l2) = image
            .level_array(2)
            .unwrap()
            .read_elements::<u16>(&Selection::all())
            .unwrap();
        assert_eq!(l2, [5, 8, 39, 42]);
    }
}

#[test]
fn n5_viewer_multiscale() {
    for variant in ["deprecated", "modern"] {
        let image = open(&format!("neuroglancer/n5/n5_viewer_multiscale_{variant}"));
        assert_eq!(image.layout(), Layout::N5Viewer);
        // Listed x, y; presented in C order y, x.
        let names: Vec<&str> = image.axes().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["y", "x"]);
        assert_eq!(image.axes()[0].unit.as_deref(), Some("s"));
        assert_eq!(image.axes()[1].unit.as_deref(), Some("nm"));
        assert_eq!(image.levels().len(), 3);
        assert_eq!(image.levels()[0].scale, [20.0, 10.0]);
        assert_eq!(image.levels()[2].scale, [80.0, 40.0]);
        assert_eq!(
            image.levels()[1].translation.as_deref(),
            Some(&[10.0, 5.0][..])
        );
        assert_eq!(image.level_array(0).unwrap().shape(), [20, 10]);
        assert_eq!(image.level_array(2).unwrap().shape(), [5, 3]);
        let (_, values) = image
            .level_array(1)
            .unwrap()
            .read_elements::<u16>(&Selection::all())
            .unwrap();
        assert!(values.iter().all(|&v| v == 0));
    }
}

#[test]
fn ome_zarr_py_versions_0_1_and_0_2() {
    for version in ["v1", "v2"] {
        let image = open(&format!("ome-zarr-py/{version}"));
        assert_eq!(image.layout(), Layout::OmeZarr04);
        // Axes implied before 0.3: t, c, z, y, x.
        let names: Vec<&str> = image.axes().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["t", "c", "z", "y", "x"]);
        let array = image.level_array(0).unwrap();
        assert_eq!(array.shape(), [1, 2, 1, 16, 16]);
        let (_, values) = array.read_elements::<u8>(&Selection::all()).unwrap();
        assert_eq!(values.iter().map(|&v| v as u64).sum::<u64>(), 5235);
        assert_eq!(values.iter().min(), Some(&2));
        assert_eq!(values.iter().max(), Some(&21));
    }
}

#[test]
fn bioformats2raw_series() {
    let dir = sample("ome-zarr-py/bf2raw/fake-series-2.zarr");
    let store: Arc<dyn Store> = Arc::new(FsStore::read_only(dir));
    let err = MultiscaleImage::open(store.clone(), "")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bioformats2raw") && err.contains("'/0'"),
        "{err}"
    );
    for (series, sum) in [("0", 33_411_110u64), ("1", 33_411_210)] {
        let image = MultiscaleImage::open(store.clone(), series).unwrap();
        assert_eq!(image.levels().len(), 2);
        let (_, l0) = image
            .level_array(0)
            .unwrap()
            .read_elements::<u8>(&Selection::all())
            .unwrap();
        assert_eq!(l0.iter().map(|&v| v as u64).sum::<u64>(), sum);
        let (_, l1) = image
            .level_array(1)
            .unwrap()
            .read_elements::<u8>(&Selection::all())
            .unwrap();
        // Level 1 is level 0 at even rows and columns: what our stride method computes.
        let expected = neurochunk_ome::downsample_block(
            &neurochunk_array::DataType::UInt8,
            &l0,
            &[1, 1, 1, 512, 512],
            &[1, 1, 1, 2, 2],
            neurochunk_ome::Method::Stride,
        )
        .unwrap();
        assert_eq!(l1, expected);
        assert!(neurochunk_ome::validate(store.clone(), series)
            .unwrap()
            .is_empty());
    }

    // Listed by the OME group, and converted to OME-Zarr 0.5 series by series.
    let (kind, images) = neurochunk_ome::container_images(store.as_ref(), "")
        .unwrap()
        .unwrap();
    assert_eq!(kind, neurochunk_ome::ContainerKind::Bioformats2Raw);
    assert_eq!(images, ["0", "1"]);
    let out: Arc<dyn Store> = Arc::new(neurochunk_array::MemoryStore::new());
    let options = neurochunk_ome::ConvertImageOptions::new(Layout::OmeZarr05);
    neurochunk_ome::convert_container(&store, "", out.clone(), "", &options, &|_| {}).unwrap();
    for (series, sum) in [("0", 33_411_110u64), ("1", 33_411_210)] {
        let image = MultiscaleImage::open(out.clone(), series).unwrap();
        assert_eq!(image.layout(), Layout::OmeZarr05);
        let (_, l0) = image
            .level_array(0)
            .unwrap()
            .read_elements::<u8>(&Selection::all())
            .unwrap();
        assert_eq!(l0.iter().map(|&v| v as u64).sum::<u64>(), sum);
        assert!(neurochunk_ome::validate(out.clone(), series)
            .unwrap()
            .is_empty());
    }
}
