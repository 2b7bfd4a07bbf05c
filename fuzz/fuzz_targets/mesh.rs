//! Neuroglancer precomputed meshes: a framed input whose document is a mesh directory's
//! `info` (empty: no `info`, a legacy directory) and whose payload is one stored file, chosen
//! by the selector's low two bits: 0 a legacy fragment `5:0:1` (bit 2: `5:0:1.gz`) named by a
//! manifest the target writes, 1 a legacy manifest `5:0`, 2 a multi-resolution manifest and
//! its fragment data (`5.index` then `5`, split at the payload's first u16 LE), 3 a shard file
//! `0.shard`. Runs the `info`, manifest and fragment parsers directly, then the directory
//! reader: segments, the segment's mesh, and every multi-resolution fragment of the first lods.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neurochunk::array::precomputed::mesh::{
    decode_legacy_fragment, parse_legacy_manifest, parse_mesh_info, parse_multires_manifest,
    MeshDir, MeshKind,
};
use neurochunk::{Bytes, MemoryStore, Store};
use neurochunk_fuzz::Framed;

/// Fragments read per input (a manifest may list millions).
const MAX_FRAGMENTS: usize = 64;

fuzz_target!(|data: &[u8]| {
    neurochunk_fuzz::apply_heap_cap();
    let Some(input) = Framed::split(data) else {
        return;
    };
    let doc = serde_json::from_slice::<serde_json::Value>(input.document).ok();
    let _ = parse_mesh_info(doc.as_ref(), "m/info");
    let _ = decode_legacy_fragment(input.payload, "m/5:0:1", Some(5));
    let _ = parse_legacy_manifest(input.payload, "m/5:0", 5);
    let _ = parse_multires_manifest(input.payload, "m/5.index", Some(5), None);

    let store = MemoryStore::new();
    let mut files: Vec<(&str, &[u8])> = Vec::new();
    if !input.document.is_empty() {
        files.push(("m/info", input.document));
    }
    match input.selector & 3 {
        0 => {
            let name = if input.selector & 4 != 0 {
                "m/5:0:1.gz"
            } else {
                "m/5:0:1"
            };
            files.push(("m/5:0", br#"{"fragments": ["5:0:1"]}"#));
            files.push((name, input.payload));
        }
        1 => files.push(("m/5:0", input.payload)),
        2 => {
            let (manifest, data) = match input.payload {
                [a, b, rest @ ..] => {
                    let n = usize::from(u16::from_le_bytes([*a, *b])).min(rest.len());
                    rest.split_at(n)
                }
                _ => (input.payload, &[][..]),
            };
            files.push(("m/5.index", manifest));
            files.push(("m/5", data));
        }
        _ => files.push(("m/0.shard", input.payload)),
    }
    for (key, value) in files {
        if store.set(key, Bytes::copy_from_slice(value)).is_err() {
            return;
        }
    }
    let Ok(dir) = MeshDir::open(&store, "m") else {
        return;
    };
    let _ = dir.segments();
    let _ = dir.read_segment(5);
    if let MeshKind::Multires(_) = dir.kind() {
        if let Ok((manifest, _, _)) = dir.read_multires_manifest(5) {
            let fragments = manifest
                .lods
                .iter()
                .enumerate()
                .flat_map(|(lod, l)| (0..l.fragments.len()).map(move |f| (lod, f)))
                .take(MAX_FRAGMENTS);
            for (lod, fragment) in fragments {
                let _ = dir.read_multires_fragment(5, lod, fragment);
            }
        }
    }
});
