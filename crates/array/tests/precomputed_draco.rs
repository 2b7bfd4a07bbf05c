//! Draco-encoded multi-resolution meshes (the `draco` feature): the fixture
//! `tests/data/multires_draco` (written by its `generate.py` with DracoPy, the Python binding
//! of Google's Draco), unsharded and sharded, decoded to exactly the integer positions and
//! faces DracoPy decodes, placed in model coordinates as `expected.json` records them.
#![cfg(feature = "draco")]

use std::path::Path;

use neurochunk_array::precomputed::mesh::{decode_draco_fragment, MeshDir, MeshKind};
use neurochunk_store::{Bytes, MemoryStore, Store};
use serde_json::Value;

fn fixture() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/multires_draco"
    ))
}

/// The fixture layer `name` (`plain`, `sharded`) in a memory store.
fn layer(name: &str) -> MemoryStore {
    let store = MemoryStore::new();
    let root = fixture().join(name);
    for rel in [
        "info",
        "mesh/info",
        "mesh/5.index",
        "mesh/5",
        "mesh/0.shard",
    ] {
        if let Ok(bytes) = std::fs::read(root.join(rel)) {
            store.set(rel, Bytes::from(bytes)).unwrap();
        }
    }
    store
}

fn expected() -> Value {
    serde_json::from_slice(&std::fs::read(fixture().join("expected.json")).unwrap()).unwrap()
}

fn triples<T: Copy>(v: &Value, f: impl Fn(&Value) -> T) -> Vec<[T; 3]> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let t = t.as_array().unwrap();
            [f(&t[0]), f(&t[1]), f(&t[2])]
        })
        .collect()
}

#[test]
fn fragments_decode_as_dracopy_decodes_them() {
    for name in ["plain", "sharded"] {
        let store = layer(name);
        let dir = MeshDir::open(&store, "").unwrap();
        let MeshKind::Multires(info) = dir.kind() else {
            panic!("{name}: not multires")
        };
        let bits = info.vertex_quantization_bits;
        let expected = expected();
        for (lod, frags) in expected["lods"].as_array().unwrap().iter().enumerate() {
            for (i, want) in frags.as_array().unwrap().iter().enumerate() {
                let bytes = dir.read_multires_fragment_bytes(5, lod, i).unwrap();
                assert_eq!(bytes.len() as u64, want["bytes"].as_u64().unwrap());
                let q = decode_draco_fragment(&bytes, bits).unwrap();
                let positions = triples(&want["quantized"], |x| x.as_u64().unwrap() as u32);
                let faces = triples(&want["faces"], |x| x.as_u64().unwrap() as u32);
                assert_eq!(q.positions, positions, "{name} lod {lod} fragment {i}");
                assert_eq!(q.triangles, faces, "{name} lod {lod} fragment {i}");
                let fragment = dir.read_multires_fragment(5, lod, i).unwrap();
                let vertices = triples(&want["vertices"], |x| x.as_f64().unwrap() as f32);
                assert_eq!(fragment.vertices, vertices, "{name} lod {lod} fragment {i}");
                assert_eq!(fragment.triangles, faces);
            }
            // A lod at once: the empty fragment (lod 0, fragment 1) left out.
            let mesh = dir.read_multires_lod(5, lod).unwrap();
            let nonempty: Vec<&Value> = frags
                .as_array()
                .unwrap()
                .iter()
                .filter(|f| f["bytes"].as_u64() != Some(0))
                .collect();
            assert_eq!(mesh.fragments.len(), nonempty.len());
            for (got, want) in mesh.fragments.iter().zip(nonempty) {
                let vertices = triples(&want["vertices"], |x| x.as_f64().unwrap() as f32);
                assert_eq!(got.vertices, vertices);
            }
        }
        assert_eq!(
            dir.read_segment(5).unwrap(),
            dir.read_multires_lod(5, 0).unwrap()
        );
        let err = dir.read_multires_lod(5, 2).unwrap_err().to_string();
        assert!(err.contains("no lod 2"), "{err}");
    }
}

#[test]
fn damaged_fragments_are_errors_naming_them() {
    let store = layer("plain");
    let mut data = store.get("mesh/5").unwrap().unwrap().to_vec();
    // Fragment 2 of lod 0 starts at byte 123: damage its header.
    data[123..128].copy_from_slice(b"XXXXX");
    store.set("mesh/5", Bytes::from(data.clone())).unwrap();
    let dir = MeshDir::open(&store, "").unwrap();
    let err = dir.read_multires_lod(5, 0).unwrap_err().to_string();
    assert!(
        err.contains("mesh/5") && err.contains("segment 5") && err.contains("fragment 2 of lod 0"),
        "{err}"
    );
    assert!(dir.read_multires_fragment(5, 0, 0).is_ok());
    // Truncations of a valid fragment: errors, never panics.
    let good = &std::fs::read(fixture().join("plain/mesh/5")).unwrap()[..123];
    for n in 0..good.len() {
        let _ = decode_draco_fragment(&good[..n], 10);
    }
    // Positions past the quantization range.
    let err = decode_draco_fragment(good, 4).unwrap_err();
    assert!(err.contains("outside [0, 2^4)"), "{err}");
}
