"""neurochunk: Zarr v2, Zarr v3 and N5 arrays and groups as NumPy arrays, on a Rust engine.

>>> import numpy as np, neurochunk as nc
>>> a = nc.create_array("volume.zarr", shape=(64, 256, 256), dtype="uint16",
...                     chunks=(16, 64, 64), shards=(64, 256, 256), compressors="zstd:3")
>>> a[5] = np.arange(256 * 256, dtype="uint16").reshape(256, 256)
>>> tile = nc.open("volume.zarr")[5, :128, ::2]

:mod:`neurochunk.table` reads and writes neurarrow tables (Arrow IPC, Parquet, Hive) through
the Arrow PyCapsule interface (pyarrow, Polars, DuckDB); :mod:`neurochunk.nwb` reads NWB files
on Zarr in both hdmf-zarr conventions; :mod:`neurochunk.ome` opens multiscale images (OME-Zarr
0.4/0.5, BigDataViewer and n5-viewer N5) and builds pyramids; :mod:`neurochunk.precomputed`
reads and writes Neuroglancer precomputed skeletons, meshes and annotations;
:mod:`neurochunk.icechunk` writes Icechunk repositories in sessions that commit. Locations may be URLs (``s3://``, ``gs://``,
``https://``, ``file://``) with ``storage_options``. A tutorial: ``docs/python.md``.

Every error is a :class:`neurochunk.Error` (see ``neurochunk._errors`` for the subclasses,
which also derive from the matching built-in exceptions).
"""

from ._core import (
    Array,
    Attributes,
    Group,
    convert,
    create_array,
    create_group,
    open,
    open_array,
    open_group,
)
from ._errors import (
    CorruptDataError,
    Error,
    InvalidInputError,
    NodeExistsError,
    NodeNotFoundError,
    OutOfBoundsError,
    ReadOnlyError,
    StoreError,
    UnsupportedError,
)
from ._neurochunk import __version__
from . import icechunk, nwb, ome, precomputed, table

__all__ = [
    "Array",
    "Attributes",
    "Group",
    "convert",
    "create_array",
    "create_group",
    "open",
    "open_array",
    "open_group",
    "Error",
    "CorruptDataError",
    "InvalidInputError",
    "NodeExistsError",
    "NodeNotFoundError",
    "OutOfBoundsError",
    "ReadOnlyError",
    "StoreError",
    "UnsupportedError",
    "__version__",
    "icechunk",
    "nwb",
    "ome",
    "precomputed",
    "table",
]
