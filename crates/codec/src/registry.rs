//! The codec registry: maps Zarr v3 codec names and Zarr v2 (numcodecs) ids to constructors.
//! A process-wide default registry holds the built-in codecs; callers add their own with
//! [`register_v3_codec`] / [`register_v2_codec`] without changing this crate.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;

use crate::codecs::blosc::BloscCodec;
use crate::codecs::bytes::BytesCodec;
use crate::codecs::bz2::Bz2Codec;
use crate::codecs::categorize::CategorizeCodec;
use crate::codecs::checksum::{ChecksumCodec, ChecksumKind};
use crate::codecs::deflate::{GzipCodec, ZlibCodec};
use crate::codecs::filters::{AsTypeCodec, DeltaCodec, FixedScaleOffsetCodec};
use crate::codecs::json2::Json2Codec;
use crate::codecs::lossy::{BitRoundCodec, PackBitsCodec, QuantizeCodec};
use crate::codecs::lz4::Lz4Codec;
use crate::codecs::n5_lz4::N5Lz4Codec;
use crate::codecs::neuroglancer::{
    CompressedSegmentationCodec, NeuroglancerJpegCodec, NeuroglancerPngCodec, NeuroglancerRawCodec,
};
use crate::codecs::pcodec::PcodecCodec;
use crate::codecs::pickle::PickleCodec;
use crate::codecs::shuffle::ShuffleCodec;
use crate::codecs::transpose::TransposeCodec;
use crate::codecs::vlen::VlenCodec;
use crate::codecs::vlen_array::VlenArrayCodec;
use crate::codecs::xz::LzmaCodec;
use crate::codecs::zfpy::ZfpyCodec;
use crate::codecs::zstd::ZstdCodec;
use crate::sharding::ShardingCodec;
use crate::util::config_err;
use crate::{
    ArrayToArrayCodec, ArrayToBytesCodec, BytesToBytesCodec, ChunkRepr, CodecError, CodecResult,
};

/// A codec of any of the three kinds.
#[derive(Clone, Debug)]
pub enum AnyCodec {
    /// An array→array codec.
    ArrayToArray(Arc<dyn ArrayToArrayCodec>),
    /// An array→bytes codec.
    ArrayToBytes(Arc<dyn ArrayToBytesCodec>),
    /// A bytes→bytes codec.
    BytesToBytes(Arc<dyn BytesToBytesCodec>),
}

impl AnyCodec {
    /// The codec's Zarr v3 name.
    pub fn name(&self) -> &str {
        match self {
            AnyCodec::ArrayToArray(c) => c.name(),
            AnyCodec::ArrayToBytes(c) => c.name(),
            AnyCodec::BytesToBytes(c) => c.name(),
        }
    }
}

/// Builds a codec from its JSON configuration and the representation it will be handed
/// (after any earlier array→array codecs). For v3 names the JSON is the `configuration`
/// member (`null` when absent); for v2 ids it is the whole `{"id": ...}` object.
pub type CodecConstructor = Arc<dyn Fn(&Value, &ChunkRepr) -> CodecResult<AnyCodec> + Send + Sync>;

/// Codec constructors by Zarr v3 name and by Zarr v2 id.
pub struct CodecRegistry {
    v3: RwLock<HashMap<String, CodecConstructor>>,
    v2: RwLock<HashMap<String, CodecConstructor>>,
}

impl std::fmt::Debug for CodecRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodecRegistry")
            .field("v3", &self.v3_names())
            .field("v2", &self.v2_ids())
            .finish()
    }
}

fn a2a<C: ArrayToArrayCodec + 'static>(c: C) -> AnyCodec {
    AnyCodec::ArrayToArray(Arc::new(c))
}
fn a2b<C: ArrayToBytesCodec + 'static>(c: C) -> AnyCodec {
    AnyCodec::ArrayToBytes(Arc::new(c))
}
fn b2b<C: BytesToBytesCodec + 'static>(c: C) -> AnyCodec {
    AnyCodec::BytesToBytes(Arc::new(c))
}

fn ctor(
    f: impl Fn(&Value, &ChunkRepr) -> CodecResult<AnyCodec> + Send + Sync + 'static,
) -> CodecConstructor {
    Arc::new(f)
}

/// The element size a bytes→bytes codec sees after `repr` was turned into bytes.
fn typesize(repr: &ChunkRepr) -> usize {
    repr.data_type.fixed_size().unwrap_or(1).max(1)
}

/// numcodecs codecs with the same constructor for v2 and for v3 `numcodecs.<id>`.
fn numcodecs_builtins() -> Vec<(&'static str, CodecConstructor)> {
    let checksums = ChecksumKind::ALL.map(|kind| {
        let checksum =
            ctor(move |c: &Value, _: &ChunkRepr| Ok(b2b(ChecksumCodec::from_config(kind, c)?)));
        (kind.id(), checksum)
    });
    let mut codecs = vec![
        (
            "blosc",
            ctor(|c: &Value, r: &ChunkRepr| Ok(b2b(BloscCodec::from_v2_config(c, typesize(r))?))),
        ),
        (
            "zstd",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(ZstdCodec::from_config(c)?))),
        ),
        (
            "gzip",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(GzipCodec::from_config(c, 1)?))),
        ),
        (
            "zlib",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(ZlibCodec::from_config(c)?))),
        ),
        (
            "bz2",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(Bz2Codec::from_config(c)?))),
        ),
        (
            "lzma",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(LzmaCodec::from_config(c)?))),
        ),
        (
            "lz4",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(Lz4Codec::from_config(c)?))),
        ),
        (
            "shuffle",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(ShuffleCodec::from_config(c)?))),
        ),
        (
            "delta",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(DeltaCodec::from_config(c)?))),
        ),
        (
            "fixedscaleoffset",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(FixedScaleOffsetCodec::from_config(c)?))),
        ),
        (
            "astype",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(AsTypeCodec::from_config(c)?))),
        ),
        (
            "vlen-utf8",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(VlenCodec::from_config(true, c)?))),
        ),
        (
            "vlen-bytes",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(VlenCodec::from_config(false, c)?))),
        ),
        (
            "json2",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(Json2Codec::from_config(c)?))),
        ),
        (
            "bitround",
            ctor(|c: &Value, _: &ChunkRepr| {
                Ok(a2a(BitRoundCodec::from_config(c, "numcodecs.bitround")?))
            }),
        ),
        (
            "quantize",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(QuantizeCodec::from_config(c)?))),
        ),
        (
            "packbits",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(PackBitsCodec::from_config(c)?))),
        ),
        (
            "pcodec",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(PcodecCodec::from_config(c)?))),
        ),
        (
            "zfpy",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(ZfpyCodec::from_config(c)?))),
        ),
        (
            "pickle",
            ctor(|c: &Value, r: &ChunkRepr| Ok(a2b(PickleCodec::for_repr(c, r)?))),
        ),
        (
            "categorize",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(CategorizeCodec::from_config(c)?))),
        ),
        (
            "vlen-array",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(VlenArrayCodec::from_config(c)?))),
        ),
    ];
    codecs.extend(checksums);
    codecs
}

fn v3_builtins() -> Vec<(&'static str, CodecConstructor)> {
    vec![
        (
            "bytes",
            ctor(|c: &Value, r: &ChunkRepr| Ok(a2b(BytesCodec::from_v3_config(c, r)?))),
        ),
        (
            "endian",
            ctor(|c: &Value, r: &ChunkRepr| Ok(a2b(BytesCodec::from_v3_config(c, r)?))),
        ),
        (
            "vlen-utf8",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(VlenCodec::from_config(true, c)?))),
        ),
        (
            "vlen-bytes",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2b(VlenCodec::from_config(false, c)?))),
        ),
        (
            "transpose",
            ctor(|c: &Value, r: &ChunkRepr| Ok(a2a(TransposeCodec::from_v3_config(c, r)?))),
        ),
        (
            "sharding_indexed",
            ctor(|c: &Value, r: &ChunkRepr| Ok(a2b(ShardingCodec::from_v3_config(c, r)?))),
        ),
        (
            "blosc",
            ctor(|c: &Value, r: &ChunkRepr| Ok(b2b(BloscCodec::from_v3_config(c, typesize(r))?))),
        ),
        (
            "gzip",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(GzipCodec::from_config(c, 5)?))),
        ),
        (
            "zstd",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(ZstdCodec::from_config(c)?))),
        ),
        (
            "crc32c",
            ctor(|c: &Value, _: &ChunkRepr| {
                Ok(b2b(ChecksumCodec::from_config(ChecksumKind::Crc32c, c)?))
            }),
        ),
        (
            "bitround",
            ctor(|c: &Value, _: &ChunkRepr| Ok(a2a(BitRoundCodec::from_config(c, "bitround")?))),
        ),
        (
            "neuroglancer_raw",
            ctor(|_: &Value, _: &ChunkRepr| Ok(a2b(NeuroglancerRawCodec::new()))),
        ),
        (
            "compressed_segmentation",
            ctor(|c: &Value, r: &ChunkRepr| {
                CompressedSegmentationCodec::check_type(r)?;
                Ok(a2b(CompressedSegmentationCodec::from_config(c)?))
            }),
        ),
        (
            "neuroglancer_jpeg",
            ctor(|c: &Value, r: &ChunkRepr| {
                NeuroglancerJpegCodec::check_type(r)?;
                Ok(a2b(NeuroglancerJpegCodec::from_config(c)?))
            }),
        ),
        (
            "neuroglancer_png",
            ctor(|c: &Value, r: &ChunkRepr| {
                NeuroglancerPngCodec::check_type(r)?;
                Ok(a2b(NeuroglancerPngCodec::from_config(c)?))
            }),
        ),
        (
            "n5-lz4",
            ctor(|c: &Value, _: &ChunkRepr| Ok(b2b(N5Lz4Codec::from_config(c)?))),
        ),
    ]
}

impl CodecRegistry {
    /// A registry without any codec.
    pub fn empty() -> Self {
        CodecRegistry {
            v3: RwLock::new(HashMap::new()),
            v2: RwLock::new(HashMap::new()),
        }
    }

    /// A registry with every built-in codec.
    pub fn with_builtins() -> Self {
        let r = Self::empty();
        for (name, ctor) in v3_builtins() {
            r.register_v3(name, ctor);
        }
        for (id, ctor) in numcodecs_builtins() {
            r.register_v3(&format!("numcodecs.{id}"), ctor.clone());
            r.register_v2(id, ctor);
        }
        r
    }

    /// The process-wide registry used by [`crate::CodecChain::from_v3_json`] and
    /// [`crate::CodecChain::from_v2`].
    pub fn global() -> &'static CodecRegistry {
        static GLOBAL: OnceLock<CodecRegistry> = OnceLock::new();
        GLOBAL.get_or_init(CodecRegistry::with_builtins)
    }

    /// Add (or replace) the constructor for a Zarr v3 codec name.
    pub fn register_v3(&self, name: &str, ctor: CodecConstructor) {
        let mut m = self.v3.write().unwrap_or_else(|e| e.into_inner());
        m.insert(name.to_string(), ctor);
    }

    /// Add (or replace) the constructor for a Zarr v2 codec id.
    pub fn register_v2(&self, id: &str, ctor: CodecConstructor) {
        let mut m = self.v2.write().unwrap_or_else(|e| e.into_inner());
        m.insert(id.to_string(), ctor);
    }

    /// Build the Zarr v3 codec `name` from its `configuration` (`null` if absent).
    pub fn create_v3(
        &self,
        name: &str,
        configuration: &Value,
        repr: &ChunkRepr,
    ) -> CodecResult<AnyCodec> {
        let ctor = {
            let m = self.v3.read().unwrap_or_else(|e| e.into_inner());
            m.get(name).cloned()
        };
        match ctor {
            Some(f) => f(configuration, repr),
            None => Err(CodecError::Unknown(name.to_string())),
        }
    }

    /// Build a Zarr v2 codec from its `{"id": ...}` object.
    pub fn create_v2(&self, config: &Value, repr: &ChunkRepr) -> CodecResult<AnyCodec> {
        let id = config.get("id").and_then(Value::as_str).ok_or_else(|| {
            config_err(
                "filters",
                format!("codec object without a string 'id': {config}"),
            )
        })?;
        let ctor = {
            let m = self.v2.read().unwrap_or_else(|e| e.into_inner());
            m.get(id).cloned()
        };
        match ctor {
            Some(f) => f(config, repr),
            None => Err(CodecError::Unknown(id.to_string())),
        }
    }

    /// Registered Zarr v3 names, sorted.
    pub fn v3_names(&self) -> Vec<String> {
        let m = self.v3.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = m.keys().cloned().collect();
        v.sort();
        v
    }

    /// Registered Zarr v2 ids, sorted.
    pub fn v2_ids(&self) -> Vec<String> {
        let m = self.v2.read().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<String> = m.keys().cloned().collect();
        v.sort();
        v
    }
}

/// Register a Zarr v3 codec name in the process-wide registry.
pub fn register_v3_codec(
    name: &str,
    ctor: impl Fn(&Value, &ChunkRepr) -> CodecResult<AnyCodec> + Send + Sync + 'static,
) {
    CodecRegistry::global().register_v3(name, Arc::new(ctor));
}

/// Register a Zarr v2 codec id in the process-wide registry.
pub fn register_v2_codec(
    id: &str,
    ctor: impl Fn(&Value, &ChunkRepr) -> CodecResult<AnyCodec> + Send + Sync + 'static,
) {
    CodecRegistry::global().register_v2(id, Arc::new(ctor));
}
