//! Decoded element values: numbers in native form, strings, references resolved to paths and
//! selections, compounds, arrays and variable-length sequences.

use crate::cursor::{le_uint, Cursor};
use crate::datatype::{Charset, Datatype, Padding, ReferenceKind};
use crate::error::{corrupt, too_large, H5Result};
use crate::file::Inner;
use crate::selection::{parse_selection, Selection};

/// What a reference points at.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReferenceTarget {
    /// The object itself.
    Object,
    /// A selection of a dataset's elements.
    Region(Selection),
    /// An attribute of the object, by name.
    Attribute(String),
}

/// A decoded (non-null) reference.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Reference {
    /// The address of the referenced object's header (its identity in its file).
    pub address: u64,
    /// Its path in this file (the first found walking the hierarchy by name, as the HDF5
    /// library reports it), `None` when no link leads to it or it is in another file.
    pub path: Option<String>,
    /// The file it is in, for HDF5 1.12 references to another file.
    pub file: Option<String>,
    /// What in the object it points at.
    pub target: ReferenceTarget,
}

/// One decoded element.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A signed integer (also enumerations of signed base type).
    Int(i64),
    /// An unsigned integer (also enumerations of unsigned base type and bit fields).
    UInt(u64),
    /// A floating-point number (f16 and f32 widened exactly).
    Float(f64),
    /// A boolean (h5py's boolean enumeration).
    Bool(bool),
    /// A string (fixed or variable length; invalid UTF-8 replaced).
    Text(String),
    /// Uninterpreted bytes (opaque types, integers wider than 8 bytes, types this reader does
    /// not interpret).
    Bytes(Vec<u8>),
    /// A reference (`None`: the null reference).
    Reference(Option<Box<Reference>>),
    /// A compound element: its fields by name, in order.
    Compound(Vec<(String, Value)>),
    /// An element of an array type: its elements in C order.
    Array(Vec<Value>),
    /// A variable-length sequence.
    Sequence(Vec<Value>),
    /// A complex number: real and imaginary parts.
    Complex(f64, f64),
}

/// Most elements of one variable-length sequence.
const MAX_SEQUENCE: u64 = 1 << 28;

/// Decode `count` elements of `dtype` from `raw`.
pub(crate) fn decode_elements(
    f: &Inner,
    dtype: &Datatype,
    raw: &[u8],
    count: usize,
) -> H5Result<Vec<Value>> {
    let size = dtype.size();
    if size == 0 {
        return Ok(vec![Value::Bytes(Vec::new()); count]);
    }
    if raw.len() / size < count {
        return Err(corrupt(
            "data",
            None,
            format!(
                "{} bytes hold fewer than {count} elements of {size} bytes",
                raw.len()
            ),
        ));
    }
    if dtype.has_heap_data() {
        // Fetch the global heap collections the elements point into, in one batch.
        let mut addrs = std::collections::BTreeSet::new();
        let mut one = Vec::new();
        for i in 0..count {
            heap_addrs(f, dtype, &raw[i * size..(i + 1) * size], &mut one);
            addrs.extend(one.drain(..));
        }
        let spans: Vec<(u64, u64)> = addrs.iter().map(|&a| (a, 4096)).collect();
        f.prefetch(&spans)?;
    }
    (0..count)
        .map(|i| decode_one(f, dtype, &raw[i * size..(i + 1) * size], 0))
        .collect()
}

/// The global heap collections an element of `dtype` points into (first level only).
fn heap_addrs(f: &Inner, dtype: &Datatype, b: &[u8], out: &mut Vec<u64>) {
    let o = f.sizes.offset as usize;
    let at = |skip: usize| -> Option<u64> {
        let a = le_uint(b.get(skip..skip + o)?);
        (a != 0 && !crate::cursor::is_undefined(a, o)).then_some(a)
    };
    match dtype {
        Datatype::VlenString { .. } | Datatype::VlenSequence { .. } => out.extend(at(4)),
        Datatype::RegionRef { .. } => out.extend(at(0)),
        Datatype::Reference { .. } if b.first().is_some_and(|&t| t > 2) => out.extend(at(6)),
        Datatype::Compound { fields, .. } => {
            for field in fields {
                if field.dtype.has_heap_data() {
                    if let Some(part) = b.get(field.offset..field.offset + field.dtype.size()) {
                        heap_addrs(f, &field.dtype, part, out);
                    }
                }
            }
        }
        Datatype::Array { base, .. } => {
            let n = base.size();
            if n > 0 {
                for part in b.chunks_exact(n) {
                    heap_addrs(f, base, part, out);
                }
            }
        }
        _ => {}
    }
}

fn int_value(b: &[u8], signed: bool, big_endian: bool) -> Value {
    if b.len() > 8 {
        return Value::Bytes(b.to_vec());
    }
    let mut le = [0u8; 8];
    for (i, &x) in b.iter().enumerate() {
        le[if big_endian { b.len() - 1 - i } else { i }] = x;
    }
    let v = u64::from_le_bytes(le);
    if signed {
        let n = b.len();
        if n == 0 {
            return Value::Int(0);
        }
        let shift = 64 - 8 * n as u32;
        Value::Int(((v << shift) as i64) >> shift)
    } else {
        Value::UInt(v)
    }
}

fn float_value(b: &[u8], big_endian: bool) -> Option<f64> {
    let mut le = b.to_vec();
    if big_endian {
        le.reverse();
    }
    Some(match le.len() {
        2 => f16_to_f64(u16::from_le_bytes([le[0], le[1]])),
        4 => f64::from(f32::from_le_bytes([le[0], le[1], le[2], le[3]])),
        8 => f64::from_le_bytes([le[0], le[1], le[2], le[3], le[4], le[5], le[6], le[7]]),
        _ => return None,
    })
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The text of a string's bytes, by its padding rule.
pub(crate) fn text(b: &[u8], padding: Padding, _charset: Charset) -> String {
    let b = match padding {
        Padding::NullTerm => &b[..b.iter().position(|&x| x == 0).unwrap_or(b.len())],
        Padding::NullPad => {
            let end = b.iter().rposition(|&x| x != 0).map_or(0, |p| p + 1);
            &b[..end]
        }
        Padding::SpacePad => {
            let b = &b[..b.iter().position(|&x| x == 0).unwrap_or(b.len())];
            let end = b.iter().rposition(|&x| x != b' ').map_or(0, |p| p + 1);
            &b[..end]
        }
    };
    String::from_utf8_lossy(b).into_owned()
}

fn decode_one(f: &Inner, dtype: &Datatype, b: &[u8], depth: u32) -> H5Result<Value> {
    if depth > 16 {
        return Err(corrupt("data", None, "values nested too deeply"));
    }
    Ok(match dtype {
        Datatype::Int {
            signed, big_endian, ..
        } => int_value(b, *signed, *big_endian),
        Datatype::Float { big_endian, .. } => match float_value(b, *big_endian) {
            Some(v) => Value::Float(v),
            None => Value::Bytes(b.to_vec()),
        },
        Datatype::Bool => Value::Bool(b.first().is_some_and(|&x| x != 0)),
        Datatype::Enum { base, .. } => decode_one(f, base, b, depth + 1)?,
        Datatype::Bitfield { big_endian, .. } | Datatype::Time { big_endian, .. } => {
            int_value(b, false, *big_endian)
        }
        Datatype::FixedString {
            padding, charset, ..
        } => Value::Text(text(b, *padding, *charset)),
        Datatype::VlenString {
            padding, charset, ..
        } => {
            let bytes = vlen_bytes(f, b, 1)?;
            Value::Text(text(&bytes, *padding, *charset))
        }
        Datatype::VlenSequence { base, .. } => {
            let esize = base.size();
            let n = le_uint(&b[..4.min(b.len())]);
            let bytes = vlen_bytes(f, b, esize)?;
            let n = n as usize;
            let mut out = Vec::with_capacity(n.min(bytes.len() / esize.max(1) + 1));
            for i in 0..n {
                let part = bytes.get(i * esize..(i + 1) * esize).ok_or_else(|| {
                    corrupt("global heap object", None, "shorter than its sequence")
                })?;
                out.push(decode_one(f, base, part, depth + 1)?);
            }
            Value::Sequence(out)
        }
        Datatype::ObjectRef { .. } => {
            let addr = le_uint(b);
            if addr == 0 || crate::cursor::is_undefined(addr, b.len()) {
                Value::Reference(None)
            } else {
                Value::Reference(Some(Box::new(Reference {
                    address: addr,
                    path: f.path_of(addr)?,
                    file: None,
                    target: ReferenceTarget::Object,
                })))
            }
        }
        Datatype::RegionRef { .. } => region_v1(f, b)?,
        Datatype::Reference { .. } => reference_v2(f, b)?,
        Datatype::Compound { fields, .. } => {
            let mut out = Vec::with_capacity(fields.len());
            for field in fields {
                let part = b
                    .get(field.offset..field.offset + field.dtype.size())
                    .ok_or_else(|| {
                        corrupt(
                            "data",
                            None,
                            format!("field '{}' out of its element", field.name),
                        )
                    })?;
                out.push((
                    field.name.clone(),
                    decode_one(f, &field.dtype, part, depth + 1)?,
                ));
            }
            Value::Compound(out)
        }
        Datatype::Array { base, .. } => {
            let esize = base.size();
            if esize == 0 {
                return Ok(Value::Array(Vec::new()));
            }
            let mut out = Vec::with_capacity(b.len() / esize);
            for part in b.chunks_exact(esize) {
                out.push(decode_one(f, base, part, depth + 1)?);
            }
            Value::Array(out)
        }
        Datatype::Complex { base, .. } => {
            let half = b.len() / 2;
            let big = matches!(
                **base,
                Datatype::Float {
                    big_endian: true,
                    ..
                }
            );
            match (float_value(&b[..half], big), float_value(&b[half..], big)) {
                (Some(re), Some(im)) => Value::Complex(re, im),
                _ => Value::Bytes(b.to_vec()),
            }
        }
        Datatype::Opaque { .. } | Datatype::Other { .. } => Value::Bytes(b.to_vec()),
    })
}

/// The bytes of a variable-length element (length, global heap ID): `length * elem` bytes of
/// the heap object.
fn vlen_bytes(f: &Inner, b: &[u8], elem: usize) -> H5Result<Vec<u8>> {
    let o = f.sizes.offset as usize;
    let mut c = f.cursor(b, "variable-length element", 0);
    let n = u64::from(c.u32()?);
    let addr = c.addr()?;
    let index = c.u32()?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let _ = o;
    let Some(addr) = addr.filter(|&a| a != 0) else {
        return Ok(Vec::new());
    };
    if n > MAX_SEQUENCE {
        return Err(too_large(format!("a variable-length element of {n} items")));
    }
    let obj = f.global_heap_object(addr, index)?;
    let want = (n as usize).saturating_mul(elem.max(1));
    if obj.len() < want {
        return Err(corrupt(
            "global heap object",
            Some(addr),
            format!(
                "object {index} has {} bytes, the element needs {want}",
                obj.len()
            ),
        ));
    }
    Ok(obj[..want].to_vec())
}

/// A version 1 region reference: a global heap ID of the object address and selection.
fn region_v1(f: &Inner, b: &[u8]) -> H5Result<Value> {
    let mut c = f.cursor(b, "region reference", 0);
    let addr = c.addr()?;
    let index = c.u32()?;
    let Some(addr) = addr.filter(|&a| a != 0) else {
        return Ok(Value::Reference(None));
    };
    let obj = f.global_heap_object(addr, index)?;
    let mut c = f.cursor(&obj, "region reference heap object", addr);
    let target = c.addr_required("referenced object address")?;
    let selection = parse_selection(&mut c)?;
    Ok(Value::Reference(Some(Box::new(Reference {
        address: target,
        path: f.path_of(target)?,
        file: None,
        target: ReferenceTarget::Region(selection),
    }))))
}

/// An HDF5 1.12 reference: a header (type, flags), then either the encoded object token
/// (objects in this file) or a blob size and a global heap ID of the encoded reference.
fn reference_v2(f: &Inner, b: &[u8]) -> H5Result<Value> {
    let mut c = f.cursor(b, "reference", 0);
    let rtype = c.u8()?;
    let flags = c.u8()?;
    if rtype == 0 {
        return Ok(Value::Reference(None));
    }
    let kind = match rtype {
        2 => ReferenceKind::Object,
        3 => ReferenceKind::Region,
        4 => ReferenceKind::Attribute,
        t => return Err(c.err(format!("reference type {t}"))),
    };
    let external = flags & 0x01 != 0;
    let blob;
    let mut r = if kind == ReferenceKind::Object && !external {
        blob = b[2..].to_vec();
        Cursor::new(&blob, "reference", None, f.sizes)
    } else {
        let _size = c.u32()?;
        let addr = c.addr()?;
        let index = c.u32()?;
        let Some(addr) = addr.filter(|&a| a != 0) else {
            return Ok(Value::Reference(None));
        };
        blob = f.global_heap_object(addr, index)?.to_vec();
        Cursor::new(&blob, "reference heap object", Some(addr), f.sizes)
    };
    let token_size = r.u8()? as usize;
    let token = r.bytes(token_size)?;
    let address = le_uint(&token[..token.len().min(8)]);
    let file = if external {
        let n = r.u16()? as usize;
        Some(String::from_utf8_lossy(r.bytes(n)?).into_owned())
    } else {
        None
    };
    let target = match kind {
        ReferenceKind::Object => ReferenceTarget::Object,
        ReferenceKind::Region => {
            let _size = r.u32()?;
            let _rank = r.u32()?;
            ReferenceTarget::Region(parse_selection(&mut r)?)
        }
        ReferenceKind::Attribute => {
            let n = r.u16()? as usize;
            ReferenceTarget::Attribute(String::from_utf8_lossy(r.bytes(n)?).into_owned())
        }
    };
    let path = if file.is_none() {
        f.path_of(address)?
    } else {
        None
    };
    Ok(Value::Reference(Some(Box::new(Reference {
        address,
        path,
        file,
        target,
    }))))
}

/// Convert raw elements of `dtype` to native byte order in place (numbers, also inside
/// compounds and arrays; other bytes are left as they are).
pub(crate) fn to_native(dtype: &Datatype, raw: &mut [u8]) {
    let size = dtype.size();
    if size == 0 || !needs_swap(dtype) {
        return;
    }
    for elem in raw.chunks_exact_mut(size) {
        swap_one(dtype, elem);
    }
}

fn needs_swap(dtype: &Datatype) -> bool {
    let native_big = cfg!(target_endian = "big");
    match dtype {
        Datatype::Int { big_endian, .. }
        | Datatype::Float { big_endian, .. }
        | Datatype::Bitfield { big_endian, .. }
        | Datatype::Time { big_endian, .. } => *big_endian != native_big,
        Datatype::Enum { base, .. }
        | Datatype::Array { base, .. }
        | Datatype::Complex { base, .. } => needs_swap(base),
        Datatype::Compound { fields, .. } => fields.iter().any(|f| needs_swap(&f.dtype)),
        _ => false,
    }
}

fn swap_one(dtype: &Datatype, b: &mut [u8]) {
    let native_big = cfg!(target_endian = "big");
    match dtype {
        Datatype::Int { big_endian, .. }
        | Datatype::Float { big_endian, .. }
        | Datatype::Bitfield { big_endian, .. }
        | Datatype::Time { big_endian, .. }
            if *big_endian != native_big =>
        {
            b.reverse();
        }
        Datatype::Enum { base, .. } => swap_one(base, b),
        Datatype::Array { base, .. } => {
            let n = base.size();
            if n > 0 {
                for part in b.chunks_exact_mut(n) {
                    swap_one(base, part);
                }
            }
        }
        Datatype::Complex { base, .. } => {
            let half = b.len() / 2;
            let (re, im) = b.split_at_mut(half);
            swap_one(base, re);
            swap_one(base, im);
        }
        Datatype::Compound { fields, .. } => {
            for field in fields {
                let end = field.offset + field.dtype.size();
                if let Some(part) = b.get_mut(field.offset..end) {
                    swap_one(&field.dtype, part);
                }
            }
        }
        _ => {}
    }
}
