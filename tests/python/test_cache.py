"""The cache of decoded chunks of an array handle: on by default for ``mode="r"``, off for
writable handles, invalidated by writes through the handle, values equal to NumPy's."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import neurochunk as nc


def _volume(tmp_path, name: str, shards=None) -> tuple[str, np.ndarray]:
    data = np.random.default_rng(3).integers(0, 60000, size=(48, 40, 36), dtype=np.uint16)
    path = str(tmp_path / name)
    a = nc.create_array(path, shape=data.shape, dtype="uint16", chunks=(8, 8, 12), shards=shards, compressors="zstd:1")
    a[...] = data
    return path, data


@pytest.mark.parametrize("shards", [None, (16, 16, 36)])
def test_read_only_handles_cache_partial_reads_by_default(tmp_path, shards):
    path, data = _volume(tmp_path, "v", shards)
    a = nc.open(path)
    assert a.cache_bytes == 64 << 20
    points = [tuple(int(v) for v in p) for p in np.random.default_rng(5).integers(0, 8, size=(200, 3))]
    for p in points:
        assert a[p] == data[p]
    info = a.cache_info
    # All 200 points lie in the first chunk (inner chunk, whose shard index is kept too): it
    # is read once, then served from memory.
    entries = 1 if shards is None else 2
    assert info["entries"] == entries and info["misses"] == entries and info["hits"] == 199, info
    assert 0 < info["bytes"] <= a.cache_bytes
    # Whole-chunk reads bypass the cache.
    np.testing.assert_array_equal(a[8:16, 8:16, 12:24], data[8:16, 8:16, 12:24])
    assert a.cache_info["entries"] == entries
    np.testing.assert_array_equal(a[...], data)
    assert a.cache_info["entries"] == entries


def test_writable_handles_cache_only_when_asked(tmp_path):
    path, _ = _volume(tmp_path, "v")
    assert nc.open(path, mode="r+").cache_bytes == 0
    assert nc.open(path, mode="a").cache_bytes == 0
    assert nc.open(path, mode="r+", cache_bytes=1 << 20).cache_bytes == 1 << 20
    assert nc.open(path, mode="r", cache_bytes=0).cache_bytes == 0
    assert nc.open_array(path, cache_bytes=12345).cache_bytes == 12345
    created = nc.open(str(tmp_path / "w"), mode="w", shape=(4,), dtype="int8", cache_bytes=4096)
    assert created.cache_bytes == 4096
    # Arrays reached through a group follow the group's mode and cache_bytes.
    g = nc.open_group(str(tmp_path / "g"), mode="w")
    g.create_array("x", shape=(10,), dtype="int32")
    assert nc.open(str(tmp_path / "g"))["x"].cache_bytes == 64 << 20
    assert nc.open(str(tmp_path / "g"), mode="r+")["x"].cache_bytes == 0
    assert nc.open(str(tmp_path / "g"), cache_bytes=99)["x"].cache_bytes == 99
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(nc.InvalidInputError):
            nc.open(path, cache_bytes=bad)


@pytest.mark.parametrize("shards", [None, (16, 16, 36)])
def test_values_equal_numpy_after_writes_through_a_cached_handle(tmp_path, shards):
    path, data = _volume(tmp_path, "v", shards)
    a = nc.open(path, mode="r+", cache_bytes=8 << 20)
    expected = data.copy()
    rng = np.random.default_rng(11)
    for step in range(60):
        z, y, x = (int(rng.integers(0, n)) for n in expected.shape)
        # Point and small-box reads (kept in the cache), then a write that overlaps them.
        assert a[z, y, x] == expected[z, y, x]
        box = (slice(z, z + 3), slice(y, y + 5), x)
        np.testing.assert_array_equal(a[box], expected[box])
        value = rng.integers(0, 60000, size=expected[box].shape, dtype=np.uint16)
        a[box] = value
        expected[box] = value
        assert a[z, y, x] == expected[z, y, x]
        if step % 20 == 19:
            np.testing.assert_array_equal(a[...], expected)
    # Resizing drops the cache: shrink past a cached chunk, grow back, read fill values.
    assert a[47, 39, 35] == expected[47, 39, 35]
    a.resize(40, 40, 36)
    a.resize(48, 40, 36)
    if shards is None:
        assert a[47, 39, 35] == 0
    np.testing.assert_array_equal(a[:40], expected[:40])
    np.testing.assert_array_equal(nc.open(path)[:40], expected[:40])


def test_a_read_only_handle_keeps_what_it_cached_until_reopened(tmp_path):
    path, data = _volume(tmp_path, "v")
    reader = nc.open(path)
    assert reader[3, 4, 5] == data[3, 4, 5]
    writer = nc.open(path, mode="r+")
    writer[3, 4, 5] = data[3, 4, 5] + 1
    # The documented trade-off: the reader's cached chunk predates the other handle's write.
    assert reader[3, 4, 5] == data[3, 4, 5]
    assert nc.open(path)[3, 4, 5] == data[3, 4, 5] + 1
    assert nc.open(path, cache_bytes=0)[3, 4, 5] == data[3, 4, 5] + 1
    reader.cache_bytes = 0
    assert reader.cache_info == {"bytes": 0, "entries": 0, "hits": 1, "misses": 1}
    assert reader[3, 4, 5] == data[3, 4, 5] + 1
    reader.cache_bytes = 1 << 20
    assert reader[3, 4, 5] == data[3, 4, 5] + 1
    with pytest.raises(nc.InvalidInputError):
        reader.cache_bytes = -5
    again = pickle.loads(pickle.dumps(reader))
    assert again.cache_bytes == 1 << 20 and again.read_only


@pytest.mark.parametrize("shards", [None, (16, 16, 36)])
def test_threads_reading_points_of_one_handle(tmp_path, shards):
    path, data = _volume(tmp_path, "v", shards)
    a = nc.open(path, cache_bytes=40_000)  # a few chunks: the threads evict each other's

    def read(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for p in rng.integers(0, 36, size=(300, 3)):
            z, y, x = (int(v) for v in p)
            assert a[z, y, x] == data[z, y, x]
            np.testing.assert_array_equal(a[z : z + 2, y, x : x + 3], data[z : z + 2, y, x : x + 3])

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(read, range(8)))
    info = a.cache_info
    assert info["hits"] > 0 and info["bytes"] <= 40_000, info
