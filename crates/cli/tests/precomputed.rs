//! Neuroglancer precomputed layers on the command line: `tree`, `info`, `get` of a layer (scale
//! 0) and of a scale with `--region`, `put --format precomputed` in each encoding, and
//! `convert` to Zarr and back. The layers read are the fixtures tensorstore and cloud-volume
//! wrote for the array crate's tests (`crates/array/tests/data/precomputed`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use neurochunk_dtype::npy::{read_npy, write_npy};
use neurochunk_dtype::DataType;
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

fn fixture(layer: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../array/tests/data/precomputed")
        .join(layer)
        .to_str()
        .unwrap()
        .to_string()
}

/// The values the writer read back (`[x, y, z, channel]`, C order).
fn expected(layer: &str, key: &str) -> (Vec<usize>, Vec<u8>) {
    let (header, data) = read_npy(fixture(&format!("expected/{layer}__{key}.npy"))).unwrap();
    (header.shape, data)
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn tree_and_info_show_layers_and_scales() {
    let layer = fixture("ts_raw_u8");
    let tree = ok(&["tree", &layer]);
    assert!(tree.contains("(group, precomputed)"), "{tree}");
    assert!(tree.contains("4_4_40  [20, 18, 7, 1] uint8"), "{tree}");
    assert!(tree.contains("8_8_40  [10, 9, 7, 1] uint8"), "{tree}");
    assert!(tree.contains("precomputed raw"), "{tree}");

    let info: Value = serde_json::from_str(&ok(&["info", &layer, "--json"])).unwrap();
    assert_eq!(info["format"], "precomputed");
    assert_eq!(info["node_type"], "group");
    assert_eq!(
        info["attributes"]["scales"],
        serde_json::json!(["4_4_40", "8_8_40"])
    );
    assert_eq!(info["metadata"]["data_type"], "uint8");

    // A scale directory has no metadata of its own: it is read through its layer's info.
    let scale = format!("{layer}/8_8_40");
    let info: Value = serde_json::from_str(&ok(&["info", &scale, "--json"])).unwrap();
    assert_eq!(info["node_type"], "array");
    assert_eq!(info["shape"], serde_json::json!([10, 9, 7, 1]));
    assert_eq!(
        info["attributes"]["precomputed"]["voxel_offset"],
        serde_json::json!([1, 2, 2])
    );
    let text = ok(&["info", &fixture("ts_shard_murmur_gzip/s0")]);
    assert!(text.contains("format:      precomputed"), "{text}");
    assert!(
        text.contains("precomputed compressed_segmentation (sharded)"),
        "{text}"
    );
}

#[test]
fn get_reads_scale_zero_another_scale_and_regions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a.npy");
    // The layer: its first scale.
    ok(&["get", &fixture("ts_raw_u8"), "-o", s(&out)]);
    let (header, got) = read_npy(&out).unwrap();
    let (shape, want) = expected("ts_raw_u8", "4_4_40");
    assert_eq!(header.shape, shape);
    assert_eq!(got, want);
    // Another scale, by its key.
    ok(&["get", &fixture("ts_raw_u8/8_8_40"), "-o", s(&out)]);
    let (header, got) = read_npy(&out).unwrap();
    let (shape, want) = expected("ts_raw_u8", "8_8_40");
    assert_eq!(header.shape, shape);
    assert_eq!(got, want);
    // A region of a sharded, gzip-compressed uint64 scale (indexes from 0, not the offset).
    ok(&[
        "get",
        &fixture("ts_shard_murmur_gzip/s0"),
        "--region",
        "2:9,3,1:5,0",
        "-o",
        s(&out),
    ]);
    let (header, got) = read_npy(&out).unwrap();
    assert_eq!(header.shape, [7, 4]);
    let (shape, all) = expected("ts_shard_murmur_gzip", "s0");
    let at = |x: usize, z: usize| ((x * shape[1] + 3) * shape[2] + z) * shape[3] * 8;
    let want: Vec<u8> = (2..9)
        .flat_map(|x| (1..5).flat_map(move |z| (at(x, z)..at(x, z) + 8).collect::<Vec<_>>()))
        .map(|i| all[i])
        .collect();
    assert_eq!(got, want);
}

/// A (24, 20, 10) volume of `values(x, y, z)` as an .npy file.
fn npy(dir: &Path, name: &str, data_type: DataType, value: impl Fn(usize) -> Vec<u8>) -> PathBuf {
    let path = dir.join(name);
    let data: Vec<u8> = (0..24 * 20 * 10).flat_map(value).collect();
    write_npy(&path, &data_type, &[24, 20, 10], &data).unwrap();
    path
}

#[test]
fn put_writes_each_encoding_and_get_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let labels = npy(dir.path(), "labels.npy", DataType::UInt64, |i| {
        ((i / 37) as u64 * 1_000_003).to_le_bytes().to_vec()
    });
    let grey = npy(dir.path(), "grey.npy", DataType::UInt8, |i| {
        vec![((i % 24) * 5 + (i / 240) * 3) as u8]
    });
    let cases: [(&PathBuf, &str, &str); 4] = [
        (&labels, "seg", "compressed_segmentation:4:4:2"),
        (&labels, "raw", "raw"),
        (&grey, "png", "png:9"),
        (&grey, "gz", "raw,gzip"),
    ];
    for (input, name, codec) in cases {
        let layer = dir.path().join(name);
        ok(&[
            "put",
            s(input),
            s(&layer),
            "--format",
            "precomputed",
            "--codec",
            codec,
            "--chunks",
            "16,8,4",
            "--resolution",
            "8,8,40",
            "--voxel-offset",
            "-4,100,0",
        ]);
        let info: Value =
            serde_json::from_slice(&std::fs::read(layer.join("info")).unwrap()).unwrap();
        let scale = &info["scales"][0];
        assert_eq!(scale["key"], "8_8_40", "{name}");
        assert_eq!(
            scale["voxel_offset"],
            serde_json::json!([-4, 100, 0]),
            "{name}"
        );
        assert_eq!(
            scale["chunk_sizes"],
            serde_json::json!([[16, 8, 4]]),
            "{name}"
        );
        // Keys name voxel coordinates; edge chunks are truncated.
        let first = layer.join("8_8_40/-4-12_100-108_0-4");
        let gz = layer.join("8_8_40/-4-12_100-108_0-4.gz");
        assert!(first.is_file() || gz.is_file(), "{name}");
        assert_eq!(gz.is_file(), name == "gz", "{name}");
        assert!(
            layer.join("8_8_40/12-20_116-120_8-10").is_file()
                || layer.join("8_8_40/12-20_116-120_8-10.gz").is_file(),
            "{name}"
        );
        let back = dir.path().join(format!("{name}.npy"));
        ok(&["get", s(&layer), "-o", s(&back)]);
        let (header, got) = read_npy(&back).unwrap();
        assert_eq!(header.shape, [24, 20, 10, 1], "{name}");
        assert_eq!(got, read_npy(input).unwrap().1, "{name}");
    }
    let info: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("seg/info")).unwrap()).unwrap();
    assert_eq!(info["type"], "segmentation");
    assert_eq!(
        info["scales"][0]["compressed_segmentation_block_size"],
        serde_json::json!([4, 4, 2])
    );
    // jpeg is lossy.
    let layer = dir.path().join("jpeg");
    ok(&[
        "put",
        s(&grey),
        s(&layer),
        "--format",
        "precomputed",
        "--codec",
        "jpeg:95",
    ]);
    let back = dir.path().join("jpeg.npy");
    ok(&["get", &format!("{}/1_1_1", s(&layer)), "-o", s(&back)]);
    let worst = read_npy(&back)
        .unwrap()
        .1
        .iter()
        .zip(read_npy(&grey).unwrap().1)
        .map(|(a, b)| a.abs_diff(b))
        .max()
        .unwrap();
    assert!(worst <= 8, "jpeg differs by {worst}");
}

#[test]
fn put_refuses_what_precomputed_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let grey = npy(dir.path(), "grey.npy", DataType::UInt16, |i| {
        (i as u16).to_le_bytes().to_vec()
    });
    let layer = dir.path().join("l");
    for (extra, words) in [
        (&["--codec", "jpeg"][..], &["jpeg", "uint8"][..]),
        (
            &["--codec", "compressed_segmentation"],
            &["uint32 and uint64"],
        ),
        (&["--endian", "big"], &["--endian"]),
        (&["--resolution", "1,2"], &["--resolution"]),
    ] {
        let mut args = vec!["put", s(&grey), s(&layer), "--format", "precomputed"];
        args.extend_from_slice(extra);
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{extra:?}");
        for word in words {
            assert!(err.contains(word), "{extra:?}: {err}");
        }
    }
    assert!(!layer.exists());
}

/// `[x, y, z, c]` C-order bytes of one-byte elements as `[c, z, y, x]`.
fn reversed_axes(shape: &[usize], data: &[u8]) -> Vec<u8> {
    let [x, y, z, c] = [shape[0], shape[1], shape[2], shape[3]];
    let mut out = Vec::with_capacity(data.len());
    for ci in 0..c {
        for zi in 0..z {
            for yi in 0..y {
                for xi in 0..x {
                    out.push(data[((xi * y + yi) * z + zi) * c + ci]);
                }
            }
        }
    }
    out
}

#[test]
fn convert_carries_scales_as_ome_zarr_levels_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let ome = dir.path().join("img.ome.zarr");
    let layer = dir.path().join("layer");
    // A layer of two scales: an OME-Zarr 0.5 image of two levels, axes c, z, y, x.
    ok(&[
        "convert",
        &fixture("ts_raw_u8"),
        s(&ome),
        "--format",
        "zarr3",
    ]);
    let tree = ok(&["tree", s(&ome)]);
    assert!(tree.contains("multiscale ome-zarr-0.5: 2 levels"), "{tree}");
    assert!(tree.contains("0  [1, 7, 18, 20] uint8"), "{tree}");
    let image: Value = serde_json::from_str(&ok(&["ome", "info", s(&ome), "--json"])).unwrap();
    let levels = image["levels"].as_array().unwrap();
    assert_eq!(levels[1]["scale"], serde_json::json!([1.0, 40.0, 8.0, 8.0]));
    // The voxel offset times the resolution.
    assert_eq!(
        levels[1]["translation"],
        serde_json::json!([0.0, 80.0, 16.0, 8.0])
    );
    ok(&["ome", "validate", s(&ome)]);
    for (k, key) in ["4_4_40", "8_8_40"].iter().enumerate() {
        let out = dir.path().join(format!("level{k}.npy"));
        ok(&["get", &format!("{}/{k}", s(&ome)), "-o", s(&out)]);
        let (shape, want) = expected("ts_raw_u8", key);
        assert_eq!(
            read_npy(&out).unwrap().1,
            reversed_axes(&shape, &want),
            "{key}"
        );
    }
    // And back: the levels are scales named after their resolution, offsets restored.
    ok(&["convert", s(&ome), s(&layer), "--format", "precomputed"]);
    let info: Value = serde_json::from_slice(&std::fs::read(layer.join("info")).unwrap()).unwrap();
    let keys: Vec<&str> = info["scales"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["4_4_40", "8_8_40"]);
    assert_eq!(
        info["scales"][1]["resolution"],
        serde_json::json!([8.0, 8.0, 40.0])
    );
    assert_eq!(
        info["scales"][1]["voxel_offset"],
        serde_json::json!([1, 2, 2])
    );
    for key in ["4_4_40", "8_8_40"] {
        let out = dir.path().join(format!("{key}.npy"));
        ok(&["get", &format!("{}/{key}", s(&layer)), "-o", s(&out)]);
        assert_eq!(
            read_npy(&out).unwrap().1,
            expected("ts_raw_u8", key).1,
            "{key}"
        );
    }
}

#[test]
fn a_pyramid_becomes_a_layer() {
    let dir = tempfile::tempdir().unwrap();
    // A (z, y, x) volume: a three-level OME-Zarr 0.4 pyramid, then a precomputed layer.
    let zyx = npy(dir.path(), "zyx.npy", DataType::UInt16, |i| {
        ((i % 97) as u16 * 300).to_le_bytes().to_vec()
    });
    let raw = dir.path().join("raw.zarr");
    ok(&["put", s(&zyx), s(&raw), "--format", "zarr2"]);
    let ome = dir.path().join("p.zarr");
    ok(&[
        "pyramid",
        s(&raw),
        s(&ome),
        "--levels",
        "3",
        "--format",
        "zarr2",
    ]);
    let layer = dir.path().join("layer");
    ok(&[
        "convert",
        s(&ome),
        s(&layer),
        "--format",
        "precomputed",
        "--chunks",
        "8,8,8",
        "--codec",
        "png",
    ]);
    let info: Value = serde_json::from_slice(&std::fs::read(layer.join("info")).unwrap()).unwrap();
    assert_eq!(info["scales"].as_array().unwrap().len(), 3);
    assert_eq!(info["scales"][0]["size"], serde_json::json!([10, 20, 24]));
    assert_eq!(info["scales"][0]["encoding"], "png");
    assert_eq!(info["scales"][1]["size"], serde_json::json!([5, 10, 12]));
    let out = dir.path().join("s0.npy");
    ok(&["get", s(&layer), "-o", s(&out)]);
    let (header, got) = read_npy(&out).unwrap();
    assert_eq!(header.shape, [10, 20, 24, 1]);
    // x, y, z of the (z, y, x) input.
    let (_, input) = read_npy(&zyx).unwrap();
    for (x, y, z) in [(0, 0, 0), (9, 19, 23), (3, 7, 11)] {
        let at_in = ((z * 20 + y) * 10 + x) * 2;
        let at_out = ((x * 20 + y) * 24 + z) * 2;
        assert_eq!(
            got[at_out..at_out + 2],
            input[at_in..at_in + 2],
            "({x}, {y}, {z})"
        );
    }
    // Through an n5-viewer N5 image and back (N5 keeps no offsets).
    let n5 = dir.path().join("p.n5");
    ok(&["convert", s(&layer), s(&n5), "--format", "n5"]);
    let again = dir.path().join("again");
    ok(&[
        "convert",
        s(&n5),
        s(&again),
        "--format",
        "precomputed",
        "--codec",
        "png",
    ]);
    let out2 = dir.path().join("again.npy");
    ok(&["get", s(&again), "-o", s(&out2)]);
    assert_eq!(read_npy(&out2).unwrap().1, got);
    // pyramid writes the layer directly: the same scales, the same scale 0.
    let direct = dir.path().join("direct");
    ok(&[
        "pyramid",
        s(&raw),
        s(&direct),
        "--levels",
        "3",
        "--format",
        "precomputed",
        "--chunks",
        "8,8,8",
        "--codec",
        "png",
    ]);
    let direct_info: Value =
        serde_json::from_slice(&std::fs::read(direct.join("info")).unwrap()).unwrap();
    for key in ["size", "encoding", "chunk_sizes"] {
        for level in 0..3 {
            assert_eq!(
                direct_info["scales"][level][key], info["scales"][level][key],
                "{key} of scale {level}"
            );
        }
    }
    let out3 = dir.path().join("direct.npy");
    ok(&["get", s(&direct), "-o", s(&out3)]);
    assert_eq!(read_npy(&out3).unwrap().1, got);
    // No temporary level directory is left beside the layer.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // A label image is added to an OME-Zarr image, not to a precomputed layer.
    let refused = run(&[
        "pyramid",
        s(&raw),
        s(&direct),
        "--levels",
        "2",
        "--format",
        "precomputed",
        "--label",
        "cells",
    ]);
    assert!(!refused.status.success());
}

#[test]
fn a_layer_is_replaced_only_when_it_holds_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let grey = npy(dir.path(), "grey.npy", DataType::UInt8, |i| vec![i as u8]);
    let layer = dir.path().join("layer");
    let put = |extra: &[&str]| {
        let mut args = vec!["put", s(&grey), s(&layer), "--format", "precomputed"];
        args.extend_from_slice(extra);
        run(&args)
    };
    assert!(put(&["--chunks", "8,8,8", "--codec", "raw,gzip"])
        .status
        .success());
    // A layer of its own kind (info, chunk files, .gz files) is replaced.
    let again = put(&["--chunks", "16,16,4", "--resolution", "2,2,2"]);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let info: Value = serde_json::from_slice(&std::fs::read(layer.join("info")).unwrap()).unwrap();
    assert_eq!(info["scales"].as_array().unwrap().len(), 1);
    assert_eq!(info["scales"][0]["key"], "2_2_2");
    assert!(!layer.join("1_1_1").exists());
    // A file that is not the layer's is kept, and the layer with it.
    std::fs::write(layer.join("2_2_2/notes.txt"), "mine").unwrap();
    let refused = put(&[]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("notes.txt"), "{err}");
    assert!(layer.join("2_2_2/notes.txt").is_file());
}
