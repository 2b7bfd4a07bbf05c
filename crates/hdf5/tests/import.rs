//! The import against files written by h5py (`tests/data/make_files.py`: chunked + deflate +
//! shuffle, big-endian contiguous, attributes, soft links, fill values, a user block) and a
//! pynwb back-compat file, read back through the NWB layer; and bad input, which must fail
//! naming the object and leave nothing at the destination.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use neurochunk_hdf5::{import_file, import_into, Hdf5Error, ImportOptions};
use neurochunk_hdmf::{
    AttributeValue, Convention, DatasetValue, NwbFile, NwbWriter, ReadOptions, WriteOptions,
};
use neurochunk_store::{MemoryStore, Store};
use serde_json::json;

fn data_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn grid() -> Vec<i32> {
    (0..200).map(|i| i * 3 - 100).collect()
}

/// `tests/data/source.nwb` (see `make_files.py`): an NWB root, a chunked + deflate + shuffle
/// grid, a big-endian contiguous array, a partly written chunked one with a fill value,
/// attributes and a soft link, copied to `path`.
fn write_source(path: &Path) {
    std::fs::copy(data_file("source.nwb"), path).unwrap();
}

fn le_i32(bytes: &[u8]) -> Vec<i32> {
    bytes
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

#[test]
fn chunks_are_copied_and_read_back_in_both_conventions() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("source.nwb");
    write_source(&src);
    for convention in [Convention::Legacy, Convention::V3] {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let writer = NwbWriter::create_in(
            store.clone(),
            "out.nwb.zarr",
            convention,
            WriteOptions::default(),
        )
        .unwrap();
        let summary =
            import_into(&src, writer, &ImportOptions::new(convention), &|_: u64| {}).unwrap();
        // 3 x 3 chunks of the grid copied as stored; the arrays HDF5 stores uncompressed
        // (the sparse one's 3 chunks, one written and two left to the fill value, and the
        // contiguous one as one chunk of whole rows) get the convention's compression.
        assert_eq!(summary.chunks_copied, 9, "{summary:?}");
        assert_eq!(summary.chunks_encoded, 3 + 1, "{summary:?}");
        assert_eq!(summary.links, 1);
        let file =
            NwbFile::open_store(store.clone(), "out.nwb.zarr", ReadOptions::default()).unwrap();
        assert_eq!(file.convention(), convention);
        assert_eq!(file.nwb_version(), Some("2.8.0"));
        let data = file.read_dataset("/acquisition/alias", None).unwrap();
        assert_eq!(data.shape, vec![20, 10]);
        match &data.value {
            DatasetValue::Numeric { bytes, .. } => assert_eq!(le_i32(bytes), grid()),
            other => panic!("{other:?}"),
        }
        let array = file.open_array("/acquisition/grid").unwrap();
        assert_eq!(array.metadata().chunk_shape, vec![7, 4]);
        let chain = format!("{:?}", array.metadata().codecs);
        assert!(
            chain.contains("Zlib") && chain.contains("Shuffle"),
            "{chain}"
        );
        let attrs = file.attributes("/acquisition/grid").unwrap();
        assert!(attrs.contains(&(
            "scale".to_string(),
            AttributeValue::Value(json!([0.5, 1.5, 2.5]))
        )));
        match file
            .read_dataset("/acquisition/sparse", None)
            .unwrap()
            .value
        {
            DatasetValue::Numeric { bytes, .. } => {
                let values: Vec<i16> = bytes
                    .chunks(2)
                    .map(|c| i16::from_le_bytes([c[0], c[1]]))
                    .collect();
                let mut expected = vec![1i16; 10];
                expected.extend([-7i16; 15]);
                assert_eq!(values, expected);
            }
            other => panic!("{other:?}"),
        }
        match file
            .read_dataset("/acquisition/floats", None)
            .unwrap()
            .value
        {
            DatasetValue::Numeric { bytes, .. } => {
                let values: Vec<f64> = bytes
                    .chunks(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                assert_eq!(values, vec![1.0, -2.0, 3.5, 0.0, 1e300, -1e-300]);
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_pynwb_file_keeps_its_specifications_object_ids_and_text() {
    let dir = tempfile::tempdir().unwrap();
    let dst = dir.path().join("ts.nwb.zarr");
    let summary = import_file(
        &data_file("1.5.1_timeseries_no_unit.nwb"),
        &dst,
        &ImportOptions::new(Convention::Legacy),
        &|_: u64| {},
    )
    .unwrap();
    assert_eq!(summary.namespaces, 3);
    let file = NwbFile::open(&dst).unwrap();
    assert_eq!(file.nwb_version(), Some("2.3.0"));
    let series = file.find_by_type("TimeSeries");
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].path, "/acquisition/test_timeseries");
    assert!(series[0]
        .object_id
        .as_deref()
        .is_some_and(|id| id.len() == 36));
    match file.read_dataset("/identifier", None).unwrap().value {
        DatasetValue::Text { values, .. } => assert_eq!(values, vec!["ADDME".to_string()]),
        other => panic!("{other:?}"),
    }
    let data = file
        .read_dataset("/acquisition/test_timeseries/data", None)
        .unwrap();
    match data.value {
        DatasetValue::Numeric { bytes, .. } => assert_eq!(bytes, 0i64.to_le_bytes().to_vec()),
        other => panic!("{other:?}"),
    }
    let names: Vec<String> = file
        .specifications()
        .unwrap()
        .iter()
        .map(|n| n.name.clone())
        .collect();
    for ns in ["core", "hdmf-common", "hdmf-experimental"] {
        assert!(names.iter().any(|n| n == ns), "{names:?}");
    }
}

fn assert_nothing_written(dst: &Path) {
    assert!(!dst.exists(), "a failed import left {}", dst.display());
    let parent = dst.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "staging left behind: {leftovers:?}");
}

#[test]
fn bad_input_names_the_object_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let dst = out.join("x.nwb.zarr");
    let options = ImportOptions::new(Convention::V3);

    let text = dir.path().join("text.nwb");
    std::fs::write(&text, b"plain text, not HDF5").unwrap();
    let e = import_file(&text, &dst, &options, &|_: u64| {}).unwrap_err();
    assert!(
        matches!(e, Hdf5Error::File { .. }) && e.to_string().contains("text.nwb"),
        "{e}"
    );
    assert_nothing_written(&dst);

    let good = dir.path().join("good.nwb");
    write_source(&good);
    let bytes = std::fs::read(&good).unwrap();
    let truncated = dir.path().join("truncated.nwb");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let e = import_file(&truncated, &dst, &options, &|_: u64| {}).unwrap_err();
    assert!(e.to_string().contains("truncated.nwb"), "{e}");
    assert_nothing_written(&dst);

    let dangling = data_file("dangling.nwb");
    let e = import_file(&dangling, &dst, &options, &|_: u64| {}).unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("/g/broken") && message.contains("/missing/target"),
        "{message}"
    );
    assert_nothing_written(&dst);

    // `escaping.nwb` links to `../outside/other.nwb`.
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    write_source(&outside.join("other.nwb"));
    let inside = dir.path().join("inside");
    std::fs::create_dir(&inside).unwrap();
    let escaping = inside.join("escaping.nwb");
    std::fs::copy(data_file("escaping.nwb"), &escaping).unwrap();
    let e = import_file(&escaping, &dst, &options, &|_: u64| {}).unwrap_err();
    assert!(
        matches!(e, Hdf5Error::ExternalRefused { ref path, .. } if path == "/away"),
        "{e}"
    );
    assert_nothing_written(&dst);
    let allowed = ImportOptions {
        allowed_roots: vec![outside.clone()],
        ..options.clone()
    };
    let summary = import_file(&escaping, &dst, &allowed, &|_: u64| {}).unwrap();
    assert_eq!(summary.external_links, 1);
}

#[test]
fn a_reference_file_reads_like_the_import() {
    use neurochunk_hdf5::{write_reference_file, VirtualOptions};
    use neurochunk_hdmf::FileLocation;
    use neurochunk_store::LindiStore;

    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("source.nwb");
    write_source(&src);
    let out = dir.path().join("source.lindi.json");
    let summary = write_reference_file(&src, &out, &VirtualOptions::default()).unwrap();
    // The grid's 9 chunks are byte ranges of the source; the small arrays are inline.
    assert_eq!(
        summary.chunk_refs, 0,
        "200 elements are inlined: {summary:?}"
    );
    assert_eq!(summary.links, 1);
    let store: Arc<dyn Store> = Arc::new(LindiStore::open(&out, &[]).unwrap());
    let file = NwbFile::open_location(
        FileLocation::named(store, "", "refs"),
        ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(file.nwb_version(), Some("2.8.0"));
    // The `_SOFT_LINK` group is a link.
    assert_eq!(
        file.resolve("/acquisition/alias").unwrap().path,
        "/acquisition/grid"
    );
    match file.read_dataset("/acquisition/alias", None).unwrap().value {
        DatasetValue::Numeric { bytes, .. } => assert_eq!(le_i32(&bytes), grid()),
        other => panic!("{other:?}"),
    }

    // A larger chunked dataset is referenced chunk by chunk and read through the store.
    let big = dir.path().join("big.nwb");
    std::fs::copy(data_file("big.nwb"), &big).unwrap();
    let out = dir.path().join("big.lindi.json");
    let summary = write_reference_file(&big, &out, &VirtualOptions::default()).unwrap();
    assert_eq!(summary.chunk_refs, 3 * 3);
    let store: Arc<dyn Store> = Arc::new(LindiStore::open(&out, &[]).unwrap());
    let array = neurochunk_array::Array::open(store, "values").unwrap();
    let (shape, data) = array.read_all().unwrap();
    assert_eq!(shape, vec![100, 60]);
    match data {
        neurochunk_array::ArrayBytes::Fixed(bytes) => {
            assert_eq!(le_i32(&bytes), (0..6000).collect::<Vec<i32>>())
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn other_compressors_decode_the_stored_chunks_in_parallel() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("source.nwb");
    write_source(&src);
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let options = ImportOptions {
        write: WriteOptions {
            compressors: Some(vec![neurochunk_codec::Codec::zstd(1)]),
            ..WriteOptions::default()
        },
        ..ImportOptions::new(Convention::V3)
    };
    let writer = NwbWriter::create_in(
        store.clone(),
        "z.nwb.zarr",
        Convention::V3,
        options.write.clone(),
    )
    .unwrap();
    let summary = import_into(&src, writer, &options, &|_: u64| {}).unwrap();
    // Nothing copied as stored: the grid's 9 chunks decoded from deflate + shuffle, the sparse
    // array's 3 and the contiguous array's one, counted over the grids.
    assert_eq!(summary.chunks_copied, 0, "{summary:?}");
    assert_eq!(summary.chunks_encoded, 9 + 3 + 1, "{summary:?}");
    let file = NwbFile::open_store(store, "z.nwb.zarr", ReadOptions::default()).unwrap();
    let array = file.open_array("/acquisition/grid").unwrap();
    let chain = format!("{:?}", array.metadata().codecs);
    assert!(chain.contains("Zstd") && !chain.contains("Zlib"), "{chain}");
    assert_eq!(array.metadata().chunk_shape, vec![7, 4]);
    match file.read_dataset("/acquisition/grid", None).unwrap().value {
        DatasetValue::Numeric { bytes, .. } => assert_eq!(le_i32(&bytes), grid()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn chunk_addresses_count_from_the_end_of_a_user_block() {
    use neurochunk_hdf5::{write_reference_file, VirtualOptions};
    use neurochunk_store::LindiStore;

    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("ub.h5");
    std::fs::copy(data_file("userblock.h5"), &src).unwrap();
    let expected: Vec<i32> = (0..5000).collect();
    let read_x = |store: Arc<dyn Store>, key: &str| -> Vec<i32> {
        let array = neurochunk_array::Array::open(store, key).unwrap();
        match array.read_all().unwrap().1 {
            neurochunk_array::ArrayBytes::Fixed(bytes) => le_i32(&bytes),
            other => panic!("{other:?}"),
        }
    };
    // Imported: the stored chunks are copied from their real place in the file.
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let writer = NwbWriter::create_in(
        store.clone(),
        "ub",
        Convention::Legacy,
        WriteOptions::default(),
    )
    .unwrap();
    let summary = import_into(
        &src,
        writer,
        &ImportOptions::new(Convention::Legacy),
        &|_: u64| {},
    )
    .unwrap();
    // 4 x 3 chunks of `x` (the contiguous `c` is compressed: encoded).
    assert_eq!(summary.chunks_copied, 4 * 3);
    assert_eq!(read_x(store, "ub/x"), expected);
    // Referenced: chunk and contiguous entries point at the right bytes.
    let out = dir.path().join("ub.lindi.json");
    write_reference_file(&src, &out, &VirtualOptions::default()).unwrap();
    let store: Arc<dyn Store> = Arc::new(LindiStore::open(&out, &[]).unwrap());
    assert_eq!(read_x(store.clone(), "x"), expected);
    let c = neurochunk_array::Array::open(store, "c").unwrap();
    match c.read_all().unwrap().1 {
        neurochunk_array::ArrayBytes::Fixed(bytes) => {
            let values: Vec<f64> = bytes
                .chunks(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                .collect();
            assert_eq!(values, (0..2000).map(f64::from).collect::<Vec<f64>>());
        }
        other => panic!("{other:?}"),
    }
}
