"""nc.open, nc.table and nc.nwb on URLs, against a real S3 server (moto_server, started on
127.0.0.1 by the remote suite's helpers in tests/interop/remote; where moto is installed,
.peers/py312), cross-checked with zarr-python 3 through s3fs and with boto3."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop" / "remote"))

from remote_servers import S3Endpoint, start_moto  # noqa: E402

import neurochunk as nc  # noqa: E402

KEYS = ("moto-test-access-key", "moto-test-secret-key")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("moto")
    saved = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
    proc = start_moto(workdir)
    try:
        ep = S3Endpoint("moto", proc.url, *KEYS)
        for k in saved:
            del os.environ[k]
        # Credentials come from the environment, as for every AWS client.
        os.environ.update({"AWS_ACCESS_KEY_ID": KEYS[0], "AWS_SECRET_ACCESS_KEY": KEYS[1], "AWS_EC2_METADATA_DISABLED": "true"})
        yield ep
    finally:
        proc.stop()
        for k in [k for k in os.environ if k.startswith("AWS_")]:
            del os.environ[k]
        os.environ.update(saved)


def opts(ep):
    return {"endpoint": ep.endpoint, "region": ep.region}


def test_arrays_on_s3_both_ways_with_zarr_python(s3, tmp_path):
    import zarr

    bucket = s3.create_bucket("arr")
    url = f"s3://{bucket}/data/volume.zarr"
    data = np.arange(40 * 30, dtype="int32").reshape(40, 30)
    a = nc.create_array(url, shape=data.shape, dtype="int32", chunks=(10, 10), shards=(20, 30), storage_options=opts(s3))
    a[...] = data
    a[5:7, ::3] = -1
    data[5:7, ::3] = -1
    assert "data/volume.zarr/zarr.json" in s3.keys(bucket)
    again = nc.open(url, storage_options=opts(s3))
    assert isinstance(again, nc.Array) and again.read_only
    np.testing.assert_array_equal(again[...], data)
    np.testing.assert_array_equal(again.oindex[[0, 39], [1, 29]], data[np.ix_([0, 39], [1, 29])])
    theirs = zarr.open_array(s3.fsspec_store(bucket, "data/volume.zarr", read_only=True), mode="r")
    np.testing.assert_array_equal(theirs[...], data)
    with pytest.raises(PermissionError):
        again[0, 0] = 1
    # Pickled (a dask task, a worker), the array reopens with the same storage options.
    back = pickle.loads(pickle.dumps(again))
    assert back.storage_options == opts(s3)
    np.testing.assert_array_equal(back[3], data[3])

    # A hierarchy zarr-python writes, read through the URL of its group.
    g = zarr.open_group(s3.fsspec_store(bucket, "tree.zarr"), mode="w", zarr_format=2)
    g.create_array("raw", shape=(6, 4), dtype="uint8", chunks=(3, 2))[...] = np.arange(24, dtype="uint8").reshape(6, 4)
    g.require_group("sub").attrs["k"] = "v"
    ours = nc.open_group(f"s3://{bucket}/tree.zarr", storage_options=opts(s3))
    assert sorted(ours) == ["raw", "sub"] and ours["sub"].attrs["k"] == "v"
    np.testing.assert_array_equal(ours["raw"][...], np.arange(24, dtype="uint8").reshape(6, 4))
    # Converting from S3 to a local sharded copy.
    nc.convert(f"s3://{bucket}/data/volume.zarr", tmp_path / "local.zarr", shards=(40, 30), storage_options=opts(s3))
    np.testing.assert_array_equal(nc.open(tmp_path / "local.zarr")[...], data)


def test_url_errors(s3):
    with pytest.raises(ValueError, match="not supported"):
        nc.open("s3://bucket/x.zarr", storage_options={"key": "k"})
    with pytest.raises(ValueError, match="URLs"):
        nc.open("local/path.zarr", storage_options={"endpoint": "http://127.0.0.1:1"})
    with pytest.raises(ValueError):
        nc.open("ftp://host/x.zarr")
    bucket = s3.create_bucket("err")
    with pytest.raises(FileNotFoundError):
        nc.open(f"s3://{bucket}/nothing.zarr", storage_options=opts(s3))


def test_tables_and_nwb_on_s3(s3, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bucket = s3.create_bucket("tab")
    t = pa.table({"id": pa.array([1, 2, 3, 4], pa.uint64()), "part": pa.array([0, 1, 0, 1], pa.int64()), "v": [0.5, 1.5, 2.5, 3.5]})
    assert nc.table.write(t, f"s3://{bucket}/t.parquet", storage_options=opts(s3)) == 4
    assert pq.read_table(pa.BufferReader(s3.get_bytes(bucket, "t.parquet"))).equals(t)
    got = pa.table(nc.table.read(f"s3://{bucket}/t.parquet", filter=[("v", ">", 1)], storage_options=opts(s3)))
    assert got.column("id").to_pylist() == [2, 3, 4]
    assert nc.table.write(t, f"s3://{bucket}/hive", partition_by="part", storage_options=opts(s3)) == 4
    assert sorted({k.split("/")[1] for k in s3.keys(bucket, "hive/")}) == ["_common_metadata", "part=0", "part=1"]
    back = pa.table(nc.table.read(f"s3://{bucket}/hive", storage_options=opts(s3)))
    assert sorted(zip(back.column("id").to_pylist(), back.column("part").to_pylist())) == [(1, 0), (2, 1), (3, 0), (4, 1)]
    assert nc.table.validate(f"s3://{bucket}/nothing.parquet", storage_options=opts(s3)).tables[0].unreadable

    nc.nwb.demo(tmp_path / "demo.nwb.zarr")
    s3.upload_dir(tmp_path / "demo.nwb.zarr", bucket, "demo.nwb.zarr")
    remote = nc.nwb.open(f"s3://{bucket}/demo.nwb.zarr", storage_options=opts(s3))
    local = nc.nwb.open(tmp_path / "demo.nwb.zarr")
    assert [o.path for o in remote.objects()] == [o.path for o in local.objects()]
    np.testing.assert_array_equal(
        remote["/acquisition/ElectricalSeries/data"][:100], local["/acquisition/ElectricalSeries/data"][:100]
    )


def _link_timestamps_to(file: Path, source: str) -> None:
    """Point `/acquisition/position_y`'s `timestamps` link (v3 convention) at `source`, in the
    group's own document and in the consolidated copy."""
    import json

    def retarget(attrs: dict) -> None:
        for entry in attrs["_LINKS"]:
            if entry["name"] == "timestamps":
                entry["source"] = source

    node = file / "acquisition" / "position_y" / "zarr.json"
    doc = json.loads(node.read_text())
    retarget(doc["attributes"])
    node.write_text(json.dumps(doc))
    root = file / "zarr.json"
    top = json.loads(root.read_text())
    retarget(top["consolidated_metadata"]["metadata"]["acquisition/position_y"]["attributes"])
    root.write_text(json.dumps(top))


def _cli() -> str:
    """The command-line tool the test command builds (scripts/test exports its path)."""
    default = Path(__file__).resolve().parents[2] / "target" / "release" / "neurochunk"
    return os.environ.get("NEUROCHUNK_BIN", str(default))


def test_external_links_by_url_are_confined_alike_from_python_and_the_cli(s3, tmp_path):
    """One policy, in the library: an NWB file opened by URL follows external links only below
    the prefix holding it (in its bucket), whether Python or the command line opens it."""
    import subprocess

    bucket = s3.create_bucket("ext")
    nc.nwb.demo(tmp_path / "f.nwb.zarr")
    _link_timestamps_to(tmp_path / "f.nwb.zarr", "../../ext.nwb.zarr")
    s3.upload_dir(tmp_path / "f.nwb.zarr", bucket, "lab/a/f.nwb.zarr")
    s3.upload_dir(tmp_path / "f.nwb.zarr", bucket, "ext.nwb.zarr")
    url = f"s3://{bucket}/lab/a/f.nwb.zarr"
    f = nc.nwb.open(url, storage_options=opts(s3))
    with pytest.raises(nc.InvalidInputError) as refused:
        f["/acquisition/position_y/timestamps"]
    message = str(refused.value)
    assert "../../ext.nwb.zarr" in message and f"s3://{bucket}/lab/a" in message, message
    env = {**os.environ, "AWS_ALLOW_HTTP": "true"}
    cli = subprocess.run(
        [_cli(), "--endpoint", s3.endpoint, "--bucket-region", s3.region, "nwb", "get", url,
         "/acquisition/position_y/timestamps", "-o", str(tmp_path / "t.npy")],
        capture_output=True, text=True, env=env,
    )
    assert cli.returncode == 1, cli.stderr
    assert message in cli.stderr, (message, cli.stderr)
    # A link inside the prefix resolves from both.
    _link_timestamps_to(tmp_path / "f.nwb.zarr", "../g.nwb.zarr")
    s3.upload_dir(tmp_path / "f.nwb.zarr", bucket, "lab/a/f.nwb.zarr")
    s3.upload_dir(tmp_path / "f.nwb.zarr", bucket, "lab/a/g.nwb.zarr")
    again = nc.nwb.open(url, storage_options=opts(s3))
    assert again["/acquisition/position_y/timestamps"][...].shape[0] > 0
    ok = subprocess.run(
        [_cli(), "--endpoint", s3.endpoint, "--bucket-region", s3.region, "nwb", "check", url],
        capture_output=True, text=True, env=env,
    )
    assert ok.returncode == 0, ok.stderr


def test_https_and_file_urls(tmp_path_factory):
    from remote_servers import start_rclone_http

    workdir = tmp_path_factory.mktemp("http")
    root = workdir / "root"
    proc = start_rclone_http(workdir, root)
    try:
        data = np.arange(12 * 10, dtype="float32").reshape(12, 10)
        a = nc.create_array(root / "v.zarr", shape=data.shape, dtype="float32", chunks=(5, 4), zarr_format=2)
        a[...] = data
        g = nc.create_group(root / "g.zarr")
        g.create_array("x", shape=(3,), dtype="i2")[...] = [4, 5, 6]
        over_http = nc.open(f"{proc.url}/v.zarr")
        np.testing.assert_array_equal(over_http[...], data)
        np.testing.assert_array_equal(over_http[3:11:2, ::-3], data[3:11:2, ::-3])
        group = nc.open_group(f"{proc.url}/g.zarr")
        assert group["x"][...].tolist() == [4, 5, 6]
        # HTTP stores are read-only, whatever the mode asks for.
        with pytest.raises(nc.Error):
            nc.open(f"{proc.url}/v.zarr", mode="r+")[0, 0] = 1.0
    finally:
        proc.stop()
    # file:// URLs go through the object-store backend of the local file system.
    by_url = nc.open((root / "v.zarr").as_uri())
    np.testing.assert_array_equal(by_url[...], data)
    w = nc.open((root / "v.zarr").as_uri(), mode="r+")
    w[0] = -1
    data[0] = -1
    np.testing.assert_array_equal(nc.open(root / "v.zarr")[...], data)


@pytest.fixture(scope="module")
def h5_sources(tmp_path_factory):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))
    import nwbh5

    return nwbh5.write_sources(tmp_path_factory.mktemp("h5"))


@pytest.mark.parametrize("kind", ["ecephys", "ophys", "icephys", "constructs", "constructs_latest", "second"])
def test_hdf5_files_in_s3_read_in_place_as_h5py_reads_them(s3, h5_sources, kind):
    """An HDF5 file in a bucket, opened by URL: every dataset and attribute h5py reads from the
    local file, neurochunk reads from the object by ranged requests."""
    import boto3

    import nwbh5

    bucket = "h5-in-place"
    client = boto3.client("s3", endpoint_url=s3.endpoint, region_name=s3.region)
    if bucket not in [b["Name"] for b in client.list_buckets().get("Buckets", [])]:
        client.create_bucket(Bucket=bucket)
    src = h5_sources[kind]
    client.put_object(Bucket=bucket, Key=f"dandi/{src.name}", Body=src.read_bytes())
    f = nc.nwb.open(f"s3://{bucket}/dandi/{src.name}", storage_options=opts(s3))
    assert f.storage == "hdf5"
    assert nwbh5.assert_reads_like_h5py(f, src) > 10


@pytest.fixture(scope="module")
def h5_over_http(tmp_path_factory, h5_sources):
    """The HDF5 sources (and pynwb's back-compat files, the DANDI example file) served by
    `rclone serve http`, which answers ranged GETs."""
    import shutil

    from remote_servers import start_rclone_http

    import nwbh5

    workdir = tmp_path_factory.mktemp("h5-http")
    root = workdir / "root"
    root.mkdir()
    for src in [*h5_sources.values(), nwbh5.DANDI, *nwbh5.BACK_COMPAT[-3:]]:
        shutil.copy(src, root / src.name)
    proc = start_rclone_http(workdir, root)
    yield proc.url, {p.name: p for p in root.iterdir()}
    proc.stop()


@pytest.mark.parametrize(
    "name",
    ["ecephys.nwb", "ophys.nwb", "icephys.nwb", "constructs.h5", "constructs_latest.h5", "second.nwb",
     "sub_anm00239123_ses_20170627T093549_ecephys_and_ogen.nwb", "2.2.0_subject_no_age__reference.nwb"],
)
def test_hdf5_files_over_http_read_in_place_as_h5py_reads_them(h5_over_http, name):
    """An HDF5 file behind an HTTP server that honours Range, opened by URL: every dataset and
    attribute h5py reads from the local copy, neurochunk reads by ranged requests."""
    import nwbh5

    url, files = h5_over_http
    f = nc.nwb.open(f"{url}/{name}")
    assert f.storage == "hdf5"
    assert nwbh5.assert_reads_like_h5py(f, files[name]) > 10
