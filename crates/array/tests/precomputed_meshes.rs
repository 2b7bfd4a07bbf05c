//! Precomputed meshes from bytes written here by hand: legacy round trips (plain and gzip),
//! fragments found as `.gz` files or gzip data under their own names, damaged manifests and
//! fragments, multi-resolution manifests (unsharded and sharded), and Draco fragments: refused
//! without the `draco` feature; with it, the fixture `tests/data/multires_draco` (DracoPy,
//! `generate.py` there) decoded to the positions and faces DracoPy decodes.

use std::collections::BTreeMap;

use neurochunk_array::precomputed::mesh::{
    decode_legacy_fragment, encode_multires_manifest, parse_multires_manifest, write_legacy_meshes,
    LegacyWriteOptions, Lod, LodFragment, MeshDir, MeshError, MeshFragment, MeshKind,
    MultiresManifest, SegmentMesh,
};
use neurochunk_array::precomputed::sharding::{self, ShardEncoding, ShardHash, ShardingSpec};
use neurochunk_store::{Bytes, MemoryStore, Store};

/// A fragment file: `n`, positions, triangles, as Neuroglancer documents it.
fn fragment_bytes(vertices: &[[f32; 3]], triangles: &[[u32; 3]]) -> Vec<u8> {
    let mut out = (vertices.len() as u32).to_le_bytes().to_vec();
    for v in vertices.iter().flatten() {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for t in triangles.iter().flatten() {
        out.extend_from_slice(&t.to_le_bytes());
    }
    out
}

fn put(store: &MemoryStore, key: &str, bytes: impl Into<Vec<u8>>) {
    store.set(key, Bytes::from(bytes.into())).unwrap();
}

fn square() -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    (
        vec![
            [0.0, 0.0, 0.0],
            [8.0, 0.0, 0.0],
            [8.0, 8.0, 0.0],
            [0.0, 8.0, 0.0],
        ],
        vec![[0, 1, 2], [0, 2, 3]],
    )
}

#[test]
fn legacy_layer_read_from_bytes() {
    let store = MemoryStore::new();
    put(
        &store,
        "seg/info",
        br#"{"type":"segmentation","data_type":"uint64","num_channels":1,"scales":[],"mesh":"mesh"}"#
            .to_vec(),
    );
    let (v, t) = square();
    put(
        &store,
        "seg/mesh/7:0",
        br#"{"fragments":["7:0:a","sub/7:0:b"]}"#.to_vec(),
    );
    put(&store, "seg/mesh/7:0:a", fragment_bytes(&v, &t));
    // The second fragment as a `.gz` file beside its missing name.
    put(
        &store,
        "seg/mesh/sub/7:0:b.gz",
        sharding::gzip(&fragment_bytes(&v[..3], &t[..1])),
    );
    // Segment 9: gzip data under the plain name, no triangles.
    put(
        &store,
        "seg/mesh/9:0.gz",
        sharding::gzip(br#"{"fragments":["9:0:x"]}"#),
    );
    put(
        &store,
        "seg/mesh/9:0:x",
        sharding::gzip(&fragment_bytes(&v[..1], &[])),
    );
    // Not manifests.
    put(&store, "seg/mesh/7:0:a.json", b"{}".to_vec());
    put(&store, "seg/mesh/x:0", b"{}".to_vec());

    // Opening the layer follows its `mesh` member.
    let dir = MeshDir::open(&store, "seg").unwrap();
    assert_eq!(dir.dir(), "seg/mesh");
    assert_eq!(dir.kind(), &MeshKind::Legacy);
    assert_eq!(dir.segments().unwrap(), vec![7, 9]);
    let mesh = dir.read_legacy(7).unwrap();
    assert_eq!(mesh.fragments.len(), 2);
    assert_eq!(mesh.fragments[1].name, "sub/7:0:b");
    let (vertices, triangles) = mesh.concatenated();
    assert_eq!(vertices.len(), 7);
    assert_eq!(triangles, vec![[0, 1, 2], [0, 2, 3], [4, 5, 6]]);
    let nine = dir.read_segment(9).unwrap();
    assert_eq!(nine.fragments[0].vertices, vec![[0.0, 0.0, 0.0]]);
    assert!(nine.fragments[0].triangles.is_empty());
    match dir.read_legacy(8) {
        Err(MeshError::NotFound { file, segment }) => {
            assert_eq!((file.as_str(), segment), ("seg/mesh/8:0", Some(8)))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn legacy_round_trip_plain_and_gzip() {
    let (v, t) = square();
    let meshes = vec![
        SegmentMesh {
            segment: 3,
            fragments: vec![
                MeshFragment {
                    name: String::new(),
                    vertices: v.clone(),
                    triangles: t.clone(),
                },
                MeshFragment {
                    name: String::new(),
                    vertices: v[1..].to_vec(),
                    triangles: vec![[2, 1, 0]],
                },
            ],
        },
        SegmentMesh {
            segment: u64::MAX,
            fragments: vec![MeshFragment {
                name: "big".into(),
                vertices: v.clone(),
                triangles: t.clone(),
            }],
        },
    ];
    for gzip in [false, true] {
        let store = MemoryStore::new();
        let options = LegacyWriteOptions {
            gzip,
            ..LegacyWriteOptions::default()
        };
        write_legacy_meshes(&store, "m", &meshes, &options).unwrap();
        let plain = store.get("m/3:0:0").unwrap();
        assert_eq!(plain.is_some(), !gzip);
        assert_eq!(store.get("m/3:0:0.gz").unwrap().is_some(), gzip);
        if let Some(bytes) = plain {
            assert_eq!(&bytes[..], &fragment_bytes(&v, &t)[..]);
            assert_eq!(
                &store.get("m/3:0").unwrap().unwrap()[..],
                br#"{"fragments":["3:0:0","3:0:1"]}"#
            );
        }
        let dir = MeshDir::open(&store, "m").unwrap();
        assert_eq!(dir.segments().unwrap(), vec![3, u64::MAX]);
        for mesh in &meshes {
            let back = dir.read_legacy(mesh.segment).unwrap();
            assert_eq!(back.concatenated(), mesh.concatenated());
        }
    }
    // A triangle past the fragment's vertices is refused before anything is written.
    let store = MemoryStore::new();
    let bad = vec![SegmentMesh {
        segment: 1,
        fragments: vec![MeshFragment {
            name: String::new(),
            vertices: v.clone(),
            triangles: vec![[0, 1, 4]],
        }],
    }];
    assert!(write_legacy_meshes(&store, "m", &bad, &LegacyWriteOptions::default()).is_err());
    assert!(store.get("m/info").unwrap().is_none());
}

fn corrupt_message(result: Result<impl std::fmt::Debug, MeshError>) -> String {
    match result {
        Err(e @ MeshError::Corrupt { .. }) => e.to_string(),
        other => panic!("expected a corrupt-file error, got {other:?}"),
    }
}

#[test]
fn damaged_legacy_files_are_errors() {
    let (v, t) = square();
    let good = fragment_bytes(&v, &t);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("empty", vec![], "shorter than its 4-byte vertex count"),
        ("short count", vec![1, 0], "shorter than"),
        (
            "huge count",
            u32::MAX.to_le_bytes().to_vec(),
            "declares 4294967295 vertices",
        ),
        (
            "truncated",
            good[..good.len() - 5].to_vec(),
            "not whole triangles",
        ),
        (
            "vertices cut",
            good[..4 + 12 * 3].to_vec(),
            "declares 4 vertices",
        ),
        (
            "index out of range",
            fragment_bytes(&v, &[[0, 1, 9]]),
            "refers to vertex 9",
        ),
    ];
    for (what, bytes, expected) in cases {
        let message = corrupt_message(decode_legacy_fragment(&bytes, "m/5:0:1", Some(5)));
        assert!(message.contains(expected), "{what}: {message}");
        assert!(
            message.contains("m/5:0:1") && message.contains("segment 5"),
            "{message}"
        );
    }

    let store = MemoryStore::new();
    put(&store, "m/1:0", b"{not json".to_vec());
    put(&store, "m/2:0", br#"{"fragments":["../escape"]}"#.to_vec());
    put(&store, "m/3:0", br#"{"fragments":[3]}"#.to_vec());
    put(&store, "m/4:0", br#"{"fragments":["4:0:1"]}"#.to_vec());
    put(&store, "m/4:0:1.gz", b"\x1f\x8bnot gzip".to_vec());
    put(&store, "m/6:0", br#"{"fragments":["6:0:1"]}"#.to_vec());
    let dir = MeshDir::open(&store, "m").unwrap();
    assert!(corrupt_message(dir.read_legacy(1)).contains("not valid JSON"));
    assert!(corrupt_message(dir.read_legacy(2)).contains("not a file inside"));
    assert!(corrupt_message(dir.read_legacy(3)).contains("not a string"));
    let gz = corrupt_message(dir.read_legacy(4));
    assert!(gz.contains("m/4:0:1.gz") && gz.contains("gzip"), "{gz}");
    match dir.read_legacy(6) {
        Err(MeshError::NotFound { file, segment }) => {
            assert_eq!((file.as_str(), segment), ("m/6:0:1", Some(6)))
        }
        other => panic!("{other:?}"),
    }
    // A damaged info.
    put(&store, "bad/info", b"[1, 2]".to_vec());
    assert!(MeshDir::open(&store, "bad").is_err());
    put(
        &store,
        "odd/info",
        br#"{"@type":"neuroglancer_other"}"#.to_vec(),
    );
    assert!(matches!(
        MeshDir::open(&store, "odd"),
        Err(MeshError::Unsupported { .. })
    ));
}

fn manifest() -> MultiresManifest {
    MultiresManifest {
        chunk_shape: [64.0, 64.0, 32.0],
        grid_origin: [-1.0, 0.0, 2.5],
        lods: vec![
            Lod {
                scale: 1.0,
                vertex_offset: [0.0, 0.0, 0.0],
                fragments: vec![
                    LodFragment {
                        position: [0, 0, 0],
                        offset: 0,
                        size: 11,
                    },
                    LodFragment {
                        position: [1, 2, 3],
                        offset: 11,
                        size: 4,
                    },
                ],
            },
            Lod {
                scale: 2.0,
                vertex_offset: [0.5, 0.5, 0.5],
                fragments: vec![LodFragment {
                    position: [0, 1, 1],
                    offset: 15,
                    size: 6,
                }],
            },
        ],
    }
}

const MULTIRES_INFO: &str = r#"{"@type":"neuroglancer_multilod_draco","vertex_quantization_bits":16,
    "transform":[8,0,0,0,0,8,0,0,0,0,40,0],"lod_scale_multiplier":1}"#;

#[test]
fn multires_manifest_bytes() {
    // The layout spelled out: chunk_shape, grid_origin, num_lods, lod_scales,
    // vertex_offsets, num_fragments_per_lod, then per lod positions [3, n] and sizes.
    let mut bytes = Vec::new();
    for f in [64.0f32, 64.0, 32.0, -1.0, 0.0, 2.5] {
        bytes.extend_from_slice(&f.to_le_bytes());
    }
    bytes.extend_from_slice(&2u32.to_le_bytes());
    for f in [1.0f32, 2.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5] {
        bytes.extend_from_slice(&f.to_le_bytes());
    }
    for u in [
        2u32, 1, /* lod 0 */ 0, 1, 0, 2, 0, 3, 11, 4, /* lod 1 */ 0, 1, 1, 6,
    ] {
        bytes.extend_from_slice(&u.to_le_bytes());
    }
    assert_eq!(encode_multires_manifest(&manifest()), bytes);
    assert_eq!(
        parse_multires_manifest(&bytes, "m/1.index", Some(1), Some(21)).unwrap(),
        manifest()
    );
    // Damaged manifests: every truncation, trailing bytes, absurd counts, data too short.
    for cut in 0..bytes.len() {
        let message = corrupt_message(parse_multires_manifest(
            &bytes[..cut],
            "m/1.index",
            Some(1),
            None,
        ));
        assert!(message.contains("m/1.index") && message.contains("segment 1"));
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(corrupt_message(parse_multires_manifest(&long, "f", None, None)).contains("follow"));
    let mut lods = bytes.clone();
    lods[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(corrupt_message(parse_multires_manifest(&lods, "f", None, None)).contains("lods"));
    let mut frags = bytes.clone();
    frags[60..64].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(
        corrupt_message(parse_multires_manifest(&frags, "f", None, None)).contains("fragments")
    );
    assert!(
        corrupt_message(parse_multires_manifest(&bytes, "f", None, Some(20))).contains("21 bytes")
    );
}

#[test]
fn multires_unsharded_layer() {
    let store = MemoryStore::new();
    put(&store, "m/info", MULTIRES_INFO.as_bytes().to_vec());
    put(&store, "m/5.index", encode_multires_manifest(&manifest()));
    let data: Vec<u8> = (0..21u8).collect();
    put(&store, "m/5", data.clone());
    let dir = MeshDir::open(&store, "m").unwrap();
    let MeshKind::Multires(info) = dir.kind() else {
        panic!("not multires")
    };
    assert_eq!(info.vertex_quantization_bits, 16);
    assert_eq!(info.transform[10], 40.0);
    assert_eq!(dir.segments().unwrap(), vec![5]);
    let (m, key, start) = dir.read_multires_manifest(5).unwrap();
    assert_eq!((m, key.as_str(), start), (manifest(), "m/5", 0));
    assert_eq!(
        &dir.read_multires_fragment_bytes(5, 1, 0).unwrap()[..],
        &data[15..21]
    );
    let refused = dir.read_segment(5).unwrap_err().to_string();
    #[cfg(not(feature = "draco"))]
    {
        assert!(
            refused.contains("Draco-encoded fragments are not decoded by this build")
                && refused.contains("m/5")
                && refused.contains("segment 5"),
            "{refused}"
        );
        assert!(matches!(
            dir.read_multires_fragment(5, 0, 1),
            Err(MeshError::Unsupported { .. })
        ));
    }
    // The fragment bytes are no Draco data: an error naming file, segment, lod and fragment.
    #[cfg(feature = "draco")]
    {
        assert!(
            refused.contains("m/5")
                && refused.contains("segment 5")
                && refused.contains("fragment 0 of lod 0")
                && refused.contains("Draco"),
            "{refused}"
        );
        let err = dir.read_multires_fragment(5, 0, 1).unwrap_err().to_string();
        assert!(err.contains("fragment 1 of lod 0"), "{err}");
    }
    // Data shorter than the manifest says.
    put(&store, "m/5", data[..20].to_vec());
    assert!(corrupt_message(dir.read_multires_manifest(5)).contains("21 bytes"));
    assert!(dir.read_legacy(5).is_err());
}

#[test]
fn multires_sharded_layer() {
    let spec = ShardingSpec {
        preshift_bits: 0,
        hash: ShardHash::Murmurhash3X86_128,
        minishard_bits: 1,
        shard_bits: 1,
        minishard_index_encoding: ShardEncoding::Gzip,
        data_encoding: ShardEncoding::Raw,
    };
    let ids = [1u64, 2, 3, 1000];
    let fragments: Vec<u8> = (100..121u8).collect();
    let mut shards: BTreeMap<u64, BTreeMap<u64, Vec<u8>>> = BTreeMap::new();
    for &id in &ids {
        shards
            .entry(spec.place(id).shard)
            .or_default()
            .insert(id, encode_multires_manifest(&manifest()));
    }
    // The fragment data precede the manifest: assemble, then splice the data in before each
    // manifest by rebuilding each shard with data+manifest as the chunk, the manifest last.
    let store = MemoryStore::new();
    let mut info: serde_json::Value = serde_json::from_str(MULTIRES_INFO).unwrap();
    info["sharding"] = spec.to_json();
    put(&store, "m/info", serde_json::to_vec(&info).unwrap());
    for (shard, chunks) in &shards {
        let with_data: BTreeMap<u64, Vec<u8>> = chunks
            .iter()
            .map(|(&id, manifest)| {
                let mut chunk = fragments.clone();
                chunk.extend_from_slice(manifest);
                (id, chunk)
            })
            .collect();
        let mut bytes = sharding::assemble_shard(&with_data, &spec);
        // Point each minishard entry at the manifest (after the fragment data): rewrite the
        // minishard indexes with the start moved by the data's size.
        bytes = move_entries_past_data(&bytes, &spec, fragments.len() as u64);
        put(&store, &format!("m/{}", spec.shard_file(*shard)), bytes);
    }
    let dir = MeshDir::open(&store, "m").unwrap();
    assert_eq!(dir.segments().unwrap(), ids.to_vec());
    for &id in &ids {
        let (m, key, start) = dir.read_multires_manifest(id).unwrap();
        assert_eq!(m, manifest());
        assert_eq!(key, format!("m/{}", spec.shard_file(spec.place(id).shard)));
        assert_eq!(
            &dir.read_multires_fragment_bytes(id, 0, 1).unwrap()[..],
            &fragments[11..15]
        );
        assert!(start >= spec.shard_index_bytes());
    }
    assert!(matches!(
        dir.read_multires_manifest(77),
        Err(MeshError::NotFound { .. })
    ));
}

/// Rewrite a shard's minishard indexes so each chunk's range starts `skip` bytes later (and
/// is that much shorter): the chunk's leading bytes become data before the indexed value.
fn move_entries_past_data(shard: &[u8], spec: &ShardingSpec, skip: u64) -> Vec<u8> {
    let index_end = spec.shard_index_bytes();
    let ranges = sharding::parse_shard_index(&shard[..index_end as usize], spec, None).unwrap();
    let mut chunks_by_minishard = Vec::new();
    for (start, end) in ranges {
        if start == end {
            chunks_by_minishard.push(Vec::new());
            continue;
        }
        let raw = sharding::gunzip(&shard[start as usize..end as usize], 1 << 20).unwrap();
        let mut entries = sharding::parse_minishard_index(&raw, index_end, None).unwrap();
        for e in &mut entries {
            e.start += skip;
            e.size -= skip;
        }
        chunks_by_minishard.push(entries);
    }
    // Rebuild: data section unchanged, new (gzip) minishard indexes appended, index updated.
    let body_end = shard.len();
    let mut out = shard.to_vec();
    for (m, entries) in chunks_by_minishard.iter().enumerate() {
        if entries.is_empty() {
            continue;
        }
        let encoded = sharding::gzip(&sharding::encode_minishard_index(entries, index_end));
        let start = out.len() as u64 - index_end;
        out.extend_from_slice(&encoded);
        let end = out.len() as u64 - index_end;
        out[m * 16..m * 16 + 8].copy_from_slice(&start.to_le_bytes());
        out[m * 16 + 8..m * 16 + 16].copy_from_slice(&end.to_le_bytes());
    }
    assert!(out.len() > body_end);
    out
}
