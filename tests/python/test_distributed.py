"""Dask on a real dask.distributed LocalCluster with process workers (where distributed is
installed, .peers/py312): arrays travel to the workers pickled as references that reopen the
store there; reads (to_dask) and writes (dask.array.store into plain and sharded arrays, each
task owning whole chunks or shards) run in the worker processes."""

from __future__ import annotations

import os

import dask.array as da
import numpy as np
import pytest
from distributed import Client, LocalCluster

import neurochunk as nc


@pytest.fixture(scope="module")
def client():
    with LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None, silence_logs=40
    ) as cluster, Client(cluster) as c:
        yield c


def test_workers_are_other_processes(client):
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids


def test_to_dask_sum_on_process_workers(client, tmp_path):
    rng = np.random.default_rng(5)
    data = rng.integers(0, 60000, size=(64, 48, 40), dtype=np.uint16)
    a = nc.create_array(tmp_path / "v.zarr", shape=data.shape, dtype="uint16", chunks=(16, 16, 20), shards=(32, 48, 40))
    a[...] = data
    d = nc.open(tmp_path / "v.zarr").to_dask()
    assert d.numblocks == (2, 1, 1)
    total = client.compute(d.sum(dtype="uint64")).result()
    assert total == data.sum(dtype=np.uint64)
    # Another blocking: basic chunks of a v2 array, a strided reduction.
    b = nc.create_array(tmp_path / "v2.zarr", shape=data.shape, dtype="uint16", chunks=(8, 12, 10), zarr_format=2)
    b[...] = data
    got = client.compute(b.to_dask()[::3, 1:, ::-2].astype("float64").mean(axis=0)).result()
    np.testing.assert_allclose(got, data[::3, 1:, ::-2].astype("float64").mean(axis=0))


@pytest.mark.parametrize("shards", [None, (32, 24, 40)])
def test_dask_store_from_process_workers(client, tmp_path, shards):
    rng = np.random.default_rng(6)
    data = rng.normal(size=(64, 48, 40)).astype("float32")
    out = nc.create_array(tmp_path / "out.zarr", shape=data.shape, dtype="float32", chunks=(16, 12, 20), shards=shards)
    # Blocks aligned to what one task may own: chunks, or whole shards when sharded.
    blocks = shards or (16, 12, 20)
    src = da.from_array(data, chunks=blocks)
    da.store(src, out, lock=False)  # the client's scheduler: the worker processes write
    np.testing.assert_array_equal(nc.open(tmp_path / "out.zarr")[...], data)
    assert out.nchunks_initialized == out.nchunks
    # A computed source (the graph runs on the workers, reading our own array there).
    twice = nc.create_array(tmp_path / "twice.zarr", shape=data.shape, dtype="float32", chunks=(16, 12, 20), shards=shards)
    da.store(nc.open(tmp_path / "out.zarr").to_dask(chunks=blocks) * 2, twice, lock=False)
    np.testing.assert_array_equal(twice[...], data * 2)


@pytest.mark.parametrize("shards", [None, (32, 24, 40)])
def test_store_from_realigns_blocks(client, tmp_path, shards):
    rng = np.random.default_rng(8)
    data = rng.integers(0, 1000, size=(64, 48, 40), dtype=np.int32)
    out = nc.create_array(tmp_path / "o.zarr", shape=data.shape, dtype="int32", chunks=(16, 12, 20), shards=shards)
    # Blocks that straddle chunks and shards: written as they are, tasks would patch the
    # same chunk concurrently; store_from rechunks them onto the grid first.
    src = da.from_array(data, chunks=(10, 7, 13))
    out.store_from(src)
    np.testing.assert_array_equal(out[...], data)
    with pytest.raises(ValueError, match="shape"):
        out.store_from(src[:10])
    with pytest.raises(PermissionError):
        nc.open(tmp_path / "o.zarr").store_from(src)


def _write_rows(fork: nc.icechunk.Fork, path: str, rows: slice, block: np.ndarray) -> nc.icechunk.Fork:
    with fork:
        nc.open(path, mode="r+")[rows, :] = block
    return fork


def test_workers_write_parts_of_one_shard_of_a_repository_through_forks(client, tmp_path):
    """Each task writes rows of the same shard (cutting inner chunks too) through its own fork
    of the session; merged and committed once, icechunk + zarr-python read every value."""
    import icechunk
    import zarr

    repo = tmp_path / "lab.icechunk"
    nc.icechunk.init(repo)
    with nc.icechunk.session(repo, message="the array") as s:
        nc.create_array(s.path("volume"), shape=(96, 40), dtype="float32", chunks=(8, 8), shards=(96, 40))
    path = str(repo / "volume")
    expected = np.random.default_rng(3).normal(size=(96, 40)).astype("float32")
    rows = [slice(r, r + 12) for r in range(0, 96, 12)]
    with nc.icechunk.session(repo, message="written by dask") as s:
        fork = s.fork()
        futures = client.map(_write_rows, [fork] * len(rows), [path] * len(rows), rows, [expected[r] for r in rows], pure=False)
        assert s.merge(*client.gather(futures)) == 1

    ic_repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo)))
    assert [c.message for c in ic_repo.ancestry(branch="main")][0] == "written by dask"
    head = zarr.open_group(ic_repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["volume"][:], expected)
    np.testing.assert_array_equal(nc.open(path)[:], expected)
