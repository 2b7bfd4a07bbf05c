"""Neuroglancer precomputed volumes both ways against tensorstore's `neuroglancer_precomputed`
driver: layers tensorstore writes (raw, compressed_segmentation, jpeg, png; unsharded and
sharded with gzip; uint8/16/32/64 and float32) read by `neurochunk get`, whole and in regions,
and layers `neurochunk put --format precomputed` writes read by tensorstore."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import tensorstore as ts

SHAPE = (37, 29, 11)
CHUNK = [16, 8, 4]


def volume(dtype: str, channels: int = 1) -> np.ndarray:
    """Smooth values in images (jpeg stays close), blocky labels in integers of every width."""
    x, y, z, c = np.indices((*SHAPE, channels))
    if dtype == "float32":
        return ((x * 7 + y * 3 + z * 11 + c * 50) * 0.25 - 9.5).astype(np.float32)
    if dtype == "uint8":
        return np.clip(x * 3 + y * 2 + z * 4 + c * 20, 0, 255).astype(np.uint8)
    v = (x // 3) + 13 * (y // 4) + 401 * (z // 2) + 7919 * c
    if dtype == "uint64":
        return (v.astype(np.uint64) << np.uint64(35)) + np.uint64(5)
    return v.astype(dtype)


SHARDED = {
    "@type": "neuroglancer_uint64_sharded_v1",
    "hash": "murmurhash3_x86_128",
    "preshift_bits": 1,
    "minishard_bits": 2,
    "shard_bits": 1,
    "minishard_index_encoding": "gzip",
    "data_encoding": "gzip",
}


@dataclass
class Case:
    id: str
    dtype: str
    encoding: str
    channels: int = 1
    extra: dict = field(default_factory=dict)
    sharding: dict | None = None
    lossy: bool = False


CASES = [
    Case("raw-u8", "uint8", "raw"),
    Case("raw-u16-c3", "uint16", "raw", channels=3),
    Case("raw-u32", "uint32", "raw"),
    Case("raw-u64", "uint64", "raw"),
    Case("raw-f32", "float32", "raw"),
    Case("raw-u16-sharded", "uint16", "raw", sharding=SHARDED),
    Case("cseg-u32", "uint32", "compressed_segmentation",
         extra={"compressed_segmentation_block_size": [8, 4, 2]}),
    Case("cseg-u64-sharded", "uint64", "compressed_segmentation",
         extra={"compressed_segmentation_block_size": [4, 4, 4]}, sharding=SHARDED),
    Case("jpeg-u8", "uint8", "jpeg", extra={"jpeg_quality": 95}, lossy=True),
    Case("png-u8", "uint8", "png"),
    Case("png-u16-c2", "uint16", "png", channels=2),
]


def ts_spec(path: Path) -> dict:
    return {"driver": "neuroglancer_precomputed", "kvstore": {"driver": "file", "path": str(path)}}


def write_ts(path: Path, case: Case, offset=(5, -3, 100)) -> np.ndarray:
    data = volume(case.dtype, case.channels)
    scale = {
        "key": "8_8_40",
        "size": list(SHAPE),
        "voxel_offset": list(offset),
        "resolution": [8, 8, 40],
        "chunk_size": CHUNK,
        "encoding": case.encoding,
        **case.extra,
    }
    if case.sharding:
        scale["sharding"] = case.sharding
    store = ts.open(
        {
            **ts_spec(path),
            "multiscale_metadata": {"type": "image", "data_type": case.dtype, "num_channels": case.channels},
            "scale_metadata": scale,
        },
        create=True,
    ).result()
    store.write(data).result()
    # What tensorstore reads back (jpeg: its own lossy decoding).
    return np.asarray(store.read().result())


def close(got: np.ndarray, want: np.ndarray, lossy: bool) -> None:
    assert got.shape == want.shape and got.dtype == want.dtype
    if lossy:
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 2
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_neurochunk_reads_what_tensorstore_writes(nc, tmp_path, case):
    layer = tmp_path / "layer"
    want = write_ts(layer, case)
    # The layer reads its first scale; indexes start at 0, not at the voxel offset.
    close(nc.get(layer), want, case.lossy)
    close(nc.get(layer / "8_8_40", region="3:30,5:9,2:10,:"), want[3:30, 5:9, 2:10, :], case.lossy)
    info = nc.info(layer / "8_8_40")
    assert info["shape"] == [*SHAPE, case.channels]
    assert info["attributes"]["precomputed"]["voxel_offset"] == [5, -3, 100]


PUT_CASES = [
    ("raw-u8", "uint8", 1, "raw"),
    ("raw-f32", "float32", 1, "raw"),
    ("raw-u16-c3", "uint16", 3, "raw"),
    ("cseg-u64", "uint64", 1, "compressed_segmentation:8:4:2"),
    ("cseg-u32-c2", "uint32", 2, "compressed_segmentation"),
    ("png-u16", "uint16", 1, "png"),
    ("jpeg-u8", "uint8", 1, "jpeg:95"),
]


@pytest.mark.parametrize("id_, dtype, channels, codec", PUT_CASES, ids=[c[0] for c in PUT_CASES])
def test_tensorstore_reads_what_neurochunk_puts(nc, tmp_path, id_, dtype, channels, codec):
    data = volume(dtype, channels)
    src = tmp_path / "in.npy"
    np.save(src, data if channels > 1 else data[..., 0])
    layer = tmp_path / "layer"
    nc.run("put", src, layer, "--format", "precomputed", "--codec", codec,
           "--chunks", ",".join(map(str, CHUNK)), "--resolution", "4,4,30", "--voxel-offset", "-7,0,12")
    info = json.loads((layer / "info").read_text())
    assert info["scales"][0]["key"] == "4_4_30"
    store = ts.open(ts_spec(layer)).result()
    assert list(store.domain.inclusive_min) == [-7, 0, 12, 0]
    got = np.asarray(store.read().result())
    if codec.startswith("jpeg"):
        assert np.abs(got.astype(int) - data.astype(int)).max() <= 8
    else:
        np.testing.assert_array_equal(got, data)


def test_convert_to_ome_zarr_and_back_keeps_values_and_description(nc, tmp_path):
    case = CASES[7]  # sharded compressed_segmentation uint64
    want = write_ts(tmp_path / "layer", case)
    # An OME-Zarr 0.5 image: axes c, z, y, x, the resolution and voxel offset as its transforms.
    nc.convert(tmp_path / "layer", tmp_path / "seg.zarr", "zarr3")
    np.testing.assert_array_equal(nc.get(tmp_path / "seg.zarr/0"), np.transpose(want, (3, 2, 1, 0)))
    ome = json.loads((tmp_path / "seg.zarr" / "zarr.json").read_text())["attributes"]["ome"]
    transforms = ome["multiscales"][0]["datasets"][0]["coordinateTransformations"]
    assert transforms[0] == {"type": "scale", "scale": [1.0, 40.0, 8.0, 8.0]}
    assert transforms[1] == {"type": "translation", "translation": [0.0, 4000.0, -24.0, 40.0]}
    # ome-zarr-models accepts it.
    import zarr
    from ome_zarr_models.v05 import Image

    Image.from_zarr(zarr.open_group(str(tmp_path / "seg.zarr"), mode="r"))
    nc.run("convert", tmp_path / "seg.zarr", tmp_path / "back", "--format", "precomputed",
           "--codec", "compressed_segmentation")
    store = ts.open(ts_spec(tmp_path / "back")).result()
    assert list(store.domain.inclusive_min) == [5, -3, 100, 0]
    np.testing.assert_array_equal(np.asarray(store.read().result()), want)


def test_damaged_shard_is_a_clean_error(nc, tmp_path):
    layer = tmp_path / "layer"
    write_ts(layer, CASES[5])
    shard = sorted((layer / "8_8_40").glob("*.shard"))[0]
    shard.write_bytes(shard.read_bytes()[:40])
    err = nc.fails("get", layer, "-o", tmp_path / "out.npy")
    assert shard.name in err


def test_a_layer_over_http(nc, tmp_path):
    """A sharded layer and a scale read over plain HTTP (Range requests, no listing), served by
    RangeHTTPServer (installed in .peers/py312 with ome-zarr, which requires it)."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    write_ts(tmp_path / "layer", CASES[7])
    want = np.asarray(ts.open(ts_spec(tmp_path / "layer")).result().read().result())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "RangeHTTPServer", str(port), "--bind", "127.0.0.1"],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}/layer"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/info", timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        np.testing.assert_array_equal(nc.get(url), want)
        np.testing.assert_array_equal(nc.get(f"{url}/8_8_40", region="1:20,3,:,:"), want[1:20, 3])
    finally:
        server.terminate()
        server.wait(timeout=10)
