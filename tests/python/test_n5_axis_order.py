"""N5 axis order: "listed" (default; the N5 Java API's and tensorstore's view) and
"reversed" (zarr-python 2's N5Store and z5), checked against tensorstore in both directions
(zarr-python 2's N5Store in test_n5_zarr2.py)."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest
import tensorstore as ts

import neurochunk as nc


def ts_open(path, **kw):
    return ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}, **kw).result()


DATA = np.arange(6 * 4 * 3, dtype="uint16").reshape(6, 4, 3) * 3


def test_listed_is_tensorstores_view(tmp_path):
    a = nc.create_array(tmp_path / "l.n5", shape=DATA.shape, dtype="uint16", chunks=(4, 3, 2), zarr_format="n5")
    a[...] = DATA
    assert a.n5_axis_order == "listed"
    assert json.loads((tmp_path / "l.n5" / "attributes.json").read_text())["dimensions"] == [6, 4, 3]
    t = ts_open(tmp_path / "l.n5")
    assert tuple(t.domain.shape) == DATA.shape
    np.testing.assert_array_equal(t.read().result(), DATA)
    # And what tensorstore writes reads the same through us.
    w = ts_open(tmp_path / "t.n5", create=True, dtype=ts.uint16, shape=DATA.shape,
                chunk_layout=ts.ChunkLayout(read_chunk_shape=[5, 2, 3]))
    w.write(DATA).result()
    np.testing.assert_array_equal(nc.open(tmp_path / "t.n5")[...], DATA)
    np.testing.assert_array_equal(nc.open(tmp_path / "t.n5")[1:5, ::2, 2], DATA[1:5, ::2, 2])


def test_reversed_presents_the_dimensions_backwards(tmp_path):
    a = nc.create_array(tmp_path / "r.n5", shape=DATA.shape, dtype="uint16", chunks=(4, 3, 2),
                        zarr_format="n5", n5_axis_order="reversed")
    a[...] = DATA
    assert a.n5_axis_order == "reversed"
    # Written as zarr-python 2 writes: the dimensions reversed.
    assert json.loads((tmp_path / "r.n5" / "attributes.json").read_text())["dimensions"] == [3, 4, 6]
    np.testing.assert_array_equal(ts_open(tmp_path / "r.n5").read().result(), DATA.transpose())
    # Opened either way: the same elements, transposed.
    listed = nc.open(tmp_path / "r.n5")
    assert listed.shape == (3, 4, 6)
    np.testing.assert_array_equal(listed[...], DATA.transpose())
    back = nc.open(tmp_path / "r.n5", mode="r+", n5_axis_order="reversed")
    assert back.shape == DATA.shape and back.n5_axis_order == "reversed"
    np.testing.assert_array_equal(back[...], DATA)
    back[0, :, 1] = 7
    want = DATA.copy()
    want[0, :, 1] = 7
    np.testing.assert_array_equal(ts_open(tmp_path / "r.n5").read().result(), want.transpose())
    # Pickled (a dask task), it reopens in the same order.
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(back))[...], want)
    # Groups pass their order on to their members.
    g = nc.create_group(tmp_path / "g.n5", zarr_format="n5", n5_axis_order="reversed")
    g.create_array("x", shape=(2, 5), dtype="int8")[...] = np.arange(10, dtype="int8").reshape(2, 5)
    assert json.loads((tmp_path / "g.n5" / "x" / "attributes.json").read_text())["dimensions"] == [5, 2]
    rg = nc.open_group(tmp_path / "g.n5", n5_axis_order="reversed")
    assert rg["x"].shape == (2, 5) and rg.members()[0][1].shape == (2, 5)
    assert nc.open_group(tmp_path / "g.n5")["x"].shape == (5, 2)
    # Conversion reads and writes N5 in the order asked for.
    nc.convert(tmp_path / "r.n5", tmp_path / "r.zarr", format=3, n5_axis_order="reversed")
    np.testing.assert_array_equal(nc.open(tmp_path / "r.zarr")[...], want)
    with pytest.raises(ValueError, match="n5_axis_order"):
        nc.open(tmp_path / "r.n5", n5_axis_order="sideways")
