//! A small, safe layer over the HDF5 C library (through `hdf5-metno`): the structure of a file
//! (links of every kind, object identity), element types, attributes and small datasets read
//! into owned values, object and region references, dataset storage (layout, chunking, filters,
//! fill value, chunk addresses) and raw reads.
//!
//! Every call into the C library runs under `hdf5_metno::sync::sync`, the process-wide lock the
//! binding uses (the Debian build of the library is not thread-safe); the raw chunk bytes of the
//! import are read from the file directly, outside that lock.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;

use hdf5_metno::sync::sync;
use hdf5_metno::{Dataset, File, Group, IndexType, IterationOrder, LinkType, Location};
use hdf5_sys::h5::{haddr_t, hsize_t};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::H5P_DEFAULT;
use hdf5_sys::h5r::H5R_type_t;
use hdf5_sys::h5s::H5S_ALL;
use hdf5_sys::h5t::{H5T_class_t, H5T_cset_t, H5T_order_t, H5T_sign_t, H5T_str_t};

use hdf5_metno_sys as hdf5_sys;

/// Errors of this layer: a message; the caller adds the file and object.
pub type H5Result<T> = Result<T, String>;

fn h5err(e: hdf5_metno::Error) -> String {
    e.to_string()
}

/// Raw return values: negative means failure.
trait Code: Sized {
    fn check(self) -> H5Result<Self>;
}

impl Code for i32 {
    fn check(self) -> H5Result<Self> {
        hdf5_metno::h5check(self).map_err(h5err)
    }
}

impl Code for i64 {
    fn check(self) -> H5Result<Self> {
        hdf5_metno::h5check(self).map_err(h5err)
    }
}

/// Check a raw return value, turning a negative one into the library's error message.
fn check<T: Code>(value: T) -> H5Result<T> {
    value.check()
}

/// An owned identifier, closed (its reference count decremented) on drop.
pub struct Hid(hid_t);

impl Hid {
    fn new(id: hid_t) -> H5Result<Self> {
        check(id).map(Hid)
    }

    /// The raw identifier.
    pub fn id(&self) -> hid_t {
        self.0
    }
}

impl Drop for Hid {
    fn drop(&mut self) {
        sync(|| unsafe {
            hdf5_sys::h5i::H5Idec_ref(self.0);
        });
    }
}

/// `H5R_type_t` differs in its variant names between library versions; the values of the two
/// kinds used here (object 0, dataset region 1) are the same in all.
fn ref_type(region: bool) -> H5R_type_t {
    let value: i32 = i32::from(region);
    // SAFETY: `H5R_type_t` is a `repr(C)` enum with variants of values 0 and 1 in every
    // version of the bindings.
    unsafe { std::mem::transmute::<i32, H5R_type_t>(value) }
}

/// The HDF5 library's version, as "major.minor.release".
pub fn library_version() -> String {
    let (a, b, c) = hdf5_metno::library_version();
    format!("{a}.{b}.{c}")
}

/// Whether `path` starts with the HDF5 signature (also after a user block).
pub fn is_hdf5(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    sync(|| unsafe { hdf5_sys::h5f::H5Fis_hdf5(c.as_ptr()) > 0 })
}

/// Open a file read-only.
pub fn open_file(path: &Path) -> H5Result<File> {
    if !path.is_file() {
        return Err("not a file".into());
    }
    if !is_hdf5(path) {
        return Err("not an HDF5 file (no HDF5 signature)".into());
    }
    File::open(path).map_err(h5err)
}

/// The size of the user block (addresses in the file are relative to its end).
pub fn userblock(file: &File) -> H5Result<u64> {
    let fcpl = file.create_plist().map_err(h5err)?;
    let mut size: hsize_t = 0;
    sync(|| unsafe { check(hdf5_sys::h5p::H5Pget_userblock(fcpl.id(), &mut size)) })?;
    Ok(size)
}

/// One link of a group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// A hard link (the object itself).
    Hard,
    /// A soft link with its target path (as stored: absolute or relative to the group).
    Soft(String),
    /// An external link: file name and object path, as stored.
    External(String, String),
}

/// The links of `group`, by name.
pub fn links(group: &Group) -> H5Result<Vec<(String, LinkKind)>> {
    let list = group
        .links(IndexType::Name, IterationOrder::Increasing)
        .map_err(h5err)?;
    let mut out = Vec::with_capacity(list.len());
    for (name, info) in list {
        let kind = match info.link_type {
            LinkType::Hard => LinkKind::Hard,
            LinkType::Soft => {
                let value = link_value(group, &name)?;
                let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
                LinkKind::Soft(String::from_utf8_lossy(&value[..end]).into_owned())
            }
            LinkType::External => {
                let value = link_value(group, &name)?;
                let (file, object) = unpack_external(&value)?;
                LinkKind::External(file, object)
            }
        };
        out.push((name, kind));
    }
    Ok(out)
}

fn link_value(group: &Group, name: &str) -> H5Result<Vec<u8>> {
    let c = CString::new(name).map_err(|e| e.to_string())?;
    sync(|| unsafe {
        // The value of a soft link is its target with a NUL; external link values are a flag
        // byte and two NUL-terminated strings. Ask with a growing buffer.
        let mut size = 256usize;
        loop {
            let mut buf = vec![0u8; size];
            check(hdf5_sys::h5l::H5Lget_val(
                group.id(),
                c.as_ptr(),
                buf.as_mut_ptr().cast(),
                size,
                H5P_DEFAULT,
            ))?;
            let used = buf.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            if used + 1 < size || size >= 1 << 20 {
                return Ok(buf);
            }
            size *= 4;
        }
    })
}

fn unpack_external(value: &[u8]) -> H5Result<(String, String)> {
    sync(|| unsafe {
        let mut flags = 0u32;
        let mut file: *const c_char = std::ptr::null();
        let mut object: *const c_char = std::ptr::null();
        check(hdf5_sys::h5l::H5Lunpack_elink_val(
            value.as_ptr().cast(),
            value.len(),
            &mut flags,
            &mut file,
            &mut object,
        ))?;
        if file.is_null() || object.is_null() {
            return Err("external link without file or object".into());
        }
        // Both point into `value`.
        Ok((
            CStr::from_ptr(file).to_string_lossy().into_owned(),
            CStr::from_ptr(object).to_string_lossy().into_owned(),
        ))
    })
}

/// What a hard link leads to, and its identity (the object's address or token).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// A group.
    Group,
    /// A dataset.
    Dataset,
    /// A committed (named) datatype.
    Datatype,
}

/// The kind and identity of the object `name` of `group`.
pub fn object_info(group: &Group, name: &str) -> H5Result<(ObjectKind, String)> {
    let info = group.loc_info_by_name(name).map_err(h5err)?;
    let kind = match info.loc_type {
        hdf5_metno::LocationType::Group => ObjectKind::Group,
        hdf5_metno::LocationType::Dataset => ObjectKind::Dataset,
        hdf5_metno::LocationType::NamedDatatype => ObjectKind::Datatype,
        #[allow(unreachable_patterns)]
        _ => return Err("unknown object type".into()),
    };
    Ok((kind, format!("{:?}", info.token)))
}

/// Whether `path` (absolute) names an existing object, following soft links.
pub fn exists(file: &File, path: &str) -> bool {
    if path == "/" {
        return true;
    }
    let mut current = String::new();
    for part in path.trim_matches('/').split('/') {
        current.push('/');
        current.push_str(part);
        let Ok(c) = CString::new(current.as_str()) else {
            return false;
        };
        let ok = sync(|| unsafe {
            hdf5_sys::h5l::H5Lexists(file.id(), c.as_ptr(), H5P_DEFAULT) > 0
                && hdf5_sys::h5o::H5Oexists_by_name(file.id(), c.as_ptr(), H5P_DEFAULT) > 0
        });
        if !ok {
            return false;
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// Types

/// An element type, as read into memory (native byte order, the library's layout).
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// An integer of `size` bytes.
    Int {
        /// Bytes.
        size: usize,
        /// Signed.
        signed: bool,
    },
    /// An IEEE float of `size` bytes (2, 4 or 8).
    Float {
        /// Bytes.
        size: usize,
    },
    /// h5py's boolean: an 8-bit enum FALSE = 0, TRUE = 1.
    Bool,
    /// Any other enum: its integer values.
    Enum {
        /// Bytes of the base integer.
        size: usize,
        /// Signed base.
        signed: bool,
    },
    /// Fixed-length text of `size` bytes.
    FixedString {
        /// Bytes.
        size: usize,
        /// UTF-8 (else ASCII).
        utf8: bool,
        /// Space padded (else NUL terminated or padded).
        space_pad: bool,
    },
    /// Variable-length text (a `char *` in memory).
    VlenString {
        /// UTF-8 (else ASCII).
        utf8: bool,
    },
    /// An object reference (`hobj_ref_t`).
    ObjectRef,
    /// A dataset region reference (`hdset_reg_ref_t`).
    RegionRef,
    /// A compound: fields with their memory offsets.
    Compound {
        /// Bytes per element.
        size: usize,
        /// (name, offset, type).
        fields: Vec<(String, usize, Kind)>,
    },
    /// Anything else (opaque, bitfield, array, variable-length sequences, time): described.
    Unsupported(String),
}

impl Kind {
    /// Bytes per element in memory.
    pub fn size(&self) -> usize {
        match self {
            Kind::Int { size, .. }
            | Kind::Float { size }
            | Kind::Enum { size, .. }
            | Kind::FixedString { size, .. }
            | Kind::Compound { size, .. } => *size,
            Kind::Bool => 1,
            Kind::VlenString { .. } => std::mem::size_of::<*mut c_char>(),
            Kind::ObjectRef => std::mem::size_of::<haddr_t>(),
            Kind::RegionRef => 12,
            Kind::Unsupported(_) => 0,
        }
    }

    /// Whether elements hold pointers the library allocated (to be freed after a read).
    fn has_vlen(&self) -> bool {
        match self {
            Kind::VlenString { .. } => true,
            Kind::Compound { fields, .. } => fields.iter().any(|f| f.2.has_vlen()),
            _ => false,
        }
    }

    /// Whether this is a plain number (or bool/enum) type.
    pub fn is_numeric(&self) -> bool {
        matches!(
            self,
            Kind::Int { .. } | Kind::Float { .. } | Kind::Bool | Kind::Enum { .. }
        )
    }
}

/// A type as stored in the file: its memory view, byte order and size on disk.
pub struct FileType {
    /// The file type (for raw chunk bytes).
    pub id: Hid,
    /// The native memory type the library converts to.
    pub mem: Hid,
    /// What the memory type holds.
    pub kind: Kind,
    /// Big-endian on disk (numbers only).
    pub big_endian: bool,
    /// Bytes per element on disk.
    pub file_size: usize,
}

/// The type of a dataset or attribute (`type_id` is consumed).
pub fn file_type(type_id: hid_t) -> H5Result<FileType> {
    let id = Hid::new(type_id)?;
    sync(|| unsafe {
        let file_size = hdf5_sys::h5t::H5Tget_size(id.id());
        let class = hdf5_sys::h5t::H5Tget_class(id.id());
        let big_endian = matches!(class, H5T_class_t::H5T_INTEGER | H5T_class_t::H5T_FLOAT)
            && hdf5_sys::h5t::H5Tget_order(id.id()) == H5T_order_t::H5T_ORDER_BE;
        let mem = match class {
            // Strings and references are read as stored (no padding conversion).
            H5T_class_t::H5T_STRING | H5T_class_t::H5T_REFERENCE => {
                Hid::new(hdf5_sys::h5t::H5Tcopy(id.id()))?
            }
            _ => Hid::new(hdf5_sys::h5t::H5Tget_native_type(
                id.id(),
                hdf5_sys::h5t::H5T_direction_t::H5T_DIR_ASCEND,
            ))?,
        };
        let kind = kind_of(mem.id())?;
        Ok(FileType {
            id,
            mem,
            kind,
            big_endian,
            file_size,
        })
    })
}

/// The name of member `i` of the enum or compound type `t` (empty if it has none).
///
/// # Safety
/// `t` must be an open enum or compound datatype with more than `i` members.
unsafe fn member_name(t: hid_t, i: u32) -> String {
    let name = hdf5_sys::h5t::H5Tget_member_name(t, i);
    if name.is_null() {
        return String::new();
    }
    let text = CStr::from_ptr(name).to_string_lossy().into_owned();
    hdf5_sys::h5::H5free_memory(name.cast());
    text
}

fn kind_of(t: hid_t) -> H5Result<Kind> {
    unsafe {
        let size = hdf5_sys::h5t::H5Tget_size(t);
        Ok(match hdf5_sys::h5t::H5Tget_class(t) {
            H5T_class_t::H5T_INTEGER => Kind::Int {
                size,
                signed: hdf5_sys::h5t::H5Tget_sign(t) == H5T_sign_t::H5T_SGN_2,
            },
            H5T_class_t::H5T_FLOAT if matches!(size, 2 | 4 | 8) => Kind::Float { size },
            H5T_class_t::H5T_FLOAT => Kind::Unsupported(format!("{size}-byte float")),
            H5T_class_t::H5T_ENUM => {
                let base = Hid::new(hdf5_sys::h5t::H5Tget_super(t))?;
                let signed = hdf5_sys::h5t::H5Tget_sign(base.id()) == H5T_sign_t::H5T_SGN_2;
                let n = check(hdf5_sys::h5t::H5Tget_nmembers(t))?;
                let mut members = Vec::new();
                for i in 0..n as u32 {
                    let text = member_name(t, i);
                    let mut value = [0u8; 16];
                    check(hdf5_sys::h5t::H5Tget_member_value(
                        t,
                        i,
                        value.as_mut_ptr().cast(),
                    ))?;
                    members.push((
                        text,
                        value[0],
                        value[1..size.min(16)].iter().all(|&b| b == 0),
                    ));
                }
                let is_bool = size == 1
                    && members.len() == 2
                    && members.iter().any(|(n, v, _)| n == "FALSE" && *v == 0)
                    && members.iter().any(|(n, v, _)| n == "TRUE" && *v == 1);
                if is_bool {
                    Kind::Bool
                } else {
                    Kind::Enum { size, signed }
                }
            }
            H5T_class_t::H5T_STRING => {
                let utf8 = hdf5_sys::h5t::H5Tget_cset(t) == H5T_cset_t::H5T_CSET_UTF8;
                if check(hdf5_sys::h5t::H5Tis_variable_str(t))? > 0 {
                    Kind::VlenString { utf8 }
                } else {
                    Kind::FixedString {
                        size,
                        utf8,
                        space_pad: hdf5_sys::h5t::H5Tget_strpad(t) == H5T_str_t::H5T_STR_SPACEPAD,
                    }
                }
            }
            H5T_class_t::H5T_REFERENCE => {
                if size == 12 {
                    Kind::RegionRef
                } else if size == std::mem::size_of::<haddr_t>() {
                    Kind::ObjectRef
                } else {
                    Kind::Unsupported(format!("{size}-byte reference (HDF5 1.12 references)"))
                }
            }
            H5T_class_t::H5T_COMPOUND => {
                let n = check(hdf5_sys::h5t::H5Tget_nmembers(t))?;
                let mut fields = Vec::new();
                for i in 0..n as u32 {
                    let text = member_name(t, i);
                    let offset = hdf5_sys::h5t::H5Tget_member_offset(t, i);
                    let member = Hid::new(hdf5_sys::h5t::H5Tget_member_type(t, i))?;
                    fields.push((text, offset, kind_of(member.id())?));
                }
                Kind::Compound { size, fields }
            }
            H5T_class_t::H5T_ARRAY => Kind::Unsupported("array type".into()),
            H5T_class_t::H5T_VLEN => Kind::Unsupported("variable-length sequence".into()),
            H5T_class_t::H5T_OPAQUE => Kind::Unsupported("opaque type".into()),
            H5T_class_t::H5T_BITFIELD => Kind::Unsupported("bitfield type".into()),
            H5T_class_t::H5T_TIME => Kind::Unsupported("time type".into()),
            _ => Kind::Unsupported("unknown type class".into()),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Dataspaces

/// The extent of a dataset or attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extent {
    /// No elements at all (`H5S_NULL`).
    Null,
    /// One element, no axes.
    Scalar,
    /// An n-d array.
    Simple(Vec<u64>),
}

impl Extent {
    /// Elements.
    pub fn count(&self) -> u64 {
        match self {
            Extent::Null => 0,
            Extent::Scalar => 1,
            Extent::Simple(d) => d.iter().product(),
        }
    }
}

fn extent_of(space: hid_t) -> H5Result<Extent> {
    unsafe {
        match hdf5_sys::h5s::H5Sget_simple_extent_type(space) {
            hdf5_sys::h5s::H5S_class_t::H5S_NULL => Ok(Extent::Null),
            hdf5_sys::h5s::H5S_class_t::H5S_SCALAR => Ok(Extent::Scalar),
            hdf5_sys::h5s::H5S_class_t::H5S_SIMPLE => {
                let n = check(hdf5_sys::h5s::H5Sget_simple_extent_ndims(space))?;
                let mut dims = vec![0 as hsize_t; n as usize];
                check(hdf5_sys::h5s::H5Sget_simple_extent_dims(
                    space,
                    dims.as_mut_ptr(),
                    std::ptr::null_mut(),
                ))?;
                Ok(Extent::Simple(dims))
            }
            _ => Err("invalid dataspace".into()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading elements

/// A decoded element.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
    /// A float.
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// Text; `utf8` false for ASCII.
    Text(String, bool),
    /// An object reference: the target's path, `None` for a null reference.
    Object(Option<String>),
    /// A region reference: the target's path and selection.
    Region(Option<(String, Selection)>),
    /// A compound element.
    Compound(Vec<Cell>),
}

/// A dataspace selection of a region reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The whole dataset.
    All,
    /// Per axis start, stop (exclusive), step.
    Slices(Vec<(u64, u64, u64)>),
    /// Points.
    Points(Vec<Vec<u64>>),
}

/// Read every element of a dataset (`dataset` true) or attribute `obj` of `count` elements.
fn read_cells(
    file_id: hid_t,
    obj: hid_t,
    dataset: bool,
    ty: &FileType,
    count: usize,
) -> H5Result<Vec<Cell>> {
    if let Kind::Unsupported(what) = &ty.kind {
        return Err(format!("unsupported element type: {what}"));
    }
    let size = ty.kind.size().max(1);
    let total = size
        .checked_mul(count)
        .ok_or_else(|| "element count overflows".to_string())?;
    let mut buf = vec![0u8; total];
    sync(|| unsafe {
        if dataset {
            check(hdf5_sys::h5d::H5Dread(
                obj,
                ty.mem.id(),
                H5S_ALL,
                H5S_ALL,
                H5P_DEFAULT,
                buf.as_mut_ptr().cast(),
            ))?;
        } else {
            check(hdf5_sys::h5a::H5Aread(
                obj,
                ty.mem.id(),
                buf.as_mut_ptr().cast(),
            ))?;
        }
        Ok::<(), String>(())
    })?;
    let decoded = (0..count)
        .map(|i| decode(file_id, &ty.kind, &buf[i * size..(i + 1) * size]))
        .collect::<H5Result<Vec<Cell>>>();
    if ty.kind.has_vlen() {
        for i in 0..count {
            free_vlen(&ty.kind, &buf[i * size..(i + 1) * size]);
        }
    }
    decoded
}

fn free_vlen(kind: &Kind, bytes: &[u8]) {
    match kind {
        Kind::VlenString { .. } => {
            let p = usize::from_ne_bytes(
                bytes[..std::mem::size_of::<usize>()]
                    .try_into()
                    .unwrap_or_default(),
            );
            if p != 0 {
                sync(|| unsafe {
                    hdf5_sys::h5::H5free_memory(p as *mut c_void);
                });
            }
        }
        Kind::Compound { fields, .. } => {
            for (_, offset, k) in fields {
                if let Some(b) = bytes.get(*offset..*offset + k.size()) {
                    free_vlen(k, b);
                }
            }
        }
        _ => {}
    }
}

fn int_le(bytes: &[u8], signed: bool) -> Cell {
    let mut v = [0u8; 8];
    let n = bytes.len().min(8);
    v[..n].copy_from_slice(&bytes[..n]);
    if signed {
        let negative = bytes.last().is_some_and(|b| b & 0x80 != 0);
        if negative {
            for b in v.iter_mut().skip(n) {
                *b = 0xff;
            }
        }
        Cell::Int(i64::from_le_bytes(v))
    } else {
        Cell::UInt(u64::from_le_bytes(v))
    }
}

fn decode(file_id: hid_t, kind: &Kind, bytes: &[u8]) -> H5Result<Cell> {
    Ok(match kind {
        Kind::Int { signed, .. } | Kind::Enum { signed, .. } => int_le(bytes, *signed),
        Kind::Bool => Cell::Bool(bytes[0] != 0),
        Kind::Float { size } => Cell::Float(match size {
            2 => f16_to_f64(u16::from_le_bytes([bytes[0], bytes[1]])),
            4 => f64::from(f32::from_le_bytes(
                bytes[..4].try_into().unwrap_or_default(),
            )),
            _ => f64::from_le_bytes(bytes[..8].try_into().unwrap_or_default()),
        }),
        Kind::FixedString {
            utf8, space_pad, ..
        } => {
            let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
            let mut text = &bytes[..end];
            if *space_pad {
                while text.last() == Some(&b' ') {
                    text = &text[..text.len() - 1];
                }
            }
            Cell::Text(String::from_utf8_lossy(text).into_owned(), *utf8)
        }
        Kind::VlenString { utf8 } => {
            let p = usize::from_ne_bytes(
                bytes[..std::mem::size_of::<usize>()]
                    .try_into()
                    .unwrap_or_default(),
            );
            let text = if p == 0 {
                String::new()
            } else {
                // SAFETY: the library wrote a NUL-terminated string it allocated.
                unsafe { CStr::from_ptr(p as *const c_char) }
                    .to_string_lossy()
                    .into_owned()
            };
            Cell::Text(text, *utf8)
        }
        Kind::ObjectRef => {
            if bytes.iter().all(|&b| b == 0) {
                Cell::Object(None)
            } else {
                Cell::Object(Some(reference_name(file_id, bytes, false)?))
            }
        }
        Kind::RegionRef => {
            if bytes.iter().all(|&b| b == 0) {
                Cell::Region(None)
            } else {
                let path = reference_name(file_id, bytes, true)?;
                let selection = region_selection(file_id, bytes)?;
                Cell::Region(Some((path, selection)))
            }
        }
        Kind::Compound { fields, .. } => Cell::Compound(
            fields
                .iter()
                .map(|(name, offset, k)| {
                    let b = bytes
                        .get(*offset..*offset + k.size())
                        .ok_or_else(|| format!("compound field '{name}' out of range"))?;
                    decode(file_id, k, b)
                })
                .collect::<H5Result<Vec<_>>>()?,
        ),
        Kind::Unsupported(what) => return Err(format!("unsupported element type: {what}")),
    })
}

fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let frac = f64::from(bits & 0x3ff);
    sign * match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The path of a reference's target; an error if it does not resolve (dangling).
fn reference_name(file_id: hid_t, bytes: &[u8], region: bool) -> H5Result<String> {
    sync(|| unsafe {
        let kind = ref_type(region);
        // Dereference first: a dangling reference fails here with the library's reason.
        let obj = hdf5_sys::h5r::H5Rdereference2(file_id, H5P_DEFAULT, kind, bytes.as_ptr().cast());
        if obj < 0 {
            return Err("a reference whose target does not exist (dangling reference)".into());
        }
        let _obj = Hid(obj);
        let n = hdf5_sys::h5r::H5Rget_name(
            file_id,
            kind,
            bytes.as_ptr().cast(),
            std::ptr::null_mut(),
            0,
        );
        if n <= 0 {
            return Err(
                "a reference whose target has no path in the file (unlinked object)".into(),
            );
        }
        let mut buf = vec![0u8; n as usize + 1];
        if hdf5_sys::h5r::H5Rget_name(
            file_id,
            kind,
            bytes.as_ptr().cast(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        ) < 0
        {
            return Err("cannot get the path of a reference's target".into());
        }
        buf.truncate(n as usize);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    })
}

fn region_selection(file_id: hid_t, bytes: &[u8]) -> H5Result<Selection> {
    sync(|| unsafe {
        let space = Hid::new(hdf5_sys::h5r::H5Rget_region(
            file_id,
            ref_type(true),
            bytes.as_ptr().cast(),
        ))?;
        let s = space.id();
        let rank = check(hdf5_sys::h5s::H5Sget_simple_extent_ndims(s))? as usize;
        use hdf5_sys::h5s::H5S_sel_type;
        match hdf5_sys::h5s::H5Sget_select_type(s) {
            H5S_sel_type::H5S_SEL_ALL => Ok(Selection::All),
            H5S_sel_type::H5S_SEL_NONE => Ok(Selection::Points(Vec::new())),
            H5S_sel_type::H5S_SEL_POINTS => {
                let n = check(hdf5_sys::h5s::H5Sget_select_elem_npoints(s))? as usize;
                let mut buf = vec![0 as hsize_t; n * rank];
                check(hdf5_sys::h5s::H5Sget_select_elem_pointlist(
                    s,
                    0,
                    n as hsize_t,
                    buf.as_mut_ptr(),
                ))?;
                Ok(Selection::Points(
                    buf.chunks(rank.max(1)).map(|p| p.to_vec()).collect(),
                ))
            }
            H5S_sel_type::H5S_SEL_HYPERSLABS => {
                if check(hdf5_sys::h5s::H5Sis_regular_hyperslab(s))? > 0 {
                    let mut start = vec![0 as hsize_t; rank];
                    let mut stride = vec![0 as hsize_t; rank];
                    let mut count = vec![0 as hsize_t; rank];
                    let mut block = vec![0 as hsize_t; rank];
                    check(hdf5_sys::h5s::H5Sget_regular_hyperslab(
                        s,
                        start.as_mut_ptr(),
                        stride.as_mut_ptr(),
                        count.as_mut_ptr(),
                        block.as_mut_ptr(),
                    ))?;
                    let mut axes = Vec::with_capacity(rank);
                    let mut regular = true;
                    for i in 0..rank {
                        let (a, st, c, b) = (start[i], stride[i].max(1), count[i], block[i]);
                        if c == 1 {
                            axes.push((a, a + b, 1));
                        } else if b == 1 {
                            axes.push((a, a + st * (c - 1) + 1, st));
                        } else if b == st {
                            axes.push((a, a + c * b, 1));
                        } else {
                            regular = false;
                        }
                    }
                    if regular {
                        return Ok(Selection::Slices(axes));
                    }
                }
                // An irregular selection: its points in C order.
                let n = check(hdf5_sys::h5s::H5Sget_select_hyper_nblocks(s))? as usize;
                let mut buf = vec![0 as hsize_t; n * rank * 2];
                check(hdf5_sys::h5s::H5Sget_select_hyper_blocklist(
                    s,
                    0,
                    n as hsize_t,
                    buf.as_mut_ptr(),
                ))?;
                let mut points = std::collections::BTreeSet::new();
                for block in buf.chunks(rank * 2) {
                    let (lo, hi) = block.split_at(rank);
                    let volume: u64 = lo.iter().zip(hi).map(|(a, b)| b - a + 1).product();
                    if points.len() as u64 + volume > 1 << 24 {
                        return Err("region reference selects too many points".into());
                    }
                    let mut p = lo.to_vec();
                    'block: loop {
                        points.insert(p.clone());
                        // The next point of the block in C order.
                        let mut axis = rank;
                        loop {
                            if axis == 0 {
                                break 'block;
                            }
                            axis -= 1;
                            if p[axis] < hi[axis] {
                                p[axis] += 1;
                                break;
                            }
                            p[axis] = lo[axis];
                        }
                    }
                }
                Ok(Selection::Points(points.into_iter().collect()))
            }
            _ => Err("invalid region selection".into()),
        }
    })
}

/// An attribute: its extent and elements (C order).
pub struct AttributeData {
    /// Extent.
    pub extent: Extent,
    /// Type.
    pub kind: Kind,
    /// Elements.
    pub cells: Vec<Cell>,
}

/// Every attribute of `loc`, by name.
pub fn attributes(file: &File, loc: &Location) -> H5Result<Vec<(String, H5Result<AttributeData>)>> {
    let names = loc.attr_names().map_err(h5err)?;
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let data = (|| {
            let attr = loc.attr(&name).map_err(h5err)?;
            let ty = file_type(sync(|| unsafe { hdf5_sys::h5a::H5Aget_type(attr.id()) }))?;
            let space = Hid::new(sync(|| unsafe { hdf5_sys::h5a::H5Aget_space(attr.id()) }))?;
            let extent = sync(|| extent_of(space.id()))?;
            let count = extent.count();
            if count > 1 << 26 {
                return Err(format!("attribute of {count} elements is too large"));
            }
            let cells = if count == 0 {
                Vec::new()
            } else {
                read_cells(file.id(), attr.id(), false, &ty, count as usize)?
            };
            Ok(AttributeData {
                extent,
                kind: ty.kind,
                cells,
            })
        })();
        out.push((name, data));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Datasets

/// One filter of a dataset's pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// Filter id (1 deflate, 2 shuffle, 3 fletcher32, 4 szip, 5 nbit, 6 scale-offset, 32000+
    /// registered plugins).
    pub id: i32,
    /// Its name as stored.
    pub name: String,
    /// Client data values.
    pub values: Vec<u32>,
}

/// How a dataset's data is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Stored inside the object header.
    Compact,
    /// One contiguous block at `address` (`None`: never written) of `size` bytes; or in
    /// external raw files (`external`).
    Contiguous {
        /// File offset.
        address: Option<u64>,
        /// Bytes.
        size: u64,
        /// Stored in external raw files.
        external: bool,
    },
    /// Chunked.
    Chunked {
        /// Chunk shape.
        chunks: Vec<u64>,
    },
    /// A virtual dataset (mapped from other datasets).
    Virtual,
}

/// A dataset's description.
pub struct DatasetInfo {
    /// Extent.
    pub extent: Extent,
    /// Type.
    pub ty: FileType,
    /// Layout.
    pub layout: Layout,
    /// Filter pipeline.
    pub filters: Vec<Filter>,
    /// The fill value in memory representation (native order), when defined.
    pub fill: Option<Vec<u8>>,
}

/// Describe `ds`.
pub fn dataset_info(ds: &Dataset) -> H5Result<DatasetInfo> {
    let ty = file_type(sync(|| unsafe { hdf5_sys::h5d::H5Dget_type(ds.id()) }))?;
    let space = Hid::new(sync(|| unsafe { hdf5_sys::h5d::H5Dget_space(ds.id()) }))?;
    let extent = sync(|| extent_of(space.id()))?;
    sync(|| unsafe {
        let dcpl = Hid::new(hdf5_sys::h5d::H5Dget_create_plist(ds.id()))?;
        use hdf5_sys::h5d::H5D_layout_t;
        let layout = match hdf5_sys::h5p::H5Pget_layout(dcpl.id()) {
            H5D_layout_t::H5D_COMPACT => Layout::Compact,
            H5D_layout_t::H5D_CONTIGUOUS => {
                let external = hdf5_sys::h5p::H5Pget_external_count(dcpl.id()) > 0;
                let address = hdf5_sys::h5d::H5Dget_offset(ds.id());
                Layout::Contiguous {
                    address: (address != haddr_t::MAX).then_some(address),
                    size: hdf5_sys::h5d::H5Dget_storage_size(ds.id()),
                    external,
                }
            }
            H5D_layout_t::H5D_CHUNKED => {
                let n = check(hdf5_sys::h5p::H5Pget_chunk(
                    dcpl.id(),
                    0,
                    std::ptr::null_mut(),
                ))?;
                let mut dims = vec![0 as hsize_t; n as usize];
                check(hdf5_sys::h5p::H5Pget_chunk(dcpl.id(), n, dims.as_mut_ptr()))?;
                Layout::Chunked { chunks: dims }
            }
            H5D_layout_t::H5D_VIRTUAL => Layout::Virtual,
            _ => return Err("unknown storage layout".to_string()),
        };
        let mut filters = Vec::new();
        let n = check(hdf5_sys::h5p::H5Pget_nfilters(dcpl.id()))?;
        for i in 0..n as u32 {
            let mut flags = 0u32;
            let mut nvalues: usize = 16;
            let mut values = vec![0u32; 16];
            let mut name = [0 as c_char; 256];
            let mut config = 0u32;
            let id = check(hdf5_sys::h5p::H5Pget_filter2(
                dcpl.id(),
                i,
                &mut flags,
                &mut nvalues,
                values.as_mut_ptr(),
                name.len(),
                name.as_mut_ptr(),
                &mut config,
            ))?;
            values.truncate(nvalues.min(16));
            filters.push(Filter {
                id,
                name: CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned(),
                values,
            });
        }
        let mut defined = hdf5_sys::h5d::H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED;
        check(hdf5_sys::h5p::H5Pfill_value_defined(
            dcpl.id(),
            &mut defined,
        ))?;
        let fill = if ty.kind.is_numeric()
            && defined != hdf5_sys::h5d::H5D_fill_value_t::H5D_FILL_VALUE_UNDEFINED
        {
            let mut buf = vec![0u8; ty.kind.size()];
            check(hdf5_sys::h5p::H5Pget_fill_value(
                dcpl.id(),
                ty.mem.id(),
                buf.as_mut_ptr().cast(),
            ))?;
            Some(buf)
        } else {
            None
        };
        Ok(DatasetInfo {
            extent,
            ty,
            layout,
            filters,
            fill,
        })
    })
}

/// Every element of a (small) dataset.
pub fn read_dataset_cells(file: &File, ds: &Dataset, info: &DatasetInfo) -> H5Result<Vec<Cell>> {
    let count = info.extent.count();
    if count == 0 {
        return Ok(Vec::new());
    }
    let count = usize::try_from(count).map_err(|_| "too many elements".to_string())?;
    read_cells(file.id(), ds.id(), true, &info.ty, count)
}

/// Read the box `start + shape` of a numeric dataset through the library, converted to the
/// memory type (native byte order), into `out` (exactly the box's bytes).
pub fn read_box(
    ds: &Dataset,
    info: &DatasetInfo,
    start: &[u64],
    shape: &[u64],
    out: &mut [u8],
) -> H5Result<()> {
    sync(|| unsafe {
        if matches!(info.extent, Extent::Scalar) || start.is_empty() {
            check(hdf5_sys::h5d::H5Dread(
                ds.id(),
                info.ty.mem.id(),
                H5S_ALL,
                H5S_ALL,
                H5P_DEFAULT,
                out.as_mut_ptr().cast(),
            ))?;
            return Ok(());
        }
        let file_space = Hid::new(hdf5_sys::h5d::H5Dget_space(ds.id()))?;
        check(hdf5_sys::h5s::H5Sselect_hyperslab(
            file_space.id(),
            hdf5_sys::h5s::H5S_seloper_t::H5S_SELECT_SET,
            start.as_ptr(),
            std::ptr::null(),
            shape.as_ptr(),
            std::ptr::null(),
        ))?;
        let mem_space = Hid::new(hdf5_sys::h5s::H5Screate_simple(
            shape.len() as i32,
            shape.as_ptr(),
            std::ptr::null(),
        ))?;
        check(hdf5_sys::h5d::H5Dread(
            ds.id(),
            info.ty.mem.id(),
            mem_space.id(),
            file_space.id(),
            H5P_DEFAULT,
            out.as_mut_ptr().cast(),
        ))?;
        Ok(())
    })
}

/// Whether the library can apply filter `id` (built in, or a plugin it found).
pub fn filter_available(id: i32) -> bool {
    sync(|| unsafe { hdf5_sys::h5z::H5Zfilter_avail(id) > 0 })
}

/// Where the chunk at element offset `offset` is stored: (file address, bytes, filter mask);
/// `None` when the chunk was never written.
pub fn chunk_location(ds: &Dataset, offset: &[u64]) -> H5Result<Option<(u64, u64, u32)>> {
    sync(|| unsafe {
        let mut mask = 0u32;
        let mut addr: haddr_t = 0;
        let mut size: hsize_t = 0;
        check(hdf5_sys::h5d::H5Dget_chunk_info_by_coord(
            ds.id(),
            offset.as_ptr(),
            &mut mask,
            &mut addr,
            &mut size,
        ))?;
        Ok((addr != haddr_t::MAX && size > 0).then_some((addr, size, mask)))
    })
}
