"""Zarr v2 arrays written by zarr-python 2.18 are read by `neurochunk get`.

One test per case: zarr-python writes an array (every data type, compressor, filter, layout and
fill value it supports), reads it back itself, and `neurochunk get` must return the same values
in its documented output form (little-endian, C order, vlen text as `<U{maxlen}`).
"""

from __future__ import annotations

import lzma
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numcodecs
import numpy as np
import pytest
import zarr

import samples
from ncli import assert_same_array, cli_form, select
from samples import CHUNKS_2D, CHUNKS_3D, SHAPE_2D, SHAPE_3D


@dataclass
class Case:
    """One zarr-python-written array: how to make the data and how to create the array."""

    id: str
    make: Callable[[], np.ndarray]
    chunks: tuple = CHUNKS_2D
    kwargs: dict = field(default_factory=dict)
    # Write only the first chunk, so the other chunks stay unwritten (read as fill_value).
    sparse: bool = False
    # Adjustment of zarr-python's own read-back before it is turned into the expected output.
    fix_readback: Callable[[np.ndarray], np.ndarray] | None = None


def write_zp2(path: Path, case: Case) -> np.ndarray:
    """Create the array with zarr-python 2 and return zarr-python 2's own read-back of it."""
    data = case.make()
    kwargs = dict(case.kwargs)
    dtype = kwargs.pop("dtype", data.dtype)
    z = zarr.open_array(str(path), mode="w", shape=data.shape, chunks=case.chunks, dtype=dtype, **kwargs)
    if case.sparse:
        first = tuple(slice(0, c) for c in case.chunks)
        z[first] = data[first]
        stored = [k for k in z.store.keys() if not k.startswith(".")]
        assert len(stored) < z.nchunks, "sparse case wrote every chunk"
    else:
        z[...] = data
    readback = zarr.open_array(str(path), mode="r")[...]
    return case.fix_readback(readback) if case.fix_readback else readback


# ------------------------------------------------------------------------------------------
# The catalogue
# ------------------------------------------------------------------------------------------


def _of(dtype, shape=SHAPE_2D, seed=0):
    return lambda: samples.sample(dtype, shape, seed)


NUMERIC = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16"]
BIG_ENDIAN = [">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f2", ">f4", ">f8", ">c8", ">c16"]
DATETIMES = [
    "<M8[ns]", "<M8[us]", "<M8[ms]", "<M8[s]", "<M8[D]", "<M8[10ms]", "<M8[15m]", ">M8[us]",
    "<m8[ns]", "<m8[s]", "<m8[100us]", "<m8[h]", ">m8[ns]", ">m8[25s]",
]
FIXED = ["|V7", "|S6", "<U5", ">U5", "|S1", "<U1"]
STRUCTS = {
    "struct-flat": samples.STRUCT_FLAT,
    "struct-nested-le": samples.STRUCT_NESTED_LE,
    "struct-nested-be-subarray": samples.STRUCT_NESTED_BE,
    "struct-mixed-endian-subarray": samples.STRUCT_MIXED_SUBARRAY,
}


def _name(dtype: str) -> str:
    return dtype.replace("<", "le-").replace(">", "be-").replace("|", "").replace("[", "-").rstrip("]")


DTYPE_CASES = (
    [Case(f"dtype-{_name(d)}", _of(d)) for d in NUMERIC + BIG_ENDIAN + DATETIMES + FIXED if "V" not in d]
    # zarr-python 2 cannot convert its default fill_value 0 to raw bytes: create with null.
    + [Case(f"dtype-{_name(d)}", _of(d), kwargs=dict(fill_value=None)) for d in FIXED if "V" in d]
    + [Case(f"dtype-{k}", _of(v)) for k, v in STRUCTS.items()]
    + [
        Case("dtype-object-vlen-utf8", samples.text, kwargs=dict(dtype=object, object_codec=numcodecs.VLenUTF8())),
        Case("dtype-object-vlen-bytes", samples.blobs, kwargs=dict(dtype=object, object_codec=numcodecs.VLenBytes())),
        Case("dtype-object-json2-strings", samples.text, kwargs=dict(dtype=object, object_codec=numcodecs.JSON())),
        Case(
            "dtype-object-vlen-utf8-uncompressed",
            samples.text,
            kwargs=dict(dtype=object, object_codec=numcodecs.VLenUTF8(), compressor=None),
        ),
    ]
)


def _blosc(cname, shuffle, clevel=5, blocksize=0):
    return numcodecs.Blosc(cname=cname, clevel=clevel, shuffle=shuffle, blocksize=blocksize)


COMPRESSORS: dict[str, Any] = {
    **{
        f"blosc-{cname}-shuffle{shuffle}": _blosc(cname, shuffle)
        for cname in ["lz4", "lz4hc", "blosclz", "zstd", "zlib"]
        for shuffle in [0, 1, 2]
    },
    "blosc-lz4-autoshuffle": _blosc("lz4", -1),
    "blosc-zstd-clevel0": _blosc("zstd", 1, clevel=0),
    "blosc-blosclz-clevel9-blocksize256": _blosc("blosclz", 1, clevel=9, blocksize=256),
    "gzip-1": numcodecs.GZip(level=1),
    "gzip-9": numcodecs.GZip(level=9),
    "zlib-1": numcodecs.Zlib(level=1),
    "zlib-9": numcodecs.Zlib(level=9),
    "zstd-1": numcodecs.Zstd(level=1),
    "zstd-3-checksum": numcodecs.Zstd(level=3, checksum=True),
    "zstd-negative-level": numcodecs.Zstd(level=-5),
    "zstd-19": numcodecs.Zstd(level=19),
    "bz2-1": numcodecs.BZ2(level=1),
    "bz2-9": numcodecs.BZ2(level=9),
    "lzma-xz": numcodecs.LZMA(),
    "lzma-xz-preset1-crc32": numcodecs.LZMA(preset=1, check=lzma.CHECK_CRC32),
    "lzma-alone": numcodecs.LZMA(format=lzma.FORMAT_ALONE),
    "lz4-default": numcodecs.LZ4(),
    "lz4-acceleration10": numcodecs.LZ4(acceleration=10),
    "crc32-as-compressor": numcodecs.CRC32(),
    "none": None,
}

COMPRESSOR_CASES = [
    Case(f"compressor-{name}", _of("<f8" if "shuffle2" in name else "<i4", seed=1), kwargs=dict(compressor=c))
    for name, c in COMPRESSORS.items()
] + [
    Case("compressor-blosc-lz4-shuffle1-uint8", _of("|u1"), kwargs=dict(compressor=_blosc("lz4", 1))),
    Case("compressor-blosc-zstd-bitshuffle-uint16", _of("<u2"), kwargs=dict(compressor=_blosc("zstd", 2))),
    Case("compressor-blosc-lz4-shuffle1-big-endian", _of(">f8"), kwargs=dict(compressor=_blosc("lz4", 1))),
]


def _slowly_varying(dtype, shape=SHAPE_2D):
    """Small steps between neighbours, so delta-with-narrower-astype round-trips."""

    def make():
        rng = np.random.default_rng(3)
        return (np.cumsum(rng.integers(-20, 20, int(np.prod(shape)))) + 1000).astype(dtype).reshape(shape)

    return make


FILTER_CASES = [
    Case(
        "filter-delta-i4-as-i2-blosc",
        _slowly_varying("<i4"),
        kwargs=dict(filters=[numcodecs.Delta(dtype="<i4", astype="<i2")]),
    ),
    Case("filter-delta-f8-zlib", _of("<f8"), kwargs=dict(filters=[numcodecs.Delta(dtype="<f8")], compressor=numcodecs.Zlib(1))),
    Case(
        "filter-delta-i8-lz4",
        _slowly_varying("<i8"),
        kwargs=dict(filters=[numcodecs.Delta(dtype="<i8")], compressor=numcodecs.LZ4()),
    ),
    Case(
        "filter-fixedscaleoffset-f8-as-i2",
        lambda: np.linspace(-3, 3, int(np.prod(SHAPE_2D))).reshape(SHAPE_2D),
        kwargs=dict(filters=[numcodecs.FixedScaleOffset(offset=0.5, scale=100, dtype="<f8", astype="<i2")]),
    ),
    Case(
        "filter-fixedscaleoffset-f4-as-u1-zstd",
        lambda: np.linspace(0, 2.5, int(np.prod(SHAPE_2D)), dtype="<f4").reshape(SHAPE_2D),
        kwargs=dict(
            filters=[numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="<f4", astype="|u1")],
            compressor=numcodecs.Zstd(3),
        ),
    ),
    Case("filter-shuffle-f8-zlib", _of("<f8"), kwargs=dict(filters=[numcodecs.Shuffle(elementsize=8)], compressor=numcodecs.Zlib(5))),
    Case("filter-shuffle-i2-none", _of("<i2"), kwargs=dict(filters=[numcodecs.Shuffle(elementsize=2)], compressor=None)),
    Case("filter-crc32c-zstd", _of("<i4"), kwargs=dict(filters=[numcodecs.CRC32C()], compressor=numcodecs.Zstd(1))),
    Case("filter-crc32c-none", _of("<u2"), kwargs=dict(filters=[numcodecs.CRC32C()], compressor=None)),
    Case("filter-crc32-gzip", _of("<f4"), kwargs=dict(filters=[numcodecs.CRC32()], compressor=numcodecs.GZip(5))),
    Case(
        "filter-chain-delta-shuffle-blosc",
        _slowly_varying("<i4"),
        kwargs=dict(filters=[numcodecs.Delta(dtype="<i4"), numcodecs.Shuffle(elementsize=4)], compressor=_blosc("zstd", 0)),
    ),
    Case(
        "filter-delta-big-endian",
        _slowly_varying(">i4"),
        kwargs=dict(filters=[numcodecs.Delta(dtype=">i4")], compressor=None),
    ),
    Case(
        "filter-vlen-utf8-then-crc32c",
        samples.text,
        kwargs=dict(dtype=object, filters=[numcodecs.VLenUTF8(), numcodecs.CRC32C()]),
    ),
]

LAYOUT_CASES = [
    Case("order-F-2d", _of("<i4"), kwargs=dict(order="F")),
    Case("order-F-3d", _of("<f8", SHAPE_3D), chunks=CHUNKS_3D, kwargs=dict(order="F")),
    Case("order-F-3d-big-endian-zstd", _of(">u2", SHAPE_3D), chunks=CHUNKS_3D, kwargs=dict(order="F", compressor=numcodecs.Zstd(3))),
    Case("order-F-struct", _of(samples.STRUCT_NESTED_BE), kwargs=dict(order="F")),
    Case("order-F-vlen-utf8", samples.text, kwargs=dict(order="F", dtype=object, object_codec=numcodecs.VLenUTF8())),
    Case("order-F-delta", _slowly_varying("<i8"), kwargs=dict(order="F", filters=[numcodecs.Delta(dtype="<i8")])),
    Case("separator-slash-2d", _of("<u4"), kwargs=dict(dimension_separator="/")),
    Case("separator-slash-3d-F-big-endian", _of(">c8", SHAPE_3D), chunks=CHUNKS_3D, kwargs=dict(dimension_separator="/", order="F")),
    Case("separator-dot-explicit", _of("<i2"), kwargs=dict(dimension_separator=".")),
    Case("chunk-larger-than-array", _of("<f4"), chunks=(20, 40)),
    Case("chunks-of-one", _of("<i2", (4, 5)), chunks=(1, 1)),
    Case("one-dimensional", _of("<f8", (101,)), chunks=(10,)),
    Case("four-dimensional", _of("<i4", (3, 4, 5, 6)), chunks=(2, 3, 2, 4)),
    Case("zero-length-dimension", _of("<i4", (0, 5)), chunks=(1, 5)),
]

FILL_CASES = [
    Case("fill-null-full", _of("<i4"), kwargs=dict(fill_value=None)),
    Case("fill-null-float-full", _of("<f8"), kwargs=dict(fill_value=None, order="F")),
    Case("fill-nan-sparse", _of("<f4"), kwargs=dict(fill_value=np.nan), sparse=True),
    Case("fill-nan-f2-sparse", _of("<f2"), kwargs=dict(fill_value=np.nan), sparse=True),
    Case("fill-infinity-sparse", _of("<f8"), kwargs=dict(fill_value=np.inf), sparse=True),
    Case("fill-negative-float-sparse", _of(">f8"), kwargs=dict(fill_value=-1.5), sparse=True),
    Case("fill-int-42-sparse", _of("<i2"), kwargs=dict(fill_value=42), sparse=True),
    Case("fill-uint64-max-sparse", _of("<u8"), kwargs=dict(fill_value=np.iinfo("u8").max), sparse=True),
    Case("fill-int64-min-sparse", _of(">i8"), kwargs=dict(fill_value=np.iinfo("i8").min), sparse=True),
    Case("fill-bool-true-sparse", _of("|b1"), kwargs=dict(fill_value=True), sparse=True),
    Case("fill-complex-sparse", _of("<c16"), kwargs=dict(fill_value=complex(1.0, -2.5)), sparse=True),
    Case("fill-bytes-sparse", _of("|S4"), kwargs=dict(fill_value=b"ab"), sparse=True),
    Case("fill-unicode-sparse", _of("<U4"), kwargs=dict(fill_value="zé"), sparse=True),
    Case("fill-datetime-nat-sparse", _of("<M8[ms]"), kwargs=dict(fill_value="NaT"), sparse=True),
    Case("fill-datetime-value-sparse", _of("<M8[s]"), kwargs=dict(fill_value=np.datetime64(86400, "s")), sparse=True),
    Case("fill-timedelta-sparse", _of(">m8[10ms]"), kwargs=dict(fill_value=np.timedelta64(7, "10ms")), sparse=True),
    Case(
        "fill-struct-sparse",
        _of(samples.STRUCT_MIXED_SUBARRAY),
        kwargs=dict(fill_value=samples.sample(samples.STRUCT_MIXED_SUBARRAY, (1,), seed=9)[0]),
        sparse=True,
    ),
    Case("fill-raw-void-sparse", _of("|V3"), kwargs=dict(fill_value=np.void(b"\x01\x02\x03")), sparse=True),
    Case(
        "fill-vlen-utf8-empty-string-sparse",
        samples.text,
        kwargs=dict(dtype=object, object_codec=numcodecs.VLenUTF8(), fill_value=""),
        sparse=True,
    ),
    # zarr-python 2's default object fill_value is 0, which means "" for text (formats.md pitfall 14).
    Case(
        "fill-vlen-utf8-default-zero-sparse",
        samples.text,
        kwargs=dict(dtype=object, object_codec=numcodecs.VLenUTF8()),
        sparse=True,
        fix_readback=lambda back: np.where(back == 0, "", back),
    ),
    Case(
        "fill-nonzero-write-empty-chunks-false",
        lambda: np.where(np.arange(np.prod(SHAPE_2D)).reshape(SHAPE_2D) < 60, 7, 3).astype("<i4"),
        kwargs=dict(fill_value=7, write_empty_chunks=False),
    ),
]

ZERO_D_CASES = [
    Case("0d-float64", lambda: np.array(3.25), chunks=()),
    Case("0d-int16-big-endian", lambda: np.array(-7, dtype=">i2"), chunks=()),
    Case("0d-bool", lambda: np.array(True), chunks=()),
    Case("0d-complex64", lambda: np.array(1 - 2j, dtype="<c8"), chunks=()),
    Case("0d-unicode", lambda: np.array("héllo", dtype="<U5"), chunks=()),
    Case("0d-datetime", lambda: np.array(np.datetime64("2024-02-29T12:00", "m")), chunks=()),
    Case("0d-struct", lambda: samples.sample(samples.STRUCT_NESTED_BE, (1,))[0:1].reshape(()), chunks=()),
    Case("0d-vlen-utf8", lambda: np.array("日本語", dtype=object), chunks=(), kwargs=dict(dtype=object, object_codec=numcodecs.VLenUTF8())),
]

ALL_CASES = DTYPE_CASES + COMPRESSOR_CASES + FILTER_CASES + LAYOUT_CASES + FILL_CASES + ZERO_D_CASES
CASES_BY_ID = {c.id: c for c in ALL_CASES}
assert len(CASES_BY_ID) == len(ALL_CASES), "duplicate case ids"


def _write_unwritten_0d(path: Path) -> np.ndarray:
    z = zarr.open_array(str(path), mode="w", shape=(), chunks=(), dtype="<u2", fill_value=7)
    assert "0" not in z.store
    return zarr.open_array(str(path), mode="r")[...]


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_get_reads_zarr_python2_array(case, tmp_path, nc):
    path = tmp_path / "array.zarr"
    expected = cli_form(write_zp2(path, case))
    assert_same_array(nc.get(path), expected)


def test_get_reads_unwritten_0d_array_as_fill(tmp_path, nc):
    path = tmp_path / "array.zarr"
    expected = cli_form(_write_unwritten_0d(path))
    assert_same_array(nc.get(path), expected)


def test_dimension_separator_slash_really_nests(tmp_path):
    """Guard for the catalogue: the '/' cases do produce nested chunk directories."""
    path = tmp_path / "array.zarr"
    write_zp2(path, CASES_BY_ID["separator-slash-2d"])
    assert (path / "0").is_dir() and (path / "0" / "0").is_file()


REGIONS_2D = ["0:5,0:6", "3:11,4:15", "12,16", "-1,0:17:3", "1:13:4,-5:-1", "7,2:9", "0:13,5"]
REGIONS_3D = ["1:5,2,0:5", "0:6:2,1:7:3,4", "5,6,4", "-2:6,-7:-1:2,1:3"]
REGION_CASES = [
    (case_id, region)
    for case_id in [
        "dtype-le-u2", "order-F-2d", "dtype-object-vlen-utf8", "dtype-struct-nested-be-subarray",
        "fill-nan-sparse", "separator-slash-2d", "compressor-zstd-3-checksum", "dtype-le-M8-10ms",
    ]
    for region in REGIONS_2D
] + [(case_id, region) for case_id in ["order-F-3d", "separator-slash-3d-F-big-endian"] for region in REGIONS_3D]


@pytest.mark.parametrize(
    "case_id,region", REGION_CASES, ids=[f"{c}-region[{r}]" for c, r in REGION_CASES]
)
def test_get_region_of_zarr_python2_array(case_id, region, tmp_path, nc):
    path = tmp_path / "array.zarr"
    full = write_zp2(path, CASES_BY_ID[case_id])
    assert_same_array(nc.get(path, region), cli_form(select(full, region)), f"region {region}")


@pytest.mark.parametrize("region", ["-3:,::4", ":,5", "2:,:-3"], ids=["omitted-bounds-with-step", "colon-only", "omitted-stop-start"])
def test_get_region_numpy_slice_forms(region, tmp_path, nc):
    """Slices written as in NumPy with omitted start and/or stop (bare ':' = whole axis)."""
    path = tmp_path / "array.zarr"
    full = write_zp2(path, CASES_BY_ID["dtype-le-i4"])
    assert_same_array(nc.get(path, region), cli_form(select(full, region)), f"region {region}")
