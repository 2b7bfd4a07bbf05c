//! numcodecs `vlen-array` (array→bytes; Zarr v3 `numcodecs.vlen-array`): every element is a
//! one-dimensional array of numbers of `dtype` (a ragged array), framed as `vlen-bytes` frames
//! its items: `u32le item_count`, then per element in C order `u32le byte_length` and the
//! numbers in `dtype`'s byte order.
//!
//! In memory the array's data type is variable-length bytes ([`DataType::Bytes`]) whose
//! elements hold the numbers little-endian; [`VlenArrayCodec::element_type`] says which
//! numbers they are (the array layer exposes that as the ragged element type).

use neurochunk_dtype::DataType;
use serde_json::{Map, Value};

use super::vlen::split_items;
use crate::numeric::TypeStr;
use crate::util::{corrupt, unsupported, v2_json, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const ID: &str = "vlen-array";

/// numcodecs `vlen-array`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VlenArrayCodec {
    dtype: TypeStr,
}

impl VlenArrayCodec {
    /// `vlen-array` of `element` numbers (int8–64, uint8–64, float16/32/64), stored in
    /// `big`-endian order when `big`.
    pub fn new(element: &DataType, big: bool) -> CodecResult<Self> {
        let s = neurochunk_dtype::v2::dtype_to_json(element, neurochunk_dtype::Endian::Little)
            .ok()
            .and_then(|d| d.dtype.as_str().map(str::to_string))
            .unwrap_or_default();
        let mut dtype = TypeStr::parse(&s).ok_or_else(|| {
            unsupported(
                ID,
                format!("elements must be integers or floats, not {element}"),
            )
        })?;
        dtype.big = big && dtype.num.size() > 1;
        Ok(VlenArrayCodec { dtype })
    }

    /// Parse a numcodecs configuration (`dtype` required).
    pub fn from_config(config: &Value) -> CodecResult<Self> {
        let c = Conf::new(ID, config)?;
        let s = c.required("dtype", c.str("dtype")?)?;
        let dtype = TypeStr::parse(s).ok_or_else(|| {
            unsupported(
                ID,
                format!("'dtype' {s:?} is not supported (integers and floats are)"),
            )
        })?;
        Ok(VlenArrayCodec { dtype })
    }

    /// The type of the numbers each element holds.
    pub fn element_type(&self) -> DataType {
        self.dtype.num.data_type()
    }

    /// The numbers' NumPy type string as configured (`<i4`, `>f8`, …).
    pub fn element_dtype(&self) -> String {
        self.dtype.to_numpy()
    }

    fn swap(&self, bytes: &mut [u8]) {
        if self.dtype.big {
            let size = self.dtype.num.size();
            bytes.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        }
    }
}

impl ArrayToBytesCodec for VlenArrayCodec {
    fn name(&self) -> &str {
        "numcodecs.vlen-array"
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        let ArrayBytes::Variable { data, offsets } = data else {
            return Err(unsupported(
                ID,
                format!("needs ragged elements, not {}", repr.data_type),
            ));
        };
        let size = self.dtype.num.size();
        let n = offsets.len().saturating_sub(1);
        let count = u32::try_from(n).map_err(|_| unsupported(ID, "more than 2^32-1 elements"))?;
        let mut out = Vec::with_capacity(4 + 4 * n + data.len());
        out.extend_from_slice(&count.to_le_bytes());
        for w in offsets.windows(2) {
            let item = data
                .get(w[0]..w[1])
                .ok_or_else(|| unsupported(ID, "element offsets are out of range"))?;
            if item.len() % size != 0 {
                return Err(unsupported(
                    ID,
                    format!(
                        "an element of {} bytes is not whole {size}-byte numbers",
                        item.len()
                    ),
                ));
            }
            let len = u32::try_from(item.len())
                .map_err(|_| unsupported(ID, "element longer than 4 GiB"))?;
            out.extend_from_slice(&len.to_le_bytes());
            let at = out.len();
            out.extend_from_slice(item);
            self.swap(&mut out[at..]);
        }
        Ok(out)
    }

    fn decode(&self, bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let size = self.dtype.num.size();
        let (mut data, offsets) = split_items(ID, &bytes, repr.num_elements(), |i, item| {
            if item.len() % size != 0 {
                return Err(corrupt(
                    ID,
                    format!(
                        "item {i}: {} bytes are not whole {size}-byte numbers",
                        item.len()
                    ),
                ));
            }
            Ok(())
        })?;
        for item in offsets.windows(2) {
            self.swap(&mut data[item[0]..item[1]]);
        }
        Ok(ArrayBytes::Variable { data, offsets })
    }

    fn to_v3_json(&self) -> Value {
        v3_json(self.name(), Some(self.config()))
    }

    fn to_v2_json(&self) -> Option<Value> {
        Some(v2_json(ID, self.config()))
    }
}

impl VlenArrayCodec {
    fn config(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("dtype".into(), Value::String(self.dtype.to_numpy()));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numcodecs_framing_both_byte_orders() {
        let repr = ChunkRepr {
            shape: vec![3],
            data_type: DataType::Bytes,
            fill_value: vec![],
        };
        let data = ArrayBytes::Variable {
            data: vec![1, 0, 2, 0, 3, 0],
            offsets: vec![0, 4, 4, 6],
        };
        let le =
            VlenArrayCodec::from_config(&serde_json::json!({"id": "vlen-array", "dtype": "<i2"}))
                .unwrap();
        let enc = le.encode(data.clone(), &repr).unwrap();
        assert_eq!(
            enc,
            [3, 0, 0, 0, 4, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0]
        );
        assert_eq!(le.decode(enc, &repr).unwrap(), data);
        let be = VlenArrayCodec::new(&DataType::Int16, true).unwrap();
        assert_eq!(be.element_dtype(), ">i2");
        let enc = be.encode(data.clone(), &repr).unwrap();
        assert_eq!(&enc[8..12], &[0, 1, 0, 2]);
        assert_eq!(be.decode(enc, &repr).unwrap(), data);
        // Odd byte counts and wrong item counts are corrupt, not a panic.
        assert!(le
            .decode(
                vec![3, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0],
                &repr
            )
            .is_err());
        assert!(le.decode(vec![1, 0, 0, 0, 0, 0, 0, 0], &repr).is_err());
    }
}
