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
        [Method::Mean, Method::Mode, Method::Stride, Method::Min, Method::Max]
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
                Method::Min => fold(&values, in_shape, factors, |a: $t, x: $t| if x < a { x } else { a }),
                Method::Max => fold(&values, in_shape, factors, |a: $t, x: $t| if x > a { x } else { a }),
            };
            Ok(bytemuck::cast_slice(&out).to_vec())
        }};
    }
    macro_rules! float {
        ($t:ty) => {{
            let values = cast_in::<$t>(input);
            let out: Vec<$t> = match method {
                Method::Mean => mean_float(&values, in_shape, factors),
                Method::Mode => mode_of(&values, in_shape, factors, |a: &$t, b: &$t| a.total_cmp(b)),
                Method::Stride => stride(&values, in_shape, factors),
                // NaN wins, as in numpy.min / numpy.max.
                Method::Min => fold(&values, in_shape, factors, |a: $t, x: $t| {
                    if x < a || x.is_nan() { x } else { a }
                }),
                Method::Max => fold(&values, in_shape, factors, |a: $t, x: $t| {
                    if x > a || x.is_nan() { x } else { a }
                }),
            };
            Ok(bytemuck::cast_slice(&out).to_vec())
        }};
    }
    match data_type {
        DataType::Bool => {
            if method == Method::Mean {
                return Err("bool images are downsampled with mode, stride, min or max, not mean".into());
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
            let values: Vec<f32> = cast_in::<half::f16>(input).iter().map(|v| v.to_f32()).collect();
            let bytes: Vec<u8> = bytemuck::cast_slice(&values).to_vec();
            let out = downsample_block(&DataType::Float32, &bytes, in_shape, factors, method)?;
            let halves: Vec<half::f16> = cast_in::<f32>(&out)
                .iter()
                .map(|&v| half::f16::from_f32(v))
                .collect();
            Ok(bytemuck::cast_slice(&halves).to_vec())
        }
        other => Err(format!("{other} images cannot be downsampled (numbers and bool only)")),
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

/// The engine of every method: for each output row, `row(acc_row, input_row)` is called once
/// per input row of the row's block (`first` tells the first call), then
/// `finish(acc_row, rows, out_row)` turns the accumulators into output (`rows` input rows
/// were folded in). Rows run in parallel for large blocks.
fn per_row<T, A, R, F>(
    input: &[T],
    in_shape: &[usize],
    factors: &[usize],
    init: A,
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
    let rows_per_task = (ROWS_PER_TASK_ELEMENTS / (last_in * factors[..lead].iter().product::<usize>()).max(1)).max(1);
    out.par_chunks_mut(last_out)
        .with_min_len(rows_per_task)
        .enumerate()
        .for_each_init(
            || vec![init.clone(); last_out],
            |acc, (r, out_row)| {
                // The output row's position on the leading axes.
                let mut start = vec![0usize; lead];
                let mut extent = vec![0usize; lead];
                let mut rest = r;
                for d in (0..lead).rev() {
                    let o = rest % out_shape[d];
                    rest /= out_shape[d];
                    start[d] = o * factors[d];
                    extent[d] = (in_shape[d] - start[d]).min(factors[d]);
                }
                let rows: usize = extent.iter().product();
                let mut pos = vec![0usize; lead];
                for i in 0..rows {
                    let offset: usize = (0..lead).map(|d| (start[d] + pos[d]) * strides[d]).sum();
                    row(acc, &input[offset..offset + last_in], i == 0);
                    for d in (0..lead).rev() {
                        pos[d] += 1;
                        if pos[d] < extent[d] {
                            break;
                        }
                        pos[d] = 0;
                    }
                }
                finish(acc, rows, out_row);
            },
        );
    out
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
        T::default(),
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

/// The block's first element.
fn stride<T: Copy + Send + Sync + Default>(input: &[T], in_shape: &[usize], factors: &[usize]) -> Vec<T> {
    let f = *factors.last().unwrap_or(&1);
    per_row(
        input,
        in_shape,
        factors,
        T::default(),
        |acc: &mut [T], row: &[T], first| {
            if first {
                for (a, x) in acc.iter_mut().zip(row.iter().step_by(f)) {
                    *a = *x;
                }
            }
        },
        |acc, _, out| out.copy_from_slice(acc),
    )
}

/// Block means of integers: exact integer sums (`$acc`), divided in f64, rounded to nearest,
/// ties to even, then saturated into the type.
macro_rules! int_mean {
    ($name:ident, $t:ty, $acc:ty) => {
        fn $name(input: &[$t], in_shape: &[usize], factors: &[usize]) -> Vec<$t> {
            let f = *factors.last().unwrap_or(&1);
            let last_in = *in_shape.last().unwrap_or(&1);
            per_row(
                input,
                in_shape,
                factors,
                0 as $acc,
                |acc: &mut [$acc], row: &[$t], first| {
                    if first {
                        acc.iter_mut().for_each(|a| *a = 0);
                    }
                    if f == 2 {
                        let pairs = row.chunks_exact(2);
                        let tail = pairs.remainder();
                        for (a, p) in acc.iter_mut().zip(pairs) {
                            *a += p[0] as $acc + p[1] as $acc;
                        }
                        if let Some(&x) = tail.first() {
                            acc[acc.len() - 1] += x as $acc;
                        }
                    } else {
                        for (a, block) in acc.iter_mut().zip(row.chunks(f)) {
                            *a += block.iter().map(|&x| x as $acc).sum::<$acc>();
                        }
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

int_mean!(mean_u8, u8, u64);
int_mean!(mean_u16, u16, u64);
int_mean!(mean_u32, u32, u64);
int_mean!(mean_u64, u64, u128);
int_mean!(mean_i8, i8, i64);
int_mean!(mean_i16, i16, i64);
int_mean!(mean_i32, i32, i64);
int_mean!(mean_i64, i64, i128);

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
        0f64,
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
        Vec::<T>::new(),
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
