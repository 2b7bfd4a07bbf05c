"""neurochunk.ome: multiscale images opened and built from Python, compared with what
zarr-python 3, ome-zarr-py and ngff-zarr read (py312 only: the peers live there)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import zarr

import neurochunk as nc

# Samples written by other software, copied into the repository (tests/interop/data/ome, see its
# README); they must be there.
THIRDPARTY = Path(__file__).resolve().parents[1] / "interop" / "data" / "ome"
assert THIRDPARTY.is_dir(), f"{THIRDPARTY} is missing"


def _volume(shape: tuple[int, ...] = (19, 26, 33), dtype: str = "uint16") -> np.ndarray:
    return np.random.default_rng(3).integers(0, 1000, shape).astype(dtype)


def _source(tmp_path: Path, data: np.ndarray, name: str = "src.zarr") -> Path:
    path = tmp_path / name
    a = nc.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(8, 8, 8))
    a[...] = data
    return path


def _stride_means(data: np.ndarray, levels: int) -> list[np.ndarray]:
    """Block means with factor 2 (ties to even), each level from the previous (docs/ome.md)."""
    out = [data]
    for _ in range(1, levels):
        cur = out[-1]
        shape = tuple(-(-n // 2) for n in cur.shape)
        sums = np.zeros(shape)
        counts = np.zeros(shape)
        for dz in (0, 1):
            for dy in (0, 1):
                for dx in (0, 1):
                    part = cur[dz::2, dy::2, dx::2].astype(np.float64)
                    region = tuple(slice(0, n) for n in part.shape)
                    sums[region] += part
                    counts[region] += 1
        out.append(np.rint(sums / counts).astype(data.dtype))
    return out


@pytest.mark.parametrize("fmt,version", [("zarr2", "0.4"), ("zarr3", "0.5")])
def test_pyramid_and_open_agree_with_zarr_python(tmp_path, fmt, version):
    data = _volume()
    dst = tmp_path / "img.ome.zarr"
    img = nc.ome.pyramid(
        _source(tmp_path, data), dst, levels=3, method="mean", factors=[2, 2, 2], format=fmt,
        chunks=[8, 8, 8], scale=[2.0, 0.5, 0.5], units=["micrometer"] * 3, name="py",
    )
    assert img.layout == f"ome-zarr-{version}" and img.version == version
    again = nc.ome.open(dst)
    assert again.to_dict() == img.to_dict()
    assert len(again) == 3 and again.name == "py"
    assert [a["name"] for a in again.axes] == ["z", "y", "x"]
    assert [a["unit"] for a in again.axes] == ["micrometer"] * 3
    assert again.scales == [[2.0, 0.5, 0.5], [4.0, 1.0, 1.0], [8.0, 2.0, 2.0]]
    assert again.translations[1] == pytest.approx([1.0, 0.25, 0.25])
    group = zarr.open_group(str(dst), mode="r")
    expected = _stride_means(data, 3)
    for k, level in enumerate(again):
        assert isinstance(level, nc.Array)
        peer = group[again.level_paths[k]][...]
        np.testing.assert_array_equal(level[...], peer)
        np.testing.assert_array_equal(level[...], expected[k])
    np.testing.assert_array_equal(again[-1][1:3, ::2, 0], expected[2][1:3, ::2, 0])
    assert [lv.shape for lv in again[0:2]] == [data.shape, expected[1].shape]


def test_ome_zarr_py_reader_sees_python_pyramid(tmp_path):
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Reader

    data = _volume(dtype="uint8")
    dst = tmp_path / "img.ome.zarr"
    nc.ome.pyramid(_source(tmp_path, data), dst, levels=2, method="max", format="zarr3", shards=[16, 16, 16])
    location = parse_url(str(dst))
    assert location is not None
    node = list(Reader(location)())[0]
    img = nc.ome.open(dst)
    for ours, theirs in zip(img.levels, node.data):
        np.testing.assert_array_equal(ours[...], np.asarray(theirs))


def test_open_ngff_zarr_output(tmp_path):
    import ngff_zarr as nz

    data = _volume((16, 20, 24))
    image = nz.to_ngff_image(data, dims=["z", "y", "x"], scale={"z": 2.0, "y": 1.0, "x": 1.0},
                             translation={"z": 5.0, "y": 0.0, "x": 0.0})
    ms = nz.to_multiscales(image, scale_factors=[2], method=nz.Methods.ITKWASM_BIN_SHRINK, chunks=8)
    dst = tmp_path / "nz.ome.zarr"
    nz.to_ngff_zarr(str(dst), ms, version="0.5")
    img = nc.ome.open(dst)
    assert img.version == "0.5" and len(img) == 2
    back = nz.from_ngff_zarr(str(dst))
    for k, (ours, theirs) in enumerate(zip(img, back.images)):
        np.testing.assert_array_equal(ours[...], np.asarray(theirs.data))
        assert img.scales[k] == [theirs.scale[a] for a in "zyx"]
        assert img.translations[k] == [theirs.translation[a] for a in "zyx"]


def test_third_party_sample_labels_and_omero():
    path = THIRDPARTY / "zarr-java" / "ome" / "v0.4"
    img = nc.ome.open(path)
    assert img.layout == "ome-zarr-0.4" and img.name == "test_image"
    assert [a["type"] for a in img.axes] == ["time", "channel", "space", "space", "space"]
    assert img.omero is not None and len(img.omero["channels"]) == 2
    assert img[0].shape == (1, 2, 8, 16, 16)
    assert float(img[0][...].astype(np.float64).sum()) == pytest.approx(2025.011, abs=5e-3)
    nuclei = img.label("nuclei")
    assert nuclei.name == "nuclei" and nuclei.image_label is None  # the sample has no image-label
    assert int(nuclei[0][...].sum()) == 2008
    with pytest.raises(nc.InvalidInputError, match="cells"):
        img.label("cells")


@pytest.mark.parametrize("layout", ["bdv", "n5-viewer"])
def test_n5_pyramid_levels_in_c_order(tmp_path, layout):
    import tensorstore as ts

    data = _volume((9, 14, 21))
    dst = tmp_path / "img.n5"
    img = nc.ome.pyramid(_source(tmp_path, data), dst, levels=2, method="mean", factors=[2, 2, 2],
                         format="n5", n5_layout=layout)
    assert img.layout == f"n5-{layout}".replace("n5-n5-", "n5-")
    assert img.version is None
    again = nc.ome.open(dst)
    expected = _stride_means(data, 2)
    for k, level in enumerate(again):
        assert level.shape == expected[k].shape  # C order, like the axes (z, y, x)
        np.testing.assert_array_equal(level[...], expected[k])
        listed = ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(dst / again.level_paths[k])}}).result()
        np.testing.assert_array_equal(listed.read().result(), expected[k].transpose())


def test_progress_callback_counts_chunks(tmp_path):
    data = _volume((16, 16, 16))
    seen: list[int] = []
    nc.ome.pyramid(_source(tmp_path, data), tmp_path / "p.ome.zarr", levels=2, chunks=[8, 8, 8], progress=seen.append)
    assert sum(seen) >= 8 + 1  # level 0: 8 chunks, level 1: one


def test_errors_name_the_location(tmp_path):
    src = _source(tmp_path, _volume((4, 4, 4)))
    with pytest.raises(nc.InvalidInputError, match="src.zarr"):
        nc.ome.open(src)  # a plain array, not a multiscale image
    with pytest.raises(nc.InvalidInputError, match="method"):
        nc.ome.pyramid(src, tmp_path / "x.ome.zarr", method="median")
    with pytest.raises(nc.InvalidInputError, match="n5_layout"):
        nc.ome.pyramid(src, tmp_path / "x.ome.zarr", format="n5", n5_layout="imaris")
    with pytest.raises(nc.Error):
        nc.ome.open(tmp_path / "missing.ome.zarr")


def test_validate_lists_broken_rules(tmp_path):
    import json

    dst = tmp_path / "v.ome.zarr"
    nc.ome.pyramid(_source(tmp_path, _volume((8, 8, 8))), dst, levels=2, format="zarr2")
    assert nc.ome.validate(dst) == []
    attrs = json.loads((dst / ".zattrs").read_text())
    attrs["multiscales"][0]["axes"][0]["name"] = "x"  # duplicate axis names
    (dst / ".zattrs").write_text(json.dumps(attrs))
    problems = nc.ome.validate(dst)
    assert problems and all(set(p) == {"path", "rule", "message"} for p in problems)
    assert any("x" in p["message"] for p in problems)


def test_channel_axis_keeps_factor_one(tmp_path):
    data = np.random.default_rng(9).integers(0, 255, (3, 9, 21, 19)).astype("uint8")
    src = tmp_path / "czyx.zarr"
    a = nc.create_array(src, shape=data.shape, dtype="uint8", chunks=(1, 8, 8, 8))
    a[...] = data
    img = nc.ome.pyramid(src, tmp_path / "czyx.ome.zarr", levels=2, method="max",
                         axes=["c", "z", "y", "x"], axis_types=["channel", "space", "space", "space"])
    assert [a["type"] for a in img.axes] == ["channel", "space", "space", "space"]
    assert img[1].shape == (3, 5, 11, 10)
    np.testing.assert_array_equal(img[1][2, 4, 10, 9], data[2, 8:, 20:, 18:].max())
    assert img.scales[1] == [1.0, 2.0, 2.0, 2.0]


def _block_mode(a: np.ndarray) -> np.ndarray:
    """Factor-2 block mode (ties to the smallest value), edge blocks from what exists."""
    shape = tuple(-(-n // 2) for n in a.shape)
    out = np.empty(shape, dtype=a.dtype)
    for idx in np.ndindex(shape):
        block = a[tuple(slice(2 * i, 2 * i + 2) for i in idx)].ravel()
        values, counts = np.unique(block, return_counts=True)
        out[idx] = values[np.argmax(counts)]
    return out


def test_label_pyramid_on_an_image(tmp_path):
    data = _volume((9, 14, 17))
    dst = tmp_path / "img.ome.zarr"
    nc.ome.pyramid(_source(tmp_path, data), dst, levels=3, scale=[2.0, 0.5, 0.5], translation=[4.0, 0.0, 0.0])
    seg = (np.arange(data.size).reshape(data.shape) // 40 % 5).astype("uint32")
    label = nc.ome.pyramid(_source(tmp_path, seg, "seg.zarr"), dst, label="cells")
    assert label.image_label is not None and label.image_label["source"]["image"] == "../../"
    assert label.name == "cells"
    image = nc.ome.open(dst)
    assert image.labels == ["cells"]
    assert label.scales == image.scales and label.translations == image.translations
    want = seg
    for k in range(3):
        np.testing.assert_array_equal(label[k][...], want)
        want = _block_mode(want)
    np.testing.assert_array_equal(image.label("cells")[2][...], label[2][...])
    # The label's grid comes from the image: options that would change it are refused.
    with pytest.raises(nc.InvalidInputError, match="scale"):
        nc.ome.pyramid(_source(tmp_path, seg, "seg2.zarr"), dst, label="other", scale=[1, 1, 1])
    with pytest.raises(nc.InvalidInputError, match=r"\[9, 14, 16\]"):
        nc.ome.pyramid(_source(tmp_path, seg[..., :16], "seg3.zarr"), dst, label="small")
    assert nc.ome.open(dst).labels == ["cells"]


def test_bigdataviewer_xml_beside_the_container(tmp_path):
    import json

    data = _volume((9, 14, 17))
    container = tmp_path / "dataset.n5"
    nc.ome.pyramid(_source(tmp_path, data), container, levels=2, format="n5", n5_layout="bdv",
                   scale=[3.0, 0.5, 0.25], units=["micrometer"] * 3)
    # As BigDataViewer exports it: the XML beside the container, no resolution on the setup.
    xml = (container / "dataset.xml").read_text().replace('<n5 type="relative">.</n5>',
                                                          '<n5 type="relative">dataset.n5</n5>')
    (container / "dataset.xml").unlink()
    (tmp_path / "dataset.xml").write_text(xml)
    setup = container / "setup0" / "attributes.json"
    attrs = json.loads(setup.read_text())
    for key in ("resolution", "units", "axes"):
        attrs.pop(key, None)
    setup.write_text(json.dumps(attrs))
    for source in (container, tmp_path / "dataset.xml"):
        img = nc.ome.open(source)
        assert img.scales == [[3.0, 0.5, 0.25], [6.0, 1.0, 0.5]], source
        assert [a["unit"] for a in img.axes] == ["micrometer"] * 3
        np.testing.assert_array_equal(img[0][...], data)
