//! Orthogonal copies between N-d buffers: per axis, a list of (source index, destination
//! index) pairs; contiguous runs on the last axis are copied with one `memcpy`.

/// Per-axis `(source index, destination index)` pairs.
pub(crate) type AxisPairs = Vec<(usize, usize)>;

fn c_strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1usize; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

/// Calls `f(src_element, dst_element, run_length)` for every run of consecutive elements of
/// an orthogonal copy from a `src_shape` buffer to a `dst_shape` buffer (both C order).
pub(crate) fn for_each_run(
    pairs: &[AxisPairs],
    src_shape: &[usize],
    dst_shape: &[usize],
    mut f: impl FnMut(usize, usize, usize),
) {
    let rank = pairs.len();
    if rank == 0 {
        f(0, 0, 1);
        return;
    }
    if pairs.iter().any(Vec::is_empty) {
        return;
    }
    let src_strides = c_strides(src_shape);
    let dst_strides = c_strides(dst_shape);
    // Runs along the last axis.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    for &(s, d) in &pairs[rank - 1] {
        match runs.last_mut() {
            Some((rs, rd, len)) if *rs + *len == s && *rd + *len == d => *len += 1,
            _ => runs.push((s, d, 1)),
        }
    }
    let outer = rank - 1;
    let mut counter = vec![0usize; outer];
    loop {
        let mut src_base = 0;
        let mut dst_base = 0;
        for d in 0..outer {
            let (s, t) = pairs[d][counter[d]];
            src_base += s * src_strides[d];
            dst_base += t * dst_strides[d];
        }
        for &(s, d, len) in &runs {
            f(src_base + s, dst_base + d, len);
        }
        // Advance the odometer over the outer axes.
        let mut axis = outer;
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            counter[axis] += 1;
            if counter[axis] < pairs[axis].len() {
                break;
            }
            counter[axis] = 0;
        }
    }
}

/// A raw output buffer that worker threads fill in disjoint places.
pub(crate) struct SharedOutput {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer outlives every worker (it is borrowed for the whole parallel section) and
// workers only write through `write`, at element ranges that are disjoint by construction
// (each output element belongs to exactly one chunk).
unsafe impl Send for SharedOutput {}
unsafe impl Sync for SharedOutput {}

impl SharedOutput {
    pub fn new(buffer: &mut [u8]) -> Self {
        SharedOutput {
            ptr: buffer.as_mut_ptr(),
            len: buffer.len(),
        }
    }

    /// Copy `bytes` to `offset`. Bounds are always checked; callers guarantee that concurrent
    /// writes go to disjoint ranges.
    pub fn write(&self, offset: usize, bytes: &[u8]) {
        assert!(
            offset
                .checked_add(bytes.len())
                .is_some_and(|end| end <= self.len),
            "output write out of bounds"
        );
        // SAFETY: in bounds (checked above); disjointness of concurrent writes is the caller's
        // invariant documented on the type.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.add(offset), bytes.len()) }
    }
}

/// Orthogonal copy of fixed-size elements into a shared output.
pub(crate) fn copy_into_shared(
    src: &[u8],
    src_shape: &[usize],
    dst: &SharedOutput,
    dst_shape: &[usize],
    pairs: &[AxisPairs],
    elem: usize,
) {
    for_each_run(pairs, src_shape, dst_shape, |s, d, n| {
        dst.write(d * elem, &src[s * elem..(s + n) * elem]);
    });
}

/// Orthogonal copy of fixed-size elements between two buffers.
pub(crate) fn copy_fixed(
    src: &[u8],
    src_shape: &[usize],
    dst: &mut [u8],
    dst_shape: &[usize],
    pairs: &[AxisPairs],
    elem: usize,
) {
    for_each_run(pairs, src_shape, dst_shape, |s, d, n| {
        dst[d * elem..(d + n) * elem].copy_from_slice(&src[s * elem..(s + n) * elem]);
    });
}

/// Swap the roles of source and destination in a set of pairs.
pub(crate) fn invert(pairs: &[AxisPairs]) -> Vec<AxisPairs> {
    pairs
        .iter()
        .map(|p| p.iter().map(|&(a, b)| (b, a)).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_a_strided_block() {
        // 3x4 source, take rows 0 and 2, columns 1..3 into a 2x2 destination.
        let src: Vec<u8> = (0..12).collect();
        let pairs = vec![vec![(0, 0), (2, 1)], vec![(1, 0), (2, 1)]];
        let mut dst = vec![0u8; 4];
        copy_fixed(&src, &[3, 4], &mut dst, &[2, 2], &pairs, 1);
        assert_eq!(dst, vec![1, 2, 9, 10]);
        let mut runs = 0;
        for_each_run(&pairs, &[3, 4], &[2, 2], |_, _, n| {
            assert_eq!(n, 2);
            runs += 1
        });
        assert_eq!(runs, 2, "contiguous last-axis pairs form one run per row");
    }

    #[test]
    fn zero_dimensional_copy_moves_one_element() {
        let mut dst = vec![0u8; 2];
        copy_fixed(&[7, 9], &[], &mut dst, &[], &[], 2);
        assert_eq!(dst, vec![7, 9]);
    }
}
