//! The `vlen-utf8` and `vlen-bytes` array→bytes codecs (numcodecs framing, also Zarr v3):
//! `u32le item_count`, then for every element in C order `u32le byte_length` + its bytes.

use serde_json::{Map, Value};

use crate::util::{corrupt, unsupported, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

/// `vlen-utf8` (text, validated as UTF-8) or `vlen-bytes` (raw bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlenCodec {
    utf8: bool,
}

impl VlenCodec {
    /// `vlen-utf8`.
    pub fn utf8() -> Self {
        VlenCodec { utf8: true }
    }

    /// `vlen-bytes`.
    pub fn bytes() -> Self {
        VlenCodec { utf8: false }
    }

    /// True for `vlen-utf8`.
    pub fn is_utf8(&self) -> bool {
        self.utf8
    }

    /// Parse a v3 configuration (`{}` or `null`) or a v2 `{"id": ...}` object.
    pub fn from_config(utf8: bool, config: &Value) -> CodecResult<Self> {
        let name = if utf8 { "vlen-utf8" } else { "vlen-bytes" };
        Conf::new(name, config)?;
        Ok(VlenCodec { utf8 })
    }
}

fn read_u32(b: &[u8], at: usize) -> Option<usize> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as usize)
}

/// The items of numcodecs' vlen framing (a little-endian u32 count, then each item as a u32
/// length and its bytes), concatenated, with their end offsets after a leading 0. The count
/// must be `expected`, and `check` sees each item (its index and bytes) before it is kept.
pub(super) fn split_items(
    name: &str,
    bytes: &[u8],
    expected: usize,
    mut check: impl FnMut(usize, &[u8]) -> CodecResult<()>,
) -> CodecResult<(Vec<u8>, Vec<usize>)> {
    let count = read_u32(bytes, 0).ok_or_else(|| corrupt(name, "missing the 4-byte item count"))?;
    if count != expected {
        return Err(corrupt(
            name,
            format!("chunk holds {count} items, expected {expected}"),
        ));
    }
    // Each item needs at least its 4-byte length: check before allocating.
    let min = count.checked_mul(4).and_then(|m| m.checked_add(4));
    if min.is_none_or(|m| m > bytes.len()) {
        return Err(corrupt(
            name,
            format!("{count} items cannot fit in {} bytes", bytes.len()),
        ));
    }
    let mut offsets = Vec::with_capacity(count + 1);
    offsets.push(0);
    let mut data = Vec::with_capacity(bytes.len() - 4 - 4 * count);
    let mut pos = 4;
    for i in 0..count {
        let len = read_u32(bytes, pos).ok_or_else(|| {
            corrupt(
                name,
                format!("item {i}: length field past the end of the chunk"),
            )
        })?;
        pos += 4;
        let item = bytes.get(pos..pos + len).ok_or_else(|| {
            corrupt(
                name,
                format!(
                    "item {i}: {len} bytes at offset {pos} run past the end ({} bytes)",
                    bytes.len()
                ),
            )
        })?;
        check(i, item)?;
        data.extend_from_slice(item);
        offsets.push(data.len());
        pos += len;
    }
    if pos != bytes.len() {
        return Err(corrupt(
            name,
            format!("{} trailing bytes after the last item", bytes.len() - pos),
        ));
    }
    Ok((data, offsets))
}

impl ArrayToBytesCodec for VlenCodec {
    fn name(&self) -> &str {
        if self.utf8 {
            "vlen-utf8"
        } else {
            "vlen-bytes"
        }
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        let name = self.name();
        let ArrayBytes::Variable { data, offsets } = data else {
            return Err(unsupported(
                name,
                format!("needs variable-length elements, not {:?}", repr.data_type),
            ));
        };
        let n = offsets.len().saturating_sub(1);
        let count = u32::try_from(n).map_err(|_| unsupported(name, "more than 2^32-1 elements"))?;
        let mut out = Vec::with_capacity(4 + 4 * n + data.len());
        out.extend_from_slice(&count.to_le_bytes());
        for w in offsets.windows(2) {
            let item = data
                .get(w[0]..w[1])
                .ok_or_else(|| unsupported(name, "element offsets are out of range"))?;
            if self.utf8 && std::str::from_utf8(item).is_err() {
                return Err(unsupported(name, "element is not valid UTF-8"));
            }
            let len = u32::try_from(item.len())
                .map_err(|_| unsupported(name, "element longer than 4 GiB"))?;
            out.extend_from_slice(&len.to_le_bytes());
            out.extend_from_slice(item);
        }
        Ok(out)
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let name = self.name();
        let (data, offsets) = split_items(name, &bytes, repr.num_elements(), |i, item| {
            if self.utf8 && std::str::from_utf8(item).is_err() {
                return Err(corrupt(name, format!("item {i} is not valid UTF-8")));
            }
            Ok(())
        })?;
        Ok(ArrayBytes::Variable { data, offsets })
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(Map::new()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(serde_json::json!({ "id": self.name() }))
    }
}

macro_rules! vlen_alias {
    ($(#[$doc:meta])* $name:ident, $utf8:expr) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name(VlenCodec);

        impl $name {
            /// The codec (it has no parameters).
            pub fn new() -> Self {
                $name(VlenCodec { utf8: $utf8 })
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl ArrayToBytesCodec for $name {
            fn name(&self) -> &str {
                self.0.name()
            }
            fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
                self.0.encode(data, repr)
            }
            fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
                self.0.decode(bytes, repr)
            }
            fn to_v3_json(&self) -> Value {
                self.0.to_v3_json()
            }
            fn to_v2_json(&self) -> Option<Value> {
                self.0.to_v2_json()
            }
        }
    };
}

vlen_alias!(
    /// `vlen-utf8` as its own type (same codec as [`VlenCodec::utf8`]).
    VlenUtf8Codec,
    true
);
vlen_alias!(
    /// `vlen-bytes` as its own type (same codec as [`VlenCodec::bytes`]).
    VlenBytesCodec,
    false
);
