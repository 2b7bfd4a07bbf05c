"""neurochunk against S3 servers (moto and rclone) behind the fault proxy (faultproxy.py):
transient errors are retried, persistent ones end in a one-line error naming the URL, a body
cut short is never taken for data, and the requests a command makes are what they should be
(a consolidated open is one GET; listings stay inside the store and use a delimiter)."""

from __future__ import annotations

import numpy as np
import pytest

from ncli import assert_same_array, cli_form
from hierarchy import check_tree
from remote_cases import HIERARCHY_PATHS, INT, peer_hierarchy, peer_write, staged


@pytest.fixture
def faulty(rnc, s3, proxy_for):
    """(proxy, CLI pointed at the proxy in front of the `s3` server)."""
    proxy = proxy_for(s3)
    return proxy, rnc.using(s3.via(proxy))


def test_get_retries_two_503(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    url = staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3"))
    proxy.fail(503, times=2, method="GET")
    assert_same_array(cli.get(url), cli_form(INT))
    assert proxy.count(injected=True) == 2, proxy.summary()


def test_get_retries_500_and_429_on_chunks(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    url = staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3"))
    proxy.fail(500, times=1, method="GET", path_contains="/c/")
    proxy.fail(429, times=1, method="GET", path_contains="/c/", retry_after=0)
    assert_same_array(cli.get(url), cli_form(INT))
    assert sorted(r.status for r in proxy.seen(injected=True)) == [429, 500], proxy.summary()


def test_put_retries_transient_errors(s3, bucket, faulty):
    proxy, cli = faulty
    proxy.fail(503, times=2, method="PUT")
    cli.put(INT, f"s3://{bucket}/a.zarr", "zarr3", chunks=(4, 5))
    assert proxy.count(injected=True) == 2, proxy.summary()
    np.testing.assert_array_equal(s3_read(s3, bucket, "a.zarr"), INT)


def s3_read(s3, bucket, path):
    import zarr

    return zarr.open_array(s3.fsspec_store(bucket, path, read_only=True), mode="r")[...]


def test_persistent_403_is_a_clean_error_naming_the_url(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3"))
    proxy.fail(403)
    url = f"s3://{bucket}/a.zarr"
    err = cli.fails("get", url, "-o", cli.scratch / "x.npy", names=[url])
    assert any(w in err.lower() for w in ("403", "denied", "forbidden")), err
    # Not retried like a transient error; the question whether a prefix of the URL is an
    # Icechunk repository (a HEAD per prefix) is asked once.
    assert proxy.count(where=lambda r: not r.path.endswith("/repo")) <= 3, proxy.summary()
    assert proxy.count(where=lambda r: r.path.endswith("/repo")) <= 2, proxy.summary()


def test_404_on_metadata_is_a_clean_error(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3"))
    proxy.fail(404, path_contains="zarr.json")
    url = f"s3://{bucket}/a.zarr"
    cli.fails("info", url, "--json", names=[url])


def test_persistently_truncated_chunks_are_a_clean_error(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3"))
    proxy.truncate(keep=0.5, path_contains="/c/")
    url = f"s3://{bucket}/a.zarr"
    out = cli.scratch / "t.npy"
    cli.fails("get", url, "-o", out, names=[url])
    assert not out.exists(), "a failed get left an output file"


def test_one_truncated_chunk_never_gives_wrong_data(s3, bucket, faulty, tmp_path):
    """A single short body: retried (exact data) or a clean error; never wrong values."""
    proxy, cli = faulty
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3"))
    proxy.truncate(keep=0.5, times=1, path_contains="/c/1/1")
    out = cli.scratch / "once.npy"
    proc = cli.run("get", f"s3://{bucket}/a.zarr", "-o", out, check=False)
    assert proxy.count(injected=True) == 1, proxy.summary()
    if proc.returncode == 0:
        assert_same_array(np.load(out), cli_form(INT))
    else:
        assert f"s3://{bucket}/a.zarr" in proc.stderr and not out.exists()


def test_slow_server_is_waited_for(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v2"))
    proxy.delay(0.3, method="GET")
    assert_same_array(cli.get(f"s3://{bucket}/a.zarr"), cli_form(INT))


def test_max_requests_bounds_concurrency(rnc, s3, bucket, proxy_for, tmp_path):
    proxy = proxy_for(s3)
    cli = rnc.using(s3.via(proxy), extra_flags=["--max-requests", "2"])
    staged(s3, bucket, "a.zarr", tmp_path, lambda p: peer_write(p, INT, "v3", chunks=(2, 2)))  # 5 x 7 chunks
    proxy.delay(0.05, method="GET")
    assert_same_array(cli.get(f"s3://{bucket}/a.zarr"), cli_form(INT))
    assert proxy.max_in_flight <= 2, proxy.max_in_flight


def test_consolidated_v3_open_is_one_get(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, 3, consolidated=True))
    check_tree(cli.tree(f"s3://{bucket}/h.zarr"), {p: {} for p in HIERARCHY_PATHS})
    # Besides that GET, opening the URL asks, with HEADs sent together, whether a prefix of it
    # is an Icechunk repository (docs/icechunk.md): one round trip, no listing.
    assert proxy.count(method="GET") == 1, proxy.summary()
    assert proxy.seen(method="GET")[0].path == f"/{bucket}/h.zarr/zarr.json"
    assert {r.path for r in proxy.seen(method="HEAD")} <= {f"/{bucket}/repo", f"/{bucket}/h.zarr/repo"}, proxy.summary()
    assert set(proxy.counts()) <= {"GET", "HEAD"}, proxy.summary()


def test_consolidated_v2_open_reads_zmetadata_and_lists_nothing(s3, bucket, faulty, tmp_path):
    proxy, cli = faulty
    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, 2, consolidated=True))
    check_tree(cli.tree(f"s3://{bucket}/h.zarr"), {p: {} for p in HIERARCHY_PATHS})
    # The root's own documents may be probed (zarr.json, .zarray, .zgroup, .zattrs), but no
    # child node is visited and nothing is listed: .zmetadata holds the rest.
    assert proxy.listings() == [], proxy.summary()
    assert proxy.count(method="GET", path_contains=".zmetadata", status=200) == 1, proxy.summary()
    assert not proxy.seen(where=lambda r: r.path.startswith((f"/{bucket}/h.zarr/raw", f"/{bucket}/h.zarr/sub"))), proxy.summary()
    # (Not counting the HEADs that ask whether a prefix is an Icechunk repository.)
    assert proxy.count(where=lambda r: not r.path.endswith("/repo")) <= 5, proxy.summary()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_tree_listings_stay_inside_the_store(s3, bucket, faulty, zarr_format, tmp_path):
    proxy, cli = faulty
    s3.client().put_object(Bucket=bucket, Key="unrelated/junk", Body=b"x")
    staged(s3, bucket, "h.zarr", tmp_path, lambda p: peer_hierarchy(p, zarr_format))
    check_tree(cli.tree(f"s3://{bucket}/h.zarr"), {p: {} for p in HIERARCHY_PATHS})
    listings = proxy.listings()
    assert listings, f"a hierarchy without consolidated metadata was walked without listing:\n{proxy.summary()}"
    for listing in listings:
        assert (listing["prefix"] or "").startswith("h.zarr/"), f"listing outside the store: {listing}\n{proxy.summary()}"
        assert listing["delimiter"] == "/", f"listing without a delimiter: {listing}\n{proxy.summary()}"
