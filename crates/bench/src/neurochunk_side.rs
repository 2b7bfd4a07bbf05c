//! The neurochunk implementation of each row: metadata built from the row, then the
//! whole-array write (`Array::write_all`) and read (`Array::read_all`) entry points.

use std::path::Path;
use std::sync::Arc;

use neurochunk_array::{
    Array, ArrayBuilder, ArrayBytes, ArrayMetadata, Codec, DataType, Durability, FsStore, Store,
    ZarrFormat,
};
use neurochunk_codec::ZfpMode;

use crate::error::{BenchError, BenchResult, Context};
use crate::rows::{Compression, Element, Format, Layout, Library, Row, Serializer};

/// neurochunk, through its public array API.
pub struct Neurochunk;

/// The array metadata neurochunk writes for `row`, described with the array builder.
pub fn metadata(row: &Row, shape: &[u64]) -> BenchResult<ArrayMetadata> {
    let mut codecs = match row.serializer {
        Serializer::Bytes => Vec::new(),
        Serializer::Pcodec { level } => vec![Codec::Pcodec { level }],
        Serializer::ZfpReversible => vec![Codec::Zfpy {
            mode: ZfpMode::Reversible,
        }],
        Serializer::ZfpAccuracy { tolerance } => vec![Codec::Zfpy {
            mode: ZfpMode::FixedAccuracy(tolerance),
        }],
    };
    match row.compression {
        Compression::None => {}
        Compression::Zstd(level) => codecs.push(Codec::zstd(level)),
    }
    let format = match row.format {
        Format::V2 => ZarrFormat::V2,
        Format::V3 => ZarrFormat::V3,
    };
    let data_type = match row.element {
        Element::UInt16 => DataType::UInt16,
        Element::Float32 => DataType::Float32,
    };
    let mut builder = ArrayBuilder::new(shape.to_vec(), data_type)
        .format(format)
        .chunks(vec![row.codec_chunk(); shape.len()])
        .codecs(codecs);
    if let Layout::Sharded { shard, .. } = row.layout {
        builder = builder.shards(vec![shard; shape.len()]);
    }
    if format == ZarrFormat::V2 {
        // zarrs writes Zarr v2 chunk keys as `0.1.2`.
        builder = builder.chunk_key_separator('.');
    }
    builder.metadata("").context("describing the array")
}

impl Library for Neurochunk {
    fn name(&self) -> &'static str {
        "neurochunk"
    }

    fn write(
        &self,
        row: &Row,
        dir: &Path,
        shape: &[u64],
        data: Vec<u8>,
        durable: bool,
    ) -> BenchResult<()> {
        let meta = metadata(row, shape)?;
        let durability = if durable {
            Durability::Fsync
        } else {
            Durability::Buffered
        };
        let store: Arc<dyn Store> = Arc::new(FsStore::new(dir).with_durability(durability));
        let array = Array::create(store, "", meta)
            .context(format!("creating an array in {}", dir.display()))?;
        array
            .write_all(&ArrayBytes::Fixed(data))
            .context(format!("writing the array in {}", dir.display()))
    }

    fn syncs_writes(&self) -> bool {
        // `FsStore` writes a temporary file and renames it into place, by default without
        // `fsync`.
        false
    }

    fn syncs_on_request(&self) -> bool {
        // `Durability::Fsync`: each file before its rename, its directory after.
        true
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
                "neurochunk returned variable-length data for a numeric array",
            )),
        }
    }
}
