//! The two on-disk conventions of hdmf-zarr and the reserved attribute names of each.
//!
//! The **legacy** convention (hdmf-zarr ≤ 0.13) is Zarr v2 with `zarr_dtype` markers,
//! `zarr_link` lists, one-element scalars and references stored as JSON/pickled objects. The
//! **v3** convention (hdmf-zarr 0.14) is Zarr v3 with `_DTYPE`, `_LINKS`, `_REFERENCE`,
//! `_REFERENCE_FIELDS`, 0-d scalars and references stored as path strings.

use std::fmt;

use neurochunk_array::ZarrFormat;

/// Which hdmf-zarr convention a file follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Convention {
    /// hdmf-zarr ≤ 0.13 on Zarr v2.
    Legacy,
    /// hdmf-zarr 0.14 on Zarr v3.
    V3,
}

impl Convention {
    /// The Zarr format of the convention.
    pub fn zarr_format(self) -> ZarrFormat {
        match self {
            Convention::Legacy => ZarrFormat::V2,
            Convention::V3 => ZarrFormat::V3,
        }
    }

    /// The separator of chunk keys hdmf-zarr writes (`.` legacy, `/` v3).
    pub fn chunk_key_separator(self) -> char {
        match self {
            Convention::Legacy => '.',
            Convention::V3 => '/',
        }
    }

    /// The compression hdmf-zarr gives datasets: Blosc/LZ4 level 5 with byte shuffle
    /// (legacy), Zstandard level 0 (v3).
    pub fn default_compressors(self) -> Vec<neurochunk_codec::Codec> {
        use neurochunk_codec::{BloscCompressor, BloscShuffle, Codec};
        match self {
            Convention::Legacy => vec![Codec::Blosc {
                cname: BloscCompressor::Lz4,
                clevel: 5,
                shuffle: BloscShuffle::Shuffle,
            }],
            Convention::V3 => vec![Codec::zstd(0)],
        }
    }

    /// The command-line spelling (`zarr2` / `zarr3`).
    pub fn label(self) -> &'static str {
        match self {
            Convention::Legacy => "zarr2",
            Convention::V3 => "zarr3",
        }
    }

    /// The attribute holding a dataset's type marker.
    pub fn dtype_attribute(self) -> &'static str {
        match self {
            Convention::Legacy => LEGACY_DTYPE,
            Convention::V3 => V3_DTYPE,
        }
    }

    /// The group attribute listing its links.
    pub fn links_attribute(self) -> &'static str {
        match self {
            Convention::Legacy => LEGACY_LINKS,
            Convention::V3 => V3_LINKS,
        }
    }
}

impl fmt::Display for Convention {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Convention::Legacy => f.write_str("legacy Zarr v2 convention (hdmf-zarr <= 0.13)"),
            Convention::V3 => f.write_str("Zarr v3 convention (hdmf-zarr 0.14)"),
        }
    }
}

/// Legacy dataset type marker.
pub const LEGACY_DTYPE: &str = "zarr_dtype";
/// Legacy link list.
pub const LEGACY_LINKS: &str = "zarr_link";
/// v3 dataset type marker.
pub const V3_DTYPE: &str = "_DTYPE";
/// v3 link list.
pub const V3_LINKS: &str = "_LINKS";
/// v3 list of the compound fields that hold references.
pub const V3_REFERENCE_FIELDS: &str = "_REFERENCE_FIELDS";
/// v3 reference wrapper key in attributes.
pub const V3_REFERENCE: &str = "_REFERENCE";
/// Interim v3 scalar marker (`shape [1]` plus `"_SCALAR": true`).
pub const V3_SCALAR: &str = "_SCALAR";
/// Root attribute naming the group of cached specifications.
pub const SPECLOC: &str = ".specloc";
/// xarray-style dimension names written on datasets.
pub const ARRAY_DIMENSIONS: &str = "_ARRAY_DIMENSIONS";

/// Attributes that encode structure rather than user data; hidden from attribute listings.
pub const RESERVED_ATTRIBUTES: [&str; 11] = [
    LEGACY_DTYPE,
    LEGACY_LINKS,
    V3_DTYPE,
    V3_LINKS,
    V3_REFERENCE_FIELDS,
    V3_SCALAR,
    SPECLOC,
    // LINDI reference files: compound field types, soft and external links.
    "_COMPOUND_DTYPE",
    "_SOFT_LINK",
    "_EXTERNAL_ARRAY_LINK",
    "_EXTERNAL_LINK",
];

/// Whether `name` is one of the reserved attributes.
pub fn is_reserved_attribute(name: &str) -> bool {
    RESERVED_ATTRIBUTES.contains(&name)
}

/// The `zarr_dtype` / `_DTYPE` value of a numeric data type (`int16`, `float64`, `bool`, …).
pub(crate) fn numeric_type_name(data_type: &neurochunk_dtype::DataType) -> Option<&'static str> {
    use neurochunk_dtype::DataType as D;
    Some(match data_type {
        D::Bool => "bool",
        D::Int8 => "int8",
        D::Int16 => "int16",
        D::Int32 => "int32",
        D::Int64 => "int64",
        D::UInt8 => "uint8",
        D::UInt16 => "uint16",
        D::UInt32 => "uint32",
        D::UInt64 => "uint64",
        D::Float16 => "float16",
        D::Float32 => "float32",
        D::Float64 => "float64",
        _ => return None,
    })
}

/// The numeric data type named by a `zarr_dtype` entry (`int32`, `<i2`, …; `int` and `float`
/// are Python's, i.e. 64-bit, as hdmf-zarr writes them for list input).
pub(crate) fn numeric_type_from_name(name: &str) -> Option<neurochunk_dtype::DataType> {
    use neurochunk_dtype::DataType as D;
    Some(match name {
        "bool" | "bool_" | "|b1" => D::Bool,
        "int8" | "|i1" => D::Int8,
        "int16" | "short" | "<i2" => D::Int16,
        "int32" | "<i4" => D::Int32,
        "int64" | "long" | "int" | "<i8" => D::Int64,
        "uint8" | "|u1" => D::UInt8,
        "uint16" | "<u2" => D::UInt16,
        "uint32" | "uint" | "<u4" => D::UInt32,
        "uint64" | "<u8" => D::UInt64,
        "float16" | "<f2" => D::Float16,
        "float32" | "<f4" => D::Float32,
        "float64" | "float" | "double" | "<f8" => D::Float64,
        _ => return None,
    })
}

/// Whether an HDMF dtype name is a text type (as found in legacy compound field lists).
pub(crate) fn is_text_type_name(name: &str) -> bool {
    matches!(
        name,
        "str"
            | "str_"
            | "text"
            | "utf"
            | "utf8"
            | "utf-8"
            | "ascii"
            | "bytes"
            | "isodatetime"
            | "datetime"
            | "date"
    )
}
