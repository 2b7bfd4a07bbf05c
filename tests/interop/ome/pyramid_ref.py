"""A NumPy reference of the pyramid semantics in docs/ome.md, written from the text, not the code.

* Level k+1 is computed from level k; on axis d its length is ceil(n / f[d]) and output element i
  covers input [i*f, min((i+1)*f, n)): partial edge blocks use only the elements that exist.
* mean: f64 sum / element count; integers rounded to nearest, ties to even (numpy.rint).
* mode: most frequent value, ties to the smallest value. min / max. stride: the block's first
  element.
* Factors: explicit, the default (2 on spatial axes, 1 elsewhere) or auto-isotropic (halve only
  the spatial axes finer than the coarsest / sqrt(2); once all are within sqrt(2), halve all).
  An axis already of length 1 keeps factor 1.
* Level k's scale = scale_0 * cumulative factor; translation = t_0 + (cum - 1) * scale_0 / 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

METHODS = ("mean", "mode", "min", "max", "stride")


def _blocks(a: np.ndarray, f: Sequence[int]) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """(values, valid, out_shape): values (n_out, prod(f)) with the block's elements (padding
    repeats the edge), valid marks which of them exist."""
    out_shape = tuple(-(-n // k) for n, k in zip(a.shape, f))
    pad = [(0, o * k - n) for n, k, o in zip(a.shape, f, out_shape)]
    padded = np.pad(a, pad, mode="edge")
    mask = np.pad(np.ones(a.shape, dtype=bool), pad, mode="constant", constant_values=False)
    split: list[int] = []
    for o, k in zip(out_shape, f):
        split += [o, k]
    nd = a.ndim
    order = [2 * d for d in range(nd)] + [2 * d + 1 for d in range(nd)]
    n_out = int(np.prod(out_shape, dtype=np.int64))
    block = int(np.prod(f, dtype=np.int64))
    values = padded.reshape(split).transpose(order).reshape(n_out, block)
    valid = mask.reshape(split).transpose(order).reshape(n_out, block)
    return values, valid, out_shape


def downsample(a: np.ndarray, factors: Sequence[int], method: str) -> np.ndarray:
    """One pyramid step of `a` by `factors` with `method` (see the module docstring)."""
    f = [int(k) for k in factors]
    assert len(f) == a.ndim and all(k >= 1 for k in f), (a.shape, f)
    if method == "stride":
        return a[tuple(slice(None, None, k) for k in f)].copy()
    values, valid, out_shape = _blocks(a, f)
    dt = a.dtype
    if method == "mean":
        sums = np.where(valid, values.astype(np.float64), 0.0).sum(axis=1)
        mean = sums / valid.sum(axis=1)
        out = np.rint(mean).astype(dt) if dt.kind in "iu" else mean.astype(dt)
    elif method in ("min", "max"):
        if dt.kind in "iu":
            info = np.iinfo(dt)
            fill = info.max if method == "min" else info.min
        else:
            fill = np.inf if method == "min" else -np.inf
        masked = np.where(valid, values, np.array(fill, dtype=dt))
        out = masked.min(axis=1) if method == "min" else masked.max(axis=1)
    elif method == "mode":
        # count[b, j] = how often values[b, j] occurs among the block's valid elements.
        eq = values[:, :, None] == values[:, None, :]
        counts = (eq & valid[:, None, :]).sum(axis=2)
        counts = np.where(valid, counts, -1)
        best = counts.max(axis=1, keepdims=True)
        candidates = counts == best
        if dt.kind in "iu":
            big = np.array(np.iinfo(dt).max, dtype=dt)
        else:
            big = np.array(np.inf, dtype=dt)
        out = np.where(candidates, values, big).min(axis=1)
    else:
        raise ValueError(f"unknown method {method!r}")
    return np.asarray(out, dtype=dt).reshape(out_shape)


def level_factors(
    shape: Sequence[int],
    scale: Sequence[float],
    spatial: Sequence[bool],
    factors: Sequence[int] | str | None,
) -> list[int]:
    """The factors of one step from a level of `shape` and `scale` (physical voxel size)."""
    if factors is not None and not isinstance(factors, str):
        f = [int(k) for k in factors]
    elif factors is None:
        f = [2 if s else 1 for s in spatial]
    else:
        assert factors == "auto-isotropic", factors
        sizes = [sc for sc, s in zip(scale, spatial) if s]
        coarsest = max(sizes)
        finer = [s and sc < coarsest / math.sqrt(2) for sc, s in zip(scale, spatial)]
        f = [2 if fi else 1 for fi in finer] if any(finer) else [2 if s else 1 for s in spatial]
    return [1 if n == 1 else k for n, k in zip(shape, f)]


@dataclass
class RefLevel:
    data: np.ndarray
    scale: list[float]
    translation: list[float]
    cumulative: list[int]


def pyramid(
    a: np.ndarray,
    levels: int,
    method: str,
    factors: Sequence[int] | str | None = None,
    scale: Sequence[float] | None = None,
    translation: Sequence[float] | None = None,
    spatial: Sequence[bool] | None = None,
) -> list[RefLevel]:
    """`levels` levels (level 0 included) of `a` by the contract's rules."""
    nd = a.ndim
    scale0 = [float(s) for s in (scale if scale is not None else [1.0] * nd)]
    trans0 = [float(t) for t in (translation if translation is not None else [0.0] * nd)]
    spatial = list(spatial) if spatial is not None else [d >= nd - 3 for d in range(nd)]
    cum = [1] * nd
    out = [RefLevel(a.copy(), list(scale0), list(trans0), list(cum))]
    current = a
    for _ in range(1, levels):
        cur_scale = [s * c for s, c in zip(scale0, cum)]
        f = level_factors(current.shape, cur_scale, spatial, factors)
        current = downsample(current, f, method)
        cum = [c * k for c, k in zip(cum, f)]
        out.append(
            RefLevel(
                current,
                [s * c for s, c in zip(scale0, cum)],
                [t + (c - 1) * s / 2 for t, c, s in zip(trans0, cum, scale0)],
                list(cum),
            )
        )
    return out


def _self_check() -> None:
    """Hand-computed cases, so that the reference itself is tested wherever it is imported."""
    a = np.array([1, 2, 3, 4, 5], dtype=np.uint8)
    assert downsample(a, [2], "mean").tolist() == [2, 4, 5]  # 1.5 -> 2, 3.5 -> 4 (ties to even)
    assert downsample(np.array([0, 1, 2, 3], dtype=np.uint8), [2], "mean").tolist() == [0, 2]
    assert downsample(a, [2], "stride").tolist() == [1, 3, 5]
    assert downsample(a, [2], "min").tolist() == [1, 3, 5]
    assert downsample(a, [2], "max").tolist() == [2, 4, 5]
    m = np.array([7, 3, 3, 7, 9], dtype=np.uint8)
    assert downsample(m, [4], "mode").tolist() == [3, 9]  # tie 3 / 7 -> 3; edge block [9]
    assert downsample(np.array([5, 5, 1], dtype=np.int16), [3], "mode").tolist() == [5]
    f = np.array([0.5, 0.25, 1.0], dtype=np.float32)
    assert downsample(f, [2], "mean").tolist() == [0.375, 1.0]
    b = np.arange(6, dtype=np.uint16).reshape(2, 3)
    assert downsample(b, [2, 2], "mean").tolist() == [[2, 4]]  # (0+1+3+4)/4 = 2, (2+5)/2 = 3.5 -> 4
    assert level_factors([10, 10, 10], [4.0, 1.0, 1.0], [True] * 3, "auto-isotropic") == [1, 2, 2]
    assert level_factors([10, 10, 10], [4.0, 2.0, 2.0], [True] * 3, "auto-isotropic") == [1, 2, 2]
    assert level_factors([10, 10, 10], [4.0, 3.0, 3.0], [True] * 3, "auto-isotropic") == [2, 2, 2]
    assert level_factors([1, 10, 10], [1.0, 1.0, 1.0], [True] * 3, None) == [1, 2, 2]
    lv = pyramid(np.zeros((8, 8), np.uint8), 3, "mean", [2, 2], scale=[0.5, 2.0], translation=[1, 0])
    assert lv[2].scale == [2.0, 8.0] and lv[2].translation == [1 + 3 * 0.25, 3.0]


_self_check()
