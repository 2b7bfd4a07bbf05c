//! The public API on the test files: path resolution, links, chunk lookups, reads in native
//! byte order, fill values, errors.

mod common;

use std::sync::Arc;

use common::*;
use neurochunk_h5::{
    is_hdf5, ChunkIndexKind, Datatype, ErrorKind, H5File, Layout, LinkTarget, Object, Selection,
    Slice, Value,
};
use neurochunk_store::{Bytes, MemoryStore, Store};

fn dataset(file: &H5File, path: &str) -> neurochunk_h5::Dataset {
    match file.object(path).unwrap() {
        Object::Dataset(d) => d,
        other => panic!("{path}: {other:?}"),
    }
}

#[test]
fn typed_accessors() {
    let file = open("tiny.h5");
    assert_eq!(file.dataset("/data").unwrap().shape(), [4, 5]);
    assert_eq!(file.dataset("soft").unwrap().path(), "/soft");
    assert!(file.group("/group").is_ok());
    let e = file.group("/data").unwrap_err();
    assert_eq!(
        e.to_string(),
        "tiny.h5: '/data': invalid argument: not a group"
    );
    assert!(file.dataset("/group").is_err());
    let root = file.object("/").unwrap();
    assert!(root.as_group().is_some() && root.as_dataset().is_none());
}

#[test]
fn handles_are_send_sync_and_cheap_to_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<H5File>();
    check::<neurochunk_h5::Dataset>();
    check::<neurochunk_h5::Group>();
    check::<neurochunk_h5::Attribute>();
    check::<Object>();
}

#[test]
fn soft_links_are_followed_inside_the_file_and_reported_by_listings() {
    let file = open("earliest.h5");
    let soft = file.object("/links/soft").unwrap();
    let target = file.object("/data/contiguous").unwrap();
    assert_eq!(soft.address(), target.address());
    assert_eq!(soft.path(), "/links/soft");
    // The same dataset under two hard links has one address.
    let a = file.object("/links/hard_again").unwrap();
    let b = file.object("/data/chunked").unwrap();
    assert_eq!(a.address(), b.address());
    assert_eq!(
        file.path_of(a.address()).unwrap().as_deref(),
        Some("/data/chunked")
    );
    let Object::Group(links) = file.object("/links").unwrap() else {
        panic!()
    };
    let l = links.link("external").unwrap().unwrap();
    assert_eq!(
        l.target,
        LinkTarget::External {
            file: "other.h5".into(),
            path: "/some/path".into()
        }
    );
    // External links are never followed; dangling soft links lead nowhere.
    let e = file.object("/links/external").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{e}");
    assert!(e.to_string().contains("external link"), "{e}");
    let e = file.object("/links/dangling").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotFound(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "earliest.h5: '/links/dangling': not found: no link 'no' in '/'"
    );
    assert!(file.exists("/links/soft").unwrap());
    assert!(!file.exists("/links/dangling").unwrap());
    assert!(!file.exists("/links/external").unwrap());
    assert!(!file.exists("/nothing").unwrap());
    assert!(file.exists("/").unwrap());
}

#[test]
fn chunk_lookups_by_coordinates_and_element_offsets() {
    let file = open("latest.h5");
    for (path, kind) in [
        ("/index/single_filtered", ChunkIndexKind::SingleChunk),
        ("/index/implicit", ChunkIndexKind::Implicit),
        ("/index/fixed_array", ChunkIndexKind::FixedArray),
        ("/index/extensible", ChunkIndexKind::ExtensibleArray),
        ("/index/btree2", ChunkIndexKind::BTree2),
        ("/data/many_chunks", ChunkIndexKind::FixedArray),
    ] {
        let d = dataset(&file, path);
        let Layout::Chunked { index, chunk } = d.layout() else {
            panic!()
        };
        assert_eq!(*index, kind, "{path}");
        let all = d.chunks().unwrap();
        assert!(!all.is_empty());
        let last = all.last().unwrap();
        let by_offset = d.chunk_at(&last.offset).unwrap().unwrap();
        assert_eq!(&by_offset, last, "{path}");
        // A decoded chunk equals the elements it covers.
        let raw = d.read_chunk(&last.coords).unwrap().unwrap();
        let elem = d.dtype().size();
        assert_eq!(
            raw.len() as u64,
            chunk.iter().product::<u64>() * elem as u64
        );
        let slices: Vec<Slice> = last
            .offset
            .iter()
            .zip(chunk)
            .zip(d.shape())
            .map(|((&o, &c), &n)| Slice::range(o, (o + c).min(n)))
            .collect();
        let part = d.read_raw(&slices).unwrap();
        if slices.iter().zip(chunk).all(|(s, &c)| s.count() == c) {
            assert_eq!(part, raw, "{path}");
        }
    }
    // A chunk never written.
    let d = dataset(&file, "/index/btree2_filtered");
    assert!(d.chunk(&[10, 0]).unwrap().is_none());
    assert!(d.read_chunk(&[10, 0]).unwrap().is_none());
    assert!(d.chunk(&[0, 0]).unwrap().is_some());
}

#[test]
fn unwritten_data_reads_as_the_fill_value() {
    let file = open("earliest.h5");
    let d = dataset(&file, "/data/unwritten");
    assert!(d.chunks().unwrap().is_empty());
    let v = d
        .read_values(&[Slice::range(3, 5), Slice::range(0, 2)])
        .unwrap();
    assert_eq!(v, vec![Value::Int(-7); 4]);
    let d = dataset(&file, "/data/unwritten_contig");
    assert_eq!(
        d.layout(),
        &Layout::Contiguous {
            byte_offset: None,
            size: 0
        }
    );
    assert_eq!(
        d.read_values(&[Slice::range(0, 2)]).unwrap(),
        vec![Value::Float(2.5); 2]
    );
    let d = dataset(&file, "/data/partial");
    let v = d.read_values_all().unwrap();
    let want: Vec<Value> = (0..40u64)
        .map(|i| Value::UInt(if (10..20).contains(&i) { i - 10 } else { 9 }))
        .collect();
    assert_eq!(v, want);
    assert_eq!(d.fill_native(), [9]);
}

#[test]
fn big_endian_data_reads_in_native_order() {
    let file = open("earliest.h5");
    let d = dataset(&file, "/data/be_i4");
    assert!(matches!(
        d.dtype(),
        Datatype::Int {
            size: 4,
            signed: true,
            big_endian: true
        }
    ));
    let native = d.read_native(&d.full_selection()).unwrap();
    let ints: Vec<i32> = native
        .chunks_exact(4)
        .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(ints, (-10..10).collect::<Vec<i32>>());
    let raw = d.read_raw(&[Slice::range(0, 1)]).unwrap();
    assert_eq!(raw, (-10i32).to_be_bytes());
}

#[test]
fn strided_hyperslabs_of_every_layout() {
    let file = open("earliest.h5");
    for path in [
        "/data/contiguous",
        "/data/chunked",
        "/data/gzip",
        "/data/shuffle_gzip",
    ] {
        let d = dataset(&file, path);
        let whole = d.read_values_all().unwrap();
        let n = d.shape()[1] as usize;
        let v = d
            .read_values(&[Slice::new(1, 9, 3), Slice::new(2, 9, 4)])
            .unwrap();
        let want: Vec<Value> = [1usize, 4, 7]
            .iter()
            .flat_map(|&r| [2usize, 6].map(|c| whole[r * n + c].clone()))
            .collect();
        assert_eq!(v, want, "{path}");
    }
    let d = dataset(&file, "/data/chunked");
    assert!(d
        .read_raw(&[Slice::range(0, 38), Slice::range(0, 1)])
        .is_err());
    assert!(d.read_raw(&[Slice::range(0, 1)]).is_err());
    assert!(d
        .read_raw(&[Slice::new(0, 1, 0), Slice::range(0, 1)])
        .is_err());
    let mut small = [0u8; 3];
    assert!(d
        .read_raw_into(&[Slice::range(0, 1), Slice::range(0, 1)], &mut small)
        .is_err());
    // A scalar and an empty dataset.
    let s = dataset(&file, "/data/scalar");
    assert_eq!(s.read_values(&[]).unwrap(), [Value::Float(3.25)]);
    let e = dataset(&file, "/data/empty");
    assert_eq!(e.read_values(&[]).unwrap(), []);
}

#[test]
fn unsupported_filters_are_refused_by_name() {
    let file = open("earliest.h5");
    for (path, name) in [("/data/szip", "szip"), ("/data/scaleoffset", "scaleoffset")] {
        let d = dataset(&file, path);
        let e = d.read_raw_all().unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{msg}");
        assert!(
            msg.starts_with(&format!(
                "earliest.h5: '{path}': unsupported: the {name} filter"
            )),
            "{msg}"
        );
        // The chunks themselves are still listed.
        assert!(!d.chunks().unwrap().is_empty());
    }
}

#[test]
fn region_references_decode_to_selections() {
    let file = open("types.h5");
    let d = dataset(&file, "/refs/region_refs");
    let v = d.read_values_all().unwrap();
    let Value::Reference(Some(r)) = &v[0] else {
        panic!("{:?}", v[0])
    };
    assert_eq!(r.path.as_deref(), Some("/refs/target"));
    let neurochunk_h5::ReferenceTarget::Region(sel) = &r.target else {
        panic!()
    };
    assert_eq!(
        sel.as_slices(),
        Some(vec![Slice::range(2, 5), Slice::range(3, 7)])
    );
    let Value::Reference(Some(r)) = &v[2] else {
        panic!()
    };
    assert_eq!(
        r.target,
        neurochunk_h5::ReferenceTarget::Region(Selection::All)
    );
    assert_eq!(v[4], Value::Reference(None));
}

#[test]
fn corrupt_structures_are_named_in_errors() {
    // Break one byte of a v2 B-tree leaf of the dense group: its checksum fails.
    let mut bytes = file_bytes("latest.h5");
    let file = open("latest.h5");
    let dense = file.object("/dense").unwrap();
    let _ = dense;
    let pos = bytes.windows(4).position(|w| w == b"BTLF").unwrap();
    bytes[pos + 8] ^= 0x40;
    let store = MemoryStore::new();
    store.set("x.h5", Bytes::from(bytes)).unwrap();
    let file = H5File::open(Arc::new(store), "x.h5", "x.h5").unwrap();
    let err = file
        .walk()
        .err()
        .or_else(|| file.root().and_then(|r| r.members()).err())
        .expect("an error");
    let msg = err.to_string();
    assert!(msg.starts_with("x.h5: '"), "{msg}");
    assert!(msg.contains("v2 B-tree leaf node at 0x"), "{msg}");
    assert!(msg.contains("bad checksum"), "{msg}");
}

#[test]
fn not_hdf5() {
    let store = MemoryStore::new();
    store.set("a", Bytes::from(vec![7u8; 5000])).unwrap();
    store
        .set("b", Bytes::from(file_bytes("userblock.h5")))
        .unwrap();
    assert!(!is_hdf5(&store, "a").unwrap());
    assert!(is_hdf5(&store, "b").unwrap());
    assert!(!is_hdf5(&store, "missing").unwrap());
    let e = H5File::open(Arc::new(store), "a", "a.h5").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotHdf5(_)), "{e}");
    assert!(e.to_string().starts_with("a.h5: not an HDF5 file"), "{e}");
}

#[test]
fn attributes_of_every_kind() {
    let file = open("types.h5");
    let Object::Group(g) = file.object("/attrs").unwrap() else {
        panic!()
    };
    let get = |n: &str| g.attribute(n).unwrap().unwrap().values().unwrap();
    assert_eq!(get("scalar_int"), [Value::Int(-5)]);
    assert_eq!(get("vlen_str"), [Value::Text("text".into())]);
    assert_eq!(
        get("fixed_strs"),
        [Value::Text("ab".into()), Value::Text("c".into())]
    );
    assert_eq!(get("empty"), []);
    assert_eq!(
        get("vlen_seq"),
        [
            Value::Sequence(vec![Value::Int(0), Value::Int(1)]),
            Value::Sequence(vec![Value::Int(0), Value::Int(1), Value::Int(2)])
        ]
    );
    let a = g.attribute("array_2d").unwrap().unwrap();
    assert_eq!(a.extent(), &neurochunk_h5::Extent::Simple(vec![2, 3]));
    assert_eq!(a.native().len(), 12);
}

#[test]
fn members_and_prefetch() {
    let file = open("latest.h5");
    let Object::Group(g) = file.object("/dense").unwrap() else {
        panic!()
    };
    let members = g.members().unwrap();
    assert_eq!(members.len(), 30);
    assert_eq!(members[0].0, "child00");
    assert!(matches!(members[0].1, Object::Group(_)));
    let Object::Group(o) = file.object("/ordered").unwrap() else {
        panic!()
    };
    let mut links = o.links().unwrap();
    assert!(links.iter().all(|l| l.creation_order.is_some()));
    links.sort_by_key(|l| l.creation_order);
    assert_eq!(links[0].name, "z24");
}

#[test]
fn paged_extensible_array_reads() {
    let file = open("latest.h5");
    let d = dataset(&file, "/index/extensible_paged");
    let v = d.read_values(&[Slice::range(131_095, 131_115)]).unwrap();
    let want: Vec<Value> = (131_095u64..131_115)
        .map(|i| {
            Value::UInt(if (131_100..131_110).contains(&i) {
                i % 251
            } else {
                0
            })
        })
        .collect();
    assert_eq!(v, want);
    let chunks = d.chunks().unwrap();
    assert_eq!(chunks.len(), 5 + 3 + 10 + 10);
    assert!(d.chunk(&[131_105]).unwrap().is_some());
    assert!(d.chunk(&[131_111]).unwrap().is_none());
    assert!(d.chunk(&[60_000]).unwrap().is_none());
}

#[test]
fn external_and_virtual_storage_is_reported_and_refused() {
    let file = open("earliest.h5");
    let d = dataset(&file, "/data/external");
    assert_eq!(
        d.external_files(),
        [neurochunk_h5::ExternalFile {
            name: "external.bin".into(),
            offset: 0,
            size: 40
        }]
    );
    let e = d.read_raw_all().unwrap_err();
    assert!(e.to_string().contains("external file"), "{e}");
    let file = open("latest.h5");
    let d = dataset(&file, "/virtual");
    assert_eq!(d.layout(), &Layout::Virtual);
    assert_eq!(d.shape(), [2, 4]);
    let e = d.read_raw_all().unwrap_err();
    assert!(e.to_string().contains("virtual dataset"), "{e}");
}

#[test]
fn files_of_multi_file_drivers_are_refused() {
    let store = store_with("family0.h5");
    let e = H5File::open(store, "family0.h5", "family0.h5").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "family0.h5: unsupported: a file of the 'NCSAfami' file driver (its addresses span several files)"
    );
}

#[test]
fn stored_chunks_in_batches() {
    let file = open("latest.h5");
    let d = dataset(&file, "/index/fixed_array_filtered");
    let chunks = d.chunks().unwrap();
    let mut picked: Vec<_> = chunks.iter().rev().step_by(7).cloned().collect();
    picked.push(chunks[0].clone());
    let stored = d.read_chunks_stored(&picked).unwrap();
    for (c, s) in picked.iter().zip(&stored) {
        assert_eq!(s.to_vec(), d.read_chunk_stored(c).unwrap());
        assert_eq!(s.len() as u64, c.size);
    }
}
