"""The Python package against zarr-python 3 (default pipeline, and the zarrs pipeline when the
zarrs package is installed) and tensorstore, in one Python process on the same data, reported
as ratios. Not a test: run it by hand (it takes minutes at 512³).

    .peers/py312/bin/python crates/bench/py/python_api.py                    # 512³, best of 2
    .peers/py312/bin/python crates/bench/py/python_api.py --size 128 --reps 1
    .peers/py312/bin/python crates/bench/py/python_api.py --rows zstd,sharded --json out.json

Rows (a uint16 volume of edge --size, smooth with noise, so that it compresses like imaging
data): ``zstd`` 64³ chunks, Zstandard level 3; ``sharded`` 256³ shards of 32³ chunks,
Zstandard 3; ``raw`` 64³ uncompressed; ``blosc-lz4`` 64³ Blosc/LZ4 level 5 with byte shuffle.
Operations per row and library: ``write`` (the whole volume), ``read`` (the whole volume),
``column`` (a 64×64×size column), ``chunk`` (one 64³ chunk-aligned block) and ``points``
(1,000 random single-voxel reads); plus ``dask-sum`` (``Array.to_dask().sum()`` against
``dask.array.from_zarr(...).sum()`` on the zstd array) and, with ``--nwb N``, ``nwb-open``:
``nc.nwb.open`` + listing the typed objects of the demo file with N extra TimeSeries against
hdmf-zarr's ``NWBZarrIO(path).read()`` + listing its objects (the convention of the installed
hdmf-zarr). ``--libs`` may also name ``neurochunk-nocache`` (read handles without the 64 MiB
decoded-chunk cache neurochunk keeps by default, docs/caching.md) and ``tensorstore+cache``
(a 64 MiB ``cache_pool``, cached data not rechecked: tensorstore's equivalent, which it leaves
off by default); the ratio compares neurochunk with the other libraries only. Every read is
checked against the
volume outside the timer. Times are the best of --reps; "ratio" is the best peer's time over
neurochunk's (above 1: neurochunk is faster). "peak MiB" is the largest resident set above
the level before the operation, sampled every 2 ms (psutil when installed, else /proc).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROWS = ["zstd", "sharded", "raw", "blosc-lz4"]
OPS = ["write", "read", "column", "chunk", "points"]


# --- memory ----------------------------------------------------------------------------------


def _rss() -> int:
    try:
        import psutil

        return int(psutil.Process().memory_info().rss)
    except ImportError:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """The largest resident set above the starting level while the block runs."""

    def __enter__(self) -> "PeakRss":
        self.base = _rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss())
            time.sleep(0.002)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())

    @property
    def mib(self) -> float:
        return (self.peak - self.base) / 2**20


def timed(fn: Callable[[], Any], reps: int) -> tuple[float, float, Any]:
    """(best seconds, peak MiB of the best run's kind, last result)."""
    best, peak, out = float("inf"), 0.0, None
    for _ in range(reps):
        out = None
        with PeakRss() as mem:
            t0 = time.perf_counter()
            out = fn()
            dt = time.perf_counter() - t0
        best = min(best, dt)
        peak = max(peak, mem.mib)
    return best, peak, out


# --- the libraries ---------------------------------------------------------------------------


def volume(size: int) -> np.ndarray:
    rng = np.random.default_rng(42)
    z, y, x = np.ogrid[:size, :size, :size]
    smooth = (1000 + 400 * np.sin(z / 23.0) + 300 * np.cos(y / 17.0) + 200 * np.sin(x / 11.0)).astype(np.float32)
    out = np.empty((size, size, size), dtype=np.uint16)
    for i in range(size):  # slab by slab, to keep the temporaries small
        out[i] = (smooth[i] + rng.normal(0, 20, size=(size, size))).clip(0, 65535).astype(np.uint16)
    return out


def layout(row: str, size: int) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    c = min(64, size)
    if row == "sharded":
        s = min(256, size)
        return (min(32, size),) * 3, (s,) * 3
    return (c,) * 3, None


class Neurochunk:
    name = "neurochunk"

    def __init__(self) -> None:
        import neurochunk as nc

        self.nc = nc

    def create(self, path: Path, row: str, data: np.ndarray) -> Any:
        chunks, shards = layout(row, data.shape[0])
        comp = {"zstd": "zstd:3", "sharded": "zstd:3", "raw": "none", "blosc-lz4": "blosc:lz4:5:shuffle"}[row]
        return self.nc.create_array(path, shape=data.shape, dtype="uint16", chunks=chunks, shards=shards,
                                    compressors=comp, overwrite=True)

    def write(self, a: Any, data: np.ndarray) -> None:
        a[...] = data

    def open(self, path: Path) -> Any:
        return self.nc.open(path)

    def read(self, a: Any, key: Any) -> Any:
        return a[key]


class ZarrPython:
    def __init__(self, zarrs: bool) -> None:
        import zarr

        self.zarr = zarr
        self.zarrs = zarrs
        self.name = "zarr+zarrs" if zarrs else "zarr-python"

    @contextlib.contextmanager
    def pipeline(self):  # type: ignore[no-untyped-def]
        if self.zarrs:
            with self.zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"}):
                yield
        else:
            with self.zarr.config.set({"codec_pipeline.path": "zarr.core.codec_pipeline.BatchedCodecPipeline"}):
                yield

    def create(self, path: Path, row: str, data: np.ndarray) -> Any:
        from zarr.codecs import BloscCodec, ZstdCodec

        chunks, shards = layout(row, data.shape[0])
        comp: Any = {
            "zstd": [ZstdCodec(level=3)],
            "sharded": [ZstdCodec(level=3)],
            "raw": None,
            "blosc-lz4": [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2)],
        }[row]
        with self.pipeline():
            return self.zarr.create_array(str(path), shape=data.shape, dtype="uint16", chunks=chunks,
                                          shards=shards, compressors=comp, fill_value=0, overwrite=True)

    def write(self, a: Any, data: np.ndarray) -> None:
        with self.pipeline():
            a[...] = data

    def open(self, path: Path) -> Any:
        with self.pipeline():
            return self.zarr.open_array(str(path), mode="r")

    def read(self, a: Any, key: Any) -> Any:
        with self.pipeline():
            return a[key]


class Tensorstore:
    name = "tensorstore"

    def __init__(self) -> None:
        import tensorstore as ts

        self.ts = ts

    def spec(self, path: Path) -> dict[str, Any]:
        return {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}

    def create(self, path: Path, row: str, data: np.ndarray) -> Any:
        chunks, shards = layout(row, data.shape[0])
        bytes_codec = {"name": "bytes", "configuration": {"endian": "little"}}
        zstd = {"name": "zstd", "configuration": {"level": 3}}
        blosc = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}
        if row == "sharded":
            codecs = [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(chunks), "codecs": [bytes_codec, zstd],
                "index_codecs": [bytes_codec, {"name": "crc32c"}], "index_location": "end"}}]
            grid = list(shards or chunks)
        else:
            codecs = [bytes_codec] + {"zstd": [zstd], "raw": [], "blosc-lz4": [blosc]}[row]
            grid = list(chunks)
        spec = self.spec(path) | {"metadata": {
            "shape": list(data.shape), "data_type": "uint16", "fill_value": 0,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid}},
            "codecs": codecs}}
        return self.ts.open(spec, create=True, delete_existing=True).result()

    def write(self, a: Any, data: np.ndarray) -> None:
        a.write(data).result()

    def open(self, path: Path) -> Any:
        return self.ts.open(self.spec(path), open=True, read=True).result()

    def read(self, a: Any, key: Any) -> Any:
        return a[key].read().result()


class NeurochunkNoCache(Neurochunk):
    """neurochunk with its decoded-chunk cache off (read-only handles keep 64 MiB by default)."""

    name = "neurochunk-nocache"

    def open(self, path: Path) -> Any:
        return self.nc.open(path, cache_bytes=0)


class TensorstoreCached(Tensorstore):
    """tensorstore with a 64 MiB cache pool (its default is none), cached data not rechecked:
    the same budget and staleness as neurochunk's read-only default."""

    name = "tensorstore+cache"

    def spec(self, path: Path) -> dict[str, Any]:
        spec = super().spec(path)
        spec["context"] = {"cache_pool": {"total_bytes_limit": 64 << 20}}
        spec["recheck_cached_data"] = False
        return spec


def libraries(names: list[str]) -> list[Any]:
    out: list[Any] = []
    for name in names:
        try:
            if name == "neurochunk":
                out.append(Neurochunk())
            elif name == "zarr-python":
                out.append(ZarrPython(False))
            elif name == "zarr+zarrs":
                import zarrs  # noqa: F401

                out.append(ZarrPython(True))
            elif name == "tensorstore":
                out.append(Tensorstore())
            elif name == "neurochunk-nocache":
                out.append(NeurochunkNoCache())
            elif name == "tensorstore+cache":
                out.append(TensorstoreCached())
            else:
                raise SystemExit(f"unknown library {name}")
        except ImportError as err:
            print(f"python_api: {name} skipped ({err})", file=sys.stderr)
    return out


# --- the run ---------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    size = args.size
    work = Path(args.dir) / "python-api"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print(f"python_api: generating a {size}³ uint16 volume ({size**3 * 2 / 2**20:.0f} MiB)", file=sys.stderr)
    data = volume(size)
    libs = libraries(args.libs.split(","))
    rng = np.random.default_rng(7)
    points = [tuple(int(v) for v in rng.integers(0, size, 3)) for _ in range(1000)]
    c = min(64, size)
    col = (slice(0, c), slice(0, c), slice(0, size))  # a 64×64×size column along the last axis
    chunk = (slice(size - c, size), slice(0, c), slice(c, 2 * c) if size >= 2 * c else slice(0, c))
    results: list[dict[str, Any]] = []
    for row in args.rows.split(","):
        for lib in libs:
            path = work / f"{row}-{lib.name}.zarr"
            a = lib.create(path, row, data)

            def write() -> None:
                lib.write(a, data)

            t, mem, _ = timed(write, args.reps)
            results.append({"row": row, "op": "write", "lib": lib.name, "seconds": t, "peak_mib": mem})
            r = lib.open(path)
            for op, key in [("read", Ellipsis), ("column", col), ("chunk", chunk)]:
                t, mem, got = timed(lambda key=key: lib.read(r, key), args.reps)
                assert np.array_equal(np.asarray(got), data[key]), (row, lib.name, op)
                results.append({"row": row, "op": op, "lib": lib.name, "seconds": t, "peak_mib": mem})

            def voxels() -> list[int]:
                return [int(np.asarray(lib.read(r, p))) for p in points]

            t, mem, got = timed(voxels, args.reps)
            assert got == [int(data[p]) for p in points], (row, lib.name)
            results.append({"row": row, "op": "points", "lib": lib.name, "seconds": t, "peak_mib": mem})
            print(f"python_api: {row} {lib.name} done", file=sys.stderr)
        if row == "zstd" and not args.no_dask:
            results += dask_rows(work, data, libs, args.reps)
        if not args.keep:
            for lib in libs:
                shutil.rmtree(work / f"{row}-{lib.name}.zarr", ignore_errors=True)
    if args.nwb:
        results += nwb_rows(work, args.nwb, args.reps)
    return {"size": size, "reps": args.reps, "results": results, "versions": versions()}


def nwb_rows(work: Path, scale: int, reps: int) -> list[dict[str, Any]]:
    import warnings

    import neurochunk as nc

    try:
        import hdmf_zarr
        from hdmf_zarr.nwb import NWBZarrIO
    except ImportError as err:
        print(f"python_api: nwb-open without the peer ({err})", file=sys.stderr)
        hdmf_zarr = None
    legacy = hdmf_zarr is not None and tuple(int(p) for p in hdmf_zarr.__version__.split(".")[:2]) < (0, 14)
    path = work / "demo.nwb.zarr"
    nc.nwb.demo(path, convention="legacy" if legacy else "v3", scale=scale)
    t, mem, n = timed(lambda: len(nc.nwb.open(path).objects()), reps)
    assert n > scale
    out = [{"row": f"nwb {n} obj", "op": "nwb-open", "lib": "neurochunk", "seconds": t, "peak_mib": mem}]
    if hdmf_zarr is not None:

        def peer() -> int:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with NWBZarrIO(str(path), mode="r") as io:
                    return len(list(io.read().objects))

        t, mem, m = timed(peer, reps)
        assert m >= scale
        out.append({"row": f"nwb {n} obj", "op": "nwb-open", "lib": "hdmf-zarr", "seconds": t, "peak_mib": mem})
    return out


def dask_rows(work: Path, data: np.ndarray, libs: list[Any], reps: int) -> list[dict[str, Any]]:
    import dask.array as da
    import neurochunk as nc

    out = []
    want = int(data.sum(dtype=np.uint64))
    nc_path = work / "zstd-neurochunk.zarr"
    t, mem, got = timed(lambda: int(nc.open(nc_path).to_dask().sum(dtype="uint64").compute()), reps)
    assert got == want
    out.append({"row": "zstd", "op": "dask-sum", "lib": "neurochunk", "seconds": t, "peak_mib": mem})
    for lib in libs:
        if isinstance(lib, ZarrPython):
            path = work / f"zstd-{lib.name}.zarr"

            def total(lib: Any = lib, path: Path = path) -> int:
                with lib.pipeline():
                    return int(da.from_zarr(str(path)).sum(dtype="uint64").compute())

            t, mem, got = timed(total, reps)
            assert got == want
            out.append({"row": "zstd", "op": "dask-sum", "lib": lib.name, "seconds": t, "peak_mib": mem})
    return out


def versions() -> dict[str, str]:
    out = {"python": sys.version.split()[0], "numpy": np.__version__}
    for mod in ["neurochunk", "zarr", "zarrs", "tensorstore", "dask", "hdmf_zarr"]:
        try:
            m = __import__(mod)
            out[mod] = str(getattr(m, "__version__", "?"))
        except ImportError:
            pass
    return out


def report(doc: dict[str, Any]) -> str:
    res = doc["results"]
    libs = list(dict.fromkeys(r["lib"] for r in res))
    lines = [f"{doc['size']}³ uint16, best of {doc['reps']}; seconds (peak MiB above the start)", ""]
    head = f"{'row':<14} {'op':<9}" + "".join(f"{lib:>24}" for lib in libs) + f"{'ratio':>8}"
    lines += [head, "-" * len(head)]
    keys = list(dict.fromkeys((r["row"], r["op"]) for r in res))
    for row, op in keys:
        cells = {r["lib"]: r for r in res if r["row"] == row and r["op"] == op}
        line = f"{row:<14} {op:<9}"
        for lib in libs:
            r = cells.get(lib)
            line += f"{r['seconds']:>14.3f} ({r['peak_mib']:>6.0f})" if r else f"{'—':>24}"
        ours = cells.get("neurochunk")
        peers = [r["seconds"] for lib, r in cells.items() if not lib.startswith("neurochunk")]
        ratio = min(peers) / ours["seconds"] if ours and peers and ours["seconds"] > 0 else float("nan")
        line += f"{ratio:>8.2f}"
        lines.append(line)
    lines += ["", "ratio: the best peer's time / neurochunk's (above 1: neurochunk faster)",
              "versions: " + ", ".join(f"{k} {v}" for k, v in doc["versions"].items())]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--libs", default="neurochunk,zarr-python,zarr+zarrs,tensorstore")
    p.add_argument("--dir", default=str(Path(__file__).resolve().parents[3] / "target" / "neurochunk-bench"))
    p.add_argument("--json", help="also write the results as JSON here")
    p.add_argument("--keep", action="store_true", help="keep the arrays")
    p.add_argument("--no-dask", action="store_true", help="leave out the dask-sum row")
    p.add_argument("--nwb", type=int, default=0, metavar="N",
                   help="add the nwb-open row: the demo NWB file with N extra TimeSeries (e.g. 10000)")
    args = p.parse_args(argv)
    doc = run(args)
    print(report(doc))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
