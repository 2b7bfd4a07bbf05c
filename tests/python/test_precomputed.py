"""Neuroglancer precomputed layers through `nc.open`: a layer is a group whose members are its
scales, a scale directory opens as an array with the axes x, y, z, channel, and both read what
tensorstore wrote (the fixtures of crates/array/tests/data/precomputed)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

import neurochunk as nc

DATA = Path(__file__).resolve().parents[2] / "crates" / "array" / "tests" / "data" / "precomputed"


def expected(layer: str, key: str) -> np.ndarray:
    return np.load(DATA / "expected" / f"{layer}__{key}.npy")


def test_a_layer_is_a_group_of_scales():
    layer = nc.open(DATA / "ts_raw_u8")
    assert isinstance(layer, nc.Group)
    assert layer.zarr_format == "precomputed"
    assert layer.attrs["scales"] == ["4_4_40", "8_8_40"]
    assert sorted(layer) == ["4_4_40", "8_8_40"]
    scale = layer["8_8_40"]
    assert scale.shape == (10, 9, 7, 1)
    assert scale.dimension_names == ("x", "y", "z", "channel")
    assert scale.attrs["precomputed"]["resolution"] == [8.0, 8.0, 40.0]
    np.testing.assert_array_equal(scale[...], expected("ts_raw_u8", "8_8_40"))


@pytest.mark.parametrize(
    "layer, key",
    [("ts_shard_murmur_gzip", "s0"), ("ts_cseg_u64_442", "s0"), ("cv_raw_gzip", "4_4_40"), ("ts_png_u16_c3", "s0")],
)
def test_a_scale_directory_opens_as_an_array(layer, key):
    scale = nc.open(DATA / layer / key)
    assert isinstance(scale, nc.Array)
    assert scale.zarr_format == "precomputed"
    want = expected(layer, key)
    np.testing.assert_array_equal(scale[...], want)
    np.testing.assert_array_equal(scale[1:6, ::2, 2], want[1:6, ::2, 2])
    assert scale.metadata["scales"][0]["key"] == key
    again = pickle.loads(pickle.dumps(scale))
    np.testing.assert_array_equal(again[2:4], want[2:4])
