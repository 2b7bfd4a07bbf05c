"""Repositories `neurochunk` writes (put, convert, consolidate, pyramid, nwb demo and convert,
each command one commit), read by icechunk + zarr-python at every version with the history and
messages intact; failed and killed writers commit nothing."""

import json
import random
import signal
import subprocess
import time
from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr

from ncli import Neurochunk, binary_path


@pytest.fixture
def nc(tmp_path):
    return Neurochunk(binary_path(), tmp_path / "scratch")


def open_repo(path: Path) -> icechunk.Repository:
    return icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))


def messages(repo: icechunk.Repository, **ref) -> list[str]:
    return [s.message for s in repo.ancestry(**ref)]


def raw(store, key: str) -> bytes:
    """One value of a store, as stored."""
    from zarr.core.buffer import default_buffer_prototype
    from zarr.core.sync import sync
    return sync(store.get(key, default_buffer_prototype())).to_bytes()


def node_names(group: zarr.Group) -> set[str]:
    return {name for name, _ in group.members(max_depth=None)}


def test_each_command_is_one_commit_read_by_icechunk_at_every_version(nc, tmp_path):
    repo_path = tmp_path / "repo"
    first = np.arange(64 * 48, dtype="uint16").reshape(64, 48)
    second = (first * 3).astype("uint16")
    labels = (np.arange(64 * 48) % 7).astype("uint32").reshape(64, 48)

    # --format icechunk makes the new path a repository; the array is its root group's child.
    nc.run("init", repo_path)
    nc.put(first, repo_path / "volume", "icechunk", chunks=[16, 16], shards=[32, 48])
    nc.run("tag", repo_path, "v1")
    nc.put(second, repo_path / "volume", "zarr3", chunks=[16, 16])
    nc.run("branch", repo_path, "dev", "--tag", "v1")
    labels_npy = tmp_path / "labels.npy"
    np.save(labels_npy, labels)
    nc.run("put", labels_npy, repo_path / "seg" / "labels", "--format", "zarr3",
           "--chunks", "32,32", "--attrs", '{"kind": "labels"}',
           "--branch", "dev", "--message", "labels on dev")
    nc.run("nwb", "demo", repo_path / "session.nwb", "--convention", "zarr3")
    nc.run("consolidate", repo_path, "--message", "consolidated")

    repo = open_repo(repo_path)
    main = messages(repo, branch="main")
    assert main[0] == "consolidated" and main[-1] == "Repository initialized", main
    # The default message is the command line.
    assert main[1].startswith("neurochunk nwb demo") and "session.nwb" in main[1], main
    assert main[2].startswith("neurochunk put") and "zarr3" in main[2], main
    assert len(main) == 5, main
    assert messages(repo, branch="dev")[:2] == ["labels on dev", main[3]]
    assert repo.lookup_tag("v1") == list(repo.ancestry(branch="main"))[3].id

    at_tag = zarr.open_group(repo.readonly_session(tag="v1").store, mode="r")
    np.testing.assert_array_equal(at_tag["volume"][:], first)
    assert at_tag["volume"].shards == (32, 48) and at_tag["volume"].chunks == (16, 16)
    assert "session.nwb" not in node_names(at_tag)

    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["volume"][:], second)
    assert "seg" not in node_names(head)
    nwb = head["session.nwb"]
    assert nwb.attrs["neurodata_type"] == "NWBFile"
    data = nwb["acquisition/ElectricalSeries/data"]
    np.testing.assert_array_equal(data[:], nc.get(repo_path / "session.nwb/acquisition/ElectricalSeries/data"))
    # Consolidated metadata lists every node of the hierarchy (zarr-python does not use it
    # with icechunk's store, which lists nodes itself; the document holds it).
    root = json.loads(raw(repo.readonly_session(branch="main").store, "zarr.json"))
    assert "volume" in root["consolidated_metadata"]["metadata"]

    dev = zarr.open_group(repo.readonly_session(branch="dev").store, mode="r")
    np.testing.assert_array_equal(dev["volume"][:], first)
    np.testing.assert_array_equal(dev["seg/labels"][:], labels)
    assert dict(dev["seg/labels"].attrs) == {"kind": "labels"}

    # What icechunk commits on top, neurochunk reads.
    s = repo.writable_session("main")
    zarr.open_array(s.store, path="volume", mode="r+")[0, 0:4] = 9
    s.commit("from icechunk")
    np.testing.assert_array_equal(nc.get(repo_path / "volume", region="0:1,0:6"), [[9, 9, 9, 9, 12, 15]])


def test_conversions_and_pyramids_into_a_repository(nc, tmp_path):
    src = tmp_path / "src.zarr"
    a = np.random.default_rng(1).integers(0, 1000, (40, 30), dtype="int32")
    nc.put(a, src / "a", "zarr2", chunks=[8, 8])
    nc.put(a.T.copy(), src / "t", "zarr2", chunks=[8, 8])
    repo_path = tmp_path / "converted"
    nc.run("convert", src, repo_path, "--format", "icechunk", "--shards", "16,16", "--chunks", "8,8")
    nc.run("pyramid", repo_path / "a", repo_path / "image", "--levels", "3", "--message", "pyramid")
    repo = open_repo(repo_path)
    assert messages(repo, branch="main")[0] == "pyramid"
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["a"][:], a)
    np.testing.assert_array_equal(head["t"][:], a.T)
    assert head["a"].shards == (16, 16)
    levels = head["image"].attrs["ome"]["multiscales"][0]["datasets"]
    assert [d["path"] for d in levels] == ["0", "1", "2"]
    assert head["image/2"].shape == (10, 8)
    # Out again, into a plain directory.
    out = tmp_path / "out.zarr"
    nc.run("convert", repo_path, out, "--format", "zarr2")
    np.testing.assert_array_equal(zarr.open_array(out / "t", mode="r")[:], a.T)


def test_a_failed_command_commits_nothing(nc, tmp_path):
    src = tmp_path / "src.zarr"
    nc.put(np.arange(100, dtype="uint8"), src / "first", "zarr3", chunks=[10])
    nc.put(np.arange(100, dtype="uint8"), src / "second", "zarr3", chunks=[10], codec="zstd:3")
    # A damaged chunk in the second array: the conversion fails after writing the first.
    chunk = src / "second" / "c" / "5"
    chunk.write_bytes(b"\x28\xb5\x2f\xfd garbage")
    repo_path = tmp_path / "repo"
    nc.run("init", repo_path)
    before = [s.id for s in open_repo(repo_path).ancestry(branch="main")]
    stderr = nc.fails("convert", src, repo_path / "copy", "--format", "zarr3")
    assert "second" in stderr
    repo = open_repo(repo_path)
    assert [s.id for s in repo.ancestry(branch="main")] == before
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r") \
        if messages(repo, branch="main") != ["Repository initialized"] else None
    assert head is None or "copy" not in node_names(head)
    # A tag is read-only, and says so.
    nc.run("tag", repo_path, "start")
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros(4, "uint8"))
    stderr = nc.fails("put", npy, repo_path / "x", "--format", "zarr3", "--chunks", "4", "--tag", "start")
    assert "tag" in stderr and "branch" in stderr, stderr


def test_killed_writers_leave_the_old_or_the_new_file_complete(nc, tmp_path):
    """kill -9 during `nwb demo` into a repository, again and again: the branch always holds
    the previous complete file or the new complete one."""
    reference = tmp_path / "reference.nwb"
    scale = "300"
    nc.run("nwb", "demo", reference, "--convention", "zarr3", "--scale", scale)
    expected = node_names(zarr.open_group(reference, mode="r"))
    reference_shape = zarr.open_array(reference / "acquisition/ElectricalSeries/data", mode="r").shape
    repo_path = tmp_path / "repo"
    nc.run("init", repo_path)
    argv = [str(binary_path()), "nwb", "demo", str(repo_path / "f.nwb"), "--convention", "zarr3",
            "--scale", scale, "--overwrite", "-q"]
    started = time.monotonic()
    subprocess.run(argv, check=True, capture_output=True)
    took = time.monotonic() - started
    commits = len(list(open_repo(repo_path).ancestry(branch="main")))
    rng = random.Random(7)
    outcomes = set()
    for attempt in range(8):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, took * 1.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        repo = open_repo(repo_path)
        now = len(list(repo.ancestry(branch="main")))
        assert now in (commits, commits + 1), (attempt, commits, now)
        outcomes.add(now - commits)
        commits = now
        head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
        assert node_names(head["f.nwb"]) == expected, f"attempt {attempt}: an incomplete file"
        data = head["f.nwb/acquisition/ElectricalSeries/data"]
        assert data.shape == reference_shape and np.isfinite(data[:]).all()
    assert 0 in outcomes, "no kill landed before a commit; the test did not test"


def test_an_hdf5_nwb_file_imported_into_a_repository(nc, tmp_path):
    """`nwb import` of a file pynwb wrote (HDF5) into a repository: one commit, read by
    zarr-python through icechunk and validated by neurochunk at the new snapshot."""
    from datetime import datetime, timezone

    import pynwb

    source = tmp_path / "session.nwb"
    nwbfile = pynwb.NWBFile(session_description="imported", identifier="ic-1",
                            session_start_time=datetime(2026, 1, 2, tzinfo=timezone.utc))
    values = np.arange(600, dtype="float32").reshape(200, 3)
    nwbfile.add_acquisition(pynwb.TimeSeries(name="trace", data=values, unit="mV", rate=30.0))
    with pynwb.NWBHDF5IO(str(source), "w") as io:
        io.write(nwbfile)
    repo_path = tmp_path / "repo"
    nc.run("init", repo_path)
    nc.run("nwb", "import", source, repo_path / "session.nwb", "--convention", "zarr3",
           "--message", "imported from HDF5")
    assert not (repo_path / "session.nwb").exists(), "written beside the repository's objects"
    repo = open_repo(repo_path)
    assert messages(repo, branch="main")[0] == "imported from HDF5"
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["session.nwb/acquisition/trace/data"][:], values)
    nc.run("nwb", "validate", repo_path / "session.nwb")
