//! JSON helpers for metadata documents: lenient parsing of the bare `NaN`, `Infinity` and
//! `-Infinity` tokens that zarr-python writes, and a writer that reproduces Python's
//! `json.dumps` byte for byte (indentation, separators, key order, `\uXXXX` escapes and
//! Python's `repr` of floats), so metadata we write is identical to the reference writer's.

use serde_json::Value;

use crate::DtypeError;

/// The non-standard tokens Python's `json` module reads and writes for non-finite floats.
/// `-Infinity` comes first so that it is not split into `-` and `Infinity`.
const NON_FINITE_TOKENS: [&[u8]; 3] = [b"-Infinity", b"Infinity", b"NaN"];

/// Marks a string that stands for a bare non-finite token (`NaN`, `Infinity`, `-Infinity`):
/// [`parse_lenient`] produces `"\u{0}NaN"` for a bare `NaN`, and [`to_python_json`] writes such
/// strings back as the bare token, so attributes like `{"offset": NaN}` survive a round trip
/// unchanged (a real string `"NaN"` stays a string). Fill-value readers accept both forms.
pub const NON_FINITE_MARKER: char = '\0';

/// The value standing for a non-finite float in attributes: written as a bare token.
pub fn non_finite_value(x: f64) -> Value {
    let token = if x.is_nan() {
        "NaN"
    } else if x > 0.0 {
        "Infinity"
    } else {
        "-Infinity"
    };
    Value::String(format!("{NON_FINITE_MARKER}{token}"))
}

/// The bare token a marked string stands for, if it is one.
pub fn non_finite_token(s: &str) -> Option<&str> {
    let token = s.strip_prefix(NON_FINITE_MARKER)?;
    NON_FINITE_TOKENS
        .iter()
        .any(|t| t == &token.as_bytes())
        .then_some(token)
}

/// Parse JSON that may contain bare `NaN`, `Infinity` and `-Infinity` outside strings; they
/// come back as marked strings (see [`NON_FINITE_MARKER`]), which the Zarr fill-value readers
/// accept like `"NaN"` and the writer turns back into bare tokens. Text inside strings is never
/// changed.
///
/// Errors give the line and column (1-based, in bytes) of the problem in `bytes`.
pub fn parse_lenient(bytes: &[u8]) -> Result<Value, DtypeError> {
    let (text, inserted_quotes) = quote_non_finite_tokens(bytes);
    serde_json::from_slice(&text).map_err(|err| locate_error(bytes, &text, &inserted_quotes, &err))
}

/// Copy `input`, wrapping each bare non-finite token in double quotes. Returns the new text
/// and the offsets (in the new text) of the quotes that were inserted, in increasing order.
fn quote_non_finite_tokens(input: &[u8]) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::with_capacity(input.len() + 8);
    let mut inserted = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    let mut rest = input;
    while let Some((&byte, tail)) = rest.split_first() {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
        } else if byte == b'"' {
            in_string = true;
        } else if let Some(token) = NON_FINITE_TOKENS.iter().find(|t| rest.starts_with(t)) {
            // `"\u0000` + token + `"`: every inserted byte is recorded for error positions.
            for &b in b"\"\\u0000" {
                inserted.push(out.len());
                out.push(b);
            }
            out.extend_from_slice(token);
            inserted.push(out.len());
            out.push(b'"');
            rest = &rest[token.len()..];
            continue;
        }
        out.push(byte);
        rest = tail;
    }
    (out, inserted)
}

/// Translate a serde_json error in the rewritten text into one that points into `original`.
fn locate_error(
    original: &[u8],
    rewritten: &[u8],
    inserted_quotes: &[usize],
    err: &serde_json::Error,
) -> DtypeError {
    let (line, column) = (err.line(), err.column());
    let full = err.to_string();
    let suffix = format!(" at line {line} column {column}");
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    if line == 0 {
        // serde_json reports line 0 for errors that have no position (e.g. I/O).
        return DtypeError::Json {
            line: 0,
            column: 0,
            message,
        };
    }
    // Offset in the rewritten text of the byte serde_json complained about.
    let line_start = if line <= 1 {
        0
    } else {
        rewritten
            .iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .nth(line - 2)
            .map_or(rewritten.len(), |(i, _)| i + 1)
    };
    let rewritten_offset = (line_start + column.saturating_sub(1)).min(rewritten.len());
    let shift = inserted_quotes
        .iter()
        .take_while(|&&q| q < rewritten_offset)
        .count();
    let offset = rewritten_offset.saturating_sub(shift).min(original.len());
    let before = original.get(..offset).unwrap_or(original);
    let line_no = 1 + before.iter().filter(|b| **b == b'\n').count();
    let column_no = offset
        - before
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    DtypeError::Json {
        line: line_no,
        column: column_no,
        message,
    }
}

/// How to lay out JSON text, with the meaning of the arguments of Python's `json.dumps`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PyJsonStyle {
    /// Spaces per nesting level; `None` writes everything on one line.
    pub indent: Option<usize>,
    /// Sort object keys (by code point, as Python does); otherwise keep insertion order.
    pub sort_keys: bool,
    /// Written between array items and object members (before the newline when indenting).
    pub item_separator: &'static str,
    /// Written between an object key and its value.
    pub key_separator: &'static str,
    /// Escape every character outside printable ASCII as `\uXXXX`.
    pub ensure_ascii: bool,
}

impl PyJsonStyle {
    /// zarr-python 2: `json.dumps(indent=4, sort_keys=True, ensure_ascii=True,
    /// separators=(",", ": "))`.
    pub const ZARR_PYTHON2: PyJsonStyle = PyJsonStyle {
        indent: Some(4),
        sort_keys: true,
        item_separator: ",",
        key_separator: ": ",
        ensure_ascii: true,
    };
    /// zarr-python 3: `json.dumps(indent=2)`, keys in insertion order.
    pub const ZARR_PYTHON3: PyJsonStyle = PyJsonStyle {
        indent: Some(2),
        sort_keys: false,
        item_separator: ",",
        key_separator: ": ",
        ensure_ascii: true,
    };
    /// Python's default `json.dumps(obj)`: one line, `", "` and `": "` (zarr-python 3's
    /// consolidated `.zmetadata`).
    pub const PYTHON_DEFAULT: PyJsonStyle = PyJsonStyle {
        indent: None,
        sort_keys: false,
        item_separator: ", ",
        key_separator: ": ",
        ensure_ascii: true,
    };
    /// One line without spaces (`","` and `":"`), insertion order. tensorstore writes this
    /// layout with sorted keys: `PyJsonStyle::COMPACT.with_sorted_keys(true)`.
    pub const COMPACT: PyJsonStyle = PyJsonStyle {
        indent: None,
        sort_keys: false,
        item_separator: ",",
        key_separator: ":",
        ensure_ascii: true,
    };

    /// This style with key sorting switched on or off.
    pub const fn with_sorted_keys(mut self, sort_keys: bool) -> Self {
        self.sort_keys = sort_keys;
        self
    }

    /// This style with another indentation (`None` for one line).
    pub const fn with_indent(mut self, indent: Option<usize>) -> Self {
        self.indent = indent;
        self
    }
}

/// Serialise `value` exactly as Python's `json.dumps` would with the options in `style`
/// (no trailing newline). Floats are written like Python's `repr` (`0.0`, `1e+20`, `1e-05`).
pub fn to_python_json(value: &Value, style: PyJsonStyle) -> String {
    let mut out = String::new();
    write_value(&mut out, value, style, 0);
    out
}

fn write_newline_indent(out: &mut String, style: PyJsonStyle, level: usize) {
    if let Some(width) = style.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', width * level));
    }
}

fn write_value(out: &mut String, value: &Value, style: PyJsonStyle, level: usize) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => match non_finite_token(s) {
            Some(token) => out.push_str(token),
            None => write_python_string(out, s, style.ensure_ascii),
        },
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item_separator);
                }
                write_newline_indent(out, style, level + 1);
                write_value(out, item, style, level + 1);
            }
            write_newline_indent(out, style, level);
            out.push(']');
        }
        Value::Object(map) => {
            if map.is_empty() {
                out.push_str("{}");
                return;
            }
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            if style.sort_keys {
                members.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (key, item)) in members.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(style.item_separator);
                }
                write_newline_indent(out, style, level + 1);
                write_python_string(out, key, style.ensure_ascii);
                out.push_str(style.key_separator);
                write_value(out, item, style, level + 1);
            }
            write_newline_indent(out, style, level);
            out.push('}');
        }
    }
}

fn write_number(out: &mut String, n: &serde_json::Number) {
    if let Some(u) = n.as_u64() {
        out.push_str(&u.to_string());
    } else if let Some(i) = n.as_i64() {
        out.push_str(&i.to_string());
    } else if let Some(f) = n.as_f64() {
        out.push_str(&python_float_repr(f));
    } else {
        out.push_str(&n.to_string());
    }
}

/// Write `s` as a JSON string literal the way Python's `json` module does: `\"`, `\\`, `\n`,
/// `\r`, `\t`, `\b`, `\f`, other control characters as `\u00XX`; with `ensure_ascii`, every
/// character outside `' '..='~'` as lowercase `\uXXXX` (a surrogate pair above U+FFFF).
pub fn write_python_string(out: &mut String, s: &str, ensure_ascii: bool) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c < ' ' || (ensure_ascii && c > '~') => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest digits that round-trip, in fixed notation when the
/// decimal exponent is in -4..16 (always with a fractional part, `1.0`), otherwise in
/// scientific notation with a signed, at least two-digit exponent (`1e+20`, `1e-05`).
/// Non-finite values come out as Python's `json` writes them: `NaN`, `Infinity`, `-Infinity`.
pub fn python_float_repr(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits, e.g. "-1.2345e-5", "1e20", "0e0".
    let scientific = format!("{:e}", x.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if x.is_sign_negative() { "-" } else { "" };
    // Position of the decimal point relative to the start of `digits`.
    let point = exponent + 1;
    if point > -4 && point <= 16 {
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat(point.unsigned_abs() as usize), digits)
        } else {
            let point = point as usize;
            if point >= digits.len() {
                format!("{}{}.0", digits, "0".repeat(point - digits.len()))
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{first}{fraction}e{exp_sign}{:02}",
            exponent.unsigned_abs()
        )
    }
}
