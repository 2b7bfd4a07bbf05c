"""The harness itself, without the neurochunk CLI: the servers answer and behave as the other
tests assume, the peers round-trip through each of them, and the fault proxy injects exactly
what it is told and counts what it sees."""

from __future__ import annotations

import http.client
import io
import os
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

from faultproxy import FaultProxy


def http_get(url: str, headers: dict | None = None, method: str = "GET"):
    """(status, headers, body) of one plain request; HTTP errors are answers, not exceptions."""
    req = urllib.request.Request(url, headers=headers or {}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


SAMPLE = np.arange(8 * 12, dtype="<i4").reshape(8, 12) * 7 - 100

# (zarr_format, chunks, shards)
ZARR_LAYOUTS = {
    "v2": (2, (3, 5), None),
    "v3": (3, (3, 5), None),
    "v3-sharded": (3, (2, 3), (4, 6)),
}


# --------------------------------------------------------------------------------------------
# Servers
# --------------------------------------------------------------------------------------------


def test_servers_listen_on_loopback_in_their_own_process_groups(servers, s3, http_root):
    procs = servers.processes()
    ports = [p.port for p in procs.values()]
    assert len(set(ports)) == len(ports)
    for name, proc in procs.items():
        assert proc.alive(), name
        assert os.getpgid(proc.proc.pid) == proc.proc.pid, f"{name} is not a process-group leader"
    assert s3.endpoint.startswith("http://127.0.0.1:")
    assert http_root.url.startswith("http://127.0.0.1:")


def test_fresh_buckets_are_empty_and_distinct(s3, bucket):
    other = s3.create_bucket()
    assert other != bucket
    assert s3.keys(bucket) == [] and s3.keys(other) == []
    s3.client().put_object(Bucket=bucket, Key="a/b", Body=b"x")
    assert s3.keys(bucket) == ["a/b"] and s3.keys(other) == []


def test_s3_ranged_get(s3, bucket):
    """Both servers return the requested bytes; moto answers 206, rclone answers 200 (with a
    Content-Range header): a client must take the Content-Range, not the status, as the sign
    that it got a range. This pins the rclone behaviour the suite exercises."""
    client = s3.client()
    client.put_object(Bucket=bucket, Key="obj", Body=b"0123456789")
    for rng, want, content_range in (("bytes=2-5", b"2345", "bytes 2-5/10"), ("bytes=-3", b"789", "bytes 7-9/10")):
        resp = client.get_object(Bucket=bucket, Key="obj", Range=rng)
        assert resp["Body"].read() == want
        assert resp["ContentRange"] == content_range
        assert resp["ResponseMetadata"]["HTTPStatusCode"] == {"moto": 206, "rclone": 200}[s3.name]


def test_s3_missing_key_and_listing_with_delimiter(s3, bucket):
    client = s3.client()
    for key in ("x.zarr/zarr.json", "x.zarr/c/0/0", "x.zarr/c/0/1", "y/z"):
        client.put_object(Bucket=bucket, Key=key, Body=b"{}")
    page = client.list_objects_v2(Bucket=bucket, Prefix="x.zarr/", Delimiter="/")
    assert [c["Key"] for c in page["Contents"]] == ["x.zarr/zarr.json"]
    assert [p["Prefix"] for p in page["CommonPrefixes"]] == ["x.zarr/c/"]
    with pytest.raises(client.exceptions.NoSuchKey):
        client.get_object(Bucket=bucket, Key="x.zarr/nope")


def test_rclone_s3_checks_signatures(servers):
    """rclone refuses a wrong secret (moto accepts anything): a test against rclone proves the
    client signed its requests with the keys it was given."""
    rc = servers.s3("rclone")
    bad = type(rc)(rc.name, rc.endpoint, rc.access_key, "wrong-secret")
    from botocore.exceptions import ClientError

    with pytest.raises(ClientError) as info:
        bad.client().list_buckets()
    assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403


def test_http_server_honours_range_and_serves_new_files(http_root):
    folder, url = http_root.fresh_dir()
    (folder / "f.bin").write_bytes(b"0123456789abcdef")
    status, headers, body = http_get(f"{url}/f.bin", {"Range": "bytes=2-5"})
    assert (status, body, headers["Content-Range"]) == (206, b"2345", "bytes 2-5/16")
    status, headers, body = http_get(f"{url}/f.bin", {"Range": "bytes=-3"})
    assert (status, body, headers["Content-Range"]) == (206, b"def", "bytes 13-15/16")
    status, _, _ = http_get(f"{url}/f.bin", {"Range": "bytes=100-"})
    assert status == 416
    assert http_get(f"{url}/f.bin")[0::2] == (200, b"0123456789abcdef")
    assert http_get(f"{url}/missing")[0] == 404
    # A file changed after it was served once is served anew (no directory cache).
    (folder / "f.bin").write_bytes(b"changed")
    assert http_get(f"{url}/f.bin")[2] == b"changed"


# --------------------------------------------------------------------------------------------
# Peers through the servers
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("layout", "api"), [("v2", "fsspec"), ("v3", "fsspec"), ("v3-sharded", "fsspec"), ("v3-sharded", "obstore")]
)
def test_zarr_python_round_trip(s3, bucket, layout, api):
    import zarr

    fmt, chunks, shards = ZARR_LAYOUTS[layout]
    store_of = s3.fsspec_store if api == "fsspec" else s3.obstore_store
    kw = {"shards": shards} if shards else {}
    a = zarr.create_array(store_of(bucket, "a.zarr"), shape=SAMPLE.shape, chunks=chunks, dtype=SAMPLE.dtype, zarr_format=fmt, **kw)
    a[:] = SAMPLE
    back = zarr.open_array(store_of(bucket, "a.zarr", read_only=True), mode="r")
    np.testing.assert_array_equal(back[:], SAMPLE)
    np.testing.assert_array_equal(back[1:7, 2:11], SAMPLE[1:7, 2:11])
    keys = s3.keys(bucket, "a.zarr/")
    assert ("a.zarr/.zarray" if fmt == 2 else "a.zarr/zarr.json") in keys


@pytest.mark.parametrize("driver", ["zarr", "zarr3", "n5"])
def test_tensorstore_round_trip(s3, bucket, driver):
    import tensorstore as ts

    spec = {"driver": driver, "kvstore": s3.tensorstore_kvstore(bucket, f"{driver}.arr")}
    with s3.tensorstore_env():
        t = ts.open(spec, create=True, dtype="int32", shape=SAMPLE.shape).result()
        t[...] = SAMPLE
        back = ts.open(spec).result()
        np.testing.assert_array_equal(back.read().result(), SAMPLE)
        np.testing.assert_array_equal(back[2:5, 3:9].read().result(), SAMPLE[2:5, 3:9])


def test_pyarrow_s3_filesystem_round_trip(s3, bucket):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({"id": pa.array([1, 2, 3], pa.uint64()), "x": [0.5, 1.5, 2.5]})
    fs = s3.arrow_fs()
    pq.write_table(table, f"{bucket}/t.parquet", filesystem=fs)
    assert pq.read_table(f"{bucket}/t.parquet", filesystem=fs).equals(table)
    # and an object put by boto3
    buf = io.BytesIO()
    pq.write_table(table, buf)
    s3.client().put_object(Bucket=bucket, Key="u.parquet", Body=buf.getvalue())
    assert pq.read_table(f"{bucket}/u.parquet", filesystem=fs).equals(table)


def test_zarr_python_reads_a_store_served_over_http(http_root):
    import zarr

    folder, url = http_root.fresh_dir()
    a = zarr.create_array(str(folder / "a.zarr"), shape=SAMPLE.shape, chunks=(3, 5), dtype=SAMPLE.dtype, zarr_format=3)
    a[:] = SAMPLE
    store = zarr.storage.FsspecStore.from_url(f"{url}/a.zarr", read_only=True)
    np.testing.assert_array_equal(zarr.open_array(store, mode="r")[:], SAMPLE)


def test_upload_and_download_dir(s3, bucket, tmp_path):
    src = tmp_path / "src"
    (src / "d" / "e").mkdir(parents=True)
    (src / "a.txt").write_bytes(b"a")
    (src / "d" / "e" / "b.bin").write_bytes(bytes(range(256)))
    assert s3.upload_dir(src, bucket, "p/q") == ["p/q/a.txt", "p/q/d/e/b.bin"]
    out = s3.download_dir(bucket, "p/q", tmp_path / "out")
    assert (out / "d" / "e" / "b.bin").read_bytes() == bytes(range(256))
    assert (out / "a.txt").read_bytes() == b"a"


# --------------------------------------------------------------------------------------------
# The fault proxy (its own behaviour does not depend on the server behind it: rclone, which
# checks signatures, except where both servers matter)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def rclone_s3(servers):
    return servers.s3("rclone")


@pytest.fixture
def rbucket(rclone_s3):
    return rclone_s3.create_bucket()


def test_proxy_passes_signed_requests_through(s3, bucket, proxy_for):
    """Through the proxy, boto3's SigV4 signatures stay valid (Host and x-amz-* untouched):
    rclone checks them."""
    proxy = proxy_for(s3)
    client = s3.via(proxy).client()
    client.put_object(Bucket=bucket, Key="k/one", Body=b"payload-1")
    assert client.get_object(Bucket=bucket, Key="k/one")["Body"].read() == b"payload-1"
    assert client.get_object(Bucket=bucket, Key="k/one", Range="bytes=1-3")["Body"].read() == b"ayl"
    assert client.head_object(Bucket=bucket, Key="k/one")["ContentLength"] == 9
    client.list_objects_v2(Bucket=bucket, Prefix="k/", Delimiter="/")
    assert proxy.counts() == {"PUT": 1, "GET": 2, "GET+range": 1, "HEAD": 1}, proxy.summary()
    assert proxy.count(method="GET", ranged=True) == 1
    assert proxy.listings() == [{"bucket": bucket, "prefix": "k/", "delimiter": "/"}]
    assert proxy.count(injected=True) == 0


@pytest.mark.parametrize("status", [500, 503, 429])
def test_proxy_injects_n_errors_then_passes_through(rclone_s3, rbucket, proxy_for, status):
    rclone_s3.client().put_object(Bucket=rbucket, Key="obj", Body=b"data")
    proxy = proxy_for(rclone_s3)
    proxy.fail(status, times=2, method="GET", path_contains="/obj")
    client = rclone_s3.via(proxy).client(retries=1)  # one attempt: every injected error is seen
    from botocore.exceptions import ClientError

    for _ in range(2):
        with pytest.raises(ClientError) as info:
            client.get_object(Bucket=rbucket, Key="obj")
        assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
    assert client.get_object(Bucket=rbucket, Key="obj")["Body"].read() == b"data"
    assert [r.status for r in proxy.seen()] == [status, status, 200]
    assert proxy.count(injected=True) == 2


@pytest.mark.parametrize("status", [403, 404])
def test_proxy_persistent_error(rclone_s3, rbucket, proxy_for, status):
    rclone_s3.client().put_object(Bucket=rbucket, Key="obj", Body=b"data")
    rclone_s3.client().put_object(Bucket=rbucket, Key="other", Body=b"fine")
    proxy = proxy_for(rclone_s3)
    proxy.fail(status, path=f"/{rbucket}/obj")
    client = rclone_s3.via(proxy).client(retries=2)
    from botocore.exceptions import ClientError

    for _ in range(3):
        with pytest.raises(ClientError) as info:
            client.get_object(Bucket=rbucket, Key="obj")
        assert info.value.response["Error"]["Code"] == {403: "AccessDenied", 404: "NoSuchKey"}[status]
    assert client.get_object(Bucket=rbucket, Key="other")["Body"].read() == b"fine"
    assert proxy.count(status=status) == 3


def test_proxy_delay(http_root, proxy_for):
    folder, _ = http_root.fresh_dir()
    (folder / "f").write_bytes(b"x" * 10)
    proxy = proxy_for(http_root)
    proxy.delay(0.4, times=1)
    t0 = time.monotonic()
    assert http_get(f"{proxy.url}/{folder.name}/f")[0::2] == (200, b"x" * 10)
    assert time.monotonic() - t0 >= 0.4
    t0 = time.monotonic()
    http_get(f"{proxy.url}/{folder.name}/f")
    assert time.monotonic() - t0 < 0.4
    assert [r.injected for r in proxy.seen()] == ["delay", None]


@pytest.mark.parametrize("keep", [0.5, 3])
def test_proxy_truncates_bodies(http_root, proxy_for, keep):
    folder, _ = http_root.fresh_dir()
    body = bytes(range(200))
    (folder / "f").write_bytes(body)
    proxy = proxy_for(http_root)
    proxy.truncate(keep=keep, times=1)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("GET", f"/{folder.name}/f")
    resp = conn.getresponse()
    assert resp.status == 200 and resp.getheader("Content-Length") == "200"
    with pytest.raises(http.client.IncompleteRead) as info:
        resp.read()
    assert info.value.partial == body[: 100 if keep == 0.5 else 3]
    conn.close()
    # Ranged requests are truncated too, and the rule is used up: the next answer is whole.
    proxy.truncate(keep=1, times=1, ranged=True)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("GET", f"/{folder.name}/f", headers={"Range": "bytes=10-19"})
    resp = conn.getresponse()
    assert resp.status == 206 and resp.getheader("Content-Length") == "10"
    with pytest.raises(http.client.IncompleteRead):
        resp.read()
    conn.close()
    assert http_get(f"{proxy.url}/{folder.name}/f")[2] == body
    assert [r.injected for r in proxy.seen()] == ["truncate", "truncate", None]


def test_proxy_truncation_is_seen_by_boto3(rclone_s3, rbucket, proxy_for):
    rclone_s3.client().put_object(Bucket=rbucket, Key="obj", Body=b"z" * 1000)
    proxy = proxy_for(rclone_s3)
    proxy.truncate(keep=0.3, method="GET")
    from botocore.exceptions import IncompleteReadError, ReadTimeoutError, ResponseStreamingError

    with pytest.raises((IncompleteReadError, ResponseStreamingError, ReadTimeoutError)):
        rclone_s3.via(proxy).client(retries=1).get_object(Bucket=rbucket, Key="obj")["Body"].read()


def test_proxy_without_upstream_answers_502(proxy_for):
    from remote_servers import free_port

    proxy = proxy_for(f"127.0.0.1:{free_port()}")
    assert http_get(f"{proxy.url}/x")[0] == 502
    assert proxy.seen()[0].status == 502


def test_proxy_standalone_context_manager(http_root):
    folder, _ = http_root.fresh_dir()
    (folder / "f").write_bytes(b"abc")
    with FaultProxy(http_root.url) as proxy:
        proxy.fail(503, times=1)
        assert http_get(f"{proxy.url}/{folder.name}/f")[0] == 503
        assert http_get(f"{proxy.url}/{folder.name}/f")[0::2] == (200, b"abc")
        assert http_get(f"{proxy.url}/{folder.name}/f", method="HEAD")[0] == 200
        assert proxy.counts() == {"GET": 2, "HEAD": 1}


def test_proxy_with_object_store_client(s3, bucket, proxy_for):
    """obstore (Rust `object_store`, the kind of client a Rust CLI uses) writes and reads a
    sharded array through the proxy, retrying injected 503s on PUT and GET by itself. On rclone
    only whole shards are read (see test_object_store_refuses_rclone_ranged_answers)."""
    import zarr

    proxy = proxy_for(s3)
    via = s3.via(proxy)
    proxy.fail(503, times=2, method="PUT")
    a = zarr.create_array(via.obstore_store(bucket, "o.zarr"), shape=SAMPLE.shape, chunks=(2, 3), shards=(4, 6), dtype=SAMPLE.dtype)
    a[:] = SAMPLE
    proxy.fail(503, times=2, method="GET")
    back = zarr.open_array(via.obstore_store(bucket, "o.zarr", read_only=True), mode="r")
    if s3.name == "moto":
        np.testing.assert_array_equal(back[0:2, 0:3], SAMPLE[0:2, 0:3])  # one inner chunk: ranged GETs
        assert proxy.count(method="GET", ranged=True) >= 1, proxy.summary()
    else:
        np.testing.assert_array_equal(back[:], SAMPLE)  # whole shards: no Range
    assert proxy.count(injected=True) == 4, proxy.summary()


def test_object_store_refuses_rclone_ranged_answers(servers):
    """Pins a server quirk: `rclone serve s3` answers a ranged GET with 200 + Content-Range,
    and Rust's object_store (via obstore 0.12) rejects that ("Received non-partial response
    when range requested"), for bounded and suffix ranges alike; a whole GET works. A Rust
    client built on object_store cannot read parts of objects from rclone without handling
    this. If this test fails, rclone or object_store changed: update the README section."""
    import obstore

    rc = servers.s3("rclone")
    bucket = rc.create_bucket()
    rc.client().put_object(Bucket=bucket, Key="obj", Body=b"0123456789")
    store = rc.obstore_store(bucket, "").store
    assert bytes(obstore.get(store, "obj").bytes()) == b"0123456789"
    for options in ({"range": (2, 5)}, {"range": {"suffix": 3}}):
        with pytest.raises(Exception, match="non-partial response"):
            obstore.get(store, "obj", options=options).bytes()
