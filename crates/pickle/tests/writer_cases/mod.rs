//! The pickle writer's cases, its golden outputs and small constructors, shared by the tests of
//! `neurochunk-pickle` and by `neurochunk-codec`'s `pickle_cases` (its tests and the
//! `pickle_writer_cases` example, whose output the interop suite loads with NumPy:
//! `tests/interop/*/test_pickle_writer_numpy_*.py`).

#![allow(dead_code)]

use neurochunk_dtype::json::non_finite_value;
use neurochunk_pickle::{encode_object_array, RecordField, RecordKind};
use serde_json::{json, Value};

pub fn zref(path: &str, object_id: Value) -> Value {
    json!({"source": ".", "path": path, "object_id": object_id, "source_object_id": "root-0"})
}

pub fn nan() -> Value {
    non_finite_value(f64::NAN)
}

pub fn neg_inf() -> Value {
    non_finite_value(f64::NEG_INFINITY)
}

/// The fields of a record dtype: each a name and a NumPy typestr, `"|O"` for an object field.
pub fn record_dtype(spec: &[(&str, &str)]) -> Vec<RecordField> {
    spec.iter()
        .map(|&(name, typestr)| RecordField {
            name: name.into(),
            kind: match typestr {
                "|O" => RecordKind::Object,
                numeric => RecordKind::Numeric(numeric.into()),
            },
        })
        .collect()
}

/// hdmf-zarr's compound of a `TimeIntervals` `timeseries` column.
pub fn record_fields() -> Vec<RecordField> {
    record_dtype(&[("idx_start", "<i4"), ("count", "<i4"), ("timeseries", "|O")])
}

/// Numeric fields of every kind and byte order the writer packs.
pub fn numeric_fields() -> Vec<RecordField> {
    record_dtype(&[
        ("a", "<i2"),
        ("b", ">f8"),
        ("c", "|b1"),
        ("d", "<u8"),
        ("e", "f4"),
    ])
}

/// A writer case: name, shape, items and the structured dtype, if any.
pub type WriterCase = (
    &'static str,
    Vec<usize>,
    Vec<Value>,
    Option<Vec<RecordField>>,
);

/// The writer cases checked against NumPy (see `write_verification_files`).
pub fn writer_cases() -> Vec<WriterCase> {
    vec![
        (
            "objects",
            vec![5],
            vec![
                json!("a"),
                json!({"k": [1, 2.5, null, true], "é": "ü🦀"}),
                json!(u64::MAX),
                json!(i64::MIN),
                nan(),
            ],
            None,
        ),
        (
            "grid",
            vec![2, 2],
            vec![json!("r0c0"), json!("r0c1"), json!("r1c0"), json!(70000)],
            None,
        ),
        ("zero_d", vec![], vec![json!("x")], None),
        ("empty", vec![0], vec![], None),
        (
            "record",
            vec![2],
            vec![
                json!({"idx_start": 0, "count": 5, "timeseries": zref("/acquisition/ts1", json!("oid-1"))}),
                json!([5, 3, zref("/acquisition/ts2", Value::Null)]),
            ],
            Some(record_fields()),
        ),
        (
            "numeric_record",
            vec![2],
            vec![
                json!({"a": -2, "b": 1.5, "c": true, "d": u64::MAX, "e": 0.25}),
                json!([7, neg_inf(), false, 0, "NaN"]),
            ],
            Some(numeric_fields()),
        ),
    ]
}

pub fn golden_cases() -> Vec<(&'static str, Vec<u8>)> {
    let objects = encode_object_array(&[2], &[json!("a"), json!({"k": 1})], None).unwrap();
    let record = encode_object_array(
        &[1],
        &[json!([1, 2, zref("/x", json!("o"))])],
        Some(&record_fields()),
    )
    .unwrap();
    vec![("golden_objects", objects), ("golden_record", record)]
}
