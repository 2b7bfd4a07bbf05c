"""Our OME-Zarr (`neurochunk pyramid`, zarr2 -> 0.4, zarr3 -> 0.5, sharded or not) as the peers
see it: ome-zarr-models accepts it, ome-zarr-py's Reader and ngff-zarr's `from_ngff_zarr` read
the same levels, scales, translations, axes/units and data as the NumPy reference."""

from __future__ import annotations

import numpy as np
import pytest

import pyramid_ref as ref
from ncli import assert_same_array
from omeio import build_pyramid, models_validate, peer_multiscales, read_ngff_zarr, read_ome_zarr_py

SHAPE = (21, 34, 27)
SCALE = [2.0, 0.5, 0.5]
TRANSLATION = [4.0, 1.0, -2.0]
AXES = [{"name": n, "type": "space", "unit": "micrometer"} for n in "zyx"]

CASES = [
    ("zarr2", "0.4", None),
    ("zarr3", "0.5", None),
    ("zarr3", "0.5", [16, 16, 16]),
]
IDS = ["zarr2-0.4", "zarr3-0.5", "zarr3-0.5-sharded"]


@pytest.fixture(params=CASES, ids=IDS)
def ours(request, nc, tmp_path):
    fmt, version, shards = request.param
    data = np.random.default_rng(5).integers(0, 4000, SHAPE, dtype=np.uint16)
    dst = tmp_path / f"ours-{version}.ome.zarr"
    build_pyramid(
        nc, data, dst, fmt, levels=3, method="mean", factors=[2, 2, 2], chunks=[8, 8, 8], shards=shards,
        axes=["z", "y", "x"], units=["micrometer"] * 3, scale=SCALE, translation=TRANSLATION, name="ours",
    )
    expected = ref.pyramid(data, 3, "mean", [2, 2, 2], scale=SCALE, translation=TRANSLATION)
    return dst, version, shards, expected


def test_metadata_as_stored(ours):
    dst, version, shards, expected = ours
    ms = peer_multiscales(dst)
    if version == "0.4":
        assert ms["version"] == "0.4"
        assert (dst / ".zgroup").is_file() and (dst / "0" / ".zarray").is_file()
    else:
        assert ms["version"] == "0.5"
        assert (dst / "zarr.json").is_file() and (dst / "0" / "zarr.json").is_file()
    assert ms["name"] == "ours"
    assert ms["axes"] == AXES
    assert [d["path"] for d in ms["datasets"]] == ["0", "1", "2"]
    for d, want in zip(ms["datasets"], expected):
        kinds = [t["type"] for t in d["coordinateTransformations"]]
        assert kinds == ["scale", "translation"], kinds
        assert d["coordinateTransformations"][0]["scale"] == pytest.approx(want.scale)
        assert d["coordinateTransformations"][1]["translation"] == pytest.approx(want.translation)
    if shards is not None:
        import json

        meta = json.loads((dst / "0" / "zarr.json").read_text())
        assert meta["codecs"][0]["name"] == "sharding_indexed"


def test_ome_zarr_models_accepts(ours):
    dst, version, _, _ = ours
    assert models_validate(dst, version) is None


@pytest.mark.parametrize("reader", [read_ome_zarr_py, read_ngff_zarr], ids=["ome-zarr-py", "ngff-zarr"])
def test_peer_reader(ours, reader):
    dst, _, _, expected = ours
    image = reader(dst)
    assert image.axes == AXES
    assert len(image.arrays) == len(expected) == 3
    for k, want in enumerate(expected):
        assert image.scales[k] == pytest.approx(want.scale), f"level {k}"
        assert image.translations[k] == pytest.approx(want.translation), f"level {k}"
        assert_same_array(image.arrays[k], want.data, f"{reader.__name__} level {k}")
