"""Neuroglancer precomputed skeletons: neurochunk against cloud-volume, in one run, as ratios.

1,000 neuron-like skeletons (random trees of 2,000 vertices with a radius attribute) are
converted both ways between a precomputed skeleton layer (unsharded, gzip-compressed files as
cloud-volume writes them) and one Parquet skeleton table:

* layer -> table: `neurochunk table convert LAYER OUT.skeletons.parquet --context ...` against
  cloud-volume reading every skeleton (`cv.skeleton.get(ids)`) and writing the same rows
  (segment, vertex, x, y, z, parent, radius) with pyarrow;
* table -> layer: `neurochunk table convert IN.skeletons.parquet LAYER --format precomputed`
  against pyarrow reading the table and cloud-volume uploading one `Skeleton` per segment.

Each operation runs in a fresh child process (best of --reps, process start-up included for
both, as a user would call them); the peak RSS printed is the operation's own. The outputs are
compared: the table neurochunk writes holds cloud-volume's vertices, and the layer neurochunk
writes is read by cloud-volume with the same vertices and radii.

Usage: .peers/py312/bin/python crates/bench/py/precomputed_skeletons_cloudvolume.py
       [--count 1000] [--vertices 2000] [--reps 3] [--neurochunk target/release/neurochunk]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CONTEXT = "urn:uuid:bench-skeletons"


def tree(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vertices wandering from a root, each hanging from a recent earlier vertex."""
    rng = np.random.default_rng(seed)
    parents = np.maximum(np.arange(n) - 1 - rng.integers(0, 30, n), 0)
    steps = rng.normal(0, 200, size=(n, 3)).astype(np.float32)
    vertices = np.zeros((n, 3), dtype=np.float32)
    for i in range(1, n):
        vertices[i] = vertices[parents[i]] + steps[i]
    vertices += np.float32(50_000)
    edges = np.stack([np.arange(1, n), parents[1:]], axis=1).astype(np.uint32)
    radii = (rng.random(n) * 300 + 20).astype(np.float32)
    return vertices, edges, radii


def make_layer(path: Path, count: int, n: int) -> None:
    from cloudvolume import CloudVolume, Skeleton

    info = CloudVolume.create_new_info(
        num_channels=1, layer_type="segmentation", data_type="uint64", encoding="raw",
        resolution=[1, 1, 1], voxel_offset=[0, 0, 0], chunk_size=[64, 64, 64],
        volume_size=[1 << 20] * 3, skeletons="skeletons",
    )
    cv = CloudVolume(f"file://{path}", info=info, compress=True)
    cv.commit_info()
    cv.skeleton.meta.commit_info()
    cv = CloudVolume(f"file://{path}", compress=True, progress=False)
    skels = []
    for segid in range(1, count + 1):
        vertices, edges, radii = tree(segid, n)
        skels.append(Skeleton(vertices, edges, radii=radii, segid=segid))
    cv.skeleton.upload(skels)


def child(op: str, side: str, a: argparse.Namespace) -> None:
    scratch = Path(a.dir)
    layer = scratch / "layer"
    t0 = time.perf_counter()
    if op == "to_table" and side == "neurochunk":
        subprocess.run(
            [a.neurochunk, "table", "convert", str(layer / "skeletons"),
             str(scratch / "nc.skeletons.parquet"), "--context", CONTEXT, "--overwrite"],
            check=True, capture_output=True,
        )
    elif op == "to_table":
        import pyarrow as pa
        import pyarrow.parquet as pq
        from cloudvolume import CloudVolume

        cv = CloudVolume(f"file://{layer}", progress=False)
        ids = list(range(1, a.count + 1))
        skels = cv.skeleton.get(ids)
        seg, sample, xs, ys, zs, parent, radius = [], [], [], [], [], [], []
        start = 0
        for s in sorted(skels, key=lambda s: int(s.id)):
            n = len(s.vertices)
            p = np.full(n, -1, dtype=np.int64)
            p[s.edges[:, 0]] = s.edges[:, 1].astype(np.int64) + start
            seg.append(np.full(n, int(s.id), dtype=np.uint64))
            sample.append(np.arange(start, start + n, dtype=np.uint64))
            xs.append(s.vertices[:, 0]); ys.append(s.vertices[:, 1]); zs.append(s.vertices[:, 2])
            parent.append(p)
            radius.append(s.radius)
            start += n
        par = np.concatenate(parent)
        table = pa.table({
            "sample_id": np.concatenate(sample),
            "fragment_id": np.concatenate(seg),
            "x": np.concatenate(xs).astype(np.float64),
            "y": np.concatenate(ys).astype(np.float64),
            "z": np.concatenate(zs).astype(np.float64),
            "parent_id": pa.array(par.astype(np.uint64), mask=par < 0),
            "radius": np.concatenate(radius).astype(np.float64),
        })
        pq.write_table(table, scratch / "cv.skeletons.parquet")
    elif op == "to_layer" and side == "neurochunk":
        out = scratch / "nc-layer"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run(
            [a.neurochunk, "table", "convert", str(scratch / "nc.skeletons.parquet"), str(out),
             "--format", "precomputed"],
            check=True, capture_output=True,
        )
    elif op == "to_layer":
        import pyarrow.parquet as pq
        from cloudvolume import CloudVolume, Skeleton

        out = scratch / "cv-layer"
        shutil.rmtree(out, ignore_errors=True)
        info = CloudVolume.create_new_info(
            num_channels=1, layer_type="segmentation", data_type="uint64", encoding="raw",
            resolution=[1, 1, 1], voxel_offset=[0, 0, 0], chunk_size=[64, 64, 64],
            volume_size=[1 << 20] * 3, skeletons="skeletons",
        )
        t0 = time.perf_counter()
        cv = CloudVolume(f"file://{out}", info=info, compress=True, progress=False)
        cv.commit_info()
        cv.skeleton.meta.commit_info()
        t = pq.read_table(scratch / "nc.skeletons.parquet").to_pydict()
        frag = np.array(t["fragment_id"], dtype=np.uint64)
        sample = np.array(t["sample_id"], dtype=np.uint64)
        xyz = np.stack([t["x"], t["y"], t["z"]], axis=1).astype(np.float32)
        par = np.array([-1 if p is None else p for p in t["parent_id"]], dtype=np.int64)
        radius = np.array([0 if r is None else r for r in t["radius"]], dtype=np.float32)
        bounds = np.flatnonzero(np.diff(frag)) + 1
        skels = []
        for rows in np.split(np.arange(len(frag)), bounds):
            first = int(sample[rows[0]])
            local = par[rows]
            child_idx = np.flatnonzero(local >= 0)
            edges = np.stack([child_idx, local[child_idx] - first], axis=1).astype(np.uint32)
            skels.append(Skeleton(xyz[rows], edges, radii=radius[rows], segid=int(frag[rows[0]])))
        cv.skeleton.upload(skels)
    seconds = time.perf_counter() - t0
    rss = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
              resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    print(json.dumps({"seconds": seconds, "rss_mb": rss}))


def floors(scratch: Path, neurochunk: str) -> dict[str, float]:
    """What no pipeline avoids, per conversion.

    The codec work is timed by `skeleton_floor` (crates/bench/examples/skeleton_floor.rs, built
    beside the neurochunk binary) with the implementations neurochunk uses, zlib-rs and the
    `snap` crate, on every core at once. to_table: unzipping every gzip file of the layer and
    Snappy-compressing the table's column values, plus reading the layer's files and writing
    the table's bytes to a new file (timed here, best of three: the kernel's copies every
    reader and writer pays). to_layer: Snappy-decompressing the column values, plus creating
    the layer's files one after another in a fresh directory (timed here: creating files in
    one directory takes its lock, and the file system's inode allocation is the same for
    every writer).
    """
    tool = Path(neurochunk).parent / "examples" / "skeleton_floor"
    codecs = json.loads(subprocess.run(
        [str(tool), str(scratch / "layer" / "skeletons"), str(scratch / "nc.skeletons.parquet")],
        check=True, capture_output=True, text=True).stdout)
    files = [f.read_bytes() for f in sorted((scratch / "nc-layer").iterdir()) if f.is_file()]
    out = scratch / "floor-files"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    t0 = time.perf_counter()
    for i, data in enumerate(files):
        (out / str(i)).write_bytes(data)
    create = time.perf_counter() - t0
    shutil.rmtree(out, ignore_errors=True)
    layer_files = sorted(f for f in (scratch / "layer" / "skeletons").iterdir() if f.is_file())
    table = (scratch / "nc.skeletons.parquet").read_bytes()
    copies = []
    for _ in range(3):
        t0 = time.perf_counter()
        for f in layer_files:
            f.read_bytes()
        written = scratch / "floor.parquet"
        written.write_bytes(table)
        copies.append(time.perf_counter() - t0)
        written.unlink()
    return {
        "to_table": codecs["inflate_s"] + codecs["snappy_compress_s"] + min(copies),
        "to_layer": codecs["snappy_decompress_s"] + create,
    }


def run_child(op: str, side: str, a: argparse.Namespace) -> dict:
    best = None
    for _ in range(a.reps):
        out = subprocess.run(
            [sys.executable, __file__, "--child", op, side, "--dir", a.dir, "--count", str(a.count),
             "--neurochunk", a.neurochunk],
            check=True, capture_output=True, text=True,
        ).stdout.strip().splitlines()[-1]
        result = json.loads(out)
        if best is None or result["seconds"] < best["seconds"]:
            best = result
    assert best is not None
    return best


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--vertices", type=int, default=2000)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--dir", default=None)
    p.add_argument("--neurochunk", default=str(Path(__file__).resolve().parents[3] / "target/release/neurochunk"))
    p.add_argument("--child", nargs=2, metavar=("OP", "SIDE"))
    a = p.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a)
        return
    own = a.dir is None
    a.dir = a.dir or tempfile.mkdtemp(prefix="skeleton-bench-")
    try:
        t0 = time.perf_counter()
        make_layer(Path(a.dir) / "layer", a.count, a.vertices)
        print(f"{a.count} skeletons of {a.vertices} vertices written by cloud-volume in "
              f"{time.perf_counter() - t0:.1f} s; best of {a.reps}")
        rows = [(op, run_child(op, "neurochunk", a), run_child(op, "cloud-volume", a))
                for op in ("to_table", "to_layer")]
        import pyarrow.parquet as pq

        ours = pq.read_table(Path(a.dir) / "nc.skeletons.parquet")
        theirs = pq.read_table(Path(a.dir) / "cv.skeletons.parquet")
        assert ours.num_rows == theirs.num_rows == a.count * a.vertices
        for c in ("x", "y", "z"):
            assert np.array_equal(ours[c].to_numpy(), theirs[c].to_numpy()), c
        from cloudvolume.datasource.precomputed.skeleton import PrecomputedSkeletonSource

        back = PrecomputedSkeletonSource.from_cloudpath(f"file://{Path(a.dir) / 'nc-layer'}")
        for segid in (1, a.count // 2, a.count):
            s = back.get(segid)
            v, _, r = tree(segid, a.vertices)
            assert np.array_equal(s.vertices, v) and np.array_equal(s.radius, r), segid
        floor = floors(Path(a.dir), a.neurochunk)
        started = subprocess.run(
            [sys.executable, "-c", "import time; t = time.perf_counter(); import cloudvolume; "
             "print(time.perf_counter() - t)"], check=True, capture_output=True, text=True)
        print(f"{'conversion':<10} {'neurochunk s':>13} {'cloud-volume s':>15} {'ratio':>7} "
              f"{'floor s':>8} {'nc/floor':>9} {'best ratio':>11} {'nc MB':>7} {'cv MB':>7}")
        for op, nc, cv in rows:
            print(f"{op:<10} {nc['seconds']:>13.2f} {cv['seconds']:>15.2f} "
                  f"{cv['seconds'] / nc['seconds']:>6.1f}x {floor[op]:>8.2f} "
                  f"{nc['seconds'] / floor[op]:>8.1f}x {cv['seconds'] / floor[op]:>10.1f}x "
                  f"{nc['rss_mb']:>7.0f} {cv['rss_mb']:>7.0f}")
        print("ratio > 1 means neurochunk is faster; floor: the codec work and file creation "
              "no pipeline avoids (see floors()); best ratio: cloud-volume's time over the "
              "floor, the most any pipeline could reach in this run (the goal is 10x)")
        print(f"importing cloudvolume alone takes {float(started.stdout):.2f} s of cloud-volume's time")
    finally:
        if own:
            shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
