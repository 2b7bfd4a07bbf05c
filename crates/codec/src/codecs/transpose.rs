//! The `transpose` array→array codec (Zarr v3 core): permutes the chunk's axes. Zarr v2
//! `order: "F"` is expressed as a transpose with the reversed axis order.

use serde_json::{json, Value};

use crate::subset::{permute, permute_variable};
use crate::util::{config_err, obj, unsupported, v3_json, Conf};
use crate::{ArrayBytes, ArrayToArrayCodec, ChunkRepr, CodecResult};

const NAME: &str = "transpose";

/// `transpose` with `order` a permutation: encoded axis `i` is decoded axis `order[i]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransposeCodec {
    order: Vec<usize>,
}

impl TransposeCodec {
    /// A transpose with the given order; it is checked (a permutation of the chunk's axes)
    /// when the codec is used.
    pub fn new(order: Vec<usize>) -> Self {
        TransposeCodec { order }
    }

    /// [`TransposeCodec::new`], checking now that `order` is a permutation.
    pub fn try_new(order: Vec<usize>) -> CodecResult<Self> {
        check_permutation(&order)?;
        Ok(TransposeCodec { order })
    }

    /// The reversed axis order of a rank-`ndim` array (F order).
    pub fn reversed(ndim: usize) -> Self {
        TransposeCodec {
            order: (0..ndim).rev().collect(),
        }
    }

    /// True when the order reverses every axis (what Zarr v2 calls `order: "F"`).
    pub fn is_reversal(&self) -> bool {
        let n = self.order().len();
        self.order()
            .iter()
            .enumerate()
            .all(|(i, &o)| o == n - 1 - i)
    }

    /// The permutation: axis `i` of the encoded array is axis `order[i]` of the input.
    pub fn order(&self) -> &[usize] {
        &self.order
    }

    /// True if this is the reversed order (`[n-1, ..., 0]`), i.e. Zarr v2 `order: "F"`.
    pub fn is_reversed(&self) -> bool {
        self.order
            .iter()
            .enumerate()
            .all(|(i, &o)| o == self.order.len() - 1 - i)
    }

    fn is_identity(&self) -> bool {
        self.order.iter().enumerate().all(|(i, &o)| i == o)
    }

    /// Parse the v3 configuration; the legacy strings `"C"` / `"F"` are accepted.
    pub fn from_v3_config(config: &Value, repr: &ChunkRepr) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        let order = c.required("order", c.get("order"))?;
        let nd = repr.shape.len();
        let order: Vec<usize> = match order {
            Value::String(s) if s == "C" => (0..nd).collect(),
            Value::String(s) if s == "F" => (0..nd).rev().collect(),
            Value::Array(a) => a
                .iter()
                .map(|v| v.as_u64().and_then(|u| usize::try_from(u).ok()))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    config_err(
                        NAME,
                        format!("'order' must be a list of axis indices, found {order}"),
                    )
                })?,
            other => {
                return Err(config_err(
                    NAME,
                    format!("'order' must be a list of axis indices, found {other}"),
                ))
            }
        };
        let codec = TransposeCodec::try_new(order)?;
        codec.check_rank(nd)?;
        Ok(codec)
    }

    fn check_rank(&self, nd: usize) -> CodecResult<()> {
        check_permutation(&self.order)?;
        if self.order.len() != nd {
            return Err(unsupported(
                NAME,
                format!(
                    "order {:?} has {} axes but the chunk has {nd}",
                    self.order,
                    self.order.len()
                ),
            ));
        }
        Ok(())
    }

    fn inverse(&self) -> Vec<usize> {
        let mut inv = vec![0; self.order.len()];
        for (i, &o) in self.order.iter().enumerate() {
            inv[o] = i;
        }
        inv
    }
}

fn check_permutation(order: &[usize]) -> CodecResult<()> {
    let mut seen = vec![false; order.len()];
    for &o in order {
        if o >= order.len() || seen[o] {
            return Err(config_err(
                NAME,
                format!("order {order:?} is not a permutation of 0..{}", order.len()),
            ));
        }
        seen[o] = true;
    }
    Ok(())
}

/// Permute `data` (shape `shape`) by `order`.
fn apply(
    data: ArrayBytes,
    shape: &[usize],
    order: &[usize],
    repr: &ChunkRepr,
) -> CodecResult<ArrayBytes> {
    let n: usize = shape.iter().product();
    match data {
        ArrayBytes::Fixed(src) => {
            let size = repr
                .data_type
                .fixed_size()
                .ok_or_else(|| unsupported(NAME, "fixed buffer for a variable-length type"))?;
            if src.len() != n * size {
                return Err(unsupported(
                    NAME,
                    format!("chunk has {} bytes, expected {}", src.len(), n * size),
                ));
            }
            let mut dst = vec![0u8; src.len()];
            permute(&src, shape, order, size, &mut dst);
            Ok(ArrayBytes::Fixed(dst))
        }
        ArrayBytes::Variable { data, offsets } => {
            if offsets.len() != n + 1
                || offsets.iter().any(|&o| o > data.len())
                || offsets.windows(2).any(|w| w[0] > w[1])
            {
                return Err(unsupported(
                    NAME,
                    "variable-length buffer does not match the chunk shape",
                ));
            }
            Ok(permute_variable(&data, &offsets, shape, order))
        }
    }
}

impl ArrayToArrayCodec for TransposeCodec {
    fn name(&self) -> &str {
        NAME
    }

    fn encoded_repr(&self, input: &ChunkRepr) -> CodecResult<ChunkRepr> {
        self.check_rank(input.shape.len())?;
        Ok(ChunkRepr {
            shape: self.order.iter().map(|&o| input.shape[o]).collect(),
            data_type: input.data_type.clone(),
            fill_value: input.fill_value.clone(),
        })
    }

    fn encode(&self, data: ArrayBytes, input: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.check_rank(input.shape.len())?;
        if self.is_identity() {
            return Ok(data);
        }
        apply(data, &input.shape, &self.order, input)
    }

    fn decode(&self, data: ArrayBytes, decoded: &ChunkRepr) -> CodecResult<ArrayBytes> {
        self.check_rank(decoded.shape.len())?;
        if self.is_identity() {
            return Ok(data);
        }
        let enc_shape: Vec<usize> = self.order.iter().map(|&o| decoded.shape[o]).collect();
        apply(data, &enc_shape, &self.inverse(), decoded)
    }

    fn to_v3_json(&self) -> Value {
        v3_json(NAME, Some(obj([("order", json!(self.order))])))
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}
