//! N5's `compression` JSON ↔ bytes→bytes codecs of `neurochunk-codec`, and the mapping
//! between compressions N5 readers and Zarr readers understand (the Java `LZ4Block` stream
//! versus numcodecs `lz4`).

use std::sync::Arc;

use neurochunk_codec::{
    config_err, unsupported, BloscCodec, BloscCompressor, BloscShuffle, BytesToBytesCodec,
    Bz2Codec, CodecConfig, CodecResult, GzipCodec, Lz4Codec, LzmaCodec, N5Lz4Codec, ZlibCodec,
    ZstdCodec,
};
use serde_json::{json, Map, Value};

use super::block::NAME;

/// The compression types the N5 specification and its common annotations name.
pub const N5_COMPRESSION_TYPES: &[&str] = &["raw", "gzip", "bzip2", "xz", "lz4", "blosc", "zstd"];

/// Build the codec of an N5 `compression` object (`None` for `raw`). `typesize` is the element
/// size (used by blosc when compressing).
pub fn compression_from_n5_json(
    value: &Value,
    typesize: usize,
) -> CodecResult<Option<Arc<dyn BytesToBytesCodec>>> {
    let map = value.as_object().ok_or_else(|| {
        config_err(
            NAME,
            format!("'compression' must be an object with a 'type', found {value}"),
        )
    })?;
    let kind = map
        .get("type")
        .and_then(Value::as_str)
        .ok_or_else(|| config_err(NAME, format!("'compression' has no string 'type': {value}")))?;
    let c = CodecConfig::new(kind, value)?;
    let codec: Arc<dyn BytesToBytesCodec> = match kind {
        "raw" => return Ok(None),
        "gzip" => {
            let level = match c.i64_in("level", -1, 9)?.unwrap_or(-1) {
                -1 => 6,
                l => l as u32,
            };
            if c.bool("useZlib")?.unwrap_or(false) {
                Arc::new(ZlibCodec::new(level))
            } else {
                Arc::new(GzipCodec::new(level))
            }
        }
        "bzip2" => Arc::new(Bz2Codec::new(
            c.i64_in("blockSize", 1, 9)?.unwrap_or(9) as u32
        )),
        "xz" => Arc::new(LzmaCodec::xz(Some(
            c.i64_in("preset", 0, 9)?.unwrap_or(6) as u32
        ))),
        "lz4" => {
            // zarr-python 2's N5Store writes numcodecs' framing under `type: lz4`, recognisable
            // by its `acceleration` key and the missing `blockSize`.
            if c.has("acceleration") && !c.has("blockSize") {
                Arc::new(Lz4Codec::new(c.i64("acceleration")?.unwrap_or(1)))
            } else {
                Arc::new(N5Lz4Codec::new(c.usize("blockSize")?.unwrap_or(65536))?)
            }
        }
        "blosc" => {
            let cname_s = c.str("cname")?.unwrap_or("blosclz");
            let cname = BloscCompressor::parse(cname_s)
                .ok_or_else(|| config_err("blosc", format!("unknown cname \"{cname_s}\"")))?;
            let i = c.i64("shuffle")?.unwrap_or(0);
            let shuffle = BloscShuffle::from_int(i)
                .ok_or_else(|| config_err("blosc", format!("unknown shuffle {i} (0, 1, 2)")))?;
            Arc::new(BloscCodec::new(
                cname,
                c.i64_in("clevel", 0, 9)?.unwrap_or(6) as u8,
                shuffle,
                typesize.max(1),
                c.usize("blocksize")?.unwrap_or(0),
            )?)
        }
        "zstd" => Arc::new(ZstdCodec::new(
            c.i64_in("level", -131072, 22)?.unwrap_or(3) as i32,
            c.bool("checksum")?.unwrap_or(false),
        )),
        other => {
            return Err(unsupported(
                NAME,
                format!(
                    "unknown compression type '{other}' (known: {})",
                    N5_COMPRESSION_TYPES.join(", ")
                ),
            ))
        }
    };
    Ok(Some(codec))
}

/// The codec to use when writing N5 for a (Zarr) compression codec: numcodecs `lz4` becomes
/// the Java `LZ4Block` stream N5 readers expect; every other N5-expressible codec is kept.
pub fn n5_compatible_compression(
    codec: Arc<dyn BytesToBytesCodec>,
) -> CodecResult<Arc<dyn BytesToBytesCodec>> {
    if codec.name() == "numcodecs.lz4" {
        return Ok(Arc::new(N5Lz4Codec::default()));
    }
    compression_to_n5_json(Some(codec.as_ref()))?;
    Ok(codec)
}

/// The codec to use when writing Zarr for an N5 compression: the Java `LZ4Block` stream has no
/// Zarr form and becomes numcodecs `lz4`; everything else is kept.
pub fn zarr_compatible_compression(
    codec: Arc<dyn BytesToBytesCodec>,
) -> Arc<dyn BytesToBytesCodec> {
    if codec.name() == "n5-lz4" {
        Arc::new(Lz4Codec::new(1))
    } else {
        codec
    }
}

fn member<'a>(json: &'a Value, key: &str) -> &'a Value {
    json.get(key).unwrap_or(&Value::Null)
}

/// The N5 `compression` object for a codec (`None` = raw), as the Java reference and
/// tensorstore write it (no members they do not know).
pub fn compression_to_n5_json(codec: Option<&dyn BytesToBytesCodec>) -> CodecResult<Value> {
    let Some(codec) = codec else {
        return Ok(json!({"type": "raw"}));
    };
    if codec.name() == "n5-lz4" {
        let block = codec
            .to_v3_json()
            .pointer("/configuration/blockSize")
            .cloned()
            .unwrap_or(json!(65536));
        return Ok(json!({"type": "lz4", "blockSize": block}));
    }
    let no_form = || {
        unsupported(
            codec.name(),
            "has no N5 compression form (N5 takes one of raw, gzip, zlib, bzip2, xz, lz4, blosc, zstd, and no checksums)",
        )
    };
    let v2 = codec.to_v2_json().ok_or_else(no_form)?;
    let id = v2.get("id").and_then(Value::as_str).unwrap_or("");
    let mut out = Map::new();
    match id {
        "gzip" | "zlib" => {
            out.insert("type".into(), json!("gzip"));
            out.insert("level".into(), member(&v2, "level").clone());
            out.insert("useZlib".into(), json!(id == "zlib"));
        }
        "bz2" => {
            out.insert("type".into(), json!("bzip2"));
            out.insert("blockSize".into(), member(&v2, "level").clone());
        }
        "lzma" => {
            let format = member(&v2, "format").as_i64().unwrap_or(1);
            let check = member(&v2, "check").as_i64().unwrap_or(-1);
            if format != 1 || !matches!(check, -1 | 4) || !member(&v2, "filters").is_null() {
                return Err(unsupported(
                    codec.name(),
                    "only .xz with the default check and no custom filters maps to N5 'xz'",
                ));
            }
            out.insert("type".into(), json!("xz"));
            let preset = member(&v2, "preset");
            out.insert(
                "preset".into(),
                if preset.is_null() {
                    json!(6)
                } else {
                    preset.clone()
                },
            );
        }
        "blosc" => {
            let v3 = codec.to_v3_json();
            let shuffle = match v3.pointer("/configuration/shuffle").and_then(Value::as_str) {
                Some("noshuffle") => 0,
                Some("bitshuffle") => 2,
                _ => 1,
            };
            out.insert("type".into(), json!("blosc"));
            out.insert("cname".into(), member(&v2, "cname").clone());
            out.insert("clevel".into(), member(&v2, "clevel").clone());
            out.insert("shuffle".into(), json!(shuffle));
            out.insert("blocksize".into(), member(&v2, "blocksize").clone());
        }
        "zstd" => {
            out.insert("type".into(), json!("zstd"));
            out.insert("level".into(), member(&v2, "level").clone());
        }
        _ => return Err(no_form()),
    }
    Ok(Value::Object(out))
}
