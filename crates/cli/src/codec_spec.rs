//! The command line's codec short-hand (`--codec zstd:3,crc32c`), parsed into typed
//! [`Codec`] values. The libraries never see this text.

use neurochunk_codec::{BloscCompressor, BloscShuffle, Codec, ZfpMode};

const SPEC_FORMS: &str = "none | zstd[:LEVEL[:checksum]] | gzip[:LEVEL] | zlib[:LEVEL] | \
blosc[:CNAME[:CLEVEL[:SHUFFLE]]] (CNAME blosclz|lz4|lz4hc|zstd|zlib|snappy, SHUFFLE noshuffle|shuffle|bitshuffle) | \
bz2[:LEVEL] | lzma[:PRESET] | lz4[:ACCEL] | crc32c | adler32 | fletcher32 | jenkins_lookup3 | \
bitround:KEEPBITS | quantize:DIGITS | packbits | categorize (put: labels from the data) | pcodec[:LEVEL] | \
zfpy[:MODE[:PARAM]] (MODE reversible|rate|precision|accuracy), and for precomputed raw | \
compressed_segmentation[:B[:B:B]] | jpeg[:QUALITY] | png[:LEVEL], several separated by commas \
(filters first, then pcodec, zfpy or a precomputed encoding as the serializer, then compressions)";

fn spec_err(msg: String) -> String {
    format!("{msg}; accepted forms: {SPEC_FORMS}")
}

fn spec_int(part: Option<&str>, what: &str, lo: i64, hi: i64, default: i64) -> Result<i64, String> {
    match part {
        None | Some("") => Ok(default),
        Some(s) => match s.parse::<i64>() {
            Ok(v) if (lo..=hi).contains(&v) => Ok(v),
            _ => Err(spec_err(format!(
                "invalid {what} '{s}' (expected {lo} to {hi})"
            ))),
        },
    }
}

/// Parse a comma-separated list of compression and checksum codecs, applied in order.
/// `none` (or `raw`) alone means no compression.
pub(crate) fn parse_codecs(spec: &str) -> Result<Vec<Codec>, String> {
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim) {
        let parts: Vec<&str> = item.split(':').collect();
        let kind = parts[0].to_ascii_lowercase();
        let arg = |i: usize| parts.get(i).copied();
        let max_parts = |n: usize| -> Result<(), String> {
            if parts.len() > n + 1 {
                Err(spec_err(format!("'{item}' has too many parts")))
            } else {
                Ok(())
            }
        };
        match kind.as_str() {
            "none" | "raw" => max_parts(0)?,
            "zstd" => {
                max_parts(2)?;
                let level = spec_int(arg(1), "zstd level", -131072, 22, 0)? as i32;
                let checksum = match arg(2) {
                    None => false,
                    Some("checksum") => true,
                    Some(other) => return Err(spec_err(format!("unknown zstd option '{other}'"))),
                };
                out.push(Codec::Zstd { level, checksum });
            }
            "gzip" => {
                max_parts(1)?;
                let level = spec_int(arg(1), "gzip level", 0, 9, 5)? as u32;
                out.push(Codec::Gzip { level });
            }
            "zlib" => {
                max_parts(1)?;
                let level = spec_int(arg(1), "zlib level", 0, 9, 1)? as u32;
                out.push(Codec::Zlib { level });
            }
            "blosc" => {
                max_parts(3)?;
                let cname = match arg(1) {
                    None | Some("") => BloscCompressor::Zstd,
                    Some(s) => BloscCompressor::parse(s)
                        .ok_or_else(|| spec_err(format!("unknown blosc compressor '{s}'")))?,
                };
                let clevel = spec_int(arg(2), "blosc level", 0, 9, 5)? as u8;
                let shuffle = match arg(3) {
                    None | Some("") => BloscShuffle::Auto,
                    Some(s) => BloscShuffle::parse(s)
                        .ok_or_else(|| spec_err(format!("unknown blosc shuffle '{s}'")))?,
                };
                out.push(Codec::Blosc {
                    cname,
                    clevel,
                    shuffle,
                });
            }
            "bz2" | "bzip2" => {
                max_parts(1)?;
                let level = spec_int(arg(1), "bz2 level", 1, 9, 9)? as u32;
                out.push(Codec::Bz2 { level });
            }
            "lzma" | "xz" => {
                max_parts(1)?;
                let preset = match arg(1) {
                    None | Some("") => None,
                    p => Some(spec_int(p, "lzma preset", 0, 9, 6)? as u32),
                };
                out.push(Codec::Lzma { preset });
            }
            "lz4" => {
                max_parts(1)?;
                let acceleration = spec_int(arg(1), "lz4 acceleration", 1, 65537, 1)?;
                out.push(Codec::Lz4 { acceleration });
            }
            "crc32c" | "adler32" | "fletcher32" | "jenkins_lookup3" | "packbits" => {
                max_parts(0)?;
                out.push(match kind.as_str() {
                    "crc32c" => Codec::Crc32c,
                    "adler32" => Codec::Adler32,
                    "fletcher32" => Codec::Fletcher32,
                    "jenkins_lookup3" => Codec::JenkinsLookup3,
                    _ => Codec::PackBits,
                });
            }
            "categorize" => {
                max_parts(0)?;
                out.push(Codec::Categorize { labels: Vec::new() });
            }
            "bitround" => {
                max_parts(1)?;
                if arg(1).is_none_or(str::is_empty) {
                    return Err(spec_err("bitround needs KEEPBITS, e.g. bitround:10".into()));
                }
                let keepbits = spec_int(arg(1), "bitround keepbits", 0, 52, 0)? as u32;
                out.push(Codec::BitRound { keepbits });
            }
            "quantize" => {
                max_parts(1)?;
                if arg(1).is_none_or(str::is_empty) {
                    return Err(spec_err("quantize needs DIGITS, e.g. quantize:3".into()));
                }
                let digits = spec_int(arg(1), "quantize digits", -300, 300, 0)?;
                out.push(Codec::Quantize { digits });
            }
            "compressed_segmentation" | "cseg" => {
                // One block size for every axis, or one per axis (x, y, z).
                max_parts(3)?;
                let size =
                    |i: usize, default: i64| spec_int(arg(i), "block size", 1, 1024, default);
                let x = size(1, 8)?;
                let (y, z) = match parts.len() {
                    4 => (size(2, x)?, size(3, x)?),
                    1 | 2 => (x, x),
                    _ => return Err(spec_err(format!("'{item}': give 1 or 3 block sizes"))),
                };
                out.push(Codec::CompressedSegmentation {
                    block_size: [x as usize, y as usize, z as usize],
                });
            }
            "jpeg" => {
                max_parts(1)?;
                let quality = spec_int(arg(1), "jpeg quality", 1, 100, 75)? as u8;
                out.push(Codec::NeuroglancerJpeg { quality });
            }
            "png" => {
                max_parts(1)?;
                let level = match arg(1) {
                    None | Some("") => None,
                    Some(_) => Some(spec_int(arg(1), "png level", 0, 9, 6)? as u8),
                };
                out.push(Codec::NeuroglancerPng { level });
            }
            "pcodec" => {
                max_parts(1)?;
                let level = spec_int(arg(1), "pcodec level", 0, 12, 8)? as u32;
                out.push(Codec::Pcodec { level });
            }
            "zfpy" | "zfp" => {
                max_parts(2)?;
                let param = |what: &str| -> Result<f64, String> {
                    match arg(2) {
                        Some(s) => s
                            .parse::<f64>()
                            .ok()
                            .filter(|v| v.is_finite() && *v >= 0.0)
                            .ok_or_else(|| spec_err(format!("invalid zfpy {what} '{s}'"))),
                        None => Err(spec_err(format!(
                            "zfpy mode needs a {what}, e.g. zfpy:accuracy:0.01"
                        ))),
                    }
                };
                let mode = match arg(1) {
                    None | Some("") | Some("reversible") => {
                        if arg(2).is_some() {
                            return Err(spec_err("zfpy:reversible takes no parameter".into()));
                        }
                        ZfpMode::Reversible
                    }
                    Some("rate") => ZfpMode::FixedRate(param("rate")?),
                    Some("precision") => {
                        ZfpMode::FixedPrecision(param("precision")?.min(64.0) as u32)
                    }
                    Some("accuracy") | Some("tolerance") => {
                        ZfpMode::FixedAccuracy(param("tolerance")?)
                    }
                    Some(other) => return Err(spec_err(format!("unknown zfpy mode '{other}'"))),
                };
                out.push(Codec::Zfpy { mode });
            }
            "" => return Err(spec_err("empty compressor".to_string())),
            other => return Err(spec_err(format!("unknown compressor '{other}'"))),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_into_typed_codecs() {
        assert_eq!(
            parse_codecs("zstd:3:checksum, crc32c").unwrap(),
            vec![
                Codec::Zstd {
                    level: 3,
                    checksum: true
                },
                Codec::Crc32c
            ]
        );
        assert_eq!(
            parse_codecs("blosc:lz4:5:bitshuffle").unwrap(),
            vec![Codec::Blosc {
                cname: BloscCompressor::Lz4,
                clevel: 5,
                shuffle: BloscShuffle::BitShuffle
            }]
        );
        assert_eq!(parse_codecs("none").unwrap(), vec![]);
        assert_eq!(
            parse_codecs("gzip").unwrap(),
            vec![Codec::Gzip { level: 5 }]
        );
        assert_eq!(
            parse_codecs("xz:9,lz4:2,bz2:3,zlib").unwrap(),
            vec![
                Codec::Lzma { preset: Some(9) },
                Codec::Lz4 { acceleration: 2 },
                Codec::Bz2 { level: 3 },
                Codec::Zlib { level: 1 }
            ]
        );
    }

    #[test]
    fn parses_the_numcodecs_extras() {
        assert_eq!(
            parse_codecs("bitround:10,quantize:-2,packbits,categorize,pcodec,zstd").unwrap(),
            vec![
                Codec::BitRound { keepbits: 10 },
                Codec::Quantize { digits: -2 },
                Codec::PackBits,
                Codec::Categorize { labels: vec![] },
                Codec::Pcodec { level: 8 },
                Codec::Zstd {
                    level: 0,
                    checksum: false
                },
            ]
        );
        assert_eq!(
            parse_codecs("zfpy,zfp:rate:8,zfpy:precision:20,zfpy:accuracy:0.5").unwrap(),
            vec![
                Codec::Zfpy {
                    mode: ZfpMode::Reversible
                },
                Codec::Zfpy {
                    mode: ZfpMode::FixedRate(8.0)
                },
                Codec::Zfpy {
                    mode: ZfpMode::FixedPrecision(20)
                },
                Codec::Zfpy {
                    mode: ZfpMode::FixedAccuracy(0.5)
                },
            ]
        );
        assert_eq!(
            parse_codecs("adler32,fletcher32,jenkins_lookup3").unwrap(),
            vec![Codec::Adler32, Codec::Fletcher32, Codec::JenkinsLookup3]
        );
        for (spec, needle) in [
            ("bitround:53", "bitround keepbits '53'"),
            ("quantize", "quantize needs DIGITS"),
            ("pcodec:13", "pcodec level '13'"),
            ("zfpy:rate", "needs a rate"),
            ("zfpy:reversible:1", "takes no parameter"),
            ("zfpy:accuracy:-1", "invalid zfpy tolerance"),
            ("categorize:a", "too many parts"),
        ] {
            let err = parse_codecs(spec).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }

    #[test]
    fn bad_specs_name_the_part_and_list_the_forms() {
        for (spec, needle) in [
            ("zstd:99", "zstd level '99'"),
            ("gzip:1:2", "too many parts"),
            ("blosc:foo", "unknown blosc compressor 'foo'"),
            ("snappy", "unknown compressor 'snappy'"),
            ("zstd,", "empty compressor"),
        ] {
            let err = parse_codecs(spec).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
            assert!(err.contains("accepted forms"), "{spec}: {err}");
        }
    }
}
