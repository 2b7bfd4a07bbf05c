//! Round trips for every codec over several data types and sizes, known checksum values, and
//! the numeric filters against values NumPy/numcodecs produce.

mod common;

use std::sync::Arc;

use common::*;
use neurochunk_codec::*;
use neurochunk_dtype::{DataType, Endian, StructField};
use serde_json::json;

fn all_b2b(typesize: usize) -> Vec<Arc<dyn BytesToBytesCodec>> {
    let mut v: Vec<Arc<dyn BytesToBytesCodec>> = Vec::new();
    for cname in [
        BloscCompressor::BloscLz,
        BloscCompressor::Lz4,
        BloscCompressor::Lz4Hc,
        BloscCompressor::Zstd,
        BloscCompressor::Zlib,
        BloscCompressor::Snappy,
    ] {
        for shuffle in [
            BloscShuffle::NoShuffle,
            BloscShuffle::Shuffle,
            BloscShuffle::BitShuffle,
            BloscShuffle::Auto,
        ] {
            v.push(Arc::new(
                BloscCodec::new(cname, 5, shuffle, typesize, 0).unwrap(),
            ));
        }
    }
    v.push(Arc::new(
        BloscCodec::new(
            BloscCompressor::Lz4,
            9,
            BloscShuffle::Shuffle,
            typesize,
            4096,
        )
        .unwrap(),
    ));
    v.push(Arc::new(GzipCodec::new(1)));
    v.push(Arc::new(GzipCodec::new(9)));
    v.push(Arc::new(ZlibCodec::new(0)));
    v.push(Arc::new(ZlibCodec::new(6)));
    v.push(Arc::new(ZstdCodec::new(0, false)));
    v.push(Arc::new(ZstdCodec::new(19, true)));
    v.push(Arc::new(ZstdCodec::new(-5, false)));
    v.push(Arc::new(Bz2Codec::new(1)));
    v.push(Arc::new(Bz2Codec::new(9)));
    v.push(Arc::new(LzmaCodec::xz(None)));
    v.push(Arc::new(
        LzmaCodec::from_config(&json!({"format": 2, "preset": 1})).unwrap(),
    ));
    v.push(Arc::new(
        LzmaCodec::from_config(&json!({"format": 1, "check": 0, "preset": 0})).unwrap(),
    ));
    v.push(Arc::new(
        LzmaCodec::from_config(
            &json!({"format": 3, "filters": [{"id": 3, "dist": 4}, {"id": 33, "preset": 1}]}),
        )
        .unwrap(),
    ));
    v.push(Arc::new(Lz4Codec::new(1)));
    for kind in ChecksumKind::ALL {
        v.push(Arc::new(ChecksumCodec::new(kind)));
    }
    v.push(Arc::new(ChecksumCodec::jenkins_lookup3(
        7,
        Some(b"pre".to_vec()),
    )));
    v.push(Arc::new(
        ChecksumCodec::with_location(ChecksumKind::Crc32, Location::End).unwrap(),
    ));
    v.push(Arc::new(
        ChecksumCodec::with_location(ChecksumKind::Crc32c, Location::Start).unwrap(),
    ));
    v.push(Arc::new(ShuffleCodec::new(typesize)));
    v.push(Arc::new(N5Lz4Codec::default()));
    v.push(Arc::new(N5Lz4Codec::new(64).unwrap()));
    v
}

#[test]
fn every_bytes_codec_round_trips() {
    for typesize in [1usize, 2, 4, 8] {
        for codec in all_b2b(typesize) {
            for (i, n) in [0usize, 1, 8, 1000, 30_011].into_iter().enumerate() {
                let n = n - n % typesize;
                let data = noise(n, (i + typesize) as u64);
                let mut enc = Vec::new();
                codec
                    .encode(&data, &mut enc)
                    .unwrap_or_else(|e| panic!("{}: {e}", codec.name()));
                let mut dec = vec![1, 2, 3];
                codec
                    .decode(&enc, &mut dec, Some(n))
                    .unwrap_or_else(|e| panic!("{} n={n}: {e}", codec.name()));
                assert_eq!(dec, data, "{} n={n} typesize={typesize}", codec.name());
                codec
                    .decode(&enc, &mut dec, None)
                    .unwrap_or_else(|e| panic!("{} n={n}: {e}", codec.name()));
                assert_eq!(dec, data, "{} n={n} (size unknown)", codec.name());
                if let Some(size) = codec.fixed_encoded_size(n) {
                    assert_eq!(size, enc.len(), "{}", codec.name());
                }
                if n >= 1000 {
                    // Highly redundant data must shrink with every compressor.
                    let smooth: Vec<u8> = (0..n as u32)
                        .flat_map(|i| (i / 64).to_le_bytes())
                        .take(n)
                        .collect();
                    codec.encode(&smooth, &mut enc).unwrap();
                    let checksum_or_shuffle = codec.fixed_encoded_size(n).is_some();
                    // c-blosc only lets snappy compress a block when the destination has room
                    // for snappy's worst case, which numcodecs' `nbytes + 16` buffer lacks.
                    let json = codec.to_v3_json().to_string();
                    let stored_raw = json.contains("\"clevel\":0")
                        || json.contains("snappy")
                        || json.contains("\"level\":0");
                    if !checksum_or_shuffle && !stored_raw {
                        assert!(
                            enc.len() < n * 3 / 4,
                            "{} did not compress ({} -> {})",
                            codec.to_v3_json(),
                            n,
                            enc.len()
                        );
                    }
                    codec.decode(&enc, &mut dec, Some(n)).unwrap();
                    assert_eq!(dec, smooth, "{}", codec.name());
                }
            }
        }
    }
}

#[test]
fn blosc_decodes_from_the_header_not_the_configuration() {
    let data: Vec<u8> = (0..40_000u32).flat_map(|i| (i / 7).to_le_bytes()).collect();
    let writer = BloscCodec::new(BloscCompressor::Zstd, 7, BloscShuffle::BitShuffle, 4, 0).unwrap();
    let reader =
        BloscCodec::new(BloscCompressor::BloscLz, 1, BloscShuffle::NoShuffle, 1, 0).unwrap();
    let mut enc = Vec::new();
    writer.encode(&data, &mut enc).unwrap();
    assert_eq!(enc[2] & 0x04, 0x04, "bit-shuffle flag");
    assert_eq!(enc[3], 4, "typesize in the header");
    let mut dec = Vec::new();
    reader.decode(&enc, &mut dec, None).unwrap();
    assert_eq!(dec, data);
    // v2 JSON ignores `typesize` and keeps AUTOSHUFFLE (-1); the buffer's item size decides.
    let v2 = BloscCodec::from_v2_config(
        &json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": -1, "typesize": 9}),
        1,
    )
    .unwrap();
    assert_eq!(v2.typesize(), 1);
    v2.encode(&data, &mut enc).unwrap();
    assert_eq!(
        enc[2] & 0x05,
        0x04,
        "auto shuffle on 1-byte items is bit-shuffle"
    );
    assert_eq!(v2.to_v2_json().unwrap()["shuffle"], json!(-1));
    assert_eq!(
        BloscCodec::from_v3_config(
            &json!({"cname": "lz4", "clevel": 1, "shuffle": "shuffle", "blocksize": 0}),
            2
        )
        .unwrap()
        .to_v3_json(),
        json!({"name": "blosc", "configuration": {"typesize": 2, "cname": "lz4", "clevel": 1, "shuffle": "shuffle", "blocksize": 0}})
    );
}

#[test]
fn checksum_values() {
    assert_eq!(ChecksumKind::Crc32c.compute(b"123456789"), 0xe306_9283);
    assert_eq!(ChecksumKind::Crc32.compute(b"123456789"), 0xcbf4_3926);
    assert_eq!(ChecksumKind::Adler32.compute(b"Wikipedia"), 0x11e6_0398);
    let long = vec![0xffu8; 100_000];
    let (mut a, mut b) = (1u64, 0u64);
    for &x in &long {
        a = (a + x as u64) % 65521;
        b = (b + a) % 65521;
    }
    assert_eq!(ChecksumKind::Adler32.compute(&long), ((b << 16) | a) as u32);
    // numcodecs' known Fletcher-32 vector (HDF5 variant, big-endian 16-bit words).
    let values: [i64; 10] = [1911, -2427, 1897, -2412, 2440, 873, -621, -829, 551, -2118];
    let payload: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut enc = Vec::new();
    ChecksumCodec::new(ChecksumKind::Fletcher32)
        .encode(&payload, &mut enc)
        .unwrap();
    assert_eq!(&enc[..80], &payload[..]);
    assert_eq!(&enc[80..], &[0xfd, 0x25, 0x86, 0x64]);
    // Odd lengths use the last byte as the high byte of a final word.
    assert_ne!(
        ChecksumKind::Fletcher32.compute(b"abc"),
        ChecksumKind::Fletcher32.compute(b"ab")
    );
    ChecksumCodec::new(ChecksumKind::Adler32)
        .encode(b"Wikipedia", &mut enc)
        .unwrap();
    assert_eq!(
        &enc[..4],
        &0x11e6_0398u32.to_le_bytes(),
        "adler32 is prepended by default"
    );
    assert_eq!(
        ChecksumCodec::with_location(ChecksumKind::Crc32c, Location::Start)
            .unwrap()
            .to_v2_json(),
        Some(json!({"id": "crc32c", "location": "start"}))
    );
    assert_eq!(
        ChecksumCodec::crc32c().to_v2_json(),
        Some(json!({"id": "crc32c"}))
    );
}

#[test]
fn shuffle_layout() {
    let mut out = Vec::new();
    ShuffleCodec::new(4)
        .encode(&[1, 2, 3, 4, 5, 6, 7, 8], &mut out)
        .unwrap();
    assert_eq!(out, [1, 5, 2, 6, 3, 7, 4, 8]);
    ShuffleCodec::new(3)
        .encode(&[1, 2, 3, 4, 5, 6], &mut out)
        .unwrap();
    assert_eq!(out, [1, 4, 2, 5, 3, 6]);
    assert!(ShuffleCodec::new(4).encode(&[1, 2, 3], &mut out).is_err());
}

fn naive_permute(src: &[u8], shape: &[usize], order: &[usize], elem: usize) -> Vec<u8> {
    let out_shape: Vec<usize> = order.iter().map(|&o| shape[o]).collect();
    let n: usize = shape.iter().product();
    let mut out = vec![0u8; src.len()];
    for lin in 0..n {
        // output coordinates
        let mut rem = lin;
        let mut oc = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            oc[d] = rem % out_shape[d];
            rem /= out_shape[d];
        }
        let mut ic = vec![0; shape.len()];
        for (i, &o) in order.iter().enumerate() {
            ic[o] = oc[i];
        }
        let mut il = 0;
        for d in 0..shape.len() {
            il = il * shape[d] + ic[d];
        }
        out[lin * elem..(lin + 1) * elem].copy_from_slice(&src[il * elem..(il + 1) * elem]);
    }
    out
}

#[test]
fn transpose_matches_naive_permutation() {
    let shapes: [&[usize]; 5] = [&[5, 7], &[3, 1, 4], &[2, 3, 4, 5], &[40, 70], &[1, 1]];
    for shape in shapes {
        let nd = shape.len();
        let mut orders: Vec<Vec<usize>> = vec![(0..nd).rev().collect(), (0..nd).collect()];
        if nd >= 3 {
            orders.push(vec![1, 0, 2].into_iter().chain(3..nd).collect());
            orders.push((1..nd).chain([0]).collect());
        }
        for elem in [1usize, 2, 3, 4, 8, 16] {
            let n: usize = shape.iter().product();
            let src = noise(n * elem, elem as u64 + nd as u64);
            for order in &orders {
                let dt = DataType::RawBits { bytes: elem };
                let r = repr(shape, dt, &vec![0; elem]);
                let t = TransposeCodec::try_new(order.clone()).unwrap();
                let ArrayBytes::Fixed(enc) = t.encode(ArrayBytes::Fixed(src.clone()), &r).unwrap()
                else {
                    panic!()
                };
                assert_eq!(
                    enc,
                    naive_permute(&src, shape, order, elem),
                    "shape {shape:?} order {order:?} elem {elem}"
                );
                assert_eq!(
                    t.encoded_repr(&r).unwrap().shape,
                    order.iter().map(|&o| shape[o]).collect::<Vec<_>>()
                );
                assert_eq!(
                    t.decode(ArrayBytes::Fixed(enc), &r).unwrap(),
                    ArrayBytes::Fixed(src.clone())
                );
            }
        }
    }
}

#[test]
fn transpose_of_strings_and_v2_order_f() {
    let r = repr(&[2, 3], DataType::String, b"");
    let filters = [json!({"id": "vlen-utf8"})];
    let chain = CodecChain::from_v2(true, Some(&filters), None, None, &r).unwrap();
    let data = strings(&[b"a", b"b", b"c", b"d", b"e", b"f"]);
    let enc = chain.encode(data.clone(), &r).unwrap();
    // F order: a d b e c f.
    let expected = VlenCodec::utf8()
        .encode(
            strings(&[b"a", b"d", b"b", b"e", b"c", b"f"]),
            &repr(&[3, 2], DataType::String, b""),
        )
        .unwrap();
    assert_eq!(enc, expected);
    assert_eq!(chain.decode(enc, &r).unwrap(), data);
}

#[test]
fn delta_matches_numcodecs() {
    // numcodecs docstring: arange(100, 120, 2, dtype='i2') with astype 'i1'.
    let r = repr(&[10], DataType::Int16, &[0, 0]);
    let d = DeltaCodec::from_config(&json!({"dtype": "<i2", "astype": "|i1"})).unwrap();
    let data: Vec<u8> = (0..10)
        .flat_map(|i| (100i16 + 2 * i).to_le_bytes())
        .collect();
    let ArrayBytes::Fixed(enc) = d.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap() else {
        panic!()
    };
    assert_eq!(enc, [100, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
    assert_eq!(d.encoded_repr(&r).unwrap().data_type, DataType::Int8);
    assert_eq!(
        d.decode(ArrayBytes::Fixed(enc), &r).unwrap(),
        ArrayBytes::Fixed(data)
    );
    // Wrapping integer arithmetic and float deltas round-trip.
    for (dtype, astype, dt) in [
        ("<u1", "<u1", DataType::UInt8),
        ("<u8", "<u8", DataType::UInt64),
        ("<i8", "<i8", DataType::Int64),
        ("<f8", "<f8", DataType::Float64),
        ("<u4", "<i8", DataType::UInt32),
    ] {
        let size = dt.fixed_size().unwrap();
        let r = repr(&[257], dt, &vec![0; size]);
        let d = DeltaCodec::from_config(&json!({"id": "delta", "dtype": dtype, "astype": astype}))
            .unwrap();
        let mut data = noise(257 * size, 3);
        if dtype == "<f8" {
            data = (0..257)
                .flat_map(|i| (i as f64 * 0.25).to_le_bytes())
                .collect();
        }
        let enc = d.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
        assert_eq!(
            d.decode(enc, &r).unwrap(),
            ArrayBytes::Fixed(data),
            "{dtype}->{astype}"
        );
    }
}

#[test]
fn fixedscaleoffset_matches_numcodecs() {
    let r = repr(&[10], DataType::Float64, &[0; 8]);
    let c = FixedScaleOffsetCodec::from_config(&json!({"id": "fixedscaleoffset", "offset": 1000, "scale": 10, "dtype": "<f8", "astype": "|u1"})).unwrap();
    let x: Vec<f64> = (0..10).map(|i| 1000.0 + i as f64 / 9.0).collect();
    let data: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let ArrayBytes::Fixed(enc) = c.encode(ArrayBytes::Fixed(data), &r).unwrap() else {
        panic!()
    };
    assert_eq!(enc, [0, 1, 2, 3, 4, 6, 7, 8, 9, 10]);
    let ArrayBytes::Fixed(dec) = c.decode(ArrayBytes::Fixed(enc), &r).unwrap() else {
        panic!()
    };
    let dec: Vec<f64> = dec
        .chunks(8)
        .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    let expected = [
        1000.0, 1000.1, 1000.2, 1000.3, 1000.4, 1000.6, 1000.7, 1000.8, 1000.9, 1001.0,
    ];
    for (a, b) in dec.iter().zip(expected) {
        assert!((a - b).abs() < 1e-9, "{a} vs {b}");
    }
    // Round half to even, not half away from zero.
    let c = FixedScaleOffsetCodec::from_config(
        &json!({"offset": 0, "scale": 1, "dtype": "<f8", "astype": "<i4"}),
    )
    .unwrap();
    let r = repr(&[5], DataType::Float64, &[0; 8]);
    let data: Vec<u8> = [0.5f64, 1.5, 2.5, -0.5, -1.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let ArrayBytes::Fixed(enc) = c.encode(ArrayBytes::Fixed(data), &r).unwrap() else {
        panic!()
    };
    assert_eq!(enc, i32s(&[0, 2, 2, 0, -2]));
    assert_eq!(
        c.to_v2_json().unwrap(),
        json!({"id": "fixedscaleoffset", "scale": 1, "offset": 0, "dtype": "<f8", "astype": "<i4"})
    );
}

#[test]
fn astype_casts_both_ways() {
    let c = AsTypeCodec::from_config(
        &json!({"id": "astype", "encode_dtype": "<f4", "decode_dtype": "<f8"}),
    )
    .unwrap();
    let r = repr(&[3], DataType::Float64, &[0; 8]);
    let data: Vec<u8> = [1.5f64, -2.25, 1e10]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let ArrayBytes::Fixed(enc) = c.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap() else {
        panic!()
    };
    assert_eq!(enc, f32s(&[1.5, -2.25, 1e10]));
    assert_eq!(
        c.decode(ArrayBytes::Fixed(enc), &r).unwrap(),
        ArrayBytes::Fixed(data)
    );
}

#[test]
fn bytes_codec_swaps_every_type() {
    let cases: Vec<(DataType, Vec<u8>, Vec<u8>)> = vec![
        (DataType::UInt16, u16s(&[0x0102]), vec![0x01, 0x02]),
        (DataType::Int32, i32s(&[0x01020304]), vec![1, 2, 3, 4]),
        (
            DataType::Float64,
            1.0f64.to_le_bytes().to_vec(),
            1.0f64.to_be_bytes().to_vec(),
        ),
        (
            DataType::Complex64,
            f32s(&[1.0, 2.0]),
            [1.0f32.to_be_bytes(), 2.0f32.to_be_bytes()].concat(),
        ),
        (
            DataType::FixedUtf32 { chars: 2 },
            vec![0x61, 0, 0, 0, 0x62, 0, 0, 0],
            vec![0, 0, 0, 0x61, 0, 0, 0, 0x62],
        ),
        (
            DataType::FixedBytes { len: 3 },
            b"abc".to_vec(),
            b"abc".to_vec(),
        ),
        (
            DataType::Structured(vec![
                StructField {
                    name: "a".into(),
                    data_type: DataType::Int16,
                    shape: vec![],
                    endian: None,
                },
                StructField {
                    name: "b".into(),
                    data_type: DataType::UInt8,
                    shape: vec![],
                    endian: None,
                },
            ]),
            vec![1, 2, 3],
            vec![2, 1, 3],
        ),
    ];
    for (dt, le, be) in cases {
        let r = repr(&[1], dt.clone(), &vec![0; le.len()]);
        let big = BytesCodec::new(Some(Endian::Big));
        assert_eq!(
            big.encode(ArrayBytes::Fixed(le.clone()), &r).unwrap(),
            be,
            "{dt:?}"
        );
        assert_eq!(
            big.decode(be.clone(), &r).unwrap(),
            ArrayBytes::Fixed(le.clone())
        );
        let little = BytesCodec::for_type(&dt, Endian::Little);
        assert_eq!(
            little.encode(ArrayBytes::Fixed(le.clone()), &r).unwrap(),
            le
        );
    }
    // zarr-python 3 writes no configuration for single-byte types; endian is required otherwise.
    assert_eq!(
        BytesCodec::for_type(&DataType::UInt8, Endian::Little).to_v3_json(),
        json!({"name": "bytes"})
    );
    let r = repr(&[1], DataType::UInt16, &[0, 0]);
    assert!(matches!(
        BytesCodec::from_v3_config(&serde_json::Value::Null, &r),
        Err(CodecError::Config { .. })
    ));
    // The legacy name `endian` is accepted.
    let chain = CodecChain::from_v3_json(
        &[json!({"name": "endian", "configuration": {"endian": "big"}})],
        &r,
    )
    .unwrap();
    assert_eq!(
        chain.encode(ArrayBytes::Fixed(u16s(&[1])), &r).unwrap(),
        [0, 1]
    );
}

#[test]
fn json2_numcodecs_layout() {
    let c = Json2Codec::default();
    let r = repr(&[2], DataType::String, b"");
    let enc = c
        .encode(strings(&[b"a", "é\"\n😀".as_bytes()]), &r)
        .unwrap();
    assert_eq!(
        String::from_utf8(enc.clone()).unwrap(),
        r#"["a","\u00e9\"\n\ud83d\ude00","|O",[2]]"#
    );
    assert_eq!(
        c.decode(enc, &r).unwrap(),
        strings(&[b"a", "é\"\n😀".as_bytes()])
    );
    let r2 = repr(&[2, 2], DataType::String, b"");
    let enc = c.encode(strings(&[b"a", b"b", b"c", b"d"]), &r2).unwrap();
    assert_eq!(
        String::from_utf8(enc.clone()).unwrap(),
        r#"[["a","b"],["c","d"],"|O",[2,2]]"#
    );
    assert_eq!(
        c.decode(enc, &r2).unwrap(),
        strings(&[b"a", b"b", b"c", b"d"])
    );
    // Non-string items decode to their JSON text; a flat list is accepted too.
    let dec = c
        .decode(br#"["x",1,null,[1,2],"|O",[2,2]]"#.to_vec(), &r2)
        .unwrap();
    assert_eq!(dec, strings(&[b"x", b"1", b"null", b"[1,2]"]));
    let cfg = c.to_v2_json().unwrap();
    let keys: Vec<&String> = cfg.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "id",
            "encoding",
            "skipkeys",
            "ensure_ascii",
            "check_circular",
            "allow_nan",
            "indent",
            "separators",
            "sort_keys",
            "strict"
        ]
    );
    // 0-d arrays.
    let r0 = repr(&[], DataType::String, b"");
    let enc = c.encode(strings(&[b"z"]), &r0).unwrap();
    assert_eq!(enc, br#"["z","|O",[]]"#);
    assert_eq!(c.decode(enc, &r0).unwrap(), strings(&[b"z"]));
}

#[test]
fn subset_helpers() {
    // copy_region against a naive loop.
    let src_shape = [5, 6, 7];
    let src = noise(5 * 6 * 7 * 2, 9);
    let mut dst = vec![0u8; 4 * 8 * 7 * 2];
    let (ss, ds, region) = ([1, 2, 0], [2, 3, 0], [2, 4, 7]);
    nd::copy_region(&src, &src_shape, &ss, &mut dst, &[4, 8, 7], &ds, &region, 2);
    for i in 0..2 {
        for j in 0..4 {
            for k in 0..7 {
                let s = (((ss[0] + i) * 6 + ss[1] + j) * 7 + k) * 2;
                let d = (((ds[0] + i) * 8 + ds[1] + j) * 7 + k) * 2;
                assert_eq!(dst[d..d + 2], src[s..s + 2]);
            }
        }
    }
    assert!(
        dst[..2 * 8 * 7 * 2].iter().all(|&b| b == 0),
        "untouched rows stay zero"
    );

    // Variable-length extract / insert.
    let all = strings(&[b"a", b"bb", b"", b"dddd", b"e", b"ff"]);
    let part = nd::extract_region(&all, &[2, 3], &[0, 1], &[2, 2], 0);
    assert_eq!(part, strings(&[b"bb", b"", b"e", b"ff"]));
    let mut target = subset::fill_variable(b"-", 6);
    nd::insert_region(&mut target, &[2, 3], &[0, 1], &part, &[2, 2], 0);
    assert_eq!(target, strings(&[b"-", b"bb", b"", b"-", b"e", b"ff"]));

    // Fill buffers and the bitwise fill comparison (NaN equals the same NaN).
    let nan = f32::NAN.to_le_bytes();
    let filled = subset::fill_buffer(&nan, 1000);
    assert!(subset::is_all_fill(&filled, &nan));
    let ArrayBytes::Fixed(mut bytes) = filled else {
        panic!()
    };
    bytes[3999] ^= 0x01;
    assert!(!subset::is_all_fill(&ArrayBytes::Fixed(bytes), &nan));
    assert!(!subset::is_all_fill(
        &ArrayBytes::Fixed(f32s(&[0.0])),
        &(-0.0f32).to_le_bytes()
    ));
    assert!(subset::is_all_fill(&ArrayBytes::Fixed(vec![0; 4097]), &[0]));
    assert!(!subset::is_all_fill(
        &ArrayBytes::Fixed([vec![0; 4096], vec![1]].concat()),
        &[0]
    ));
    assert!(subset::is_all_fill(&strings(&[b"x", b"x"]), b"x"));
    assert!(
        !subset::is_all_fill(&ArrayBytes::Fixed(vec![0; 4]), &[]),
        "a missing fill matches nothing"
    );
    assert!(!subset::is_all_fill(&strings(&[b"x", b"xx"]), b"x"));
}
