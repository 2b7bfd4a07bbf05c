//! The codec pipeline of one chunk ([`CodecChain`]): array→array codecs, one array→bytes
//! codec, bytes→bytes codecs, built from Zarr v3 `codecs` JSON or Zarr v2
//! `order`/`filters`/`compressor`, and written back to either form.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use neurochunk_dtype::{DataType, Endian};
use serde_json::Value;

use crate::codecs::bytes::BytesCodec;
use crate::codecs::transpose::TransposeCodec;
use crate::registry::{AnyCodec, CodecRegistry};
use crate::util::{config_err, unsupported};
use crate::{
    ArrayBytes, ArrayToArrayCodec, ArrayToBytesCodec, BytesToBytesCodec, ChunkRepr, CodecError,
    CodecResult, ShardingCodec,
};

const PIPELINE: &str = "codecs";

thread_local! {
    /// Spare byte buffers reused between the steps of encodes and decodes on this thread.
    static POOL: RefCell<Vec<Vec<u8>>> = const { RefCell::new(Vec::new()) };
}

/// Largest buffer kept in the per-thread pool.
const POOL_MAX_CAPACITY: usize = 512 << 20;

fn take_buf() -> Vec<u8> {
    POOL.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

/// A buffer for a step whose output is handed to the caller: a pooled one unless it is far
/// larger than the expected output (the caller may keep the result).
fn take_buf_for(expected: Option<usize>) -> Vec<u8> {
    let buf = take_buf();
    match expected {
        Some(n) if buf.capacity() > 2 * n + (64 << 10) => {
            give_buf(buf);
            Vec::with_capacity(n)
        }
        _ => buf,
    }
}

/// Give a buffer this thread is done with (e.g. a decoded chunk once copied out) to the
/// thread's pool, so the next encode or decode on this thread writes into it instead of new
/// memory. The pool keeps a couple of buffers per thread.
pub fn recycle_buffer(v: Vec<u8>) {
    give_buf(v);
}

fn give_buf(mut v: Vec<u8>) {
    if v.capacity() == 0 || v.capacity() > POOL_MAX_CAPACITY {
        return;
    }
    v.clear();
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < 2 {
            p.push(v);
        } else if let Some(smallest) = p.iter_mut().min_by_key(|b| b.capacity()) {
            if smallest.capacity() < v.capacity() {
                *smallest = v;
            }
        }
    });
}

/// Zarr v2 form of a chain (see [`CodecChain::to_v2`]).
#[derive(Clone, Debug, PartialEq)]
pub struct V2Codecs {
    /// `order: "F"`: the chain starts with a reversing transpose.
    pub order_f: bool,
    /// The `filters` list, in encoding order; `None` when there are none.
    pub filters: Option<Vec<Value>>,
    /// The `compressor` (the last bytes→bytes codec), if any.
    pub compressor: Option<Value>,
    /// Byte order of the `bytes` codec (`None` for single-byte and object types).
    pub endian: Option<Endian>,
    /// A `dtype` the object codec requires (see [`ArrayToBytesCodec::v2_dtype`]).
    pub dtype: Option<Value>,
}

/// A chunk's codec pipeline.
#[derive(Clone, Debug)]
pub struct CodecChain {
    array_to_array: Vec<Arc<dyn ArrayToArrayCodec>>,
    array_to_bytes: Arc<dyn ArrayToBytesCodec>,
    bytes_to_bytes: Vec<Arc<dyn BytesToBytesCodec>>,
    /// The chain is just little-endian `bytes`: encoded bytes are the in-memory elements.
    raw_little: bool,
}

impl CodecChain {
    /// A chain of the given codecs, each list in encoding order. The codecs are taken as
    /// they are: that each accepts its predecessor's output is not checked here.
    pub fn new(
        array_to_array: Vec<Arc<dyn ArrayToArrayCodec>>,
        array_to_bytes: Arc<dyn ArrayToBytesCodec>,
        bytes_to_bytes: Vec<Arc<dyn BytesToBytesCodec>>,
    ) -> CodecChain {
        let serializer: &dyn std::any::Any = array_to_bytes.as_ref();
        let raw_little = array_to_array.is_empty()
            && bytes_to_bytes.is_empty()
            && serializer
                .downcast_ref::<BytesCodec>()
                .is_some_and(|b| b.endian() != Some(Endian::Big));
        CodecChain {
            array_to_array,
            array_to_bytes,
            bytes_to_bytes,
            raw_little,
        }
    }

    /// [`CodecChain::new`], checking that the array→bytes codec can serialise the data type
    /// it is handed (`repr`, after the array→array codecs).
    pub fn try_new(
        array_to_array: Vec<Arc<dyn ArrayToArrayCodec>>,
        array_to_bytes: Arc<dyn ArrayToBytesCodec>,
        bytes_to_bytes: Vec<Arc<dyn BytesToBytesCodec>>,
        repr: &ChunkRepr,
    ) -> CodecResult<CodecChain> {
        check_array_to_bytes_fits(array_to_bytes.as_ref(), repr)?;
        Ok(CodecChain::new(
            array_to_array,
            array_to_bytes,
            bytes_to_bytes,
        ))
    }

    /// True if encoding a chunk of `repr` is the identity on its in-memory bytes (a lone
    /// little-endian `bytes` codec and a plain fixed-size element type).
    pub fn is_identity_for(&self, repr: &ChunkRepr) -> bool {
        self.raw_little
            && !repr.data_type.is_variable_length()
            && !matches!(repr.data_type, neurochunk_dtype::DataType::Structured(_))
    }

    /// Parse a Zarr v3 `codecs` list with the process-wide registry. Entries may be objects
    /// or bare-string short-hand names. `repr` is the chunk's decoded representation.
    pub fn from_v3_json(codecs: &[Value], repr: &ChunkRepr) -> CodecResult<CodecChain> {
        Self::from_v3_json_with(CodecRegistry::global(), codecs, repr)
    }

    /// [`CodecChain::from_v3_json`] with a given registry.
    pub fn from_v3_json_with(
        registry: &CodecRegistry,
        codecs: &[Value],
        repr: &ChunkRepr,
    ) -> CodecResult<CodecChain> {
        let mut a2a = Vec::new();
        let mut a2b: Option<Arc<dyn ArrayToBytesCodec>> = None;
        let mut b2b = Vec::new();
        let mut cur = repr.clone();
        for entry in codecs {
            let (name, config) = match entry {
                Value::String(s) => (s.as_str(), &Value::Null),
                Value::Object(m) => {
                    let name = m.get("name").and_then(Value::as_str).ok_or_else(|| {
                        config_err(
                            PIPELINE,
                            format!("codec entry without a string 'name': {entry}"),
                        )
                    })?;
                    (name, m.get("configuration").unwrap_or(&Value::Null))
                }
                other => {
                    return Err(config_err(
                        PIPELINE,
                        format!("codec entries must be objects or names, found {other}"),
                    ))
                }
            };
            match registry.create_v3(name, config, &cur)? {
                AnyCodec::ArrayToArray(c) => {
                    if a2b.is_some() {
                        return Err(config_err(
                            PIPELINE,
                            format!("array→array codec '{name}' follows the array→bytes codec"),
                        ));
                    }
                    cur = c.encoded_repr(&cur)?;
                    a2a.push(c);
                }
                AnyCodec::ArrayToBytes(c) => {
                    if let Some(prev) = &a2b {
                        return Err(config_err(
                            PIPELINE,
                            format!("two array→bytes codecs ('{}' and '{name}'); exactly one is allowed", prev.name()),
                        ));
                    }
                    a2b = Some(c);
                }
                AnyCodec::BytesToBytes(c) => {
                    if a2b.is_none() {
                        return Err(config_err(
                            PIPELINE,
                            format!(
                                "bytes→bytes codec '{name}' comes before the array→bytes codec"
                            ),
                        ));
                    }
                    b2b.push(c);
                }
            }
        }
        let a2b = a2b.ok_or_else(|| {
            config_err(
                PIPELINE,
                "no array→bytes codec (such as 'bytes'); exactly one is required",
            )
        })?;
        check_array_to_bytes_fits(a2b.as_ref(), &cur)?;
        Ok(CodecChain::new(a2a, a2b, b2b))
    }

    /// Build the chain of a Zarr v2 array: `[transpose (reversed) if order F] + array→array
    /// filters + (the object codec among the filters, else `bytes(endian)`) + bytes→bytes
    /// filters + compressor`. `filters: []` is treated as `null`.
    pub fn from_v2(
        order_f: bool,
        filters: Option<&[Value]>,
        compressor: Option<&Value>,
        endian: Option<Endian>,
        repr: &ChunkRepr,
    ) -> CodecResult<CodecChain> {
        Self::from_v2_with(
            CodecRegistry::global(),
            order_f,
            filters,
            compressor,
            endian,
            repr,
        )
    }

    /// [`CodecChain::from_v2`] with a given registry.
    pub fn from_v2_with(
        registry: &CodecRegistry,
        order_f: bool,
        filters: Option<&[Value]>,
        compressor: Option<&Value>,
        endian: Option<Endian>,
        repr: &ChunkRepr,
    ) -> CodecResult<CodecChain> {
        let mut a2a: Vec<Arc<dyn ArrayToArrayCodec>> = Vec::new();
        let mut a2b: Option<Arc<dyn ArrayToBytesCodec>> = None;
        let mut b2b: Vec<Arc<dyn BytesToBytesCodec>> = Vec::new();
        let mut cur = repr.clone();
        if order_f {
            let t = TransposeCodec::reversed(repr.shape.len());
            cur = t.encoded_repr(&cur)?;
            a2a.push(Arc::new(t));
        }
        let id_of = |v: &Value| {
            v.get("id")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_string()
        };
        for f in filters.unwrap_or(&[]) {
            match registry.create_v2(f, &cur)? {
                AnyCodec::ArrayToArray(c) => {
                    if a2b.is_some() || !b2b.is_empty() {
                        return Err(unsupported(
                            PIPELINE,
                            format!(
                                "array filter '{}' after a bytes filter cannot be expressed",
                                id_of(f)
                            ),
                        ));
                    }
                    cur = c.encoded_repr(&cur)?;
                    a2a.push(c);
                }
                AnyCodec::ArrayToBytes(c) => {
                    if a2b.is_some() || !b2b.is_empty() {
                        return Err(unsupported(
                            PIPELINE,
                            format!("object codec '{}' must come before any bytes filter and appear once", id_of(f)),
                        ));
                    }
                    a2b = Some(c);
                }
                AnyCodec::BytesToBytes(c) => {
                    if a2b.is_none() {
                        a2b = Some(Self::v2_bytes_codec(&cur, endian)?);
                    }
                    b2b.push(c);
                }
            }
        }
        let compressor = match compressor.filter(|c| !c.is_null()) {
            Some(c) => Some(registry.create_v2(c, &cur)?),
            None => None,
        };
        let mut tail = None;
        let a2b = match (a2b, compressor) {
            (Some(c), Some(AnyCodec::ArrayToBytes(o))) => {
                return Err(unsupported(
                    PIPELINE,
                    format!("two object codecs ('{}' and '{}')", c.name(), o.name()),
                ));
            }
            // zarr-python 3 also accepts the object codec as the compressor.
            (None, Some(AnyCodec::ArrayToBytes(o))) if b2b.is_empty() => o,
            (a2b, comp) => {
                match comp {
                    Some(AnyCodec::BytesToBytes(c)) => tail = Some(c),
                    Some(other) => {
                        return Err(unsupported(
                            PIPELINE,
                            format!("'{}' cannot be used as a compressor", other.name()),
                        ));
                    }
                    None => {}
                }
                match a2b {
                    Some(c) => c,
                    None => Self::v2_bytes_codec(&cur, endian)?,
                }
            }
        };
        b2b.extend(tail);
        Ok(CodecChain::new(a2a, a2b, b2b))
    }

    fn v2_bytes_codec(
        repr: &ChunkRepr,
        endian: Option<Endian>,
    ) -> CodecResult<Arc<dyn ArrayToBytesCodec>> {
        if repr.data_type.is_variable_length() {
            return Err(config_err(
                PIPELINE,
                "object (|O) arrays need an object codec (vlen-utf8, vlen-bytes, json2 or pickle) in 'filters'",
            ));
        }
        Ok(Arc::new(BytesCodec::for_type(
            &repr.data_type,
            endian.unwrap_or(Endian::Little),
        )))
    }

    /// The Zarr v3 `codecs` list (always objects, never short-hand strings).
    pub fn to_v3_json(&self) -> Vec<Value> {
        let mut v = Vec::with_capacity(self.array_to_array.len() + 1 + self.bytes_to_bytes.len());
        v.extend(self.array_to_array.iter().map(|c| c.to_v3_json()));
        v.push(self.array_to_bytes.to_v3_json());
        v.extend(self.bytes_to_bytes.iter().map(|c| c.to_v3_json()));
        v
    }

    /// The Zarr v2 form: a leading reversed transpose becomes `order: "F"`, the `bytes`
    /// codec's byte order goes to `endian` (for the dtype), an object codec and all
    /// bytes→bytes codecs but the last become filters, the last bytes→bytes codec is the
    /// compressor (pcodec or zfpy with no bytes→bytes codec after it is the compressor). Errors when a codec has no v2 form (e.g. sharding).
    pub fn to_v2(&self) -> CodecResult<V2Codecs> {
        let mut order_f = false;
        let mut filters = Vec::new();
        for (i, c) in self.array_to_array.iter().enumerate() {
            let codec: &dyn std::any::Any = c.as_ref();
            if i == 0
                && codec
                    .downcast_ref::<TransposeCodec>()
                    .is_some_and(TransposeCodec::is_reversal)
            {
                order_f = true;
                continue;
            }
            filters.push(
                c.to_v2_json()
                    .ok_or_else(|| unsupported(c.name(), "has no Zarr v2 form"))?,
            );
        }
        let mut endian = None;
        let mut compressor = None;
        let numeric_serializer = matches!(
            self.array_to_bytes.name(),
            "numcodecs.pcodec" | "numcodecs.zfpy"
        );
        if let Some(bytes) = self.serializer::<BytesCodec>() {
            endian = bytes.endian();
        } else if numeric_serializer && self.bytes_to_bytes.is_empty() {
            // pcodec / zfpy alone are the compressor, as numcodecs' users write them.
            compressor =
                Some(self.array_to_bytes.to_v2_json().ok_or_else(|| {
                    unsupported(self.array_to_bytes.name(), "has no Zarr v2 form")
                })?);
        } else {
            let json = self
                .array_to_bytes
                .to_v2_json()
                .ok_or_else(|| unsupported(self.array_to_bytes.name(), "has no Zarr v2 form"))?;
            filters.push(json);
        }
        let n = self.bytes_to_bytes.len();
        for (i, c) in self.bytes_to_bytes.iter().enumerate() {
            let json = c
                .to_v2_json()
                .ok_or_else(|| unsupported(c.name(), "has no Zarr v2 form"))?;
            if i + 1 == n {
                compressor = Some(json);
            } else {
                filters.push(json);
            }
        }
        Ok(V2Codecs {
            order_f,
            filters: (!filters.is_empty()).then_some(filters),
            compressor,
            endian,
            dtype: self.array_to_bytes.v2_dtype(),
        })
    }

    /// The array→array codecs, in encoding order.
    pub fn array_to_array(&self) -> &[Arc<dyn ArrayToArrayCodec>] {
        &self.array_to_array
    }

    /// The array→bytes codec.
    pub fn array_to_bytes(&self) -> &Arc<dyn ArrayToBytesCodec> {
        &self.array_to_bytes
    }

    /// The bytes→bytes codecs, in encoding order.
    pub fn bytes_to_bytes(&self) -> &[Arc<dyn BytesToBytesCodec>] {
        &self.bytes_to_bytes
    }

    /// The array→bytes codec as a `T`, when it is one (whatever codecs surround it).
    pub fn serializer<T: ArrayToBytesCodec>(&self) -> Option<&T> {
        let codec: &dyn std::any::Any = self.array_to_bytes.as_ref();
        codec.downcast_ref::<T>()
    }

    /// This chain with its array→bytes codec, when that is a `T`, replaced by `f` of it (a
    /// typed change, such as a serializer mode the metadata does not record); `None` when the
    /// array→bytes codec is not a `T`.
    pub fn map_serializer<T: ArrayToBytesCodec + Clone>(
        &self,
        f: impl FnOnce(T) -> T,
    ) -> Option<CodecChain> {
        let codec = f(self.serializer::<T>()?.clone());
        Some(CodecChain::new(
            self.array_to_array.clone(),
            Arc::new(codec),
            self.bytes_to_bytes.clone(),
        ))
    }

    /// The array→bytes codec as a `T`, when the chain is exactly that one codec.
    pub fn only<T: ArrayToBytesCodec>(&self) -> Option<&T> {
        if self.array_to_array.is_empty() && self.bytes_to_bytes.is_empty() {
            self.serializer::<T>()
        } else {
            None
        }
    }

    /// The sharding codec, if the chain is exactly one `sharding_indexed` codec.
    pub fn sharding(&self) -> Option<&ShardingCodec> {
        self.only::<ShardingCodec>()
    }

    /// The representations seen by each codec: `[repr, after a2a[0], ...]`.
    fn reprs<'a>(&self, repr: &'a ChunkRepr) -> CodecResult<Vec<Cow<'a, ChunkRepr>>> {
        let mut v = Vec::with_capacity(self.array_to_array.len() + 1);
        v.push(Cow::Borrowed(repr));
        for c in &self.array_to_array {
            let next = c.encoded_repr(v.last().map(|r| r.as_ref()).unwrap_or(repr))?;
            v.push(Cow::Owned(next));
        }
        Ok(v)
    }

    /// The encoded size of a chunk of `repr` when it does not depend on the data.
    pub fn fixed_encoded_size(&self, repr: &ChunkRepr) -> Option<usize> {
        let reprs = self.reprs(repr).ok()?;
        let last = reprs.last()?.as_ref();
        let mut size = self.array_to_bytes.fixed_encoded_size(last)?;
        for c in &self.bytes_to_bytes {
            size = c.fixed_encoded_size(size)?;
        }
        Some(size)
    }

    /// Encode a chunk; `repr` is its decoded representation (full chunk shape).
    pub fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        self.encode_impl(data, repr, None)
    }

    /// Encode a chunk of which only the leading `extent` elements per axis lie inside the
    /// array (see [`ArrayToBytesCodec::encode_extent`]); identical to [`CodecChain::encode`]
    /// unless the array→bytes codec stores edge chunks truncated and no array→array codec
    /// precedes it.
    pub fn encode_edge(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<Vec<u8>> {
        self.encode_impl(data, repr, Some(extent))
    }

    fn encode_impl(
        &self,
        data: ArrayBytes,
        repr: &ChunkRepr,
        extent: Option<&[usize]>,
    ) -> CodecResult<Vec<u8>> {
        let mut data = data;
        let mut cur: Cow<ChunkRepr> = Cow::Borrowed(repr);
        for c in &self.array_to_array {
            let next = c.encoded_repr(&cur)?;
            data = c.encode(data, &cur)?;
            cur = Cow::Owned(next);
        }
        let bytes = match extent {
            Some(extent) if self.array_to_array.is_empty() => {
                self.array_to_bytes.encode_extent(data, &cur, extent)?
            }
            _ => self.array_to_bytes.encode(data, &cur)?,
        };
        if self.bytes_to_bytes.is_empty() {
            return Ok(bytes);
        }
        let mut cur = bytes;
        for c in &self.bytes_to_bytes {
            let mut out = take_buf();
            if let Err(e) = c.encode(&cur, &mut out) {
                give_buf(out);
                give_buf(cur);
                return Err(e);
            }
            give_buf(std::mem::replace(&mut cur, out));
        }
        // Do not hand out a buffer much larger than its contents (callers may keep many
        // encoded chunks, e.g. inner chunks of a shard); recycle it instead.
        if cur.capacity() > 2 * cur.len() + 4096 {
            let exact = cur.as_slice().to_vec();
            give_buf(cur);
            return Ok(exact);
        }
        Ok(cur)
    }

    /// Decode a chunk; `repr` is its decoded representation (full chunk shape).
    pub fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.decode_impl(Input::Owned(bytes), repr, None)
    }

    /// Decode a chunk stored by [`CodecChain::encode_edge`] with the same `extent` (full-size
    /// chunks are accepted too); the result has the full chunk shape.
    pub fn decode_edge(
        &self,
        bytes: Vec<u8>,
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        self.decode_impl(Input::Owned(bytes), repr, Some(extent))
    }

    /// [`CodecChain::decode_edge`] from borrowed bytes (no copy when bytes→bytes codecs run
    /// first).
    pub fn decode_edge_from_slice(
        &self,
        bytes: &[u8],
        repr: &ChunkRepr,
        extent: &[usize],
    ) -> CodecResult<ArrayBytes> {
        self.decode_impl(Input::Borrowed(bytes), repr, Some(extent))
    }

    /// [`CodecChain::decode`] from borrowed bytes (no copy when bytes→bytes codecs run
    /// first, as for a compressed inner chunk of a shard).
    pub fn decode_from_slice(&self, bytes: &[u8], repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.decode_impl(Input::Borrowed(bytes), repr, None)
    }

    fn decode_impl(
        &self,
        input: Input<'_>,
        repr: &ChunkRepr,
        extent: Option<&[usize]>,
    ) -> CodecResult<ArrayBytes> {
        // No allocation for the common chain without array→array codecs.
        let reprs = if self.array_to_array.is_empty() {
            Vec::new()
        } else {
            self.reprs(repr)?
        };
        let last = reprs.last().map(|r| r.as_ref()).unwrap_or(repr);
        let bytes = if self.bytes_to_bytes.is_empty() {
            match input {
                Input::Owned(v) => v,
                Input::Borrowed(s) => s.to_vec(),
            }
        } else {
            // Expected decoded size of each bytes→bytes codec, where known.
            let mut sizes = Vec::with_capacity(self.bytes_to_bytes.len());
            let mut size = self.array_to_bytes.fixed_encoded_size(last);
            for c in &self.bytes_to_bytes {
                sizes.push(size);
                size = size.and_then(|s| c.fixed_encoded_size(s));
            }
            let mut owned: Option<Vec<u8>> = None;
            let mut borrowed: Option<&[u8]> = None;
            match input {
                Input::Owned(v) => owned = Some(v),
                Input::Borrowed(s) => borrowed = Some(s),
            }
            for (i, c) in self.bytes_to_bytes.iter().enumerate().rev() {
                let mut out = if i == 0 {
                    take_buf_for(sizes[0])
                } else {
                    take_buf()
                };
                let src: &[u8] = match (&owned, borrowed) {
                    (Some(v), _) => v,
                    (None, Some(s)) => s,
                    (None, None) => &[],
                };
                if let Err(e) = c.decode(src, &mut out, sizes[i]) {
                    give_buf(out);
                    if let Some(v) = owned {
                        give_buf(v);
                    }
                    return Err(e);
                }
                if let Some(prev) = owned.replace(out) {
                    give_buf(prev);
                }
                borrowed = None;
            }
            owned.unwrap_or_default()
        };
        let mut data = match extent {
            Some(extent) if self.array_to_array.is_empty() => {
                self.array_to_bytes.decode_extent(bytes, last, extent)?
            }
            _ => self.array_to_bytes.decode(bytes, last)?,
        };
        for (i, c) in self.array_to_array.iter().enumerate().rev() {
            data = c.decode(data, &reprs[i])?;
        }
        Ok(data)
    }
}

enum Input<'a> {
    Owned(Vec<u8>),
    Borrowed(&'a [u8]),
}

/// Refuse an array→bytes codec that cannot serialise the data type it is handed (fixed-size
/// `bytes` for variable-length elements, or a variable-length codec for fixed-size ones).
fn check_array_to_bytes_fits(codec: &dyn ArrayToBytesCodec, repr: &ChunkRepr) -> CodecResult<()> {
    let variable = repr.data_type.is_variable_length();
    let fits = match codec.name() {
        "bytes" => !variable,
        "vlen-utf8" => matches!(repr.data_type, DataType::String),
        "vlen-bytes" => variable,
        _ => true,
    };
    if fits {
        Ok(())
    } else {
        Err(CodecError::Unsupported {
            codec: codec.name().to_string(),
            message: format!(
                "cannot encode data type {} (use {} for it)",
                repr.data_type,
                if variable {
                    "vlen-utf8 or vlen-bytes"
                } else {
                    "bytes"
                }
            ),
        })
    }
}
