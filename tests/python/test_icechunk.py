"""Icechunk repositories through the Python API: sessions that commit or discard, reads at
branches, tags and snapshots, history and names, and the errors around them."""

from __future__ import annotations

import numpy as np
import pytest

import neurochunk as nc


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "lab.icechunk"
    nc.icechunk.init(path)
    return path


def test_a_session_commits_once_and_every_version_reads_back(repo):
    with nc.icechunk.session(repo, message="first volume") as s:
        a = nc.create_array(s.path("volume"), shape=(40, 30), dtype="int16", chunks=(8, 8), shards=(16, 16))
        a[:] = np.arange(1200, dtype="int16").reshape(40, 30)
        nc.create_group(s.path("meta"), attributes={"subject": "M1"})
        # Readers in this process see the session; the branch does not move yet.
        assert nc.open(repo / "volume")[39, 29] == 1199
        assert [x["message"] for x in nc.icechunk.log(repo)["snapshots"]] == ["Repository initialized"]
        assert s.has_changes
    assert not s.is_open
    first = nc.icechunk.log(repo)["snapshots"][0]
    assert first["message"] == "first volume"
    nc.icechunk.create_tag(repo, "v1")

    with nc.icechunk.session(repo) as s:
        nc.open(s.path("volume"), mode="r+")[0:8, 0:8] = -5
    assert nc.open(repo / "volume")[0, 0] == -5
    assert nc.open(repo / "volume", tag="v1")[0, 0] == 0
    assert nc.open(repo / "volume", snapshot=first["id"])[0, 0] == 0
    assert nc.open_group(repo / "meta").attrs["subject"] == "M1"
    doc = nc.icechunk.log(repo)
    assert [x["message"] for x in doc["snapshots"]] == ["neurochunk session", "first volume", "Repository initialized"]
    assert doc["tags"] == {"v1": first["id"]}
    assert doc["branches"]["main"] == doc["snapshots"][0]["id"]


def test_an_exception_discards_the_session_and_branches_move_alone(repo):
    with nc.icechunk.session(repo, message="base") as s:
        nc.create_array(s.path("a"), shape=(4,), dtype="uint8", chunks=(2,))[:] = 1
    with pytest.raises(RuntimeError, match="stop"):
        with nc.icechunk.session(repo) as s:
            nc.open(s.path("a"), mode="r+")[:] = 9
            raise RuntimeError("stop")
    np.testing.assert_array_equal(nc.open(repo / "a")[:], [1, 1, 1, 1])
    nc.icechunk.create_branch(repo, "dev")
    with nc.icechunk.session(repo, branch="dev", message="on dev") as s:
        nc.open(repo / "a", mode="r+", branch="dev")[2:] = 3
        assert s.branch == "dev"
    np.testing.assert_array_equal(nc.open(repo / "a", branch="dev")[:], [1, 1, 3, 3])
    np.testing.assert_array_equal(nc.open(repo / "a")[:], [1, 1, 1, 1])
    assert nc.icechunk.log(repo, branch="dev")["snapshots"][0]["message"] == "on dev"
    # A session that changed nothing makes no snapshot.
    with nc.icechunk.session(repo) as s:
        pass
    assert len(nc.icechunk.log(repo)["snapshots"]) == 2


def test_writes_outside_a_session_tags_and_misuse_are_clear_errors(repo):
    with nc.icechunk.session(repo) as s:
        nc.create_array(s.path("a"), shape=(4,), dtype="uint8", chunks=(2,))
    with pytest.raises(nc.Error, match="session"):
        nc.open(repo / "a", mode="r+")[:] = 1
    nc.icechunk.create_tag(repo, "t")
    with nc.icechunk.session(repo):
        with pytest.raises(nc.Error, match="tag or a snapshot"):
            nc.open(repo / "a", mode="r+", tag="t")[:] = 1
        # One session per branch at a time.
        with pytest.raises(nc.Error, match="already open"):
            with nc.icechunk.session(repo):
                pass
    with pytest.raises(nc.InvalidInputError, match="at most one"):
        nc.open(repo / "a", branch="main", tag="t")
    with pytest.raises(nc.Error, match="t"):
        nc.icechunk.create_tag(repo, "t")  # tags never move
    with pytest.raises(nc.Error, match="nope"):
        nc.open(repo / "a", tag="nope")
    with pytest.raises(nc.Error):
        nc.icechunk.init(repo)  # not empty
    manager = nc.icechunk.session(repo)
    s = manager.__enter__()
    s.abort()
    with pytest.raises(nc.Error, match="closed"):
        s.commit("late")
    manager.__exit__(None, None, None)  # closed already: nothing to commit
    assert len(nc.icechunk.log(repo)["snapshots"]) == 2


def test_threads_writing_parts_of_one_shard_keep_every_value(repo, tmp_path):
    """Threads of one process (as Dask's threaded scheduler runs) each write one inner chunk
    of the same shard: in a session and in a plain directory, every value is kept."""
    from concurrent.futures import ThreadPoolExecutor

    expected = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    blocks = [(i, j) for i in range(0, 64, 8) for j in range(0, 64, 8)]

    def fill(array: nc.Array) -> None:
        def one(corner: tuple[int, int]) -> None:
            i, j = corner
            array[i : i + 8, j : j + 8] = expected[i : i + 8, j : j + 8]

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(one, blocks))

    for attempt in range(3):
        plain = nc.create_array(tmp_path / f"plain{attempt}.zarr", shape=(64, 64), dtype="int32", chunks=(8, 8), shards=(64, 64))
        fill(plain)
        np.testing.assert_array_equal(nc.open(tmp_path / f"plain{attempt}.zarr")[:], expected)
        with nc.icechunk.session(repo, message=f"threads {attempt}") as s:
            fill(nc.create_array(s.path(f"v{attempt}"), shape=(64, 64), dtype="int32", chunks=(8, 8), shards=(64, 64)))
        np.testing.assert_array_equal(nc.open(repo / f"v{attempt}")[:], expected)


def _write_quarter(fork: nc.icechunk.Fork, path: str, corner: tuple[int, int], value: int) -> nc.icechunk.Fork:
    """A worker's task: write one 32 x 32 quarter of the shard through the fork."""
    i, j = corner
    with fork:
        nc.open(path, mode="r+")[i : i + 32, j : j + 32] = value
    return fork


def test_forks_in_other_processes_writing_parts_of_one_shard_keep_every_value(repo):
    """Each worker process writes one quarter of the same shard through its own fork of the
    session; merged, the commit holds every quarter (icechunk alone would keep one fork's
    shard). Overlapping forks that disagree are refused, and the session stays usable."""
    import multiprocessing

    with nc.icechunk.session(repo, message="the array") as s:
        nc.create_array(s.path("v"), shape=(64, 64), dtype="int32", chunks=(8, 8), shards=(64, 64), fill_value=-1)
    path = str(repo / "v")
    corners = [(0, 0), (0, 32), (32, 0), (32, 32)]
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool, nc.icechunk.session(repo, message="four forks") as s:
        fork = s.fork()
        forks = pool.starmap(_write_quarter, [(fork, path, c, 10 + k) for k, c in enumerate(corners)])
        assert s.merge(*forks) == 1  # the one shard, written by all four
    expected = np.empty((64, 64), dtype="int32")
    for k, (i, j) in enumerate(corners):
        expected[i : i + 32, j : j + 32] = 10 + k
    np.testing.assert_array_equal(nc.open(path)[:], expected)
    assert nc.icechunk.log(repo)["snapshots"][0]["message"] == "four forks"

    # Two forks writing one element differently: the merge names it and merges nothing.
    with context.Pool(2) as pool, nc.icechunk.session(repo, message="clash") as s:
        fork = s.fork()
        a, b = pool.starmap(_write_quarter, [(fork, path, (0, 0), 1), (fork, path, (16, 16), 2)])
        with pytest.raises(nc.StoreError, match=r"\[16, 16\].*nothing was merged"):
            s.merge(a, b)
        assert not s.has_changes
        s.merge(a)
    np.testing.assert_array_equal(nc.open(path)[0:32, 0:32], np.full((32, 32), 1, dtype="int32"))


def test_forks_are_checked(repo, tmp_path):
    with nc.icechunk.session(repo) as s:
        nc.create_array(s.path("v"), shape=(4,), dtype="uint8")
    other = tmp_path / "other.icechunk"
    nc.icechunk.init(other)
    with nc.icechunk.session(other) as s:
        stranger = s.fork()
    with nc.icechunk.session(repo) as s:
        with pytest.raises(nc.StoreError, match="cannot be merged"):
            s.merge(stranger)
        with pytest.raises(TypeError):
            s.merge(b"bytes")  # type: ignore[arg-type]
        fork = s.fork()
        # A fork and the session of its branch are not open in one process at once.
        with pytest.raises(nc.StoreError, match="already open"):
            with fork:
                pass
