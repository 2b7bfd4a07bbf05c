//! Corrupt, truncated and hostile input: every decoder returns an error (or, where the
//! format has no integrity check, a different result), never panics and never allocates
//! what a forged size field asks for.

mod common;

use std::sync::Arc;

use common::*;
use neurochunk_codec::*;
use neurochunk_dtype::DataType;
use serde_json::json;

/// Codecs with an integrity check over the whole payload.
fn checked_codecs() -> Vec<Arc<dyn BytesToBytesCodec>> {
    vec![
        Arc::new(ChecksumCodec::crc32c()),
        Arc::new(ChecksumCodec::new(ChecksumKind::Crc32)),
        Arc::new(ChecksumCodec::new(ChecksumKind::Adler32)),
        Arc::new(ChecksumCodec::new(ChecksumKind::Fletcher32)),
        Arc::new(GzipCodec::new(6)),
        Arc::new(ZlibCodec::new(6)),
        Arc::new(ZstdCodec::new(3, true)),
        Arc::new(Bz2Codec::new(9)),
        Arc::new(LzmaCodec::xz(Some(1))),
        Arc::new(N5Lz4Codec::new(256).unwrap()),
    ]
}

/// Codecs without an integrity check: corruption must not panic.
fn unchecked_codecs() -> Vec<Arc<dyn BytesToBytesCodec>> {
    vec![
        Arc::new(BloscCodec::new(BloscCompressor::Lz4, 5, BloscShuffle::Shuffle, 4, 0).unwrap()),
        Arc::new(
            BloscCodec::new(BloscCompressor::Zstd, 5, BloscShuffle::BitShuffle, 4, 256).unwrap(),
        ),
        Arc::new(
            BloscCodec::new(BloscCompressor::BloscLz, 5, BloscShuffle::NoShuffle, 1, 0).unwrap(),
        ),
        Arc::new(BloscCodec::new(BloscCompressor::Zlib, 5, BloscShuffle::Shuffle, 2, 0).unwrap()),
        Arc::new(ZstdCodec::new(3, false)),
        Arc::new(Lz4Codec::new(1)),
        Arc::new(ShuffleCodec::new(4)),
        Arc::new(LzmaCodec::from_config(&json!({"format": 2, "preset": 1})).unwrap()),
    ]
}

fn sample() -> Vec<u8> {
    // Noise first: Fletcher-32 of a zero prefix is zero, which would make a truncation
    // inside a leading zero run look valid.
    let mut d = noise(200, 5);
    d.extend((0..600u32).flat_map(|i| (i / 5 + 1).to_le_bytes()));
    d
}

/// Offsets to mutate: all of them for short streams, a spread otherwise.
fn positions(len: usize) -> Vec<usize> {
    if len <= 400 {
        (0..len).collect()
    } else {
        (0..len)
            .step_by(len / 200 + 1)
            .chain(len.saturating_sub(40)..len)
            .collect()
    }
}

/// A checked codec never returns wrong data: every truncation is an error, and a flipped
/// bit is either an error or leaves the decoded bytes unchanged (header hints, padding bits,
/// redundant entropy-table bits); nearly all flips are errors.
#[test]
fn checked_codecs_never_return_wrong_data() {
    let data = sample();
    for codec in checked_codecs() {
        let mut enc = Vec::new();
        codec.encode(&data, &mut enc).unwrap();
        let mut out = Vec::new();
        for expected in [Some(data.len()), None] {
            for cut in positions(enc.len()) {
                let r = codec.decode(&enc[..cut], &mut out, expected);
                let Err(e) = r else {
                    panic!("{}: truncation to {cut} bytes went unnoticed", codec.name())
                };
                assert!(
                    matches!(e, CodecError::Corrupt { .. }),
                    "{}: {e}",
                    codec.name()
                );
            }
            let (mut flips, mut errors) = (0, 0);
            for pos in positions(enc.len()) {
                for bit in [0x01u8, 0x80] {
                    let mut bad = enc.clone();
                    bad[pos] ^= bit;
                    flips += 1;
                    match codec.decode(&bad, &mut out, expected) {
                        Err(e) => {
                            errors += 1;
                            assert!(
                                matches!(e, CodecError::Corrupt { .. }),
                                "{}: {e}",
                                codec.name()
                            );
                        }
                        Ok(()) => assert_eq!(
                            out,
                            data,
                            "{}: flip {bit:#x} at {pos} returned wrong data",
                            codec.name()
                        ),
                    }
                }
            }
            assert!(
                errors * 100 >= flips * 95,
                "{}: only {errors} of {flips} flips detected",
                codec.name()
            );
        }
    }
}

#[test]
fn unchecked_codecs_never_panic() {
    let data = sample();
    for codec in unchecked_codecs() {
        let mut enc = Vec::new();
        codec.encode(&data, &mut enc).unwrap();
        let mut out = Vec::new();
        for expected in [Some(data.len()), None] {
            for cut in positions(enc.len()) {
                let r = codec.decode(&enc[..cut], &mut out, expected);
                if codec.name() != "numcodecs.shuffle" || expected.is_some() {
                    assert!(
                        r.is_err() || out != data,
                        "{}: truncation to {cut}",
                        codec.name()
                    );
                }
            }
            for pos in positions(enc.len()) {
                for bit in [0x01u8, 0x10, 0x80] {
                    let mut bad = enc.clone();
                    bad[pos] ^= bit;
                    if let Ok(()) = codec.decode(&bad, &mut out, expected) {
                        if let Some(n) = expected {
                            assert_eq!(
                                out.len(),
                                n,
                                "{}: decoded size must match the expectation",
                                codec.name()
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn forged_sizes_are_rejected_before_allocating() {
    let mut out = Vec::new();
    // blosc header claiming 2 GB from 32 bytes.
    let mut blosc = hex("02 01 33 08 10000000 10000000 20000000");
    blosc.extend_from_slice(&[0; 16]);
    blosc[4..8].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    let codec = BloscCodec::new(BloscCompressor::Lz4, 5, BloscShuffle::Shuffle, 8, 0).unwrap();
    assert!(matches!(
        codec.decode(&blosc, &mut out, None),
        Err(CodecError::Corrupt { .. })
    ));
    blosc[2] = 0x21; // not memcpy'd, blocksize 16: the block table cannot fit.
    assert!(matches!(
        codec.decode(&blosc, &mut out, None),
        Err(CodecError::Corrupt { .. })
    ));
    // numcodecs lz4 header claiming 4 GiB.
    let lz4 = hex("ffffffff 80 0a00 0100 0200 0300");
    assert!(matches!(
        Lz4Codec::new(1).decode(&lz4, &mut out, None),
        Err(CodecError::Corrupt { .. })
    ));
    assert!(matches!(
        Lz4Codec::new(1).decode(&lz4, &mut out, Some(8)),
        Err(CodecError::Corrupt { .. })
    ));
    // zstd frame header declaring 2^40 bytes of content (8-byte size field).
    let mut zstd = hex("28b52ffd c0");
    zstd.extend_from_slice(&(1u64 << 40).to_le_bytes());
    zstd.extend_from_slice(&hex("01 00 00"));
    let err = ZstdCodec::new(0, false)
        .decode(&zstd, &mut out, None)
        .unwrap_err();
    assert!(err.to_string().contains("declares"), "{err}");
    // A size that contradicts the caller's expectation.
    let mut good = Vec::new();
    ZstdCodec::new(0, false)
        .encode(&[1, 2, 3, 4], &mut good)
        .unwrap();
    assert!(ZstdCodec::new(0, false)
        .decode(&good, &mut out, Some(5))
        .is_err());
    // A deflate bomb stops at the expected size.
    let mut bomb = Vec::new();
    GzipCodec::new(9)
        .encode(&vec![0u8; 1 << 20], &mut bomb)
        .unwrap();
    let err = GzipCodec::new(9)
        .decode(&bomb, &mut out, Some(1000))
        .unwrap_err();
    assert!(out.capacity() < 1 << 20, "did not stop early: {err}");
    // vlen item count larger than the chunk can hold.
    let r = repr(&[3], DataType::String, b"");
    let vlen = hex("ffffff7f 01000000 61");
    assert!(matches!(
        VlenCodec::utf8().decode(vlen, &r),
        Err(CodecError::Corrupt { .. })
    ));
}

#[test]
fn array_to_bytes_decoders_reject_bad_input() {
    let r = repr(&[3], DataType::String, b"");
    let good = hex("03000000 01000000 61 02000000 6263 02000000 c3a9");
    for codec in [VlenCodec::utf8(), VlenCodec::bytes()] {
        for cut in 0..good.len() {
            assert!(
                matches!(
                    codec.decode(good[..cut].to_vec(), &r),
                    Err(CodecError::Corrupt { .. })
                ),
                "cut {cut}"
            );
        }
        let mut long = good.clone();
        long.push(0);
        assert!(codec.decode(long, &r).is_err());
    }
    // Invalid UTF-8 is an error for vlen-utf8 only.
    let bad = hex("03000000 01000000 ff 02000000 6263 02000000 c3a9");
    let err = VlenCodec::utf8().decode(bad.clone(), &r).unwrap_err();
    assert!(
        err.to_string().contains("item 0 is not valid UTF-8"),
        "{err}"
    );
    assert!(VlenCodec::bytes()
        .decode(bad, &repr(&[3], DataType::Bytes, b""))
        .is_ok());
    // json2: truncations and a wrong shape.
    let j = Json2Codec::default();
    let enc = j.encode(strings(&[b"a", b"b", b"c"]), &r).unwrap();
    for cut in 0..enc.len() {
        assert!(j.decode(enc[..cut].to_vec(), &r).is_err());
    }
    assert!(j.decode(br#"["a","b","|O",[2]]"#.to_vec(), &r).is_err());
    // bytes: wrong length.
    let r16 = repr(&[3], DataType::UInt16, &[0, 0]);
    let err = BytesCodec::new(None).decode(vec![0; 5], &r16).unwrap_err();
    assert!(matches!(err, CodecError::Corrupt { .. }));
    assert!(err.to_string().contains("expected 6"), "{err}");
}

#[test]
fn crc32c_mismatch_message() {
    let r = repr(&[2], DataType::UInt16, &[0, 0]);
    let chain = CodecChain::from_v3_json(
        &[
            json!({"name": "bytes", "configuration": {"endian": "little"}}),
            json!({"name": "crc32c"}),
        ],
        &r,
    )
    .unwrap();
    let mut enc = chain.encode(ArrayBytes::Fixed(u16s(&[1, 2])), &r).unwrap();
    let stored = u32::from_le_bytes(enc[4..8].try_into().unwrap());
    enc[0] ^= 0xff;
    let computed = ChecksumKind::Crc32c.compute(&enc[..4]);
    let err = chain.decode(enc.clone(), &r).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("codec 'crc32c': corrupt data: checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")
    );
    // Verification can be switched off for data written by buggy tools.
    let mut out = Vec::new();
    ChecksumCodec::crc32c()
        .without_verification()
        .decode(&enc, &mut out, None)
        .unwrap();
    assert_eq!(out, enc[..4]);
}

#[test]
fn sharding_decoder_survives_corruption() {
    let r = repr(&[8, 8], DataType::UInt16, &[7, 0]);
    let codecs = [json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 4],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
    }})];
    let chain = CodecChain::from_v3_json(&codecs, &r).unwrap();
    let data: Vec<u8> = (0..64u16)
        .flat_map(|i| if i < 16 { 7u16 } else { i }.to_le_bytes())
        .collect();
    let enc = chain.encode(ArrayBytes::Fixed(data.clone()), &r).unwrap();
    for cut in 0..enc.len() {
        assert!(chain.decode(enc[..cut].to_vec(), &r).is_err(), "cut {cut}");
    }
    for pos in 0..enc.len() {
        let mut bad = enc.clone();
        bad[pos] ^= 0x04;
        match chain.decode(bad, &r) {
            Err(e) => assert!(matches!(e, CodecError::Corrupt { .. }), "{e}"),
            Ok(d) => assert_ne!(d, ArrayBytes::Fixed(data.clone()), "flip at {pos}"),
        }
    }
}
