//! Side-by-side array benchmark: neurochunk vs the `zarrs` crate, one run, ratios per row.
//!
//! Run with `cargo bench -p neurochunk-bench --bench arrays -- [options]` (`--help` lists
//! them). This target holds only the zarrs side of each row, so that zarrs stays a
//! dev-dependency; the harness, the data and the neurochunk side live in the library. Extra
//! sets: `--tables`, `--nwb` (whose child processes are dispatched first thing in `main`) and
//! `--codecs` (pcodec and zfp rows, whose zarrs side is this file's, needing zarrs' `pcodec` and
//! `zfp` features).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use neurochunk_bench::harness::{self, ExtraSet};
use neurochunk_bench::neurochunk_side::Neurochunk;
use neurochunk_bench::{
    BenchError, BenchResult, Compression, Context, Element, Format, Layout, Library, Row,
    Serializer,
};
use serde_json::json;
use zarrs::array::codec::ZstdCodec;
use zarrs::array::{
    data_type, Array, ArrayBuilder, ArrayBytes, ArrayMetadata, ArrayMetadataV2, ArrayMetadataV3,
    ArraySubset, BytesToBytesCodecTraits,
};
use zarrs::filesystem::FilesystemStore;

/// zarrs, through its fastest whole-array entry points (`store_array_subset` /
/// `retrieve_array_subset` over the full extent, which fan out over chunks with rayon).
struct Zarrs;

fn store(dir: &Path) -> BenchResult<Arc<FilesystemStore>> {
    Ok(Arc::new(FilesystemStore::new(dir).context(format!(
        "opening a zarrs store at {}",
        dir.display()
    ))?))
}

/// The Zarr v2 `.zarray` document of a v2 row (zarrs builds v2 arrays from metadata only).
fn v2_metadata(row: &Row, shape: &[u64]) -> BenchResult<ArrayMetadataV2> {
    let compressor = match row.compression {
        Compression::None => serde_json::Value::Null,
        Compression::Zstd(level) => serde_json::json!({"id": "zstd", "level": level}),
    };
    let chunk = row.codec_chunk();
    let doc = serde_json::json!({
        "zarr_format": 2,
        "shape": shape,
        "chunks": vec![chunk; shape.len()],
        "dtype": "<u2",
        "compressor": compressor,
        "fill_value": 0,
        "order": "C",
        "filters": null,
        "dimension_separator": ".",
    });
    serde_json::from_value(doc).context("building zarrs v2 metadata")
}

/// The Zarr v3 `zarr.json` of a row with a numcodecs serializer (`pcodec`, `zfpy`) or another
/// element type than `uint16`, in the form zarrs writes for them.
fn v3_metadata(row: &Row, shape: &[u64]) -> BenchResult<ArrayMetadataV3> {
    let serializer = match row.serializer {
        Serializer::Bytes => json!({"name": "bytes", "configuration": {"endian": "little"}}),
        Serializer::Pcodec { level } => json!({
            "name": "numcodecs.pcodec",
            "configuration": {
                "level": level,
                "mode_spec": "auto",
                "delta_spec": "auto",
                "paging_spec": "equal_pages_up_to",
                "equal_pages_up_to": 262144,
            },
        }),
        Serializer::ZfpReversible => {
            json!({"name": "numcodecs.zfpy", "configuration": {"mode": 5}})
        }
        Serializer::ZfpAccuracy { tolerance } => json!({
            "name": "numcodecs.zfpy",
            "configuration": {"mode": 4, "tolerance": tolerance},
        }),
    };
    let mut codecs = vec![serializer];
    if let Compression::Zstd(level) = row.compression {
        codecs.push(json!({"name": "zstd", "configuration": {"level": level, "checksum": false}}));
    }
    let doc = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": shape,
        "data_type": row.element.name(),
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": vec![row.codec_chunk(); shape.len()]},
        },
        "chunk_key_encoding": {"name": "default"},
        "fill_value": 0,
        "codecs": codecs,
    });
    serde_json::from_value(doc).context("building zarrs v3 metadata")
}

fn create(row: &Row, dir: &Path, shape: &[u64]) -> BenchResult<Array<FilesystemStore>> {
    let store = store(dir)?;
    let plain = row.serializer == Serializer::Bytes && row.element == Element::UInt16;
    let array = match row.format {
        Format::V2 => {
            let meta = ArrayMetadata::V2(v2_metadata(row, shape)?);
            Array::new_with_metadata(store, "/", meta).context("creating a zarrs v2 array")?
        }
        Format::V3 if !plain => {
            let meta = ArrayMetadata::V3(v3_metadata(row, shape)?);
            Array::new_with_metadata(store, "/", meta).context("creating a zarrs v3 array")?
        }
        Format::V3 => {
            let compressors: Vec<Arc<dyn BytesToBytesCodecTraits>> = match row.compression {
                Compression::None => Vec::new(),
                Compression::Zstd(level) => vec![Arc::new(ZstdCodec::new(level, false))],
            };
            let mut builder = ArrayBuilder::new(
                shape.to_vec(),
                vec![row.stored_chunk() as u64; shape.len()],
                data_type::uint16(),
                0u16,
            );
            builder.bytes_to_bytes_codecs(compressors);
            if let Layout::Sharded { inner, .. } = row.layout {
                // Default sharding: index `bytes` + `crc32c`, at the end of the shard.
                builder.subchunk_shape(vec![inner as u64; shape.len()]);
            }
            builder
                .build(store, "/")
                .context("creating a zarrs v3 array")?
        }
    };
    array.store_metadata().context("writing zarrs metadata")?;
    Ok(array)
}

impl Library for Zarrs {
    fn name(&self) -> &'static str {
        "zarrs"
    }

    fn write(
        &self,
        row: &Row,
        dir: &Path,
        shape: &[u64],
        data: Vec<u8>,
        _durable: bool,
    ) -> BenchResult<()> {
        // Always durable (below).
        let array = create(row, dir, shape)?;
        let whole = ArraySubset::new_with_shape(shape.to_vec());
        array
            .store_array_subset(&whole, ArrayBytes::new_flen(data))
            .context("zarrs store_array_subset")
    }

    fn syncs_writes(&self) -> bool {
        // `FilesystemStore` calls `sync_all` on every object it writes.
        true
    }

    fn read(&self, _row: &Row, dir: &Path) -> BenchResult<Vec<u8>> {
        let array = Array::open(store(dir)?, "/").context("opening the zarrs array")?;
        let whole = ArraySubset::new_with_shape(array.shape().to_vec());
        let bytes: ArrayBytes<'static> = array
            .retrieve_array_subset(&whole)
            .context("zarrs retrieve_array_subset")?;
        let fixed = bytes.into_fixed().map_err(|_| {
            BenchError::msg("zarrs returned variable-length data for a numeric array")
        })?;
        Ok(fixed.into_owned())
    }
}

fn main() -> ExitCode {
    if let Some(code) = neurochunk_bench::nwb_bench::child_main() {
        return code;
    }
    let peer = format!("zarrs {}", zarrs::version::version_str());
    let extras: &[ExtraSet] = &[
        neurochunk_bench::table_rows::TABLES,
        neurochunk_bench::nwb_rows::NWB,
        neurochunk_bench::codec_rows::CODECS,
    ];
    harness::main(&[&Neurochunk, &Zarrs], &peer, extras)
}
