"""Multiscale images: OME-Zarr 0.4 (Zarr v2) and 0.5 (Zarr v3), BigDataViewer N5 and
n5-viewer N5, opened as one object whose levels are :class:`neurochunk.Array` objects, and
pyramids built by the engine's streaming builder.

>>> import neurochunk as nc
>>> img = nc.ome.open("image.ome.zarr")
>>> img.layout, img.version, [a["name"] for a in img.axes]
('ome-zarr-0.5', '0.5', ['z', 'y', 'x'])
>>> img.scales[1], img[1].shape                 # level 1's voxel size and shape
>>> thumb = img[-1][:]                          # the coarsest level, read into NumPy
>>> nc.ome.pyramid("volume.zarr", "volume.ome.zarr", levels=4, method="mean")

The layout's metadata is described in ``docs/ome.md``; ``to_dict()`` is the same normalised
description as ``neurochunk ome info --json``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from . import _neurochunk as _native
from ._core import Array, _is_url, _options_json, _progress_callback, open_array
from ._errors import InvalidInputError

__all__ = ["MultiscaleImage", "open", "pyramid", "validate", "METHODS"]

#: The downsampling methods of :func:`pyramid`.
METHODS = ("mean", "mode", "stride", "min", "max")


def _fspath(location: Any) -> str:
    try:
        return str(os.fspath(location))
    except TypeError:
        raise InvalidInputError(f"a location must be a str or os.PathLike, not {type(location).__name__}") from None


def _child(location: str, path: str) -> str:
    if _is_url(location):
        return location.rstrip("/") + "/" + path.strip("/")
    return os.path.join(location, *path.strip("/").split("/"))


class MultiscaleImage(Sequence[Array]):
    """An opened multiscale image: its levels (``img[i]``, ``len(img)``, iteration) from the
    highest resolution to the lowest, with their voxel sizes (``scales``) and offsets
    (``translations``) in the units of ``axes``."""

    def __init__(self, location: str, description: dict[str, Any], storage_options: Mapping[str, Any] | None) -> None:
        self._location = location
        self._description = description
        self._storage_options = dict(storage_options) if storage_options is not None else None
        self._levels: list[Array | None] = [None] * len(description["levels"])

    @property
    def location(self) -> str:
        """Where the image group is (as given to :func:`open`)."""
        return self._location

    @property
    def layout(self) -> str:
        """``"ome-zarr-0.4"``-style name of the layout (see ``docs/ome.md``)."""
        return str(self._description["layout"])

    @property
    def version(self) -> str | None:
        """The OME-Zarr version (``"0.4"``, ``"0.5"``); None for N5 layouts."""
        value = self._description.get("version")
        return None if value is None else str(value)

    @property
    def name(self) -> str | None:
        """The multiscale's ``name``, if it has one."""
        value = self._description.get("name")
        return None if value is None else str(value)

    @property
    def axes(self) -> list[dict[str, Any]]:
        """One dict per axis: ``name``, ``type`` (``"space"``, ``"time"``, ``"channel"``, a
        custom type or None) and ``unit`` (or None)."""
        return [dict(a) for a in self._description["axes"]]

    @property
    def level_paths(self) -> list[str]:
        """The level arrays' paths, relative to the image group."""
        return [str(lv["path"]) for lv in self._description["levels"]]

    @property
    def levels(self) -> list[Array]:
        """Every level as a :class:`neurochunk.Array` (opened on first use)."""
        return [self[i] for i in range(len(self))]

    @property
    def scales(self) -> list[list[float]]:
        """Each level's voxel size per axis (``scale`` transformation)."""
        return [[float(x) for x in lv["scale"]] for lv in self._description["levels"]]

    @property
    def translations(self) -> list[list[float] | None]:
        """Each level's offset per axis (``translation`` transformation), or None."""
        return [
            None if lv.get("translation") is None else [float(x) for x in lv["translation"]]
            for lv in self._description["levels"]
        ]

    @property
    def omero(self) -> dict[str, Any] | None:
        """OME-Zarr's ``omero`` rendering metadata (channels, windows), if present."""
        value = self._description.get("omero")
        return None if value is None else dict(value)

    @property
    def labels(self) -> list[str]:
        """The names of the label images under ``labels/``."""
        return [str(x) for x in self._description.get("labels") or []]

    @property
    def image_label(self) -> dict[str, Any] | None:
        """The ``image-label`` metadata when this image is itself a label image."""
        value = self._description.get("image_label")
        return None if value is None else dict(value)

    def label(self, name: str) -> MultiscaleImage:
        """The label image ``labels/<name>`` as a :class:`MultiscaleImage`."""
        if name not in self.labels:
            raise InvalidInputError(f"{self._location!r} has no label image {name!r} (labels: {self.labels})")
        return open(_child(self._location, f"labels/{name}"), storage_options=self._storage_options)

    def __len__(self) -> int:
        return len(self._levels)

    @overload
    def __getitem__(self, index: int) -> Array: ...

    @overload
    def __getitem__(self, index: slice) -> list[Array]: ...

    def __getitem__(self, index: int | slice) -> Array | list[Array]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not isinstance(index, int):
            raise TypeError(f"levels are indexed by int, not {type(index).__name__}")
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"level {index} out of range: the image has {n} levels")
        index %= n
        level = self._levels[index]
        if level is None:
            # N5 levels in C order (the reverse of N5's listed dimensions), like the axes.
            level = open_array(
                _child(self._location, self.level_paths[index]),
                storage_options=self._storage_options,
                n5_axis_order="reversed" if self.layout.startswith("n5") else None,
            )
            self._levels[index] = level
        return level

    def __iter__(self) -> Iterator[Array]:
        return (self[i] for i in range(len(self)))

    def to_dict(self) -> dict[str, Any]:
        """The normalised description (``neurochunk ome info --json``): layout, version, name,
        axes, levels (path, shape, chunks, dtype, scale, translation), omero, labels,
        image_label."""
        return json.loads(json.dumps(self._description))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        shapes = ", ".join("×".join(map(str, lv["shape"])) for lv in self._description["levels"])
        axes = ",".join(a["name"] for a in self._description["axes"])
        return f"<neurochunk.ome.MultiscaleImage {self._location!r} {self.layout} axes {axes}: {shapes}>"


def open(path_or_url: Any, storage_options: Mapping[str, Any] | None = None) -> MultiscaleImage:  # noqa: A001
    """Open the multiscale image at ``path_or_url`` (its layout is detected: OME-Zarr 0.4 or
    0.5, BigDataViewer N5 — the ``setupN`` group or the container — or n5-viewer N5).

    Metadata that cannot be understood raises :class:`neurochunk.InvalidInputError` naming
    the group; ``neurochunk ome validate`` lists every rule a file breaks. URLs and
    ``storage_options`` as in :func:`neurochunk.open`.
    """
    location = _fspath(path_or_url)
    text = _native.ome_describe(location, _options_json(storage_options))
    return MultiscaleImage(location, json.loads(text), storage_options)


def validate(path_or_url: Any, storage_options: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """The NGFF rules the OME-Zarr image at ``path_or_url`` breaks, like ``neurochunk ome
    validate``: one dict per problem with ``path`` (the group or array), ``rule`` (a short
    stable identifier) and ``message``; an empty list when the image is valid. Metadata that
    cannot be read at all raises, as :func:`open` does."""
    location = _fspath(path_or_url)
    problems: list[dict[str, str]] = json.loads(_native.ome_validate(location, _options_json(storage_options)))
    return problems


def _ints(value: Any, what: str) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, int):
        raise InvalidInputError(f"{what} must be a sequence of ints, one per axis, not {value!r}")
    try:
        return [int(v) for v in value]
    except (TypeError, ValueError):
        raise InvalidInputError(f"{what} must be a sequence of ints, not {value!r}") from None


def pyramid(
    src: Any,
    dst: Any,
    *,
    levels: int | None = None,
    method: str | None = None,
    factors: Sequence[int] | str | None = None,
    format: str | None = None,  # noqa: A002 - the CLI's name
    n5_layout: str | None = None,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    axes: Sequence[str] | None = None,
    axis_types: Sequence[str] | None = None,
    units: Sequence[str] | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    name: str | None = None,
    label: str | None = None,
    progress: bool | Callable[[int], None] = False,
    storage_options: Mapping[str, Any] | None = None,
    dst_storage_options: Mapping[str, Any] | None = None,
) -> MultiscaleImage:
    """Build a multiscale image at ``dst`` (which must not exist) from the single-scale array
    ``src``, like ``neurochunk pyramid``, and open it.

    With ``label="NAME"``, ``src`` is a segmentation of the existing OME-Zarr image ``dst``
    instead: its pyramid is built at ``dst/labels/NAME`` on the image's grid (the image's
    layout, axes, units, voxel size, translation and level factors; ``levels`` defaults to the
    image's, ``method`` to ``"mode"``), listed by ``dst/labels`` with ``image-label`` metadata,
    and the label image is returned. ``factors``, ``format``, ``n5_layout``, ``axes``,
    ``axis_types``, ``units``, ``scale``, ``translation`` and ``name`` then come from the image
    and must not be given.

    ``levels`` counts level 0 (a copy of ``src``; default 4). ``method`` (default ``"mean"``):
    ``"mean"`` (integers rounded to nearest, ties to even), ``"mode"`` (ties to the smallest
    value), ``"stride"``, ``"min"``, ``"max"``. ``factors``: one int per axis,
    ``"auto-isotropic"``, or None (2 on spatial axes, 1 on the others). ``format`` (default
    ``"zarr3"``): ``"zarr2"`` (OME-Zarr 0.4), ``"zarr3"`` (OME-Zarr 0.5) or ``"n5"`` with
    ``n5_layout`` ``"bdv"`` or ``"n5-viewer"``. ``chunks``
    and ``shards`` per axis; ``axes`` (names), ``axis_types`` (``"space"``, ``"time"``,
    ``"channel"`` or custom), ``units``, ``scale`` and ``translation`` override what the source
    says. ``progress=True`` prints the number of chunks written; a callable
    is called with each increment. The semantics are in ``docs/ome.md``.
    """
    if label is not None:
        taken = {
            "factors": factors, "format": format, "n5_layout": n5_layout, "axes": axes,
            "axis_types": axis_types, "units": units, "scale": scale, "translation": translation,
            "name": name,
        }
        given = sorted(k for k, v in taken.items() if v is not None)
        if given:
            raise InvalidInputError(f"a label takes {', '.join(given)} from its image; do not give them")
    method = method if method is not None else ("mode" if label is not None else "mean")
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, not {method!r}")
    if levels is not None and (not isinstance(levels, int) or isinstance(levels, bool) or levels < 1):
        raise InvalidInputError(f"levels must be a positive int, not {levels!r}")
    factors_arg: str | None
    if isinstance(factors, str):
        factors_arg = factors
    else:
        explicit = _ints(factors, "factors")
        factors_arg = None if explicit is None else ",".join(map(str, explicit))
    callback = _progress_callback(progress)
    source, target = _fspath(src), _fspath(dst)
    options = {
        "levels": levels,
        "method": method,
        "label": label,
        "factors": factors_arg,
        "format": format if format is not None else "zarr3",
        "n5_layout": n5_layout,
        "chunks": _ints(chunks, "chunks"),
        "shards": _ints(shards, "shards"),
        "axes": None if axes is None else [str(a) for a in axes],
        "axis_types": None if axis_types is None else [str(t) for t in axis_types],
        "units": None if units is None else [str(u) for u in units],
        "scale": None if scale is None else [float(s) for s in scale],
        "translation": None if translation is None else [float(t) for t in translation],
        "name": name,
    }
    dst_options = dst_storage_options if dst_storage_options is not None else (storage_options if _is_url(target) else None)
    text = _native.ome_pyramid(
        source,
        target,
        json.dumps(options),
        callback,
        _options_json(storage_options if _is_url(source) else None),
        _options_json(dst_options),
    )
    if progress is True:
        print(file=sys.stderr)
    opened = target if label is None else f"{target.rstrip('/')}/labels/{label}"
    return MultiscaleImage(opened, json.loads(text), dst_options)
