"""`neurochunk pyramid` level by level against the NumPy reference (pyramid_ref.py).

Odd shapes, so that every axis ends in a partial block; every method; integer and float dtypes;
explicit, default and auto-isotropic factors; scales and translations of every level.
"""

from __future__ import annotations

import numpy as np
import pytest

import pyramid_ref as ref
from ncli import assert_same_array
from omeio import build_pyramid, ome_info

SHAPE = (37, 45, 51)


def _u16() -> np.ndarray:
    return np.random.default_rng(16).integers(0, 65535, SHAPE, dtype=np.uint16, endpoint=True)


def _labels() -> np.ndarray:
    # Few labels, so that ties between the most frequent values are common.
    return np.random.default_rng(8).integers(0, 4, SHAPE, dtype=np.uint8)


def _f32() -> np.ndarray:
    return (np.random.default_rng(32).standard_normal(SHAPE) * 1000).astype(np.float32)


def _i16() -> np.ndarray:
    # Small magnitudes around zero: many blocks whose mean is exactly x.5 on both sides of 0.
    return np.random.default_rng(17).integers(-3, 4, SHAPE, dtype=np.int16)


DATA = {"uint16": _u16, "labels": _labels, "float32": _f32, "int16": _i16}

CASES = [
    ("uint16", "mean"),
    ("uint16", "min"),
    ("uint16", "max"),
    ("uint16", "stride"),
    ("uint16", "mode"),
    ("labels", "mode"),
    ("labels", "mean"),
    ("float32", "mean"),
    ("float32", "max"),
    ("int16", "mean"),
    ("int16", "mode"),
]


def _check_levels(nc, dst, expected: list[ref.RefLevel], level_paths: list[str]) -> None:
    info = ome_info(nc, dst)
    levels = info["levels"]
    assert [lv["path"] for lv in levels] == level_paths
    for k, (lv, want) in enumerate(zip(levels, expected)):
        assert lv["shape"] == list(want.data.shape), f"level {k} shape"
        assert lv["scale"] == pytest.approx(want.scale), f"level {k} scale"
        got_t = lv["translation"] if lv["translation"] is not None else [0.0] * want.data.ndim
        assert got_t == pytest.approx(want.translation), f"level {k} translation"
        assert_same_array(nc.get(dst / lv["path"]), want.data, f"level {k}")


@pytest.mark.parametrize("kind,method", CASES, ids=[f"{k}-{m}" for k, m in CASES])
def test_methods_match_reference(nc, tmp_path, kind, method):
    data = DATA[kind]()
    expected = ref.pyramid(data, 4, method, [2, 2, 2])
    if method == "mean" and data.dtype.kind in "iu":
        # The data must exercise the rounding rule: some level-1 block means are exactly x.5.
        values, valid, _ = ref._blocks(data, [2, 2, 2])
        means = np.where(valid, values.astype(np.float64), 0).sum(axis=1) / valid.sum(axis=1)
        assert np.any(np.abs(means - np.floor(means) - 0.5) < 1e-12)
    dst = tmp_path / "pyr.ome.zarr"
    build_pyramid(nc, data, dst, "zarr3", levels=4, method=method, factors=[2, 2, 2], chunks=[16, 16, 16])
    _check_levels(nc, dst, expected, ["0", "1", "2", "3"])


def test_anisotropic_explicit_factors_zarr2(nc, tmp_path):
    data = _u16()
    expected = ref.pyramid(data, 3, "mean", [1, 3, 2], scale=[2.0, 0.5, 0.25], translation=[10.0, -1.0, 0.5])
    dst = tmp_path / "aniso.ome.zarr"
    build_pyramid(
        nc, data, dst, "zarr2", levels=3, method="mean", factors=[1, 3, 2], chunks=[8, 16, 16],
        scale=[2.0, 0.5, 0.25], translation=[10.0, -1.0, 0.5],
    )
    _check_levels(nc, dst, expected, ["0", "1", "2"])


def test_auto_isotropic_factors(nc, tmp_path):
    # z is 4x coarser than y/x: y, x are halved twice before z joins (4 -> 2 -> 1 ratio).
    data = _u16()
    scale = [4.0, 1.0, 1.0]
    expected = ref.pyramid(data, 5, "mean", "auto-isotropic", scale=scale)
    assert [lv.cumulative for lv in expected] == [[1, 1, 1], [1, 2, 2], [1, 4, 4], [2, 8, 8], [4, 16, 16]]
    dst = tmp_path / "iso.ome.zarr"
    build_pyramid(nc, data, dst, "zarr3", levels=5, method="mean", factors="auto-isotropic", scale=scale)
    _check_levels(nc, dst, expected, ["0", "1", "2", "3", "4"])


def test_default_factors_leave_channel_axis_alone(nc, tmp_path):
    # c, z, y, x: the channel axis keeps factor 1, the spatial ones get 2.
    data = np.random.default_rng(4).integers(0, 255, (3, 9, 21, 19), dtype=np.uint8)
    expected = ref.pyramid(data, 3, "max", None, spatial=[False, True, True, True])
    assert expected[2].data.shape == (3, 3, 6, 5)
    dst = tmp_path / "czyx.ome.zarr"
    build_pyramid(
        nc, data, dst, "zarr3", levels=3, method="max", axes=["c", "z", "y", "x"],
        axis_types=["channel", "space", "space", "space"],
    )
    _check_levels(nc, dst, expected, ["0", "1", "2"])
    info = ome_info(nc, dst)
    assert [(a["name"], a["type"]) for a in info["axes"]] == [
        ("c", "channel"), ("z", "space"), ("y", "space"), ("x", "space")
    ]


def test_sharded_output_equals_reference(nc, tmp_path):
    data = _labels()
    expected = ref.pyramid(data, 3, "mode", [2, 2, 2])
    dst = tmp_path / "sharded.ome.zarr"
    build_pyramid(
        nc, data, dst, "zarr3", levels=3, method="mode", factors=[2, 2, 2], chunks=[8, 8, 8], shards=[16, 16, 16]
    )
    _check_levels(nc, dst, expected, ["0", "1", "2"])
