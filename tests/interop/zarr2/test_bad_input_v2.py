"""Bad Zarr v2 input gives a clean error: non-zero exit, no panic, one line naming the array
(and, for chunk errors, the chunk key).

Every victim starts as a valid array written by zarr-python 2.18 (so the corruption is the
only fault), then one chunk or the `.zarray` document is damaged with plain Python.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import numcodecs
import numpy as np
import pytest
import zarr

import samples
from ncli import flip_byte, load_json, truncate_file

VICTIM = "victim.zarr"
SHAPE, CHUNKS = (10, 12), (5, 6)  # chunk keys 0.0 0.1 1.0 1.1, all written


def make_victim(tmp_path: Path, dtype="<i4", data=None, **kwargs) -> Path:
    path = tmp_path / VICTIM
    data = samples.sample(dtype, SHAPE, seed=21) if data is None else data
    z = zarr.open_array(str(path), mode="w", shape=SHAPE, chunks=CHUNKS, dtype=kwargs.pop("dtype", data.dtype), **kwargs)
    z[...] = data
    return path


def _overwrite(offset: int, payload: bytes) -> Callable[[Path], None]:
    def mutate(chunk: Path) -> None:
        data = bytearray(chunk.read_bytes())
        data[offset : offset + len(payload)] = payload
        chunk.write_bytes(bytes(data))

    return mutate


def _middle_flip(chunk: Path) -> None:
    flip_byte(chunk, len(chunk.read_bytes()) // 2)


def _append(extra: bytes) -> Callable[[Path], None]:
    return lambda chunk: chunk.write_bytes(chunk.read_bytes() + extra)


def _replace_utf8_byte(chunk: Path) -> None:
    data = bytearray(chunk.read_bytes())
    start = data.index("é".encode())
    data[start] = 0xFF  # invalid UTF-8 lead byte
    chunk.write_bytes(bytes(data))


TEXT = lambda: samples.text(SHAPE, seed=21)  # noqa: E731 - first element contains "é"

# id -> (array kwargs, chunk key to damage, damage)
CHUNK_CASES = {
    "truncated-uncompressed-chunk": (dict(compressor=None), "0.1", lambda p: truncate_file(p, 10)),
    "oversized-uncompressed-chunk": (dict(compressor=None), "1.1", _append(b"\x00" * 8)),
    "truncated-blosc-chunk": (dict(compressor=numcodecs.Blosc("lz4", 5, 1)), "1.0", lambda p: truncate_file(p, -20)),
    "corrupt-blosc-header-sizes": (dict(compressor=numcodecs.Blosc("zstd", 5, 1)), "0.0", _overwrite(4, b"\xff" * 12)),
    "truncated-zstd-frame": (dict(compressor=numcodecs.Zstd(3)), "0.1", lambda p: truncate_file(p, -5)),
    "corrupt-zstd-magic": (dict(compressor=numcodecs.Zstd(3)), "1.1", lambda p: flip_byte(p, 0)),
    "zstd-checksum-mismatch": (dict(compressor=numcodecs.Zstd(3, checksum=True)), "0.0", lambda p: flip_byte(p, -1)),
    "corrupt-gzip-stream": (dict(compressor=numcodecs.GZip(6)), "1.0", _middle_flip),
    "truncated-gzip-stream": (dict(compressor=numcodecs.GZip(6)), "0.1", lambda p: truncate_file(p, -9)),
    "corrupt-zlib-stream": (dict(compressor=numcodecs.Zlib(6)), "1.1", _middle_flip),
    "corrupt-bz2-stream": (dict(compressor=numcodecs.BZ2(9)), "0.0", _middle_flip),
    "corrupt-lzma-stream": (dict(compressor=numcodecs.LZMA()), "0.1", _middle_flip),
    "lz4-size-prefix-too-large": (dict(compressor=numcodecs.LZ4()), "1.0", _overwrite(0, b"\xff\xff\xff\x7f")),
    "truncated-lz4-block": (dict(compressor=numcodecs.LZ4()), "1.1", lambda p: truncate_file(p, -7)),
    "crc32c-filter-mismatch": (dict(compressor=None, filters=[numcodecs.CRC32C()]), "0.0", lambda p: flip_byte(p, 3)),
    "crc32-compressor-mismatch": (dict(compressor=numcodecs.CRC32()), "0.1", lambda p: flip_byte(p, -2)),
    "vlen-utf8-truncated": (
        dict(data=TEXT(), dtype=object, object_codec=numcodecs.VLenUTF8(), compressor=None), "0.0",
        lambda p: truncate_file(p, -3),
    ),
    "vlen-utf8-count-too-large": (
        dict(data=TEXT(), dtype=object, object_codec=numcodecs.VLenUTF8(), compressor=None), "1.1",
        _overwrite(0, b"\xff\xff\xff\x0f"),
    ),
    "vlen-utf8-invalid-utf8": (
        dict(data=TEXT(), dtype=object, object_codec=numcodecs.VLenUTF8(), compressor=None), "0.0", _replace_utf8_byte,
    ),
}


@pytest.mark.parametrize("case_id", list(CHUNK_CASES))
def test_damaged_chunk_is_reported(case_id, tmp_path, nc):
    kwargs, key, damage = CHUNK_CASES[case_id]
    path = make_victim(tmp_path, **kwargs)
    damage(path / key)
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM, key])


def _set(key, value):
    def mutate(meta):
        meta[key] = value

    return mutate


def _drop(key):
    return lambda meta: meta.pop(key)


# id -> (array kwargs, change of the parsed .zarray)
METADATA_CASES = {
    "shape-is-a-string": ({}, _set("shape", "10,12")),
    "shape-negative": ({}, _set("shape", [-10, 12])),
    "shape-rank-differs-from-chunks": ({}, _set("shape", [10, 12, 3])),
    "chunks-fractional": ({}, _set("chunks", [5.5, 6])),
    "chunks-zero": ({}, _set("chunks", [0, 6])),
    "dtype-is-a-number": ({}, _set("dtype", 4)),
    "dtype-unknown": ({}, _set("dtype", "<x4")),
    "datetime-without-unit": ({}, _set("dtype", "<M8")),
    "zarr-format-3-in-zarray": ({}, _set("zarr_format", 3)),
    "order-invalid": ({}, _set("order", "X")),
    "compressor-unknown-id": ({}, _set("compressor", {"id": "no-such-codec"})),
    "compressor-is-a-string": ({}, _set("compressor", "zstd")),
    "filters-is-an-object": ({}, _set("filters", {"id": "delta", "dtype": "<i4"})),
    "fill-value-wrong-type": ({}, _set("fill_value", "not a number")),
    "missing-shape": ({}, _drop("shape")),
    "missing-chunks": ({}, _drop("chunks")),
    "missing-dtype": ({}, _drop("dtype")),
    "missing-zarr-format": ({}, _drop("zarr_format")),
    "object-dtype-without-object-codec": (dict(compressor=None), lambda m: m.update(dtype="|O", filters=None)),
    "vlen-utf8-filter-on-int-array": (dict(compressor=None), _set("filters", [{"id": "vlen-utf8"}])),
    "structured-dtype-malformed": ({}, _set("dtype", [["a"], ["b", "<i2"]])),
}


@pytest.mark.parametrize("case_id", list(METADATA_CASES))
def test_bad_zarray_is_reported(case_id, tmp_path, nc):
    kwargs, change = METADATA_CASES[case_id]
    path = make_victim(tmp_path, **kwargs)
    meta = load_json(path / ".zarray")
    change(meta)
    (path / ".zarray").write_text(json.dumps(meta))
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM])


@pytest.mark.parametrize("text", ['{"zarr_format": 2, "shape": [10', "", "[]"], ids=["truncated-json", "empty-file", "json-list"])
def test_unparsable_zarray_is_reported(text, tmp_path, nc):
    path = make_victim(tmp_path)
    (path / ".zarray").write_text(text)
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM])


def test_directory_without_metadata_is_reported(tmp_path, nc):
    path = tmp_path / VICTIM
    path.mkdir()
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM])


def test_missing_path_is_reported(tmp_path, nc):
    nc.fails("get", tmp_path / VICTIM, "-o", tmp_path / "out.npy", names=[VICTIM])


@pytest.mark.parametrize(
    "region",
    ["10,0", "-11,0", "0,12", "0,0,0", "a:b,0", "0:5:0,0", "1.5,0"],
    ids=["index-past-end", "negative-index-before-start", "index-past-end-last-axis", "too-many-axes", "not-a-number", "zero-step", "fractional-index"],
)
def test_bad_region_is_reported(region, tmp_path, nc):
    path = make_victim(tmp_path)
    nc.fails("get", path, f"--region={region}", "-o", tmp_path / "out.npy", names=[VICTIM])


# `put` with options that cannot work: it must fail cleanly and leave no metadata behind.
PUT_CASES = {
    "shards-with-zarr2": ("zarr2", ["--chunks", "5,6", "--shards", "10,12"]),
    "unknown-codec": ("zarr2", ["--codec", "no-such-codec"]),
    "codec-level-not-a-number": ("zarr2", ["--codec", "zstd:high"]),
    "chunks-rank-mismatch": ("zarr2", ["--chunks", "5"]),
    "chunks-zero": ("zarr3", ["--chunks", "0,6"]),
    "shards-not-multiple-of-chunks": ("zarr3", ["--chunks", "5,6", "--shards", "7,7"]),
    "fill-value-not-json": ("zarr2", ["--fill-value", "{nope"]),
    "fill-value-wrong-type": ("zarr3", ["--fill-value", '"text"']),
    "attrs-not-an-object": ("zarr3", ["--attrs", "[1, 2]"]),
    "vlen-on-integer-array": ("zarr3", ["--vlen"]),
}


@pytest.mark.parametrize("case_id", list(PUT_CASES))
def test_bad_put_leaves_no_array(case_id, tmp_path, nc):
    fmt, options = PUT_CASES[case_id]
    src = tmp_path / "in.npy"
    np.save(src, samples.sample("<i4", SHAPE))
    dst = tmp_path / VICTIM
    nc.fails("put", src, dst, "--format", fmt, *options)
    assert not (dst / ".zarray").exists() and not (dst / "zarr.json").exists(), "metadata written despite the error"


@pytest.mark.parametrize("content", [b"", b"not an npy file at all", b"\x93NUMPY\x01\x00"], ids=["empty", "garbage", "truncated-header"])
def test_put_of_unreadable_npy_is_reported(content, tmp_path, nc):
    src = tmp_path / "bad.npy"
    src.write_bytes(content)
    nc.fails("put", src, tmp_path / VICTIM, "--format", "zarr2", names=["bad.npy"])
