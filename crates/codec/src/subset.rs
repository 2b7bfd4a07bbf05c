//! Element-buffer helpers beside the copy engine ([`crate::nd`]): permuting axes
//! ([`permute`], [`permute_variable`]) and fill values ([`fill_buffer`], [`fill_for_repr`],
//! [`is_all_fill`]).
//!
//! Shapes are element counts per dimension, C order (last index fastest). These functions
//! are building blocks driven by trusted metadata: inconsistent arguments (a buffer of the
//! wrong length) are programming errors and panic.

use crate::{ArrayBytes, ChunkRepr};

/// Byte strides of a C-ordered array with elements of `elem` bytes.
fn strides(shape: &[usize], elem: usize) -> Vec<usize> {
    let mut s = vec![0; shape.len()];
    let mut acc = elem;
    for d in (0..shape.len()).rev() {
        s[d] = acc;
        acc *= shape[d];
    }
    s
}

/// Number of elements in an [`ArrayBytes`] buffer of elements of `elem_size` bytes
/// (ignored for variable-length buffers).
pub fn num_elements(data: &ArrayBytes, elem_size: usize) -> usize {
    match data {
        ArrayBytes::Fixed(b) => b.len().checked_div(elem_size).unwrap_or(0),
        ArrayBytes::Variable { offsets, .. } => offsets.len().saturating_sub(1),
    }
}

/// Repeat `pattern` to fill `out` completely (`out.len()` a multiple of `pattern.len()`).
pub(crate) fn fill_pattern(out: &mut [u8], pattern: &[u8]) {
    if pattern.is_empty() || out.is_empty() {
        return;
    }
    let first = pattern.len().min(out.len());
    out[..first].copy_from_slice(&pattern[..first]);
    let mut filled = first;
    while filled < out.len() {
        let n = filled.min(out.len() - filled);
        out.copy_within(..n, filled);
        filled += n;
    }
}

/// `n` fixed-size elements all equal to `fill` (one element's bytes).
pub fn fill_buffer(fill: &[u8], n: usize) -> ArrayBytes {
    let len = fill.len() * n;
    if fill.iter().all(|&b| b == 0) {
        return ArrayBytes::Fixed(vec![0; len]);
    }
    if fill.len() == 1 {
        return ArrayBytes::Fixed(vec![fill[0]; len]);
    }
    let mut out = vec![0u8; len];
    fill_pattern(&mut out, fill);
    ArrayBytes::Fixed(out)
}

/// `n` variable-length elements all equal to `fill`.
pub fn fill_variable(fill: &[u8], n: usize) -> ArrayBytes {
    let mut data = vec![0u8; fill.len() * n];
    fill_pattern(&mut data, fill);
    let offsets = (0..=n).map(|i| i * fill.len()).collect();
    ArrayBytes::Variable { data, offsets }
}

/// A chunk of `repr` entirely made of its fill value (fixed or variable-length).
pub fn fill_for_repr(repr: &ChunkRepr) -> ArrayBytes {
    if repr.data_type.is_variable_length() {
        fill_variable(&repr.fill_value, repr.num_elements())
    } else {
        fill_buffer(&repr.fill_value, repr.num_elements())
    }
}

/// True if every element equals `fill` byte for byte (so a NaN fill matches the same NaN).
/// For fixed-size buffers `fill` is one element; an empty `fill` matches only an empty buffer.
pub fn is_all_fill(data: &ArrayBytes, fill: &[u8]) -> bool {
    match data {
        ArrayBytes::Fixed(bytes) => {
            if fill.is_empty() {
                return bytes.is_empty();
            }
            if bytes.len() % fill.len() != 0 {
                return false;
            }
            if fill.iter().all(|&b| b == fill[0]) {
                return all_equal_byte(bytes, fill[0]);
            }
            // Compare against a block of repeated fill values with `memcmp`.
            let reps = (256 / fill.len()).max(1);
            let mut block = vec![0u8; reps * fill.len()];
            fill_pattern(&mut block, fill);
            let mut chunks = bytes.chunks_exact(block.len());
            if !chunks.all(|c| c == block.as_slice()) {
                return false;
            }
            let rest = chunks.remainder();
            rest == &block[..rest.len()]
        }
        ArrayBytes::Variable { data, offsets } => offsets
            .windows(2)
            .all(|w| w[1] >= w[0] && data.get(w[0]..w[1]) == Some(fill)),
    }
}

/// True if all bytes equal `b`; branch-light, processes 64-byte blocks.
fn all_equal_byte(bytes: &[u8], b: u8) -> bool {
    let pat = u64::from_ne_bytes([b; 8]);
    let mut blocks = bytes.chunks_exact(64);
    for block in &mut blocks {
        let mut acc = 0u64;
        for w in block.chunks_exact(8) {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            acc |= u64::from_ne_bytes(a) ^ pat;
        }
        if acc != 0 {
            return false;
        }
    }
    blocks.remainder().iter().all(|&x| x == b)
}

/// Permute the axes of a C-ordered array: output axis `i` is input axis `order[i]`, so the
/// output shape is `shape[order[i]]`. `dst` must have the length of `src`.
///
/// # Panics
/// If `order` is not a permutation of `0..shape.len()` or a buffer has the wrong length.
pub fn permute(src: &[u8], shape: &[usize], order: &[usize], elem_size: usize, dst: &mut [u8]) {
    let nd = shape.len();
    assert_eq!(order.len(), nd, "permute: order length");
    let mut seen = vec![false; nd];
    for &o in order {
        assert!(o < nd && !seen[o], "permute: order is not a permutation");
        seen[o] = true;
    }
    let n: usize = shape.iter().product();
    assert_eq!(src.len(), n * elem_size, "permute: source length");
    assert_eq!(dst.len(), n * elem_size, "permute: destination length");
    if n == 0 {
        return;
    }
    // Input strides in elements.
    let in_stride = strides(shape, 1);
    // Output axes as (extent, input stride), dropping size-1 axes and merging neighbours
    // that stay contiguous in the input.
    let mut axes: Vec<(usize, usize)> = Vec::with_capacity(nd);
    for &a in order {
        let ax = (shape[a], in_stride[a]);
        if ax.0 == 1 {
            continue;
        }
        if let Some(last) = axes.last_mut() {
            if last.1 == ax.1 * ax.0 {
                *last = (last.0 * ax.0, ax.1);
                continue;
            }
        }
        axes.push(ax);
    }
    if axes.is_empty() || (axes.len() == 1 && axes[0].1 == 1) {
        dst.copy_from_slice(src);
        return;
    }
    match elem_size {
        1 => permute_typed::<1>(src, dst, &axes, 1),
        2 => permute_typed::<2>(src, dst, &axes, 2),
        4 => permute_typed::<4>(src, dst, &axes, 4),
        8 => permute_typed::<8>(src, dst, &axes, 8),
        16 => permute_typed::<16>(src, dst, &axes, 16),
        e => permute_typed::<0>(src, dst, &axes, e),
    }
}

/// Permutation kernel over merged axes `(extent, input stride in elements)` in output order.
/// `N` is the element size when it is a small power of two (0 = use `elem`).
fn permute_typed<const N: usize>(src: &[u8], dst: &mut [u8], axes: &[(usize, usize)], elem: usize) {
    let na = axes.len();
    let out_stride = {
        let mut s = vec![0; na];
        let mut acc = 1;
        for i in (0..na).rev() {
            s[i] = acc;
            acc *= axes[i].0;
        }
        s
    };
    let copy = |s_el: usize, d_el: usize, dst: &mut [u8]| {
        if N > 0 {
            let s = &src[s_el * N..s_el * N + N];
            dst[d_el * N..d_el * N + N].copy_from_slice(s);
        } else {
            dst[d_el * elem..d_el * elem + elem]
                .copy_from_slice(&src[s_el * elem..s_el * elem + elem]);
        }
    };
    let (l_ext, l_str) = axes[na - 1];
    if l_str == 1 {
        // Innermost output axis is contiguous in the input: copy runs.
        let run = l_ext * elem;
        odometer(&axes[..na - 1], &out_stride[..na - 1], |s_el, d_el| {
            dst[d_el * elem..d_el * elem + run]
                .copy_from_slice(&src[s_el * elem..s_el * elem + run]);
        });
        return;
    }
    if na == 1 {
        for l in 0..l_ext {
            copy(l * l_str, l, dst);
        }
        return;
    }
    // Tile the innermost output axis L with the axis K of smallest input stride, so both the
    // reads (along K) and the writes (along L) stay in cache.
    let k = (0..na - 1).min_by_key(|&i| axes[i].1).unwrap_or(0);
    let (k_ext, k_str) = axes[k];
    let k_ostr = out_stride[k];
    let others: Vec<usize> = (0..na - 1).filter(|&i| i != k).collect();
    let o_axes: Vec<(usize, usize)> = others.iter().map(|&i| axes[i]).collect();
    let o_str: Vec<usize> = others.iter().map(|&i| out_stride[i]).collect();
    const T: usize = 32;
    odometer(&o_axes, &o_str, |s_base, d_base| {
        for k0 in (0..k_ext).step_by(T) {
            let k1 = (k0 + T).min(k_ext);
            for l0 in (0..l_ext).step_by(T) {
                let l1 = (l0 + T).min(l_ext);
                for kk in k0..k1 {
                    let s_row = s_base + kk * k_str;
                    let d_row = d_base + kk * k_ostr;
                    for l in l0..l1 {
                        copy(s_row + l * l_str, d_row + l, dst);
                    }
                }
            }
        }
    });
}

/// Visit every index of `axes` (extent, input stride) in C order, passing the input and
/// output element offsets.
fn odometer(axes: &[(usize, usize)], out_stride: &[usize], mut f: impl FnMut(usize, usize)) {
    let na = axes.len();
    let mut idx = vec![0usize; na];
    let (mut s, mut d) = (0usize, 0usize);
    loop {
        f(s, d);
        let mut i = na;
        loop {
            if i == 0 {
                return;
            }
            i -= 1;
            idx[i] += 1;
            s += axes[i].1;
            d += out_stride[i];
            if idx[i] < axes[i].0 {
                break;
            }
            s -= axes[i].1 * axes[i].0;
            d -= out_stride[i] * axes[i].0;
            idx[i] = 0;
        }
    }
}

/// Permute a variable-length buffer's elements (see [`permute`]).
pub fn permute_variable(
    data: &[u8],
    offsets: &[usize],
    shape: &[usize],
    order: &[usize],
) -> ArrayBytes {
    let n: usize = shape.iter().product();
    assert_eq!(offsets.len(), n + 1, "permute_variable: offsets length");
    let iota: Vec<u8> = (0..n as u64).flat_map(|i| i.to_le_bytes()).collect();
    let mut perm = vec![0u8; n * 8];
    permute(&iota, shape, order, 8, &mut perm);
    let mut out_data = Vec::with_capacity(data.len());
    let mut out_offsets = Vec::with_capacity(n + 1);
    out_offsets.push(0);
    for c in perm.chunks_exact(8) {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        let i = u64::from_le_bytes(a) as usize;
        out_data.extend_from_slice(&data[offsets[i]..offsets[i + 1]]);
        out_offsets.push(out_data.len());
    }
    ArrayBytes::Variable {
        data: out_data,
        offsets: out_offsets,
    }
}
