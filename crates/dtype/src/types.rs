//! The [`DataType`] enum and its layout queries.

use std::fmt;
use std::sync::Arc;

/// Byte order of multi-byte values on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

/// Unit of a NumPy `datetime64` / `timedelta64` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    /// `Y`, calendar years.
    Year,
    /// `M`, calendar months.
    Month,
    /// `W`, weeks.
    Week,
    /// `D`, days.
    Day,
    /// `h`, hours.
    Hour,
    /// `m`, minutes.
    Minute,
    /// `s`, seconds.
    Second,
    /// `ms`, 10⁻³ s.
    Millisecond,
    /// `us`, 10⁻⁶ s.
    Microsecond,
    /// `ns`, 10⁻⁹ s.
    Nanosecond,
    /// `ps`, 10⁻¹² s.
    Picosecond,
    /// `fs`, 10⁻¹⁵ s.
    Femtosecond,
    /// `as`, 10⁻¹⁸ s.
    Attosecond,
    /// No unit (NumPy's bare `datetime64` / `timedelta64`, typestr `<M8`).
    Generic,
}

/// One field of a structured (compound) data type.
#[derive(Clone, Debug, PartialEq)]
pub struct StructField {
    /// Field name, unique within the structure.
    pub name: String,
    /// Type of one (scalar) element of the field.
    pub data_type: DataType,
    /// Sub-array shape of the field (`[]` for a scalar field); elements are C-ordered.
    pub shape: Vec<usize>,
    /// Byte order of this field on disk when it differs from the array's (Zarr v2 structured
    /// dtypes carry one per field); `None` follows the `bytes` codec.
    pub endian: Option<Endian>,
}

/// A data type defined outside this crate and registered at run time.
pub trait CustomDataType: Send + Sync + fmt::Debug {
    /// The Zarr v3 `data_type` name (and the name the registry resolves).
    fn name(&self) -> &str;
    /// Size of one element in bytes.
    fn size(&self) -> usize;
    /// Size of each multi-byte component that must be byte-swapped for a big-endian store
    /// (e.g. `[4, 4]` for a pair of 32-bit values); components are laid out back to back.
    fn components(&self) -> Vec<usize>;
    /// The Zarr v3 `data_type` JSON.
    fn to_v3_json(&self) -> serde_json::Value;
    /// Parse a fill value from its Zarr v3 JSON into the element's in-memory bytes.
    fn fill_from_json(&self, json: &serde_json::Value) -> Result<Vec<u8>, String>;
    /// Write a fill value as Zarr v3 JSON.
    fn fill_to_json(&self, bytes: &[u8]) -> serde_json::Value;
}

/// A handle to a registered custom data type.
#[derive(Clone, Debug)]
pub struct CustomType(
    /// The registered type's implementation.
    pub Arc<dyn CustomDataType>,
);

impl PartialEq for CustomType {
    fn eq(&self, other: &Self) -> bool {
        self.0.name() == other.0.name()
    }
}

/// One element type of an array.
#[derive(Clone, Debug, PartialEq)]
pub enum DataType {
    /// One byte, 0 or 1 (v3 `bool`, v2 `|b1`).
    Bool,
    /// `i8` (v3 `int8`, v2 `|i1`).
    Int8,
    /// `i16` (v3 `int16`, v2 `<i2`).
    Int16,
    /// `i32` (v3 `int32`, v2 `<i4`).
    Int32,
    /// `i64` (v3 `int64`, v2 `<i8`).
    Int64,
    /// `u8` (v3 `uint8`, v2 `|u1`).
    UInt8,
    /// `u16` (v3 `uint16`, v2 `<u2`).
    UInt16,
    /// `u32` (v3 `uint32`, v2 `<u4`).
    UInt32,
    /// `u64` (v3 `uint64`, v2 `<u8`).
    UInt64,
    /// IEEE 754 half precision (v3 `float16`, v2 `<f2`).
    Float16,
    /// `f32` (v3 `float32`, v2 `<f4`).
    Float32,
    /// `f64` (v3 `float64`, v2 `<f8`).
    Float64,
    /// Two `f32`, real then imaginary.
    Complex64,
    /// Two `f64`, real then imaginary.
    Complex128,
    /// Opaque bytes: v3 `r<8n>`, v2 `|V<n>`.
    RawBits {
        /// Size of one element in bytes.
        bytes: usize,
    },
    /// NumPy `|S<n>`: fixed-length, NUL-padded bytes.
    FixedBytes {
        /// Size of one element in bytes.
        len: usize,
    },
    /// NumPy `<U<n>`: `chars` UTF-32 code units, zero-padded.
    FixedUtf32 {
        /// Number of code units (4 bytes each) per element.
        chars: usize,
    },
    /// Variable-length UTF-8 text (v3 `string`, v2 `|O` + `vlen-utf8`).
    String,
    /// Variable-length bytes (v3 `bytes`, v2 `|O` + `vlen-bytes`).
    Bytes,
    /// Packed fields, no padding, in declaration order.
    Structured(Vec<StructField>),
    /// int64 count of `scale × unit` since the epoch; NaT = `i64::MIN`.
    DateTime64 {
        /// The time unit.
        unit: TimeUnit,
        /// Multiplier of the unit (`10` in `datetime64[10ms]`; 1 for a plain unit).
        scale: u32,
    },
    /// int64 count of `scale × unit`; NaT = `i64::MIN`.
    TimeDelta64 {
        /// The time unit.
        unit: TimeUnit,
        /// Multiplier of the unit (`10` in `timedelta64[10ms]`; 1 for a plain unit).
        scale: u32,
    },
    /// A type registered at run time.
    Custom(CustomType),
}

impl DataType {
    /// Size of one element in bytes, or `None` for variable-length types.
    pub fn fixed_size(&self) -> Option<usize> {
        use DataType::*;
        Some(match self {
            Bool | Int8 | UInt8 => 1,
            Int16 | UInt16 | Float16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Complex64 => 8,
            DateTime64 { .. } | TimeDelta64 { .. } => 8,
            Complex128 => 16,
            RawBits { bytes } => *bytes,
            FixedBytes { len } => *len,
            FixedUtf32 { chars } => 4 * chars,
            String | Bytes => return None,
            Structured(fields) => {
                let mut total = 0;
                for f in fields {
                    let n: usize = f.shape.iter().product();
                    total += n * f.data_type.fixed_size()?;
                }
                total
            }
            Custom(c) => c.0.size(),
        })
    }

    /// The same type with every structured field's own byte order removed (recursively), so
    /// that one byte order (the `bytes` codec's) applies to the whole element, as Zarr v3
    /// requires. Element values are unchanged: in memory every field is little-endian.
    pub fn without_field_byte_orders(&self) -> DataType {
        match self {
            DataType::Structured(fields) => DataType::Structured(
                fields
                    .iter()
                    .map(|f| StructField {
                        name: f.name.clone(),
                        data_type: f.data_type.without_field_byte_orders(),
                        shape: f.shape.clone(),
                        endian: None,
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// True when some structured field (at any depth) carries its own byte order.
    pub fn has_field_byte_orders(&self) -> bool {
        match self {
            DataType::Structured(fields) => fields
                .iter()
                .any(|f| f.endian.is_some() || f.data_type.has_field_byte_orders()),
            _ => false,
        }
    }

    /// True for variable-length strings and bytes.
    pub fn is_variable_length(&self) -> bool {
        self.fixed_size().is_none()
    }

    /// Append `(offset, size, endian override)` for every multi-byte scalar component of one
    /// element, in layout order. Single-byte components are omitted.
    pub fn swap_components(&self, base: usize, out: &mut Vec<(usize, usize, Option<Endian>)>) {
        self.swap_components_with(base, None, out)
    }

    fn swap_components_with(
        &self,
        base: usize,
        endian: Option<Endian>,
        out: &mut Vec<(usize, usize, Option<Endian>)>,
    ) {
        use DataType::*;
        match self {
            Bool | Int8 | UInt8 | RawBits { .. } | FixedBytes { .. } | String | Bytes => {}
            Int16 | UInt16 | Float16 => out.push((base, 2, endian)),
            Int32 | UInt32 | Float32 => out.push((base, 4, endian)),
            Int64 | UInt64 | Float64 | DateTime64 { .. } | TimeDelta64 { .. } => {
                out.push((base, 8, endian))
            }
            Complex64 => {
                out.push((base, 4, endian));
                out.push((base + 4, 4, endian));
            }
            Complex128 => {
                out.push((base, 8, endian));
                out.push((base + 8, 8, endian));
            }
            FixedUtf32 { chars } => {
                for i in 0..*chars {
                    out.push((base + 4 * i, 4, endian));
                }
            }
            Structured(fields) => {
                let mut offset = base;
                for f in fields {
                    let n: usize = f.shape.iter().product();
                    let size = f.data_type.fixed_size().unwrap_or(0);
                    for i in 0..n {
                        f.data_type.swap_components_with(
                            offset + i * size,
                            f.endian.or(endian),
                            out,
                        );
                    }
                    offset += n * size;
                }
            }
            Custom(c) => {
                let mut offset = base;
                for size in c.0.components() {
                    if size > 1 {
                        out.push((offset, size, endian));
                    }
                    offset += size;
                }
            }
        }
    }

    /// Convert a buffer of packed elements between the in-memory (little-endian) layout and
    /// `endian` on disk. The operation is its own inverse. Fields of a structured type that
    /// carry their own [`StructField::endian`] use it instead of `endian`.
    pub fn swap_endian_in_place(&self, data: &mut [u8], endian: Endian) {
        let Some(size) = self.fixed_size() else {
            return;
        };
        if size == 0 {
            return;
        }
        let mut comps = Vec::new();
        self.swap_components(0, &mut comps);
        comps.retain(|(_, _, e)| e.unwrap_or(endian) == Endian::Big);
        if comps.is_empty() {
            return;
        }
        // Fast paths for plain scalars.
        if comps.len() == 1 && comps[0].0 == 0 && comps[0].1 == size {
            match size {
                2 => data.chunks_exact_mut(2).for_each(|c| c.swap(0, 1)),
                4 => data.chunks_exact_mut(4).for_each(|c| c.reverse()),
                8 => data.chunks_exact_mut(8).for_each(|c| c.reverse()),
                _ => data.chunks_exact_mut(size).for_each(|c| c.reverse()),
            }
            return;
        }
        for elem in data.chunks_exact_mut(size) {
            for &(off, len, _) in &comps {
                elem[off..off + len].reverse();
            }
        }
    }
}

impl DataType {
    /// The default fill value: one element of zero bytes (`false`, `0`, `0.0`, the epoch for
    /// datetimes, all-NUL text), or empty for variable-length strings and bytes (`""`, `b""`).
    pub fn zero_fill(&self) -> Vec<u8> {
        vec![0; self.fixed_size().unwrap_or(0)]
    }
}

/// The largest element this crate accepts from metadata or files, in bytes (NumPy's limit).
pub const MAX_ELEMENT_BYTES: usize = i32::MAX as usize;
