"""Catalogue of arrays written by `neurochunk put`, shared by the suites that read them back.

Each `PutCase` says what npy goes in, which `put` options are used, and which peers can read
the result at all (a peer's own limits, e.g. tensorstore has no variable-length strings and
zarr-python 3 no structured sub-array fields): "zp2" = zarr-python 2.18, "zp3" =
zarr-python 3, "ts" = tensorstore. The reading suites filter on that set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import samples
from samples import SHAPE_2D, SHAPE_3D

ZP2, ZP3, TS = "zp2", "zp3", "ts"
ALL_V2_READERS = frozenset({ZP2, ZP3, TS})
ALL_V3_READERS = frozenset({ZP3, TS})


@dataclass(frozen=True)
class PutCase:
    id: str
    fmt: str  # "zarr2" | "zarr3"
    make: Callable[[], np.ndarray]
    options: dict = field(default_factory=dict)
    readers: frozenset = frozenset()
    # Check of the stored metadata document (.zarray / zarr.json), given it parsed.
    meta_check: Callable[[dict], Any] | None = None

    @property
    def full_id(self) -> str:
        return f"{self.fmt}-{self.id}"


def _of(dtype, shape=SHAPE_2D, seed=0):
    return lambda: samples.sample(dtype, shape, seed)


def _readers(fmt: str, exclude: set = frozenset()) -> frozenset:
    base = ALL_V2_READERS if fmt == "zarr2" else ALL_V3_READERS
    return frozenset(base - set(exclude))


CHUNKS = dict(chunks=(5, 6))

# tensorstore's zarr v2 driver supports only these compressors, and no filters.
TS_V2_CODECS = ("none", "zstd", "gzip", "zlib", "blosc", "bz2")
# tensorstore's zarr3 driver supports only the core codecs (no numcodecs.*).
TS_V3_CODECS = ("none", "zstd", "gzip", "blosc", "crc32c")


def _codec_readers(fmt: str, spec: str) -> frozenset:
    names = {part.split(":")[0] for part in spec.split(",")}
    supported = TS_V2_CODECS if fmt == "zarr2" else TS_V3_CODECS
    exclude = set() if names <= set(supported) else {TS}
    if fmt == "zarr2" and len(names) > 1:
        exclude.add(TS)  # several codecs in v2 need filters
    return _readers(fmt, exclude)


V2_CODECS = [
    "none", "zstd:3", "zstd", "gzip:6", "zlib:1", "blosc:lz4:5:shuffle", "blosc:zstd:3:bitshuffle",
    "blosc:blosclz:9:noshuffle", "blosc:lz4hc:4:shuffle", "blosc:zlib:1:noshuffle", "bz2:9", "lzma:6",
    "lz4:1", "lz4", "crc32c",
]
V3_CODECS = [
    "none", "zstd:3", "zstd", "gzip:6", "zlib:1", "blosc:lz4:5:shuffle", "blosc:zstd:3:bitshuffle",
    "blosc:blosclz:9:noshuffle", "bz2:9", "lzma:6", "lz4:1", "crc32c", "zstd:3,crc32c", "gzip:1,crc32c",
]


def _safe(spec: str) -> str:
    return spec.replace(":", "-").replace(",", "+")


CODEC_CASES = [
    PutCase(f"codec-{_safe(spec)}", fmt, _of("<u2" if "shuffle" in spec else "<i4", seed=2), dict(CHUNKS, codec=spec), _codec_readers(fmt, spec))
    for fmt, specs in (("zarr2", V2_CODECS), ("zarr3", V3_CODECS))
    for spec in specs
]

NUMERIC = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8", "<c8", "<c16"]


def _dt_name(d: str) -> str:
    return d.replace("<", "").replace(">", "be-").replace("|", "").replace("[", "-").rstrip("]")


DTYPE_CASES = [
    PutCase(f"dtype-{_dt_name(d)}", fmt, _of(d, seed=3), dict(CHUNKS, codec="zstd:1"), _readers(fmt))
    for fmt in ("zarr2", "zarr3")
    for d in NUMERIC
] + [
    # A big-endian npy: values must survive whatever byte order is stored.
    PutCase(f"input-big-endian-{_dt_name(d)}", fmt, _of(d, seed=4), dict(CHUNKS), _readers(fmt))
    for fmt in ("zarr2", "zarr3")
    for d in (">i4", ">f8", ">c8")
]

def _v2_object_codec(codec_id: str):
    """Check: a v2 `|O` array whose first filter is the object codec (where zarr-python 2 looks)."""

    def check(m):
        filters = m.get("filters") or [{}]
        return (m["dtype"] == "|O" and filters[0].get("id") == codec_id) or f"stored {m['dtype']} {m.get('filters')}"

    return check


NO_TEXT_TS = {TS}  # tensorstore: no fixed or variable-length text (zarr3), no <U (zarr v2)

TEXT_CASES = [
    PutCase("vlen-utf8", "zarr2", samples.fixed_text, dict(CHUNKS, vlen=True),
            _readers("zarr2", NO_TEXT_TS),
            _v2_object_codec("vlen-utf8")),
    PutCase("vlen-bytes", "zarr2", samples.fixed_bytes, dict(CHUNKS, vlen=True, codec="zstd:3"),
            _readers("zarr2", NO_TEXT_TS),
            _v2_object_codec("vlen-bytes")),
    PutCase("vlen-utf8", "zarr3", samples.fixed_text, dict(CHUNKS, vlen=True),
            _readers("zarr3", NO_TEXT_TS), lambda m: m["data_type"] == "string" or f"stored {m['data_type']}"),
    PutCase("vlen-utf8-sharded", "zarr3", samples.fixed_text, dict(chunks=(5, 6), shards=(10, 12), vlen=True, codec="zstd:3"),
            _readers("zarr3", NO_TEXT_TS)),
    PutCase("vlen-bytes", "zarr3", samples.fixed_bytes, dict(CHUNKS, vlen=True),
            _readers("zarr3", NO_TEXT_TS)),
    PutCase("fixed-unicode", "zarr2", _of("<U5", seed=5), dict(CHUNKS), _readers("zarr2", NO_TEXT_TS)),
    PutCase("fixed-unicode", "zarr3", _of("<U5", seed=5), dict(CHUNKS), _readers("zarr3", NO_TEXT_TS)),
    PutCase("fixed-bytes", "zarr2", _of("|S6", seed=5), dict(CHUNKS), _readers("zarr2", NO_TEXT_TS)),
    PutCase("fixed-bytes", "zarr3", _of("|S6", seed=5), dict(CHUNKS), _readers("zarr3", NO_TEXT_TS)),
    PutCase("raw-void", "zarr2", _of("|V5", seed=5), dict(CHUNKS, codec="gzip:1"), _readers("zarr2", NO_TEXT_TS)),
]

# zarr-python 3 converts only structured dtypes without sub-array fields; tensorstore's zarr3
# driver has no structured types, and its zarr v2 driver opens one field at a time.
STRUCT_CASES = [
    PutCase("struct-flat", "zarr2", _of(samples.STRUCT_FLAT), dict(CHUNKS), _readers("zarr2", {TS})),
    PutCase("struct-nested", "zarr2", _of(samples.STRUCT_NESTED_LE), dict(CHUNKS, codec="blosc:lz4:5:shuffle"), _readers("zarr2", {TS})),
    PutCase("struct-big-endian-subarray", "zarr2", _of(samples.STRUCT_NESTED_BE), dict(CHUNKS, codec="zlib:1"), _readers("zarr2", {TS, ZP3})),
    PutCase("struct-mixed-subarray", "zarr2", _of(samples.STRUCT_MIXED_SUBARRAY), dict(CHUNKS), _readers("zarr2", {TS, ZP3})),
    PutCase("struct-flat", "zarr3", _of(samples.STRUCT_FLAT), dict(CHUNKS), _readers("zarr3", {TS})),
    PutCase("struct-nested-sharded", "zarr3", _of(samples.STRUCT_NESTED_LE), dict(chunks=(5, 6), shards=(10, 12)), _readers("zarr3", {TS})),
]

# tensorstore supports no datetime types.
DATETIME_CASES = [
    PutCase(f"datetime-{_dt_name(d)}", fmt, _of(d, seed=6), dict(CHUNKS, codec="zstd:1"), _readers(fmt, {TS}))
    for fmt in ("zarr2", "zarr3")
    for d in ("<M8[ns]", "<M8[10ms]", "<M8[D]", "<m8[s]", "<m8[100us]")
]


def _stored_order(expected: str):
    return lambda m: m["order"] == expected or f"stored order {m['order']}"


def _stored_v2_dtype_prefix(prefix: str):
    return lambda m: str(m["dtype"]).startswith(prefix) or f"stored dtype {m['dtype']}"


def _v3_codec_names(m: dict) -> list[str]:
    names = []
    for codec in m["codecs"]:
        names.append(codec["name"])
        if codec["name"] == "sharding_indexed":
            names += [c["name"] for c in codec["configuration"]["codecs"]]
    return names


def _v3_bytes_endian(expected: str):
    def check(m):
        for codec in m["codecs"]:
            inner = codec["configuration"]["codecs"] if codec["name"] == "sharding_indexed" else [codec]
            for c in inner:
                if c["name"] == "bytes":
                    return c.get("configuration", {}).get("endian") == expected or f"bytes codec {c}"
        return "no bytes codec"

    return check


def _v3_has(name: str):
    return lambda m: name in _v3_codec_names(m) or f"codecs {_v3_codec_names(m)}"


LAYOUT_CASES = [
    PutCase("order-F", "zarr2", _of("<i4", seed=7), dict(CHUNKS, order="F"), _readers("zarr2"), _stored_order("F")),
    PutCase("order-F-3d-zstd", "zarr2", _of("<f8", SHAPE_3D, seed=7), dict(chunks=(4, 3, 2), order="F", codec="zstd:3"), _readers("zarr2"), _stored_order("F")),
    PutCase("order-F-vlen-utf8", "zarr2", samples.fixed_text, dict(CHUNKS, order="F", vlen=True), _readers("zarr2", NO_TEXT_TS), _stored_order("F")),
    PutCase("order-F", "zarr3", _of("<i4", seed=7), dict(CHUNKS, order="F"), _readers("zarr3"), _v3_has("transpose")),
    PutCase("order-F-3d-sharded", "zarr3", _of("<f8", SHAPE_3D, seed=7), dict(chunks=(2, 3, 2), shards=(4, 6, 4), order="F", codec="gzip:1"), _readers("zarr3")),
    PutCase("endian-big", "zarr2", _of("<i8", seed=8), dict(CHUNKS, endian="big"), _readers("zarr2"), _stored_v2_dtype_prefix(">")),
    PutCase("endian-big-complex-F", "zarr2", _of("<c16", seed=8), dict(CHUNKS, endian="big", order="F", codec="blosc:lz4:5:shuffle"), _readers("zarr2"), _stored_v2_dtype_prefix(">")),
    PutCase("endian-big-float16", "zarr2", _of("<f2", seed=8), dict(CHUNKS, endian="big"), _readers("zarr2"), _stored_v2_dtype_prefix(">")),
    PutCase("endian-big", "zarr3", _of("<i8", seed=8), dict(CHUNKS, endian="big"), _readers("zarr3"), _v3_bytes_endian("big")),
    PutCase("endian-big-sharded-crc32c", "zarr3", _of("<f4", seed=8), dict(chunks=(5, 6), shards=(10, 12), endian="big", codec="zstd:3,crc32c"), _readers("zarr3"), _v3_bytes_endian("big")),
    PutCase("endian-big-input-little-output", "zarr2", _of(">u4", seed=8), dict(CHUNKS, endian="little"), _readers("zarr2"), _stored_v2_dtype_prefix("<")),
    PutCase("separator-slash", "zarr2", _of("<u2", seed=9), dict(CHUNKS, dimension_separator="/"), _readers("zarr2"),
            lambda m: m.get("dimension_separator") == "/" or f"dimension_separator {m.get('dimension_separator')}"),
    PutCase("separator-dot", "zarr3", _of("<u2", seed=9), dict(CHUNKS, dimension_separator="."), _readers("zarr3"),
            lambda m: m["chunk_key_encoding"].get("configuration", {}).get("separator") == "." or f"{m['chunk_key_encoding']}"),
    PutCase("one-dimensional", "zarr2", _of("<f8", (1000,), seed=10), dict(chunks=(64,), codec="zstd:3"), _readers("zarr2")),
    PutCase("one-dimensional", "zarr3", _of("<f8", (1000,), seed=10), dict(chunks=(64,), shards=(256,), codec="zstd:3"), _readers("zarr3")),
    PutCase("default-chunks", "zarr2", _of("<i2", (40, 30), seed=10), {}, _readers("zarr2")),
    PutCase("default-chunks", "zarr3", _of("<i2", (40, 30), seed=10), {}, _readers("zarr3")),
    PutCase("0d", "zarr2", lambda: np.array(3.25), {}, _readers("zarr2")),
    PutCase("0d", "zarr3", lambda: np.array(-7, dtype="<i2"), {}, _readers("zarr3")),
    PutCase("0d-vlen-utf8", "zarr3", lambda: np.array("日本語"), dict(vlen=True), _readers("zarr3", NO_TEXT_TS)),
]

SHARD_CASES = [
    PutCase("sharded-none", "zarr3", _of("<u2", (64, 64), seed=11), dict(chunks=(8, 8), shards=(32, 32)), _readers("zarr3"), _v3_has("sharding_indexed")),
    PutCase("sharded-zstd", "zarr3", _of("<u2", (64, 64), seed=11), dict(chunks=(8, 8), shards=(32, 32), codec="zstd:3"), _readers("zarr3"), _v3_has("sharding_indexed")),
    PutCase("sharded-partial-shards", "zarr3", _of("<i4", (50, 37), seed=11), dict(chunks=(5, 4), shards=(20, 16), codec="blosc:lz4:5:shuffle"), _readers("zarr3"), _v3_has("sharding_indexed")),
    PutCase("sharded-numcodecs-zlib", "zarr3", _of("<i4", (30, 20), seed=11), dict(chunks=(5, 5), shards=(10, 10), codec="zlib:1"), _readers("zarr3", {TS})),
    PutCase("sharded-bool", "zarr3", _of("|b1", (30, 20), seed=11), dict(chunks=(5, 5), shards=(15, 10), codec="gzip:1"), _readers("zarr3")),
]

# Fill value and attributes: the readers' view of both is compared too.
ATTRS = {"title": "bär ☃", "values": [1, 2.5, None, True], "nested": {"unit": "µm", "n": -3}}
FILL_CASES = [
    PutCase("fill-nan", "zarr2", _of("<f4", seed=12), dict(CHUNKS, fill_value="NaN"), _readers("zarr2")),
    PutCase("fill-nan", "zarr3", _of("<f4", seed=12), dict(CHUNKS, fill_value="NaN"), _readers("zarr3")),
    PutCase("fill-42", "zarr2", _of("<i2", seed=12), dict(CHUNKS, fill_value=42), _readers("zarr2")),
    PutCase("fill-42", "zarr3", _of("<i2", seed=12), dict(CHUNKS, fill_value=42, shards=(10, 12)), _readers("zarr3")),
    PutCase("fill-negative", "zarr3", _of("<f8", seed=12), dict(CHUNKS, fill_value=-1.5), _readers("zarr3")),
    PutCase("attrs", "zarr2", _of("<u1", seed=13), dict(CHUNKS, attrs=ATTRS), _readers("zarr2")),
    PutCase("attrs", "zarr3", _of("<u1", seed=13), dict(CHUNKS, attrs=ATTRS), _readers("zarr3")),
]

PUT_CASES = CODEC_CASES + DTYPE_CASES + TEXT_CASES + STRUCT_CASES + DATETIME_CASES + LAYOUT_CASES + SHARD_CASES + FILL_CASES
assert len({c.full_id for c in PUT_CASES}) == len(PUT_CASES), "duplicate put case ids"


def cases_for(reader: str) -> list[PutCase]:
    return [c for c in PUT_CASES if reader in c.readers]
