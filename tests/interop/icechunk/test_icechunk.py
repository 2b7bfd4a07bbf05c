"""Repositories written by the `icechunk` Python package, read by `neurochunk` at every version
(branch heads, tags, snapshot ids), and names `neurochunk tag`/`branch` create, read by icechunk."""

import json
from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr

from ncli import Neurochunk, binary_path


@pytest.fixture
def nc(tmp_path):
    return Neurochunk(binary_path(), tmp_path / "scratch")


def history(tmp_path: Path):
    """A repository with four commits on main (the last deletes an array), a tag, a second
    branch with a commit of its own; returns the path, the repository and the expected values
    per snapshot."""
    path = tmp_path / "repo"
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(path)))
    expected = {}

    s = repo.writable_session("main")
    root = zarr.open_group(s.store, mode="w", attributes={"lab": "cortex"})
    a = root.create_array("a", shape=(4, 6), chunks=(2, 3), dtype="int32", fill_value=-1)
    a[:] = np.arange(24, dtype="int32").reshape(4, 6)
    sh = root.create_array("sharded", shape=(8, 8), chunks=(2, 2), shards=(4, 4), dtype="uint16")
    sh[:] = np.arange(64, dtype="uint16").reshape(8, 8) * 3
    b = root.create_array("b", shape=(3,), chunks=(2,), dtype="float64")
    b[:] = [0.5, 1.5, 2.5]
    first = s.commit("first arrays")
    expected[first] = {"a": np.asarray(a[:]), "sharded": np.asarray(sh[:]), "b": np.asarray(b[:])}
    repo.create_tag("v1", snapshot_id=first)
    repo.create_branch("dev", snapshot_id=first)

    s = repo.writable_session("main")
    a = zarr.open_array(s.store, path="a", mode="r+")
    a[0:2, 0:3] = 100
    second = s.commit("overwrite a corner")
    expected[second] = dict(expected[first], a=np.asarray(a[:]))

    s = repo.writable_session("dev")
    sh = zarr.open_array(s.store, path="sharded", mode="r+")
    sh[5, 5] = 7
    on_dev = s.commit("one voxel on dev")
    expected[on_dev] = dict(expected[first], sharded=np.asarray(sh[:]))

    s = repo.writable_session("main")
    root = zarr.open_group(s.store, mode="r+")
    del root["b"]
    third = s.commit("delete b")
    expected[third] = {k: v for k, v in expected[second].items() if k != "b"}
    return path, repo, expected, {"first": first, "second": second, "dev": on_dev, "third": third}


def test_every_version_reads_exactly(nc, tmp_path):
    path, repo, expected, ids = history(tmp_path)
    versions = {
        ("--branch", "main"): ids["third"],
        ("--tag", "v1"): ids["first"],
        ("--branch", "dev"): ids["dev"],
        ("--snapshot", ids["second"]): ids["second"],
        ("--snapshot", ids["first"]): ids["first"],
    }
    for (flag, value), snapshot in versions.items():
        for name, values in expected[snapshot].items():
            out = tmp_path / f"{name}.npy"
            nc.run("get", path / name, flag, value, "-o", out)
            got = np.load(out)
            assert got.dtype == values.dtype, (flag, value, name)
            np.testing.assert_array_equal(got, values, err_msg=f"{flag} {value} {name}")
    # Without a flag: the head of main.
    np.testing.assert_array_equal(nc.get(path / "a"), expected[ids["third"]]["a"])
    # A region of the sharded array at the head of main.
    region = nc.get(path / "sharded", region="4:8,4:6")
    np.testing.assert_array_equal(region, expected[ids["first"]]["sharded"][4:8, 4:6])


def test_deleted_arrays_and_missing_versions_are_errors(nc, tmp_path):
    path, _repo, _expected, ids = history(tmp_path)
    proc = nc.run("get", path / "b", "-o", tmp_path / "b.npy", check=False)
    assert proc.returncode != 0 and "b" in proc.stderr, proc.stderr
    out = tmp_path / "b-old.npy"
    nc.run("get", path / "b", "--snapshot", ids["second"], "-o", out)
    np.testing.assert_array_equal(np.load(out), [0.5, 1.5, 2.5])
    for flag, value, named in [("--tag", "nope", "nope"), ("--branch", "gone", "gone"),
                               ("--snapshot", "NOTANID", "NOTANID")]:
        proc = nc.run("get", path / "a", flag, value, "-o", tmp_path / "x.npy", check=False)
        assert proc.returncode != 0, (flag, value)
        assert named in proc.stderr and "panicked" not in proc.stderr, proc.stderr


def test_tree_and_attributes_at_a_version(nc, tmp_path):
    path, _repo, _expected, ids = history(tmp_path)
    head = nc.tree(path)
    old = json.loads(nc.run("tree", path, "--json", "--tag", "v1").stdout)
    def names(tree):
        return sorted(n["path"].strip("/") for n in tree["nodes"] if n["path"].strip("/"))
    assert "b" in names(old) and "b" not in names(head), (names(old), names(head))
    info = nc.info(path)
    assert info["attributes"] == {"lab": "cortex"}, info


def test_log_lists_history_branches_and_tags(nc, tmp_path):
    path, repo, _expected, ids = history(tmp_path)
    doc = json.loads(nc.run("log", path, "--json").stdout)
    theirs = list(repo.ancestry(branch="main"))
    assert [s["id"] for s in doc["snapshots"]] == [s.id for s in theirs]
    assert [s["message"] for s in doc["snapshots"]] == [s.message for s in theirs]
    assert doc["snapshots"][0]["id"] == ids["third"]
    assert doc["snapshots"][0]["parent"] == ids["second"]
    assert {b["name"]: b["snapshot"] for b in doc["branches"]} == {
        "main": ids["third"], "dev": ids["dev"]}
    assert {t["name"]: t["snapshot"] for t in doc["tags"]} == {"v1": ids["first"]}
    dev = json.loads(nc.run("log", path, "--json", "--branch", "dev").stdout)
    assert [s["message"] for s in dev["snapshots"]][:2] == ["one voxel on dev", "first arrays"]
    text = nc.run("log", path).stdout.splitlines()
    assert text[0].startswith(ids["third"]) and "delete b" in text[0] and "branch main" in text[0]


def test_tags_and_branches_neurochunk_creates_are_icechunks(nc, tmp_path):
    path, _repo, _expected, ids = history(tmp_path)
    nc.run("tag", path, "reviewed", "--snapshot", ids["second"])
    nc.run("branch", path, "analysis", "--tag", "v1")
    nc.run("tag", path, "head")
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(path)))
    assert repo.lookup_tag("reviewed") == ids["second"]
    assert repo.lookup_tag("head") == ids["third"]
    assert repo.lookup_branch("analysis") == ids["first"]
    # The new branch takes commits from icechunk like any other.
    s = repo.writable_session("analysis")
    a = zarr.open_array(s.store, path="a", mode="r+")
    a[3, 5] = -7
    s.commit("on analysis")
    out = tmp_path / "a.npy"
    nc.run("get", path / "a", "--branch", "analysis", "-o", out)
    assert np.load(out)[3, 5] == -7
    # An existing tag is not moved.
    proc = nc.run("tag", path, "v1", check=False)
    assert proc.returncode != 0 and "v1" in proc.stderr, proc.stderr
    assert repo.lookup_tag("v1") == ids["first"]


def test_a_plain_directory_is_no_repository(nc, tmp_path):
    (tmp_path / "plain").mkdir()
    proc = nc.run("log", tmp_path / "plain", check=False)
    assert proc.returncode != 0 and "plain" in proc.stderr, proc.stderr
