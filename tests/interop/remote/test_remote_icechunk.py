"""Icechunk repositories in a bucket (`s3://bucket/prefix`), on the moto server (icechunk
needs conditional writes, which rclone's S3 server does not offer): written by the `icechunk`
Python package and read by neurochunk at every version, written by neurochunk and read by
icechunk, and neurochunk and icechunk processes committing to one branch at once."""

from __future__ import annotations

import subprocess
import threading

import icechunk
import numpy as np
import pytest
import zarr

from remote_cli import RemoteNeurochunk
from remote_servers import S3Endpoint


@pytest.fixture
def moto(servers) -> S3Endpoint:
    return servers.s3("moto")


@pytest.fixture
def mnc(neurochunk_binary, tmp_path, moto) -> RemoteNeurochunk:
    return RemoteNeurochunk(neurochunk_binary, tmp_path / "_neurochunk", moto)


def storage(s3: S3Endpoint, bucket: str, prefix: str):
    return icechunk.s3_storage(
        bucket=bucket,
        prefix=prefix,
        region=s3.region,
        endpoint_url=s3.endpoint,
        allow_http=True,
        access_key_id=s3.access_key,
        secret_access_key=s3.secret_key,
        force_path_style=True,
    )


def test_a_repository_icechunk_wrote_is_read_at_every_version(mnc, moto, tmp_path):
    bucket = moto.create_bucket("ic")
    repo = icechunk.Repository.create(storage(moto, bucket, "lab/repo"))
    s = repo.writable_session("main")
    root = zarr.open_group(s.store, mode="w")
    a = root.create_array("a", shape=(6, 6), chunks=(3, 3), shards=(6, 6), dtype="int16")
    a[:] = np.arange(36, dtype="int16").reshape(6, 6)
    first = s.commit("first")
    repo.create_tag("v1", snapshot_id=first)
    s = repo.writable_session("main")
    zarr.open_array(s.store, path="a", mode="r+")[0, :] = -1
    s.commit("second")

    url = f"s3://{bucket}/lab/repo"
    np.testing.assert_array_equal(mnc.get(f"{url}/a")[0], [-1] * 6)
    out = tmp_path / "old.npy"
    mnc.run("get", f"{url}/a", "--tag", "v1", "-o", out)
    np.testing.assert_array_equal(np.load(out), np.arange(36).reshape(6, 6))
    log = mnc.run("log", url).stdout.splitlines()
    assert [line.split()[2] for line in log[:2]] == ["second", "first"], log
    # A plain prefix beside it is no repository and reads as before.
    mnc.put(np.ones(3, "uint8"), f"s3://{bucket}/lab/plain.zarr", "zarr3", chunks=[3])
    np.testing.assert_array_equal(mnc.get(f"s3://{bucket}/lab/plain.zarr"), [1, 1, 1])


def test_what_neurochunk_commits_to_a_bucket_icechunk_reads(mnc, moto, tmp_path):
    bucket = moto.create_bucket("nc")
    url = f"s3://{bucket}/repo"
    volume = np.random.default_rng(3).integers(0, 255, (32, 32, 16), dtype="uint8")
    mnc.run("init", url)
    mnc.put(volume, f"{url}/volume", "icechunk", chunks=[16, 16, 16], shards=[32, 32, 16])
    mnc.run("tag", url, "raw")
    mnc.run("nwb", "demo", f"{url}/session.nwb", "--convention", "zarr3", "--message", "add a session")
    repo = icechunk.Repository.open(storage(moto, bucket, "repo"))
    assert [s.message for s in repo.ancestry(branch="main")][0] == "add a session"
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["volume"][:], volume)
    assert head["session.nwb"].attrs["neurodata_type"] == "NWBFile"
    raw = zarr.open_group(repo.readonly_session(tag="raw").store, mode="r")
    assert "session.nwb" not in raw and "volume" in raw
    # Nothing but the repository's own objects is in the bucket: no tree written in place.
    assert all(k.split("/")[1] in {"repo", "snapshots", "manifests", "chunks", "transactions",
                                   "refs", "config.yaml", "overwritten"} for k in moto.keys(bucket)), \
        moto.keys(bucket)


def commit_from_icechunk(moto, bucket, path, value, results, barrier):
    try:
        repo = icechunk.Repository.open(storage(moto, bucket, "repo"))
        s = repo.writable_session("main")
        root = zarr.open_group(s.store, mode="r+")
        arr = root.create_array(path, shape=(4,), chunks=(4,), dtype="int32", overwrite=True)
        arr[:] = value
        barrier.wait()
        s.commit(f"icechunk {path}", rebase_with=icechunk.ConflictDetector())
        results.append(("ok", path))
    except Exception as e:  # noqa: BLE001 - the test reports what happened
        results.append(("error", f"{path}: {e}"))


def test_concurrent_writers_never_lose_a_commit(mnc, moto, tmp_path):
    bucket = moto.create_bucket("cc")
    url = f"s3://{bucket}/repo"
    mnc.run("init", url)
    mnc.put(np.zeros(4, "int32"), f"{url}/base", "icechunk", chunks=[4])
    # Disjoint: three neurochunk processes and two icechunk writers, each a new array, at once.
    npys = []
    for i in range(3):
        npy = tmp_path / f"n{i}.npy"
        np.save(npy, np.full(4, 10 + i, "int32"))
        npys.append(npy)
    argv = lambda i: [str(mnc.binary), "put", str(npys[i]), f"{url}/n{i}", "--format", "zarr3",  # noqa: E731
                      "--chunks", "4", "--message", f"neurochunk n{i}"]
    barrier = threading.Barrier(2)
    results: list = []
    threads = [threading.Thread(target=commit_from_icechunk,
                                args=(moto, bucket, f"p{i}", 20 + i, results, barrier)) for i in range(2)]
    for t in threads:
        t.start()
    procs = [subprocess.Popen(argv(i), env=mnc.env, cwd=mnc.cwd, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    for t in threads:
        t.join(timeout=120)
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert sorted(results) == [("ok", "p0"), ("ok", "p1")], results
    repo = icechunk.Repository.open(storage(moto, bucket, "repo"))
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    for i in range(3):
        np.testing.assert_array_equal(head[f"n{i}"][:], [10 + i] * 4)
    for i in range(2):
        np.testing.assert_array_equal(head[f"p{i}"][:], [20 + i] * 4)
    messages = [s.message for s in repo.ancestry(branch="main")]
    assert len(messages) == 7, messages  # init, base, 3 + 2 writers

    # Overlapping: every writer replaces `base`; each either commits (in some serial order)
    # or reports the conflict naming the array, and the head is the last committed value.
    before = len(messages)
    values = {}
    procs = []
    for i in range(3):
        npy = tmp_path / f"o{i}.npy"
        values[f"neurochunk o{i}"] = 100 + i
        np.save(npy, np.full(4, 100 + i, "int32"))
        procs.append(subprocess.Popen(
            [str(mnc.binary), "put", str(npy), f"{url}/base", "--format", "zarr3", "--chunks", "4",
             "--message", f"neurochunk o{i}"],
            env=mnc.env, cwd=mnc.cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    committed = [i for i, p in enumerate(procs) if p.returncode == 0]
    for i, p in enumerate(procs):
        if p.returncode != 0:
            assert "conflict" in outs[i][1] and "base" in outs[i][1], outs[i][1]
            assert "panicked" not in outs[i][1]
    assert committed, [o[1] for o in outs]
    history = list(repo.ancestry(branch="main"))
    assert len(history) == before + len(committed)
    newest = history[0].message
    assert newest in values
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["base"][:], [values[newest]] * 4)


def test_virtual_chunks_in_a_bucket_both_ways(mnc, moto, tmp_path):
    """Virtual chunks on the S3 server: icechunk's references into an object of the bucket are
    read by neurochunk; an HDF5 NWB file in the bucket imported with `--virtual` into a
    repository in the bucket is read by icechunk through an S3 container, nothing copied."""
    from datetime import datetime, timezone

    import pynwb
    from hdmf.backends.hdf5 import H5DataIO

    bucket = moto.create_bucket("virt")
    prefix = f"s3://{bucket}/data/"
    container = icechunk.VirtualChunkContainer(prefix, icechunk.s3_store(
        region=moto.region, endpoint_url=moto.endpoint, allow_http=True, force_path_style=True))
    credentials = icechunk.containers_credentials({prefix: icechunk.s3_credentials(
        access_key_id=moto.access_key, secret_access_key=moto.secret_key)})

    # icechunk -> neurochunk: four 8 x 8 chunks, bytes of one object of the bucket.
    values = np.arange(16 * 16, dtype="<u2").reshape(16, 16)
    blocks = {(i, j): values[i * 8:(i + 1) * 8, j * 8:(j + 1) * 8].tobytes()
              for i in range(2) for j in range(2)}
    moto.client().put_object(Bucket=bucket, Key="data/raw.bin", Body=b"".join(blocks.values()))
    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(container)
    repo = icechunk.Repository.create(storage(moto, bucket, "data/repo"), config=config,
                                      authorize_virtual_chunk_access=credentials)
    s = repo.writable_session("main")
    zarr.open_group(s.store, mode="w").create_array("v", shape=(16, 16), chunks=(8, 8),
                                                    dtype="uint16", compressors=None)
    for k, (i, j) in enumerate(blocks):
        s.store.set_virtual_ref(f"v/c/{i}/{j}", prefix + "raw.bin", offset=k * 128, length=128)
    s.commit("virtual")
    np.testing.assert_array_equal(mnc.get(f"s3://{bucket}/data/repo/v"), values)

    # neurochunk -> icechunk: an NWB file in the bucket, imported by reference.
    source = tmp_path / "session.nwb"
    nwbfile = pynwb.NWBFile(session_description="bucket", identifier="ic-s3",
                            session_start_time=datetime(2026, 5, 6, tzinfo=timezone.utc))
    trace = np.random.default_rng(9).normal(size=(40_000, 4)).astype("float32")
    nwbfile.add_acquisition(pynwb.TimeSeries(
        name="trace", unit="mV", rate=1000.0,
        data=H5DataIO(trace, chunks=(5_000, 4), compression="gzip")))
    with pynwb.NWBHDF5IO(str(source), "w") as io:
        io.write(nwbfile)
    moto.client().upload_file(str(source), bucket, "data/session.nwb")
    url = f"s3://{bucket}/data/nwbrepo"
    mnc.run("init", url)
    mnc.run("nwb", "import", f"{prefix}session.nwb", f"{url}/session.nwb", "--virtual")
    repo = icechunk.Repository.open(storage(moto, bucket, "data/nwbrepo"),
                                    authorize_virtual_chunk_access=credentials)
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    np.testing.assert_array_equal(head["session.nwb/acquisition/trace/data"][:], trace)
    stored = sum(moto.client().head_object(Bucket=bucket, Key=k)["ContentLength"]
                 for k in moto.keys(bucket, "data/nwbrepo/chunks/"))
    assert stored < trace.nbytes / 8, (stored, trace.nbytes)
    np.testing.assert_array_equal(mnc.get(f"{url}/session.nwb/acquisition/trace/data"), trace)
