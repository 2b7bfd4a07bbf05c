"""Threads reading and writing disjoint regions of one array at once (the GIL is released
during I/O and decoding)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import neurochunk as nc


@pytest.mark.parametrize("fmt,shards", [(3, None), (3, (16, 64)), (2, None), ("n5", None)])
def test_threads_write_and_read_disjoint_regions(tmp_path, fmt, shards):
    a = nc.create_array(tmp_path / "t", shape=(256, 64), dtype="float64", chunks=(8, 64), shards=shards, zarr_format=fmt)
    expected = np.random.default_rng(1).normal(size=(256, 64))
    # Each thread owns whole chunks (whole shards when sharded): rows [16 i, 16 i + 16).
    def write(i: int) -> None:
        a[16 * i : 16 * (i + 1)] = expected[16 * i : 16 * (i + 1)]

    def read(i: int) -> np.ndarray:
        return a[16 * i : 16 * (i + 1), ::-1]

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, range(16)))
        parts = list(pool.map(read, range(16)))
    np.testing.assert_array_equal(np.concatenate(parts), expected[:, ::-1])
    np.testing.assert_array_equal(nc.open(tmp_path / "t")[...], expected)


def test_one_handle_shared_by_threads(tmp_path):
    a = nc.create_array(tmp_path / "s", shape=(64, 1000), dtype="int64", chunks=(1, 250))
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda r: a.__setitem__(r, np.arange(1000) * r), range(64)))
        sums = list(pool.map(lambda r: int(a[r].sum()), range(64)))
    assert sums == [int((np.arange(1000) * r).sum()) for r in range(64)]
