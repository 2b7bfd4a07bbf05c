//! The pickle writer: a protocol 2 stream of one NumPy array, laid out the way NumPy pickles
//! it (`numpy.core.multiarray._reconstruct(ndarray, (0,), b'b')` then `BUILD` with
//! `(1, shape, dtype, False, data)`), so NumPy 1.x and 2.x both unpickle it. Object elements are
//! plain Python values (str, int, float, bool, None, list, dict); structured dtypes carry their
//! names, fields and offsets like NumPy's own dtype state. No memo is used.

use neurochunk_dtype::json::non_finite_token;
use serde_json::Value;

use crate::{PickleError, RecordField, RecordKind};

/// Deepest JSON nesting written as Python objects.
const MAX_DEPTH: usize = 128;
/// Items per `APPENDS` / `SETITEMS` batch (as CPython writes them).
const BATCH: usize = 1000;
/// NumPy's dtype flags for `O8` (the state's last member).
const OBJECT_FLAGS: i64 = 63;
/// NumPy's dtype flags for a structured dtype with / without object fields.
const RECORD_OBJECT_FLAGS: i64 = 27;
const RECORD_PLAIN_FLAGS: i64 = 16;

fn err(message: impl Into<String>) -> PickleError {
    PickleError::Encode(message.into())
}

/// A numeric field type parsed from its typestr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Numeric {
    kind: char,
    size: usize,
    big_endian: bool,
}

impl Numeric {
    fn parse(typestr: &str) -> Result<Numeric, PickleError> {
        let (big_endian, rest) = match typestr.as_bytes().first() {
            Some(b'>') => (true, &typestr[1..]),
            Some(b'<' | b'|' | b'=') => (false, &typestr[1..]),
            _ => (false, typestr),
        };
        let (kind, size) = match rest {
            "b1" | "?" => ('b', 1),
            "i1" => ('i', 1),
            "i2" => ('i', 2),
            "i4" => ('i', 4),
            "i8" => ('i', 8),
            "u1" => ('u', 1),
            "u2" => ('u', 2),
            "u4" => ('u', 4),
            "u8" => ('u', 8),
            "f2" => ('f', 2),
            "f4" => ('f', 4),
            "f8" => ('f', 8),
            _ => {
                return Err(err(format!(
                    "numeric field type {typestr:?} is not supported (expected kinds b, i, u, f \
                     such as \"<i4\" or \"<f8\")"
                )))
            }
        };
        Ok(Numeric {
            kind,
            size,
            big_endian: big_endian && size > 1,
        })
    }

    /// The dtype constructor string and the state's byte-order character.
    fn spec(self) -> (String, &'static str) {
        let endian = if self.size == 1 {
            "|"
        } else if self.big_endian {
            ">"
        } else {
            "<"
        };
        (format!("{}{}", self.kind, self.size), endian)
    }
}

/// A field of the record being written.
struct Field<'a> {
    name: &'a str,
    numeric: Option<Numeric>,
    offset: usize,
}

struct Writer {
    out: Vec<u8>,
}

impl Writer {
    fn op(&mut self, op: u8) {
        self.out.push(op);
    }

    fn global(&mut self, module: &str, name: &str) {
        self.out.push(b'c');
        self.out.extend_from_slice(module.as_bytes());
        self.out.push(b'\n');
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(b'\n');
    }

    fn int(&mut self, v: i128) {
        if let Ok(b) = u8::try_from(v) {
            self.out.extend_from_slice(&[b'K', b]);
        } else if let Ok(h) = u16::try_from(v) {
            self.out.push(b'M');
            self.out.extend_from_slice(&h.to_le_bytes());
        } else if let Ok(i) = i32::try_from(v) {
            self.out.push(b'J');
            self.out.extend_from_slice(&i.to_le_bytes());
        } else {
            // LONG1: minimal little-endian two's complement.
            let mut bytes = v.to_le_bytes().to_vec();
            while bytes.len() > 1 {
                let last = bytes[bytes.len() - 1];
                let prev = bytes[bytes.len() - 2];
                let redundant =
                    (last == 0x00 && prev & 0x80 == 0) || (last == 0xff && prev & 0x80 != 0);
                if !redundant {
                    break;
                }
                bytes.pop();
            }
            self.out.push(0x8a);
            self.out.push(bytes.len() as u8);
            self.out.extend_from_slice(&bytes);
        }
    }

    fn float(&mut self, x: f64) {
        self.out.push(b'G');
        self.out.extend_from_slice(&x.to_be_bytes());
    }

    fn bool(&mut self, b: bool) {
        self.out.push(if b { 0x88 } else { 0x89 });
    }

    fn str(&mut self, s: &str) -> Result<(), PickleError> {
        let n = u32::try_from(s.len())
            .map_err(|_| err(format!("a string of {} bytes is too long", s.len())))?;
        self.out.push(b'X');
        self.out.extend_from_slice(&n.to_le_bytes());
        self.out.extend_from_slice(s.as_bytes());
        Ok(())
    }

    /// Close a tuple of `n` items written after `MARK` (for `n > 3`) or directly.
    fn tuple_end(&mut self, n: usize) {
        match n {
            1 => self.op(0x85),
            2 => self.op(0x86),
            3 => self.op(0x87),
            _ => self.op(b't'),
        }
    }

    fn tuple_start(&mut self, n: usize) {
        if n == 0 {
            // `MARK` + `TUPLE` would do too; `EMPTY_TUPLE` is what CPython writes.
        } else if n > 3 {
            self.op(b'(');
        }
    }

    fn tuple_empty_or_end(&mut self, n: usize) {
        if n == 0 {
            self.op(b')');
        } else {
            self.tuple_end(n);
        }
    }

    /// `_codecs.encode(text, 'latin1')`: how protocol 2 writes Python 3 `bytes`.
    fn bytes(&mut self, raw: &[u8]) -> Result<(), PickleError> {
        self.global("_codecs", "encode");
        let text: String = raw.iter().map(|&b| char::from(b)).collect();
        self.str(&text)?;
        self.str("latin1")?;
        self.op(0x86);
        self.op(b'R');
        Ok(())
    }

    /// `numpy.dtype(spec, False, True)` with its state.
    fn simple_dtype(&mut self, spec: &str, endian: &str, flags: i64) -> Result<(), PickleError> {
        self.dtype_head(spec)?;
        self.op(b'(');
        self.int(3);
        self.str(endian)?;
        self.op(b'N');
        self.op(b'N');
        self.op(b'N');
        self.int(-1);
        self.int(-1);
        self.int(i128::from(flags));
        self.op(b't');
        self.op(b'b');
        Ok(())
    }

    fn dtype_head(&mut self, spec: &str) -> Result<(), PickleError> {
        self.global("numpy", "dtype");
        self.str(spec)?;
        self.bool(false);
        self.bool(true);
        self.op(0x87);
        self.op(b'R');
        Ok(())
    }

    fn record_dtype(&mut self, fields: &[Field<'_>], size: usize) -> Result<(), PickleError> {
        self.dtype_head(&format!("V{size}"))?;
        self.op(b'(');
        self.int(3);
        self.str("|")?;
        self.op(b'N');
        // names
        self.tuple_start(fields.len());
        for f in fields {
            self.str(f.name)?;
        }
        self.tuple_empty_or_end(fields.len());
        // fields: {name: (dtype, offset)}
        self.op(b'}');
        self.op(b'(');
        for f in fields {
            self.str(f.name)?;
            match f.numeric {
                Some(n) => {
                    let (spec, endian) = n.spec();
                    self.simple_dtype(&spec, endian, 0)?;
                }
                None => self.simple_dtype("O8", "|", OBJECT_FLAGS)?,
            }
            self.int(f.offset as i128);
            self.op(0x86);
        }
        self.op(b'u');
        self.int(size as i128);
        self.int(1);
        let has_object = fields.iter().any(|f| f.numeric.is_none());
        self.int(i128::from(if has_object {
            RECORD_OBJECT_FLAGS
        } else {
            RECORD_PLAIN_FLAGS
        }));
        self.op(b't');
        self.op(b'b');
        Ok(())
    }

    /// A JSON value as a plain Python object.
    fn object(&mut self, v: &Value, depth: usize) -> Result<(), PickleError> {
        if depth >= MAX_DEPTH {
            return Err(err(format!("values nest deeper than {MAX_DEPTH} levels")));
        }
        match v {
            Value::Null => self.op(b'N'),
            Value::Bool(b) => self.bool(*b),
            Value::Number(n) => {
                if let Some(i) = n.as_i64() {
                    self.int(i128::from(i));
                } else if let Some(u) = n.as_u64() {
                    self.int(i128::from(u));
                } else {
                    self.float(n.as_f64().unwrap_or(f64::NAN));
                }
            }
            Value::String(s) => match non_finite_token(s) {
                Some(token) => self.float(non_finite(token)),
                None => self.str(s)?,
            },
            Value::Array(items) => {
                self.op(b']');
                for batch in items.chunks(BATCH) {
                    self.op(b'(');
                    for item in batch {
                        self.object(item, depth + 1)?;
                    }
                    self.op(b'e');
                }
            }
            Value::Object(map) => {
                self.op(b'}');
                let pairs: Vec<(&String, &Value)> = map.iter().collect();
                for batch in pairs.chunks(BATCH) {
                    self.op(b'(');
                    for (k, item) in batch {
                        self.str(k)?;
                        self.object(item, depth + 1)?;
                    }
                    self.op(b'u');
                }
            }
        }
        Ok(())
    }

    /// A numeric field value as a Python bool / int / float (checked against the type).
    fn numeric(&mut self, v: &Value, n: Numeric, field: &str) -> Result<(), PickleError> {
        match number_of(v, n, field)? {
            Num::Bool(b) => self.bool(b),
            Num::Int(i) => self.int(i),
            Num::Float(x) => self.float(x),
        }
        Ok(())
    }
}

fn non_finite(token: &str) -> f64 {
    match token {
        "Infinity" => f64::INFINITY,
        "-Infinity" => f64::NEG_INFINITY,
        _ => f64::NAN,
    }
}

enum Num {
    Bool(bool),
    Int(i128),
    Float(f64),
}

fn number_of(v: &Value, n: Numeric, field: &str) -> Result<Num, PickleError> {
    let wrong = || {
        err(format!(
            "field {field:?} ({}{}): {v} is not a valid value",
            n.kind, n.size
        ))
    };
    match n.kind {
        'b' => match v {
            Value::Bool(b) => Ok(Num::Bool(*b)),
            Value::Number(x) if x.as_u64() == Some(0) || x.as_u64() == Some(1) => {
                Ok(Num::Bool(x.as_u64() == Some(1)))
            }
            _ => Err(wrong()),
        },
        'i' | 'u' => {
            let i = match v {
                Value::Number(x) => x
                    .as_i64()
                    .map(i128::from)
                    .or_else(|| x.as_u64().map(i128::from))
                    .ok_or_else(wrong)?,
                _ => return Err(wrong()),
            };
            let bits = 8 * n.size as u32;
            let (lo, hi) = if n.kind == 'i' {
                (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
            } else {
                (0, (1i128 << bits) - 1)
            };
            if i < lo || i > hi {
                return Err(err(format!(
                    "field {field:?} ({}{}): {i} is out of range {lo}..={hi}",
                    n.kind, n.size
                )));
            }
            Ok(Num::Int(i))
        }
        _ => match v {
            Value::Number(x) => x.as_f64().map(Num::Float).ok_or_else(wrong),
            Value::String(s) => {
                let token = non_finite_token(s).unwrap_or(s.as_str());
                match token {
                    "NaN" | "Infinity" | "-Infinity" => Ok(Num::Float(non_finite(token))),
                    _ => Err(wrong()),
                }
            }
            _ => Err(wrong()),
        },
    }
}

/// The in-memory bytes of a numeric field value (in the field's byte order).
fn pack(num: Num, n: Numeric, out: &mut Vec<u8>) {
    let mut le: Vec<u8> = match num {
        Num::Bool(b) => vec![u8::from(b)],
        Num::Int(i) => i.to_le_bytes()[..n.size].to_vec(),
        Num::Float(x) => match n.size {
            2 => half::f16::from_f64(x).to_le_bytes().to_vec(),
            4 => (x as f32).to_le_bytes().to_vec(),
            _ => x.to_le_bytes().to_vec(),
        },
    };
    if n.big_endian {
        le.reverse();
    }
    out.extend_from_slice(&le);
}

fn element_count(shape: &[usize], items: usize) -> Result<(), PickleError> {
    let count = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| err(format!("shape {shape:?} overflows")))?;
    if count != items {
        return Err(err(format!(
            "{items} items for shape {shape:?} ({count} elements)"
        )));
    }
    Ok(())
}

/// Everything up to the array state's dtype: `_reconstruct(ndarray, (0,), b'b')`, `MARK`,
/// the version and the shape.
fn head(w: &mut Writer, shape: &[usize]) -> Result<(), PickleError> {
    w.out.extend_from_slice(&[0x80, 2]);
    w.global("numpy.core.multiarray", "_reconstruct");
    w.global("numpy", "ndarray");
    w.int(0);
    w.op(0x85);
    w.bytes(b"b")?;
    w.op(0x87);
    w.op(b'R');
    w.op(b'(');
    w.int(1);
    w.tuple_start(shape.len());
    for &d in shape {
        w.int(d as i128);
    }
    w.tuple_empty_or_end(shape.len());
    Ok(())
}

/// After the data: close the state tuple, `BUILD`, `STOP`.
fn tail(w: &mut Writer) {
    w.op(b't');
    w.op(b'b');
    w.op(b'.');
}

/// Pickle an object ndarray of the given shape (protocol 2; NumPy 1.x and 2.x read it).
///
/// Without `record` the dtype is `|O` and each item becomes a Python object: strings → `str`
/// (a non-finite marker string from [`neurochunk_dtype::json::non_finite_value`] → `float`),
/// integers → `int`, other numbers → `float`, `null` → `None`, arrays → `list`, objects →
/// `dict`. With `record` the array has that structured dtype (numeric fields and `|O` fields,
/// packed in order) and each item must be a JSON object keyed by field name or an array in
/// field order; numeric fields are checked against their type.
pub fn encode_object_array(
    shape: &[usize],
    items: &[Value],
    record: Option<&[RecordField]>,
) -> Result<Vec<u8>, PickleError> {
    element_count(shape, items.len())?;
    let mut w = Writer {
        out: Vec::with_capacity(128 + 16 * items.len()),
    };
    head(&mut w, shape)?;
    match record {
        None => {
            w.simple_dtype("O8", "|", OBJECT_FLAGS)?;
            w.bool(false);
            w.op(b']');
            for batch in items.chunks(BATCH) {
                w.op(b'(');
                for item in batch {
                    w.object(item, 0)?;
                }
                w.op(b'e');
            }
        }
        Some(record) => write_record(&mut w, items, record)?,
    }
    tail(&mut w);
    Ok(w.out)
}

fn write_record(
    w: &mut Writer,
    items: &[Value],
    record: &[RecordField],
) -> Result<(), PickleError> {
    if record.is_empty() {
        return Err(err("a structured dtype needs at least one field"));
    }
    let mut fields = Vec::with_capacity(record.len());
    let mut offset = 0usize;
    for f in record {
        if f.name.is_empty() || fields.iter().any(|g: &Field<'_>| g.name == f.name) {
            return Err(err(format!(
                "field name {:?} is empty or appears twice",
                f.name
            )));
        }
        let numeric = match &f.kind {
            RecordKind::Numeric(typestr) => Some(Numeric::parse(typestr)?),
            RecordKind::Object => None,
        };
        fields.push(Field {
            name: &f.name,
            numeric,
            offset,
        });
        offset += numeric.map_or(8, |n| n.size);
    }
    let size = offset;
    w.record_dtype(&fields, size)?;
    w.bool(false);
    // The values of each item, in field order.
    let values = |i: usize, item: &'_ Value| -> Result<Vec<Value>, PickleError> {
        match item {
            Value::Object(map) => {
                if let Some(extra) = map.keys().find(|k| !fields.iter().any(|f| f.name == *k)) {
                    return Err(err(format!("item {i}: no field is named {extra:?}")));
                }
                fields
                    .iter()
                    .map(|f| {
                        map.get(f.name)
                            .cloned()
                            .ok_or_else(|| err(format!("item {i}: field {:?} is missing", f.name)))
                    })
                    .collect()
            }
            Value::Array(list) if list.len() == fields.len() => Ok(list.clone()),
            other => Err(err(format!(
                "item {i}: expected an object keyed by field name or a list of {} values, \
                 found {other}",
                fields.len()
            ))),
        }
    };
    if fields.iter().any(|f| f.numeric.is_none()) {
        // Object fields: NumPy pickles the elements as a list of tuples.
        w.op(b']');
        for (b, batch) in items.chunks(BATCH).enumerate() {
            w.op(b'(');
            for (j, item) in batch.iter().enumerate() {
                let vals = values(b * BATCH + j, item)?;
                w.tuple_start(fields.len());
                for (f, v) in fields.iter().zip(&vals) {
                    match f.numeric {
                        Some(n) => w.numeric(v, n, f.name)?,
                        None => w.object(v, 0)?,
                    }
                }
                w.tuple_empty_or_end(fields.len());
            }
            w.op(b'e');
        }
    } else {
        // Only numeric fields: the raw element bytes.
        let mut raw = Vec::with_capacity(size.saturating_mul(items.len()));
        for (i, item) in items.iter().enumerate() {
            let vals = values(i, item)?;
            for (f, v) in fields.iter().zip(&vals) {
                if let Some(n) = f.numeric {
                    pack(number_of(v, n, f.name)?, n, &mut raw);
                }
            }
        }
        w.bytes(&raw)?;
    }
    Ok(())
}

/// Pickle texts as the Python `str` elements of an `|O` array of `shape` (protocol 2, C order;
/// NumPy 1.x and 2.x read it). Unlike [`encode_object_array`], every text stays a `str`: a
/// non-finite marker string is not written as a float.
pub fn encode_text_array<'a>(
    shape: &[usize],
    texts: impl ExactSizeIterator<Item = &'a str>,
) -> Result<Vec<u8>, PickleError> {
    element_count(shape, texts.len())?;
    let mut w = Writer {
        out: Vec::with_capacity(128 + 16 * texts.len()),
    };
    head(&mut w, shape)?;
    w.simple_dtype("O8", "|", OBJECT_FLAGS)?;
    w.bool(false);
    w.op(b']');
    let mut in_batch = 0;
    for text in texts {
        if in_batch == 0 {
            w.op(b'(');
        }
        w.str(text)?;
        in_batch += 1;
        if in_batch == BATCH {
            w.op(b'e');
            in_batch = 0;
        }
    }
    if in_batch > 0 {
        w.op(b'e');
    }
    tail(&mut w);
    Ok(w.out)
}
