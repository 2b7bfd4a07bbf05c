"""Arrays written by tensorstore (zarr v2 and zarr3 drivers, with tensorstore's own defaults)
are read by `neurochunk get`.

tensorstore's defaults differ from zarr-python's: v2 arrays get blosc lz4 with shuffle -1
(auto) and a null fill value; v3 arrays get compact metadata, a bare `{"name": "default"}`
chunk key encoding and no compression. Structured v2 arrays are written one field at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import samples
import tsio
from ncli import assert_same_array, cli_form, load_json, select
from samples import CHUNKS_2D, SHAPE_2D


@dataclass
class Case:
    id: str
    fmt: str  # "zarr2" | "zarr3"
    dtype: str  # tensorstore dtype name
    make: Callable[[], np.ndarray]
    metadata: dict = field(default_factory=dict)
    chunks: tuple = CHUNKS_2D
    sparse: bool = False

    @property
    def full_id(self) -> str:
        return f"{self.fmt}-{self.id}"


def write_ts(path: Path, case: Case) -> np.ndarray:
    data = case.make()
    metadata = {"shape": list(data.shape), **case.metadata}
    if case.fmt == "zarr2":
        metadata.setdefault("chunks", list(case.chunks))
    else:
        metadata.setdefault("chunk_grid", {"name": "regular", "configuration": {"chunk_shape": list(case.chunks)}})
    store = tsio.create(path, case.fmt, metadata, dtype=case.dtype)
    if case.sparse:
        first = tuple(slice(0, c) for c in case.chunks)
        store[first].write(data[first]).result()
    else:
        store.write(data).result()
    return tsio.read(path, case.fmt)


def _of(dtype, shape=SHAPE_2D, seed=0):
    return lambda: samples.sample(dtype, shape, seed)


TS_DTYPES = {
    "bool": "|b1", "int8": "|i1", "uint8": "|u1", "int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4",
    "int64": "<i8", "uint64": "<u8", "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8",
    "complex128": "<c16",
}


def _v2_blosc(cname, shuffle, clevel=5):
    return {"compressor": {"id": "blosc", "cname": cname, "clevel": clevel, "shuffle": shuffle, "blocksize": 0}}


V2_CASES = (
    [Case(f"default-{name}", "zarr2", name, _of(np_dtype)) for name, np_dtype in TS_DTYPES.items()]
    + [
        Case(f"big-endian-{name}", "zarr2", None, _of(d), metadata={"dtype": d})
        for name, d in [("int32", ">i4"), ("uint64", ">u8"), ("float64", ">f8"), ("complex128", ">c16"), ("float16", ">f2")]
    ]
    + [
        Case(f"compressor-{name}", "zarr2", "float64", _of("<f8", seed=1), metadata=meta)
        for name, meta in {
            "none": {"compressor": None},
            "zlib-1": {"compressor": {"id": "zlib", "level": 1}},
            "gzip-9": {"compressor": {"id": "gzip", "level": 9}},
            "bz2-9": {"compressor": {"id": "bz2", "level": 9}},
            "zstd-3": {"compressor": {"id": "zstd", "level": 3}},
            "blosc-lz4-noshuffle": _v2_blosc("lz4", 0),
            "blosc-lz4-shuffle": _v2_blosc("lz4", 1),
            "blosc-lz4-bitshuffle": _v2_blosc("lz4", 2),
            "blosc-lz4hc-shuffle": _v2_blosc("lz4hc", 1),
            "blosc-blosclz-shuffle": _v2_blosc("blosclz", 1),
            "blosc-zstd-bitshuffle": _v2_blosc("zstd", 2),
            "blosc-zlib-noshuffle": _v2_blosc("zlib", 0),
            "blosc-snappy-shuffle": _v2_blosc("snappy", 1),
            "blosc-snappy-noshuffle": _v2_blosc("snappy", 0, clevel=9),
        }.items()
    ]
    + [
        Case("order-F", "zarr2", "int32", _of("<i4"), metadata={"order": "F"}),
        Case("order-F-slash-separator-zstd", "zarr2", None, _of(">u2"), metadata={"order": "F", "dimension_separator": "/", "dtype": ">u2", "compressor": {"id": "zstd", "level": 1}}),
        Case("slash-separator", "zarr2", "uint32", _of("<u4"), metadata={"dimension_separator": "/"}),
        Case("fill-nan-sparse", "zarr2", None, _of("<f4"), metadata={"dtype": "<f4", "fill_value": "NaN"}, sparse=True),
        Case("fill-7-sparse", "zarr2", None, _of("<i2"), metadata={"dtype": "<i2", "fill_value": 7}, sparse=True),
        Case("fill-true-sparse", "zarr2", None, _of("|b1"), metadata={"dtype": "|b1", "fill_value": True}, sparse=True),
        Case("0d", "zarr2", "float64", lambda: np.array(2.5), chunks=()),
    ]
)

V3_CASES = (
    [Case(f"default-{name}", "zarr3", name, _of(np_dtype)) for name, np_dtype in TS_DTYPES.items()]
    + [
        Case(f"codec-{name}", "zarr3", "float64", _of("<f8", seed=1), metadata={"codecs": codecs})
        for name, codecs in {
            "gzip-1": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}],
            "zstd-3-checksum": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 3, "checksum": True}}],
            "blosc-lz4-shuffle": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 8}}],
            "blosc-zstd-bitshuffle": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 8}}],
            "blosc-snappy-noshuffle": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "snappy", "clevel": 5, "shuffle": "noshuffle"}}],
            "crc32c": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "transpose": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "little"}}],
            "bytes-big-endian": [{"name": "bytes", "configuration": {"endian": "big"}}],
            "transpose-big-endian-gzip-crc32c": [
                {"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}},
                {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"},
            ],
        }.items()
    ]
    + [
        Case(f"shard-{name}", "zarr3", "uint16", _of("<u2", seed=2), chunks=(10, 12), metadata={"codecs": [{"name": "sharding_indexed", "configuration": conf}]}, sparse=sparse)
        for name, conf, sparse in [
            ("index-end", {"chunk_shape": [5, 6]}, False),
            ("index-start", {"chunk_shape": [5, 6], "index_location": "start"}, False),
            ("index-start-sparse", {"chunk_shape": [5, 6], "index_location": "start"}, True),
            ("index-without-crc32c", {"chunk_shape": [5, 6], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}, False),
            ("inner-zstd-crc32c", {"chunk_shape": [5, 6], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]}, False),
            ("inner-transpose-big-endian", {"chunk_shape": [5, 3], "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "big"}}]}, False),
        ]
    ]
    + [
        Case("keys-v2-bare", "zarr3", "int32", _of("<i4"), metadata={"chunk_key_encoding": {"name": "v2"}}),
        Case("keys-v2-slash", "zarr3", "int32", _of("<i4"), metadata={"chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}}}),
        Case("keys-default-dot", "zarr3", "int32", _of("<i4"), metadata={"chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}}}),
        Case("fill-nan-sparse", "zarr3", "float32", _of("<f4"), metadata={"data_type": "float32", "fill_value": "NaN"}, sparse=True),
        Case("fill-minus-one-sparse", "zarr3", "int64", _of("<i8"), metadata={"data_type": "int64", "fill_value": -1}, sparse=True),
        Case("0d", "zarr3", "int16", lambda: np.array(-3, dtype="<i2"), chunks=()),
    ]
)

ALL_CASES = V2_CASES + V3_CASES
CASES_BY_ID = {c.full_id: c for c in ALL_CASES}
assert len(CASES_BY_ID) == len(ALL_CASES), "duplicate case ids"


@pytest.mark.parametrize("case", ALL_CASES, ids=lambda c: c.full_id)
def test_get_reads_tensorstore_array(case, tmp_path, nc):
    path = tmp_path / "array.zarr"
    expected = cli_form(write_ts(path, case))
    assert_same_array(nc.get(path), expected)


def test_tensorstore_v2_default_is_autoshuffle_blosc(tmp_path):
    """Guard for the catalogue: the 'default' v2 cases really carry shuffle -1 and fill null."""
    path = tmp_path / "array.zarr"
    write_ts(path, CASES_BY_ID["zarr2-default-uint16"])
    meta = load_json(path / ".zarray")
    assert meta["compressor"]["shuffle"] == -1 and meta["fill_value"] is None


STRUCT = np.dtype([("a", "<i2"), ("b", ">f4", (2,)), ("c", "u1")])


def test_get_reads_tensorstore_structured_v2_array(tmp_path, nc):
    """tensorstore writes a structured zarr v2 array field by field."""
    path = tmp_path / "array.zarr"
    data = samples.sample(STRUCT, (9, 7))
    metadata = {"shape": [9, 7], "chunks": [4, 4], "dtype": [["a", "<i2"], ["b", ">f4", [2]], ["c", "|u1"]], "fill_value": None}
    for name in STRUCT.names:
        tsio.create(path, "zarr2", metadata, field=name).write(data[name]).result()
    expected = np.zeros(data.shape, STRUCT)
    for name in STRUCT.names:
        expected[name] = tsio.read(path, "zarr2", field=name)
    assert_same_array(nc.get(path), cli_form(expected))


REGIONS = ["0:5,0:6", "3:11,4:15", "12,16", "-1,0:17:3", "1:13:4,-5:-1"]
REGION_CASES = [
    (case_id, region)
    for case_id in ["zarr2-order-F", "zarr3-shard-index-start-sparse", "zarr3-codec-transpose-big-endian-gzip-crc32c", "zarr3-keys-v2-bare"]
    for region in REGIONS
]


@pytest.mark.parametrize("case_id,region", REGION_CASES, ids=[f"{c}-region[{r}]" for c, r in REGION_CASES])
def test_get_region_of_tensorstore_array(case_id, region, tmp_path, nc):
    path = tmp_path / "array.zarr"
    full = write_ts(path, CASES_BY_ID[case_id])
    assert_same_array(nc.get(path, region), cli_form(select(full, region)), f"region {region}")
