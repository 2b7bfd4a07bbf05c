"""Zarr v2 arrays written by `neurochunk put` and `neurochunk convert` are read by zarr-python 2.18.

Every case of put_cases.py that zarr-python 2 can read: the values it returns must equal the
npy handed to `put`, and the stored fill value and attributes must be the requested ones.
`convert` cases start from arrays zarr-python 2 wrote and re-chunk / re-compress them.
"""

from __future__ import annotations

import math

import numcodecs
import numpy as np
import pytest
import tensorstore as ts
import zarr

import samples
from ncli import assert_same_array, cli_form, json_equal, load_json
from put_cases import ZP2, PutCase, cases_for


def check_fill_value(got, requested) -> None:
    if requested == "NaN":
        assert isinstance(got, (float, np.floating)) and math.isnan(got), f"fill_value {got!r}"
    else:
        assert got == requested, f"fill_value {got!r} != {requested!r}"


@pytest.mark.parametrize("case", cases_for(ZP2), ids=lambda c: c.full_id)
def test_zarr_python2_reads_put(case: PutCase, tmp_path, nc):
    source = case.make()
    path = tmp_path / "written.zarr"
    nc.put(source, path, case.fmt, **case.options)
    if case.meta_check:
        verdict = case.meta_check(load_json(path / ".zarray"))
        assert verdict is True, verdict
    z = zarr.open_array(str(path), mode="r")
    assert_same_array(cli_form(z[...]), cli_form(source))
    if "fill_value" in case.options:
        check_fill_value(z.fill_value, case.options["fill_value"])
    if "attrs" in case.options:
        assert json_equal(z.attrs.asdict(), case.options["attrs"]), z.attrs.asdict()


def _zp2_source(path, data, **kwargs):
    z = zarr.open_array(str(path), mode="w", shape=data.shape, dtype=kwargs.pop("dtype", data.dtype), **kwargs)
    z[...] = data
    return cli_form(zarr.open_array(str(path), mode="r")[...])


CONVERT_CASES = {
    "rechunk-recompress": (
        lambda: samples.sample("<i4", (40, 30)),
        dict(chunks=(7, 9), compressor=numcodecs.Blosc("lz4", 5, 1)),
        dict(chunks=(16, 16), codec="zstd:3"),
    ),
    "F-order-big-endian-to-C": (
        lambda: samples.sample(">f8", (20, 11)),
        dict(chunks=(6, 5), order="F", compressor=numcodecs.Zlib(1)),
        dict(chunks=(10, 10), codec="gzip:1"),
    ),
    "vlen-utf8": (
        lambda: samples.text((9, 8)),
        dict(chunks=(4, 4), dtype=object, object_codec=numcodecs.VLenUTF8()),
        dict(codec="zstd:1"),
    ),
    "struct-subarray": (
        lambda: samples.sample(samples.STRUCT_NESTED_BE, (12,)),
        dict(chunks=(5,)),
        dict(chunks=(4,), codec="none"),
    ),
    "datetime-with-filter": (
        lambda: samples.sample("<M8[10ms]", (30,)),
        dict(chunks=(7,), filters=[numcodecs.Delta(dtype="<i8")], compressor=numcodecs.BZ2(1)),
        dict(chunks=(10,), codec="lz4"),
    ),
}


@pytest.mark.parametrize("name", list(CONVERT_CASES))
def test_zarr_python2_reads_convert_to_zarr2(name, tmp_path, nc):
    make, source_kwargs, convert_options = CONVERT_CASES[name]
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    expected = _zp2_source(src, make(), **source_kwargs)
    nc.convert(src, dst, "zarr2", **convert_options)
    meta = load_json(dst / ".zarray")
    if "chunks" in convert_options:
        assert meta["chunks"] == list(convert_options["chunks"])
    assert_same_array(cli_form(zarr.open_array(str(dst), mode="r")[...]), expected)


@pytest.mark.parametrize("shards", [None, (20, 20)], ids=["unsharded", "sharded"])
def test_tensorstore_reads_zarr2_converted_to_zarr3(shards, tmp_path, nc):
    """A zarr-python 2 array converted to Zarr v3 opens in tensorstore's zarr3 driver."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    expected = _zp2_source(src, samples.sample("<u2", (40, 30)), chunks=(7, 9), order="F")
    options = dict(chunks=(10, 10), codec="zstd:3")
    if shards:
        options["shards"] = shards
    nc.convert(src, dst, "zarr3", **options)
    store = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(dst)}}, open=True).result()
    assert_same_array(cli_form(store.read().result()), expected)
    assert_same_array(nc.get(dst), expected, "neurochunk get of its own conversion")
