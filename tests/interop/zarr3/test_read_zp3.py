"""Arrays written by zarr-python 3 are read by `neurochunk get`.

Zarr v3: every core and zarr-python data type, sharding (index at end and start, checksummed
or not, partial and sparse shards), crc32c, transpose, big-endian bytes, gzip/zstd/blosc, the
`numcodecs.*` codecs, both chunk key encodings with both separators, fill values, 0-d arrays.
Zarr v2 as written by zarr-python 3 (its defaults differ from zarr-python 2's) is covered too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numcodecs
import numpy as np
import pytest
import zarr
import zarr.codecs.numcodecs as znc
from zarr.dtype import VariableLengthBytes
from zarr.codecs import (
    BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec, ZstdCodec,
)

import samples
from ncli import assert_same_array, cli_form, load_json, select
from samples import CHUNKS_2D, CHUNKS_3D, SHAPE_2D, SHAPE_3D


@dataclass
class Case:
    id: str
    make: Callable[[], np.ndarray]
    chunks: tuple = CHUNKS_2D
    kwargs: dict = field(default_factory=dict)
    sparse: bool = False  # write only the first chunk (or the first inner chunk of a shard)
    zarr_format: int = 3


def write_zp3(path: Path, case: Case) -> np.ndarray:
    data = case.make()
    kwargs = dict(case.kwargs)
    dtype = kwargs.pop("dtype", data.dtype)
    z = zarr.create_array(
        str(path), shape=data.shape, chunks=case.chunks, dtype=dtype, zarr_format=case.zarr_format, **kwargs
    )
    if case.sparse:
        inner = kwargs.get("serializer").chunk_shape if isinstance(kwargs.get("serializer"), ShardingCodec) else case.chunks
        first = tuple(slice(0, c) for c in inner)
        z[first] = data[first]
    else:
        z[...] = data
    return zarr.open_array(str(path), mode="r")[...]


def _of(dtype, shape=SHAPE_2D, seed=0):
    return lambda: samples.sample(dtype, shape, seed)


def _shard(inner=(5, 6), codecs=None, index_codecs=None, index_location="end"):
    return ShardingCodec(
        chunk_shape=inner,
        codecs=codecs or [BytesCodec(endian="little")],
        index_codecs=index_codecs or [BytesCodec(endian="little"), Crc32cCodec()],
        index_location=index_location,
    )


def _name(d: str) -> str:
    return d.replace("<", "").replace(">", "be-").replace("|", "").replace("[", "-").rstrip("]")


NUMERIC = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16"]
DATETIMES = ["<M8[ns]", "<M8[us]", "<M8[s]", "<M8[D]", "<M8[10ms]", "<M8[15m]", "<m8[ns]", "<m8[s]", "<m8[100us]"]

DTYPE_CASES = (
    [Case(f"dtype-{_name(d)}", _of(d)) for d in NUMERIC + DATETIMES]
    + [
        Case("dtype-string-vlen-utf8", samples.text, kwargs=dict(dtype=str)),
        Case("dtype-variable-length-bytes", samples.blobs, kwargs=dict(dtype=VariableLengthBytes())),
        Case("dtype-fixed-length-utf32", _of("<U5")),
        Case("dtype-null-terminated-bytes", _of("|S6")),
        Case("dtype-raw-bytes", _of("|V5")),
        Case("dtype-struct-flat", _of(samples.STRUCT_FLAT)),
        Case("dtype-struct-nested", _of(samples.STRUCT_NESTED_LE)),
        Case("dtype-struct-with-bool-bytes-datetime", _of(np.dtype([("t", "<M8[ms]"), ("tag", "S3"), ("ok", "?"), ("v", "<f4")]))),
        Case("dtype-string-uncompressed", samples.text, kwargs=dict(dtype=str, compressors=None)),
    ]
)


def _blosc(cname, shuffle, clevel=5):
    return BloscCodec(cname=cname, clevel=clevel, shuffle=shuffle)


CODECS = {
    "none": dict(compressors=None),
    "gzip-1": dict(compressors=[GzipCodec(level=1)]),
    "gzip-9": dict(compressors=[GzipCodec(level=9)]),
    "zstd-3": dict(compressors=[ZstdCodec(level=3)]),
    "zstd-3-checksum": dict(compressors=[ZstdCodec(level=3, checksum=True)]),
    "zstd-negative-level": dict(compressors=[ZstdCodec(level=-3)]),
    **{
        f"blosc-{cname}-{shuffle}": dict(compressors=[_blosc(cname, shuffle)])
        for cname, shuffle in [
            ("lz4", "shuffle"), ("lz4", "noshuffle"), ("lz4hc", "bitshuffle"), ("blosclz", "shuffle"),
            ("zstd", "bitshuffle"), ("zstd", "noshuffle"), ("zlib", "shuffle"),
        ]
    },
    "crc32c-only": dict(compressors=[Crc32cCodec()]),
    "zstd-then-crc32c": dict(compressors=[ZstdCodec(level=1), Crc32cCodec()]),
    "gzip-then-crc32c": dict(compressors=[GzipCodec(level=5), Crc32cCodec()]),
    "transpose": dict(filters=[TransposeCodec(order=(1, 0))]),
    "transpose-zstd-crc32c": dict(filters=[TransposeCodec(order=(1, 0))], compressors=[ZstdCodec(level=1), Crc32cCodec()]),
    "bytes-big-endian": dict(serializer=BytesCodec(endian="big"), compressors=None),
    "bytes-big-endian-transpose-gzip": dict(serializer=BytesCodec(endian="big"), filters=[TransposeCodec(order=(1, 0))], compressors=[GzipCodec(level=1)]),
    "numcodecs-zlib": dict(compressors=[znc.Zlib(level=1)]),
    "numcodecs-gzip": dict(compressors=[znc.GZip(level=5)]),
    "numcodecs-bz2": dict(compressors=[znc.BZ2(level=9)]),
    "numcodecs-lzma": dict(compressors=[znc.LZMA()]),
    "numcodecs-lz4": dict(compressors=[znc.LZ4(acceleration=1)]),
    "numcodecs-zstd": dict(compressors=[znc.Zstd(level=3)]),
    "numcodecs-blosc": dict(compressors=[znc.Blosc(cname="lz4", clevel=5, shuffle=1)]),
    "numcodecs-crc32": dict(compressors=[znc.CRC32()]),
    "numcodecs-crc32c": dict(compressors=[znc.CRC32C()]),
    "numcodecs-shuffle-then-zlib": dict(compressors=[znc.Shuffle(elementsize=8), znc.Zlib(level=1)]),
    "numcodecs-delta": dict(filters=[znc.Delta(dtype="<f8")]),
}

CODEC_CASES = [Case(f"codec-{name}", _of("<f8", seed=1), kwargs=kw) for name, kw in CODECS.items()] + [
    Case(
        "codec-numcodecs-fixedscaleoffset",
        lambda: np.linspace(-3, 3, int(np.prod(SHAPE_2D))).reshape(SHAPE_2D),
        kwargs=dict(filters=[znc.FixedScaleOffset(offset=0.5, scale=100, dtype="<f8", astype="<i2")]),
    ),
    Case("codec-transpose-3d", _of("<i4", SHAPE_3D), chunks=CHUNKS_3D, kwargs=dict(filters=[TransposeCodec(order=(2, 0, 1))])),
    Case("codec-blosc-uint8-bitshuffle", _of("|u1"), kwargs=dict(compressors=[_blosc("lz4", "bitshuffle")])),
    Case("codec-bytes-big-endian-complex", _of("<c16"), kwargs=dict(serializer=BytesCodec(endian="big"))),
    Case("codec-bytes-big-endian-struct", _of(samples.STRUCT_FLAT), kwargs=dict(serializer=BytesCodec(endian="big"))),
    Case("codec-bytes-big-endian-utf32", _of("<U4"), kwargs=dict(serializer=BytesCodec(endian="big"))),
    Case("codec-bytes-big-endian-datetime", _of("<M8[us]"), kwargs=dict(serializer=BytesCodec(endian="big"))),
]

SHARD_CASES = [
    Case("shard-index-end", _of("<u2"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard())),
    Case("shard-index-start", _of("<u2"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(index_location="start"))),
    Case("shard-index-start-sparse", _of("<i4"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(index_location="start")), sparse=True),
    Case("shard-index-end-sparse", _of("<i4"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard()), sparse=True),
    Case("shard-index-without-crc32c", _of("<f4"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(index_codecs=[BytesCodec(endian="little")]))),
    Case("shard-index-big-endian", _of("<f4"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(index_codecs=[BytesCodec(endian="big"), Crc32cCodec()]))),
    Case("shard-inner-zstd-crc32c", _of("<i8"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(codecs=[BytesCodec(), ZstdCodec(level=3), Crc32cCodec()]))),
    Case("shard-inner-transpose-gzip", _of("<f8"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(codecs=[TransposeCodec(order=(1, 0)), BytesCodec(), GzipCodec(level=1)]))),
    Case("shard-inner-blosc-outer-crc32c", _of("<u4"), chunks=(10, 12), kwargs=dict(serializer=_shard(codecs=[BytesCodec(), _blosc("zstd", "shuffle")]), compressors=[Crc32cCodec()])),
    Case("shard-inner-big-endian", _of("<c8"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(codecs=[BytesCodec(endian="big")]))),
    Case("shard-strings", samples.text, chunks=(10, 12), kwargs=dict(dtype=str, compressors=None, serializer=_shard(codecs=[zarr.codecs.VLenUTF8Codec(), ZstdCodec(level=1)]))),
    # zarr-python's default compressor (zstd) then applies to the whole shard.
    Case("shard-outer-zstd-default-compressor", _of("<u2"), chunks=(10, 12), kwargs=dict(serializer=_shard())),
    Case("shard-via-shards-argument", _of("<i2", (40, 50)), chunks=(4, 5), kwargs=dict(shards=(20, 25))),
    Case("shard-3d-partial", _of("<f4", SHAPE_3D), chunks=(4, 6, 4), kwargs=dict(compressors=None, serializer=_shard(inner=(2, 3, 2)))),
    Case("shard-1d-single-inner-chunk", _of("|u1", (30,)), chunks=(16,), kwargs=dict(compressors=None, serializer=_shard(inner=(16,)))),
]

KEY_ENCODING_CASES = [
    Case("keys-default-slash", _of("<i4"), kwargs=dict(chunk_key_encoding={"name": "default", "separator": "/"})),
    Case("keys-default-dot", _of("<i4"), kwargs=dict(chunk_key_encoding={"name": "default", "separator": "."})),
    Case("keys-v2-dot", _of("<i4"), kwargs=dict(chunk_key_encoding={"name": "v2", "separator": "."})),
    Case("keys-v2-slash", _of("<i4"), kwargs=dict(chunk_key_encoding={"name": "v2", "separator": "/"})),
    Case("keys-v2-dot-sharded", _of("<i4"), chunks=(10, 12), kwargs=dict(compressors=None, serializer=_shard(), chunk_key_encoding={"name": "v2", "separator": "."})),
]

FILL_CASES = [
    Case("fill-nan-sparse", _of("<f4"), kwargs=dict(fill_value=np.nan), sparse=True),
    Case("fill-negative-zero-sparse", _of("<f8"), kwargs=dict(fill_value=-0.0), sparse=True),
    Case("fill-infinity-sparse", _of("<f2"), kwargs=dict(fill_value=-np.inf), sparse=True),
    Case("fill-42-sparse", _of("<i2"), kwargs=dict(fill_value=42), sparse=True),
    Case("fill-uint64-max-sparse", _of("<u8"), kwargs=dict(fill_value=np.iinfo("u8").max), sparse=True),
    Case("fill-bool-true-sparse", _of("|b1"), kwargs=dict(fill_value=True), sparse=True),
    Case("fill-complex-sparse", _of("<c8"), kwargs=dict(fill_value=complex(1.0, -2.5)), sparse=True),
    Case("fill-string-sparse", samples.text, kwargs=dict(dtype=str, fill_value="zé"), sparse=True),
    Case("fill-bytes-sparse", samples.blobs, kwargs=dict(dtype=VariableLengthBytes(), fill_value=b"ab"), sparse=True),
    Case("fill-utf32-sparse", _of("<U4"), kwargs=dict(fill_value="ab"), sparse=True),
    Case("fill-datetime-nat-sparse", _of("<M8[10ms]"), sparse=True),
    Case("fill-datetime-value-sparse", _of("<M8[s]"), kwargs=dict(fill_value=np.datetime64(86400, "s")), sparse=True),
    Case("fill-struct-sparse", _of(samples.STRUCT_FLAT), kwargs=dict(fill_value=samples.sample(samples.STRUCT_FLAT, (1,), 9)[0]), sparse=True),
    Case("fill-sharded-sparse-nan", _of("<f8"), chunks=(10, 12), kwargs=dict(fill_value=np.nan, compressors=None, serializer=_shard()), sparse=True),
]

ZERO_D_CASES = [
    Case("0d-int8-default-keys", lambda: np.array(-1, dtype="|i1"), chunks=()),
    Case("0d-float64-v2-keys", lambda: np.array(3.25), chunks=(), kwargs=dict(chunk_key_encoding={"name": "v2", "separator": "."}, fill_value=-0.0)),
    Case("0d-string", lambda: np.array("日本語", dtype=object), chunks=(), kwargs=dict(dtype=str)),
    Case("0d-struct", lambda: samples.sample(samples.STRUCT_FLAT, (1,)).reshape(()), chunks=()),
    Case("0d-datetime", lambda: np.array(np.datetime64("2024-02-29T12:00", "m")), chunks=()),
]

V2_BY_ZP3_CASES = [
    Case("zarr2-default-zstd", _of("<u2"), zarr_format=2),
    Case("zarr2-string", samples.text, kwargs=dict(dtype=str), zarr_format=2),
    Case("zarr2-bytes", samples.blobs, kwargs=dict(dtype=VariableLengthBytes()), zarr_format=2),
    Case("zarr2-order-F", _of("<f8"), kwargs=dict(order="F"), zarr_format=2),
    Case("zarr2-slash-separator", _of("<i4"), kwargs=dict(chunk_key_encoding={"name": "v2", "separator": "/"}), zarr_format=2),
    Case("zarr2-fill-nan-sparse", _of("<f4"), kwargs=dict(fill_value=np.nan), sparse=True, zarr_format=2),
    Case("zarr2-struct", _of(samples.STRUCT_NESTED_LE), zarr_format=2),
    Case("zarr2-datetime", _of("<M8[ns]"), zarr_format=2),
    Case("zarr2-numcodecs-filters", _of("<f8"), kwargs=dict(filters=[numcodecs.Delta(dtype="<f8")], compressors=[numcodecs.Zlib(level=1)]), zarr_format=2),
]

ALL_CASES = DTYPE_CASES + CODEC_CASES + SHARD_CASES + KEY_ENCODING_CASES + FILL_CASES + ZERO_D_CASES + V2_BY_ZP3_CASES
CASES_BY_ID = {c.id: c for c in ALL_CASES}
assert len(CASES_BY_ID) == len(ALL_CASES), "duplicate case ids"


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.id)
def test_get_reads_zarr_python3_array(case, tmp_path, nc):
    path = tmp_path / "array.zarr"
    expected = cli_form(write_zp3(path, case))
    assert_same_array(nc.get(path), expected)


def test_catalogue_sparse_cases_leave_chunks_unwritten(tmp_path):
    """Guard for the catalogue: a sparse sharded case leaves whole shards and inner chunks empty."""
    path = tmp_path / "array.zarr"
    write_zp3(path, CASES_BY_ID["shard-index-end-sparse"])
    assert sorted(p.relative_to(path).as_posix() for p in (path / "c").rglob("*") if p.is_file()) == ["c/0/0"]


def test_get_reads_hex_nan_fill_value_bit_exact(tmp_path, nc):
    """A float32 fill value written as "0x7fc00001" keeps its NaN payload (formats.md V3-17)."""
    path = tmp_path / "array.zarr"
    zarr.create_array(str(path), shape=(4,), chunks=(2,), dtype="<f4", fill_value=np.nan, serializer=BytesCodec(endian="big"))
    meta = load_json(path / "zarr.json")
    meta["fill_value"] = "0x7fc00001"
    (path / "zarr.json").write_text(json.dumps(meta))
    got = nc.get(path)
    assert got.dtype == np.dtype("<f4")
    assert got.view("<u4").tolist() == [0x7FC00001] * 4


def test_get_reads_unwritten_0d_array_as_fill(tmp_path, nc):
    path = tmp_path / "array.zarr"
    zarr.create_array(str(path), shape=(), chunks=(), dtype="<u2", fill_value=7)
    assert not (path / "c").exists()
    assert_same_array(nc.get(path), np.array(7, dtype="<u2"))


REGIONS_2D = ["0:5,0:6", "3:11,4:15", "12,16", "-1,0:17:3", "1:13:4,-5:-1", "0:13,5", "-3:,::4"]
REGIONS_3D = ["1:5,2,0:5", "0:6:2,1:7:3,4", "5,6,4"]
REGION_CASES = [
    (case_id, region)
    for case_id in [
        "shard-index-end", "shard-index-start-sparse", "codec-transpose", "keys-default-dot", "dtype-string-vlen-utf8",
        "dtype-struct-nested", "codec-bytes-big-endian-transpose-gzip",
    ]
    for region in REGIONS_2D
] + [(case_id, region) for case_id in ["codec-transpose-3d", "shard-3d-partial"] for region in REGIONS_3D]


@pytest.mark.parametrize("case_id,region", REGION_CASES, ids=[f"{c}-region[{r}]" for c, r in REGION_CASES])
def test_get_region_of_zarr_python3_array(case_id, region, tmp_path, nc):
    path = tmp_path / "array.zarr"
    full = write_zp3(path, CASES_BY_ID[case_id])
    assert_same_array(nc.get(path, region), cli_form(select(full, region)), f"region {region}")
