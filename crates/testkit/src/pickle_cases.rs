//! The pickle writer's cases, its golden outputs and small constructors, shared by the tests of
//! `neurochunk-pickle` and of `neurochunk-codec` (its `pickle` tests and the
//! `pickle_writer_cases` example, whose output the interop suite loads with NumPy:
//! `tests/interop/*/test_pickle_writer_numpy_*.py`), with the codec chain helpers and
//! [`write_all`], which writes every case to a directory.

use neurochunk_codec::{ArrayBytes, ChunkRepr, CodecChain};
use neurochunk_dtype::json::non_finite_value;
use neurochunk_dtype::DataType;
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

pub fn repr(shape: &[usize]) -> ChunkRepr {
    ChunkRepr {
        shape: shape.to_vec(),
        data_type: DataType::String,
        fill_value: Vec::new(),
    }
}

pub fn pickle_chain(shape: &[usize]) -> CodecChain {
    CodecChain::from_v2(
        false,
        Some(&[json!({"id": "pickle", "protocol": 5})]),
        None,
        None,
        &repr(shape),
    )
    .unwrap()
}

pub fn variable(texts: &[&str]) -> ArrayBytes {
    let mut data = Vec::new();
    let mut offsets = vec![0];
    for t in texts {
        data.extend_from_slice(t.as_bytes());
        offsets.push(data.len());
    }
    ArrayBytes::Variable { data, offsets }
}

/// Write every writer case, the golden outputs and the codec's own output (2500 texts, three
/// `APPENDS` batches) to `dir/<name>.pickle`.
pub fn write_all(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, shape, items, record) in writer_cases() {
        let bytes = encode_object_array(&shape, &items, record.as_deref())
            .map_err(|e| std::io::Error::other(format!("{name}: {e}")))?;
        std::fs::write(dir.join(format!("{name}.pickle")), bytes)?;
    }
    for (name, bytes) in golden_cases() {
        std::fs::write(dir.join(format!("{name}.pickle")), bytes)?;
    }
    let texts: Vec<String> = (0..2500).map(|i| format!("t{i}é")).collect();
    let data = variable(&texts.iter().map(String::as_str).collect::<Vec<_>>());
    let bytes = pickle_chain(&[2500])
        .encode(data, &repr(&[2500]))
        .map_err(|e| std::io::Error::other(format!("codec_texts: {e}")))?;
    std::fs::write(dir.join("codec_texts.pickle"), bytes)
}
