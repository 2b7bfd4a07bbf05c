"""Small wrappers around tensorstore's `zarr` (v2) and `zarr3` drivers on the local filesystem."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorstore as ts

DRIVERS = {"zarr2": "zarr", "zarr3": "zarr3"}


def spec(path: Path, fmt: str, **extra) -> dict:
    return {"driver": DRIVERS[fmt], "kvstore": {"driver": "file", "path": str(path)}, **extra}


def create(path: Path, fmt: str, metadata: dict, dtype: str | None = None, field: str | None = None):
    extra = {"metadata": metadata}
    if field is not None:
        extra["field"] = field
    kwargs = {"dtype": dtype} if dtype is not None else {}
    return ts.open(spec(path, fmt, **extra), create=True, open=field is not None, **kwargs).result()


def open_existing(path: Path, fmt: str, field: str | None = None):
    extra = {"field": field} if field is not None else {}
    return ts.open(spec(path, fmt, **extra), open=True).result()


def read(path: Path, fmt: str, field: str | None = None) -> np.ndarray:
    return open_existing(path, fmt, field).read().result()
