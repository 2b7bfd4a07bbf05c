"""Neuroglancer precomputed skeletons, meshes and annotations.

Volumes of the precomputed format open with :func:`neurochunk.open` (a layer is a group, a
scale an array); this module reads and writes the other kinds of precomputed data:

* **skeletons** (``neuroglancer_skeletons``, unsharded or sharded): :func:`skeletons` opens a
  layer, :meth:`SkeletonLayer.get` reads one segment's vertices (in nanometres, the layer's
  ``transform`` applied), edges and vertex attributes as NumPy arrays, and
  :meth:`SkeletonLayer.to_table` converts the layer to a neurarrow skeletons table;
  :func:`write_skeletons` writes a layer from arrays or from such a table.
* **meshes** (legacy ``neuroglancer_legacy_mesh`` and multi-resolution
  ``neuroglancer_multilod_draco``): :func:`meshes` opens a mesh directory,
  :meth:`MeshLayer.get` reads a segment's vertices and triangles; :func:`write_meshes` writes
  legacy meshes.
* **annotations** (``neuroglancer_annotations_v1``): :func:`annotations` opens a collection,
  with lookups by id (:meth:`AnnotationCollection.get`), by related segment
  (:meth:`AnnotationCollection.by_segment`) and of everything (:meth:`AnnotationCollection.all`);
  :func:`write_annotations` writes a collection with its id, relationship and spatial indexes.

>>> import numpy as np, neurochunk as nc
>>> n = nc.precomputed.write_skeletons(
...     "skeletons", {7: (np.array([[0, 0, 0], [8, 0, 0]], "f4"), np.array([[1, 0]], "u4"))})
>>> layer = nc.precomputed.skeletons("skeletons")
>>> layer.segment_ids()
[7]
>>> layer.get(7).vertices.shape
(2, 3)

Locations are local paths or URLs (``s3://``, ``gs://``, ``https://`` (read-only),
``file://``) with ``storage_options``, as for :func:`neurochunk.open`. Damaged files raise
:class:`neurochunk.CorruptDataError` naming the file and the segment; the data format is
described in ``docs/precomputed.md``.
"""

# No `from __future__ import annotations`: the module defines a function `annotations`.
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

import numpy as np
import numpy.typing as npt

from . import _neurochunk as _native
from ._core import _options_json
from ._errors import InvalidInputError, NodeNotFoundError

__all__ = [
    "Skeleton",
    "SkeletonLayer",
    "skeletons",
    "write_skeletons",
    "Mesh",
    "MeshLayer",
    "meshes",
    "write_meshes",
    "Annotation",
    "Annotations",
    "AnnotationCollection",
    "PropertySpec",
    "annotations",
    "write_annotations",
]

AnnotationType = Literal["point", "line", "axis_aligned_bounding_box", "ellipsoid", "polyline"]
_ANNOTATION_TYPES = ("point", "line", "axis_aligned_bounding_box", "ellipsoid", "polyline")

# The vertex attribute and property types of the format, as NumPy dtypes.
_ATTRIBUTE_TYPES = ("float32", "uint8", "int8", "uint16", "int16", "uint32", "int32")
_PROPERTY_TYPES = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "rgb", "rgba")


def _fspath(location: Any) -> str:
    try:
        return str(os.fspath(location))
    except TypeError:
        raise InvalidInputError(f"a location must be a str or os.PathLike, not {type(location).__name__}") from None


class _Stream:
    """An Arrow C stream capsule, handed out once through ``__arrow_c_stream__``."""

    def __init__(self, capsule: object) -> None:
        self._capsule: object | None = capsule

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise InvalidInputError("this Arrow stream was consumed already")
        return capsule


def _pyarrow() -> Any:
    import importlib

    try:
        return importlib.import_module("pyarrow")
    except ImportError:
        raise ImportError("to_table() needs pyarrow (pip install pyarrow)") from None


# --- skeletons -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Skeleton:
    """One segment's skeleton.

    ``vertices``: ``(N, 3)`` float32 positions; ``edges``: ``(M, 2)`` uint32 pairs of vertex
    indexes; ``attributes``: the vertex attributes by id (``radius``, ...), ``(N,)`` arrays for
    one component, ``(N, k)`` for ``k``, in the attribute's type (empty when the stored
    skeleton has none)."""

    segment_id: int
    vertices: npt.NDArray[np.float32]
    edges: npt.NDArray[np.uint32]
    attributes: dict[str, npt.NDArray[Any]] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"Skeleton(segment_id={self.segment_id}, vertices={len(self.vertices)}, "
            f"edges={len(self.edges)}, attributes={sorted(self.attributes)})"
        )


class _WithInfo:
    """An object opened from a location, described by its ``info`` document."""

    def __init__(self, location: str, info: str) -> None:
        self._location = location
        self._info: dict[str, Any] = json.loads(info)

    @property
    def location(self) -> str:
        """Where the object is (the location it was opened from)."""
        return self._location

    @property
    def info(self) -> dict[str, Any]:
        """The ``info`` document (a copy)."""
        return json.loads(json.dumps(self._info))  # type: ignore[no-any-return]


class SkeletonLayer(_WithInfo):
    """A skeleton layer opened by :func:`skeletons`."""

    def __init__(self, location: str, raw: _native.RawSkeletons) -> None:
        super().__init__(location, raw.info())
        self._raw = raw

    @property
    def transform(self) -> npt.NDArray[np.float64]:
        """The ``(3, 4)`` matrix from stored vertex positions to nanometres."""
        return np.asarray(self._info["transform"], dtype=np.float64).reshape(3, 4)

    @property
    def vertex_attributes(self) -> dict[str, tuple[str, int]]:
        """The vertex attributes: id → (data type, number of components), in stored order."""
        return {a["id"]: (a["data_type"], int(a["num_components"])) for a in self._info["vertex_attributes"]}

    @property
    def sharded(self) -> bool:
        """Whether the layer is ``neuroglancer_uint64_sharded_v1``."""
        return "sharding" in self._info

    def segment_ids(self) -> list[int]:
        """The segment ids of the layer, ascending (a sharded layer's shards are read whole)."""
        return self._raw.segment_ids()

    def _skeleton(self, segment_id: int, parts: tuple[Any, Any, list[Any]]) -> Skeleton:
        vertices, edges, values = parts
        attributes: dict[str, npt.NDArray[Any]] = {}
        for (name, (dtype, k)), column in zip(self.vertex_attributes.items(), values):
            a = column.astype(dtype)
            attributes[name] = a.reshape(-1, k) if k > 1 else a
        return Skeleton(int(segment_id), vertices.reshape(-1, 3), edges.reshape(-1, 2), attributes)

    def get(self, segment_id: int, *, transform: bool = True) -> Skeleton:
        """Segment ``segment_id``'s skeleton; vertices in nanometres (the ``transform``
        applied), or as stored with ``transform=False``. A segment the layer lacks raises
        :class:`neurochunk.NodeNotFoundError` (a ``KeyError``)."""
        parts = self._raw.get(_segment(segment_id), bool(transform))
        if parts is None:
            raise NodeNotFoundError(f"{self._location}: no skeleton of segment {segment_id}")
        return self._skeleton(segment_id, parts)

    def __getitem__(self, segment_id: int) -> Skeleton:
        return self.get(segment_id)

    def __contains__(self, segment_id: object) -> bool:
        if not isinstance(segment_id, (int, np.integer)) or int(segment_id) < 0:
            return False
        return self._raw.get(int(segment_id), False) is not None

    def __iter__(self) -> Iterator[Skeleton]:
        """Every skeleton, in segment id order (each shard read once)."""
        for segment_id, parts in self._raw.get_all(True):
            yield self._skeleton(segment_id, parts)

    def __len__(self) -> int:
        return len(self.segment_ids())

    def to_table(self, context: str, *, space: str | None = None) -> Any:
        """The layer as a neurarrow skeletons table (a ``pyarrow.Table``): one row per vertex,
        ``sample_id``, ``fragment_id``, ``parent_id`` (from the edges), ``x``, ``y``, ``z`` in
        nanometres, ``radius`` and ``attr:{id}`` columns; ``context`` (an IRI or UUID) and
        ``space`` are the table's metadata. Needs pyarrow; the same conversion as ``neurochunk
        table convert LAYER OUT.skeletons.parquet --context URI``."""
        return _pyarrow().table(_Stream(self._raw.to_table(str(context), space)))

    def __repr__(self) -> str:
        return f"<neurochunk.precomputed.SkeletonLayer {self._location!r} attributes={list(self.vertex_attributes)}>"


def _segment(segment_id: Any) -> int:
    if isinstance(segment_id, bool) or not isinstance(segment_id, (int, np.integer)):
        raise InvalidInputError(f"a segment id must be an int, not {type(segment_id).__name__}")
    value = int(segment_id)
    if not 0 <= value < 2**64:
        raise InvalidInputError(f"segment id {value} is not a uint64")
    return value


def skeletons(path: Any, *, storage_options: Mapping[str, Any] | None = None) -> SkeletonLayer:
    """Open the skeleton layer at ``path``: a directory whose ``info`` has the ``@type``
    ``neuroglancer_skeletons``, or a volume layer whose ``info`` names one (``"skeletons":
    "DIR"``).

    >>> layer = nc.precomputed.skeletons("gs://bucket/seg/skeletons", storage_options={"anon": True})
    >>> s = layer.get(648518346349538235)
    >>> s.vertices, s.edges, s.attributes["radius"]
    """
    location = _fspath(path)
    return SkeletonLayer(location, _native.skeletons_open(location, _options_json(storage_options)))


SkeletonLike = Union[Skeleton, Mapping[str, Any], Sequence[Any]]


def _stored_type(values: npt.NDArray[Any], allowed: Sequence[str]) -> str | None:
    """The stored type for `values` when none is declared: float32 for floats, uint8 for
    booleans, the dtype itself when `allowed` has it, else int32 or uint32 when every value
    fits; `None` when nothing fits."""
    if values.dtype.kind == "f":
        return "float32"
    if values.dtype.kind == "b":
        return "uint8"
    if values.dtype.name in allowed:
        return values.dtype.name
    if values.dtype.kind in "iu":
        for t in ("int32", "uint32"):
            info = np.iinfo(t)
            if values.size == 0 or (values.min() >= info.min and values.max() <= info.max):
                return t
    return None


def _attribute_type(name: str, a: npt.NDArray[Any], declared: str | None) -> str:
    if declared is not None:
        if declared not in _ATTRIBUTE_TYPES:
            raise InvalidInputError(f"vertex attribute {name!r}: type {declared!r} is not one of {_ATTRIBUTE_TYPES}")
        return declared
    inferred = _stored_type(a, _ATTRIBUTE_TYPES)
    if inferred is not None:
        return inferred
    raise InvalidInputError(
        f"vertex attribute {name!r}: values of dtype {a.dtype} cannot be stored (use one of "
        f"{_ATTRIBUTE_TYPES}, or say which with vertex_attributes=)"
    )


def _one_skeleton(segment_id: int, value: Any) -> tuple[Any, Any, Mapping[str, Any]]:
    if isinstance(value, Skeleton):
        return value.vertices, value.edges, value.attributes
    if isinstance(value, Mapping):
        try:
            return value["vertices"], value["edges"], value.get("attributes") or {}
        except KeyError:
            raise InvalidInputError(
                f"segment {segment_id}: a skeleton dict needs 'vertices' and 'edges'"
            ) from None
    if isinstance(value, Sequence) and len(value) in (2, 3):
        return value[0], value[1], (value[2] if len(value) == 3 else {})
    raise InvalidInputError(
        f"segment {segment_id}: a skeleton is a Skeleton, a dict with 'vertices', 'edges' and "
        f"'attributes', or a tuple (vertices, edges[, attributes]), not {type(value).__name__}"
    )


def write_skeletons(
    path: Any,
    skeletons: Mapping[int, SkeletonLike] | Iterable[Skeleton] | Any,
    *,
    transform: Sequence[float] | npt.ArrayLike | None = None,
    vertex_attributes: Mapping[str, str] | None = None,
    sharded: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write a skeleton layer at ``path``; returns the number of segments written.

    ``skeletons`` is either

    * a mapping of segment id to a :class:`Skeleton`, a dict ``{"vertices", "edges",
      "attributes"}`` or a tuple ``(vertices, edges[, attributes])`` (or an iterable of
      :class:`Skeleton`): ``vertices`` ``(N, 3)``, ``edges`` ``(M, 2)`` vertex indexes
      (Neuroglancer draws them; neurochunk and cloud-volume write ``(child, parent)``), and
      ``attributes`` a dict of ``(N,)`` or ``(N, k)`` arrays (``radius``, ...). Every skeleton
      has the same attributes, or none. Their types come from the arrays' dtypes (floats are
      stored as float32, int64 as int32 or uint32 when the values fit) unless
      ``vertex_attributes`` names them (``{"vertex_types": "uint8"}``). Positions are stored
      as given with ``transform`` (a 3×4 matrix, default identity) in the ``info``;
    * or a neurarrow skeletons table (anything with ``__arrow_c_stream__``: a ``pyarrow.Table``,
      :func:`neurochunk.table.read`, what :meth:`SkeletonLayer.to_table` returns): one skeleton
      per segment, coordinates converted from the table's unit to nanometres, as ``neurochunk
      table convert IN.skeletons.parquet LAYER --format precomputed`` does.

    ``sharded`` writes ``neuroglancer_uint64_sharded_v1`` (murmurhash3, gzip, about 1024
    segments per shard). An existing layer (an ``info`` at ``path``) is refused unless
    ``overwrite``; then its ``info`` and the segments written are replaced, other files kept.

    >>> nc.precomputed.write_skeletons("out", {1: {"vertices": v, "edges": e,
    ...                                            "attributes": {"radius": r}}}, sharded=True)
    """
    location = _fspath(path)
    options = _options_json(storage_options)
    stream = getattr(skeletons, "__arrow_c_stream__", None)
    if stream is not None:
        if transform is not None or vertex_attributes is not None:
            raise InvalidInputError("transform and vertex_attributes are for arrays, not tables")
        summary = json.loads(
            _native.skeletons_from_table(stream(), location, bool(sharded), bool(overwrite), options)
        )
        return int(summary["segments"])
    if isinstance(skeletons, Mapping):
        items = [(_segment(k), _one_skeleton(int(k), v)) for k, v in skeletons.items()]
    else:
        items = []
        for s in skeletons:
            if not isinstance(s, Skeleton):
                raise InvalidInputError(
                    "skeletons must be a mapping of segment id to skeleton, an iterable of "
                    f"Skeleton, or an Arrow table; found a {type(s).__name__} in the iterable"
                )
            items.append((_segment(s.segment_id), _one_skeleton(s.segment_id, s)))
    declared = dict(vertex_attributes or {})
    components: dict[str, int] = {}
    prepared = []
    for segment_id, (vertices, edges, attributes) in items:
        v = np.asarray(vertices, dtype=np.float32)
        e = np.asarray(edges)
        if v.ndim != 2 or v.shape[1] != 3:
            raise InvalidInputError(f"segment {segment_id}: vertices must be (N, 3), not {v.shape}")
        if e.size == 0:
            e = e.reshape(0, 2)
        if e.ndim != 2 or e.shape[1] != 2:
            raise InvalidInputError(f"segment {segment_id}: edges must be (M, 2), not {e.shape}")
        if e.size and (e.dtype.kind not in "iu" or e.min() < 0 or e.max() >= len(v)):
            raise InvalidInputError(
                f"segment {segment_id}: edges must be indexes of its {len(v)} vertices"
            )
        columns: dict[str, npt.NDArray[Any]] = {}
        for name, values in dict(attributes).items():
            a = np.asarray(values)
            if a.shape[:1] != (len(v),) or a.ndim not in (1, 2):
                raise InvalidInputError(
                    f"segment {segment_id}: vertex attribute {name!r} must be ({len(v)},) or "
                    f"({len(v)}, k), not {a.shape}"
                )
            k = 1 if a.ndim == 1 else a.shape[1]
            if str(name) in components and components[str(name)] != k:
                raise InvalidInputError(
                    f"vertex attribute {name!r} has {components[str(name)]} components in one "
                    f"segment and {k} in segment {segment_id}"
                )
            components[str(name)] = k
            columns[str(name)] = a
        prepared.append((segment_id, v, e, columns))
    types: dict[str, tuple[str, int]] = {}
    for name, k in components.items():
        # The type that holds every segment's values.
        every = [p[3][name].reshape(-1) for p in prepared if name in p[3]]
        types[name] = (_attribute_type(name, np.concatenate(every), declared.get(name)), k)
    names = list(types)
    for name in declared:
        if name not in types:
            raise InvalidInputError(f"vertex_attributes names {name!r}, which no skeleton has")
    native = []
    for segment_id, v, e, columns in prepared:
        if columns and set(columns) != set(names):
            missing = sorted(set(names) - set(columns))
            raise InvalidInputError(
                f"segment {segment_id} lacks the vertex attributes {missing} (give every "
                "skeleton the same attributes, or none)"
            )
        values = [np.ascontiguousarray(columns[n], dtype=np.float64).reshape(-1) for n in names] if columns else []
        native.append(
            (
                segment_id,
                np.ascontiguousarray(v).reshape(-1),
                np.ascontiguousarray(e, dtype=np.uint32).reshape(-1),
                values,
            )
        )
    matrix = (
        [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        if transform is None
        else np.asarray(transform, dtype=np.float64).reshape(-1).tolist()
    )
    if len(matrix) != 12:
        raise InvalidInputError("transform must be a 3×4 matrix (12 numbers)")
    info = {
        "@type": "neuroglancer_skeletons",
        "transform": matrix,
        "vertex_attributes": [
            {"id": n, "data_type": types[n][0], "num_components": types[n][1]} for n in names
        ],
    }
    return _native.skeletons_write(location, json.dumps(info), native, bool(sharded), bool(overwrite), options)


# --- meshes ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mesh:
    """A triangle mesh: ``vertices`` ``(N, 3)`` float32 (nanometres in a legacy mesh) and
    ``faces`` ``(M, 3)`` uint32 vertex indexes."""

    segment_id: int
    vertices: npt.NDArray[np.float32]
    faces: npt.NDArray[np.uint32]

    def __repr__(self) -> str:
        return f"Mesh(segment_id={self.segment_id}, vertices={len(self.vertices)}, faces={len(self.faces)})"


def _concatenate(segment_id: int, parts: Sequence[tuple[Any, Any]]) -> Mesh:
    vertices: list[npt.NDArray[np.float32]] = []
    faces: list[npt.NDArray[np.uint32]] = []
    base = 0
    for v, f in parts:
        vertices.append(v.reshape(-1, 3))
        faces.append(f.reshape(-1, 3) + np.uint32(base))
        base += len(vertices[-1])
    if not vertices:
        return Mesh(segment_id, np.zeros((0, 3), np.float32), np.zeros((0, 3), np.uint32))
    return Mesh(segment_id, np.concatenate(vertices), np.concatenate(faces).astype(np.uint32))


class MeshLayer:
    """A mesh directory opened by :func:`meshes`."""

    def __init__(self, location: str, raw: _native.RawMeshes) -> None:
        self._location = location
        self._raw = raw

    @property
    def location(self) -> str:
        """Where the directory is (as given to :func:`meshes`)."""
        return self._location

    @property
    def kind(self) -> Literal["legacy", "multires"]:
        """``"legacy"`` (``neuroglancer_legacy_mesh``) or ``"multires"``
        (``neuroglancer_multilod_draco``)."""
        return "multires" if self._raw.kind() == "multires" else "legacy"

    @property
    def info(self) -> dict[str, Any] | None:
        """The mesh directory's ``info`` (None for a legacy directory without one)."""
        text = self._raw.info()
        if text is None:
            return None
        info: dict[str, Any] = json.loads(text)
        return info

    def segment_ids(self) -> list[int]:
        """The segment ids with a mesh, ascending."""
        return self._raw.segment_ids()

    def fragments(self, segment_id: int, lod: int = 0) -> list[Mesh]:
        """Segment ``segment_id``'s fragments, each a :class:`Mesh` of its own: a legacy
        mesh's fragment files in manifest order, or the fragments of level of detail ``lod``
        of a multi-resolution mesh."""
        if lod < 0:
            raise InvalidInputError(f"lod must not be negative, not {lod}")
        out = self._raw.fragments(_segment(segment_id), int(lod))
        return [_concatenate(int(segment_id), [(v, f)]) for _, (v, f) in out]

    def get(self, segment_id: int, lod: int = 0) -> Mesh:
        """Segment ``segment_id``'s mesh, its fragments joined into one vertex and one face
        list (``lod``: the level of detail of a multi-resolution mesh, 0 the finest; legacy
        meshes have only 0). A missing segment raises :class:`neurochunk.NodeNotFoundError`;
        fragments this build cannot decode (Draco) raise :class:`neurochunk.UnsupportedError`
        naming the file, the segment and the fragment."""
        if lod < 0:
            raise InvalidInputError(f"lod must not be negative, not {lod}")
        out = self._raw.fragments(_segment(segment_id), int(lod))
        return _concatenate(int(segment_id), [parts for _, parts in out])

    def __getitem__(self, segment_id: int) -> Mesh:
        return self.get(segment_id)

    def __iter__(self) -> Iterator[Mesh]:
        """Every segment's mesh (lod 0), in segment id order."""
        for segment_id in self.segment_ids():
            yield self.get(segment_id)

    def __len__(self) -> int:
        return len(self.segment_ids())

    def manifest(self, segment_id: int) -> dict[str, Any]:
        """A multi-resolution segment's manifest: ``chunk_shape``, ``grid_origin`` and per
        lod its ``scale``, ``vertex_offset`` and fragments (grid ``position``, byte ``offset``
        and ``size``), plus the ``data`` file and ``data_start`` offset."""
        return json.loads(self._raw.manifest(_segment(segment_id)))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"<neurochunk.precomputed.MeshLayer {self._location!r} kind={self.kind}>"


def meshes(path: Any, *, storage_options: Mapping[str, Any] | None = None) -> MeshLayer:
    """Open the mesh directory at ``path``, or the one a segmentation layer's ``info`` names
    (its ``mesh`` member).

    >>> m = nc.precomputed.meshes("seg").get(42)
    >>> m.vertices.shape, m.faces.shape
    """
    location = _fspath(path)
    return MeshLayer(location, _native.meshes_open(location, _options_json(storage_options)))


MeshLike = Union[Mesh, Sequence[Any]]


def _mesh_parts(segment_id: int, value: Any) -> list[tuple[npt.NDArray[np.float32], npt.NDArray[np.uint32]]]:
    if isinstance(value, Mesh):
        pairs: list[Any] = [(value.vertices, value.faces)]
    elif isinstance(value, Sequence) and len(value) == 2 and not isinstance(value[0], (Mesh, tuple, list)):
        pairs = [value]
    elif isinstance(value, Sequence):
        pairs = [(p.vertices, p.faces) if isinstance(p, Mesh) else p for p in value]
    else:
        raise InvalidInputError(
            f"segment {segment_id}: a mesh is a Mesh, a tuple (vertices, faces) or a list of "
            f"them (fragments), not {type(value).__name__}"
        )
    out = []
    for pair in pairs:
        if not (isinstance(pair, Sequence) and len(pair) == 2):
            raise InvalidInputError(f"segment {segment_id}: a fragment is a tuple (vertices, faces)")
        v = np.asarray(pair[0], dtype=np.float32)
        f = np.asarray(pair[1])
        if f.size == 0:
            f = f.reshape(0, 3)
        if v.ndim != 2 or v.shape[1] != 3:
            raise InvalidInputError(f"segment {segment_id}: vertices must be (N, 3), not {v.shape}")
        if f.ndim != 2 or f.shape[1] != 3:
            raise InvalidInputError(f"segment {segment_id}: faces must be (M, 3), not {f.shape}")
        if f.size and (f.dtype.kind not in "iu" or f.min() < 0 or f.max() >= len(v)):
            raise InvalidInputError(f"segment {segment_id}: faces must be indexes of its {len(v)} vertices")
        out.append(
            (np.ascontiguousarray(v).reshape(-1), np.ascontiguousarray(f, dtype=np.uint32).reshape(-1))
        )
    return out


def write_meshes(
    path: Any,
    meshes: Mapping[int, MeshLike] | Iterable[Mesh],
    *,
    gzip: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write legacy meshes (``neuroglancer_legacy_mesh``) into the directory ``path``: per
    segment the fragments ``ID:0:I`` and the manifest ``ID:0``, and the directory's ``info``.
    Returns the number of segments written.

    ``meshes`` maps segment ids to a :class:`Mesh`, a tuple ``(vertices, faces)`` (``(N, 3)``
    positions in nanometres, ``(M, 3)`` vertex indexes) or a list of such tuples (one fragment
    each); an iterable of :class:`Mesh` works too. ``gzip`` stores every file as ``NAME.gz``
    (cloud-volume's ``compress="gzip"``). A directory with an ``info`` is refused unless
    ``overwrite``. For Neuroglancer and cloud-volume to find the meshes of a segmentation
    layer, its ``info`` names the directory (``"mesh": "mesh"``).

    >>> nc.precomputed.write_meshes("seg/mesh", {42: (vertices, faces)})
    """
    location = _fspath(path)
    if isinstance(meshes, Mapping):
        items = [(_segment(k), _mesh_parts(int(k), v)) for k, v in meshes.items()]
    else:
        items = []
        for m in meshes:
            if not isinstance(m, Mesh):
                raise InvalidInputError(
                    "meshes must be a mapping of segment id to mesh or an iterable of Mesh; "
                    f"found a {type(m).__name__} in the iterable"
                )
            items.append((_segment(m.segment_id), _mesh_parts(m.segment_id, m)))
    return _native.meshes_write(location, items, bool(gzip), bool(overwrite), _options_json(storage_options))


# --- annotations -----------------------------------------------------------------------------


@dataclass(frozen=True)
class PropertySpec:
    """A property of every annotation of a collection: its ``id``, ``type`` (``uint8`` …
    ``float32``, ``rgb``, ``rgba``), and optionally a ``description`` and ``enum_values``
    with ``enum_labels``."""

    id: str
    type: str
    description: str | None = None
    enum_values: list[int | float] | None = None
    enum_labels: list[str] | None = None

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of its values (``rgb`` and ``rgba``: uint8, 3 or 4 per annotation)."""
        return np.dtype("uint8" if self.type in ("rgb", "rgba") else self.type)


@dataclass(frozen=True)
class Annotation:
    """One annotation: its ``id``, its ``geometry`` (a point ``(rank,)``; a line's or box's
    two corners, or an ellipsoid's centre and radii ``(2, rank)``; a polyline's points
    ``(k, rank)``; float32), its property values by id and its related segment ids by
    relationship (uint64 arrays; empty when read from an index that does not carry them)."""

    id: int
    type: str
    geometry: npt.NDArray[np.float32]
    properties: dict[str, Any] = field(default_factory=dict)
    relationships: dict[str, npt.NDArray[np.uint64]] = field(default_factory=dict)


@dataclass(frozen=True)
class Annotations:
    """Annotations as columns: ``ids`` ``(n,)`` uint64; ``geometry`` ``(n, rank)`` for
    points, ``(n, 2, rank)`` for lines, boxes and ellipsoids, a list of ``(k, rank)`` arrays
    for polylines; ``properties`` id → ``(n,)`` array (``(n, 3)`` / ``(n, 4)`` for colours);
    ``relationships`` id → a list of ``n`` uint64 arrays. ``len()``, indexing (an
    :class:`Annotation`) and iteration work row by row; :meth:`to_table` gives a
    ``pyarrow.Table``."""

    type: str
    dimensions: tuple[str, ...]
    ids: npt.NDArray[np.uint64]
    geometry: npt.NDArray[np.float32] | list[npt.NDArray[np.float32]]
    properties: dict[str, npt.NDArray[Any]]
    relationships: dict[str, list[npt.NDArray[np.uint64]]]

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> Annotation:
        return Annotation(
            int(self.ids[i]),
            self.type,
            self.geometry[i],
            {k: (v[i].copy() if v.ndim > 1 else v[i].item()) for k, v in self.properties.items()},
            {k: v[i] for k, v in self.relationships.items()},
        )

    def __iter__(self) -> Iterator[Annotation]:
        for i in range(len(self)):
            yield self[i]

    def to_table(self) -> Any:
        """The annotations as a ``pyarrow.Table`` (needs pyarrow): ``id``; the geometry as
        float32 columns named after the dimensions (points: ``x``, ``y``, ``z``; lines and
        boxes: ``point_a_x`` … ``point_b_z``; ellipsoids: ``center_x`` … ``radii_z``;
        polylines: ``points``, a list of ``[rank]`` lists); one column per property (colours
        as ``[3]`` / ``[4]`` uint8 lists) and per relationship (a list of uint64 segment ids).
        A property or relationship whose id is taken already gets the prefix
        ``property:`` / ``relationship:``."""
        pa = _pyarrow()
        rank = len(self.dimensions)
        columns: dict[str, Any] = {"id": pa.array(self.ids, pa.uint64())}
        if self.type == "polyline":
            points = [np.asarray(g, np.float32).reshape(-1, rank).tolist() for g in self.geometry]
            columns["points"] = pa.array(points, pa.list_(pa.list_(pa.float32(), rank)))
        else:
            g = np.asarray(self.geometry, np.float32).reshape(len(self.ids), -1)
            names = {
                "point": [""],
                "line": ["point_a_", "point_b_"],
                "axis_aligned_bounding_box": ["point_a_", "point_b_"],
                "ellipsoid": ["center_", "radii_"],
            }[self.type]
            for p, prefix in enumerate(names):
                for d, dim in enumerate(self.dimensions):
                    columns[prefix + dim] = pa.array(g[:, p * rank + d], pa.float32())
        for name, values in self.properties.items():
            key = name if name not in columns else f"property:{name}"
            if values.ndim == 2:
                columns[key] = pa.array(values.tolist(), pa.list_(pa.uint8(), values.shape[1]))
            else:
                columns[key] = pa.array(values)
        for name, lists in self.relationships.items():
            key = name if name not in columns else f"relationship:{name}"
            columns[key] = pa.array([x.tolist() for x in lists], pa.list_(pa.uint64()))
        return pa.table(columns)

    def __repr__(self) -> str:
        return f"<neurochunk.precomputed.Annotations {self.type} n={len(self)}>"


class AnnotationCollection(_WithInfo):
    """An annotation collection (``neuroglancer_annotations_v1``) opened by
    :func:`annotations`."""

    def __init__(self, location: str, raw: _native.RawAnnotations) -> None:
        super().__init__(location, raw.info())
        self._raw = raw

    @property
    def type(self) -> str:
        """The geometry: ``point``, ``line``, ``axis_aligned_bounding_box``, ``ellipsoid`` or
        ``polyline``."""
        return str(self._info["annotation_type"]).lower()

    @property
    def dimensions(self) -> dict[str, tuple[float, str]]:
        """The coordinate space: dimension name → (scale, unit)."""
        return {k: (float(v[0]), str(v[1])) for k, v in self._info["dimensions"].items()}

    @property
    def rank(self) -> int:
        """The number of dimensions."""
        return len(self._info["dimensions"])

    @property
    def lower_bound(self) -> npt.NDArray[np.float64]:
        """The lower bound of all geometry."""
        return np.asarray(self._info["lower_bound"], np.float64)

    @property
    def upper_bound(self) -> npt.NDArray[np.float64]:
        """The (exclusive) upper bound of all geometry."""
        return np.asarray(self._info["upper_bound"], np.float64)

    @property
    def properties(self) -> list[PropertySpec]:
        """The properties, in ``info`` order."""
        return [
            PropertySpec(
                p["id"], p["type"], p.get("description"), p.get("enum_values"), p.get("enum_labels")
            )
            for p in self._info.get("properties", [])
        ]

    @property
    def relationships(self) -> list[str]:
        """The relationship ids (each has a related-object index)."""
        return [r["id"] for r in self._info.get("relationships", [])]

    @property
    def sharded(self) -> bool:
        """Whether the id index is sharded."""
        return "sharding" in self._info["by_id"]

    def _columns(self, raw: Any) -> Annotations:
        ids, geometry, offsets, properties, relationships = raw
        rank = self.rank
        n = len(ids)
        if self.type == "polyline":
            shaped: Any = [geometry[offsets[i] : offsets[i + 1]].reshape(-1, rank) for i in range(n)]
        elif self.type == "point":
            shaped = geometry.reshape(n, rank)
        else:
            shaped = geometry.reshape(n, 2, rank)
        props: dict[str, npt.NDArray[Any]] = {}
        for spec, values in zip(self.properties, properties):
            if spec.type in ("rgb", "rgba"):
                props[spec.id] = values.astype(np.uint8).reshape(n, 3 if spec.type == "rgb" else 4)
            else:
                props[spec.id] = values.astype(spec.dtype)
        rels = {
            name: [values[o[i] : o[i + 1]] for i in range(n)]
            for name, (values, o) in zip(self.relationships, relationships)
        }
        return Annotations(self.type, tuple(self.dimensions), ids, shaped, props, rels)

    def get(self, annotation_id: int) -> Annotation:
        """The annotation ``annotation_id`` with its relationships (from the id index); a
        missing one raises :class:`neurochunk.NodeNotFoundError` (a ``KeyError``)."""
        found = self._columns(self._raw.get(_segment(annotation_id)))
        if not len(found):
            raise NodeNotFoundError(f"{self._location}: no annotation {annotation_id}")
        return found[0]

    def __getitem__(self, annotation_id: int) -> Annotation:
        return self.get(annotation_id)

    def by_segment(self, relationship: str, segment_id: int) -> Annotations:
        """The annotations related to segment ``segment_id`` by ``relationship`` (its id, as
        in :attr:`relationships`), from the related-object index (which holds no
        relationships: those lists are empty)."""
        try:
            index = self.relationships.index(relationship)
        except ValueError:
            raise InvalidInputError(
                f"{self._location}: no relationship {relationship!r} (the collection has {self.relationships})"
            ) from None
        return self._columns(self._raw.related(index, _segment(segment_id)))

    def all(self) -> Annotations:
        """Every annotation, by id, with its relationships (every spatial index cell is
        read, then the id index for the relationships)."""
        return self._columns(self._raw.all())

    def to_table(self) -> Any:
        """Every annotation as a ``pyarrow.Table`` (see :meth:`Annotations.to_table`)."""
        return self.all().to_table()

    def __repr__(self) -> str:
        return (
            f"<neurochunk.precomputed.AnnotationCollection {self._location!r} type={self.type} "
            f"properties={[p.id for p in self.properties]} relationships={self.relationships}>"
        )


def annotations(path: Any, *, storage_options: Mapping[str, Any] | None = None) -> AnnotationCollection:
    """Open the annotation collection at ``path`` (a directory with a
    ``neuroglancer_annotations_v1`` ``info``).

    >>> points = nc.precomputed.annotations("synapses")
    >>> points.type, [p.id for p in points.properties], points.relationships
    >>> points.get(17).geometry
    >>> points.by_segment("presyn", 648518346349538235).ids
    """
    location = _fspath(path)
    return AnnotationCollection(location, _native.annotations_open(location, _options_json(storage_options)))


def _property_type(name: str, values: npt.NDArray[Any], declared: str | None) -> str:
    if declared is not None:
        if declared not in _PROPERTY_TYPES:
            raise InvalidInputError(f"property {name!r}: type {declared!r} is not one of {_PROPERTY_TYPES}")
        return declared
    if values.ndim == 2 and values.shape[1] in (3, 4) and values.dtype.kind in "iu":
        return "rgb" if values.shape[1] == 3 else "rgba"
    inferred = _stored_type(values, _PROPERTY_TYPES)
    if inferred is not None:
        return inferred
    raise InvalidInputError(
        f"property {name!r}: values of dtype {values.dtype} cannot be stored (give its 'type', "
        f"one of {_PROPERTY_TYPES})"
    )


def write_annotations(
    path: Any,
    type: AnnotationType,  # noqa: A002 - the format's word
    geometry: npt.ArrayLike | Sequence[npt.ArrayLike],
    *,
    ids: npt.ArrayLike | None = None,
    properties: Mapping[str, Any] | None = None,
    relationships: Mapping[str, Sequence[Any]] | None = None,
    dimensions: Mapping[str, tuple[float, str]] | None = None,
    limit: int = 10000,
    sharded: bool = False,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write an annotation collection (``neuroglancer_annotations_v1``) at ``path``, with its
    id index, one related-object index per relationship and a spatial index; returns the
    number of annotations.

    ``type`` is ``"point"``, ``"line"``, ``"axis_aligned_bounding_box"``, ``"ellipsoid"`` or
    ``"polyline"``; ``geometry`` holds ``n`` annotations: points ``(n, rank)``; two corners
    (lines, boxes) or a centre and radii (ellipsoids) ``(n, 2, rank)`` (or ``(n, 2 * rank)``);
    polylines a sequence of ``(k, rank)`` arrays (``k >= 2``). ``ids`` default to ``0 … n-1``.

    ``properties`` maps a property id (``[a-z][a-zA-Z0-9_]*``) to ``n`` values, or to a dict
    ``{"values": ..., "type": ..., "description": ..., "enum_values": ..., "enum_labels":
    ...}``. The type comes from the dtype unless given: ``uint8`` … ``int32`` as they are,
    floats as ``float32``, other integers as ``int32`` or ``uint32`` when the values fit,
    ``(n, 3)`` / ``(n, 4)`` integer arrays as ``rgb`` / ``rgba``.

    ``relationships`` maps a relationship id to ``n`` entries, each a segment id or a list of
    them (the segments the annotation relates to). ``dimensions`` maps each dimension name to
    ``(scale, unit)`` (default ``x``, ``y``, ``z`` of 1 nm). ``limit`` caps the annotations
    per spatial index cell; ``sharded`` shards every index. An existing collection (an
    ``info`` at ``path``) is refused unless ``overwrite``.

    >>> nc.precomputed.write_annotations(
    ...     "synapses", "point", [[10, 20, 30], [40, 50, 60]],
    ...     properties={"score": np.array([0.5, 0.9], "f4"), "color": [[255, 0, 0], [0, 255, 0]]},
    ...     relationships={"presyn": [7, [8, 9]]})
    2
    """
    location = _fspath(path)
    if type not in _ANNOTATION_TYPES:
        raise InvalidInputError(f"type must be one of {_ANNOTATION_TYPES}, not {type!r}")
    dims = dict(dimensions) if dimensions is not None else {"x": (1.0, "nm"), "y": (1.0, "nm"), "z": (1.0, "nm")}
    rank = len(dims)
    if rank == 0:
        raise InvalidInputError("dimensions must name at least one dimension")
    if type == "polyline":
        if isinstance(geometry, np.ndarray) and geometry.ndim == 3:
            lines = list(geometry)
        else:
            lines = list(geometry)  # type: ignore[arg-type]
        flat = []
        offsets = [0]
        for i, line in enumerate(lines):
            p = np.asarray(line, dtype=np.float32)
            if p.ndim != 2 or p.shape[1] != rank or len(p) < 2:
                raise InvalidInputError(f"polyline {i} must be (k, {rank}) with k >= 2, not {p.shape}")
            flat.append(p.reshape(-1))
            offsets.append(offsets[-1] + p.size)
        n = len(lines)
        geom = np.concatenate(flat) if flat else np.zeros(0, np.float32)
        offs = np.asarray(offsets, np.uint64)
    else:
        per = rank if type == "point" else 2 * rank
        g = np.asarray(geometry, dtype=np.float32)
        if g.size == 0:
            g = g.reshape(0, per)
        if g.ndim == 3 and type != "point":
            g = g.reshape(len(g), -1)
        if g.ndim != 2 or g.shape[1] != per:
            shape = f"(n, {rank})" if type == "point" else f"(n, 2, {rank}) or (n, {per})"
            raise InvalidInputError(f"{type} geometry must be {shape} for {rank} dimensions, not {g.shape}")
        n = len(g)
        geom = np.ascontiguousarray(g).reshape(-1)
        offs = np.arange(n + 1, dtype=np.uint64) * np.uint64(per)
    if not np.all(np.isfinite(geom)):
        raise InvalidInputError("geometry holds a value that is not finite")
    if ids is None:
        id_array = np.arange(n, dtype=np.uint64)
    else:
        raw_ids = np.asarray(ids)
        if raw_ids.shape != (n,) or (raw_ids.size and (raw_ids.dtype.kind not in "iu" or raw_ids.min() < 0)):
            raise InvalidInputError(f"ids must be {n} non-negative integers")
        id_array = np.ascontiguousarray(raw_ids, dtype=np.uint64)
        if len(np.unique(id_array)) != n:
            raise InvalidInputError("ids must be unique")
    specs: list[dict[str, Any]] = []
    columns: list[npt.NDArray[np.float64]] = []
    for name, value in (properties or {}).items():
        extra: dict[str, Any] = {}
        declared = None
        if isinstance(value, Mapping):
            extra = dict(value)
            if "values" not in extra:
                raise InvalidInputError(f"property {name!r}: a dict needs 'values'")
            value = extra.pop("values")
            declared = extra.pop("type", None)
        values = np.asarray(value)
        t = _property_type(str(name), values, declared)
        k = 3 if t == "rgb" else 4 if t == "rgba" else 1
        if values.shape != ((n,) if k == 1 else (n, k)):
            want = f"({n},)" if k == 1 else f"({n}, {k})"
            raise InvalidInputError(f"property {name!r} must be {want} values, not {values.shape}")
        specs.append({"id": str(name), "type": t, **extra})
        columns.append(np.ascontiguousarray(values, dtype=np.float64).reshape(-1))
    rel_specs: list[dict[str, Any]] = []
    rel_columns: list[tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]] = []
    for name, entries in (relationships or {}).items():
        entries = list(entries)
        if len(entries) != n:
            raise InvalidInputError(f"relationship {name!r} needs {n} entries (one per annotation), not {len(entries)}")
        related: list[int] = []
        offsets = [0]
        for entry in entries:
            if entry is None:
                pass
            elif isinstance(entry, (int, np.integer)):
                related.append(_segment(entry))
            else:
                related.extend(_segment(s) for s in np.asarray(entry).reshape(-1).tolist())
            offsets.append(len(related))
        rel_specs.append({"id": str(name), "key": f"rel_{name}"})
        rel_columns.append((np.asarray(related, np.uint64), np.asarray(offsets, np.uint64)))
    info = {
        "@type": "neuroglancer_annotations_v1",
        "dimensions": {str(k): [float(v[0]), str(v[1])] for k, v in dims.items()},
        "lower_bound": [0.0] * rank,
        "upper_bound": [1.0] * rank,
        "annotation_type": type,
        "properties": specs,
        "relationships": rel_specs,
        "by_id": {"key": "by_id"},
        "spatial": [],
    }
    if limit < 1:
        raise InvalidInputError("limit must be positive")
    return _native.annotations_write(
        location,
        json.dumps(info),
        id_array,
        np.ascontiguousarray(geom, dtype=np.float32),
        offs,
        columns,
        rel_columns,
        int(limit),
        bool(sharded),
        bool(overwrite),
        _options_json(storage_options),
    )
