//! Numeric element types as NumPy type strings (`<i4`, `|u1`, `>f8`, …) and the element-wise
//! kernels of the numcodecs filters (`delta`, `fixedscaleoffset`, `astype`) that work on them.
//!
//! Buffers are always in the in-memory (little-endian) layout; the byte-order character of a
//! type string is kept only so that JSON is written back as it was read.

use half::f16;
use neurochunk_dtype::DataType;

/// A numeric type a numcodecs filter accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NumType {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

impl NumType {
    pub(crate) fn size(self) -> usize {
        use NumType::*;
        match self {
            I8 | U8 => 1,
            I16 | U16 | F16 => 2,
            I32 | U32 | F32 => 4,
            I64 | U64 | F64 => 8,
        }
    }

    pub(crate) fn is_float(self) -> bool {
        matches!(self, NumType::F16 | NumType::F32 | NumType::F64)
    }

    pub(crate) fn data_type(self) -> DataType {
        use NumType::*;
        match self {
            I8 => DataType::Int8,
            I16 => DataType::Int16,
            I32 => DataType::Int32,
            I64 => DataType::Int64,
            U8 => DataType::UInt8,
            U16 => DataType::UInt16,
            U32 => DataType::UInt32,
            U64 => DataType::UInt64,
            F16 => DataType::Float16,
            F32 => DataType::Float32,
            F64 => DataType::Float64,
        }
    }

    fn kind_char(self) -> char {
        use NumType::*;
        match self {
            I8 | I16 | I32 | I64 => 'i',
            U8 | U16 | U32 | U64 => 'u',
            F16 | F32 | F64 => 'f',
        }
    }

    fn from_kind(kind: char, size: usize) -> Option<NumType> {
        use NumType::*;
        Some(match (kind, size) {
            ('i', 1) => I8,
            ('i', 2) => I16,
            ('i', 4) => I32,
            ('i', 8) => I64,
            ('u', 1) => U8,
            ('u', 2) => U16,
            ('u', 4) => U32,
            ('u', 8) => U64,
            ('f', 2) => F16,
            ('f', 4) => F32,
            ('f', 8) => F64,
            _ => return None,
        })
    }
}

/// A parsed NumPy numeric type string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TypeStr {
    pub(crate) num: NumType,
    /// `>` was given (kept for writing JSON back).
    pub(crate) big: bool,
}

impl TypeStr {
    /// Parse `<i4`, `|u1`, `>f8`, `=i2`, `i4`, or a NumPy name such as `int16` / `float32`.
    pub(crate) fn parse(s: &str) -> Option<TypeStr> {
        let names: [(&str, NumType); 11] = [
            ("int8", NumType::I8),
            ("int16", NumType::I16),
            ("int32", NumType::I32),
            ("int64", NumType::I64),
            ("uint8", NumType::U8),
            ("uint16", NumType::U16),
            ("uint32", NumType::U32),
            ("uint64", NumType::U64),
            ("float16", NumType::F16),
            ("float32", NumType::F32),
            ("float64", NumType::F64),
        ];
        if let Some((_, n)) = names.iter().find(|(name, _)| *name == s) {
            return Some(TypeStr {
                num: *n,
                big: false,
            });
        }
        let mut chars = s.chars();
        let first = chars.next()?;
        let (big, rest) = match first {
            '<' | '=' | '|' => (false, &s[1..]),
            '>' => (true, &s[1..]),
            _ => (false, s),
        };
        let mut rc = rest.chars();
        let kind = rc.next()?;
        let size: usize = rc.as_str().parse().ok()?;
        let num = NumType::from_kind(kind, size)?;
        Some(TypeStr {
            num,
            big: big && num.size() > 1,
        })
    }

    /// The type string as NumPy's `dtype.str` spells it.
    pub(crate) fn to_numpy(self) -> String {
        let order = if self.num.size() == 1 {
            '|'
        } else if self.big {
            '>'
        } else {
            '<'
        };
        format!("{order}{}{}", self.num.kind_char(), self.num.size())
    }
}

/// One numeric element type, with the conversions NumPy's casts perform.
pub(crate) trait Num: Copy + Send + Sync + 'static {
    const SIZE: usize;
    const FLOAT: bool;
    const UNSIGNED64: bool = false;
    fn read(b: &[u8]) -> Self;
    fn write(self, b: &mut [u8]);
    fn to_f64(self) -> f64;
    /// C-style cast from a float (`as`: truncation toward zero, saturating).
    fn from_f64(v: f64) -> Self;
    fn to_i128(self) -> i128;
    /// Wrapping (modular) integer cast.
    fn from_i128(v: i128) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wadd(self, o: Self) -> Self;
}

/// `Num` for a primitive: `$float` says whether it is a float, `$u64` whether it is `u64`, and
/// `$sub`/`$add` are its (wrapping, for integers) subtraction and addition.
macro_rules! num_impl {
    ($t:ty, $float:expr, $u64:expr, $sub:expr, $add:expr) => {
        impl Num for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            const FLOAT: bool = $float;
            const UNSIGNED64: bool = $u64;
            #[inline(always)]
            fn read(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(&b[..std::mem::size_of::<$t>()]);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn write(self, b: &mut [u8]) {
                b[..std::mem::size_of::<$t>()].copy_from_slice(&self.to_le_bytes());
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_i128(self) -> i128 {
                self as i128
            }
            #[inline(always)]
            fn from_i128(v: i128) -> Self {
                v as $t
            }
            #[inline(always)]
            fn wsub(self, o: Self) -> Self {
                let sub: fn($t, $t) -> $t = $sub;
                sub(self, o)
            }
            #[inline(always)]
            fn wadd(self, o: Self) -> Self {
                let add: fn($t, $t) -> $t = $add;
                add(self, o)
            }
        }
    };
}

macro_rules! int_num {
    ($t:ty, $u64:expr) => {
        num_impl!($t, false, $u64, <$t>::wrapping_sub, <$t>::wrapping_add);
    };
}

int_num!(i8, false);
int_num!(i16, false);
int_num!(i32, false);
int_num!(i64, false);
int_num!(u8, false);
int_num!(u16, false);
int_num!(u32, false);
int_num!(u64, true);
num_impl!(f32, true, false, |a, b| a - b, |a, b| a + b);
num_impl!(f64, true, false, |a, b| a - b, |a, b| a + b);

impl Num for f16 {
    const SIZE: usize = 2;
    const FLOAT: bool = true;
    #[inline(always)]
    fn read(b: &[u8]) -> Self {
        f16::from_le_bytes([b[0], b[1]])
    }
    #[inline(always)]
    fn write(self, b: &mut [u8]) {
        b[..2].copy_from_slice(&self.to_le_bytes());
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    #[inline(always)]
    fn to_i128(self) -> i128 {
        f16::to_f64(self) as i128
    }
    #[inline(always)]
    fn from_i128(v: i128) -> Self {
        f16::from_f64(v as f64)
    }
    #[inline(always)]
    fn wsub(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() - o.to_f32())
    }
    #[inline(always)]
    fn wadd(self, o: Self) -> Self {
        f16::from_f32(self.to_f32() + o.to_f32())
    }
}

/// NumPy `astype` from `T` to `U`.
#[inline(always)]
pub(crate) fn cast<T: Num, U: Num>(x: T) -> U {
    if T::FLOAT || U::FLOAT {
        U::from_f64(x.to_f64())
    } else {
        U::from_i128(x.to_i128())
    }
}

/// Call `$f::<A, B>($args)` with `A`, `B` the Rust types of two [`NumType`]s.
macro_rules! dispatch2 {
    ($a:expr, $b:expr, $f:ident ( $($args:expr),* )) => {{
        use $crate::numeric::NumType as __N;
        match $a {
            __N::I8 => dispatch2!(@inner i8, $b, $f($($args),*)),
            __N::I16 => dispatch2!(@inner i16, $b, $f($($args),*)),
            __N::I32 => dispatch2!(@inner i32, $b, $f($($args),*)),
            __N::I64 => dispatch2!(@inner i64, $b, $f($($args),*)),
            __N::U8 => dispatch2!(@inner u8, $b, $f($($args),*)),
            __N::U16 => dispatch2!(@inner u16, $b, $f($($args),*)),
            __N::U32 => dispatch2!(@inner u32, $b, $f($($args),*)),
            __N::U64 => dispatch2!(@inner u64, $b, $f($($args),*)),
            __N::F16 => dispatch2!(@inner half::f16, $b, $f($($args),*)),
            __N::F32 => dispatch2!(@inner f32, $b, $f($($args),*)),
            __N::F64 => dispatch2!(@inner f64, $b, $f($($args),*)),
        }
    }};
    (@inner $t:ty, $b:expr, $f:ident ( $($args:expr),* )) => {{
        use $crate::numeric::NumType as __N;
        match $b {
            __N::I8 => $f::<$t, i8>($($args),*),
            __N::I16 => $f::<$t, i16>($($args),*),
            __N::I32 => $f::<$t, i32>($($args),*),
            __N::I64 => $f::<$t, i64>($($args),*),
            __N::U8 => $f::<$t, u8>($($args),*),
            __N::U16 => $f::<$t, u16>($($args),*),
            __N::U32 => $f::<$t, u32>($($args),*),
            __N::U64 => $f::<$t, u64>($($args),*),
            __N::F16 => $f::<$t, half::f16>($($args),*),
            __N::F32 => $f::<$t, f32>($($args),*),
            __N::F64 => $f::<$t, f64>($($args),*),
        }
    }};
}
pub(crate) use dispatch2;

/// Element-wise cast of a packed `T` buffer to a packed `U` buffer (replacing `dst`).
pub(crate) fn cast_buffer<T: Num, U: Num>(src: &[u8], dst: &mut Vec<u8>) {
    let n = src.len() / T::SIZE;
    dst.clear();
    dst.resize(n * U::SIZE, 0);
    for (s, d) in src.chunks_exact(T::SIZE).zip(dst.chunks_exact_mut(U::SIZE)) {
        cast::<T, U>(T::read(s)).write(d);
    }
}

/// numcodecs `Delta.encode`: first element, then differences in `T`, cast to `U`.
pub(crate) fn delta_encode<T: Num, U: Num>(src: &[u8], dst: &mut Vec<u8>) {
    let n = src.len() / T::SIZE;
    dst.clear();
    dst.resize(n * U::SIZE, 0);
    let mut prev: Option<T> = None;
    for (s, d) in src.chunks_exact(T::SIZE).zip(dst.chunks_exact_mut(U::SIZE)) {
        let v = T::read(s);
        let diff = match prev {
            None => v,
            Some(p) => v.wsub(p),
        };
        cast::<T, U>(diff).write(d);
        prev = Some(v);
    }
}

/// numcodecs `Delta.decode`: `np.cumsum(enc, out=dec)` with `enc` of type `U`, `dec` of `T`.
/// NumPy accumulates integers in 64 bits and floats in `U`, then casts to `T`.
pub(crate) fn delta_decode<T: Num, U: Num>(src: &[u8], dst: &mut Vec<u8>) {
    let n = src.len() / U::SIZE;
    dst.clear();
    dst.resize(n * T::SIZE, 0);
    let chunks = src.chunks_exact(U::SIZE).zip(dst.chunks_exact_mut(T::SIZE));
    if U::FLOAT {
        let mut acc: Option<U> = None;
        for (s, d) in chunks {
            let v = U::read(s);
            let a = match acc {
                None => v,
                Some(a) => a.wadd(v),
            };
            acc = Some(a);
            cast::<U, T>(a).write(d);
        }
    } else {
        let mut acc: i128 = 0;
        for (s, d) in chunks {
            acc = (acc + U::read(s).to_i128()) as i64 as i128;
            let out: T = if T::FLOAT {
                if U::UNSIGNED64 {
                    T::from_f64(acc as u64 as f64)
                } else {
                    T::from_f64(acc as f64)
                }
            } else {
                T::from_i128(acc)
            };
            out.write(d);
        }
    }
}

/// How `fixedscaleoffset` computes, following NumPy's promotion of the array with Python
/// scalars.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ScaleMode {
    /// Integer array with integer offset and scale: wrapping integer arithmetic in `T`.
    Int { offset: i64, scale: i64 },
    /// float16/float32 array: single precision.
    F32 { offset: f32, scale: f32 },
    /// Everything else: double precision.
    F64 { offset: f64, scale: f64 },
}

/// numcodecs `FixedScaleOffset.encode`: `round_half_even((x - offset) * scale)` cast to `U`.
pub(crate) fn fso_encode<T: Num, U: Num>(src: &[u8], dst: &mut Vec<u8>, mode: ScaleMode) {
    let n = src.len() / T::SIZE;
    dst.clear();
    dst.resize(n * U::SIZE, 0);
    let pairs = src.chunks_exact(T::SIZE).zip(dst.chunks_exact_mut(U::SIZE));
    match mode {
        ScaleMode::Int { offset, scale } => {
            let (o, s) = (T::from_i128(offset as i128), T::from_i128(scale as i128));
            for (a, b) in pairs {
                let v = T::read(a).wsub(o).to_i128().wrapping_mul(s.to_i128());
                cast::<T, U>(T::from_i128(v)).write(b);
            }
        }
        ScaleMode::F32 { offset, scale } => {
            for (a, b) in pairs {
                let v = ((T::read(a).to_f64() as f32 - offset) * scale).round_ties_even();
                U::from_f64(v as f64).write(b);
            }
        }
        ScaleMode::F64 { offset, scale } => {
            for (a, b) in pairs {
                let v = ((T::read(a).to_f64() - offset) * scale).round_ties_even();
                U::from_f64(v).write(b);
            }
        }
    }
}

/// numcodecs `FixedScaleOffset.decode`: `y / scale + offset` (in `U`'s float precision, or
/// double for integer `U`), cast to `T`.
pub(crate) fn fso_decode<T: Num, U: Num>(src: &[u8], dst: &mut Vec<u8>, offset: f64, scale: f64) {
    let n = src.len() / U::SIZE;
    dst.clear();
    dst.resize(n * T::SIZE, 0);
    let pairs = src.chunks_exact(U::SIZE).zip(dst.chunks_exact_mut(T::SIZE));
    if U::FLOAT && U::SIZE <= 4 {
        let (o, s) = (offset as f32, scale as f32);
        for (a, b) in pairs {
            let v = U::read(a).to_f64() as f32 / s + o;
            T::from_f64(v as f64).write(b);
        }
    } else {
        for (a, b) in pairs {
            let v = U::read(a).to_f64() / scale + offset;
            T::from_f64(v).write(b);
        }
    }
}
