//! Codecs as typed values ([`Codec`]): what a caller writes to describe how an array's chunks
//! are encoded, e.g. `Codec::Zstd { level: 3, checksum: false }`, without JSON or command-line
//! text. [`Codec::build`] turns a value into the runtime codec of a chain.
//!
//! ```
//! use neurochunk_codec::{AnyCodec, ChunkRepr, Codec, CodecKind};
//! use neurochunk_dtype::DataType;
//!
//! let codecs = [Codec::zstd(3), Codec::Crc32c];
//! assert!(codecs.iter().all(|c| c.kind() == CodecKind::BytesToBytes));
//! let repr = ChunkRepr { shape: vec![64, 64], data_type: DataType::UInt16, fill_value: vec![0, 0] };
//! let AnyCodec::BytesToBytes(zstd) = codecs[0].build(&repr).unwrap() else { unreachable!() };
//! assert_eq!(zstd.name(), "zstd");
//! ```

use std::fmt;
use std::sync::Arc;

use neurochunk_dtype::{DataType, Endian};

use crate::codecs::blosc::{BloscCodec, BloscCompressor, BloscShuffle};
use crate::codecs::bytes::BytesCodec;
use crate::codecs::bz2::Bz2Codec;
use crate::codecs::checksum::{ChecksumCodec, ChecksumKind};
use crate::codecs::deflate::{GzipCodec, ZlibCodec};
use crate::codecs::lz4::Lz4Codec;
use crate::codecs::shuffle::ShuffleCodec;
use crate::codecs::transpose::TransposeCodec;
use crate::codecs::vlen::{VlenBytesCodec, VlenUtf8Codec};
use crate::codecs::xz::LzmaCodec;
use crate::codecs::zstd::ZstdCodec;
use crate::registry::AnyCodec;
use crate::{ChunkRepr, CodecResult};

/// Which step of a chain a codec is (Zarr v3's three kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodecKind {
    /// Maps an array to an array (e.g. `transpose`).
    ArrayToArray,
    /// Serialises the array (`bytes`, `vlen-utf8`, `vlen-bytes`); exactly one per chain.
    ArrayToBytes,
    /// Maps bytes to bytes (compressions, checksums, byte shuffles).
    BytesToBytes,
}

/// One codec of a chain, as a typed value.
///
/// Built-in codecs only; codecs registered at run time (see [`crate::CodecRegistry`]) are
/// built from their JSON configuration instead.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Codec {
    /// Permute the axes of each chunk (`order[i]` is the input axis that becomes axis `i`).
    Transpose {
        /// A permutation of the chunk's axes.
        order: Vec<usize>,
    },
    /// Fixed-size elements in the given byte order.
    Bytes {
        /// Byte order of multi-byte values.
        endian: Endian,
    },
    /// Variable-length UTF-8 strings.
    VlenUtf8,
    /// Variable-length byte strings.
    VlenBytes,
    /// Zstandard at `level` (negative levels are the fast modes), with an optional content
    /// checksum in each frame.
    Zstd {
        /// Compression level (0: library default).
        level: i32,
        /// Store a content checksum in each frame.
        checksum: bool,
    },
    /// gzip (RFC 1952) at `level` 0–9.
    Gzip {
        /// Compression level, 0–9.
        level: u32,
    },
    /// zlib (RFC 1950) at `level` 0–9.
    Zlib {
        /// Compression level, 0–9.
        level: u32,
    },
    /// Blosc with an inner compressor, level 0–9 and a shuffle; the element size it shuffles
    /// by is the array's.
    Blosc {
        /// The inner compressor.
        cname: BloscCompressor,
        /// Compression level, 0–9.
        clevel: u8,
        /// The shuffle filter.
        shuffle: BloscShuffle,
    },
    /// bzip2 with block size `level` 1–9 (× 100 kB).
    Bz2 {
        /// Block size in units of 100 kB, 1–9.
        level: u32,
    },
    /// xz (LZMA2) with a preset 0–9, or the library default.
    Lzma {
        /// Preset 0–9; `None`: the library default (6).
        preset: Option<u32>,
    },
    /// numcodecs' size-prefixed LZ4 block with an acceleration ≥ 1.
    Lz4 {
        /// LZ4 acceleration, at least 1 (1: the default trade-off).
        acceleration: i64,
    },
    /// Byte shuffle by the array's element size (numcodecs `shuffle`).
    Shuffle,
    /// A CRC-32C checksum appended to each chunk (Zarr v3 `crc32c`).
    Crc32c,
    /// numcodecs `adler32`, prepended.
    Adler32,
    /// numcodecs `fletcher32` (HDF5's), appended.
    Fletcher32,
    /// numcodecs `jenkins_lookup3` (HDF5's lookup3 hash, seed 0), appended.
    JenkinsLookup3,
    /// numcodecs `bitround`: keep this many mantissa bits of each float (lossy).
    BitRound {
        /// Mantissa bits kept (at most 10 / 23 / 52 for float16 / 32 / 64).
        keepbits: u32,
    },
    /// numcodecs `quantize`: round floats to `digits` decimal digits (lossy).
    Quantize {
        /// Decimal digits kept.
        digits: i64,
    },
    /// numcodecs `packbits`: booleans eight to a byte.
    PackBits,
    /// numcodecs `pcodec` (the serializer): pco at `level` 0–12, lossless, for 16–64-bit
    /// numbers.
    Pcodec {
        /// Compression level, 0–12 (numcodecs default 8).
        level: u32,
    },
    /// numcodecs `zfpy` (the serializer): zfp in the given mode, for int32/int64/float32/float64
    /// chunks of 1–4 dimensions.
    Zfpy {
        /// The zfp mode.
        mode: crate::codecs::zfpy::ZfpMode,
    },
    /// numcodecs `categorize` (a filter): text elements from `labels` stored as integer codes
    /// (`|u1` for up to 255 labels, then `<u2`, `<u4`); values outside the labels are refused.
    Categorize {
        /// The labels; code `i + 1` stands for `labels[i]`, 0 for `""`.
        labels: Vec<String>,
    },
    /// numcodecs `vlen-array` (the serializer of a ragged array: variable-length bytes elements
    /// holding numbers of `element` type).
    VlenArray {
        /// The type of the numbers of every element.
        element: DataType,
    },
    /// Neuroglancer precomputed `raw` (the serializer): little-endian elements of
    /// `[x, y, z, channel]` chunks in Fortran order per channel.
    NeuroglancerRaw,
    /// Neuroglancer `compressed_segmentation` (the serializer) of uint32 / uint64 labels, with
    /// blocks of `block_size` (`[x, y, z]`).
    CompressedSegmentation {
        /// The block size `[x, y, z]`.
        block_size: [usize; 3],
    },
    /// Neuroglancer precomputed `jpeg` (the serializer): uint8, 1 or 3 channels, lossy.
    NeuroglancerJpeg {
        /// JPEG quality, 1–100.
        quality: u8,
    },
    /// Neuroglancer precomputed `png` (the serializer): uint8 / uint16, 1 to 4 channels.
    NeuroglancerPng {
        /// zlib level 0–9 (`None`: the encoder's default).
        level: Option<u8>,
    },
}

impl Codec {
    /// `Zstd { level, checksum: false }`.
    pub fn zstd(level: i32) -> Codec {
        Codec::Zstd {
            level,
            checksum: false,
        }
    }

    /// `Blosc` with the given inner compressor and level, shuffling bytes (bits for 1-byte
    /// elements).
    pub fn blosc(cname: BloscCompressor, clevel: u8) -> Codec {
        Codec::Blosc {
            cname,
            clevel,
            shuffle: BloscShuffle::Auto,
        }
    }

    /// Which step of a chain this codec is.
    pub fn kind(&self) -> CodecKind {
        match self {
            Codec::Transpose { .. }
            | Codec::BitRound { .. }
            | Codec::Quantize { .. }
            | Codec::PackBits
            | Codec::Categorize { .. } => CodecKind::ArrayToArray,
            Codec::Bytes { .. }
            | Codec::VlenUtf8
            | Codec::VlenBytes
            | Codec::Pcodec { .. }
            | Codec::Zfpy { .. }
            | Codec::VlenArray { .. }
            | Codec::NeuroglancerRaw
            | Codec::CompressedSegmentation { .. }
            | Codec::NeuroglancerJpeg { .. }
            | Codec::NeuroglancerPng { .. } => CodecKind::ArrayToBytes,
            _ => CodecKind::BytesToBytes,
        }
    }

    /// A short name for messages (`zstd`, `blosc`, `transpose`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Codec::Transpose { .. } => "transpose",
            Codec::Bytes { .. } => "bytes",
            Codec::VlenUtf8 => "vlen-utf8",
            Codec::VlenBytes => "vlen-bytes",
            Codec::Zstd { .. } => "zstd",
            Codec::Gzip { .. } => "gzip",
            Codec::Zlib { .. } => "zlib",
            Codec::Blosc { .. } => "blosc",
            Codec::Bz2 { .. } => "bz2",
            Codec::Lzma { .. } => "lzma",
            Codec::Lz4 { .. } => "lz4",
            Codec::Shuffle => "shuffle",
            Codec::Crc32c => "crc32c",
            Codec::Adler32 => "adler32",
            Codec::Fletcher32 => "fletcher32",
            Codec::JenkinsLookup3 => "jenkins_lookup3",
            Codec::BitRound { .. } => "bitround",
            Codec::Quantize { .. } => "quantize",
            Codec::PackBits => "packbits",
            Codec::Pcodec { .. } => "pcodec",
            Codec::Zfpy { .. } => "zfpy",
            Codec::Categorize { .. } => "categorize",
            Codec::VlenArray { .. } => "vlen-array",
            Codec::NeuroglancerRaw => "neuroglancer_raw",
            Codec::CompressedSegmentation { .. } => "compressed_segmentation",
            Codec::NeuroglancerJpeg { .. } => "neuroglancer_jpeg",
            Codec::NeuroglancerPng { .. } => "neuroglancer_png",
        }
    }

    /// True for checksums (which verify, not compress).
    pub fn is_checksum(&self) -> bool {
        self.checksum_kind().is_some()
    }

    /// The checksum a checksum codec computes (each at its numcodecs default location).
    pub fn checksum_kind(&self) -> Option<ChecksumKind> {
        Some(match self {
            Codec::Crc32c => ChecksumKind::Crc32c,
            Codec::Adler32 => ChecksumKind::Adler32,
            Codec::Fletcher32 => ChecksumKind::Fletcher32,
            Codec::JenkinsLookup3 => ChecksumKind::JenkinsLookup3,
            _ => return None,
        })
    }

    /// The runtime codec for chunks of `repr` (the representation this codec is handed: after
    /// any earlier array→array codecs). Errors on out-of-range parameters.
    pub fn build(&self, repr: &ChunkRepr) -> CodecResult<AnyCodec> {
        let typesize = repr.data_type.fixed_size().unwrap_or(1).max(1);
        Ok(match self {
            Codec::Transpose { order } => {
                let codec = TransposeCodec::new(order.clone());
                // Checks the order against the chunk's rank.
                crate::ArrayToArrayCodec::encoded_repr(&codec, repr)?;
                AnyCodec::ArrayToArray(Arc::new(codec))
            }
            Codec::Bytes { endian } => {
                AnyCodec::ArrayToBytes(Arc::new(BytesCodec::for_type(&repr.data_type, *endian)))
            }
            Codec::VlenUtf8 => AnyCodec::ArrayToBytes(Arc::new(VlenUtf8Codec::new())),
            Codec::VlenBytes => AnyCodec::ArrayToBytes(Arc::new(VlenBytesCodec::new())),
            Codec::Zstd { level, checksum } => {
                AnyCodec::BytesToBytes(Arc::new(ZstdCodec::new(*level, *checksum)))
            }
            Codec::Gzip { level } => {
                AnyCodec::BytesToBytes(Arc::new(GzipCodec::new(check_level("gzip", *level)?)))
            }
            Codec::Zlib { level } => {
                AnyCodec::BytesToBytes(Arc::new(ZlibCodec::new(check_level("zlib", *level)?)))
            }
            Codec::Blosc {
                cname,
                clevel,
                shuffle,
            } => AnyCodec::BytesToBytes(Arc::new(BloscCodec::new(
                *cname, *clevel, *shuffle, typesize, 0,
            )?)),
            Codec::Bz2 { level } => {
                if !(1..=9).contains(level) {
                    return Err(crate::util::config_err(
                        "bz2",
                        format!("level must be 1-9, found {level}"),
                    ));
                }
                AnyCodec::BytesToBytes(Arc::new(Bz2Codec::new(*level)))
            }
            Codec::Lzma { preset } => {
                if let Some(p) = preset.filter(|p| *p > 9) {
                    return Err(crate::util::config_err(
                        "lzma",
                        format!("preset must be 0-9, found {p}"),
                    ));
                }
                AnyCodec::BytesToBytes(Arc::new(LzmaCodec::xz(*preset)))
            }
            Codec::Lz4 { acceleration } => {
                if *acceleration < 1 {
                    return Err(crate::util::config_err(
                        "lz4",
                        format!("acceleration must be at least 1, found {acceleration}"),
                    ));
                }
                AnyCodec::BytesToBytes(Arc::new(Lz4Codec::new(*acceleration)))
            }
            Codec::Shuffle => AnyCodec::BytesToBytes(Arc::new(ShuffleCodec::new(typesize))),
            Codec::Crc32c | Codec::Adler32 | Codec::Fletcher32 | Codec::JenkinsLookup3 => {
                let kind = self.checksum_kind().expect("a checksum codec");
                AnyCodec::BytesToBytes(Arc::new(ChecksumCodec::new(kind)))
            }
            Codec::BitRound { keepbits } => {
                let codec = crate::BitRoundCodec::new(*keepbits);
                codec.check_encodable(repr)?;
                AnyCodec::ArrayToArray(Arc::new(codec))
            }
            Codec::Quantize { digits } => AnyCodec::ArrayToArray(Arc::new(
                crate::QuantizeCodec::new(*digits, &repr.data_type, None)?,
            )),
            Codec::PackBits => {
                let codec = crate::PackBitsCodec::new();
                crate::ArrayToArrayCodec::encoded_repr(&codec, repr)?;
                AnyCodec::ArrayToArray(Arc::new(codec))
            }
            Codec::Pcodec { level } => {
                let codec = crate::PcodecCodec::new(*level);
                codec.chunk_config()?;
                crate::PcodecCodec::check_type(repr)?;
                AnyCodec::ArrayToBytes(Arc::new(codec))
            }
            Codec::Zfpy { mode } => {
                let codec = crate::ZfpyCodec::new(*mode);
                codec.effective_mode()?;
                crate::ZfpyCodec::check_type(repr)?;
                AnyCodec::ArrayToBytes(Arc::new(codec))
            }
            Codec::Categorize { labels } => {
                if labels.is_empty() {
                    return Err(crate::util::config_err(
                        "categorize",
                        "needs its labels (`neurochunk put` takes them from the data)",
                    ));
                }
                let astype = match labels.len() {
                    0..=0xff => "|u1",
                    0x100..=0xffff => "<u2",
                    _ => "<u4",
                };
                let codec = crate::CategorizeCodec::new(labels.clone(), &repr.data_type, astype)?;
                AnyCodec::ArrayToArray(Arc::new(codec))
            }
            Codec::VlenArray { element } => {
                if repr.data_type != DataType::Bytes {
                    return Err(crate::util::unsupported(
                        "vlen-array",
                        format!(
                            "a ragged array's data type is variable-length bytes, not {}",
                            repr.data_type
                        ),
                    ));
                }
                AnyCodec::ArrayToBytes(Arc::new(crate::VlenArrayCodec::new(element, false)?))
            }
            Codec::NeuroglancerRaw => {
                crate::codecs::neuroglancer::Layout::new("neuroglancer_raw", repr, None)?;
                AnyCodec::ArrayToBytes(Arc::new(crate::NeuroglancerRawCodec::new()))
            }
            Codec::CompressedSegmentation { block_size } => {
                crate::CompressedSegmentationCodec::check_type(repr)?;
                AnyCodec::ArrayToBytes(Arc::new(crate::CompressedSegmentationCodec::new(
                    *block_size,
                )?))
            }
            Codec::NeuroglancerJpeg { quality } => {
                crate::NeuroglancerJpegCodec::check_type(repr)?;
                AnyCodec::ArrayToBytes(Arc::new(crate::NeuroglancerJpegCodec::new(*quality)?))
            }
            Codec::NeuroglancerPng { level } => {
                crate::NeuroglancerPngCodec::check_type(repr)?;
                AnyCodec::ArrayToBytes(Arc::new(crate::NeuroglancerPngCodec::new(*level)?))
            }
        })
    }

    /// The array→bytes codec a data type needs when none is given: little-endian `bytes` for
    /// fixed-size elements, `vlen-utf8` for strings, `vlen-bytes` for variable-length bytes.
    pub fn default_serializer(data_type: &DataType) -> Codec {
        match data_type {
            DataType::String => Codec::VlenUtf8,
            DataType::Bytes => Codec::VlenBytes,
            _ => Codec::Bytes {
                endian: Endian::Little,
            },
        }
    }
}

fn check_level(codec: &str, level: u32) -> CodecResult<u32> {
    if level > 9 {
        return Err(crate::util::config_err(
            codec,
            format!("level must be 0-9, found {level}"),
        ));
    }
    Ok(level)
}

impl fmt::Display for Codec {
    /// The codec and its parameters, e.g. `zstd(level 3)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Codec::Transpose { order } => write!(f, "transpose{order:?}"),
            Codec::Bytes { endian } => write!(f, "bytes({endian:?})"),
            Codec::Zstd { level, checksum } => {
                write!(
                    f,
                    "zstd(level {level}{})",
                    if *checksum { ", checksum" } else { "" }
                )
            }
            Codec::Gzip { level } | Codec::Zlib { level } | Codec::Bz2 { level } => {
                write!(f, "{}(level {level})", self.name())
            }
            Codec::Blosc {
                cname,
                clevel,
                shuffle,
            } => write!(f, "blosc({}, level {clevel}, {shuffle:?})", cname.name()),
            Codec::Lzma {
                preset: Some(preset),
            } => write!(f, "lzma(preset {preset})"),
            Codec::Lz4 { acceleration } => write!(f, "lz4(acceleration {acceleration})"),
            Codec::BitRound { keepbits } => write!(f, "bitround(keepbits {keepbits})"),
            Codec::Quantize { digits } => write!(f, "quantize(digits {digits})"),
            Codec::Pcodec { level } => write!(f, "pcodec(level {level})"),
            Codec::Zfpy { mode } => write!(f, "zfpy({mode:?})"),
            Codec::Categorize { labels } => write!(f, "categorize({} labels)", labels.len()),
            Codec::VlenArray { element } => write!(f, "vlen-array({element})"),
            Codec::CompressedSegmentation { block_size } => {
                write!(f, "compressed_segmentation(block {block_size:?})")
            }
            Codec::NeuroglancerJpeg { quality } => {
                write!(f, "neuroglancer_jpeg(quality {quality})")
            }
            Codec::NeuroglancerPng { level: Some(level) } => {
                write!(f, "neuroglancer_png(level {level})")
            }
            _ => f.write_str(self.name()),
        }
    }
}
