//! Element types (the datatype message) and extents (the dataspace message).

use crate::cursor::{enc_size, Cursor};
use crate::error::{unsupported, H5Result};

/// The character set of a string type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Charset {
    /// US-ASCII.
    Ascii,
    /// UTF-8.
    Utf8,
}

/// How a string shorter than its space is padded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Padding {
    /// Ends at the first NUL (C strings).
    NullTerm,
    /// Padded with NULs.
    NullPad,
    /// Padded with spaces (Fortran strings).
    SpacePad,
}

/// The kind of an HDF5 1.12 reference (`H5T_STD_REF`, datatype message version 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReferenceKind {
    /// `H5R_OBJECT2`: an object.
    Object,
    /// `H5R_DATASET_REGION2`: a selection of a dataset.
    Region,
    /// `H5R_ATTR`: an attribute of an object.
    Attribute,
}

/// A member of a compound type.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Its byte offset in the compound element.
    pub offset: usize,
    /// Its type.
    pub dtype: Datatype,
}

/// A name/value pair of an enumeration type.
#[derive(Clone, Debug, PartialEq)]
pub struct EnumMember {
    /// The name.
    pub name: String,
    /// The value (of the base integer type, sign-extended when it is signed).
    pub value: i128,
}

/// The type of the elements of a dataset or attribute, as stored in the file.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Datatype {
    /// A two's complement or unsigned integer.
    Int {
        /// Bytes per element (1, 2, 4, 8; other sizes are read as well).
        size: usize,
        /// Signed (two's complement).
        signed: bool,
        /// Big-endian in the file.
        big_endian: bool,
    },
    /// An IEEE 754 floating-point number (2, 4 or 8 bytes).
    Float {
        /// Bytes per element.
        size: usize,
        /// Big-endian in the file.
        big_endian: bool,
    },
    /// h5py's boolean: an enumeration of a 1-byte integer with exactly `FALSE = 0` and
    /// `TRUE = 1`.
    Bool,
    /// Any other enumeration.
    Enum {
        /// The integer type of the values.
        base: Box<Datatype>,
        /// The names and values, in the order stored.
        members: Vec<EnumMember>,
    },
    /// A string of fixed length.
    FixedString {
        /// Bytes per element.
        size: usize,
        /// Character set.
        charset: Charset,
        /// Padding.
        padding: Padding,
    },
    /// A variable-length string (stored in the global heap).
    VlenString {
        /// Character set.
        charset: Charset,
        /// Padding.
        padding: Padding,
        /// Bytes per element in the file: a 4-byte length and a global heap ID.
        size: usize,
    },
    /// An object reference (`hobj_ref_t`, `H5R_OBJECT1`): the address of an object header.
    ObjectRef {
        /// Bytes per element (the file's size of offsets).
        size: usize,
    },
    /// A dataset region reference (`hdset_reg_ref_t`, `H5R_DATASET_REGION1`): a global heap
    /// ID of the serialized dataset address and selection.
    RegionRef {
        /// Bytes per element (the file's size of offsets plus 4).
        size: usize,
    },
    /// An HDF5 1.12 reference (`H5T_STD_REF`).
    Reference {
        /// What it refers to.
        kind: ReferenceKind,
        /// Bytes per element.
        size: usize,
    },
    /// A compound (record) type.
    Compound {
        /// Bytes per element.
        size: usize,
        /// The members, in the order stored.
        fields: Vec<Field>,
    },
    /// A fixed-size array of another type.
    Array {
        /// The array's shape.
        dims: Vec<u64>,
        /// The element type.
        base: Box<Datatype>,
    },
    /// A variable-length sequence of another type (stored in the global heap).
    VlenSequence {
        /// The element type.
        base: Box<Datatype>,
        /// Bytes per element in the file: a 4-byte length and a global heap ID.
        size: usize,
    },
    /// Uninterpreted bytes with a tag.
    Opaque {
        /// Bytes per element.
        size: usize,
        /// The tag.
        tag: String,
    },
    /// A bit field.
    Bitfield {
        /// Bytes per element.
        size: usize,
        /// Big-endian in the file.
        big_endian: bool,
    },
    /// The (rarely used) time class.
    Time {
        /// Bytes per element.
        size: usize,
        /// Big-endian in the file.
        big_endian: bool,
    },
    /// A complex number (HDF5 2.0 complex class): real and imaginary parts of a float type.
    Complex {
        /// Bytes per element.
        size: usize,
        /// The type of each part.
        base: Box<Datatype>,
    },
    /// A type this reader can describe but not interpret (a non-IEEE float, VAX byte order):
    /// its elements read as bytes.
    Other {
        /// The datatype class (0 to 11).
        class: u8,
        /// Bytes per element.
        size: usize,
        /// What it is.
        description: String,
    },
}

impl Datatype {
    /// Bytes per element in the file.
    pub fn size(&self) -> usize {
        match self {
            Datatype::Int { size, .. }
            | Datatype::Float { size, .. }
            | Datatype::FixedString { size, .. }
            | Datatype::ObjectRef { size }
            | Datatype::RegionRef { size }
            | Datatype::Reference { size, .. }
            | Datatype::Compound { size, .. }
            | Datatype::Opaque { size, .. }
            | Datatype::Bitfield { size, .. }
            | Datatype::Time { size, .. }
            | Datatype::Complex { size, .. }
            | Datatype::VlenString { size, .. }
            | Datatype::VlenSequence { size, .. }
            | Datatype::Other { size, .. } => *size,
            Datatype::Bool => 1,
            Datatype::Enum { base, .. } => base.size(),
            Datatype::Array { dims, base } => dims
                .iter()
                .fold(base.size() as u64, |a, &d| a.saturating_mul(d))
                .min(usize::MAX as u64) as usize,
        }
    }

    /// Whether elements reference the global heap (variable-length data, region references)
    /// somewhere inside.
    pub fn has_heap_data(&self) -> bool {
        match self {
            Datatype::VlenString { .. } | Datatype::VlenSequence { .. } => true,
            Datatype::RegionRef { .. } => true,
            Datatype::Reference { kind, .. } => *kind != ReferenceKind::Object,
            Datatype::Compound { fields, .. } => fields.iter().any(|f| f.dtype.has_heap_data()),
            Datatype::Array { base, .. } => base.has_heap_data(),
            _ => false,
        }
    }

    /// Whether this is a number (integer, float, boolean or enumeration).
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            Datatype::Int { .. } | Datatype::Float { .. } | Datatype::Bool | Datatype::Enum { .. }
        )
    }
}

const MAX_DEPTH: u32 = 16;

/// Parse a datatype message (or a nested datatype) from `c`.
pub(crate) fn parse_datatype(c: &mut Cursor) -> H5Result<Datatype> {
    parse(c, 0)
}

fn name_string(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn parse(c: &mut Cursor, depth: u32) -> H5Result<Datatype> {
    if depth > MAX_DEPTH {
        return Err(c.err("datatype nested too deeply"));
    }
    let class_version = c.u8()?;
    let class = class_version & 0x0f;
    let version = class_version >> 4;
    if !(1..=5).contains(&version) {
        return Err(c.err(format!("datatype version {version}")));
    }
    let b0 = c.u8()?;
    let b1 = c.u8()?;
    let b2 = c.u8()?;
    let bits = u32::from(b0) | (u32::from(b1) << 8) | (u32::from(b2) << 16);
    let size = c.u32()? as usize;
    if size == 0 && class != 9 {
        return Err(c.err(format!("a datatype of class {class} and size 0")));
    }
    let offsets = c.sizes().offset as usize;
    Ok(match class {
        0 => {
            let _bit_offset = c.u16()?;
            let _precision = c.u16()?;
            if size == 0 || size > 16 {
                return Err(c.err(format!("{size}-byte integer")));
            }
            Datatype::Int {
                size,
                signed: bits & 0x08 != 0,
                big_endian: bits & 0x01 != 0,
            }
        }
        1 => {
            let _bit_offset = c.u16()?;
            let precision = c.u16()?;
            let exp_loc = c.u8()?;
            let exp_size = c.u8()?;
            let mant_loc = c.u8()?;
            let mant_size = c.u8()?;
            let bias = c.u32()?;
            let order = (bits & 0x01) | ((bits >> 5) & 0x02);
            let ieee = match size {
                2 => {
                    (precision, exp_loc, exp_size, mant_loc, mant_size, bias)
                        == (16, 10, 5, 0, 10, 15)
                }
                4 => {
                    (precision, exp_loc, exp_size, mant_loc, mant_size, bias)
                        == (32, 23, 8, 0, 23, 127)
                }
                8 => {
                    (precision, exp_loc, exp_size, mant_loc, mant_size, bias)
                        == (64, 52, 11, 0, 52, 1023)
                }
                _ => false,
            };
            if order > 1 || !ieee {
                Datatype::Other {
                    class,
                    size,
                    description: format!(
                        "{size}-byte float (precision {precision}, exponent {exp_size} bits at \
                         {exp_loc}, mantissa {mant_size} bits at {mant_loc}, bias {bias}, \
                         byte order {order})"
                    ),
                }
            } else {
                Datatype::Float {
                    size,
                    big_endian: order == 1,
                }
            }
        }
        2 => {
            let _precision = c.u16()?;
            Datatype::Time {
                size,
                big_endian: bits & 0x01 != 0,
            }
        }
        3 => Datatype::FixedString {
            size,
            charset: charset(bits >> 4),
            padding: padding(bits),
        },
        4 => {
            let _bit_offset = c.u16()?;
            let _precision = c.u16()?;
            Datatype::Bitfield {
                size,
                big_endian: bits & 0x01 != 0,
            }
        }
        5 => {
            let tag_len = (bits & 0xff) as usize;
            let tag = c.bytes(tag_len)?;
            let end = tag.iter().position(|&b| b == 0).unwrap_or(tag.len());
            Datatype::Opaque {
                size,
                tag: name_string(&tag[..end]),
            }
        }
        6 => parse_compound(c, depth, version, bits, size)?,
        7 => {
            if version >= 4 {
                let kind = match bits & 0x0f {
                    2 => ReferenceKind::Object,
                    3 => ReferenceKind::Region,
                    4 => ReferenceKind::Attribute,
                    t => return Err(c.err(format!("reference type {t}"))),
                };
                Datatype::Reference { kind, size }
            } else {
                match bits & 0x0f {
                    0 => Datatype::ObjectRef { size: offsets },
                    1 => Datatype::RegionRef { size: offsets + 4 },
                    t => return Err(c.err(format!("reference type {t}"))),
                }
            }
        }
        8 => {
            let n = (bits & 0xffff) as usize;
            let base = parse(c, depth + 1)?;
            let (base_size, signed) = match &base {
                Datatype::Int { size, signed, .. } => (*size, *signed),
                _ => (base.size(), false),
            };
            if n > c.remaining() {
                return Err(c.err(format!("{n} enumeration members")));
            }
            let mut names = Vec::with_capacity(n);
            for _ in 0..n {
                let start = c.pos();
                let name = c.cstr()?;
                if version < 3 {
                    let used = c.pos() - start;
                    c.skip((8 - used % 8) % 8)?;
                }
                names.push(name_string(name));
            }
            let mut members = Vec::with_capacity(n);
            for name in names {
                let raw = c.bytes(base_size)?;
                let value = enum_value(raw, &base, signed);
                members.push(EnumMember { name, value });
            }
            let is_bool = base_size == 1
                && members.len() == 2
                && members.iter().any(|m| m.name == "FALSE" && m.value == 0)
                && members.iter().any(|m| m.name == "TRUE" && m.value == 1);
            if is_bool {
                Datatype::Bool
            } else {
                Datatype::Enum {
                    base: Box::new(base),
                    members,
                }
            }
        }
        9 => {
            let kind = bits & 0x0f;
            let base = parse(c, depth + 1)?;
            match kind {
                0 => Datatype::VlenSequence {
                    base: Box::new(base),
                    size: 4 + offsets + 4,
                },
                1 => Datatype::VlenString {
                    charset: charset(bits >> 8),
                    padding: padding(bits >> 4),
                    size: 4 + offsets + 4,
                },
                t => return Err(c.err(format!("variable-length type {t}"))),
            }
        }
        10 => {
            let ndims = c.u8()? as usize;
            if ndims > 32 {
                return Err(c.err(format!("array of {ndims} dimensions")));
            }
            if version < 3 {
                c.skip(3)?;
            }
            let mut dims = Vec::with_capacity(ndims);
            for _ in 0..ndims {
                dims.push(u64::from(c.u32()?));
            }
            if version < 3 {
                c.skip(4 * ndims)?;
            }
            let base = parse(c, depth + 1)?;
            let total = dims
                .iter()
                .try_fold(base.size() as u64, |a, &d| a.checked_mul(d));
            if total != Some(size as u64) {
                return Err(c.err(format!(
                    "array type of {size} bytes holds {dims:?} elements of {} bytes",
                    base.size()
                )));
            }
            Datatype::Array {
                dims,
                base: Box::new(base),
            }
        }
        11 => {
            let base = parse(c, depth + 1)?;
            if bits & 0x01 == 0 || (bits >> 1) & 0x03 != 0 {
                return Err(unsupported(
                    "a complex type that is not rectangular with parts of one type",
                ));
            }
            Datatype::Complex {
                size,
                base: Box::new(base),
            }
        }
        _ => return Err(c.err(format!("datatype class {class}"))),
    })
}

fn charset(v: u32) -> Charset {
    if v & 0x0f == 1 {
        Charset::Utf8
    } else {
        Charset::Ascii
    }
}

fn padding(v: u32) -> Padding {
    match v & 0x0f {
        0 => Padding::NullTerm,
        1 => Padding::NullPad,
        _ => Padding::SpacePad,
    }
}

fn enum_value(raw: &[u8], base: &Datatype, signed: bool) -> i128 {
    let big = matches!(
        base,
        Datatype::Int {
            big_endian: true,
            ..
        }
    );
    let mut v: u128 = 0;
    let n = raw.len().min(16);
    for i in 0..n {
        let b = if big { raw[n - 1 - i] } else { raw[i] };
        v |= u128::from(b) << (8 * i);
    }
    if signed && n > 0 && n < 16 && v >> (8 * n - 1) & 1 == 1 {
        v |= u128::MAX << (8 * n);
    }
    v as i128
}

fn parse_compound(
    c: &mut Cursor,
    depth: u32,
    version: u8,
    bits: u32,
    size: usize,
) -> H5Result<Datatype> {
    let n = (bits & 0xffff) as usize;
    if n > c.remaining() {
        return Err(c.err(format!("{n} compound members")));
    }
    let mut fields = Vec::with_capacity(n);
    for _ in 0..n {
        let start = c.pos();
        let name = name_string(c.cstr()?);
        if version < 3 {
            let used = c.pos() - start;
            c.skip((8 - used % 8) % 8)?;
        }
        let offset = if version >= 3 {
            c.uint(enc_size(size as u64))? as usize
        } else {
            c.u32()? as usize
        };
        let mut dims = Vec::new();
        if version == 1 {
            let ndims = c.u8()? as usize;
            c.skip(3)?;
            c.skip(4)?; // permutation
            c.skip(4)?;
            for i in 0..4 {
                let d = c.u32()?;
                if i < ndims {
                    dims.push(u64::from(d));
                }
            }
            if ndims > 4 {
                return Err(c.err(format!("compound member of {ndims} dimensions")));
            }
        }
        let mut dtype = parse(c, depth + 1)?;
        if !dims.is_empty() {
            dtype = Datatype::Array {
                dims,
                base: Box::new(dtype),
            };
        }
        let end = offset.checked_add(dtype.size());
        if end.is_none_or(|e| e > size) {
            return Err(c.err(format!(
                "compound member '{name}' at byte {offset} does not fit the {size}-byte element"
            )));
        }
        fields.push(Field {
            name,
            offset,
            dtype,
        });
    }
    Ok(Datatype::Compound { size, fields })
}

/// The shape of a dataset or attribute.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// No elements at all (`H5S_NULL`).
    Null,
    /// One element, no axes.
    Scalar,
    /// An n-dimensional array of this shape.
    Simple(Vec<u64>),
}

impl Extent {
    /// The number of elements (saturating).
    pub fn count(&self) -> u64 {
        match self {
            Extent::Null => 0,
            Extent::Scalar => 1,
            Extent::Simple(d) => d.iter().fold(1u64, |a, &b| a.saturating_mul(b)),
        }
    }

    /// The shape (empty for scalar and null extents).
    pub fn dims(&self) -> &[u64] {
        match self {
            Extent::Simple(d) => d,
            _ => &[],
        }
    }

    /// The number of axes.
    pub fn rank(&self) -> usize {
        self.dims().len()
    }
}

/// Parse a dataspace message: the extent and the maximum shape (`None` per unlimited axis).
pub(crate) fn parse_dataspace(c: &mut Cursor) -> H5Result<(Extent, Option<Vec<Option<u64>>>)> {
    let version = c.u8()?;
    let rank = c.u8()? as usize;
    let flags = c.u8()?;
    let kind = match version {
        1 => {
            c.skip(1)?;
            c.skip(4)?;
            if rank == 0 {
                0
            } else {
                1
            }
        }
        2 => c.u8()?,
        v => return Err(c.err(format!("dataspace version {v}"))),
    };
    if rank > 32 {
        return Err(c.err(format!("{rank} dimensions (at most 32)")));
    }
    match kind {
        0 => return Ok((Extent::Scalar, None)),
        2 => return Ok((Extent::Null, None)),
        1 => {}
        k => return Err(c.err(format!("dataspace type {k}"))),
    }
    let mut dims = Vec::with_capacity(rank);
    for _ in 0..rank {
        dims.push(c.length()?);
    }
    let max = if flags & 0x01 != 0 {
        let mut m = Vec::with_capacity(rank);
        let n = c.sizes().length as usize;
        for _ in 0..rank {
            let v = c.length()?;
            m.push(if crate::cursor::is_undefined(v, n) {
                None
            } else {
                Some(v)
            });
        }
        Some(m)
    } else {
        None
    };
    Ok((Extent::Simple(dims), max))
}
