//! Selections: the hyperslabs a caller reads ([`Slice`]) and the dataspace selections stored
//! in region references ([`Selection`]), with the serialized selection formats (versions 1
//! to 3 of hyperslab and point selections, "all" and "none").

use std::collections::BTreeSet;

use crate::cursor::Cursor;
use crate::error::{invalid, too_large, H5Result};

/// One axis of a read: the indices `start, start + step, ...` below `stop`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Slice {
    /// The first index.
    pub start: u64,
    /// One past the last index that may be selected.
    pub stop: u64,
    /// The distance between selected indices (at least 1).
    pub step: u64,
}

impl Slice {
    /// `start..stop` with `step`.
    pub fn new(start: u64, stop: u64, step: u64) -> Slice {
        Slice { start, stop, step }
    }

    /// `start..stop`, every index.
    pub fn range(start: u64, stop: u64) -> Slice {
        Slice::new(start, stop, 1)
    }

    /// Every index of an axis of `len`.
    pub fn full(len: u64) -> Slice {
        Slice::new(0, len, 1)
    }

    /// How many indices it selects.
    pub fn count(&self) -> u64 {
        if self.stop <= self.start || self.step == 0 {
            0
        } else {
            (self.stop - self.start).div_ceil(self.step)
        }
    }
}

/// Check `slices` against `dims`: one per axis, steps of at least 1, within the extent.
pub(crate) fn check_slices(slices: &[Slice], dims: &[u64]) -> H5Result<()> {
    if slices.len() != dims.len() {
        return Err(invalid(format!(
            "{} slices for a dataset of {} axes",
            slices.len(),
            dims.len()
        )));
    }
    for (i, (s, &d)) in slices.iter().zip(dims).enumerate() {
        if s.step == 0 || s.start > s.stop || s.stop > d {
            return Err(invalid(format!(
                "slice {}:{}:{} of axis {i} (length {d})",
                s.start, s.stop, s.step
            )));
        }
    }
    Ok(())
}

/// One axis of a regular hyperslab: `count` blocks of `block` indices, `stride` apart,
/// from `start`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HyperslabDim {
    /// The first index of the first block.
    pub start: u64,
    /// The distance between block starts.
    pub stride: u64,
    /// How many blocks (`u64::MAX`: unlimited, to the end of the extent).
    pub count: u64,
    /// Indices per block (`u64::MAX`: unlimited).
    pub block: u64,
}

/// A selection of a dataspace, as a region reference stores it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Selection {
    /// Every element.
    All,
    /// No element.
    None,
    /// These points (coordinates per point), in the order stored.
    Points(Vec<Vec<u64>>),
    /// A regular hyperslab, per axis (normalized as HDF5 does: adjacent blocks merged).
    Regular(Vec<HyperslabDim>),
    /// An irregular hyperslab: blocks given by their first and last (inclusive) coordinates.
    Blocks(Vec<(Vec<u64>, Vec<u64>)>),
}

impl Selection {
    /// The selection as one [`Slice`] per axis, when it can be written so (a regular
    /// hyperslab of single-index blocks or a single block per axis).
    pub fn as_slices(&self) -> Option<Vec<Slice>> {
        match self {
            Selection::Regular(dims) => dims
                .iter()
                .map(|d| {
                    if d.count == u64::MAX || d.block == u64::MAX {
                        None
                    } else if d.count == 1 {
                        Some(Slice::new(d.start, d.start.checked_add(d.block)?, 1))
                    } else if d.block == 1 {
                        let last = d.start.checked_add(d.stride.checked_mul(d.count - 1)?)?;
                        Some(Slice::new(d.start, last.checked_add(1)?, d.stride.max(1)))
                    } else {
                        None
                    }
                })
                .collect(),
            _ => None,
        }
    }

    /// The blocks of a hyperslab selection (first and last coordinates, in C order), at most
    /// `limit` of them; `dims` bounds unlimited counts and blocks.
    pub fn blocks(&self, dims: &[u64], limit: usize) -> H5Result<Vec<(Vec<u64>, Vec<u64>)>> {
        match self {
            Selection::Blocks(b) => Ok(b.clone()),
            Selection::Regular(axes) => {
                let mut per_axis = Vec::with_capacity(axes.len());
                for (i, a) in axes.iter().enumerate() {
                    let extent = dims.get(i).copied().unwrap_or(u64::MAX);
                    let block = if a.block == u64::MAX {
                        extent.saturating_sub(a.start)
                    } else {
                        a.block
                    };
                    let count = if a.count == u64::MAX {
                        extent.saturating_sub(a.start).div_ceil(a.stride.max(1))
                    } else {
                        a.count
                    };
                    if block == 0 || count == 0 {
                        return Ok(Vec::new());
                    }
                    if count > limit as u64 {
                        return Err(too_large(format!(
                            "a selection of more than {limit} blocks"
                        )));
                    }
                    let mut v = Vec::with_capacity(count as usize);
                    for k in 0..count {
                        let s = a.start.saturating_add(k.saturating_mul(a.stride));
                        v.push((s, s.saturating_add(block - 1)));
                    }
                    per_axis.push(v);
                }
                let total = per_axis
                    .iter()
                    .try_fold(1usize, |acc, v| acc.checked_mul(v.len()));
                if total.is_none_or(|t| t > limit) {
                    return Err(too_large(format!(
                        "a selection of more than {limit} blocks"
                    )));
                }
                let mut out = vec![(Vec::new(), Vec::new())];
                for axis in per_axis {
                    let mut next = Vec::with_capacity(out.len() * axis.len());
                    for (lo, hi) in &out {
                        for &(a, b) in &axis {
                            let mut l = lo.clone();
                            let mut h = hi.clone();
                            l.push(a);
                            h.push(b);
                            next.push((l, h));
                        }
                    }
                    out = next;
                }
                Ok(out)
            }
            Selection::All => Ok(vec![(
                vec![0; dims.len()],
                dims.iter().map(|d| d.saturating_sub(1)).collect(),
            )]),
            Selection::None | Selection::Points(_) => Ok(Vec::new()),
        }
    }

    /// Every selected point of a dataspace of shape `dims`, sorted in C order without
    /// duplicates, at most `limit` of them.
    pub fn points(&self, dims: &[u64], limit: usize) -> H5Result<Vec<Vec<u64>>> {
        let mut set = BTreeSet::new();
        match self {
            Selection::None => {}
            Selection::Points(p) => {
                for q in p {
                    set.insert(q.clone());
                }
            }
            _ => {
                for (lo, hi) in self.blocks(dims, limit)? {
                    if lo.len() != hi.len() || lo.iter().zip(&hi).any(|(l, h)| l > h) {
                        return Err(invalid("a selection block of mismatched corners"));
                    }
                    let volume = lo.iter().zip(&hi).try_fold(1u64, |a, (&l, &h)| {
                        a.checked_mul(h.checked_sub(l)?.checked_add(1)?)
                    });
                    if volume.is_none_or(|v| set.len() as u64 + v > limit as u64) {
                        return Err(too_large(format!(
                            "a selection of more than {limit} points"
                        )));
                    }
                    let mut p = lo.clone();
                    'block: loop {
                        set.insert(p.clone());
                        let mut axis = p.len();
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
            }
        }
        if set.len() > limit {
            return Err(too_large(format!(
                "a selection of more than {limit} points"
            )));
        }
        Ok(set.into_iter().collect())
    }
}

/// Parse a serialized dataspace selection of a dataspace of `rank` axes (the rank is in the
/// serialization of points and hyperslabs; "all" and "none" carry none).
pub(crate) fn parse_selection(c: &mut Cursor) -> H5Result<Selection> {
    let kind = c.u32()?;
    let version = c.u32()?;
    match kind {
        0 | 3 => {
            if version != 1 {
                return Err(c.err(format!("selection version {version}")));
            }
            c.skip(8)?;
            Ok(if kind == 0 {
                Selection::None
            } else {
                Selection::All
            })
        }
        1 => {
            let (enc, rank, n) = match version {
                1 => {
                    c.skip(8)?;
                    let rank = c.u32()? as usize;
                    let n = u64::from(c.u32()?);
                    (4usize, rank, n)
                }
                2 => {
                    let enc = c.u8()? as usize;
                    check_enc(c, enc)?;
                    let rank = c.u32()? as usize;
                    let n = c.uint(enc)?;
                    (enc, rank, n)
                }
                v => return Err(c.err(format!("point selection version {v}"))),
            };
            check_rank(c, rank)?;
            let need = n.saturating_mul((rank * enc) as u64);
            if need > c.remaining() as u64 {
                return Err(c.err(format!("{n} points of {rank} coordinates")));
            }
            let mut points = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let mut p = Vec::with_capacity(rank);
                for _ in 0..rank {
                    p.push(c.uint(enc)?);
                }
                points.push(p);
            }
            Ok(Selection::Points(points))
        }
        2 => match version {
            1 => {
                c.skip(8)?;
                let rank = c.u32()? as usize;
                check_rank(c, rank)?;
                let n = u64::from(c.u32()?);
                blocks(c, rank, n, 4)
            }
            2 => {
                let flags = c.u8()?;
                let _len = c.u32()?;
                let rank = c.u32()? as usize;
                check_rank(c, rank)?;
                if flags & 0x01 == 0 {
                    return Err(c.err("an irregular version 2 hyperslab selection"));
                }
                regular(c, rank, 8)
            }
            3 => {
                let flags = c.u8()?;
                let enc = c.u8()? as usize;
                check_enc(c, enc)?;
                let rank = c.u32()? as usize;
                check_rank(c, rank)?;
                if flags & 0x01 != 0 {
                    regular(c, rank, enc)
                } else {
                    let n = c.uint(enc)?;
                    blocks(c, rank, n, enc)
                }
            }
            v => Err(c.err(format!("hyperslab selection version {v}"))),
        },
        k => Err(c.err(format!("selection type {k}"))),
    }
}

fn check_enc(c: &Cursor, enc: usize) -> H5Result<()> {
    if matches!(enc, 2 | 4 | 8) {
        Ok(())
    } else {
        Err(c.err(format!("selection values of {enc} bytes")))
    }
}

fn check_rank(c: &Cursor, rank: usize) -> H5Result<()> {
    if rank == 0 || rank > 32 {
        Err(c.err(format!("a selection of rank {rank}")))
    } else {
        Ok(())
    }
}

fn unlimited(v: u64, enc: usize) -> u64 {
    if crate::cursor::is_undefined(v, enc) {
        u64::MAX
    } else {
        v
    }
}

fn regular(c: &mut Cursor, rank: usize, enc: usize) -> H5Result<Selection> {
    let mut dims = Vec::with_capacity(rank);
    for _ in 0..rank {
        let start = c.uint(enc)?;
        let stride = c.uint(enc)?;
        let count = unlimited(c.uint(enc)?, enc);
        let block = unlimited(c.uint(enc)?, enc);
        let mut d = HyperslabDim {
            start,
            stride,
            count,
            block,
        };
        // HDF5's normalization: adjacent blocks are one block; one block has stride 1.
        if d.stride == d.block && d.count != u64::MAX && d.block != u64::MAX {
            d.block = d.block.saturating_mul(d.count);
            d.count = 1;
            d.stride = 1;
        }
        if d.count == 1 {
            d.stride = 1;
        }
        dims.push(d);
    }
    Ok(Selection::Regular(dims))
}

fn blocks(c: &mut Cursor, rank: usize, n: u64, enc: usize) -> H5Result<Selection> {
    let need = n.saturating_mul((2 * rank * enc) as u64);
    if need > c.remaining() as u64 {
        return Err(c.err(format!("{n} blocks of rank {rank}")));
    }
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mut lo = Vec::with_capacity(rank);
        let mut hi = Vec::with_capacity(rank);
        for _ in 0..rank {
            lo.push(c.uint(enc)?);
        }
        for _ in 0..rank {
            hi.push(c.uint(enc)?);
        }
        if lo.iter().zip(&hi).any(|(l, h)| l > h) {
            return Err(c.err("a selection block ending before it starts"));
        }
        out.push((lo, hi));
    }
    Ok(match regularize(&out, rank) {
        Some(dims) => Selection::Regular(dims),
        None => Selection::Blocks(out),
    })
}

/// The regular hyperslab a list of blocks describes, when it is one (as the HDF5 library
/// finds for a selection rebuilt from a version 1 block list): the blocks are every
/// combination of one interval per axis, and each axis' intervals have one length and one
/// spacing. Adjacent intervals merge.
fn regularize(blocks: &[(Vec<u64>, Vec<u64>)], rank: usize) -> Option<Vec<HyperslabDim>> {
    if blocks.is_empty() || blocks.len() > 1 << 16 {
        return None;
    }
    let mut axes: Vec<Vec<(u64, u64)>> = Vec::with_capacity(rank);
    for a in 0..rank {
        let mut v: Vec<(u64, u64)> = blocks.iter().map(|(lo, hi)| (lo[a], hi[a])).collect();
        v.sort_unstable();
        v.dedup();
        axes.push(v);
    }
    let product = axes
        .iter()
        .try_fold(1usize, |acc, v| acc.checked_mul(v.len()))?;
    let distinct: std::collections::HashSet<&(Vec<u64>, Vec<u64>)> = blocks.iter().collect();
    if product != distinct.len() {
        return None;
    }
    let mut dims = Vec::with_capacity(rank);
    for v in axes {
        // Merge adjacent intervals, then require equal lengths and spacing.
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (lo, hi) in v {
            match merged.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => {
                    if lo <= last.1 {
                        return None; // overlapping intervals
                    }
                    last.1 = last.1.max(hi);
                }
                _ => merged.push((lo, hi)),
            }
        }
        let block = (merged[0].1 - merged[0].0).checked_add(1)?;
        let stride = if merged.len() > 1 {
            merged[1].0 - merged[0].0
        } else {
            1
        };
        for (i, &(lo, hi)) in merged.iter().enumerate() {
            let at = (i as u64)
                .checked_mul(stride)
                .and_then(|x| x.checked_add(merged[0].0));
            if (hi - lo).checked_add(1) != Some(block) || Some(lo) != at {
                return None;
            }
        }
        dims.push(HyperslabDim {
            start: merged[0].0,
            stride,
            count: merged.len() as u64,
            block,
        });
    }
    Some(dims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::{Cursor, Sizes};

    const SIZES: Sizes = Sizes {
        offset: 8,
        length: 8,
    };

    fn parse(bytes: &[u8]) -> H5Result<Selection> {
        parse_selection(&mut Cursor::new(bytes, "selection", None, SIZES))
    }

    fn u32s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn all_none_and_points() {
        assert_eq!(parse(&u32s(&[3, 1, 0, 0])).unwrap(), Selection::All);
        assert_eq!(parse(&u32s(&[0, 1, 0, 0])).unwrap(), Selection::None);
        // Points version 1: reserved, length, rank 2, 2 points.
        let v1 = u32s(&[1, 1, 0, 24, 2, 2, 1, 2, 3, 4]);
        assert_eq!(
            parse(&v1).unwrap(),
            Selection::Points(vec![vec![1, 2], vec![3, 4]])
        );
        // Points version 2 with 2-byte values.
        let mut v2 = u32s(&[1, 2]);
        v2.push(2);
        v2.extend(u32s(&[2]));
        v2.extend([2u8, 0, 5, 0, 6, 0, 7, 0, 8, 0]);
        assert_eq!(
            parse(&v2).unwrap(),
            Selection::Points(vec![vec![5, 6], vec![7, 8]])
        );
        // Too many points for the bytes.
        assert!(parse(&u32s(&[1, 1, 0, 24, 2, 1000, 1, 2])).is_err());
    }

    #[test]
    fn hyperslabs_of_every_version() {
        // Version 1: blocks (2..=4, 3..=6) and (6..=8, 3..=6): regular along axis 0.
        let v1 = u32s(&[2, 1, 0, 0, 2, 2, 2, 3, 4, 6, 6, 3, 8, 6]);
        let sel = parse(&v1).unwrap();
        assert_eq!(
            sel,
            Selection::Regular(vec![
                HyperslabDim {
                    start: 2,
                    stride: 4,
                    count: 2,
                    block: 3
                },
                HyperslabDim {
                    start: 3,
                    stride: 1,
                    count: 1,
                    block: 4
                },
            ])
        );
        assert_eq!(sel.points(&[10, 10], 100).unwrap().len(), 24);
        // Irregular blocks stay blocks.
        let irr = u32s(&[2, 1, 0, 0, 2, 2, 0, 0, 1, 1, 5, 5, 7, 5]);
        assert!(matches!(parse(&irr).unwrap(), Selection::Blocks(b) if b.len() == 2));
        // Version 2: regular, 8-byte values (start, stride, count, block per axis).
        let mut v2 = u32s(&[2, 2]);
        v2.push(1);
        v2.extend(u32s(&[36, 1]));
        for x in [1u64, 3, 4, 1] {
            v2.extend(x.to_le_bytes());
        }
        let sel = parse(&v2).unwrap();
        assert_eq!(sel.as_slices(), Some(vec![Slice::new(1, 11, 3)]));
        // Version 3: irregular with 4-byte values.
        let mut v3 = u32s(&[2, 3]);
        v3.extend([0u8, 4]);
        v3.extend(u32s(&[1, 2, 0, 1, 5, 9]));
        let sel = parse(&v3).unwrap();
        assert_eq!(sel.points(&[20], 100).unwrap().len(), 7);
        // Version 3: regular, unlimited count.
        let mut v3r = u32s(&[2, 3]);
        v3r.extend([1u8, 2]);
        v3r.extend(u32s(&[1]));
        v3r.extend([2u8, 0, 5, 0, 0xff, 0xff, 1, 0]);
        let sel = parse(&v3r).unwrap();
        assert_eq!(sel.points(&[12], 100).unwrap(), vec![vec![2], vec![7]]);
        // Bad encodings.
        assert!(parse(&u32s(&[2, 9])).is_err());
        assert!(parse(&u32s(&[7, 1])).is_err());
    }

    #[test]
    fn slice_counts() {
        assert_eq!(Slice::new(0, 10, 3).count(), 4);
        assert_eq!(Slice::new(5, 5, 1).count(), 0);
        assert_eq!(Slice::full(7).count(), 7);
        assert!(check_slices(&[Slice::new(0, 11, 1)], &[10]).is_err());
        assert!(check_slices(&[Slice::new(0, 10, 0)], &[10]).is_err());
        assert!(check_slices(&[], &[10]).is_err());
    }
}
