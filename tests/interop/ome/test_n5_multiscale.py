"""N5 multiscale images: BigDataViewer (`setupN/timepointM/sK`, `downsamplingFactors`, `resolution`,
`units`) and n5-viewer (`scales`, `pixelResolution`, per-level `downsamplingFactors`).

* Written by tensorstore's n5 driver and by zarr-python 2's N5Store (a .peers/py311 subprocess),
  each in both layouts, and neuroglancer's tensorstore-written n5-viewer samples, read by
  `neurochunk ome info --json` / `get` and converted to OME-Zarr 0.5 (read by ngff-zarr).
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
import zarr

import pyramid_ref as ref
from ncli import REPO_ROOT, assert_same_array
from omeio import build_pyramid, ome_info, read_ngff_zarr, read_ome_zarr_py, run_py311

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


def _layout_attrs(layout: str) -> list[tuple[str, dict]]:
    """(group path, attributes) of the layout's groups, x-first factors and resolution."""
    if layout == "bdv":
        return [
            ("setup0", {"downsamplingFactors": FACTORS_XYZ, "dataType": "uint16",
                        "resolution": RESOLUTION_XYZ, "units": ["um", "um", "um"]}),
            ("setup0/timepoint0", {"multiScale": True, "resolution": RESOLUTION_XYZ}),
        ]
    return [("", {"scales": FACTORS_XYZ, "pixelResolution": {"unit": "um", "dimensions": RESOLUTION_XYZ},
                  "name": "peer"})]


def level_paths(layout: str) -> list[str]:
    prefix = "setup0/timepoint0/" if layout == "bdv" else ""
    return [f"{prefix}s{k}" for k in range(len(FACTORS_XYZ))]


def write_tensorstore(root: Path, layout: str) -> None:
    """The layout with tensorstore's n5 driver: datasets in listed (x, y, z) order."""
    _write_json(root, {"n5": "2.0.0"})
    for group, attrs in _layout_attrs(layout):
        _write_json(root / group, attrs)
    for k, (path, level) in enumerate(zip(level_paths(layout), _levels_zyx())):
        _ts_write(root / path, level.transpose())
        _write_json(root / path, {"downsamplingFactors": FACTORS_XYZ[k]})


PY311_WRITER = r"""
import sys, json
import numpy as np, numcodecs, zarr
from zarr.n5 import N5Store
root, groups, paths = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
levels = [np.load(p) for p in sys.argv[4:]]
g = zarr.group(store=N5Store(root), overwrite=True)
for name, attrs in groups:
    (g.require_group(name) if name else g).attrs.update(attrs)
for k, (path, a) in enumerate(zip(paths, levels)):
    d = g.create_dataset(path, data=a, chunks=(8, 8, 8), compressor=numcodecs.GZip(level=5))
    d.attrs["downsamplingFactors"] = %(scales)s[k]
print(zarr.__version__)
""" % {"scales": json.dumps(FACTORS_XYZ)}


def write_zarr2(root: Path, layout: str, scratch: Path) -> None:
    """The layout with zarr-python 2's N5Store: (z, y, x) arrays, stored as [X, Y, Z]."""
    files = []
    for k, level in enumerate(_levels_zyx()):
        f = scratch / f"lvl{k}.npy"
        np.save(f, level)
        files.append(f)
    version = run_py311(PY311_WRITER, root, json.dumps(_layout_attrs(layout)), json.dumps(level_paths(layout)), *files)
    assert version.startswith("2.18"), version


def write_peer(root: Path, writer: str, layout: str, scratch: Path) -> None:
    if writer == "tensorstore":
        write_tensorstore(root, layout)
    else:
        write_zarr2(root, layout, scratch)


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


PEERS = [(w, layout) for w in ("tensorstore", "zarr2") for layout in ("bdv", "n5-viewer")]
PEER_IDS = [f"{w}-{layout}" for w, layout in PEERS]


@pytest.mark.parametrize("writer,layout", PEERS, ids=PEER_IDS)
def test_read_peer_written(nc, tmp_path, writer, layout):
    root = tmp_path / "peer.n5"
    write_peer(root, writer, layout, tmp_path)
    attrs = json.loads((root / level_paths(layout)[0] / "attributes.json").read_text())
    assert attrs["dimensions"] == [31, 22, 13]  # x first, whichever peer wrote it
    info = _check_n5_info(nc, root, level_paths(layout))
    assert info["layout"] == ("n5-bdv" if layout == "bdv" else "n5-viewer")
    if layout == "n5-viewer":
        assert info["name"] == "peer"


# neuroglancer's samples, copied into the repository (tests/interop/data/ome, see its README).
NG_N5 = REPO_ROOT / "tests" / "interop" / "data" / "ome" / "neuroglancer" / "n5"


@pytest.mark.parametrize("variant", ["modern", "deprecated"])
def test_neuroglancer_n5_viewer_samples(nc, variant):
    # tensorstore-written, metadata only: root axes x, y, units nm / s, resolution [10, 20];
    # factors per dataset (modern) or as root `scales` (deprecated). Every block is missing.
    root = NG_N5 / f"n5_viewer_multiscale_{variant}"
    assert (root / "attributes.json").is_file(), f"{root} is missing"
    info = ome_info(nc, root)
    assert info["layout"] == "n5-viewer"
    assert [lv["path"] for lv in info["levels"]] == ["s0", "s1", "s2"]
    units = {a["name"]: a["unit"] for a in info["axes"]}
    assert units == {"x": "nm", "y": "s"}
    for k, (dims, f) in enumerate(zip([[10, 20], [5, 10], [3, 5]], [1, 2, 4])):
        shape, scale = _by_name(info, "shape", k), _by_name(info, "scale", k)
        assert [shape["x"], shape["y"]] == dims
        assert [scale["x"], scale["y"]] == pytest.approx([10 * f, 20 * f])
        # Listed order (x, y) from `get`; no block stored: the fill value 0.
        assert_same_array(nc.get(root / f"s{k}"), np.zeros(dims, dtype=np.uint16), f"s{k}")


@pytest.mark.parametrize("writer,layout", [("tensorstore", "bdv"), ("zarr2", "n5-viewer")])
def test_convert_n5_multiscale_to_ome_zarr_05(nc, tmp_path, writer, layout):
    root = tmp_path / "src.n5"
    write_peer(root, writer, layout, tmp_path)
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


@pytest.mark.parametrize("fmt,version", [("zarr3", "0.5"), ("zarr2", "0.4")])
def test_convert_bdv_setups_and_timepoints_to_bioformats2raw(nc, tmp_path, fmt, version):
    """A tensorstore-written BigDataViewer container with two setups (the second holding other
    values) and two time points of setup 0 becomes an OME-Zarr bioformats2raw container with
    one series per (setup, time point), validated by ome-zarr-models and read by ome-zarr-py."""
    import shutil

    from ome_zarr_models.v04 import BioFormats2Raw as BioFormats2Raw04
    from ome_zarr_models.v05 import BioFormats2Raw as BioFormats2Raw05

    root = tmp_path / "src.n5"
    write_tensorstore(root, "bdv")
    shutil.copytree(root / "setup0", root / "setup1")
    shutil.copytree(root / "setup0" / "timepoint0", root / "setup0" / "timepoint1")
    other = (_levels_zyx()[0].astype(np.uint32) * 3 % 60000).astype(np.uint16)
    _ts_write(root / "setup1" / "timepoint0" / "s0", other.transpose())
    dst = tmp_path / f"converted-{version}.ome.zarr"
    nc.run("convert", root, dst, "--format", fmt)

    group = zarr.open_group(str(dst), mode="r")
    model = (BioFormats2Raw05 if version == "0.5" else BioFormats2Raw04).from_zarr(group)
    assert model is not None
    series = json.loads((dst / "OME" / ("zarr.json" if version == "0.5" else ".zattrs")).read_text())
    listed = series["attributes"]["ome"]["series"] if version == "0.5" else series["series"]
    assert listed == ["0", "1", "2"]
    for name, want in [("0", _levels_zyx()[0]), ("1", _levels_zyx()[0]), ("2", other)]:
        image = read_ome_zarr_py(dst / name)
        names = [a["name"] for a in image.axes]
        assert names == ["z", "y", "x"]
        assert_same_array(image.arrays[0], want, f"series {name} level 0")
        for k in range(len(FACTORS_XYZ)):
            assert image.scales[k] == pytest.approx([RESOLUTION_XYZ[2 - i] * FACTORS_XYZ[k][2 - i] for i in range(3)])
    info = ome_info(nc, dst / "2")
    assert info["name"] == "setup1/timepoint0"


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
