//! Human-readable names: [`DataType`]'s `Display` (a short name the registry resolves back),
//! NumPy's `dtype.name`, and the unit codes of `datetime64` / `timedelta64`.

use std::fmt;

use crate::{DataType, TimeUnit};

impl TimeUnit {
    /// Every unit, in decreasing duration (`Generic` last).
    pub const ALL: [TimeUnit; 14] = [
        TimeUnit::Year,
        TimeUnit::Month,
        TimeUnit::Week,
        TimeUnit::Day,
        TimeUnit::Hour,
        TimeUnit::Minute,
        TimeUnit::Second,
        TimeUnit::Millisecond,
        TimeUnit::Microsecond,
        TimeUnit::Nanosecond,
        TimeUnit::Picosecond,
        TimeUnit::Femtosecond,
        TimeUnit::Attosecond,
        TimeUnit::Generic,
    ];

    /// The unit's code as NumPy and Zarr v3 spell it: `Y M W D h m s ms us ns ps fs as generic`.
    pub fn code(self) -> &'static str {
        match self {
            TimeUnit::Year => "Y",
            TimeUnit::Month => "M",
            TimeUnit::Week => "W",
            TimeUnit::Day => "D",
            TimeUnit::Hour => "h",
            TimeUnit::Minute => "m",
            TimeUnit::Second => "s",
            TimeUnit::Millisecond => "ms",
            TimeUnit::Microsecond => "us",
            TimeUnit::Nanosecond => "ns",
            TimeUnit::Picosecond => "ps",
            TimeUnit::Femtosecond => "fs",
            TimeUnit::Attosecond => "as",
            TimeUnit::Generic => "generic",
        }
    }

    /// Parse a unit code (case-sensitive: `M` is months, `m` minutes); `μs` is accepted for
    /// microseconds.
    pub fn from_code(code: &str) -> Option<TimeUnit> {
        match code {
            "μs" | "µs" => Some(TimeUnit::Microsecond),
            _ => TimeUnit::ALL.into_iter().find(|u| u.code() == code),
        }
    }
}

/// The bracketed unit NumPy appends to `M8`/`m8`: `[ns]`, `[10s]`, nothing for generic.
pub(crate) fn time_unit_suffix(unit: TimeUnit, scale: u32) -> String {
    match (unit, scale) {
        (TimeUnit::Generic, _) => String::new(),
        (_, 1) => format!("[{}]", unit.code()),
        _ => format!("[{scale}{}]", unit.code()),
    }
}

/// Parse the inside of NumPy's unit brackets: `ns`, `10s`, `generic`.
pub(crate) fn parse_time_unit_with_scale(text: &str) -> Option<(TimeUnit, u32)> {
    let digits = text.chars().take_while(char::is_ascii_digit).count();
    let (scale, code) = text.split_at(digits);
    let scale = if scale.is_empty() {
        1
    } else {
        scale.parse::<u32>().ok().filter(|s| *s > 0)?
    };
    Some((TimeUnit::from_code(code)?, scale))
}

impl DataType {
    /// The name NumPy gives this type (`dtype.name`): `uint16`, `float32`, `bytes96` for `S12`,
    /// `str96` for `U3`, `void64` for `V8` and structured types, `datetime64[ns]`, `object` for
    /// variable-length types; a custom type's own name.
    pub fn numpy_name(&self) -> String {
        let bits = |bytes: usize| bytes.saturating_mul(8);
        match self {
            DataType::FixedBytes { len } => format!("bytes{}", bits(*len)),
            DataType::FixedUtf32 { chars } => format!("str{}", bits(chars.saturating_mul(4))),
            DataType::RawBits { bytes } => format!("void{}", bits(*bytes)),
            DataType::Structured(_) => format!("void{}", bits(self.fixed_size().unwrap_or(0))),
            DataType::String | DataType::Bytes => "object".to_string(),
            DataType::DateTime64 { unit, scale } => {
                format!("datetime64{}", time_unit_suffix(*unit, *scale))
            }
            DataType::TimeDelta64 { unit, scale } => {
                format!("timedelta64{}", time_unit_suffix(*unit, *scale))
            }
            other => other.to_string(),
        }
    }
}

/// A short name: the Zarr v3 name for core types (`uint16`, `r64`), `S12` / `U3` for fixed-width
/// text, `string` / `bytes`, `datetime64[10s]`, a custom type's name. The name of every
/// non-structured built-in type (and of every registered custom type) resolves back to it
/// through [`crate::DataTypeRegistry::resolve`]. Structured types print as
/// `struct{a: int16, c: float32[2]}`.
impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let simple = match self {
            DataType::Bool => "bool",
            DataType::Int8 => "int8",
            DataType::Int16 => "int16",
            DataType::Int32 => "int32",
            DataType::Int64 => "int64",
            DataType::UInt8 => "uint8",
            DataType::UInt16 => "uint16",
            DataType::UInt32 => "uint32",
            DataType::UInt64 => "uint64",
            DataType::Float16 => "float16",
            DataType::Float32 => "float32",
            DataType::Float64 => "float64",
            DataType::Complex64 => "complex64",
            DataType::Complex128 => "complex128",
            DataType::String => "string",
            DataType::Bytes => "bytes",
            DataType::RawBits { bytes } => return write!(f, "r{}", bytes.saturating_mul(8)),
            DataType::FixedBytes { len } => return write!(f, "S{len}"),
            DataType::FixedUtf32 { chars } => return write!(f, "U{chars}"),
            DataType::DateTime64 { unit, scale } => {
                return write!(f, "datetime64{}", time_unit_suffix(*unit, *scale))
            }
            DataType::TimeDelta64 { unit, scale } => {
                return write!(f, "timedelta64{}", time_unit_suffix(*unit, *scale))
            }
            DataType::Custom(custom) => return f.write_str(custom.0.name()),
            DataType::Structured(fields) => {
                f.write_str("struct{")?;
                for (i, field) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {}", field.name, field.data_type)?;
                    if !field.shape.is_empty() {
                        write!(f, "{:?}", field.shape)?;
                    }
                }
                return f.write_str("}");
            }
        };
        f.write_str(simple)
    }
}
