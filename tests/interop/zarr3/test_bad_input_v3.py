"""Bad Zarr v3 input gives a clean error: non-zero exit, no panic, one line naming the array
(and, for chunk errors, the chunk key).

Every victim starts as a valid array written by zarr-python 3; then a chunk, a shard index or
`zarr.json` is damaged with plain Python (shard index checksums recomputed where the test is
about the index contents rather than its checksum).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Callable

import pytest
import zarr
import zarr.codecs.numcodecs as znc
from zarr.codecs import BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, ZstdCodec

import samples
from ncli import crc32c, flip_byte, load_json, truncate_file

VICTIM = "victim.zarr"
SHAPE, CHUNKS = (10, 12), (5, 6)  # chunk keys c/0/0 c/0/1 c/1/0 c/1/1
N_INNER = 4  # sharded victims: one shard c/0/0 of 2x2 inner chunks


def make_victim(tmp_path: Path, data=None, chunks=CHUNKS, **kwargs) -> Path:
    path = tmp_path / VICTIM
    data = samples.sample("<i4", SHAPE, seed=31) if data is None else data
    z = zarr.create_array(str(path), shape=data.shape, chunks=chunks, dtype=kwargs.pop("dtype", data.dtype), **kwargs)
    z[...] = data
    return path


def sharded(index_codecs=None, codecs=None, index_location="end") -> dict:
    return dict(
        chunks=SHAPE,
        compressors=None,  # zarr-python would otherwise zstd-compress the whole shard
        serializer=ShardingCodec(
            chunk_shape=CHUNKS,
            codecs=codecs or [BytesCodec()],
            index_codecs=index_codecs or [BytesCodec(), Crc32cCodec()],
            index_location=index_location,
        ),
    )


def rewrite_index(change: Callable[[list[list[int]]], None], checksummed: bool, location: str = "end"):
    """Edit the (offset, nbytes) pairs of a shard index; recompute its crc32c if it has one."""
    size = 16 * N_INNER + (4 if checksummed else 0)

    def mutate(shard: Path) -> None:
        data = shard.read_bytes()
        index, body = (data[-size:], data[:-size]) if location == "end" else (data[:size], data[size:])
        pairs = [list(p) for p in struct.iter_unpack("<QQ", index[: 16 * N_INNER])]
        change(pairs)
        raw = b"".join(struct.pack("<QQ", *p) for p in pairs)
        if checksummed:
            raw += struct.pack("<I", crc32c(raw))
        shard.write_bytes(body + raw if location == "end" else raw + body)

    return mutate


def _set_pair(i, offset=None, nbytes=None):
    def change(pairs):
        if offset is not None:
            pairs[i][0] = offset
        if nbytes is not None:
            pairs[i][1] = nbytes

    return change


def _middle_flip(chunk: Path) -> None:
    flip_byte(chunk, len(chunk.read_bytes()) // 2)


TEXT = samples.text(SHAPE, seed=31)

# id -> (array kwargs, chunk key to damage, damage)
CHUNK_CASES = {
    "crc32c-mismatch": (dict(compressors=[Crc32cCodec()]), "c/0/0", lambda p: flip_byte(p, 0)),
    "crc32c-checksum-bytes-damaged": (dict(compressors=[ZstdCodec(level=1), Crc32cCodec()]), "c/1/1", lambda p: flip_byte(p, -1)),
    "crc32c-chunk-shorter-than-checksum": (dict(compressors=[Crc32cCodec()]), "c/0/1", lambda p: truncate_file(p, 2)),
    "truncated-uncompressed-chunk": (dict(compressors=None), "c/1/0", lambda p: truncate_file(p, 17)),
    "oversized-uncompressed-chunk": (dict(compressors=None), "c/0/1", lambda p: p.write_bytes(p.read_bytes() + b"\0" * 4)),
    "corrupt-zstd-magic": (dict(compressors=[ZstdCodec(level=3)]), "c/0/1", lambda p: flip_byte(p, 1)),
    "truncated-zstd-frame": (dict(compressors=[ZstdCodec(level=3, checksum=True)]), "c/1/0", lambda p: truncate_file(p, -6)),
    "corrupt-gzip-stream": (dict(compressors=[GzipCodec(level=6)]), "c/1/1", _middle_flip),
    "corrupt-blosc-header": (dict(compressors=[BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")]), "c/0/0", lambda p: p.write_bytes(p.read_bytes()[:4] + b"\xff" * 12 + p.read_bytes()[16:])),
    "corrupt-numcodecs-zlib": (dict(compressors=[znc.Zlib(level=6)]), "c/1/0", _middle_flip),
    "corrupt-numcodecs-bz2": (dict(compressors=[znc.BZ2(level=9)]), "c/0/1", _middle_flip),
    "vlen-utf8-truncated": (dict(data=TEXT, dtype=str, compressors=None), "c/0/0", lambda p: truncate_file(p, -3)),
    "vlen-utf8-length-past-end": (dict(data=TEXT, dtype=str, compressors=None), "c/1/1", lambda p: p.write_bytes(p.read_bytes()[:4] + b"\xff\xff\xff\x0f" + p.read_bytes()[8:])),
    # Sharding: index entries that point outside the shard, damaged or truncated indexes.
    "shard-index-offset-past-end": (sharded(index_codecs=[BytesCodec()]), "c/0/0", rewrite_index(_set_pair(1, offset=10**6), checksummed=False)),
    "shard-index-offset-past-end-valid-crc32c": (sharded(), "c/0/0", rewrite_index(_set_pair(2, offset=10**6), checksummed=True)),
    "shard-index-nbytes-past-end-valid-crc32c": (sharded(), "c/0/0", rewrite_index(_set_pair(3, nbytes=10**6), checksummed=True)),
    "shard-index-offset-overflows": (sharded(), "c/0/0", rewrite_index(_set_pair(0, offset=2**64 - 8, nbytes=16), checksummed=True)),
    "shard-index-start-offset-past-end": (sharded(index_location="start"), "c/0/0", rewrite_index(_set_pair(1, offset=10**6), checksummed=True, location="start")),
    "shard-index-wrong-inner-size": (sharded(), "c/0/0", rewrite_index(_set_pair(0, nbytes=7), checksummed=True)),
    "shard-index-crc32c-mismatch": (sharded(), "c/0/0", lambda p: flip_byte(p, -10)),
    "shard-truncated-inside-index": (sharded(), "c/0/0", lambda p: truncate_file(p, -20)),
    "shard-shorter-than-index": (sharded(), "c/0/0", lambda p: truncate_file(p, 30)),
    "shard-inner-crc32c-mismatch": (sharded(codecs=[BytesCodec(), Crc32cCodec()]), "c/0/0", lambda p: flip_byte(p, 5)),
    "shard-inner-zstd-corrupt": (sharded(codecs=[BytesCodec(), ZstdCodec(level=1)], index_location="start"), "c/0/0", lambda p: flip_byte(p, 16 * N_INNER + 4 + 1)),
}


@pytest.mark.parametrize("case_id", list(CHUNK_CASES))
def test_damaged_chunk_is_reported(case_id, tmp_path, nc):
    kwargs, key, damage = CHUNK_CASES[case_id]
    path = make_victim(tmp_path, **kwargs)
    damage(path / key)
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM, key])


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def change(meta):
        node = meta
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value

    return change


def _drop(key):
    return lambda meta: meta.pop(key)


BYTES_LE = {"name": "bytes", "configuration": {"endian": "little"}}

# id -> (array kwargs, change of the parsed zarr.json)
METADATA_CASES = {
    "shape-is-a-string": ({}, _set("shape", "10,12")),
    "shape-negative": ({}, _set("shape", [10, -12])),
    "chunk-shape-rank-mismatch": ({}, _set("chunk_grid", "configuration", "chunk_shape", [5])),
    "chunk-shape-zero": ({}, _set("chunk_grid", "configuration", "chunk_shape", [5, 0])),
    "chunk-grid-unknown": ({}, _set("chunk_grid", {"name": "hexagonal", "configuration": {}})),
    "chunk-key-encoding-unknown": ({}, _set("chunk_key_encoding", {"name": "morton"})),
    "data-type-unknown": ({}, _set("data_type", "int128")),
    "data-type-is-a-number": ({}, _set("data_type", 4)),
    "node-type-misspelt": ({}, _set("node_type", "arry")),
    "zarr-format-4": ({}, _set("zarr_format", 4)),
    "fill-value-wrong-type": ({}, _set("fill_value", "not a number")),
    "fill-value-out-of-range": ({}, _set("fill_value", 2**40)),
    "fill-value-null": ({}, _set("fill_value", None)),
    "missing-shape": ({}, _drop("shape")),
    "missing-data-type": ({}, _drop("data_type")),
    "missing-chunk-grid": ({}, _drop("chunk_grid")),
    "missing-codecs": ({}, _drop("codecs")),
    "missing-fill-value": ({}, _drop("fill_value")),
    "codecs-empty": ({}, _set("codecs", [])),
    "codecs-two-array-to-bytes": ({}, _set("codecs", [BYTES_LE, BYTES_LE])),
    "codecs-bytes-to-bytes-only": ({}, _set("codecs", [{"name": "gzip", "configuration": {"level": 1}}])),
    "codec-unknown": ({}, _set("codecs", [BYTES_LE, {"name": "no-such-codec", "configuration": {}}])),
    "codec-config-wrong-type": ({}, _set("codecs", [BYTES_LE, {"name": "zstd", "configuration": {"level": "high"}}])),
    "transpose-order-wrong-length": ({}, _set("codecs", [{"name": "transpose", "configuration": {"order": [0]}}, BYTES_LE])),
    "storage-transformer-unknown": ({}, _set("storage_transformers", [{"name": "no-such-transformer"}])),
    "string-type-with-bytes-codec": (dict(data=TEXT, dtype=str, compressors=None), _set("codecs", [BYTES_LE])),
    "int32-type-with-vlen-utf8-codec": ({}, _set("codecs", [{"name": "vlen-utf8", "configuration": {}}])),
    "sharding-inner-chunks-do-not-divide-shard": (sharded(), _set("codecs", 0, "configuration", "chunk_shape", [4, 4])),
    "sharding-index-codecs-variable-size": (sharded(), _set("codecs", 0, "configuration", "index_codecs", [BYTES_LE, {"name": "gzip", "configuration": {"level": 1}}])),
}


@pytest.mark.parametrize("case_id", list(METADATA_CASES))
def test_bad_zarr_json_is_reported(case_id, tmp_path, nc):
    kwargs, change = METADATA_CASES[case_id]
    path = make_victim(tmp_path, **kwargs)
    meta = load_json(path / "zarr.json")
    change(meta)
    (path / "zarr.json").write_text(json.dumps(meta))
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM])


@pytest.mark.parametrize("text", ['{"zarr_format": 3, "node_type": "array", "shape": [10', "", "null"], ids=["truncated-json", "empty-file", "json-null"])
def test_unparsable_zarr_json_is_reported(text, tmp_path, nc):
    path = make_victim(tmp_path)
    (path / "zarr.json").write_text(text)
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM])


def test_get_of_a_group_is_reported(tmp_path, nc):
    path = tmp_path / VICTIM
    zarr.open_group(str(path), mode="w")
    nc.fails("get", path, "-o", tmp_path / "out.npy", names=[VICTIM])


@pytest.mark.parametrize(
    "region",
    ["10,0", "-11,0", "0,12", "0,0,0", "x,0", "0:5:0,0"],
    ids=["index-past-end", "negative-index-before-start", "index-past-end-last-axis", "too-many-axes", "not-a-number", "zero-step"],
)
def test_bad_region_is_reported(region, tmp_path, nc):
    path = make_victim(tmp_path, **sharded())
    nc.fails("get", path, f"--region={region}", "-o", tmp_path / "out.npy", names=[VICTIM])


def test_convert_of_corrupt_array_fails_cleanly(tmp_path, nc):
    """A conversion that meets a bad chunk fails with the source chunk named."""
    path = make_victim(tmp_path, compressors=[Crc32cCodec()])
    flip_byte(path / "c" / "1" / "0", 2)
    nc.fails("convert", path, tmp_path / "copy.zarr", "--format", "zarr2", names=[VICTIM, "c/1/0"])
