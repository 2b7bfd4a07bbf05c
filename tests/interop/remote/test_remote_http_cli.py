"""neurochunk reading stores served over plain HTTP by `rclone serve http` (Range honoured: 206 +
Content-Range), written locally by zarr-python 3 or by `neurochunk put` itself, then read via
`neurochunk get http://...`, `info`, `tree` of a consolidated hierarchy (no listing needed) and
of one without consolidated metadata (listed through rclone's HTML directory indexes, as it
refuses WebDAV PROPFIND), NWB files and Hive tables. No S3 settings reach the CLI here (`hnc`)."""

from __future__ import annotations

import numpy as np
import pytest

from hierarchy import check_info_common, check_tree
from ncli import Neurochunk, assert_same_array, cli_form, select
from remote_cases import FLOAT, HIERARCHY_PATHS, INT, PEER_LAYOUTS, PUT_LAYOUTS, REGION, peer_hierarchy, peer_write


@pytest.mark.parametrize("layout", list(PEER_LAYOUTS))
def test_get_peer_written_array_over_http(hnc, http_root, layout):
    folder, url = http_root.fresh_dir()
    peer_write(str(folder / "a.zarr"), INT, layout, attributes={"unit": "mV"})
    assert_same_array(hnc.get(f"{url}/a.zarr"), cli_form(INT), f"get {layout}")
    assert_same_array(hnc.get(f"{url}/a.zarr", region=REGION), cli_form(select(INT, REGION)), f"region {layout}")
    check_info_common(hnc.info(f"{url}/a.zarr"), "array", PEER_LAYOUTS[layout][0], {"unit": "mV"})


@pytest.mark.parametrize("layout", ["n5", "zarr3-sharded"])
def test_get_neurochunk_written_array_over_http(hnc, neurochunk_binary, http_root, layout, tmp_path):
    folder, url = http_root.fresh_dir()
    fmt, options, _, _ = PUT_LAYOUTS[layout]
    # Written to the served folder as a local path (works without URL support), read over HTTP.
    Neurochunk(neurochunk_binary, tmp_path / "local").put(INT, folder / "a.arr", fmt, **options)
    assert_same_array(hnc.get(f"{url}/a.arr"), cli_form(INT))


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_tree_of_consolidated_hierarchy_over_http(hnc, http_root, zarr_format):
    folder, url = http_root.fresh_dir()
    peer_hierarchy(str(folder / "h.zarr"), zarr_format, consolidated=True)
    check_tree(hnc.tree(f"{url}/h.zarr"), {p: {} for p in HIERARCHY_PATHS})
    assert_same_array(hnc.get(f"{url}/h.zarr/sub/x"), cli_form(np.linspace(0, 1, 6)))


def test_missing_store_over_http_is_a_clean_error(hnc, http_root):
    _, url = http_root.fresh_dir()
    hnc.fails("get", f"{url}/nope.zarr", "-o", hnc.scratch / "x.npy", names=[f"{url}/nope.zarr"])


def test_http_through_proxy_survives_503_and_counts_ranges(hnc, http_root, proxy_for):
    folder, _ = http_root.fresh_dir()
    peer_write(str(folder / "s.zarr"), INT, "v3-sharded")
    proxy = proxy_for(http_root)
    proxy.fail(503, times=2, method="GET")
    url = f"{proxy.url}/{folder.name}/s.zarr"
    assert_same_array(hnc.get(url, region="0:2,0:3"), cli_form(INT[0:2, 0:3]))
    assert proxy.count(injected=True) == 2, proxy.summary()
    # One inner chunk of one shard: the shard index and the chunk are read by range, and no
    # other shard is touched.
    assert proxy.count(method="GET", ranged=True) >= 1, proxy.summary()
    assert all("/c/0/0" in r.path or "zarr.json" in r.path for r in proxy.seen(method="GET")), proxy.summary()


def test_http_truncated_body_is_a_clean_error(hnc, http_root, proxy_for):
    folder, _ = http_root.fresh_dir()
    peer_write(str(folder / "a.zarr"), FLOAT, "v3", chunks=(5, 6, 4))
    proxy = proxy_for(http_root)
    proxy.truncate(keep=0.5, path_contains="/c/")
    url = f"{proxy.url}/{folder.name}/a.zarr"
    out = hnc.scratch / "t.npy"
    hnc.fails("get", url, "-o", out, names=[url])
    assert not out.exists(), "a failed get left an output file"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_tree_without_consolidated_metadata_reads_the_html_indexes(hnc, http_root, proxy_for, zarr_format):
    """rclone serve http refuses WebDAV PROPFIND (405) but serves an HTML index of each
    directory: the walk lists through those, trying PROPFIND only once."""
    folder, _ = http_root.fresh_dir()
    peer_hierarchy(str(folder / "h.zarr"), zarr_format, consolidated=False)
    proxy = proxy_for(http_root)
    url = f"{proxy.url}/{folder.name}/h.zarr"
    check_tree(hnc.tree(url), {p: {} for p in HIERARCHY_PATHS})
    assert proxy.count(method="PROPFIND") == 1, proxy.summary()
    pages = proxy.seen(method="GET", where=lambda r: r.path.endswith("/"))
    assert pages and all(r.path.startswith(f"/{folder.name}/h.zarr/") for r in pages), proxy.summary()


def test_nwb_and_hive_tables_over_http_listings(hnc, http_root, tmp_path):
    """Listing-only reads over plain HTTP: an NWB file without consolidated metadata
    (`--no-consolidated`) and a Hive-partitioned table directory."""
    import json
    import shutil

    import nwbfixtures
    import nwbwalk
    import pyarrow as pa
    import pyarrow.parquet as pq
    from nwbcli import assert_inspect_equal
    from table.na_tables import skeleton

    folder, url = http_root.fresh_dir()
    local = nwbfixtures.write_ecephys(tmp_path / "e.nwb.zarr")
    shutil.copytree(local, folder / "e.nwb.zarr")
    proc = hnc.run("nwb", "inspect", "--json", "--no-consolidated", f"{url}/e.nwb.zarr")
    assert_inspect_equal(json.loads(proc.stdout), nwbwalk.expected_inspect(local))
    t = skeleton(ids=[1, 2, 3, 4], frags=[7, 7, 9, 9], parents=[None, 1, None, 3])
    pq.write_to_dataset(t, str(folder / "hive.skeletons"), partition_cols=["fragment_id"])
    info = json.loads(hnc.run("table", "info", "--json", f"{url}/hive.skeletons").stdout)
    assert info["rows"] == 4, info
