//! [`ArrayBuilder`]: describe a new array in code (shape, data type, chunks, shards, typed
//! codecs, fill value, attributes, dimension names) and create it in any store, as Zarr v2,
//! Zarr v3 or N5.
//!
//! ```
//! use std::sync::Arc;
//! use neurochunk_array::{ArrayBuilder, Codec, DataType, MemoryStore, Store, ZarrFormat};
//!
//! let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
//! let volume = ArrayBuilder::new([256, 256, 256], DataType::UInt16)
//!     .chunks([32, 32, 32])
//!     .shards([128, 128, 128])
//!     .codecs([Codec::zstd(3), Codec::Crc32c])
//!     .dimension_names(["z", "y", "x"])
//!     .attribute("voxel_size_um", serde_json::json!([0.4, 0.4, 2.0]))
//!     .create(store.clone(), "em/s0")
//!     .unwrap();
//! assert_eq!(volume.metadata().chunk_shape, vec![128, 128, 128]);
//! assert!(store.exists("em/s0/zarr.json").unwrap());
//! assert!(store.exists("em/zarr.json").unwrap(), "parent groups are created");
//!
//! // The same description as N5 (blocks of 64³, gzip):
//! let n5 = ArrayBuilder::new([256, 256, 256], DataType::UInt16)
//!     .format(ZarrFormat::N5)
//!     .chunks([64, 64, 64])
//!     .codecs([Codec::Gzip { level: 6 }])
//!     .create(store.clone(), "n5/s0")
//!     .unwrap();
//! assert_eq!(n5.metadata().format, ZarrFormat::N5);
//! ```

use std::sync::Arc;

use neurochunk_codec::{
    AnyCodec, ArrayToArrayCodec, ArrayToBytesCodec, ChunkRepr, Codec, CodecChain, CodecKind,
};
use neurochunk_dtype::DataType;
use neurochunk_store::Store;
use serde_json::{Map, Value};

use crate::array::{Array, ArrayOptions};
use crate::convert::{build_compressors, derive_array, ConvertOptions};
use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{ArrayMetadata, ChunkKeyEncoding, ZarrFormat};
use crate::n5::N5AxisOrder;
use crate::typed::Element;

/// The fill value of a new array: the element missing chunks read as.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum FillValue {
    /// Zero (`false`, `0`, `0.0`, empty text).
    #[default]
    Zero,
    /// One element's in-memory bytes (little-endian).
    Bytes(Vec<u8>),
    /// JSON in the target format's spelling, e.g. `"NaN"` or `[1.0, 0.0]` (Zarr v2 `null` is
    /// allowed for Zarr v2: missing chunks then read as zeros and no fill is recorded).
    Json(Value),
}

impl FillValue {
    /// The fill value `value` of an element type.
    pub fn of<T: Element>(value: T) -> FillValue {
        FillValue::Bytes(bytemuck::bytes_of(&value).to_vec())
    }
}

/// The codecs of an array created without [`ArrayBuilder::codecs`]: zstd level 3 for Zarr
/// (v2 and v3), gzip level 6 for N5 (which every N5 reader, the Java reference included, has).
pub fn default_codecs(format: ZarrFormat) -> Vec<Codec> {
    match format {
        ZarrFormat::N5 => vec![Codec::Gzip { level: 6 }],
        // The `raw` encoding, uncompressed (what tensorstore and Neuroglancer read).
        ZarrFormat::Precomputed => vec![Codec::NeuroglancerRaw],
        ZarrFormat::V2 | ZarrFormat::V3 => vec![Codec::zstd(3)],
    }
}

/// The chunk shape used when none is given: about 1 MiB per chunk, made by halving the
/// largest axis until it fits.
pub fn default_chunk_shape(shape: &[u64], element_size: usize) -> Vec<usize> {
    let mut chunks: Vec<usize> = shape
        .iter()
        .map(|&s| usize::try_from(s).unwrap_or(usize::MAX).max(1))
        .collect();
    while chunks
        .iter()
        .try_fold(element_size.max(1), |acc, &c| acc.checked_mul(c))
        .is_none_or(|bytes| bytes > 1 << 20)
    {
        let Some((axis, _)) = chunks
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 1)
            .max_by_key(|(_, &c)| c)
        else {
            break;
        };
        chunks[axis] = chunks[axis].div_ceil(2);
    }
    chunks
}

/// Describes a new array; [`ArrayBuilder::create`] writes its metadata (and any missing parent
/// groups) to a store. Defaults: Zarr v3, chunks of about 1 MiB, zstd level 3 (gzip level 6
/// for N5), zero fill value, no attributes.
#[derive(Clone, Debug)]
pub struct ArrayBuilder {
    shape: Vec<u64>,
    data_type: DataType,
    format: ZarrFormat,
    chunks: Option<Vec<usize>>,
    shards: Option<Vec<usize>>,
    codecs: Option<Vec<Codec>>,
    fill_value: FillValue,
    attributes: Map<String, Value>,
    dimension_names: Option<Vec<Option<String>>>,
    n5_axis_order: N5AxisOrder,
    separator: Option<char>,
    options: ArrayOptions,
    precomputed: crate::precomputed::PrecomputedOptions,
}

impl ArrayBuilder {
    /// A new array of `shape` and `data_type`.
    pub fn new(shape: impl Into<Vec<u64>>, data_type: DataType) -> Self {
        ArrayBuilder {
            shape: shape.into(),
            data_type,
            format: ZarrFormat::V3,
            chunks: None,
            shards: None,
            codecs: None,
            fill_value: FillValue::Zero,
            attributes: Map::new(),
            dimension_names: None,
            n5_axis_order: N5AxisOrder::Listed,
            separator: None,
            options: ArrayOptions::default(),
            precomputed: crate::precomputed::PrecomputedOptions::default(),
        }
    }

    /// The on-disk format (default Zarr v3).
    pub fn format(mut self, format: ZarrFormat) -> Self {
        self.format = format;
        self
    }

    /// The chunk shape (with [`ArrayBuilder::shards`], the inner chunk shape).
    pub fn chunks(mut self, chunks: impl Into<Vec<usize>>) -> Self {
        self.chunks = Some(chunks.into());
        self
    }

    /// Store chunks in shards of this shape (Zarr v3 `sharding_indexed`; each size a multiple of
    /// the chunk size). The shard index is little-endian with a crc32c checksum.
    pub fn shards(mut self, shards: impl Into<Vec<usize>>) -> Self {
        self.shards = Some(shards.into());
        self
    }

    /// The chunk codecs, in order: array→array codecs (`Transpose`, `BitRound`, …), at most
    /// one array→bytes codec (`Bytes`, `VlenUtf8`, `VlenBytes`, `Pcodec`, `Zfpy`; the data
    /// type's default when absent), then compressions and checksums. An empty list stores
    /// chunks uncompressed; without this call, [`default_codecs`] of the format.
    pub fn codecs(mut self, codecs: impl IntoIterator<Item = Codec>) -> Self {
        self.codecs = Some(codecs.into_iter().collect());
        self
    }

    /// The fill value (default zero): `FillValue::of(f32::NAN)`, bytes or format JSON.
    pub fn fill_value(mut self, fill_value: FillValue) -> Self {
        self.fill_value = fill_value;
        self
    }

    /// Replace the user attributes.
    pub fn attributes(mut self, attributes: Map<String, Value>) -> Self {
        self.attributes = attributes;
        self
    }

    /// Set one user attribute.
    pub fn attribute(mut self, key: impl Into<String>, value: Value) -> Self {
        self.attributes.insert(key.into(), value);
        self
    }

    /// Name every dimension (Zarr v3 `dimension_names`; N5 `axes`).
    pub fn dimension_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.dimension_names = Some(names.into_iter().map(|n| Some(n.into())).collect());
        self
    }

    /// The axis order an N5 dataset is written in (see [`N5AxisOrder`]).
    pub fn n5_axis_order(mut self, order: N5AxisOrder) -> Self {
        self.n5_axis_order = order;
        self
    }

    /// The chunk key separator: `/` (`c/0/1`, Zarr v3's default) or `.` (`0.1`, Zarr v2's).
    pub fn chunk_key_separator(mut self, separator: char) -> Self {
        self.separator = Some(separator);
        self
    }

    /// For [`ZarrFormat::Precomputed`]: the scale's voxel offset, resolution, layer type,
    /// sharding and gzip files (see [`PrecomputedOptions`](crate::PrecomputedOptions)). The
    /// array is created at `LAYER/KEY`; its shape is `[x, y, z]` (a channel axis of 1 is added)
    /// or `[x, y, z, channel]`, its encoding the serializer among the codecs
    /// (`Codec::NeuroglancerRaw` by default, `Codec::CompressedSegmentation`,
    /// `Codec::NeuroglancerJpeg`, `Codec::NeuroglancerPng`), `Codec::Gzip` stores unsharded
    /// chunks as `.gz` files.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use neurochunk_array::{selection, ArrayBuilder, Codec, DataType, MemoryStore, Store};
    /// use neurochunk_array::{PrecomputedOptions, ZarrFormat};
    ///
    /// let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    /// let labels = ArrayBuilder::new([64, 64, 32], DataType::UInt64)
    ///     .format(ZarrFormat::Precomputed)
    ///     .chunks([32, 32, 16])
    ///     .codecs([Codec::CompressedSegmentation { block_size: [8, 8, 8] }])
    ///     .precomputed(PrecomputedOptions {
    ///         voxel_offset: Some([100, 200, 0]),
    ///         resolution: Some([8.0, 8.0, 40.0]),
    ///         ..PrecomputedOptions::default()
    ///     })
    ///     .create(store.clone(), "seg/8_8_40")?;
    /// assert_eq!(labels.shape(), [64, 64, 32, 1]);
    /// labels.write_elements(&selection![..], &vec![7u64; 64 * 64 * 32])?;
    /// assert!(store.exists("seg/info")?);
    /// assert!(store.exists("seg/8_8_40/100-132_200-232_0-16")?);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn precomputed(mut self, options: crate::precomputed::PrecomputedOptions) -> Self {
        self.precomputed = options;
        self
    }

    /// Store chunks whose elements all equal the fill value (default: delete them).
    pub fn write_empty_chunks(mut self, write: bool) -> Self {
        self.options.write_empty_chunks = write;
        self
    }

    /// The array's description for `path`, without touching a store. Errors, naming the array,
    /// when the format cannot hold what was asked for (e.g. shards in Zarr v2, a transpose that
    /// Zarr v2 cannot express, two compressions in N5).
    pub fn metadata(&self, path: &str) -> ArrayResult<ArrayMetadata> {
        let err = |message: String| ArrayError::Unsupported {
            path: crate::display_path(path),
            message,
        };
        if let Some(sep) = self.separator.filter(|s| *s != '.' && *s != '/') {
            return Err(err(format!(
                "chunk key separator must be '.' or '/', not '{sep}'"
            )));
        }
        let element_size = self.data_type.fixed_size().unwrap_or(16);
        let mut shape = self.shape.clone();
        let mut chunk_shape = self
            .chunks
            .clone()
            .unwrap_or_else(|| default_chunk_shape(&self.shape, element_size));
        if self.format == ZarrFormat::Precomputed {
            // Precomputed volumes are x, y, z, channel: 3-d arrays get one channel, and the
            // channels are never chunked.
            if shape.len() == 3 && chunk_shape.len() == 3 {
                shape.push(1);
                chunk_shape.push(1);
            }
            let channels = shape
                .get(3)
                .map(|&c| usize::try_from(c).unwrap_or(usize::MAX));
            match (channels, chunk_shape.len()) {
                // Chunk sizes given for x, y, z only.
                (Some(channels), 3) if shape.len() == 4 => chunk_shape.push(channels),
                (Some(channels), 4) if shape.len() == 4 => chunk_shape[3] = channels,
                _ => {}
            }
        }
        let codecs = self
            .codecs
            .clone()
            .unwrap_or_else(|| default_codecs(self.format));
        // Fields with their own byte order exist only in Zarr v2; elsewhere the element has one
        // byte order (values are the same: in memory every field is little-endian).
        let data_type = match self.format {
            ZarrFormat::V2 => self.data_type.clone(),
            ZarrFormat::V3 | ZarrFormat::N5 | ZarrFormat::Precomputed => {
                self.data_type.without_field_byte_orders()
            }
        };
        let repr = ChunkRepr {
            shape: chunk_shape.clone(),
            data_type: data_type.clone(),
            fill_value: self.data_type.zero_fill(),
        };
        let chain = self.chain(&codecs, &repr, path)?;
        let fill_value = self.fill_bytes(path)?;
        let plain = ArrayMetadata {
            format: ZarrFormat::V3,
            shape,
            chunk_shape,
            data_type,
            fill_value,
            key_encoding: ChunkKeyEncoding::V3_DEFAULT,
            codecs: Arc::new(chain),
            attributes: self.attributes.clone(),
            dimension_names: self.dimension_names.clone(),
        };
        let compressors: Vec<Codec> = codecs
            .iter()
            .filter(|c| c.kind() == CodecKind::BytesToBytes)
            .cloned()
            .collect();
        let options = ConvertOptions {
            format: Some(self.format),
            shards: self.shards.clone(),
            separator: self.separator,
            n5_axis_order: self.n5_axis_order,
            // What is asked for here is kept as asked, or refused below.
            compressors: Some(compressors),
            keep_checksums: true,
            precomputed: self.precomputed.clone(),
            ..ConvertOptions::default()
        };
        let derived = derive_array(&plain, &options, path)?;
        if !derived.changes.is_empty() {
            return Err(err(format!(
                "cannot be created as {} as described: {}",
                self.format.label(),
                derived.changes.join("; ")
            )));
        }
        let mut metadata = derived.metadata;
        if self.format == ZarrFormat::V2 {
            // Zarr v2 records a fill value (or `null`) of its own.
            metadata.fill_value = plain.fill_value;
        }
        Ok(metadata)
    }

    /// Create the array at `path` in `store`: write its metadata and any missing parent groups.
    pub fn create(&self, store: Arc<dyn Store>, path: &str) -> ArrayResult<Array> {
        let metadata = self.metadata(path)?;
        Ok(Array::create(store, path, metadata)?.with_options(self.options))
    }

    /// The runtime chain of `codecs`: array→array codecs, one array→bytes codec (the data
    /// type's default when none is listed), then bytes→bytes codecs, in that order.
    fn chain(&self, codecs: &[Codec], repr: &ChunkRepr, path: &str) -> ArrayResult<CodecChain> {
        let codec_err = |source| ArrayError::Codecs {
            path: crate::display_path(path),
            source,
        };
        let order_err = |message: String| ArrayError::Unsupported {
            path: crate::display_path(path),
            message,
        };
        let mut a2a: Vec<Arc<dyn ArrayToArrayCodec>> = Vec::new();
        let mut a2b: Option<Arc<dyn ArrayToBytesCodec>> = None;
        let mut compressors = Vec::new();
        let mut current = repr.clone();
        for codec in codecs {
            match codec.kind() {
                CodecKind::ArrayToArray if a2b.is_some() || !compressors.is_empty() => {
                    return Err(order_err(format!(
                        "{codec} must come before the serializer and the compressions"
                    )))
                }
                CodecKind::ArrayToBytes if a2b.is_some() || !compressors.is_empty() => {
                    return Err(order_err(format!(
                        "{codec} must be the only serializer and come before the compressions"
                    )))
                }
                CodecKind::BytesToBytes => compressors.push(codec.clone()),
                CodecKind::ArrayToArray | CodecKind::ArrayToBytes => {
                    match codec.build(&current).map_err(codec_err)? {
                        AnyCodec::ArrayToArray(c) => {
                            current = c.encoded_repr(&current).map_err(codec_err)?;
                            a2a.push(c);
                        }
                        AnyCodec::ArrayToBytes(c) => a2b = Some(c),
                        AnyCodec::BytesToBytes(_) => {}
                    }
                }
            }
        }
        let a2b = match a2b {
            Some(c) => c,
            None => match Codec::default_serializer(&current.data_type)
                .build(&current)
                .map_err(codec_err)?
            {
                AnyCodec::ArrayToBytes(c) => c,
                _ => return Err(order_err("no serializer for the data type".into())),
            },
        };
        let b2b = build_compressors(&compressors, &current, path)?;
        CodecChain::try_new(a2a, a2b, b2b, &current).map_err(codec_err)
    }

    /// The fill value as element bytes (`None` is Zarr v2's `null`).
    fn fill_bytes(&self, path: &str) -> ArrayResult<Option<Vec<u8>>> {
        let err = |message: String| ArrayError::Metadata {
            path: crate::display_path(path),
            message: format!("fill value: {message}"),
        };
        let fill = match &self.fill_value {
            FillValue::Zero => Some(self.data_type.zero_fill()),
            FillValue::Bytes(bytes) => {
                if let Some(size) = self.data_type.fixed_size() {
                    if bytes.len() != size {
                        return Err(err(format!(
                            "{} bytes given, but one {} element is {size}",
                            bytes.len(),
                            self.data_type
                        )));
                    }
                }
                Some(bytes.clone())
            }
            FillValue::Json(json) => match self.format {
                ZarrFormat::V2 => {
                    neurochunk_dtype::v2::fill_value_from_v2_json(json, &self.data_type)
                        .map_err(|e| err(e.to_string()))?
                }
                ZarrFormat::V3 | ZarrFormat::N5 | ZarrFormat::Precomputed => Some(
                    neurochunk_dtype::v3::fill_value_from_v3_json(json, &self.data_type)
                        .map_err(|e| err(e.to_string()))?,
                ),
            },
        };
        if matches!(self.format, ZarrFormat::N5 | ZarrFormat::Precomputed)
            && fill.as_ref().is_some_and(|f| f.iter().any(|&b| b != 0))
        {
            return Err(err(format!(
                "{} has no fill value (missing chunks read as 0)",
                self.format.label()
            )));
        }
        Ok(fill)
    }
}
