//! Every test file read by this crate compared with what h5py (the HDF5 C library) reads:
//! objects and their addresses, links, attributes, dataset descriptions, chunk locations and
//! values.

mod common;

use common::*;
use neurochunk_h5::{ChunkIndexKind, FillDefined, H5File, Layout, LinkTarget, Object};
use serde_json::{json, Value as J};

fn index_name(k: ChunkIndexKind) -> &'static str {
    match k {
        ChunkIndexKind::BTree1 => "btree1",
        ChunkIndexKind::SingleChunk => "single",
        ChunkIndexKind::Implicit => "implicit",
        ChunkIndexKind::FixedArray => "fixed_array",
        ChunkIndexKind::ExtensibleArray => "extensible_array",
        ChunkIndexKind::BTree2 => "btree2",
    }
}

fn shape_json(e: &neurochunk_h5::Extent) -> J {
    match e {
        neurochunk_h5::Extent::Null => json!("null"),
        neurochunk_h5::Extent::Scalar => json!("scalar"),
        neurochunk_h5::Extent::Simple(d) => json!(d),
    }
}

/// Compare one file; returns the number of objects checked.
fn compare_file(name: &str) -> usize {
    let file = open(name);
    let exp = expected(name);
    assert_eq!(
        file.userblock(),
        exp["userblock"].as_u64().unwrap(),
        "{name}: user block"
    );
    assert_eq!(
        file.superblock_version() as u64,
        exp["superblock_version"].as_u64().unwrap(),
        "{name}: superblock version"
    );
    let objects = exp["objects"].as_object().unwrap();
    let mut problems = Vec::new();
    for (path, e) in objects {
        if let Err(p) = compare_object(&file, path, e) {
            problems.push(format!("{name}: {path}: {p}"));
        }
    }
    // The walk finds exactly the objects h5py found (each once).
    let walked = file.walk().unwrap();
    let unique: std::collections::BTreeSet<u64> = objects
        .values()
        .map(|e| e["addr"].as_u64().unwrap())
        .collect();
    assert_eq!(walked.len(), unique.len(), "{name}: objects walked");
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    objects.len()
}

fn check(ok: bool, what: impl Into<String>) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(what.into())
    }
}

fn compare_object(file: &H5File, path: &str, e: &J) -> Result<(), String> {
    let obj = file.object(path).map_err(|x| format!("open: {x}"))?;
    let addr = e["addr"].as_u64().unwrap();
    check(
        obj.address() == addr,
        format!("address {} != {addr}", obj.address()),
    )?;
    if e.get("same_as").is_some() {
        return Ok(());
    }
    // Attributes.
    let attrs = obj.attributes().map_err(|x| format!("attributes: {x}"))?;
    let want = e["attrs"].as_array().unwrap();
    let names: Vec<&str> = attrs.iter().map(|a| a.name()).collect();
    let want_names: Vec<&str> = want.iter().map(|a| a["name"].as_str().unwrap()).collect();
    check(
        names == want_names,
        format!("attribute names {names:?} != {want_names:?}"),
    )?;
    for (a, w) in attrs.iter().zip(want) {
        let n = a.name();
        check(
            dtype_norm(&dtype_json(a.dtype())) == dtype_norm(&w["dtype"]),
            format!(
                "attribute {n} dtype {} != {}",
                dtype_json(a.dtype()),
                w["dtype"]
            ),
        )?;
        check(
            shape_json(a.extent()) == w["shape"],
            format!("attribute {n} shape"),
        )?;
        if let Some(values) = w.get("values") {
            let got: Vec<J> = a
                .values()
                .map_err(|x| format!("attribute {n} values: {x}"))?
                .iter()
                .map(|v| value_json(file, v))
                .collect();
            let got = strip(J::Array(got));
            check(
                got == strip(values.clone()),
                format!("attribute {n} values {got} != {values}"),
            )?;
        }
    }
    match (&obj, e["kind"].as_str().unwrap()) {
        (Object::Group(g), "group") => {
            let mtime = g.modification_time().unwrap_or(0);
            check(
                mtime == e["mtime"],
                format!("mtime {mtime} != {}", e["mtime"]),
            )?;
            let links = g.links().map_err(|x| format!("links: {x}"))?;
            let got: Vec<J> = links
                .iter()
                .map(|l| match &l.target {
                    LinkTarget::Hard(a) => json!({"name": l.name, "type": "hard", "addr": a}),
                    LinkTarget::Soft(t) => json!({"name": l.name, "type": "soft", "target": t}),
                    LinkTarget::External { file, path } => {
                        json!({"name": l.name, "type": "external", "file": file, "path": path})
                    }
                    LinkTarget::UserDefined { link_type, .. } => {
                        json!({"name": l.name, "type": link_type})
                    }
                })
                .collect();
            check(
                J::Array(got.clone()) == e["links"],
                format!("links {got:?} != {}", e["links"]),
            )?;
        }
        (Object::NamedType(t), "datatype") => {
            check(dtype_json(t.dtype()) == e["dtype"], "named datatype")?;
        }
        (Object::Dataset(d), "dataset") => {
            let mtime = d.modification_time().unwrap_or(0);
            check(
                mtime == e["mtime"],
                format!("mtime {mtime} != {}", e["mtime"]),
            )?;
            compare_dataset(file, d, e)?
        }
        (_, k) => return Err(format!("kind: expected {k}, got {obj:?}")),
    }
    Ok(())
}

fn compare_dataset(file: &H5File, d: &neurochunk_h5::Dataset, e: &J) -> Result<(), String> {
    check(
        dtype_norm(&dtype_json(d.dtype())) == dtype_norm(&e["dtype"]),
        format!("dtype {} != {}", dtype_json(d.dtype()), e["dtype"]),
    )?;
    check(
        shape_json(d.extent()) == e["shape"],
        format!("shape {:?} != {}", d.extent(), e["shape"]),
    )?;
    if let Some(max) = e["maxshape"].as_array() {
        let got: Vec<J> = match d.maxshape() {
            Some(m) => m.iter().map(|x| json!(x)).collect(),
            None => d.shape().iter().map(|x| json!(x)).collect(),
        };
        check(&got == max, format!("maxshape {got:?} != {max:?}"))?;
    }
    let layout = match d.layout() {
        Layout::Compact { .. } => "compact",
        Layout::Contiguous { .. } => "contiguous",
        Layout::Chunked { .. } => "chunked",
        Layout::Virtual => "virtual",
    };
    check(
        layout == e["layout"],
        format!("layout {layout} != {}", e["layout"]),
    )?;
    if let Layout::Chunked { chunk, index } = d.layout() {
        check(
            json!(chunk) == e["chunks"],
            format!("chunk shape {chunk:?} != {}", e["chunks"]),
        )?;
        if let Some(want) = e.get("index") {
            check(
                index_name(*index) == want,
                format!("index {index:?} != {want}"),
            )?;
        }
    }
    if let (Layout::Contiguous { byte_offset, size }, Some(c)) = (d.layout(), e.get("contiguous")) {
        check(
            json!([byte_offset, size]) == *c,
            format!("contiguous {byte_offset:?} {size} != {c}"),
        )?;
    }
    let filters: Vec<J> = d
        .filters()
        .iter()
        .map(|f| json!([f.id, f.values, f.name]))
        .collect();
    let want_filters: Vec<J> = e["filters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| json!([f[0], f[2], f[3]]))
        .collect();
    check(
        filters == want_filters,
        format!("filters {filters:?} != {want_filters:?}"),
    )?;
    let fd = match d.fill_value().defined {
        FillDefined::Undefined => 0,
        FillDefined::Default => 1,
        FillDefined::User => 2,
    };
    check(
        fd == e["fill_defined"],
        format!("fill defined {fd} != {}", e["fill_defined"]),
    )?;
    if let Some(fill) = e.get("fill") {
        let raw = d.fill_bytes();
        let v = neurochunk_h5::Value::Bytes(raw);
        let _ = v;
        let got = decode_fill(file, d);
        check(got == *fill, format!("fill {got} != {fill}"))?;
    }
    if let Some(chunks) = e.get("chunk_info") {
        let got: Vec<J> = d
            .chunks()
            .map_err(|x| format!("chunks: {x}"))?
            .iter()
            .map(|c| json!([c.offset, c.filter_mask, c.byte_offset, c.size]))
            .collect();
        let unreliable = e.get("chunk_coords_unreliable").is_some();
        let drop_coords = |v: &J| {
            if unreliable {
                json!([v[1], v[2], v[3]])
            } else {
                v.clone()
            }
        };
        let mut got_sorted: Vec<J> = got.iter().map(drop_coords).collect();
        got_sorted.sort_by_key(|a| a.to_string());
        let mut want: Vec<J> = chunks.as_array().unwrap().iter().map(drop_coords).collect();
        want.sort_by_key(|a| a.to_string());
        check(
            got_sorted == want,
            format!(
                "{} chunks, expected {}; first differing: {:?}",
                got.len(),
                want.len(),
                got_sorted.iter().zip(&want).find(|(a, b)| a != b)
            ),
        )?;
        // Each chunk also found by a targeted lookup.
        for c in d.chunks().unwrap().iter().step_by(97) {
            let one = d
                .chunk(&c.coords)
                .map_err(|x| format!("chunk lookup: {x}"))?;
            check(
                one.as_ref() == Some(c),
                format!("lookup of chunk {:?}", c.coords),
            )?;
        }
    }
    let unsupported = d
        .filters()
        .iter()
        .any(|f| !neurochunk_h5::filter_supported(f.id))
        || matches!(d.layout(), Layout::Virtual)
        || !d.external_files().is_empty();
    check(
        d.external_files().len() as u64 == e["external"].as_u64().unwrap(),
        "external files",
    )?;
    if let Some(values) = e.get("values") {
        match d.read_values_all() {
            Ok(v) => {
                check(!unsupported, "read a dataset with an unsupported filter")?;
                let got = strip(J::Array(v.iter().map(|x| value_json(file, x)).collect()));
                let want = strip(values.clone());
                if got != want {
                    let first = got
                        .as_array()
                        .unwrap()
                        .iter()
                        .zip(want.as_array().unwrap())
                        .position(|(a, b)| a != b);
                    return Err(format!(
                        "values differ (first at {first:?}); got {} values, want {}",
                        got.as_array().unwrap().len(),
                        want.as_array().unwrap().len()
                    ));
                }
                // A hyperslab agrees with the whole read.
                if !d.shape().is_empty() && !d.shape().contains(&0) {
                    let slices: Vec<neurochunk_h5::Slice> = d
                        .shape()
                        .iter()
                        .map(|&n| neurochunk_h5::Slice::new(n / 3, n, 2.min(n - n / 3).max(1)))
                        .collect();
                    let part = d.read_raw(&slices).map_err(|x| format!("hyperslab: {x}"))?;
                    let whole = d.read_raw_all().unwrap();
                    let expect = slice_of(&whole, d.shape(), &slices, d.dtype().size());
                    check(part == expect, "hyperslab differs from the whole read")?;
                }
            }
            Err(x) => {
                check(unsupported, format!("read: {x}"))?;
                let msg = x.to_string();
                check(
                    msg.contains("unsupported"),
                    format!("error for an unsupported filter: {msg}"),
                )?;
            }
        }
    }
    Ok(())
}

fn decode_fill(file: &H5File, d: &neurochunk_h5::Dataset) -> J {
    // Decode the fill value as one element of the dataset's type.
    let raw = d.fill_bytes();
    let v = match d.dtype() {
        neurochunk_h5::Datatype::Int {
            signed,
            big_endian,
            size,
        } => {
            let mut b = raw.clone();
            if *big_endian {
                b.reverse();
            }
            b.resize(8, 0);
            let u = u64::from_le_bytes(b.try_into().unwrap());
            if *signed {
                let shift = 64 - 8 * *size as u32;
                neurochunk_h5::Value::Int(((u << shift) as i64) >> shift)
            } else {
                neurochunk_h5::Value::UInt(u)
            }
        }
        neurochunk_h5::Datatype::Float {
            size: 4,
            big_endian: false,
        } => neurochunk_h5::Value::Float(f32::from_le_bytes(raw[..4].try_into().unwrap()) as f64),
        neurochunk_h5::Datatype::Float {
            size: 8,
            big_endian: false,
        } => neurochunk_h5::Value::Float(f64::from_le_bytes(raw[..8].try_into().unwrap())),
        _ => neurochunk_h5::Value::Bytes(raw),
    };
    value_json(file, &v)
}

/// The elements of `slices` cut out of a whole C-ordered array, as a reference.
fn slice_of(whole: &[u8], dims: &[u64], slices: &[neurochunk_h5::Slice], elem: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let counts: Vec<u64> = slices.iter().map(|s| s.count()).collect();
    let total: u64 = counts.iter().product();
    let mut idx = vec![0u64; dims.len()];
    for _ in 0..total {
        let mut lin = 0u64;
        for k in 0..dims.len() {
            lin = lin * dims[k] + slices[k].start + idx[k] * slices[k].step;
        }
        let at = lin as usize * elem;
        out.extend_from_slice(&whole[at..at + elem]);
        for a in (0..idx.len()).rev() {
            idx[a] += 1;
            if idx[a] < counts[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    out
}

#[test]
fn earliest_format() {
    assert!(compare_file("earliest.h5") > 20);
}

#[test]
fn latest_format() {
    assert!(compare_file("latest.h5") > 20);
}

#[test]
fn datatypes_and_references() {
    assert!(compare_file("types.h5") > 20);
}

#[test]
fn plugin_filters() {
    compare_file("plugins.h5");
    let file = open("plugins.h5");
    let exp = expected("plugins.h5");
    let want: Vec<i64> = exp["plugin_values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    for name in ["zstd", "blosc", "lz4", "shuffle_zstd", "gzip_masked"] {
        let Object::Dataset(d) = file.object(name).unwrap() else {
            panic!()
        };
        let got: Vec<i64> = d
            .read_values_all()
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .into_iter()
            .map(|v| match v {
                neurochunk_h5::Value::Int(i) => i,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn user_block() {
    compare_file("userblock.h5");
    assert_eq!(open("userblock.h5").userblock(), 1024);
}

#[test]
fn superblock_1_and_4_byte_offsets() {
    compare_file("sb1_offsets4.h5");
}

#[test]
fn latest_format_with_4_byte_offsets() {
    compare_file("latest_offsets4.h5");
}

#[test]
fn shared_object_header_messages() {
    compare_file("sohm.h5");
}

#[test]
fn tiny() {
    compare_file("tiny.h5");
}

#[test]
fn big() {
    compare_file("big.h5");
}

#[test]
fn pynwb_back_compat_files() {
    for name in [
        "1.5.1_timeseries_no_unit.nwb",
        "2.1.0_nwbfile_with_extension.nwb",
        "2.2.0_subject_no_age__reference.nwb",
    ] {
        assert!(compare_file(name) > 5);
    }
}

#[test]
fn hdf5_1_12_references() {
    compare_file("refs112.h5");
    let file = open("refs112.h5");
    let exp = expected("refs112.h5");
    let Object::Dataset(d) = file.object("/refs").unwrap() else {
        panic!()
    };
    let values = d.read_values_all().unwrap();
    let want = exp["refs"].as_array().unwrap();
    assert_eq!(values.len(), want.len());
    for (v, w) in values.iter().zip(want) {
        match v {
            neurochunk_h5::Value::Reference(None) => assert!(w.is_null()),
            neurochunk_h5::Value::Reference(Some(r)) => {
                assert_eq!(r.path.as_deref(), w["path"].as_str());
                match (&r.target, w["kind"].as_str().unwrap()) {
                    (neurochunk_h5::ReferenceTarget::Object, "object") => {}
                    (neurochunk_h5::ReferenceTarget::Region(sel), "region") => {
                        let pts = sel.points(&[6, 10], 1000).unwrap();
                        assert_eq!(json!(pts), w["points"]);
                    }
                    (neurochunk_h5::ReferenceTarget::Attribute(a), "attribute") => {
                        assert_eq!(a, w["attribute"].as_str().unwrap());
                    }
                    (t, k) => panic!("{t:?} for {k}"),
                }
            }
            other => panic!("{other:?}"),
        }
    }
    let grp = file.root().unwrap().get("grp").unwrap();
    let attr = grp
        .attributes()
        .unwrap()
        .into_iter()
        .find(|a| a.name() == "ref_attr")
        .unwrap();
    let vals = attr.values().unwrap();
    assert_eq!(vals.len(), 2);
}

/// Every file described in `H5_TEST_DATA` (when set): `make_files.py`'s `describe` run on other
/// files (pynwb's whole back-compat set, real NWB files) and gzipped beside them.
#[test]
fn files_named_by_the_environment() {
    if std::env::var_os("H5_TEST_DATA").is_none() {
        return;
    }
    let mut names: Vec<String> = std::fs::read_dir(data_dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".json.gz").map(str::to_string))
        .collect();
    names.sort();
    let mut failed = Vec::new();
    for name in &names {
        let r = std::panic::catch_unwind(|| compare_file(name));
        match r {
            Ok(n) => println!("{name}: {n} objects agree"),
            Err(_) => failed.push(name.clone()),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} files differ: {failed:?}",
        failed.len(),
        names.len()
    );
}
