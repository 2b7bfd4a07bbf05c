"""OME-Zarr written by the peers, read by us: `neurochunk ome info --json` describes the same
levels, shapes, dtypes, scales, translations and axes as the stored metadata, and `neurochunk
get` of every level returns what zarr-python reads.

Writers: ome-zarr-py's `write_image` and ngff-zarr's `to_multiscales` + `to_ngff_zarr`, each in
0.4 (Zarr v2) and 0.5 (Zarr v3, ngff-zarr also sharded); plus the third-party samples with the
values their README states (zarr-java's ome/v0.4, v0.5; neuroglancer's simple_0.4/0.5;
bioformats2raw output in ome-zarr-py's PR 174)."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

from ncli import REPO_ROOT, assert_same_array, cli_form
from omeio import group_attributes, ome_info, peer_multiscales, transforms, write_ngff_zarr, write_ome_zarr_py

# Samples written by other software, copied into the repository (tests/interop/data/ome, see its
# README); they must be there.
THIRDPARTY = REPO_ROOT / "tests" / "interop" / "data" / "ome"
assert THIRDPARTY.is_dir(), f"{THIRDPARTY} is missing"
SHAPE = (19, 30, 25)
SCALE = {"z": 3.0, "y": 0.75, "x": 0.75}
TRANSLATION = {"z": 1.5, "y": -2.0, "x": 0.0}


def _data() -> np.ndarray:
    return np.random.default_rng(11).integers(0, 60000, SHAPE, dtype=np.uint16)


def _assert_info_matches_stored(nc, path, *, levels: int) -> dict:
    """`ome info` against the stored metadata and zarr-python's reads of every level."""
    info = ome_info(nc, path)
    ms = peer_multiscales(path)
    assert info["version"] == ms["version"]
    assert info["name"] == ms.get("name")
    assert [a["name"] for a in info["axes"]] == [a["name"] for a in ms["axes"]]
    for got, want in zip(info["axes"], ms["axes"]):
        assert got.get("type") == want.get("type") and got.get("unit") == want.get("unit"), (got, want)
    assert [lv["path"] for lv in info["levels"]] == [d["path"] for d in ms["datasets"]]
    assert len(info["levels"]) == levels
    group = zarr.open_group(str(path), mode="r")
    for lv, d in zip(info["levels"], ms["datasets"]):
        scale, translation = transforms(d)
        assert lv["scale"] == pytest.approx(scale), lv["path"]
        if translation is None:
            assert lv["translation"] in (None, [0.0] * len(scale)), lv["path"]
        else:
            assert lv["translation"] == pytest.approx(translation), lv["path"]
        array = group[d["path"]]
        assert lv["shape"] == list(array.shape), lv["path"]
        assert np.dtype(lv["dtype"]) == array.dtype, lv["path"]
        assert_same_array(nc.get(path / d["path"]), cli_form(array[...]), f"level {lv['path']}")
    return info


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_ome_zarr_py_writer(nc, tmp_path, version):
    path = tmp_path / f"ozp-{version}.ome.zarr"
    write_ome_zarr_py(path, _data(), version, scale=SCALE, levels=3)
    info = _assert_info_matches_stored(nc, path, levels=3)
    assert [lv["shape"] for lv in info["levels"]] == [[19, 30, 25], [19, 15, 12], [19, 7, 6]]


@pytest.mark.parametrize(
    "version,shard", [("0.4", None), ("0.5", None), ("0.5", 2)], ids=["0.4", "0.5", "0.5-sharded"]
)
def test_ngff_zarr_writer(nc, tmp_path, version, shard):
    path = tmp_path / f"nz-{version}-{shard}.ome.zarr"
    write_ngff_zarr(path, _data(), version, scale=SCALE, translation=TRANSLATION, levels=3, chunks_per_shard=shard)
    info = _assert_info_matches_stored(nc, path, levels=3)
    assert info["levels"][0]["translation"] == pytest.approx([1.5, -2.0, 0.0])
    assert [a["unit"] for a in info["axes"]] == ["micrometer"] * 3


# -- third-party samples -----------------------------------------------------------------------

ZARR_JAVA_OME = THIRDPARTY / "zarr-java" / "ome"
SUMS = {
    ("v0.4", "0"): ((1, 2, 8, 16, 16), 2025.011),
    ("v0.4", "1"): ((1, 2, 4, 8, 8), 250.715),
    ("v0.5", "0"): (None, 2049.505),
    ("v0.5", "1"): (None, 264.762),
}


@pytest.mark.parametrize("sample", ["v0.4", "v0.5"])
def test_zarr_java_samples(nc, sample):
    path = ZARR_JAVA_OME / sample
    info = _assert_info_matches_stored(nc, path, levels=2)
    assert info["name"] == "test_image"
    assert [(a["name"], a.get("type")) for a in info["axes"]] == [
        ("t", "time"), ("c", "channel"), ("z", "space"), ("y", "space"), ("x", "space")
    ]
    assert info["axes"][0]["unit"] == "millisecond" and info["axes"][1].get("unit") is None
    assert info["levels"][0]["scale"] == pytest.approx([1.0, 1.0, 0.5, 0.5, 0.5])
    assert np.dtype(info["levels"][0]["dtype"]) == np.float32
    assert info["omero"] is not None and info["omero"]["channels"]
    assert "nuclei" in info["labels"]
    for level in ("0", "1"):
        shape, total = SUMS[(sample, level)]
        got = nc.get(path / level)
        if shape is not None:
            assert got.shape == shape
        assert float(got.astype(np.float64).sum()) == pytest.approx(total, abs=5e-3)
        assert 0.0 < got.min() and got.max() < 1.0


@pytest.mark.parametrize("sample,total", [("v0.4", 2008), ("v0.5", 2010)])
def test_zarr_java_label_image(nc, sample, total):
    path = ZARR_JAVA_OME / sample / "labels" / "nuclei"
    info = ome_info(nc, path)
    stored = group_attributes(path)
    assert info["image_label"] == stored.get("ome", stored).get("image-label")  # absent in the samples
    assert info["name"] == "nuclei"
    got = nc.get(path / info["levels"][0]["path"])
    assert got.dtype == np.uint32 and int(got.sum()) == total
    assert set(np.unique(got).tolist()) <= {0, 1, 2}


SIMPLE = THIRDPARTY / "neuroglancer" / "ome_zarr"


@pytest.mark.parametrize("sample", ["simple_0.4", "simple_0.5"])
def test_neuroglancer_simple(nc, sample):
    path = SIMPLE / sample
    info = _assert_info_matches_stored(nc, path, levels=3)
    assert [lv["path"] for lv in info["levels"]] == ["scale0/image", "scale1/image", "scale2/image"]
    assert [lv["shape"] for lv in info["levels"]] == [[10, 10], [5, 5], [2, 2]]
    assert_same_array(nc.get(path / "scale0" / "image"), np.arange(100, dtype=np.uint16).reshape(10, 10))
    assert_same_array(
        nc.get(path / "scale1" / "image"),
        np.array(
            [[2, 3, 6, 7, 9], [20, 21, 23, 25, 26], [39, 41, 43, 45, 47], [59, 61, 63, 65, 67], [79, 81, 82, 85, 86]],
            dtype=np.uint16,
        ),
    )
    assert_same_array(nc.get(path / "scale2" / "image"), np.array([[5, 8], [39, 42]], dtype=np.uint16))


BF2RAW = THIRDPARTY / "ome-zarr-py" / "bf2raw" / "fake-series-2.zarr"


@pytest.mark.parametrize("series,total", [("0", 33_411_110), ("1", 33_411_210)])
def test_bioformats2raw_series(nc, series, total):
    path = BF2RAW / series
    info = _assert_info_matches_stored(nc, path, levels=2)
    assert [lv["shape"] for lv in info["levels"]] == [[1, 1, 1, 512, 512], [1, 1, 1, 256, 256]]
    assert info["levels"][1]["scale"] == pytest.approx([1.0, 1.0, 1.0, 2.0, 2.0])
    l0 = nc.get(path / "0")
    assert int(l0.astype(np.int64).sum()) == total
    assert_same_array(nc.get(path / "1"), np.ascontiguousarray(l0[..., ::2, ::2]))


OZP_DATA = THIRDPARTY / "ome-zarr-py"


@pytest.mark.parametrize("sample,version", [("v1", "0.1"), ("v2", "0.2")])
def test_ome_zarr_py_01_02_samples(nc, sample, version):
    # OME-Zarr 0.1 / 0.2 by ome-zarr-py (zarr 2): no axes (t, c, z, y, x implied), chunks larger
    # than the shape; v1 and v2 hold the same values.
    info = ome_info(nc, OZP_DATA / sample)
    assert info["version"] == version
    assert [a["name"] for a in info["axes"]] == ["t", "c", "z", "y", "x"]
    assert [lv["shape"] for lv in info["levels"]] == [[1, 2, 1, 16, 16]]
    got = nc.get(OZP_DATA / sample / info["levels"][0]["path"])
    assert got.dtype == np.uint8
    assert (int(got.sum()), int(got.min()), int(got.max())) == (5235, 2, 21)


def test_convert_peer_04_to_05_and_bdv(nc, tmp_path):
    """ngff-zarr's 0.4 image converted to 0.5 (ome-zarr-models and ngff-zarr check it) and to
    BigDataViewer N5 (tensorstore reads the levels, x first)."""
    import tensorstore as ts

    from omeio import models_validate, read_ngff_zarr

    src = tmp_path / "nz.ome.zarr"
    data = _data()
    write_ngff_zarr(src, data, "0.4", scale=SCALE, translation=TRANSLATION, levels=3)
    stored = zarr.open_group(str(src), mode="r")
    paths = [d["path"] for d in peer_multiscales(src)["datasets"]]
    levels = [stored[p][...] for p in paths]

    v05 = tmp_path / "v05.ome.zarr"
    nc.run("convert", src, v05, "--format", "zarr3")
    assert models_validate(v05, "0.5") is None
    image = read_ngff_zarr(v05)
    before = read_ngff_zarr(src)
    assert image.scales == before.scales and image.translations == before.translations
    assert image.axes == before.axes
    for k, level in enumerate(levels):
        assert_same_array(image.arrays[k], level, f"0.5 level {k}")

    bdv = tmp_path / "bdv.n5"
    nc.run("convert", src, bdv, "--format", "n5", "--n5-layout", "bdv")
    info = ome_info(nc, bdv)
    assert info["layout"] == "n5-bdv" and len(info["levels"]) == 3
    for k, level in enumerate(levels):
        path = bdv / info["levels"][k]["path"]
        listed = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}).result()
        assert_same_array(listed.read().result(), np.ascontiguousarray(level.transpose()), f"BDV level {k}")
        assert info["levels"][k]["scale"] == pytest.approx(before.scales[k])
