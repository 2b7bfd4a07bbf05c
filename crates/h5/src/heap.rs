//! Heaps: local heaps (names of old-style groups), global heap collections (variable-length
//! data, region references) and fractal heaps (dense links and attributes, shared messages).

use std::collections::HashMap;

use neurochunk_store::Bytes;

use crate::btree2::BTree2;
use crate::cursor::{enc_size, le_uint, log2_floor};
use crate::error::{corrupt, unsupported, H5Result};
use crate::file::Inner;
use crate::superblock::verify_checksum;

/// A local heap: its data segment.
pub(crate) struct LocalHeap {
    pub addr: u64,
    pub data: Bytes,
}

impl LocalHeap {
    /// Read the local heap at `addr`.
    pub fn read(f: &Inner, addr: u64) -> H5Result<LocalHeap> {
        let what = "local heap";
        let o = f.sizes.offset as u64;
        let l = f.sizes.length as u64;
        let head = f.read_structure(addr, 8 + 2 * l + o, what)?;
        let mut c = f.cursor(&head, what, addr);
        if c.bytes(4)? != b"HEAP" {
            return Err(c.err("no HEAP signature"));
        }
        let version = c.u8()?;
        if version != 0 {
            return Err(c.err(format!("version {version}")));
        }
        c.skip(3)?;
        let size = c.length()?;
        let _free = c.length()?;
        let data_addr = c.addr_required("data segment address")?;
        let data = f.read_structure(data_addr, size, "local heap data segment")?;
        Ok(LocalHeap { addr, data })
    }

    /// The NUL-terminated string at `offset` of the data segment.
    pub fn string_at(&self, offset: u64) -> H5Result<String> {
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let rest = self.data.get(start..).ok_or_else(|| {
            corrupt(
                "local heap",
                Some(self.addr),
                format!("offset {offset} is past its {} bytes", self.data.len()),
            )
        })?;
        let end = rest.iter().position(|&b| b == 0).ok_or_else(|| {
            corrupt(
                "local heap",
                Some(self.addr),
                format!("unterminated string at {offset}"),
            )
        })?;
        Ok(String::from_utf8_lossy(&rest[..end]).into_owned())
    }
}

/// A global heap collection: its objects by index.
pub(crate) struct GlobalHeap {
    pub objects: HashMap<u16, Bytes>,
}

impl GlobalHeap {
    /// Read the global heap collection at `addr`.
    pub fn read(f: &Inner, addr: u64) -> H5Result<GlobalHeap> {
        let what = "global heap collection";
        let l = f.sizes.length as usize;
        let head = f.read_structure(addr, 8 + l as u64, what)?;
        let mut c = f.cursor(&head, what, addr);
        if c.bytes(4)? != b"GCOL" {
            return Err(c.err("no GCOL signature"));
        }
        let version = c.u8()?;
        if version != 1 {
            return Err(c.err(format!("version {version}")));
        }
        c.skip(3)?;
        let size = c.length()?;
        let block = f.read_structure(addr, size, what)?;
        let mut c = f.cursor(&block, what, addr);
        // The header, each object's header and each object's data are padded to multiples of
        // 8 bytes.
        let pad8 = |n: usize| (8 - n % 8) % 8;
        c.skip(8 + l + pad8(8 + l))?;
        let mut objects = HashMap::new();
        while c.remaining() >= 8 + l {
            let index = c.u16()?;
            let _refcount = c.u16()?;
            c.skip(4)?;
            let osize = c.length()?;
            c.skip(pad8(8 + l).min(c.remaining()))?;
            if index == 0 {
                break;
            }
            let start = c.pos();
            let n = usize::try_from(osize).map_err(|_| c.err("object too large"))?;
            c.skip(n)?;
            objects.insert(index, block.slice(start..start + n));
            c.skip(pad8(n).min(c.remaining()))?;
        }
        Ok(GlobalHeap { objects })
    }
}

/// A fractal heap's header and the geometry derived from it.
pub(crate) struct FractalHeap {
    addr: u64,
    id_len: usize,
    filtered: bool,
    checksum_dblocks: bool,
    huge_btree: Option<u64>,
    width: u64,
    start_block: u64,
    max_direct_rows: u64,
    first_row_bits: u32,
    heap_off_size: usize,
    heap_len_size: usize,
    root: Option<u64>,
    root_rows: u64,
}

impl FractalHeap {
    /// Read the fractal heap header at `addr`.
    pub fn open(f: &Inner, addr: u64) -> H5Result<FractalHeap> {
        let what = "fractal heap header";
        let mut head = f.read_upto(addr, 512)?;
        if head.len() >= 9 {
            // A pipeline's description can make the header longer than the first read.
            let filter_len = u64::from(u16::from_le_bytes([head[7], head[8]]));
            let (l, o) = (f.sizes.length as u64, f.sizes.offset as u64);
            // Through the root's row count, then the filtered root's size, its filter mask,
            // the pipeline and the checksum.
            let fixed = 22 + 12 * l + 3 * o;
            let full = fixed + l + 4 + filter_len + 4;
            if full > head.len() as u64 {
                head = f.read_structure(addr, full, what)?;
            }
        }
        let mut c = f.cursor(&head, what, addr);
        if c.bytes(4)? != b"FRHP" {
            return Err(c.err("no FRHP signature"));
        }
        let version = c.u8()?;
        if version != 0 {
            return Err(c.err(format!("version {version}")));
        }
        let id_len = c.u16()? as usize;
        let filter_len = c.u16()? as usize;
        let flags = c.u8()?;
        let max_managed = c.u32()?;
        let _next_huge = c.length()?;
        let huge_btree = c.addr()?;
        let _free = c.length()?;
        let _free_manager = c.addr()?;
        let _managed_space = c.length()?;
        let _allocated = c.length()?;
        let _iterator = c.length()?;
        let _managed_objects = c.length()?;
        let _huge_size = c.length()?;
        let _huge_count = c.length()?;
        let _tiny_size = c.length()?;
        let _tiny_count = c.length()?;
        let width = u64::from(c.u16()?);
        let start_block = c.length()?;
        let max_direct = c.length()?;
        let max_heap_bits = c.u16()?;
        let _start_rows = c.u16()?;
        let root = c.addr()?;
        let root_rows = u64::from(c.u16()?);
        if filter_len > 0 {
            let _root_size = c.length()?;
            let _mask = c.u32()?;
            c.skip(filter_len)?;
        }
        let end = c.pos() + 4;
        let block = head.get(..end).ok_or_else(|| c.err("truncated"))?;
        verify_checksum(block, what, Some(addr))?;
        let pow2 = |v: u64| v != 0 && v & (v - 1) == 0;
        if !pow2(width) || !pow2(start_block) || !pow2(max_direct) || max_direct < start_block {
            return Err(corrupt(
                what,
                Some(addr),
                format!(
                    "table width {width}, starting block size {start_block}, maximum direct \
                     block size {max_direct}"
                ),
            ));
        }
        if !(1..=64).contains(&max_heap_bits) || id_len == 0 || id_len > 4096 {
            return Err(corrupt(
                what,
                Some(addr),
                format!("heap of {max_heap_bits} bits, IDs of {id_len} bytes"),
            ));
        }
        let max_direct_rows = u64::from(log2_floor(max_direct) - log2_floor(start_block)) + 2;
        let first_row_bits = log2_floor(start_block) + log2_floor(width);
        let heap_off_size = (max_heap_bits as usize).div_ceil(8);
        let max_dir_off_size = (log2_floor(max_direct) as usize).div_ceil(8);
        let heap_len_size = max_dir_off_size.min(enc_size(u64::from(max_managed)));
        Ok(FractalHeap {
            addr,
            id_len,
            filtered: filter_len > 0,
            checksum_dblocks: flags & 0x02 != 0,
            huge_btree,
            width,
            start_block,
            max_direct_rows,
            first_row_bits,
            heap_off_size,
            heap_len_size,
            root,
            root_rows,
        })
    }

    fn row_size(&self, row: u64) -> u64 {
        if row == 0 {
            self.start_block
        } else {
            self.start_block
                .saturating_mul(1u64.checked_shl((row - 1) as u32).unwrap_or(0))
        }
    }

    fn row_offset(&self, row: u64) -> u64 {
        if row == 0 {
            0
        } else {
            1u64.checked_shl(self.first_row_bits + (row - 1) as u32)
                .unwrap_or(u64::MAX)
        }
    }

    /// (row, column) of an offset within an indirect block.
    fn lookup(&self, off: u64) -> (u64, u64) {
        if off < self.start_block.saturating_mul(self.width) {
            (0, off / self.start_block)
        } else {
            let high = log2_floor(off);
            let row = u64::from(high - self.first_row_bits) + 1;
            let col = (off - (1u64 << high)) / self.row_size(row).max(1);
            (row, col)
        }
    }

    /// The object with heap ID `id`.
    pub fn get(&self, f: &Inner, id: &[u8]) -> H5Result<Bytes> {
        let what = "fractal heap";
        if id.is_empty() || id.len() > self.id_len.max(8) {
            return Err(corrupt(
                what,
                Some(self.addr),
                format!("a heap ID of {} bytes", id.len()),
            ));
        }
        let flags = id[0];
        if flags >> 6 != 0 {
            return Err(corrupt(
                what,
                Some(self.addr),
                format!("heap ID version {}", flags >> 6),
            ));
        }
        match (flags >> 4) & 0x03 {
            0 => {
                let need = 1 + self.heap_off_size + self.heap_len_size;
                if id.len() < need {
                    return Err(corrupt(what, Some(self.addr), "heap ID too short"));
                }
                let offset = le_uint(&id[1..1 + self.heap_off_size]);
                let len = le_uint(&id[1 + self.heap_off_size..need]);
                self.managed(f, offset, len)
            }
            1 => self.huge(f, id),
            2 => {
                let (len, start) = if self.id_len <= 17 {
                    ((flags & 0x0f) as usize + 1, 1)
                } else {
                    if id.len() < 2 {
                        return Err(corrupt(what, Some(self.addr), "tiny heap ID too short"));
                    }
                    ((((flags & 0x0f) as usize) << 8 | id[1] as usize) + 1, 2)
                };
                id.get(start..start + len)
                    .map(Bytes::copy_from_slice)
                    .ok_or_else(|| corrupt(what, Some(self.addr), "tiny object longer than its ID"))
            }
            t => Err(corrupt(what, Some(self.addr), format!("heap ID type {t}"))),
        }
    }

    fn managed(&self, f: &Inner, offset: u64, len: u64) -> H5Result<Bytes> {
        if self.filtered {
            return Err(unsupported(
                "a fractal heap with I/O filters (compressed heap blocks)",
            ));
        }
        let what = "fractal heap";
        let root = self
            .root
            .ok_or_else(|| corrupt(what, Some(self.addr), "an object in an empty heap"))?;
        let (block_addr, block_off, block_size) = if self.root_rows == 0 {
            (root, 0u64, self.start_block)
        } else {
            let mut iaddr = root;
            let mut nrows = self.root_rows;
            let mut base = 0u64;
            let mut depth = 0;
            loop {
                depth += 1;
                if depth > 32 {
                    return Err(corrupt(
                        what,
                        Some(self.addr),
                        "indirect blocks nested too deeply",
                    ));
                }
                let rel = offset.checked_sub(base).ok_or_else(|| {
                    corrupt(what, Some(self.addr), "object offset before its block")
                })?;
                let (row, col) = self.lookup(rel);
                if row >= nrows || col >= self.width {
                    return Err(corrupt(
                        "fractal heap indirect block",
                        Some(iaddr),
                        format!("object offset {offset} is outside the block"),
                    ));
                }
                let entry = row * self.width + col;
                let child = self.iblock_entry(f, iaddr, nrows, entry)?;
                let child = child.ok_or_else(|| {
                    corrupt(
                        "fractal heap indirect block",
                        Some(iaddr),
                        format!("object offset {offset} lies in an unallocated block"),
                    )
                })?;
                let child_off = base
                    .saturating_add(self.row_offset(row))
                    .saturating_add(col.saturating_mul(self.row_size(row)));
                if row < self.max_direct_rows {
                    break (child, child_off, self.row_size(row));
                }
                nrows = u64::from(
                    log2_floor(self.row_size(row))
                        .checked_sub(self.first_row_bits)
                        .ok_or_else(|| {
                            corrupt(what, Some(self.addr), "inconsistent table geometry")
                        })?,
                ) + 1;
                base = child_off;
                iaddr = child;
            }
        };
        let within = offset - block_off;
        let header = 5
            + f.sizes.offset as u64
            + self.heap_off_size as u64
            + if self.checksum_dblocks { 4 } else { 0 };
        let end = within.checked_add(len);
        if within < header || end.is_none_or(|e| e > block_size) {
            return Err(corrupt(
                "fractal heap direct block",
                Some(block_addr),
                format!(
                    "object of {len} bytes at {within} does not fit the {block_size}-byte block"
                ),
            ));
        }
        let sig = f.read_structure(block_addr, 4, "fractal heap direct block")?;
        if &sig[..] != b"FHDB" {
            return Err(corrupt(
                "fractal heap direct block",
                Some(block_addr),
                "no FHDB signature",
            ));
        }
        f.read_structure(
            block_addr.saturating_add(within),
            len,
            "fractal heap object",
        )
    }

    /// The address in entry `entry` of the indirect block at `addr` (of `nrows` rows).
    fn iblock_entry(&self, f: &Inner, addr: u64, nrows: u64, entry: u64) -> H5Result<Option<u64>> {
        let what = "fractal heap indirect block";
        let o = f.sizes.offset as u64;
        let direct_rows = nrows.min(self.max_direct_rows);
        let indirect_rows = nrows - direct_rows;
        let k = direct_rows * self.width;
        let n = indirect_rows * self.width;
        let prefix = 5 + o + self.heap_off_size as u64;
        let size = prefix + k * o + n * o + 4;
        if size > f.io.size() {
            return Err(corrupt(what, Some(addr), format!("{nrows} rows")));
        }
        let block = f.read_structure(addr, size, what)?;
        if &block[..4] != b"FHIB" {
            return Err(corrupt(what, Some(addr), "no FHIB signature"));
        }
        verify_checksum(&block, what, Some(addr))?;
        let pos = (prefix + entry * o) as usize;
        let mut c = f.cursor(&block, what, addr);
        c.seek(pos)?;
        c.addr()
    }

    fn huge(&self, f: &Inner, id: &[u8]) -> H5Result<Bytes> {
        let what = "fractal heap";
        if self.filtered {
            return Err(unsupported(
                "a huge object of a fractal heap with I/O filters",
            ));
        }
        let o = f.sizes.offset as usize;
        let l = f.sizes.length as usize;
        if self.id_len >= 1 + o + l {
            let mut c = f.cursor(id, "huge heap ID", self.addr);
            c.skip(1)?;
            let addr = c.addr_required("huge object address")?;
            let len = c.length()?;
            return f.read_structure(addr, len, "fractal heap huge object");
        }
        let btree = self.huge_btree.ok_or_else(|| {
            corrupt(
                what,
                Some(self.addr),
                "a huge object and no huge object B-tree",
            )
        })?;
        let key_len = (self.id_len - 1).min(8);
        let key = le_uint(&id[1..(1 + key_len).min(id.len())]);
        let tree = BTree2::open(f, btree)?;
        for rec in tree.records(f)? {
            let mut c = f.cursor(&rec, "huge object record", btree);
            let addr = c.addr_required("huge object address")?;
            let len = c.length()?;
            let rid = c.length()?;
            if rid == key {
                return f.read_structure(addr, len, "fractal heap huge object");
            }
        }
        Err(corrupt(
            what,
            Some(self.addr),
            format!("no huge object with ID {key}"),
        ))
    }
}
