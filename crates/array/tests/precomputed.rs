//! Neuroglancer precomputed volumes: the layers tensorstore and cloud-volume wrote
//! (`tests/data/precomputed`, see its README) read back exactly, layers written here in every
//! encoding and layout read back, conversions to and from Zarr, and hostile shards and chunks
//! refused with errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurochunk_array::convert::{convert_array, ConvertOptions};
use neurochunk_array::precomputed::{
    layer_scales, ShardEncoding, ShardHash, ShardingSpec, ATTRIBUTE,
};
use neurochunk_array::{
    open_node, selection, Array, ArrayBuilder, ArrayBytes, Codec, DataType, FsStore, MemoryStore,
    NodeMetadata, PrecomputedOptions, Selection, Store, ZarrFormat,
};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/precomputed")
}

fn fixtures() -> Arc<dyn Store> {
    Arc::new(FsStore::new(data_dir()))
}

fn layers() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ts_") || n.starts_with("cv_"))
        .collect();
    names.sort();
    names
}

/// The values the writer read back, `[x, y, z, channel]` C order.
fn expected(layer: &str, key: &str) -> (Vec<usize>, DataType, Vec<u8>) {
    let path = data_dir().join(format!("expected/{layer}__{key}.npy"));
    let (header, data) = neurochunk_dtype::npy::read_npy(&path).unwrap();
    (header.shape, header.data_type, data)
}

fn bytes(data: ArrayBytes) -> Vec<u8> {
    match data {
        ArrayBytes::Fixed(b) => b,
        other => panic!("variable-length data {other:?}"),
    }
}

/// JPEG decoders agree within a rounding step on grey images; on colour images with chroma
/// subsampling (what tensorstore writes) they upsample the chroma differently, which on these
/// fixtures' sharp colour edges moves single values a lot but the mean little.
fn assert_jpeg_close(path: &str, got: &[u8], want: &[u8], grey_worst: u8) {
    assert_eq!(got.len(), want.len(), "{path}");
    let diffs: Vec<u8> = got.iter().zip(want).map(|(a, b)| a.abs_diff(*b)).collect();
    if path.contains("_c3") {
        let mean = diffs.iter().map(|&d| f64::from(d)).sum::<f64>() / diffs.len() as f64;
        assert!(
            mean <= 2.5,
            "{path}: jpeg values differ by {mean} on average"
        );
    } else {
        let worst = diffs.iter().copied().max().unwrap_or(0);
        assert!(
            worst <= grey_worst,
            "{path}: jpeg values differ by up to {worst}"
        );
    }
}

#[test]
fn every_fixture_reads_as_its_writer_wrote_it() {
    let store = fixtures();
    let mut scales = 0;
    for layer in layers() {
        let node = open_node(store.as_ref(), &layer).unwrap();
        let NodeMetadata::Group(group) = &node.metadata else {
            panic!("{layer} is not a group");
        };
        assert_eq!(group.format, ZarrFormat::Precomputed);
        for key in layer_scales(store.as_ref(), &layer).unwrap() {
            let path = format!("{layer}/{key}");
            let array = Array::open(store.clone(), &path).unwrap();
            let (shape, data_type, want) = expected(&layer, &key);
            let shape64: Vec<u64> = shape.iter().map(|&s| s as u64).collect();
            assert_eq!(array.shape(), shape64, "{path}");
            assert_eq!(array.metadata().data_type, data_type, "{path}");
            let names: Vec<String> = array
                .metadata()
                .dimension_names
                .clone()
                .unwrap()
                .into_iter()
                .map(Option::unwrap)
                .collect();
            assert_eq!(names, ["x", "y", "z", "channel"]);
            let (_, got) = array.read_all().unwrap();
            let got = bytes(got);
            if layer.contains("jpeg") {
                assert_jpeg_close(&path, &got, &want, 2);
            } else {
                assert!(got == want, "{path}: values differ from the writer's");
            }
            scales += 1;
        }
    }
    assert!(scales >= 18, "only {scales} scales read");
}

#[test]
fn regions_and_offsets() {
    let store = fixtures();
    let array = Array::open(store.clone(), "ts_raw_u8/4_4_40").unwrap();
    let attrs = &array.metadata().attributes[ATTRIBUTE];
    assert_eq!(attrs["voxel_offset"], serde_json::json!([3, 5, 2]));
    assert_eq!(attrs["resolution"], serde_json::json!([4.0, 4.0, 40.0]));
    assert_eq!(attrs["type"], "image");
    assert_eq!(
        array.chunk_key(&[2, 2, 1, 0]),
        "ts_raw_u8/4_4_40/19-23_21-23_6-9"
    );
    let (_, _, all) = expected("ts_raw_u8", "4_4_40");
    // A box crossing chunk boundaries and edge chunks.
    let sel: Selection = "5:19,3:18,1:7,0".parse().unwrap();
    let (shape, got) = array.read(&sel).unwrap();
    assert_eq!(shape, [14, 15, 6]);
    let got = bytes(got);
    let mut i = 0;
    for x in 5..19 {
        for y in 3..18 {
            for z in 1..7 {
                assert_eq!(got[i], all[(x * 18 + y) * 7 + z], "({x}, {y}, {z})");
                i += 1;
            }
        }
    }
}

#[test]
fn sharded_reads_fetch_only_indexes_and_chunks() {
    let counting = Arc::new(neurochunk_store::CountingStore::new(fixtures()));
    let store: Arc<dyn Store> = counting.clone();
    let array = Array::open(store, "ts_shard_murmur_gzip/s0").unwrap();
    counting.reset();
    let (_, voxel) = array
        .read(&selection![10_i64, 9_i64, 4_i64, 0_i64])
        .unwrap();
    let counts = counting.counts();
    // One shard index entry, one minishard index, one chunk: three ranged reads.
    assert_eq!(counts.whole_reads, 0, "{counts:?}");
    assert_eq!(counts.ranges_read, 3, "{counts:?}");
    let (_, _, all) = expected("ts_shard_murmur_gzip", "s0");
    let at = ((10 * 19 + 9) * 9 + 4) * 8;
    assert_eq!(bytes(voxel), all[at..at + 8]);
}

fn temp() -> (tempfile::TempDir, Arc<dyn Store>) {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(FsStore::new(dir.path()));
    (dir, store)
}

/// Convert every fixture scale into a new layer with the same encoding and layout; the files
/// of the lossless, deterministic encodings come out byte for byte as tensorstore wrote them.
#[test]
fn fixtures_rewritten_read_back() {
    let src_store = fixtures();
    let (dir, dst_store) = temp();
    for layer in layers() {
        for key in layer_scales(src_store.as_ref(), &layer).unwrap() {
            let path = format!("{layer}/{key}");
            let src = Array::open(src_store.clone(), &path).unwrap();
            let options = ConvertOptions {
                format: Some(ZarrFormat::Precomputed),
                ..ConvertOptions::default()
            };
            let (dst, changes) =
                convert_array(&src, dst_store.clone(), &path, &options, &|_| {}).unwrap();
            assert!(changes.is_empty(), "{path}: {changes:?}");
            let again = Array::open(dst_store.clone(), &path).unwrap();
            let (_, want) = src.read_all().unwrap();
            let (_, got) = again.read_all().unwrap();
            if layer.contains("jpeg") {
                assert_jpeg_close(&path, &bytes(got), &bytes(want), 8);
            } else {
                assert_eq!(got, want, "{path}");
            }
            assert_eq!(
                dst.metadata().attributes,
                src.metadata().attributes,
                "{path}"
            );
            if layer.starts_with("ts_raw") || layer == "ts_shard_identity" {
                for entry in std::fs::read_dir(data_dir().join(&path)).unwrap() {
                    let entry = entry.unwrap();
                    let ours = std::fs::read(dir.path().join(&path).join(entry.file_name()))
                        .unwrap_or_default();
                    assert!(
                        ours == std::fs::read(entry.path()).unwrap(),
                        "{path}/{:?} differs from tensorstore's",
                        entry.file_name()
                    );
                }
            }
        }
    }
    // The info of a two-scale layer lists both scales.
    assert_eq!(
        layer_scales(dst_store.as_ref(), "ts_raw_u8").unwrap(),
        ["4_4_40", "8_8_40"]
    );
}

#[test]
fn builder_writes_every_encoding_and_layout() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let shape = [19u64, 13, 6];
    let n = (shape[0] * shape[1] * shape[2]) as usize;
    let cases: Vec<(DataType, u64, Codec, Option<ShardingSpec>, bool)> = vec![
        (DataType::UInt16, 1, Codec::NeuroglancerRaw, None, false),
        (DataType::UInt8, 1, Codec::NeuroglancerRaw, None, true),
        (DataType::Float32, 2, Codec::NeuroglancerRaw, None, false),
        (
            DataType::UInt64,
            1,
            Codec::CompressedSegmentation {
                block_size: [4, 4, 2],
            },
            Some(ShardingSpec {
                preshift_bits: 0,
                hash: ShardHash::Murmurhash3X86_128,
                minishard_bits: 1,
                shard_bits: 2,
                minishard_index_encoding: ShardEncoding::Gzip,
                data_encoding: ShardEncoding::Gzip,
            }),
            false,
        ),
        (
            DataType::UInt32,
            3,
            Codec::CompressedSegmentation {
                block_size: [8, 8, 8],
            },
            None,
            false,
        ),
        (
            DataType::UInt16,
            3,
            Codec::NeuroglancerPng { level: Some(6) },
            None,
            false,
        ),
        (
            DataType::UInt8,
            1,
            Codec::NeuroglancerPng { level: None },
            Some(ShardingSpec {
                preshift_bits: 2,
                hash: ShardHash::Identity,
                minishard_bits: 0,
                shard_bits: 0,
                minishard_index_encoding: ShardEncoding::Raw,
                data_encoding: ShardEncoding::Raw,
            }),
            false,
        ),
    ];
    for (i, (data_type, channels, codec, sharding, gzip)) in cases.into_iter().enumerate() {
        let elem = data_type.fixed_size().unwrap();
        let values: Vec<u8> = (0..n * channels as usize * elem)
            .map(|b| ((b / elem) % 7 * 3 + (b % elem)) as u8)
            .collect();
        let mut codecs = vec![codec];
        if gzip {
            codecs.push(Codec::Gzip { level: 6 });
        }
        let path = format!("layer{i}/s0");
        let array = ArrayBuilder::new([shape[0], shape[1], shape[2], channels], data_type)
            .format(ZarrFormat::Precomputed)
            .chunks([8, 4, 4, channels as usize])
            .codecs(codecs)
            .precomputed(PrecomputedOptions {
                voxel_offset: Some([-3, 7, 1000]),
                sharding,
                ..PrecomputedOptions::default()
            })
            .create(store.clone(), &path)
            .unwrap();
        array
            .write(&Selection::all(), &ArrayBytes::Fixed(values.clone()))
            .unwrap();
        // A partial overwrite: read-modify-write of chunks (whole shards when sharded).
        let patch = vec![9u8; 3 * 2 * 2 * channels as usize * elem];
        array
            .write(
                &"2:5,11:13,4:6,:".parse().unwrap(),
                &ArrayBytes::Fixed(patch),
            )
            .unwrap();
        let again = Array::open(store.clone(), &path).unwrap();
        let (_, got) = again.read_all().unwrap();
        let got = bytes(got);
        let per_voxel = channels as usize * elem;
        for x in 0..19usize {
            for y in 0..13usize {
                for z in 0..6usize {
                    let at = ((x * 13 + y) * 6 + z) * per_voxel;
                    let patched = (2..5).contains(&x) && (11..13).contains(&y) && z >= 4;
                    let want: Vec<u8> = if patched {
                        vec![9; per_voxel]
                    } else {
                        values[at..at + per_voxel].to_vec()
                    };
                    assert_eq!(got[at..at + per_voxel], want, "case {i} at ({x}, {y}, {z})");
                }
            }
        }
        let stored = again.stored_chunks().unwrap();
        assert_eq!(stored.len(), 3 * 4 * 2, "case {i}: {stored:?}");
    }
    assert!(store.exists("layer1/s0/-3-5_7-11_1000-1004.gz").unwrap());
    assert!(!store.exists("layer1/s0/-3-5_7-11_1000-1004").unwrap());
    assert!(store.exists("layer3/s0/0.shard").unwrap());
    assert!(
        store.exists("layer6/s0/.shard").unwrap() || store.exists("layer6/s0/0.shard").unwrap()
    );
}

#[test]
fn zarr_round_trip_keeps_the_scale_description() {
    let src_store = fixtures();
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let src = Array::open(src_store, "ts_cseg_u64_442/s0").unwrap();
    let to_zarr = ConvertOptions {
        format: Some(ZarrFormat::V3),
        ..ConvertOptions::default()
    };
    let (zarr, changes) = convert_array(&src, store.clone(), "zarr/s0", &to_zarr, &|_| {}).unwrap();
    assert_eq!(
        changes,
        ["precomputed compressed_segmentation chunks re-encoded as bytes + zstd"]
    );
    assert_eq!(zarr.shape(), src.shape());
    let back = ConvertOptions {
        format: Some(ZarrFormat::Precomputed),
        compressors: Some(vec![Codec::CompressedSegmentation {
            block_size: [4, 4, 2],
        }]),
        ..ConvertOptions::default()
    };
    let (again, changes) = convert_array(&zarr, store.clone(), "layer/s0", &back, &|_| {}).unwrap();
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(again.read_all().unwrap(), src.read_all().unwrap());
    assert_eq!(
        again.metadata().attributes[ATTRIBUTE]["voxel_offset"],
        serde_json::json!([10, 20, 30])
    );
    // A 3-d Zarr array becomes a scale with one channel.
    let plain = ArrayBuilder::new([10, 9, 8], DataType::Int16)
        .chunks([4, 4, 4])
        .create(store.clone(), "plain")
        .unwrap();
    let values: Vec<i16> = (0..720).map(|v| v as i16 - 300).collect();
    plain.write_elements(&selection![..], &values).unwrap();
    let to_pc = ConvertOptions {
        format: Some(ZarrFormat::Precomputed),
        ..ConvertOptions::default()
    };
    let (scale, _) = convert_array(&plain, store.clone(), "pc/1_1_1", &to_pc, &|_| {}).unwrap();
    assert_eq!(scale.shape(), [10, 9, 8, 1]);
    let (_, got) = scale.read_elements::<i16>(&selection![..]).unwrap();
    assert_eq!(got, values);
}

#[test]
fn what_precomputed_cannot_hold_is_refused() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let err = |b: ArrayBuilder| {
        b.format(ZarrFormat::Precomputed)
            .create(store.clone(), "l/s")
            .unwrap_err()
            .to_string()
    };
    let e = err(ArrayBuilder::new([4, 4, 4], DataType::Float64));
    assert!(e.contains("float64") && e.contains("precomputed"), "{e}");
    let e = err(ArrayBuilder::new([4, 4, 4, 2, 2], DataType::UInt8));
    assert!(e.contains("5"), "{e}");
    let e = err(ArrayBuilder::new([4, 4, 4], DataType::UInt16)
        .codecs([Codec::NeuroglancerJpeg { quality: 90 }]));
    assert!(e.contains("jpeg") && e.contains("uint8"), "{e}");
    let e = err(ArrayBuilder::new([4, 4, 4], DataType::UInt16).codecs([
        Codec::CompressedSegmentation {
            block_size: [8, 8, 8],
        },
    ]));
    assert!(e.contains("uint32 and uint64"), "{e}");
    let e = err(ArrayBuilder::new([4, 4, 4], DataType::UInt8).attribute("a", serde_json::json!(1)));
    assert!(e.contains("attributes"), "{e}");
    // A scale of another data type cannot join a layer.
    ArrayBuilder::new([4, 4, 4], DataType::UInt8)
        .format(ZarrFormat::Precomputed)
        .create(store.clone(), "l/a")
        .unwrap();
    let e = err(ArrayBuilder::new([4, 4, 4], DataType::UInt16));
    assert!(e.contains("holds uint8"), "{e}");
    // compresso is named.
    store
        .set(
            "c/info",
            br#"{"data_type":"uint32","num_channels":1,"type":"segmentation","scales":[{"key":"s","size":[1,1,1],"resolution":[1,1,1],"chunk_sizes":[[1,1,1]],"encoding":"compresso"}]}"#.to_vec().into(),
        )
        .unwrap();
    let e = Array::open(store.clone(), "c/s").unwrap_err().to_string();
    assert!(e.contains("compresso"), "{e}");
}

/// Copy a fixture layer into a temporary directory to damage it.
fn copy_layer(layer: &str) -> (tempfile::TempDir, Arc<dyn Store>) {
    let (dir, store) = temp();
    let src = data_dir().join(layer);
    for entry in walk(&src) {
        let rel = entry.strip_prefix(&src).unwrap();
        let to = dir.path().join(layer).join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    (dir, store)
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn hostile_shards_and_chunks_are_errors() {
    // A truncated shard index.
    let (dir, store) = copy_layer("ts_shard_identity");
    let shard = dir.path().join("ts_shard_identity/s0/0.shard");
    std::fs::write(&shard, &std::fs::read(&shard).unwrap()[..20]).unwrap();
    let array = Array::open(store.clone(), "ts_shard_identity/s0").unwrap();
    let e = array.read_all().unwrap_err().to_string();
    assert!(
        e.contains("0.shard") && (e.contains("truncated") || e.contains("past the end")),
        "{e}"
    );
    // A minishard index range past the end of the shard.
    std::fs::copy(data_dir().join("ts_shard_identity/s0/0.shard"), &shard).unwrap();
    let mut bytes = std::fs::read(dir.path().join("ts_shard_identity/s0/1.shard")).unwrap();
    bytes[8..16].copy_from_slice(&1_000_000u64.to_le_bytes());
    std::fs::write(dir.path().join("ts_shard_identity/s0/1.shard"), &bytes).unwrap();
    // Chunk (0, 1, 0): chunk id 2, minishard 0 of shard 1 (identity hash, one bit each).
    let e = array
        .read(&"0:4,8:12,0:4,:".parse().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("1.shard") && e.contains("past the end"), "{e}");
    // Chunk data offsets past the end of the shard.
    let (dir, store) = copy_layer("ts_shard_identity");
    let path = dir.path().join("ts_shard_identity/s0/0.shard");
    let mut bytes = std::fs::read(&path).unwrap();
    let start = u64::from_le_bytes(bytes[0..8].try_into().unwrap()) as usize + 32;
    let n = (u64::from_le_bytes(bytes[8..16].try_into().unwrap()) as usize + 32 - start) / 24;
    let offset_at = start + n * 8;
    bytes[offset_at..offset_at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let array = Array::open(store, "ts_shard_identity/s0").unwrap();
    let e = array.read_all().unwrap_err().to_string();
    assert!(e.contains("0.shard") && e.contains("past the end"), "{e}");
    // compressed_segmentation with a lookup table offset out of range.
    let (dir, store) = copy_layer("ts_cseg_u32_888");
    let chunk = dir.path().join("ts_cseg_u32_888/s0/0-16_0-16_0-8");
    let mut bytes = std::fs::read(&chunk).unwrap();
    bytes[4..8].copy_from_slice(&(0x00ff_fff0u32 | 4 << 24).to_le_bytes());
    std::fs::write(&chunk, &bytes).unwrap();
    let array = Array::open(store, "ts_cseg_u32_888/s0").unwrap();
    let e = array.read_all().unwrap_err().to_string();
    assert!(
        e.contains("0-16_0-16_0-8") && e.contains("compressed_segmentation"),
        "{e}"
    );
    // A gzip chunk file that is not gzip.
    let (dir, store) = copy_layer("cv_raw_gzip");
    let chunk = dir.path().join("cv_raw_gzip/4_4_40/3-11_5-13_2-6.gz");
    std::fs::write(&chunk, b"not gzip").unwrap();
    let array = Array::open(store, "cv_raw_gzip/4_4_40").unwrap();
    let e = array.read_all().unwrap_err().to_string();
    assert!(e.contains("3-11_5-13_2-6") && e.contains("gzip"), "{e}");
}

/// How many times each key was stored or read.
type KeyCounts = Vec<(String, usize)>;

/// A memory store that counts, per key, the values stored and the whole-value reads.
#[derive(Debug, Default)]
struct ShardWrites {
    inner: MemoryStore,
    sets: std::sync::Mutex<std::collections::HashMap<String, usize>>,
    whole_reads: std::sync::Mutex<std::collections::HashMap<String, usize>>,
}

impl ShardWrites {
    /// The counts since the last call, of the keys ending in `.shard`.
    fn take(&self) -> (KeyCounts, KeyCounts) {
        let drain = |map: &std::sync::Mutex<std::collections::HashMap<String, usize>>| {
            let mut counts: KeyCounts = map
                .lock()
                .unwrap()
                .drain()
                .filter(|(k, _)| k.ends_with(".shard"))
                .collect();
            counts.sort();
            counts
        };
        (drain(&self.sets), drain(&self.whole_reads))
    }
}

impl Store for ShardWrites {
    fn get(&self, key: &str) -> neurochunk_store::StoreResult<Option<neurochunk_store::Bytes>> {
        *self
            .whole_reads
            .lock()
            .unwrap()
            .entry(key.to_string())
            .or_default() += 1;
        self.inner.get(key)
    }
    fn get_ranges(
        &self,
        key: &str,
        ranges: &[neurochunk_store::ByteRange],
    ) -> neurochunk_store::StoreResult<Option<Vec<neurochunk_store::Bytes>>> {
        self.inner.get_ranges(key, ranges)
    }
    fn size(&self, key: &str) -> neurochunk_store::StoreResult<Option<u64>> {
        self.inner.size(key)
    }
    fn set(&self, key: &str, value: neurochunk_store::Bytes) -> neurochunk_store::StoreResult<()> {
        *self
            .sets
            .lock()
            .unwrap()
            .entry(key.to_string())
            .or_default() += 1;
        self.inner.set(key, value)
    }
    fn delete(&self, key: &str) -> neurochunk_store::StoreResult<()> {
        *self
            .sets
            .lock()
            .unwrap()
            .entry(key.to_string())
            .or_default() += 1;
        self.inner.delete(key)
    }
    fn list_prefix(&self, prefix: &str) -> neurochunk_store::StoreResult<Vec<String>> {
        self.inner.list_prefix(prefix)
    }
    fn list_dir(
        &self,
        prefix: &str,
    ) -> neurochunk_store::StoreResult<neurochunk_store::DirListing> {
        self.inner.list_dir(prefix)
    }
}

/// Overlapping region writes into sharded scales (identity and murmurhash, raw and gzip):
/// every value reads back as last written, chunks of other regions survive, each write stores
/// each shard it touches once, and a write into shards not stored yet reads none of them.
#[test]
fn sharded_region_writes_rewrite_each_shard_once() {
    let shape = [37usize, 29, 21];
    let specs = [
        ShardingSpec {
            preshift_bits: 0,
            hash: ShardHash::Identity,
            minishard_bits: 1,
            shard_bits: 2,
            minishard_index_encoding: ShardEncoding::Raw,
            data_encoding: ShardEncoding::Raw,
        },
        ShardingSpec {
            preshift_bits: 1,
            hash: ShardHash::Murmurhash3X86_128,
            minishard_bits: 2,
            shard_bits: 2,
            minishard_index_encoding: ShardEncoding::Gzip,
            data_encoding: ShardEncoding::Gzip,
        },
    ];
    // Regions (x, y, z ranges) and whether they are written with the fill value 0: the last
    // but one covers whole chunks, which are then deleted.
    type Region = ([std::ops::Range<usize>; 3], bool);
    let regions: Vec<Region> = vec![
        ([3..20, 5..29, 2..15], false),
        ([15..37, 0..12, 10..21], false),
        ([1..2, 0..29, 0..21], false),
        ([0..37, 0..29, 0..21], false),
        ([4..33, 2..27, 3..19], false),
        ([8..24, 8..16, 0..8], true),
        ([10..30, 3..25, 5..18], false),
    ];
    for (s, spec) in specs.into_iter().enumerate() {
        let recorder = Arc::new(ShardWrites::default());
        let store: Arc<dyn Store> = recorder.clone();
        let array = ArrayBuilder::new(
            [shape[0] as u64, shape[1] as u64, shape[2] as u64, 1],
            DataType::UInt64,
        )
        .format(ZarrFormat::Precomputed)
        .chunks([8, 8, 8, 1])
        .codecs(vec![Codec::CompressedSegmentation {
            block_size: [4, 4, 4],
        }])
        .precomputed(PrecomputedOptions {
            sharding: Some(spec),
            ..PrecomputedOptions::default()
        })
        .create(store.clone(), "seg/s0")
        .unwrap();
        let mut model = vec![0u64; shape.iter().product()];
        for (k, ([xs, ys, zs], zero)) in regions.iter().enumerate() {
            let mut values = Vec::new();
            for x in xs.clone() {
                for y in ys.clone() {
                    for z in zs.clone() {
                        let v = if *zero {
                            0
                        } else {
                            ((((x / 3 + y / 5 + z / 2) % 7 + 1) as u64 * (k as u64 + 1)) << 40) | 5
                        };
                        model[(x * shape[1] + y) * shape[2] + z] = v;
                        values.extend_from_slice(&v.to_le_bytes());
                    }
                }
            }
            recorder.take();
            let selection = Selection::from_box(
                &[xs.start as u64, ys.start as u64, zs.start as u64, 0],
                &[xs.len() as u64, ys.len() as u64, zs.len() as u64, 1],
            );
            array.write(&selection, &ArrayBytes::Fixed(values)).unwrap();
            let (sets, reads) = recorder.take();
            assert!(!sets.is_empty(), "spec {s}, region {k}: no shard stored");
            for (key, n) in &sets {
                assert_eq!(*n, 1, "spec {s}, region {k}: {key} stored {n} times");
            }
            if k == 0 {
                // Every shard was new: nothing to read back.
                assert!(reads.is_empty(), "spec {s}: {reads:?}");
            }
            for (key, n) in &reads {
                assert!(*n <= 1, "spec {s}, region {k}: {key} read whole {n} times");
            }
            let again = Array::open(store.clone(), "seg/s0").unwrap();
            let (_, got) = again.read_all().unwrap();
            let got: Vec<u64> = bytes(got)
                .chunks_exact(8)
                .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
                .collect();
            for (i, (g, w)) in got.iter().zip(&model).enumerate() {
                assert_eq!(g, w, "spec {s}, after region {k}: element {i}");
            }
            if *zero {
                // Its whole chunks (x 8..24, y 8..16, z 0..8) are deleted.
                let stored = again.stored_chunks().unwrap();
                assert_eq!(stored.len(), 5 * 4 * 3 - 2, "spec {s}: {stored:?}");
                for chunk in [[1u64, 1, 0, 0], [2, 1, 0, 0]] {
                    assert!(!stored.contains(&chunk.to_vec()), "spec {s}: {chunk:?}");
                }
            }
        }
        // Every chunk was written non-zero by region 3, and those the zero region deleted
        // were written again by the last one.
        let stored = Array::open(store.clone(), "seg/s0")
            .unwrap()
            .stored_chunks()
            .unwrap();
        assert_eq!(stored.len(), 5 * 4 * 3, "spec {s}: {stored:?}");
    }
}
