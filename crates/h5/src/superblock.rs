//! The superblock (versions 0 to 3): where the file starts, the sizes of its addresses and
//! lengths, and the root group.

use crate::cursor::{Cursor, Sizes};
use crate::error::{corrupt, H5Error, H5Result};
use crate::io::Io;

/// The HDF5 format signature.
pub(crate) const SIGNATURE: [u8; 8] = [0x89, b'H', b'D', b'F', b'\r', b'\n', 0x1a, b'\n'];

/// Verify the Jenkins lookup3 checksum stored in the last 4 bytes of `block`.
pub(crate) fn verify_checksum(block: &[u8], what: &'static str, addr: Option<u64>) -> H5Result<()> {
    if block.len() < 4 {
        return Err(corrupt(what, addr, "too short to hold a checksum"));
    }
    let (body, sum) = block.split_at(block.len() - 4);
    let stored = u32::from_le_bytes([sum[0], sum[1], sum[2], sum[3]]);
    let computed = neurochunk_codec::jenkins_lookup3(&[], body, 0);
    if stored != computed {
        return Err(corrupt(
            what,
            addr,
            format!("bad checksum (stored {stored:#010x}, computed {computed:#010x})"),
        ));
    }
    Ok(())
}

/// Where the root group is described.
#[derive(Clone, Debug)]
pub(crate) enum RootGroup {
    /// Version 2 and 3 superblocks: the root group's object header address.
    Header(u64),
    /// Version 0 and 1: the root group's symbol table entry's object header address.
    Entry { header: u64 },
}

/// What the reader needs of the superblock.
#[derive(Clone, Debug)]
pub(crate) struct Superblock {
    /// Version 0 to 3.
    pub version: u8,
    /// The absolute position of the signature: every address is relative to it.
    pub base: u64,
    /// Sizes of addresses and lengths.
    pub sizes: Sizes,
    /// The root group.
    pub root: RootGroup,
    /// The superblock extension's object header (versions 2 and 3).
    pub extension: Option<u64>,
    /// The driver information block (versions 0 and 1): files of the multi and family
    /// drivers, whose addresses span several files.
    pub driver_info: Option<u64>,
}

/// Find the signature (at 0, 512, 1024, 2048, ...) and read the superblock there.
pub(crate) fn read_superblock(io: &Io) -> H5Result<Superblock> {
    let size = io.size();
    let mut at = 0u64;
    loop {
        if at.checked_add(48).is_none_or(|end| end > size) {
            return Err(H5Error::new(crate::error::ErrorKind::NotHdf5(format!(
                "no HDF5 signature at byte 0 or at any power of two from 512 to the end of its \
                 {size} bytes"
            ))));
        }
        let sig = io.read(at, 8)?;
        if sig[..] == SIGNATURE {
            break;
        }
        at = if at == 0 { 512 } else { at * 2 };
    }
    let base = at;
    let head = io.read(base, (size - base).min(256))?;
    let what = "superblock";
    let mut c = Cursor::new(
        &head,
        what,
        Some(0),
        Sizes {
            offset: 8,
            length: 8,
        },
    );
    c.skip(8)?;
    let version = c.u8()?;
    match version {
        0 | 1 => {
            let _free_space_version = c.u8()?;
            let _root_entry_version = c.u8()?;
            c.skip(1)?;
            let _shared_header_version = c.u8()?;
            let offset = c.u8()?;
            let length = c.u8()?;
            check_sizes(offset, length)?;
            c.skip(1)?;
            let group_leaf_k = c.u16()?;
            let _group_internal_k = c.u16()?;
            let _flags = c.u32()?;
            if version == 1 {
                let _istore_k = c.u16()?;
                c.skip(2)?;
            }
            let sizes = Sizes { offset, length };
            let mut c2 = Cursor::new(&head, what, Some(0), sizes);
            c2.seek(c.pos())?;
            let _stored_base = c2.addr()?;
            let _free_space = c2.addr()?;
            let _eof = c2.addr()?;
            let driver_info = c2.addr()?;
            // The root group's symbol table entry.
            let _name_offset = c2.length()?;
            let header = c2.addr_required("the root group's object header address")?;
            if group_leaf_k == 0 {
                return Err(corrupt(what, Some(0), "group leaf node K is 0"));
            }
            Ok(Superblock {
                version,
                base,
                sizes,
                root: RootGroup::Entry { header },
                extension: None,
                driver_info,
            })
        }
        2 | 3 => {
            let offset = c.u8()?;
            let length = c.u8()?;
            check_sizes(offset, length)?;
            let _flags = c.u8()?;
            let sizes = Sizes { offset, length };
            let mut c2 = Cursor::new(&head, what, Some(0), sizes);
            c2.seek(c.pos())?;
            let _stored_base = c2.addr()?;
            let extension = c2.addr()?;
            let _eof = c2.addr()?;
            let root = c2.addr_required("the root group's object header address")?;
            let end = c2.pos() + 4;
            let block = head
                .get(..end)
                .ok_or_else(|| corrupt(what, Some(0), "truncated"))?;
            verify_checksum(block, what, Some(0))?;
            Ok(Superblock {
                version,
                base,
                sizes,
                root: RootGroup::Header(root),
                extension,
                driver_info: None,
            })
        }
        v => Err(crate::error::unsupported(format!(
            "superblock version {v} (this reader knows versions 0 to 3)"
        ))),
    }
}

fn check_sizes(offset: u8, length: u8) -> H5Result<()> {
    if !matches!(offset, 2 | 4 | 8) || !matches!(length, 2 | 4 | 8) {
        return Err(corrupt(
            "superblock",
            Some(0),
            format!("sizes of offsets {offset} and lengths {length} (must be 2, 4 or 8)"),
        ));
    }
    Ok(())
}
