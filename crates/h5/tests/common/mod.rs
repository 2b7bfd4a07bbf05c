//! Helpers of the integration tests: the test files (stored gzipped) and their expected
//! contents (JSON written by `tests/data/make_files.py` from what h5py reads).

#![allow(dead_code)]

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;

use neurochunk_h5::{Charset, Datatype, H5File, Padding, ReferenceTarget, Selection, Value};
use neurochunk_store::{Bytes, MemoryStore, Store};
use serde_json::{json, Value as J};

/// The test files: `tests/data`, or the directory `H5_TEST_DATA` names (files described by
/// `make_files.py`'s `describe`, for comparisons beyond the committed ones).
pub fn data_dir() -> PathBuf {
    match std::env::var_os("H5_TEST_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data"),
    }
}

/// The bytes of a test file (`name` without `.gz`).
pub fn file_bytes(name: &str) -> Vec<u8> {
    let dir = data_dir();
    let plain = dir.join(name);
    if plain.exists() {
        return std::fs::read(plain).unwrap();
    }
    let gz = std::fs::read(dir.join(format!("{name}.gz"))).unwrap();
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut out)
        .unwrap();
    out
}

/// The expected contents of a test file.
pub fn expected(name: &str) -> J {
    let gz = std::fs::read(data_dir().join(format!("{name}.json.gz"))).unwrap();
    let mut out = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut out)
        .unwrap();
    serde_json::from_str(&out).unwrap()
}

/// A memory store holding `name` under the key `name`.
pub fn store_with(name: &str) -> Arc<MemoryStore> {
    let store = MemoryStore::new();
    store.set(name, Bytes::from(file_bytes(name))).unwrap();
    Arc::new(store)
}

pub fn open(name: &str) -> H5File {
    H5File::open(store_with(name), name, name).unwrap()
}

fn cset(c: Charset) -> &'static str {
    match c {
        Charset::Ascii => "ascii",
        Charset::Utf8 => "utf8",
    }
}

fn pad(p: Padding) -> &'static str {
    match p {
        Padding::NullTerm => "nullterm",
        Padding::NullPad => "nullpad",
        Padding::SpacePad => "spacepad",
    }
}

/// A datatype as the generator describes it.
pub fn dtype_json(t: &Datatype) -> J {
    match t {
        Datatype::Int {
            size,
            signed,
            big_endian,
        } => {
            json!({"class": "int", "size": size, "signed": signed, "be": big_endian})
        }
        Datatype::Float { size, big_endian } => {
            json!({"class": "float", "size": size, "be": big_endian})
        }
        Datatype::Bool => json!({"class": "bool"}),
        Datatype::Enum { base, members } => json!({
            "class": "enum", "base": dtype_json(base),
            "members": members.iter().map(|m| json!([m.name, m.value as i64])).collect::<Vec<_>>()
        }),
        Datatype::FixedString {
            size,
            charset,
            padding,
        } => {
            json!({"class": "str", "size": size, "cset": cset(*charset), "pad": pad(*padding)})
        }
        Datatype::VlenString {
            charset, padding, ..
        } => {
            json!({"class": "vstr", "cset": cset(*charset), "pad": pad(*padding)})
        }
        Datatype::ObjectRef { .. } => json!({"class": "objref"}),
        Datatype::RegionRef { .. } => json!({"class": "regref"}),
        Datatype::Reference { .. } => json!({"class": "ref2"}),
        Datatype::Compound { size, fields } => json!({
            "class": "compound", "size": size,
            "fields": fields.iter().map(|f| json!([f.name, f.offset, dtype_json(&f.dtype)])).collect::<Vec<_>>()
        }),
        Datatype::Array { dims, base } => {
            json!({"class": "array", "dims": dims, "base": dtype_json(base)})
        }
        Datatype::VlenSequence { base, .. } => json!({"class": "vlen", "base": dtype_json(base)}),
        Datatype::Opaque { size, tag } => json!({"class": "opaque", "size": size, "tag": tag}),
        Datatype::Bitfield { size, big_endian } => {
            json!({"class": "bitfield", "size": size, "be": big_endian})
        }
        Datatype::Complex { size, base } => {
            json!({"class": "complex", "size": size, "base": dtype_json(base)})
        }
        Datatype::Time { .. } => json!({"class": "other:2"}),
        Datatype::Other { class, .. } => json!({"class": format!("other:{class}")}),
        _ => json!({"class": "unknown"}),
    }
}

fn float_json(v: f64) -> J {
    if v.is_nan() {
        json!("nan")
    } else if v.is_infinite() {
        json!(if v > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(v)
    }
}

/// A selection as the generator describes it (`dims`: the target dataset's shape).
pub fn selection_json(s: &Selection, dims: &[u64]) -> J {
    match s {
        Selection::None => json!({"type": "none", "points": []}),
        Selection::All => json!({"type": "all", "dims": dims}),
        Selection::Points(p) => json!({"type": "points", "points": p}),
        Selection::Regular(r) => json!({
            "type": "hyperslab",
            "points": s.points(dims, 1 << 20).unwrap(),
            "regular": [
                r.iter().map(|d| d.start).collect::<Vec<_>>(),
                r.iter().map(|d| d.stride).collect::<Vec<_>>(),
                r.iter().map(|d| d.count).collect::<Vec<_>>(),
                r.iter().map(|d| d.block).collect::<Vec<_>>(),
            ]
        }),
        _ => json!({"type": "hyperslab", "points": s.points(dims, 1 << 20).unwrap()}),
    }
}

/// A value as the generator describes it.
pub fn value_json(file: &H5File, v: &Value) -> J {
    match v {
        Value::Int(i) => json!(i),
        Value::UInt(u) => json!(u),
        Value::Float(f) => float_json(*f),
        Value::Bool(b) => json!(b),
        Value::Text(t) => json!(t),
        Value::Bytes(b) => json!({"hex": b.iter().map(|x| format!("{x:02x}")).collect::<String>()}),
        Value::Reference(None) => json!({"ref": null}),
        Value::Reference(Some(r)) => match &r.target {
            ReferenceTarget::Object => json!({"ref": r.path}),
            ReferenceTarget::Region(sel) => {
                let dims = match r.path.as_deref().map(|p| file.object(p)) {
                    Some(Ok(neurochunk_h5::Object::Dataset(d))) => d.shape().to_vec(),
                    _ => Vec::new(),
                };
                json!({"ref": r.path, "sel": selection_json(sel, &dims)})
            }
            ReferenceTarget::Attribute(a) => json!({"ref": r.path, "attribute": a}),
        },
        Value::Compound(fields) => json!({
            "fields": fields.iter().map(|(n, v)| json!([n, value_json(file, v)])).collect::<Vec<_>>()
        }),
        Value::Array(items) | Value::Sequence(items) => {
            J::Array(items.iter().map(|v| value_json(file, v)).collect())
        }
        Value::Complex(re, im) => json!({"complex": [float_json(*re), float_json(*im)]}),
    }
}

/// A value with every nested value rebuilt (a hook for keys a reader cannot reproduce; none
/// today: even the regularity of selections matches the library's).
pub fn strip(mut v: J) -> J {
    match &mut v {
        J::Object(map) => {
            for (_, x) in map.iter_mut() {
                *x = strip(x.take());
            }
        }
        J::Array(items) => {
            for x in items.iter_mut() {
                *x = strip(x.take());
            }
        }
        _ => {}
    }
    v
}

/// A datatype description without the sizes and offsets of compounds holding variable-length
/// members: h5py describes those in memory layout (pointers), the file stores heap IDs.
pub fn dtype_norm(v: &J) -> J {
    fn has_vlen(v: &J) -> bool {
        match v {
            J::Object(m) => {
                matches!(
                    m.get("class").and_then(|c| c.as_str()),
                    Some("vstr") | Some("vlen")
                ) || m.values().any(has_vlen)
            }
            J::Array(a) => a.iter().any(has_vlen),
            _ => false,
        }
    }
    match v {
        J::Object(m) => {
            let mut m = m.clone();
            let compound = m.get("class").and_then(|c| c.as_str()) == Some("compound");
            if compound && has_vlen(v) {
                m.remove("size");
                if let Some(J::Array(fields)) = m.get_mut("fields") {
                    for f in fields.iter_mut() {
                        if let J::Array(parts) = f {
                            if parts.len() == 3 {
                                parts[1] = J::Null;
                            }
                        }
                    }
                }
            }
            for (_, x) in m.iter_mut() {
                *x = dtype_norm(x);
            }
            J::Object(m)
        }
        J::Array(a) => J::Array(a.iter().map(dtype_norm).collect()),
        other => other.clone(),
    }
}
