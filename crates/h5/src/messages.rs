//! Object header messages other than datatypes and dataspaces: data layout, filter pipeline,
//! fill value, links, link and attribute info, attributes, symbol tables, external files and
//! shared message references.

use neurochunk_store::Bytes;

use crate::cursor::{Cursor, Sizes};
use crate::datatype::{parse_dataspace, parse_datatype, Datatype, Extent};
use crate::error::{unsupported, H5Result};

/// Message types.
pub(crate) mod kind {
    pub const NIL: u16 = 0x00;
    pub const DATASPACE: u16 = 0x01;
    pub const LINK_INFO: u16 = 0x02;
    pub const DATATYPE: u16 = 0x03;
    pub const FILL_OLD: u16 = 0x04;
    pub const FILL: u16 = 0x05;
    pub const LINK: u16 = 0x06;
    pub const EXTERNAL: u16 = 0x07;
    pub const LAYOUT: u16 = 0x08;
    pub const FILTERS: u16 = 0x0b;
    pub const ATTRIBUTE: u16 = 0x0c;
    pub const CONTINUATION: u16 = 0x10;
    pub const SYMBOL_TABLE: u16 = 0x11;
    pub const MTIME_OLD: u16 = 0x0e;
    pub const MTIME: u16 = 0x12;
    pub const SOHM_TABLE: u16 = 0x0f;
    pub const ATTRIBUTE_INFO: u16 = 0x15;
}

/// How a chunked dataset indexes its chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChunkIndexKind {
    /// A version 1 B-tree (layout message version 3, and any file written for old readers).
    BTree1,
    /// One chunk as large as the dataset: its address is in the layout message.
    SingleChunk,
    /// Implicit: unfiltered chunks of a fixed-size dataset allocated early, in order, at one
    /// address.
    Implicit,
    /// A fixed array (fixed maximum shape).
    FixedArray,
    /// An extensible array (one unlimited axis).
    ExtensibleArray,
    /// A version 2 B-tree (more than one unlimited axis).
    BTree2,
}

/// How a dataset's elements are stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Inside the object header.
    Compact {
        /// Bytes of data.
        size: u64,
    },
    /// One block of the file.
    Contiguous {
        /// Where it starts: the absolute byte offset in the stored file (user block
        /// included); `None` when the data was never written (it reads as the fill value).
        byte_offset: Option<u64>,
        /// Its size in bytes.
        size: u64,
    },
    /// Chunks of a fixed shape, each stored (and filtered) on its own.
    Chunked {
        /// The chunk shape.
        chunk: Vec<u64>,
        /// How the chunks are indexed.
        index: ChunkIndexKind,
    },
    /// A virtual dataset (a mapping of other datasets): not readable here.
    Virtual,
}

/// The parameters of a chunk index, as the layout message gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum IndexParams {
    BTree1,
    Single { filtered: Option<(u64, u32)> },
    Implicit,
    FixedArray { page_bits: u8 },
    ExtensibleArray,
    BTree2,
}

/// Everything the layout message says.
#[derive(Clone, Debug)]
pub(crate) struct LayoutInfo {
    pub version: u8,
    pub layout: Layout,
    /// Compact data.
    pub compact: Option<Bytes>,
    /// Contiguous: relative address.
    pub address: Option<u64>,
    /// Chunked: the index's address (relative), its kind and parameters.
    pub index_addr: Option<u64>,
    pub index: Option<IndexParams>,
    /// Chunked: the element size the layout message stores with the chunk shape.
    pub chunk_elem: Option<u64>,
    /// Chunked (layout version 4+): do not filter partial edge chunks.
    pub dont_filter_partial: bool,
}

/// Parse a data layout message (versions 1 to 5) of a dataset of `rank` axes.
pub(crate) fn parse_layout(c: &mut Cursor, rank: usize) -> H5Result<LayoutInfo> {
    let version = c.u8()?;
    let mut info = LayoutInfo {
        version,
        layout: Layout::Virtual,
        compact: None,
        address: None,
        index_addr: None,
        index: None,
        chunk_elem: None,
        dont_filter_partial: false,
    };
    match version {
        1 | 2 => {
            let ndims = c.u8()? as usize;
            let class = c.u8()?;
            c.skip(5)?;
            if class != 0 {
                info.address = c.addr()?;
            }
            if ndims > 33 {
                return Err(c.err(format!("{ndims} dimensions")));
            }
            let mut dims = Vec::with_capacity(ndims);
            for _ in 0..ndims {
                dims.push(u64::from(c.u32()?));
            }
            match class {
                0 => {
                    let size = c.u32()?;
                    let data = c.bytes(size as usize)?;
                    info.compact = Some(Bytes::copy_from_slice(data));
                    info.layout = Layout::Compact {
                        size: u64::from(size),
                    };
                }
                1 => {
                    // The size is the product of the dimensions (and the element size,
                    // which the dataset knows).
                    let size = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                    info.layout = Layout::Contiguous {
                        byte_offset: None,
                        size: size.unwrap_or(u64::MAX),
                    };
                }
                2 => {
                    let (chunk, elem) = split_chunk_dims(c, dims, rank)?;
                    info.chunk_elem = elem;
                    info.index_addr = info.address;
                    info.index = Some(IndexParams::BTree1);
                    info.layout = Layout::Chunked {
                        chunk,
                        index: ChunkIndexKind::BTree1,
                    };
                }
                k => return Err(c.err(format!("layout class {k}"))),
            }
        }
        3..=5 => {
            let class = c.u8()?;
            match class {
                0 => {
                    let size = c.u16()?;
                    let data = c.bytes(size as usize)?;
                    info.compact = Some(Bytes::copy_from_slice(data));
                    info.layout = Layout::Compact {
                        size: u64::from(size),
                    };
                }
                1 => {
                    info.address = c.addr()?;
                    let size = c.length()?;
                    info.layout = Layout::Contiguous {
                        byte_offset: None,
                        size,
                    };
                }
                2 if version == 3 => {
                    let ndims = c.u8()? as usize;
                    info.index_addr = c.addr()?;
                    if ndims > 33 {
                        return Err(c.err(format!("{ndims} dimensions")));
                    }
                    let mut dims = Vec::with_capacity(ndims);
                    for _ in 0..ndims {
                        dims.push(u64::from(c.u32()?));
                    }
                    let (chunk, elem) = split_chunk_dims(c, dims, rank)?;
                    info.chunk_elem = elem;
                    info.index = Some(IndexParams::BTree1);
                    info.layout = Layout::Chunked {
                        chunk,
                        index: ChunkIndexKind::BTree1,
                    };
                }
                2 => {
                    let flags = c.u8()?;
                    let ndims = c.u8()? as usize;
                    let enc = c.u8()? as usize;
                    if ndims > 33 || !(1..=8).contains(&enc) {
                        return Err(
                            c.err(format!("{ndims} dimensions encoded in {enc} bytes each"))
                        );
                    }
                    let mut dims = Vec::with_capacity(ndims);
                    for _ in 0..ndims {
                        dims.push(c.uint(enc)?);
                    }
                    let (chunk, elem) = split_chunk_dims(c, dims, rank)?;
                    info.chunk_elem = elem;
                    info.dont_filter_partial = flags & 0x01 != 0;
                    let index_type = c.u8()?;
                    let (kind, params) = match index_type {
                        1 => {
                            let filtered = if flags & 0x02 != 0 {
                                let size = c.length()?;
                                let mask = c.u32()?;
                                Some((size, mask))
                            } else {
                                None
                            };
                            (
                                ChunkIndexKind::SingleChunk,
                                IndexParams::Single { filtered },
                            )
                        }
                        2 => (ChunkIndexKind::Implicit, IndexParams::Implicit),
                        3 => {
                            let page_bits = c.u8()?;
                            (
                                ChunkIndexKind::FixedArray,
                                IndexParams::FixedArray { page_bits },
                            )
                        }
                        4 => {
                            // Max bits, index elements, min pointers, min elements, page
                            // bits: the extensible array header repeats them.
                            c.skip(5)?;
                            (
                                ChunkIndexKind::ExtensibleArray,
                                IndexParams::ExtensibleArray,
                            )
                        }
                        5 => {
                            // Node size, split and merge percents: the B-tree header repeats
                            // them.
                            c.skip(6)?;
                            (ChunkIndexKind::BTree2, IndexParams::BTree2)
                        }
                        0 => (ChunkIndexKind::BTree1, IndexParams::BTree1),
                        t => return Err(c.err(format!("chunk index type {t}"))),
                    };
                    info.index_addr = c.addr()?;
                    info.index = Some(params);
                    info.layout = Layout::Chunked { chunk, index: kind };
                }
                3 => {
                    info.layout = Layout::Virtual;
                }
                k => return Err(c.err(format!("layout class {k}"))),
            }
        }
        v => return Err(c.err(format!("data layout message version {v}"))),
    }
    Ok(info)
}

/// The chunk shape from the stored dimensions, which end with the element size when there is
/// one more than the dataset's rank.
fn split_chunk_dims(
    c: &Cursor,
    mut dims: Vec<u64>,
    rank: usize,
) -> H5Result<(Vec<u64>, Option<u64>)> {
    let elem = if dims.len() == rank + 1 {
        dims.pop()
    } else if dims.len() == rank {
        None
    } else {
        return Err(c.err(format!(
            "{} chunk dimensions for a dataset of rank {rank}",
            dims.len()
        )));
    };
    if dims.contains(&0) {
        return Err(c.err(format!("chunk shape {dims:?} has a zero dimension")));
    }
    Ok((dims, elem))
}

/// One filter of a dataset's pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// The filter id: 1 deflate, 2 shuffle, 3 fletcher32, 4 szip, 5 nbit, 6 scale-offset,
    /// 32000 and up registered plugins (32000 lzf, 32001 blosc, 32004 lz4, 32015 zstd, ...).
    pub id: u16,
    /// Its name as stored (may be empty).
    pub name: String,
    /// Optional: a chunk may skip it when it fails on write.
    pub optional: bool,
    /// The client data values.
    pub values: Vec<u32>,
}

/// Parse a filter pipeline message (versions 1 and 2).
pub(crate) fn parse_filters(c: &mut Cursor) -> H5Result<Vec<Filter>> {
    let version = c.u8()?;
    let n = c.u8()? as usize;
    if version == 1 {
        c.skip(6)?;
    } else if version != 2 {
        return Err(c.err(format!("filter pipeline message version {version}")));
    }
    if n > 32 {
        return Err(c.err(format!("{n} filters (at most 32)")));
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let id = c.u16()?;
        let name_len = if version == 1 || id >= 256 {
            c.u16()? as usize
        } else {
            0
        };
        let flags = c.u16()?;
        let nvalues = c.u16()? as usize;
        let mut name = if name_len > 0 {
            let raw = c.bytes(name_len)?;
            if version == 1 {
                c.skip((8 - name_len % 8) % 8)?;
            }
            let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            String::from_utf8_lossy(&raw[..end]).into_owned()
        } else {
            String::new()
        };
        if name.is_empty() && id < 256 {
            // The library's names of its built-in filters, which files do not store.
            name = crate::filters::filter_name(id).to_string();
        }
        if nvalues * 4 > c.remaining() {
            return Err(c.err(format!("filter {id} with {nvalues} client values")));
        }
        let mut values = Vec::with_capacity(nvalues);
        for _ in 0..nvalues {
            values.push(c.u32()?);
        }
        if version == 1 && nvalues % 2 == 1 {
            c.skip(4)?;
        }
        out.push(Filter {
            id,
            name,
            optional: flags & 0x01 != 0,
            values,
        });
    }
    Ok(out)
}

/// Whether a dataset defines its fill value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FillDefined {
    /// Explicitly undefined: unwritten elements hold whatever the file holds (read as zeros
    /// here).
    Undefined,
    /// The library default: zeros.
    Default,
    /// Set by the writer.
    User,
}

/// A dataset's fill value: what elements never written read as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FillValue {
    /// Whether and how it is defined.
    pub defined: FillDefined,
    /// The value as one element in the file's representation, when the file stores one.
    pub value: Option<Vec<u8>>,
}

impl Default for FillValue {
    fn default() -> Self {
        FillValue {
            defined: FillDefined::Default,
            value: None,
        }
    }
}

/// Parse a fill value message (new form, versions 1 to 3).
pub(crate) fn parse_fill(c: &mut Cursor) -> H5Result<FillValue> {
    let version = c.u8()?;
    match version {
        1 | 2 => {
            let _alloc = c.u8()?;
            let _write = c.u8()?;
            let defined = c.u8()?;
            if version == 1 || defined != 0 {
                if c.remaining() < 4 {
                    return Ok(FillValue::default());
                }
                let size = c.u32()? as usize;
                if size > 0 {
                    let v = c.bytes(size)?.to_vec();
                    return Ok(FillValue {
                        defined: FillDefined::User,
                        value: Some(v),
                    });
                }
            }
            Ok(FillValue {
                defined: if defined != 0 {
                    FillDefined::Default
                } else {
                    FillDefined::Undefined
                },
                value: None,
            })
        }
        3 => {
            let flags = c.u8()?;
            if flags & 0x20 != 0 {
                let size = c.u32()? as usize;
                let v = c.bytes(size)?.to_vec();
                return Ok(FillValue {
                    defined: FillDefined::User,
                    value: if size > 0 { Some(v) } else { None },
                });
            }
            Ok(FillValue {
                defined: if flags & 0x10 != 0 {
                    FillDefined::Undefined
                } else {
                    FillDefined::Default
                },
                value: None,
            })
        }
        v => Err(c.err(format!("fill value message version {v}"))),
    }
}

/// Parse an old fill value message (type 4).
pub(crate) fn parse_fill_old(c: &mut Cursor) -> H5Result<FillValue> {
    let size = c.u32()? as usize;
    let v = c.bytes(size)?.to_vec();
    Ok(FillValue {
        defined: FillDefined::User,
        value: if size > 0 { Some(v) } else { None },
    })
}

/// Where a link leads. Soft and external links are reported, never followed, by
/// [`crate::Group::links`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LinkTarget {
    /// A hard link: the object header's address (an object's identity: the same object
    /// under two names has one address).
    Hard(u64),
    /// A soft link: a path in this file, absolute or relative to the link's group.
    Soft(String),
    /// An external link: a file name and an object path in it.
    External {
        /// The file, as stored.
        file: String,
        /// The object's path in that file.
        path: String,
    },
    /// A user-defined link type this reader does not know: its type and data.
    UserDefined {
        /// The link type (65 to 255).
        link_type: u8,
        /// The stored data.
        data: Vec<u8>,
    },
}

/// One link of a group.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Link {
    /// The link's name.
    pub name: String,
    /// Where it leads.
    pub target: LinkTarget,
    /// Its creation order, when the group tracks it.
    pub creation_order: Option<u64>,
}

/// Parse a link message.
pub(crate) fn parse_link(c: &mut Cursor) -> H5Result<Link> {
    let version = c.u8()?;
    if version != 1 {
        return Err(c.err(format!("link message version {version}")));
    }
    let flags = c.u8()?;
    let link_type = if flags & 0x08 != 0 { c.u8()? } else { 0 };
    let creation_order = if flags & 0x04 != 0 {
        Some(c.u64()?)
    } else {
        None
    };
    if flags & 0x10 != 0 {
        let _charset = c.u8()?;
    }
    let name_len = c.uint(1 << (flags & 0x03))? as usize;
    if name_len == 0 {
        return Err(c.err("a link with an empty name"));
    }
    let name = String::from_utf8_lossy(c.bytes(name_len)?).into_owned();
    let target = match link_type {
        0 => LinkTarget::Hard(c.addr_required("hard link address")?),
        1 => {
            let n = c.u16()? as usize;
            LinkTarget::Soft(String::from_utf8_lossy(c.bytes(n)?).into_owned())
        }
        64 => {
            let n = c.u16()? as usize;
            let data = c.bytes(n)?;
            parse_external_value(c, data)?
        }
        t if t >= 65 => {
            let n = c.u16()? as usize;
            LinkTarget::UserDefined {
                link_type: t,
                data: c.bytes(n)?.to_vec(),
            }
        }
        t => return Err(c.err(format!("link type {t}"))),
    };
    Ok(Link {
        name,
        target,
        creation_order,
    })
}

/// An external link's value: flags, then the file name and object path, NUL-terminated.
fn parse_external_value(c: &Cursor, data: &[u8]) -> H5Result<LinkTarget> {
    let mut v = Cursor::new(data, "external link value", None, c.sizes());
    let flags = v.u8()?;
    if flags >> 4 != 0 {
        return Err(c.err(format!("external link version {}", flags >> 4)));
    }
    let file = String::from_utf8_lossy(v.cstr()?).into_owned();
    let path = String::from_utf8_lossy(v.cstr()?).into_owned();
    Ok(LinkTarget::External { file, path })
}

/// Where a group keeps its links (link info message), or an object its attributes (attribute
/// info message): dense storage addresses.
#[derive(Clone, Debug, Default)]
pub(crate) struct DenseInfo {
    pub heap: Option<u64>,
    pub name_index: Option<u64>,
}

/// Parse a link info message.
pub(crate) fn parse_link_info(c: &mut Cursor) -> H5Result<DenseInfo> {
    let version = c.u8()?;
    if version != 0 {
        return Err(c.err(format!("link info message version {version}")));
    }
    let flags = c.u8()?;
    if flags & 0x01 != 0 {
        let _max_order = c.u64()?;
    }
    let heap = c.addr()?;
    let name_index = c.addr()?;
    if flags & 0x02 != 0 {
        let _order_index = c.addr()?;
    }
    Ok(DenseInfo { heap, name_index })
}

/// Parse an attribute info message.
pub(crate) fn parse_attribute_info(c: &mut Cursor) -> H5Result<DenseInfo> {
    let version = c.u8()?;
    if version != 0 {
        return Err(c.err(format!("attribute info message version {version}")));
    }
    let flags = c.u8()?;
    if flags & 0x01 != 0 {
        let _max_order = c.u16()?;
    }
    let heap = c.addr()?;
    let name_index = c.addr()?;
    if flags & 0x02 != 0 {
        let _order_index = c.addr()?;
    }
    Ok(DenseInfo { heap, name_index })
}

/// An attribute message, its datatype and dataspace possibly still shared references.
pub(crate) struct RawAttribute {
    pub name: String,
    /// The datatype message body, or a shared message when `dtype_shared`.
    pub dtype: Bytes,
    pub dtype_shared: bool,
    pub space: Bytes,
    pub space_shared: bool,
    pub data: Bytes,
}

/// Parse an attribute message (versions 1 to 3) from `body`.
pub(crate) fn parse_attribute(
    body: &Bytes,
    sizes: Sizes,
    addr: Option<u64>,
) -> H5Result<RawAttribute> {
    let mut c = Cursor::new(body, "attribute message", addr, sizes);
    let version = c.u8()?;
    let flags = c.u8()?;
    let name_len = c.u16()? as usize;
    let dt_len = c.u16()? as usize;
    let ds_len = c.u16()? as usize;
    if version == 3 {
        let _encoding = c.u8()?;
    } else if version != 1 && version != 2 {
        return Err(c.err(format!("attribute message version {version}")));
    }
    let pad = |n: usize| if version == 1 { (n + 7) & !7 } else { n };
    let start = c.pos();
    let raw_name = c.bytes(name_len)?;
    c.seek(start + pad(name_len))?;
    let end = raw_name
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(raw_name.len());
    let name = String::from_utf8_lossy(&raw_name[..end]).into_owned();
    let dt_start = c.pos();
    c.skip(dt_len)?;
    c.seek(dt_start + pad(dt_len))?;
    let ds_start = c.pos();
    c.skip(ds_len)?;
    c.seek(ds_start + pad(ds_len))?;
    let data_start = c.pos();
    Ok(RawAttribute {
        name,
        dtype: body.slice(dt_start..dt_start + dt_len),
        dtype_shared: version >= 2 && flags & 0x01 != 0,
        space: body.slice(ds_start..ds_start + ds_len),
        space_shared: version >= 2 && flags & 0x02 != 0,
        data: body.slice(data_start..),
    })
}

/// Parse a datatype from a message body.
pub(crate) fn datatype_from(body: &[u8], sizes: Sizes, addr: Option<u64>) -> H5Result<Datatype> {
    let mut c = Cursor::new(body, "datatype message", addr, sizes);
    parse_datatype(&mut c)
}

/// Parse a dataspace from a message body.
pub(crate) fn dataspace_from(
    body: &[u8],
    sizes: Sizes,
    addr: Option<u64>,
) -> H5Result<(Extent, Option<Vec<Option<u64>>>)> {
    let mut c = Cursor::new(body, "dataspace message", addr, sizes);
    parse_dataspace(&mut c)
}

/// A shared message reference.
pub(crate) enum Shared {
    /// The message is in the object header at this address (a committed datatype).
    Committed(u64),
    /// The message is in the shared message table's heap, under this heap ID.
    Sohm([u8; 8]),
}

/// Parse a shared message reference.
pub(crate) fn parse_shared(c: &mut Cursor) -> H5Result<Shared> {
    let version = c.u8()?;
    let kind = c.u8()?;
    match version {
        1 => {
            c.skip(6)?;
            let _ = c.length()?;
            Ok(Shared::Committed(
                c.addr_required("shared message address")?,
            ))
        }
        2 => Ok(Shared::Committed(
            c.addr_required("shared message address")?,
        )),
        3 => match kind {
            1 => {
                let id = c.bytes(8)?;
                let mut out = [0u8; 8];
                out.copy_from_slice(id);
                Ok(Shared::Sohm(out))
            }
            2 => Ok(Shared::Committed(
                c.addr_required("shared message address")?,
            )),
            k => Err(c.err(format!("shared message type {k}"))),
        },
        v => Err(c.err(format!("shared message version {v}"))),
    }
}

/// One external data file of a contiguous dataset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalFile {
    /// The file name, as stored.
    pub name: String,
    /// Where the data starts in that file.
    pub offset: u64,
    /// How many bytes of the dataset it holds.
    pub size: u64,
}

/// One slot of an external data files message: name offset in the local heap, offset in the
/// file, size.
pub(crate) type ExternalSlot = (u64, u64, u64);

/// Parse an external data files message: the local heap address and the slots.
pub(crate) fn parse_external(c: &mut Cursor) -> H5Result<(u64, Vec<ExternalSlot>)> {
    let version = c.u8()?;
    if version != 1 {
        return Err(c.err(format!("external data files message version {version}")));
    }
    c.skip(3)?;
    let _allocated = c.u16()?;
    let used = c.u16()? as usize;
    let heap = c.addr_required("external files heap address")?;
    let mut slots = Vec::with_capacity(used.min(c.remaining()));
    for _ in 0..used {
        let name = c.length()?;
        let offset = c.length()?;
        let size = c.length()?;
        slots.push((name, offset, size));
    }
    Ok((heap, slots))
}

/// Parse a symbol table message: the B-tree and local heap addresses.
pub(crate) fn parse_symbol_table(c: &mut Cursor) -> H5Result<(u64, u64)> {
    let btree = c.addr_required("symbol table B-tree address")?;
    let heap = c.addr_required("symbol table local heap address")?;
    Ok((btree, heap))
}

/// A layout this reader refuses, named.
pub(crate) fn refuse_virtual() -> crate::error::H5Error {
    unsupported("a virtual dataset (its data lives in other datasets)")
}
