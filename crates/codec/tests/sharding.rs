//! Sharding: multi-dimensional shards, empty inner chunks, index placement, nested shards,
//! variable-length elements, index validation and the helpers partial reads use.

mod common;

use std::sync::Arc;

use common::*;
use neurochunk_codec::*;
use neurochunk_dtype::{DataType, Endian};
use serde_json::{json, Value};

fn shard_json(inner: &[usize], codecs: Value, location: &str) -> Vec<Value> {
    vec![json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner,
        "codecs": codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": location
    }})]
}

#[test]
fn two_d_shard_with_empty_inner_chunks() {
    let fill = 7u16.to_le_bytes();
    let r = repr(&[8, 6], DataType::UInt16, &fill);
    let inner = json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]);
    for location in ["end", "start"] {
        let chain =
            CodecChain::from_v3_json(&shard_json(&[4, 3], inner.clone(), location), &r).unwrap();
        let shard = chain.sharding().unwrap();
        assert_eq!(shard.chunks_per_shard(&[8, 6]).unwrap(), [2, 2]);
        // Inner chunk (0, 1) (rows 0-3, columns 3-5) is all fill; the rest holds data.
        let mut values = vec![0u16; 48];
        for (i, v) in values.iter_mut().enumerate() {
            let (row, col) = (i / 6, i % 6);
            *v = if row < 4 && col >= 3 {
                7
            } else {
                (i * 3) as u16
            };
        }
        let data = u16s(&values);
        let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
        let index = shard.read_index(&enc, &[8, 6]).unwrap();
        assert_eq!(index.len(), 4);
        assert!(index[1].is_none());
        assert!(index[0].is_some() && index[2].is_some() && index[3].is_some());
        let first = index[0].unwrap().0;
        assert_eq!(first, if location == "start" { 4 * 16 + 4 } else { 0 });
        assert_eq!(
            chain.decode(enc.clone(), &r).unwrap(),
            ArrayBytes::Fixed(data.clone())
        );
        // Partial read of inner chunk (1, 1): rows 4-7, columns 3-5.
        let (o, n) = index[3].unwrap();
        let ArrayBytes::Fixed(part) = shard
            .decode_inner_chunk(&enc[o as usize..(o + n) as usize], &r)
            .unwrap()
        else {
            panic!()
        };
        let expected: Vec<u16> = (4..8)
            .flat_map(|row| (3..6).map(move |col| (row * 6 + col) as u16 * 3))
            .collect();
        assert_eq!(part, u16s(&expected));
        // The empty sentinel is not offset-adjusted with the index at the start.
        let raw_index = match location {
            "start" => &enc[..68],
            _ => &enc[enc.len() - 68..],
        };
        assert_eq!(&raw_index[16..32], &[0xff; 16]);
    }
}

#[test]
fn all_fill_shard_decodes_to_fill_and_has_an_empty_index() {
    let r = repr(&[4, 4], DataType::Float32, &f32::NAN.to_le_bytes());
    let chain = CodecChain::from_v3_json(
        &shard_json(
            &[2, 2],
            json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
            "end",
        ),
        &r,
    )
    .unwrap();
    let data = subset::fill_buffer(&f32::NAN.to_le_bytes(), 16);
    let enc = chain.encode(data.clone(), &r).unwrap();
    assert_eq!(enc.len(), 4 * 16 + 4, "only the index");
    assert_eq!(chain.decode(enc, &r).unwrap(), data);
}

#[test]
fn nested_sharding_round_trips() {
    let r = repr(&[8, 8], DataType::Int32, &(-1i32).to_le_bytes());
    let inner_shard = json!([{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2, 2],
        "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "gzip", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "start"
    }}]);
    let chain = CodecChain::from_v3_json(&shard_json(&[4, 4], inner_shard, "end"), &r).unwrap();
    let mut values: Vec<i32> = (0..64).collect();
    for v in values.iter_mut().take(8) {
        *v = -1; // first row: fill, so inner-inner chunks (0,0..3) of the top shards are empty
    }
    for row in 4..8 {
        for col in 4..8 {
            values[row * 8 + col] = -1; // a whole inner shard empty
        }
    }
    let data = i32s(&values);
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    let outer = chain.sharding().unwrap();
    let index = outer.read_index(&enc, &[8, 8]).unwrap();
    assert!(index[3].is_none(), "the all-fill inner shard is skipped");
    assert_eq!(
        chain.decode(enc.clone(), &r).unwrap(),
        ArrayBytes::Fixed(data)
    );
    // The inner chain is itself a sharding codec.
    assert!(outer.inner_chain().sharding().is_some());
    assert_eq!(
        chain.to_v3_json(),
        shard_json(
            &[4, 4],
            chain.to_v3_json()[0]["configuration"]["codecs"].clone(),
            "end"
        )
    );
}

#[test]
fn variable_length_shards() {
    let r = repr(&[4, 4], DataType::String, b"");
    let chain = CodecChain::from_v3_json(
        &shard_json(
            &[2, 2],
            json!([{"name": "vlen-utf8", "configuration": {}}]),
            "end",
        ),
        &r,
    )
    .unwrap();
    let items: Vec<String> = (0..16)
        .map(|i| {
            if i % 4 < 2 && i < 8 {
                String::new()
            } else {
                format!("s{i}é")
            }
        })
        .collect();
    let refs: Vec<&[u8]> = items.iter().map(|s| s.as_bytes()).collect();
    let data = strings(&refs);
    let enc = chain.encode(data.clone(), &r).unwrap();
    let index = chain.sharding().unwrap().read_index(&enc, &[4, 4]).unwrap();
    assert!(
        index[0].is_none(),
        "inner chunk of empty strings (= fill) is skipped"
    );
    assert_eq!(chain.decode(enc, &r).unwrap(), data);
}

#[test]
fn index_without_checksum_and_past_the_end() {
    let r = repr(&[4], DataType::UInt8, &[0]);
    let codecs = [json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": [2],
        "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]
    }})];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    let shard = chain.sharding().unwrap();
    // The index size comes from the index codecs: no checksum here.
    assert_eq!(shard.index_encoded_size(&[4]).unwrap(), 32);
    let mut enc = chain
        .encode(ArrayBytes::Fixed(vec![1, 2, 3, 4]), &r)
        .unwrap();
    assert_eq!(enc.len(), 4 + 32);
    // Point inner chunk 1 past the end of the shard.
    enc[4 + 16..4 + 24].copy_from_slice(&40u64.to_le_bytes());
    let err = chain.decode(enc.clone(), &r).unwrap_err();
    assert!(matches!(err, CodecError::Corrupt { .. }));
    assert_eq!(
        err.to_string(),
        "codec 'sharding_indexed': corrupt data: inner chunk [1]: byte range 40..42 points past the end of the shard (36 bytes)"
    );
    let index = shard.decode_index(&enc[4..], &[4]).unwrap();
    let err = ShardingCodec::validate_index(&index, 36).unwrap_err();
    assert!(err.to_string().contains("inner chunk #1"), "{err}");
    // Overflowing ranges are caught too.
    enc[4 + 16..4 + 24].copy_from_slice(&(u64::MAX - 1).to_le_bytes());
    assert!(chain.decode(enc, &r).is_err());
}

#[test]
fn assemble_and_helpers() {
    let inner = CodecChain::new(
        Vec::new(),
        Arc::new(BytesCodec::new(Some(Endian::Little))),
        Vec::new(),
    );
    let shard = ShardingCodec::new(
        vec![2, 2],
        inner,
        ShardingCodec::default_index_chain(),
        IndexLocation::Start,
    );
    assert!(shard.chunks_per_shard(&[4, 5]).is_err());
    assert_eq!(shard.inner_chunk_origin(2, &[4, 6]).unwrap(), [0, 4]);
    assert_eq!(shard.inner_chunk_origin(3, &[4, 6]).unwrap(), [2, 0]);
    let r = repr(&[4, 4], DataType::UInt8, &[9]);
    let parts = vec![Some(vec![1, 2, 3, 4]), None, None, Some(vec![5, 6, 7, 8])];
    let bytes = shard.assemble_shard(parts, &[4, 4]).unwrap();
    assert_eq!(bytes.len(), 68 + 8);
    let index = shard.read_index(&bytes, &[4, 4]).unwrap();
    assert_eq!(index, vec![Some((68, 4)), None, None, Some((72, 4))]);
    let decoded = shard.decode(bytes, &r).unwrap();
    assert_eq!(
        decoded,
        ArrayBytes::Fixed(vec![1, 2, 9, 9, 3, 4, 9, 9, 9, 9, 5, 6, 9, 9, 7, 8])
    );
    let json = shard.to_v3_json();
    let keys: Vec<&String> = json["configuration"].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["chunk_shape", "codecs", "index_codecs", "index_location"]
    );
    // No Zarr v2 form.
    let chain = CodecChain::new(Vec::new(), Arc::new(shard), Vec::new());
    assert!(matches!(chain.to_v2(), Err(CodecError::Unsupported { .. })));
    // Configuration errors.
    let bad = [
        json!({"name": "sharding_indexed", "configuration": {"chunk_shape": [3], "codecs": [{"name": "bytes"}]}}),
    ];
    assert!(CodecChain::from_v3_json(&bad, &repr(&[4], DataType::UInt8, &[0])).is_err());
}

#[test]
fn large_shard_round_trip_in_parallel() {
    let r = repr(&[64, 64, 16], DataType::Float64, &[0; 8]);
    let inner = json!([
        {"name": "transpose", "configuration": {"order": [2, 1, 0]}},
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {"typesize": 8, "cname": "lz4", "clevel": 5, "shuffle": "shuffle", "blocksize": 0}}
    ]);
    let chain = CodecChain::from_v3_json(&shard_json(&[16, 8, 16], inner, "end"), &r).unwrap();
    let data: Vec<u8> = (0..64 * 64 * 16)
        .flat_map(|i| {
            if i % 1000 < 300 {
                0.0
            } else {
                (i as f64).sqrt()
            }
            .to_le_bytes()
        })
        .collect();
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    assert!(enc.len() < data.len());
    assert_eq!(chain.decode(enc, &r).unwrap(), ArrayBytes::Fixed(data));
}
