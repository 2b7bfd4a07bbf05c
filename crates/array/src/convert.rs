//! Streaming conversion of arrays and hierarchies between formats, chunkings and codecs.
//!
//! Destination chunks (shards, for a sharded destination) are produced in parallel batches:
//! each worker reads the source region of one destination chunk and writes it, so peak memory
//! is about one destination chunk plus its source chunks per worker, whatever the array size.

use std::sync::Arc;

use neurochunk_codec::{
    AnyCodec, ArrayBytes, ArrayToArrayCodec, ArrayToBytesCodec, BytesCodec, BytesToBytesCodec,
    Codec, CodecChain, IndexLocation, ShardingCodec,
};
use neurochunk_dtype::Endian;
use neurochunk_store::Store;
use rayon::prelude::*;

use crate::array::Array;
use crate::error::{ArrayError, ArrayResult};
use crate::hierarchy::{create_group, list_nodes_with};
use crate::metadata::{ArrayMetadata, ChunkKeyEncoding, NodeMetadata, ZarrFormat};
use crate::selection::Selection;

/// What the destination should look like; `None` keeps the source's choice.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// Destination format (Zarr v2, Zarr v3 or N5).
    pub format: Option<ZarrFormat>,
    /// Chunk shape (the inner chunk shape when `shards` is set).
    pub chunks: Option<Vec<usize>>,
    /// Shard shape (Zarr v3 only).
    pub shards: Option<Vec<usize>>,
    /// Replace the bytes→bytes codecs (compressions, checksums), e.g.
    /// `vec![Codec::zstd(3), Codec::Crc32c]`; an empty list stores chunks uncompressed. Blosc
    /// shuffles by each array's element size.
    pub compressors: Option<Vec<Codec>>,
    /// Byte order of the stored elements.
    pub endian: Option<Endian>,
    /// Store elements in Fortran order (a `transpose` codec / v2 `order: "F"`).
    pub fortran_order: Option<bool>,
    /// Chunk key separator.
    pub separator: Option<char>,
    /// Axis order in which N5 sources are read and N5 destinations are written (default: as
    /// `attributes.json` lists them).
    pub n5_axis_order: crate::n5::N5AxisOrder,
    /// Keep `crc32c` checksums when writing Zarr v2 (stock zarr-python 2 cannot read them
    /// without an optional package, so they are dropped by default).
    pub keep_checksums: bool,
    /// Adjusts each source array's description before the destination is derived from it,
    /// for what a higher layer knows from the node (e.g. a serializer mode its attributes
    /// imply); `None` takes the description as parsed.
    pub source_adapter: Option<SourceAdapter>,
    /// What precomputed destinations look like beyond shape, chunks and encoding (voxel
    /// offset, resolution, layer type, sharding, gzip files); ignored for other formats.
    pub precomputed: crate::precomputed::PrecomputedOptions,
    /// Continue an interrupted conversion into the same destination: an array whose
    /// metadata documents are already stored, equal to the ones this conversion writes, is
    /// kept, and its destination chunks already stored are not converted again (every
    /// chunk is stored whole or not at all, so a stored chunk is complete). An array stored
    /// with other metadata is an error. Groups are written again.
    pub resume: bool,
    /// Copy the stored chunks as they are when the destination encodes chunks the same way
    /// ([`copy_stored_chunks`]) instead of decoding and encoding them.
    pub copy_stored: bool,
}

/// A function that adjusts a source array's description before conversion (see
/// [`ConvertOptions::source_adapter`]).
#[derive(Clone)]
pub struct SourceAdapter(Arc<dyn Fn(&mut ArrayMetadata) + Send + Sync>);

impl SourceAdapter {
    /// An adapter calling `f` on every source array's description.
    pub fn new(f: impl Fn(&mut ArrayMetadata) + Send + Sync + 'static) -> Self {
        SourceAdapter(Arc::new(f))
    }

    /// Apply the adapter to `meta`.
    pub fn apply(&self, meta: &mut ArrayMetadata) {
        (self.0)(meta)
    }
}

impl std::fmt::Debug for SourceAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SourceAdapter(..)")
    }
}

/// The codecs of a chain without sharding: `(array→array, array→bytes, bytes→bytes, inner chunk shape)`.
type FlatChain = (
    Vec<Arc<dyn neurochunk_codec::ArrayToArrayCodec>>,
    Arc<dyn ArrayToBytesCodec>,
    Vec<Arc<dyn BytesToBytesCodec>>,
    Option<Vec<usize>>,
);

fn flatten(chain: &CodecChain) -> FlatChain {
    if let Some(precomputed) = chain.only::<crate::precomputed::PrecomputedCodec>() {
        // The encoding's codec; a destination of another format replaces it (see
        // `derive_array`).
        return (
            Vec::new(),
            precomputed.encoding_codec().clone(),
            Vec::new(),
            None,
        );
    }
    if let Some(n5) = chain.only::<crate::n5::N5BlockCodec>() {
        // The N5 block framing is re-described by the destination; only the compression stays.
        // (The array→bytes placeholder is replaced by one that fits the data type.)
        return (
            Vec::new(),
            Arc::new(BytesCodec::new(Some(Endian::Little))),
            n5.compression()
                .cloned()
                .map(crate::n5::zarr_compatible_compression)
                .into_iter()
                .collect(),
            None,
        );
    }
    // A sharding codec, even one followed by more codecs, is unwrapped to its inner chain: the
    // data are re-encoded anyway, and the inner chunks are the natural unsharded chunking.
    match chain.serializer::<ShardingCodec>() {
        Some(sharding) => {
            let inner = sharding.inner_chain();
            let (a2a, a2b, b2b, _) = flatten(inner);
            (a2a, a2b, b2b, Some(sharding.inner_chunk_shape().to_vec()))
        }
        None => (
            chain.array_to_array().to_vec(),
            chain.array_to_bytes().clone(),
            chain.bytes_to_bytes().to_vec(),
            None,
        ),
    }
}

/// The destination of one array and what the conversion changes on the way (one short
/// phrase per change, e.g. `transpose [1, 0, 2] re-laid out to C order`), for the one-line
/// report per array the command line prints.
#[derive(Clone, Debug)]
pub struct DerivedArray {
    /// The destination array's description.
    pub metadata: ArrayMetadata,
    /// What changes on the way, one short phrase each (empty when nothing does).
    pub changes: Vec<String>,
}

/// The runtime bytes→bytes codecs of `codecs`, which must all be compressions or checksums.
pub(crate) fn build_compressors(
    codecs: &[Codec],
    repr: &neurochunk_codec::ChunkRepr,
    path: &str,
) -> ArrayResult<Vec<Arc<dyn BytesToBytesCodec>>> {
    codecs
        .iter()
        .map(|codec| match codec.build(repr) {
            Ok(AnyCodec::BytesToBytes(c)) => Ok(c),
            Ok(_) => Err(ArrayError::Unsupported {
                path: crate::display_path(path),
                message: format!("{codec} is not a compression or checksum (a bytes→bytes codec)"),
            }),
            Err(source) => Err(ArrayError::Codecs {
                path: crate::display_path(path),
                source,
            }),
        })
        .collect()
}

/// The short name of a codec in messages (`numcodecs.delta` → `delta`).
fn short_name(name: &str) -> &str {
    name.strip_prefix("numcodecs.").unwrap_or(name)
}

/// Checksum codecs: numcodecs' `crc32c` needs an optional package in stock zarr-python 2,
/// and N5 has no checksums at all.
fn is_checksum(codec: &dyn BytesToBytesCodec) -> bool {
    matches!(
        codec.name(),
        "crc32c"
            | "numcodecs.crc32c"
            | "numcodecs.crc32"
            | "numcodecs.adler32"
            | "numcodecs.fletcher32"
    )
}

/// The compression N5 destinations get when the source's has no form the N5 reference's
/// core reads (and `--codec` chose none): gzip, which every N5 reader has built in.
pub fn n5_default_compression() -> Arc<dyn BytesToBytesCodec> {
    Arc::new(neurochunk_codec::GzipCodec::new(6))
}

/// Compressions the N5 reference (Java) reads without plugins.
fn n5_core_reads(codec: &dyn BytesToBytesCodec) -> bool {
    matches!(
        codec.name(),
        "gzip" | "numcodecs.zlib" | "numcodecs.bz2" | "numcodecs.lzma" | "numcodecs.lz4" | "n5-lz4"
    )
}

/// The note of a conversion that writes a sharded array's inner chunks as plain chunks.
const SHARDS_UNWRAPPED: &str = "shards unwrapped to their inner chunks";

/// The destination metadata for `src` under `options`.
pub fn derive_metadata(
    src: &ArrayMetadata,
    options: &ConvertOptions,
    path: &str,
) -> ArrayResult<ArrayMetadata> {
    derive_array(src, options, path).map(|d| d.metadata)
}

/// The destination metadata for `src` under `options`, with the list of what changes.
///
/// Conversion decodes and re-encodes every chunk, so it never refuses for encoding reasons:
/// codecs the destination format cannot hold are dropped or replaced (a transpose that Zarr
/// v2 cannot express is re-laid out to C order; filters and checksums are dropped for N5;
/// `crc32c` is dropped for Zarr v2 unless [`ConvertOptions::keep_checksums`]; a compression N5's
/// core cannot read becomes gzip), and each such change is listed. Only data the destination
/// cannot represent at all (strings in N5, sub-array struct fields in Zarr v3) is an error.
pub fn derive_array(
    src: &ArrayMetadata,
    options: &ConvertOptions,
    path: &str,
) -> ArrayResult<DerivedArray> {
    let adapted;
    let src = match &options.source_adapter {
        Some(adapter) => {
            let mut meta = src.clone();
            adapter.apply(&mut meta);
            adapted = meta;
            &adapted
        }
        None => src,
    };
    let format = options.format.unwrap_or(src.format);
    let (mut a2a, mut a2b, mut b2b, inner_shape) = flatten(&src.codecs);
    let mut changes = Vec::new();
    let rank = src.shape.len();
    let check_rank = |what: &str, shape: &[usize]| -> ArrayResult<()> {
        if shape.len() != rank || shape.contains(&0) {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(path),
                message: format!("{what} {shape:?} must give {rank} positive sizes"),
            });
        }
        Ok(())
    };
    let mut chunk_shape = options
        .chunks
        .clone()
        .or(inner_shape)
        .unwrap_or_else(|| src.chunk_shape.clone());
    check_rank("chunk shape", &chunk_shape)?;
    if src.n5_block().is_some() {
        a2b = match src.data_type {
            neurochunk_dtype::DataType::String => Arc::new(neurochunk_codec::VlenUtf8Codec::new()),
            neurochunk_dtype::DataType::Bytes => Arc::new(neurochunk_codec::VlenBytesCodec::new()),
            ref dt => Arc::new(BytesCodec::for_type(dt, Endian::Little)),
        };
    }
    let explicit_codecs = options.compressors.is_some();
    if let (Some(encoding), false) = (
        src.precomputed().map(|p| p.scale().encoding.clone()),
        format == ZarrFormat::Precomputed,
    ) {
        // Precomputed encodings are for precomputed scales: other formats get plain bytes,
        // and the compression of a compressing encoding becomes zstd.
        a2b = Arc::new(BytesCodec::for_type(&src.data_type, Endian::Little));
        if encoding != crate::precomputed::Encoding::Raw {
            b2b = vec![Arc::new(neurochunk_codec::ZstdCodec::new(3, false))];
            changes.push(format!(
                "precomputed {} chunks re-encoded as bytes + zstd",
                encoding.name()
            ));
        }
    }
    if let Some(codecs) = &options.compressors {
        // Filters (array→array) and a serializer (pcodec, zfpy) given with the compressions
        // replace the source's; the compressions are built on what they produce.
        let mut repr = src.chunk_repr();
        let array_codecs: Vec<&Codec> = codecs
            .iter()
            .filter(|c| c.kind() != neurochunk_codec::CodecKind::BytesToBytes)
            .collect();
        if !array_codecs.is_empty() {
            let codec_err = |source| ArrayError::Codecs {
                path: crate::display_path(path),
                source,
            };
            a2a.retain(|c| c.name() == "transpose");
            for t in &a2a {
                repr = t.encoded_repr(&repr).map_err(codec_err)?;
            }
            let mut serializer = None;
            for codec in array_codecs {
                match codec.build(&repr).map_err(codec_err)? {
                    AnyCodec::ArrayToArray(c) => {
                        repr = c.encoded_repr(&repr).map_err(codec_err)?;
                        a2a.push(c);
                    }
                    AnyCodec::ArrayToBytes(c) => serializer = Some(c),
                    AnyCodec::BytesToBytes(_) => {}
                }
            }
            a2b = match serializer {
                Some(c) => c,
                None => match Codec::default_serializer(&repr.data_type)
                    .build(&repr)
                    .map_err(codec_err)?
                {
                    AnyCodec::ArrayToBytes(c) => c,
                    _ => a2b,
                },
            };
        }
        let compressions: Vec<Codec> = codecs
            .iter()
            .filter(|c| c.kind() == neurochunk_codec::CodecKind::BytesToBytes)
            .cloned()
            .collect();
        b2b = build_compressors(&compressions, &repr, path)?;
    }
    if let Some(fortran) = options.fortran_order {
        a2a.retain(|c| c.name() != "transpose");
        if fortran && rank > 1 {
            let order: Vec<usize> = (0..rank).rev().collect();
            a2a.insert(0, Arc::new(neurochunk_codec::TransposeCodec::new(order)));
        }
    }
    if let Some(endian) = options.endian {
        if a2b.name() == "bytes" {
            a2b = Arc::new(BytesCodec::new(Some(endian)));
        }
    }
    // Structured fields with their own byte order exist only in Zarr v2; elsewhere one byte
    // order (the `bytes` codec's) covers the element. In memory every field is little-endian,
    // so dropping the per-field orders changes the stored bytes, never the values.
    let mut data_type = src.data_type.clone();
    if format != ZarrFormat::V2 && data_type.has_field_byte_orders() {
        data_type = data_type.without_field_byte_orders();
        changes.push("struct fields stored in one byte order".to_string());
    }
    if format == ZarrFormat::Precomputed {
        return derive_precomputed(src, options, path, chunk_shape, a2a, a2b, b2b, changes);
    }
    if format == ZarrFormat::N5 {
        return derive_n5(
            src,
            options,
            path,
            chunk_shape,
            a2a,
            b2b,
            explicit_codecs,
            changes,
        );
    }
    if format == ZarrFormat::V2 {
        // Zarr v2 expresses a transpose only as `order: "F"` (a full reversal, first).
        let mut kept: Vec<Arc<dyn ArrayToArrayCodec>> = Vec::with_capacity(a2a.len());
        for (i, codec) in a2a.into_iter().enumerate() {
            let any: &dyn std::any::Any = codec.as_ref();
            let transpose = any.downcast_ref::<neurochunk_codec::TransposeCodec>();
            let v2_form = match transpose {
                Some(t) => i == 0 && t.is_reversal(),
                None => codec.to_v2_json().is_some(),
            };
            if v2_form {
                kept.push(codec);
            } else if let Some(t) = transpose {
                changes.push(format!("transpose {:?} re-laid out to C order", t.order()));
            } else {
                changes.push(format!(
                    "{} dropped (no Zarr v2 form)",
                    short_name(codec.name())
                ));
            }
        }
        a2a = kept;
        if a2b.to_v2_json().is_none() && a2b.name() != "bytes" {
            let replacement: Arc<dyn ArrayToBytesCodec> = match data_type {
                neurochunk_dtype::DataType::String => {
                    Arc::new(neurochunk_codec::VlenUtf8Codec::new())
                }
                neurochunk_dtype::DataType::Bytes => {
                    Arc::new(neurochunk_codec::VlenBytesCodec::new())
                }
                ref dt => Arc::new(BytesCodec::for_type(dt, Endian::Little)),
            };
            changes.push(format!(
                "{} replaced by {} (no Zarr v2 form)",
                a2b.name(),
                replacement.name()
            ));
            a2b = replacement;
        }
        let mut kept: Vec<Arc<dyn BytesToBytesCodec>> = Vec::with_capacity(b2b.len());
        for codec in b2b {
            if codec.to_v2_json().is_none() {
                changes.push(format!(
                    "{} dropped (no Zarr v2 form)",
                    short_name(codec.name())
                ));
            } else if !explicit_codecs
                && !options.keep_checksums
                && codec.name().ends_with("crc32c")
            {
                changes.push(
                    "crc32c dropped (stock zarr-python 2 cannot read it; --keep-checksums keeps it)"
                        .to_string(),
                );
            } else {
                kept.push(codec);
            }
        }
        b2b = kept;
    }
    let shards = match (&options.shards, format) {
        (Some(_), ZarrFormat::V2 | ZarrFormat::N5 | ZarrFormat::Precomputed) => {
            return Err(ArrayError::Unsupported {
                path: crate::display_path(path),
                message: "sharding needs Zarr v3 (use --format zarr3)".into(),
            })
        }
        (Some(shards), ZarrFormat::V3) => Some(shards.clone()),
        // Keep the source's sharding when staying in v3 and neither chunks nor shards change.
        (None, ZarrFormat::V3) if src.codecs.sharding().is_some() && options.chunks.is_none() => {
            Some(src.chunk_shape.clone())
        }
        (None, _) => None,
    };
    if shards.is_none() && src.codecs.sharding().is_some() {
        changes.push(SHARDS_UNWRAPPED.to_string());
    }
    let codecs = match shards {
        Some(shard_shape) => {
            check_rank("shard shape", &shard_shape)?;
            if let Some((s, c)) = shard_shape
                .iter()
                .zip(&chunk_shape)
                .find(|(s, c)| *s % *c != 0)
            {
                return Err(ArrayError::Unsupported {
                    path: crate::display_path(path),
                    message: format!("shard size {s} is not a multiple of chunk size {c}"),
                });
            }
            let inner = CodecChain::new(a2a, a2b, b2b);
            let index = CodecChain::new(
                Vec::new(),
                Arc::new(BytesCodec::new(Some(Endian::Little))),
                vec![Arc::new(neurochunk_codec::Crc32cCodec::new()) as Arc<dyn BytesToBytesCodec>],
            );
            let sharding = ShardingCodec::new(chunk_shape, inner, index, IndexLocation::End);
            chunk_shape = shard_shape;
            CodecChain::new(Vec::new(), Arc::new(sharding), Vec::new())
        }
        None => CodecChain::new(a2a, a2b, b2b),
    };
    let key_encoding = match format {
        ZarrFormat::V2 => ChunkKeyEncoding {
            c_prefix: false,
            separator: options
                .separator
                .unwrap_or(if src.format == ZarrFormat::V2 {
                    src.key_encoding.separator
                } else {
                    '.'
                }),
        },
        ZarrFormat::N5 => crate::n5::N5_KEY_ENCODING,
        ZarrFormat::Precomputed => ChunkKeyEncoding::V2_DOT,
        ZarrFormat::V3 => ChunkKeyEncoding {
            c_prefix: if src.format == ZarrFormat::V3 {
                src.key_encoding.c_prefix
            } else {
                true
            },
            separator: options
                .separator
                .unwrap_or(if src.format == ZarrFormat::V3 {
                    src.key_encoding.separator
                } else {
                    '/'
                }),
        },
    };
    let fill_value = match format {
        ZarrFormat::V2 => src.fill_value.clone(),
        ZarrFormat::V3 | ZarrFormat::N5 | ZarrFormat::Precomputed => Some(src.effective_fill()),
    };
    let metadata = ArrayMetadata {
        format,
        shape: src.shape.clone(),
        chunk_shape,
        data_type,
        fill_value,
        key_encoding,
        codecs: Arc::new(codecs),
        attributes: src.attributes.clone(),
        dimension_names: if format == ZarrFormat::V3 {
            src.dimension_names.clone()
        } else {
            None
        },
    };
    // Refuse here, naming the array, what the destination's documents cannot describe.
    match format {
        ZarrFormat::V2 => metadata.to_v2_document(path).map(drop)?,
        ZarrFormat::V3 => metadata.to_v3_document(path).map(drop)?,
        ZarrFormat::N5 | ZarrFormat::Precomputed => {}
    }
    Ok(DerivedArray { metadata, changes })
}

/// The precomputed destination of `src`: a scale `[x, y, z, channel]` (a 3-d source gets a
/// channel axis of 1; channels are never chunked) in the encoding asked for (a precomputed
/// serializer among [`ConvertOptions::compressors`]), else the source's when it is a
/// precomputed scale, else `raw`; gzip among the compressions stores unsharded chunks as
/// `.gz` files, other filters, compressions and user attributes are dropped. The voxel offset,
/// resolution, layer type and sharding come from [`ConvertOptions::precomputed`], else from
/// the source's `precomputed` attribute (so a precomputed scale converted to Zarr and back
/// keeps them). Data types precomputed lacks and other ranks are refused.
#[allow(clippy::too_many_arguments)]
fn derive_precomputed(
    src: &ArrayMetadata,
    options: &ConvertOptions,
    path: &str,
    chunk_shape: Vec<usize>,
    a2a: Vec<Arc<dyn ArrayToArrayCodec>>,
    a2b: Arc<dyn ArrayToBytesCodec>,
    b2b: Vec<Arc<dyn BytesToBytesCodec>>,
    mut changes: Vec<String>,
) -> ArrayResult<DerivedArray> {
    use crate::precomputed::{Encoding, ShardingSpec};
    let unsupported = |message: String| ArrayError::Unsupported {
        path: crate::display_path(path),
        message,
    };
    if options.endian.is_some() || options.fortran_order.is_some() || options.separator.is_some() {
        return Err(unsupported(
            "precomputed chunks have one layout (little-endian, Fortran order, keys \
             xBegin-xEnd_yBegin-yEnd_zBegin-zEnd); byte order, element order and key separator \
             options do not apply"
                .into(),
        ));
    }
    if crate::precomputed::data_type_name(&src.data_type).is_none() {
        return Err(unsupported(format!(
            "data type {} has no precomputed form (precomputed has {})",
            src.data_type,
            crate::precomputed::DATA_TYPES.join(", ")
        )));
    }
    let mut shape = src.shape.clone();
    let mut chunks = chunk_shape;
    match shape.len() {
        3 => {
            shape.push(1);
            chunks.push(1);
        }
        4 => {
            let channels = usize::try_from(shape[3]).unwrap_or(usize::MAX);
            if chunks[3] != channels {
                changes.push(format!(
                    "channel chunk {} widened to all {channels} channels (precomputed chunks hold \
                     every channel)",
                    chunks[3]
                ));
                chunks[3] = channels;
            }
        }
        n => {
            return Err(unsupported(format!(
                "precomputed volumes have 3 (x, y, z) or 4 (x, y, z, channel) dimensions; this \
                 array has {n}"
            )))
        }
    }
    for codec in &a2a {
        changes.push(format!(
            "{} dropped (precomputed chunks have no filters)",
            short_name(codec.name())
        ));
    }
    let encoding = Encoding::of_codec(a2b.as_ref()).unwrap_or(Encoding::Raw);
    let mut popts = options.precomputed.clone();
    for codec in &b2b {
        if codec.name() == "gzip" && popts.sharding.is_none() {
            popts.gzip = true;
        } else {
            changes.push(format!(
                "{} dropped (precomputed stores chunks in their encoding; gzip files at most)",
                short_name(codec.name())
            ));
        }
    }
    // What the source's `precomputed` attribute says (a precomputed scale, or an array
    // converted from one).
    let described = src
        .attributes
        .get(crate::precomputed::ATTRIBUTE)
        .and_then(serde_json::Value::as_object);
    let triple_i64 = |key: &str| -> Option<[i64; 3]> {
        let list = described?.get(key)?.as_array()?;
        let v: Option<Vec<i64>> = list.iter().map(serde_json::Value::as_i64).collect();
        v?.try_into().ok()
    };
    let triple_f64 = |key: &str| -> Option<[f64; 3]> {
        let list = described?.get(key)?.as_array()?;
        let v: Option<Vec<f64>> = list.iter().map(serde_json::Value::as_f64).collect();
        v?.try_into().ok()
    };
    popts.voxel_offset = popts.voxel_offset.or_else(|| triple_i64("voxel_offset"));
    popts.resolution = popts.resolution.or_else(|| triple_f64("resolution"));
    if popts.layer_type.is_none() {
        popts.layer_type = described
            .and_then(|d| d.get("type"))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string);
    }
    if popts.sharding.is_none() && !popts.unsharded && options.chunks.is_none() {
        // The source's sharding, on the same chunk grid.
        popts.sharding = src
            .precomputed()
            .and_then(|p| p.scale().sharding.clone())
            .or_else(|| {
                described
                    .and_then(|d| d.get("sharding"))
                    .and_then(|s| ShardingSpec::from_json(s).ok())
            })
            .filter(|_| !popts.gzip);
    }
    if src
        .attributes
        .keys()
        .any(|k| k != crate::precomputed::ATTRIBUTE)
    {
        changes.push("attributes dropped (precomputed scales hold none)".to_string());
    }
    if src.effective_fill().iter().any(|&b| b != 0) {
        changes.push("fill value dropped (missing precomputed chunks read as 0)".to_string());
    }
    if src.codecs.sharding().is_some() {
        changes.push(SHARDS_UNWRAPPED.to_string());
    }
    let metadata = crate::precomputed::new_scale_metadata(
        &shape,
        &chunks,
        src.data_type.clone(),
        encoding,
        &popts,
        path,
    )?;
    Ok(DerivedArray { metadata, changes })
}

/// The N5 destination of `src`: one compression (from the options, else the source's when
/// the N5 reference's core reads it, else gzip), no filters, checksums or transposes (the
/// data are re-laid out in N5's own block order), the data type and attributes of the source.
#[allow(clippy::too_many_arguments)]
fn derive_n5(
    src: &ArrayMetadata,
    options: &ConvertOptions,
    path: &str,
    chunk_shape: Vec<usize>,
    a2a: Vec<Arc<dyn ArrayToArrayCodec>>,
    b2b: Vec<Arc<dyn BytesToBytesCodec>>,
    explicit_codecs: bool,
    mut changes: Vec<String>,
) -> ArrayResult<DerivedArray> {
    let unsupported = |message: String| ArrayError::Unsupported {
        path: crate::display_path(path),
        message,
    };
    if options.shards.is_some() {
        return Err(unsupported(
            "sharding needs Zarr v3 (N5 has no shards)".into(),
        ));
    }
    if options.endian.is_some() || options.fortran_order.is_some() || options.separator.is_some() {
        return Err(unsupported(
            "N5 blocks are always big-endian and column-major with '/' block paths; byte order, \
             element order and key separator options do not apply"
                .into(),
        ));
    }
    if src.data_type.is_variable_length() {
        return Err(unsupported(format!(
            "variable-length {} cannot be stored in N5, which holds numeric data types only",
            if matches!(src.data_type, neurochunk_dtype::DataType::String) {
                "strings"
            } else {
                "bytes"
            }
        )));
    }
    if src.codecs.sharding().is_some() {
        changes.push(SHARDS_UNWRAPPED.to_string());
    }
    for codec in &a2a {
        if codec.name() == "transpose" {
            changes.push("transpose re-laid out to N5 block order".to_string());
        } else {
            changes.push(format!(
                "{} dropped (N5 has no filters)",
                short_name(codec.name())
            ));
        }
    }
    let compression = if explicit_codecs {
        match b2b.as_slice() {
            [] => None,
            [one] if !is_checksum(one.as_ref()) => Some(one.clone()),
            many => {
                return Err(unsupported(format!(
                    "N5 stores one compression and no checksums, --codec gave {}",
                    many.iter()
                        .map(|c| short_name(c.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
    } else {
        let mut compressors = Vec::new();
        for codec in b2b {
            if is_checksum(codec.as_ref()) {
                changes.push(format!(
                    "{} dropped (N5 has no checksums)",
                    short_name(codec.name())
                ));
            } else {
                compressors.push(codec);
            }
        }
        match compressors.as_slice() {
            [] => None,
            [one] if n5_core_reads(one.as_ref()) => Some(one.clone()),
            others => {
                let names: Vec<&str> = others.iter().map(|c| short_name(c.name())).collect();
                changes.push(format!(
                    "{} replaced by gzip (the N5 reference's core cannot read it; --codec chooses another)",
                    names.join(", ")
                ));
                Some(n5_default_compression())
            }
        }
    };
    let mut metadata = crate::n5::n5_array_metadata(
        src.shape.clone(),
        chunk_shape,
        src.data_type.clone(),
        compression,
        options.n5_axis_order,
        src.attributes.clone(),
        path,
    )?;
    metadata.dimension_names = src.dimension_names.clone();
    Ok(DerivedArray { metadata, changes })
}

/// Copy every element of `src` into `dst` (same shape), one destination chunk per task,
/// calling `progress(n)` after each batch of `n` chunks.
pub fn copy_data(src: &Array, dst: &Array, progress: &(dyn Fn(u64) + Sync)) -> ArrayResult<()> {
    copy_chunks(src, dst, false, progress)
}

/// Whether `src` and `dst` store every chunk as the same bytes: same shape, chunk grid, data
/// type, fill value and codecs, in the same format or in Zarr v2 and v3 (whose chunks are the
/// codecs' output alike; N5 blocks carry a header); chunk keys may differ.
pub fn same_encoding(src: &ArrayMetadata, dst: &ArrayMetadata) -> bool {
    let zarr = |f: ZarrFormat| matches!(f, ZarrFormat::V2 | ZarrFormat::V3);
    (src.format == dst.format || (zarr(src.format) && zarr(dst.format)))
        && src.shape == dst.shape
        && src.chunk_shape == dst.chunk_shape
        && src.data_type == dst.data_type
        && src.effective_fill() == dst.effective_fill()
        && src.n5_axis_order() == dst.n5_axis_order()
        && src.codecs.to_v3_json() == dst.codecs.to_v3_json()
}

/// Copy `src`'s stored chunks into `dst` byte for byte, without decoding them, when both
/// encode chunks the same way ([`same_encoding`]); returns `false` (and copies nothing)
/// otherwise. Chunks are fetched and stored in batches (one `get_many` and one `set_many`
/// each; several at once into a remote store); `progress(n)` counts chunks of the grid. The
/// bytes are not checked: a corrupt chunk stays corrupt (a reader of `dst` reports it). A
/// chunk the source [locates](Store::locate) in another file is recorded in a destination
/// that keeps such references ([`Store::set_virtual_many`]) as a reference to those bytes.
pub fn copy_stored_chunks(
    src: &Array,
    dst: &Array,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<bool> {
    if !same_encoding(src.metadata(), dst.metadata()) {
        return Ok(false);
    }
    let grid = src.metadata().grid_shape();
    let total: u64 = grid.iter().product();
    // A large grid is copied from the listing of its stored chunks (the grids are the same),
    // not walked position by position.
    let sparse = sparse_targets(src, dst, total)?;
    let count = sparse.as_ref().map_or(total, |t| t.len() as u64);
    let index_at = |i: u64| match &sparse {
        Some(targets) => targets[i as usize].clone(),
        None => unravel(i, &grid),
    };
    let batch = 64u64;
    let parts = (0..count)
        .step_by(batch as usize)
        .map(|start| start..(start + batch).min(count));
    let copy_part = |part: std::ops::Range<u64>| -> ArrayResult<()> {
        let count = part.end - part.start;
        let mut indices: Vec<Vec<u64>> = part.map(index_at).collect();
        // Chunks the source can point at (a view of another file's bytes) are recorded as
        // references where the destination keeps them; the rest are copied.
        let keys: Vec<String> = indices.iter().map(|index| src.chunk_key(index)).collect();
        let located = src
            .store()
            .locate(&keys.iter().map(String::as_str).collect::<Vec<_>>())?;
        if located.iter().any(Option::is_some) {
            let refs: Vec<(String, neurochunk_store::VirtualRef)> = indices
                .iter()
                .zip(&located)
                .filter_map(|(index, r)| Some((dst.chunk_key(index), r.clone()?)))
                .collect();
            if dst.store().set_virtual_many(refs)? {
                indices = indices
                    .into_iter()
                    .zip(located)
                    .filter_map(|(index, r)| r.is_none().then_some(index))
                    .collect();
            }
        }
        let requests: Vec<neurochunk_store::ReadRequest> = indices
            .iter()
            .map(|index| neurochunk_store::ReadRequest::whole(src.chunk_key(index)))
            .collect();
        let answers = src.store().get_many(&requests);
        let mut values = Vec::with_capacity(indices.len());
        for ((index, request), answer) in indices.iter().zip(&requests).zip(answers) {
            if let Some(bytes) = crate::read::whole_value(answer, &request.key)? {
                values.push((dst.chunk_key(index), bytes));
            }
        }
        if !values.is_empty() {
            dst.store().set_many(values)?;
        }
        progress(count);
        Ok(())
    };
    // Parts one after the other between local stores; with a remote source or destination,
    // several in flight at once (each part's requests wait a round trip).
    let pace = busier_store(src, dst);
    if pace.concurrent_reads() <= 1 {
        parts.into_iter().try_for_each(copy_part)?;
    } else {
        let lanes = copy_lanes(pace, batch_bytes(src.metadata(), batch as usize));
        crate::read::windowed(parts, lanes, copy_part, |()| Ok(()))?;
    }
    // The rest of a sparse grid is the fill value in both arrays.
    progress(total - count);
    Ok(true)
}

/// Of a copy's two arrays, the store that serves the more requests at once: the one whose
/// round trips set the copy's pace.
fn busier_store<'a>(src: &'a Array, dst: &'a Array) -> &'a dyn Store {
    if src.store().concurrent_reads() > dst.store().concurrent_reads() {
        src.store().as_ref()
    } else {
        dst.store().as_ref()
    }
}

/// [`copy_data`] that skips the destination chunks already stored in `dst` (found with one
/// listing of the array's keys): the second half of a resumed conversion.
pub fn copy_missing_data(
    src: &Array,
    dst: &Array,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<()> {
    copy_chunks(src, dst, true, progress)
}

/// The grid positions of the chunks stored for `array`.
fn stored_chunks(array: &Array) -> ArrayResult<std::collections::HashSet<Vec<u64>>> {
    let meta = array.metadata();
    let prefix = match array.path().trim_matches('/') {
        "" => String::new(),
        path => format!("{path}/"),
    };
    let grid = meta.grid_shape();
    Ok(array
        .store()
        .list_prefix(&prefix)?
        .iter()
        .filter_map(|key| meta.parse_chunk_key(&key[prefix.len()..]))
        .filter(|index| index.len() == grid.len() && index.iter().zip(&grid).all(|(i, g)| i < g))
        .collect())
}

fn copy_chunks(
    src: &Array,
    dst: &Array,
    skip_stored: bool,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<()> {
    // A 3-d source of a precomputed scale has a trailing channel axis of 1 added: the
    // elements are laid out the same.
    let rank = src.shape().len();
    let channel_added = dst.shape().len() == rank + 1
        && dst.shape()[..rank] == *src.shape()
        && dst.shape()[rank] == 1;
    if src.shape() != dst.shape() && !channel_added {
        return Err(ArrayError::Unsupported {
            path: crate::display_path(dst.path()),
            message: format!(
                "shape {:?} differs from the source's {:?}",
                dst.shape(),
                src.shape()
            ),
        });
    }
    let meta = dst.metadata();
    let grid = meta.grid_shape();
    let total: u64 = grid.iter().product();
    let read = |origin: &[u64], extent: &[u64]| -> ArrayResult<ArrayBytes> {
        Ok(src
            .read(&Selection::from_box(&origin[..rank], &extent[..rank]))?
            .1)
    };
    let stored = if skip_stored {
        stored_chunks(dst)?
    } else {
        Default::default()
    };
    let batch = copy_batch(meta);
    if let Some(targets) = sparse_targets(src, dst, total)? {
        let done = targets.iter().filter(|t| stored.contains(*t)).count();
        progress(done as u64);
        let todo = targets.iter().filter(|t| !stored.contains(*t)).cloned();
        let groups = todo.map(|index| vec![index]);
        write_groups_via(dst, busier_store(src, dst), groups, batch, &read, progress)?;
        // The rest of the grid is fill value in both arrays: nothing to write.
        progress(total - targets.len() as u64);
        return Ok(());
    }
    // Every chunk not stored yet (every chunk when not resuming), in groups that cover whole
    // source chunks where those are larger, so each source chunk is decoded once.
    let group = copy_group(src.metadata(), meta);
    let group_len: usize = group.iter().map(|&g| g as usize).product();
    let group_grid: Vec<u64> = grid
        .iter()
        .zip(&group)
        .map(|(n, g)| n.div_ceil(*g))
        .collect();
    let groups = (0..group_grid.iter().product::<u64>()).filter_map(|i| {
        let corner: Vec<u64> = unravel(i, &group_grid)
            .iter()
            .zip(&group)
            .map(|(b, g)| b * g)
            .collect();
        let ends: Vec<u64> = corner
            .iter()
            .zip(&group)
            .zip(&grid)
            .map(|((c, g), n)| (c + g).min(*n))
            .collect();
        let members: Vec<Vec<u64>> = box_indices(&corner, &ends)
            .filter(|index| {
                let keep = !stored.contains(index);
                if !keep {
                    progress(1);
                }
                keep
            })
            .collect();
        (!members.is_empty()).then_some(members)
    });
    // At least one group per thread: a batch of one group would leave the other cores idle
    // (each group is at most `copy_group`'s 64 MiB).
    let groups_per_batch = (batch / group_len).max(rayon::current_num_threads());
    write_groups_via(
        dst,
        busier_store(src, dst),
        groups,
        groups_per_batch,
        &read,
        progress,
    )
}

/// Destination chunks per axis that one copy task writes together: enough to cover a source
/// read unit (a chunk, or an inner chunk of a shard) where that is larger than a destination
/// chunk, so the task reads and decodes it once instead of once per destination chunk; 1
/// elsewhere, and on every axis when the group would exceed 64 MiB.
fn copy_group(src: &ArrayMetadata, dst: &ArrayMetadata) -> Vec<u64> {
    const GROUP_BYTES: usize = 64 << 20;
    let unit = match src.codecs.serializer::<ShardingCodec>() {
        Some(sharding) => sharding.inner_chunk_shape().to_vec(),
        None => src.chunk_shape.clone(),
    };
    let ones = vec![1; dst.chunk_shape.len()];
    if unit.len() != dst.chunk_shape.len() {
        return ones;
    }
    let group: Vec<u64> = unit
        .iter()
        .zip(&dst.chunk_shape)
        .map(|(&u, &c)| u.div_ceil(c.max(1)).max(1) as u64)
        .collect();
    let element = dst.data_type.fixed_size().unwrap_or(16);
    let bytes = group
        .iter()
        .zip(&dst.chunk_shape)
        .map(|(&g, &c)| g as usize * c)
        .product::<usize>()
        .saturating_mul(element);
    if bytes > GROUP_BYTES {
        ones
    } else {
        group
    }
}

/// The grid positions of the box `[start, end)`, C order.
fn box_indices(start: &[u64], end: &[u64]) -> impl Iterator<Item = Vec<u64>> {
    let extent: Vec<u64> = start.iter().zip(end).map(|(s, e)| e - s).collect();
    let start = start.to_vec();
    (0..extent.iter().product::<u64>()).map(move |i| {
        unravel(i, &extent)
            .iter()
            .zip(&start)
            .map(|(o, s)| o + s)
            .collect()
    })
}

/// Destination chunks copied per batch: four per thread, fewer for large chunks (shards) so a
/// batch's chunks and their decoded copies stay near `COPY_BATCH_BYTES`, at least one per
/// thread.
fn copy_batch(meta: &ArrayMetadata) -> usize {
    const COPY_BATCH_BYTES: usize = 64 << 20;
    let threads = rayon::current_num_threads().max(1);
    let element = meta.data_type.fixed_size().unwrap_or(16);
    let chunk_bytes = meta
        .chunk_shape
        .iter()
        .product::<usize>()
        .saturating_mul(element);
    (threads * 4).min((COPY_BATCH_BYTES / chunk_bytes.max(1)).max(threads))
}

/// The box of chunk `index` (a shard, for a sharded array) of `meta`: its origin and its
/// extent inside the array.
pub fn chunk_box(meta: &ArrayMetadata, index: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let origin: Vec<u64> = index
        .iter()
        .zip(&meta.chunk_shape)
        .map(|(&i, &c)| i * c as u64)
        .collect();
    let extent: Vec<u64> = origin
        .iter()
        .zip(&meta.chunk_shape)
        .zip(&meta.shape)
        .map(|((&o, &c), &s)| (s - o).min(c as u64))
        .collect();
    (origin, extent)
}

/// What [`write_chunks`] calls for each chunk: its origin and extent in, its elements out.
pub type ChunkProducer<'a> = dyn Fn(&[u64], &[u64]) -> ArrayResult<ArrayBytes> + Sync + 'a;

/// Write the chunks `indices` (grid positions; shards for a sharded array) of `dst`, each
/// with the elements `produce(origin, extent)` returns for its box (C order), `batch` chunks at a time: the
/// chunks of a batch are produced and encoded in parallel (rayon) and stored with one
/// [`Store::set_many`] call (a durable filesystem store syncs each directory once per batch),
/// then `progress(n)` is called with the batch's size. Every task writes whole chunks, so
/// tasks never race; memory is about `batch` chunks plus what `produce` needs for them.
pub fn write_chunks(
    dst: &Array,
    indices: impl IntoIterator<Item = Vec<u64>, IntoIter: Send>,
    batch: usize,
    produce: &ChunkProducer<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<()> {
    let groups = indices.into_iter().map(|index| vec![index]);
    write_chunk_groups(dst, groups, batch, produce, progress)
}

/// [`write_chunks`] for groups of chunks: each group is one task that asks `produce` once for
/// the box covering its chunks and writes each chunk from its part of it (what a copy needs
/// when one source chunk spans several destination chunks). `batch` counts groups;
/// `progress(n)` counts chunks.
pub fn write_chunk_groups(
    dst: &Array,
    groups: impl IntoIterator<Item = Vec<Vec<u64>>, IntoIter: Send>,
    batch: usize,
    produce: &ChunkProducer<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<()> {
    write_groups_via(dst, dst.store().as_ref(), groups, batch, produce, progress)
}

/// [`write_chunk_groups`], its pace set by `pace`: the store that serves the most requests at
/// once of those the copy reads from (through `produce`) and writes to. When that is one
/// request at a time (local stores), the parts of `batch` groups follow each other, each
/// produced and encoded in parallel on rayon and stored with one `set_many` call. Otherwise (a
/// remote source or destination) each group waits a round trip, so the groups go to fetch
/// lanes (`read::windowed`), one group per lane at a time, as many lanes as the store has
/// requests in flight (fewer when their groups would not fit the read window): the rayon
/// workers are then never held waiting on the network.
fn write_groups_via(
    dst: &Array,
    pace: &dyn Store,
    groups: impl IntoIterator<Item = Vec<Vec<u64>>, IntoIter: Send>,
    batch: usize,
    produce: &ChunkProducer<'_>,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<()> {
    let meta = dst.metadata();
    let element = meta.data_type.fixed_size().unwrap_or(0);
    type Encoded = std::sync::Mutex<Vec<(String, neurochunk_store::Bytes)>>;
    let write_box =
        |origin: &[u64], extent: &[u64], data: &ArrayBytes, encoded: &Encoded| -> ArrayResult<()> {
            let selection = Selection::from_box(origin, extent);
            dst.write_with(&selection, crate::array::Source::of(data), &|values| {
                encoded
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend(values);
                Ok(())
            })
        };
    let write_group = |group: &Vec<Vec<u64>>, encoded: &Encoded| -> ArrayResult<()> {
        let boxes: Vec<(Vec<u64>, Vec<u64>)> =
            group.iter().map(|index| chunk_box(meta, index)).collect();
        if let [(origin, extent)] = boxes.as_slice() {
            return write_box(origin, extent, &produce(origin, extent)?, encoded);
        }
        let Some(first) = boxes.first() else {
            return Ok(());
        };
        let rank = first.0.len();
        let start: Vec<u64> = (0..rank)
            .map(|d| boxes.iter().map(|(o, _)| o[d]).min().unwrap_or(0))
            .collect();
        let end: Vec<u64> = (0..rank)
            .map(|d| boxes.iter().map(|(o, e)| o[d] + e[d]).max().unwrap_or(0))
            .collect();
        let cover: Vec<u64> = end.iter().zip(&start).map(|(e, s)| e - s).collect();
        let data = produce(&start, &cover)?;
        let cover: Vec<usize> = cover.iter().map(|&n| n as usize).collect();
        for (origin, extent) in &boxes {
            let offset: Vec<usize> = origin
                .iter()
                .zip(&start)
                .map(|(o, s)| (o - s) as usize)
                .collect();
            let shape: Vec<usize> = extent.iter().map(|&n| n as usize).collect();
            let part =
                neurochunk_codec::nd::extract_region(&data, &cover, &offset, &shape, element);
            write_box(origin, extent, &part, encoded)?;
        }
        Ok(())
    };
    // One part: its groups produced and encoded, then stored with one call.
    let write_part = |part: Vec<Vec<Vec<u64>>>, parallel: bool| -> ArrayResult<()> {
        let encoded = Encoded::default();
        if parallel {
            part.par_iter()
                .try_for_each(|group| write_group(group, &encoded))?;
        } else {
            part.iter()
                .try_for_each(|group| write_group(group, &encoded))?;
        }
        let values = encoded.into_inner().unwrap_or_else(|e| e.into_inner());
        if !values.is_empty() {
            dst.store().set_many(values)?;
        }
        progress(part.iter().map(|g| g.len() as u64).sum());
        Ok(())
    };
    let mut groups = groups.into_iter().peekable();
    if pace.concurrent_reads() > 1 {
        let group_bytes = batch_bytes(meta, groups.peek().map_or(1, Vec::len));
        let lanes = copy_lanes(pace, group_bytes);
        let parts = groups.map(|group| vec![group]);
        return crate::read::windowed(parts, lanes, |part| write_part(part, false), |()| Ok(()));
    }
    let batch = batch.max(1);
    loop {
        let part: Vec<Vec<Vec<u64>>> = groups.by_ref().take(batch).collect();
        if part.is_empty() {
            return Ok(());
        }
        write_part(part, true)?;
    }
}

/// Decoded bytes of `count` chunks of `meta` (the estimate a part's memory is bounded by).
fn batch_bytes(meta: &ArrayMetadata, count: usize) -> usize {
    let element = meta.data_type.fixed_size().unwrap_or(16);
    let chunk: usize = meta.chunk_shape.iter().product();
    chunk.saturating_mul(element).saturating_mul(count)
}

/// Lanes of a copy paced by `pace` (see [`write_groups_via`], [`copy_stored_chunks`]) whose
/// lanes hold about `part_bytes` each: one per request `pace` keeps in flight, as many as fit
/// the read window.
fn copy_lanes(pace: &dyn Store, part_bytes: usize) -> usize {
    (crate::read::window_bytes(pace) / part_bytes.max(1)).clamp(1, pace.concurrent_reads())
}

/// The array `meta` describes at `path` of `store`, to continue converting into: created when
/// none of its metadata documents is stored, kept when they are stored as this conversion
/// writes them (documents found missing are written again), refused when one differs.
fn open_for_resume(store: Arc<dyn Store>, path: &str, meta: ArrayMetadata) -> ArrayResult<Array> {
    // The documents the array would be created with, written aside.
    let aside: Arc<dyn Store> = Arc::new(neurochunk_store::MemoryStore::new());
    Array::create(aside.clone(), path, meta.clone())?;
    let own = match path.trim_matches('/') {
        "" => String::new(),
        p => format!("{p}/"),
    };
    let mut present = false;
    let mut complete = true;
    for key in aside.list_prefix(&own)? {
        if key[own.len()..].contains('/') {
            continue; // a parent group's document
        }
        let wanted = aside.get(&key)?;
        match store.get(&key)? {
            Some(stored) if Some(&stored) == wanted.as_ref() => present = true,
            Some(_) => {
                return Err(ArrayError::Unsupported {
                    path: crate::display_path(path),
                    message: format!(
                        "cannot resume: '{key}' holds other metadata than this conversion writes \
                         (convert without resuming to replace the array)"
                    ),
                })
            }
            None => complete = false,
        }
    }
    if !present || !complete {
        return Array::create(store, path, meta);
    }
    Ok(Array::from_metadata(store, path, meta))
}

/// Grids up to this many chunks are copied chunk by chunk without looking at what is stored.
const DENSE_COPY_CHUNKS: u64 = 1 << 14;

/// For a large grid, the destination chunks that overlap a chunk the source has stored, when
/// everything else reads as the same fill value in both arrays: a conversion's work is then
/// bounded by the data stored, not by the shape the metadata declares (an array declared
/// `[1e15]` with three chunks written converts in three chunks). `None`: copy every chunk.
fn sparse_targets(src: &Array, dst: &Array, total: u64) -> ArrayResult<Option<Vec<Vec<u64>>>> {
    let (smeta, dmeta) = (src.metadata(), dst.metadata());
    if total <= DENSE_COPY_CHUNKS || smeta.effective_fill() != dmeta.effective_fill() {
        return Ok(None);
    }
    let prefix = match src.path().trim_matches('/') {
        "" => String::new(),
        path => format!("{path}/"),
    };
    let source_grid = smeta.grid_shape();
    let mut targets = std::collections::BTreeSet::new();
    for key in src.store().list_prefix(&prefix)? {
        let Some(index) = smeta.parse_chunk_key(&key[prefix.len()..]) else {
            continue; // a metadata document, or not a chunk of this array
        };
        if index.iter().zip(&source_grid).any(|(i, g)| i >= g) {
            continue;
        }
        // The destination chunks covering this source chunk's elements, per axis.
        let ranges: Vec<(u64, u64)> = index
            .iter()
            .zip(&smeta.chunk_shape)
            .zip(&smeta.shape)
            .zip(&dmeta.chunk_shape)
            .map(|(((&i, &sc), &shape), &dc)| {
                let first = i * sc as u64;
                let last = (first + sc as u64).min(shape) - 1;
                (first / dc as u64, last / dc as u64)
            })
            .collect();
        let mut ranges = ranges;
        // A channel axis the destination adds (see `copy_chunks`).
        ranges.resize(dmeta.chunk_shape.len(), (0, 0));
        let mut current: Vec<u64> = ranges.iter().map(|r| r.0).collect();
        'cells: loop {
            targets.insert(current.clone());
            for d in (0..current.len()).rev() {
                if current[d] < ranges[d].1 {
                    current[d] += 1;
                    continue 'cells;
                }
                current[d] = ranges[d].0;
            }
            break;
        }
    }
    Ok(Some(targets.into_iter().collect()))
}

fn unravel(mut linear: u64, grid: &[u64]) -> Vec<u64> {
    let mut index = vec![0u64; grid.len()];
    for d in (0..grid.len()).rev() {
        index[d] = linear % grid[d];
        linear /= grid[d];
    }
    index
}

/// Number of destination chunks a conversion of `src` writes (for progress bars).
pub fn chunk_count(meta: &ArrayMetadata) -> u64 {
    meta.grid_shape().iter().product()
}

/// Convert one array to `dst_path` in `dst_store`: its stored chunks copied as they are when
/// [`ConvertOptions::copy_stored`] allows it and the destination encodes chunks the same way
/// ([`copy_stored_chunks`]), otherwise decoded and encoded. Returns the new array and what the conversion changed on the way (see
/// [`derive_array`]).
pub fn convert_array(
    src: &Array,
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &ConvertOptions,
    progress: &(dyn Fn(u64) + Sync),
) -> ArrayResult<(Array, Vec<String>)> {
    let derived = derive_array(src.metadata(), options, dst_path)?;
    if options.resume {
        let dst = open_for_resume(dst_store, dst_path, derived.metadata)?;
        copy_missing_data(src, &dst, progress)?;
        return Ok((dst, derived.changes));
    }
    let dst = Array::create(dst_store, dst_path, derived.metadata)?;
    // Chunks the destination stores as the same bytes are copied without decoding.
    if !(options.copy_stored && copy_stored_chunks(src, &dst, progress)?) {
        copy_data(src, &dst, progress)?;
    }
    Ok((dst, derived.changes))
}

/// Convert the node at `src_path` and everything below it. Returns the number of nodes.
/// `changes(path, list)` is called for every array the conversion changed (see
/// [`derive_array`]), with the array's path in the destination.
pub fn convert_hierarchy(
    src_store: Arc<dyn Store>,
    src_path: &str,
    dst_store: Arc<dyn Store>,
    dst_path: &str,
    options: &ConvertOptions,
    progress: &(dyn Fn(u64) + Sync),
    changes: &(dyn Fn(&str, &[String]) + Sync),
) -> ArrayResult<usize> {
    let open = crate::OpenOptions {
        n5_axis_order: options.n5_axis_order,
    };
    let nodes = list_nodes_with(src_store.as_ref(), src_path, &open)?;
    let src_root = src_path.trim_matches('/');
    for node in &nodes {
        let rel = node.path[src_root.len()..].trim_start_matches('/');
        let target = crate::hierarchy::child_path(dst_path, rel);
        match &node.metadata {
            NodeMetadata::Group(group) => {
                let format = options.format.unwrap_or(group.format);
                if format == ZarrFormat::Precomputed {
                    // Layers are written with their scales; other directories need nothing.
                    continue;
                }
                create_group(
                    dst_store.as_ref(),
                    &target,
                    format,
                    group.attributes.clone(),
                )?;
            }
            NodeMetadata::Array(meta) => {
                let src = Array::from_metadata(src_store.clone(), &node.path, (**meta).clone());
                let (_, changed) =
                    convert_array(&src, dst_store.clone(), &target, options, progress)?;
                if !changed.is_empty() {
                    changes(&target, &changed);
                }
            }
        }
    }
    Ok(nodes.len())
}
