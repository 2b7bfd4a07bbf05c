//! Behaviour of arrays and hierarchies in both Zarr formats, checked against the byte layouts
//! the reference implementations produce.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use neurochunk_array::convert::{copy_data, derive_metadata, ConvertOptions};
use neurochunk_array::{
    consolidate, create_group, list_nodes, open_node, parse_selection, Array, ArrayBytes,
    ArrayMetadata, Codec, DataType, MemoryStore, NodeMetadata, Selection, Store, ZarrFormat,
};
use neurochunk_dtype::Endian;
use neurochunk_store::{
    ByteRange, Bytes, CountingStore, DirListing, ReadRequest, ReadResponse, StoreResult,
};
use serde_json::{json, Map, Value};

mod common;
use common::{as_u16, meta, store, string_meta, u16s};

#[test]
fn v2_uncompressed_edge_chunks_match_zarr_python_bytes() {
    // formats.md V2-01: 2x3 uint16 in 2x2 chunks; the edge chunk is stored full size.
    let s = store();
    let a = Array::create(s.clone(), "", meta(ZarrFormat::V2, &[2, 3], &[2, 2], &[])).unwrap();
    a.write_all(&u16s(&[1, 2, 3, 4, 5, 6])).unwrap();
    assert_eq!(s.get("0.0").unwrap().unwrap(), vec![1, 0, 2, 0, 4, 0, 5, 0]);
    assert_eq!(s.get("0.1").unwrap().unwrap(), vec![3, 0, 0, 0, 6, 0, 0, 0]);
    let doc: Value = serde_json::from_slice(&s.get(".zarray").unwrap().unwrap()).unwrap();
    assert_eq!(doc["dtype"], json!("<u2"));
    assert_eq!(doc["compressor"], Value::Null);
    assert_eq!(doc["filters"], Value::Null);
    assert_eq!(doc["order"], json!("C"));
    let text = String::from_utf8(s.get(".zarray").unwrap().unwrap().to_vec()).unwrap();
    assert!(
        text.starts_with("{\n    \"chunks\": [\n        2,"),
        "zarr-python 2 layout: {text}"
    );
    let (shape, data) = Array::open(s, "").unwrap().read_all().unwrap();
    assert_eq!(shape, vec![2, 3]);
    assert_eq!(as_u16(&data), vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn v3_keys_and_document_match_zarr_python() {
    let s = store();
    let a = Array::create(
        s.clone(),
        "g/x",
        meta(ZarrFormat::V3, &[2, 3], &[2, 2], &[]),
    )
    .unwrap();
    a.write_all(&u16s(&[1, 2, 3, 4, 5, 6])).unwrap();
    assert_eq!(
        s.get("g/x/c/0/0").unwrap().unwrap(),
        vec![1, 0, 2, 0, 4, 0, 5, 0]
    );
    assert_eq!(
        s.get("g/x/c/0/1").unwrap().unwrap(),
        vec![3, 0, 0, 0, 6, 0, 0, 0]
    );
    // Parents were created as groups.
    assert!(s.exists("zarr.json").unwrap() && s.exists("g/zarr.json").unwrap());
    let text = String::from_utf8(s.get("g/x/zarr.json").unwrap().unwrap().to_vec()).unwrap();
    let keys: Vec<String> = serde_json::from_str::<Map<String, Value>>(&text)
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        keys,
        [
            "shape",
            "data_type",
            "chunk_grid",
            "chunk_key_encoding",
            "fill_value",
            "codecs",
            "attributes",
            "zarr_format",
            "node_type",
            "storage_transformers"
        ]
    );
    assert!(text.starts_with("{\n  \"shape\": [\n    2,"), "{text}");
}

#[test]
fn regions_with_steps_and_negative_indices_read_like_numpy() {
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        let s = store();
        let a = Array::create(s, "a", meta(format, &[7, 9], &[3, 4], &[Codec::zstd(1)])).unwrap();
        let values: Vec<u16> = (0..63).collect();
        a.write_all(&u16s(&values)).unwrap();
        let at = |r: usize, c: usize| values[r * 9 + c];
        let (shape, data) = a.read(&parse_selection("1:6:2,-1").unwrap()).unwrap();
        assert_eq!(shape, vec![3]);
        assert_eq!(as_u16(&data), vec![at(1, 8), at(3, 8), at(5, 8)]);
        let (shape, data) = a.read(&parse_selection("::-3,2:7").unwrap()).unwrap();
        assert_eq!(shape, vec![3, 5]);
        let expected: Vec<u16> = [6, 3, 0]
            .iter()
            .flat_map(|&r| (2..7).map(move |c| at(r, c)))
            .collect();
        assert_eq!(as_u16(&data), expected);
        let err = a
            .read(&parse_selection("0:8").unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("/a") && err.contains("out of bounds"), "{err}");
    }
}

#[test]
fn partial_writes_keep_neighbours_and_sparse_chunks_read_as_fill() {
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        let s = store();
        let mut m = meta(format, &[10, 10], &[4, 4], &[Codec::Gzip { level: 1 }]);
        m.fill_value = Some(7u16.to_le_bytes().to_vec());
        let a = Array::create(s.clone(), "", m).unwrap();
        a.write(
            &parse_selection("1:3,2:7").unwrap(),
            &u16s(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        )
        .unwrap();
        a.write(&parse_selection("2,3").unwrap(), &u16s(&[99]))
            .unwrap();
        let (_, data) = a.read_all().unwrap();
        let v = as_u16(&data);
        assert_eq!(&v[12..17], &[1, 2, 3, 4, 5]);
        assert_eq!(&v[22..27], &[6, 99, 8, 9, 10]);
        assert_eq!(v[0], 7);
        assert_eq!(v[99], 7, "unwritten chunks read as the fill value");
        // Only the two touched chunks are stored.
        assert_eq!(a.stored_chunks().unwrap().len(), 2);
        // Writing the fill value everywhere removes the chunks again.
        a.write_all(&u16s(&[7; 100])).unwrap();
        assert!(a.stored_chunks().unwrap().is_empty());
    }
}

#[test]
fn fortran_order_and_big_endian_layout_bytes() {
    // formats.md V2-02 / V3-03: C-order values 0..6 in a 2x3 chunk stored F-ordered, big endian.
    let src = ArrayMetadata {
        data_type: DataType::Int32,
        fill_value: Some(vec![0; 4]),
        ..meta(ZarrFormat::V2, &[2, 3], &[2, 3], &[])
    };
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        let options = ConvertOptions {
            format: Some(format),
            fortran_order: Some(true),
            endian: Some(Endian::Big),
            separator: Some('/'),
            ..Default::default()
        };
        let m = derive_metadata(&src, &options, "").unwrap();
        let s = store();
        let a = Array::create(s.clone(), "", m).unwrap();
        let data: Vec<u8> = (0..6i32).flat_map(|v| v.to_le_bytes()).collect();
        a.write_all(&ArrayBytes::Fixed(data.clone())).unwrap();
        let key = if format == ZarrFormat::V2 {
            "0/0"
        } else {
            "c/0/0"
        };
        let stored = s.get(key).unwrap().unwrap();
        let expected: Vec<u8> = [0i32, 3, 1, 4, 2, 5]
            .iter()
            .flat_map(|v| v.to_be_bytes())
            .collect();
        assert_eq!(stored, expected, "{format:?}");
        let reopened = Array::open(s.clone(), "").unwrap();
        assert_eq!(reopened.read_all().unwrap().1, ArrayBytes::Fixed(data));
        if format == ZarrFormat::V2 {
            let doc: Value = serde_json::from_slice(&s.get(".zarray").unwrap().unwrap()).unwrap();
            assert_eq!(
                (doc["order"].clone(), doc["dtype"].clone()),
                (json!("F"), json!(">i4"))
            );
        }
    }
}

/// A store that answers reads only through `get_many`, recording each batch (direct `get` and
/// `get_ranges` calls are counted, to show the read path does not make them).
#[derive(Debug, Default)]
struct BatchRecordingStore {
    inner: MemoryStore,
    direct: AtomicUsize,
    batches: std::sync::Mutex<Vec<Vec<ReadRequest>>>,
    /// What `concurrent_reads` says (0: the default).
    concurrency: usize,
    /// How long each `get_many` call takes, as a network round trip would.
    round_trip: std::time::Duration,
    /// Requests of the `get_many` calls running now, and the most there were at once.
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    /// Values of the `set_many` calls running now, and the most there were at once.
    writes_in_flight: AtomicUsize,
    most_writes_in_flight: AtomicUsize,
    /// A key whose reads fail, as a server error would.
    failing: std::sync::Mutex<Option<String>>,
}

impl Store for BatchRecordingStore {
    fn concurrent_reads(&self) -> usize {
        self.concurrency.max(1)
    }
    fn get(&self, key: &str) -> StoreResult<Option<Bytes>> {
        self.direct.fetch_add(1, Ordering::Relaxed);
        self.inner.get(key)
    }
    fn get_ranges(&self, key: &str, ranges: &[ByteRange]) -> StoreResult<Option<Vec<Bytes>>> {
        self.direct.fetch_add(1, Ordering::Relaxed);
        self.inner.get_ranges(key, ranges)
    }
    fn set_many(&self, values: Vec<(String, Bytes)>) -> StoreResult<()> {
        let n = values.len();
        let now = self.writes_in_flight.fetch_add(n, Ordering::SeqCst) + n;
        self.most_writes_in_flight.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(self.round_trip);
        let stored = self.inner.set_many(values);
        self.writes_in_flight.fetch_sub(n, Ordering::SeqCst);
        stored
    }
    fn get_many(&self, requests: &[ReadRequest]) -> Vec<StoreResult<ReadResponse>> {
        self.batches.lock().unwrap().push(requests.to_vec());
        let now = self.in_flight.fetch_add(requests.len(), Ordering::SeqCst) + requests.len();
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(self.round_trip);
        let failing = self.failing.lock().unwrap().clone();
        let answers = requests
            .iter()
            .zip(self.inner.get_many(requests))
            .map(|(request, answer)| match &failing {
                Some(key) if *key == request.key => Err(neurochunk_store::StoreError::backend(
                    "test",
                    key,
                    "the server failed",
                )),
                _ => answer,
            })
            .collect();
        self.in_flight.fetch_sub(requests.len(), Ordering::SeqCst);
        answers
    }
    fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        self.direct.fetch_add(1, Ordering::Relaxed);
        self.inner.size(key)
    }
    fn set(&self, key: &str, value: Bytes) -> StoreResult<()> {
        self.inner.set(key, value)
    }
    fn delete(&self, key: &str) -> StoreResult<()> {
        self.inner.delete(key)
    }
    fn list_prefix(&self, prefix: &str) -> StoreResult<Vec<String>> {
        self.inner.list_prefix(prefix)
    }
    fn list_dir(&self, prefix: &str) -> StoreResult<DirListing> {
        self.inner.list_dir(prefix)
    }
}

impl BatchRecordingStore {
    /// Forget what was recorded so far.
    fn reset(&self) {
        self.direct.store(0, Ordering::Relaxed);
        self.most_in_flight.store(0, Ordering::SeqCst);
        self.most_writes_in_flight.store(0, Ordering::SeqCst);
        self.batches.lock().unwrap().clear();
    }

    fn batches(&self) -> Vec<Vec<ReadRequest>> {
        self.batches.lock().unwrap().clone()
    }
}

#[test]
fn reads_fetch_chunks_in_batches_through_get_many() {
    let recording = Arc::new(BatchRecordingStore::default());
    let s: Arc<dyn Store> = recording.clone();
    // 16 x 16 chunks of 4 x 4, one of them missing (fill value 7).
    let mut m = meta(ZarrFormat::V3, &[64, 64], &[4, 4], &[Codec::zstd(1)]);
    m.fill_value = Some(7u16.to_le_bytes().to_vec());
    let a = Array::create(s.clone(), "", m).unwrap();
    let values: Vec<u16> = (0..4096u32).map(|v| (v * 7 % 65521) as u16).collect();
    a.write_all(&u16s(&values)).unwrap();
    s.delete("c/3/5").unwrap();
    recording.reset();
    let (_, all) = a.read_all().unwrap();
    let mut expected = values.clone();
    for r in 12..16 {
        for c in 20..24 {
            expected[r * 64 + c] = 7;
        }
    }
    assert_eq!(as_u16(&all), expected);
    assert_eq!(recording.direct.load(Ordering::Relaxed), 0, "only get_many");
    let batches = recording.batches();
    let mut keys: Vec<String> = batches.iter().flatten().map(|r| r.key.clone()).collect();
    assert!(batches.iter().flatten().all(|r| r.ranges.is_none()));
    assert!(
        batches.len() > 1 && batches.len() < 256,
        "{} batches",
        batches.len()
    );
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 256, "each chunk fetched once");

    // A write fetches only the chunks it partly overwrites, through get_many as well.
    recording.reset();
    a.write(&parse_selection("2:8,0:4").unwrap(), &u16s(&[9; 24]))
        .unwrap();
    assert_eq!(recording.direct.load(Ordering::Relaxed), 0, "only get_many");
    let requests = recording.batches().concat();
    assert_eq!(
        requests,
        vec![ReadRequest::whole("c/0/0")],
        "c/1/0 is covered"
    );
    let (_, part) = a.read(&parse_selection("0:9,0:1").unwrap()).unwrap();
    assert_eq!(
        as_u16(&part),
        [values[0], values[64], 9, 9, 9, 9, 9, 9, values[8 * 64]]
    );
}

#[test]
fn sharded_reads_fetch_indexes_then_ranges_of_all_shards_in_one_batch() {
    let recording = Arc::new(BatchRecordingStore::default());
    let s: Arc<dyn Store> = recording.clone();
    let a = Array::create(s.clone(), "", sharded_meta(&[Codec::zstd(1)])).unwrap();
    let values: Vec<u16> = (0..4096u32).map(|v| (v * 7 % 65521) as u16).collect();
    a.write_all(&u16s(&values)).unwrap();
    recording.reset();
    // A 4 x 4 window around the centre touches one inner chunk of each of the 2 x 2 shards.
    let (_, data) = a.read(&parse_selection("30:34,30:34").unwrap()).unwrap();
    let v = &values;
    let expected: Vec<u16> = (30..34)
        .flat_map(|r| (30..34).map(move |c| v[r * 64 + c]))
        .collect();
    assert_eq!(as_u16(&data), expected);
    assert_eq!(recording.direct.load(Ordering::Relaxed), 0, "only get_many");
    let batches = recording.batches();
    // Per batch of shards: one call for the indexes, one for the inner chunks.
    assert_eq!(batches.len() % 2, 0, "{batches:?}");
    let requests: Vec<&ReadRequest> = batches.iter().flatten().collect();
    assert_eq!(
        requests.len(),
        8,
        "4 indexes + 4 inner-chunk reads: {batches:?}"
    );
    for pair in batches.chunks(2) {
        assert_eq!(pair[0].len(), pair[1].len());
        for (index, inner) in pair[0].iter().zip(&pair[1]) {
            assert_eq!(index.key, inner.key);
            assert_eq!(index.ranges.as_ref().map(Vec::len), Some(1));
            assert_eq!(inner.ranges.as_ref().map(Vec::len), Some(1));
        }
    }
    // A missing shard reads as the fill value, without a second request for it.
    s.delete("c/1/1").unwrap();
    recording.reset();
    let (_, data) = a.read(&parse_selection("30:34,30:34").unwrap()).unwrap();
    let got = as_u16(&data);
    assert_eq!(&got[..10], &expected[..10]);
    assert_eq!(&got[14..], &[0, 0]);
    let requests = recording.batches().concat();
    assert_eq!(requests.len(), 7, "{requests:?}");
}

fn sharded_meta(index_crc: &[Codec]) -> ArrayMetadata {
    let plain = meta(ZarrFormat::V3, &[64, 64], &[8, 8], &[]);
    let options = ConvertOptions {
        chunks: Some(vec![8, 8]),
        shards: Some(vec![32, 32]),
        compressors: Some(index_crc.to_vec()),
        ..Default::default()
    };
    derive_metadata(&plain, &options, "").unwrap()
}

#[test]
fn sharded_reads_fetch_only_the_needed_inner_chunks() {
    let counting = Arc::new(CountingStore::new(Arc::new(MemoryStore::new())));
    let s: Arc<dyn Store> = counting.clone();
    let a = Array::create(s.clone(), "", sharded_meta(&[Codec::zstd(1)])).unwrap();
    let values: Vec<u16> = (0..4096u32).map(|v| (v * 7 % 65521) as u16).collect();
    a.write_all(&u16s(&values)).unwrap();
    assert_eq!(s.list_prefix("c/").unwrap().len(), 4, "2x2 shards");
    counting.reset();
    // One inner chunk of one shard: the index and one inner chunk, through byte ranges.
    let (_, data) = a.read(&parse_selection("9:12,40:44").unwrap()).unwrap();
    let v = &values;
    let expected: Vec<u16> = (9..12)
        .flat_map(|r| (40..44).map(move |c| v[r * 64 + c]))
        .collect();
    assert_eq!(as_u16(&data), expected);
    assert_eq!(counting.counts().whole_reads, 0, "no whole-shard read");
    assert_eq!(counting.counts().ranges_read, 2, "index + one inner chunk");
    let (_, all) = a.read_all().unwrap();
    assert_eq!(as_u16(&all), values);
}

#[test]
fn whole_shard_writes_store_what_the_sharding_codec_encodes() {
    // 10 x 13 in 8 x 8 shards of 4 x 4 inner chunks: edge shards, an all-zero inner chunk,
    // an all-zero shard (deleted), written in one go and reversed.
    let plain = meta(ZarrFormat::V3, &[10, 13], &[4, 4], &[]);
    let options = ConvertOptions {
        chunks: Some(vec![4, 4]),
        shards: Some(vec![8, 8]),
        compressors: Some(vec![Codec::zstd(1)]),
        ..Default::default()
    };
    let sharded = derive_metadata(&plain, &options, "").unwrap();
    let mut values: Vec<u16> = (0..130u16).map(|v| v + 1).collect();
    for r in 0..4 {
        for c in 4..8 {
            values[r * 13 + c] = 0;
        }
    }
    for r in 8..10 {
        for c in 8..13 {
            values[r * 13 + c] = 0;
        }
    }
    for reversed in [false, true] {
        let s = store();
        let a = Array::create(s.clone(), "", sharded.clone()).unwrap();
        if reversed {
            let backwards: Vec<u16> = values.iter().rev().copied().collect();
            a.write(&parse_selection("::-1,::-1").unwrap(), &u16s(&backwards))
                .unwrap();
        } else {
            a.write_all(&u16s(&values)).unwrap();
        }
        assert_eq!(
            as_u16(&a.read_all().unwrap().1),
            values,
            "reversed: {reversed}"
        );
        assert_eq!(
            s.get("c/1/1").unwrap(),
            None,
            "an all-fill shard is not stored"
        );
        for index in [[0u64, 0], [0, 1], [1, 0]] {
            let key = a.chunk_key(&index);
            let shard = a.retrieve_chunk(&index).unwrap();
            let repr = a.metadata().chunk_repr();
            let expected = a.metadata().codecs.encode(shard, &repr).unwrap();
            assert_eq!(s.get(&key).unwrap().unwrap(), expected, "{key}");
        }
    }
}

#[test]
fn sharded_layout_matches_zarr_python_bytes() {
    // formats.md V3-04: uint8 [4], shard [4], inner [2], write [1,2] to [0:2].
    let plain = ArrayMetadata {
        data_type: DataType::UInt8,
        fill_value: Some(vec![0]),
        ..meta(ZarrFormat::V3, &[4], &[2], &[])
    };
    let options = ConvertOptions {
        shards: Some(vec![4]),
        ..Default::default()
    };
    let s = store();
    let a = Array::create(
        s.clone(),
        "",
        derive_metadata(&plain, &options, "").unwrap(),
    )
    .unwrap();
    a.write(
        &parse_selection("0:2").unwrap(),
        &ArrayBytes::Fixed(vec![1, 2]),
    )
    .unwrap();
    let mut expected = vec![1u8, 2];
    for v in [0u64, 2, u64::MAX, u64::MAX] {
        expected.extend_from_slice(&v.to_le_bytes());
    }
    expected.extend_from_slice(&[0xbd, 0x13, 0xbd, 0x56]);
    assert_eq!(s.get("c/0").unwrap().unwrap(), expected);
}

#[test]
fn corrupt_chunks_give_errors_naming_array_and_key() {
    let s = store();
    let a = Array::create(
        s.clone(),
        "grp/vol",
        meta(ZarrFormat::V3, &[8], &[4], &[Codec::zstd(1), Codec::Crc32c]),
    )
    .unwrap();
    a.write_all(&u16s(&[1, 2, 3, 4, 5, 6, 7, 8])).unwrap();
    let mut bytes = s.get("grp/vol/c/1").unwrap().unwrap().to_vec();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    s.set("grp/vol/c/1", bytes.into()).unwrap();
    let err = a.read_all().unwrap_err().to_string();
    assert!(
        err.contains("/grp/vol") && err.contains("c/1") && err.contains("crc32c"),
        "{err}"
    );
    s.set("grp/vol/c/0", Bytes::from_static(&[1, 2, 3]))
        .unwrap();
    let err = a
        .read(&parse_selection("0:2").unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("c/0"), "{err}");

    let s = store();
    let a = Array::create(s.clone(), "sh", sharded_meta(&[])).unwrap();
    a.write_all(&u16s(&vec![5; 4096])).unwrap();
    let mut shard = s.get("sh/c/0/0").unwrap().unwrap().to_vec();
    // Point the first index entry far past the end; the index sits before the 4-byte crc.
    let first_entry = shard.len() - 4 - 16 * 16;
    shard[first_entry..first_entry + 8].copy_from_slice(&1_000_000u64.to_le_bytes());
    s.set("sh/c/0/0", shard.into()).unwrap();
    let err = a
        .read(&parse_selection("0:2,0:2").unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("/sh") && err.contains("c/0/0"), "{err}");
}

#[test]
fn malformed_metadata_is_reported_with_the_node_path() {
    let s = store();
    s.set("bad/.zarray", Bytes::from_static(br#"{"zarr_format": 2, "shape": [4], "dtype": "<u2", "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#)).unwrap();
    let err = Array::open(s.clone(), "bad").unwrap_err().to_string();
    assert!(err.contains("/bad") && err.contains("'chunks'"), "{err}");
    s.set(
        "bad2/zarr.json",
        Bytes::from_static(br#"{"zarr_format": 3, "node_type": "array", "shape": "four"}"#),
    )
    .unwrap();
    let err = Array::open(s.clone(), "bad2").unwrap_err().to_string();
    assert!(err.contains("/bad2") && err.contains("shape"), "{err}");
    s.set("bad3/.zarray", Bytes::from_static(br#"{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<u2", "compressor": {"id": "nosuchcodec"}, "fill_value": 0, "order": "C", "filters": null}"#)).unwrap();
    let err = Array::open(s.clone(), "bad3").unwrap_err().to_string();
    assert!(
        err.contains("/bad3") && err.contains("nosuchcodec"),
        "{err}"
    );
    // A v3 array whose data type cannot pass through its codec (string through `bytes`).
    s.set(
        "bad4/zarr.json",
        Bytes::from_static(br#"{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "string", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "fill_value": "", "codecs": [{"name": "bytes"}]}"#),
    ).unwrap();
    let err = Array::open(s.clone(), "bad4")
        .and_then(|a| a.read_all())
        .unwrap_err()
        .to_string();
    assert!(err.contains("/bad4"), "{err}");
    assert!(matches!(
        open_node(s.as_ref(), "nothing"),
        Err(neurochunk_array::ArrayError::NotFound(_))
    ));
}

#[test]
fn lenient_metadata_with_bare_nan_is_read() {
    let s = store();
    s.set(".zarray", Bytes::from_static(br#"{"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<f4", "compressor": null, "fill_value": NaN, "order": "C", "filters": []}"#)).unwrap();
    s.set(".zattrs", Bytes::from_static(br#"{"offset": -Infinity}"#))
        .unwrap();
    let a = Array::open(s, "").unwrap();
    let (_, data) = a.read_all().unwrap();
    let ArrayBytes::Fixed(bytes) = data else {
        panic!()
    };
    assert!(bytes
        .chunks_exact(4)
        .all(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]).is_nan()));
    assert_eq!(
        a.metadata().attributes["offset"],
        neurochunk_dtype::json::non_finite_value(f64::NEG_INFINITY)
    );
    // Rewriting the metadata keeps the bare token, as zarr-python writes it.
    let mut attrs = a.metadata().attributes.clone();
    attrs.insert("gain".into(), json!(2.5));
    let mut a = a;
    a.set_attributes(attrs).unwrap();
    let text = String::from_utf8(a.store().get(".zattrs").unwrap().unwrap().to_vec()).unwrap();
    assert!(text.contains("\"offset\": -Infinity"), "{text}");
}

#[test]
fn resize_drops_chunks_outside_the_new_shape() {
    let s = store();
    let mut a = Array::create(s.clone(), "", meta(ZarrFormat::V3, &[8], &[2], &[])).unwrap();
    a.write_all(&u16s(&[1, 2, 3, 4, 5, 6, 7, 8])).unwrap();
    a.resize(vec![3]).unwrap();
    assert_eq!(s.list_prefix("c/").unwrap(), vec!["c/0", "c/1"]);
    a.resize(vec![6]).unwrap();
    let reopened = Array::open(s, "").unwrap();
    assert_eq!(reopened.shape(), &[6]);
    assert_eq!(
        as_u16(&reopened.read_all().unwrap().1),
        vec![1, 2, 3, 4, 0, 0]
    );
}

#[test]
fn variable_length_strings_round_trip_in_both_formats() {
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        let s = store();
        let m = string_meta(format, &[5], &[2]);
        let a = Array::create(s.clone(), "t", m).unwrap();
        let words = ["a", "bc", "é", "", "neuron"];
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for w in words {
            data.extend_from_slice(w.as_bytes());
            offsets.push(data.len());
        }
        a.write_all(&ArrayBytes::Variable { data, offsets })
            .unwrap();
        let key = if format == ZarrFormat::V2 {
            "t/0"
        } else {
            "t/c/0"
        };
        // formats.md V2-07: u32 count, then (u32 length, bytes) per element.
        assert_eq!(
            s.get(key).unwrap().unwrap(),
            vec![2, 0, 0, 0, 1, 0, 0, 0, b'a', 2, 0, 0, 0, b'b', b'c']
        );
        let (_, back) = Array::open(s.clone(), "t")
            .unwrap()
            .read(&parse_selection("1:4").unwrap())
            .unwrap();
        let ArrayBytes::Variable { data, offsets } = back else {
            panic!()
        };
        let got: Vec<&str> = offsets
            .windows(2)
            .map(|w| std::str::from_utf8(&data[w[0]..w[1]]).unwrap())
            .collect();
        assert_eq!(got, ["bc", "é", ""]);
    }
}

#[test]
fn hierarchies_consolidate_and_reopen_from_one_document() {
    for format in [ZarrFormat::V2, ZarrFormat::V3] {
        let s = store();
        let mut attrs = Map::new();
        attrs.insert("foo".into(), json!("bär"));
        create_group(s.as_ref(), "", format, attrs).unwrap();
        create_group(s.as_ref(), "sub", format, Map::new()).unwrap();
        let mut m = meta(format, &[2], &[2], &[]);
        m.attributes.insert("n".into(), json!(1));
        Array::create(s.clone(), "sub/x", m)
            .unwrap()
            .write_all(&u16s(&[3, 4]))
            .unwrap();
        assert_eq!(consolidate(s.as_ref(), "").unwrap(), 3);
        let paths: Vec<String> = list_nodes(s.as_ref(), "")
            .unwrap()
            .into_iter()
            .map(|n| n.path)
            .collect();
        assert_eq!(paths, ["", "sub", "sub/x"]);
        // Remove the child documents: the walk must now come from the consolidated metadata.
        for key in s.list_prefix("sub/").unwrap() {
            if key.ends_with("zarr.json")
                || key.ends_with(".zarray")
                || key.ends_with(".zgroup")
                || key.ends_with(".zattrs")
            {
                s.delete(&key).unwrap();
            }
        }
        let nodes = list_nodes(s.as_ref(), "").unwrap();
        assert_eq!(nodes.len(), 3, "{format:?}");
        let NodeMetadata::Array(x) = &nodes[2].metadata else {
            panic!("sub/x is an array")
        };
        assert_eq!(x.attributes["n"], json!(1));
        let root_doc = String::from_utf8(
            s.get(if format == ZarrFormat::V2 {
                ".zmetadata"
            } else {
                "zarr.json"
            })
            .unwrap()
            .unwrap()
            .to_vec(),
        )
        .unwrap();
        assert!(
            root_doc.contains("b\\u00e4r"),
            "non-ASCII is escaped like Python: {root_doc}"
        );
    }
}

#[test]
fn conversion_streams_between_formats_and_layouts() {
    let s = store();
    let src = Array::create(
        s.clone(),
        "src",
        meta(
            ZarrFormat::V2,
            &[33, 17],
            &[5, 4],
            &[Codec::Zlib { level: 1 }],
        ),
    )
    .unwrap();
    let values: Vec<u16> = (0..33 * 17).map(|v| (v % 251) as u16).collect();
    src.write_all(&u16s(&values)).unwrap();
    let options = ConvertOptions {
        format: Some(ZarrFormat::V3),
        chunks: Some(vec![4, 4]),
        shards: Some(vec![8, 16]),
        compressors: Some(vec![Codec::Blosc {
            cname: neurochunk_codec::BloscCompressor::Zstd,
            clevel: 3,
            shuffle: neurochunk_codec::BloscShuffle::BitShuffle,
        }]),
        ..Default::default()
    };
    let dst_meta = derive_metadata(src.metadata(), &options, "dst").unwrap();
    let dst = Array::create(s.clone(), "dst", dst_meta).unwrap();
    let batches = AtomicUsize::new(0);
    copy_data(&src, &dst, &|n| {
        batches.fetch_add(n as usize, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(
        batches.load(Ordering::Relaxed),
        10,
        "5x2 shards, counted once each"
    );
    let back = Array::open(s.clone(), "dst").unwrap();
    assert_eq!(as_u16(&back.read_all().unwrap().1), values);
    let v2_again = derive_metadata(
        back.metadata(),
        &ConvertOptions {
            format: Some(ZarrFormat::V2),
            ..Default::default()
        },
        "",
    )
    .unwrap();
    assert_eq!(
        v2_again.chunk_shape,
        vec![4, 4],
        "unsharding keeps the inner chunks"
    );
    assert!(derive_metadata(
        src.metadata(),
        &ConvertOptions {
            shards: Some(vec![10, 8]),
            ..Default::default()
        },
        "x"
    )
    .is_err());
    let _ = Selection::all();
}

#[test]
fn unwrapping_shards_is_noted_for_every_target_format() {
    let sharded = sharded_meta(&[Codec::zstd(3), Codec::Crc32c]);
    for format in [ZarrFormat::V2, ZarrFormat::V3, ZarrFormat::N5] {
        let options = ConvertOptions {
            format: Some(format),
            // A v3 target keeps the shards unless the chunking changes.
            chunks: (format == ZarrFormat::V3).then(|| vec![8, 8]),
            ..Default::default()
        };
        let derived = neurochunk_array::convert::derive_array(&sharded, &options, "vol").unwrap();
        assert!(derived.metadata.codecs.sharding().is_none(), "{format:?}");
        assert_eq!(derived.metadata.chunk_shape, [8, 8], "{format:?}");
        assert!(
            derived
                .changes
                .iter()
                .any(|c| c == "shards unwrapped to their inner chunks"),
            "{format:?}: {:?}",
            derived.changes
        );
    }
    // Keeping the layout in v3 changes nothing.
    let kept = neurochunk_array::convert::derive_array(&sharded, &ConvertOptions::default(), "vol")
        .unwrap();
    assert!(kept.changes.is_empty(), "{:?}", kept.changes);
}

#[test]
fn declared_sizes_larger_than_memory_are_errors_and_regions_still_read() {
    // Metadata may declare any shape: the output is sized from the selection, and an output
    // or a chunk the machine cannot hold is an error naming the array, never an abort.
    let documents = [
        (
            ".zarray",
            r#"{"zarr_format": 2, "shape": [1000000000000000], "chunks": [100], "dtype": "<f8",
                "compressor": null, "fill_value": 1.5, "order": "C", "filters": null}"#,
        ),
        (
            "zarr.json",
            r#"{"zarr_format": 3, "node_type": "array", "shape": [1000000000000000],
                "data_type": "float64", "fill_value": 1.5,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100]}},
                "chunk_key_encoding": {"name": "default"},
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}"#,
        ),
    ];
    for (key, document) in documents {
        let s = store();
        s.set(key, Bytes::from(document.as_bytes().to_vec()))
            .unwrap();
        let a = Array::open(s, "").unwrap();
        let err = a.read_all().unwrap_err().to_string();
        assert!(
            err.contains("8000000000000000 bytes")
                && err.contains("more than this machine's memory"),
            "{key}: {err}"
        );
        let (shape, data) = a
            .read(&parse_selection("999999999999990:").unwrap())
            .unwrap();
        assert_eq!(shape, [10]);
        assert_eq!(
            data,
            ArrayBytes::Fixed(1.5f64.to_le_bytes().repeat(10)),
            "{key}"
        );
    }
    // A chunk no machine can decode.
    let s = store();
    s.set(
        ".zarray",
        Bytes::from_static(
            br#"{"zarr_format": 2, "shape": [10], "chunks": [100000000000000], "dtype": "<f8",
                 "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#,
        ),
    )
    .unwrap();
    let a = Array::open(s, "").unwrap();
    let err = a.read_all().unwrap_err().to_string();
    assert!(err.contains("800000000000000 bytes each decoded"), "{err}");
    let err = a
        .read_elements::<f64>(&Selection::all())
        .unwrap_err()
        .to_string();
    assert!(err.contains("each decoded"), "{err}");
}

#[test]
fn converting_a_huge_sparse_array_copies_only_the_stored_chunks() {
    // Declared: 10^12 elements in 10^10 chunks; stored: three chunks. The conversion's work
    // follows the data stored, not the declared shape.
    let s = store();
    let src = Array::create(
        s.clone(),
        "src",
        meta(ZarrFormat::V2, &[1_000_000_000_000], &[100], &[]),
    )
    .unwrap();
    for start in [0u64, 5_000, 999_999_999_950] {
        let values: Vec<u16> = (0..50).map(|i| (start % 1000) as u16 + i + 1).collect();
        src.write(&Selection::from_box(&[start], &[50]), &u16s(&values))
            .unwrap();
    }
    let options = ConvertOptions {
        format: Some(ZarrFormat::V3),
        chunks: Some(vec![40]),
        ..Default::default()
    };
    let (dst, _) =
        neurochunk_array::convert::convert_array(&src, s.clone(), "dst", &options, &|_| {})
            .unwrap();
    let written = s.list_prefix("dst/c/").unwrap();
    // Each 50-element region falls in two 40-element chunks.
    assert_eq!(written.len(), 6, "{written:?}");
    for start in [0u64, 5_000, 999_999_999_950] {
        let from = start.saturating_sub(10).min(1_000_000_000_000 - 70);
        let sel = Selection::from_box(&[from], &[70]);
        assert_eq!(
            dst.read(&sel).unwrap().1,
            src.read(&sel).unwrap().1,
            "around {start}"
        );
    }
}

#[test]
fn converting_with_a_mismatched_chunk_separator_is_bounded_by_the_stored_keys() {
    // A mutated `dimension_separator` ("." written, "/" declared) over a grid of 10^10
    // chunks: no stored key is a chunk key of the array any more, so the conversion writes
    // nothing, and it must not walk the declared grid to find that out.
    let s = store();
    let src = Array::create(
        s.clone(),
        "src",
        meta(ZarrFormat::V2, &[100_000, 100_000], &[1, 1], &[]),
    )
    .unwrap();
    src.write(&Selection::from_box(&[0, 0], &[2, 2]), &u16s(&[1, 2, 3, 4]))
        .unwrap();
    assert!(s.exists("src/1.1").unwrap());
    let doc = String::from_utf8(s.get_required("src/.zarray").unwrap().to_vec()).unwrap();
    let mutated = doc.replace(
        r#""dimension_separator": ".""#,
        r#""dimension_separator": "/""#,
    );
    assert_ne!(doc, mutated, "{doc}");
    s.set("src/.zarray", mutated.into_bytes().into()).unwrap();
    let src = Array::open(s.clone(), "src").unwrap();
    let options = ConvertOptions {
        format: Some(ZarrFormat::V3),
        ..Default::default()
    };
    let (dst, _) =
        neurochunk_array::convert::convert_array(&src, s.clone(), "dst", &options, &|_| {})
            .unwrap();
    assert!(s.list_prefix("dst/c/").unwrap().is_empty());
    let (_, corner) = dst.read(&Selection::from_box(&[0, 0], &[2, 2])).unwrap();
    assert_eq!(as_u16(&corner), vec![0; 4]);
}

/// The `.zarray` (Zarr v2) or `zarr.json` (Zarr v3) document of the array at `path`.
fn stored_document(s: &Arc<dyn Store>, path: &str, format: ZarrFormat) -> Value {
    let key = match format {
        ZarrFormat::V2 => format!("{path}/.zarray"),
        _ => format!("{path}/zarr.json"),
    };
    serde_json::from_slice(&s.get_required(&key).unwrap()).unwrap()
}

#[test]
fn conversion_keeps_or_replaces_the_numcodecs_filters_and_serializers() {
    use neurochunk_array::convert::convert_array;
    use neurochunk_array::ArrayBuilder;
    use neurochunk_codec::ZfpMode;

    let s = store();
    let shape = [13u64, 9];
    let values: Vec<f32> = (0..13 * 9)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) * 1.013_7)
        .collect();
    let stored_v3 = |path: &str| stored_document(&s, path, ZarrFormat::V3)["codecs"].clone();
    let stored_v2 = |path: &str| {
        let doc = stored_document(&s, path, ZarrFormat::V2);
        (doc["filters"].clone(), doc["compressor"].clone())
    };
    let to = |format| ConvertOptions {
        format: Some(format),
        ..Default::default()
    };

    // Zarr v2 with a bitround filter and a zstd compressor, to Zarr v3 and back: the filter
    // becomes `numcodecs.bitround` before `bytes`, and comes back as the v2 filter.
    let src = ArrayBuilder::new(shape.to_vec(), DataType::Float32)
        .format(ZarrFormat::V2)
        .chunks(vec![5, 4])
        .codecs([Codec::BitRound { keepbits: 10 }, Codec::zstd(1)])
        .create(s.clone(), "bitround-v2")
        .unwrap();
    src.write_elements(&Selection::all(), &values).unwrap();
    let rounded = src.read_elements::<f32>(&Selection::all()).unwrap().1;
    assert_ne!(rounded, values, "bitround keeps 10 of 23 mantissa bits");
    let (v3, changes) =
        convert_array(&src, s.clone(), "bitround-v3", &to(ZarrFormat::V3), &|_| {}).unwrap();
    assert!(changes.is_empty(), "{changes:?}");
    assert_eq!(
        stored_v3("bitround-v3"),
        json!([
            {"name": "numcodecs.bitround", "configuration": {"keepbits": 10}},
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
        ])
    );
    assert_eq!(
        v3.read_elements::<f32>(&Selection::all()).unwrap().1,
        rounded
    );
    let (v2, _) = convert_array(
        &v3,
        s.clone(),
        "bitround-v2-again",
        &to(ZarrFormat::V2),
        &|_| {},
    )
    .unwrap();
    let (filters, compressor) = stored_v2("bitround-v2-again");
    assert_eq!(filters, json!([{"id": "bitround", "keepbits": 10}]));
    assert_eq!(compressor["id"], "zstd");
    assert_eq!(
        v2.read_elements::<f32>(&Selection::all()).unwrap().1,
        rounded
    );

    // Zarr v2 with zfpy (reversible) as the compressor: in Zarr v3 it is the serializer
    // `numcodecs.zfpy`, and back in Zarr v2 the compressor again, the data exact throughout.
    let src = ArrayBuilder::new(shape.to_vec(), DataType::Float32)
        .format(ZarrFormat::V2)
        .chunks(vec![5, 4])
        .codecs([Codec::Zfpy {
            mode: ZfpMode::Reversible,
        }])
        .create(s.clone(), "zfpy-v2")
        .unwrap();
    src.write_elements(&Selection::all(), &values).unwrap();
    let (filters, compressor) = stored_v2("zfpy-v2");
    assert_eq!(filters, Value::Null);
    assert_eq!(
        (compressor["id"].clone(), compressor["mode"].clone()),
        (json!("zfpy"), json!(4))
    );
    let (v3, _) = convert_array(&src, s.clone(), "zfpy-v3", &to(ZarrFormat::V3), &|_| {}).unwrap();
    let codecs = stored_v3("zfpy-v3");
    assert_eq!(codecs.as_array().unwrap().len(), 1, "{codecs}");
    assert_eq!(codecs[0]["name"], "numcodecs.zfpy");
    assert_eq!(codecs[0]["configuration"]["tolerance"], json!(-1.0));
    assert_eq!(
        v3.read_elements::<f32>(&Selection::all()).unwrap().1,
        values
    );
    let (v2, _) = convert_array(
        &v3,
        s.clone(),
        "zfpy-v2-again",
        &to(ZarrFormat::V2),
        &|_| {},
    )
    .unwrap();
    assert_eq!(stored_v2("zfpy-v2-again"), (Value::Null, compressor));
    assert_eq!(
        v2.read_elements::<f32>(&Selection::all()).unwrap().1,
        values
    );

    // Codecs given to the conversion replace the source's: a quantize filter and the pcodec
    // serializer with a crc32c checksum in Zarr v3, then zfpy alone in Zarr v2 (the quantize
    // filter is dropped with the source's array codecs).
    let options = ConvertOptions {
        format: Some(ZarrFormat::V3),
        compressors: Some(vec![
            Codec::Quantize { digits: 2 },
            Codec::Pcodec { level: 4 },
            Codec::Crc32c,
        ]),
        ..Default::default()
    };
    let (quantized, _) =
        convert_array(&v2, s.clone(), "quantize-pcodec", &options, &|_| {}).unwrap();
    let codecs = stored_v3("quantize-pcodec");
    let names: Vec<&str> = codecs
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["numcodecs.quantize", "numcodecs.pcodec", "crc32c"]);
    assert_eq!(codecs[0]["configuration"]["digits"], 2);
    assert_eq!(codecs[1]["configuration"]["level"], 4);
    let got = quantized.read_elements::<f32>(&Selection::all()).unwrap().1;
    assert_ne!(got, values);
    for (q, v) in got.iter().zip(&values) {
        assert!((q - v).abs() <= 0.01, "quantize to 2 digits: {q} for {v}");
    }
    let options = ConvertOptions {
        format: Some(ZarrFormat::V2),
        compressors: Some(vec![Codec::Zfpy {
            mode: ZfpMode::FixedAccuracy(0.5),
        }]),
        ..Default::default()
    };
    let (lossy, _) =
        convert_array(&quantized, s.clone(), "zfpy-accuracy", &options, &|_| {}).unwrap();
    let (filters, compressor) = stored_v2("zfpy-accuracy");
    assert_eq!(filters, Value::Null);
    assert_eq!(
        (compressor["mode"].clone(), compressor["tolerance"].clone()),
        (json!(4), json!(0.5))
    );
    let again = lossy.read_elements::<f32>(&Selection::all()).unwrap().1;
    for (a, q) in again.iter().zip(&got) {
        assert!(
            (a - q).abs() <= 0.5,
            "zfp within its tolerance: {a} for {q}"
        );
    }
}

#[test]
fn a_resumed_conversion_writes_only_the_chunks_not_stored_yet() {
    use neurochunk_array::convert::convert_array;

    let src_store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let values: Vec<u16> = (0..40 * 30).map(|i| (i % 997 + 1) as u16).collect();
    let src = Array::create(
        src_store,
        "",
        meta(ZarrFormat::V3, &[40, 30], &[10, 10], &[Codec::zstd(1)]),
    )
    .unwrap();
    src.write_all(&u16s(&values)).unwrap();
    let options = ConvertOptions {
        format: Some(ZarrFormat::V2),
        chunks: Some(vec![8, 6]),
        ..Default::default()
    };
    let inner: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let counting = Arc::new(CountingStore::new(inner.clone()));
    let dst: Arc<dyn Store> = counting.clone();
    convert_array(&src, dst.clone(), "out/a", &options, &|_| {}).unwrap();
    let chunk_keys = |store: &Arc<dyn Store>| -> Vec<String> {
        store
            .list_prefix("out/a/")
            .unwrap()
            .into_iter()
            .filter(|k| !k.ends_with(".zarray") && !k.ends_with(".zattrs"))
            .collect()
    };
    let all = chunk_keys(&inner);
    assert_eq!(all.len(), 25, "{all:?}");
    // An interruption: some chunks never written.
    let lost = ["out/a/0.4", "out/a/3.2", "out/a/4.4", "out/a/2.0"];
    for key in lost {
        inner.delete(key).unwrap();
    }
    counting.reset();
    let resumed = ConvertOptions {
        resume: true,
        ..options.clone()
    };
    let progress = std::sync::atomic::AtomicU64::new(0);
    let (back, _) = convert_array(&src, dst.clone(), "out/a", &resumed, &|n| {
        progress.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    // Only the lost chunks are written again (no metadata, no other chunk).
    assert_eq!(counting.counts().writes, lost.len() as u64);
    assert_eq!(progress.into_inner(), 25, "every chunk counts as done");
    assert_eq!(chunk_keys(&inner), all);
    assert_eq!(as_u16(&back.read_all().unwrap().1), values);

    // Resuming into an array of other metadata is refused, naming the document.
    let other = ConvertOptions {
        chunks: Some(vec![5, 5]),
        resume: true,
        ..options.clone()
    };
    let e = convert_array(&src, dst.clone(), "out/a", &other, &|_| {})
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("cannot resume") && e.contains("out/a/.zarray"),
        "{e}"
    );
    // Resuming where nothing is stored converts everything.
    counting.reset();
    convert_array(&src, dst.clone(), "fresh", &resumed, &|_| {}).unwrap();
    assert_eq!(counting.counts().writes, 25 + 1); // the chunks and .zarray
}

#[test]
fn lanes_keep_a_remote_stores_requests_in_flight() {
    // 64 chunks of 256 KiB decoded, each `get_many` call taking 20 ms. From a local store a
    // read holds one group of at most 16 chunks per worker; from a store serving 64 reads at
    // once, the fetch lanes keep (nearly) all 64 requests in flight together, in batches of a
    // few chunks, and the values are the same.
    let read = |concurrency: usize| {
        let recording = Arc::new(BatchRecordingStore {
            concurrency,
            round_trip: std::time::Duration::from_millis(20),
            ..Default::default()
        });
        let s: Arc<dyn Store> = recording.clone();
        let a = Array::create(
            s,
            "",
            meta(ZarrFormat::V3, &[8 * 512, 8 * 256], &[512, 256], &[]),
        )
        .unwrap();
        let values: Vec<u16> = (0..8 * 512 * 8 * 256u32)
            .map(|v| (v % 65521) as u16)
            .collect();
        a.write_all(&u16s(&values)).unwrap();
        recording.reset();
        assert_eq!(as_u16(&a.read_all().unwrap().1), values);
        let batches = recording.batches();
        assert_eq!(batches.iter().map(Vec::len).sum::<usize>(), 64);
        let largest = batches.iter().map(Vec::len).max().unwrap_or(0);
        (largest, recording.most_in_flight.load(Ordering::SeqCst))
    };
    let workers = rayon::current_num_threads();
    let (largest, _) = read(1);
    assert!(largest <= 16, "{largest}");
    let (largest, most) = read(64);
    assert!(largest <= 16, "a lane's batch is a few chunks: {largest}");
    assert!(
        most >= 48 && most > 16 * workers.min(2),
        "{most} requests in flight at most"
    );
}

/// A copy from or to a store serving many requests at once (a remote one, here answering each
/// call after 20 ms) keeps many of them in flight: the source's reads and the destination's
/// writes go out from many lanes, not one batch after another from the rayon workers.
#[test]
fn copies_keep_a_remote_stores_requests_in_flight() {
    let slow = || {
        Arc::new(BatchRecordingStore {
            concurrency: 64,
            round_trip: std::time::Duration::from_millis(20),
            ..Default::default()
        })
    };
    // 64 source chunks of 64 x 64; the copy re-chunks them into 128 of 32 x 64.
    let values: Vec<u16> = (0..512 * 512u32).map(|v| (v % 65521) as u16).collect();
    let src_meta = meta(ZarrFormat::V3, &[512, 512], &[64, 64], &[Codec::zstd(1)]);
    let dst_meta = meta(ZarrFormat::V3, &[512, 512], &[32, 64], &[Codec::zstd(1)]);

    // Local to remote: the writes.
    let src = Array::create(store(), "", src_meta.clone()).unwrap();
    src.write_all(&u16s(&values)).unwrap();
    let remote = slow();
    let dst = Array::create(remote.clone(), "", dst_meta.clone()).unwrap();
    remote.reset();
    copy_data(&src, &dst, &|_| {}).unwrap();
    let most = remote.most_writes_in_flight.load(Ordering::SeqCst);
    assert!(most >= 32, "{most} values stored at once at most");
    assert_eq!(as_u16(&dst.read_all().unwrap().1), values);

    // Remote to local: the reads.
    let remote = slow();
    let src = Array::create(remote.clone(), "", src_meta).unwrap();
    src.write_all(&u16s(&values)).unwrap();
    let dst = Array::create(store(), "", dst_meta).unwrap();
    remote.reset();
    copy_data(&src, &dst, &|_| {}).unwrap();
    let most = remote.most_in_flight.load(Ordering::SeqCst);
    assert!(most >= 32, "{most} chunks read at once at most");
    assert_eq!(as_u16(&dst.read_all().unwrap().1), values);
}

/// A failed fetch (or decode) in one lane stops the windowed read with that error, naming
/// the chunk; the array stays readable where it is intact.
#[test]
fn a_failed_chunk_stops_a_windowed_read() {
    let recording = Arc::new(BatchRecordingStore {
        concurrency: 64,
        ..Default::default()
    });
    let s: Arc<dyn Store> = recording.clone();
    let a = Array::create(
        s,
        "",
        meta(ZarrFormat::V3, &[64, 64], &[4, 4], &[Codec::zstd(1)]),
    )
    .unwrap();
    let values: Vec<u16> = (0..64 * 64u32).map(|v| v as u16).collect();
    a.write_all(&u16s(&values)).unwrap();
    let intact = Selection::from_box(&[0, 0], &[32, 64]);

    *recording.failing.lock().unwrap() = Some("c/12/3".into());
    let e = a.read_all().expect_err("a failed fetch fails the read");
    assert!(e.to_string().contains("c/12/3"), "{e}");
    assert_eq!(as_u16(&a.read(&intact).unwrap().1), values[..32 * 64]);
    *recording.failing.lock().unwrap() = None;

    recording
        .inner
        .set("c/9/3", Bytes::from_static(b"not zstd"))
        .unwrap();
    let e = a.read_all().expect_err("a corrupt chunk fails the read");
    assert!(e.to_string().contains("c/9/3"), "{e}");
    assert_eq!(as_u16(&a.read(&intact).unwrap().1), values[..32 * 64]);
}

/// Re-chunking to smaller chunks reads (and decodes) each source chunk once where the grids
/// align, however many destination chunks it spans, and gives the same values on aligned and
/// unaligned grids with edge chunks; resuming skips the groups' stored chunks.
#[test]
fn copy_to_smaller_chunks_reads_each_source_chunk_once() {
    for (src_chunks, dst_chunks, aligned) in [
        (vec![8, 8, 8], vec![4, 4, 2], true),
        (vec![6, 9, 4], vec![4, 4, 4], false),
    ] {
        let raw: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let shape = [13u64, 18, 11];
        let src = neurochunk_array::ArrayBuilder::new(shape, DataType::UInt16)
            .chunks(src_chunks.clone())
            .codecs([Codec::zstd(1)])
            .create(raw.clone(), "src")
            .unwrap();
        let n = shape.iter().product::<u64>() as usize;
        let values: Vec<u16> = (0..n).map(|v| (v * 7 % 65521) as u16).collect();
        src.write_all(&u16s(&values)).unwrap();
        let counting = Arc::new(CountingStore::new(raw.clone()));
        let src = Array::open(counting.clone(), "src").unwrap();
        let options = ConvertOptions {
            chunks: Some(dst_chunks.clone()),
            ..Default::default()
        };
        let dst_meta = derive_metadata(src.metadata(), &options, "dst").unwrap();
        let dst = Array::create(raw.clone(), "dst", dst_meta).unwrap();
        counting.reset();
        let done = AtomicUsize::new(0);
        copy_data(&src, &dst, &|n| {
            done.fetch_add(n as usize, Ordering::Relaxed);
        })
        .unwrap();
        let grid = |c: &[usize]| -> usize {
            shape
                .iter()
                .zip(c)
                .map(|(&s, &c)| (s as usize).div_ceil(c))
                .product()
        };
        assert_eq!(
            done.load(Ordering::Relaxed),
            grid(&dst_chunks),
            "{dst_chunks:?}"
        );
        let reads = counting.counts().whole_reads as usize;
        if aligned {
            assert_eq!(reads, grid(&src_chunks), "each source chunk read once");
        } else {
            // Unaligned groups share some source chunks, but read fewer than a copy chunk by
            // chunk: one read per destination chunk and source chunk it overlaps.
            let overlaps: usize = (0..3)
                .map(|d| {
                    let (s, c, n) = (src_chunks[d], dst_chunks[d], shape[d] as usize);
                    (0..n.div_ceil(c))
                        .map(|i| {
                            let (a, b) = (i * c, ((i + 1) * c).min(n));
                            (b - 1) / s - a / s + 1
                        })
                        .sum::<usize>()
                })
                .product();
            assert!(reads < overlaps, "{reads} reads, {overlaps} chunk by chunk");
        }
        let back = Array::open(raw.clone(), "dst").unwrap();
        assert_eq!(back.metadata().chunk_shape, dst_chunks);
        assert_eq!(
            as_u16(&back.read_all().unwrap().1),
            values,
            "{src_chunks:?} -> {dst_chunks:?}"
        );
    }
}
