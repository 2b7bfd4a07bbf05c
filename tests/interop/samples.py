"""Deterministic sample arrays for interop tests: every data type, with awkward values.

`sample(dtype, shape)` returns a small array that exercises the type: extreme integers, NaN,
infinities and -0.0 for floats, NaT for datetimes, non-ASCII text, embedded NUL bytes, nested
structured fields. The same (dtype, shape, seed) always gives the same array.
"""

from __future__ import annotations

import numpy as np

TEXT_POOL = ["", "a", "bc", "héllo", "日本語", "zarr", "x" * 9, "ü", "tab\tend", "emoji 🧠"]
BYTES_POOL = [b"", b"a", b"\x00\x01", b"xyz", b"\xff" * 5, b"zarr\x00v2", b"q"]

# Shapes used throughout: a 2-D array whose chunks leave partial edge chunks.
SHAPE_2D = (13, 17)
CHUNKS_2D = (5, 6)
SHAPE_3D = (6, 7, 5)
CHUNKS_3D = (4, 3, 2)


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def sample(dtype, shape=SHAPE_2D, seed: int = 0) -> np.ndarray:
    """A deterministic array of `dtype` and `shape` (object dtypes: use `text` / `blobs`)."""
    dt = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64))
    rng = _rng(seed)
    if dt.names:
        out = np.zeros(n, dtype=dt)
        for i, name in enumerate(dt.names):
            field_dt, _ = dt.fields[name][:2]
            base = field_dt.base
            sub_shape = field_dt.shape
            values = sample(base, (n, *sub_shape), seed + 17 * (i + 1))
            out[name] = values
        return out.reshape(shape)
    kind = dt.kind
    if kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif kind in "iu":
        info = np.iinfo(dt)
        flat = rng.integers(info.min, info.max, n, dtype=dt.newbyteorder("="), endpoint=True)
        if n >= 3:
            flat[:3] = [info.min, info.max, 0]
    elif kind == "f":
        flat = (rng.standard_normal(n) * 100).astype(dt.newbyteorder("="))
        specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1.5]
        flat[: min(n, len(specials))] = specials[: min(n, len(specials))]
    elif kind == "c":
        real = rng.standard_normal(n) * 100
        imag = rng.standard_normal(n) * 100
        flat = (real + 1j * imag).astype(dt.newbyteorder("="))
        specials = [complex(np.nan, 1.0), complex(np.inf, -np.inf), complex(-0.0, 2.5)]
        flat[: min(n, len(specials))] = specials[: min(n, len(specials))]
    elif kind in "mM":
        flat = rng.integers(-(10**12), 10**12, n).astype(np.int64)
        flat = flat.view(dt.newbyteorder("="))
        if n >= 2:
            flat[1] = np.datetime64("NaT") if kind == "M" else np.timedelta64("NaT")
    elif kind == "S":
        pool = [b[: dt.itemsize] for b in BYTES_POOL]
        flat = np.array([pool[i] for i in rng.integers(0, len(pool), n)], dtype=dt)
    elif kind == "U":
        width = dt.itemsize // 4
        pool = [t[:width] for t in TEXT_POOL]
        flat = np.array([pool[i] for i in rng.integers(0, len(pool), n)], dtype=dt.newbyteorder("="))
    elif kind == "V":
        flat = np.frombuffer(rng.bytes(n * dt.itemsize), dtype=dt).copy()
    else:
        raise ValueError(f"no sample generator for {dt}")
    return flat.astype(dt).reshape(shape)


def text(shape=SHAPE_2D, seed: int = 0, ascii_only: bool = False) -> np.ndarray:
    """Object array of str (variable-length text), including '' and non-ASCII values."""
    pool = [t for t in TEXT_POOL if t.isascii()] if ascii_only else TEXT_POOL
    rng = _rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.empty(n, dtype=object)
    flat[:] = [pool[i] for i in rng.integers(0, len(pool), n)]
    if n >= 2:
        flat[0], flat[1] = "héllo wörld", ""  # a long one and an empty one, always present
    return flat.reshape(shape)


def blobs(shape=SHAPE_2D, seed: int = 0) -> np.ndarray:
    """Object array of bytes (variable-length), including b'' and NUL bytes."""
    rng = _rng(seed)
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.empty(n, dtype=object)
    flat[:] = [BYTES_POOL[i] for i in rng.integers(0, len(BYTES_POOL), n)]
    if n >= 2:
        flat[0], flat[1] = b"zarr\x00v2", b""
    return flat.reshape(shape)


def fixed_text(shape=SHAPE_2D, seed: int = 0) -> np.ndarray:
    """`<U{maxlen}` array: the npy form of variable-length text (input for `put --vlen`)."""
    values = text(shape, seed)
    return np.array(values.tolist(), dtype=f"<U{max(len(s) for s in values.reshape(-1))}")


def fixed_bytes(shape=SHAPE_2D, seed: int = 0) -> np.ndarray:
    """`|S{maxlen}` array: the npy form of variable-length bytes."""
    values = blobs(shape, seed)
    # Trailing NULs are not representable in |S; keep values whose last byte is not NUL.
    return np.array(values.tolist(), dtype=f"|S{max(len(b) for b in values.reshape(-1))}")


# Structured types used by several suites.
STRUCT_FLAT = np.dtype([("id", "<i4"), ("flags", "u1"), ("v", "<f8")])
STRUCT_NESTED_LE = np.dtype([("a", "<i2"), ("b", [("x", "<f4"), ("y", "u1")]), ("c", "<u8")])
STRUCT_NESTED_BE = np.dtype([("a", ">i2"), ("b", [("x", ">f4"), ("y", "u1")]), ("c", ">f8", (2,))])
STRUCT_MIXED_SUBARRAY = np.dtype([("t", "<M8[ms]"), ("xyz", ">f4", (3,)), ("tag", "S3"), ("ok", "?")])
