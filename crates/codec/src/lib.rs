#![warn(missing_docs)]
//! Codec pipelines for neurochunk.
//!
//! A chunk goes from an N-d array of elements to stored bytes through a chain of codecs, as in
//! Zarr v3: zero or more array→array codecs ([`ArrayToArrayCodec`]), exactly one array→bytes
//! codec ([`ArrayToBytesCodec`]) and zero or more bytes→bytes codecs ([`BytesToBytesCodec`]).
//! Zarr v2 `order`/`filters`/`compressor` are mapped onto the same chain. The codecs here are
//! format-independent: N5's block codec lives with the N5 format in `neurochunk-array`.
//!
//! This crate knows element types (from `neurochunk-dtype`) but nothing about stores, keys or
//! array metadata documents beyond the codec JSON itself.
//!
//! * [`Codec`] — a codec as a typed value (`Codec::Zstd { level: 3, checksum: false }`), built
//!   into a runtime codec with [`Codec::build`].
//! * [`CodecChain`] — a chunk's pipeline, from/to Zarr v3 and v2 JSON, encode/decode.
//! * [`ShardingCodec`] — `sharding_indexed`, with the index helpers partial reads need.
//! * [`CodecRegistry`] — codec names and ids → constructors; extensible at run time.
//! * [`codecs`] — the built-in codecs; [`nd`] — the N-d strided copy engine (chunk ↔ region
//!   copies, shared output buffers, variable-length gathers); [`subset`] — permutations and
//!   fill helpers.
//! * [`PickleCodec`] — the numcodecs `pickle` object codec, on the restricted reader and writer
//!   of `neurochunk-pickle` (no code in a file is run; the globals it may name come from an
//!   [`neurochunk_pickle::AllowList`], hdmf-zarr's by default).
//!
//! ```
//! use serde_json::json;
//! use neurochunk_codec::{ArrayBytes, ChunkRepr, CodecChain};
//! use neurochunk_dtype::DataType;
//!
//! // The chain of a Zarr v3 array: little-endian bytes, then zstd.
//! let repr = ChunkRepr { shape: vec![2, 3], data_type: DataType::Int16, fill_value: vec![0, 0] };
//! let chain = CodecChain::from_v3_json(
//!     &[json!({"name": "bytes", "configuration": {"endian": "little"}}),
//!       json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}})],
//!     &repr,
//! )?;
//! let chunk = ArrayBytes::Fixed((1i16..=6).flat_map(|v| v.to_le_bytes()).collect());
//! let stored = chain.encode(chunk.clone(), &repr)?;
//! assert_eq!(chain.decode(stored, &repr)?, chunk);
//! # Ok::<(), neurochunk_codec::CodecError>(())
//! ```

mod api;
mod chain;
pub mod codecs;
pub mod nd;
mod numeric;
mod registry;
mod sharding;
mod spec;
pub mod subset;
mod util;
pub use util::{config_err, corrupt, unsupported, Conf as CodecConfig};

pub use api::*;
pub use chain::{recycle_buffer, CodecChain, V2Codecs};
pub use codecs::blosc::{BloscCodec, BloscCompressor, BloscShuffle};
pub use codecs::bytes::BytesCodec;
pub use codecs::bz2::Bz2Codec;
pub use codecs::categorize::CategorizeCodec;
pub use codecs::checksum::{jenkins_lookup3, ChecksumCodec, ChecksumKind, Crc32cCodec, Location};
pub use codecs::deflate::{GzipCodec, ZlibCodec};
pub use codecs::filters::{AsTypeCodec, DeltaCodec, FixedScaleOffsetCodec};
pub use codecs::json2::Json2Codec;
pub use codecs::lossy::{BitRoundCodec, PackBitsCodec, QuantizeCodec};
pub use codecs::lz4::Lz4Codec;
pub use codecs::n5_lz4::N5Lz4Codec;
pub use codecs::neuroglancer::{
    CompressedSegmentationCodec, NeuroglancerJpegCodec, NeuroglancerPngCodec, NeuroglancerRawCodec,
};
pub use codecs::pcodec::PcodecCodec;
pub use codecs::pickle::{PickleCodec, PICKLE_RECORD_KEY};
pub use codecs::shuffle::ShuffleCodec;
pub use codecs::transpose::TransposeCodec;
pub use codecs::vlen::{VlenBytesCodec, VlenCodec, VlenUtf8Codec};
pub use codecs::vlen_array::VlenArrayCodec;
pub use codecs::xz::{LzmaCodec, LzmaFormat};
pub use codecs::zfpy::{ZfpMode, ZfpyCodec};
pub use codecs::zstd::ZstdCodec;
pub use registry::{
    register_v2_codec, register_v3_codec, AnyCodec, CodecConstructor, CodecRegistry,
};
pub use sharding::{IndexLocation, ShardingCodec};
pub use spec::{Codec, CodecKind};
