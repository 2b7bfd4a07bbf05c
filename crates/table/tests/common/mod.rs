//! Shared builders for the integration tests (digest conformance fixtures).
#![allow(dead_code)]

use arrow::array::{
    Array, ArrayRef, DictionaryArray, Float64Array, RecordBatch, StringArray, UInt16Array,
    UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt16Type};
use std::collections::HashMap;
use std::sync::Arc;

pub const CTX: &str = "urn:uuid:00000000-0000-4000-8000-000000000001";

pub fn md(extra: &[(&str, Option<&str>)]) -> HashMap<String, String> {
    let mut m: HashMap<String, String> = [
        ("version", "0.2.1"),
        ("context", CTX),
        ("unit", "nanometer"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        match v {
            Some(v) => {
                m.insert(k.to_string(), v.to_string());
            }
            None => {
                m.remove(*k);
            }
        }
    }
    m
}

pub struct Skel {
    pub ids: Vec<u64>,
    pub frags: Vec<u64>,
    pub parents: Vec<Option<u64>>,
}

impl Default for Skel {
    fn default() -> Self {
        Skel {
            ids: vec![1, 2, 3, 4, 10, 11],
            frags: vec![7, 7, 7, 7, 9, 9],
            parents: vec![None, Some(1), Some(2), Some(2), None, Some(10)],
        }
    }
}

impl Skel {
    pub fn batch(&self, metadata: HashMap<String, String>) -> RecordBatch {
        let n = self.ids.len();
        let schema = Arc::new(Schema::new_with_metadata(
            vec![
                Field::new("sample_id", DataType::UInt64, false),
                Field::new("fragment_id", DataType::UInt64, false),
                Field::new("x", DataType::Float64, false),
                Field::new("y", DataType::Float64, false),
                Field::new("z", DataType::Float64, false),
                Field::new("parent_id", DataType::UInt64, true),
            ],
            metadata,
        ));
        let xs: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(self.ids.clone())),
            Arc::new(UInt64Array::from(self.frags.clone())),
            Arc::new(Float64Array::from(xs.clone())),
            Arc::new(Float64Array::from(xs.clone())),
            Arc::new(Float64Array::from(xs)),
            Arc::new(UInt64Array::from(self.parents.clone())),
        ];
        RecordBatch::try_new(schema, cols).unwrap()
    }
}

pub fn with_column(b: &RecordBatch, field: Field, col: ArrayRef) -> RecordBatch {
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    let mut cols = b.columns().to_vec();
    fields.push(field);
    cols.push(col);
    let schema: SchemaRef = Arc::new(Schema::new_with_metadata(
        fields,
        b.schema().metadata().clone(),
    ));
    RecordBatch::try_new(schema, cols).unwrap()
}

pub fn connections(
    src: &[u64],
    tgt: &[u64],
    types: &[&str],
    metadata: HashMap<String, String>,
) -> RecordBatch {
    let n = src.len();
    let dict = DictionaryArray::<UInt16Type>::try_new(
        UInt16Array::from((0..n as u16).collect::<Vec<_>>()),
        Arc::new(StringArray::from(types.to_vec())),
    )
    .unwrap();
    let schema = Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("connection_id", DataType::UInt64, false),
            Field::new("src_sample_id", DataType::UInt64, false),
            Field::new("tgt_sample_id", DataType::UInt64, false),
            Field::new("type", dict.data_type().clone(), false),
        ],
        metadata,
    ));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(UInt64Array::from((1..=n as u64).collect::<Vec<_>>())),
            Arc::new(UInt64Array::from(src.to_vec())),
            Arc::new(UInt64Array::from(tgt.to_vec())),
            Arc::new(dict),
        ],
    )
    .unwrap()
}

/// The files below `root` (recursively), as paths relative to it.
pub fn walk(root: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    out
}
