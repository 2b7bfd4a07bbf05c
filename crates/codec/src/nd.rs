//! The N-d copy engine: strided copies between C-ordered element buffers.
//!
//! A copy is described per axis by an [`AxisMap`]: `count` elements whose index along that
//! axis goes from `src_start + i·src_step` in the source to `dst_start + i·dst_step` in the
//! destination (steps may be negative; a source step of 0 repeats one element). Both buffers
//! have their own shape of the same rank. The engine reduces such a copy to byte offsets,
//! merges every axis that stays contiguous on both sides into the innermost run, and copies
//! each run with one `memcpy`.
//!
//! Built on it:
//! * [`copy`] (into a `&mut [u8]`) and [`SharedBuffer`] (several threads filling disjoint
//!   elements of one buffer: [`SharedBuffer::copy`], [`SharedBuffer::fill`]);
//! * variable-length elements: [`gather_variable`] (assemble a buffer from several parts) and
//!   [`insert`] (replace some elements of a chunk, fixed or variable-length);
//! * box helpers: [`copy_region`], [`extract_region`], [`insert_region`].
//!
//! The axis maps come from trusted metadata: a map that leaves either buffer, a destination
//! step of zero over more than one element, or a buffer shorter than its shape are
//! programming errors and panic (before anything is written).

use std::marker::PhantomData;

use crate::subset::fill_pattern;
use crate::ArrayBytes;

/// How one axis of a copy maps source indices to destination indices: element `i`
/// (`0 <= i < count`) goes from index `src_start + i * src_step` of the source to index
/// `dst_start + i * dst_step` of the destination, along this axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AxisMap {
    /// Source index of the first element.
    pub src_start: usize,
    /// Source index increment per element (may be negative).
    pub src_step: isize,
    /// Destination index of the first element.
    pub dst_start: usize,
    /// Destination index increment per element (may be negative).
    pub dst_step: isize,
    /// Number of elements along this axis.
    pub count: usize,
}

impl AxisMap {
    /// A map from its five parts (see the type's description).
    pub const fn new(
        src_start: usize,
        src_step: isize,
        dst_start: usize,
        dst_step: isize,
        count: usize,
    ) -> AxisMap {
        AxisMap {
            src_start,
            src_step,
            dst_start,
            dst_step,
            count,
        }
    }

    /// `count` consecutive elements on both sides.
    pub const fn contiguous(src_start: usize, dst_start: usize, count: usize) -> AxisMap {
        AxisMap::new(src_start, 1, dst_start, 1, count)
    }

    /// The same correspondence with source and destination swapped.
    pub const fn inverse(self) -> AxisMap {
        AxisMap::new(
            self.dst_start,
            self.dst_step,
            self.src_start,
            self.src_step,
            self.count,
        )
    }

    /// The same correspondence visited so that destination indices increase.
    fn ascending(self) -> AxisMap {
        if self.count <= 1 {
            return AxisMap::new(self.src_start, 1, self.dst_start, 1, self.count);
        }
        if self.dst_step > 0 {
            return self;
        }
        let back = (self.count - 1) as isize;
        AxisMap::new(
            (self.src_start as isize + back * self.src_step) as usize,
            -self.src_step,
            (self.dst_start as isize + back * self.dst_step) as usize,
            -self.dst_step,
            self.count,
        )
    }
}

/// The axes of a box copy: `shape` elements from `src_start` to `dst_start`, step 1.
pub fn box_axes(src_start: &[usize], dst_start: &[usize], shape: &[usize]) -> Vec<AxisMap> {
    assert!(
        src_start.len() == shape.len() && dst_start.len() == shape.len(),
        "nd: rank mismatch"
    );
    (0..shape.len())
        .map(|d| AxisMap::contiguous(src_start[d], dst_start[d], shape[d]))
        .collect()
}

/// `axes` with their source replaced by a dense C-ordered block of the selected elements:
/// the block's shape (the counts) and the axes from it to the same destination elements.
fn dense_axes(axes: &[AxisMap]) -> (Vec<usize>, Vec<AxisMap>) {
    let shape: Vec<usize> = axes.iter().map(|a| a.count).collect();
    let dense = axes
        .iter()
        .map(|a| AxisMap::new(0, 1, a.dst_start, a.dst_step, a.count))
        .collect();
    (shape, dense)
}

/// C-order byte strides of `shape` with elements of `elem` bytes.
fn byte_strides(shape: &[usize], elem: usize) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut acc = elem;
    for d in (0..shape.len()).rev() {
        strides[d] = acc as isize;
        acc = acc.saturating_mul(shape[d]);
    }
    strides
}

/// One loop of a plan: `count` iterations advancing the offsets by `src` / `dst` bytes.
#[derive(Clone, Copy, Debug)]
struct Loop {
    count: usize,
    src: isize,
    dst: isize,
}

/// A copy reduced to byte offsets: runs of `run` bytes at `src_base + Σ i_k·loops[k].src`
/// (and the same for the destination), loops outermost first. Destination offsets increase
/// in visiting order.
#[derive(Debug)]
struct Plan {
    src_base: usize,
    dst_base: usize,
    run: usize,
    loops: Vec<Loop>,
}

fn check_axis(side: &str, d: usize, start: usize, step: isize, count: usize, len: usize) {
    let last = start as i128 + (count as i128 - 1) * step as i128;
    assert!(
        start < len && last >= 0 && last < len as i128,
        "nd copy: axis {d}: {side} indices {start}..={last} (step {step}) leave 0..{len}"
    );
}

impl Plan {
    /// Plan a copy; `None` when it copies nothing.
    ///
    /// # Panics
    /// If ranks differ, an index leaves its buffer's shape, or a destination step is zero
    /// over more than one element.
    fn new(
        src_shape: &[usize],
        dst_shape: &[usize],
        axes: &[AxisMap],
        elem: usize,
    ) -> Option<Plan> {
        let rank = axes.len();
        assert!(
            src_shape.len() == rank && dst_shape.len() == rank,
            "nd copy: {rank} axis maps for shapes {src_shape:?} and {dst_shape:?}"
        );
        if axes.iter().any(|a| a.count == 0) {
            return None;
        }
        for (d, a) in axes.iter().enumerate() {
            check_axis("source", d, a.src_start, a.src_step, a.count, src_shape[d]);
            check_axis(
                "destination",
                d,
                a.dst_start,
                a.dst_step,
                a.count,
                dst_shape[d],
            );
            assert!(
                a.count == 1 || a.dst_step != 0,
                "nd copy: axis {d}: destination step 0 writes one element {} times",
                a.count
            );
        }
        let ss = byte_strides(src_shape, elem);
        let ds = byte_strides(dst_shape, elem);
        let axes: Vec<AxisMap> = axes.iter().map(|a| a.ascending()).collect();
        let src_base = (0..rank).map(|d| axes[d].src_start * ss[d] as usize).sum();
        let dst_base = (0..rank).map(|d| axes[d].dst_start * ds[d] as usize).sum();
        // Axes of one element only move the base; the others are loops, innermost last.
        let mut loops: Vec<Loop> = (0..rank)
            .filter(|&d| axes[d].count > 1)
            .map(|d| Loop {
                count: axes[d].count,
                src: axes[d].src_step * ss[d],
                dst: axes[d].dst_step * ds[d],
            })
            .collect();
        // Innermost loops contiguous on both sides become the run.
        let mut run = elem;
        while let Some(inner) = loops.last() {
            if inner.src != run as isize || inner.dst != run as isize {
                break;
            }
            run *= inner.count;
            loops.pop();
        }
        // Neighbouring loops that stay regular on both sides become one loop.
        let mut merged: Vec<Loop> = Vec::with_capacity(loops.len());
        for l in loops.into_iter().rev() {
            match merged.last_mut() {
                Some(inner)
                    if l.src == inner.src * inner.count as isize
                        && l.dst == inner.dst * inner.count as isize =>
                {
                    inner.count *= l.count;
                }
                _ => merged.push(l),
            }
        }
        merged.reverse();
        Some(Plan {
            src_base,
            dst_base,
            run,
            loops: merged,
        })
    }

    /// Call `f(src_offset, dst_offset)` for every run, in increasing destination order.
    fn walk(&self, mut f: impl FnMut(usize, usize)) {
        let Some((inner, outer)) = self.loops.split_last() else {
            f(self.src_base, self.dst_base);
            return;
        };
        let mut index = vec![0usize; outer.len()];
        let (mut s, mut d) = (self.src_base as isize, self.dst_base as isize);
        loop {
            let (mut si, mut di) = (s, d);
            for _ in 0..inner.count {
                f(si as usize, di as usize);
                si += inner.src;
                di += inner.dst;
            }
            let mut k = outer.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                index[k] += 1;
                s += outer[k].src;
                d += outer[k].dst;
                if index[k] < outer[k].count {
                    break;
                }
                s -= outer[k].src * outer[k].count as isize;
                d -= outer[k].dst * outer[k].count as isize;
                index[k] = 0;
            }
        }
    }
}

/// Call `f(src_offset, dst_offset, len)` (bytes) for every contiguous run of the copy that
/// `axes` describe between a `src_shape` and a `dst_shape` buffer of `elem`-byte elements,
/// in increasing destination order. With `elem == 1` the offsets are element numbers (as
/// the variable-length helpers use them).
///
/// # Panics
/// See the [module documentation](self).
pub fn for_each_run(
    src_shape: &[usize],
    dst_shape: &[usize],
    axes: &[AxisMap],
    elem: usize,
    mut f: impl FnMut(usize, usize, usize),
) {
    if let Some(plan) = Plan::new(src_shape, dst_shape, axes, elem) {
        let run = plan.run;
        plan.walk(|s, d| f(s, d, run));
    }
}

fn check_len(what: &str, len: usize, shape: &[usize], elem: usize) {
    let need = shape.iter().product::<usize>() * elem;
    assert!(
        len >= need,
        "nd copy: {what} has {len} bytes, shape {shape:?} needs {need}"
    );
}

/// Copy `n` bytes; small constant sizes (single elements of strided copies) avoid a `memcpy`
/// call.
///
/// # Safety
/// `src` and `dst` valid for `n` bytes and not overlapping.
#[inline(always)]
unsafe fn copy_bytes(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: forwarded from the caller.
    unsafe {
        match n {
            1 => *dst = *src,
            2 => std::ptr::copy_nonoverlapping(src, dst, 2),
            4 => std::ptr::copy_nonoverlapping(src, dst, 4),
            8 => std::ptr::copy_nonoverlapping(src, dst, 8),
            16 => std::ptr::copy_nonoverlapping(src, dst, 16),
            _ => std::ptr::copy_nonoverlapping(src, dst, n),
        }
    }
}

/// Copy the elements `axes` select from `src` (shape `src_shape`) into `dst` (shape
/// `dst_shape`); elements of `elem` bytes, C order.
///
/// # Panics
/// See the [module documentation](self).
pub fn copy(
    src: &[u8],
    src_shape: &[usize],
    dst: &mut [u8],
    dst_shape: &[usize],
    axes: &[AxisMap],
    elem: usize,
) {
    let shared = SharedBuffer::new(dst);
    // SAFETY: the only writer of a buffer borrowed exclusively for this call.
    unsafe { shared.copy(src, src_shape, dst_shape, axes, elem) }
}

/// A byte buffer that several threads fill at the same time, each at its own elements.
///
/// It borrows the buffer exclusively for its lifetime, so nothing else can read or write the
/// buffer while writers run. The writes are `unsafe`: the caller guarantees that concurrent
/// writes never touch the same bytes (see [`SharedBuffer::write`]).
pub struct SharedBuffer<'a> {
    ptr: *mut u8,
    len: usize,
    _buffer: PhantomData<&'a mut [u8]>,
}

// SAFETY: the pointer comes from a `&'a mut [u8]` held for `'a`, so the memory stays valid
// and unaliased by anything but this value; writes from several threads are sound under the
// disjointness contract of the `unsafe` write methods.
unsafe impl Send for SharedBuffer<'_> {}
// SAFETY: as for `Send`: `&SharedBuffer` only allows the `unsafe` writes.
unsafe impl Sync for SharedBuffer<'_> {}

impl<'a> SharedBuffer<'a> {
    /// Share `buffer` among writers for as long as this value lives.
    pub fn new(buffer: &'a mut [u8]) -> SharedBuffer<'a> {
        SharedBuffer {
            ptr: buffer.as_mut_ptr(),
            len: buffer.len(),
            _buffer: PhantomData,
        }
    }

    /// Length of the buffer in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copy `bytes` to `offset`.
    ///
    /// # Panics
    /// If `offset + bytes.len()` is past the end of the buffer (always checked).
    ///
    /// # Safety
    /// No other thread may write any of the bytes `offset..offset + bytes.len()` while this
    /// call runs (concurrent writes go to disjoint bytes). Nothing reads the buffer while
    /// writers run; the exclusive borrow this value holds guarantees that outside of it.
    #[inline]
    pub unsafe fn write(&self, offset: usize, bytes: &[u8]) {
        assert!(
            offset
                .checked_add(bytes.len())
                .is_some_and(|end| end <= self.len),
            "shared buffer write of {} bytes at {offset} is past its end ({})",
            bytes.len(),
            self.len
        );
        // SAFETY: in bounds (checked above) of the buffer borrowed for 'a; no concurrent
        // write overlaps these bytes (the caller's contract); `bytes` cannot overlap the
        // buffer, which is exclusively borrowed.
        unsafe { copy_bytes(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) }
    }

    /// [`copy`] into this buffer (of shape `dst_shape`).
    ///
    /// # Panics
    /// See the [module documentation](self); bounds are always checked.
    ///
    /// # Safety
    /// As [`SharedBuffer::write`], for every destination element `axes` select: no other
    /// thread writes those elements while this call runs.
    pub unsafe fn copy(
        &self,
        src: &[u8],
        src_shape: &[usize],
        dst_shape: &[usize],
        axes: &[AxisMap],
        elem: usize,
    ) {
        let Some(plan) = Plan::new(src_shape, dst_shape, axes, elem) else {
            return;
        };
        check_len("source", src.len(), src_shape, elem);
        check_len("destination", self.len, dst_shape, elem);
        let run = plan.run;
        // SAFETY: every run lies in the destination elements `axes` select, which the
        // caller guarantees no other thread writes meanwhile.
        plan.walk(|s, d| unsafe { self.write(d, &src[s..s + run]) });
    }

    /// Write the element `fill` at every destination element of `axes` (a buffer of shape
    /// `dst_shape`; the source side of `axes` is ignored).
    ///
    /// # Panics
    /// See the [module documentation](self); bounds are always checked.
    ///
    /// # Safety
    /// As [`SharedBuffer::copy`].
    pub unsafe fn fill(&self, dst_shape: &[usize], axes: &[AxisMap], fill: &[u8]) {
        let elem = fill.len();
        let (src_shape, dense) = dense_axes(axes);
        let Some(plan) = Plan::new(&src_shape, dst_shape, &dense, elem) else {
            return;
        };
        check_len("destination", self.len, dst_shape, elem);
        let run = plan.run;
        plan.walk(|_, d| {
            assert!(d + run <= self.len, "shared buffer fill past its end");
            // SAFETY: in bounds (checked above); the caller guarantees no other thread
            // accesses these bytes meanwhile, so a short-lived exclusive slice is sound.
            let bytes = unsafe { std::slice::from_raw_parts_mut(self.ptr.add(d), run) };
            fill_pattern(bytes, fill);
        });
    }
}

/// One source of [`gather_variable`]: variable-length elements (element `i` is
/// `data[offsets[i]..offsets[i + 1]]`) of a C-ordered array of `shape`, and the axes that map
/// them into the destination.
#[derive(Clone, Copy, Debug)]
pub struct VariablePart<'a> {
    /// The elements' bytes, back to back.
    pub data: &'a [u8],
    /// Element boundaries in `data` (element count plus one entries).
    pub offsets: &'a [usize],
    /// Shape of the source array.
    pub shape: &'a [usize],
    /// One map per axis from this source into the destination.
    pub axes: &'a [AxisMap],
}

impl<'a> VariablePart<'a> {
    /// The part of a variable-length buffer; `None` for fixed-size data.
    pub fn of(data: &'a ArrayBytes, shape: &'a [usize], axes: &'a [AxisMap]) -> Option<Self> {
        match data {
            ArrayBytes::Variable { data, offsets } => Some(VariablePart {
                data,
                offsets,
                shape,
                axes,
            }),
            ArrayBytes::Fixed(_) => None,
        }
    }

    fn check(&self) {
        let n: usize = self.shape.iter().product();
        assert!(
            self.offsets.len() == n + 1
                && self.offsets.windows(2).all(|w| w[0] <= w[1])
                && self.offsets.last().is_some_and(|&l| l <= self.data.len()),
            "nd: variable-length part does not match its shape {:?}",
            self.shape
        );
    }
}

/// A variable-length buffer of shape `dst_shape` assembled from `parts`; every destination
/// element must come from exactly one part.
///
/// # Panics
/// See the [module documentation](self); also if a destination element is covered by no
/// part or by two, or a part's offsets do not match its shape.
pub fn gather_variable(dst_shape: &[usize], parts: &[VariablePart]) -> ArrayBytes {
    const UNSET: usize = usize::MAX;
    let n: usize = dst_shape.iter().product();
    // Element lengths first (in `offsets[1..]`), then their running sum, then the bytes.
    let mut offsets = vec![UNSET; n + 1];
    offsets[0] = 0;
    for part in parts {
        part.check();
        for_each_run(part.shape, dst_shape, part.axes, 1, |s, d, len| {
            for i in 0..len {
                let slot = &mut offsets[d + i + 1];
                assert!(
                    *slot == UNSET,
                    "gather_variable: element {} written twice",
                    d + i
                );
                *slot = part.offsets[s + i + 1] - part.offsets[s + i];
            }
        });
    }
    for i in 0..n {
        let len = offsets[i + 1];
        assert!(len != UNSET, "gather_variable: element {i} not covered");
        offsets[i + 1] = offsets[i] + len;
    }
    let mut data = vec![0u8; offsets[n]];
    for part in parts {
        for_each_run(part.shape, dst_shape, part.axes, 1, |s, d, len| {
            data[offsets[d]..offsets[d + len]]
                .copy_from_slice(&part.data[part.offsets[s]..part.offsets[s + len]]);
        });
    }
    ArrayBytes::Variable { data, offsets }
}

/// Append elements `from..to` of a variable-length buffer to `data` / `offsets`.
fn append_elements(
    data: &mut Vec<u8>,
    offsets: &mut Vec<usize>,
    src: &[u8],
    src_offsets: &[usize],
    from: usize,
    to: usize,
) {
    if from == to {
        return;
    }
    let base = src_offsets[from];
    let shift = data.len();
    data.extend_from_slice(&src[base..src_offsets[to]]);
    offsets.extend(src_offsets[from + 1..=to].iter().map(|o| o - base + shift));
}

/// Replace the elements of `dst` (shape `dst_shape`) that `axes` map from `src` (shape
/// `src_shape`). Fixed-size buffers (`elem` bytes per element) are written in place;
/// variable-length buffers are rebuilt (`elem` is ignored).
///
/// # Panics
/// See the [module documentation](self); also if one buffer is fixed-size and the other
/// variable-length, or a variable-length buffer's offsets do not match its shape.
pub fn insert(
    dst: &mut ArrayBytes,
    dst_shape: &[usize],
    src: &ArrayBytes,
    src_shape: &[usize],
    axes: &[AxisMap],
    elem: usize,
) {
    match (dst, src) {
        (ArrayBytes::Fixed(d), ArrayBytes::Fixed(s)) => {
            copy(s, src_shape, d, dst_shape, axes, elem);
        }
        (
            ArrayBytes::Variable {
                data: dd,
                offsets: doff,
            },
            src @ ArrayBytes::Variable { .. },
        ) => {
            let old = VariablePart {
                data: dd,
                offsets: doff,
                shape: dst_shape,
                axes: &[],
            };
            old.check();
            let new = VariablePart::of(src, src_shape, axes).expect("variable-length source");
            new.check();
            let total = doff.len() - 1;
            let mut data = Vec::with_capacity(dd.len() + new.data.len());
            let mut offsets = Vec::with_capacity(total + 1);
            offsets.push(0);
            // Runs come in increasing destination order: keep what lies between them.
            let mut kept = 0;
            for_each_run(src_shape, dst_shape, axes, 1, |s, d, len| {
                append_elements(&mut data, &mut offsets, dd, doff, kept, d);
                append_elements(&mut data, &mut offsets, new.data, new.offsets, s, s + len);
                kept = d + len;
            });
            append_elements(&mut data, &mut offsets, dd, doff, kept, total);
            *dd = data;
            *doff = offsets;
        }
        _ => panic!("nd::insert: cannot mix fixed-size and variable-length buffers"),
    }
}

/// Build a whole `dst_shape` buffer (elements of `elem` bytes, C order) into `out`, replacing
/// its contents: the elements `axes` select from `src` (shape `src_shape`), and `fill` (one
/// element) everywhere else. Unlike [`copy`] into a filled buffer, each byte is written once
/// and `out`'s spare capacity is reused, so a chunk that a write covers is built without
/// first being set to the fill value. Returns `false` (leaving `out` empty) when the runs do
/// not come in increasing destination order or `fill` is not one `elem`-byte element, for the
/// caller to fill and [`copy`] instead.
///
/// # Panics
/// See the [module documentation](self).
pub fn gather(
    src: &[u8],
    src_shape: &[usize],
    dst_shape: &[usize],
    axes: &[AxisMap],
    elem: usize,
    fill: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    if fill.len() != elem {
        out.clear();
        return false;
    }
    let total = dst_shape.iter().product::<usize>() * elem;
    out.clear();
    out.reserve_exact(total);
    let pad = |out: &mut Vec<u8>, to: usize| {
        let from = out.len();
        out.resize(to, 0);
        if fill.iter().any(|&b| b != 0) {
            crate::subset::fill_pattern(&mut out[from..to], fill);
        }
    };
    let mut ordered = true;
    for_each_run(src_shape, dst_shape, axes, elem, |s, d, len| {
        if !ordered || d < out.len() || d + len > total {
            ordered = false;
            return;
        }
        if d > out.len() {
            pad(out, d);
        }
        out.extend_from_slice(&src[s..s + len]);
    });
    if !ordered {
        out.clear();
        return false;
    }
    pad(out, total);
    true
}

/// Copy the box `region_shape` at `src_start` of `src` (shape `src_shape`) to `dst_start` of
/// `dst` (shape `dst_shape`); elements of `elem_size` bytes, C order.
///
/// # Panics
/// If ranks differ, the region does not fit either array, or a buffer is too short.
#[allow(clippy::too_many_arguments)]
pub fn copy_region(
    src: &[u8],
    src_shape: &[usize],
    src_start: &[usize],
    dst: &mut [u8],
    dst_shape: &[usize],
    dst_start: &[usize],
    region_shape: &[usize],
    elem_size: usize,
) {
    let axes = box_axes(src_start, dst_start, region_shape);
    copy(src, src_shape, dst, dst_shape, &axes, elem_size);
}

/// Cut the box `region_shape` at `start` out of `src` (shape `src_shape`). Works for fixed
/// (`elem_size` bytes per element) and variable-length buffers (`elem_size` ignored).
///
/// # Panics
/// If the region does not fit or the buffer does not match `src_shape`.
pub fn extract_region(
    src: &ArrayBytes,
    src_shape: &[usize],
    start: &[usize],
    region_shape: &[usize],
    elem_size: usize,
) -> ArrayBytes {
    let axes = box_axes(start, &vec![0; region_shape.len()], region_shape);
    match src {
        ArrayBytes::Fixed(data) => {
            let n: usize = region_shape.iter().product();
            if region_shape == src_shape && data.len() == n * elem_size {
                return ArrayBytes::Fixed(data.clone());
            }
            let mut out = vec![0u8; n * elem_size];
            copy(data, src_shape, &mut out, region_shape, &axes, elem_size);
            ArrayBytes::Fixed(out)
        }
        ArrayBytes::Variable { .. } => {
            let part = VariablePart::of(src, src_shape, &axes).expect("variable-length source");
            gather_variable(region_shape, &[part])
        }
    }
}

/// Paste `src` (a box of shape `region_shape`) into `dst` (shape `dst_shape`) at `dst_start`.
/// Fixed buffers are written in place; variable-length buffers are rebuilt.
///
/// # Panics
/// If the region does not fit, a buffer does not match its shape, or one buffer is fixed and
/// the other variable-length.
pub fn insert_region(
    dst: &mut ArrayBytes,
    dst_shape: &[usize],
    dst_start: &[usize],
    src: &ArrayBytes,
    region_shape: &[usize],
    elem_size: usize,
) {
    let axes = box_axes(&vec![0; region_shape.len()], dst_start, region_shape);
    insert(dst, dst_shape, src, region_shape, &axes, elem_size);
}

#[cfg(test)]
mod tests {
    use super::*;

    use fastrand::Rng;

    fn linear(shape: &[usize], index: &[usize]) -> usize {
        index.iter().zip(shape).fold(0, |acc, (&i, &n)| acc * n + i)
    }

    /// The copy element by element, straight from the definition of [`AxisMap`].
    fn naive_copy(
        src: &[u8],
        src_shape: &[usize],
        dst: &mut [u8],
        dst_shape: &[usize],
        axes: &[AxisMap],
        elem: usize,
    ) {
        let total: usize = axes.iter().map(|a| a.count).product();
        for flat in 0..total {
            let mut rest = flat;
            let mut si = vec![0; axes.len()];
            let mut di = vec![0; axes.len()];
            for d in (0..axes.len()).rev() {
                let i = (rest % axes[d].count) as isize;
                rest /= axes[d].count;
                si[d] = (axes[d].src_start as isize + i * axes[d].src_step) as usize;
                di[d] = (axes[d].dst_start as isize + i * axes[d].dst_step) as usize;
            }
            let (s, d) = (linear(src_shape, &si) * elem, linear(dst_shape, &di) * elem);
            dst[d..d + elem].copy_from_slice(&src[s..s + elem]);
        }
    }

    /// A random axis map that fits `src_len` and `dst_len` elements.
    fn random_axis(rng: &mut Rng, src_len: usize, dst_len: usize) -> AxisMap {
        let step = |rng: &mut Rng, allow_zero: bool| -> isize {
            let s = [1, 1, 1, 2, 3, 5][rng.usize(..6)] as isize;
            match rng.usize(..5) {
                0 if allow_zero => 0,
                1 => -s,
                _ => s,
            }
        };
        let ss = step(rng, true);
        let ds = step(rng, false);
        let room = |len: usize, s: isize| {
            if s == 0 {
                len
            } else {
                (len - 1) / s.unsigned_abs() + 1
            }
        };
        let count = rng.usize(..=room(src_len, ss).min(room(dst_len, ds)));
        let start = |rng: &mut Rng, len: usize, s: isize| {
            let span = count.saturating_sub(1) * s.unsigned_abs();
            let free = len - span.min(len - 1);
            let lo = rng.usize(..free.max(1));
            if s < 0 {
                lo + span
            } else {
                lo
            }
        };
        let src_start = start(rng, src_len, ss);
        let dst_start = start(rng, dst_len, ds);
        AxisMap::new(src_start, ss, dst_start, ds, count)
    }

    /// A random strided copy of rank `rank`: element size, shapes, axis maps, source bytes
    /// and the destination's element count.
    struct Case {
        elem: usize,
        src_shape: Vec<usize>,
        dst_shape: Vec<usize>,
        axes: Vec<AxisMap>,
        src: Vec<u8>,
        n_dst: usize,
    }

    fn random_case(rng: &mut Rng, rank: usize) -> Case {
        let elem = [1, 2, 3, 4, 8][rng.usize(..5)];
        let src_shape: Vec<usize> = (0..rank).map(|_| rng.usize(1..=7)).collect();
        let dst_shape: Vec<usize> = (0..rank).map(|_| rng.usize(1..=7)).collect();
        let axes: Vec<AxisMap> = (0..rank)
            .map(|d| random_axis(rng, src_shape[d], dst_shape[d]))
            .collect();
        let n_src: usize = src_shape.iter().product();
        let src: Vec<u8> = (0..n_src * elem).map(|_| rng.u8(..)).collect();
        Case {
            elem,
            n_dst: dst_shape.iter().product(),
            src_shape,
            dst_shape,
            axes,
            src,
        }
    }

    #[test]
    fn gather_matches_a_fill_then_the_naive_copy() {
        let mut rng = Rng::with_seed(0x2545_F491_4F6C_DD1D);
        let mut out = Vec::new();
        for case in 0..2000 {
            let c = random_case(&mut rng, case % 5);
            let (elem, n_dst, src_shape, dst_shape) = (c.elem, c.n_dst, &c.src_shape, &c.dst_shape);
            let (src, axes) = (&c.src, &c.axes);
            let fill: Vec<u8> = if case % 3 == 0 {
                vec![0; elem]
            } else {
                (0..elem).map(|_| rng.u8(..)).collect()
            };
            let mut expected = fill.repeat(n_dst);
            naive_copy(src, src_shape, &mut expected, dst_shape, axes, elem);
            // A reused buffer with stale contents and spare capacity.
            out.extend_from_slice(&[0xAB; 17]);
            assert!(gather(
                src, src_shape, dst_shape, axes, elem, &fill, &mut out
            ));
            assert_eq!(out, expected, "{src_shape:?} -> {dst_shape:?} {axes:?}");
        }
        // A fill value of the wrong size is refused, not padded.
        assert!(!gather(
            &[0; 4],
            &[2],
            &[2],
            &[AxisMap::new(0, 1, 0, 1, 2)],
            2,
            &[0],
            &mut out
        ));
        assert!(out.is_empty());
    }

    #[test]
    fn random_strided_copies_match_the_naive_copy_up_to_4d() {
        let mut rng = Rng::with_seed(0x9E37_79B9_7F4A_7C15);
        for case in 0..3000 {
            let c = random_case(&mut rng, case % 5);
            let (elem, n_dst, src_shape, dst_shape) = (c.elem, c.n_dst, &c.src_shape, &c.dst_shape);
            let (src, axes) = (&c.src, &c.axes);
            let base: Vec<u8> = (0..n_dst * elem).map(|_| rng.u8(..)).collect();
            let mut expected = base.clone();
            naive_copy(src, src_shape, &mut expected, dst_shape, axes, elem);
            let mut got = base.clone();
            copy(src, src_shape, &mut got, dst_shape, axes, elem);
            assert_eq!(got, expected, "{src_shape:?} -> {dst_shape:?} {axes:?}");
            let mut shared_out = base.clone();
            let shared = SharedBuffer::new(&mut shared_out);
            // SAFETY: one writer, nothing else touches the buffer.
            unsafe { shared.copy(src, src_shape, dst_shape, axes, elem) };
            assert_eq!(shared_out, expected);
            // Runs come in increasing destination order and never overlap.
            let mut next = 0;
            for_each_run(src_shape, dst_shape, axes, elem, |_, d, len| {
                assert!(d >= next, "runs out of order");
                next = d + len;
            });
        }
    }

    #[test]
    fn strided_and_reversed_axes() {
        // 3x4 source; rows 2, 0 (step -2) and columns 3, 1 (step -2) into a 2x2 destination.
        let src: Vec<u8> = (0..12).collect();
        let axes = [AxisMap::new(2, -2, 0, 1, 2), AxisMap::new(3, -2, 0, 1, 2)];
        let mut dst = vec![0u8; 4];
        copy(&src, &[3, 4], &mut dst, &[2, 2], &axes, 1);
        assert_eq!(dst, vec![11, 9, 3, 1]);
        // Reversed on both sides is still one contiguous run.
        let mut runs = Vec::new();
        let both = [AxisMap::new(9, -1, 4, -1, 5)];
        for_each_run(&[10], &[5], &both, 4, |s, d, n| runs.push((s, d, n)));
        assert_eq!(runs, vec![(20, 0, 20)]);
        // A destination written backwards from a source read forwards.
        let mut dst = vec![0u8; 5];
        copy(
            &src,
            &[12],
            &mut dst,
            &[5],
            &[AxisMap::new(1, 2, 4, -1, 5)],
            1,
        );
        assert_eq!(dst, vec![9, 7, 5, 3, 1]);
    }

    #[test]
    fn whole_boxes_are_one_run_and_rows_merge() {
        let mut runs = Vec::new();
        let shape = [2, 3, 4, 5];
        let axes = box_axes(&[0; 4], &[0; 4], &shape);
        for_each_run(&shape, &shape, &axes, 8, |s, d, n| runs.push((s, d, n)));
        assert_eq!(runs, vec![(0, 0, 120 * 8)]);
        // A box of whole rows of a larger array: one run per outer index.
        runs.clear();
        let axes = box_axes(&[1, 0], &[0, 0], &[2, 6]);
        for_each_run(&[4, 6], &[2, 6], &axes, 2, |s, d, n| runs.push((s, d, n)));
        assert_eq!(runs, vec![(12, 0, 24)]);
        // Columns 1..3 of every row: one run of 2 elements per row.
        runs.clear();
        let axes = box_axes(&[0, 1], &[0, 0], &[3, 2]);
        for_each_run(&[3, 4], &[3, 2], &axes, 1, |s, d, n| runs.push((s, d, n)));
        assert_eq!(runs, vec![(1, 0, 2), (5, 2, 2), (9, 4, 2)]);
    }

    #[test]
    fn zero_dimensional_copy_moves_one_element() {
        let mut dst = vec![0u8; 2];
        copy(&[7, 9], &[], &mut dst, &[], &[], 2);
        assert_eq!(dst, vec![7, 9]);
        let mut out = vec![0u8; 2];
        let shared = SharedBuffer::new(&mut out);
        // SAFETY: one writer.
        unsafe { shared.fill(&[], &[], &[5, 6]) };
        assert_eq!(out, vec![5, 6]);
        let s = ArrayBytes::Variable {
            data: b"abc".to_vec(),
            offsets: vec![0, 3],
        };
        assert_eq!(extract_region(&s, &[], &[], &[], 0), s);
    }

    #[test]
    fn empty_copies_touch_nothing() {
        let mut dst = vec![1u8; 4];
        copy(
            &[],
            &[0, 2],
            &mut dst,
            &[2, 2],
            &[AxisMap::contiguous(0, 0, 0), AxisMap::contiguous(0, 0, 2)],
            1,
        );
        assert_eq!(dst, vec![1; 4]);
    }

    #[test]
    fn fill_writes_only_the_selected_elements() {
        let mut out = vec![0u8; 4 * 6 * 2];
        let shared = SharedBuffer::new(&mut out);
        let axes = [AxisMap::new(0, 1, 3, -2, 2), AxisMap::new(0, 1, 1, 1, 4)];
        // SAFETY: one writer.
        unsafe { shared.fill(&[4, 6], &axes, &[0xAB, 0xCD]) };
        for r in 0..4 {
            for c in 0..6 {
                let v = &out[(r * 6 + c) * 2..(r * 6 + c) * 2 + 2];
                let selected = (r == 1 || r == 3) && (1..5).contains(&c);
                assert_eq!(v == [0xAB, 0xCD], selected, "({r}, {c})");
            }
        }
    }

    #[test]
    #[should_panic(expected = "leave")]
    fn maps_leaving_the_buffer_panic() {
        let mut dst = vec![0u8; 4];
        copy(
            &[0; 4],
            &[4],
            &mut dst,
            &[4],
            &[AxisMap::new(3, 1, 0, 1, 2)],
            1,
        );
    }

    #[test]
    #[should_panic(expected = "past its end")]
    fn shared_writes_are_bounds_checked() {
        let mut out = vec![0u8; 4];
        let shared = SharedBuffer::new(&mut out);
        // SAFETY: one writer; the write is out of bounds and must panic before writing.
        unsafe { shared.write(3, &[1, 2]) };
    }

    fn strings(items: &[&[u8]]) -> ArrayBytes {
        let mut data = Vec::new();
        let mut offsets = vec![0];
        for s in items {
            data.extend_from_slice(s);
            offsets.push(data.len());
        }
        ArrayBytes::Variable { data, offsets }
    }

    #[test]
    fn variable_length_gather_and_insert_follow_the_maps() {
        // 2x3 source [[a, bb, ""], [dddd, e, ff]]; gather it reversed on both axes with a
        // fill part (source step 0) for the first destination row.
        let src = strings(&[b"a", b"bb", b"", b"dddd", b"e", b"ff"]);
        let fill = strings(&[b"-"]);
        let src_axes = [AxisMap::new(1, -1, 1, 1, 2), AxisMap::new(2, -1, 0, 1, 3)];
        let fill_axes = [AxisMap::new(0, 0, 0, 1, 1), AxisMap::new(0, 0, 0, 1, 3)];
        let parts = [
            VariablePart::of(&src, &[2, 3], &src_axes).unwrap(),
            VariablePart::of(&fill, &[1, 1], &fill_axes).unwrap(),
        ];
        let got = gather_variable(&[3, 3], &parts);
        let expected: [&[u8]; 9] = [b"-", b"-", b"-", b"ff", b"e", b"dddd", b"", b"bb", b"a"];
        assert_eq!(got, strings(&expected));
        // Insert a column backwards: destination step -1 still rebuilds in order.
        let mut dst = strings(&[b"0", b"1", b"2", b"3", b"4", b"5"]);
        let col = strings(&[b"x", b"yy"]);
        let axes = [AxisMap::new(0, 1, 1, -1, 2), AxisMap::contiguous(0, 2, 1)];
        insert(&mut dst, &[2, 3], &col, &[2, 1], &axes, 0);
        assert_eq!(dst, strings(&[b"0", b"1", b"yy", b"3", b"4", b"x"]));
        // The same with fixed-size elements, in place.
        let mut fixed = ArrayBytes::Fixed((0..6).collect());
        insert(
            &mut fixed,
            &[2, 3],
            &ArrayBytes::Fixed(vec![10, 11]),
            &[2, 1],
            &axes,
            1,
        );
        assert_eq!(fixed, ArrayBytes::Fixed(vec![0, 1, 11, 3, 4, 10]));
    }

    #[test]
    #[should_panic(expected = "not covered")]
    fn gathers_must_cover_every_element() {
        let src = strings(&[b"a"]);
        let axes = [AxisMap::contiguous(0, 0, 1)];
        gather_variable(&[2], &[VariablePart::of(&src, &[1], &axes).unwrap()]);
    }

    #[test]
    fn variable_length_box_helpers() {
        let all = strings(&[b"a", b"bb", b"", b"dddd", b"e", b"ff"]);
        let part = extract_region(&all, &[2, 3], &[0, 1], &[2, 2], 0);
        assert_eq!(part, strings(&[b"bb", b"", b"e", b"ff"]));
        let mut target = crate::subset::fill_variable(b"-", 6);
        insert_region(&mut target, &[2, 3], &[0, 1], &part, &[2, 2], 0);
        assert_eq!(target, strings(&[b"-", b"bb", b"", b"-", b"e", b"ff"]));
    }
}
