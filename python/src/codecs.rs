//! Compressor lists from Python (`[{"name": "zstd", "configuration": {"level": 3}}, ...]`, the
//! form the Python side normalises every spelling to) into typed [`Codec`] values.

use neurochunk::codec::{BloscCompressor, BloscShuffle};
use neurochunk::Codec;
use pyo3::PyResult;
use serde_json::{Map, Value};

use crate::errors::invalid;

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
                "compressor '{name}': '{key}' must be an integer from {lo} to {hi}, not {v}"
            ))),
        },
    }
}

/// One compressor (bytes-to-bytes codec) from its name and configuration.
fn one(name: &str, config: &Map<String, Value>) -> PyResult<Codec> {
    let known: &[&str] = match name {
        "zstd" => &["level", "checksum"],
        "gzip" | "zlib" | "bz2" | "bzip2" => &["level"],
        "blosc" => &["cname", "clevel", "shuffle", "typesize", "blocksize"],
        "lzma" | "xz" => &["preset"],
        "lz4" => &["acceleration"],
        "crc32c" | "shuffle" => &[],
        other => {
            return Err(invalid(format!(
                "unknown compressor '{other}' (known: zstd, gzip, zlib, blosc, bz2, lzma, lz4, \
                 shuffle, crc32c)"
            )))
        }
    };
    if let Some(key) = config.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(invalid(format!(
            "compressor '{name}' has no option '{key}'"
        )));
    }
    Ok(match name {
        "zstd" => Codec::Zstd {
            level: int(config, "level", name, -131072, 22, 0)? as i32,
            checksum: match config.get("checksum") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(v) => {
                    return Err(invalid(format!(
                        "compressor 'zstd': 'checksum' must be a bool, not {v}"
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
        "crc32c" => Codec::Crc32c,
        "shuffle" => Codec::Shuffle,
        _ => {
            let cname = match config.get("cname") {
                None | Some(Value::Null) => BloscCompressor::Zstd,
                Some(Value::String(s)) => BloscCompressor::parse(s)
                    .ok_or_else(|| invalid(format!("compressor 'blosc': unknown cname '{s}'")))?,
                Some(v) => {
                    return Err(invalid(format!(
                        "compressor 'blosc': 'cname' must be a string, not {v}"
                    )))
                }
            };
            let shuffle = match config.get("shuffle") {
                None | Some(Value::Null) => BloscShuffle::Auto,
                Some(Value::String(s)) => BloscShuffle::parse(s)
                    .ok_or_else(|| invalid(format!("compressor 'blosc': unknown shuffle '{s}'")))?,
                Some(Value::Number(n)) => match n.as_i64() {
                    Some(0) => BloscShuffle::NoShuffle,
                    Some(1) => BloscShuffle::Shuffle,
                    Some(2) => BloscShuffle::BitShuffle,
                    Some(-1) => BloscShuffle::Auto,
                    _ => return Err(invalid(format!("compressor 'blosc': unknown shuffle {n}"))),
                },
                Some(v) => return Err(invalid(format!("compressor 'blosc': bad shuffle {v}"))),
            };
            Codec::Blosc {
                cname,
                clevel: int(config, "clevel", name, 0, 9, 5)? as u8,
                shuffle,
            }
        }
    })
}

/// The compressors of a JSON list of `{"name", "configuration"}` objects.
pub(crate) fn parse_compressors(json: &str) -> PyResult<Vec<Codec>> {
    let value: Value = serde_json::from_str(json)
        .map_err(|e| invalid(format!("compressors are not valid JSON: {e}")))?;
    let Value::Array(items) = value else {
        return Err(invalid("compressors must be a list"));
    };
    items
        .iter()
        .map(|item| {
            let name = item.get("name").and_then(Value::as_str).ok_or_else(|| {
                invalid(format!(
                    "a compressor must be {{\"name\": ..., \"configuration\": ...}}, not {item}"
                ))
            })?;
            let empty = Map::new();
            let config = match item.get("configuration") {
                None | Some(Value::Null) => &empty,
                Some(Value::Object(config)) => config,
                Some(other) => {
                    return Err(invalid(format!(
                        "compressor '{name}': configuration must be a dict, not {other}"
                    )))
                }
            };
            one(&name.to_ascii_lowercase(), config)
        })
        .collect()
}
