//! Codec lists from Python (`[{"name": "zstd", "configuration": {"level": 3}}, ...]`, the
//! form the Python side normalises every spelling to) into typed [`Codec`] values.
//!
//! Names are Zarr v3 names or numcodecs ids, with or without zarr-python 3's `numcodecs.`
//! prefix. Configuration keys that only repeat what neurochunk writes anyway (numcodecs'
//! defaults, the array's own dtype) are accepted; a value neurochunk cannot write is an error
//! naming the codec and the key, never silently dropped.

use neurochunk::codec::{
    BloscCompressor, BloscShuffle, CodecKind, PcodecCodec, ZfpMode, ZfpyCodec,
};
use neurochunk::dtype::Endian;
use neurochunk::Codec;
use pyo3::PyResult;
use serde_json::{Map, Value};

use crate::errors::invalid;

/// Every codec name `one` takes, for the message on an unknown one.
const KNOWN: &str = "zstd, gzip, zlib, blosc, bz2, lzma, lz4, shuffle, crc32c, adler32, \
fletcher32, jenkins_lookup3 (compressions and checksums); bitround, quantize, packbits, \
categorize (filters); bytes, pcodec, zfpy (serializers)";

fn int(
    config: &Map<String, Value>,
    key: &str,
    name: &str,
    lo: i64,
    hi: i64,
    default: i64,
) -> PyResult<i64> {
    match config.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_i64() {
            Some(x) if (lo..=hi).contains(&x) => Ok(x),
            _ => Err(invalid(format!(
                "codec '{name}': '{key}' must be an integer from {lo} to {hi}, not {v}"
            ))),
        },
    }
}

/// An integer that must be given.
fn required_int(
    config: &Map<String, Value>,
    key: &str,
    name: &str,
    lo: i64,
    hi: i64,
) -> PyResult<i64> {
    if config.get(key).is_none_or(Value::is_null) {
        return Err(invalid(format!("codec '{name}' needs '{key}'")));
    }
    int(config, key, name, lo, hi, 0)
}

/// A key whose only value neurochunk writes is `expected` (absent or `null` also accepted).
fn only(config: &Map<String, Value>, key: &str, name: &str, expected: &Value) -> PyResult<()> {
    match config.get(key) {
        None | Some(Value::Null) => Ok(()),
        Some(v) if v == expected => Ok(()),
        Some(v) => Err(invalid(format!(
            "codec '{name}': '{key}' {v} is not supported (neurochunk writes {expected})"
        ))),
    }
}

/// The `dtype`/`astype` of numcodecs' `quantize`: any dtype string (it is the array's), with
/// `astype` equal to `dtype` (neurochunk stores the array's dtype).
fn same_type(config: &Map<String, Value>, name: &str) -> PyResult<()> {
    match (config.get("dtype"), config.get("astype")) {
        (Some(Value::String(d)), Some(Value::String(a))) if d != a => Err(invalid(format!(
            "codec '{name}': 'astype' {a} differs from 'dtype' {d} (neurochunk stores the \
             array's own type)"
        ))),
        _ => Ok(()),
    }
}

/// One codec from its name (lower case, without a `numcodecs.` prefix) and configuration.
fn one(name: &str, config: &Map<String, Value>) -> PyResult<Codec> {
    let known: &[&str] = match name {
        "zstd" => &["level", "checksum"],
        "gzip" | "zlib" | "bz2" | "bzip2" => &["level"],
        "blosc" => &["cname", "clevel", "shuffle", "typesize", "blocksize"],
        "lzma" | "xz" => &["preset"],
        "lz4" => &["acceleration"],
        "crc32c" | "adler32" => &["location"],
        "fletcher32" | "shuffle" | "packbits" | "vlen-utf8" | "vlen-bytes" => &[],
        "jenkins_lookup3" => &["initval", "prefix"],
        "bitround" => &["keepbits"],
        "quantize" => &["digits", "dtype", "astype"],
        "categorize" => &["labels", "dtype", "astype"],
        "bytes" => &["endian"],
        "pcodec" => &[
            "level",
            "mode_spec",
            "delta_spec",
            "paging_spec",
            "delta_encoding_order",
            "equal_pages_up_to",
        ],
        "zfpy" => &[
            "mode",
            "tolerance",
            "rate",
            "precision",
            "compression_kwargs",
        ],
        other => return Err(invalid(format!("unknown codec '{other}' (known: {KNOWN})"))),
    };
    if let Some(key) = config.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(format!("codec '{name}' has no option '{key}'")));
    }
    let object = Value::Object(config.clone());
    let engine_err = |e: neurochunk::codec::CodecError| invalid(e.to_string());
    Ok(match name {
        "zstd" => Codec::Zstd {
            level: int(config, "level", name, -131072, 22, 0)? as i32,
            checksum: match config.get("checksum") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(v) => {
                    return Err(invalid(format!(
                        "codec 'zstd': 'checksum' must be a bool, not {v}"
                    )))
                }
            },
        },
        "gzip" => Codec::Gzip {
            level: int(config, "level", name, 0, 9, 5)? as u32,
        },
        "zlib" => Codec::Zlib {
            level: int(config, "level", name, 0, 9, 1)? as u32,
        },
        "bz2" | "bzip2" => Codec::Bz2 {
            level: int(config, "level", name, 1, 9, 9)? as u32,
        },
        "lzma" | "xz" => Codec::Lzma {
            preset: match config.get("preset") {
                None | Some(Value::Null) => None,
                Some(_) => Some(int(config, "preset", name, 0, 9, 6)? as u32),
            },
        },
        "lz4" => Codec::Lz4 {
            acceleration: int(config, "acceleration", name, 1, 65537, 1)?,
        },
        "crc32c" => {
            only(config, "location", name, &Value::from("end"))?;
            Codec::Crc32c
        }
        "adler32" => {
            only(config, "location", name, &Value::from("start"))?;
            Codec::Adler32
        }
        "fletcher32" => Codec::Fletcher32,
        "jenkins_lookup3" => {
            only(config, "initval", name, &Value::from(0))?;
            Codec::JenkinsLookup3
        }
        "shuffle" => Codec::Shuffle,
        "packbits" => Codec::PackBits,
        "vlen-utf8" => Codec::VlenUtf8,
        "vlen-bytes" => Codec::VlenBytes,
        "bitround" => Codec::BitRound {
            keepbits: required_int(config, "keepbits", name, 0, 52)? as u32,
        },
        "quantize" => {
            same_type(config, name)?;
            Codec::Quantize {
                digits: required_int(config, "digits", name, -300, 300)?,
            }
        }
        "categorize" => {
            let labels = match config.get("labels") {
                Some(Value::Array(items)) if !items.is_empty() => items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<String>>>()
                    .ok_or_else(|| invalid("codec 'categorize': 'labels' must be strings"))?,
                _ => {
                    return Err(invalid(
                        "codec 'categorize' needs 'labels', a non-empty list of strings",
                    ))
                }
            };
            // The codes are as narrow as the number of labels allows.
            let astype = match labels.len() {
                0..=0xff => "|u1",
                0x100..=0xffff => "<u2",
                _ => "<u4",
            };
            only(config, "astype", name, &Value::from(astype))?;
            Codec::Categorize { labels }
        }
        "bytes" => Codec::Bytes {
            endian: match config.get("endian") {
                None | Some(Value::Null) => Endian::Little,
                Some(Value::String(s)) if s == "little" => Endian::Little,
                Some(Value::String(s)) if s == "big" => Endian::Big,
                Some(v) => {
                    return Err(invalid(format!(
                        "codec 'bytes': 'endian' must be \"little\" or \"big\", not {v}"
                    )))
                }
            },
        },
        "pcodec" => {
            let level = int(config, "level", name, 0, 12, 8)? as u32;
            let given = PcodecCodec::from_config(&object).map_err(engine_err)?;
            if given != PcodecCodec::new(level) {
                return Err(invalid(
                    "codec 'pcodec': only 'level' can be chosen; the other options must be \
                     numcodecs' defaults (mode_spec and delta_spec 'auto', paging_spec \
                     'equal_pages_up_to', equal_pages_up_to 262144)",
                ));
            }
            Codec::Pcodec { level }
        }
        "zfpy" => {
            // numcodecs' numbering; 5 (reversible) as zarrs writes it.
            let mode = if config.get("mode") == Some(&Value::from(5)) {
                ZfpMode::Reversible
            } else {
                ZfpyCodec::from_config(&object)
                    .and_then(|c| c.effective_mode())
                    .map_err(engine_err)?
            };
            Codec::Zfpy { mode }
        }
        _ => {
            let cname = match config.get("cname") {
                None | Some(Value::Null) => BloscCompressor::Zstd,
                Some(Value::String(s)) => BloscCompressor::parse(s)
                    .ok_or_else(|| invalid(format!("codec 'blosc': unknown cname '{s}'")))?,
                Some(v) => {
                    return Err(invalid(format!(
                        "codec 'blosc': 'cname' must be a string, not {v}"
                    )))
                }
            };
            let shuffle = match config.get("shuffle") {
                None | Some(Value::Null) => BloscShuffle::Auto,
                Some(Value::String(s)) => BloscShuffle::parse(s)
                    .ok_or_else(|| invalid(format!("codec 'blosc': unknown shuffle '{s}'")))?,
                Some(Value::Number(n)) => match n.as_i64() {
                    Some(0) => BloscShuffle::NoShuffle,
                    Some(1) => BloscShuffle::Shuffle,
                    Some(2) => BloscShuffle::BitShuffle,
                    Some(-1) => BloscShuffle::Auto,
                    _ => return Err(invalid(format!("codec 'blosc': unknown shuffle {n}"))),
                },
                Some(v) => return Err(invalid(format!("codec 'blosc': bad shuffle {v}"))),
            };
            Codec::Blosc {
                cname,
                clevel: int(config, "clevel", name, 0, 9, 5)? as u8,
                shuffle,
            }
        }
    })
}

/// Which argument a list came from, and so which kinds of codec it may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// `filters=`: array→array codecs only.
    Filters,
    /// `serializer=`: one array→bytes codec.
    Serializer,
    /// `compressors=`: compressions and checksums, optionally preceded by filters and a
    /// serializer in chain order (the command line's `--codec` list).
    Compressors,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Filters => "filters",
            Role::Serializer => "serializer",
            Role::Compressors => "compressors",
        }
    }
}

fn kind_name(kind: CodecKind) -> &'static str {
    match kind {
        CodecKind::ArrayToArray => "a filter",
        CodecKind::ArrayToBytes => "a serializer",
        CodecKind::BytesToBytes => "a compression or checksum",
    }
}

/// The codecs of a JSON list of `{"name", "configuration"}` objects given as `role`.
pub(crate) fn parse_codecs(json: &str, role: Role) -> PyResult<Vec<Codec>> {
    let what = role.name();
    let value: Value = serde_json::from_str(json)
        .map_err(|e| invalid(format!("{what} are not valid JSON: {e}")))?;
    let Value::Array(items) = value else {
        return Err(invalid(format!("{what} must be a list")));
    };
    let codecs = items
        .iter()
        .map(|item| {
            let name = item.get("name").and_then(Value::as_str).ok_or_else(|| {
                invalid(format!(
                    "a codec must be {{\"name\": ..., \"configuration\": ...}}, not {item}"
                ))
            })?;
            let empty = Map::new();
            let config = match item.get("configuration") {
                None | Some(Value::Null) => &empty,
                Some(Value::Object(config)) => config,
                Some(other) => {
                    return Err(invalid(format!(
                        "codec '{name}': configuration must be a dict, not {other}"
                    )))
                }
            };
            let name = name.to_ascii_lowercase();
            one(name.strip_prefix("numcodecs.").unwrap_or(&name), config)
        })
        .collect::<PyResult<Vec<Codec>>>()?;
    let wanted = match role {
        Role::Filters => Some(CodecKind::ArrayToArray),
        Role::Serializer => Some(CodecKind::ArrayToBytes),
        Role::Compressors => None,
    };
    if let Some(wanted) = wanted {
        if let Some(codec) = codecs.iter().find(|c| c.kind() != wanted) {
            return Err(invalid(format!(
                "{what}: {} is {}, not {}",
                codec.name(),
                kind_name(codec.kind()),
                kind_name(wanted)
            )));
        }
    }
    if role == Role::Serializer && codecs.len() > 1 {
        return Err(invalid("serializer: one codec, not a list of several"));
    }
    Ok(codecs)
}
