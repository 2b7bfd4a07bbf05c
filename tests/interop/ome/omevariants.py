"""Small OME-Zarr 0.4 / 0.5 images written with zarr-python, and broken variants of their
metadata: each variant breaks one NGFF rule, names it (a word the validator's message must
contain) and says whether ome-zarr-models rejects it too."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import zarr

SHAPES = [(6, 8, 10), (3, 4, 5)]


def _valid_multiscale() -> dict:
    return {
        "name": "v",
        "axes": [{"name": n, "type": "space", "unit": "micrometer"} for n in "zyx"],
        "datasets": [
            {
                "path": str(k),
                "coordinateTransformations": [
                    {"type": "scale", "scale": [2.0**k] * 3},
                    {"type": "translation", "translation": [0.5 * (2**k - 1)] * 3},
                ],
            }
            for k in range(len(SHAPES))
        ],
    }


def write_image(
    path: Path,
    version: str,
    edit: Callable[[dict], None] | None = None,
    shapes: list | None = None,
    dimension_names: bool | list[str] = True,
) -> None:
    """A valid image of `version` with two uint8 levels; `edit` changes the multiscale first.

    In 0.5 the arrays' dimension_names are the axes' names (as NGFF 0.5 requires), unless
    `dimension_names` is False or the edited axes do not fit the arrays."""
    fmt = 2 if version == "0.4" else 3
    ms = _valid_multiscale()
    if edit is not None:
        edit(ms)
    names = [a["name"] for a in ms.get("axes", [])]
    group = zarr.open_group(str(path), mode="w", zarr_format=fmt)
    for k, shape in enumerate(shapes or SHAPES):
        kwargs = {}
        if fmt == 3 and isinstance(dimension_names, list):
            kwargs["dimension_names"] = dimension_names
        elif fmt == 3 and dimension_names and len(names) == len(shape):
            kwargs["dimension_names"] = names
        arr = group.create_array(str(k), shape=shape, chunks=shape, dtype="uint8", **kwargs)
        arr[...] = np.full(shape, k + 1, dtype=np.uint8)
    if version == "0.4":
        ms["version"] = "0.4"
        (path / ".zattrs").write_text(json.dumps({"multiscales": [ms]}))
    else:
        meta = json.loads((path / "zarr.json").read_text())
        meta["attributes"] = {"ome": {"version": "0.5", "multiscales": [ms]}}
        (path / "zarr.json").write_text(json.dumps(meta))


def _del_axes(ms: dict) -> None:
    del ms["axes"]


def _short_scale(ms: dict) -> None:
    ms["datasets"][1]["coordinateTransformations"][0]["scale"] = [2.0, 2.0]


def _translation_first(ms: dict) -> None:
    ms["datasets"][0]["coordinateTransformations"].reverse()


def _no_scale(ms: dict) -> None:
    ms["datasets"][0]["coordinateTransformations"] = [{"type": "translation", "translation": [0.0] * 3}]


def _space_before_time(ms: dict) -> None:
    ms["axes"][0] = {"name": "t", "type": "time", "unit": "second"}
    ms["axes"] = [ms["axes"][1], ms["axes"][0], ms["axes"][2]]


def _channel_after_space(ms: dict) -> None:
    ms["axes"] = [ms["axes"][1], {"name": "c", "type": "channel"}, ms["axes"][2]]


def _duplicate_axis_names(ms: dict) -> None:
    ms["axes"][1]["name"] = "x"


def _one_axis_too_few(ms: dict) -> None:
    ms["axes"] = ms["axes"][:2]


def _no_datasets(ms: dict) -> None:
    ms["datasets"] = []


def _missing_level_array(ms: dict) -> None:
    ms["datasets"][1]["path"] = "nope"


def _two_translations(ms: dict) -> None:
    ms["datasets"][0]["coordinateTransformations"].append({"type": "translation", "translation": [0.0] * 3})


def _custom_type_first(ms: dict) -> None:
    ms["axes"][0] = {"name": "a", "type": "angle"}


def _custom_type_after_space(ms: dict) -> None:
    ms["axes"] = [ms["axes"][1], ms["axes"][2], {"name": "a", "type": "angle"}]


def _unknown_unit(ms: dict) -> None:
    ms["axes"][0]["unit"] = "parsecs-ish"


def _scales_not_increasing(ms: dict) -> None:
    ms["datasets"][1]["coordinateTransformations"][0]["scale"] = [0.5, 0.5, 0.5]


@dataclass
class Variant:
    name: str
    edit: Callable[[dict], None] | None
    rule: tuple[str, ...]  # the validator's message names the rule with one of these words
    # ome-zarr-models' verdict per version (checked, so that a change upstream is noticed).
    models_rejects: dict[str, bool]
    shapes: list | None = None
    # True: the axes' names; False: none; a list: those names.
    dimension_names: bool | list[str] = True
    versions: tuple[str, ...] = ("0.4", "0.5")
    # `neurochunk ome validate`'s exit status: 1 (invalid) unless the variant says otherwise.
    ours_exit: int = 1


BOTH = {"0.4": True, "0.5": True}


VARIANTS = [
    Variant("missing-axes", _del_axes, ("axes",), BOTH),
    Variant("scale-length", _short_scale, ("scale", "dimension", "axes"), BOTH),
    Variant("translation-before-scale", _translation_first, ("scale", "order", "first"), BOTH),
    Variant("no-scale", _no_scale, ("scale",), BOTH),
    Variant("space-before-time", _space_before_time, ("order", "time"), BOTH),
    Variant("channel-after-space", _channel_after_space, ("order", "channel"), BOTH),
    Variant("duplicate-axis-names", _duplicate_axis_names, ("unique", "duplicate"), BOTH),
    Variant("too-few-axes", _one_axis_too_few, ("axes", "dimension"), BOTH),
    Variant("no-datasets", _no_datasets, ("datasets", "level"), BOTH),
    Variant("missing-level-array", _missing_level_array, ("nope",), BOTH),
    Variant("two-translations", _two_translations, ("translation",), BOTH),
    # A custom (unknown) axis type is allowed where a channel axis may stand, i.e. before the
    # space axes (both accept), not after them (both reject).
    Variant("custom-axis-type-first", _custom_type_first, (), {"0.4": False, "0.5": False}, ours_exit=0),
    Variant("custom-axis-type-after-space", _custom_type_after_space, ("axes.order", "order"), BOTH),
    # A unit outside the specification's lists is a SHOULD: accepted by both, neurochunk warns.
    Variant("unknown-unit", _unknown_unit, ("axes.unit",), {"0.4": False, "0.5": False}, ours_exit=0),
    # Datasets must go from the highest resolution to the lowest: scales must not shrink.
    Variant("scales-not-increasing", _scales_not_increasing, ("scale", "order", "resolution"), BOTH),
    # Level 1 larger than level 0 while its scale says it is coarser. NGFF orders datasets by
    # resolution, i.e. by their scales, which are in order here; neither validator compares the
    # shapes, so both accept it (agreement, asserted).
    Variant("levels-grow-with-coarser-scale", None, (), {"0.4": False, "0.5": False},
            shapes=[(3, 4, 5), (6, 8, 10)], ours_exit=0),
    # NGFF 0.5: dimension_names MUST be present and equal the axes' names. ome-zarr-models
    # rejects a level without them; neurochunk reports it as a warning (rule
    # datasets.dimension-names) and exits 0, since several 0.5 writers omit them: a
    # disagreement, asserted as such.
    Variant("no-dimension-names", None, ("datasets.dimension-names",), {"0.5": True},
            dimension_names=False, versions=("0.5",), ours_exit=0),
    # Present but different from the axes' names: an error for both.
    Variant("dimension-names-differ", None, ("datasets.dimension-names",), {"0.5": True},
            dimension_names=["a", "b", "c"], versions=("0.5",)),
]
