"""NumPy indexing, normalised for the engine: one run (first index, step, count, dropped) per
axis, as NumPy's basic indexing resolves it; orthogonal integer and boolean indexing as a set
of boxes, each read with basic indexing.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ._errors import InvalidInputError, OutOfBoundsError

# (first index, step, count, dropped): what the native module takes per axis.
Run = tuple[int, int, int, bool]


@dataclass(frozen=True)
class Basic:
    """A resolved basic selection."""

    runs: list[Run]
    # Shape of the engine's result (dropped axes removed, no new axes).
    shape: tuple[int, ...]
    # Shape NumPy gives the result (with np.newaxis axes).
    result_shape: tuple[int, ...]
    # Every axis indexed by an integer (the result is a scalar).
    scalar: bool


def _as_tuple(key: Any) -> tuple[Any, ...]:
    return key if isinstance(key, tuple) else (key,)


def _expand_ellipsis(key: tuple[Any, ...], ndim: int, count_none: bool) -> tuple[Any, ...]:
    """Replace ``...`` by full slices and pad the key to ``ndim`` axes."""
    ellipses = sum(1 for k in key if k is Ellipsis)
    if ellipses > 1:
        raise InvalidInputError("an index can only have a single ellipsis ('...')")
    taking = sum(1 for k in key if k is not Ellipsis and not (count_none and k is None))
    if taking > ndim:
        raise OutOfBoundsError(
            f"too many indices for array: array is {ndim}-dimensional, but {taking} were indexed"
        )
    fill = (slice(None),) * (ndim - taking)
    if ellipses:
        at = next(i for i, k in enumerate(key) if k is Ellipsis)
        return key[:at] + fill + key[at + 1 :]
    return key + fill


def is_integer(k: Any) -> bool:
    """Whether ``k`` is an integer index (a Python or NumPy integer, not a bool)."""
    if isinstance(k, (bool, np.bool_)):
        return False
    try:
        operator.index(k)
    except TypeError:
        return False
    return not isinstance(k, np.ndarray) or k.ndim == 0


def normalize_index(k: Any, size: int, axis: int) -> int:
    """An integer index checked against ``size``, negative values counting from the end."""
    i = operator.index(k)
    if i < -size or i >= size:
        raise OutOfBoundsError(f"index {i} is out of bounds for axis {axis} with size {size}")
    return i + size if i < 0 else i


def slice_run(s: slice, size: int) -> Run:
    """The run of a slice over an axis of ``size`` elements (NumPy semantics)."""
    for part in (s.start, s.stop, s.step):
        if part is not None and not is_integer(part):
            raise InvalidInputError(f"slice indices must be integers or None, not {part!r}")
    if s.step is not None and operator.index(s.step) == 0:
        raise InvalidInputError("slice step cannot be zero")
    start, stop, step = s.indices(size)
    count = len(range(start, stop, step))
    if count == 0:
        return (0, 1, 0, False)
    return (start, step, count, False)


def is_basic(key: Any) -> bool:
    """Whether every component of ``key`` is basic (integer, slice, ``...``, ``None``)."""
    return all(
        k is Ellipsis or k is None or isinstance(k, slice) or is_integer(k) for k in _as_tuple(key)
    )


def resolve_basic(key: Any, shape: tuple[int, ...]) -> Basic:
    """Resolve a basic index (integers, slices, ``...``, ``np.newaxis``) against ``shape``."""
    original = _as_tuple(key)
    key = _expand_ellipsis(original, len(shape), count_none=True)
    runs: list[Run] = []
    engine: list[int] = []
    result: list[int] = []
    axis = 0
    for k in key:
        if k is None:
            result.append(1)
            continue
        size = shape[axis]
        if isinstance(k, slice):
            run = slice_run(k, size)
            engine.append(run[2])
            result.append(run[2])
        elif is_integer(k):
            run = (normalize_index(k, size, axis), 1, 1, True)
        else:
            raise InvalidInputError(
                f"unsupported index {k!r}: use integers, slices, '...' or np.newaxis "
                "(or .oindex[...] for integer and boolean arrays)"
            )
        runs.append(run)
        axis += 1
    # As NumPy: integers on every axis give a scalar; `...` or np.newaxis keep an array
    # (`a[()]` of a 0-d array is its scalar, `a[...]` a 0-d array).
    scalar = all(r[3] for r in runs) and not any(k is Ellipsis or k is None for k in original)
    return Basic(runs, tuple(engine), tuple(result), scalar)


@dataclass(frozen=True)
class OrthogonalAxis:
    """One axis of an orthogonal selection."""

    # For an integer or slice axis: its run. For an array axis: None.
    run: Run | None
    # For an array axis: the selected indices in order (non-negative).
    indices: npt.NDArray[np.intp] | None


def resolve_orthogonal(key: Any, shape: tuple[int, ...]) -> list[OrthogonalAxis]:
    """Resolve an orthogonal index: per axis an integer, a slice, a 1-d integer array (or
    list) or a 1-d boolean array of the axis's length."""
    key = _expand_ellipsis(_as_tuple(key), len(shape), count_none=False)
    axes: list[OrthogonalAxis] = []
    for axis, (k, size) in enumerate(zip(key, shape)):
        if k is None:
            raise InvalidInputError("np.newaxis is not supported in orthogonal indexing")
        if isinstance(k, slice):
            axes.append(OrthogonalAxis(slice_run(k, size), None))
        elif is_integer(k):
            axes.append(OrthogonalAxis((normalize_index(k, size, axis), 1, 1, True), None))
        else:
            arr = np.asarray(k)
            if arr.ndim != 1:
                raise InvalidInputError(
                    f"orthogonal index for axis {axis} must be one-dimensional, not {arr.ndim}-d"
                )
            if arr.dtype == np.bool_:
                if arr.shape[0] != size:
                    raise OutOfBoundsError(
                        f"boolean index did not match axis {axis}: size {size}, "
                        f"index size {arr.shape[0]}"
                    )
                idx = np.flatnonzero(arr).astype(np.intp)
            elif arr.size == 0:
                idx = np.empty(0, dtype=np.intp)
            elif np.issubdtype(arr.dtype, np.integer):
                idx = arr.astype(np.intp)
                bad = (idx < -size) | (idx >= size)
                if bad.any():
                    raise OutOfBoundsError(
                        f"index {int(idx[bad][0])} is out of bounds for axis {axis} with size {size}"
                    )
                idx = np.where(idx < 0, idx + size, idx)
            else:
                raise InvalidInputError(
                    f"orthogonal index for axis {axis} must hold integers or booleans, "
                    f"not {arr.dtype}"
                )
            axes.append(OrthogonalAxis(None, idx))
    return axes


def clusters(indices: npt.NDArray[np.intp], chunk: int) -> list[tuple[int, int]]:
    """Cut sorted unique ``indices`` into ranges ``[lo, hi)`` of consecutive touched chunks,
    so that each range is read as one box and no untouched chunk is read."""
    if indices.size == 0:
        return []
    unique = np.unique(indices)
    blocks = unique // max(chunk, 1)
    # A new range starts where the chunk index jumps by more than one.
    breaks = np.flatnonzero(np.diff(blocks) > 1) + 1
    out = []
    for part in np.split(unique, breaks):
        out.append((int(part[0]), int(part[-1]) + 1))
    return out
