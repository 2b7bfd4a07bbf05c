//! The `bytes` array→bytes codec: fixed-size elements in C order with a chosen byte order
//! (Zarr v3 core; also the implicit last step of every Zarr v2 numeric array).

use neurochunk_dtype::{DataType, Endian};
use serde_json::{json, Value};

use crate::util::{config_err, corrupt, obj, unsupported, v3_json, Conf};
use crate::{ArrayBytes, ArrayToBytesCodec, ChunkRepr, CodecResult};

const NAME: &str = "bytes";

/// True if an element has multi-byte scalar components, i.e. its bytes depend on the byte
/// order.
pub fn has_multibyte_components(dt: &DataType) -> bool {
    match dt {
        DataType::Bool | DataType::Int8 | DataType::UInt8 => false,
        DataType::RawBits { .. } | DataType::FixedBytes { .. } => false,
        DataType::String | DataType::Bytes => false,
        DataType::FixedUtf32 { chars } => *chars > 0,
        DataType::Structured(fields) => fields.iter().any(|f| {
            f.shape.iter().product::<usize>() > 0 && has_multibyte_components(&f.data_type)
        }),
        other => other.fixed_size().is_some_and(|s| s > 1),
    }
}

/// The size of every scalar component when an element is made of equal-size scalars.
fn uniform_component_size(dt: &DataType) -> Option<usize> {
    Some(match dt {
        DataType::Int16 | DataType::UInt16 | DataType::Float16 => 2,
        DataType::Int32 | DataType::UInt32 | DataType::Float32 | DataType::Complex64 => 4,
        DataType::FixedUtf32 { .. } => 4,
        DataType::Int64 | DataType::UInt64 | DataType::Float64 | DataType::Complex128 => 8,
        DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => 8,
        _ => return None,
    })
}

/// Reverse the bytes of every `N`-byte word.
fn swap_words<const N: usize>(data: &mut [u8]) {
    for w in data.chunks_exact_mut(N) {
        match N {
            2 => {
                let v = u16::from_ne_bytes([w[0], w[1]]).swap_bytes();
                w.copy_from_slice(&v.to_ne_bytes());
            }
            4 => {
                let v = u32::from_ne_bytes([w[0], w[1], w[2], w[3]]).swap_bytes();
                w.copy_from_slice(&v.to_ne_bytes());
            }
            8 => {
                let v = u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
                    .swap_bytes();
                w.copy_from_slice(&v.to_ne_bytes());
            }
            _ => w.reverse(),
        }
    }
}

fn endian_name(e: Endian) -> &'static str {
    match e {
        Endian::Little => "little",
        Endian::Big => "big",
    }
}

/// The `bytes` codec. `endian: None` is written as `{"name":"bytes"}` (what zarr-python 3
/// writes for single-byte types) and decodes as little-endian.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BytesCodec {
    endian: Option<Endian>,
}

impl BytesCodec {
    /// A `bytes` codec storing multi-byte values in `endian` order (`None`: no `endian` key).
    pub fn new(endian: Option<Endian>) -> Self {
        BytesCodec { endian }
    }

    /// The codec as zarr-python 3 would write it for `dt`: no `endian` for types whose bytes
    /// do not depend on the byte order.
    pub fn for_type(dt: &DataType, endian: Endian) -> Self {
        BytesCodec {
            endian: has_multibyte_components(dt).then_some(endian),
        }
    }

    /// The configured byte order (`None`: not given; decodes as little-endian).
    pub fn endian(&self) -> Option<Endian> {
        self.endian
    }

    /// Parse the v3 `configuration` (`null` allowed); `repr` is what the codec will encode.
    pub fn from_v3_config(config: &Value, repr: &ChunkRepr) -> CodecResult<Self> {
        let c = Conf::new(NAME, config)?;
        let endian = match c.str("endian")? {
            None => None,
            Some("little") => Some(Endian::Little),
            Some("big") => Some(Endian::Big),
            Some(other) => {
                return Err(config_err(
                    NAME,
                    format!("'endian' must be \"little\" or \"big\", found \"{other}\""),
                ))
            }
        };
        if endian.is_none()
            && has_multibyte_components(&repr.data_type)
            && !matches!(repr.data_type, DataType::Structured(_))
        {
            return Err(config_err(
                NAME,
                format!("'endian' is required for data type {:?}", repr.data_type),
            ));
        }
        Ok(BytesCodec { endian })
    }

    fn swap(&self, dt: &DataType, data: &mut [u8]) {
        let endian = self.endian.unwrap_or(Endian::Little);
        // Structured fields may carry their own byte order, so they always go through the swap.
        if endian == Endian::Big {
            // Types made of equal-size scalar components: a vectorisable word swap.
            match uniform_component_size(dt) {
                Some(2) => swap_words::<2>(data),
                Some(4) => swap_words::<4>(data),
                Some(8) => swap_words::<8>(data),
                _ => dt.swap_endian_in_place(data, endian),
            }
        } else if matches!(dt, DataType::Structured(_)) {
            dt.swap_endian_in_place(data, endian);
        }
    }

    fn elem_size(repr: &ChunkRepr) -> CodecResult<usize> {
        repr.data_type.fixed_size().ok_or_else(|| {
            unsupported(
                NAME,
                format!(
                    "variable-length data type {:?} needs vlen-utf8 or vlen-bytes",
                    repr.data_type
                ),
            )
        })
    }
}

impl ArrayToBytesCodec for BytesCodec {
    fn name(&self) -> &str {
        NAME
    }

    fn encode(&self, data: ArrayBytes, repr: &ChunkRepr) -> CodecResult<Vec<u8>> {
        let size = Self::elem_size(repr)?;
        match data {
            ArrayBytes::Fixed(mut bytes) => {
                let expected = size * repr.num_elements();
                if bytes.len() != expected {
                    return Err(unsupported(
                        NAME,
                        format!(
                            "chunk has {} bytes, expected {expected} for shape {:?}",
                            bytes.len(),
                            repr.shape
                        ),
                    ));
                }
                self.swap(&repr.data_type, &mut bytes);
                Ok(bytes)
            }
            ArrayBytes::Variable { .. } => {
                Err(unsupported(NAME, "cannot encode variable-length elements"))
            }
        }
    }

    fn decode(&self, mut bytes: Vec<u8>, repr: &ChunkRepr) -> CodecResult<ArrayBytes> {
        let size = Self::elem_size(repr)?;
        let expected = size * repr.num_elements();
        if bytes.len() != expected {
            return Err(corrupt(
                NAME,
                format!(
                    "chunk has {} bytes, expected {expected} for shape {:?}",
                    bytes.len(),
                    repr.shape
                ),
            ));
        }
        self.swap(&repr.data_type, &mut bytes);
        Ok(ArrayBytes::Fixed(bytes))
    }

    fn fixed_encoded_size(&self, repr: &ChunkRepr) -> Option<usize> {
        Some(repr.data_type.fixed_size()? * repr.num_elements())
    }

    fn to_v3_json(&self) -> Value {
        match self.endian {
            None => v3_json(NAME, None),
            Some(e) => v3_json(NAME, Some(obj([("endian", json!(endian_name(e)))]))),
        }
    }

    fn to_v2_json(&self) -> Option<Value> {
        None
    }
}
