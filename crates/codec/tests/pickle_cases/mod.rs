//! Test support shared by `pickle.rs` and the `pickle_writer_cases` example: the pickle
//! writer's cases, golden outputs and small constructors (from `neurochunk-pickle`'s tests),
//! and the codec chain helpers. The example writes every case to a directory, where the
//! interop suite loads them with NumPy (`tests/interop/*/test_pickle_writer_numpy_*.py`).

#![allow(dead_code)]

#[path = "../../../pickle/tests/writer_cases/mod.rs"]
mod writer_cases;

pub use writer_cases::*;

use neurochunk_codec::{ArrayBytes, ChunkRepr, CodecChain};
use neurochunk_dtype::DataType;
use neurochunk_pickle::encode_object_array;
use serde_json::json;

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
