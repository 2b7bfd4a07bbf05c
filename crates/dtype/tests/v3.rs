//! Zarr v3 `data_type` and `fill_value` handling, including the byte-level cases of formats.md §6.

mod common;

use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_dtype::v3::{fill_value_from_v3_json, fill_value_to_v3_json};
use neurochunk_dtype::{DataType, DataTypeRegistry, Endian, StructField, TimeUnit};
use serde_json::{json, Value};

fn field(name: &str, data_type: DataType) -> StructField {
    StructField {
        name: name.into(),
        data_type,
        shape: Vec::new(),
        endian: None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn v3_09_datetime64_with_scale_and_nat_fill() {
    let json =
        json!({"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 10}});
    let data_type = DataType::from_v3_json(&json).unwrap();
    assert_eq!(
        data_type,
        DataType::DateTime64 {
            unit: TimeUnit::Millisecond,
            scale: 10
        }
    );
    assert_eq!(data_type.to_v3_json().unwrap(), json);
    let fill = fill_value_from_v3_json(&json!(-9223372036854775808i64), &data_type).unwrap();
    assert_eq!(hex(&fill), "0000000000000080");
    assert_eq!(
        fill_value_from_v3_json(&json!("NaT"), &data_type).unwrap(),
        fill
    );
    assert_eq!(
        fill_value_to_v3_json(&fill, &data_type),
        json!(-9223372036854775808i64)
    );
}

#[test]
fn v3_12_struct_with_object_fill() {
    let json = json!({"name": "struct", "configuration": {"fields": [
        {"name": "id", "data_type": "int32"},
        {"name": "flags", "data_type": "uint8"},
        {"name": "v", "data_type": "float64"}]}});
    let data_type = DataType::from_v3_json(&json).unwrap();
    assert_eq!(
        data_type,
        DataType::Structured(vec![
            field("id", DataType::Int32),
            field("flags", DataType::UInt8),
            field("v", DataType::Float64),
        ])
    );
    assert_eq!(data_type.fixed_size(), Some(13));
    assert_eq!(data_type.to_v3_json().unwrap(), json);
    let fill_json = json!({"id": 1, "flags": 2, "v": 3.5});
    let fill = fill_value_from_v3_json(&fill_json, &data_type).unwrap();
    assert_eq!(hex(&fill), "01000000020000000000000c40");
    let back = fill_value_to_v3_json(&fill, &data_type);
    assert_eq!(back, fill_json);
    assert_eq!(
        to_python_json(&back, PyJsonStyle::ZARR_PYTHON3),
        "{\n  \"id\": 1,\n  \"flags\": 2,\n  \"v\": 3.5\n}"
    );
    // Legacy zarr-python 3.0/3.1 fill: base64 of the packed element.
    let legacy = fill_value_from_v3_json(&json!("AQAAAAIAAAAAAAAMQA=="), &data_type).unwrap();
    assert_eq!(legacy, fill);
    let missing = fill_value_from_v3_json(&json!({"id": 1, "flags": 2}), &data_type).unwrap_err();
    assert!(
        missing
            .to_string()
            .contains("missing a value for field \"v\""),
        "{missing}"
    );
    let extra = fill_value_from_v3_json(&json!({"id": 1, "flags": 2, "v": 0, "w": 0}), &data_type)
        .unwrap_err();
    assert!(
        extra.to_string().contains("\"w\" is not a field"),
        "{extra}"
    );
    let bad =
        fill_value_from_v3_json(&json!({"id": 1, "flags": 300, "v": 0}), &data_type).unwrap_err();
    assert!(
        bad.to_string()
            .contains("field \"flags\": 300 is out of range"),
        "{bad}"
    );
}

#[test]
fn legacy_structured_name_and_nested_structs() {
    let legacy = json!({"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", "float64"]]}});
    assert_eq!(
        DataType::from_v3_json(&legacy).unwrap(),
        DataType::Structured(vec![
            field("a", DataType::Int32),
            field("b", DataType::Float64)
        ])
    );
    let nested = DataType::Structured(vec![
        field(
            "point",
            DataType::Structured(vec![
                field("x", DataType::Float32),
                field("y", DataType::Float32),
            ]),
        ),
        field(
            "t",
            DataType::TimeDelta64 {
                unit: TimeUnit::Microsecond,
                scale: 1,
            },
        ),
    ]);
    let json = nested.to_v3_json().unwrap();
    assert_eq!(
        json["configuration"]["fields"][0]["data_type"]["configuration"]["fields"][1],
        json!({"name": "y", "data_type": "float32"})
    );
    assert_eq!(DataType::from_v3_json(&json).unwrap(), nested);
    let fill = json!({"point": {"x": 1.0, "y": "NaN"}, "t": "NaT"});
    let bytes = fill_value_from_v3_json(&fill, &nested).unwrap();
    assert_eq!(hex(&bytes), "0000803f0000c07f0000000000000080");
    assert_eq!(
        fill_value_to_v3_json(&bytes, &nested),
        json!({"point": {"x": 1.0, "y": "NaN"}, "t": i64::MIN})
    );
}

#[test]
fn v3_13_fixed_length_utf32() {
    let json = json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}});
    let data_type = DataType::from_v3_json(&json).unwrap();
    assert_eq!(data_type, DataType::FixedUtf32 { chars: 3 });
    assert_eq!(data_type.to_v3_json().unwrap(), json);
    let fill = fill_value_from_v3_json(&json!("ab"), &data_type).unwrap();
    assert_eq!(hex(&fill), "610000006200000000000000");
    assert_eq!(fill_value_to_v3_json(&fill, &data_type), json!("ab"));
    let odd = json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}});
    let err = DataType::from_v3_json(&odd).unwrap_err().to_string();
    assert!(err.contains("multiple of 4"), "{err}");
}

#[test]
fn v3_17_hex_nan_payload_is_kept() {
    let fill = fill_value_from_v3_json(&json!("0x7fc00001"), &DataType::Float32).unwrap();
    assert_eq!(hex(&fill), "0100c07f");
    assert_eq!(
        u32::from_le_bytes(fill.clone().try_into().unwrap()),
        0x7fc0_0001
    );
    // Written back as hex so the payload survives; the canonical NaN is written "NaN".
    assert_eq!(
        fill_value_to_v3_json(&fill, &DataType::Float32),
        json!("0x7fc00001")
    );
    let canonical = fill_value_from_v3_json(&json!("NaN"), &DataType::Float32).unwrap();
    assert_eq!(hex(&canonical), "0000c07f");
    assert_eq!(
        fill_value_to_v3_json(&canonical, &DataType::Float32),
        json!("NaN")
    );
    let f64_nan = fill_value_from_v3_json(&json!("NaN"), &DataType::Float64).unwrap();
    assert_eq!(hex(&f64_nan), "000000000000f87f");
    let err = fill_value_from_v3_json(&json!("0x7fc001"), &DataType::Float32).unwrap_err();
    assert!(
        err.to_string().contains("exactly 8 hex digits, found 6"),
        "{err}"
    );
}

#[test]
fn float16_fills_use_ieee_half() {
    let nan = fill_value_from_v3_json(&json!("NaN"), &DataType::Float16).unwrap();
    assert_eq!(hex(&nan), "007e");
    let payload = fill_value_from_v3_json(&json!("0x7e01"), &DataType::Float16).unwrap();
    assert_eq!(hex(&payload), "017e");
    assert_eq!(
        fill_value_to_v3_json(&payload, &DataType::Float16),
        json!("0x7e01")
    );
    let value = fill_value_from_v3_json(&json!(0.1), &DataType::Float16).unwrap();
    assert_eq!(
        hex(&value),
        "662e",
        "0.1 rounds to the nearest half, 0x2e66"
    );
    assert_eq!(
        to_python_json(
            &fill_value_to_v3_json(&value, &DataType::Float16),
            PyJsonStyle::COMPACT
        ),
        "0.0999755859375"
    );
    let inf = fill_value_from_v3_json(&json!("-Infinity"), &DataType::Float16).unwrap();
    assert_eq!(hex(&inf), "00fc");
}

#[test]
fn negative_zero_and_complex_fills() {
    // V3-10: -0.0 is preserved in v3.
    let zero = fill_value_from_v3_json(&json!(-0.0), &DataType::Float64).unwrap();
    assert_eq!(hex(&zero), "0000000000000080");
    let back = fill_value_to_v3_json(&zero, &DataType::Float64);
    assert_eq!(to_python_json(&back, PyJsonStyle::ZARR_PYTHON3), "-0.0");
    // V3-07: complex64 [1.0, "-Infinity"].
    let complex =
        fill_value_from_v3_json(&json!([1.0, "-Infinity"]), &DataType::Complex64).unwrap();
    assert_eq!(hex(&complex), "0000803f000080ff");
    assert_eq!(
        fill_value_to_v3_json(&complex, &DataType::Complex64),
        json!([1.0, "-Infinity"])
    );
    let err = fill_value_from_v3_json(&json!([1.0]), &DataType::Complex128).unwrap_err();
    assert!(
        err.to_string()
            .contains("expected a list [real, imaginary]"),
        "{err}"
    );
}

#[test]
fn raw_and_variable_bytes_fills() {
    let raw = DataType::from_v3_json(&json!("r16")).unwrap();
    assert_eq!(raw, DataType::RawBits { bytes: 2 });
    assert_eq!(
        fill_value_from_v3_json(&json!([1, 255]), &raw).unwrap(),
        [1, 255]
    );
    assert_eq!(
        fill_value_from_v3_json(&json!("Af8="), &raw).unwrap(),
        [1, 255]
    );
    let err = fill_value_from_v3_json(&json!([1, 256]), &raw).unwrap_err();
    assert!(err.to_string().contains("256 is not a byte value"), "{err}");
    let err = fill_value_from_v3_json(&json!([1]), &raw).unwrap_err();
    assert!(
        err.to_string().contains("expected 2 bytes, found 1"),
        "{err}"
    );
    // zarr-python 3 reads raw_bytes with a base64 fill, so that is what we write.
    assert_eq!(fill_value_to_v3_json(&[1, 255], &raw), json!("Af8="));

    for name in ["bytes", "variable_length_bytes"] {
        assert_eq!(
            DataType::from_v3_json(&json!(name)).unwrap(),
            DataType::Bytes
        );
    }
    assert_eq!(
        fill_value_from_v3_json(&json!([0, 1, 2]), &DataType::Bytes).unwrap(),
        [0, 1, 2]
    );
    assert_eq!(
        fill_value_from_v3_json(&json!("AAEC"), &DataType::Bytes).unwrap(),
        [0, 1, 2]
    );
    assert_eq!(
        fill_value_to_v3_json(&[0, 1, 2], &DataType::Bytes),
        json!("AAEC")
    );
    assert_eq!(
        fill_value_from_v3_json(&json!(""), &DataType::String).unwrap(),
        b""
    );
    let err = fill_value_from_v3_json(&json!(0), &DataType::String).unwrap_err();
    assert!(
        err.to_string().contains("expected a JSON string"),
        "v3 has no `0` quirk: {err}"
    );
}

#[test]
fn zarr_python3_spellings_are_written() {
    let cases = [
        (
            DataType::FixedBytes { len: 12 },
            json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 12}}),
        ),
        (
            DataType::RawBits { bytes: 8 },
            json!({"name": "raw_bytes", "configuration": {"length_bytes": 8}}),
        ),
        (DataType::Bytes, json!("variable_length_bytes")),
        (DataType::String, json!("string")),
        (DataType::Float16, json!("float16")),
        (DataType::Complex128, json!("complex128")),
        (
            DataType::TimeDelta64 {
                unit: TimeUnit::Generic,
                scale: 1,
            },
            json!({"name": "numpy.timedelta64", "configuration": {"unit": "generic", "scale_factor": 1}}),
        ),
    ];
    for (data_type, expected) in cases {
        assert_eq!(data_type.to_v3_json().unwrap(), expected);
        assert_eq!(DataType::from_v3_json(&expected).unwrap(), data_type);
    }
    // Extension objects may carry must_understand; a plain name may come as an object.
    let with_flag = json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 3}, "must_understand": false});
    assert_eq!(
        DataType::from_v3_json(&with_flag).unwrap(),
        DataType::FixedBytes { len: 3 }
    );
    assert_eq!(
        DataType::from_v3_json(&json!({"name": "uint8"})).unwrap(),
        DataType::UInt8
    );
}

fn v3_types() -> Vec<DataType> {
    let mut types = common::numeric_types();
    types.extend([
        DataType::RawBits { bytes: 3 },
        DataType::FixedBytes { len: 4 },
        DataType::FixedUtf32 { chars: 2 },
        DataType::String,
        DataType::Bytes,
        DataType::DateTime64 {
            unit: TimeUnit::Year,
            scale: 2,
        },
        DataType::TimeDelta64 {
            unit: TimeUnit::Attosecond,
            scale: 1,
        },
        DataType::Structured(vec![
            field("a", DataType::UInt16),
            field(
                "b",
                DataType::Structured(vec![
                    field("c", DataType::Complex64),
                    field("d", DataType::FixedUtf32 { chars: 1 }),
                ]),
            ),
            field("e", DataType::Bool),
        ]),
    ]);
    types
}

fn sample_fill(data_type: &DataType) -> Vec<u8> {
    match data_type {
        DataType::Bool => vec![1],
        DataType::Float16 => half::f16::from_f32(65504.0).to_le_bytes().to_vec(),
        DataType::Float32 => f32::from_bits(0xffc0_0000).to_le_bytes().to_vec(),
        DataType::Float64 => 5e-324f64.to_le_bytes().to_vec(),
        DataType::Complex64 => [f32::INFINITY.to_le_bytes(), (-0.0f32).to_le_bytes()].concat(),
        DataType::Complex128 => [0.1f64.to_le_bytes(), f64::NAN.to_le_bytes()].concat(),
        DataType::FixedBytes { .. } => b"xy\0\0".to_vec(),
        DataType::FixedUtf32 { chars } => {
            let mut v = u32::from('😀').to_le_bytes().to_vec();
            v.resize(4 * chars, 0);
            v
        }
        DataType::String => "ünïcode".as_bytes().to_vec(),
        DataType::Bytes => vec![255, 0, 7],
        DataType::Structured(_) => {
            let mut v = vec![0x34, 0x12];
            v.extend(1.5f32.to_le_bytes());
            v.extend(f32::NEG_INFINITY.to_le_bytes());
            v.extend(u32::from('z').to_le_bytes());
            v.push(1);
            v
        }
        other => (0..other.fixed_size().unwrap())
            .map(|i| 0x80u8.wrapping_add(i as u8 * 3))
            .collect(),
    }
}

#[test]
fn every_type_and_fill_round_trips_through_v3_json() {
    for data_type in v3_types() {
        let json = data_type.to_v3_json().unwrap();
        assert_eq!(DataType::from_v3_json(&json).unwrap(), data_type, "{json}");
        let bytes = sample_fill(&data_type);
        let fill = fill_value_to_v3_json(&bytes, &data_type);
        let text = to_python_json(&fill, PyJsonStyle::ZARR_PYTHON3);
        let reparsed = neurochunk_dtype::json::parse_lenient(text.as_bytes()).unwrap();
        assert_eq!(
            fill_value_from_v3_json(&reparsed, &data_type).unwrap(),
            bytes,
            "{data_type}: {text}"
        );
    }
}

#[test]
fn integer_fills_accept_zarr_python3_spellings() {
    assert_eq!(
        fill_value_from_v3_json(&json!(1.0), &DataType::Int32).unwrap(),
        1i32.to_le_bytes()
    );
    assert_eq!(
        fill_value_from_v3_json(&json!("1"), &DataType::UInt8).unwrap(),
        [1]
    );
    let err = fill_value_from_v3_json(&json!(-1), &DataType::UInt32).unwrap_err();
    assert!(
        err.to_string()
            .contains("-1 is out of range 0..=4294967295"),
        "{err}"
    );
    assert!(err.to_string().contains("Zarr v3"), "{err}");
}

#[test]
fn types_without_a_v3_form_are_refused_clearly() {
    let sub_array = DataType::Structured(vec![StructField {
        name: "c".into(),
        data_type: DataType::Float32,
        shape: vec![2],
        endian: Some(Endian::Little),
    }]);
    let err = sub_array.to_v3_json().unwrap_err().to_string();
    assert!(err.contains("struct field \"c\""), "{err}");
    assert!(err.contains("sub-array of shape [2]"), "{err}");

    let cases: &[(Value, &str)] = &[
        (json!("uint7"), "unknown data type"),
        (json!("r12"), "positive multiple of 8"),
        (
            json!({"name": "numpy.datetime64", "configuration": {"unit": "xs", "scale_factor": 1}}),
            "needs a \"unit\"",
        ),
        (
            json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 0}}),
            "\"scale_factor\" in 1..=",
        ),
        (
            json!({"name": "struct", "configuration": {"fields": []}}),
            "at least one field",
        ),
        (
            json!({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "string"}]}}),
            "fixed size",
        ),
        (
            json!({"name": "struct", "configuration": {"fields": [{"name": "a", "data_type": "int8"}, {"name": "a", "data_type": "int8"}]}}),
            "unique",
        ),
        (json!({"configuration": {}}), "needs a string \"name\""),
        (json!(5), "expected a data type name"),
    ];
    for (json, expected) in cases {
        let message = DataType::from_v3_json_with(json, &DataTypeRegistry::new())
            .unwrap_err()
            .to_string();
        assert!(message.contains(expected), "{json}: {message}");
    }
}
