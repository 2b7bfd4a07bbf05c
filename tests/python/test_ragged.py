"""Ragged arrays (numcodecs ``vlen-array``): each element a one-dimensional NumPy array.

The arrays are written by numcodecs itself (its ``VLenArray`` codec encodes the chunks of a
Zarr v2 array laid out here), read by neurochunk as object arrays of NumPy arrays, updated
through neurochunk, and decoded again by numcodecs.
"""

from __future__ import annotations

import json

import numcodecs
import numpy as np
import pytest

import neurochunk as nc


def ragged(n: int, dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = np.empty(n, dtype=object)
    for i in range(n):
        # Lengths 0..4, so some neighbours have equal lengths (which must not broadcast).
        out[i] = rng.integers(-100, 100, size=i % 5).astype(dtype)
    return out


def write_v2_with_numcodecs(path, data: np.ndarray, dtype: str, chunk: int) -> None:
    codec = numcodecs.VLenArray(dtype)
    path.mkdir()
    (path / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [len(data)], "chunks": [chunk], "dtype": "|O",
        "compressor": None, "fill_value": 0, "order": "C",
        "filters": [codec.get_config()],
    }))
    for c in range(0, len(data), chunk):
        block = np.empty(chunk, dtype=object)
        block[:] = [np.zeros(0, dtype=dtype)] * chunk
        part = data[c:c + chunk]
        for i, v in enumerate(part):
            block[i] = v
        (path / str(c // chunk)).write_bytes(codec.encode(block))


def read_v2_with_numcodecs(path, n: int, dtype: str, chunk: int) -> list[np.ndarray]:
    codec = numcodecs.VLenArray(dtype)
    out: list[np.ndarray] = []
    for c in range(0, n, chunk):
        out.extend(codec.decode((path / str(c // chunk)).read_bytes())[: min(chunk, n - c)])
    return out


@pytest.mark.parametrize("dtype", ["<i2", "<u4", "<f8", ">i8"])
def test_ragged_elements_read_as_numpy_arrays_and_written_back(tmp_path, dtype):
    data = ragged(23, dtype, seed=len(dtype) + ord(dtype[1]))
    write_v2_with_numcodecs(tmp_path / "r", data, dtype, chunk=5)
    a = nc.open(tmp_path / "r", mode="r+")
    assert a.dtype == np.dtype(object) and a.shape == (23,)
    got = a[...]
    assert got.dtype == object and got.shape == (23,)
    for g, d in zip(got, data):
        assert isinstance(g, np.ndarray) and g.ndim == 1
        assert g.dtype == np.dtype(dtype).newbyteorder("<") or g.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(g, d)
    # Equal-length neighbours stay separate elements in a slice.
    assert [len(x) for x in a[5:10]] == [0, 1, 2, 3, 4]

    # Writes: a list of arrays, one array broadcast over a region, an object array.
    a[0:3] = [np.array([1, 2]), np.array([3, 4]), np.array([], dtype=dtype)]
    a[10:12] = np.array([7, 8, 9])
    obj = np.empty(2, dtype=object)
    obj[0], obj[1] = np.array([5]), np.array([6, 6, 6, 6, 6, 6])
    a[20:22] = obj
    expected = list(data)
    expected[0:3] = [np.array([1, 2]), np.array([3, 4]), np.array([])]
    expected[10:12] = [np.array([7, 8, 9])] * 2
    expected[20:22] = [np.array([5]), np.array([6] * 6)]
    back = read_v2_with_numcodecs(tmp_path / "r", 23, dtype, chunk=5)
    assert len(back) == 23
    for b, e, ours in zip(back, expected, a[...]):
        np.testing.assert_array_equal(b, e)
        np.testing.assert_array_equal(ours, e)


def test_a_ragged_element_must_be_one_dimensional_numbers(tmp_path):
    write_v2_with_numcodecs(tmp_path / "r", ragged(6, "<i4", seed=3), "<i4", chunk=3)
    a = nc.open(tmp_path / "r", mode="r+")
    with pytest.raises(nc.InvalidInputError, match="one-dimensional"):
        a[0] = np.zeros((2, 2), dtype="<i4")
    with pytest.raises(nc.InvalidInputError):
        a[1] = np.array([1.5, 2.5])  # floats into an int32 ragged array: not the same kind
    with pytest.raises(nc.InvalidInputError, match="do not fit"):
        a[2] = np.array([2**40])
    # Nothing was changed by the refused writes.
    np.testing.assert_array_equal(a[1], ragged(6, "<i4", seed=3)[1])
