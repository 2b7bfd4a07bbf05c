"""N5 with zarr-python 2's N5Store (where zarr-python 2 is installed, .peers/py311): its
arrays are ours opened with n5_axis_order="reversed", in both directions."""

from __future__ import annotations

import numpy as np
import zarr

import neurochunk as nc


def test_n5store_is_reversed_order(tmp_path):
    data = np.arange(5 * 4 * 3, dtype="int32").reshape(5, 4, 3)
    z = zarr.open_array(zarr.N5Store(str(tmp_path / "z.n5")), mode="w", shape=data.shape, chunks=(2, 3, 2), dtype="int32")
    z[...] = data
    ours = nc.open(tmp_path / "z.n5", n5_axis_order="reversed")
    assert ours.shape == data.shape
    np.testing.assert_array_equal(ours[...], data)
    np.testing.assert_array_equal(ours[1:4, ::-1, 2], data[1:4, ::-1, 2])
    np.testing.assert_array_equal(nc.open(tmp_path / "z.n5")[...], data.transpose())

    a = nc.create_array(tmp_path / "ours.n5", shape=data.shape, dtype="int32", chunks=(2, 3, 2),
                        zarr_format="n5", n5_axis_order="reversed")
    a[...] = data
    theirs = zarr.open_array(zarr.N5Store(str(tmp_path / "ours.n5")), mode="r")
    assert theirs.shape == data.shape
    np.testing.assert_array_equal(theirs[...], data)
