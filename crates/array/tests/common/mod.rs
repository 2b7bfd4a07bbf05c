//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use neurochunk_array::{
    ArrayBytes, ArrayMetadata, ChunkKeyEncoding, CodecChain, DataType, MemoryStore, Store,
    ZarrFormat,
};
use neurochunk_codec::{AnyCodec, BytesCodec, ChunkRepr, Codec};
use neurochunk_dtype::Endian;
use serde_json::Map;

pub fn u16s(values: &[u16]) -> ArrayBytes {
    ArrayBytes::Fixed(values.iter().flat_map(|v| v.to_le_bytes()).collect())
}

pub fn as_u16(data: &ArrayBytes) -> Vec<u16> {
    match data {
        ArrayBytes::Fixed(b) => b
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect(),
        ArrayBytes::Variable { .. } => panic!("expected fixed-size data"),
    }
}

pub fn meta(
    format: ZarrFormat,
    shape: &[u64],
    chunks: &[usize],
    compressor: &[Codec],
) -> ArrayMetadata {
    ArrayMetadata {
        format,
        shape: shape.to_vec(),
        chunk_shape: chunks.to_vec(),
        data_type: DataType::UInt16,
        fill_value: Some(vec![0, 0]),
        key_encoding: match format {
            ZarrFormat::V2 => ChunkKeyEncoding::V2_DOT,
            ZarrFormat::V3 => ChunkKeyEncoding::V3_DEFAULT,
            ZarrFormat::N5 => neurochunk_array::n5::N5_KEY_ENCODING,
            ZarrFormat::Precomputed => ChunkKeyEncoding::V2_DOT,
        },
        codecs: Arc::new(CodecChain::new(
            Vec::new(),
            Arc::new(BytesCodec::new(Some(Endian::Little))),
            compressor
                .iter()
                .map(|c| match c.build(&repr_u16(chunks)).unwrap() {
                    AnyCodec::BytesToBytes(c) => c,
                    _ => panic!("{c} is not a compression"),
                })
                .collect(),
        )),
        attributes: Map::new(),
        dimension_names: None,
    }
}

/// The representation of a uint16 chunk of `shape`.
fn repr_u16(shape: &[usize]) -> ChunkRepr {
    ChunkRepr {
        shape: shape.to_vec(),
        data_type: DataType::UInt16,
        fill_value: vec![0, 0],
    }
}

pub fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

/// `meta` for variable-length UTF-8 strings (`vlen-utf8`, empty fill value).
pub fn string_meta(format: ZarrFormat, shape: &[u64], chunks: &[usize]) -> ArrayMetadata {
    ArrayMetadata {
        data_type: DataType::String,
        fill_value: Some(Vec::new()),
        codecs: Arc::new(CodecChain::new(
            Vec::new(),
            Arc::new(neurochunk_codec::VlenUtf8Codec::new()),
            Vec::new(),
        )),
        ..meta(format, shape, chunks, &[])
    }
}
