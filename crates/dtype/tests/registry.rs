//! Name resolution, custom data types, and their round trip through Zarr v3 metadata.

use std::sync::Arc;

use neurochunk_dtype::v3::{fill_value_from_v3_json, fill_value_to_v3_json};
use neurochunk_dtype::{
    register_default, resolve, CustomDataType, DataType, DataTypeRegistry, DtypeError, Endian,
    TimeUnit,
};
use serde_json::{json, Value};

/// Three float32 values, e.g. a 3-D position.
#[derive(Debug)]
struct Vec3f;

impl CustomDataType for Vec3f {
    fn name(&self) -> &str {
        "vec3f"
    }
    fn size(&self) -> usize {
        12
    }
    fn components(&self) -> Vec<usize> {
        vec![4, 4, 4]
    }
    fn to_v3_json(&self) -> Value {
        json!({"name": "vec3f", "configuration": {"component": "float32"}})
    }
    fn fill_from_json(&self, json: &Value) -> Result<Vec<u8>, String> {
        let items = json
            .as_array()
            .filter(|a| a.len() == 3)
            .ok_or("expected [x, y, z]")?;
        let mut out = Vec::new();
        for item in items {
            let x = item.as_f64().ok_or("expected numbers")? as f32;
            out.extend(x.to_le_bytes());
        }
        Ok(out)
    }
    fn fill_to_json(&self, bytes: &[u8]) -> Value {
        bytes
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes([c[0], c[1], c[2], c[3]])))
            .collect()
    }
}

/// Brain floating point: the top half of a float32.
#[derive(Debug)]
struct BFloat16;

impl CustomDataType for BFloat16 {
    fn name(&self) -> &str {
        "bfloat16"
    }
    fn size(&self) -> usize {
        2
    }
    fn components(&self) -> Vec<usize> {
        vec![2]
    }
    fn to_v3_json(&self) -> Value {
        json!("bfloat16")
    }
    fn fill_from_json(&self, json: &Value) -> Result<Vec<u8>, String> {
        let x = json.as_f64().ok_or("expected a number")?;
        Ok(half::bf16::from_f64(x).to_le_bytes().to_vec())
    }
    fn fill_to_json(&self, bytes: &[u8]) -> Value {
        let bits = u16::from_le_bytes([bytes[0], bytes[1]]);
        json!(half::bf16::from_bits(bits).to_f64())
    }
}

#[test]
fn builtin_names_resolve_in_every_spelling() {
    let registry = DataTypeRegistry::new();
    let ns = DataType::DateTime64 {
        unit: TimeUnit::Nanosecond,
        scale: 1,
    };
    let cases: Vec<(&str, DataType)> = vec![
        ("uint16", DataType::UInt16),
        ("UInt16", DataType::UInt16),
        ("<u2", DataType::UInt16),
        ("u2", DataType::UInt16),
        ("u16", DataType::UInt16),
        (">f8", DataType::Float64),
        ("float", DataType::Float64),
        ("Float32", DataType::Float32),
        ("f32", DataType::Float32),
        ("f16", DataType::Float16),
        ("half", DataType::Float16),
        ("bool_", DataType::Bool),
        ("bool", DataType::Bool),
        ("|b1", DataType::Bool),
        ("i64", DataType::Int64),
        ("int", DataType::Int64),
        ("S12", DataType::FixedBytes { len: 12 }),
        ("bytes96", DataType::FixedBytes { len: 12 }),
        ("U5", DataType::FixedUtf32 { chars: 5 }),
        ("U8", DataType::FixedUtf32 { chars: 8 }),
        ("V8", DataType::RawBits { bytes: 8 }),
        ("r64", DataType::RawBits { bytes: 8 }),
        ("M8[ns]", ns.clone()),
        ("datetime64[ns]", ns),
        (
            "datetime64[M]",
            DataType::DateTime64 {
                unit: TimeUnit::Month,
                scale: 1,
            },
        ),
        (
            "Datetime64[m]",
            DataType::DateTime64 {
                unit: TimeUnit::Minute,
                scale: 1,
            },
        ),
        (
            "m8[10s]",
            DataType::TimeDelta64 {
                unit: TimeUnit::Second,
                scale: 10,
            },
        ),
        ("str", DataType::String),
        ("string", DataType::String),
        ("String", DataType::String),
        ("&str", DataType::String),
        ("bytes", DataType::Bytes),
        ("Vec<u8>", DataType::Bytes),
        ("complex<f64>", DataType::Complex128),
        ("  uint8 ", DataType::UInt8),
    ];
    for (name, expected) in cases {
        assert_eq!(registry.resolve(name).unwrap(), expected, "{name:?}");
    }
}

#[test]
fn display_and_numpy_names_resolve_back() {
    let registry = DataTypeRegistry::new();
    let types = [
        DataType::Bool,
        DataType::Int8,
        DataType::UInt64,
        DataType::Float16,
        DataType::Complex64,
        DataType::RawBits { bytes: 3 },
        DataType::FixedBytes { len: 7 },
        DataType::FixedUtf32 { chars: 2 },
        DataType::String,
        DataType::Bytes,
        DataType::DateTime64 {
            unit: TimeUnit::Microsecond,
            scale: 25,
        },
        DataType::TimeDelta64 {
            unit: TimeUnit::Generic,
            scale: 1,
        },
    ];
    for data_type in types {
        assert_eq!(registry.resolve(&data_type.to_string()).unwrap(), data_type);
        if !data_type.is_variable_length() {
            assert_eq!(
                registry.resolve(&data_type.numpy_name()).unwrap(),
                data_type
            );
        }
    }
    assert_eq!(DataType::FixedUtf32 { chars: 3 }.numpy_name(), "str96");
    assert_eq!(DataType::String.numpy_name(), "object");
}

#[test]
fn ambiguous_and_unknown_names_are_errors_listing_candidates() {
    let registry = DataTypeRegistry::new();
    // NumPy's u8 is 8 bytes, Rust's u8 one byte: never guess.
    let err = registry.resolve("u8").unwrap_err();
    let DtypeError::Ambiguous { candidates, .. } = &err else {
        panic!("expected an ambiguity, got {err}");
    };
    assert_eq!(
        candidates,
        &vec![
            "uint64 (as NumPy typestr)".to_string(),
            "uint8 (as Rust type)".to_string()
        ]
    );
    assert!(
        err.to_string()
            .contains("\"u8\" is ambiguous; it matches 2"),
        "{err}"
    );
    assert!(registry.resolve("i8").is_err());
    // With a byte-order character it is unambiguously NumPy's.
    assert_eq!(registry.resolve("<u8").unwrap(), DataType::UInt64);

    let err = registry.resolve("uint7").unwrap_err().to_string();
    assert!(err.contains("unknown data type name \"uint7\""), "{err}");
    assert!(err.contains("a NumPy typestr (<u2"), "{err}");
}

#[test]
fn custom_types_resolve_and_round_trip_through_v3_json() {
    let mut registry = DataTypeRegistry::new();
    let vec3 = registry
        .register(Arc::new(Vec3f), &["Vec3", "position"])
        .unwrap();
    let vec3 = DataType::Custom(vec3);
    assert_eq!(registry.resolve("vec3f").unwrap(), vec3);
    assert_eq!(registry.resolve("VEC3").unwrap(), vec3);
    assert_eq!(registry.resolve("position").unwrap(), vec3);
    assert_eq!(vec3.fixed_size(), Some(12));
    assert_eq!(vec3.to_string(), "vec3f");

    let json = vec3.to_v3_json().unwrap();
    assert_eq!(DataType::from_v3_json_with(&json, &registry).unwrap(), vec3);
    assert_eq!(
        DataType::from_v3_json_with(&json!("vec3f"), &registry).unwrap(),
        vec3
    );
    // Without the registration the same JSON is unknown.
    let err = DataType::from_v3_json_with(&json, &DataTypeRegistry::new()).unwrap_err();
    assert!(err.to_string().contains("(none are registered)"), "{err}");

    let fill = fill_value_from_v3_json(&json!([1.0, -2.5, 0.5]), &vec3).unwrap();
    assert_eq!(fill.len(), 12);
    assert_eq!(&fill[4..8], &(-2.5f32).to_le_bytes());
    assert_eq!(fill_value_to_v3_json(&fill, &vec3), json!([1.0, -2.5, 0.5]));
    let err = fill_value_from_v3_json(&json!([1.0]), &vec3)
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected [x, y, z]"), "{err}");
    assert!(err.contains("for data type vec3f"), "{err}");

    // A custom type inside a struct, and its byte swapping by components.
    let record = DataType::Structured(vec![
        neurochunk_dtype::StructField {
            name: "id".into(),
            data_type: DataType::UInt16,
            shape: vec![],
            endian: None,
        },
        neurochunk_dtype::StructField {
            name: "pos".into(),
            data_type: vec3.clone(),
            shape: vec![],
            endian: None,
        },
    ]);
    let json = record.to_v3_json().unwrap();
    assert_eq!(
        json["configuration"]["fields"][1]["data_type"],
        vec3.to_v3_json().unwrap()
    );
    assert_eq!(
        DataType::from_v3_json_with(&json, &registry).unwrap(),
        record
    );
    let mut element = fill.clone();
    vec3.swap_endian_in_place(&mut element, Endian::Big);
    assert_eq!(&element[4..8], &(-2.5f32).to_be_bytes());

    let again = registry.register(Arc::new(Vec3f), &[]).unwrap_err();
    assert!(
        matches!(again, DtypeError::AlreadyRegistered { .. }),
        "{again}"
    );
}

#[test]
fn colliding_registrations_are_ambiguous() {
    let mut registry = DataTypeRegistry::new();
    let bf16 = DataType::Custom(registry.register(Arc::new(BFloat16), &["f16"]).unwrap());
    let err = registry.resolve("f16").unwrap_err().to_string();
    assert!(err.contains("float16 (as Rust type)"), "{err}");
    assert!(
        err.contains("bfloat16 (as registered custom type)"),
        "{err}"
    );
    assert_eq!(registry.resolve("BFloat16").unwrap(), bf16);

    registry.register_alias(
        "spike_time",
        DataType::DateTime64 {
            unit: TimeUnit::Nanosecond,
            scale: 1,
        },
    );
    assert_eq!(
        registry.resolve("spike_time").unwrap(),
        registry.resolve("M8[ns]").unwrap()
    );
    // An alias naming the type it would resolve to anyway is not ambiguous.
    registry.register_alias("uint16", DataType::UInt16);
    assert_eq!(registry.resolve("uint16").unwrap(), DataType::UInt16);
    registry.register_alias("uint16", DataType::Int16);
    let err = registry.resolve("uint16").unwrap_err().to_string();
    assert!(err.contains("int16 (as registered alias)"), "{err}");

    #[derive(Debug)]
    struct FakeUint8;
    impl CustomDataType for FakeUint8 {
        fn name(&self) -> &str {
            "uint8"
        }
        fn size(&self) -> usize {
            1
        }
        fn components(&self) -> Vec<usize> {
            vec![1]
        }
        fn to_v3_json(&self) -> Value {
            json!("uint8")
        }
        fn fill_from_json(&self, _: &Value) -> Result<Vec<u8>, String> {
            Ok(vec![0])
        }
        fn fill_to_json(&self, _: &[u8]) -> Value {
            json!(0)
        }
    }
    registry.register(Arc::new(FakeUint8), &[]).unwrap();
    let err = DataType::from_v3_json_with(&json!("uint8"), &registry)
        .unwrap_err()
        .to_string();
    assert!(err.contains("built-in uint8; custom type uint8"), "{err}");
}

#[test]
fn the_default_registry_serves_from_v3_json() {
    // The only test that touches the process-wide registry.
    assert!(DataType::from_v3_json(&json!("bfloat16")).is_err());
    let handle = register_default(Arc::new(BFloat16), &["bf16"]).unwrap();
    let bf16 = DataType::Custom(handle);
    assert_eq!(DataType::from_v3_json(&json!("bfloat16")).unwrap(), bf16);
    assert_eq!(resolve("bf16").unwrap(), bf16);
    let fill = fill_value_from_v3_json(&json!(1.5), &bf16).unwrap();
    assert_eq!(fill, 0x3fc0u16.to_le_bytes());
    assert_eq!(fill_value_to_v3_json(&fill, &bf16), json!(1.5));
}
