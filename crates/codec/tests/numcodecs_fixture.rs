//! numcodecs' golden vectors (`shared/thirdparty/numcodecs/fixture`, copied from the numcodecs
//! repository): every `encoded.NN.dat` decodes with its `config.json` to `array.NN.npy`, and
//! for the codecs whose output is fully determined by the configuration, encoding the array
//! gives the stored bytes exactly.
//!
//! The fixture lives beside the repository (`../shared/thirdparty`, or `NEUROCHUNK_THIRDPARTY`);
//! without it the test fails, naming the folder it looked in.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use neurochunk_codec::{AnyCodec, ArrayBytes, ChunkRepr, CodecRegistry};
use neurochunk_dtype::npy::read_npy_header;
use neurochunk_dtype::DataType;
use serde_json::Value;

fn fixture_root() -> PathBuf {
    let root = match std::env::var_os("NEUROCHUNK_THIRDPARTY") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/thirdparty"),
    };
    let dir = root.join("numcodecs/fixture");
    assert!(
        dir.is_dir(),
        "numcodecs fixture not found at {} (set NEUROCHUNK_THIRDPARTY to the thirdparty folder)",
        dir.display()
    );
    dir
}

/// The `.npy` file's data type, shape in memory order and raw bytes in memory order
/// (`None` for object arrays, which hold pickles).
fn npy_raw(path: &Path) -> Option<(DataType, Vec<usize>, Vec<u8>)> {
    let mut f = fs::File::open(path).unwrap();
    let header = read_npy_header(&mut f).ok()?;
    let mut data = Vec::new();
    f.read_to_end(&mut data).unwrap();
    let mut shape = header.shape.clone();
    if header.fortran_order {
        shape.reverse();
    }
    header.data_type.fixed_size()?;
    Some((header.data_type, shape, data))
}

fn sorted(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    v
}

#[derive(Default, Debug)]
struct Tally {
    decoded: usize,
    encoded_exact: usize,
    encoded_different: usize,
}

/// Check every vector of `dir` (a codec folder holding `array.NN.npy` and `codec.MM/`).
/// `exact`: encoding must reproduce the stored bytes.
fn check_dir(dir: &Path, exact: bool) -> Tally {
    let mut tally = Tally::default();
    let arrays = sorted(dir, "array.");
    for codec_dir in sorted(dir, "codec.") {
        let config: Value =
            serde_json::from_slice(&fs::read(codec_dir.join("config.json")).unwrap()).unwrap();
        for (i, array) in arrays.iter().enumerate() {
            let enc_path = codec_dir.join(format!("encoded.{i:02}.dat"));
            let Ok(encoded) = fs::read(&enc_path) else {
                continue;
            };
            let Some((dt, shape, raw)) = npy_raw(array) else {
                continue;
            };
            let what = format!("{} with {config}", enc_path.display());
            let array_repr = ChunkRepr {
                fill_value: vec![0; dt.fixed_size().unwrap()],
                shape: shape.clone(),
                data_type: dt.clone(),
            };
            let bytes_repr = ChunkRepr {
                shape: vec![raw.len()],
                data_type: DataType::UInt8,
                fill_value: vec![0],
            };
            let codec = CodecRegistry::global()
                .create_v2(&config, &array_repr)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            let (decoded, reencoded) = match &codec {
                AnyCodec::BytesToBytes(c) => {
                    let mut out = Vec::new();
                    c.decode(&encoded, &mut out, Some(raw.len()))
                        .unwrap_or_else(|e| panic!("{what}: {e}"));
                    let mut enc = Vec::new();
                    c.encode(&raw, &mut enc).unwrap();
                    let _ = &bytes_repr;
                    (out, enc)
                }
                AnyCodec::ArrayToArray(c) => {
                    let enc_repr = c.encoded_repr(&array_repr).unwrap();
                    let ArrayBytes::Fixed(out) = c
                        .decode(ArrayBytes::Fixed(encoded.clone()), &array_repr)
                        .unwrap_or_else(|e| panic!("{what}: {e} ({enc_repr:?})"))
                    else {
                        panic!()
                    };
                    let ArrayBytes::Fixed(enc) = c
                        .encode(ArrayBytes::Fixed(raw.clone()), &array_repr)
                        .unwrap()
                    else {
                        panic!()
                    };
                    (out, enc)
                }
                AnyCodec::ArrayToBytes(c) => {
                    let ArrayBytes::Fixed(out) = c
                        .decode(encoded.clone(), &array_repr)
                        .unwrap_or_else(|e| panic!("{what}: {e}"))
                    else {
                        panic!()
                    };
                    // An encoding-only value numcodecs' encoder refuses too (pcodec's
                    // delta_spec "no_op") stops encoding, never decoding.
                    let enc = c
                        .encode(ArrayBytes::Fixed(raw.clone()), &array_repr)
                        .unwrap_or_default();
                    (out, enc)
                }
            };
            let id = config["id"].as_str().unwrap_or("");
            match id {
                // Lossy: decoding gives the stored values cast back, so compare re-encoding.
                "quantize" | "fixedscaleoffset" | "astype" | "bitround" => {}
                _ => assert!(decoded == raw, "{what}: decoded bytes differ"),
            }
            tally.decoded += 1;
            if reencoded == encoded {
                tally.encoded_exact += 1;
            } else {
                assert!(!exact, "{what}: encoding differs from numcodecs'");
                tally.encoded_different += 1;
            }
        }
    }
    tally
}

#[test]
fn numcodecs_golden_vectors() {
    let root = fixture_root();
    // (folder, encoding byte-exact). Byte-exact is asserted where the output is determined by
    // the configuration and the format (not by a compressor library's version or heuristics).
    let cases: &[(&str, bool)] = &[
        ("adler32", true),
        ("crc32", true),
        ("crc32c", true),
        ("shuffle", true),
        ("zlib", false),
        ("gzip", false),
        ("bz2", false),
        ("lzma", false),
        ("lz4", false),
        ("zstd", false),
        ("blosc", false),
        ("delta/bool", true),
        ("delta/float32", true),
        ("delta/float64", true),
        ("delta/int32", true),
        ("delta/uint16", true),
        ("fixedscaleoffset", true),
        ("astype/f", true),
        ("astype/i", true),
        ("quantize", true),
        ("packbits", true),
        // Written by an older pco: decoding is checked; byte-exact encoding against the current
        // pcodec release is checked by the interop suite.
        ("pcodec", false),
        // Written when numcodecs flattened chunks (1-d streams); decoding is checked, and
        // byte-exact encoding against the current zfpy by the interop suite.
        ("zfpy", false),
    ];
    for (dir, exact) in cases {
        let tally = check_dir(&root.join(dir), *exact);
        eprintln!("{dir}: {tally:?}");
        assert!(tally.decoded > 0, "{dir}: no vectors");
    }
}
