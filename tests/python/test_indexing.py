"""Property-based indexing: ``a[sel]``, ``a[sel] = v`` and ``a.oindex[sel]`` against NumPy on
random shapes, chunkings and selections, in every format (Zarr v2, v3, sharded v3, N5)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import neurochunk as nc

FORMATS = ["v2", "v3", "v3-sharded", "n5"]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def arrays(draw):
    """(format, shape, chunks, shards)."""
    fmt = draw(st.sampled_from(FORMATS))
    ndim = draw(st.integers(0 if fmt != "n5" else 1, 3))
    shape = tuple(draw(st.integers(0, 9)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 5)) for _ in range(ndim))
    shards = None
    if fmt == "v3-sharded" and ndim:
        shards = tuple(c * draw(st.integers(1, 3)) for c in chunks)
    return fmt, shape, chunks, shards


def index_for(draw, size):
    """One axis of a basic selection: an integer or a slice (any step, negatives)."""
    if size > 0 and draw(st.booleans()):
        return draw(st.integers(-size, size - 1))
    bound = st.none() | st.integers(-size - 3, size + 3)
    step = draw(st.none() | st.integers(-4, 4).filter(lambda s: s != 0))
    return slice(draw(bound), draw(bound), step)


@st.composite
def basic_selections(draw, shape):
    key = [index_for(draw, n) for n in shape]
    if key and draw(st.booleans()):
        # Leave trailing axes to be filled, or put an ellipsis in.
        cut = draw(st.integers(0, len(key)))
        key = key[:cut] + ([Ellipsis] if draw(st.booleans()) else [])
    if draw(st.integers(0, 5)) == 0:
        key.insert(draw(st.integers(0, len(key))), None)
    return tuple(key)


def make(tmp: Path, fmt: str, shape, chunks, shards, dtype="int32") -> nc.Array:
    zf = {"v2": 2, "v3": 3, "v3-sharded": 3, "n5": "n5"}[fmt]
    return nc.create_array(
        tmp / "a", shape=shape, dtype=dtype, chunks=chunks or None, shards=shards,
        zarr_format=zf, fill_value=None if fmt == "n5" else -1,
    )


def reference(shape, fmt):
    base = np.arange(int(np.prod(shape)), dtype="int32").reshape(shape)
    return base


@SETTINGS
@given(data=st.data(), spec=arrays())
def test_basic_reads_match_numpy(data, spec):
    fmt, shape, chunks, shards = spec
    with tempfile.TemporaryDirectory() as tmp:
        a = make(Path(tmp), fmt, shape, chunks, shards)
        expected = reference(shape, fmt)
        a[...] = expected
        for _ in range(5):
            key = data.draw(basic_selections(shape))
            got = a[key]
            want = expected[key]
            assert np.shape(got) == np.shape(want), key
            assert type(got) is type(want), key
            np.testing.assert_array_equal(got, want)


@SETTINGS
@given(data=st.data(), spec=arrays())
def test_basic_writes_match_numpy(data, spec):
    fmt, shape, chunks, shards = spec
    with tempfile.TemporaryDirectory() as tmp:
        a = make(Path(tmp), fmt, shape, chunks, shards)
        mirror = np.full(shape, 0 if fmt == "n5" else -1, dtype="int32")
        for i in range(4):
            key = data.draw(basic_selections(shape))
            region = mirror[key]
            if data.draw(st.booleans()):
                value = np.int32(1000 + i)  # broadcast a scalar
            else:
                # A value of the region's shape, or one broadcastable along a leading axis.
                value = (np.arange(np.size(region), dtype="int32") + 100 * i).reshape(np.shape(region))
                if np.ndim(region) >= 1 and np.shape(region)[0] > 1 and data.draw(st.booleans()):
                    value = value[:1]
            mirror[key] = value
            a[key] = value
            np.testing.assert_array_equal(a[...], mirror)


@st.composite
def orthogonal_selections(draw, shape):
    key = []
    for n in shape:
        choice = draw(st.integers(0, 3))
        if choice == 0 and n:
            key.append(draw(st.lists(st.integers(-n, n - 1), max_size=6)))
        elif choice == 1:
            key.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
        elif choice == 2 and n:
            key.append(draw(st.integers(-n, n - 1)))
        else:
            key.append(slice(draw(st.none() | st.integers(-n, n)), None, draw(st.sampled_from([None, 2, -1]))))
    return tuple(key)


def numpy_orthogonal(x, key):
    """NumPy's result for an orthogonal key: each axis on its own."""
    out = x
    axis = 0
    for k in key:
        if isinstance(k, (int, np.integer)):
            out = np.take(out, k, axis=axis)
            continue
        if isinstance(k, slice):
            out = out[(slice(None),) * axis + (k,)]
        else:
            k = np.asarray(k)
            idx = np.flatnonzero(k) if k.dtype == bool else k.astype(np.intp)
            out = np.take(out, idx, axis=axis)
        axis += 1
    return out


@SETTINGS
@given(data=st.data(), spec=arrays())
def test_orthogonal_reads_match_numpy(data, spec):
    fmt, shape, chunks, shards = spec
    with tempfile.TemporaryDirectory() as tmp:
        a = make(Path(tmp), fmt, shape, chunks, shards)
        expected = reference(shape, fmt)
        a[...] = expected
        for _ in range(4):
            key = data.draw(orthogonal_selections(shape))
            np.testing.assert_array_equal(a.oindex[key], numpy_orthogonal(expected, key))


def numpy_orthogonal_write(x, key, value):
    """NumPy's result of writing ``value`` at an orthogonal key (in place)."""
    idx, scalar_axes = [], []
    for axis, (k, n) in enumerate(zip(key, x.shape)):
        if isinstance(k, (int, np.integer)):
            idx.append(np.array([k % n]))
            scalar_axes.append(axis)
        elif isinstance(k, slice):
            idx.append(np.arange(n)[k])
        else:
            k = np.asarray(k)
            idx.append(np.flatnonzero(k) if k.dtype == bool else k.astype(np.intp) % max(n, 1))
    full = tuple(len(i) for i in idx)
    kept = tuple(s for axis, s in enumerate(full) if axis not in scalar_axes)
    v = np.broadcast_to(value, kept).reshape(full)
    x[np.ix_(*idx)] = v


@SETTINGS
@given(data=st.data(), spec=arrays())
def test_orthogonal_writes_match_numpy(data, spec):
    fmt, shape, chunks, shards = spec
    with tempfile.TemporaryDirectory() as tmp:
        a = make(Path(tmp), fmt, shape, chunks, shards)
        mirror = reference(shape, fmt).copy()
        a[...] = mirror
        for i in range(3):
            key = data.draw(orthogonal_selections(shape))
            region = numpy_orthogonal(mirror, key)
            if data.draw(st.booleans()):
                value = np.int32(-7 - i)
            else:
                value = (np.arange(np.size(region), dtype="int32") * 3 + 5000 * i).reshape(np.shape(region))
            numpy_orthogonal_write(mirror, key, value)
            a.oindex[key] = value
            np.testing.assert_array_equal(a[...], mirror)
