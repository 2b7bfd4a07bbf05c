"""N5 multiscale images: BigDataViewer (`setupN/timepointM/sK`, `downsamplingFactors`, `resolution`,
`units`) and n5-viewer (`scales`, `pixelResolution`, per-level `downsamplingFactors`).

* Written by tensorstore's n5 driver and by zarr-python 2's N5Store (a .peers/py311 subprocess),
  read by `neurochunk ome info --json` / `get` and converted to OME-Zarr 0.5 (read by ngff-zarr).
* Ours (`neurochunk pyramid --format n5 --n5-layout bdv|n5-viewer`) read by tensorstore with the
  attributes BigDataViewer and n5-viewer expect.

N5 lists dimensions fastest first, so a (z, y, x) volume is stored with `dimensions` [X, Y, Z],
and BDV's per-axis attributes (factors, resolution) are in x, y, z order. tensorstore presents
the listed order (x, y, z), like `neurochunk get` by default; zarr-python 2 the reverse. The
checks below match axes by name, so they hold whichever order `ome info` lists them in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts

import pyramid_ref as ref
from ncli import assert_same_array
from omeio import build_pyramid, ome_info, read_ngff_zarr, run_py311

SHAPE_ZYX = (13, 22, 31)
FACTORS_XYZ = [[1, 1, 1], [2, 2, 1], [4, 4, 2]]
RESOLUTION_XYZ = [0.25, 0.25, 1.5]


def _volume() -> np.ndarray:
    return np.random.default_rng(55).integers(0, 5000, SHAPE_ZYX, dtype=np.uint16)


def _levels_zyx() -> list[np.ndarray]:
    """Level k = stride of the volume by FACTORS_XYZ[k] (reversed to z, y, x)."""
    v = _volume()
    return [np.ascontiguousarray(v[:: f[2], :: f[1], :: f[0]]) for f in FACTORS_XYZ]


def _write_json(path: Path, value: dict) -> None:
    path.mkdir(parents=True, exist_ok=True)
    target = path / "attributes.json"
    existing = json.loads(target.read_text()) if target.is_file() else {}
    existing.update(value)
    target.write_text(json.dumps(existing))


def _ts_write(path: Path, data_listed: np.ndarray) -> None:
    spec = {
        "driver": "n5",
        "kvstore": {"driver": "file", "path": str(path)},
        "metadata": {
            "dimensions": list(data_listed.shape),
            "blockSize": [8] * data_listed.ndim,
            "dataType": str(data_listed.dtype),
            "compression": {"type": "gzip", "level": 5},
        },
        "create": True,
        "delete_existing": True,
    }
    ts.open(spec).result().write(data_listed).result()


def _ts_read(path: Path) -> np.ndarray:
    return ts.open({"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}).result().read().result()


def write_bdv_tensorstore(root: Path) -> None:
    """BDV layout with tensorstore: datasets in listed (x, y, z) order."""
    _write_json(root, {"n5": "2.0.0"})
    setup = root / "setup0"
    _write_json(setup, {"downsamplingFactors": FACTORS_XYZ, "dataType": "uint16",
                        "resolution": RESOLUTION_XYZ, "units": ["um", "um", "um"]})
    _write_json(setup / "timepoint0", {"multiScale": True, "resolution": RESOLUTION_XYZ})
    for k, level in enumerate(_levels_zyx()):
        _ts_write(setup / "timepoint0" / f"s{k}", level.transpose())
        _write_json(setup / "timepoint0" / f"s{k}", {"downsamplingFactors": FACTORS_XYZ[k]})


PY311_N5_VIEWER = r"""
import sys, json
import numpy as np, numcodecs, zarr
from zarr.n5 import N5Store
root = sys.argv[1]
levels = [np.load(p) for p in sys.argv[2:]]
g = zarr.group(store=N5Store(root), overwrite=True)
g.attrs.update({"scales": %(scales)s, "pixelResolution": {"unit": "um", "dimensions": %(res)s},
                "name": "zp2"})
for k, a in enumerate(levels):
    d = g.create_dataset(f"s{k}", data=a, chunks=(8, 8, 8), compressor=numcodecs.GZip(level=5))
    d.attrs["downsamplingFactors"] = %(scales)s[k]
    d.attrs["pixelResolution"] = {"unit": "um", "dimensions": %(res)s}
print(zarr.__version__)
""" % {"scales": json.dumps(FACTORS_XYZ), "res": json.dumps(RESOLUTION_XYZ)}


def write_n5_viewer_zarr2(root: Path, scratch: Path) -> None:
    """n5-viewer layout with zarr-python 2's N5Store: (z, y, x) arrays, stored as [X, Y, Z]."""
    files = []
    for k, level in enumerate(_levels_zyx()):
        f = scratch / f"lvl{k}.npy"
        np.save(f, level)
        files.append(f)
    version = run_py311(PY311_N5_VIEWER, root, *files)
    assert version.startswith("2.18"), version


def _by_name(info: dict, key: str, level: int) -> dict[str, float]:
    names = [a["name"] for a in info["axes"]]
    return dict(zip(names, info["levels"][level][key]))


def _check_n5_info(nc, path: Path, level_paths: list[str], units_expected: bool = True) -> dict:
    info = ome_info(nc, path)
    assert info["layout"].lower().replace("-", "").replace("_", "") in ("n5bdv", "n5viewer"), info["layout"]
    assert sorted(a["name"] for a in info["axes"]) == ["x", "y", "z"]
    assert [lv["path"] for lv in info["levels"]] == level_paths
    levels = _levels_zyx()
    for k, want in enumerate(levels):
        shape = _by_name(info, "shape", k)
        assert (shape["z"], shape["y"], shape["x"]) == want.shape, f"level {k}"
        scale = _by_name(info, "scale", k)
        for i, axis in enumerate("xyz"):
            assert scale[axis] == pytest.approx(RESOLUTION_XYZ[i] * FACTORS_XYZ[k][i]), (k, axis)
        # `neurochunk get` presents N5 in listed order: (x, y, z).
        assert_same_array(nc.get(path / level_paths[k]), np.ascontiguousarray(want.transpose()), f"level {k}")
    if units_expected:
        for a in info["axes"]:
            assert a["unit"] in ("um", "micrometer"), a
    return info


def test_read_bdv_written_by_tensorstore(nc, tmp_path):
    root = tmp_path / "bdv.n5"
    write_bdv_tensorstore(root)
    _check_n5_info(nc, root, [f"setup0/timepoint0/s{k}" for k in range(3)])


def test_read_n5_viewer_written_by_zarr2(nc, tmp_path):
    root = tmp_path / "viewer.n5"
    write_n5_viewer_zarr2(root, tmp_path)
    attrs = json.loads((root / "s0" / "attributes.json").read_text())
    assert attrs["dimensions"] == [31, 22, 13]  # N5Store stores (z, y, x) as [X, Y, Z]
    info = _check_n5_info(nc, root, ["s0", "s1", "s2"])
    assert info["name"] == "zp2"


@pytest.mark.parametrize("layout", ["bdv", "n5-viewer"])
def test_convert_n5_multiscale_to_ome_zarr_05(nc, tmp_path, layout):
    root = tmp_path / "src.n5"
    if layout == "bdv":
        write_bdv_tensorstore(root)
    else:
        write_n5_viewer_zarr2(root, tmp_path)
    dst = tmp_path / "converted.ome.zarr"
    nc.run("convert", root, dst, "--format", "zarr3")
    image = read_ngff_zarr(dst)
    names = [a["name"] for a in image.axes]
    assert sorted(names) == ["x", "y", "z"]
    for k, want in enumerate(_levels_zyx()):
        scale = dict(zip(names, image.scales[k]))
        for i, axis in enumerate("xyz"):
            assert scale[axis] == pytest.approx(RESOLUTION_XYZ[i] * FACTORS_XYZ[k][i]), (k, axis)
        # The peer's array in its axes' order, compared with the (z, y, x) level.
        zyx = np.transpose(image.arrays[k], [names.index(a) for a in "zyx"])
        assert_same_array(np.ascontiguousarray(zyx), want, f"level {k}")


@pytest.mark.parametrize("layout", ["bdv", "n5-viewer"])
def test_our_n5_pyramid_read_by_tensorstore(nc, tmp_path, layout):
    data = _volume()
    scale_zyx = [RESOLUTION_XYZ[2], RESOLUTION_XYZ[1], RESOLUTION_XYZ[0]]
    expected = ref.pyramid(data, 3, "mean", [2, 2, 2], scale=scale_zyx)
    dst = tmp_path / f"ours-{layout}.n5"
    build_pyramid(
        nc, data, dst, "n5", n5_layout=layout, levels=3, method="mean", factors=[2, 2, 2], chunks=[8, 8, 8],
        axes=["z", "y", "x"], units=["micrometer"] * 3, scale=scale_zyx,
    )
    if layout == "bdv":
        setup = json.loads((dst / "setup0" / "attributes.json").read_text())
        assert setup["dataType"] == "uint16"
        # BigDataViewer: factors per level relative to s0, x first.
        assert setup["downsamplingFactors"] == [[1, 1, 1], [2, 2, 2], [4, 4, 4]]
        level_path = "setup0/timepoint0/s{}"
        res_holders = [dst / "setup0", dst / "setup0" / "timepoint0"]
        resolutions = [json.loads((p / "attributes.json").read_text()).get("resolution") for p in res_holders]
        assert RESOLUTION_XYZ in resolutions, resolutions
    else:
        root = json.loads((dst / "attributes.json").read_text())
        assert root["scales"] == [[1, 1, 1], [2, 2, 2], [4, 4, 4]]
        assert root["pixelResolution"]["dimensions"] == pytest.approx(RESOLUTION_XYZ)
        assert root["pixelResolution"]["unit"] in ("um", "micrometer")
        level_path = "s{}"
    for k, want in enumerate(expected):
        path = dst / level_path.format(k)
        attrs = json.loads((path / "attributes.json").read_text())
        assert attrs["dimensions"] == list(reversed(want.data.shape)), f"level {k}"
        if k > 0 or "downsamplingFactors" in attrs:
            assert attrs["downsamplingFactors"] == [2**k] * 3, f"level {k}"
        # tensorstore presents the listed (x, y, z) order.
        assert_same_array(_ts_read(path), np.ascontiguousarray(want.data.transpose()), f"level {k}")
    # And we read our own output back as the same multiscale image.
    info = ome_info(nc, dst)
    assert len(info["levels"]) == 3
    for k, want in enumerate(expected):
        scale = _by_name(info, "scale", k)
        assert [scale[a] for a in "zyx"] == pytest.approx(want.scale), f"level {k}"
