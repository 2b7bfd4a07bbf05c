//! Raw bindings to the zfp 1.0.0 compression library (Lawrence Livermore National Laboratory,
//! BSD-3-Clause), built from the C sources vendored in this crate's `zfp/` directory.
//!
//! `build.rs` compiles the library with the `cc` crate, so building needs a C compiler and
//! nothing else: no system zfp, no cmake, and — because the declarations below are written by
//! hand from `zfp/include/zfp.h` and `zfp/include/zfp/bitstream.h` instead of being generated
//! by bindgen — no libclang. The library is built serial (no OpenMP, no CUDA).
//!
//! Only what the numcodecs `zfpy` codec of `neurochunk-codec` calls is declared: opening and
//! closing bit streams and zfp streams, setting the compression mode, describing the array
//! (`zfp_field`), the full header, compression and decompression. The names are zfp's own, so
//! the C documentation (<https://zfp.readthedocs.io>) applies unchanged. C `size_t` is
//! `usize`, `uint` is [`c_uint`], `zfp_bool` is [`c_int`] and the enums are [`c_uint`].
//!
//! Every function is `unsafe`: zfp checks neither its pointers nor, when reading, the end of
//! the bit stream's buffer (see `stream_open`).

#![allow(non_camel_case_types, non_upper_case_globals)]
#![warn(missing_docs)]

use std::ffi::{c_int, c_uint, c_void};
use std::marker::{PhantomData, PhantomPinned};

/// `zfp_bool`: C `int`, [`zfp_false`] or [`zfp_true`].
pub type zfp_bool = c_int;
/// `zfp_bool` false.
pub const zfp_false: zfp_bool = 0;
/// `zfp_bool` true.
pub const zfp_true: zfp_bool = 1;

/// `zfp_type`, the scalar type of an array (a C enum).
pub type zfp_type = c_uint;
/// Unspecified type.
pub const zfp_type_none: zfp_type = 0;
/// 32-bit signed integer.
pub const zfp_type_int32: zfp_type = 1;
/// 64-bit signed integer.
pub const zfp_type_int64: zfp_type = 2;
/// Single-precision floating point.
pub const zfp_type_float: zfp_type = 3;
/// Double-precision floating point.
pub const zfp_type_double: zfp_type = 4;

/// Header mask: no header.
pub const ZFP_HEADER_NONE: c_uint = 0x0;
/// Header mask: 32-bit magic word (`'z' 'f' 'p'` and the codec version).
pub const ZFP_HEADER_MAGIC: c_uint = 0x1;
/// Header mask: 52-bit field metadata (type, dimensionality, sizes).
pub const ZFP_HEADER_META: c_uint = 0x2;
/// Header mask: 12- or 64-bit compression mode.
pub const ZFP_HEADER_MODE: c_uint = 0x4;
/// Header mask: all of the above.
pub const ZFP_HEADER_FULL: c_uint = 0x7;

/// A compressed stream (`zfp_stream`): compression parameters and the bit stream they apply
/// to. Opaque here: allocated by [`zfp_stream_open`], set through the `zfp_stream_set_*`
/// functions and freed by [`zfp_stream_close`].
#[repr(C)]
pub struct zfp_stream {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// A bit stream over a caller's buffer (`bitstream`, opaque in C too): allocated by
/// [`stream_open`], freed by [`stream_close`].
#[repr(C)]
pub struct bitstream {
    _data: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// An uncompressed array (`zfp_field`), with zfp.h's exact layout so that its members can be
/// read (e.g. the type [`zfp_read_header`] found). Allocate it with [`zfp_field_alloc`] and set
/// it through the `zfp_field_set_*` functions.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct zfp_field {
    /// Scalar type.
    pub type_: zfp_type,
    /// Size in x, the fastest-varying dimension (zero for an unused dimension).
    pub nx: usize,
    /// Size in y.
    pub ny: usize,
    /// Size in z.
    pub nz: usize,
    /// Size in w, the slowest-varying dimension.
    pub nw: usize,
    /// Stride in x, in scalars (zero for a contiguous array `a[nw][nz][ny][nx]`).
    pub sx: isize,
    /// Stride in y.
    pub sy: isize,
    /// Stride in z.
    pub sz: isize,
    /// Stride in w.
    pub sw: isize,
    /// The array's first scalar.
    pub data: *mut c_void,
}

extern "C" {
    // include/zfp/bitstream.h

    /// Allocates a bit stream reading and writing `bytes` bytes at `buffer` (whole 64-bit
    /// words; the buffer should be word-aligned). Reads past the end are not checked. Null if
    /// the allocation fails.
    pub fn stream_open(buffer: *mut c_void, bytes: usize) -> *mut bitstream;

    /// Frees a bit stream (not its buffer).
    pub fn stream_close(stream: *mut bitstream);

    // include/zfp.h: compressed streams

    /// Allocates a compressed stream over `stream` (may be null). Null if the allocation fails.
    pub fn zfp_stream_open(stream: *mut bitstream) -> *mut zfp_stream;

    /// Frees a compressed stream (not its bit stream).
    pub fn zfp_stream_close(stream: *mut zfp_stream);

    /// A conservative bound on the compressed size in bytes of `field` with `stream`'s
    /// parameters (header included); zero if the parameters are invalid.
    pub fn zfp_stream_maximum_size(stream: *const zfp_stream, field: *const zfp_field) -> usize;

    /// Rewinds the bit stream to its beginning, for compression or decompression.
    pub fn zfp_stream_rewind(stream: *mut zfp_stream);

    /// Associates the bit stream `bs` with `stream`.
    pub fn zfp_stream_set_bit_stream(stream: *mut zfp_stream, bs: *mut bitstream);

    /// Reversible (lossless) mode.
    pub fn zfp_stream_set_reversible(stream: *mut zfp_stream);

    /// Fixed-rate mode: `rate` compressed bits per value of `type_` in `dims` dimensions,
    /// blocks word-aligned if `align`. Returns the rate actually set.
    pub fn zfp_stream_set_rate(
        stream: *mut zfp_stream,
        rate: f64,
        type_: zfp_type,
        dims: c_uint,
        align: zfp_bool,
    ) -> f64;

    /// Fixed-precision mode: `precision` uncompressed bit planes. Returns the precision set.
    pub fn zfp_stream_set_precision(stream: *mut zfp_stream, precision: c_uint) -> c_uint;

    /// Fixed-accuracy mode: absolute error at most `tolerance`. Returns the tolerance set (a
    /// power of two not above `tolerance`).
    pub fn zfp_stream_set_accuracy(stream: *mut zfp_stream, tolerance: f64) -> f64;

    // include/zfp.h: fields

    /// Allocates a field with no type, size or data. Null if the allocation fails.
    pub fn zfp_field_alloc() -> *mut zfp_field;

    /// Frees a field (not its data).
    pub fn zfp_field_free(field: *mut zfp_field);

    /// The number of dimensions (0 to 4).
    pub fn zfp_field_dimensionality(field: *const zfp_field) -> c_uint;

    /// The number of scalars; if `size` is not null, writes the size of each of the
    /// [`zfp_field_dimensionality`] dimensions there (x first).
    pub fn zfp_field_size(field: *const zfp_field, size: *mut usize) -> usize;

    /// Sets the pointer to the first scalar.
    pub fn zfp_field_set_pointer(field: *mut zfp_field, pointer: *mut c_void);

    /// Sets the scalar type; returns the type set ([`zfp_type_none`] if invalid).
    pub fn zfp_field_set_type(field: *mut zfp_field, type_: zfp_type) -> zfp_type;

    /// Makes the field 1-D: `nx` scalars.
    pub fn zfp_field_set_size_1d(field: *mut zfp_field, nx: usize);

    /// Makes the field 2-D: `f[ny][nx]`.
    pub fn zfp_field_set_size_2d(field: *mut zfp_field, nx: usize, ny: usize);

    /// Makes the field 3-D: `f[nz][ny][nx]`.
    pub fn zfp_field_set_size_3d(field: *mut zfp_field, nx: usize, ny: usize, nz: usize);

    /// Makes the field 4-D: `f[nw][nz][ny][nx]`.
    pub fn zfp_field_set_size_4d(field: *mut zfp_field, nx: usize, ny: usize, nz: usize, nw: usize);

    // include/zfp.h: compression, decompression and the header

    /// Compresses `field` to the bit stream; returns the cumulative byte size of the stream
    /// (flushed to whole words), zero on failure.
    pub fn zfp_compress(stream: *mut zfp_stream, field: *const zfp_field) -> usize;

    /// Decompresses into `field` from the bit stream; returns the cumulative number of bytes
    /// consumed (whole words), zero on failure.
    pub fn zfp_decompress(stream: *mut zfp_stream, field: *mut zfp_field) -> usize;

    /// Writes the header parts in `mask` (`ZFP_HEADER_*`); returns the number of bits
    /// written, zero on failure.
    pub fn zfp_write_header(
        stream: *mut zfp_stream,
        field: *const zfp_field,
        mask: c_uint,
    ) -> usize;

    /// Reads the header parts in `mask` into `stream` (mode) and `field` (type and sizes);
    /// returns the number of bits read, zero on failure.
    pub fn zfp_read_header(stream: *mut zfp_stream, field: *mut zfp_field, mask: c_uint) -> usize;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ptr::null_mut;

    const NX: usize = 5;
    const NY: usize = 6;
    const NZ: usize = 7;
    const N: usize = NX * NY * NZ;

    /// A smooth 3-D f64 field `f[nz][ny][nx]` with a few exact special values.
    fn data() -> Vec<f64> {
        let mut v: Vec<f64> = (0..N)
            .map(|i| {
                let (x, y, z) = (
                    (i % NX) as f64,
                    ((i / NX) % NY) as f64,
                    (i / NX / NY) as f64,
                );
                100.0 * (0.3 * x).sin() * (0.2 * y).cos() + 0.5 * z * z - 7.25
            })
            .collect();
        v[0] = 0.0;
        v[1] = -0.0;
        v[N - 1] = 1e-300;
        v
    }

    /// Compresses `vals` (3-D, NX×NY×NZ) with the mode `set_mode` sets and the full header;
    /// returns the stream's words and its byte size.
    unsafe fn compress(vals: &mut [f64], set_mode: impl Fn(*mut zfp_stream)) -> (Vec<u64>, usize) {
        let field = zfp_field_alloc();
        let stream = zfp_stream_open(null_mut());
        assert!(!field.is_null() && !stream.is_null());
        assert_eq!(zfp_field_set_type(field, zfp_type_double), zfp_type_double);
        zfp_field_set_size_3d(field, NX, NY, NZ);
        zfp_field_set_pointer(field, vals.as_mut_ptr().cast());
        set_mode(stream);
        let max = zfp_stream_maximum_size(stream, field);
        assert!(max > 0);
        let mut words = vec![0u64; max.div_ceil(8)];
        let bits = stream_open(words.as_mut_ptr().cast(), words.len() * 8);
        assert!(!bits.is_null());
        zfp_stream_set_bit_stream(stream, bits);
        zfp_stream_rewind(stream);
        let header_bits = zfp_write_header(stream, field, ZFP_HEADER_FULL);
        assert!(header_bits > 0);
        let size = zfp_compress(stream, field);
        assert!(size > 0 && size <= max, "{size} bytes, maximum {max}");
        stream_close(bits);
        zfp_stream_close(stream);
        zfp_field_free(field);
        (words, size)
    }

    /// Decompresses a stream with the full header into a fresh field; checks the header.
    unsafe fn decompress(words: &mut [u64], size: usize) -> Vec<f64> {
        let field = zfp_field_alloc();
        let stream = zfp_stream_open(null_mut());
        let bits = stream_open(words.as_mut_ptr().cast(), words.len() * 8);
        zfp_stream_set_bit_stream(stream, bits);
        zfp_stream_rewind(stream);
        assert!(zfp_read_header(stream, field, ZFP_HEADER_FULL) > 0);
        assert_eq!((*field).type_, zfp_type_double);
        assert_eq!(zfp_field_dimensionality(field), 3);
        let mut dims = [0usize; 4];
        assert_eq!(zfp_field_size(field, dims.as_mut_ptr()), N);
        assert_eq!(dims, [NX, NY, NZ, 0]);
        let mut out = vec![f64::NAN; N];
        zfp_field_set_pointer(field, out.as_mut_ptr().cast());
        assert_eq!(zfp_decompress(stream, field), size);
        stream_close(bits);
        zfp_stream_close(stream);
        zfp_field_free(field);
        out
    }

    #[test]
    fn field_layout_matches_the_c_setters() {
        let mut vals = data();
        // SAFETY: the field is live between alloc and free; the pointer is only stored.
        unsafe {
            let f = zfp_field_alloc();
            assert!(!f.is_null());
            assert_eq!((*f).type_, zfp_type_none);
            assert_eq!(zfp_field_set_type(f, zfp_type_int64), zfp_type_int64);
            zfp_field_set_size_4d(f, 2, 3, 4, 5);
            assert_eq!(((*f).nx, (*f).ny, (*f).nz, (*f).nw), (2, 3, 4, 5));
            assert_eq!(zfp_field_dimensionality(f), 4);
            assert_eq!(zfp_field_size(f, null_mut()), 120);
            zfp_field_set_size_2d(f, 9, 11);
            assert_eq!(((*f).nx, (*f).ny, (*f).nz, (*f).nw), (9, 11, 0, 0));
            zfp_field_set_size_1d(f, 13);
            assert_eq!(zfp_field_dimensionality(f), 1);
            zfp_field_set_size_3d(f, NX, NY, NZ);
            assert_eq!(((*f).sx, (*f).sy, (*f).sz, (*f).sw), (0, 0, 0, 0));
            assert_eq!(zfp_field_set_type(f, zfp_type_float), zfp_type_float);
            assert_eq!((*f).type_, zfp_type_float);
            zfp_field_set_pointer(f, vals.as_mut_ptr().cast());
            assert_eq!((*f).data, vals.as_mut_ptr().cast::<c_void>());
            assert_eq!(zfp_field_size(f, null_mut()), N);
            zfp_field_free(f);
        }
    }

    #[test]
    fn reversible_roundtrip_is_exact() {
        let mut vals = data();
        // SAFETY: buffers outlive the streams; sizes come from zfp_stream_maximum_size.
        let out = unsafe {
            let (mut words, size) = compress(&mut vals, |s| zfp_stream_set_reversible(s));
            decompress(&mut words, size)
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&vals));
    }

    #[test]
    fn fixed_rate_has_its_size_and_bounded_error() {
        // SAFETY: plain parameter setting on a live stream.
        unsafe {
            let s = zfp_stream_open(null_mut());
            // 3-D blocks hold 64 values: 10.5 bits/value is 672 bits, or 704 when blocks are
            // word-aligned; floats need at least 9 bits per block.
            assert_eq!(
                zfp_stream_set_rate(s, 10.5, zfp_type_double, 3, zfp_false),
                10.5
            );
            assert_eq!(
                zfp_stream_set_rate(s, 10.5, zfp_type_double, 3, zfp_true),
                11.0
            );
            assert_eq!(
                zfp_stream_set_rate(s, 0.0, zfp_type_float, 1, zfp_false),
                9.0 / 4.0
            );
            assert_eq!(zfp_stream_set_precision(s, 20), 20);
            assert_eq!(zfp_stream_set_accuracy(s, 1e-3), 1.0 / 1024.0);
            zfp_stream_close(s);
        }
        let mut vals = data();
        // SAFETY: as in the reversible test.
        let (out, size) = unsafe {
            let (mut words, size) = compress(&mut vals, |s| {
                zfp_stream_set_rate(s, 16.0, zfp_type_double, 3, zfp_false);
            });
            (decompress(&mut words, size), size)
        };
        // 96 header bits (32 magic, 52 metadata, 12 mode) and 2×2×2 blocks of 64×16 bits,
        // flushed to whole 64-bit words. The values span about 120; 16 bits per value leave
        // errors around 1e-3.
        assert_eq!(size, (96 + 8 * 64 * 16usize).div_ceil(64) * 8);
        let err = out
            .iter()
            .zip(&vals)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(err > 0.0 && err < 1e-2, "max error {err}");
    }
}
