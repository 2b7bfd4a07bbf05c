"""Arrays written by `neurochunk put` are opened by tensorstore's zarr and zarr3 drivers.

Only the cases of put_cases.py within tensorstore's reach run here (no text or datetime types,
v2 compressors blosc/zlib/gzip/bz2/zstd without filters, v3 core codecs only).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import samples
import tsio
from ncli import assert_same_array, cli_form
from put_cases import TS, PutCase, cases_for


@pytest.mark.parametrize("case", cases_for(TS), ids=lambda c: c.full_id)
def test_tensorstore_reads_put(case: PutCase, tmp_path, nc):
    source = case.make()
    path = tmp_path / "written.zarr"
    nc.put(source, path, case.fmt, **case.options)
    store = tsio.open_existing(path, case.fmt)
    assert_same_array(cli_form(store.read().result()), cli_form(source))
    requested = case.options.get("fill_value")
    if requested is not None:
        fill = store.fill_value
        if requested == "NaN":
            assert math.isnan(float(fill)), f"fill_value {fill!r}"
        else:
            assert fill == requested, f"fill_value {fill!r} != {requested!r}"


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_tensorstore_reads_neurochunk_region_rewrite(fmt, tmp_path, nc):
    """tensorstore writes into a neurochunk-made array; neurochunk reads the merged result."""
    source = samples.sample("<i4", (20, 18), seed=5)
    path = tmp_path / "written.zarr"
    nc.put(source, path, fmt, chunks=(6, 5), codec="zstd:1")
    patch = np.full((7, 4), -1, dtype="<i4")
    tsio.open_existing(path, fmt)[3:10, 8:12].write(patch).result()
    expected = source.copy()
    expected[3:10, 8:12] = patch
    assert_same_array(nc.get(path), expected)
