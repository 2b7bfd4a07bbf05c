//! The neurochunk implementation of each row: metadata built from the row, then the
//! whole-array write (`Array::write_all`) and read (`Array::read_all`) entry points.

use std::path::Path;
use std::sync::Arc;

use neurochunk_array::convert::{derive_metadata, ConvertOptions};
use neurochunk_array::{
    Array, ArrayBytes, ArrayMetadata, ChunkKeyEncoding, CodecChain, DataType, FsStore, Store,
    ZarrFormat,
};
use neurochunk_codec::{parse_compressor_spec, BytesCodec};
use neurochunk_dtype::Endian;

use crate::error::{BenchError, BenchResult, Context};
use crate::rows::{Compression, Format, Layout, Library, Row};

/// neurochunk, through its public array API.
pub struct Neurochunk;

/// The array metadata neurochunk writes for `row`.
pub fn metadata(row: &Row, shape: &[u64]) -> BenchResult<ArrayMetadata> {
    let spec = match row.compression {
        Compression::None => "none".to_string(),
        Compression::Zstd(level) => format!("zstd:{level}"),
    };
    let (format, key_encoding) = match row.format {
        Format::V2 => (ZarrFormat::V2, ChunkKeyEncoding::V2_DOT),
        Format::V3 => (ZarrFormat::V3, ChunkKeyEncoding::V3_DEFAULT),
    };
    let element_size = 2;
    let compressors =
        parse_compressor_spec(&spec, element_size).context(format!("codec spec {spec:?}"))?;
    let chunk_shape = vec![row.codec_chunk(); shape.len()];
    let plain = ArrayMetadata {
        format,
        shape: shape.to_vec(),
        chunk_shape: chunk_shape.clone(),
        data_type: DataType::UInt16,
        fill_value: Some(vec![0, 0]),
        key_encoding,
        codecs: Arc::new(CodecChain::new(
            Vec::new(),
            Arc::new(BytesCodec::new(Some(Endian::Little))),
            compressors,
        )),
        attributes: serde_json::Map::new(),
        dimension_names: None,
    };
    match row.layout {
        Layout::Chunked { .. } => Ok(plain),
        Layout::Sharded { shard, .. } => {
            let options = ConvertOptions {
                chunks: Some(chunk_shape),
                shards: Some(vec![shard; shape.len()]),
                ..Default::default()
            };
            derive_metadata(&plain, &options, "").context("deriving the sharded metadata")
        }
    }
}

impl Library for Neurochunk {
    fn name(&self) -> &'static str {
        "neurochunk"
    }

    fn write(&self, row: &Row, dir: &Path, shape: &[u64], data: Vec<u8>) -> BenchResult<()> {
        let meta = metadata(row, shape)?;
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
        let array = Array::create(store, "", meta)
            .context(format!("creating an array in {}", dir.display()))?;
        array
            .write_all(&ArrayBytes::Fixed(data))
            .context(format!("writing the array in {}", dir.display()))
    }

    fn syncs_writes(&self) -> bool {
        // `FsStore` writes a temporary file and renames it into place, without `fsync`.
        false
    }

    fn read(&self, _row: &Row, dir: &Path) -> BenchResult<Vec<u8>> {
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir));
        let array =
            Array::open(store, "").context(format!("opening the array in {}", dir.display()))?;
        let (_shape, data) = array
            .read_all()
            .context(format!("reading the array in {}", dir.display()))?;
        match data {
            ArrayBytes::Fixed(bytes) => Ok(bytes),
            ArrayBytes::Variable { .. } => Err(BenchError::msg(
                "neurochunk returned variable-length data for uint16",
            )),
        }
    }
}
