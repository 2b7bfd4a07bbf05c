"""Structured arrays: field selection for reads and writes (``a["x"]``, ``a["x", 2:5]``,
``a[["x", "y"]]``, ``fields=``), against NumPy (zarr-python 3 in test_zarr3_interop.py)."""

from __future__ import annotations

import numpy as np
import pytest

import neurochunk as nc

DT = np.dtype([("x", "<f8"), ("id", "<u4"), ("flag", "?"), ("name", "S4")])


@pytest.fixture(params=[2, 3, "sharded"])
def records(request, tmp_path):
    zf = 2 if request.param == 2 else 3
    shards = (8, 6) if request.param == "sharded" else None
    a = nc.create_array(tmp_path / "r", shape=(8, 6), dtype=DT, chunks=(4, 3), shards=shards, zarr_format=zf)
    data = np.zeros((8, 6), dtype=DT)
    data["x"] = np.arange(48).reshape(8, 6) / 4
    data["id"] = np.arange(48).reshape(8, 6) * 7
    data["flag"] = np.arange(48).reshape(8, 6) % 3 == 0
    data["name"] = [[f"n{i % 100}".encode() for i in range(j * 6, j * 6 + 6)] for j in range(8)]
    a[...] = data
    return a, data


def test_field_reads(records):
    a, data = records
    x = a["x"]
    assert x.dtype == np.float64 and x.shape == (8, 6)
    np.testing.assert_array_equal(x, data["x"])
    np.testing.assert_array_equal(a["id", 2:5, ::2], data["id"][2:5, ::2])
    assert a["name", 7, 5] == data["name"][7, 5]
    both = a[["id", "x"], 1]
    assert both.dtype.names == ("id", "x") and both.dtype.itemsize == 12  # packed
    np.testing.assert_array_equal(both["id"], data["id"][1])
    np.testing.assert_array_equal(a.get_basic_selection((slice(None), 0), fields="flag"), data["flag"][:, 0])
    np.testing.assert_array_equal(a.get_orthogonal_selection(([0, 7], [5, 1]), fields=["x"])["x"], data["x"][np.ix_([0, 7], [5, 1])])
    np.testing.assert_array_equal(a["x", [6, 2]], data["x"][[6, 2]])
    with pytest.raises(ValueError, match="no field 'y'"):
        a["y"]


def test_field_writes_leave_other_fields(records):
    a, data = records
    a["x", 2:4] = -1.5
    data["x"][2:4] = -1.5
    a["id", :, 1] = np.arange(8, dtype="u4")
    data["id"][:, 1] = np.arange(8)
    a[["flag", "name"], 5, 5] = (True, b"zz")
    data["flag"][5, 5], data["name"][5, 5] = True, b"zz"
    a.oindex[[0, 7], [0, 5]] = np.zeros((2, 2), DT)
    data[np.ix_([0, 7], [0, 5])] = np.zeros((2, 2), DT)
    a.set_orthogonal_selection(([1, 3], slice(None)), 9.0, fields="x")
    data["x"][[1, 3]] = 9.0
    np.testing.assert_array_equal(a[...], data)
    with pytest.raises(ValueError):
        a["x", 0] = "not a number"
    plain = nc.create_array(a.store_path + "-plain", shape=(3,), dtype="i4")
    with pytest.raises(ValueError, match="no fields"):
        plain["x"]
