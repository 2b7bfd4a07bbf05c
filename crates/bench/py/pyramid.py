"""Building an OME-Zarr 0.5 pyramid: `neurochunk pyramid` (the CLI, a child process) against
ngff-zarr (`to_multiscales` + `to_ngff_zarr`) and ome-zarr-py (`write_image` with its scaler),
same source, levels, method (block mean, factor 2 on every axis) and chunks. Not a test: run it
by hand (minutes at 512³).

    .peers/py312/bin/python crates/bench/py/pyramid.py                  # 512³ uint16, 4 levels
    .peers/py312/bin/python crates/bench/py/pyramid.py --size 256
    .peers/py312/bin/python crates/bench/py/pyramid.py --size 1024      # memory: 2 GiB source
    .peers/py312/bin/python crates/bench/py/pyramid.py --tools neurochunk,ngff-zarr --json out.json

The source is a uint16 volume of edge --size (smooth with noise, like imaging data) written once
by zarr-python 3 as a Zarr v3 array with 64³ chunks (Zstandard 3). Every tool reads it, builds
--levels levels (level 0 a copy, then factor-2 block means) and writes OME-Zarr 0.5 with 64³
chunks and its default codecs. Peers: ngff-zarr with `ITKWASM_BIN_SHRINK` (a block mean);
ome-zarr-py with `Methods.LOCAL_MEAN` (scikit-image's `downscale_local_mean`) and per-axis
factors {z, y, x: 2^k}. Both take the source as a dask array.

Each tool runs in a fresh worker process (this script with --worker), so that the peak resident
set is its own: for neurochunk, the CLI child's peak (GNU time's %M, /usr/bin/time); for the
peers, the worker's peak (VmHWM), whose "base" (the interpreter with the peer imported, before the
call) is shown too. Times are wall-clock of the build alone, best of --reps, with the CPU time
(user + system, all threads) of that run: on a shared machine the CPU time moves less with
other users' load than the wall-clock. "ratio" = peer time / neurochunk time (above 1:
neurochunk is faster). The outputs' level shapes are checked to agree.
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

REPO_ROOT = Path(__file__).resolve().parents[3]
TOOLS = ["neurochunk", "ngff-zarr", "ome-zarr"]
CHUNK = 64


def binary() -> Path:
    value = os.environ.get("NEUROCHUNK_BIN")
    return Path(value) if value else REPO_ROOT / "target" / "release" / "neurochunk"


def write_source(path: Path, size: int, chunk: int = CHUNK) -> None:
    """A smooth uint16 volume with noise in `chunk`³ chunks, written slab by slab (bounded
    memory at 1024³)."""
    import zarr
    from zarr.codecs import ZstdCodec

    arr = zarr.create_array(
        str(path), shape=(size,) * 3, chunks=(chunk,) * 3, dtype="uint16", compressors=[ZstdCodec(level=3)],
        overwrite=True,
    )
    rng = np.random.default_rng(0)
    y, x = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    for z0 in range(0, size, chunk):
        z = np.arange(z0, min(z0 + chunk, size))[:, None, None]
        smooth = 20000 + 8000 * np.sin(z / 37.0) * np.cos(y / 53.0) * np.sin(x / 41.0 + 1)
        noise = rng.normal(0, 300, (len(z), size, size))
        arr[z0 : z0 + len(z)] = np.clip(smooth + noise, 0, 65535).astype(np.uint16)


def _hwm_bytes() -> int:
    """This process's peak resident set (VmHWM: per address space, so an exec starts afresh,
    unlike getrusage's ru_maxrss, which carries the forking parent's peak across exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_neurochunk(src: Path, dst: Path, levels: int) -> dict:
    # GNU time reports the child's peak; its own few MiB are all the child inherits.
    report = dst.parent / f"{dst.name}.time"
    argv = [
        "/usr/bin/time", "-f", "%M %U %S", "-o", str(report),
        str(binary()), "pyramid", str(src), str(dst), "--levels", str(levels), "--method", "mean",
        "--factors", "2,2,2", "--format", "zarr3", "--chunks", f"{CHUNK},{CHUNK},{CHUNK}",
    ]
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - t0
    peak_kib, user, system = report.read_text().split()[-3:]
    report.unlink()
    return {
        "seconds": seconds, "cpu_seconds": float(user) + float(system), "peak_bytes": int(peak_kib) * 1024,
        "base_bytes": 0,
    }


def _cpu_seconds() -> float:
    """This process's CPU time so far, all threads, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _source_dask(src: Path):
    import dask.array as da
    import zarr

    return da.from_zarr(zarr.open_array(str(src), mode="r"))


def run_ngff_zarr(src: Path, dst: Path, levels: int) -> dict:
    import ngff_zarr as nz

    import dask.array  # noqa: F401 - imported before the baseline, like the peer itself

    before = _hwm_bytes()
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    image = nz.to_ngff_image(_source_dask(src), dims=["z", "y", "x"])
    multiscales = nz.to_multiscales(
        image, scale_factors=[2**k for k in range(1, levels)], method=nz.Methods.ITKWASM_BIN_SHRINK, chunks=CHUNK
    )
    nz.to_ngff_zarr(str(dst), multiscales, version="0.5")
    seconds = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_bytes": _hwm_bytes(), "base_bytes": before}


def run_ome_zarr(src: Path, dst: Path, levels: int) -> dict:
    import zarr
    from ome_zarr.format import FormatV05
    from ome_zarr.scale import Methods
    from ome_zarr.writer import write_image

    import dask.array  # noqa: F401

    before = _hwm_bytes()
    cpu0 = _cpu_seconds()
    t0 = time.perf_counter()
    group = zarr.open_group(str(dst), mode="w", zarr_format=3)
    write_image(
        _source_dask(src),
        group,
        scale_factors=[{a: 2**k for a in "zyx"} for k in range(1, levels)],
        method=Methods.LOCAL_MEAN,
        axes="zyx",
        fmt=FormatV05(),
        storage_options={"chunks": (CHUNK,) * 3},
    )
    seconds = time.perf_counter() - t0
    cpu = _cpu_seconds() - cpu0
    return {"seconds": seconds, "cpu_seconds": cpu, "peak_bytes": _hwm_bytes(), "base_bytes": before}


RUNNERS = {"neurochunk": run_neurochunk, "ngff-zarr": run_ngff_zarr, "ome-zarr": run_ome_zarr}


def level_shapes(dst: Path) -> list[list[int]]:
    meta = json.loads((dst / "zarr.json").read_text())
    datasets = meta["attributes"]["ome"]["multiscales"][0]["datasets"]
    return [json.loads((dst / d["path"] / "zarr.json").read_text())["shape"] for d in datasets]


def worker(args: argparse.Namespace) -> None:
    result = RUNNERS[args.worker](Path(args.src), Path(args.dst), args.levels)
    result["shapes"] = level_shapes(Path(args.dst))
    print(json.dumps(result))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--levels", type=int, default=4)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument(
        "--source-chunks", type=int, default=CHUNK,
        help=f"the source's chunk side (default {CHUNK}, the output's, so level 0 can be copied as "
        "stored; another value makes every tool decode and re-encode level 0)",
    )
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--workdir", help="scratch folder (default: a temporary one, removed at the end)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--worker", choices=TOOLS, help=argparse.SUPPRESS)
    p.add_argument("--src", help=argparse.SUPPRESS)
    p.add_argument("--dst", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    tools = args.tools.split(",")
    unknown = set(tools) - set(TOOLS)
    if unknown:
        p.error(f"unknown tools {sorted(unknown)}; choose from {TOOLS}")
    if "neurochunk" in tools and not binary().is_file():
        p.error(f"no neurochunk binary at {binary()}: cargo build --release, or set NEUROCHUNK_BIN")
    own_dir = args.workdir is None
    work = Path(args.workdir or tempfile.mkdtemp(prefix="pyramid-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        src = work / "src.zarr"
        t0 = time.perf_counter()
        write_source(src, args.size, args.source_chunks)
        print(f"source {args.size}³ uint16 written in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        results: dict[str, dict] = {}
        for tool in tools:
            best: dict | None = None
            for _ in range(args.reps):
                dst = work / f"{tool}.ome.zarr"
                shutil.rmtree(dst, ignore_errors=True)
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", tool, "--src", str(src), "--dst", str(dst),
                     "--levels", str(args.levels)],
                    check=True, capture_output=True, text=True,
                )
                run = json.loads(out.stdout.strip().splitlines()[-1])
                shutil.rmtree(dst, ignore_errors=True)
                if best is None or run["seconds"] < best["seconds"]:
                    best = run
            assert best is not None
            results[tool] = best
            print(
                f"{tool}: {best['seconds']:.2f} s ({best['cpu_seconds']:.2f} s of CPU), "
                f"peak {best['peak_bytes'] / 2**20:.0f} MiB",
                file=sys.stderr,
            )
        shapes = {tool: r["shapes"] for tool, r in results.items()}
        if len({json.dumps(s) for s in shapes.values()}) != 1:
            raise SystemExit(f"the tools built different level shapes: {shapes}")
        base = results.get("neurochunk")
        print(
            f"\n{args.size}³ uint16 ({args.source_chunks}³ source chunks), {args.levels} levels, "
            f"block mean, {CHUNK}³ chunks, OME-Zarr 0.5"
        )
        print(f"{os.getloadavg()[0]:.1f} load average (1 min) at the end")
        print(f"{'tool':<12} {'seconds':>9} {'ratio':>7} {'cpu s':>7} {'ratio':>7} {'peak MiB':>9} {'base MiB':>9}")
        for tool, r in results.items():
            ratio = f"{r['seconds'] / base['seconds']:.2f}" if base else "-"
            cpu_ratio = f"{r['cpu_seconds'] / base['cpu_seconds']:.2f}" if base else "-"
            print(
                f"{tool:<12} {r['seconds']:>9.2f} {ratio:>7} {r['cpu_seconds']:>7.2f} {cpu_ratio:>7} "
                f"{r['peak_bytes'] / 2**20:>9.0f} {r['base_bytes'] / 2**20:>9.0f}"
            )
        if args.json:
            Path(args.json).write_text(json.dumps({"size": args.size, "levels": args.levels, "results": results}, indent=2))
    finally:
        if own_dir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
