//! Hostile and damaged input: every reader returns an error (never panics) on truncated or
//! mutated metadata and `.npy` headers.

use std::io::Cursor;

use neurochunk_dtype::json::parse_lenient;
use neurochunk_dtype::npy::{read_npy_header, write_npy_header, NpyHeader};
use neurochunk_dtype::v2::{dtype_from_json, fill_value_from_v2_json};
use neurochunk_dtype::v3::fill_value_from_v3_json;
use neurochunk_dtype::{DataType, DataTypeRegistry, Endian, StructField};

/// A small deterministic pseudo-random generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn sample_npy_header() -> Vec<u8> {
    let header = NpyHeader {
        data_type: DataType::Structured(vec![
            StructField {
                name: "a".into(),
                data_type: DataType::Int16,
                shape: vec![],
                endian: Some(Endian::Big),
            },
            StructField {
                name: "c".into(),
                data_type: DataType::Float32,
                shape: vec![2],
                endian: Some(Endian::Little),
            },
        ]),
        endian: None,
        shape: vec![3, 4],
        fortran_order: false,
    };
    let mut out = Vec::new();
    write_npy_header(&mut out, &header).unwrap();
    out
}

#[test]
fn every_truncation_of_an_npy_header_is_reported() {
    let full = sample_npy_header();
    assert!(read_npy_header(&mut Cursor::new(&full)).is_ok());
    for len in 0..full.len() {
        let err = read_npy_header(&mut Cursor::new(&full[..len]))
            .expect_err("a truncated header must not parse")
            .to_string();
        assert!(err.contains("truncated header"), "length {len}: {err}");
    }
}

#[test]
fn mutated_npy_headers_never_panic() {
    let full = sample_npy_header();
    let mut rng = Lcg(1);
    let mut errors = 0;
    for _ in 0..3000 {
        let mut damaged = full.clone();
        for _ in 0..1 + rng.next() % 4 {
            let at = (rng.next() as usize) % damaged.len();
            damaged[at] = rng.next() as u8;
        }
        if let Err(err) = read_npy_header(&mut Cursor::new(&damaged)) {
            assert!(!err.to_string().is_empty());
            errors += 1;
        }
    }
    assert!(errors > 100, "most damage must be detected ({errors})");
}

#[test]
fn mutated_metadata_json_never_panics() {
    let documents: [&[u8]; 4] = [
        br#"{"dtype": [["a", "<i2"], ["b", "|u1"], ["c", "<f4", [2]]], "fill_value": "AQACAABAQAAAgEA="}"#,
        br#"{"dtype": "<M8[10s]", "fill_value": NaN}"#,
        br#"{"data_type": {"name": "struct", "configuration": {"fields": [{"name": "id", "data_type": "int32"}, {"name": "t", "data_type": {"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 10}}}]}}, "fill_value": {"id": 1, "t": "NaT"}}"#,
        br#"{"data_type": "r16", "fill_value": [1, 255]}"#,
    ];
    let registry = DataTypeRegistry::new();
    let mut rng = Lcg(7);
    let mut parsed = 0;
    for round in 0..4000 {
        let mut text = documents[round % documents.len()].to_vec();
        for _ in 0..1 + rng.next() % 3 {
            let at = (rng.next() as usize) % text.len();
            let alphabet = b"[]{}\",:0123456789-.aeNIx<>|";
            text[at] = alphabet[(rng.next() as usize) % alphabet.len()];
        }
        let Ok(doc) = parse_lenient(&text) else {
            continue;
        };
        parsed += 1;
        if let Some(dtype) = doc.get("dtype") {
            if let Ok((data_type, _)) = dtype_from_json(dtype, None) {
                let _ = fill_value_from_v2_json(&doc["fill_value"], &data_type);
            }
        }
        if let Some(dtype) = doc.get("data_type") {
            if let Ok(data_type) = DataType::from_v3_json_with(dtype, &registry) {
                let _ = fill_value_from_v3_json(&doc["fill_value"], &data_type);
            }
        }
    }
    assert!(
        parsed > 100,
        "some mutations must still be valid JSON ({parsed})"
    );
}
