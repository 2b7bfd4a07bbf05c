"""NWB files on Zarr (both hdmf-zarr conventions: the legacy Zarr v2 one and the Zarr v3 one).

>>> import neurochunk as nc
>>> f = nc.nwb.open("session.nwb.zarr")
>>> f.nwb_version, f.convention
('2.8.0', 'v3')
>>> [o.path for o in f.objects(type="ElectricalSeries")]
['/acquisition/ElectricalSeries']
>>> series = f["/acquisition/ElectricalSeries"]
>>> series.attrs["description"], series.neurodata_type
>>> chunk = series["data"][:1000, :4]          # a lazy neurochunk.Array, read on slicing
>>> f["/units"].to_dict()["spike_times"]       # a DynamicTable's columns (ragged ones split)
>>> ref = series["electrodes"].attrs["table"]  # references resolve to objects ...
>>> ref.resolve()                              # ... or, for region references, to data

``validate`` checks files (NWB on Zarr, or HDF5) against the specifications they cache, like
``neurochunk nwb validate``; ``import_file`` imports an HDF5 NWB file into either convention,
or writes a LINDI reference file to it, like ``neurochunk nwb import``.

This module reads the files; it does not re-implement pynwb's object model. For pynwb
objects, open the same file with ``hdmf_zarr.nwb.NWBZarrIO``.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from . import _indexing as ix
from . import _neurochunk as _native
from ._core import Array, CompressorLike, _compressors_json
from ._errors import InvalidInputError, NodeNotFoundError

__all__ = [
    "File",
    "Group",
    "Dataset",
    "Reference",
    "TypedObject",
    "Problem",
    "ValidationReport",
    "open",
    "convert",
    "demo",
    "validate",
    "import_file",
]


def _fspath(location: Any) -> str:
    try:
        return str(os.fspath(location))
    except TypeError:
        raise InvalidInputError(f"a location must be a str or os.PathLike, not {type(location).__name__}") from None


def _absolute(path: str) -> str:
    return "/" + path.strip("/")


def _join(parent: str, name: str) -> str:
    return _absolute(parent.rstrip("/") + "/" + name.strip("/"))


# --- references ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """An object reference (or, with ``region``, a region reference) stored in an attribute
    or dataset: ``path`` inside the file ``source`` (``"."``: this file).

    :meth:`resolve` gives the object it names (a :class:`Group` or :class:`Dataset`), or for
    a region reference, the selected data; :meth:`target` always gives the object."""

    path: str
    source: str = "."
    object_id: str | None = None
    source_object_id: str | None = None
    region: Any = None
    _file: Any = None

    def _json(self) -> str:
        d: dict[str, Any] = {"path": self.path, "source": self.source}
        if self.object_id is not None:
            d["object_id"] = self.object_id
        if self.source_object_id is not None:
            d["source_object_id"] = self.source_object_id
        if self.region is not None:
            d["region"] = self.region
        return json.dumps(d)

    def _owner(self) -> File:
        if self._file is None:
            raise InvalidInputError("this reference was not read from a file")
        assert isinstance(self._file, File)
        return self._file

    def target(self) -> Group | Dataset:
        """The group or dataset the reference names (links and external files followed)."""
        owner = self._owner()
        raw, path, kind = owner._raw.dereference(self._json())
        return _node(owner if raw is None else File(raw), path, kind)

    def read(self) -> Any:
        """The data the reference selects: the whole target dataset, or the region of it."""
        return _values(self._owner(), *self._owner()._raw.read_reference(self._json()))

    def resolve(self) -> Any:
        """The object an object reference names; the data a region reference selects."""
        return self.read() if self.region is not None else self.target()

    def __repr__(self) -> str:
        region = f" region={self.region!r}" if self.region is not None else ""
        source = f" source={self.source!r}" if self.source not in (".", "") else ""
        return f"<neurochunk.nwb.Reference {self.path!r}{source}{region}>"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Reference)
            and (self.path, self.source, self.region) == (other.path, other.source, other.region)
        )

    def __hash__(self) -> int:
        return hash((self.path, self.source, json.dumps(self.region)))


def _reference(file: File, d: Any) -> Reference | None:
    if d is None:
        return None
    return Reference(
        path=d["path"],
        source=d.get("source", "."),
        object_id=d.get("object_id"),
        source_object_id=d.get("source_object_id"),
        region=d.get("region"),
        _file=file,
    )


def _values(file: File, shape: list[int], scalar: bool, kind: str, payload: Any) -> Any:
    """A dataset read by the native module as NumPy data (a scalar for a scalar dataset)."""
    out: Any
    if kind == "numeric":
        descr, data = payload
        dtype = np.dtype(_descr(json.loads(descr)))
        out = np.frombuffer(data, dtype=dtype).copy().reshape(shape)
    elif kind == "text":
        out = np.empty(len(payload), dtype=object)
        out[:] = payload
        out = out.reshape(shape)
    elif kind == "references":
        refs = [_reference(file, r) for r in json.loads(payload)]
        out = np.empty(len(refs), dtype=object)
        out[:] = refs
        out = out.reshape(shape)
    else:
        doc = json.loads(payload)
        fields = doc["fields"]
        dtype = np.dtype(
            [(name, _descr(descr) if k == "numeric" else object) for name, k, descr in fields]
        )
        out = np.empty(len(doc["rows"]), dtype=dtype)
        for i, row in enumerate(doc["rows"]):
            cells: list[Any] = []
            for (name, k, _), cell in zip(fields, row):
                if k == "reference":
                    cells.append(_reference(file, cell))
                elif k == "numeric" and isinstance(cell, str):
                    cells.append(float(cell))  # NaN / Infinity markers
                else:
                    cells.append(cell)
            out[i] = tuple(cells)
        out = out.reshape(shape)
    if scalar:
        return out.reshape(-1)[0] if out.size else None
    return out


def _descr(value: Any) -> Any:
    if isinstance(value, str):
        return value
    return [tuple([f[0], _descr(f[1])] + ([tuple(f[2])] if len(f) > 2 else [])) for f in value]


# --- nodes -----------------------------------------------------------------------------------


def _attributes(file: File, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, v in json.loads(file._raw.attributes(path)).items():
        out[name] = _reference(file, v["reference"]) if "reference" in v else v["value"]
    return out


class _Node:
    """What groups and datasets share: path, attributes, type."""

    def __init__(self, file: File, path: str) -> None:
        self._file = file
        self._path = _absolute(path)
        self._attrs: dict[str, Any] | None = None

    @property
    def file(self) -> File:
        """The file holding the node (another file's, for a node reached through an external
        link)."""
        return self._file

    @property
    def path(self) -> str:
        """The node's absolute path in its file."""
        return self._path

    @property
    def name(self) -> str:
        """The last component of the path (``"/"`` for the root)."""
        return self._path.rsplit("/", 1)[-1] or "/"

    @property
    def attrs(self) -> dict[str, Any]:
        """The attributes (reserved hdmf ones hidden; references as :class:`Reference`)."""
        if self._attrs is None:
            self._attrs = _attributes(self._file, self._path)
        return dict(self._attrs)

    @property
    def neurodata_type(self) -> str | None:
        """The node's ``neurodata_type`` (or HDMF ``data_type``), if typed."""
        a = self.attrs
        t = a.get("neurodata_type", a.get("data_type"))
        return None if t is None else str(t)

    @property
    def namespace(self) -> str | None:
        """The namespace defining the node's type."""
        n = self.attrs.get("namespace")
        return None if n is None else str(n)

    @property
    def object_id(self) -> str | None:
        """The node's ``object_id`` (a UUID), if it has one."""
        o = self.attrs.get("object_id")
        return None if o is None else str(o)


class Group(_Node):
    """A group of an NWB file: a mapping of member names (links included, followed) to
    groups and datasets, with attributes."""

    def __getitem__(self, name: str) -> Group | Dataset:
        """The member ``name`` (a relative path such as ``"a/b"``, or an absolute one)."""
        if not isinstance(name, str):
            raise TypeError(f"member names are str, not {type(name).__name__}")
        path = _absolute(name) if name.startswith("/") else _join(self._path, name)
        return self._file._lookup(path)

    def keys(self) -> list[str]:
        """The member names (groups, datasets and links), sorted."""
        return [n for n, _ in self._file._raw.children(self._path)]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip("/").split("/")[0] in self.keys() and self._exists(name)

    def _exists(self, name: str) -> bool:
        try:
            self[name]
        except NodeNotFoundError:
            return False
        return True

    def _dataset(self, name: str) -> Dataset:
        node = self[name]
        if not isinstance(node, Dataset):
            raise InvalidInputError(f"'{node.path}' is a group, not a dataset")
        return node

    def items(self) -> list[tuple[str, Group | Dataset]]:
        """``(name, member)`` pairs, links followed."""
        return [(n, self[n]) for n in self.keys()]

    def to_dict(self) -> dict[str, Any]:
        """A DynamicTable's columns read into memory: ``{"id": ..., column: values}`` in the
        order of its ``colnames``; a ragged column (one with a ``<column>_index``) becomes a
        list of one array per row, its index column is not listed."""
        names = self.attrs.get("colnames")
        if names is None:
            raise InvalidInputError(f"'{self._path}' is not a DynamicTable (no colnames attribute)")
        if isinstance(names, str):
            names = [names]
        out: dict[str, Any] = {}
        members = set(self.keys())
        if "id" in members:
            out["id"] = self._dataset("id")[...]
        for col in names:
            data = self._dataset(col)[...]
            index_name = f"{col}_index"
            while index_name in members:
                ends = np.asarray(self._dataset(index_name)[...]).astype(np.int64)
                starts = np.concatenate([[0], ends[:-1]])
                data = [data[s:e] for s, e in zip(starts, ends)]
                index_name += "_index"
            out[col] = data
        return out

    def __repr__(self) -> str:
        t = self.neurodata_type
        return f"<neurochunk.nwb.Group {self._path!r}{' ' + t if t else ''}>"


class Dataset(_Node):
    """A dataset of an NWB file, read lazily with NumPy indexing (``d[:100]``, ``d[...]``,
    ``np.asarray(d)``). Numeric datasets are :class:`neurochunk.Array` underneath
    (:attr:`array`: chunked reads, ``to_dask()``); text is read as ``str`` objects,
    references as :class:`Reference` objects, compound datasets as structured arrays."""

    def __init__(self, file: File, path: str) -> None:
        super().__init__(file, path)
        shape, scalar, kind, descr = file._raw.dataset_info(self._path)
        self._scalar = bool(scalar)
        self._shape: tuple[int, ...] = () if scalar else tuple(shape)
        self._kind = kind
        self._descr = descr
        self._array: Array | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape (``()`` for a scalar, in either convention)."""
        return self._shape

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def kind(self) -> str:
        """``"numeric"``, ``"text"``, ``"references"`` or ``"compound"``."""
        return self._kind

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of what a read returns (``object`` for text and references)."""
        dt: np.dtype[Any]
        if self._kind == "numeric" and self._descr is not None:
            dt = np.dtype(_descr(json.loads(self._descr)))
        elif self._kind == "compound":
            dt = np.asarray(self[:0] if self.ndim else self[()]).dtype
        else:
            dt = np.dtype(object)
        return dt

    @property
    def array(self) -> Array:
        """The numeric dataset as a read-only :class:`neurochunk.Array` (lazy, chunked)."""
        if self._kind != "numeric":
            raise InvalidInputError(f"'{self._path}' holds {self._kind}, not numbers")
        if self._array is None:
            self._array = Array(self._file._raw.dataset_array(self._path))
        return self._array

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a scalar dataset")
        return self._shape[0]

    def __getitem__(self, key: Any) -> Any:
        """Read a region (NumPy basic indexing; ``d[()]`` or ``d[...]`` reads a scalar)."""
        if self._kind == "numeric" and not self._scalar:
            return self.array[key]
        if self._scalar:
            if key not in ((), Ellipsis):
                raise InvalidInputError(f"'{self._path}' is a scalar: read it with d[()]")
            return _values(self._file, *self._file._raw.read(self._path, None))
        if not ix.is_basic(key):
            raise InvalidInputError("NWB datasets of text, references or compounds take basic indexing only")
        sel = ix.resolve_basic(key, self._shape)
        shape, _scalar, kind, payload = self._file._raw.read(self._path, sel.runs)
        out = _values(self._file, list(sel.shape), False, kind, payload)
        if sel.scalar:
            return out[()]
        return out.reshape(sel.result_shape)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        out = np.asarray(self[()] if self._scalar else self[...])
        return out if dtype is None else out.astype(dtype, copy=False)

    def __repr__(self) -> str:
        t = self.neurodata_type
        return f"<neurochunk.nwb.Dataset {self._path!r} shape={self._shape} {self._kind}{' ' + t if t else ''}>"


def _node(file: File, path: str, kind: str) -> Group | Dataset:
    return Dataset(file, path) if kind == "dataset" else Group(file, path)


@dataclass(frozen=True)
class TypedObject:
    """A typed group or dataset as listed by :meth:`File.objects`."""

    path: str
    kind: str
    neurodata_type: str
    namespace: str | None
    object_id: str | None
    _file: Any = None

    def open(self) -> Group | Dataset:
        """The object itself."""
        assert isinstance(self._file, File)
        return self._file[self.path]


class File(Group):
    """An open NWB file: its root group (``f["/acquisition/..."]``, attributes), typed
    objects, links, references and cached specifications."""

    def __init__(self, raw: _native.RawNwbFile) -> None:
        self._raw = raw
        self._info = json.loads(raw.info())
        super().__init__(self, "/")

    def _lookup(self, path: str) -> Group | Dataset:
        raw, target, kind = self._raw.resolve(path)
        return _node(self if raw is None else File(raw), target, kind)

    @property
    def convention(self) -> str:
        """``"v3"`` (hdmf-zarr ≥ 0.14, Zarr v3) or ``"legacy"`` (Zarr v2)."""
        return str(self._info["convention"])

    @property
    def storage(self) -> str:
        """``"zarr"`` (a tree of Zarr nodes) or ``"hdf5"`` (an HDF5 file read in place, shown
        in the legacy convention's form)."""
        return str(self._info["storage"])

    @property
    def nwb_version(self) -> str | None:
        """The file's NWB version (``None`` for a plain HDMF file)."""
        v = self._info["nwb_version"]
        return None if v is None else str(v)

    @property
    def location(self) -> str:
        """Where the file is (its path or URL)."""
        return str(self._info["display"])

    def objects(self, type: str | None = None) -> list[TypedObject]:  # noqa: A002 - pynwb's word
        """The typed groups and datasets (sorted by path), only those of ``neurodata_type``
        ``type`` when given."""
        return [
            TypedObject(p, k, t, ns, oid, self)
            for p, k, t, ns, oid in self._raw.objects()
            if type is None or t == type
        ]

    def find(self, object_id: str) -> Group | Dataset | None:
        """The object with this ``object_id``, or None."""
        for p, k, _t, _ns, oid in self._raw.objects():
            if oid == object_id:
                return _node(self, p, k)
        return None

    def links(self) -> list[tuple[str, str, str]]:
        """Every soft link: ``(path, target path, source file)`` (``"."``: this file)."""
        return self._raw.links()

    def specifications(self) -> list[tuple[str, str, list[str]]]:
        """The cached specifications: ``(namespace, version, documents)``."""
        return self._raw.specifications()

    def specification(self, namespace: str, version: str, source: str = "namespace") -> Any:
        """One cached specification document (``"namespace"`` or a schema source), parsed."""
        return json.loads(self._raw.specification(namespace, version, source))

    def __repr__(self) -> str:
        return f"<neurochunk.nwb.File {self.location!r} {self.convention} NWB {self.nwb_version}>"

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def open(path: Any, *, storage_options: Mapping[str, Any] | None = None) -> File:  # noqa: A001
    """Open the NWB (or HDMF) file at ``path``: a Zarr tree in either convention, a LINDI
    reference file or an HDF5 file (as pynwb's ``NWBHDF5IO`` writes them), a local path or a
    URL (see :func:`neurochunk.open` for ``storage_options``). An HDF5 file is read in place
    by ranged reads: its metadata when opened, the chunks a slice touches when indexed. The
    node tree is read once (from consolidated metadata when present); datasets are read when
    indexed."""
    return File(_native.nwb_open(_fspath(path), json.dumps(dict(storage_options or {}))))


def convert(src: Any, dst: Any, *, convention: str = "v3") -> dict[str, int]:
    """Convert the local NWB file ``src`` into a new file ``dst`` in ``convention``
    (``"v3"``: hdmf-zarr ≥ 0.14's Zarr v3 convention, ``"legacy"``: the Zarr v2 one):
    groups, datasets (numeric ones streamed chunk by chunk), attributes, links, references
    and cached specifications. Returns what was written (``groups``, ``datasets``,
    ``streamed``, ``links``, ``namespaces``)."""
    return json.loads(_native.nwb_convert(_fspath(src), _fspath(dst), convention))  # type: ignore[no-any-return]


def demo(path: Any, *, convention: str = "v3", scale: int = 0) -> dict[str, int]:
    """Write a small, realistic extracellular-electrophysiology NWB file at ``path`` (like
    ``neurochunk nwb demo``): electrodes, a recording, sorted units, trials; ``scale`` adds
    that many typed TimeSeries. Returns the numbers of what it holds."""
    return json.loads(_native.nwb_demo(_fspath(path), convention, int(scale)))  # type: ignore[no-any-return]



# --- validation ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One problem :func:`validate` found: the object's ``path`` in ``file``, its ``type``
    (for an untyped object the specification it falls under, ``TimeSeries/data``), the
    ``rule`` broken (``missing-attribute``, ``dtype``, ``shape``, ``table-region``, ...,
    ``unreadable`` for a file that could not be read), ``severity`` (``"error"`` or
    ``"warning"``), the ``message`` and, for attribute problems, the ``attribute``."""

    file: str
    path: str
    type: str
    rule: str
    severity: str
    message: str
    attribute: str | None = None

    def __str__(self) -> str:
        attribute = f"attribute '{self.attribute}': " if self.attribute else ""
        return f"{self.severity} [{self.rule}] {self.path} ({self.type}): {attribute}{self.message}"


@dataclass(frozen=True)
class ValidationReport:
    """What :func:`validate` found in all the files: ``problems`` (errors first per file),
    ``status`` (as ``neurochunk nwb validate`` exits: 0 every file valid, warnings allowed; 1
    at least one invalid; 2 at least one unreadable or without specifications) and ``ok``
    (status 0)."""

    problems: list[Problem] = field(default_factory=list)
    status: int = 0

    @property
    def ok(self) -> bool:
        """Whether every file is valid (warnings allowed)."""
        return self.status == 0

    @property
    def errors(self) -> list[Problem]:
        """The problems of severity ``"error"``."""
        return [p for p in self.problems if p.severity == "error"]

    def to_dict(self) -> dict[str, Any]:
        """``{"ok", "status", "problems"}``, each problem a dict as ``nwb validate --json``
        prints it (``attribute`` only for attribute problems)."""
        problems = []
        for p in self.problems:
            d = asdict(p)
            if d["attribute"] is None:
                del d["attribute"]
            problems.append(d)
        return {"ok": self.ok, "status": self.status, "problems": problems}

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        verdict = {0: "valid", 1: "invalid", 2: "unreadable"}.get(self.status, "?")
        errors = len(self.errors)
        summary = f"{verdict}: {errors} error(s), {len(self.problems) - errors} warning(s)"
        return "\n".join([summary, *(str(p) for p in self.problems)])


def validate(
    paths: Any,
    namespaces: Any = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> ValidationReport:
    """Validate NWB files against the specifications they cache (or ``namespaces``: namespace
    YAML files, each replacing the cached namespace of the same name), like ``neurochunk nwb
    validate``: schema rules (types and their inheritance, quantities, dtypes, shapes, values,
    references and links) and the table rules hdmf-common states in prose.

    ``paths`` is one location or a sequence of them: NWB files on Zarr (either convention,
    directories or URLs configured by ``storage_options``) or HDF5 NWB files, which are
    imported into scratch storage (memory, or a temporary directory removed afterwards) and
    validated with their object paths. A file that cannot be read is a problem of rule
    ``unreadable`` (status 2), not an exception."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if namespaces is None:
        namespaces = []
    elif isinstance(namespaces, (str, os.PathLike)):
        namespaces = [namespaces]
    problems_json, status = _native.nwb_validate(
        [_fspath(p) for p in paths],
        [_fspath(n) for n in namespaces],
        json.dumps(dict(storage_options or {})),
    )
    problems = [
        Problem(
            file=p["file"],
            path=p["path"],
            type=p["type"],
            rule=p["rule"],
            severity=p["severity"],
            message=p["message"],
            attribute=p.get("attribute"),
        )
        for p in json.loads(problems_json)
    ]
    return ValidationReport(problems=problems, status=status)


# --- import from HDF5 ------------------------------------------------------------------------

_SIZE_UNITS = {
    **dict.fromkeys(["", "b"], 1),
    **dict.fromkeys(["k", "kb", "kib"], 1 << 10),
    **dict.fromkeys(["m", "mb", "mib"], 1 << 20),
    **dict.fromkeys(["g", "gb", "gib"], 1 << 30),
}


def _chunk_bytes(size: int | str) -> int:
    if isinstance(size, bool):
        raise InvalidInputError(f"chunks: expected a size in bytes, not {size!r}")
    if isinstance(size, int):
        n = size
    else:
        match = re.fullmatch(r"(\d+)\s*([A-Za-z]*)", size.strip())
        unit = match.group(2).lower() if match else ""
        if match is None or unit not in _SIZE_UNITS:
            raise InvalidInputError(f"chunks: expected a size such as 4M, not {size!r}")
        digits = match.group(1)
        n = int(digits) * _SIZE_UNITS[unit]
    if n <= 0:
        raise InvalidInputError(f"chunks: a size must be positive, not {size!r}")
    return n


def import_file(
    src: Any,
    dst: Any,
    convention: Literal["zarr2", "zarr3"] = "zarr3",
    virtual: bool = False,
    chunks: int | str | Mapping[str, Sequence[int]] | None = None,
    compressors: CompressorLike = None,
    progress: bool | Callable[[int, int], None] = False,
    *,
    url: str | None = None,
) -> dict[str, Any]:
    """Import the HDF5 NWB file ``src`` (as pynwb's ``NWBHDF5IO`` writes them) into a new NWB
    Zarr file ``dst``, like ``neurochunk nwb import``: ``convention`` ``"zarr2"`` (hdmf-zarr
    ≤ 0.13's legacy convention) or ``"zarr3"`` (hdmf-zarr 0.14's). Every HDMF construct is
    carried over (groups, datasets, attributes, soft and external links, object and region
    references, cached specifications, object ids); numeric chunks whose HDF5 filters Zarr
    has (deflate, shuffle, Zstandard, Blosc) are copied as stored. ``dst`` is written aside
    and published when complete.

    ``chunks`` re-chunks numeric datasets: a size in bytes per chunk (``4 << 20`` or
    ``"4M"``) for all, or ``{path: shape}`` for some. ``compressors`` re-encodes every
    numeric dataset (as in :func:`neurochunk.create_array`, e.g. ``"zstd"``).
    ``progress=True`` prints the bytes done to stderr; a callable is called with ``(done,
    total)`` bytes.

    With ``virtual=True`` nothing is copied: ``dst`` (named ``*.lindi.json``) becomes a LINDI
    reference file whose chunk entries point at byte ranges of ``src`` (or of ``url``, e.g.
    the file's DANDI asset URL), readable by the ``lindi`` package and by neurochunk.

    Returns what was written: counts of ``groups``, ``datasets``, ``links``, ... and
    ``notes`` (one line per thing worth knowing, e.g. a filter re-encoded)."""
    src_path, dst_path = _fspath(src), _fspath(dst)
    if convention not in ("zarr2", "zarr3"):
        raise InvalidInputError(f"convention must be 'zarr2' or 'zarr3', not {convention!r}")
    if virtual:
        if chunks is not None or compressors is not None:
            raise InvalidInputError("a reference file keeps the HDF5 chunks: chunks and compressors do not apply")
        if not dst_path.endswith(".lindi.json"):
            raise InvalidInputError(f"{dst_path}: a reference file's name must end in .lindi.json")
    elif url is not None:
        raise InvalidInputError("url applies to reference files (virtual=True)")
    chunk_bytes: int | None = None
    chunk_shapes: dict[str, list[int]] = {}
    if isinstance(chunks, Mapping):
        for path, shape in chunks.items():
            dims = [int(d) for d in shape]
            if not dims or any(d <= 0 for d in dims):
                raise InvalidInputError(f"chunks[{path!r}]: the shape must be positive integers, not {shape!r}")
            chunk_shapes[str(path)] = dims
    elif chunks is not None:
        chunk_bytes = _chunk_bytes(chunks)
    callback: Callable[[int, int], None] | None
    if progress is True:

        def callback(done: int, total: int) -> None:
            print(f"\rneurochunk: importing {done} / {total} bytes", end="", file=sys.stderr, flush=True)

    elif callable(progress):
        callback = progress
    else:
        callback = None
    summary = _native.nwb_import(
        src_path,
        dst_path,
        "legacy" if convention == "zarr2" else "v3",
        virtual,
        url,
        chunk_bytes,
        chunk_shapes,
        _compressors_json(compressors),
        callback,
    )
    if progress is True:
        print(file=sys.stderr)
    return json.loads(summary)  # type: ignore[no-any-return]
