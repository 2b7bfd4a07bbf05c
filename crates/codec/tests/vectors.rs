//! The byte-level conformance cases of formats.md §6 that involve codecs.

mod common;

use base64::Engine;
use common::*;
use neurochunk_codec::*;
use neurochunk_dtype::{DataType, Endian, TimeUnit};
use serde_json::json;

#[test]
fn v2_01_uncompressed_uint16_edge_chunk_and_zero_copy() {
    let r = repr(&[2, 2], DataType::UInt16, &[0, 0]);
    let chain = CodecChain::from_v2(false, None, None, Some(Endian::Little), &r).unwrap();
    assert_eq!(
        chain
            .encode(ArrayBytes::Fixed(u16s(&[1, 2, 4, 5])), &r)
            .unwrap(),
        hex("01000200 04000500")
    );
    assert_eq!(
        chain
            .encode(ArrayBytes::Fixed(u16s(&[3, 0, 6, 0])), &r)
            .unwrap(),
        hex("0300 0000 0600 0000")
    );
    // Decoding little-endian bytes with no compressor moves the buffer: no copy.
    let stored = hex("01000200 04000500");
    let ptr = stored.as_ptr();
    let ArrayBytes::Fixed(out) = chain.decode(stored, &r).unwrap() else {
        panic!()
    };
    assert_eq!(out.as_ptr(), ptr);
    assert_eq!(out, u16s(&[1, 2, 4, 5]));
    let v2 = chain.to_v2().unwrap();
    assert_eq!(
        v2,
        V2Codecs {
            order_f: false,
            filters: None,
            compressor: None,
            endian: Some(Endian::Little),
            dtype: None,
        }
    );
}

#[test]
fn v2_02_f_order_big_endian() {
    let r = repr(&[2, 3], DataType::Int32, &[0; 4]);
    let chain = CodecChain::from_v2(true, None, None, Some(Endian::Big), &r).unwrap();
    let data = i32s(&[0, 1, 2, 3, 4, 5]);
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(
        enc,
        hex("00000000 00000003 00000001 00000004 00000002 00000005")
    );
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    let v2 = chain.to_v2().unwrap();
    assert!(v2.order_f);
    assert_eq!(v2.endian, Some(Endian::Big));
    assert_eq!(v2.filters, None);
    // The v3 form of the same chain: transpose [1, 0] + bytes big.
    assert_eq!(
        chain.to_v3_json(),
        vec![
            json!({"name": "transpose", "configuration": {"order": [1, 0]}}),
            json!({"name": "bytes", "configuration": {"endian": "big"}})
        ]
    );
}

#[test]
fn v2_03_zlib_decode_and_nan_fill() {
    let nan = f32::from_bits(0x7fc0_0000);
    let r = repr(&[4], DataType::Float32, &nan.to_le_bytes());
    let comp = json!({"id": "zlib", "level": 1});
    let chain = CodecChain::from_v2(false, None, Some(&comp), Some(Endian::Little), &r).unwrap();
    let stored = hex("78 01 63 60 38 60 cf c0 c0 70 00 88 ea 41 18 00 1d 7d 04 3e");
    let expected = hex("0000c03f 000000c0 0000c07f 0000c07f");
    assert_eq!(
        chain.decode(stored, &r).unwrap(),
        ArrayBytes::Fixed(expected.clone())
    );
    let again = chain
        .encode(ArrayBytes::Fixed(expected.clone()), &r)
        .unwrap();
    assert_eq!(&again[..2], &[0x78, 0x01]);
    assert_eq!(
        chain.decode(again, &r).unwrap(),
        ArrayBytes::Fixed(expected)
    );
    assert_eq!(chain.to_v2().unwrap().compressor, Some(comp));
    // The trailing fill elements of the decoded chunk are the NaN fill, bit for bit.
    let data = ArrayBytes::Fixed(f32s(&[nan, nan]));
    assert!(subset::is_all_fill(&data, &nan.to_le_bytes()));
}

#[test]
fn v2_07_vlen_utf8_and_zp3_zstd_variant() {
    let r = repr(&[3], DataType::String, b"");
    let filters = [json!({"id": "vlen-utf8"})];
    let chain = CodecChain::from_v2(false, Some(&filters), None, None, &r).unwrap();
    let data = strings(&[b"a", b"bc", "é".as_bytes()]);
    let expected = hex("03000000 01000000 61 02000000 6263 02000000 c3a9");
    assert_eq!(expected.len(), 21);
    let enc = chain.encode(data.clone(), &r).unwrap();
    assert_eq!(enc, expected);
    assert_eq!(chain.decode(enc, &r).unwrap(), data);
    let v2 = chain.to_v2().unwrap();
    assert_eq!(v2.filters, Some(vec![json!({"id": "vlen-utf8"})]));
    assert_eq!(v2.endian, None);
    // zp3 writes the same with its default zstd compressor.
    let zstd = json!({"id": "zstd", "level": 0});
    let chain = CodecChain::from_v2(false, Some(&filters), Some(&zstd), None, &r).unwrap();
    let mut stored = hex("28b52ffd 20 15 a9 00 00");
    stored.extend_from_slice(&expected);
    assert_eq!(chain.decode(stored, &r).unwrap(), data);
}

#[test]
fn v2_08_vlen_bytes() {
    let r = repr(&[2], DataType::Bytes, b"");
    let filters = [json!({"id": "vlen-bytes"})];
    let chain = CodecChain::from_v2(false, Some(&filters), None, None, &r).unwrap();
    let data = strings(&[b"\x00\x01", b""]);
    let enc = chain.encode(data.clone(), &r).unwrap();
    assert_eq!(enc, hex("02000000 02000000 0001 00000000"));
    assert_eq!(chain.decode(enc, &r).unwrap(), data);
}

#[test]
fn v2_09_datetime_memcpy_blosc_exact() {
    let dt = DataType::DateTime64 {
        unit: TimeUnit::Nanosecond,
        scale: 1,
    };
    let nat = i64::MIN.to_le_bytes();
    let r = repr(&[2], dt, &nat);
    let comp = json!({"blocksize": 0, "clevel": 5, "cname": "lz4", "id": "blosc", "shuffle": 1});
    let chain = CodecChain::from_v2(false, None, Some(&comp), Some(Endian::Little), &r).unwrap();
    let chunk0: Vec<u8> = [1i64, i64::MIN]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let chunk1: Vec<u8> = [3i64, i64::MIN]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let header = "02 01 33 08 10000000 10000000 20000000";
    let enc0 = chain.encode(ArrayBytes::Fixed(chunk0.clone()), &r).unwrap();
    assert_eq!(
        enc0,
        hex(&format!("{header} 0100000000000000 0000000000000080"))
    );
    let enc1 = chain.encode(ArrayBytes::Fixed(chunk1.clone()), &r).unwrap();
    assert_eq!(
        enc1,
        hex(&format!("{header} 0300000000000000 0000000000000080"))
    );
    assert_eq!(chain.decode(enc1, &r).unwrap(), ArrayBytes::Fixed(chunk1));
    // numcodecs key order for the v2 compressor JSON.
    let written = chain.to_v2().unwrap().compressor.unwrap();
    let keys: Vec<&String> = written.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["id", "cname", "clevel", "shuffle", "blocksize"]);
    assert_eq!(written, comp);
}

#[test]
fn v2_10_delta_and_numcodecs_lz4_exact() {
    let r = repr(&[4], DataType::Int32, &[0; 4]);
    let filters = [json!({"astype": "<i2", "dtype": "<i4", "id": "delta"})];
    let comp = json!({"acceleration": 1, "id": "lz4"});
    let chain =
        CodecChain::from_v2(false, Some(&filters), Some(&comp), Some(Endian::Little), &r).unwrap();
    let data = i32s(&[10, 11, 13, 16]);
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(enc, hex("08000000 80 0a00 0100 0200 0300"));
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    let v2 = chain.to_v2().unwrap();
    assert_eq!(
        v2.filters,
        Some(vec![
            json!({"id": "delta", "dtype": "<i4", "astype": "<i2"})
        ])
    );
    assert_eq!(v2.compressor, Some(json!({"id": "lz4", "acceleration": 1})));
    // The v3 spelling of the same filter.
    assert_eq!(
        chain.array_to_array()[0].to_v3_json(),
        json!({"name": "numcodecs.delta", "configuration": {"dtype": "<i4", "astype": "<i2"}})
    );
}

#[test]
fn v2_11_crc32_prepended() {
    let r = repr(&[1], DataType::Complex64, &f32s(&[1.0, f32::INFINITY]));
    let comp = json!({"id": "crc32"});
    let chain = CodecChain::from_v2(false, None, Some(&comp), Some(Endian::Little), &r).unwrap();
    let data = f32s(&[2.0, 3.0]);
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(enc, hex("b58974bb 00000040 00004040"));
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    // No `location` key unless one was given.
    assert_eq!(
        chain.to_v2().unwrap().compressor,
        Some(json!({"id": "crc32"}))
    );
}

#[test]
fn v3_03_transpose_big_endian_crc32c() {
    let r = repr(&[2, 3], DataType::Int32, &(-1i32).to_le_bytes());
    let codecs = [
        json!({"name": "transpose", "configuration": {"order": [1, 0]}}),
        json!({"name": "bytes", "configuration": {"endian": "big"}}),
        json!({"name": "crc32c"}),
    ];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    let data = i32s(&[0, 1, 2, 3, 4, 5]);
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(
        enc,
        hex("00000000 00000003 00000001 00000004 00000002 00000005 1db918cf")
    );
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    assert_eq!(chain.to_v3_json(), codecs.to_vec());
}

#[test]
fn v3_04_sharding_one_empty_inner_chunk() {
    let r = repr(&[4], DataType::UInt8, &[0]);
    let codecs = [json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2],
        "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"
    }})];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    assert!(chain.sharding().is_some());
    let enc = chain
        .encode(ArrayBytes::Fixed(vec![1, 2, 0, 0]), &r)
        .unwrap();
    let expected =
        hex("01 02 0000000000000000 0200000000000000 ffffffffffffffff ffffffffffffffff bd13bd56");
    assert_eq!(enc.len(), 38);
    assert_eq!(enc, expected);
    assert_eq!(
        chain.decode(enc, &r).unwrap(),
        ArrayBytes::Fixed(vec![1, 2, 0, 0])
    );
    assert_eq!(chain.to_v3_json(), codecs.to_vec());
}

#[test]
fn v3_05_sharding_index_end_and_start() {
    let r = repr(&[4], DataType::UInt16, &[0, 0]);
    let data = u16s(&[1, 2, 3, 4]);
    let make = |loc: &str| {
        let codecs = [json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": loc
        }})];
        CodecChain::from_v3_json(&codecs, &r).unwrap()
    };
    let end = make("end");
    let enc = end.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(
        enc,
        hex("0100 0200 0300 0400 0000000000000000 0400000000000000 0400000000000000 0400000000000000 f6ff6f8f")
    );
    assert_eq!(
        end.decode(enc, &r).unwrap(),
        ArrayBytes::Fixed(data.clone())
    );
    let start = make("start");
    let enc = start.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(
        enc,
        hex("2400000000000000 0400000000000000 2800000000000000 0400000000000000 df3706b7 0100 0200 0300 0400")
    );
    assert_eq!(
        start.decode(enc.clone(), &r).unwrap(),
        ArrayBytes::Fixed(data)
    );
    let shard = start.sharding().unwrap();
    assert_eq!(shard.index_encoded_size(&[4]).unwrap(), 36);
    assert_eq!(
        shard.read_index(&enc, &[4]).unwrap(),
        vec![Some((36, 4)), Some((40, 4))]
    );
}

#[test]
fn v3_06_string_vlen_utf8() {
    let r = repr(&[3], DataType::String, b"");
    let codecs = [json!({"name": "vlen-utf8", "configuration": {}})];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    let data = strings(&[b"a", b"bc", "é".as_bytes()]);
    let enc = chain.encode(data.clone(), &r).unwrap();
    assert_eq!(enc, hex("03000000 01000000 61 02000000 6263 02000000 c3a9"));
    assert_eq!(chain.decode(enc, &r).unwrap(), data);
    assert_eq!(chain.to_v3_json(), codecs.to_vec());
}

#[test]
fn v3_07_blosc_memcpy_complex() {
    let r = repr(&[2], DataType::Complex64, &f32s(&[1.0, f32::NEG_INFINITY]));
    let codecs = [
        json!({"name": "bytes", "configuration": {"endian": "little"}}),
        json!({"name": "blosc", "configuration": {"typesize": 8, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}}),
    ];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    let data = f32s(&[2.0, 3.0, 4.0, 5.0]);
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(
        enc,
        hex("02 01 33 08 10000000 10000000 20000000 00000040 00004040 00008040 0000a040")
    );
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    assert_eq!(chain.to_v3_json(), codecs.to_vec());
}

#[test]
fn v3_14_gzip_header_and_zlib() {
    let r = repr(&[2], DataType::UInt16, &[0, 0]);
    let data = u16s(&[1, 2]);
    let gzip = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
            json!({"name": "gzip", "configuration": {"level": 1}}),
        ],
        &r,
    )
    .unwrap();
    let enc = gzip.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    // Magic, CM, FLG, MTIME 0, XFL 4 (level 1), OS 255.
    assert_eq!(&enc[..10], &hex("1f 8b 08 00 00000000 04 ff")[..]);
    assert_eq!(&enc[enc.len() - 4..], &[4, 0, 0, 0]);
    assert_eq!(
        gzip.decode(enc, &r).unwrap(),
        ArrayBytes::Fixed(data.clone())
    );
    // zarr-python's bytes with a real MTIME.
    let zp3 = hex("1f 8b 08 00 5e 1a 3c 67 04 ff 63 64 60 62 00 00 fb da ce ab 04 00 00 00");
    assert_eq!(
        gzip.decode(zp3.clone(), &r).unwrap(),
        ArrayBytes::Fixed(data.clone())
    );
    // Two concatenated members decode as one stream (here checked through the codec).
    let mut two = zp3.clone();
    two.extend_from_slice(&zp3);
    let mut out = Vec::new();
    GzipCodec::new(1).decode(&two, &mut out, None).unwrap();
    assert_eq!(out, u16s(&[1, 2, 1, 2]));

    let zlib = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
            json!({"name": "numcodecs.zlib", "configuration": {"level": 1}}),
        ],
        &r,
    )
    .unwrap();
    let stored = hex("78 01 63 64 60 62 00 00 00 0c 00 04");
    assert_eq!(
        zlib.decode(stored.clone(), &r).unwrap(),
        ArrayBytes::Fixed(data.clone())
    );
    assert_eq!(zlib.encode(ArrayBytes::Fixed(data), &r).unwrap(), stored);
}

#[test]
fn v3_15_zstd_with_checksum() {
    let r = repr(&[2], DataType::UInt16, &[0, 0]);
    let codecs = [
        json!({"name": "bytes", "configuration": {"endian": "little"}}),
        json!({"name": "zstd", "configuration": {"level": 0, "checksum": true}}),
    ];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    let data = u16s(&[1, 2]);
    let stored = hex("28 b5 2f fd 24 04 21 00 00 01 00 02 00 56 5c f3 5c");
    assert_eq!(
        chain.decode(stored.clone(), &r).unwrap(),
        ArrayBytes::Fixed(data.clone())
    );
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(&enc[..4], &[0x28, 0xb5, 0x2f, 0xfd]);
    assert_eq!(enc[4] & 0x04, 0x04, "checksum flag set");
    assert_eq!(
        &enc[enc.len() - 4..],
        &stored[stored.len() - 4..],
        "same XXH64-based checksum"
    );
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    // A flipped payload byte fails the frame checksum.
    let mut bad = stored;
    bad[9] ^= 1;
    assert!(matches!(
        chain.decode(bad, &r),
        Err(CodecError::Corrupt { .. })
    ));
    assert_eq!(chain.to_v3_json(), codecs.to_vec());
    // v2 JSON writes `checksum` only when true.
    assert_eq!(
        ZstdCodec::new(3, false).to_v2_json(),
        Some(json!({"id": "zstd", "level": 3}))
    );
}

#[test]
fn n5_08_lz4block_exact() {
    let payload = hex("0001 0002 0003 0004 0005 0006");
    let codec = N5Lz4Codec::default();
    let mut enc = Vec::new();
    codec.encode(&payload, &mut enc).unwrap();
    let expected = hex(&format!(
        "4c5a34426c6f636b 16 0c000000 0c000000 90258b06 {} 4c5a34426c6f636b 16 00000000 00000000 00000000",
        "000100020003000400050006"
    ));
    assert_eq!(enc, expected);
    let mut out = Vec::new();
    codec.decode(&enc, &mut out, Some(12)).unwrap();
    assert_eq!(out, payload);

    let reference = base64::engine::general_purpose::STANDARD
        .decode("TFo0QmxvY2sWDQAAAA0AAAC/fyACYWhiaWNqZGtlbGZtZ0xaNEJsb2NrFgAAAAAAAAAAAAAAAA==")
        .unwrap();
    codec.decode(&reference, &mut out, None).unwrap();
    assert_eq!(out, b"ahbicjdkelfmg");
    codec.encode(b"ahbicjdkelfmg", &mut enc).unwrap();
    assert_eq!(enc, reference);

    // A compressible payload uses the LZ4 method and round-trips.
    let big = vec![7u8; 200_000];
    codec.encode(&big, &mut enc).unwrap();
    assert_eq!(enc[8], 0x26);
    assert!(enc.len() < 10_000);
    codec.decode(&enc, &mut out, None).unwrap();
    assert_eq!(out, big);
}
