//! Chunk indexes: where each chunk of a chunked dataset is stored. Version 1 B-trees (layout
//! version 3), and the layout version 4 indexes: single chunk, implicit, fixed array (with
//! paging), extensible array (index block, super blocks, data blocks, pages) and version 2
//! B-trees (record types 10 and 11).
//!
//! Lookups are targeted: a read asks for the chunks it touches and only the index blocks
//! holding them are fetched, in one batch per level.

use std::collections::{HashMap, HashSet};

use neurochunk_store::Bytes;

use crate::btree2::BTree2;
use crate::cursor::{le_uint, log2_floor};
use crate::error::{corrupt, too_large, H5Result};
use crate::file::Inner;
use crate::messages::{IndexParams, LayoutInfo};
use crate::superblock::verify_checksum;

/// Where one chunk is stored.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChunkInfo {
    /// The chunk's coordinates in the chunk grid.
    pub coords: Vec<u64>,
    /// The element offset of its first element (`coords` times the chunk shape).
    pub offset: Vec<u64>,
    /// Where its stored bytes start: the absolute byte offset in the stored file (user block
    /// included), as `h5py`'s `get_chunk_info` reports it.
    pub byte_offset: u64,
    /// Its stored (filtered) size in bytes.
    pub size: u64,
    /// Its filter mask: bit `i` set means filter `i` of the pipeline was not applied.
    pub filter_mask: u32,
}

/// Most chunk entries one listing returns.
const MAX_CHUNKS: u64 = 1 << 27;

/// The geometry of a chunked dataset.
#[derive(Clone, Debug)]
pub(crate) struct Geometry {
    pub dims: Vec<u64>,
    pub max_dims: Vec<Option<u64>>,
    pub chunk: Vec<u64>,
    /// Bytes of an unfiltered chunk.
    pub chunk_bytes: u64,
}

impl Geometry {
    /// Chunks per axis for the current extent.
    pub fn grid(&self) -> Vec<u64> {
        self.dims
            .iter()
            .zip(&self.chunk)
            .map(|(&d, &c)| d.div_ceil(c))
            .collect()
    }

    /// Chunks per axis for the maximum extent (`None`: unlimited).
    pub fn max_grid(&self) -> Vec<Option<u64>> {
        self.max_dims
            .iter()
            .zip(&self.chunk)
            .map(|(&m, &c)| m.map(|m| m.div_ceil(c)))
            .collect()
    }

    fn info(&self, f: &Inner, coords: Vec<u64>, addr: u64, size: u64, mask: u32) -> ChunkInfo {
        let offset = coords
            .iter()
            .zip(&self.chunk)
            .map(|(&c, &s)| c.saturating_mul(s))
            .collect();
        ChunkInfo {
            coords,
            offset,
            byte_offset: f.base.saturating_add(addr),
            size,
            filter_mask: mask,
        }
    }
}

/// "Down" products of `sizes`: the linear index stride of each axis in C order.
fn down(sizes: &[u64]) -> Vec<u64> {
    let mut out = vec![1u64; sizes.len()];
    let mut acc = 1u64;
    for i in (0..sizes.len()).rev() {
        out[i] = acc;
        acc = acc.saturating_mul(sizes[i]);
    }
    out
}

fn linear(coords: &[u64], down: &[u64]) -> u64 {
    coords
        .iter()
        .zip(down)
        .fold(0u64, |a, (&c, &d)| a.saturating_add(c.saturating_mul(d)))
}

fn unlinear(mut idx: u64, down: &[u64]) -> Vec<u64> {
    down.iter()
        .map(|&d| {
            let c = idx / d.max(1);
            idx %= d.max(1);
            c
        })
        .collect()
}

/// Every chunk coordinate of `grid`, in C order (bounded).
fn all_coords(grid: &[u64]) -> H5Result<Vec<Vec<u64>>> {
    let n = grid.iter().try_fold(1u64, |a, &g| a.checked_mul(g));
    let n = n.filter(|&n| n <= MAX_CHUNKS).ok_or_else(|| {
        too_large(format!(
            "a chunk grid of {grid:?} chunks (at most {MAX_CHUNKS})"
        ))
    })?;
    let d = down(grid);
    Ok((0..n).map(|i| unlinear(i, &d)).collect())
}

/// The chunks of a dataset stored in its index: those among `wanted` (grid coordinates,
/// sorted), or all of them. Chunks never written are absent.
pub(crate) fn lookup(
    f: &Inner,
    layout: &LayoutInfo,
    geom: &Geometry,
    wanted: Option<&[Vec<u64>]>,
) -> H5Result<Vec<ChunkInfo>> {
    let Some(index_addr) = layout.index_addr else {
        return Ok(Vec::new());
    };
    let params = layout.index.as_ref().ok_or_else(|| {
        corrupt(
            "data layout message",
            None,
            "a chunked layout without an index",
        )
    })?;
    let rank = geom.chunk.len();
    let wanted_set: Option<HashSet<&Vec<u64>>> = wanted.map(|w| w.iter().collect());
    let keep = |coords: &Vec<u64>| wanted_set.as_ref().is_none_or(|s| s.contains(coords));
    match params {
        IndexParams::BTree1 => {
            let offsets: Option<Vec<Vec<u64>>> = wanted.map(|w| {
                w.iter()
                    .map(|c| {
                        c.iter()
                            .zip(&geom.chunk)
                            .map(|(&a, &b)| a.saturating_mul(b))
                            .collect()
                    })
                    .collect()
            });
            let entries = crate::btree1::chunks(f, index_addr, rank, offsets.as_deref())?;
            let mut out = Vec::new();
            for e in entries {
                if e.offset.iter().zip(&geom.chunk).any(|(&o, &c)| o % c != 0) {
                    return Err(corrupt(
                        "v1 B-tree",
                        Some(index_addr),
                        format!("chunk offset {:?} is not on the chunk grid", e.offset),
                    ));
                }
                let coords: Vec<u64> = e
                    .offset
                    .iter()
                    .zip(&geom.chunk)
                    .map(|(&o, &c)| o / c)
                    .collect();
                if keep(&coords) {
                    out.push(geom.info(f, coords, e.addr, u64::from(e.size), e.mask));
                }
            }
            Ok(out)
        }
        IndexParams::Single { filtered } => {
            let coords = vec![0u64; rank];
            if !keep(&coords) {
                return Ok(Vec::new());
            }
            let (size, mask) = filtered.unwrap_or((geom.chunk_bytes, 0));
            Ok(vec![geom.info(f, coords, index_addr, size, mask)])
        }
        IndexParams::Implicit => {
            let grid: Vec<u64> = geom
                .max_grid()
                .iter()
                .zip(geom.grid())
                .map(|(m, g)| m.unwrap_or(g))
                .collect();
            let d = down(&grid);
            // Every chunk is allocated: they must fit the file.
            let n = grid.iter().try_fold(1u64, |a, &g| a.checked_mul(g));
            let bytes = n.and_then(|n| n.checked_mul(geom.chunk_bytes));
            let end = bytes.and_then(|b| b.checked_add(f.abs(index_addr).ok()?));
            if end.is_none_or(|e| e > f.io.size()) {
                return Err(corrupt(
                    "implicit chunk index",
                    Some(index_addr),
                    format!(
                        "{grid:?} chunks of {} bytes do not fit the file",
                        geom.chunk_bytes
                    ),
                ));
            }
            let coords = match wanted {
                Some(w) => w.to_vec(),
                None => all_coords(&geom.grid())?,
            };
            Ok(coords
                .into_iter()
                .map(|c| {
                    let idx = linear(&c, &d);
                    let addr = index_addr.saturating_add(idx.saturating_mul(geom.chunk_bytes));
                    geom.info(f, c, addr, geom.chunk_bytes, 0)
                })
                .collect())
        }
        IndexParams::FixedArray { .. } => fixed_array(f, index_addr, geom, wanted),
        IndexParams::ExtensibleArray => extensible_array(f, index_addr, geom, wanted),
        IndexParams::BTree2 => btree2(f, index_addr, geom, wanted),
    }
}

/// Parse one index element: an address, and for filtered chunks the size and filter mask.
fn element(
    f: &Inner,
    raw: &[u8],
    filtered: bool,
    chunk_bytes: u64,
    what: &'static str,
    at: u64,
) -> H5Result<Option<(u64, u64, u32)>> {
    let mut c = f.cursor(raw, what, at);
    let addr = c.addr()?;
    let (size, mask) = if filtered {
        let n = raw.len().saturating_sub(f.sizes.offset as usize + 4);
        if n == 0 || n > 8 {
            return Err(c.err(format!("filtered chunk entries of {} bytes", raw.len())));
        }
        (c.uint(n)?, c.u32()?)
    } else {
        (chunk_bytes, 0)
    };
    Ok(addr.map(|a| (a, size, mask)))
}

fn bit(bitmap: &[u8], i: u64) -> bool {
    let byte = usize::try_from(i / 8).unwrap_or(usize::MAX);
    bitmap.get(byte).is_some_and(|b| b & (0x80 >> (i % 8)) != 0)
}

fn fixed_array(
    f: &Inner,
    addr: u64,
    geom: &Geometry,
    wanted: Option<&[Vec<u64>]>,
) -> H5Result<Vec<ChunkInfo>> {
    let what = "fixed array header";
    let o = f.sizes.offset as u64;
    let l = f.sizes.length as u64;
    let head = f.read_structure(addr, 8 + l + o + 4, what)?;
    verify_checksum(&head, what, Some(addr))?;
    let mut c = f.cursor(&head, what, addr);
    if c.bytes(4)? != b"FAHD" {
        return Err(c.err("no FAHD signature"));
    }
    let version = c.u8()?;
    let client = c.u8()?;
    let esz = c.u8()? as u64;
    let page_bits = c.u8()?;
    let n = c.length()?;
    let dblock = c.addr()?;
    if version != 0 || client > 1 || esz < o || page_bits > 32 {
        return Err(c.err(format!(
            "version {version}, client {client}, entries of {esz} bytes, {page_bits} page bits"
        )));
    }
    let filtered = client == 1;
    let Some(dblock) = dblock else {
        return Ok(Vec::new());
    };
    if n.saturating_mul(esz) > f.io.size() {
        return Err(c.err(format!("{n} entries of {esz} bytes")));
    }
    // Chunk index → grid coordinates, by the maximum grid.
    let grid: Vec<u64> = geom
        .max_grid()
        .iter()
        .zip(geom.grid())
        .map(|(m, g)| m.unwrap_or(g))
        .collect();
    let d = down(&grid);
    let indices: Vec<u64> = match wanted {
        Some(w) => w.iter().map(|c| linear(c, &d)).filter(|&i| i < n).collect(),
        None => (0..n).collect(),
    };
    let what = "fixed array data block";
    let page_n = 1u64 << page_bits;
    let paged = n > page_n;
    let head_len = 4 + 1 + 1 + o;
    let mut out = Vec::new();
    let mut emit = |f: &Inner, idx: u64, raw: &[u8], at: u64| -> H5Result<()> {
        if let Some((a, size, mask)) = element(f, raw, filtered, geom.chunk_bytes, what, at)? {
            out.push(geom.info(f, unlinear(idx, &d), a, size, mask));
        }
        Ok(())
    };
    if !paged {
        let block = f.read_structure(dblock, head_len + n * esz + 4, what)?;
        verify_checksum(&block, what, Some(dblock))?;
        check_block_head(f, &block, b"FADB", client, addr, dblock, what)?;
        for idx in indices {
            let start = (head_len + idx * esz) as usize;
            emit(f, idx, &block[start..start + esz as usize], dblock)?;
        }
        return Ok(out);
    }
    let npages = n.div_ceil(page_n);
    let bitmap_len = npages.div_ceil(8);
    let prefix_len = head_len + bitmap_len + 4;
    let prefix = f.read_structure(dblock, prefix_len, what)?;
    verify_checksum(&prefix, what, Some(dblock))?;
    check_block_head(f, &prefix, b"FADB", client, addr, dblock, what)?;
    let bitmap = prefix.slice(head_len as usize..(head_len + bitmap_len) as usize);
    let page_size = page_n * esz + 4;
    let mut pages: Vec<u64> = indices.iter().map(|i| i / page_n).collect();
    pages.dedup();
    pages.retain(|&p| bit(&bitmap, p));
    let page_addr = |p: u64| {
        dblock
            .saturating_add(prefix_len)
            .saturating_add(p.saturating_mul(page_size))
    };
    let page_len = |p: u64| (page_n.min(n - p * page_n)) * esz + 4;
    f.prefetch(
        &pages
            .iter()
            .map(|&p| (page_addr(p), page_len(p)))
            .collect::<Vec<_>>(),
    )?;
    let mut loaded: HashMap<u64, Bytes> = HashMap::new();
    for &p in &pages {
        let at = page_addr(p);
        let page = f.read_structure(at, page_len(p), "fixed array data block page")?;
        verify_checksum(&page, "fixed array data block page", Some(at))?;
        loaded.insert(p, page);
    }
    for idx in indices {
        let p = idx / page_n;
        if let Some(page) = loaded.get(&p) {
            let start = ((idx % page_n) * esz) as usize;
            emit(f, idx, &page[start..start + esz as usize], page_addr(p))?;
        }
    }
    Ok(out)
}

/// Check the signature, version, client and header address at the start of an array block.
fn check_block_head(
    f: &Inner,
    block: &[u8],
    sig: &[u8; 4],
    client: u8,
    header: u64,
    at: u64,
    what: &'static str,
) -> H5Result<()> {
    let mut c = f.cursor(block, what, at);
    if c.bytes(4)? != sig {
        return Err(c.err("bad signature"));
    }
    let version = c.u8()?;
    let cl = c.u8()?;
    let h = c.addr()?;
    if version != 0 || cl != client || h != Some(header) {
        return Err(c.err(format!(
            "version {version}, client {cl}, header {h:?} (expected client {client}, header {header:#x})"
        )));
    }
    Ok(())
}

/// An extensible array's header fields and derived geometry.
struct ExtArray {
    addr: u64,
    client: u8,
    esz: u64,
    idx_blk_elmts: u64,
    min_elmts: u64,
    page_n: u64,
    arr_off_size: u64,
    /// Per super block: (data blocks, elements per data block, first element index, first
    /// data block index).
    sblk: Vec<(u64, u64, u64, u64)>,
    /// Super blocks whose data blocks the index block points to directly.
    iblock_nsblks: u64,
    ndblk_addrs: u64,
    nsblk_addrs: u64,
    max_idx: u64,
    iblock: Option<u64>,
}

fn extensible_header(f: &Inner, addr: u64) -> H5Result<ExtArray> {
    let what = "extensible array header";
    let o = f.sizes.offset as u64;
    let l = f.sizes.length as u64;
    let head = f.read_structure(addr, 12 + 6 * l + o + 4, what)?;
    verify_checksum(&head, what, Some(addr))?;
    let mut c = f.cursor(&head, what, addr);
    if c.bytes(4)? != b"EAHD" {
        return Err(c.err("no EAHD signature"));
    }
    let version = c.u8()?;
    let client = c.u8()?;
    let esz = u64::from(c.u8()?);
    let max_bits = u64::from(c.u8()?);
    let idx_blk_elmts = u64::from(c.u8()?);
    let min_elmts = u64::from(c.u8()?);
    let min_ptrs = u64::from(c.u8()?);
    let page_bits = u64::from(c.u8()?);
    let _nsblks = c.length()?;
    let _sblk_size = c.length()?;
    let _ndblks = c.length()?;
    let _dblk_size = c.length()?;
    let max_idx = c.length()?;
    let _nelmts = c.length()?;
    let iblock = c.addr()?;
    let pow2 = |v: u64| v != 0 && v & (v - 1) == 0;
    if version != 0
        || client > 1
        || esz < o
        || !(1..=64).contains(&max_bits)
        || !pow2(min_elmts)
        || !pow2(min_ptrs)
        || page_bits > 32
        || u64::from(log2_floor(min_elmts)) > max_bits
    {
        return Err(c.err(format!(
            "version {version}, client {client}, elements of {esz} bytes, {max_bits} bits, data \
             blocks of at least {min_elmts} elements, super blocks of at least {min_ptrs} \
             pointers, {page_bits} page bits"
        )));
    }
    let nsblks = 1 + max_bits - u64::from(log2_floor(min_elmts));
    let mut sblk = Vec::new();
    let (mut start_idx, mut start_dblk) = (0u64, 0u64);
    for u in 0..nsblks {
        let ndblks = 1u64.checked_shl((u / 2) as u32).unwrap_or(u64::MAX);
        let nelmts =
            min_elmts.saturating_mul(1u64.checked_shl(u.div_ceil(2) as u32).unwrap_or(u64::MAX));
        sblk.push((ndblks, nelmts, start_idx, start_dblk));
        start_idx = start_idx.saturating_add(ndblks.saturating_mul(nelmts));
        start_dblk = start_dblk.saturating_add(ndblks);
    }
    let iblock_nsblks = 2 * u64::from(log2_floor(min_ptrs));
    Ok(ExtArray {
        addr,
        client,
        esz,
        idx_blk_elmts,
        min_elmts,
        page_n: 1u64 << page_bits,
        arr_off_size: max_bits.div_ceil(8),
        iblock_nsblks,
        ndblk_addrs: 2 * (min_ptrs - 1),
        nsblk_addrs: nsblks.saturating_sub(iblock_nsblks),
        sblk,
        max_idx,
        iblock,
    })
}

/// Where an extensible array element lives.
enum EaSlot {
    /// In the index block, at this element position.
    Index(u64),
    /// In a data block the index block points to: (data block number, element in it, super
    /// block).
    Direct(u64, u64, usize),
    /// In a data block of a super block: (super block number, data block in it, element).
    Super(usize, u64, u64),
}

fn extensible_array(
    f: &Inner,
    addr: u64,
    geom: &Geometry,
    wanted: Option<&[Vec<u64>]>,
) -> H5Result<Vec<ChunkInfo>> {
    let ea = extensible_header(f, addr)?;
    let o = f.sizes.offset as u64;
    let filtered = ea.client == 1;
    let Some(iblock_addr) = ea.iblock else {
        return Ok(Vec::new());
    };
    // The unlimited axis goes first ("swizzled"); the index is the linear position in the
    // swizzled maximum grid.
    let rank = geom.chunk.len();
    let max_grid = geom.max_grid();
    let unlim = max_grid.iter().position(|m| m.is_none()).unwrap_or(0);
    let swizzle = |c: &[u64]| -> Vec<u64> {
        let mut s = Vec::with_capacity(rank);
        if rank > 0 {
            s.push(c[unlim]);
            s.extend(
                c.iter()
                    .enumerate()
                    .filter(|&(i, _)| i != unlim)
                    .map(|(_, &v)| v),
            );
        }
        s
    };
    let unswizzle = |s: &[u64]| -> Vec<u64> {
        let mut c: Vec<u64> = s.iter().skip(1).copied().collect();
        if rank > 0 {
            c.insert(unlim, s[0]);
        }
        c
    };
    let grid_now = geom.grid();
    let sizes: Vec<u64> = max_grid
        .iter()
        .zip(&grid_now)
        .map(|(m, &g)| m.unwrap_or(g))
        .collect();
    let d = down(&swizzle(&sizes));
    // The index block.
    let what = "extensible array index block";
    let head_len = 4 + 1 + 1 + o;
    let ib_len = head_len + ea.idx_blk_elmts * ea.esz + (ea.ndblk_addrs + ea.nsblk_addrs) * o + 4;
    let ib = f.read_structure(iblock_addr, ib_len, what)?;
    verify_checksum(&ib, what, Some(iblock_addr))?;
    check_block_head(f, &ib, b"EAIB", ea.client, addr, iblock_addr, what)?;
    let mut c = f.cursor(&ib, what, iblock_addr);
    c.seek((head_len + ea.idx_blk_elmts * ea.esz) as usize)?;
    let mut dblk_addrs = Vec::new();
    for _ in 0..ea.ndblk_addrs {
        dblk_addrs.push(c.addr()?);
    }
    let mut sblk_addrs = Vec::new();
    for _ in 0..ea.nsblk_addrs {
        sblk_addrs.push(c.addr()?);
    }
    let sb_len = |s: usize| -> u64 {
        let (ndblks, nelmts, _, _) = ea.sblk[s];
        let bitmap = if nelmts > ea.page_n {
            ndblks.saturating_mul((nelmts / ea.page_n).div_ceil(8))
        } else {
            0
        };
        (head_len + ea.arr_off_size + 4)
            .saturating_add(bitmap)
            .saturating_add(ndblks.saturating_mul(o))
    };
    let sb_addr = |s: usize| -> Option<u64> {
        sblk_addrs
            .get(s.checked_sub(ea.iblock_nsblks as usize)?)
            .copied()
            .flatten()
    };
    // The super blocks to read: those holding wanted elements, or every allocated one.
    let wanted_idx: Option<Vec<u64>> =
        wanted.map(|w| w.iter().map(|c| linear(&swizzle(c), &d)).collect());
    let mut supers: Vec<usize> = match &wanted_idx {
        Some(ix) => ix
            .iter()
            .filter_map(|&idx| {
                let i = idx.checked_sub(ea.idx_blk_elmts)?;
                let s = log2_floor(i / ea.min_elmts + 1) as usize;
                ((s as u64) >= ea.iblock_nsblks && s < ea.sblk.len()).then_some(s)
            })
            .collect(),
        None => (ea.iblock_nsblks as usize..ea.sblk.len())
            .filter(|&s| sb_addr(s).is_some())
            .collect(),
    };
    supers.sort_unstable();
    supers.dedup();
    f.prefetch(
        &supers
            .iter()
            .filter_map(|&s| sb_addr(s).map(|a| (a, sb_len(s))))
            .collect::<Vec<_>>(),
    )?;
    // Parsed super blocks: (page bitmap, data block addresses).
    let mut parsed: HashMap<usize, (Bytes, Vec<Option<u64>>)> = HashMap::new();
    for &s in &supers {
        let Some(a) = sb_addr(s) else { continue };
        let what = "extensible array super block";
        let len = sb_len(s);
        if len > f.io.size() {
            return Err(corrupt(what, Some(a), "larger than the file"));
        }
        let block = f.read_structure(a, len, what)?;
        verify_checksum(&block, what, Some(a))?;
        check_block_head(f, &block, b"EASB", ea.client, addr, a, what)?;
        let (ndblks, nelmts, _, _) = ea.sblk[s];
        let bitmap_len = if nelmts > ea.page_n {
            ndblks * (nelmts / ea.page_n).div_ceil(8)
        } else {
            0
        };
        let start = (head_len + ea.arr_off_size) as usize;
        let bitmap = block.slice(start..start + bitmap_len as usize);
        let mut c = f.cursor(&block, what, a);
        c.seek(start + bitmap_len as usize)?;
        let mut dbs = Vec::with_capacity(ndblks as usize);
        for _ in 0..ndblks {
            dbs.push(c.addr()?);
        }
        parsed.insert(s, (bitmap, dbs));
    }
    // The element indices to look at.
    let indices: Vec<u64> = match wanted_idx {
        Some(ix) => ix,
        None => {
            // Only the allocated blocks (and initialized pages), below the highest index set:
            // every element listed has bytes in the file.
            let mut ix: Vec<u64> = (0..ea.idx_blk_elmts.min(ea.max_idx)).collect();
            let push_range = |ix: &mut Vec<u64>, from: u64, n: u64| -> H5Result<()> {
                let to = from.saturating_add(n).min(ea.max_idx);
                if to > from {
                    if ix.len() as u64 + (to - from) > MAX_CHUNKS {
                        return Err(too_large("an extensible array of more than 2^27 elements"));
                    }
                    ix.extend(from..to);
                }
                Ok(())
            };
            for (s, &(ndblks, nelmts, start_idx, start_dblk)) in ea.sblk.iter().enumerate() {
                let first = ea.idx_blk_elmts.saturating_add(start_idx);
                if first >= ea.max_idx {
                    break;
                }
                for k in 0..ndblks.min(1 << 20) {
                    let base = first.saturating_add(k.saturating_mul(nelmts));
                    if base >= ea.max_idx {
                        break;
                    }
                    if (s as u64) < ea.iblock_nsblks {
                        let db = start_dblk.saturating_add(k);
                        if dblk_addrs.get(db as usize).copied().flatten().is_some() {
                            push_range(&mut ix, base, nelmts)?;
                        }
                    } else if let Some((bitmap, dbs)) = parsed.get(&s) {
                        if dbs.get(k as usize).copied().flatten().is_none() {
                            continue;
                        }
                        if nelmts > ea.page_n {
                            let npages = nelmts / ea.page_n;
                            for p in 0..npages {
                                if bit(bitmap, k * npages + p) {
                                    push_range(&mut ix, base + p * ea.page_n, ea.page_n)?;
                                }
                            }
                        } else {
                            push_range(&mut ix, base, nelmts)?;
                        }
                    }
                }
            }
            ix
        }
    };
    // Where each element is.
    let mut slots = Vec::with_capacity(indices.len());
    for &idx in &indices {
        let slot = if idx < ea.idx_blk_elmts {
            EaSlot::Index(idx)
        } else {
            let i = idx - ea.idx_blk_elmts;
            let s = log2_floor(i / ea.min_elmts + 1) as usize;
            let Some(&(_, nelmts, start_idx, start_dblk)) = ea.sblk.get(s) else {
                continue;
            };
            let Some(e) = i.checked_sub(start_idx) else {
                continue;
            };
            if (s as u64) < ea.iblock_nsblks {
                EaSlot::Direct(start_dblk.saturating_add(e / nelmts), e % nelmts, s)
            } else {
                EaSlot::Super(s, e / nelmts, e % nelmts)
            }
        };
        slots.push((idx, slot));
    }
    // The data blocks (or pages) needed: (address, length) → elements.
    let db_prefix = head_len + ea.arr_off_size;
    let mut reads: Vec<(u64, u64)> = Vec::new();
    // Per slot: (block or page address, element position in it), or none.
    let mut located: Vec<(u64, Option<(u64, u64)>)> = Vec::with_capacity(slots.len());
    for (idx, slot) in &slots {
        let loc = match *slot {
            EaSlot::Index(_) => None,
            EaSlot::Direct(db, e, s) => {
                let nelmts = ea.sblk[s].1;
                dblk_addrs
                    .get(db as usize)
                    .copied()
                    .flatten()
                    .map(|a| place(&ea, a, db_prefix, nelmts, e, &mut reads))
            }
            EaSlot::Super(s, db, e) => {
                let nelmts = ea.sblk[s].1;
                parsed.get(&s).and_then(|(bitmap, dbs)| {
                    let a = dbs.get(db as usize).copied().flatten()?;
                    if nelmts > ea.page_n {
                        let npages = nelmts / ea.page_n;
                        if !bit(bitmap, db * npages + e / ea.page_n) {
                            return None;
                        }
                    }
                    Some(place(&ea, a, db_prefix, nelmts, e, &mut reads))
                })
            }
        };
        located.push((*idx, loc));
    }
    reads.sort_unstable();
    reads.dedup();
    f.prefetch(&reads)?;
    let mut blocks: HashMap<u64, Bytes> = HashMap::new();
    for &(a, len) in &reads {
        let what = "extensible array data block";
        let block = f.read_structure(a, len, what)?;
        verify_checksum(&block, what, Some(a))?;
        blocks.insert(a, block);
    }
    let mut out = Vec::new();
    for (i, (idx, loc)) in located.into_iter().enumerate() {
        let raw = match (&slots[i].1, loc) {
            (EaSlot::Index(e), _) => {
                let start = (head_len + e * ea.esz) as usize;
                ib.slice(start..start + ea.esz as usize)
            }
            (_, Some((a, pos))) => match blocks.get(&a) {
                Some(b) => {
                    let start = usize::try_from(pos).unwrap_or(usize::MAX);
                    b.get(start..start.saturating_add(ea.esz as usize))
                        .map(Bytes::copy_from_slice)
                        .ok_or_else(|| {
                            corrupt(
                                "extensible array data block",
                                Some(a),
                                "element past its end",
                            )
                        })?
                }
                None => continue,
            },
            _ => continue,
        };
        if let Some((a, size, mask)) = element(
            f,
            &raw,
            filtered,
            geom.chunk_bytes,
            "extensible array element",
            ea.addr,
        )? {
            let s: Vec<u64> = unlinear(idx, &d);
            let coords = unswizzle(&s);
            if coords.len() == rank {
                out.push(geom.info(f, coords, a, size, mask));
            }
        }
    }
    Ok(out)
}

/// The block (or page) holding element `e` of a data block at `a` of `nelmts` elements, and
/// the element's byte position in it; records the read.
fn place(
    ea: &ExtArray,
    a: u64,
    prefix: u64,
    nelmts: u64,
    e: u64,
    reads: &mut Vec<(u64, u64)>,
) -> (u64, u64) {
    if nelmts > ea.page_n {
        let page = e / ea.page_n;
        let page_size = ea.page_n * ea.esz + 4;
        let pa = a
            .saturating_add(prefix + 4)
            .saturating_add(page.saturating_mul(page_size));
        reads.push((pa, page_size));
        (pa, (e % ea.page_n) * ea.esz)
    } else {
        reads.push((
            a,
            (prefix + 4).saturating_add(nelmts.saturating_mul(ea.esz)),
        ));
        (a, prefix.saturating_add(e.saturating_mul(ea.esz)))
    }
}

fn btree2(
    f: &Inner,
    addr: u64,
    geom: &Geometry,
    wanted: Option<&[Vec<u64>]>,
) -> H5Result<Vec<ChunkInfo>> {
    let tree = BTree2::open(f, addr)?;
    let rank = geom.chunk.len();
    let o = f.sizes.offset as usize;
    let filtered = match tree.kind {
        10 => false,
        11 => true,
        k => {
            return Err(corrupt(
                "v2 B-tree header",
                Some(addr),
                format!("record type {k} for a chunk index"),
            ))
        }
    };
    let coord_at = if filtered {
        tree.rec_size.checked_sub(8 * rank)
    } else {
        Some(o)
    };
    let Some(coord_at) = coord_at.filter(|&p| p >= o && p + 8 * rank == tree.rec_size) else {
        return Err(corrupt(
            "v2 B-tree header",
            Some(addr),
            format!("records of {} bytes for {rank} axes", tree.rec_size),
        ));
    };
    let coords_of = |rec: &[u8]| -> Vec<u64> {
        (0..rank)
            .map(|i| le_uint(&rec[coord_at + 8 * i..coord_at + 8 * i + 8]))
            .collect()
    };
    let keep = |lo: Option<&[u8]>, hi: Option<&[u8]>| -> bool {
        let Some(w) = wanted else { return true };
        let start = match lo {
            Some(lo) => {
                let lo = coords_of(lo);
                w.partition_point(|t| *t < lo)
            }
            None => 0,
        };
        match (w.get(start), hi) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(t), Some(hi)) => *t <= coords_of(hi),
        }
    };
    let records = tree.records_where(f, &keep)?;
    let wanted_set: Option<HashSet<&Vec<u64>>> = wanted.map(|w| w.iter().collect());
    let mut out = Vec::new();
    for rec in records {
        let coords = coords_of(&rec);
        if wanted_set.as_ref().is_some_and(|s| !s.contains(&coords)) {
            continue;
        }
        if let Some((a, size, mask)) = element(
            f,
            &rec[..coord_at],
            filtered,
            geom.chunk_bytes,
            "v2 B-tree chunk record",
            addr,
        )? {
            out.push(geom.info(f, coords, a, size, mask));
        }
    }
    Ok(out)
}
