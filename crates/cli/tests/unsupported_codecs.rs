//! Arrays stored with codecs neurochunk does not implement fail with one line that names the
//! codec, the array and the way out (convert with zarr-python / numcodecs); ragged arrays and
//! the new codecs round-trip through `put` / `get`.

use std::path::Path;
use std::process::{Command, Output};

fn neurochunk(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_neurochunk"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn fails(args: &[&str], cwd: &Path) -> String {
    let out = neurochunk(args, cwd);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn unknown_codecs_name_the_codec_the_array_and_the_way_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("g.zarr/volume")).unwrap();
    std::fs::create_dir_all(root.join("g.zarr/labels")).unwrap();
    std::fs::write(root.join("g.zarr/.zgroup"), r#"{"zarr_format": 2}"#).unwrap();
    std::fs::write(
        root.join("g.zarr/volume/.zarray"),
        r#"{"chunks": [2], "compressor": {"id": "frobnicate", "level": 3}, "dtype": "<u2",
            "fill_value": 0, "filters": null, "order": "C", "shape": [4], "zarr_format": 2}"#,
    )
    .unwrap();
    std::fs::write(
        root.join("g.zarr/labels/.zarray"),
        r#"{"chunks": [2], "compressor": null, "dtype": "|O", "fill_value": 0,
            "filters": [{"id": "msgpack3"}], "order": "C", "shape": [4], "zarr_format": 2}"#,
    )
    .unwrap();
    for (node, codec) in [("volume", "frobnicate"), ("labels", "msgpack3")] {
        let err = fails(&["get", &format!("g.zarr/{node}"), "-o", "out.npy"], root);
        assert!(err.contains(codec), "{err}");
        assert!(err.contains(&format!("g.zarr/{node}")), "{err}");
        assert!(err.contains("zarr-python / numcodecs"), "{err}");
        // A whole-hierarchy convert names the array inside the hierarchy.
        let err = fails(
            &["convert", "g.zarr", "out.zarr", "--format", "zarr3"],
            root,
        );
        assert!(
            err.contains("'/labels'") || err.contains("'/volume'"),
            "{err}"
        );
        assert!(
            err.contains("does not support") || err.contains("not supported"),
            "{err}"
        );
    }
    // Zarr v3.
    std::fs::create_dir_all(root.join("v3.zarr")).unwrap();
    std::fs::write(
        root.join("v3.zarr/zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "numcodecs.frobnicate"}]}"#,
    )
    .unwrap();
    let err = fails(&["get", "v3.zarr", "-o", "out.npy"], root);
    assert!(
        err.contains("'numcodecs.frobnicate', which neurochunk does not support"),
        "{err}"
    );
}

fn npy_u1(path: &Path, values: &[u8]) {
    let header = format!(
        "{{'descr': '|b1', 'fortran_order': False, 'shape': ({},), }}",
        values.len()
    );
    let mut h = header.into_bytes();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(b' ');
    }
    h.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(&h);
    out.extend_from_slice(values);
    std::fs::write(path, out).unwrap();
}

#[test]
fn new_codec_forms_write_arrays_that_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let bits: Vec<u8> = (0..37).map(|i| u8::from(i % 3 == 0)).collect();
    npy_u1(&root.join("b.npy"), &bits);
    for (i, spec) in [
        "packbits,zstd:1",
        "packbits,jenkins_lookup3",
        "packbits,adler32",
    ]
    .iter()
    .enumerate()
    {
        let out = format!("b{i}.zarr");
        let put = neurochunk(
            &[
                "put", "b.npy", &out, "--format", "zarr2", "--chunks", "10", "--codec", spec,
            ],
            root,
        );
        assert!(
            put.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&put.stderr)
        );
        let get = neurochunk(&["get", &out, "-o", "back.npy"], root);
        assert!(
            get.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&get.stderr)
        );
        let back = std::fs::read(root.join("back.npy")).unwrap();
        assert_eq!(&back[back.len() - bits.len()..], &bits[..], "{spec}");
    }
    // Bad forms fail before anything is written.
    for (spec, needle) in [
        ("bitround", "bitround needs KEEPBITS"),
        ("zfpy:fast", "unknown zfpy mode"),
        ("categorize:x", "too many parts"),
    ] {
        let err = fails(
            &[
                "put", "b.npy", "bad.zarr", "--format", "zarr2", "--codec", spec,
            ],
            root,
        );
        assert!(err.contains(needle), "{spec}: {err}");
    }
    // A ragged array needs an .npz output.
    assert!(!root.join("bad.zarr").exists());
}
