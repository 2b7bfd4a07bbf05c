"""neurarrow tables: read and write Arrow IPC, Parquet and Hive-partitioned Parquet tables,
validate them against the neurarrow specification, derive fields, convert SWC.

Tables travel through the Arrow PyCapsule interface, so no Arrow library is required and any
of them works:

>>> import neurochunk as nc, pyarrow as pa, polars as pl, duckdb
>>> t = nc.table.read("neurons.skeletons.parquet", columns=["sample_id", "x"],
...                   filter=[("fragment_id", "==", 7)])
>>> pa.table(t)                               # a pyarrow.Table
>>> pl.DataFrame(t)                           # a polars.DataFrame
>>> duckdb.sql("SELECT count(*) FROM t")      # DuckDB scans it
>>> nc.table.write(pa.table(t), "out.parquet")   # anything with __arrow_c_stream__
>>> nc.table.validate("neurons.skeletons.parquet").valid

Paths are local files or directories, or URLs (``s3://``, ``gs://``, ``https://``,
``file://``; see ``storage_options`` of :func:`neurochunk.open`) for :func:`read`,
:func:`write` and :func:`validate`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, Union

from . import _neurochunk as _native
from ._errors import InvalidInputError

__all__ = [
    "Table",
    "ValidationReport",
    "TableReport",
    "Violation",
    "read",
    "write",
    "validate",
    "derive",
    "from_swc",
    "to_swc",
]


class ArrowStreamExportable(Protocol):
    """Anything implementing the Arrow PyCapsule stream interface (a ``pyarrow.Table`` or
    ``RecordBatchReader``, a Polars ``DataFrame``, a DuckDB relation, a :class:`Table`)."""

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...


# A filter: (column, op, value) tuples that must all hold, or a list of such lists of which
# any may hold (pyarrow's ``filters=`` form).
Condition = tuple[str, str, Any]
FilterLike = Union[Sequence[Condition], Sequence[Sequence[Condition]], None]

_OPS = {"=", "==", "!=", "<>", "<", "<=", ">", ">=", "in", "not in"}


def _fspath(location: Any) -> str:
    try:
        return str(os.fspath(location))
    except TypeError:
        raise InvalidInputError(
            f"a table location must be a str or os.PathLike, not {type(location).__name__}"
        ) from None


def _plain(value: Any) -> Any:
    """A filter value as JSON (NumPy scalars and arrays, sets and tuples included)."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        return value.item()
    if isinstance(value, (list, tuple, set, frozenset)) or hasattr(value, "tolist"):
        items = value.tolist() if hasattr(value, "tolist") else list(value)
        return [_plain(v) for v in items]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise InvalidInputError(f"filter value {value!r} is not a number, string, bool or None")


def _is_condition(item: Any) -> bool:
    return (
        isinstance(item, (tuple, list))
        and len(item) == 3
        and isinstance(item[0], str)
        and isinstance(item[1], str)
    )


def _filter_json(filter: FilterLike) -> str | None:  # noqa: A002 - pyarrow's name
    """The filter in disjunctive normal form, as JSON for the native module."""
    if filter is None:
        return None
    items: list[Any] = [filter] if _is_condition(filter) else list(filter)
    if not items:
        return None
    if all(_is_condition(c) for c in items):
        dnf = [items]
    elif all(isinstance(c, (list, tuple)) and all(_is_condition(x) for x in c) for c in items):
        dnf = [list(c) for c in items]
    else:
        raise InvalidInputError(
            "filter must be (column, op, value) tuples, or a list of lists of them "
            f"(op one of {sorted(_OPS)}), not {filter!r}"
        )
    return json.dumps([[[c[0], c[1], _plain(c[2])] for c in conj] for conj in dnf])


def _options_json(storage_options: Mapping[str, Any] | None) -> str:
    return json.dumps(dict(storage_options or {}))


class Table:
    """A table opened by :func:`read`: columns, filter and the source, not the data. Every
    export (``__arrow_c_stream__``) streams the table anew, in record batches, so one
    ``Table`` can feed pyarrow, Polars and DuckDB in turn; nothing is read before a consumer
    asks for it."""

    def __init__(
        self,
        raw: _native.RawTable,
        columns: list[str] | None,
        filter: str | None,  # noqa: A002
        batch_size: int,
    ) -> None:
        self._raw = raw
        self._columns = columns
        self._filter = filter
        self._batch_size = batch_size
        self._info: dict[str, Any] = json.loads(raw.info())

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The Arrow PyCapsule stream interface: an ``arrow_array_stream`` capsule over the
        selected rows and columns (``requested_schema`` is not honoured: the table's own
        types are exported)."""
        return self._raw.stream(self._columns, self._filter, self._batch_size)

    def __arrow_c_schema__(self) -> object:
        """The Arrow PyCapsule schema interface: an ``arrow_schema`` capsule of the selected
        columns."""
        return self._raw.schema_capsule(self._columns)

    @property
    def column_names(self) -> list[str]:
        """The names of the selected columns."""
        return list(self._columns) if self._columns is not None else list(self._info["columns"])

    @property
    def format(self) -> str:
        """The storage format: ``"parquet"``, ``"arrow-ipc"`` (IPC file), ``"arrow-ipc-stream"`` or
        ``"hive-parquet"`` (a Hive-partitioned directory)."""
        return str(self._info["format"])

    @property
    def partition_columns(self) -> list[str]:
        """The Hive partition columns (from the directory names), if any."""
        return list(self._info["partition_columns"])

    @property
    def files(self) -> list[str]:
        """The table's data files."""
        return list(self._info["files"])

    @property
    def metadata(self) -> dict[str, str]:
        """The table's schema metadata (the neurarrow keys: context, unit, ...)."""
        return dict(self._info["metadata"])

    @property
    def num_rows(self) -> int:
        """The number of rows of the table (all rows: the filter is not applied); from
        Parquet footers when possible, else by reading."""
        known = self._info["known_rows"]
        return int(known) if known is not None else self._raw.num_rows()

    def to_arrow(self) -> Any:
        """The selected rows as a ``pyarrow.Table`` (needs pyarrow)."""
        import importlib

        return importlib.import_module("pyarrow").table(self)

    def __repr__(self) -> str:
        return (
            f"<neurochunk.table.Table {self._info['display']!r} format={self.format} "
            f"columns={self.column_names}>"
        )


def read(
    path: Any,
    columns: Sequence[str] | None = None,
    filter: FilterLike = None,  # noqa: A002 - pyarrow's name
    *,
    batch_size: int = 0,
    storage_options: Mapping[str, Any] | None = None,
) -> Table:
    """Open the table at ``path`` (an Arrow IPC file, a Parquet file or a Hive-partitioned
    directory of Parquet files; a local path or a URL) for reading.

    ``columns`` selects and orders the columns (default: all, Hive partition columns
    included, with their values from the directory names). ``filter`` keeps the rows for
    which every ``(column, op, value)`` holds (``op``: ``==``, ``!=``, ``<``, ``<=``, ``>``,
    ``>=``, ``in``, ``not in``; ``None`` with ``==``/``!=`` tests for nulls), or with a list
    of such lists, the rows for which any list holds; filter columns need not be selected.
    ``batch_size`` caps the rows per record batch (0: the default).

    Returns a :class:`Table`, which implements ``__arrow_c_stream__``: pass it to
    ``pyarrow.table``, ``polars.DataFrame`` or DuckDB. The file is opened (and its schema
    read) now; errors such as a missing file or an unknown column are raised here.
    """
    if batch_size < 0:
        raise InvalidInputError("batch_size must not be negative")
    raw = _native.table_open(_fspath(path), _options_json(storage_options))
    cols = None if columns is None else [str(c) for c in columns]
    if isinstance(columns, str):
        raise InvalidInputError("columns must be a list of column names, not a str")
    filt = _filter_json(filter)
    # Check the columns and the filter now rather than at the first export (a stream reads
    # nothing until it is consumed).
    raw.stream(cols, filt, batch_size)
    return Table(raw, cols, filt, batch_size)


def _stream_of(data: Any) -> object:
    exporter = getattr(data, "__arrow_c_stream__", None)
    if exporter is None:
        raise InvalidInputError(
            f"{type(data).__name__} does not implement the Arrow PyCapsule stream interface "
            "(__arrow_c_stream__): pass a pyarrow Table or RecordBatchReader, a Polars "
            "DataFrame, a DuckDB relation or a neurochunk.table.Table"
        )
    return exporter()


def write(
    data: ArrowStreamExportable | Any,
    path: Any,
    *,
    partition_by: str | None = None,
    compression: str = "snappy",
    row_group_rows: int | None = None,
    schema: str | None = None,
    overwrite: bool = True,
    storage_options: Mapping[str, Any] | None = None,
) -> int:
    """Write ``data`` (any object implementing ``__arrow_c_stream__``) to ``path``, streaming
    its record batches; returns the number of rows written.

    The format comes from the extension (``.parquet``, ``.arrow``/``.feather``); with
    ``partition_by`` a Hive-partitioned directory of Parquet files, one ``column=value/``
    directory per value, plus ``_common_metadata`` with the full schema (readable by pyarrow,
    DuckDB ``read_parquet("DIR/**/*.parquet", hive_partitioning=true)``, Polars
    ``scan_parquet("DIR/**/*.parquet", hive_partitioning=True)``). The
    schema's metadata is written as table metadata. ``compression``: Parquet's ``snappy``
    (default), ``zstd``, ``lz4``, ``gzip`` or ``none``. ``schema`` names the neurarrow schema
    used in Hive part-file names (``part-0.skeletons.parquet``). A file replaces an existing
    table file atomically, and a Hive directory an existing Hive table (``overwrite=False``
    refuses any existing output instead); a file of another kind, or a directory holding
    anything else, is never replaced (:class:`NodeExistsError`). Nothing is visible until the
    whole table is written.
    """
    spec: dict[str, Any] = {
        "partition_by": partition_by,
        "compression": compression,
        "overwrite": bool(overwrite),
        "schema": schema,
        "storage_options": dict(storage_options or {}),
    }
    if row_group_rows is not None:
        spec["row_group_rows"] = int(row_group_rows)
    capsule = _stream_of(data)
    return _native.table_write(capsule, _fspath(path), json.dumps(spec))


@dataclass(frozen=True)
class Violation:
    """One broken rule of the neurarrow specification."""

    rule: str
    check: int
    location: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        """``{"rule", "check", "location", "message"}``."""
        return {"rule": self.rule, "check": self.check, "location": self.location, "message": self.message}


@dataclass(frozen=True)
class TableReport:
    """The validation result of one table."""

    path: str
    schema: str | None
    schema_source: str | None
    format: str | None
    rows: int
    valid: bool
    unreadable: bool
    errors: tuple[Violation, ...] = field(default_factory=tuple)
    warnings: tuple[Violation, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The report as plain data (what ``neurochunk table validate --json`` prints)."""
        return {
            "path": self.path,
            "schema": self.schema,
            "schema_source": self.schema_source,
            "format": self.format,
            "rows": self.rows,
            "valid": self.valid,
            "unreadable": self.unreadable,
            "errors": [v.to_dict() for v in self.errors],
            "warnings": [v.to_dict() for v in self.warnings],
        }

    def lines(self) -> list[str]:
        """One line per violation: ``PATH: error[rule] LOCATION: MESSAGE``."""
        return [f"{self.path}: error[{v.rule}] {v.location}: {v.message}" for v in self.errors] + [
            f"{self.path}: warning[{v.rule}] {v.location}: {v.message}" for v in self.warnings
        ]


@dataclass(frozen=True)
class ValidationReport:
    """The result of :func:`validate`: one :class:`TableReport` per table (dataset rules
    across tables included). True when every table is valid."""

    tables: tuple[TableReport, ...]

    @property
    def valid(self) -> bool:
        """Every table is readable and breaks no MUST (warnings allowed)."""
        return all(t.valid for t in self.tables)

    @property
    def errors(self) -> list[Violation]:
        """The errors of every table."""
        return [v for t in self.tables for v in t.errors]

    @property
    def warnings(self) -> list[Violation]:
        """The warnings of every table."""
        return [v for t in self.tables for v in t.warnings]

    def __bool__(self) -> bool:
        return self.valid

    def to_dict(self) -> dict[str, Any]:
        """``{"valid": bool, "tables": [TableReport.to_dict(), ...]}``."""
        return {"valid": self.valid, "tables": [t.to_dict() for t in self.tables]}

    def __str__(self) -> str:
        out: list[str] = []
        for t in self.tables:
            out += t.lines()
            out.append(
                f"{t.path}: {'valid' if t.valid else 'invalid'} ({t.schema or 'unknown schema'}, "
                f"{t.rows} rows, {len(t.errors)} error(s), {len(t.warnings)} warning(s))"
            )
        return "\n".join(out)


def _violations(items: Iterable[dict[str, Any]]) -> tuple[Violation, ...]:
    return tuple(Violation(str(v["rule"]), int(v["check"]), str(v["location"]), str(v["message"])) for v in items)


def validate(
    paths: Any,
    *,
    schema: str | None = None,
    strict: bool = False,
    max_per_rule: int = 20,
    storage_options: Mapping[str, Any] | None = None,
) -> ValidationReport:
    """Validate tables against the neurarrow specification, like ``neurochunk table
    validate``: ``paths`` is one path (or URL) or a list of them; several tables of one
    context are also checked against each other (ids, references, space).

    ``schema`` forces the schema (``skeletons``, ``pointclouds``, ``dotprops``,
    ``connections``, ...; default: from the file name, then from the columns); ``strict``
    grades the configurable rules as errors; at most ``max_per_rule`` violations are listed
    per rule and table. An unreadable table is reported (``unreadable=True``), not raised;
    an unknown ``schema`` raises :class:`neurochunk.InvalidInputError`.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    locations = [_fspath(p) for p in paths]
    if not locations:
        raise InvalidInputError("validate needs at least one table")
    raw = _native.table_validate(locations, schema, bool(strict), int(max_per_rule), _options_json(storage_options))
    reports = []
    for text in raw:
        r = json.loads(text)
        reports.append(
            TableReport(
                path=r["path"],
                schema=r["schema"],
                schema_source=r["schema_source"],
                format=r["format"],
                rows=int(r["rows"]),
                valid=bool(r["valid"]),
                unreadable=bool(r["unreadable"]),
                errors=_violations(r["errors"]),
                warnings=_violations(r["warnings"]),
            )
        )
    return ValidationReport(tuple(reports))


def _write_spec(partition_by: str | None, compression: str) -> str:
    return json.dumps({"partition_by": partition_by, "compression": compression})


def derive(
    input: Any,  # noqa: A002 - the CLI's name
    output: Any,
    *,
    schema: str | None = None,
    samples: Sequence[Any] = (),
    partition_by: str | None = None,
    compression: str = "snappy",
) -> dict[str, Any]:
    """Add or recompute derived fields (``child_ids``, ``n_children``, ``strahler`` of
    skeletons; ``src_fragment_id``, ``tgt_fragment_id`` of connections, which need the
    ``samples`` tables they refer to) of the local table ``input``, written to ``output``.
    Returns ``{"schema", "rows", "columns", "unresolved"}`` (``unresolved``: connection
    endpoints whose sample was not found)."""
    out = _native.table_derive(
        _fspath(input), _fspath(output), _write_spec(partition_by, compression), [_fspath(s) for s in samples], schema
    )
    return json.loads(out)  # type: ignore[no-any-return]


def from_swc(
    inputs: Any,
    output: Any,
    *,
    context: str,
    unit: str = "micrometer",
    space: str | None = None,
    fragment_id: int | None = None,
    allow_invalid: bool = False,
    partition_by: str | None = None,
    compression: str = "snappy",
) -> dict[str, Any]:
    """Import SWC files (or directories of them; one path or a list) into the skeletons
    table ``output`` (the ``net.clbarnes.swc`` extension). ``context`` is the table's
    context identifier (an IRI or UUID), ``unit`` the coordinates' unit; fragment ids come
    from ``fragment_id`` (first file), else numeric file stems, else the file's position. A
    file of several trees (several roots, nothing else wrong) becomes one fragment per tree,
    every sample kept (a note says which); any other file that is not one tree is refused
    unless ``allow_invalid``. Returns ``{"rows", "fragments": [(file, fragment_id), ...],
    "notes"}``."""
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    out = json.loads(
        _native.table_from_swc(
            [_fspath(p) for p in inputs],
            _fspath(output),
            context,
            unit,
            space,
            fragment_id,
            bool(allow_invalid),
            _write_spec(partition_by, compression),
        )
    )
    out["fragments"] = [tuple(f) for f in out["fragments"]]
    return out  # type: ignore[no-any-return]


def to_swc(input: Any, output: Any, *, fragment: int | None = None) -> list[str]:  # noqa: A002
    """Export the skeletons table ``input`` to SWC: ``output`` is one ``.swc`` file when the
    table (or the selected ``fragment``) holds one fragment, else a directory of
    ``{fragment_id}.swc`` files. Returns the files written."""
    return _native.table_to_swc(_fspath(input), _fspath(output), fragment)
