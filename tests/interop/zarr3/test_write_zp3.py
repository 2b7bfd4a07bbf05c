"""Arrays written by `neurochunk put` and `neurochunk convert` (Zarr v2 and v3) are read by
zarr-python 3.

Every case of put_cases.py that zarr-python 3 can read: values must equal the npy handed to
`put`; requested fill values and attributes must come back. `convert` cases start from arrays
zarr-python 3 wrote and change format, chunking, sharding and codecs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import zarr
from zarr.codecs import BytesCodec, Crc32cCodec, ShardingCodec, TransposeCodec, ZstdCodec

import samples
from ncli import assert_same_array, cli_form, json_equal, load_json
from put_cases import ZP3, PutCase, cases_for


def check_fill_value(got, requested) -> None:
    if requested == "NaN":
        assert isinstance(got, (float, np.floating)) and math.isnan(got), f"fill_value {got!r}"
    else:
        assert got == requested, f"fill_value {got!r} != {requested!r}"


@pytest.mark.parametrize("case", cases_for(ZP3), ids=lambda c: c.full_id)
def test_zarr_python3_reads_put(case: PutCase, tmp_path, nc):
    source = case.make()
    path = tmp_path / "written.zarr"
    nc.put(source, path, case.fmt, **case.options)
    if case.meta_check:
        verdict = case.meta_check(load_json(path / (".zarray" if case.fmt == "zarr2" else "zarr.json")))
        assert verdict is True, verdict
    z = zarr.open_array(str(path), mode="r")
    assert z.metadata.zarr_format == (2 if case.fmt == "zarr2" else 3)
    assert_same_array(cli_form(z[...]), cli_form(source))
    if "fill_value" in case.options:
        check_fill_value(z.fill_value, case.options["fill_value"])
    if "attrs" in case.options:
        assert json_equal(dict(z.attrs), case.options["attrs"]), dict(z.attrs)


def _zp3_source(path, data, zarr_format=3, **kwargs):
    z = zarr.create_array(str(path), shape=data.shape, dtype=kwargs.pop("dtype", data.dtype), zarr_format=zarr_format, **kwargs)
    z[...] = data
    return cli_form(zarr.open_array(str(path), mode="r")[...])


CONVERT_CASES = {
    "v3-sharded-to-v2": (
        lambda: samples.sample("<u2", (40, 30)),
        dict(chunks=(20, 30), serializer=ShardingCodec(chunk_shape=(5, 10), codecs=[BytesCodec(), ZstdCodec(level=1)])),
        "zarr2", dict(chunks=(8, 8), codec="blosc:lz4:5:shuffle"),
    ),
    "v3-transpose-big-endian-to-v2": (
        lambda: samples.sample("<f8", (17, 9)),
        dict(chunks=(5, 5), filters=[TransposeCodec(order=(1, 0))], serializer=BytesCodec(endian="big"), compressors=[Crc32cCodec()]),
        "zarr2", dict(codec="zlib:1"),
    ),
    "v2-to-v3-sharded": (
        lambda: samples.sample("<i4", (40, 30)),
        dict(chunks=(7, 9), zarr_format=2),
        "zarr3", dict(chunks=(5, 5), shards=(20, 15), codec="zstd:3,crc32c"),
    ),
    "v3-strings-to-v2": (
        lambda: samples.text((9, 8)),
        dict(chunks=(4, 4), dtype=str),
        "zarr2", dict(codec="zstd:1"),
    ),
    "v3-rechunk-recompress": (
        lambda: samples.sample("<c8", (20, 20)),
        dict(chunks=(3, 7)),
        "zarr3", dict(chunks=(10, 10), codec="gzip:1"),
    ),
    "v3-datetime-to-v2": (
        lambda: samples.sample("<M8[10ms]", (25,)),
        dict(chunks=(4,)),
        "zarr2", dict(chunks=(10,)),
    ),
}


@pytest.mark.parametrize("name", list(CONVERT_CASES))
def test_zarr_python3_reads_convert(name, tmp_path, nc):
    make, source_kwargs, fmt, convert_options = CONVERT_CASES[name]
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    expected = _zp3_source(src, make(), **source_kwargs)
    nc.convert(src, dst, fmt, **convert_options)
    z = zarr.open_array(str(dst), mode="r")
    assert z.metadata.zarr_format == (2 if fmt == "zarr2" else 3)
    assert_same_array(cli_form(z[...]), expected)
