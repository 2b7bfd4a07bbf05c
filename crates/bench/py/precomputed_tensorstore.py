"""Neuroglancer precomputed volumes: neurochunk against tensorstore, in one run, as ratios.

A 512^3 uint64 segmentation (irregular cells with large ids, as connectomics segmentations
have) stored sharded with compressed_segmentation, 64^3 chunks, gzip-compressed minishard
indexes and raw data, the layout of published segmentations:

* write: from the volume in a .npy file to the layer on disk. neurochunk: `neurochunk put
  --format precomputed --codec compressed_segmentation --sharding ...` (a process: reading the
  .npy included); tensorstore: `np.load` then a write through its `neuroglancer_precomputed`
  driver into the same layout. Each layer is then read back by the other tool and compared.
* read: the whole scale into a NumPy array, in this process: `neurochunk.open(...)[...]`
  against `tensorstore.open(...).read()`.

Every operation runs in a fresh child process (best of --reps), so the peak RSS printed is the
operation's own. The floor row is reading the layer's files into memory (the bytes every reader
must fetch): the decoding is the rest.

Usage: .peers/py312/bin/python crates/bench/py/precomputed_tensorstore.py [--size 512]
       [--reps 3] [--dir SCRATCH] [--neurochunk target/release/neurochunk]
(the neurochunk Python package must be installed in the interpreter, as scripts/test-python
installs it into .peers/py312).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHUNK = 64
SHARDING = {
    "@type": "neuroglancer_uint64_sharded_v1",
    "hash": "identity",
    "preshift_bits": 6,
    "minishard_bits": 3,
    "shard_bits": 0,
    "minishard_index_encoding": "gzip",
    "data_encoding": "raw",
}


def segmentation(n: int) -> np.ndarray:
    """Cells of about 40 voxels across with wavy borders; ids spread over 64 bits."""
    out = np.empty((n, n, n), dtype=np.uint64)
    y, z = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    for x in range(n):
        wx = (x + 6 * np.sin(y / 17.0) + 4 * np.cos(z / 23.0)) // 41
        wy = (y + 5 * np.sin(z / 13.0 + x / 31.0)) // 37
        wz = (z + 7 * np.cos(x / 19.0)) // 43
        cell = (wx.astype(np.uint64) * 7919 + wy.astype(np.uint64) * 104729 + wz.astype(np.uint64))
        out[x] = cell * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(8)
    return out


def ts_spec(path: Path, n: int | None = None) -> dict:
    spec: dict = {"driver": "neuroglancer_precomputed", "kvstore": {"driver": "file", "path": str(path)}}
    if n is not None:
        spec["multiscale_metadata"] = {"type": "segmentation", "data_type": "uint64", "num_channels": 1}
        spec["scale_metadata"] = {
            "size": [n, n, n],
            "chunk_size": [CHUNK] * 3,
            "resolution": [8, 8, 8],
            "encoding": "compressed_segmentation",
            "compressed_segmentation_block_size": [8, 8, 8],
            "sharding": SHARDING,
        }
        spec["create"] = True
    return spec


def child(op: str, side: str, a: argparse.Namespace) -> None:
    """One operation, timed, in this (child) process; prints a JSON line."""
    scratch = Path(a.dir)
    volume_npy = scratch / "volume.npy"
    layer = scratch / f"{side}-layer"
    # The libraries are imported before the clock starts.
    if side == "neurochunk" and op == "read":
        import neurochunk as nc
    if side == "tensorstore":
        import tensorstore as ts
    t0 = time.perf_counter()
    if op == "write" and side == "neurochunk":
        shutil.rmtree(layer, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run(
            [a.neurochunk, "put", str(volume_npy), str(layer), "--format", "precomputed",
             "--codec", "compressed_segmentation", "--chunks", f"{CHUNK},{CHUNK},{CHUNK}",
             "--resolution", "8,8,8", "--sharding", json.dumps(SHARDING)],
            check=True,
        )
    elif op == "write":
        shutil.rmtree(layer, ignore_errors=True)
        t0 = time.perf_counter()
        volume = np.load(volume_npy)
        store = ts.open(ts_spec(layer, volume.shape[0])).result()
        store[..., 0].write(volume).result()
    elif op == "read" and side == "neurochunk":
        data = nc.open(str(layer / "8_8_8"))[...]
        assert data.dtype == np.uint64
    elif op == "read":
        data = ts.open(ts_spec(layer)).result().read().result()
    elif op == "floor":
        total = 0
        for path in sorted((scratch / "tensorstore-layer").rglob("*")):
            if path.is_file():
                total += len(path.read_bytes())
    seconds = time.perf_counter() - t0
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"seconds": seconds, "rss_mb": max(own, children) / 1024}))


def run_child(op: str, side: str, a: argparse.Namespace) -> dict:
    best: dict | None = None
    for _ in range(a.reps):
        out = subprocess.run(
            [sys.executable, __file__, "--child", op, side, "--dir", a.dir, "--neurochunk", a.neurochunk],
            check=True, capture_output=True, text=True,
        ).stdout.strip().splitlines()[-1]
        result = json.loads(out)
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    assert best is not None
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--dir", default=None)
    p.add_argument("--neurochunk", default=str(Path(__file__).resolve().parents[3] / "target/release/neurochunk"))
    p.add_argument("--child", nargs=2, metavar=("OP", "SIDE"))
    a = p.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a)
        return
    own_dir = a.dir is None
    a.dir = a.dir or tempfile.mkdtemp(prefix="precomputed-bench-")
    try:
        n = a.size
        t0 = time.perf_counter()
        volume = segmentation(n)
        np.save(Path(a.dir) / "volume.npy", volume)
        print(f"{n}^3 uint64 segmentation ({volume.nbytes / 2**20:.0f} MiB, "
              f"{len(np.unique(volume[::8, ::8, ::8]))}+ segments) made in {time.perf_counter() - t0:.1f} s; "
              f"best of {a.reps}, {os.cpu_count()} cores")
        rows = []
        for op in ("write", "read"):
            ours = run_child(op, "neurochunk", a)
            theirs = run_child(op, "tensorstore", a)
            rows.append((op, ours, theirs))
        floor = run_child("floor", "files", a)
        # Each side's layer read back by the other: identical volumes.
        import neurochunk as nc
        import tensorstore as ts

        ours_by_ts = ts.open(ts_spec(Path(a.dir) / "neurochunk-layer")).result().read().result()[..., 0]
        theirs_by_nc = nc.open(str(Path(a.dir) / "tensorstore-layer" / "8_8_8"))[...][..., 0]
        assert np.array_equal(ours_by_ts, volume), "tensorstore reads neurochunk's layer differently"
        assert np.array_equal(theirs_by_nc, volume), "neurochunk reads tensorstore's layer differently"
        size = sum(f.stat().st_size for f in (Path(a.dir) / "neurochunk-layer").rglob("*") if f.is_file())
        size_ts = sum(f.stat().st_size for f in (Path(a.dir) / "tensorstore-layer").rglob("*") if f.is_file())
        print(f"{'operation':<8} {'neurochunk s':>13} {'tensorstore s':>14} {'ratio':>7} {'nc MB':>8} {'ts MB':>8}")
        for op, ours, theirs in rows:
            print(f"{op:<8} {ours['seconds']:>13.2f} {theirs['seconds']:>14.2f} "
                  f"{theirs['seconds'] / ours['seconds']:>6.2f}x {ours['rss_mb']:>8.0f} {theirs['rss_mb']:>8.0f}")
        print(f"floor: reading the layer's {size_ts / 2**20:.0f} MiB of files takes {floor['seconds']:.2f} s "
              f"(neurochunk's layer: {size / 2**20:.0f} MiB); ratio > 1 means neurochunk is faster")
    finally:
        if own_dir:
            shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
