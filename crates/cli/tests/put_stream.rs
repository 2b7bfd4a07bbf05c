//! `put` of a plain `.npy` file on disk streams it slab by slab (each slab whole chunk rows),
//! so a file larger than one slab is stored exactly; inputs that cannot be streamed (big-endian,
//! Fortran order, categorized labels) are read whole and stored the same way; a truncated file
//! is an error naming it, and leaves no array behind.

use std::path::Path;
use std::process::{Command, Output};

use neurochunk_array::{Array, ArrayBytes, DataType, Store};
use neurochunk_dtype::npy;

fn neurochunk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .output()
        .unwrap()
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn stored(path: &Path) -> Vec<u8> {
    let store: std::sync::Arc<dyn Store> =
        std::sync::Arc::new(neurochunk_store::FsStore::new(path));
    match Array::open(store, "").unwrap().read_all().unwrap().1 {
        ArrayBytes::Fixed(bytes) => bytes,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_of_several_slabs_is_stored_exactly() {
    let dir = tempfile::tempdir().unwrap();
    // 40 × 512 × 1024 bytes (20 MiB): slabs of 32 rows (four chunk rows of 8), then 8.
    let shape = [40usize, 512, 1024];
    let data: Vec<u8> = (0..shape.iter().product::<usize>())
        .map(|i| (i % 251) as u8)
        .collect();
    let input = dir.path().join("big.npy");
    npy::write_npy(&input, &DataType::UInt8, &shape, &data).unwrap();
    let out = dir.path().join("big.zarr");
    let done = neurochunk(&[
        "put",
        s(&input),
        s(&out),
        "--format",
        "zarr3",
        "--chunks",
        "8,256,256",
    ]);
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(
        stored(&out) == data,
        "the stored values differ from the file's"
    );

    // Cut short, the file is refused by name and no array is published.
    let cut = dir.path().join("cut.npy");
    let bytes = std::fs::read(&input).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() - 1000]).unwrap();
    let dst = dir.path().join("cut.zarr");
    let failed = neurochunk(&[
        "put",
        s(&cut),
        s(&dst),
        "--format",
        "zarr3",
        "--chunks",
        "8,256,256",
    ]);
    let message = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success());
    assert!(
        message.contains("cut.npy") && message.contains("ends before"),
        "{message}"
    );
    assert!(!dst.exists(), "a failed put publishes nothing");
}

#[test]
fn inputs_read_whole_store_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    let shape = [6usize, 5];
    let values: Vec<u16> = (0..30).map(|v| v * 1000 + 7).collect();
    let little: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let plain = dir.path().join("plain.npy");
    npy::write_npy(&plain, &DataType::UInt16, &shape, &little).unwrap();
    // The same values stored big-endian and in Fortran order, by hand.
    let header = |descr: &str, fortran: bool| {
        let mut h = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': (6, 5), }}",
            if fortran { "True" } else { "False" }
        );
        while (10 + h.len() + 1) % 64 != 0 {
            h.push(' ');
        }
        h.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(h.len() as u16).to_le_bytes());
        bytes.extend_from_slice(h.as_bytes());
        bytes
    };
    let big = dir.path().join("big_endian.npy");
    let mut bytes = header(">u2", false);
    bytes.extend(values.iter().flat_map(|v| v.to_be_bytes()));
    std::fs::write(&big, bytes).unwrap();
    let fortran = dir.path().join("fortran.npy");
    let mut bytes = header("<u2", true);
    for col in 0..5 {
        for row in 0..6 {
            bytes.extend_from_slice(&values[row * 5 + col].to_le_bytes());
        }
    }
    std::fs::write(&fortran, bytes).unwrap();
    for input in [&plain, &big, &fortran] {
        let out = dir.path().join(format!(
            "{}.zarr",
            input.file_stem().unwrap().to_str().unwrap()
        ));
        let done = neurochunk(&[
            "put",
            s(input),
            s(&out),
            "--format",
            "zarr2",
            "--chunks",
            "4,2",
        ]);
        assert!(
            done.status.success(),
            "{}",
            String::from_utf8_lossy(&done.stderr)
        );
        assert_eq!(stored(&out), little, "{}", input.display());
    }
}
