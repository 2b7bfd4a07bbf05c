//! N5 containers through the array engine: byte layouts of the reference writers (formats.md
//! N5-01..N5-12), both axis orders, edge blocks, attributes, hierarchies, conversion round trips
//! through Zarr v2 and v3 and bad input (concurrent writers in separate processes:
//! `concurrent_writers.rs`).

use std::sync::Arc;

use neurochunk_array::convert::{convert_hierarchy, derive_metadata, ConvertOptions};
use neurochunk_array::n5::compression_from_n5_json;
use neurochunk_array::n5::n5_array_metadata;
use neurochunk_array::{
    create_group, list_nodes_with, open_node, parse_selection, Array, ArrayBytes, Codec, DataType,
    N5AxisOrder, NodeMetadata, OpenOptions, Store, ZarrFormat,
};
use neurochunk_store::Bytes;
use serde_json::{json, Map, Value};

mod common;
use common::{as_u16, store, u16s};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn listed() -> OpenOptions {
    OpenOptions::default()
}

fn reversed() -> OpenOptions {
    OpenOptions {
        n5_axis_order: N5AxisOrder::Reversed,
    }
}

fn read_u16(s: &Arc<dyn Store>, path: &str, options: &OpenOptions) -> (Vec<usize>, Vec<u16>) {
    let (shape, data) = Array::open_with(s.clone(), path, options)
        .unwrap()
        .read_all()
        .unwrap();
    (shape, as_u16(&data))
}

/// The N5-01 / N5-02 dataset: zarr view `[[1,2,3],[4,5,6]]`, N5 dims `[3,2]`, blockSize `[2,2]`.
fn n5_01_store(edge_block: &str) -> Arc<dyn Store> {
    let s = store();
    s.set(
        "vol/attributes.json",
        Bytes::from_static(br#"{"blockSize":[2,2],"compression":{"type":"raw"},"dataType":"uint16","dimensions":[3,2]}"#),
    )
    .unwrap();
    s.set(
        "vol/0/0",
        hex("0000 0002 00000002 00000002 0001 0002 0004 0005").into(),
    )
    .unwrap();
    s.set("vol/1/0", hex(edge_block).into()).unwrap();
    s
}

#[test]
fn padded_and_truncated_edge_blocks_read_alike_in_both_axis_orders() {
    for edge in [
        "0000 0002 00000002 00000002 0003 0000 0006 0000", // N5-01: padded (zp2, tensorstore)
        "0000 0002 00000001 00000002 0003 0006",           // N5-02: truncated (Java, z5)
    ] {
        let s = n5_01_store(edge);
        assert_eq!(
            read_u16(&s, "vol", &reversed()),
            (vec![2, 3], vec![1, 2, 3, 4, 5, 6]),
            "zarr-python 2's view"
        );
        assert_eq!(
            read_u16(&s, "vol", &listed()),
            (vec![3, 2], vec![1, 4, 2, 5, 3, 6]),
            "N5 / tensorstore view"
        );
        // A region crossing the edge block.
        let a = Array::open_with(s.clone(), "vol", &reversed()).unwrap();
        let (shape, data) = a.read(&parse_selection("1,1:").unwrap()).unwrap();
        assert_eq!((shape, as_u16(&data)), (vec![2], vec![5, 6]));
    }
}

#[test]
fn writes_truncated_edge_blocks_like_the_java_reference() {
    for (options, shape, chunks, values) in [
        (
            reversed(),
            vec![2u64, 3],
            vec![2usize, 2],
            vec![1u16, 2, 3, 4, 5, 6],
        ),
        (listed(), vec![3, 2], vec![2, 2], vec![1, 4, 2, 5, 3, 6]),
    ] {
        let s = store();
        let meta = n5_array_metadata(
            shape.clone(),
            chunks,
            DataType::UInt16,
            None,
            options.n5_axis_order,
            Map::new(),
            "vol",
        )
        .unwrap();
        let a = Array::create(s.clone(), "vol", meta).unwrap();
        a.write_all(&u16s(&values)).unwrap();
        assert_eq!(
            s.get("vol/0/0").unwrap().unwrap(),
            hex("0000 0002 00000002 00000002 0001 0002 0004 0005")
        );
        assert_eq!(
            s.get("vol/1/0").unwrap().unwrap(),
            hex("0000 0002 00000001 00000002 0003 0006"),
            "N5-02 truncated edge block"
        );
        let doc: Value =
            serde_json::from_slice(&s.get("vol/attributes.json").unwrap().unwrap()).unwrap();
        assert_eq!(doc["dimensions"], json!([3, 2]));
        assert_eq!(doc["blockSize"], json!([2, 2]));
        assert_eq!(doc["dataType"], json!("uint16"));
        assert_eq!(doc["compression"], json!({"type": "raw"}));
        assert_eq!(
            String::from_utf8(s.get("attributes.json").unwrap().unwrap().to_vec()).unwrap(),
            r#"{"n5":"4.0.0"}"#,
            "N5-12: the root carries the version, as Java writes it"
        );
        assert_eq!(
            read_u16(&s, "vol", &options),
            (shape.iter().map(|&d| d as usize).collect(), values)
        );
    }
}

#[test]
fn readme_example_block_n5_03() {
    let s = store();
    s.set(
        "attributes.json",
        Bytes::from_static(br#"{"n5":"4.0.0","dimensions":[1,2,3],"blockSize":[1,2,3],"dataType":"uint16","compression":{"type":"raw"}}"#),
    )
    .unwrap();
    s.set(
        "0/0/0",
        hex("0000 0003 00000001 00000002 00000003 0001 0002 0003 0004 0005 0006").into(),
    )
    .unwrap();
    // Listed view, shape [1,2,3]: element (0,j,k) is payload element j + 2k.
    assert_eq!(
        read_u16(&s, "", &listed()),
        (vec![1, 2, 3], vec![1, 3, 5, 2, 4, 6])
    );
    assert_eq!(
        read_u16(&s, "", &reversed()),
        (vec![3, 2, 1], vec![1, 2, 3, 4, 5, 6])
    );
}

#[test]
fn every_data_type_and_compression_round_trips_with_sparse_blocks() {
    let types = [
        DataType::UInt8,
        DataType::UInt16,
        DataType::UInt32,
        DataType::UInt64,
        DataType::Int8,
        DataType::Int16,
        DataType::Int32,
        DataType::Int64,
        DataType::Float32,
        DataType::Float64,
    ];
    let compressions = [
        json!({"type": "raw"}),
        json!({"type": "gzip", "level": 6, "useZlib": false}),
        json!({"type": "gzip", "level": 1, "useZlib": true}),
        json!({"type": "bzip2", "blockSize": 9}),
        json!({"type": "xz", "preset": 6}),
        json!({"type": "lz4", "blockSize": 65536}),
        json!({"type": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1, "blocksize": 0}),
        json!({"type": "zstd", "level": 3}),
    ];
    for dt in &types {
        let elem = dt.fixed_size().unwrap();
        for compression in &compressions {
            for order in [N5AxisOrder::Listed, N5AxisOrder::Reversed] {
                let s = store();
                let codec = compression_from_n5_json(compression, elem).unwrap();
                let meta = n5_array_metadata(
                    vec![7, 5, 3],
                    vec![3, 2, 2],
                    dt.clone(),
                    codec,
                    order,
                    Map::new(),
                    "d",
                )
                .unwrap();
                let a = Array::create(s.clone(), "d", meta).unwrap();
                let n = 7 * 5 * 3;
                // Values that differ in every byte; the first 3x2x2 block stays zero (sparse).
                let mut bytes = Vec::with_capacity(n * elem);
                for i in 0..n {
                    let inside_first = (i / 15) < 3 && (i / 3) % 5 < 2 && i % 3 < 2;
                    for b in 0..elem {
                        bytes.push(if inside_first {
                            0
                        } else {
                            (i * 7 + b * 31 + 1) as u8
                        });
                    }
                }
                a.write_all(&ArrayBytes::Fixed(bytes.clone())).unwrap();
                assert!(
                    !s.exists("d/0/0/0").unwrap(),
                    "all-zero blocks are not stored"
                );
                let options = OpenOptions {
                    n5_axis_order: order,
                };
                let back = Array::open_with(s.clone(), "d", &options).unwrap();
                assert_eq!(
                    back.read_all().unwrap().1,
                    ArrayBytes::Fixed(bytes),
                    "{dt} {compression} {order:?}"
                );
                let doc: Value =
                    serde_json::from_slice(&s.get("d/attributes.json").unwrap().unwrap()).unwrap();
                assert_eq!(&doc["compression"], compression);
            }
        }
    }
}

#[test]
fn string_and_object_datasets_use_modes_1_and_2() {
    let s = store();
    s.set(
        "names/attributes.json",
        Bytes::from_static(br#"{"dimensions":[3],"blockSize":[2],"dataType":"string","compression":{"type":"raw"}}"#),
    )
    .unwrap();
    // N5-11: block ["a","bc"].
    s.set(
        "names/0",
        hex("0001 0001 00000002 00000005 61 00 62 63 00").into(),
    )
    .unwrap();
    let (shape, data) = Array::open(s.clone(), "names").unwrap().read_all().unwrap();
    assert_eq!(shape, vec![3]);
    assert_eq!(
        data,
        ArrayBytes::Variable {
            data: b"abc".to_vec(),
            offsets: vec![0, 1, 3, 3]
        }
    );
    let a = Array::open(s.clone(), "names").unwrap();
    a.write(
        &parse_selection("2").unwrap(),
        &ArrayBytes::Variable {
            data: "Zürich".as_bytes().to_vec(),
            offsets: vec![0, 7],
        },
    )
    .unwrap();
    // Truncated edge block of one string, mode 1 with its byte count.
    let mut expected = hex("0001 0001 00000001 00000008");
    expected.extend_from_slice("Zürich\0".as_bytes());
    assert_eq!(s.get("names/1").unwrap().unwrap(), expected);
    s.set(
        "blob/attributes.json",
        Bytes::from_static(br#"{"dimensions":[1],"blockSize":[1],"dataType":"object","compression":{"type":"raw"}}"#),
    )
    .unwrap();
    s.set("blob/0", hex("0002 00000003 aabbcc").into()).unwrap();
    let (_, data) = Array::open(s.clone(), "blob").unwrap().read_all().unwrap();
    assert_eq!(
        data,
        ArrayBytes::Variable {
            data: vec![0xaa, 0xbb, 0xcc],
            offsets: vec![0, 3]
        }
    );
}

#[test]
fn every_root_version_form_is_a_container_n5_12() {
    for root in [
        Some(&br#"{"n5":"4.0.0"}"#[..]),
        Some(&b"{\n    \"n5\": \"2.0.0\"\n}"[..]),
        Some(&br#"{"n5":"3.1.0","owner":"lab"}"#[..]),
        None,
    ] {
        let s = store();
        if let Some(doc) = root {
            s.set("attributes.json", Bytes::from_static(doc)).unwrap();
        }
        s.set(
            "g/vol/attributes.json",
            Bytes::from_static(br#"{"dimensions":[4],"blockSize":[4],"dataType":"uint8","compression":{"type":"raw"}}"#),
        )
        .unwrap();
        let nodes = list_nodes_with(s.as_ref(), "", &listed()).unwrap();
        let paths: Vec<&str> = nodes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["", "g", "g/vol"]);
        assert!(matches!(
            &nodes[0].metadata,
            NodeMetadata::Group(g) if g.format == ZarrFormat::N5 && !g.attributes.contains_key("n5")
        ));
    }
    let s = store();
    s.set("attributes.json", Bytes::from_static(br#"{"n5":"5.0.0"}"#))
        .unwrap();
    let err = open_node(s.as_ref(), "").unwrap_err().to_string();
    assert!(
        err.contains("5.0.0") && err.contains("attributes.json"),
        "{err}"
    );
}

#[test]
fn attributes_keep_the_keys_the_format_reserves() {
    let s = store();
    // A zarr-python 2 root array: version 2.0.0 and user attributes beside the dataset keys.
    s.set(
        "attributes.json",
        Bytes::from_static(br#"{"blockSize":[2],"compression":{"type":"raw"},"dataType":"int32","dimensions":[3],"n5":"2.0.0","pixelResolution":{"dimensions":[4.0],"unit":"nm"}}"#),
    )
    .unwrap();
    let mut a = Array::open(s.clone(), "").unwrap();
    assert_eq!(
        a.metadata().attributes.keys().collect::<Vec<_>>(),
        ["pixelResolution"]
    );
    let mut attrs = a.metadata().attributes.clone();
    attrs.insert("note".into(), json!("ok"));
    a.set_attributes(attrs).unwrap();
    let doc: Map<String, Value> =
        serde_json::from_slice(&s.get("attributes.json").unwrap().unwrap()).unwrap();
    assert_eq!(doc["n5"], json!("2.0.0"), "stored version kept");
    assert_eq!(doc["dimensions"], json!([3]));
    assert_eq!(doc["note"], json!("ok"));
    assert_eq!(doc["pixelResolution"]["unit"], json!("nm"));
    // Group attributes: the root version survives a rewrite.
    let g = store();
    create_group(g.as_ref(), "", ZarrFormat::N5, Map::new()).unwrap();
    create_group(
        g.as_ref(),
        "",
        ZarrFormat::N5,
        Map::from_iter([("a".to_string(), json!(1))]),
    )
    .unwrap();
    assert_eq!(
        g.get("attributes.json").unwrap().unwrap(),
        &br#"{"n5":"4.0.0","a":1}"#[..]
    );
    // A user attribute may not shadow a reserved key.
    let err = create_group(
        g.as_ref(),
        "sub",
        ZarrFormat::N5,
        Map::from_iter([("dimensions".to_string(), json!([1]))]),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("'dimensions' is reserved"), "{err}");
}

fn assert_error_names(err: String, parts: &[&str]) {
    for p in parts {
        assert!(err.contains(p), "error {err:?} should mention {p:?}");
    }
}

#[test]
fn bad_input_gives_errors_naming_dataset_and_block() {
    let attrs = br#"{"dimensions":[4,4],"blockSize":[2,2],"dataType":"uint16","compression":{"type":"raw"}}"#;
    let cases: [(&str, &str, &[&str]); 4] = [
        (
            "0000 0002 0000",
            "truncated block",
            &["/vol", "vol/0/1", "truncated"],
        ),
        (
            "0000 0002 00000003 00000002 0001 0002 0003 0004 0005 0006",
            "block size disagrees",
            &["/vol", "vol/0/1", "disagrees with blockSize [2, 2]"],
        ),
        (
            "0000 0002 00000002 00000002 0001 0002",
            "short payload",
            &["/vol", "vol/0/1", "payload holds 4 bytes", "needs 8"],
        ),
        (
            "0009 0002 00000002 00000002 0001 0002 0003 0004",
            "unknown mode",
            &["vol/0/1", "unknown block mode 9"],
        ),
    ];
    for (block, what, parts) in cases {
        let s = store();
        s.set("vol/attributes.json", Bytes::from_static(attrs))
            .unwrap();
        s.set("vol/0/1", hex(block).into()).unwrap();
        let a = Array::open(s.clone(), "vol").unwrap();
        let err = a.read_all().unwrap_err().to_string();
        assert_error_names(err, parts);
        // Writing part of the corrupt block reports it too (read-modify-write).
        let err = a
            .write(&parse_selection("0,2").unwrap(), &u16s(&[1]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("vol/0/1"), "{what}: {err}");
    }
    for (doc, parts) in [
        (
            &br#"{"dimensions":[4],"blockSize":[2],"dataType":"complex64","compression":{"type":"raw"}}"#[..],
            &["/vol", "unknown dataType 'complex64'"][..],
        ),
        (
            br#"{"dimensions":[4],"blockSize":[2],"dataType":"uint8","compression":{"type":"zfp9"}}"#,
            &["/vol", "unknown compression type 'zfp9'"],
        ),
        (
            br#"{"dimensions":[4],"blockSize":[2, 2],"dataType":"uint8"}"#,
            &["/vol", "'blockSize' has 2 entries"],
        ),
        (
            br#"{"dimensions":[4],"blockSize":[2]}"#,
            &["/vol", "dataType"],
        ),
        (b"[1, 2]", &["/vol", "JSON object"]),
        (b"{\"dimensions\": [4", &["/vol", "attributes.json"]),
    ] {
        let s = store();
        s.set("vol/attributes.json", Bytes::from_static(doc)).unwrap();
        let err = Array::open(s, "vol").unwrap_err().to_string();
        assert_error_names(err, parts);
    }
}

#[test]
fn legacy_and_lenient_attributes_are_read() {
    let s = store();
    // Version-0 style `compressionType`, missing blockSize (n5 3.x defaults it to dimensions).
    s.set(
        "a/attributes.json",
        Bytes::from_static(br#"{"dimensions":[3],"dataType":"uint8","compressionType":"gzip"}"#),
    )
    .unwrap();
    let a = Array::open(s.clone(), "a").unwrap();
    assert_eq!(a.metadata().chunk_shape, vec![3]);
    a.write_all(&ArrayBytes::Fixed(vec![1, 2, 3])).unwrap();
    assert_eq!(
        Array::open(s.clone(), "a").unwrap().read_all().unwrap().1,
        ArrayBytes::Fixed(vec![1, 2, 3])
    );
    // tensorstore's `axes` become dimension names (in the presentation order).
    s.set(
        "b/attributes.json",
        Bytes::from_static(br#"{"axes":["x","y"],"blockSize":[2,2],"compression":{"blocksize":0,"clevel":5,"cname":"lz4","shuffle":1,"type":"blosc"},"dataType":"float32","dimensions":[4,3]}"#),
    )
    .unwrap();
    let b = Array::open_with(s.clone(), "b", &reversed()).unwrap();
    assert_eq!(
        b.metadata().dimension_names,
        Some(vec![Some("y".to_string()), Some("x".to_string())])
    );
    assert!(b.metadata().attributes.is_empty());
}

fn sample_hierarchy(s: &Arc<dyn Store>, order: N5AxisOrder) -> Vec<u16> {
    create_group(
        s.as_ref(),
        "",
        ZarrFormat::N5,
        Map::from_iter([("subject".to_string(), json!("mouse-042"))]),
    )
    .unwrap();
    create_group(
        s.as_ref(),
        "imaging",
        ZarrFormat::N5,
        Map::from_iter([("pixel_size_um".to_string(), json!([0.4, 0.4, 2.0]))]),
    )
    .unwrap();
    let mut attrs = Map::new();
    attrs.insert("resolution".into(), json!([4, 4, 40]));
    attrs.insert("unit".into(), json!("nm"));
    let compression = compression_from_n5_json(&json!({"type": "gzip", "level": 6}), 2).unwrap();
    let meta = n5_array_metadata(
        vec![9, 10, 11],
        vec![4, 4, 4],
        DataType::UInt16,
        compression,
        order,
        attrs,
        "imaging/raw",
    )
    .unwrap();
    let values: Vec<u16> = (0..990).map(|v| (v * 37 % 65521) as u16).collect();
    Array::create(s.clone(), "imaging/raw", meta)
        .unwrap()
        .write_all(&u16s(&values))
        .unwrap();
    values
}

fn snapshot(s: &Arc<dyn Store>) -> Vec<(String, Vec<u8>)> {
    s.list_prefix("")
        .unwrap()
        .into_iter()
        .map(|k| {
            let v = s.get(&k).unwrap().unwrap().to_vec();
            (k, v)
        })
        .collect()
}

#[test]
fn round_trips_through_zarr_v2_and_v3_preserve_everything() {
    for order in [N5AxisOrder::Listed, N5AxisOrder::Reversed] {
        let src = store();
        let values = sample_hierarchy(&src, order);
        let original = snapshot(&src);
        for via in [ZarrFormat::V2, ZarrFormat::V3] {
            let options = ConvertOptions {
                format: Some(via),
                n5_axis_order: order,
                ..Default::default()
            };
            let zarr = store();
            convert_hierarchy(
                src.clone(),
                "",
                zarr.clone(),
                "",
                &options,
                &|_| {},
                &|_, _| {},
            )
            .unwrap();
            // The Zarr copy: same hierarchy, data in the presentation order, user attributes only.
            let nodes = neurochunk_array::list_nodes(zarr.as_ref(), "").unwrap();
            let paths: Vec<&str> = nodes.iter().map(|n| n.path.as_str()).collect();
            assert_eq!(paths, ["", "imaging", "imaging/raw"]);
            let raw = Array::open(zarr.clone(), "imaging/raw").unwrap();
            let (shape, data) = raw.read_all().unwrap();
            assert_eq!(shape, [9, 10, 11], "the presentation order is kept");
            assert_eq!(as_u16(&data), values);
            assert_eq!(raw.metadata().attributes["unit"], json!("nm"), "{via:?}");
            let NodeMetadata::Group(root) = &nodes[0].metadata else {
                panic!("root is a group")
            };
            assert!(
                !root.attributes.contains_key("n5"),
                "no N5 keys leak into Zarr"
            );
            assert_eq!(root.attributes["subject"], json!("mouse-042"));
            // And back to N5.
            let back = store();
            let options = ConvertOptions {
                format: Some(ZarrFormat::N5),
                n5_axis_order: order,
                ..Default::default()
            };
            convert_hierarchy(
                zarr.clone(),
                "",
                back.clone(),
                "",
                &options,
                &|_| {},
                &|_, _| {},
            )
            .unwrap();
            assert_eq!(
                snapshot(&back),
                original,
                "N5 → {via:?} → N5 with {order:?} axes gives the same bytes"
            );
            let (_, data) = read_u16(
                &back,
                "imaging/raw",
                &OpenOptions {
                    n5_axis_order: order,
                },
            );
            assert_eq!(data, values);
        }
    }
}

#[test]
fn zarr_to_n5_maps_codecs_or_explains_why_not() {
    let src = store();
    let meta = n5_array_metadata(
        vec![4, 4],
        vec![2, 2],
        DataType::UInt16,
        None,
        N5AxisOrder::Listed,
        Map::new(),
        "",
    )
    .unwrap();
    let n5 = Array::create(src.clone(), "", meta).unwrap();
    for (spec, expected) in [
        (vec![Codec::zstd(5)], json!({"type": "zstd", "level": 5})),
        (
            vec![Codec::Zlib { level: 3 }],
            json!({"type": "gzip", "level": 3, "useZlib": true}),
        ),
        (
            vec![Codec::Lz4 { acceleration: 1 }],
            json!({"type": "lz4", "blockSize": 65536}),
        ),
        (vec![], json!({"type": "raw"})),
    ] {
        let options = ConvertOptions {
            format: Some(ZarrFormat::N5),
            compressors: Some(spec.clone()),
            ..Default::default()
        };
        let m = derive_metadata(n5.metadata(), &options, "").unwrap();
        assert_eq!(
            m.n5_block().unwrap().compression_json(),
            &expected,
            "{spec:?}"
        );
    }
    for (options, needle) in [
        (
            ConvertOptions {
                format: Some(ZarrFormat::N5),
                compressors: Some(vec![Codec::zstd(0), Codec::Crc32c]),
                ..Default::default()
            },
            "one compression",
        ),
        (
            ConvertOptions {
                format: Some(ZarrFormat::N5),
                shards: Some(vec![4, 4]),
                ..Default::default()
            },
            "sharding",
        ),
    ] {
        let err = derive_metadata(n5.metadata(), &options, "x")
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
}
