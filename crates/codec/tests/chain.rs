//! Pipeline construction from Zarr v3 and v2 JSON, ordering rules, the v2 mapping back, the
//! registry, and the command-line compressor specification.

mod common;

use std::sync::Arc;

use common::*;
use neurochunk_codec::*;
use neurochunk_dtype::{DataType, Endian};
use serde_json::{json, Value};

#[test]
fn short_hand_names_and_object_output() {
    let r = repr(&[3], DataType::UInt8, &[0]);
    let chain = CodecChain::from_v3_json(&[json!("bytes"), json!("crc32c")], &r).unwrap();
    assert_eq!(
        chain.to_v3_json(),
        vec![json!({"name": "bytes"}), json!({"name": "crc32c"})]
    );
    let enc = chain.encode(ArrayBytes::Fixed(vec![1, 2, 3]), &r).unwrap();
    assert_eq!(enc.len(), 7);
    // Short-hand `bytes` is not enough for multi-byte elements.
    let r16 = repr(&[3], DataType::UInt16, &[0, 0]);
    assert!(matches!(
        CodecChain::from_v3_json(&[json!("bytes")], &r16),
        Err(CodecError::Config { .. })
    ));
}

#[test]
fn unknown_codecs_are_named() {
    let r = repr(&[3], DataType::UInt8, &[0]);
    let err = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes"}),
            json!({"name": "frobnicate", "configuration": {}}),
        ],
        &r,
    )
    .unwrap_err();
    assert!(matches!(&err, CodecError::Unknown(n) if n == "frobnicate"));
    assert!(
        err.to_string()
            .starts_with("uses codec 'frobnicate', which neurochunk does not support; convert"),
        "{err}"
    );
    let err =
        CodecChain::from_v2(false, None, Some(&json!({"id": "frobnicate"})), None, &r).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("uses codec 'frobnicate', which neurochunk does not support; convert"),
        "{err}"
    );
}

#[test]
fn ordering_rules() {
    let r = repr(&[2, 2], DataType::UInt8, &[0]);
    let cases: [(&[Value], &str); 4] = [
        (&[], "no array→bytes codec"),
        (
            &[json!({"name": "crc32c"}), json!({"name": "bytes"})],
            "comes before the array→bytes codec",
        ),
        (
            &[
                json!({"name": "bytes"}),
                json!({"name": "transpose", "configuration": {"order": [1, 0]}}),
            ],
            "follows the array→bytes codec",
        ),
        (
            &[json!({"name": "bytes"}), json!({"name": "vlen-bytes"})],
            "two array→bytes codecs",
        ),
    ];
    for (codecs, message) in cases {
        let err = CodecChain::from_v3_json(codecs, &r).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
    }
    // A transpose whose rank does not match.
    let bad = [
        json!({"name": "transpose", "configuration": {"order": [0, 1, 2]}}),
        json!({"name": "bytes"}),
    ];
    assert!(CodecChain::from_v3_json(&bad, &r).is_err());
    // An out-of-range level only steers the encoder: it never stops a read (it is clamped).
    assert!(CodecChain::from_v3_json(
        &[
            json!({"name": "bytes"}),
            json!({"name": "gzip", "configuration": {"level": 12}}),
        ],
        &r,
    )
    .is_ok());
    // Errors name the codec whose configuration is wrong.
    let err = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes"}),
            json!({"name": "gzip", "configuration": {"level": "high"}}),
        ],
        &r,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("codec 'gzip': invalid configuration: 'level'"),
        "{err}"
    );
}

#[test]
fn v2_mapping_both_ways() {
    let r = repr(&[4, 4], DataType::Int32, &[0; 4]);
    let filters = [
        json!({"id": "delta", "dtype": "<i4"}),
        json!({"id": "shuffle", "elementsize": 4}),
        json!({"id": "crc32"}),
    ];
    let comp = json!({"id": "zstd", "level": 1});
    let chain =
        CodecChain::from_v2(true, Some(&filters), Some(&comp), Some(Endian::Little), &r).unwrap();
    assert_eq!(chain.array_to_array().len(), 2, "transpose + delta");
    assert_eq!(chain.array_to_bytes().name(), "bytes");
    assert_eq!(chain.bytes_to_bytes().len(), 3);
    let data = i32s(&(0..16).map(|i| i * i).collect::<Vec<_>>());
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    let v2 = chain.to_v2().unwrap();
    assert!(v2.order_f);
    assert_eq!(v2.endian, Some(Endian::Little));
    assert_eq!(
        v2.filters,
        Some(vec![
            json!({"id": "delta", "dtype": "<i4", "astype": "<i4"}),
            json!({"id": "shuffle", "elementsize": 4}),
            json!({"id": "crc32"})
        ])
    );
    assert_eq!(v2.compressor, Some(comp));
    // `filters: []` is null.
    let plain = CodecChain::from_v2(false, Some(&[]), None, Some(Endian::Big), &r).unwrap();
    assert_eq!(plain.to_v2().unwrap().filters, None);
    assert_eq!(plain.to_v2().unwrap().endian, Some(Endian::Big));
    // A bytes filter before an array filter cannot be expressed.
    let bad = [
        json!({"id": "shuffle", "elementsize": 4}),
        json!({"id": "delta", "dtype": "<i4"}),
    ];
    assert!(matches!(
        CodecChain::from_v2(false, Some(&bad), None, None, &r),
        Err(CodecError::Unsupported { .. })
    ));
    // zarr-python 3 also finds the object codec in the compressor slot.
    let rs3 = repr(&[3], DataType::String, b"");
    let chain =
        CodecChain::from_v2(false, None, Some(&json!({"id": "vlen-utf8"})), None, &rs3).unwrap();
    let enc = chain.encode(strings(&[b"a", b"bc", b""]), &rs3).unwrap();
    assert_eq!(enc, hex("03000000 01000000 61 02000000 6263 00000000"));
    // Object arrays need an object codec.
    let rs = repr(&[2], DataType::String, b"");
    assert!(CodecChain::from_v2(false, None, None, None, &rs).is_err());
    // The last bytes→bytes codec is the compressor, earlier ones are filters.
    let r8 = repr(&[4], DataType::UInt8, &[0]);
    let chain = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes"}),
            json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}),
            json!({"name": "crc32c"}),
        ],
        &r8,
    )
    .unwrap();
    let v2 = chain.to_v2().unwrap();
    assert_eq!(v2.filters, Some(vec![json!({"id": "zstd", "level": 1})]));
    assert_eq!(v2.compressor, Some(json!({"id": "crc32c"})));
    assert_eq!(v2.endian, None);
}

#[test]
fn numcodecs_names_in_v3() {
    let r = repr(&[8], DataType::Float64, &[0; 8]);
    let codecs = [
        json!({"name": "numcodecs.fixedscaleoffset", "configuration": {"scale": 100, "offset": 0, "dtype": "<f8", "astype": "<i2"}}),
        json!({"name": "bytes", "configuration": {"endian": "little"}}),
        json!({"name": "numcodecs.shuffle", "configuration": {"elementsize": 2}}),
        json!({"name": "numcodecs.bz2", "configuration": {"level": 5}}),
        json!({"name": "numcodecs.fletcher32", "configuration": {}}),
    ];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    assert_eq!(chain.to_v3_json(), codecs.to_vec());
    let data: Vec<u8> = (0..8)
        .flat_map(|i| (i as f64 * 0.25).to_le_bytes())
        .collect();
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
    // Every registered numcodecs id has a v3 `numcodecs.<id>` name.
    // (A fresh registry: other tests add codecs to the global one concurrently.)
    let reg = CodecRegistry::with_builtins();
    for id in reg.v2_ids() {
        assert!(reg.v3_names().contains(&format!("numcodecs.{id}")), "{id}");
    }
}

#[derive(Debug)]
struct Xor(u8);

impl BytesToBytesCodec for Xor {
    fn name(&self) -> &str {
        "test.xor"
    }
    fn encode(&self, input: &[u8], out: &mut Vec<u8>) -> CodecResult<()> {
        out.clear();
        out.extend(input.iter().map(|b| b ^ self.0));
        Ok(())
    }
    fn decode(&self, input: &[u8], out: &mut Vec<u8>, _: Option<usize>) -> CodecResult<()> {
        self.encode(input, out)
    }
    fn fixed_encoded_size(&self, n: usize) -> Option<usize> {
        Some(n)
    }
    fn to_v3_json(&self) -> Value {
        json!({"name": "test.xor", "configuration": {"key": self.0}})
    }
    fn to_v2_json(&self) -> Option<Value> {
        Some(json!({"id": "xor", "key": self.0}))
    }
}

#[test]
fn registry_accepts_new_codecs() {
    fn make(c: &Value, _: &ChunkRepr) -> CodecResult<AnyCodec> {
        let key = c.get("key").and_then(Value::as_u64).unwrap_or(0) as u8;
        Ok(AnyCodec::BytesToBytes(Arc::new(Xor(key))))
    }
    // Constructors may be capturing closures.
    let default_key = 0u64;
    register_v3_codec("test.xor", move |c, _| {
        let key = c.get("key").and_then(Value::as_u64).unwrap_or(default_key) as u8;
        Ok(AnyCodec::BytesToBytes(Arc::new(Xor(key))))
    });
    register_v2_codec("xor", make);
    let r = repr(&[2], DataType::UInt8, &[0]);
    let chain = CodecChain::from_v3_json(
        &[
            json!("bytes"),
            json!({"name": "test.xor", "configuration": {"key": 255}}),
        ],
        &r,
    )
    .unwrap();
    assert_eq!(
        chain.encode(ArrayBytes::Fixed(vec![0, 1]), &r).unwrap(),
        [255, 254]
    );
    let v2 =
        CodecChain::from_v2(false, None, Some(&json!({"id": "xor", "key": 1})), None, &r).unwrap();
    assert_eq!(
        v2.encode(ArrayBytes::Fixed(vec![0, 1]), &r).unwrap(),
        [1, 0]
    );
    assert_eq!(
        v2.to_v2().unwrap().compressor,
        Some(json!({"id": "xor", "key": 1}))
    );
    // A separate registry does not see the global additions.
    let own = CodecRegistry::with_builtins();
    assert!(matches!(
        CodecChain::from_v3_json_with(&own, &[json!("bytes"), json!("test.xor")], &r),
        Err(CodecError::Unknown(_))
    ));
}

#[test]
fn typed_codecs_build_the_runtime_codecs() {
    let r = repr(&[8], DataType::UInt16, &[0, 0]);
    let b2b = |codec: Codec| match codec.build(&r).unwrap() {
        AnyCodec::BytesToBytes(c) => c,
        other => panic!("{codec} built {other:?}"),
    };
    assert_eq!(
        b2b(Codec::Zstd {
            level: 5,
            checksum: true
        })
        .to_v3_json(),
        json!({"name": "zstd", "configuration": {"level": 5, "checksum": true}})
    );
    assert_eq!(b2b(Codec::Crc32c).to_v3_json(), json!({"name": "crc32c"}));
    assert_eq!(
        b2b(Codec::Blosc {
            cname: BloscCompressor::Lz4,
            clevel: 5,
            shuffle: BloscShuffle::BitShuffle
        })
        .to_v3_json(),
        json!({"name": "blosc", "configuration": {"typesize": 2, "cname": "lz4", "clevel": 5, "shuffle": "bitshuffle", "blocksize": 0}})
    );
    for (codec, name) in [
        (Codec::Gzip { level: 9 }, "gzip"),
        (Codec::Zlib { level: 1 }, "numcodecs.zlib"),
        (Codec::Bz2 { level: 3 }, "numcodecs.bz2"),
        (Codec::Lzma { preset: Some(2) }, "numcodecs.lzma"),
        (Codec::Lz4 { acceleration: 3 }, "numcodecs.lz4"),
        (Codec::Shuffle, "numcodecs.shuffle"),
    ] {
        assert_eq!(b2b(codec.clone()).name(), name, "{codec}");
        assert_eq!(codec.kind(), CodecKind::BytesToBytes);
    }
    assert!(matches!(
        Codec::Transpose { order: vec![0] }.build(&r).unwrap(),
        AnyCodec::ArrayToArray(_)
    ));
    assert!(matches!(
        Codec::default_serializer(&DataType::UInt16)
            .build(&r)
            .unwrap(),
        AnyCodec::ArrayToBytes(_)
    ));
    for bad in [
        Codec::Gzip { level: 10 },
        Codec::Bz2 { level: 0 },
        Codec::Lzma { preset: Some(10) },
        Codec::Lz4 { acceleration: 0 },
        Codec::Blosc {
            cname: BloscCompressor::Zstd,
            clevel: 10,
            shuffle: BloscShuffle::Shuffle,
        },
        Codec::Transpose { order: vec![1, 0] },
    ] {
        let err = bad.build(&r).unwrap_err();
        assert!(
            matches!(
                err,
                CodecError::Config { .. } | CodecError::Unsupported { .. }
            ),
            "{bad}: {err}"
        );
    }
}

#[test]
fn fixed_encoded_size_and_sharding_detection() {
    let r = repr(&[3, 5], DataType::Int16, &[0, 0]);
    let chain = CodecChain::from_v3_json(
        &[
            json!({"name": "transpose", "configuration": {"order": [1, 0]}}),
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
            json!("crc32c"),
        ],
        &r,
    )
    .unwrap();
    assert_eq!(chain.fixed_encoded_size(&r), Some(34));
    assert!(chain.sharding().is_none());
    let compressed = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
            json!({"name": "zstd", "configuration": {"level": 0}}),
        ],
        &r,
    )
    .unwrap();
    assert_eq!(compressed.fixed_encoded_size(&r), None);
}
