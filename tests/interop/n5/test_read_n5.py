"""N5 written by the peers is read by `neurochunk get`, for every data type × compression.

tensorstore datasets are compared in the listed axis order (neurochunk's default), zarr-python 2
N5Store arrays with `--n5-axis-order reversed`, which is the order zarr-python presents; reading
a zarr-python array in the default order gives the transpose. Both peers store edge blocks
full-size (padded); the sparse variants leave most blocks unwritten (read as zero).
"""

from __future__ import annotations

import numpy as np
import pytest

import n5io
import samples
from ncli import assert_same_array, cli_form, load_json, select
from samples import CHUNKS_3D, SHAPE_3D

TS_CASES = [(d, c) for d in n5io.DTYPES for c in n5io.TS_COMPRESSIONS]
ZP2_CASES = [(d, c) for d in n5io.DTYPES for c in n5io.ZP2_COMPRESSORS]


@pytest.mark.parametrize("dtype,compression", TS_CASES, ids=[f"{d}-{c}" for d, c in TS_CASES])
def test_read_tensorstore_n5(nc, tmp_path, dtype, compression):
    data = samples.sample(dtype, SHAPE_3D, seed=3)
    path = tmp_path / "ts.n5" / "vol"
    expected = n5io.ts_write(path, data, n5io.TS_COMPRESSIONS[compression], CHUNKS_3D)
    got = n5io.get(nc, path)
    assert_same_array(got, cli_form(expected), f"tensorstore {dtype} {compression}")
    # A region across edge blocks, and the whole container as a hierarchy.
    region = "1:6,::2,-1"
    assert_same_array(n5io.get(nc, path, region=region), select(cli_form(expected), region), "region")
    tree = nc.tree(tmp_path / "ts.n5")
    nodes = {n["path"]: n for n in tree["nodes"]}
    assert nodes["/"]["node_type"] == "group" and nodes["/"]["format"] == "n5"
    assert nodes["/vol"]["shape"] == list(SHAPE_3D)
    assert nodes["/vol"]["chunks"] == list(CHUNKS_3D)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("dtype,compression", ZP2_CASES, ids=[f"{d}-{c}" for d, c in ZP2_CASES])
def test_read_zarr_python2_n5(nc, tmp_path, dtype, compression, sparse):
    data = samples.sample(dtype, SHAPE_3D, seed=5)
    path = tmp_path / "zp2.n5"
    expected = n5io.zp2_write(path, data, n5io.ZP2_COMPRESSORS[compression](), CHUNKS_3D, sparse=sparse)
    if sparse:
        assert not np.all(expected == data)
    assert_same_array(
        n5io.get(nc, path, "reversed"), cli_form(expected), f"zarr-python 2 {dtype} {compression}"
    )
    # The listed view of the same dataset is the transpose.
    assert_same_array(n5io.get(nc, path), cli_form(expected.T), "listed view")
    doc = load_json(path / "attributes.json")
    assert doc["dimensions"] == list(reversed(SHAPE_3D))


def test_info_reports_n5_metadata(nc, tmp_path):
    data = samples.sample("uint16", SHAPE_3D)
    path = tmp_path / "zp2.n5"
    n5io.zp2_write(path, data, n5io.ZP2_COMPRESSORS["zstd"](), CHUNKS_3D)
    info = nc.info(path)
    assert info["format"] == "n5" and info["zarr_format"] is None
    assert info["shape"] == list(reversed(SHAPE_3D))
    assert info["compression"]["type"] == "zstd"
    assert info["metadata"]["dataType"] == "uint16"
    info = nc.run("info", path, "--json", "--n5-axis-order", "reversed")
    assert '"n5_axis_order": "reversed"' in info.stdout
