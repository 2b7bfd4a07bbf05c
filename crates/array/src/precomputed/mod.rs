//! Neuroglancer *precomputed* volumes, the fourth front end of the engine (read and write).
//!
//! **Node model.** A *layer* is a directory holding an `info` document (JSON: `type`,
//! `data_type`, `num_channels`, `scales`); it opens as a group (format
//! [`ZarrFormat::Precomputed`]) whose attributes are the `info` document without `scales`,
//! plus `scales`: the list of the scale keys. Each scale is an array at `LAYER/KEY`
//! (`open_node(store, "LAYER/KEY")`), found through the `info` of the nearest ancestor that
//! lists a scale of that key.
//!
//! **Axes and offset.** A scale is presented with the axes `x, y, z, channel` (C order, as
//! tensorstore and cloud-volume present them): shape `[size_x, size_y, size_z, num_channels]`,
//! chunks `[chunk_x, chunk_y, chunk_z, num_channels]` (channels are never chunked). Index 0 of
//! each spatial axis is the scale's `voxel_offset`; the offset, the resolution and the rest of
//! the scale's description are the array's attribute `precomputed` (see
//! [`ScaleInfo::attributes`]). Chunk keys are `xBegin-xEnd_yBegin-yEnd_zBegin-zEnd` in voxel
//! coordinates including the offset ([`ScaleInfo::chunk_key`]).
//!
//! **Encodings.** The chain is one array→bytes codec, [`PrecomputedCodec`], which carries the
//! scale's description and wraps the encoding's format-independent codec from the codec crate
//! (`raw`, `compressed_segmentation`, `jpeg`, `png`). Edge chunks are stored truncated (the
//! engine hands each chunk's extent to the chain). `compresso` is refused by name.
//!
//! **Storage.** An array of this format reads and writes its chunks through a [`ScaleStore`]
//! laid over the store it was opened on: for an unsharded scale a chunk missing under its key
//! is read from `KEY.gz` (cloud-volume's gzip-compressed files), for a sharded scale
//! (`neuroglancer_uint64_sharded_v1`, see [`sharding`]) a chunk key is resolved to a byte
//! range of a shard file by the shard index and the minishard index. The engine's plan, fetch,
//! decode and scatter stages are the same as for every other format.
//!
//! See `docs/precomputed.md`.

pub mod annotation;
pub mod mesh;
pub mod sharding;
pub mod skeleton;
mod store;
pub mod uint64_index;

pub use sharding::{ShardEncoding, ShardHash, ShardingSpec};
pub use store::ScaleStore;

use std::sync::Arc;

use neurochunk_codec::{
    ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecChain, CodecResult, CompressedSegmentationCodec,
    NeuroglancerJpegCodec, NeuroglancerPngCodec, NeuroglancerRawCodec,
};
use neurochunk_dtype::DataType;
use neurochunk_store::{join_key, Store};
use serde_json::{json, Map, Value};

use crate::error::{ArrayError, ArrayResult};
use crate::metadata::{
    parse_document, ArrayMetadata, ChunkKeyEncoding, GroupMetadata, NodeMetadata, ZarrFormat,
};

/// The metadata document of a layer.
pub const INFO: &str = "info";
/// The attribute of a scale array holding its precomputed description.
pub const ATTRIBUTE: &str = "precomputed";
/// The dimension names of every scale.
pub const AXES: [&str; 4] = ["x", "y", "z", "channel"];

/// The data types of precomputed volumes (tensorstore's set).
pub const DATA_TYPES: &[&str] = &[
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "float32",
];

/// The data type of a precomputed `data_type` name (case-insensitive).
pub fn data_type_of(name: &str) -> Option<DataType> {
    Some(match name.to_ascii_lowercase().as_str() {
        "uint8" => DataType::UInt8,
        "int8" => DataType::Int8,
        "uint16" => DataType::UInt16,
        "int16" => DataType::Int16,
        "uint32" => DataType::UInt32,
        "int32" => DataType::Int32,
        "uint64" => DataType::UInt64,
        "float32" => DataType::Float32,
        _ => return None,
    })
}

/// The precomputed `data_type` name of a data type, if the format has it.
pub fn data_type_name(data_type: &DataType) -> Option<&'static str> {
    Some(match data_type {
        DataType::UInt8 => "uint8",
        DataType::Int8 => "int8",
        DataType::UInt16 => "uint16",
        DataType::Int16 => "int16",
        DataType::UInt32 => "uint32",
        DataType::Int32 => "int32",
        DataType::UInt64 => "uint64",
        DataType::Float32 => "float32",
        _ => return None,
    })
}

/// A scale's chunk encoding.
#[derive(Clone, Debug, PartialEq)]
pub enum Encoding {
    /// `raw`: little-endian, Fortran order per channel.
    Raw,
    /// `jpeg` at a quality 1–100 (uint8, 1 or 3 channels).
    Jpeg {
        /// The quality written (`jpeg_quality`; reading ignores it).
        quality: u8,
    },
    /// `png` (uint8 / uint16, 1–4 channels).
    Png {
        /// The zlib level written (`png_level`), when given.
        level: Option<u8>,
    },
    /// `compressed_segmentation` (uint32 / uint64) with blocks of `block_size`.
    CompressedSegmentation {
        /// `compressed_segmentation_block_size`, `[x, y, z]`.
        block_size: [usize; 3],
    },
}

impl Encoding {
    /// The `encoding` name.
    pub fn name(&self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Jpeg { .. } => "jpeg",
            Encoding::Png { .. } => "png",
            Encoding::CompressedSegmentation { .. } => "compressed_segmentation",
        }
    }

    /// The encoding's codec for chunks of `repr` (checked against the data type and channels).
    pub fn codec(&self, repr: &ChunkRepr) -> CodecResult<Arc<dyn ArrayToBytesCodec>> {
        Ok(match self {
            Encoding::Raw => Arc::new(NeuroglancerRawCodec::new()),
            Encoding::Jpeg { quality } => {
                NeuroglancerJpegCodec::check_type(repr)?;
                Arc::new(NeuroglancerJpegCodec::new(*quality)?)
            }
            Encoding::Png { level } => {
                NeuroglancerPngCodec::check_type(repr)?;
                Arc::new(NeuroglancerPngCodec::new(*level)?)
            }
            Encoding::CompressedSegmentation { block_size } => {
                CompressedSegmentationCodec::check_type(repr)?;
                Arc::new(CompressedSegmentationCodec::new(*block_size)?)
            }
        })
    }

    /// The encoding a codec of the codec crate stands for, if it is one of the precomputed
    /// encodings.
    pub fn of_codec(codec: &dyn ArrayToBytesCodec) -> Option<Encoding> {
        let any: &dyn std::any::Any = codec;
        if any.is::<NeuroglancerRawCodec>() {
            return Some(Encoding::Raw);
        }
        if let Some(c) = any.downcast_ref::<NeuroglancerJpegCodec>() {
            return Some(Encoding::Jpeg {
                quality: c.quality(),
            });
        }
        if let Some(c) = any.downcast_ref::<NeuroglancerPngCodec>() {
            return Some(Encoding::Png { level: c.level() });
        }
        if let Some(c) = any.downcast_ref::<CompressedSegmentationCodec>() {
            return Some(Encoding::CompressedSegmentation {
                block_size: c.block_size(),
            });
        }
        if let Some(c) = any.downcast_ref::<PrecomputedCodec>() {
            return Some(c.scale.encoding.clone());
        }
        None
    }
}

/// One entry of an `info` document's `scales`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleInfo {
    /// The scale's `key`: its directory relative to the layer.
    pub key: String,
    /// `size`: voxels along `x, y, z`.
    pub size: [u64; 3],
    /// `voxel_offset`: the voxel coordinates of array index 0.
    pub voxel_offset: [i64; 3],
    /// The (first of the) `chunk_sizes`.
    pub chunk_size: [u64; 3],
    /// `resolution` in nanometres.
    pub resolution: [f64; 3],
    /// `encoding` and its parameters.
    pub encoding: Encoding,
    /// `sharding`, when the scale is sharded.
    pub sharding: Option<ShardingSpec>,
    /// Members this crate does not interpret (kept when the `info` is rewritten).
    pub extra: Map<String, Value>,
}

/// A layer's `info` document.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerInfo {
    /// `type`: `image` or `segmentation`.
    pub layer_type: String,
    /// `data_type`.
    pub data_type: DataType,
    /// `num_channels`.
    pub num_channels: u64,
    /// `scales`.
    pub scales: Vec<ScaleInfo>,
    /// Members this crate does not interpret (`@type`, `mesh`, `skeletons`, …; kept).
    pub extra: Map<String, Value>,
}

fn info_err(path: &str, message: impl Into<String>) -> ArrayError {
    ArrayError::metadata(path, format!("{INFO}: {}", message.into()))
}

fn triple<T>(
    value: Option<&Value>,
    member: &str,
    path: &str,
    what: &str,
    get: impl Fn(&Value) -> Option<T>,
) -> ArrayResult<[T; 3]> {
    let list = value
        .and_then(Value::as_array)
        .filter(|l| l.len() == 3)
        .ok_or_else(|| info_err(path, format!("'{member}' must be 3 {what}")))?;
    let items: Option<Vec<T>> = list.iter().map(get).collect();
    let items = items.ok_or_else(|| info_err(path, format!("'{member}' must be 3 {what}")))?;
    items
        .try_into()
        .map_err(|_| info_err(path, format!("'{member}' must be 3 {what}")))
}

impl ScaleInfo {
    fn parse(value: &Value, index: usize, path: &str, num_channels: u64) -> ArrayResult<ScaleInfo> {
        let at = format!("scales[{index}]");
        let map = value
            .as_object()
            .ok_or_else(|| info_err(path, format!("{at} must be an object")))?;
        let key = map
            .get("key")
            .and_then(Value::as_str)
            .filter(|k| !k.is_empty())
            .ok_or_else(|| info_err(path, format!("{at} needs 'key', a non-empty string")))?
            .to_string();
        let at = format!("scale '{key}'");
        let size = triple(
            map.get("size"),
            "size",
            path,
            "non-negative integers",
            Value::as_u64,
        )
        .map_err(|e| info_err(path, format!("{at}: {e}")))?;
        let voxel_offset = match map.get("voxel_offset") {
            None | Some(Value::Null) => [0; 3],
            v => triple(v, "voxel_offset", path, "integers", Value::as_i64)
                .map_err(|e| info_err(path, format!("{at}: {e}")))?,
        };
        let resolution = triple(
            map.get("resolution"),
            "resolution",
            path,
            "numbers",
            Value::as_f64,
        )
        .map_err(|e| info_err(path, format!("{at}: {e}")))?;
        let chunk_size = match map.get("chunk_sizes").and_then(Value::as_array) {
            Some(list) if !list.is_empty() => triple(
                list.first(),
                "chunk_sizes[0]",
                path,
                "positive integers",
                |v| v.as_u64().filter(|&c| c > 0),
            )
            .map_err(|e| info_err(path, format!("{at}: {e}")))?,
            _ => {
                return Err(info_err(
                    path,
                    format!("{at} needs 'chunk_sizes', a list of [x, y, z] chunk sizes"),
                ))
            }
        };
        let encoding_name = map
            .get("encoding")
            .and_then(Value::as_str)
            .ok_or_else(|| info_err(path, format!("{at} needs 'encoding', a string")))?;
        let encoding = match encoding_name.to_ascii_lowercase().as_str() {
            "raw" => Encoding::Raw,
            "jpeg" => Encoding::Jpeg {
                quality: map
                    .get("jpeg_quality")
                    .and_then(Value::as_u64)
                    .filter(|q| (1..=100).contains(q))
                    .unwrap_or(75) as u8,
            },
            "png" => Encoding::Png {
                level: map
                    .get("png_level")
                    .and_then(Value::as_u64)
                    .filter(|l| *l <= 9)
                    .map(|l| l as u8),
            },
            "compressed_segmentation" => Encoding::CompressedSegmentation {
                block_size: triple(
                    map.get("compressed_segmentation_block_size"),
                    "compressed_segmentation_block_size",
                    path,
                    "positive integers",
                    |v| {
                        v.as_u64()
                            .filter(|&b| b > 0)
                            .and_then(|b| usize::try_from(b).ok())
                    },
                )
                .map_err(|e| info_err(path, format!("{at}: {e}")))?,
            },
            "compresso" => {
                return Err(ArrayError::Unsupported {
                    path: crate::display_path(path),
                    message: format!(
                        "{at} uses the 'compresso' encoding, which neurochunk cannot decode (no \
                         maintained Rust decoder exists); convert it with cloud-volume to \
                         'compressed_segmentation' to read it here"
                    ),
                })
            }
            other => {
                return Err(ArrayError::Unsupported {
                    path: crate::display_path(path),
                    message: format!(
                        "{at} uses the encoding '{other}', which neurochunk does not support \
                         (raw, jpeg, png and compressed_segmentation are)"
                    ),
                })
            }
        };
        let sharding = match map.get("sharding") {
            None | Some(Value::Null) => None,
            Some(v) => {
                Some(ShardingSpec::from_json(v).map_err(|e| info_err(path, format!("{at}: {e}")))?)
            }
        };
        const KNOWN: &[&str] = &[
            "key",
            "size",
            "voxel_offset",
            "resolution",
            "chunk_sizes",
            "encoding",
            "jpeg_quality",
            "png_level",
            "compressed_segmentation_block_size",
            "sharding",
        ];
        let extra = map
            .iter()
            .filter(|(k, _)| !KNOWN.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let scale = ScaleInfo {
            key,
            size,
            voxel_offset,
            chunk_size,
            resolution,
            encoding,
            sharding,
            extra,
        };
        scale.check(path, num_channels)?;
        Ok(scale)
    }

    /// Refuse sizes the engine cannot address and sharded grids whose chunk ids would need
    /// more than 64 bits.
    fn check(&self, path: &str, num_channels: u64) -> ArrayResult<()> {
        let at = format!("scale '{}'", self.key);
        if self.voxel_offset.iter().zip(&self.size).any(|(&o, &s)| {
            i64::try_from(s)
                .ok()
                .and_then(|s| o.checked_add(s))
                .is_none()
        }) {
            return Err(info_err(
                path,
                format!("{at}: voxel_offset + size overflows"),
            ));
        }
        if self.sharding.is_some() {
            let bits: u32 = sharding::morton_bits(&self.grid_shape()).iter().sum();
            if bits > 64 {
                return Err(info_err(
                    path,
                    format!(
                        "{at}: its chunk grid {:?} needs {bits} bits of chunk id, more than 64",
                        self.grid_shape()
                    ),
                ));
            }
        }
        if num_channels == 0 {
            return Err(info_err(path, "'num_channels' must be at least 1"));
        }
        Ok(())
    }

    /// Chunks along `x, y, z`.
    pub fn grid_shape(&self) -> [u64; 3] {
        [0, 1, 2].map(|d| self.size[d].div_ceil(self.chunk_size[d]))
    }

    /// The scale as an `info` entry (keys sorted, as tensorstore writes them).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("chunk_sizes".into(), json!([self.chunk_size]));
        if let Encoding::CompressedSegmentation { block_size } = &self.encoding {
            map.insert(
                "compressed_segmentation_block_size".into(),
                json!(block_size),
            );
        }
        map.insert("encoding".into(), json!(self.encoding.name()));
        match &self.encoding {
            Encoding::Jpeg { quality } => {
                map.insert("jpeg_quality".into(), json!(quality));
            }
            Encoding::Png { level: Some(level) } => {
                map.insert("png_level".into(), json!(level));
            }
            _ => {}
        }
        map.insert("key".into(), json!(self.key));
        map.insert("resolution".into(), json!(self.resolution));
        if let Some(sharding) = &self.sharding {
            map.insert("sharding".into(), sharding.to_json());
        }
        map.insert("size".into(), json!(self.size));
        map.insert("voxel_offset".into(), json!(self.voxel_offset));
        for (k, v) in &self.extra {
            map.insert(k.clone(), v.clone());
        }
        let mut sorted: Vec<(String, Value)> = map.into_iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Object(sorted.into_iter().collect())
    }

    /// The array attribute `precomputed` of this scale: `type`, `key`, `resolution`,
    /// `voxel_offset`, `encoding` (and its parameters), `sharding`.
    pub fn attributes(&self, layer_type: &str) -> Map<String, Value> {
        let mut scale = match self.to_json() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        scale.remove("size");
        scale.remove("chunk_sizes");
        scale.insert("type".into(), json!(layer_type));
        let mut attributes = Map::new();
        attributes.insert(ATTRIBUTE.into(), Value::Object(scale));
        attributes
    }

    /// The key (relative to the scale's directory) of the chunk at grid position `index`
    /// (`x, y, z` and, ignored, the channel chunk).
    pub fn chunk_key(&self, index: &[u64]) -> String {
        let mut parts = Vec::with_capacity(3);
        for d in 0..3 {
            let g = index.get(d).copied().unwrap_or(0);
            let begin = g.saturating_mul(self.chunk_size[d]);
            let end = begin.saturating_add(self.chunk_size[d]).min(self.size[d]);
            let o = self.voxel_offset[d] as i128;
            parts.push(format!("{}-{}", o + begin as i128, o + end as i128));
        }
        parts.join("_")
    }

    /// The grid position `[x, y, z, 0]` of a chunk key (inverse of [`ScaleInfo::chunk_key`]).
    pub fn parse_chunk_key(&self, key: &str) -> Option<Vec<u64>> {
        let mut index = Vec::with_capacity(4);
        let parts: Vec<&str> = key.split('_').collect();
        if parts.len() != 3 {
            return None;
        }
        for (d, part) in parts.iter().enumerate() {
            // `begin-end`, either possibly negative.
            let split = part.get(1..)?.find('-')? + 1;
            let begin: i128 = part[..split].parse().ok()?;
            let rel = begin - self.voxel_offset[d] as i128;
            if rel < 0 || rel % self.chunk_size[d] as i128 != 0 {
                return None;
            }
            let g = (rel / self.chunk_size[d] as i128) as u64;
            if g >= self.grid_shape()[d] {
                return None;
            }
            index.push(g);
        }
        index.push(0);
        (self.chunk_key(&index) == key).then_some(index)
    }
}

impl LayerInfo {
    /// Parse an `info` document; `Ok(None)` when it is no volume (no `scales`: a mesh,
    /// skeleton or annotation `info`, or some other file called `info`).
    pub fn parse(doc: &Value, path: &str) -> ArrayResult<Option<LayerInfo>> {
        let Some(map) = doc.as_object() else {
            return Ok(None);
        };
        let Some(scales) = map.get("scales") else {
            return Ok(None);
        };
        if let Some(t) = map.get("@type").and_then(Value::as_str) {
            if t != "neuroglancer_multiscale_volume" {
                return Ok(None);
            }
        }
        let scales = scales
            .as_array()
            .ok_or_else(|| info_err(path, "'scales' must be a list"))?;
        let type_name = map
            .get("data_type")
            .and_then(Value::as_str)
            .ok_or_else(|| info_err(path, "needs 'data_type', a string"))?;
        let data_type = data_type_of(type_name).ok_or_else(|| ArrayError::Unsupported {
            path: crate::display_path(path),
            message: format!(
                "info: data_type '{type_name}' is not one of {}",
                DATA_TYPES.join(", ")
            ),
        })?;
        let num_channels = map
            .get("num_channels")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .ok_or_else(|| info_err(path, "needs 'num_channels', a positive integer"))?;
        let layer_type = map
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("image")
            .to_string();
        let scales = scales
            .iter()
            .enumerate()
            .map(|(i, s)| ScaleInfo::parse(s, i, path, num_channels))
            .collect::<ArrayResult<Vec<_>>>()?;
        let extra = map
            .iter()
            .filter(|(k, _)| !["scales", "data_type", "num_channels", "type"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(Some(LayerInfo {
            layer_type,
            data_type,
            num_channels,
            scales,
            extra,
        }))
    }

    /// The `info` document (keys sorted, `@type` first, as tensorstore writes it).
    pub fn to_json(&self) -> Value {
        let mut map = Map::new();
        map.insert("@type".into(), json!("neuroglancer_multiscale_volume"));
        for (k, v) in &self.extra {
            map.insert(k.clone(), v.clone());
        }
        map.insert(
            "data_type".into(),
            json!(data_type_name(&self.data_type).unwrap_or("uint8")),
        );
        map.insert("num_channels".into(), json!(self.num_channels));
        map.insert(
            "scales".into(),
            Value::Array(self.scales.iter().map(ScaleInfo::to_json).collect()),
        );
        map.insert("type".into(), json!(self.layer_type));
        let mut sorted: Vec<(String, Value)> = map.into_iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        Value::Object(sorted.into_iter().collect())
    }

    /// The layer's group attributes: the `info` document without `scales`, and `scales` as the
    /// list of scale keys.
    pub fn group_attributes(&self) -> Map<String, Value> {
        let mut attributes = match self.to_json() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        attributes.insert(
            "scales".into(),
            json!(self
                .scales
                .iter()
                .map(|s| s.key.clone())
                .collect::<Vec<_>>()),
        );
        attributes
    }
}

/// Read and parse `path/info`; `None` when there is none or it describes no volume.
pub fn read_layer(store: &dyn Store, path: &str) -> ArrayResult<Option<LayerInfo>> {
    let path = path.trim_matches('/');
    match store.get(&join_key(path, INFO))? {
        None => Ok(None),
        Some(bytes) => match parse_document(&bytes, path, INFO) {
            Ok(doc) => LayerInfo::parse(&doc, path),
            // Some other file called `info`.
            Err(_) => Ok(None),
        },
    }
}

/// Where a scale array lives: its layer's path and the scale's index in the layer.
fn find_scale(store: &dyn Store, path: &str) -> ArrayResult<Option<(String, LayerInfo, usize)>> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    // The nearest ancestor first; a key may span directories (`a/b`).
    for depth in (0..parts.len()).rev().take(4) {
        let layer = parts[..depth].join("/");
        let key = parts[depth..].join("/");
        if let Some(info) = read_layer(store, &layer)? {
            if let Some(i) = info
                .scales
                .iter()
                .position(|s| s.key.trim_matches('/').trim_start_matches("./") == key)
            {
                return Ok(Some((layer, info, i)));
            }
        }
    }
    Ok(None)
}

/// The node at `path` when it is a precomputed layer (a group) or scale (an array).
pub(crate) fn read_node(store: &dyn Store, path: &str) -> ArrayResult<Option<NodeMetadata>> {
    if let Some(info) = read_layer(store, path)? {
        return Ok(Some(NodeMetadata::Group(GroupMetadata {
            format: ZarrFormat::Precomputed,
            attributes: info.group_attributes(),
            consolidated: None,
        })));
    }
    if path.is_empty() {
        return Ok(None);
    }
    match find_scale(store, path)? {
        Some((_, info, i)) => Ok(Some(NodeMetadata::Array(Box::new(scale_metadata(
            &info, i, path,
        )?)))),
        None => Ok(None),
    }
}

/// When the local directory `dir` is a scale of a layer (it holds no `info` of its own and its
/// parent's `info` lists a scale named like it): the layer's directory and the scale's key.
/// Opening the layer's directory and the array at the key reads the scale.
pub fn local_scale_dir(dir: &std::path::Path) -> Option<(std::path::PathBuf, String)> {
    if dir.join(INFO).is_file() {
        return None;
    }
    let (parent, name) = (dir.parent()?, dir.file_name()?.to_str()?);
    if !parent.join(INFO).is_file() {
        return None;
    }
    let layer = neurochunk_store::FsStore::new(parent);
    let scales = layer_scales(&layer, "").ok()?;
    scales
        .iter()
        .any(|key| key.trim_matches('/') == name)
        .then(|| (parent.to_path_buf(), name.to_string()))
}

/// Whether a file name in a scale directory is one of the scale's: a chunk
/// (`xBegin-xEnd_yBegin-yEnd_zBegin-zEnd`, bounds possibly negative, optionally `.gz`) or a
/// shard (`HEX.shard`).
pub fn is_scale_file(name: &str) -> bool {
    if let Some(hex) = name.strip_suffix(".shard") {
        return !hex.is_empty() && hex.bytes().all(|b| b.is_ascii_hexdigit());
    }
    let chunk = name.strip_suffix(".gz").unwrap_or(name);
    let parts: Vec<&str> = chunk.split('_').collect();
    parts.len() == 3
        && parts.iter().all(|part| {
            // The end's `-` is the first after the begin's digits (a begin may be negative).
            let split = part
                .char_indices()
                .skip(1)
                .find(|&(_, c)| c == '-')
                .map(|(i, _)| i);
            split.is_some_and(|i| {
                part[..i].parse::<i64>().is_ok() && part[i + 1..].parse::<i64>().is_ok()
            })
        })
}

/// The keys of the scales of the layer at `path` (an error when there is no layer there).
pub fn layer_scales(store: &dyn Store, path: &str) -> ArrayResult<Vec<String>> {
    read_layer(store, path)?
        .map(|info| info.scales.iter().map(|s| s.key.clone()).collect())
        .ok_or_else(|| ArrayError::NotFound(crate::display_path(path)))
}

/// The description of scale `index` of `info`, as an array at `path`.
pub fn scale_metadata(info: &LayerInfo, index: usize, path: &str) -> ArrayResult<ArrayMetadata> {
    let scale = info
        .scales
        .get(index)
        .ok_or_else(|| ArrayError::metadata(path, format!("{INFO}: no scale number {index}")))?;
    let channels = usize::try_from(info.num_channels)
        .map_err(|_| info_err(path, "'num_channels' is too large"))?;
    let mut chunk_shape = Vec::with_capacity(4);
    for &c in &scale.chunk_size {
        chunk_shape.push(usize::try_from(c).map_err(|_| info_err(path, "chunk size too large"))?);
    }
    chunk_shape.push(channels);
    let repr = ChunkRepr {
        shape: chunk_shape.clone(),
        data_type: info.data_type.clone(),
        fill_value: info.data_type.zero_fill(),
    };
    let inner = scale
        .encoding
        .codec(&repr)
        .map_err(|source| ArrayError::Codecs {
            path: crate::display_path(path),
            source,
        })?;
    let codec = PrecomputedCodec {
        layer_type: info.layer_type.clone(),
        scale: Arc::new(scale.clone()),
        inner,
        gzip_chunks: false,
    };
    ArrayMetadata {
        format: ZarrFormat::Precomputed,
        shape: vec![
            scale.size[0],
            scale.size[1],
            scale.size[2],
            info.num_channels,
        ],
        chunk_shape,
        data_type: info.data_type.clone(),
        fill_value: Some(info.data_type.zero_fill()),
        key_encoding: ChunkKeyEncoding::V2_DOT,
        codecs: Arc::new(CodecChain::new(Vec::new(), Arc::new(codec), Vec::new())),
        attributes: scale.attributes(&info.layer_type),
        dimension_names: Some(AXES.iter().map(|a| Some(a.to_string())).collect()),
    }
    .checked(path)
}

/// What a new precomputed scale looks like beyond the array's shape, data type, chunks and
/// encoding (see [`crate::ArrayBuilder::precomputed`] and [`crate::convert::ConvertOptions`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PrecomputedOptions {
    /// `voxel_offset` (default: the source's `precomputed` attribute, else zeros).
    pub voxel_offset: Option<[i64; 3]>,
    /// `resolution` in nanometres (default: the source's, else `[1, 1, 1]`).
    pub resolution: Option<[f64; 3]>,
    /// The layer `type` (default: the source's, else `segmentation` for
    /// `compressed_segmentation`, `image` otherwise); an existing layer keeps its own.
    pub layer_type: Option<String>,
    /// Store the scale sharded (default: the source's sharding when it is a precomputed scale
    /// of the same chunk grid, else unsharded).
    pub sharding: Option<ShardingSpec>,
    /// Never shard, even when the source is sharded.
    pub unsharded: bool,
    /// Store unsharded chunks gzip-compressed as `KEY.gz` files (what cloud-volume writes with
    /// `compress="gzip"`; tensorstore cannot read them).
    pub gzip: bool,
}

/// The array→bytes codec of a precomputed scale: the scale's description (which the array
/// layer's key mapping and [`ScaleStore`] use) around the encoding's codec.
#[derive(Clone, Debug)]
pub struct PrecomputedCodec {
    layer_type: String,
    scale: Arc<ScaleInfo>,
    inner: Arc<dyn ArrayToBytesCodec>,
    gzip_chunks: bool,
}

impl PrecomputedCodec {
    /// The codec of a scale of a layer of `layer_type`, encoding with `inner` (one of the
    /// codec crate's precomputed encodings); `gzip_chunks` writes unsharded chunks as `.gz`.
    pub fn new(
        layer_type: impl Into<String>,
        scale: ScaleInfo,
        inner: Arc<dyn ArrayToBytesCodec>,
        gzip_chunks: bool,
    ) -> Self {
        PrecomputedCodec {
            layer_type: layer_type.into(),
            scale: Arc::new(scale),
            inner,
            gzip_chunks,
        }
    }

    /// The scale's description.
    pub fn scale(&self) -> &ScaleInfo {
        &self.scale
    }

    pub(crate) fn scale_arc(&self) -> Arc<ScaleInfo> {
        self.scale.clone()
    }

    /// The layer's `type`.
    pub fn layer_type(&self) -> &str {
        &self.layer_type
    }

    /// The encoding's codec.
    pub fn encoding_codec(&self) -> &Arc<dyn ArrayToBytesCodec> {
        &self.inner
    }

    /// Whether unsharded chunks are written gzip-compressed (`KEY.gz`).
    pub fn gzip_chunks(&self) -> bool {
        self.gzip_chunks
    }
}

impl ArrayToBytesCodec for PrecomputedCodec {
    fn name(&self) -> &str {
        "neuroglancer_precomputed"
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        self.inner.encode(data, repr)
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.inner.decode(bytes, repr)
    }

    fn encode_extent(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        self.inner.encode_extent(data, repr, extent)
    }

    fn decode_extent(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        self.inner.decode_extent(bytes, repr, extent)
    }

    fn to_v3_json(&self) -> Value {
        json!({
            "name": "neuroglancer_precomputed",
            "configuration": {
                "scale": self.scale.to_json(),
                "gzip": self.gzip_chunks,
            }
        })
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}

impl ArrayMetadata {
    /// The precomputed codec of a precomputed scale (`None` for other formats).
    pub fn precomputed(&self) -> Option<&PrecomputedCodec> {
        self.codecs.only::<PrecomputedCodec>()
    }
}

/// The description of a new precomputed scale at `path` (`LAYER/KEY`): `shape` and
/// `chunk_shape` are `[x, y, z]` or `[x, y, z, channel]` (the channel chunk is the whole
/// channel axis), `encoding` the chunk encoding.
pub fn new_scale_metadata(
    shape: &[u64],
    chunk_shape: &[usize],
    data_type: DataType,
    encoding: Encoding,
    options: &PrecomputedOptions,
    path: &str,
) -> ArrayResult<ArrayMetadata> {
    let unsupported = |message: String| ArrayError::Unsupported {
        path: crate::display_path(path),
        message,
    };
    if data_type_name(&data_type).is_none() {
        return Err(unsupported(format!(
            "data type {data_type} has no precomputed form (precomputed has {})",
            DATA_TYPES.join(", ")
        )));
    }
    let channels = match shape.len() {
        3 => 1,
        4 => shape[3],
        n => {
            return Err(unsupported(format!(
                "precomputed volumes have 3 (x, y, z) or 4 (x, y, z, channel) dimensions, not {n}"
            )))
        }
    };
    if chunk_shape.len() != shape.len() || chunk_shape.contains(&0) {
        return Err(unsupported(format!(
            "chunk shape {chunk_shape:?} must give {} positive sizes",
            shape.len()
        )));
    }
    if shape.len() == 4 && chunk_shape[3] as u64 != channels {
        return Err(unsupported(format!(
            "precomputed chunks hold every channel: the channel chunk must be {channels}, not {}",
            chunk_shape[3]
        )));
    }
    // The scale's key is the last part of its path (a layer at the store's root holds its
    // scales at `KEY`).
    let key = match path.trim_matches('/').rsplit('/').next() {
        Some(key) if !key.is_empty() => key.to_string(),
        _ => {
            return Err(unsupported(
                "a precomputed scale lives at LAYER/KEY (its layer directory and scale key)".into(),
            ))
        }
    };
    let layer_type = options.layer_type.clone().unwrap_or_else(|| {
        if matches!(encoding, Encoding::CompressedSegmentation { .. }) {
            "segmentation".to_string()
        } else {
            "image".to_string()
        }
    });
    let scale = ScaleInfo {
        key,
        size: [shape[0], shape[1], shape[2]],
        voxel_offset: options.voxel_offset.unwrap_or([0; 3]),
        chunk_size: [
            chunk_shape[0] as u64,
            chunk_shape[1] as u64,
            chunk_shape[2] as u64,
        ],
        resolution: options.resolution.unwrap_or([1.0; 3]),
        encoding,
        sharding: options.sharding.clone().filter(|_| !options.unsharded),
        extra: Map::new(),
    };
    if scale.sharding.is_some() && options.gzip {
        return Err(unsupported(
            "gzip-compressed chunk files are for unsharded scales; a sharded scale compresses \
             its chunks with the sharding's data_encoding \"gzip\""
                .into(),
        ));
    }
    let info = LayerInfo {
        layer_type,
        data_type,
        num_channels: channels,
        scales: vec![scale],
        extra: Map::new(),
    };
    info.scales[0].check(path, channels)?;
    let mut meta = scale_metadata(&info, 0, path)?;
    if options.gzip {
        let codec = meta
            .precomputed()
            .cloned()
            .map(|c| PrecomputedCodec {
                gzip_chunks: true,
                ..c
            })
            .ok_or_else(|| unsupported("no precomputed codec".into()))?;
        meta.codecs = Arc::new(CodecChain::new(Vec::new(), Arc::new(codec), Vec::new()));
    }
    Ok(meta)
}

/// Write (or update) the layer `info` for the scale array at `path`: the scale replaces the
/// one of the same key or is added; a new layer gets an `info` of its own. The layer's data
/// type and channel count must match the scale's.
pub(crate) fn write_scale(store: &dyn Store, path: &str, meta: &ArrayMetadata) -> ArrayResult<()> {
    let unsupported = |message: String| ArrayError::Unsupported {
        path: crate::display_path(path),
        message,
    };
    let codec = meta
        .precomputed()
        .ok_or_else(|| unsupported("a precomputed scale needs the precomputed codec".into()))?;
    if let Some(key) = meta.attributes.keys().find(|k| *k != ATTRIBUTE) {
        return Err(unsupported(format!(
            "precomputed scales hold no user attributes ('{key}' cannot be stored)"
        )));
    }
    let path = path.trim_matches('/');
    let scale = codec.scale().clone();
    let layer = match path.strip_suffix(scale.key.as_str()) {
        Some(prefix) if prefix.is_empty() || prefix.ends_with('/') => {
            prefix.trim_end_matches('/').to_string()
        }
        _ => {
            return Err(unsupported(format!(
                "the scale key '{}' is not the end of the array's path",
                scale.key
            )))
        }
    };
    let channels = meta.shape.get(3).copied().unwrap_or(1);
    let mut info = match read_layer(store, &layer)? {
        Some(info) => {
            if info.data_type != meta.data_type || info.num_channels != channels {
                return Err(unsupported(format!(
                    "the layer '{layer}' holds {} with {} channel(s); a scale of {} with {} \
                     channel(s) cannot be added to it",
                    info.data_type, info.num_channels, meta.data_type, channels
                )));
            }
            info
        }
        None => LayerInfo {
            layer_type: codec.layer_type().to_string(),
            data_type: meta.data_type.clone(),
            num_channels: channels,
            scales: Vec::new(),
            extra: Map::new(),
        },
    };
    let mut scale = scale;
    scale.size = [meta.shape[0], meta.shape[1], meta.shape[2]];
    match info.scales.iter_mut().find(|s| s.key == scale.key) {
        Some(existing) => *existing = scale,
        None => info.scales.push(scale),
    }
    let bytes = serde_json::to_vec(&info.to_json())
        .map_err(|e| info_err(path, format!("cannot be written: {e}")))?;
    store.set(&join_key(&layer, INFO), bytes.into())?;
    Ok(())
}
