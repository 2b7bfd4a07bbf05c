//! Pyramids built from arrays in memory: values against the definition level by level, the
//! metadata of every layout, and the errors.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use neurochunk_array::{
    Array, ArrayBuilder, Codec, DataType, MemoryStore, Selection, Store, ZarrFormat,
};
use neurochunk_ome::{
    build_pyramid, pyramid_chunk_count, validate, Factors, Layout, Method, MultiscaleImage,
    PyramidOptions,
};

/// Level k+1 from level k by the definition: each output voxel from its block of existing
/// voxels (mean rounded ties-to-even, mode ties to the smallest).
fn reference(
    input: &[u16],
    shape: &[usize],
    f: &[usize],
    method: Method,
) -> (Vec<usize>, Vec<u16>) {
    let out: Vec<usize> = shape.iter().zip(f).map(|(&n, &f)| n.div_ceil(f)).collect();
    let mut values = Vec::new();
    for z in 0..out[0] {
        for y in 0..out[1] {
            for x in 0..out[2] {
                let mut block = Vec::new();
                for iz in z * f[0]..((z + 1) * f[0]).min(shape[0]) {
                    for iy in y * f[1]..((y + 1) * f[1]).min(shape[1]) {
                        for ix in x * f[2]..((x + 1) * f[2]).min(shape[2]) {
                            block.push(input[(iz * shape[1] + iy) * shape[2] + ix]);
                        }
                    }
                }
                values.push(match method {
                    Method::Mean => {
                        let sum: f64 = block.iter().map(|&v| v as f64).sum();
                        (sum / block.len() as f64).round_ties_even() as u16
                    }
                    Method::Mode => {
                        let mut best = (0, u16::MAX);
                        for &v in &block {
                            let c = block.iter().filter(|&&w| w == v).count();
                            if c > best.0 || (c == best.0 && v < best.1) {
                                best = (c, v);
                            }
                        }
                        best.1
                    }
                    Method::Stride => block[0],
                    Method::Min => *block.iter().min().unwrap(),
                    Method::Max => *block.iter().max().unwrap(),
                });
            }
        }
    }
    (out, values)
}

fn source(store: &Arc<dyn Store>, shape: [u64; 3], labels: bool) -> (Array, Vec<u16>) {
    let array = ArrayBuilder::new(shape, DataType::UInt16)
        .chunks([8, 9, 10])
        .create(store.clone(), "raw")
        .unwrap();
    let mut rng = fastrand::Rng::with_seed(16);
    let n = shape.iter().product::<u64>() as usize;
    let values: Vec<u16> = (0..n)
        .map(|_| if labels { rng.u16(0..4) } else { rng.u16(..) })
        .collect();
    array.write_elements(&Selection::all(), &values).unwrap();
    (array, values)
}

fn read_all(image: &MultiscaleImage, k: usize) -> (Vec<u64>, Vec<u16>) {
    let array = image.level_array(k).unwrap();
    let (_, v) = array.read_elements::<u16>(&Selection::all()).unwrap();
    (array.shape().to_vec(), v)
}

fn check_levels(image: &MultiscaleImage, level0: &[u16], factors: &[[usize; 3]], method: Method) {
    let (shape0, got0) = read_all(image, 0);
    assert_eq!(got0, level0);
    let mut shape: Vec<usize> = shape0.iter().map(|&n| n as usize).collect();
    let mut previous = got0;
    for (k, f) in factors.iter().enumerate() {
        let (want_shape, want) = reference(&previous, &shape, f, method);
        let (got_shape, got) = read_all(image, k + 1);
        assert_eq!(
            got_shape.iter().map(|&n| n as usize).collect::<Vec<_>>(),
            want_shape
        );
        assert_eq!(got, want, "level {} of {method}", k + 1);
        shape = want_shape;
        previous = got;
    }
}

/// Chunks of 4 nest under factor 2 at every level (the streaming engine builds all levels in
/// one pass); chunks of 5 on y do not (level 1 has 10 rows in chunks of 5, whose blocks of 2
/// straddle chunks: the levels are built one after another).
#[test]
fn every_method_and_layout_matches_the_definition() {
    for chunks in [vec![4, 4, 4], vec![4, 5, 6]] {
        every_method_and_layout(chunks);
    }
}

fn every_method_and_layout(chunks: Vec<usize>) {
    let layouts = [
        Layout::OmeZarr04,
        Layout::OmeZarr05,
        Layout::N5Bdv,
        Layout::N5Viewer,
    ];
    for (i, method) in [
        Method::Mean,
        Method::Mode,
        Method::Stride,
        Method::Min,
        Method::Max,
    ]
    .into_iter()
    .enumerate()
    {
        let layout = layouts[i % layouts.len()];
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let (src, values) = source(&store, [21, 19, 37], method == Method::Mode);
        let mut options = PyramidOptions::new(4, method, layout);
        options.chunks = Some(chunks.clone());
        options.units = Some(vec!["micrometer".into(); 3]);
        options.scale = Some(vec![2.0, 0.5, 0.5]);
        let written = AtomicU64::new(0);
        let image = build_pyramid(&src, store.clone(), "image", &options, &|n| {
            written.fetch_add(n, Ordering::Relaxed);
        })
        .unwrap();
        assert_eq!(
            written.into_inner(),
            pyramid_chunk_count(&src, &options).unwrap()
        );
        assert_eq!(image.layout(), layout);
        assert_eq!(image.levels().len(), 4);
        check_levels(&image, &values, &[[2, 2, 2]; 3], method);
        let names: Vec<&str> = image.axes().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["z", "y", "x"]);
        assert_eq!(image.axes()[2].unit.as_deref(), Some("micrometer"));
        assert_eq!(image.levels()[2].scale, [8.0, 2.0, 2.0]);
        // Pixel-centre translation: (factor - 1) * scale0 / 2.
        assert_eq!(
            image.levels()[2].translation.as_deref(),
            Some(&[3.0, 0.75, 0.75][..])
        );
        if layout.is_ome_zarr() {
            assert_eq!(image.method(), Some(method.name()));
            assert_eq!(validate(store.clone(), "image").unwrap(), []);
        }
    }
}

#[test]
fn explicit_factors_sharded_and_axis_of_length_one() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let array = ArrayBuilder::new([3, 1, 40, 27], DataType::UInt16)
        .chunks([1, 1, 16, 16])
        .dimension_names(["c", "z", "y", "x"])
        .create(store.clone(), "src")
        .unwrap();
    let values: Vec<u16> = (0..3 * 40 * 27).map(|i| (i % 1013) as u16).collect();
    array.write_elements(&Selection::all(), &values).unwrap();
    let mut options = PyramidOptions::new(3, Method::Mean, Layout::OmeZarr05);
    options.factors = Some(Factors::Explicit(vec![1, 2, 3, 2]));
    options.chunks = Some(vec![1, 1, 8, 8]);
    options.shards = Some(vec![1, 1, 16, 16]);
    options.codecs = Some(vec![Codec::zstd(1), Codec::Crc32c]);
    let image = build_pyramid(&array, store.clone(), "", &options, &|_| {}).unwrap();
    let l1 = image.level_array(1).unwrap();
    assert_eq!(l1.shape(), [3, 1, 14, 14]);
    assert_eq!(image.level_array(2).unwrap().shape(), [3, 1, 5, 7]);
    let json = image.to_json();
    assert_eq!(json["levels"][0]["chunks"], serde_json::json!([1, 1, 8, 8]));
    assert_eq!(
        json["levels"][0]["shards"],
        serde_json::json!([1, 1, 16, 16])
    );
    assert_eq!(json["axes"][0]["type"], "channel");
    assert_eq!(
        l1.metadata().dimension_names.as_ref().unwrap()[3].as_deref(),
        Some("x")
    );
    // Per channel, the mean over (y, x) blocks of 3 × 2.
    let (_, got) = l1.read_elements::<u16>(&Selection::all()).unwrap();
    for c in 0..3 {
        let plane = &values[c * 40 * 27..(c + 1) * 40 * 27];
        let mut sum = 0f64;
        for y in 3..6 {
            for x in 2..4 {
                sum += plane[y * 27 + x] as f64;
            }
        }
        assert_eq!(
            got[c * 14 * 14 + 14 + 1],
            (sum / 6.0).round_ties_even() as u16
        );
        // The last column holds x {26} only.
        let mut edge = 0f64;
        for y in 39..40 {
            edge += plane[y * 27 + 26] as f64;
        }
        assert_eq!(got[c * 14 * 14 + 13 * 14 + 13], edge as u16);
    }
    assert_eq!(validate(store, "").unwrap(), []);
}

#[test]
fn auto_isotropic_halves_the_fine_axes_first() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (src, _) = source(&store, [16, 64, 64], false);
    let mut options = PyramidOptions::new(4, Method::Stride, Layout::OmeZarr04);
    options.factors = Some(Factors::AutoIsotropic);
    options.scale = Some(vec![4.0, 1.0, 1.0]);
    let image = build_pyramid(&src, store, "iso", &options, &|_| {}).unwrap();
    let scales: Vec<Vec<f64>> = image.levels().iter().map(|l| l.scale.clone()).collect();
    assert_eq!(
        scales,
        [
            [4.0, 1.0, 1.0],
            [4.0, 2.0, 2.0],
            [4.0, 4.0, 4.0],
            [8.0, 8.0, 8.0]
        ]
    );
    let shapes: Vec<Vec<u64>> = (0..4)
        .map(|k| image.level_array(k).unwrap().shape().to_vec())
        .collect();
    assert_eq!(
        shapes,
        [[16, 64, 64], [16, 32, 32], [16, 16, 16], [8, 8, 8]]
    );
}

#[test]
fn errors_name_the_path() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (src, _) = source(&store, [5, 4, 3], false);
    let err = build_pyramid(
        &src,
        store.clone(),
        "out",
        &PyramidOptions::new(5, Method::Mean, Layout::OmeZarr05),
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("/raw") && err.contains("level 4 would not be smaller"),
        "{err}"
    );
    let mut options = PyramidOptions::new(2, Method::Mean, Layout::OmeZarr04);
    options.shards = Some(vec![4, 4, 4]);
    let err = build_pyramid(&src, store.clone(), "out", &options, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/raw") && err.contains("shards need OME-Zarr 0.5"),
        "{err}"
    );
    let mut options = PyramidOptions::new(2, Method::Mean, Layout::OmeZarr05);
    options.factors = Some(Factors::Explicit(vec![2, 2]));
    let err = build_pyramid(&src, store.clone(), "out", &options, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("/raw") && err.contains("3 positive integers"),
        "{err}"
    );
    let bools = ArrayBuilder::new([4, 4], DataType::Bool)
        .create(store.clone(), "mask")
        .unwrap();
    let err = build_pyramid(
        &bools,
        store.clone(),
        "m",
        &PyramidOptions::new(2, Method::Mean, Layout::OmeZarr05),
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("/mask") && err.contains("bool"), "{err}");
    assert!(
        store.get("out/zarr.json").unwrap().is_none(),
        "nothing written on refusal"
    );
    // Not an image: an array, and a plain group.
    let err = MultiscaleImage::open(store.clone(), "raw")
        .unwrap_err()
        .to_string();
    assert!(err.contains("'/raw' is not a multiscale image"), "{err}");
    neurochunk_array::create_group(store.as_ref(), "plain", ZarrFormat::V3, Default::default())
        .unwrap();
    let err = MultiscaleImage::open(store, "plain")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("'/plain'") && err.contains("no 'multiscales'"),
        "{err}"
    );
}

#[test]
fn level_zero_is_copied_as_stored_when_the_encoding_matches() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (src, values) = source(&store, [16, 18, 20], false);
    let mut options = PyramidOptions::new(2, Method::Mean, Layout::OmeZarr05);
    options.chunks = Some(vec![8, 9, 10]);
    let image = build_pyramid(&src, store.clone(), "same", &options, &|_| {}).unwrap();
    check_levels(&image, &values, &[[2, 2, 2]], Method::Mean);
    for key in ["0/0/0", "1/1/1"] {
        assert_eq!(
            store.get(&format!("raw/c/{key}")).unwrap(),
            store.get(&format!("same/0/c/{key}")).unwrap()
        );
    }
    // A corrupt source chunk is found when its stored bytes are decoded for level 1: the
    // error names the source and the chunk.
    store
        .set("raw/c/1/1/1", b"not zstd".to_vec().into())
        .unwrap();
    let err = build_pyramid(&src, store.clone(), "again", &options, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("/raw") && err.contains("c/1/1/1"), "{err}");
    // With other chunks the source is decoded: the error names the source.
    options.chunks = Some(vec![4, 9, 10]);
    let err = build_pyramid(&src, store, "other", &options, &|_| {})
        .unwrap_err()
        .to_string();
    assert!(err.contains("/raw"), "{err}");
}

#[test]
fn bigdataviewer_voxel_size_from_the_xml() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let (src, _) = source(&store, [8, 12, 16], false);
    let mut options = PyramidOptions::new(2, Method::Mean, Layout::N5Bdv);
    options.scale = Some(vec![2.0, 0.5, 0.25]);
    options.units = Some(vec!["micrometer".into(); 3]);
    build_pyramid(&src, store.clone(), "bdv", &options, &|_| {}).unwrap();
    let xml = String::from_utf8(store.get("bdv/dataset.xml").unwrap().unwrap().to_vec()).unwrap();
    assert!(
        xml.contains("<size>0.25 0.5 2</size>") && xml.contains("<unit>micrometer</unit>"),
        "{xml}"
    );
    // Without resolution and units on the setup (as BigDataViewer's own export writes it),
    // the voxel size comes from the XML.
    let mut setup: serde_json::Value =
        serde_json::from_slice(&store.get("bdv/setup0/attributes.json").unwrap().unwrap()).unwrap();
    let attrs = setup.as_object_mut().unwrap();
    // BigDataViewer's N5 loader needs the setup's data type.
    assert_eq!(attrs["dataType"], "uint16", "{attrs:?}");
    attrs.remove("resolution");
    attrs.remove("units");
    attrs.remove("axes");
    store
        .set(
            "bdv/setup0/attributes.json",
            serde_json::to_vec(&setup).unwrap().into(),
        )
        .unwrap();
    for path in ["bdv", "bdv/setup0", "bdv/setup0/timepoint0"] {
        let image = MultiscaleImage::open(store.clone(), path).unwrap();
        assert_eq!(image.layout(), Layout::N5Bdv);
        assert_eq!(image.levels()[0].scale, [2.0, 0.5, 0.25], "{path}");
        assert_eq!(image.levels()[1].scale, [4.0, 1.0, 0.5], "{path}");
        assert_eq!(image.axes()[0].unit.as_deref(), Some("micrometer"));
        let names: Vec<&str> = image.axes().iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["z", "y", "x"]);
        assert_eq!(image.level_array(1).unwrap().shape(), [4, 6, 8]);
    }
}

/// The streaming pass over a sparse source with a fill value, level 0 copied as stored: chunks
/// the source does not store are not stored in level 0 either, and count as the fill value in
/// level 1 (edge chunks on every axis). Chunks of 6 rows hold whole blocks of 2 (each copied
/// chunk is reduced on its own), chunks of 9 do not (the box of a level 1 chunk is assembled).
#[test]
fn sparse_source_copied_as_stored_and_reduced_with_its_fill_value() {
    for chunks in [[8, 6, 10], [8, 9, 10]] {
        sparse_source(chunks);
    }
}

fn sparse_source(chunks: [usize; 3]) {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let shape = [40u64, 36, 53];
    let array = ArrayBuilder::new(shape, DataType::UInt16)
        .chunks(chunks)
        .fill_value(neurochunk_array::FillValue::Bytes(
            7u16.to_le_bytes().to_vec(),
        ))
        .create(store.clone(), "raw")
        .unwrap();
    // Only the box z 8..24, y 0..18, x 20..53 (the edge chunk 50..53 included) is written.
    let (start, extent) = ([8u64, 0, 20], [16u64, 18, 33]);
    let written: Vec<u16> = (0..extent.iter().product::<u64>())
        .map(|i| (i * 37 % 5003) as u16)
        .collect();
    array
        .write_elements(&Selection::from_box(&start, &extent), &written)
        .unwrap();
    let mut values = vec![7u16; shape.iter().product::<u64>() as usize];
    let mut i = 0;
    for z in start[0]..start[0] + extent[0] {
        for y in start[1]..start[1] + extent[1] {
            for x in start[2]..start[2] + extent[2] {
                values[((z * shape[1] + y) * shape[2] + x) as usize] = written[i];
                i += 1;
            }
        }
    }
    let mut options = PyramidOptions::new(2, Method::Mean, Layout::OmeZarr05);
    options.chunks = Some(chunks.to_vec());
    let count = AtomicU64::new(0);
    let image = build_pyramid(&array, store.clone(), "img", &options, &|n| {
        count.fetch_add(n, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(
        count.into_inner(),
        pyramid_chunk_count(&array, &options).unwrap()
    );
    check_levels(&image, &values, &[[2, 2, 2]], Method::Mean);
    let stored = |prefix: &str| {
        store
            .list_prefix(prefix)
            .unwrap()
            .into_iter()
            .filter(|k| !k.ends_with("zarr.json"))
            .count()
    };
    let stored_chunks = stored("raw/");
    // z 8..24: 2 chunks; y 0..18: 3 of 6 or 2 of 9 rows; x 20..53: 4.
    assert_eq!(stored_chunks, if chunks[1] == 6 { 24 } else { 16 });
    assert_eq!(stored("img/0/"), stored_chunks);
    assert_eq!(
        store.get("raw/c/1/0/2").unwrap(),
        store.get("img/0/c/1/0/2").unwrap()
    );
}
