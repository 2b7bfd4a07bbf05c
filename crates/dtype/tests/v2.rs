//! Zarr v2 `dtype` and `fill_value` handling, including the byte-level cases of formats.md §6.

mod common;

use neurochunk_dtype::json::{to_python_json, PyJsonStyle};
use neurochunk_dtype::v2::{
    dtype_from_json, dtype_to_json, fill_value_from_v2_json, fill_value_to_v2_json,
    is_object_codec_id, parse_typestr,
};
use neurochunk_dtype::{DataType, Endian, StructField, TimeUnit};
use serde_json::{json, Value};

fn field(name: &str, data_type: DataType, shape: &[usize], endian: Option<Endian>) -> StructField {
    StructField {
        name: name.into(),
        data_type,
        shape: shape.to_vec(),
        endian,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn v2_04_type() -> DataType {
    DataType::Structured(vec![
        field("a", DataType::Int16, &[], Some(Endian::Little)),
        field("b", DataType::UInt8, &[], None),
        field("c", DataType::Float32, &[2], Some(Endian::Little)),
    ])
}

#[test]
fn v2_04_structured_dtype_and_base64_fill() {
    let dtype = json!([["a", "<i2"], ["b", "|u1"], ["c", "<f4", [2]]]);
    let (data_type, endian) = dtype_from_json(&dtype, None).unwrap();
    assert_eq!(data_type, v2_04_type());
    assert_eq!(endian, None);
    assert_eq!(data_type.fixed_size(), Some(11));
    // fill (1, 2, (3.0, 4.0))
    let fill = fill_value_from_v2_json(&json!("AQACAABAQAAAgEA="), &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(hex(&fill), "0100020000404000008040");
    assert_eq!(
        fill_value_to_v2_json(&fill, &data_type),
        json!("AQACAABAQAAAgEA=")
    );
    let written = dtype_to_json(&data_type, Endian::Little).unwrap();
    assert_eq!(written.dtype, dtype);
    assert_eq!(written.object_codec_id, None);
}

#[test]
fn big_endian_struct_fields_are_swapped_in_base64_fills() {
    // a: >i2 = 1, b: <i2 = 2, stored as 00 01 | 02 00.
    let dtype = json!([["a", ">i2"], ["b", "<i2"]]);
    let (data_type, _) = dtype_from_json(&dtype, None).unwrap();
    let DataType::Structured(fields) = &data_type else {
        panic!("not structured")
    };
    assert_eq!(fields[0].endian, Some(Endian::Big));
    assert_eq!(fields[1].endian, Some(Endian::Little));
    let fill = fill_value_from_v2_json(&json!("AAECAA=="), &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(fill, [1, 0, 2, 0], "in memory every field is little-endian");
    assert_eq!(fill_value_to_v2_json(&fill, &data_type), json!("AAECAA=="));
    // The field byte orders survive writing, even when the array's default is big.
    assert_eq!(dtype_to_json(&data_type, Endian::Big).unwrap().dtype, dtype);
}

#[test]
fn v2_05_fixed_bytes_fill() {
    let (data_type, endian) = dtype_from_json(&json!("|S3"), None).unwrap();
    assert_eq!(data_type, DataType::FixedBytes { len: 3 });
    assert_eq!(endian, None);
    let fill = fill_value_from_v2_json(&json!("YWI="), &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(fill, b"ab\0");
    // NumPy's bytes_ scalar drops the trailing NUL before base64.
    assert_eq!(fill_value_to_v2_json(&fill, &data_type), json!("YWI="));
    // zarr-python 2 reads a non-base64 fill such as 0 as text.
    let lenient = fill_value_from_v2_json(&json!(0), &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(lenient, b"0\0\0");
    let err = fill_value_from_v2_json(&json!("YWJjZA=="), &data_type).unwrap_err();
    assert!(
        err.to_string().contains("4 bytes do not fit in 3 bytes"),
        "{err}"
    );
}

#[test]
fn v2_06_fixed_utf32_fill_is_a_plain_string() {
    let (data_type, endian) = dtype_from_json(&json!("<U2"), None).unwrap();
    assert_eq!(data_type, DataType::FixedUtf32 { chars: 2 });
    assert_eq!(endian, Some(Endian::Little));
    let fill = fill_value_from_v2_json(&json!("z"), &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(hex(&fill), "7a00000000000000");
    assert_eq!(fill_value_to_v2_json(&fill, &data_type), json!("z"));
    let err = fill_value_from_v2_json(&json!("xyz"), &data_type).unwrap_err();
    assert!(
        err.to_string().contains("3 characters do not fit in 2"),
        "{err}"
    );
}

#[test]
fn v2_09_datetime_nat_fill() {
    let (data_type, endian) = dtype_from_json(&json!("<M8[ns]"), None).unwrap();
    assert_eq!(
        data_type,
        DataType::DateTime64 {
            unit: TimeUnit::Nanosecond,
            scale: 1
        }
    );
    assert_eq!(endian, Some(Endian::Little));
    let nat = json!(-9223372036854775808i64);
    let fill = fill_value_from_v2_json(&nat, &data_type).unwrap().unwrap();
    assert_eq!(hex(&fill), "0000000000000080");
    assert_eq!(fill_value_to_v2_json(&fill, &data_type), nat);
    assert_eq!(
        fill_value_from_v2_json(&json!("NaT"), &data_type)
            .unwrap()
            .unwrap(),
        fill
    );
    let (timedelta, _) = dtype_from_json(&json!("<m8[10s]"), None).unwrap();
    assert_eq!(
        timedelta,
        DataType::TimeDelta64 {
            unit: TimeUnit::Second,
            scale: 10
        }
    );
}

#[test]
fn v2_11_complex_fill() {
    let (data_type, _) = dtype_from_json(&json!("<c8"), None).unwrap();
    assert_eq!(data_type, DataType::Complex64);
    let written = json!([1.0, "Infinity"]);
    let fill = fill_value_from_v2_json(&written, &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(hex(&fill), "0000803f0000807f");
    let back = fill_value_to_v2_json(&fill, &data_type);
    assert_eq!(back, written);
    assert_eq!(
        to_python_json(&back, PyJsonStyle::PYTHON_DEFAULT),
        "[1.0, \"Infinity\"]"
    );
}

#[test]
fn float_fills_print_like_python() {
    let fill = fill_value_to_v2_json(&0.0f64.to_le_bytes(), &DataType::Float64);
    assert_eq!(to_python_json(&fill, PyJsonStyle::ZARR_PYTHON2), "0.0");
    // float32 values are widened exactly, as zarr-python's float(np.float32(x)) does.
    let fill = fill_value_to_v2_json(&0.1f32.to_le_bytes(), &DataType::Float32);
    assert_eq!(
        to_python_json(&fill, PyJsonStyle::ZARR_PYTHON2),
        "0.10000000149011612"
    );
    let fill = fill_value_to_v2_json(&1e20f64.to_le_bytes(), &DataType::Float64);
    assert_eq!(to_python_json(&fill, PyJsonStyle::ZARR_PYTHON2), "1e+20");
    let nan = fill_value_to_v2_json(
        &f32::from_bits(0x7fc0_0001).to_le_bytes(),
        &DataType::Float32,
    );
    assert_eq!(nan, json!("NaN"), "v2 has no NaN payload form");
    // NaN in v2 means the canonical quiet NaN (V2-03: 0000c07f).
    let bytes = fill_value_from_v2_json(&json!("NaN"), &DataType::Float32)
        .unwrap()
        .unwrap();
    assert_eq!(hex(&bytes), "0000c07f");
}

#[test]
fn integer_fills_cover_the_full_range() {
    let max = fill_value_from_v2_json(&json!(u64::MAX), &DataType::UInt64)
        .unwrap()
        .unwrap();
    assert_eq!(max, u64::MAX.to_le_bytes());
    assert_eq!(
        fill_value_to_v2_json(&max, &DataType::UInt64),
        json!(u64::MAX)
    );
    let min = fill_value_from_v2_json(&json!(i64::MIN), &DataType::Int64)
        .unwrap()
        .unwrap();
    assert_eq!(
        fill_value_to_v2_json(&min, &DataType::Int64),
        json!(i64::MIN)
    );
    let minus_one = fill_value_from_v2_json(&json!(-1), &DataType::Int16)
        .unwrap()
        .unwrap();
    assert_eq!(minus_one, [0xff, 0xff]);
    assert_eq!(
        fill_value_to_v2_json(&minus_one, &DataType::Int16),
        json!(-1)
    );
    // Leniently: numeric strings (n5-zarr) and integral floats.
    let from_string = fill_value_from_v2_json(&json!("300"), &DataType::UInt16)
        .unwrap()
        .unwrap();
    assert_eq!(from_string, 300u16.to_le_bytes());
    let from_float = fill_value_from_v2_json(&json!(7.0), &DataType::Int8)
        .unwrap()
        .unwrap();
    assert_eq!(from_float, [7]);
    let err = fill_value_from_v2_json(&json!(256), &DataType::UInt8).unwrap_err();
    assert!(
        err.to_string().contains("256 is out of range 0..=255"),
        "{err}"
    );
    let err = fill_value_from_v2_json(&json!(1.5), &DataType::Int32).unwrap_err();
    assert!(err.to_string().contains("expected an integer"), "{err}");
}

#[test]
fn object_dtype_needs_its_codec() {
    let dtype = json!("|O");
    assert_eq!(
        dtype_from_json(&dtype, Some("vlen-utf8")).unwrap(),
        (DataType::String, None)
    );
    assert_eq!(
        dtype_from_json(&dtype, Some("vlen-bytes")).unwrap(),
        (DataType::Bytes, None)
    );
    assert_eq!(
        dtype_from_json(&dtype, Some("json2")).unwrap().0,
        DataType::String
    );
    let missing = dtype_from_json(&dtype, None).unwrap_err().to_string();
    assert!(
        missing.contains("needs an object codec as filters[0]"),
        "{missing}"
    );
    assert!(missing.contains("vlen-utf8"), "{missing}");
    assert!(missing.contains("pickle"), "{missing}");
    assert_eq!(
        dtype_from_json(&dtype, Some("pickle")).unwrap(),
        (DataType::String, None)
    );
    let unknown = dtype_from_json(&dtype, Some("msgpack2"))
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("object codec \"msgpack2\" is not supported"),
        "{unknown}"
    );
    assert!(unknown.contains("\"pickle\""), "{unknown}");
    for id in ["vlen-utf8", "vlen-bytes", "json2", "pickle"] {
        assert!(is_object_codec_id(id), "{id}");
    }
    assert!(!is_object_codec_id("zstd"));

    let written = dtype_to_json(&DataType::String, Endian::Little).unwrap();
    assert_eq!(written.dtype, json!("|O"));
    assert_eq!(written.object_codec_id, Some("vlen-utf8"));
    assert_eq!(
        dtype_to_json(&DataType::Bytes, Endian::Big)
            .unwrap()
            .object_codec_id,
        Some("vlen-bytes")
    );
}

#[test]
fn vlen_utf8_fill_zero_means_empty_string() {
    // Pitfall 14: zarr-python 2 wrote 0 for object arrays, but "0" for dtype=str arrays.
    let zero = fill_value_from_v2_json(&json!(0), &DataType::String)
        .unwrap()
        .unwrap();
    assert!(zero.is_empty());
    let text = fill_value_from_v2_json(&json!("0"), &DataType::String)
        .unwrap()
        .unwrap();
    assert_eq!(text, b"0");
    assert_eq!(
        fill_value_to_v2_json("é".as_bytes(), &DataType::String),
        json!("é")
    );
    assert_eq!(
        fill_value_from_v2_json(&Value::Null, &DataType::String).unwrap(),
        None
    );
    let err = fill_value_from_v2_json(&json!(5), &DataType::String).unwrap_err();
    assert!(err.to_string().contains("expected a JSON string"), "{err}");
}

#[test]
fn single_byte_types_accept_any_order_char_and_write_a_bar() {
    for typestr in ["<u1", "|u1", "u1", ">u1"] {
        assert_eq!(parse_typestr(typestr).unwrap(), (DataType::UInt8, None));
    }
    assert_eq!(
        dtype_to_json(&DataType::UInt8, Endian::Little)
            .unwrap()
            .dtype,
        json!("|u1")
    );
    assert_eq!(
        dtype_to_json(&DataType::Int8, Endian::Big).unwrap().dtype,
        json!("|i1")
    );
    assert_eq!(
        dtype_to_json(&DataType::Bool, Endian::Big).unwrap().dtype,
        json!("|b1")
    );
    assert_eq!(
        dtype_to_json(&DataType::FixedBytes { len: 4 }, Endian::Big)
            .unwrap()
            .dtype,
        json!("|S4")
    );
    assert_eq!(
        dtype_to_json(&DataType::RawBits { bytes: 8 }, Endian::Big)
            .unwrap()
            .dtype,
        json!("|V8")
    );
    assert_eq!(
        parse_typestr(">f8").unwrap(),
        (DataType::Float64, Some(Endian::Big))
    );
}

fn every_type() -> Vec<DataType> {
    let mut types = common::numeric_types();
    types.extend([
        DataType::RawBits { bytes: 6 },
        DataType::FixedBytes { len: 5 },
        DataType::FixedUtf32 { chars: 3 },
        DataType::String,
        DataType::Bytes,
        DataType::DateTime64 {
            unit: TimeUnit::Millisecond,
            scale: 1,
        },
        DataType::DateTime64 {
            unit: TimeUnit::Generic,
            scale: 1,
        },
        DataType::TimeDelta64 {
            unit: TimeUnit::Second,
            scale: 10,
        },
        DataType::Structured(vec![
            field("x", DataType::Float64, &[], Some(Endian::Big)),
            field(
                "inner",
                DataType::Structured(vec![
                    field("p", DataType::UInt16, &[3], Some(Endian::Little)),
                    field("q", DataType::FixedBytes { len: 2 }, &[], None),
                ]),
                &[2],
                None,
            ),
        ]),
    ]);
    types
}

#[test]
fn every_type_round_trips_through_v2_dtype_json() {
    for endian in [Endian::Little, Endian::Big] {
        for data_type in every_type() {
            let written = dtype_to_json(&data_type, endian).unwrap();
            let (back, back_endian) =
                dtype_from_json(&written.dtype, written.object_codec_id).unwrap();
            assert_eq!(back, data_type, "{}", written.dtype);
            let single_byte = matches!(
                data_type,
                DataType::Bool
                    | DataType::Int8
                    | DataType::UInt8
                    | DataType::RawBits { .. }
                    | DataType::FixedBytes { .. }
                    | DataType::String
                    | DataType::Bytes
                    | DataType::Structured(_)
            );
            let expected = if single_byte { None } else { Some(endian) };
            assert_eq!(back_endian, expected, "{}", written.dtype);
        }
    }
    let typestrs: Vec<Value> = every_type()
        .iter()
        .take(17)
        .map(|t| dtype_to_json(t, Endian::Big).unwrap().dtype)
        .collect();
    assert_eq!(
        typestrs,
        json!([
            "|b1", "|i1", ">i2", ">i4", ">i8", "|u1", ">u2", ">u4", ">u8", ">f2", ">f4", ">f8",
            ">c8", ">c16", "|V6", "|S5", ">U3"
        ])
        .as_array()
        .unwrap()
        .clone()
    );
}

/// A non-trivial element of each type.
fn sample_fill(data_type: &DataType) -> Vec<u8> {
    match data_type {
        DataType::Bool => vec![1],
        DataType::Float16 => half::f16::from_f32(-1.5).to_le_bytes().to_vec(),
        DataType::Float32 => (-0.0f32).to_le_bytes().to_vec(),
        DataType::Float64 => f64::NEG_INFINITY.to_le_bytes().to_vec(),
        DataType::Complex64 => [2.5f32.to_le_bytes(), f32::NAN.to_le_bytes()].concat(),
        DataType::Complex128 => [1e300f64.to_le_bytes(), (-3.0f64).to_le_bytes()].concat(),
        DataType::DateTime64 { .. } => i64::MIN.to_le_bytes().to_vec(),
        DataType::FixedBytes { len } => {
            let mut v = b"a\0b".to_vec();
            v.resize(*len, 0);
            v
        }
        DataType::FixedUtf32 { .. } => [
            u32::from('h').to_le_bytes(),
            u32::from('é').to_le_bytes(),
            0u32.to_le_bytes(),
        ]
        .concat(),
        DataType::String => "héllo".as_bytes().to_vec(),
        DataType::Bytes => vec![0, 1, 255],
        other => (0..other.fixed_size().unwrap())
            .map(|i| (i as u8).wrapping_mul(37).wrapping_add(200))
            .collect(),
    }
}

#[test]
fn every_fill_round_trips_through_v2_json() {
    for data_type in every_type() {
        let bytes = sample_fill(&data_type);
        let json = fill_value_to_v2_json(&bytes, &data_type);
        // Through the Python-style text as well, as a metadata file would.
        let text = to_python_json(&json, PyJsonStyle::ZARR_PYTHON2);
        let reparsed = neurochunk_dtype::json::parse_lenient(text.as_bytes()).unwrap();
        let back = fill_value_from_v2_json(&reparsed, &data_type)
            .unwrap()
            .unwrap();
        assert_eq!(back, bytes, "{data_type}: {text}");
    }
}

#[test]
fn bad_dtypes_are_explained() {
    let cases: &[(Value, &str)] = &[
        (json!("<q9"), "unknown typestr"),
        (json!("<i3"), "\"3\" is not a valid size for kind 'i'"),
        (json!("<M8[xx]"), "expected a unit in brackets"),
        (json!("|S0"), "the length must be at least 1"),
        (json!(">f16"), "long double"),
        (json!("(2,)<f4"), "sub-array"),
        (json!([["", "<f4", [2]]]), "sub-array"),
        (json!([]), "at least one field"),
        (
            json!([["a", "<i2"], ["a", "<i4"]]),
            "field name \"a\" appears twice",
        ),
        (json!([["a"]]), "[name, type] or [name, type, shape]"),
        (json!([["a", "|O"]]), "object (`|O`) fields"),
        (json!(42), "expected a typestr string"),
    ];
    for (dtype, expected) in cases {
        let message = dtype_from_json(dtype, None).unwrap_err().to_string();
        assert!(message.contains(expected), "{dtype}: {message}");
        assert!(message.contains("Zarr v2"), "{dtype}: {message}");
    }
}

#[test]
fn custom_types_have_no_v2_dtype() {
    #[derive(Debug)]
    struct Opaque;
    impl neurochunk_dtype::CustomDataType for Opaque {
        fn name(&self) -> &str {
            "opaque"
        }
        fn size(&self) -> usize {
            2
        }
        fn components(&self) -> Vec<usize> {
            vec![2]
        }
        fn to_v3_json(&self) -> Value {
            json!("opaque")
        }
        fn fill_from_json(&self, _: &Value) -> Result<Vec<u8>, String> {
            Ok(vec![0, 0])
        }
        fn fill_to_json(&self, _: &[u8]) -> Value {
            json!(0)
        }
    }
    let custom = DataType::Custom(neurochunk_dtype::CustomType(std::sync::Arc::new(Opaque)));
    let message = dtype_to_json(&custom, Endian::Little)
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("custom data types have no Zarr v2 dtype"),
        "{message}"
    );
}

#[test]
fn structured_dtype_with_object_fields_needs_pickle() {
    // hdmf-zarr's compound dataset of references (e.g. an NWB TimeSeriesReferenceVectorData).
    let dtype = json!([["idx_start", "<i4"], ["count", "<i4"], ["timeseries", "|O"]]);
    assert_eq!(
        dtype_from_json(&dtype, Some("pickle")).unwrap(),
        (DataType::String, None)
    );
    // Nested structured fields with an object inside count too.
    let nested = json!([["a", "<i4"], ["b", [["c", "|O"], ["d", "<f8"]]]]);
    assert_eq!(
        dtype_from_json(&nested, Some("pickle")).unwrap().0,
        DataType::String
    );
    // Without the pickle codec the object field is refused, naming the codec it needs.
    for codec in [None, Some("vlen-utf8"), Some("json2")] {
        let message = dtype_from_json(&dtype, codec).unwrap_err().to_string();
        assert!(
            message.contains("need the \"pickle\" object codec"),
            "{codec:?}: {message}"
        );
    }
    // A structured dtype without object fields stays structured even with pickle.
    let plain = json!([["a", "<i4"], ["b", ">f8"]]);
    assert!(matches!(
        dtype_from_json(&plain, Some("pickle")).unwrap().0,
        DataType::Structured(_)
    ));
    // Other problems in the field list are still reported.
    let twice = json!([["a", "|O"], ["a", "<i4"]]);
    let message = dtype_from_json(&twice, Some("pickle"))
        .unwrap_err()
        .to_string();
    assert!(message.contains("appears twice"), "{message}");
}

#[test]
fn pickle_fill_values_are_accepted() {
    // hdmf-zarr writes 0 for |O arrays and a base64 pickle for structured ones with |O fields.
    let (data_type, _) = dtype_from_json(&json!("|O"), Some("pickle")).unwrap();
    assert_eq!(
        fill_value_from_v2_json(&json!(0), &data_type).unwrap(),
        Some(Vec::new())
    );
    assert_eq!(
        fill_value_from_v2_json(&Value::Null, &data_type).unwrap(),
        None
    );
    let (data_type, _) = dtype_from_json(
        &json!([["idx_start", "<i4"], ["timeseries", "|O"]]),
        Some("pickle"),
    )
    .unwrap();
    // Kept as its text, so that writing the metadata back gives the same fill_value.
    let fill = fill_value_from_v2_json(&json!("gAVLAC4="), &data_type)
        .unwrap()
        .unwrap();
    assert_eq!(fill, b"gAVLAC4=");
    assert_eq!(fill_value_to_v2_json(&fill, &data_type), json!("gAVLAC4="));
}
