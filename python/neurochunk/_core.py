"""Arrays, groups, opening, creation and conversion: the public API of neurochunk."""

from __future__ import annotations

import itertools
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Literal, Union

import numpy as np
import numpy.typing as npt

from . import _indexing as ix
from . import _neurochunk as _native
from ._errors import InvalidInputError, NodeExistsError, NodeNotFoundError, ReadOnlyError

__all__ = [
    "Array",
    "Group",
    "Attributes",
    "open",
    "open_array",
    "open_group",
    "create_array",
    "create_group",
    "convert",
]

# What `zarr_format=` takes: 2, 3 or "n5".
ZarrFormat = Union[Literal[2, 3, "n5"], None]
# A compressor: a short-hand string ("zstd:3"), a {"name", "configuration"} dict, a numcodecs
# config dict ({"id": ...}), or a codec object with to_dict() / get_config().
CompressorLike = Any
Mode = Literal["r", "r+", "a", "w", "w-"]

_VARIABLE = {"str", "bytes"}


# --- data types ------------------------------------------------------------------------------


def _descr_to_json(descr: Any) -> Any:
    """NumPy's ``dtype.descr`` as JSON lists."""
    if isinstance(descr, str):
        return descr
    fields = []
    for field in descr:
        name, typ = field[0], field[1]
        if isinstance(name, tuple):  # (title, name)
            name = name[1]
        if name == "":
            raise InvalidInputError(
                "structured dtypes with padding (aligned or offset fields) are not supported; "
                "use a packed dtype"
            )
        entry: list[Any] = [name, _descr_to_json(typ)]
        if len(field) > 2:
            entry.append(list(field[2]))
        fields.append(entry)
    return fields


def _dtype_spec(dtype: Any) -> tuple[Any, str | None, np.dtype[Any], str | None]:
    """A user's dtype as (engine dtype JSON, object codec, NumPy dtype, variable kind)."""
    if dtype is str or (isinstance(dtype, str) and dtype in ("str", "string")):
        return "|O", "vlen-utf8", np.dtype(object), "str"
    if dtype is bytes or (isinstance(dtype, str) and dtype == "bytes"):
        return "|O", "vlen-bytes", np.dtype(object), "bytes"
    try:
        dt = np.dtype(dtype)
    except TypeError as err:
        raise InvalidInputError(f"not a data type: {dtype!r} ({err})") from None
    if dt.kind == "O":
        return "|O", "vlen-utf8", np.dtype(object), "str"
    if dt.kind == "T":  # numpy.dtypes.StringDType
        return "|O", "vlen-utf8", np.dtype(object), "str"
    dt = dt.newbyteorder("<") if dt.byteorder == ">" else dt
    if dt.fields is not None:
        if dt.itemsize != sum(f[0].itemsize for f in dt.fields.values()):
            raise InvalidInputError(
                "structured dtypes with padding (aligned or offset fields) are not supported; "
                "use a packed dtype"
            )
        return _descr_to_json(dt.newbyteorder("<").descr), None, dt.newbyteorder("<"), None
    if dt.subdtype is not None:
        raise InvalidInputError(f"sub-array dtype {dt} is not supported as an array's dtype")
    return dt.str, None, dt, None


def _json_to_descr(value: Any) -> Any:
    if isinstance(value, str):
        return value
    out = []
    for field in value:
        entry: tuple[Any, ...] = (field[0], _json_to_descr(field[1]))
        if len(field) > 2:
            entry += (tuple(field[2]),)
        out.append(entry)
    return out


def _numpy_dtype(descr: Any) -> np.dtype[Any]:
    if descr is None:
        raise InvalidInputError("the array's data type has no NumPy equivalent")
    if isinstance(descr, str) and descr in _VARIABLE:
        return np.dtype(object)
    dt: np.dtype[Any] = np.dtype(_json_to_descr(descr))
    return dt


def _to_json(value: Any) -> str:
    def default(o: Any) -> Any:
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, (set, frozenset)):
            return sorted(o)
        raise TypeError(f"{type(o).__name__} is not JSON serialisable")

    try:
        return json.dumps(value, default=default, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InvalidInputError(f"attributes must be JSON: {err}") from None


# --- compressors -----------------------------------------------------------------------------


def _shorthand(text: str) -> list[dict[str, Any]]:
    """The command line's codec short-hand (``"zstd:3,crc32c"``) as compressor dicts."""
    out: list[dict[str, Any]] = []
    for item in (part.strip() for part in text.split(",")):
        parts = item.split(":")
        name, args = parts[0].lower(), parts[1:]

        def num(i: int) -> int | None:
            if i >= len(args) or args[i] == "":
                return None
            try:
                return int(args[i])
            except ValueError:
                raise InvalidInputError(f"compressor '{item}': '{args[i]}' is not an integer") from None

        config: dict[str, Any] = {}
        if name in ("none", "raw"):
            continue
        if name == "zstd":
            config = {"level": num(0), "checksum": len(args) > 1 and args[1] == "checksum"}
        elif name in ("gzip", "zlib", "bz2", "bzip2"):
            config = {"level": num(0)}
        elif name == "blosc":
            config = {
                "cname": args[0] if args and args[0] else None,
                "clevel": num(1),
                "shuffle": args[2] if len(args) > 2 and args[2] else None,
            }
        elif name in ("lzma", "xz"):
            config = {"preset": num(0)}
        elif name == "lz4":
            config = {"acceleration": num(0)}
        elif name == "bitround":
            config = {"keepbits": num(0)}
        elif name == "quantize":
            config = {"digits": num(0)}
        elif name == "pcodec":
            config = {"level": num(0)}
        elif name in ("zfpy", "zfp"):
            name, config = "zfpy", _zfpy_shorthand(item, args)
        out.append({"name": name, "configuration": {k: v for k, v in config.items() if v is not None}})
    return out


def _zfpy_shorthand(item: str, args: list[str]) -> dict[str, Any]:
    """``zfpy[:MODE[:PARAM]]`` (MODE reversible, rate, precision, accuracy) as numcodecs'
    configuration."""
    mode = args[0] if args and args[0] else "reversible"
    if mode == "reversible":
        if len(args) > 1:
            raise InvalidInputError(f"compressor '{item}': zfpy:reversible takes no parameter")
        return {"mode": 5}
    keys = {"rate": (2, "rate"), "precision": (3, "precision"), "accuracy": (4, "tolerance"),
            "tolerance": (4, "tolerance")}
    if mode not in keys:
        raise InvalidInputError(f"compressor '{item}': unknown zfpy mode '{mode}'")
    number, key = keys[mode]
    if len(args) != 2:
        raise InvalidInputError(f"compressor '{item}': zfpy:{mode} needs a {key}, e.g. zfpy:{mode}:8")
    try:
        value: float = int(args[1]) if key == "precision" else float(args[1])
    except ValueError:
        raise InvalidInputError(f"compressor '{item}': '{args[1]}' is not a number") from None
    return {"mode": number, key: value}


def _compressor_dict(c: Any) -> list[dict[str, Any]]:
    if isinstance(c, str):
        return _shorthand(c)
    if hasattr(c, "to_dict") and not isinstance(c, Mapping):
        c = c.to_dict()
    elif hasattr(c, "get_config") and not isinstance(c, Mapping):
        c = c.get_config()
    if isinstance(c, Mapping):
        if "name" in c:
            return [{"name": c["name"], "configuration": dict(c.get("configuration") or {})}]
        if "id" in c:
            return [{"name": c["id"], "configuration": {k: v for k, v in c.items() if k != "id"}}]
    raise InvalidInputError(f"not a compressor: {c!r}")


def _compressors_json(compressors: CompressorLike) -> str | None:
    """The codecs (compressors, filters or a serializer) as the JSON list the engine takes;
    None: the default."""
    if compressors is None or (isinstance(compressors, str) and compressors == "auto"):
        return None
    if isinstance(compressors, (str, Mapping)) or not isinstance(compressors, Sequence):
        compressors = [compressors]
    items: list[dict[str, Any]] = []
    for c in compressors:
        items.extend(_compressor_dict(c))
    return _to_json(items)


def _format_name(zarr_format: ZarrFormat) -> str | None:
    if zarr_format is None:
        return None
    if zarr_format in (2, 3, "2", "3"):
        return f"v{zarr_format}"
    if isinstance(zarr_format, str) and zarr_format.lower() == "n5":
        return "n5"
    raise InvalidInputError(f"zarr_format must be 2, 3 or 'n5', not {zarr_format!r}")


def _shape_tuple(value: Any, what: str) -> tuple[int, ...]:
    if ix.is_integer(value):
        return (int(value),)
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise InvalidInputError(f"{what} must be an integer or a sequence of integers") from None
    if any(v < 0 for v in out):
        raise InvalidInputError(f"{what} must not be negative: {out}")
    return out


def _array_spec(
    shape: Any,
    dtype: Any,
    chunks: Any,
    shards: Any,
    compressors: CompressorLike,
    fill_value: Any,
    attributes: Mapping[str, Any] | None,
    dimension_names: Sequence[str | None] | None,
    zarr_format: ZarrFormat,
    overwrite: bool,
    chunk_key_separator: str | None,
    write_empty_chunks: bool | None,
    filters: CompressorLike = None,
    serializer: CompressorLike = None,
) -> tuple[str, bytes | None]:
    """The JSON specification and the fill value bytes the native module creates an array
    from."""
    descr, object_codec, dt, variable = _dtype_spec(dtype)
    shape_t = _shape_tuple(shape, "shape")
    if dimension_names is not None and len(list(dimension_names)) != len(shape_t):
        raise InvalidInputError(
            f"{len(list(dimension_names))} dimension names for {len(shape_t)} dimensions"
        )
    spec: dict[str, Any] = {
        "shape": list(shape_t),
        "dtype": descr,
        "object_codec": object_codec,
        "format": _format_name(zarr_format),
        "chunks": None if chunks is None or chunks == "auto" else list(_shape_tuple(chunks, "chunks")),
        "shards": None if shards is None else list(_shape_tuple(shards, "shards")),
        "attributes": dict(attributes or {}),
        "dimension_names": None if dimension_names is None else list(dimension_names),
        "overwrite": overwrite,
        "separator": chunk_key_separator,
        "write_empty_chunks": write_empty_chunks,
    }
    for key, codecs in (("filters", filters), ("serializer", serializer), ("compressors", compressors)):
        codecs_json = _compressors_json(codecs)
        if codecs_json is not None:
            spec[key] = json.loads(codecs_json)
    fill: bytes | None = None
    if fill_value is not None:
        if variable == "str":
            if not isinstance(fill_value, str):
                raise InvalidInputError("the fill value of a string array must be a str")
            fill = fill_value.encode("utf-8")
        elif variable == "bytes":
            if not isinstance(fill_value, bytes):
                raise InvalidInputError("the fill value of a bytes array must be bytes")
            fill = fill_value
        else:
            try:
                fill = np.array(fill_value, dtype=dt).tobytes()
            except (TypeError, ValueError) as err:
                raise InvalidInputError(f"fill value {fill_value!r} is not a {dt}: {err}") from None
            if len(fill) != dt.itemsize:
                raise InvalidInputError(f"fill value {fill_value!r} is not one {dt} element")
    return _to_json(spec), fill


# --- attributes ------------------------------------------------------------------------------


class Attributes(MutableMapping[str, Any]):
    """The user attributes of an array or group: a mutable mapping whose every change is
    written to the store at once (``update`` writes once for all its keys)."""

    def __init__(self, values: dict[str, Any], save: Callable[[str], None], read_only: bool) -> None:
        self._values = values
        self._save = save
        self._read_only = read_only

    def _write(self, values: dict[str, Any]) -> None:
        if self._read_only:
            raise ReadOnlyError("the node was opened read-only (mode='r')")
        text = _to_json(values)
        self._save(text)
        self._values = json.loads(text)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._write({**self._values, key: value})

    def __delitem__(self, key: str) -> None:
        if key not in self._values:
            raise KeyError(key)
        self._write({k: v for k, v in self._values.items() if k != key})

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Set several attributes with one write."""
        self._write({**self._values, **dict(*args, **kwargs)})

    def put(self, values: Mapping[str, Any]) -> None:
        """Replace every attribute with ``values`` (one write)."""
        self._write(dict(values))

    def asdict(self) -> dict[str, Any]:
        """A copy of the attributes as a plain dict."""
        return json.loads(json.dumps(self._values))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Attributes({self._values!r})"


# --- arrays ----------------------------------------------------------------------------------


def _reopen(
    location: str,
    mode: str,
    storage_options: dict[str, Any] | None = None,
    n5_axis_order: str | None = None,
    cache_bytes: int | None = None,
) -> Array | Group:
    return open(
        location,
        mode=mode,  # type: ignore[arg-type]
        storage_options=storage_options,
        n5_axis_order=n5_axis_order,
        cache_bytes=cache_bytes,
    )


def _cache_bytes(value: Any) -> int | None:
    """``cache_bytes`` checked: None, or a non-negative int."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InvalidInputError(f"cache_bytes must be None or a non-negative int, not {value!r}")
    return int(value)


def with_version(
    storage_options: Mapping[str, Any] | None, branch: str | None, tag: str | None, snapshot: str | None
) -> Mapping[str, Any] | None:
    """``storage_options`` with the Icechunk version (at most one of the three) added."""
    named = {k: v for k, v in (("branch", branch), ("tag", tag), ("snapshot", snapshot)) if v is not None}
    if len(named) > 1:
        raise InvalidInputError(f"give at most one of branch, tag and snapshot, not {sorted(named)}")
    if not named:
        return storage_options
    return {**dict(storage_options or {}), **named}


def _options_json(storage_options: Mapping[str, Any] | None) -> str:
    if storage_options is None:
        return "{}"
    if not isinstance(storage_options, Mapping):
        raise InvalidInputError(f"storage_options must be a dict, not {type(storage_options).__name__}")
    return _to_json(dict(storage_options))


class _OIndex:
    """``array.oindex[...]``: orthogonal indexing (see :attr:`Array.oindex`)."""

    def __init__(self, array: Array) -> None:
        self._array = array

    def __getitem__(self, key: Any) -> Any:
        return self._array.get_orthogonal_selection(key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._array.set_orthogonal_selection(key, value)


class Array:
    """An array in a Zarr v2, Zarr v3 or N5 store, indexed like a NumPy array.

    ``a[10:20, ::2, 5]`` reads a region (NumPy basic indexing: integers, slices with any step,
    ``...`` and ``np.newaxis``) straight into a new NumPy array; ``a[...] = x`` writes,
    broadcasting ``x`` to the region; ``a.oindex[[1, 5, 9], :, mask]`` reads orthogonally with
    integer and boolean arrays. ``np.asarray(a)`` reads it all. Reads and writes release the
    GIL, so threads working on disjoint regions run in parallel; Ctrl-C interrupts long ones.
    Open arrays with :func:`neurochunk.open` or create them with
    :func:`neurochunk.create_array`.
    """

    def __init__(self, raw: _native.RawArray) -> None:
        self._raw = raw
        self._load()

    def _load(self) -> None:
        meta = json.loads(self._raw.meta())
        self._meta = meta
        self._shape: tuple[int, ...] = tuple(meta["shape"])
        self._dtype = _numpy_dtype(meta["dtype"]) if meta["dtype"] is not None else None
        self._variable: str | None = meta["dtype"] if isinstance(meta["dtype"], str) and meta["dtype"] in _VARIABLE else None
        # numcodecs vlen-array: every element a one-dimensional array of these numbers.
        self._ragged: np.dtype[Any] | None = (
            np.dtype(meta["ragged_dtype"]) if meta.get("ragged_dtype") is not None else None
        )
        self._attrs = Attributes(meta["attributes"], self._save_attributes, meta["read_only"])

    def _save_attributes(self, text: str) -> None:
        self._raw.set_attributes(text)

    # -- description

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape."""
        return self._shape

    @property
    def dtype(self) -> np.dtype[Any]:
        """The NumPy dtype of the elements (``object`` for variable-length strings and bytes,
        read as ``str`` and ``bytes`` objects, and for ragged arrays, numcodecs'
        ``vlen-array``, read as one-dimensional NumPy arrays)."""
        if self._dtype is None:
            raise InvalidInputError(
                f"'{self._meta['display']}': data type {self._meta['data_type']} has no NumPy equivalent"
            )
        return self._dtype

    @property
    def chunks(self) -> tuple[int, ...]:
        """The chunk shape (for a sharded array, the inner chunks)."""
        return tuple(self._meta["chunks"])

    @property
    def shards(self) -> tuple[int, ...] | None:
        """The shard shape, or None for an array without sharding."""
        shards = self._meta["shards"]
        return None if shards is None else tuple(shards)

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._shape)

    @property
    def nbytes(self) -> int:
        """The size of the whole array in memory, in bytes (``size * dtype.itemsize``)."""
        return self.size * self.dtype.itemsize

    @property
    def attrs(self) -> Attributes:
        """The user attributes (a mutable mapping; changes are written at once)."""
        return self._attrs

    @property
    def fill_value(self) -> Any:
        """The value of elements never written (a NumPy scalar, a ``str`` or ``bytes``), or
        None when the array declares none (Zarr v2 ``null``)."""
        raw = self._raw.fill_value()
        if raw is None:
            return None
        if self._variable == "str":
            return raw.decode("utf-8", errors="replace")
        if self._ragged is not None:
            return np.frombuffer(raw, dtype=self._ragged).copy()
        if self._variable == "bytes":
            return raw
        if len(raw) != self.dtype.itemsize:
            return None
        return np.frombuffer(raw, dtype=self.dtype)[0]

    @property
    def metadata(self) -> dict[str, Any]:
        """The stored metadata document (``.zarray``, ``zarr.json``, N5's ``attributes.json``
        or a precomputed scale's layer ``info``) as a dict."""
        return json.loads(self._raw.document())  # type: ignore[no-any-return]

    @property
    def zarr_format(self) -> int | str:
        """2, 3, ``"n5"`` or ``"precomputed"`` (a Neuroglancer precomputed layer or scale)."""
        f = self._meta["format"]
        return f if f in ("n5", "precomputed") else int(f[1:])

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        """The names of the dimensions, when the array has them."""
        names = self._meta["dimension_names"]
        return None if names is None else tuple(names)

    @property
    def path(self) -> str:
        """The array's path inside the store it was opened from (``""``: the store's root)."""
        return str(self._meta["path"])

    @property
    def name(self) -> str:
        """The array's path with a leading ``/``."""
        return "/" + self.path

    @property
    def basename(self) -> str:
        """The last component of the array's path."""
        return self.path.rsplit("/", 1)[-1]

    @property
    def store_path(self) -> str:
        """Where the array is: the location it can be reopened from."""
        return str(self._meta["display"])

    @property
    def read_only(self) -> bool:
        """Whether the array was opened read-only."""
        return bool(self._meta["read_only"])

    @property
    def codecs(self) -> list[dict[str, Any]]:
        """The codec chain, as Zarr v3 codec JSON (also for Zarr v2 and N5 arrays)."""
        return list(self._meta["codecs"])

    @property
    def cache_bytes(self) -> int:
        """The budget, in bytes, of this handle's cache of decoded chunks (0: off).

        A read that needs only part of a chunk (a voxel, a small box, a plane through it)
        keeps the chunk it decoded, so the next partial read of that chunk through this
        handle makes no store request (for a sharded array, inner chunks and shard indexes
        are kept: a point read is one ranged read). Whole-chunk reads bypass the cache.
        Arrays opened with ``mode="r"`` get 64 MiB by default, writable ones none (pass
        ``cache_bytes=`` to :func:`open`). Writes through this handle invalidate what they
        touch; chunks another handle or process rewrites are not seen until the array is
        opened again or the budget is set again. Setting it (``a.cache_bytes = 0``) evicts
        down to the new budget."""
        return self._raw.cache_bytes()

    @cache_bytes.setter
    def cache_bytes(self, value: int) -> None:
        checked = _cache_bytes(value)
        if checked is None:
            raise InvalidInputError("cache_bytes must be a non-negative int, not None")
        self._raw.set_cache_bytes(checked)

    @property
    def cache_info(self) -> dict[str, int]:
        """What the cache holds now and how it has served reads: ``bytes``, ``entries``,
        ``hits`` and ``misses`` (partial chunk reads served from it, or not)."""
        held, entries, hits, misses = self._raw.cache_stats()
        return {"bytes": held, "entries": entries, "hits": hits, "misses": misses}

    @property
    def nchunks(self) -> int:
        """The number of chunks (shards, for a sharded array) of the grid."""
        outer = self.shards or self.chunks
        return math.prod(-(-s // max(c, 1)) for s, c in zip(self._shape, outer))

    @property
    def nchunks_initialized(self) -> int:
        """The number of chunks (shards) stored (lists the store)."""
        return self._raw.nchunks_stored()

    @property
    def info(self) -> str:
        """A summary of the array (type, shape, chunks, codecs, stored chunks)."""
        rows = [
            ("Type", "Array"),
            ("Format", str(self.zarr_format)),
            ("Path", self.store_path),
            ("Data type", self._meta["data_type"]),
            ("Shape", str(self.shape)),
            ("Chunk shape", str(self.chunks)),
        ]
        if self.shards is not None:
            rows.append(("Shard shape", str(self.shards)))
        rows += [
            ("Fill value", repr(self.fill_value)),
            ("Codecs", json.dumps(self.codecs)),
            ("Read-only", str(self.read_only)),
            ("No. bytes", f"{self.nbytes}" if self._dtype is not None else "?"),
            ("Chunks stored", f"{self.nchunks_initialized} of {self.nchunks}"),
        ]
        if self.dimension_names is not None:
            rows.insert(5, ("Dimension names", str(self.dimension_names)))
        width = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{width}} : {v}" for k, v in rows)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __repr__(self) -> str:
        dtype = self._dtype if self._dtype is not None else self._meta["data_type"]
        return f"<neurochunk.Array {self.store_path!r} shape={self.shape} dtype={dtype}>"

    @property
    def storage_options(self) -> dict[str, Any]:
        """The ``storage_options`` the array was opened with (``{}`` for a local path)."""
        return dict(self._meta.get("storage_options") or {})

    @property
    def n5_axis_order(self) -> str | None:
        """For an N5 array, the order its axes are presented in: ``"listed"`` (as
        ``attributes.json`` lists the dimensions: N5 Java, tensorstore) or ``"reversed"``
        (zarr-python 2's ``N5Store``, z5); None for Zarr."""
        order = self._meta.get("n5_axis_order")
        return None if order is None else str(order)

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _reopen,
            (
                self.store_path,
                "r" if self.read_only else "r+",
                self.storage_options or None,
                self.n5_axis_order,
                self.cache_bytes,
            ),
        )

    def __dask_tokenize__(self) -> tuple[str, str, str, str]:
        """What dask's ``tokenize`` names the array by: its class, location, path and metadata
        document (deterministic across opens and processes)."""
        return ("neurochunk.Array", self.store_path, self.path, self._raw.document())

    # -- reading

    def _empty(self, shape: tuple[int, ...], dtype: Any) -> npt.NDArray[Any]:
        """A new output array, or a clean error when the region cannot be held in memory."""
        try:
            return np.empty(shape, dtype=dtype)
        except (ValueError, MemoryError) as err:
            raise InvalidInputError(
                f"{self.store_path}: the region of shape {shape} cannot be held in memory "
                f"({err}); read a smaller region"
            ) from None

    def _read_runs(self, runs: list[ix.Run], shape: tuple[int, ...]) -> npt.NDArray[Any]:
        if self._variable is not None:
            items = self._raw.read_variable(runs)
            out = np.empty(len(items), dtype=object)
            if self._ragged is not None:
                # One NumPy array per element, as numcodecs' vlen-array decodes them (assigned
                # one by one: equal lengths must not broadcast into a 2-d array).
                for i, item in enumerate(items):
                    out[i] = np.frombuffer(item, dtype=self._ragged).copy()
            else:
                out[:] = items
            return out.reshape(shape)
        out = self._empty(shape, self.dtype)
        self._raw.read_into(runs, out)
        return out

    def __getitem__(self, key: Any) -> Any:
        """Read a region (NumPy basic indexing; one integer or boolean array on one axis is
        read as orthogonal indexing). Field names first select fields of a structured array:
        ``a["x"]``, ``a["x", 10:20]``, ``a[["x", "y"], ::2]``."""
        fields, key = _split_fields(key)
        if not ix.is_basic(key):
            return self._fancy(key, fields)
        return self.get_basic_selection(key, fields=fields)

    def _fancy(self, key: Any, fields: Any = None) -> Any:
        parts = key if isinstance(key, tuple) else (key,)
        arrays = [k for k in parts if not (k is Ellipsis or k is None or isinstance(k, slice) or ix.is_integer(k))]
        if len(arrays) == 1 and np.asarray(arrays[0]).ndim == 1 and not any(k is None for k in parts):
            return self.get_orthogonal_selection(key, fields=fields)
        raise InvalidInputError(
            "only one integer or boolean array is allowed in [...]; use .oindex[...] for "
            "orthogonal indexing with several"
        )

    @property
    def oindex(self) -> _OIndex:
        """Orthogonal indexing: ``a.oindex[[0, 3], :, mask]`` takes the listed indices (or the
        True positions of a boolean array) on each axis independently, like
        ``a[np.ix_(...)]``. Only the chunks holding selected elements are read."""
        return _OIndex(self)

    def get_basic_selection(self, selection: Any = Ellipsis, *, fields: Any = None) -> Any:
        """``a[selection]`` with NumPy basic indexing (with ``fields``, only those fields of
        a structured array: one name gives that field's array, a list a structured array)."""
        if not ix.is_basic(selection):
            raise InvalidInputError("get_basic_selection takes integers, slices, '...' and np.newaxis")
        if fields is not None:
            self._check_fields(fields)
        sel = ix.resolve_basic(selection, self._shape)
        out = self._project(self._read_runs(sel.runs, sel.shape), fields)
        if sel.scalar:
            return out[()]
        return out.reshape(sel.result_shape)

    def _orthogonal_plan(
        self, selection: Any
    ) -> tuple[tuple[int, ...], list[int], list[list[tuple[ix.Run, npt.NDArray[np.intp], npt.NDArray[np.intp]]]]]:
        """An orthogonal selection as (result shape, kept axes, per axis the boxes to touch):
        each box is a run of consecutive touched chunks (shards) with where its selected
        elements go in the result and where they are in the box."""
        axes = ix.resolve_orthogonal(selection, self._shape)
        out_shape = tuple(
            (len(a.indices) if a.indices is not None else a.run[2])  # type: ignore[index]
            for a in axes
            if a.indices is not None or not a.run[3]  # type: ignore[index]
        )
        outer = self.shards or self.chunks
        plan: list[list[tuple[ix.Run, npt.NDArray[np.intp], npt.NDArray[np.intp]]]] = []
        for axis, a in enumerate(axes):
            if a.indices is None:
                assert a.run is not None
                if a.run[3]:
                    plan.append([(a.run, np.empty(0, np.intp), np.empty(0, np.intp))])
                else:
                    every = np.arange(a.run[2], dtype=np.intp)
                    plan.append([(a.run, every, every)])
                continue
            boxes = []
            for lo, hi in ix.clusters(a.indices, outer[axis] if axis < len(outer) else 1):
                at = np.flatnonzero((a.indices >= lo) & (a.indices < hi)).astype(np.intp)
                boxes.append(((lo, 1, hi - lo, False), at, (a.indices[at] - lo).astype(np.intp)))
            plan.append(boxes)
        kept = [axis for axis, a in enumerate(axes) if a.indices is not None or not a.run[3]]  # type: ignore[index]
        return out_shape, kept, plan

    def get_orthogonal_selection(self, selection: Any, *, fields: Any = None) -> Any:
        """``a.oindex[selection]``: orthogonal integer / boolean / slice indexing (with
        ``fields``, only those fields of a structured array)."""
        out_shape, kept, plan = self._orthogonal_plan(selection)
        dtype = object if self._variable is not None else self.dtype
        out = self._empty(out_shape, dtype)
        if out.size:
            for combo in itertools.product(*plan):
                runs = [c[0] for c in combo]
                box_shape = tuple(r[2] for r in runs if not r[3])
                box = self._read_runs(runs, box_shape)
                take = np.ix_(*[combo[axis][2] for axis in kept]) if kept else ()
                put = np.ix_(*[combo[axis][1] for axis in kept]) if kept else ()
                out[put] = box[take]
        out = self._project(out, fields)
        if not kept:
            return out[()]
        return out

    def set_orthogonal_selection(self, selection: Any, value: Any, *, fields: Any = None) -> None:
        """``a.oindex[selection] = value``: write ``value`` (broadcast to the selection's
        shape) at the orthogonal selection. The chunks (shards) holding selected elements are
        read, patched and written back, box by box of consecutive touched chunks (boxes the
        selection covers whole are not read); with duplicate indices the last value wins."""
        if self.read_only:
            raise ReadOnlyError(f"'{self.store_path}' was opened read-only (mode='r')")
        out_shape, kept, plan = self._orthogonal_plan(selection)
        data = self._value_for(value, out_shape, fields)
        if data.size == 0:
            return
        for combo in itertools.product(*plan):
            runs = [c[0] for c in combo]
            box_shape = tuple(r[2] for r in runs if not r[3])
            covered = fields is None and all(
                len(np.unique(combo[axis][2])) == runs[axis][2] for axis in kept
            )
            if covered:
                box = np.empty(box_shape, dtype=data.dtype if self._variable is None else object)
            else:
                box = self._read_runs(runs, box_shape)
            take = np.ix_(*[combo[axis][2] for axis in kept]) if kept else ()
            put = np.ix_(*[combo[axis][1] for axis in kept]) if kept else ()
            if fields is None:
                box[take] = data[put]
            else:
                for name in _field_list(fields):
                    box[name][take] = data[name][put]
            self._write_runs(runs, box)

    # -- structured fields

    def _check_fields(self, fields: Any) -> list[str]:
        names = _field_list(fields)
        dt = self.dtype
        if dt.names is None:
            raise InvalidInputError(f"'{self.store_path}' has no fields (its dtype is {dt})")
        missing = [n for n in names if n not in dt.names]
        if missing:
            raise InvalidInputError(f"'{self.store_path}' has no field {missing[0]!r} (fields: {list(dt.names)})")
        return names

    def _project(self, out: npt.NDArray[Any], fields: Any) -> npt.NDArray[Any]:
        """``out`` cut to ``fields`` (one name: that field's array; a list: a packed
        structured array of those fields)."""
        if fields is None:
            return out
        names = self._check_fields(fields)
        if isinstance(fields, str):
            return np.ascontiguousarray(out[fields])
        from numpy.lib import recfunctions

        packed: npt.NDArray[Any] = recfunctions.repack_fields(out[names])
        return packed

    def _value_for(self, value: Any, shape: tuple[int, ...], fields: Any) -> npt.NDArray[Any]:
        """``value`` as an array of ``shape`` to write: the array's dtype, or with ``fields``
        a structured array holding those fields."""
        if self._variable is not None:
            if fields is not None:
                raise InvalidInputError("variable-length arrays have no fields")
            data = self._ragged_elements(value) if self._ragged is not None else np.asarray(value, dtype=object)
        elif fields is None:
            try:
                data = np.asarray(value, dtype=self.dtype)
            except (TypeError, ValueError) as err:
                raise InvalidInputError(f"cannot store {type(value).__name__} as {self.dtype}: {err}") from None
        else:
            names = self._check_fields(fields)
            dt = self.dtype
            sub = np.dtype([(n, dt.fields[n][0]) for n in names])  # type: ignore[index]
            try:
                if isinstance(fields, str):
                    data = np.empty(np.shape(value), dtype=sub)
                    data[fields] = np.asarray(value, dtype=sub[fields])
                else:
                    data = np.asarray(value, dtype=sub)
            except (TypeError, ValueError) as err:
                raise InvalidInputError(f"cannot store {type(value).__name__} as fields {names}: {err}") from None
        try:
            return np.broadcast_to(data, shape)
        except ValueError:
            raise InvalidInputError(f"could not broadcast input of shape {data.shape} into shape {shape}") from None

    @staticmethod
    def _ragged_elements(value: Any) -> npt.NDArray[Any]:
        """``value`` as an object array of ragged elements: an object array as it is, one
        numeric array as a single element (broadcast over the region), a list or tuple as one
        element per item (``np.asarray`` would make equal-length items one 2-d array)."""
        if isinstance(value, np.ndarray) and value.dtype == object:
            return value
        if isinstance(value, (list, tuple)):
            out = np.empty(len(value), dtype=object)
            for i, item in enumerate(value):
                out[i] = np.asarray(item)
            return out
        single = np.empty((), dtype=object)
        single[()] = np.asarray(value)
        return single

    def _ragged_numbers(self, numbers: npt.NDArray[Any]) -> npt.NDArray[Any]:
        """One ragged element's numbers in the array's number type: integers of any width
        when every value fits, otherwise only casts NumPy calls ``same_kind``."""
        target = self._ragged
        assert target is not None
        if numbers.dtype.kind in "iub" and target.kind in "iu" and numbers.size:
            info = np.iinfo(target)
            low, high = int(numbers.min()), int(numbers.max())
            if low < info.min or high > info.max:
                raise InvalidInputError(
                    f"{self.store_path}: values {low}..{high} do not fit the ragged array's {target}"
                )
            return numbers.astype(target)
        try:
            return numbers.astype(target, casting="same_kind")
        except TypeError as err:
            raise InvalidInputError(f"{self.store_path}: {err}") from None

    def _write_runs(self, runs: list[ix.Run], box: npt.NDArray[Any]) -> None:
        if self._ragged is not None:
            items = []
            for item in box.reshape(-1):
                numbers = np.asarray(item)
                if numbers.ndim != 1:
                    raise InvalidInputError(
                        f"{self.store_path}: each element of a ragged (vlen-array) array is a "
                        f"one-dimensional array, not one of shape {numbers.shape}"
                    )
                items.append(self._ragged_numbers(numbers).tobytes())
            self._raw.write_variable(runs, items)
        elif self._variable is not None:
            self._raw.write_variable(runs, list(box.reshape(-1)))
        else:
            self._raw.write(runs, np.ascontiguousarray(box))

    def to_dask(self, chunks: Any = None) -> Any:
        """The array as a lazy ``dask.array.Array`` (needs dask), in blocks of ``chunks``
        (default: the shards, or the chunks of an array without sharding). Each block reads
        through this array; the graph pickles, since arrays pickle as references.

        The graph's name is a token of the array's location, its metadata document and the
        blocks (as ``dask.array.from_zarr`` names its graphs): two opens of one array give the
        same name, so dask merges their tasks; another array, another metadata document (a
        resize, new attributes in Zarr v3) or other blocks give another."""
        import dask.array as da
        from dask.base import tokenize

        blocks = chunks if chunks is not None else (self.shards or self.chunks)
        return da.from_array(  # type: ignore[no-untyped-call]
            self,
            chunks=blocks,
            name=f"neurochunk-{tokenize(self, blocks)}",
            lock=False,
            asarray=False,
            fancy=False,
            meta=np.empty((0,) * self.ndim, dtype=self.dtype),
        )

    def store_from(self, source: Any, *, compute: bool = True, **kwargs: Any) -> Any:
        """Write ``source`` (a dask array, or anything ``dask.array.asarray`` takes, of this
        array's shape) into the whole array with ``dask.array.store``, in parallel on the
        current scheduler (threads, processes or a ``dask.distributed`` cluster).

        Tasks write concurrently without locks, so no two may touch one chunk (one shard,
        when sharded): blocks of ``source`` whose boundaries are not on that grid are
        rechunked to it first. ``compute=False`` returns the delayed store; other keyword
        arguments go to ``dask.array.store``."""
        import dask.array as da

        if self.read_only:
            raise ReadOnlyError(f"'{self.store_path}' was opened read-only (mode='r')")
        x = da.asarray(source)  # type: ignore[no-untyped-call]
        if tuple(x.shape) != self._shape:
            raise InvalidInputError(f"cannot store an array of shape {tuple(x.shape)} into shape {self._shape}")
        outer = self.shards or self.chunks
        aligned = all(
            all(end % step == 0 or end == size for end in itertools.accumulate(blocks))
            for blocks, step, size in zip(x.chunks, outer, self._shape)
        )
        if not aligned:
            x = x.rechunk(tuple(outer))
        return da.store(x, self, lock=False, compute=compute, **kwargs)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        """The whole array read into a new NumPy array (``np.asarray(a)``)."""
        if copy is False:
            raise ValueError("a neurochunk.Array is always read into a new array (copy=False)")
        out = self[...]
        assert isinstance(out, np.ndarray)
        return out if dtype is None else out.astype(dtype, copy=False)

    # -- writing

    def __setitem__(self, key: Any, value: Any) -> None:
        """Write ``value`` (broadcast to the region) into a region (NumPy basic indexing; one
        integer or boolean array on one axis writes orthogonally). Field names first write
        only those fields of a structured array (``a["x", :10] = 0``)."""
        fields, key = _split_fields(key)
        if not ix.is_basic(key):
            parts = key if isinstance(key, tuple) else (key,)
            arrays = [k for k in parts if not (k is Ellipsis or k is None or isinstance(k, slice) or ix.is_integer(k))]
            if len(arrays) == 1 and np.asarray(arrays[0]).ndim == 1 and not any(k is None for k in parts):
                self.set_orthogonal_selection(key, value, fields=fields)
                return
        self.set_basic_selection(key, value, fields=fields)

    def set_basic_selection(self, selection: Any, value: Any, *, fields: Any = None) -> None:
        """``a[selection] = value`` with NumPy basic indexing and broadcasting; with
        ``fields``, only those fields of a structured array are written (the region is read,
        patched and written back)."""
        if not ix.is_basic(selection):
            raise InvalidInputError(
                "writes take basic indexing, or one integer or boolean array; use "
                ".oindex[...] = v to write orthogonally with several"
            )
        if self.read_only:
            raise ReadOnlyError(f"'{self.store_path}' was opened read-only (mode='r')")
        sel = ix.resolve_basic(selection, self._shape)
        data = self._value_for(value, sel.result_shape, fields).reshape(sel.shape)
        if fields is not None:
            region = self._read_runs(sel.runs, sel.shape)
            for name in _field_list(fields):
                region[name] = data[name]
            data = region
        self._write_runs(sel.runs, data)

    def resize(self, *shape: Any) -> None:
        """Change the shape (``a.resize((100, 50))`` or ``a.resize(100, 50)``); chunks wholly
        outside the new shape are deleted, the rest keep their data."""
        new = _shape_tuple(shape[0] if len(shape) == 1 else shape, "shape")
        if len(new) != self.ndim:
            raise InvalidInputError(f"cannot resize a {self.ndim}-d array to {len(new)} dimensions")
        self._raw.resize(list(new))
        self._load()


def _field_list(fields: Any) -> list[str]:
    if isinstance(fields, str):
        return [fields]
    try:
        names = [str(f) for f in fields]
    except TypeError:
        raise InvalidInputError(f"fields must be a field name or a list of them, not {fields!r}") from None
    if not names or not all(isinstance(f, str) for f in fields):
        raise InvalidInputError(f"fields must be a field name or a list of them, not {fields!r}")
    return names


def _split_fields(key: Any) -> tuple[Any, Any]:
    """``(fields, rest of the key)``: leading field names (``a["x", 3:5]``, ``a[["x",
    "y"]]``) as zarr-python takes them."""
    def is_names(k: Any) -> bool:
        return isinstance(k, str) or (isinstance(k, list) and bool(k) and all(isinstance(f, str) for f in k))

    if is_names(key):
        return key, Ellipsis
    if isinstance(key, tuple) and key and is_names(key[0]):
        rest = key[1:]
        return key[0], rest if rest else Ellipsis
    return None, key


# --- groups ----------------------------------------------------------------------------------


def _wrap(kind: str, raw: Any) -> Array | Group:
    return Array(raw) if kind == "array" else Group(raw)


class Group(Mapping[str, Union[Array, "Group"]]):
    """A group of a Zarr v2, Zarr v3 or N5 hierarchy: a mapping from member names to arrays
    and groups (``g["raw"]``, ``g["a/b"]``, ``"raw" in g``, ``list(g)``, ``len(g)``), with
    attributes and creation of members."""

    def __init__(self, raw: _native.RawGroup) -> None:
        self._raw = raw
        self._load()

    def _load(self) -> None:
        meta = json.loads(self._raw.meta())
        self._meta = meta
        self._attrs = Attributes(meta["attributes"], self._raw.set_attributes, meta["read_only"])

    @property
    def attrs(self) -> Attributes:
        """The user attributes (a mutable mapping; changes are written at once)."""
        return self._attrs

    @property
    def zarr_format(self) -> int | str:
        """2, 3, ``"n5"`` or ``"precomputed"`` (a Neuroglancer precomputed layer or scale)."""
        f = self._meta["format"]
        return f if f in ("n5", "precomputed") else int(f[1:])

    @property
    def path(self) -> str:
        """The group's path inside the store it was opened from (``""``: the root)."""
        return str(self._meta["path"])

    @property
    def name(self) -> str:
        """The group's path with a leading ``/``."""
        return "/" + self.path

    @property
    def store_path(self) -> str:
        """Where the group is: the location it can be reopened from."""
        return str(self._meta["display"])

    @property
    def read_only(self) -> bool:
        """Whether the group was opened read-only."""
        return bool(self._meta["read_only"])

    def __getitem__(self, name: str) -> Array | Group:
        """The member ``name`` (a relative path such as ``"a/b"`` is allowed)."""
        if not isinstance(name, str):
            raise TypeError(f"member names are str, not {type(name).__name__}")
        kind, raw = self._raw.child(name)
        return _wrap(kind, raw)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._raw.contains(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_list())

    def __len__(self) -> int:
        return len(self.keys_list())

    def __delitem__(self, name: str) -> None:
        """Remove the member ``name`` and everything below it."""
        self._raw.delete(name)

    def keys_list(self) -> list[str]:
        """The names of the direct members, sorted."""
        return [m[0] for m in self._raw.members(False)]

    def members(self, max_depth: int | None = 0) -> tuple[tuple[str, Array | Group], ...]:
        """``(name, node)`` pairs of the members, sorted by name: the direct members with
        ``max_depth=0`` (default), every node below with ``max_depth=None``; names are
        relative paths."""
        out = []
        for rel, kind, _shape, _dt, err in self._raw.members(max_depth != 0):
            if max_depth is not None and rel.count("/") > max_depth:
                continue
            if kind == "error":
                continue
            out.append((rel, self[rel]))
        return tuple(out)

    def arrays(self) -> Iterator[tuple[str, Array]]:
        """``(name, array)`` for the direct members that are arrays."""
        for name, node in self.members():
            if isinstance(node, Array):
                yield name, node

    def groups(self) -> Iterator[tuple[str, Group]]:
        """``(name, group)`` for the direct members that are groups."""
        for name, node in self.members():
            if isinstance(node, Group):
                yield name, node

    def tree(self) -> str:
        """The hierarchy below the group as text, one node per line with the shape and data
        type of arrays."""
        entries = self._raw.members(True)
        lines = [self.name]
        children: dict[str, list[tuple[str, str, Any, Any, Any]]] = {}
        for e in entries:
            parent = e[0].rsplit("/", 1)[0] if "/" in e[0] else ""
            children.setdefault(parent, []).append(e)

        def walk(parent: str, indent: str) -> None:
            kids = children.get(parent, [])
            for i, (rel, kind, shape, dt, err) in enumerate(kids):
                last = i == len(kids) - 1
                label = rel.rsplit("/", 1)[-1]
                if kind == "array":
                    label += f" {tuple(shape)} {dt}"
                elif kind == "error":
                    label += f" (unreadable: {err})"
                lines.append(f"{indent}{'└── ' if last else '├── '}{label}")
                walk(rel, indent + ("    " if last else "│   "))

        walk("", "")
        return "\n".join(lines)

    def create_group(self, name: str, *, attributes: Mapping[str, Any] | None = None, overwrite: bool = False) -> Group:
        """Create the member group ``name`` (missing intermediate groups too)."""
        return Group(self._raw.create_group(name, _to_json(dict(attributes or {})), overwrite))

    def require_group(self, name: str) -> Group:
        """The member group ``name``, created when missing."""
        if name in self:
            node = self[name]
            if not isinstance(node, Group):
                raise NodeExistsError(f"'{self.store_path}/{name}' is an array, not a group")
            return node
        return self.create_group(name)

    def create_array(
        self,
        name: str,
        *,
        shape: Any,
        dtype: Any = "float64",
        chunks: Any = None,
        shards: Any = None,
        compressors: CompressorLike = None,
        fill_value: Any = None,
        attributes: Mapping[str, Any] | None = None,
        dimension_names: Sequence[str | None] | None = None,
        zarr_format: ZarrFormat = None,
        overwrite: bool = False,
        chunk_key_separator: str | None = None,
        write_empty_chunks: bool | None = None,
        filters: CompressorLike = None,
        serializer: CompressorLike = None,
    ) -> Array:
        """Create the member array ``name``; the arguments are those of
        :func:`neurochunk.create_array` (the format defaults to the group's)."""
        spec, fill = _array_spec(
            shape, dtype, chunks, shards, compressors, fill_value, attributes,
            dimension_names, zarr_format, overwrite, chunk_key_separator, write_empty_chunks,
            filters, serializer,
        )
        return Array(self._raw.create_array(name, spec, fill))

    def consolidate(self) -> int:
        """Write consolidated metadata for the group (Zarr v2 ``.zmetadata``, Zarr v3 inline
        ``consolidated_metadata``); returns the number of nodes it covers."""
        n = self._raw.consolidate()
        self._load()
        return n

    @property
    def info(self) -> str:
        """A summary of the group."""
        return "\n".join(
            [
                f"Type        : Group",
                f"Format      : {self.zarr_format}",
                f"Path        : {self.store_path}",
                f"Read-only   : {self.read_only}",
                f"Consolidated: {self._meta['consolidated']}",
                f"Members     : {len(self)}",
            ]
        )

    def __repr__(self) -> str:
        return f"<neurochunk.Group {self.store_path!r}>"

    @property
    def storage_options(self) -> dict[str, Any]:
        """The ``storage_options`` the group was opened with (``{}`` for a local path)."""
        return dict(self._meta.get("storage_options") or {})

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _reopen,
            (
                self.store_path,
                "r" if self.read_only else "r+",
                self.storage_options or None,
                self._meta.get("n5_axis_order"),
            ),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Group) and other.store_path == self.store_path

    def __hash__(self) -> int:
        return hash(("neurochunk.Group", self.store_path))


# --- opening and creating --------------------------------------------------------------------


def _is_url(location: str) -> bool:
    scheme, sep, _ = location.partition("://")
    return bool(sep) and len(scheme) > 1 and all(c.isalnum() or c in "+-." for c in scheme)


def _location(path: Any) -> str:
    try:
        import os

        return os.fspath(path)  # type: ignore[no-any-return]
    except TypeError:
        raise InvalidInputError(f"a location must be a str or os.PathLike, not {type(path).__name__}") from None


def open(  # noqa: A001 - the name zarr-python uses
    path: Any,
    mode: Mode = "r",
    *,
    zarr_format: ZarrFormat = None,
    storage_options: Mapping[str, Any] | None = None,
    n5_axis_order: str | None = None,
    cache_bytes: int | None = None,
    branch: str | None = None,
    tag: str | None = None,
    snapshot: str | None = None,
    **array_kwargs: Any,
) -> Array | Group:
    """Open the array or group at ``path`` (a local directory or a URL; its format is
    detected).

    ``path`` may be a URL: ``s3://bucket/key``, ``gs://bucket/key``, ``az://container/key``,
    ``https://host/path`` (read-only) or ``file:///path``. ``storage_options`` configures
    the connection: ``endpoint`` (also ``endpoint_url`` or s3fs's
    ``client_kwargs={"endpoint_url": ...}``; an ``http://`` endpoint allows plain HTTP),
    ``region``, ``anon`` (unsigned requests), ``path_style``, ``max_requests``,
    ``max_retries``, ``timeout`` and ``connect_timeout`` (seconds). Credentials come from
    the environment (``AWS_ACCESS_KEY_ID``, ``GOOGLE_APPLICATION_CREDENTIALS``, ...).

    ``n5_axis_order`` says how N5 datasets are presented: ``"listed"`` (default: the shape is
    ``attributes.json``'s ``dimensions`` as listed, like the N5 Java API and tensorstore) or
    ``"reversed"`` (the dimensions reversed, like zarr-python 2's ``N5Store`` and z5, whose
    C-ordered chunks are then N5's blocks as stored). See ``docs/n5.md``.

    A path (or URL) inside an Icechunk repository opens at the head of ``branch`` (default
    ``"main"``), at a ``tag`` or at a ``snapshot`` id; tags and snapshots are read-only, and a
    branch is written only inside :func:`neurochunk.icechunk.session`. Its virtual chunks are
    read from files beside the repository (its parent directory, or the URL prefix holding
    it); ``storage_options={"allow_virtual": [DIR_OR_URL_PREFIX, ...]}`` allows more places,
    ``{"allow_any_virtual": True}`` every container the repository names. See
    ``docs/icechunk.md``.

    ``cache_bytes`` is the budget of each opened array's cache of decoded chunks, which
    serves repeated partial reads (points, small boxes) of a chunk from memory (see
    :attr:`Array.cache_bytes`). None (default): 64 MiB per array for ``mode="r"``, 0 (off)
    for the writable modes. A read-only handle does not see chunks another process rewrites
    after it cached them; open the array again (or pass ``cache_bytes=0``) to read such
    data fresh. See ``docs/python.md``.

    ``mode``: ``"r"`` read-only (default), ``"r+"`` read and write (must exist), ``"a"`` read
    and write, creating a group when nothing is there, ``"w"`` create (replacing what is
    there), ``"w-"`` create (fail if something is there). When creating, ``shape=`` (and the
    other arguments of :func:`create_array`) make an array, otherwise a group;
    ``zarr_format`` is 2, 3 (default) or ``"n5"``.
    """
    location = _location(path)
    storage_options = with_version(storage_options, branch, tag, snapshot)
    if mode not in ("r", "r+", "a", "w", "w-"):
        raise InvalidInputError(f"mode must be 'r', 'r+', 'a', 'w' or 'w-', not {mode!r}")
    cache = _cache_bytes(cache_bytes)
    if mode in ("r", "r+"):
        if array_kwargs:
            raise InvalidInputError(f"mode={mode!r} opens an existing node; {sorted(array_kwargs)} are for creating one")
        kind, raw = _native.open_node(location, mode == "r", _options_json(storage_options), n5_axis_order, cache)
        return _wrap(kind, raw)
    if mode == "a":
        try:
            kind, raw = _native.open_node(location, False, _options_json(storage_options), n5_axis_order, cache)
            return _wrap(kind, raw)
        except NodeNotFoundError:
            pass
    overwrite = mode == "w"
    if "shape" in array_kwargs:
        created = create_array(
            location,
            zarr_format=zarr_format,
            overwrite=overwrite,
            storage_options=storage_options,
            n5_axis_order=n5_axis_order,
            **array_kwargs,
        )
        if cache is not None:
            created.cache_bytes = cache
        return created
    if array_kwargs:
        raise InvalidInputError(f"{sorted(array_kwargs)} need shape= to create an array")
    return create_group(
        location, zarr_format=zarr_format, overwrite=overwrite, storage_options=storage_options, n5_axis_order=n5_axis_order
    )


def open_array(path: Any, mode: Mode = "r", **kwargs: Any) -> Array:
    """:func:`open` that insists on an array."""
    node = open(path, mode, **kwargs)
    if not isinstance(node, Array):
        raise NodeNotFoundError(f"'{_location(path)}' is a group, not an array")
    return node


def open_group(path: Any, mode: Mode = "r", **kwargs: Any) -> Group:
    """:func:`open` that insists on a group."""
    node = open(path, mode, **kwargs)
    if not isinstance(node, Group):
        raise NodeNotFoundError(f"'{_location(path)}' is an array, not a group")
    return node


def create_group(
    path: Any,
    *,
    zarr_format: ZarrFormat = None,
    attributes: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    storage_options: Mapping[str, Any] | None = None,
    n5_axis_order: str | None = None,
) -> Group:
    """Create a group at ``path`` (a local directory or a URL, see :func:`open`; Zarr v3
    unless ``zarr_format`` is 2 or ``"n5"``)."""
    return Group(
        _native.create_group(
            _location(path),
            _format_name(zarr_format) or "v3",
            _to_json(dict(attributes or {})),
            overwrite,
            _options_json(storage_options),
            n5_axis_order,
        )
    )


def create_array(
    path: Any,
    *,
    shape: Any,
    dtype: Any = "float64",
    chunks: Any = None,
    shards: Any = None,
    compressors: CompressorLike = None,
    fill_value: Any = None,
    attributes: Mapping[str, Any] | None = None,
    dimension_names: Sequence[str | None] | None = None,
    zarr_format: ZarrFormat = None,
    overwrite: bool = False,
    chunk_key_separator: str | None = None,
    write_empty_chunks: bool | None = None,
    filters: CompressorLike = None,
    serializer: CompressorLike = None,
    storage_options: Mapping[str, Any] | None = None,
    n5_axis_order: str | None = None,
) -> Array:
    """Create an array at ``path`` (a local directory or a URL, see :func:`open`), modelled
    on zarr-python 3's ``zarr.create_array``.

    * ``dtype``: any NumPy dtype the formats hold (bool, integers, floats, complex,
      datetime64/timedelta64, fixed bytes ``S``/unicode ``U``, raw ``V``, packed structured
      dtypes), or ``str`` / ``bytes`` for variable-length strings and bytes (read as object
      arrays). Big-endian input is stored in the format's byte order.
    * ``chunks``: the chunk shape (inner chunks when sharded); default about 1 MiB per chunk.
    * ``shards``: the shard shape (Zarr v3 only), a multiple of ``chunks``.
    * ``compressors``: None (zstd level 3; gzip for N5), ``[]`` or ``"none"`` for none, a
      short-hand string (``"zstd:3,crc32c"``, ``"blosc:lz4:5:shuffle"``, ``"gzip:6"``), or a
      list of ``{"name": ..., "configuration": {...}}`` dicts, numcodecs configs or zarr codec
      objects (zstd, gzip, zlib, blosc, bz2, lzma, lz4, shuffle, crc32c, adler32, fletcher32,
      jenkins_lookup3). Like the command line's ``--codec``, the list may start with filters
      and a serializer, in chain order (``"bitround:10,zstd:3"``, ``"pcodec:8"``).
    * ``filters``: array-to-array codecs applied first (bitround, quantize, packbits,
      categorize), in the same forms (``numcodecs.BitRound(keepbits=10)``,
      ``{"id": "quantize", "digits": 2, "dtype": "<f8"}``, ``"bitround:10"``).
    * ``serializer``: the array-to-bytes codec (default ``bytes``): pcodec (``"pcodec:8"``,
      ``numcodecs.zarr3.PCodec(level=8)``) or zfpy (``"zfpy"`` reversible,
      ``"zfpy:accuracy:0.01"``, ``"zfpy:rate:8"``, ``"zfpy:precision:16"``, or numcodecs'
      ``ZFPY`` config). With filters or a serializer but no ``compressors``, the default
      compression still applies.
    * ``fill_value``: the value of never-written elements (default zero / empty).
    * ``zarr_format``: 3 (default), 2 or ``"n5"``.
    * ``overwrite``: replace a node already at ``path`` (otherwise :class:`NodeExistsError`).
    * ``n5_axis_order``: for N5, ``"listed"`` (default: ``shape`` is written as
      ``dimensions``) or ``"reversed"`` (written reversed, as zarr-python 2's ``N5Store``
      does); see :func:`open`.
    """
    spec, fill = _array_spec(
        shape, dtype, chunks, shards, compressors, fill_value, attributes,
        dimension_names, zarr_format, overwrite, chunk_key_separator, write_empty_chunks,
        filters, serializer,
    )
    if n5_axis_order is not None:
        s = json.loads(spec)
        s["n5_axis_order"] = n5_axis_order
        spec = _to_json(s)
    return Array(_native.create_array(_location(path), spec, fill, _options_json(storage_options)))


def _progress_callback(progress: bool | Callable[[int], None]) -> Callable[[int], None] | None:
    """The native layer's progress callback: ``True`` prints the running count of chunks
    written to stderr (end the line with a newline afterwards), a callable is used as it is."""
    if progress is True:
        done = [0]

        def callback(n: int) -> None:
            done[0] += n
            print(f"\rneurochunk: {done[0]} chunks written", end="", file=sys.stderr, flush=True)

        return callback
    return progress if callable(progress) else None


def convert(
    src: Any,
    dst: Any,
    *,
    format: ZarrFormat = None,  # noqa: A002 - the CLI's name
    chunks: Any = None,
    shards: Any = None,
    compressors: CompressorLike = None,
    progress: bool | Callable[[int], None] = False,
    storage_options: Mapping[str, Any] | None = None,
    dst_storage_options: Mapping[str, Any] | None = None,
    n5_axis_order: str | None = None,
) -> list[str]:
    """Convert the array or hierarchy at ``src`` into a new one at ``dst`` (which must not
    hold a node), re-encoding every chunk, like ``neurochunk convert``.

    ``format`` is the destination's (2, 3 or ``"n5"``; default the source's), ``chunks``,
    ``shards`` and ``compressors`` as in :func:`create_array` (``compressors`` may start with
    filters and a serializer, which then replace the source's). ``progress=True`` prints the
    number of chunks written to stderr; a callable is called with each increment. Returns the
    notes on what the destination format changed (one per change, naming the array).
    ``src`` and ``dst`` may be URLs (see :func:`open`), configured by ``storage_options``
    (applied to whichever is a URL) and ``dst_storage_options`` (the destination's, when
    it differs). ``n5_axis_order`` is how N5 sources are read and N5 destinations written
    (``"listed"`` or ``"reversed"``, see :func:`open`).
    """
    callback = _progress_callback(progress)
    notes = _native.convert(
        _location(src),
        _location(dst),
        _format_name(format),
        None if chunks is None else list(_shape_tuple(chunks, "chunks")),
        None if shards is None else list(_shape_tuple(shards, "shards")),
        _compressors_json(compressors),
        callback,
        _options_json(storage_options if _is_url(_location(src)) else None),
        _options_json(
            dst_storage_options
            if dst_storage_options is not None
            else (storage_options if _is_url(_location(dst)) else None)
        ),
        n5_axis_order,
    )
    if progress is True:
        print(file=sys.stderr)
    return notes
