//! Downsampling kernels: one typed loop per data type and method.
//!
//! A block in C order of shape `in_shape` shrinks by `factors` to `ceil(in_shape / factors)`;
//! output element `i` on axis `d` covers input `[i*f, min((i+1)*f, n))`, so edge elements use
//! only the input that exists. Work runs per output row (the last axis): every input row of
//! the row's block is folded into one accumulator row, so the input is read once, in order.

use neurochunk_dtype::DataType;

/// How a block of voxels becomes one voxel of the next level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Method {
    /// The mean (sum in 64-bit, divided by the voxels in the block); integers round to the
    /// nearest, ties to even (`numpy.rint`).
    Mean,
    /// The most frequent value; ties go to the smallest value (label images).
    Mode,
    /// The block's first voxel (index `i * f`): plain subsampling.
    Stride,
    /// The smallest value.
    Min,
    /// The largest value.
    Max,
}

impl Method {
    /// The method's name: `mean`, `mode`, `stride`, `min`, `max`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Mean => "mean",
            Method::Mode => "mode",
            Method::Stride => "stride",
            Method::Min => "min",
            Method::Max => "max",
        }
    }

    /// The method named by [`Method::name`].
    pub fn parse(name: &str) -> Option<Method> {
        [
            Method::Mean,
            Method::Mode,
            Method::Stride,
            Method::Min,
            Method::Max,
        ]
        .into_iter()
        .find(|m| m.name() == name)
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The shape a block of `in_shape` shrinks to under `factors`.
pub(crate) fn reduced_shape(in_shape: &[usize], factors: &[usize]) -> Vec<usize> {
    in_shape
        .iter()
        .zip(factors)
        .map(|(&n, &f)| n.div_ceil(f.max(1)))
        .collect()
}

/// Downsample one C-order block of `data_type` elements (little-endian bytes) by `factors`
/// with `method`. Returns the output elements' bytes, shape [`ceil(in_shape / factors)`].
/// Errors (as a message) for data types the method cannot reduce.
pub fn downsample_block(
    data_type: &DataType,
    input: &[u8],
    in_shape: &[usize],
    factors: &[usize],
    method: Method,
) -> Result<Vec<u8>, String> {
    let count: usize = in_shape.iter().product();
    let size = data_type
        .fixed_size()
        .ok_or_else(|| format!("{data_type} elements have no fixed size"))?;
    if input.len() != count * size || in_shape.len() != factors.len() || factors.contains(&0) {
        return Err(format!(
            "block of {} bytes does not hold shape {in_shape:?} of {data_type} (factors {factors:?})",
            input.len()
        ));
    }
    macro_rules! typed {
        ($t:ty, $mean:ident) => {{
            let values = cast_in::<$t>(input);
            let out: Vec<$t> = match method {
                Method::Mean => $mean(&values, in_shape, factors),
                Method::Mode => mode_of(&values, in_shape, factors, |a: &$t, b: &$t| {
                    a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal)
                }),
                Method::Stride => stride(&values, in_shape, factors),
                Method::Min => fold(
                    &values,
                    in_shape,
                    factors,
                    |a: $t, x: $t| if x < a { x } else { a },
                ),
                Method::Max => fold(
                    &values,
                    in_shape,
                    factors,
                    |a: $t, x: $t| if x > a { x } else { a },
                ),
            };
            Ok(bytemuck::cast_slice(&out).to_vec())
        }};
    }
    macro_rules! float {
        ($t:ty) => {{
            let values = cast_in::<$t>(input);
            let out: Vec<$t> = match method {
                Method::Mean => mean_float(&values, in_shape, factors),
                Method::Mode => {
                    mode_of(&values, in_shape, factors, |a: &$t, b: &$t| a.total_cmp(b))
                }
                Method::Stride => stride(&values, in_shape, factors),
                // NaN wins, as in numpy.min / numpy.max.
                Method::Min => fold(&values, in_shape, factors, |a: $t, x: $t| {
                    if x < a || x.is_nan() {
                        x
                    } else {
                        a
                    }
                }),
                Method::Max => fold(&values, in_shape, factors, |a: $t, x: $t| {
                    if x > a || x.is_nan() {
                        x
                    } else {
                        a
                    }
                }),
            };
            Ok(bytemuck::cast_slice(&out).to_vec())
        }};
    }
    match data_type {
        DataType::Bool => {
            if method == Method::Mean {
                return Err(
                    "bool images are downsampled with mode, stride, min or max, not mean".into(),
                );
            }
            typed!(u8, mean_u8)
        }
        DataType::UInt8 => typed!(u8, mean_u8),
        DataType::UInt16 => typed!(u16, mean_u16),
        DataType::UInt32 => typed!(u32, mean_u32),
        DataType::UInt64 => typed!(u64, mean_u64),
        DataType::Int8 => typed!(i8, mean_i8),
        DataType::Int16 => typed!(i16, mean_i16),
        DataType::Int32 => typed!(i32, mean_i32),
        DataType::Int64 => typed!(i64, mean_i64),
        DataType::Float32 => float!(f32),
        DataType::Float64 => float!(f64),
        DataType::Float16 => {
            let values: Vec<f32> = cast_in::<half::f16>(input)
                .iter()
                .map(|v| v.to_f32())
                .collect();
            let bytes: Vec<u8> = bytemuck::cast_slice(&values).to_vec();
            let out = downsample_block(&DataType::Float32, &bytes, in_shape, factors, method)?;
            let halves: Vec<half::f16> = cast_in::<f32>(&out)
                .iter()
                .map(|&v| half::f16::from_f32(v))
                .collect();
            Ok(bytemuck::cast_slice(&halves).to_vec())
        }
        other => Err(format!(
            "{other} images cannot be downsampled (numbers and bool only)"
        )),
    }
}

/// The elements of `bytes`, borrowed when aligned, copied otherwise.
fn cast_in<T: bytemuck::Pod>(bytes: &[u8]) -> std::borrow::Cow<'_, [T]> {
    match bytemuck::try_cast_slice(bytes) {
        Ok(values) => std::borrow::Cow::Borrowed(values),
        Err(_) => {
            let mut values = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>()];
            bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(bytes);
            std::borrow::Cow::Owned(values)
        }
    }
}

/// Output rows of at least this many input elements each go to rayon in one piece.
const ROWS_PER_TASK_ELEMENTS: usize = 1 << 16;

/// The scratch of one worker of [`per_row`]: the accumulator row and the position of the
/// output row on the leading axes, allocated once per worker, not per row.
struct RowScratch<A> {
    acc: Vec<A>,
    start: Vec<usize>,
    extent: Vec<usize>,
    pos: Vec<usize>,
}

/// The engine of every method: for each output row, `row(acc_row, input_row)` is called once
/// per input row of the row's block (`first` tells the first call), then
/// `finish(acc_row, rows, out_row)` turns the accumulators into output (`rows` input rows
/// were folded in). The accumulator row holds `acc_len(last_in, last_out)` values. Rows run in
/// parallel for large blocks.
fn per_row<T, A, R, F>(
    input: &[T],
    in_shape: &[usize],
    factors: &[usize],
    (init, acc_len): (A, fn(usize, usize) -> usize),
    row: R,
    finish: F,
) -> Vec<T>
where
    T: Copy + Send + Sync + Default,
    A: Clone + Send + Sync,
    R: Fn(&mut [A], &[T], bool) + Sync,
    F: Fn(&[A], usize, &mut [T]) + Sync,
{
    use rayon::prelude::*;
    let rank = in_shape.len();
    if rank == 0 {
        return input.to_vec();
    }
    let out_shape = reduced_shape(in_shape, factors);
    let total: usize = out_shape.iter().product();
    let mut out = vec![T::default(); total];
    if total == 0 {
        return out;
    }
    let lead = rank - 1;
    let last_in = in_shape[lead];
    let last_out = out_shape[lead];
    // Input strides of the leading axes.
    let mut strides = vec![1usize; rank];
    for d in (0..lead).rev() {
        strides[d] = strides[d + 1] * in_shape[d + 1];
    }
    let rows_per_task = (ROWS_PER_TASK_ELEMENTS
        / (last_in * factors[..lead].iter().product::<usize>()).max(1))
    .max(1);
    let one_row = |s: &mut RowScratch<A>, r: usize, out_row: &mut [T]| {
        // The output row's position on the leading axes.
        let mut rest = r;
        for d in (0..lead).rev() {
            let o = rest % out_shape[d];
            rest /= out_shape[d];
            s.start[d] = o * factors[d];
            s.extent[d] = (in_shape[d] - s.start[d]).min(factors[d]);
        }
        let rows: usize = s.extent.iter().product();
        s.pos.iter_mut().for_each(|p| *p = 0);
        for i in 0..rows {
            let offset: usize = (0..lead)
                .map(|d| (s.start[d] + s.pos[d]) * strides[d])
                .sum();
            row(&mut s.acc, &input[offset..offset + last_in], i == 0);
            for d in (0..lead).rev() {
                s.pos[d] += 1;
                if s.pos[d] < s.extent[d] {
                    break;
                }
                s.pos[d] = 0;
            }
        }
        finish(&s.acc, rows, out_row);
    };
    let scratch = || RowScratch {
        acc: vec![init.clone(); acc_len(last_in, last_out)],
        start: vec![0; lead],
        extent: vec![0; lead],
        pos: vec![0; lead],
    };
    if total / last_out <= rows_per_task {
        // One task's worth: no parallel split.
        let mut s = scratch();
        for (r, out_row) in out.chunks_mut(last_out).enumerate() {
            one_row(&mut s, r, out_row);
        }
        return out;
    }
    out.par_chunks_mut(last_out)
        .with_min_len(rows_per_task)
        .enumerate()
        .for_each_init(scratch, |s, (r, out_row)| one_row(s, r, out_row));
    out
}

/// An accumulator row as long as the output row.
fn out_len(_: usize, last_out: usize) -> usize {
    last_out
}

/// An accumulator row as long as the input row.
fn in_len(last_in: usize, _: usize) -> usize {
    last_in
}

/// Block min / max (any associative pick).
fn fold<T, P>(input: &[T], in_shape: &[usize], factors: &[usize], pick: P) -> Vec<T>
where
    T: Copy + Send + Sync + Default,
    P: Fn(T, T) -> T + Sync,
{
    let f = *factors.last().unwrap_or(&1);
    per_row(
        input,
        in_shape,
        factors,
        (T::default(), out_len),
        |acc: &mut [T], row: &[T], first| {
            for (a, block) in acc.iter_mut().zip(row.chunks(f)) {
                let mut v = if first { block[0] } else { pick(*a, block[0]) };
                for &x in &block[1..] {
                    v = pick(v, x);
                }
                *a = v;
            }
        },
        |acc, _, out| out.copy_from_slice(acc),
    )
}

/// The block's first element: a fold that keeps what it starts with.
fn stride<T: Copy + Send + Sync + Default>(
    input: &[T],
    in_shape: &[usize],
    factors: &[usize],
) -> Vec<T> {
    fold(input, in_shape, factors, |first, _| first)
}

/// An integer sum of a block mean: exact, and divided with the mean's rounding.
trait IntSum: Copy + Send + Sync + Default + std::ops::Add<Output = Self> {
    /// `self / n` rounded to the nearest integer, ties to even (as `numpy.rint` of the exact
    /// quotient); `n` a power of two (`1 << shift`) when `shift` is given.
    fn rounded_div(self, n: usize, shift: Option<u32>) -> Self;
}

macro_rules! int_sum {
    ($($acc:ty),*) => {$(
        impl IntSum for $acc {
            #[inline(always)]
            fn rounded_div(self, n: usize, shift: Option<u32>) -> Self {
                match shift {
                    // floor((s + n/2 - 1 + (floor(s / n) odd)) / n); `>>` floors negatives too.
                    Some(0) => self,
                    Some(k) => (self + (((1 as $acc) << (k - 1)) - 1) + ((self >> k) & 1)) >> k,
                    None => {
                        let n = n as $acc;
                        let q = self.div_euclid(n);
                        let r = self - q * n;
                        if 2 * r > n || (2 * r == n && q & 1 == 1) {
                            q + 1
                        } else {
                            q
                        }
                    }
                }
            }
        }
    )*};
}

int_sum!(u32, i32, u64, i64);

/// `Some(k)` when `n == 1 << k`.
fn power_of_two(n: usize) -> Option<u32> {
    n.is_power_of_two().then(|| n.trailing_zeros())
}

/// Block means of integers of at most 32 bits: exact sums in `A` (the input rows of a block
/// are added element-wise first, then the last axis's groups), divided with rounding to the
/// nearest, ties to even, in integers — the same values as `numpy.rint` of the mean, without
/// a floating-point division per voxel. Every mean lies in `T`'s range.
fn mean_int<T, A>(input: &[T], in_shape: &[usize], factors: &[usize]) -> Vec<T>
where
    T: Copy + Send + Sync + Default + TryFrom<A>,
    A: IntSum + From<T>,
{
    let f = *factors.last().unwrap_or(&1);
    per_row(
        input,
        in_shape,
        factors,
        (A::default(), in_len),
        |acc: &mut [A], row: &[T], first| {
            if first {
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a = A::from(x);
                }
            } else {
                for (a, &x) in acc.iter_mut().zip(row) {
                    *a = *a + A::from(x);
                }
            }
        },
        |acc, rows, out| {
            let full = f * rows;
            let shift = power_of_two(full);
            let narrow = |s: A, n: usize, shift: Option<u32>| {
                T::try_from(s.rounded_div(n, shift)).unwrap_or_default()
            };
            let groups = acc.chunks_exact(f);
            let tail = groups.remainder();
            let whole = out.len() - usize::from(!tail.is_empty());
            if f == 2 {
                for (o, pair) in out[..whole].iter_mut().zip(groups) {
                    *o = narrow(pair[0] + pair[1], full, shift);
                }
            } else {
                for (o, group) in out[..whole].iter_mut().zip(groups) {
                    let sum = group.iter().fold(A::default(), |s, &x| s + x);
                    *o = narrow(sum, full, shift);
                }
            }
            if let Some(o) = out.get_mut(whole) {
                let n = tail.len() * rows;
                let sum = tail.iter().fold(A::default(), |s, &x| s + x);
                *o = narrow(sum, n, power_of_two(n));
            }
        },
    )
}

/// Block means of integers whose sums in 32 bits could overflow for large blocks: summed in
/// `A` when the block is small enough, in `W` otherwise.
macro_rules! small_int_mean {
    ($name:ident, $t:ty, $acc:ty, $wide:ty) => {
        fn $name(input: &[$t], in_shape: &[usize], factors: &[usize]) -> Vec<$t> {
            // 16-bit values times 2^16 still fit 32 bits.
            if factors.iter().product::<usize>() <= 1 << 16 {
                mean_int::<$t, $acc>(input, in_shape, factors)
            } else {
                mean_int::<$t, $wide>(input, in_shape, factors)
            }
        }
    };
}

small_int_mean!(mean_u8, u8, u32, u64);
small_int_mean!(mean_u16, u16, u32, u64);
small_int_mean!(mean_i8, i8, i32, i64);
small_int_mean!(mean_i16, i16, i32, i64);

fn mean_u32(input: &[u32], in_shape: &[usize], factors: &[usize]) -> Vec<u32> {
    mean_int::<u32, u64>(input, in_shape, factors)
}

fn mean_i32(input: &[i32], in_shape: &[usize], factors: &[usize]) -> Vec<i32> {
    mean_int::<i32, i64>(input, in_shape, factors)
}

/// Block means of 64-bit integers: exact sums (`$acc`), divided in f64 (as NumPy's mean),
/// rounded to nearest, ties to even, then saturated into the type.
macro_rules! wide_int_mean {
    ($name:ident, $t:ty, $acc:ty) => {
        fn $name(input: &[$t], in_shape: &[usize], factors: &[usize]) -> Vec<$t> {
            let f = *factors.last().unwrap_or(&1);
            let last_in = *in_shape.last().unwrap_or(&1);
            per_row(
                input,
                in_shape,
                factors,
                (0 as $acc, out_len),
                |acc: &mut [$acc], row: &[$t], first| {
                    if first {
                        acc.iter_mut().for_each(|a| *a = 0);
                    }
                    for (a, block) in acc.iter_mut().zip(row.chunks(f)) {
                        *a += block.iter().map(|&x| x as $acc).sum::<$acc>();
                    }
                },
                |acc, rows, out| {
                    for (j, (o, &sum)) in out.iter_mut().zip(acc).enumerate() {
                        let n = (last_in - j * f).min(f) * rows;
                        *o = (sum as f64 / n as f64).round_ties_even() as $t;
                    }
                },
            )
        }
    };
}

wide_int_mean!(mean_u64, u64, u128);
wide_int_mean!(mean_i64, i64, i128);

/// Conversion of a float to and from the f64 its mean is summed in.
trait FloatValue: Copy + Send + Sync + Default {
    fn wide(self) -> f64;
    fn narrow(v: f64) -> Self;
}

impl FloatValue for f32 {
    fn wide(self) -> f64 {
        self as f64
    }
    fn narrow(v: f64) -> Self {
        v as f32
    }
}

impl FloatValue for f64 {
    fn wide(self) -> f64 {
        self
    }
    fn narrow(v: f64) -> Self {
        v
    }
}

/// Block means of floats: summed in f64, divided, cast back.
fn mean_float<T: FloatValue>(input: &[T], in_shape: &[usize], factors: &[usize]) -> Vec<T> {
    let f = *factors.last().unwrap_or(&1);
    let last_in = *in_shape.last().unwrap_or(&1);
    per_row(
        input,
        in_shape,
        factors,
        (0f64, out_len),
        |acc: &mut [f64], row: &[T], first| {
            if first {
                acc.iter_mut().for_each(|a| *a = 0.0);
            }
            for (a, block) in acc.iter_mut().zip(row.chunks(f)) {
                *a += block.iter().map(|x| x.wide()).sum::<f64>();
            }
        },
        |acc, rows, out| {
            for (j, (o, &sum)) in out.iter_mut().zip(acc).enumerate() {
                let n = (last_in - j * f).min(f) * rows;
                *o = T::narrow(sum / n as f64);
            }
        },
    )
}

/// Block modes: each output element's values are gathered, sorted, and the longest run wins;
/// among runs of equal length the first, i.e. the smallest value.
fn mode_of<T, C>(input: &[T], in_shape: &[usize], factors: &[usize], cmp: C) -> Vec<T>
where
    T: Copy + Send + Sync + Default,
    C: Fn(&T, &T) -> std::cmp::Ordering + Sync,
{
    let f = *factors.last().unwrap_or(&1);
    per_row(
        input,
        in_shape,
        factors,
        (Vec::<T>::new(), out_len),
        |acc: &mut [Vec<T>], row: &[T], first| {
            for (a, block) in acc.iter_mut().zip(row.chunks(f)) {
                if first {
                    a.clear();
                }
                a.extend_from_slice(block);
            }
        },
        |acc, _, out| {
            let mut values = Vec::new();
            for (o, gathered) in out.iter_mut().zip(acc) {
                values.clear();
                values.extend_from_slice(gathered);
                values.sort_unstable_by(&cmp);
                let (mut best, mut best_len) = (values[0], 0usize);
                let mut i = 0;
                while i < values.len() {
                    let mut j = i + 1;
                    while j < values.len() && cmp(&values[j], &values[i]).is_eq() {
                        j += 1;
                    }
                    if j - i > best_len {
                        best = values[i];
                        best_len = j - i;
                    }
                    i = j;
                }
                *o = best;
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, element by element: the values of output element `o`'s block.
    fn block_values(input: &[f64], shape: &[usize], factors: &[usize], o: &[usize]) -> Vec<f64> {
        let rank = shape.len();
        let start: Vec<usize> = (0..rank).map(|d| o[d] * factors[d]).collect();
        let stop: Vec<usize> = (0..rank)
            .map(|d| (start[d] + factors[d]).min(shape[d]))
            .collect();
        let mut values = Vec::new();
        let mut idx = start.clone();
        loop {
            let mut linear = 0;
            for d in 0..rank {
                linear = linear * shape[d] + idx[d];
            }
            values.push(input[linear]);
            let mut d = rank;
            loop {
                if d == 0 {
                    return values;
                }
                d -= 1;
                idx[d] += 1;
                if idx[d] < stop[d] {
                    break;
                }
                idx[d] = start[d];
            }
        }
    }

    fn outputs(shape: &[usize], factors: &[usize]) -> Vec<Vec<usize>> {
        let out = reduced_shape(shape, factors);
        let total: usize = out.iter().product();
        (0..total)
            .map(|mut i| {
                let mut o = vec![0; out.len()];
                for d in (0..out.len()).rev() {
                    o[d] = i % out[d];
                    i /= out[d];
                }
                o
            })
            .collect()
    }

    fn run<T: bytemuck::Pod>(
        dt: DataType,
        values: &[T],
        shape: &[usize],
        f: &[usize],
        m: Method,
    ) -> Vec<T> {
        let out = downsample_block(&dt, bytemuck::cast_slice(values), shape, f, m).unwrap();
        bytemuck::cast_slice(&out).to_vec()
    }

    fn arange_u16(shape: &[usize]) -> Vec<u16> {
        (0..shape.iter().product::<usize>() as u16).collect()
    }

    #[test]
    fn mean_5x7x9_by_hand() {
        let shape = [5, 7, 9];
        let v = arange_u16(&shape); // v = 63 z + 9 y + x
        let out = run(DataType::UInt16, &v, &shape, &[2, 2, 2], Method::Mean);
        assert_eq!(out.len(), 3 * 4 * 5);
        let at = |z: usize, y: usize, x: usize| out[(z * 4 + y) * 5 + x];
        assert_eq!(at(0, 0, 0), 36); // 36.5, ties to even
        assert_eq!(at(1, 2, 3), 204); // 204.5
        assert_eq!(at(2, 0, 4), 264); // 264.5 (edge: z {4}, x {8})
        assert_eq!(at(2, 3, 4), 314); // the corner voxel alone
        assert_eq!(at(0, 3, 0), 86); // z {0,1}, y {6}, x {0,1}: 31.5 + 54 + 0.5
        let out = run(DataType::UInt16, &v, &shape, &[3, 2, 1], Method::Mean);
        assert_eq!(out.len(), 2 * 4 * 9);
        let at = |z: usize, y: usize, x: usize| out[(z * 4 + y) * 9 + x];
        assert_eq!(at(1, 3, 8), 282); // z {3,4}, y {6}: 282.5
        assert_eq!(at(0, 1, 5), 90); // z {0,1,2}, y {2,3}: 90.5
        assert_eq!(at(0, 0, 0), 68); // z {0,1,2}, y {0,1}: 63 + 4.5 = 67.5, ties to even
    }

    #[test]
    fn mean_rounds_ties_to_even_and_negative() {
        let v: Vec<i16> = vec![-3, -2, 1, 2, 5, 6, 7];
        // [-2.5, 1.5, 5.5, 7] → [-2, 2, 6, 7]
        assert_eq!(
            run(DataType::Int16, &v, &[7], &[2], Method::Mean),
            [-2, 2, 6, 7]
        );
        let v: Vec<f32> = vec![1.0, 2.0, 4.0];
        assert_eq!(
            run(DataType::Float32, &v, &[3], &[2], Method::Mean),
            [1.5, 4.0]
        );
        let v: Vec<u64> = vec![u64::MAX, u64::MAX, 1, 2];
        let out = run(DataType::UInt64, &v, &[4], &[2], Method::Mean);
        assert_eq!(out[0], u64::MAX); // summed without overflow, saturated back
        assert_eq!(out[1], 2); // 1.5 → 2
    }

    #[test]
    fn stride_min_max_5x7x9() {
        let shape = [5, 7, 9];
        let v = arange_u16(&shape);
        for f in [[2, 2, 2], [3, 2, 1]] {
            let out_shape = reduced_shape(&shape, &f);
            let stride = run(DataType::UInt16, &v, &shape, &f, Method::Stride);
            let min = run(DataType::UInt16, &v, &shape, &f, Method::Min);
            let max = run(DataType::UInt16, &v, &shape, &f, Method::Max);
            for (i, o) in outputs(&shape, &f).iter().enumerate() {
                let first = (o[0] * f[0] * 7 + o[1] * f[1]) * 9 + o[2] * f[2];
                let last: Vec<usize> = (0..3)
                    .map(|d| ((o[d] + 1) * f[d]).min(shape[d]) - 1)
                    .collect();
                assert_eq!(stride[i] as usize, first);
                assert_eq!(min[i] as usize, first);
                assert_eq!(max[i] as usize, (last[0] * 7 + last[1]) * 9 + last[2]);
            }
            assert_eq!(stride.len(), out_shape.iter().product::<usize>());
        }
    }

    #[test]
    fn mode_ties_go_to_the_smallest() {
        // Blocks of 2×2 in a 3×5 label image (edges: 1×2, 2×1, 1×1).
        let v: Vec<u32> = vec![
            7, 3, 3, 3, 9, //
            3, 7, 5, 5, 9, //
            1, 1, 2, 4, 6,
        ];
        // Block (0,0) {7,3,3,7}: tie 3/7 → 3; (0,1) {3,3,5,5} → 3; (0,2) {9,9} → 9;
        // (1,0) {1,1} → 1; (1,1) {2,4} → 2; (1,2) {6} → 6.
        assert_eq!(
            run(DataType::UInt32, &v, &[3, 5], &[2, 2], Method::Mode),
            [3, 3, 9, 1, 2, 6]
        );
        let v: Vec<u8> = vec![200, 5, 200, 5, 5, 0, 0, 0, 1];
        assert_eq!(
            run(DataType::UInt8, &v, &[9], &[3], Method::Mode),
            [200, 5, 0]
        );
        let v: Vec<u64> = vec![u64::MAX, 1, u64::MAX, 2];
        assert_eq!(
            run(DataType::UInt64, &v, &[4], &[4], Method::Mode),
            [u64::MAX]
        );
        let v: Vec<u16> = vec![4, 4, 2, 2, 9];
        assert_eq!(run(DataType::UInt16, &v, &[5], &[5], Method::Mode), [2]);
        let b: Vec<u8> = vec![1, 0, 1, 0, 0, 1];
        assert_eq!(run(DataType::Bool, &b, &[6], &[3], Method::Mode), [1, 0]);
        assert!(downsample_block(&DataType::Bool, &b, &[6], &[3], Method::Mean).is_err());
    }

    /// Every dtype and method against the definition on random data of odd shapes.
    #[test]
    fn every_type_matches_the_definition() {
        fn check<T: bytemuck::Pod + Into<f64>>(
            dt: DataType,
            make: impl Fn(&mut fastrand::Rng) -> T,
            integer: bool,
        ) {
            let mut rng = fastrand::Rng::with_seed(7);
            for (shape, f) in [
                (vec![5, 7, 9], vec![2, 2, 2]),
                (vec![5, 7, 9], vec![3, 2, 1]),
                (vec![1, 3, 11, 4], vec![1, 2, 3, 4]),
                (vec![13], vec![5]),
            ] {
                let n: usize = shape.iter().product();
                let values: Vec<T> = (0..n).map(|_| make(&mut rng)).collect();
                let wide: Vec<f64> = values.iter().map(|&v| v.into()).collect();
                for m in [
                    Method::Mean,
                    Method::Mode,
                    Method::Stride,
                    Method::Min,
                    Method::Max,
                ] {
                    let out = run(dt.clone(), &values, &shape, &f, m);
                    for (i, o) in outputs(&shape, &f).iter().enumerate() {
                        let block = block_values(&wide, &shape, &f, o);
                        let expected = match m {
                            Method::Mean => {
                                let mean = block.iter().sum::<f64>() / block.len() as f64;
                                if integer {
                                    mean.round_ties_even()
                                } else {
                                    mean
                                }
                            }
                            Method::Stride => block[0],
                            Method::Min => block.iter().cloned().fold(f64::INFINITY, f64::min),
                            Method::Max => block.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                            Method::Mode => {
                                let mut best = (0usize, f64::INFINITY);
                                for &v in &block {
                                    let c = block.iter().filter(|&&w| w == v).count();
                                    if c > best.0 || (c == best.0 && v < best.1) {
                                        best = (c, v);
                                    }
                                }
                                best.1
                            }
                        };
                        let got: f64 = out[i].into();
                        let close = if integer {
                            got == expected
                        } else {
                            (got - expected).abs() <= 1e-6 * expected.abs().max(1.0)
                        };
                        assert!(
                            close,
                            "{dt} {m} shape {shape:?} f {f:?} at {o:?}: {got} != {expected}"
                        );
                    }
                }
            }
        }
        check(DataType::UInt8, |r| r.u8(0..4), true);
        check(DataType::UInt16, |r| r.u16(..), true);
        check(DataType::UInt32, |r| r.u32(0..5), true);
        check(DataType::Int8, |r| r.i8(..), true);
        check(DataType::Int16, |r| r.i16(-3..3), true);
        check(DataType::Int32, |r| r.i32(..), true);
        check(DataType::Float32, |r| r.f32() * 100.0 - 50.0, false);
        check(DataType::Float64, |r| r.f64() * 1e6, false);
        // 64-bit integers are not `Into<f64>`: the same check through i32-range values.
        let v: Vec<i64> = (0..45).map(|i| (i * 7919 % 23) as i64 - 11).collect();
        let wide: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        let out = run(DataType::Int64, &v, &[5, 9], &[2, 4], Method::Mean);
        for (i, o) in outputs(&[5, 9], &[2, 4]).iter().enumerate() {
            let b = block_values(&wide, &[5, 9], &[2, 4], o);
            assert_eq!(
                out[i] as f64,
                (b.iter().sum::<f64>() / b.len() as f64).round_ties_even()
            );
        }
        let v: Vec<u64> = (0..45).map(|i| (i * 7919 % 5) as u64).collect();
        let wide: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        let out = run(DataType::UInt64, &v, &[5, 9], &[2, 4], Method::Mode);
        for (i, o) in outputs(&[5, 9], &[2, 4]).iter().enumerate() {
            let b = block_values(&wide, &[5, 9], &[2, 4], o);
            let best = b.iter().cloned().fold((0usize, f64::INFINITY), |best, v| {
                let c = b.iter().filter(|&&w| w == v).count();
                if c > best.0 || (c == best.0 && v < best.1) {
                    (c, v)
                } else {
                    best
                }
            });
            assert_eq!(out[i] as f64, best.1);
        }
    }

    #[test]
    fn float16_and_nan() {
        let v: Vec<half::f16> = [1.0f32, 2.0, 3.0, 5.0]
            .iter()
            .map(|&x| half::f16::from_f32(x))
            .collect();
        let out = run(DataType::Float16, &v, &[4], &[2], Method::Mean);
        assert_eq!(out, [half::f16::from_f32(1.5), half::f16::from_f32(4.0)]);
        let v = [1.0f64, f64::NAN, 0.5, 2.0];
        let out = run(DataType::Float64, &v, &[4], &[2], Method::Max);
        assert!(out[0].is_nan());
        assert_eq!(out[1], 2.0);
    }

    #[test]
    fn large_blocks_run_in_parallel_rows() {
        // More rows than one task takes: the parallel split must not change values.
        let shape = [64, 33, 130];
        let v: Vec<u16> = (0..shape.iter().product::<usize>())
            .map(|i| (i * 31 % 1000) as u16)
            .collect();
        let wide: Vec<f64> = v.iter().map(|&x| x as f64).collect();
        let f = [2, 3, 2];
        let out = run(DataType::UInt16, &v, &shape, &f, Method::Mean);
        for (i, o) in outputs(&shape, &f).iter().enumerate().step_by(97) {
            let b = block_values(&wide, &shape, &f, o);
            assert_eq!(
                out[i] as f64,
                (b.iter().sum::<f64>() / b.len() as f64).round_ties_even()
            );
        }
    }
}
