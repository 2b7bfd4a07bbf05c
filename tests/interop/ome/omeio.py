"""Multiscale images on both sides: the `neurochunk pyramid` / `ome` commands and the peers
(ome-zarr-py, ngff-zarr, ome-zarr-models, tensorstore's n5 driver, zarr-python 2's N5Store).

* `build_pyramid` runs `neurochunk pyramid` on a NumPy array written with `neurochunk put`.
* `ome_info` / `ome_validate` run `neurochunk ome info --json` / `ome validate --json`.
* `peer_multiscales` reads the OME-Zarr 0.4/0.5 `multiscales` metadata as stored (JSON).
* `write_ome_zarr_py` / `write_ngff_zarr` write OME-Zarr with the peers' writers.
* `read_ome_zarr_py` / `read_ngff_zarr` read an image with the peers' readers as
  (shapes, scales, translations, axes, arrays).
* `models_validate` validates a group with ome-zarr-models (None when valid, else the error).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import zarr

from ncli import REPO_ROOT, Neurochunk, _parse_one_json_object

PY311 = REPO_ROOT / ".peers" / "py311" / "bin" / "python"


# --------------------------------------------------------------------------------------------
# neurochunk
# --------------------------------------------------------------------------------------------


def build_pyramid(
    nc: Neurochunk,
    data: np.ndarray,
    dst: Path,
    fmt: str,
    *,
    levels: int,
    method: str = "mean",
    factors: Sequence[int] | str | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    src_chunks: Sequence[int] | None = None,
    n5_layout: str | None = None,
    axes: Sequence[str] | None = None,
    axis_types: Sequence[str] | None = None,
    units: Sequence[str] | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    name: str | None = None,
) -> None:
    """`neurochunk put` the array as a single-scale Zarr v3 source, then `neurochunk pyramid`."""
    src = nc.scratch / f"src-{dst.name}.zarr"
    nc.put(data, src, "zarr3", chunks=src_chunks)
    args: list[Any] = ["pyramid", src, dst, "--levels", levels, "--method", method, "--format", fmt]
    if factors is not None:
        args += ["--factors", factors if isinstance(factors, str) else ",".join(map(str, factors))]
    for flag, value in (
        ("--chunks", chunks),
        ("--shards", shards),
        ("--axes", axes),
        ("--axis-types", axis_types),
        ("--units", units),
        ("--scale", scale),
        ("--translation", translation),
    ):
        if value is not None:
            args += [flag, ",".join(map(str, value))]
    if n5_layout is not None:
        args += ["--n5-layout", n5_layout]
    if name is not None:
        args += ["--name", name]
    nc.run(*args)


def ome_info(nc: Neurochunk, path: Path) -> dict:
    """`neurochunk ome info PATH --json`: the normalised description."""
    return _parse_one_json_object(nc.run("ome", "info", path, "--json").stdout, "ome info --json")


def ome_validate(nc: Neurochunk, path: Path) -> subprocess.CompletedProcess:
    """`neurochunk ome validate PATH --json` (exit 0 valid, 1 invalid, 2 unreadable)."""
    return nc.run("ome", "validate", path, "--json", check=False)


# --------------------------------------------------------------------------------------------
# OME-Zarr metadata as stored
# --------------------------------------------------------------------------------------------


def group_attributes(path: Path) -> dict:
    """The user attributes of a Zarr v2 (.zattrs) or v3 (zarr.json) group."""
    if (path / "zarr.json").is_file():
        return json.loads((path / "zarr.json").read_text()).get("attributes", {})
    zattrs = path / ".zattrs"
    return json.loads(zattrs.read_text()) if zattrs.is_file() else {}


def peer_multiscales(path: Path) -> dict:
    """The first `multiscales` entry (0.5: under attributes.ome), with `version` filled in."""
    attrs = group_attributes(path)
    if "ome" in attrs:
        entry = dict(attrs["ome"]["multiscales"][0])
        entry["version"] = attrs["ome"]["version"]
        return entry
    return dict(attrs["multiscales"][0])


def transforms(dataset: dict, global_transforms: Sequence[dict] = ()) -> tuple[list[float], list[float] | None]:
    """(scale, translation) of one `datasets` entry (no global transformations expected)."""
    assert not global_transforms, "multiscale-level coordinateTransformations are not used here"
    scale: list[float] | None = None
    translation: list[float] | None = None
    for t in dataset["coordinateTransformations"]:
        if t["type"] == "scale":
            scale = [float(x) for x in t["scale"]]
        elif t["type"] == "translation":
            translation = [float(x) for x in t["translation"]]
    assert scale is not None, f"dataset {dataset['path']} has no scale"
    return scale, translation


# --------------------------------------------------------------------------------------------
# Peer writers
# --------------------------------------------------------------------------------------------

UNIT = "micrometer"


def write_ome_zarr_py(path: Path, data: np.ndarray, version: str, *, scale: dict[str, float], levels: int) -> None:
    """ome-zarr-py's `write_image` (nearest-neighbour scaler; z, y, x axes in micrometres)."""
    from ome_zarr.format import FormatV04, FormatV05
    from ome_zarr.scale import Methods
    from ome_zarr.writer import write_image

    fmt = FormatV04() if version == "0.4" else FormatV05()
    group = zarr.open_group(str(path), mode="w", zarr_format=fmt.zarr_format)
    write_image(
        data,
        group,
        scale_factors=tuple(2**k for k in range(1, levels)),
        method=Methods.NEAREST,
        fmt=fmt,
        axes="zyx",
        scale=scale,
        axes_units={a: UNIT for a in "zyx"},
    )


def write_ngff_zarr(
    path: Path,
    data: np.ndarray,
    version: str,
    *,
    scale: dict[str, float],
    translation: dict[str, float],
    levels: int,
    chunks_per_shard: int | None = None,
) -> None:
    """ngff-zarr's `to_multiscales` (ITK-Wasm bin shrink, a block mean) + `to_ngff_zarr`."""
    import ngff_zarr as nz

    image = nz.to_ngff_image(
        data,
        dims=["z", "y", "x"],
        scale=scale,
        translation=translation,
        axes_units={a: UNIT for a in "zyx"},
        name="peer",
    )
    multiscales = nz.to_multiscales(
        image, scale_factors=[2**k for k in range(1, levels)], method=nz.Methods.ITKWASM_BIN_SHRINK, chunks=16
    )
    kwargs: dict[str, Any] = {}
    if chunks_per_shard is not None:
        kwargs["chunks_per_shard"] = chunks_per_shard
    nz.to_ngff_zarr(str(path), multiscales, version=version, **kwargs)


# --------------------------------------------------------------------------------------------
# Peer readers
# --------------------------------------------------------------------------------------------


@dataclass
class PeerImage:
    """An image as a peer reader sees it."""

    axes: list[dict]
    scales: list[list[float]]
    translations: list[list[float] | None]
    arrays: list[np.ndarray]


def read_ome_zarr_py(path: Path) -> PeerImage:
    """ome-zarr-py's `Reader`: the first node must be the multiscale image."""
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Multiscales, Reader

    location = parse_url(str(path))
    assert location is not None, f"ome-zarr-py does not see an OME-Zarr group at {path}"
    nodes = list(Reader(location)())
    assert nodes, f"ome-zarr-py found no node at {path}"
    node = nodes[0]
    assert any(isinstance(s, Multiscales) for s in node.specs), f"{path}: specs {node.specs}"
    pairs = [transforms({"path": "?", "coordinateTransformations": ct}) for ct in node.metadata["coordinateTransformations"]]
    return PeerImage(
        axes=[dict(a) for a in node.metadata["axes"]],
        scales=[p[0] for p in pairs],
        translations=[p[1] for p in pairs],
        arrays=[np.asarray(d.compute()) for d in node.data],
    )


def read_ngff_zarr(path: Path) -> PeerImage:
    """ngff-zarr's `from_ngff_zarr`."""
    import ngff_zarr as nz

    ms = nz.from_ngff_zarr(str(path))
    axes = [{k: v for k, v in (("name", a.name), ("type", a.type), ("unit", a.unit)) if v is not None} for a in ms.metadata.axes]
    names = [a["name"] for a in axes]
    return PeerImage(
        axes=axes,
        scales=[[float(img.scale[n]) for n in names] for img in ms.images],
        translations=[[float(img.translation[n]) for n in names] for img in ms.images],
        arrays=[np.asarray(img.data.compute()) for img in ms.images],
    )


def models_validate(path: Path, version: str) -> str | None:
    """ome-zarr-models' Image model of `version` on the group: None if it accepts it, else the error."""
    if version == "0.4":
        from ome_zarr_models.v04 import Image
    else:
        from ome_zarr_models.v05 import Image
    group = zarr.open_group(str(path), mode="r")
    try:
        Image.from_zarr(group)
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError, ValueError, KeyError, ...
        return f"{type(exc).__name__}: {exc}"
    return None


# --------------------------------------------------------------------------------------------
# zarr-python 2 (py311) subprocesses for its N5Store
# --------------------------------------------------------------------------------------------


def run_py311(code: str, *args: Any) -> str:
    """Run `code` with .peers/py311's interpreter (zarr-python 2.18); its stdout."""
    proc = subprocess.run(
        [str(PY311), "-c", code, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"py311 helper failed:\n{proc.stderr}"
    return proc.stdout
