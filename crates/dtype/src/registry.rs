//! The data type registry: resolves a user-given type name (`uint16`, `<u2`, `float32`,
//! `datetime64[ms]`, `u16`, `Vec<u8>`, a custom type's name or alias) to exactly one
//! [`DataType`], and holds the custom types a caller registers at run time so that they also
//! round-trip through Zarr v3 metadata. A name that several types answer to is an error that
//! lists them; nothing is guessed.

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde_json::Value;

use crate::names::parse_time_unit_with_scale;
use crate::v2::parse_typestr;
use crate::v3::builtin_from_name;
use crate::{CustomDataType, CustomType, DataType, DtypeError, TimeUnit};

/// Custom types and aliases known in addition to the built-in names.
#[derive(Clone, Debug, Default)]
pub struct DataTypeRegistry {
    entries: Vec<Registered>,
}

#[derive(Clone, Debug)]
struct Registered {
    data_type: DataType,
    /// Names this entry answers to (compared case-insensitively); for a custom type, its own
    /// name comes first.
    names: Vec<String>,
    kind: EntryKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EntryKind {
    CustomType,
    Alias,
}

impl EntryKind {
    fn describe(self) -> &'static str {
        match self {
            EntryKind::CustomType => "registered custom type",
            EntryKind::Alias => "registered alias",
        }
    }
}

/// One way a name matched, for ambiguity messages.
struct Candidate {
    data_type: DataType,
    how: String,
}

impl DataTypeRegistry {
    /// A registry that knows only the built-in names.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register a custom data type under its [`CustomDataType::name`] and `aliases`. Returns
    /// the handle to put in [`DataType::Custom`]. Fails if a custom type of that name is
    /// already registered. Names may collide with built-in names; resolving such a name is
    /// then an error that lists both.
    pub fn register(
        &mut self,
        custom: Arc<dyn CustomDataType>,
        aliases: &[&str],
    ) -> Result<CustomType, DtypeError> {
        let name = custom.name().to_string();
        if name.is_empty() {
            return Err(DtypeError::UnknownName {
                name,
                expected: "a custom data type with a non-empty name".into(),
            });
        }
        if self
            .custom_types()
            .any(|c| c.0.name().eq_ignore_ascii_case(&name))
        {
            return Err(DtypeError::AlreadyRegistered { name });
        }
        let handle = CustomType(custom);
        let mut names = vec![name];
        names.extend(aliases.iter().map(|a| a.to_string()));
        self.entries.push(Registered {
            data_type: DataType::Custom(handle.clone()),
            names,
            kind: EntryKind::CustomType,
        });
        Ok(handle)
    }

    /// Let `alias` name `data_type` (e.g. `"spike_time"` for `datetime64[ns]`).
    pub fn register_alias(&mut self, alias: &str, data_type: DataType) {
        self.entries.push(Registered {
            data_type,
            names: vec![alias.to_string()],
            kind: EntryKind::Alias,
        });
    }

    /// The registered custom types, in registration order.
    pub fn custom_types(&self) -> impl Iterator<Item = &CustomType> {
        self.entries
            .iter()
            .filter_map(|entry| match &entry.data_type {
                DataType::Custom(custom) if entry.kind == EntryKind::CustomType => Some(custom),
                _ => None,
            })
    }

    /// The custom types whose Zarr v3 `data_type` is `json` (their name as a string, or their
    /// full JSON form).
    pub(crate) fn custom_types_matching_v3(&self, json: &Value) -> Vec<CustomType> {
        self.custom_types()
            .filter(|c| json.as_str() == Some(c.0.name()) || *json == c.0.to_v3_json())
            .cloned()
            .collect()
    }

    /// Resolve a type name to exactly one data type. Accepted: Zarr v3 names (`uint16`,
    /// `r64`, `string`, `bytes`), NumPy typestrs (`<u2`, `u2`, `>f8`, `S12`, `U5`, `M8[ns]`),
    /// NumPy names (`float32`, `bool_`, `str`, `datetime64[ms]`, `bytes96`), Rust names (`u16`,
    /// `i64`, `f32`, `bool`, `String`, `Vec<u8>`), and registered names and aliases. Word
    /// names ignore case (`Float32`, `UINT16`); typestrs and time units do not (`M8` is a
    /// datetime, `m8` a timedelta; `[M]` months, `[m]` minutes).
    ///
    /// Fails when nothing matches, and when different types match (e.g. `u8`, which is
    /// NumPy's uint64 and Rust's uint8); the message lists the candidates.
    pub fn resolve(&self, name: &str) -> Result<DataType, DtypeError> {
        let name = name.trim();
        let mut candidates = builtin_candidates(name);
        for entry in &self.entries {
            if entry.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                candidates.push(Candidate {
                    data_type: entry.data_type.clone(),
                    how: entry.kind.describe().to_string(),
                });
            }
        }
        // The same type reached through several spellings is one answer.
        let mut distinct: Vec<(DataType, Vec<String>)> = Vec::new();
        for candidate in candidates {
            match distinct.iter_mut().find(|(t, _)| *t == candidate.data_type) {
                Some((_, hows)) => hows.push(candidate.how),
                None => distinct.push((candidate.data_type, vec![candidate.how])),
            }
        }
        match distinct.len() {
            1 => Ok(distinct.remove(0).0),
            0 => Err(DtypeError::UnknownName {
                name: name.to_string(),
                expected: self.expected_names(),
            }),
            _ => Err(DtypeError::Ambiguous {
                name: name.to_string(),
                candidates: distinct
                    .into_iter()
                    .map(|(t, hows)| format!("{t} (as {})", hows.join(", ")))
                    .collect(),
            }),
        }
    }

    fn expected_names(&self) -> String {
        let mut text = String::from(
            "a Zarr v3 name (uint16, float32, r64, string, bytes), a NumPy typestr (<u2, >f8, \
             S12, U5, M8[ns]), a NumPy name (float32, bool_, datetime64[ms]) or a Rust type \
             (u16, f32, String, Vec<u8>)",
        );
        let registered: Vec<&str> = self
            .entries
            .iter()
            .flat_map(|e| e.names.iter().map(String::as_str))
            .collect();
        if !registered.is_empty() {
            text.push_str(&format!("; registered: {}", registered.join(", ")));
        }
        text
    }
}

/// Every built-in reading of `name`.
fn builtin_candidates(name: &str) -> Vec<Candidate> {
    let mut out = Vec::new();
    let mut push = |data_type: Option<DataType>, how: &str| {
        if let Some(data_type) = data_type {
            out.push(Candidate {
                data_type,
                how: how.to_string(),
            });
        }
    };
    let lower = name.to_ascii_lowercase();
    push(builtin_from_name(&lower).ok().flatten(), "Zarr v3 name");
    push(
        parse_typestr(name).ok().map(|(data_type, _)| data_type),
        "NumPy typestr",
    );
    push(numpy_name(name, &lower), "NumPy name");
    push(rust_name(name, &lower), "Rust type");
    out
}

/// NumPy's names for types (`np.dtype(name)`), plus `datetime64[unit]`, `timedelta64[unit]`
/// and the sized names NumPy reports as `dtype.name` (`bytes96`, `str96`, `void64`).
fn numpy_name(name: &str, lower: &str) -> Option<DataType> {
    let simple = match lower {
        "bool" | "bool_" | "bool8" => Some(DataType::Bool),
        "int8" | "byte" => Some(DataType::Int8),
        "int16" | "short" => Some(DataType::Int16),
        "int32" | "intc" => Some(DataType::Int32),
        "int64" | "int" | "int_" | "intp" | "long" | "longlong" => Some(DataType::Int64),
        "uint8" | "ubyte" => Some(DataType::UInt8),
        "uint16" | "ushort" => Some(DataType::UInt16),
        "uint32" | "uintc" => Some(DataType::UInt32),
        "uint64" | "uint" | "uintp" | "ulong" | "ulonglong" => Some(DataType::UInt64),
        "float16" | "half" => Some(DataType::Float16),
        "float32" | "single" => Some(DataType::Float32),
        "float64" | "float" | "float_" | "double" => Some(DataType::Float64),
        "complex64" | "csingle" => Some(DataType::Complex64),
        "complex128" | "complex" | "complex_" | "cdouble" => Some(DataType::Complex128),
        // zarr-python 3 reads these as variable-length UTF-8 text.
        "str" | "str_" | "string" | "unicode" => Some(DataType::String),
        "bytes" => Some(DataType::Bytes),
        _ => None,
    };
    if simple.is_some() {
        return simple;
    }
    for (prefix, is_datetime) in [("datetime64", true), ("timedelta64", false)] {
        if lower.starts_with(prefix) {
            // The unit keeps its case: `M` is months, `m` minutes.
            let rest = name.get(prefix.len()..)?;
            let (unit, scale) = if rest.is_empty() {
                (TimeUnit::Generic, 1)
            } else {
                parse_time_unit_with_scale(rest.strip_prefix('[')?.strip_suffix(']')?)?
            };
            return Some(if is_datetime {
                DataType::DateTime64 { unit, scale }
            } else {
                DataType::TimeDelta64 { unit, scale }
            });
        }
    }
    let sized = |prefix: &str, bits_per_unit: usize| -> Option<usize> {
        let bits: usize = lower.strip_prefix(prefix)?.parse().ok()?;
        (bits > 0 && bits % bits_per_unit == 0).then_some(bits / bits_per_unit)
    };
    if let Some(len) = sized("bytes", 8) {
        return Some(DataType::FixedBytes { len });
    }
    if let Some(chars) = sized("str", 32) {
        return Some(DataType::FixedUtf32 { chars });
    }
    sized("void", 8).map(|bytes| DataType::RawBits { bytes })
}

/// Rust type names. Primitive names are matched exactly (`U8` is NumPy's 8-character text,
/// not Rust's `u8`); type names ignore case (`string`, `vec<u8>`).
fn rust_name(name: &str, lower: &str) -> Option<DataType> {
    let primitive = match name {
        "bool" => Some(DataType::Bool),
        "i8" => Some(DataType::Int8),
        "i16" => Some(DataType::Int16),
        "i32" => Some(DataType::Int32),
        "i64" => Some(DataType::Int64),
        "u8" => Some(DataType::UInt8),
        "u16" => Some(DataType::UInt16),
        "u32" => Some(DataType::UInt32),
        "u64" => Some(DataType::UInt64),
        "f16" => Some(DataType::Float16),
        "f32" => Some(DataType::Float32),
        "f64" => Some(DataType::Float64),
        _ => None,
    };
    if primitive.is_some() {
        return primitive;
    }
    let compact: String = lower.chars().filter(|c| !c.is_whitespace()).collect();
    match compact.as_str() {
        "string" | "&str" | "str" | "box<str>" => Some(DataType::String),
        "vec<u8>" | "&[u8]" | "box<[u8]>" => Some(DataType::Bytes),
        "half::f16" => Some(DataType::Float16),
        "complex<f32>" => Some(DataType::Complex64),
        "complex<f64>" => Some(DataType::Complex128),
        _ => None,
    }
}

fn default_registry() -> &'static RwLock<DataTypeRegistry> {
    static DEFAULT: OnceLock<RwLock<DataTypeRegistry>> = OnceLock::new();
    DEFAULT.get_or_init(|| RwLock::new(DataTypeRegistry::new()))
}

/// Run `f` with the process-wide default registry (the one [`DataType::from_v3_json`] and
/// [`resolve`] use).
pub fn with_default_registry<R>(f: impl FnOnce(&DataTypeRegistry) -> R) -> R {
    let guard = default_registry()
        .read()
        .unwrap_or_else(PoisonError::into_inner);
    f(&guard)
}

/// Register a custom data type in the process-wide default registry.
pub fn register_default(
    custom: Arc<dyn CustomDataType>,
    aliases: &[&str],
) -> Result<CustomType, DtypeError> {
    default_registry()
        .write()
        .unwrap_or_else(PoisonError::into_inner)
        .register(custom, aliases)
}

/// Resolve a type name with the process-wide default registry
/// (see [`DataTypeRegistry::resolve`]).
pub fn resolve(name: &str) -> Result<DataType, DtypeError> {
    with_default_registry(|registry| registry.resolve(name))
}
