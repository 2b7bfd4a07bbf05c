//! NumPy `.npy` files: read (format versions 1.0, 2.0, 3.0) and write (1.0 when the header
//! fits, else 2.0, or 3.0 for non-Latin-1 field names) with exactly NumPy's header layout, so
//! arrays can be exchanged with NumPy and test fixtures (numcodecs ships `.npy` arrays).
//! Data is handed over as packed, C-ordered, little-endian element bytes.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde_json::Value;

use crate::fill::utf32_from_str;
use crate::json::python_float_repr;
use crate::v2::{descr_json, parse_descr};
use crate::{DataType, DtypeError, Endian};

const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Data starts on a multiple of this many bytes.
const ARRAY_ALIGN: usize = 64;
/// NumPy leaves room for the growth axis to reach this many digits.
const GROWTH_AXIS_MAX_DIGITS: usize = 21;
/// Headers longer than this are refused (NumPy's own default limit is 10 000).
const MAX_HEADER_LEN: usize = 1 << 20;
const FORMAT: &str = "NumPy .npy";

/// What the header of a `.npy` file says.
#[derive(Clone, Debug, PartialEq)]
pub struct NpyHeader {
    /// Element type of the stored array.
    pub data_type: DataType,
    /// Byte order of the stored data (`None` for single-byte types and structured types,
    /// whose fields carry their own).
    pub endian: Option<Endian>,
    /// Array shape (empty for a 0-d array).
    pub shape: Vec<usize>,
    /// Data stored column-major (first index fastest).
    pub fortran_order: bool,
}

impl NpyHeader {
    /// Number of data bytes that follow the header.
    pub fn data_len(&self) -> Result<usize, DtypeError> {
        let size = self
            .data_type
            .fixed_size()
            .ok_or_else(|| variable_length_error(&self.data_type))?;
        self.shape
            .iter()
            .try_fold(size, |acc, d| acc.checked_mul(*d))
            .ok_or_else(|| DtypeError::npy(format!("shape {:?} is too large", self.shape)))
    }
}

fn variable_length_error(data_type: &DataType) -> DtypeError {
    DtypeError::npy(format!(
        "variable-length type {data_type} cannot be stored in .npy; convert it to fixed width \
         (`<U`/`|S`) first, e.g. with fixed_width_for_npy"
    ))
}

/// Read the magic, version and header of a `.npy` stream, leaving `reader` at the first data
/// byte.
pub fn read_npy_header(reader: &mut impl Read) -> Result<NpyHeader, DtypeError> {
    let mut prefix = [0u8; 8];
    read_exactly(reader, &mut prefix, "the 8-byte magic and version")?;
    if &prefix[..6] != MAGIC {
        return Err(DtypeError::npy(
            "not a .npy file: it does not start with the magic \\x93NUMPY",
        ));
    }
    let (major, minor) = (prefix[6], prefix[7]);
    let header_len = match major {
        1 => {
            let mut len = [0u8; 2];
            read_exactly(reader, &mut len, "the header length")?;
            usize::from(u16::from_le_bytes(len))
        }
        2 | 3 => {
            let mut len = [0u8; 4];
            read_exactly(reader, &mut len, "the header length")?;
            usize::try_from(u32::from_le_bytes(len)).unwrap_or(usize::MAX)
        }
        _ => {
            return Err(DtypeError::npy(format!(
                "unsupported format version {major}.{minor}; expected 1.0, 2.0 or 3.0"
            )))
        }
    };
    if header_len > MAX_HEADER_LEN {
        return Err(DtypeError::npy(format!(
            "the header claims {header_len} bytes; at most {MAX_HEADER_LEN} are accepted"
        )));
    }
    let mut raw = Vec::with_capacity(header_len);
    reader
        .take(header_len as u64)
        .read_to_end(&mut raw)
        .map_err(|e| DtypeError::io("reading the .npy header", e))?;
    if raw.len() < header_len {
        return Err(DtypeError::npy(format!(
            "truncated header: expected {header_len} bytes, found {}",
            raw.len()
        )));
    }
    let text: String = if major == 3 {
        String::from_utf8(raw).map_err(|_| DtypeError::npy("a version 3.0 header must be UTF-8"))?
    } else {
        raw.iter().map(|b| char::from(*b)).collect()
    };
    parse_header_text(&text)
}

fn read_exactly(reader: &mut impl Read, buf: &mut [u8], what: &str) -> Result<(), DtypeError> {
    reader.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            DtypeError::npy(format!("truncated header: the file ends before {what}"))
        } else {
            DtypeError::io("reading the .npy header", e)
        }
    })
}

fn parse_header_text(text: &str) -> Result<NpyHeader, DtypeError> {
    let bad = |reason: String| DtypeError::npy(format!("header {:?}: {reason}", text.trim_end()));
    let mut parser = LiteralParser { rest: text };
    let dict = parser.value(0).map_err(bad)?;
    if !parser.rest.trim().is_empty() {
        return Err(bad("unexpected text after the header dictionary".into()));
    }
    let PyLiteral::Dict(entries) = dict else {
        return Err(bad("expected a dictionary".into()));
    };
    let (mut descr, mut fortran_order, mut shape) = (None, None, None);
    for (key, value) in entries {
        match key {
            PyLiteral::Str(k) if k == "descr" => descr = Some(value),
            PyLiteral::Str(k) if k == "fortran_order" => fortran_order = Some(value),
            PyLiteral::Str(k) if k == "shape" => shape = Some(value),
            other => return Err(bad(format!("unexpected key {}", other.describe()))),
        }
    }
    let (Some(descr), Some(fortran_order), Some(shape)) = (descr, fortran_order, shape) else {
        return Err(bad(
            "expected the keys 'descr', 'fortran_order' and 'shape'".into(),
        ));
    };
    let PyLiteral::Bool(fortran_order) = fortran_order else {
        return Err(bad("'fortran_order' must be True or False".into()));
    };
    let PyLiteral::Tuple(dims) = shape else {
        return Err(bad("'shape' must be a tuple of sizes".into()));
    };
    let shape = dims
        .iter()
        .map(|d| match d {
            PyLiteral::Int(n) => usize::try_from(*n).ok(),
            _ => None,
        })
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| bad("'shape' must hold non-negative integers".into()))?;
    let descr_json = descr.to_json().map_err(|e| bad(format!("'descr': {e}")))?;
    let (data_type, endian) = parse_descr(&descr_json, None, FORMAT).map_err(|e| match e {
        DtypeError::InvalidDataType { found, .. } if found == "\"|O\"" => {
            DtypeError::npy("object arrays hold pickled Python objects, which are never read")
        }
        other => other,
    })?;
    let header = NpyHeader {
        data_type,
        endian,
        shape,
        fortran_order,
    };
    header.data_len()?;
    Ok(header)
}

/// Write a `.npy` header exactly as NumPy does: sorted keys, room for the growth axis to
/// reach 21 digits, padded with spaces and a final `\n` so that the data starts on a 64-byte
/// boundary; format 1.0 if the header length fits in 16 bits, else 2.0 (3.0 if a field name
/// is not Latin-1).
pub fn write_npy_header(writer: &mut impl Write, header: &NpyHeader) -> Result<(), DtypeError> {
    let bytes = header_bytes(header)?;
    writer
        .write_all(&bytes)
        .map_err(|e| DtypeError::io("writing the .npy header", e))
}

fn header_bytes(header: &NpyHeader) -> Result<Vec<u8>, DtypeError> {
    header.data_len()?;
    let descr = descr_json(
        &header.data_type,
        header.endian.unwrap_or(Endian::Little),
        true,
    )?;
    let mut text = format!(
        "{{'descr': {}, 'fortran_order': {}, 'shape': {}, }}",
        descr_repr(&descr),
        if header.fortran_order {
            "True"
        } else {
            "False"
        },
        shape_repr(&header.shape)
    );
    let growth_axis = if header.fortran_order {
        header.shape.last()
    } else {
        header.shape.first()
    };
    if let Some(axis) = growth_axis {
        let digits = axis.to_string().len();
        text.extend(std::iter::repeat_n(
            ' ',
            GROWTH_AXIS_MAX_DIGITS.saturating_sub(digits),
        ));
    }
    let latin1: Option<Vec<u8>> = text
        .chars()
        .map(|c| u8::try_from(u32::from(c)).ok())
        .collect();
    let (encoded, versions): (Vec<u8>, &[u8]) = match latin1 {
        Some(bytes) => (bytes, &[1, 2]),
        None => (text.into_bytes(), &[3]),
    };
    for &major in versions {
        let len_field = if major == 1 { 2 } else { 4 };
        let unpadded = MAGIC.len() + 2 + len_field + encoded.len() + 1;
        let padding = ARRAY_ALIGN - unpadded % ARRAY_ALIGN;
        let header_len = encoded.len() + 1 + padding;
        let len_bytes = if major == 1 {
            match u16::try_from(header_len) {
                Ok(n) => n.to_le_bytes().to_vec(),
                Err(_) => continue,
            }
        } else {
            u32::try_from(header_len)
                .map_err(|_| DtypeError::npy("the header is too long"))?
                .to_le_bytes()
                .to_vec()
        };
        let mut out = Vec::with_capacity(unpadded + padding);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[major, 0]);
        out.extend_from_slice(&len_bytes);
        out.extend_from_slice(&encoded);
        out.extend(std::iter::repeat_n(b' ', padding));
        out.push(b'\n');
        return Ok(out);
    }
    Err(DtypeError::npy("the header is too long"))
}

/// Python's `repr` of a descr held as v2 dtype JSON: strings quoted, each structured field a
/// tuple, sub-array shapes tuples.
fn descr_repr(descr: &Value) -> String {
    match descr {
        Value::Array(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|field| {
                    let parts = field.as_array().map(Vec::as_slice).unwrap_or_default();
                    let items: Vec<String> = parts
                        .iter()
                        .enumerate()
                        .map(|(i, part)| match (i, part) {
                            (2, Value::Array(dims)) => shape_repr(
                                &dims
                                    .iter()
                                    .map(|d| d.as_u64().unwrap_or(0) as usize)
                                    .collect::<Vec<_>>(),
                            ),
                            _ => descr_repr(part),
                        })
                        .collect();
                    format!("({})", items.join(", "))
                })
                .collect();
            format!("[{}]", fields.join(", "))
        }
        Value::String(s) => python_str_repr(s),
        other => other.to_string(),
    }
}

fn shape_repr(shape: &[usize]) -> String {
    match shape {
        [] => "()".into(),
        [only] => format!("({only},)"),
        dims => format!(
            "({})",
            dims.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Python's `repr(str)`: single quotes unless the text has a `'` and no `"`; backslash
/// escapes for the quote, `\\`, `\n`, `\r`, `\t` and unprintable characters.
fn python_str_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() || (!c.is_ascii() && c.is_whitespace()) || c == '\u{ad}' => {
                let code = u32::from(c);
                if code <= 0xff {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code <= 0xffff {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// The Python literals a `.npy` header uses.
#[derive(Debug, PartialEq)]
enum PyLiteral {
    Str(String),
    Int(i128),
    Float(f64),
    Bool(bool),
    None,
    Tuple(Vec<PyLiteral>),
    List(Vec<PyLiteral>),
    Dict(Vec<(PyLiteral, PyLiteral)>),
}

impl PyLiteral {
    fn describe(&self) -> String {
        match self {
            PyLiteral::Str(s) => python_str_repr(s),
            PyLiteral::Int(n) => n.to_string(),
            PyLiteral::Float(x) => python_float_repr(*x),
            PyLiteral::Bool(b) => if *b { "True" } else { "False" }.into(),
            PyLiteral::None => "None".into(),
            PyLiteral::Tuple(_) => "a tuple".into(),
            PyLiteral::List(_) => "a list".into(),
            PyLiteral::Dict(_) => "a dictionary".into(),
        }
    }

    /// The descr as v2 dtype JSON (tuples and lists both become arrays).
    fn to_json(&self) -> Result<Value, String> {
        match self {
            PyLiteral::Str(s) => Ok(Value::String(s.clone())),
            PyLiteral::Int(n) => u64::try_from(*n)
                .map(Value::from)
                .map_err(|_| format!("{n} is not a valid size")),
            PyLiteral::Tuple(items) | PyLiteral::List(items) => items
                .iter()
                .map(PyLiteral::to_json)
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            other => Err(format!("unexpected {} in a descr", other.describe())),
        }
    }
}

/// Literals nested deeper than this are refused (hostile input).
const MAX_LITERAL_DEPTH: usize = 64;

/// A recursive-descent reader of the Python literal syntax in `.npy` headers.
struct LiteralParser<'a> {
    rest: &'a str,
}

impl LiteralParser<'_> {
    fn skip_space(&mut self) {
        self.rest = self.rest.trim_start();
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.rest.chars().next()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.rest = &self.rest[c.len_utf8()..];
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<PyLiteral, String> {
        if depth > MAX_LITERAL_DEPTH {
            return Err(format!(
                "literals nest deeper than {MAX_LITERAL_DEPTH} levels"
            ));
        }
        match self.peek() {
            Some('{') => {
                self.eat('{');
                let mut entries = Vec::new();
                while !self.eat('}') {
                    let key = self.value(depth + 1)?;
                    if !self.eat(':') {
                        return Err(format!("expected ':' after the key {}", key.describe()));
                    }
                    entries.push((key, self.value(depth + 1)?));
                    if !self.eat(',') && self.peek() != Some('}') {
                        return Err("expected ',' or '}' in a dictionary".into());
                    }
                }
                Ok(PyLiteral::Dict(entries))
            }
            Some('(') => {
                self.eat('(');
                let (items, trailing_comma) = self.sequence(')', depth)?;
                // `(x)` is just x; `(x,)` is a one-element tuple.
                if items.len() == 1 && !trailing_comma {
                    return items.into_iter().next().ok_or_else(String::new);
                }
                Ok(PyLiteral::Tuple(items))
            }
            Some('[') => {
                self.eat('[');
                Ok(PyLiteral::List(self.sequence(']', depth)?.0))
            }
            Some('\'' | '"') => self.string(),
            Some('u' | 'U') if self.rest.get(1..2).is_some_and(|q| q == "'" || q == "\"") => {
                self.rest = &self.rest[1..];
                self.string()
            }
            Some(c) if c.is_ascii_digit() || c == '-' || c == '+' => self.number(),
            Some(_) => {
                for (word, literal) in [
                    ("True", PyLiteral::Bool(true)),
                    ("False", PyLiteral::Bool(false)),
                    ("None", PyLiteral::None),
                ] {
                    if let Some(rest) = self.rest.strip_prefix(word) {
                        self.rest = rest;
                        return Ok(literal);
                    }
                }
                let snippet: String = self.rest.chars().take(20).collect();
                Err(format!("unexpected text {snippet:?}"))
            }
            None => Err("the header ends too early".into()),
        }
    }

    /// Items up to `close`; also reports whether the last item had a trailing comma.
    fn sequence(&mut self, close: char, depth: usize) -> Result<(Vec<PyLiteral>, bool), String> {
        let mut items = Vec::new();
        let mut trailing_comma = false;
        while !self.eat(close) {
            items.push(self.value(depth + 1)?);
            trailing_comma = self.eat(',');
            if !trailing_comma && self.peek() != Some(close) {
                return Err(format!("expected ',' or '{close}'"));
            }
        }
        Ok((items, trailing_comma))
    }

    fn string(&mut self) -> Result<PyLiteral, String> {
        let mut chars = self.rest.char_indices();
        let Some((_, quote)) = chars.next() else {
            return Err("expected a string".into());
        };
        let mut out = String::new();
        while let Some((i, c)) = chars.next() {
            if c == quote {
                self.rest = &self.rest[i + c.len_utf8()..];
                return Ok(PyLiteral::Str(out));
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some((_, escape)) = chars.next() else {
                break;
            };
            let mut hex = |digits: usize| -> Result<char, String> {
                let code: String = (0..digits)
                    .filter_map(|_| chars.next().map(|(_, c)| c))
                    .collect();
                u32::from_str_radix(&code, 16)
                    .ok()
                    .filter(|_| code.len() == digits)
                    .and_then(char::from_u32)
                    .ok_or_else(|| format!("bad escape \\{escape}{code}"))
            };
            match escape {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                '0' => out.push('\0'),
                '\\' | '\'' | '"' => out.push(escape),
                'x' => out.push(hex(2)?),
                'u' => out.push(hex(4)?),
                'U' => out.push(hex(8)?),
                other => {
                    out.push('\\');
                    out.push(other);
                }
            }
        }
        Err("a string is not closed".into())
    }

    fn number(&mut self) -> Result<PyLiteral, String> {
        let end = self
            .rest
            .char_indices()
            .find(|(i, c)| {
                !(c.is_ascii_alphanumeric() || *c == '.' || ((*c == '-' || *c == '+') && *i == 0))
            })
            .map_or(self.rest.len(), |(i, _)| i);
        let token = &self.rest[..end];
        self.rest = &self.rest[end..];
        // Python 2 wrote long integers with an `L` suffix.
        let digits = token.strip_suffix('L').unwrap_or(token);
        if let Ok(n) = digits.parse::<i128>() {
            return Ok(PyLiteral::Int(n));
        }
        digits
            .parse::<f64>()
            .map(PyLiteral::Float)
            .map_err(|_| format!("{token:?} is not a number"))
    }
}

/// Read a whole `.npy` file: its header (as stored) and its data as packed, C-ordered,
/// little-endian element bytes (big-endian and Fortran-ordered data are converted).
pub fn read_npy(path: impl AsRef<Path>) -> Result<(NpyHeader, Vec<u8>), DtypeError> {
    let path = path.as_ref();
    read_npy_file(path).map_err(|e| e.in_file(path))
}

fn read_npy_file(path: &Path) -> Result<(NpyHeader, Vec<u8>), DtypeError> {
    let file = File::open(path).map_err(|e| DtypeError::io("opening the file", e))?;
    read_npy_from(BufReader::new(file))
}

/// [`read_npy`] of the bytes of a `.npy` file (e.g. an object read from a store).
pub fn read_npy_bytes(bytes: &[u8]) -> Result<(NpyHeader, Vec<u8>), DtypeError> {
    read_npy_from(bytes)
}

fn read_npy_from(mut reader: impl Read) -> Result<(NpyHeader, Vec<u8>), DtypeError> {
    let header = read_npy_header(&mut reader)?;
    let len = header.data_len()?;
    let mut data = Vec::new();
    reader
        .take(len as u64)
        .read_to_end(&mut data)
        .map_err(|e| DtypeError::io("reading the array data", e))?;
    if data.len() < len {
        return Err(DtypeError::npy(format!(
            "truncated data: shape {:?} of {} needs {len} bytes, found {}",
            header.shape,
            header.data_type,
            data.len()
        )));
    }
    header
        .data_type
        .swap_endian_in_place(&mut data, header.endian.unwrap_or(Endian::Little));
    if header.fortran_order && header.shape.len() > 1 {
        let size = header.data_type.fixed_size().unwrap_or(0);
        data = fortran_to_c_order(&data, &header.shape, size);
    }
    Ok((header, data))
}

/// Reorder packed elements from column-major to row-major.
fn fortran_to_c_order(data: &[u8], shape: &[usize], size: usize) -> Vec<u8> {
    let count: usize = shape.iter().product();
    if count == 0 || size == 0 {
        return data.to_vec();
    }
    // Column-major strides in elements.
    let strides: Vec<usize> = shape
        .iter()
        .scan(1usize, |stride, &d| {
            let s = *stride;
            *stride *= d;
            Some(s)
        })
        .collect();
    let mut out = Vec::with_capacity(count * size);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..count {
        let source: usize = index.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.extend_from_slice(
            data.get(source * size..(source + 1) * size)
                .unwrap_or_default(),
        );
        // Advance the C-order (last index fastest) counter.
        for (i, d) in index.iter_mut().zip(shape).rev() {
            *i += 1;
            if *i < *d {
                break;
            }
            *i = 0;
        }
    }
    out
}

/// Write `data` (packed, C-ordered, little-endian elements of `data_type`, `shape`) as a
/// `.npy` file. The file appears complete or not at all (written beside it, then renamed).
pub fn write_npy(
    path: impl AsRef<Path>,
    data_type: &DataType,
    shape: &[usize],
    data: &[u8],
) -> Result<(), DtypeError> {
    let path = path.as_ref();
    write_npy_file(path, data_type, shape, data).map_err(|e| e.in_file(path))
}

fn write_npy_file(
    path: &Path,
    data_type: &DataType,
    shape: &[usize],
    data: &[u8],
) -> Result<(), DtypeError> {
    let (header_bytes, body) = npy_parts(data_type, shape, data)?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "array.npy".into());
    let partial = path.with_file_name(format!(".{file_name}.partial"));
    let result = (|| -> std::io::Result<()> {
        let mut writer = BufWriter::new(File::create(&partial)?);
        writer.write_all(&header_bytes)?;
        writer.write_all(&body)?;
        writer
            .into_inner()
            .map_err(|e| e.into_error())?
            .sync_all()?;
        std::fs::rename(&partial, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        DtypeError::io("writing the file", e)
    })
}

/// The bytes of the `.npy` file [`write_npy`] writes (e.g. to store it as an object).
pub fn npy_file_bytes(
    data_type: &DataType,
    shape: &[usize],
    data: &[u8],
) -> Result<Vec<u8>, DtypeError> {
    let (mut header, body) = npy_parts(data_type, shape, data)?;
    header.extend_from_slice(&body);
    Ok(header)
}

/// The header bytes and the body (components stored in their own byte order) of a `.npy`.
fn npy_parts<'a>(
    data_type: &DataType,
    shape: &[usize],
    data: &'a [u8],
) -> Result<(Vec<u8>, std::borrow::Cow<'a, [u8]>), DtypeError> {
    let header = NpyHeader {
        data_type: data_type.clone(),
        endian: Some(Endian::Little),
        shape: shape.to_vec(),
        fortran_order: false,
    };
    let len = header.data_len()?;
    if data.len() != len {
        return Err(DtypeError::npy(format!(
            "shape {shape:?} of {data_type} needs {len} bytes of data, got {}",
            data.len()
        )));
    }
    let header_bytes = header_bytes(&header)?;
    // Structured fields may carry their own (big-endian) byte order; store them in it.
    let mut components = Vec::new();
    data_type.swap_components(0, &mut components);
    let body = if components.iter().any(|(_, _, e)| *e == Some(Endian::Big)) {
        let mut copy = data.to_vec();
        data_type.swap_endian_in_place(&mut copy, Endian::Little);
        std::borrow::Cow::Owned(copy)
    } else {
        std::borrow::Cow::Borrowed(data)
    };
    Ok((header_bytes, body))
}

/// Convert variable-length elements to the fixed-width type `.npy` (and NumPy) can hold:
/// text (`DataType::String`, elements UTF-8) becomes `FixedUtf32` (`<U`) and bytes become
/// `FixedBytes` (`|S`), as wide as the longest element (at least 1), with the packed element
/// bytes. Note that NumPy drops trailing NULs when it reads `|S` and `<U` elements.
pub fn fixed_width_for_npy<T: AsRef<[u8]>>(
    data_type: &DataType,
    elements: &[T],
) -> Result<(DataType, Vec<u8>), DtypeError> {
    match data_type {
        DataType::String => {
            let texts = elements
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    std::str::from_utf8(e.as_ref()).map_err(|err| {
                        DtypeError::npy(format!("string element {i} is not UTF-8 ({err})"))
                    })
                })
                .collect::<Result<Vec<&str>, _>>()?;
            let chars = texts
                .iter()
                .map(|t| t.chars().count())
                .max()
                .unwrap_or(0)
                .max(1);
            let mut packed = Vec::with_capacity(texts.len() * 4 * chars);
            for text in texts {
                packed.extend(utf32_from_str(text, chars).map_err(DtypeError::npy)?);
            }
            Ok((DataType::FixedUtf32 { chars }, packed))
        }
        DataType::Bytes => {
            let len = elements
                .iter()
                .map(|e| e.as_ref().len())
                .max()
                .unwrap_or(0)
                .max(1);
            let mut packed = Vec::with_capacity(elements.len() * len);
            for element in elements {
                let element = element.as_ref();
                packed.extend_from_slice(element);
                packed.extend(std::iter::repeat_n(0u8, len - element.len()));
            }
            Ok((DataType::FixedBytes { len }, packed))
        }
        other => Err(DtypeError::npy(format!(
            "fixed_width_for_npy converts variable-length string and bytes elements; {other} \
             is already fixed-size"
        ))),
    }
}
