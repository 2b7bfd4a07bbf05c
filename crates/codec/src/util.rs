//! Small private helpers shared by the codecs: error constructors, JSON configuration
//! readers and the size bounds decoders check before allocating.

use serde_json::{Map, Value};

use crate::{CodecError, CodecResult};

/// Largest output a decoder accepts when neither the caller nor the stream declares a size we
/// can trust (decoders that grow their output incrementally stop here).
pub(crate) const MAX_UNKNOWN_DECODED: usize = 1 << 34;

/// [`CodecError::Corrupt`]: the stored bytes of `codec` cannot be decoded.
pub fn corrupt(codec: &str, message: impl Into<String>) -> CodecError {
    CodecError::Corrupt {
        codec: codec.to_string(),
        message: message.into(),
    }
}

/// [`CodecError::Config`]: the configuration of `codec` is invalid.
pub fn config_err(codec: &str, message: impl Into<String>) -> CodecError {
    CodecError::Config {
        codec: codec.to_string(),
        message: message.into(),
    }
}

/// [`CodecError::Unsupported`]: `codec` cannot do what is asked.
pub fn unsupported(codec: &str, message: impl Into<String>) -> CodecError {
    CodecError::Unsupported {
        codec: codec.to_string(),
        message: message.into(),
    }
}

/// The members of a codec configuration; `null` / missing counts as empty.
pub(crate) fn config_map<'a>(
    codec: &str,
    config: &'a Value,
) -> CodecResult<Option<&'a Map<String, Value>>> {
    match config {
        Value::Null => Ok(None),
        Value::Object(m) => Ok(Some(m)),
        other => Err(config_err(
            codec,
            format!("configuration must be an object, found {other}"),
        )),
    }
}

/// Read access to the keys of an optional configuration object with errors naming the codec.
pub struct Conf<'a> {
    codec: &'a str,
    map: Option<&'a Map<String, Value>>,
}

impl<'a> Conf<'a> {
    /// The members of `config` (an object, or `null` for none) of `codec`.
    pub fn new(codec: &'a str, config: &'a Value) -> CodecResult<Self> {
        Ok(Conf {
            codec,
            map: config_map(codec, config)?,
        })
    }

    /// The value of `key`, treating JSON `null` as absent.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.and_then(|m| m.get(key)).filter(|v| !v.is_null())
    }

    /// Whether `key` is present and not `null`.
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// An integer member (an integral float such as `5.0`, as Python writers emit, counts).
    pub fn i64(&self, key: &str) -> CodecResult<Option<i64>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => match v.as_i64() {
                Some(i) => Ok(Some(i)),
                None => match v.as_f64() {
                    // Python writers may emit integral floats (e.g. `5.0`).
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(Some(f as i64)),
                    _ => Err(config_err(
                        self.codec,
                        format!("'{key}' must be an integer, found {v}"),
                    )),
                },
            },
        }
    }

    /// An integer member within `lo..=hi`.
    pub fn i64_in(&self, key: &str, lo: i64, hi: i64) -> CodecResult<Option<i64>> {
        match self.i64(key)? {
            Some(v) if v < lo || v > hi => Err(config_err(
                self.codec,
                format!("'{key}' must be between {lo} and {hi}, found {v}"),
            )),
            other => Ok(other),
        }
    }

    /// A non-negative integer member.
    pub fn usize(&self, key: &str) -> CodecResult<Option<usize>> {
        match self.i64(key)? {
            None => Ok(None),
            Some(v) => usize::try_from(v).map(Some).map_err(|_| {
                config_err(
                    self.codec,
                    format!("'{key}' must be a non-negative integer, found {v}"),
                )
            }),
        }
    }

    /// A number member.
    pub fn f64(&self, key: &str) -> CodecResult<Option<f64>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::String(s)) => match s.as_str() {
                "NaN" => Ok(Some(f64::NAN)),
                "Infinity" => Ok(Some(f64::INFINITY)),
                "-Infinity" => Ok(Some(f64::NEG_INFINITY)),
                _ => Err(config_err(
                    self.codec,
                    format!("'{key}' must be a number, found \"{s}\""),
                )),
            },
            Some(v) => Err(config_err(
                self.codec,
                format!("'{key}' must be a number, found {v}"),
            )),
        }
    }

    /// A boolean member.
    pub fn bool(&self, key: &str) -> CodecResult<Option<bool>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(config_err(
                self.codec,
                format!("'{key}' must be true or false, found {v}"),
            )),
        }
    }

    /// A string member.
    pub fn str(&self, key: &str) -> CodecResult<Option<&'a str>> {
        match self.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(v) => Err(config_err(
                self.codec,
                format!("'{key}' must be a string, found {v}"),
            )),
        }
    }

    /// `value` (what a reader returned for `key`), or an error saying `key` is required.
    pub fn required<T>(&self, key: &str, value: Option<T>) -> CodecResult<T> {
        value.ok_or_else(|| config_err(self.codec, format!("missing required key '{key}'")))
    }
}

/// `{"name": name, "configuration": {...}}`, or just `{"name": name}` when `config` is `None`.
pub(crate) fn v3_json(name: &str, config: Option<Map<String, Value>>) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::String(name.to_string()));
    if let Some(c) = config {
        m.insert("configuration".into(), Value::Object(c));
    }
    Value::Object(m)
}

/// Build a JSON object from key/value pairs, keeping their order.
pub(crate) fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.to_string(), v);
    }
    m
}

/// A numcodecs `{"id": id, ...}` object from the configuration members.
pub(crate) fn v2_json(id: &str, config: Map<String, Value>) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), Value::String(id.to_string()));
    for (k, v) in config {
        m.insert(k, v);
    }
    Value::Object(m)
}

/// Check a decoded length against the caller's expectation.
pub(crate) fn check_size(codec: &str, actual: usize, expected: Option<usize>) -> CodecResult<()> {
    match expected {
        Some(e) if e != actual => Err(corrupt(
            codec,
            format!("decoded to {actual} bytes, expected {e}"),
        )),
        _ => Ok(()),
    }
}

/// Check a size declared inside an encoded stream before allocating for it: it must equal the
/// expected size when known, and stay below `bound` (what the format can produce from the
/// input) otherwise.
pub(crate) fn check_declared(
    codec: &str,
    declared: u64,
    expected: Option<usize>,
    bound: u64,
) -> CodecResult<usize> {
    if let Some(e) = expected {
        if declared != e as u64 {
            return Err(corrupt(
                codec,
                format!("stream declares {declared} decoded bytes, expected {e}"),
            ));
        }
        return Ok(e);
    }
    if declared > bound || declared > MAX_UNKNOWN_DECODED as u64 {
        return Err(corrupt(
            codec,
            format!("stream declares {declared} decoded bytes, more than its input can hold"),
        ));
    }
    usize::try_from(declared).map_err(|_| corrupt(codec, "declared size does not fit in memory"))
}

/// Ensure `out` can hold `additional` more bytes without reallocating more than needed.
pub(crate) fn reserve_total(out: &mut Vec<u8>, total: usize) {
    if out.capacity() < total {
        out.reserve_exact(total - out.len());
    }
}

/// Output sizing shared by the streaming decoders (zlib/gzip, bzip2, xz, zstd): reserve the
/// expected decoded size, or a guess from the input when it is unknown, and return the most
/// bytes the stream may decode to.
pub(crate) fn start_stream_output(
    out: &mut Vec<u8>,
    input_len: usize,
    decoded_size: Option<usize>,
) -> usize {
    out.reserve_exact(first_output_capacity(input_len, decoded_size));
    decoded_size.unwrap_or(MAX_UNKNOWN_DECODED)
}

/// The capacity a streaming decoder starts with: the expected size, or four times the input
/// (at least 4 KiB, at most 64 MiB) when unknown.
pub(crate) fn first_output_capacity(input_len: usize, decoded_size: Option<usize>) -> usize {
    decoded_size.unwrap_or_else(|| input_len.saturating_mul(4).clamp(4096, 64 << 20))
}

/// Before a streaming decoder's next step: when `out` is full and below `limit`, grow it by
/// its capacity (64 KiB to 64 MiB at a time), never past `limit`.
pub(crate) fn grow_stream_output(out: &mut Vec<u8>, limit: usize) {
    if out.len() == out.capacity() && out.len() < limit {
        let grow = out
            .capacity()
            .clamp(64 * 1024, 64 << 20)
            .min(limit - out.len());
        out.reserve_exact(grow);
    }
}

/// The error of a streaming decoder that made no progress: with room left in `out` the input
/// ended early (`truncated` says what), otherwise the stream decodes to more than `limit`.
pub(crate) fn stalled_stream(
    codec: &str,
    out: &Vec<u8>,
    truncated: &str,
    limit: usize,
) -> CodecError {
    if out.len() < out.capacity() {
        corrupt(codec, truncated)
    } else {
        corrupt(
            codec,
            format!("decodes to more than the expected {limit} bytes"),
        )
    }
}
