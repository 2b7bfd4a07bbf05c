//! A bounds-checked little-endian reader over a structure's bytes. Every read that would leave
//! the bytes is an error naming the structure and its address.

use crate::error::{corrupt, H5Error, H5Result};

/// The sizes of offsets (addresses) and lengths of a file, from its superblock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// Bytes per address (2, 4 or 8).
    pub offset: u8,
    /// Bytes per length (2, 4 or 8).
    pub length: u8,
}

/// Reads fields from the bytes of one structure.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
    addr: Option<u64>,
    sizes: Sizes,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data`, the bytes of the structure `what` at `addr`.
    pub fn new(data: &'a [u8], what: &'static str, addr: Option<u64>, sizes: Sizes) -> Self {
        Cursor {
            data,
            pos: 0,
            what,
            addr,
            sizes,
        }
    }

    /// The file's sizes.
    pub fn sizes(&self) -> Sizes {
        self.sizes
    }

    /// An error about this structure.
    pub fn err(&self, message: impl Into<String>) -> H5Error {
        corrupt(self.what, self.addr, message)
    }

    /// The position from the start of the bytes.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// Move to `pos` (at most the end).
    pub fn seek(&mut self, pos: usize) -> H5Result<()> {
        if pos > self.data.len() {
            return Err(self.err(format!(
                "offset {pos} is past the end of its {} bytes",
                self.data.len()
            )));
        }
        self.pos = pos;
        Ok(())
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> H5Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let out = &self.data[self.pos..end];
                self.pos = end;
                Ok(out)
            }
            None => Err(self.err(format!(
                "truncated: {n} bytes needed at offset {}, {} left",
                self.pos,
                self.remaining()
            ))),
        }
    }

    /// Skip `n` bytes.
    pub fn skip(&mut self, n: usize) -> H5Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// One byte.
    pub fn u8(&mut self) -> H5Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self) -> H5Result<u16> {
        Ok(self.uint(2)? as u16)
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> H5Result<u32> {
        Ok(self.uint(4)? as u32)
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> H5Result<u64> {
        self.uint(8)
    }

    /// A little-endian unsigned integer of `n` bytes (0 to 8).
    pub fn uint(&mut self, n: usize) -> H5Result<u64> {
        if n > 8 {
            return Err(self.err(format!("a {n}-byte integer field")));
        }
        Ok(le_uint(self.bytes(n)?))
    }

    /// An address (`None` for the undefined address, all bits set).
    pub fn addr(&mut self) -> H5Result<Option<u64>> {
        let n = self.sizes.offset as usize;
        let v = self.uint(n)?;
        Ok(if is_undefined(v, n) { None } else { Some(v) })
    }

    /// An address that must be defined.
    pub fn addr_required(&mut self, field: &str) -> H5Result<u64> {
        self.addr()?
            .ok_or_else(|| self.err(format!("{field} is the undefined address")))
    }

    /// A length field.
    pub fn length(&mut self) -> H5Result<u64> {
        self.uint(self.sizes.length as usize)
    }

    /// A NUL-terminated string (the NUL is consumed), as bytes.
    pub fn cstr(&mut self) -> H5Result<&'a [u8]> {
        let rest = &self.data[self.pos.min(self.data.len())..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = &rest[..n];
                self.pos += n + 1;
                Ok(s)
            }
            None => Err(self.err("unterminated string")),
        }
    }

    /// Skip to the next multiple of `align` (relative to the start of the bytes); past the end
    /// stops at the end.
    pub fn align(&mut self, align: usize) {
        if align > 1 {
            let r = self.pos % align;
            if r != 0 {
                self.pos = (self.pos + align - r).min(self.data.len());
            }
        }
    }
}

/// A little-endian unsigned integer from up to 8 bytes.
pub(crate) fn le_uint(b: &[u8]) -> u64 {
    b.iter()
        .take(8)
        .enumerate()
        .fold(0u64, |acc, (i, &x)| acc | (u64::from(x) << (8 * i)))
}

/// Whether `v` is the undefined address for `n`-byte addresses.
pub(crate) fn is_undefined(v: u64, n: usize) -> bool {
    if n >= 8 {
        v == u64::MAX
    } else {
        v == (1u64 << (8 * n)) - 1
    }
}

/// Bytes needed to encode values up to `max` (at least 1): HDF5's "limit encode size".
pub(crate) fn enc_size(max: u64) -> usize {
    (log2_floor(max) / 8 + 1) as usize
}

/// The floor of log2 (0 for 0 and 1).
pub(crate) fn log2_floor(v: u64) -> u32 {
    if v == 0 {
        0
    } else {
        63 - v.leading_zeros()
    }
}
