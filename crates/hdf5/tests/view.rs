//! HDF5 files opened in place ([`Hdf5Store`]): every numeric dataset of the reader's test
//! files reads, through the Zarr array engine, the values h5py read from it (chunked with each
//! chunk index and filter, contiguous, compact, big-endian, never written, user block); the
//! pynwb files open as NWB files whose typed objects and datasets are those h5py saw.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use neurochunk_array::Array;
use neurochunk_hdf5::Hdf5Store;
use neurochunk_hdmf::{FileLocation, NwbFile, ReadOptions};
use neurochunk_store::{Bytes, MemoryStore, Store};
use serde_json::Value;

/// The reader's test files (h5py's readings beside them); see `crates/h5/tests/data/README.md`.
fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../h5/tests/data")
}

fn gunzip(path: PathBuf) -> Vec<u8> {
    let gz = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

fn view(name: &str) -> (Arc<dyn Store>, Value) {
    let store = MemoryStore::new();
    let plain = data_dir().join(name);
    let bytes = if plain.exists() {
        std::fs::read(plain).unwrap()
    } else {
        gunzip(data_dir().join(format!("{name}.gz")))
    };
    store.set(name, Bytes::from(bytes)).unwrap();
    let expected: Value =
        serde_json::from_slice(&gunzip(data_dir().join(format!("{name}.json.gz")))).unwrap();
    let view = Hdf5Store::open(Arc::new(store), name, name).unwrap();
    (Arc::new(view), expected)
}

/// The elements of an array as f64, from the engine's little-endian bytes.
fn as_f64(array: &Array) -> Vec<f64> {
    let (_, bytes) = array.read_all().unwrap();
    let neurochunk_array::ArrayBytes::Fixed(raw) = bytes else {
        panic!("{}: not fixed-size elements", array.path())
    };
    let dt = array.metadata().data_type_name();
    let size = array.metadata().data_type.fixed_size().unwrap();
    raw.chunks_exact(size)
        .map(|e| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(e);
            let signed = |bits: u32| {
                let v = u64::from_le_bytes(b);
                ((v << (64 - bits)) as i64 >> (64 - bits)) as f64
            };
            match dt.as_str() {
                "float64" => f64::from_le_bytes(b),
                "float32" => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
                "float16" => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
                "int8" | "int16" | "int32" | "int64" => signed(size as u32 * 8),
                _ => u64::from_le_bytes(b) as f64,
            }
        })
        .collect()
}

/// Datasets h5py read as integers or floats with a shape, with their values.
fn numeric_datasets(expected: &Value) -> Vec<(String, Vec<f64>)> {
    let mut out = Vec::new();
    for (path, object) in expected["objects"].as_object().unwrap() {
        let class = object["dtype"]["class"].as_str().unwrap_or("");
        if object["kind"] != "dataset"
            || !matches!(class, "int" | "float")
            || !object["shape"].is_array()
            || object.get("read_error").is_some()
        {
            continue;
        }
        let Some(values) = object["values"].as_array() else {
            continue;
        };
        let values: Option<Vec<f64>> = values.iter().map(Value::as_f64).collect();
        if let Some(values) = values {
            out.push((path.clone(), values));
        }
    }
    out
}

#[test]
fn numeric_datasets_read_as_h5py_reads_them() {
    let mut checked = 0;
    for name in [
        "earliest.h5",
        "latest.h5",
        "types.h5",
        "plugins.h5",
        "userblock.h5",
        "sb1_offsets4.h5",
        "latest_offsets4.h5",
        "sohm.h5",
        "big.h5",
    ] {
        let (store, expected) = view(name);
        for (path, values) in numeric_datasets(&expected) {
            let key = path.trim_start_matches('/');
            let object = &expected["objects"][&path];
            if object["layout"] == "virtual" || object["external"] == 1 {
                // Not shown (the view notes them): their data is in other files.
                assert!(Array::open(store.clone(), key).is_err(), "{name}{path}");
                continue;
            }
            let array =
                Array::open(store.clone(), key).unwrap_or_else(|e| panic!("{name}{path}: {e}"));
            let filters: Vec<&str> = expected["objects"][&path]["filters"]
                .as_array()
                .map(|f| f.iter().filter_map(|f| f[3].as_str()).collect())
                .unwrap_or_default();
            if filters
                .iter()
                .any(|f| matches!(*f, "szip" | "scaleoffset" | "nbit"))
            {
                // Refused by name when read, not when opened.
                let err = array.read_all().unwrap_err().to_string();
                assert!(err.contains(key), "{name}{path}: {err}");
                continue;
            }
            let got = as_f64(&array);
            let same = got.len() == values.len()
                && got.iter().zip(&values).all(|(a, b)| {
                    a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-6 * b.abs()
                });
            assert!(same, "{name}{path}: {got:?} != {values:?}");
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} datasets compared");
}

#[test]
fn big_datasets_read_by_slices_as_the_reader_reads_them() {
    let (store, expected) = view("big.h5");
    let h5 = MemoryStore::new();
    h5.set("big.h5", Bytes::from(gunzip(data_dir().join("big.h5.gz"))))
        .unwrap();
    let file = neurochunk_h5::H5File::open(Arc::new(h5), "big.h5", "big.h5").unwrap();
    let mut compared = 0;
    for (path, object) in expected["objects"].as_object().unwrap() {
        if object["kind"] != "dataset" || !object["shape"].is_array() {
            continue;
        }
        let shape: Vec<u64> = object["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        if shape.iter().product::<u64>() < 100_000 {
            continue;
        }
        let key = path.trim_start_matches('/');
        let array = Array::open(store.clone(), key).unwrap();
        // A slab in the middle of the first axis, whole on the others.
        let start = shape[0] / 3;
        let stop = (start + shape[0] / 5).max(start + 1);
        let mut box_start = vec![0u64; shape.len()];
        let mut box_shape = shape.clone();
        box_start[0] = start;
        box_shape[0] = stop - start;
        let selection = neurochunk_array::Selection::from_box(&box_start, &box_shape);
        let mut ours = vec![
            0u8;
            array
                .selection_shape(&selection)
                .unwrap()
                .iter()
                .product::<usize>()
                * array.metadata().data_type.fixed_size().unwrap()
        ];
        array.read_bytes_into(&selection, &mut ours).unwrap();
        let ds = file.dataset(path).unwrap();
        let slices: Vec<neurochunk_h5::Slice> =
            std::iter::once(neurochunk_h5::Slice::range(start, stop))
                .chain(
                    shape[1..]
                        .iter()
                        .map(|&d| neurochunk_h5::Slice::range(0, d)),
                )
                .collect();
        assert_eq!(ours, ds.read_native(&slices).unwrap(), "{path}");
        compared += 1;
    }
    assert!(compared >= 2, "{compared} large datasets");
}

#[test]
fn pynwb_files_open_as_nwb_files() {
    for name in [
        "1.5.1_timeseries_no_unit.nwb",
        "2.1.0_nwbfile_with_extension.nwb",
        "2.2.0_subject_no_age__reference.nwb",
    ] {
        let (store, expected) = view(name);
        let file =
            NwbFile::open_location(FileLocation::named(store, "", name), ReadOptions::default())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        // Every object h5py found with a neurodata_type is a typed object, outside the cache.
        let mut typed: Vec<String> = expected["objects"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(path, o)| {
                !path.starts_with("/specifications")
                    && o["attrs"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|a| a["name"] == "neurodata_type"))
            })
            .map(|(p, _)| p.clone())
            .collect();
        typed.sort();
        let mut ours: Vec<String> = file.typed_objects().into_iter().map(|o| o.path).collect();
        ours.sort();
        assert_eq!(ours, typed, "{name}");
        assert!(
            !file.specifications().unwrap().is_empty(),
            "{name}: no cached specifications"
        );
        // Every dataset reads.
        for (path, object) in expected["objects"].as_object().unwrap() {
            if object["kind"] == "dataset" && !path.starts_with("/specifications") {
                file.read_dataset(path, None)
                    .unwrap_or_else(|e| panic!("{name}{path}: {e}"));
            }
        }
    }
}

#[test]
fn the_view_is_read_only() {
    let (store, _) = view("tiny.h5");
    neurochunk_store::conformance::check_read_only(store.as_ref());
}
