"""Remote benchmark: neurochunk against zarr-python 3 and tensorstore reading from S3 on
loopback with added latency. Not a test: run it by hand and read the table.

    .peers/py312/bin/python crates/bench/py/remote_s3.py               # 512^3, 20 ms, every row
    .peers/py312/bin/python crates/bench/py/remote_s3.py --size 256 --rows whole-chunked --reps 3
    .peers/py312/bin/python crates/bench/py/remote_s3.py --json out.json

The neurochunk side is `crates/bench/examples/remote_read.rs`; build it first:

    cargo build --release -p neurochunk-bench --example remote_read

What it does:

* starts `moto_server` (from this Python's environment) on 127.0.0.1 and a fault proxy
  (`tests/interop/remote/faultproxy.py`) in front of it that holds every request for
  `--latency` seconds (default 0.02) before forwarding it;
* writes a deterministic SIZE^3 uint16 light-sheet-like volume with zarr-python 3 (zstd level 1)
  in two layouts, chunked 64^3 and sharded 256^3 with 32^3 inner chunks, and uploads them
  straight to moto (not through the proxy);
* runs each (row, library) in its own process, through the proxy, `--reps` times (the best time
  is kept; peak RSS and the proxy's request count are those of the best run):

  | row | read |
  |---|---|
  | whole-chunked | the whole array, chunked 64^3 |
  | whole-sharded | the whole array, sharded 256^3 / 32^3 |
  | column | a 64 x 64 x SIZE column (all z) of the sharded array, at y = x = SIZE/4 + 16 |
  | voxels | `--voxels` (1000) random single voxels of the chunked array, one read after the other |
  | nwb | open the demo NWB file (v3 convention) with `--nwb-objects` (10,000) extra TimeSeries and list its typed objects |
  | parquet | read the columns `--columns` of the synthetic skeleton table of `--table-rows` (10M) rows, one Parquet file |

* libraries: `neurochunk` (the example binary: `Array::open` over `open_url`, `NwbFile::open_store`,
  `TableSource::open_store`), `zarr-python`
  (3.x, `zarr.storage.ObjectStore` over obstore's S3Store), `zarr-python+zarrs` (the same with
  the zarrs codec pipeline) and `tensorstore` (`zarr3` driver over its `s3` kvstore) for the
  array rows; `hdmf-zarr` (`NWBZarrIO` over fsspec/s3fs, `read()` and its `objects`) for
  `nwb`; `pyarrow` (`pyarrow.parquet.read_table(columns=...)` over `pyarrow.fs.S3FileSystem`)
  for `parquet`. The NWB file and the table are written by the example binary (`make-nwb`,
  `make-table`: the generators of the NWB and table benchmarks). Every array
  library gets 64 requests in flight (neurochunk's default; zarr's `async.concurrency`,
  tensorstore's `s3_request_concurrency`).

Times are the reads alone, opening the array included (interpreter start-up and imports
excluded); the ratio is the peer's time over neurochunk's (higher: neurochunk faster). Every
read is checked against the volume (a checksum of the values read).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "interop" / "remote"))

LIBS = ("neurochunk", "zarr-python", "zarr-python+zarrs", "tensorstore", "hdmf-zarr", "pyarrow")
ROWS = ("whole-chunked", "whole-sharded", "column", "voxels", "nwb", "parquet")
# The libraries of each row (the array rows: every array library).
ROW_LIBS = {"nwb": ("neurochunk", "hdmf-zarr"), "parquet": ("neurochunk", "pyarrow")}
ARRAY_LIBS = ("neurochunk", "zarr-python", "zarr-python+zarrs", "tensorstore")
CONCURRENCY = 64
ACCESS = ("bench-access-key", "bench-secret-key")
REGION = "us-east-1"


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


def volume(n: int) -> np.ndarray:
    """A smooth background with bright blobs and small noise, deterministic (uint16)."""
    rng = np.random.default_rng(12345)
    out = np.empty((n, n, n), dtype=np.uint16)
    yy, xx = np.mgrid[0:n, 0:n]
    blobs = rng.uniform(0, n, size=(max(8, n**3 // 60_000), 3))
    r = 8  # a blob's reach in voxels
    for z in range(n):
        plane = 100.0 + 40.0 * (xx + yy + z) / (3 * n)
        for bz, by, bx in blobs[np.abs(blobs[:, 0] - z) < r]:
            y0, y1 = max(0, int(by) - r), min(n, int(by) + r + 1)
            x0, x1 = max(0, int(bx) - r), min(n, int(bx) + r + 1)
            d2 = (z - bz) ** 2 + (yy[y0:y1, x0:x1] - by) ** 2 + (xx[y0:y1, x0:x1] - bx) ** 2
            plane[y0:y1, x0:x1] += 2000.0 * np.exp(-d2 / 18.0)
        out[z] = plane.astype(np.uint16) + rng.integers(0, 16, size=(n, n), dtype=np.uint16)
    return out


def column_box(n: int) -> tuple[list[int], list[int]]:
    c = min(n // 4 + 16, n - 64)
    return [0, c, c], [n, 64, 64]


def voxel_coords(n: int, count: int) -> np.ndarray:
    return np.random.default_rng(777).integers(0, n, size=(count, 3))


def expected_sums(data: np.ndarray, coords: np.ndarray) -> dict[str, int]:
    (z, y, x), (dz, dy, dx) = column_box(data.shape[0])
    whole = int(data.sum(dtype=np.uint64))
    return {
        "whole-chunked": whole,
        "whole-sharded": whole,
        "column": int(data[z:z + dz, y:y + dy, x:x + dx].sum(dtype=np.uint64)),
        "voxels": int(sum(int(data[tuple(c)]) for c in coords)),
    }


# --------------------------------------------------------------------------------------------
# Children (one process per measurement)
# --------------------------------------------------------------------------------------------


def child(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--lib", required=True)
    p.add_argument("--endpoint", required=True)
    p.add_argument("--bucket", required=True)
    p.add_argument("--path", required=True)
    p.add_argument("--op", required=True)
    p.add_argument("--box", default="")
    p.add_argument("--coords", default="")
    p.add_argument("--columns", default="")
    a = p.parse_args(argv)
    coords = np.loadtxt(a.coords, dtype=np.int64, ndmin=2) if a.coords else None
    if a.lib == "hdmf-zarr":
        import warnings

        from hdmf_zarr.nwb import NWBZarrIO

        options = {"key": ACCESS[0], "secret": ACCESS[1], "endpoint_url": a.endpoint,
                   "client_kwargs": {"region_name": REGION}}
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with NWBZarrIO(f"s3://{a.bucket}/{a.path}", mode="r", storage_options=options) as io:
                total = len(list(io.read().objects))
        print(json.dumps({"seconds": time.perf_counter() - t0, "sum": total, "peak_rss": peak_rss()}))
        return
    if a.lib == "pyarrow":
        import pyarrow.fs as pafs
        import pyarrow.parquet as pq

        t0 = time.perf_counter()
        fs = pafs.S3FileSystem(access_key=ACCESS[0], secret_key=ACCESS[1], region=REGION,
                               endpoint_override=a.endpoint.split("://", 1)[1], scheme="http")
        table = pq.read_table(f"{a.bucket}/{a.path}", columns=a.columns.split(","), filesystem=fs)
        total = table.num_rows * table.num_columns
        print(json.dumps({"seconds": time.perf_counter() - t0, "sum": total, "peak_rss": peak_rss()}))
        return
    if a.lib.startswith("zarr-python"):
        import zarr
        from obstore.store import S3Store

        zarr.config.set({"async.concurrency": CONCURRENCY})
        if a.lib.endswith("+zarrs"):
            import zarrs  # noqa: F401  (registers the pipeline)

            zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})
        t0 = time.perf_counter()
        s3 = S3Store(a.bucket, prefix=a.path, endpoint=a.endpoint, access_key_id=ACCESS[0],
                     secret_access_key=ACCESS[1], region=REGION, virtual_hosted_style_request=False,
                     client_options={"allow_http": True})
        arr = zarr.open_array(zarr.storage.ObjectStore(s3, read_only=True), mode="r")
        read = lambda sel: arr[sel]  # noqa: E731
    elif a.lib == "tensorstore":
        import tensorstore as ts

        os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = ACCESS
        t0 = time.perf_counter()
        arr = ts.open({
            "driver": "zarr3",
            "kvstore": {"driver": "s3", "bucket": a.bucket, "path": a.path.rstrip("/") + "/",
                        "endpoint": a.endpoint, "aws_region": REGION,
                        "aws_credentials": {"type": "environment"}},
            "context": {"s3_request_concurrency": {"limit": CONCURRENCY},
                        "data_copy_concurrency": {"limit": os.cpu_count() or 1}},
        }, read=True).result()
        read = lambda sel: arr[sel].read().result()  # noqa: E731
    else:
        raise SystemExit(f"unknown library {a.lib}")
    total = 0
    if a.op == "whole":
        total = int(np.asarray(read(...)).sum(dtype=np.uint64))
    elif a.op == "box":
        (z, y, x), (dz, dy, dx) = (list(map(int, s.split(","))) for s in a.box.split(":"))
        total = int(np.asarray(read((slice(z, z + dz), slice(y, y + dy), slice(x, x + dx)))).sum(dtype=np.uint64))
    elif a.op == "voxels":
        for z, y, x in coords:
            total += int(read((int(z), int(y), int(x))))
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "sum": total, "peak_rss": peak_rss()}))


def peak_rss() -> int:
    """VmHWM of this process in bytes (reset by exec, unlike getrusage's ru_maxrss)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------


def run_child(argv: list[str], env: dict, timeout: float) -> tuple[dict | None, str]:
    """(the child's JSON line, or None when it failed; its stderr). A child still running
    after `timeout` seconds is stopped and reported as {"timeout": seconds}."""
    try:
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"timeout": timeout, "seconds": timeout, "sum": None, "peak_rss": 0}, ""
    line = next((l for l in reversed(proc.stdout.splitlines()) if l.startswith("{")), None)
    if proc.returncode != 0 or line is None:
        return None, (proc.stderr or proc.stdout)[-2000:]
    return json.loads(line), proc.stderr


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--latency", type=float, default=0.02)
    p.add_argument("--voxels", type=int, default=1000)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--nwb-objects", type=int, default=10_000, help="extra TimeSeries of the NWB file")
    p.add_argument("--table-rows", type=int, default=10_000_000, help="rows of the skeleton table")
    p.add_argument("--columns", default="x,y,z", help="the columns the parquet row reads")
    p.add_argument("--timeout", type=float, default=600,
                   help="stop a library's run after this many seconds (its time is then a lower bound)")
    p.add_argument("--rows", default=",".join(ROWS))
    p.add_argument("--libs", default=",".join(LIBS))
    p.add_argument("--binary", type=Path, default=REPO / "target" / "release" / "examples" / "remote_read")
    p.add_argument("--json", type=Path)
    a = p.parse_args()
    rows = [r for r in a.rows.split(",") if r]
    libs = [l for l in a.libs.split(",") if l]
    if ("neurochunk" in libs or {"nwb", "parquet"} & set(rows)) and not a.binary.is_file():
        raise SystemExit(f"{a.binary} not found: cargo build --release -p neurochunk-bench --example remote_read")

    from faultproxy import FaultProxy
    from remote_servers import S3Endpoint, start_moto

    work = Path(tempfile.mkdtemp(prefix="neurochunk-remote-bench-"))
    moto = start_moto(work)
    proxy = None
    try:
        s3 = S3Endpoint("moto", moto.url, *ACCESS)
        bucket = s3.create_bucket("bench")
        n = a.size
        t = time.perf_counter()
        data = volume(n)
        coords = voxel_coords(n, a.voxels)
        expected = expected_sums(data, coords)
        np.savetxt(work / "coords.txt", coords, fmt="%d")
        import zarr
        from zarr.codecs import ZstdCodec

        layouts = {"chunked.zarr": {"chunks": (64,) * 3},
                   "sharded.zarr": {"shards": (256,) * 3 if n >= 256 else (n,) * 3, "chunks": (32,) * 3}}
        for name, kw in layouts.items():
            arr = zarr.create_array(str(work / name), shape=data.shape, dtype=data.dtype,
                                    compressors=ZstdCodec(level=1), **kw)
            arr[...] = data
            s3.upload_dir(work / name, bucket, name)
        stored = {name: sum(f.stat().st_size for f in (work / name).rglob("*") if f.is_file()) for name in layouts}
        print(f"data: {n}^3 uint16 ({human(data.nbytes)}), chunked {human(stored['chunked.zarr'])} stored, "
              f"sharded {human(stored['sharded.zarr'])}; set up in {time.perf_counter() - t:.0f} s", flush=True)
        del data
        if "nwb" in rows:
            t = time.perf_counter()
            subprocess.run([str(a.binary), "make-nwb", str(a.nwb_objects), str(work / "demo.nwb.zarr")], check=True)
            s3.upload_dir(work / "demo.nwb.zarr", bucket, "demo.nwb.zarr")
            files = sum(1 for f in (work / "demo.nwb.zarr").rglob("*") if f.is_file())
            print(f"nwb: {a.nwb_objects} extra TimeSeries, {files} files; set up in {time.perf_counter() - t:.0f} s",
                  flush=True)
        if "parquet" in rows:
            t = time.perf_counter()
            table = work / "skeletons.parquet"
            subprocess.run([str(a.binary), "make-table", str(a.table_rows), str(table)], check=True)
            s3.client().upload_file(str(table), bucket, "skeletons.parquet")
            import pyarrow.parquet as pq

            expected["parquet"] = pq.ParquetFile(table).metadata.num_rows * len(a.columns.split(","))
            print(f"table: {a.table_rows} rows, {human(table.stat().st_size)}; set up in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
            table.unlink()

        proxy = FaultProxy(moto.url).start()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "NEUROCHUNK_"))}
        env.update({"AWS_ACCESS_KEY_ID": ACCESS[0], "AWS_SECRET_ACCESS_KEY": ACCESS[1], "AWS_REGION": REGION,
                    "AWS_ENDPOINT_URL": proxy.url, "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull})
        (z, y, x), (dz, dy, dx) = column_box(n)
        ops = {
            "whole-chunked": ("chunked.zarr", ["whole"]),
            "whole-sharded": ("sharded.zarr", ["whole"]),
            "column": ("sharded.zarr", ["box", f"{z},{y},{x}", f"{dz},{dy},{dx}"]),
            "voxels": ("chunked.zarr", ["voxels", str(work / "coords.txt")]),
            "nwb": ("demo.nwb.zarr", ["nwb"]),
            "parquet": ("skeletons.parquet", ["parquet", a.columns]),
        }
        results = []
        for row in rows:
            path, op = ops[row]
            for lib in (lib for lib in libs if lib in ROW_LIBS.get(row, ARRAY_LIBS)):
                best = None
                for _ in range(a.reps):
                    proxy.reset()
                    proxy.delay(a.latency)
                    if lib == "neurochunk":
                        argv = [str(a.binary), f"s3://{bucket}/{path}", *op]
                    else:
                        child_op = ["--op", op[0]]
                        if op[0] == "box":
                            child_op += ["--box", f"{op[1]}:{op[2]}"]
                        if op[0] == "voxels":
                            child_op += ["--coords", op[1]]
                        if op[0] == "parquet":
                            child_op += ["--columns", op[1]]
                        argv = [sys.executable, __file__, "--child", "--lib", lib, "--endpoint", proxy.url,
                                "--bucket", bucket, "--path", path, *child_op]
                    t0 = time.perf_counter()
                    out, err = run_child(argv, env, a.timeout)
                    wall = time.perf_counter() - t0
                    if out is None:
                        best = {"row": row, "lib": lib, "error": err.strip().splitlines()[-1] if err.strip() else "failed"}
                        break
                    if "timeout" in out:
                        out.update({"row": row, "lib": lib, "wall": wall, "requests": proxy.count(),
                                    "bytes": proxy.bytes_sent()})
                        best = out
                        break
                    # Typed objects: each library counts its own way; both must see the file's.
                    wrong = out["sum"] <= a.nwb_objects if row == "nwb" else out["sum"] != expected[row]
                    if wrong:
                        best = {"row": row, "lib": lib, "error": f"checksum {out['sum']} != {expected[row]}"}
                        break
                    out.update({"row": row, "lib": lib, "wall": wall, "requests": proxy.count(),
                                "bytes": proxy.bytes_sent()})
                    if best is None or out["seconds"] < best["seconds"]:
                        best = out
                results.append(best)
                over = "> " if "timeout" in best else ""
                shown = best.get("error") or (f"{over}{best['seconds']:.2f} s, {best['requests']} requests, "
                                              f"{human(best['bytes'])} received, peak RSS {human(best['peak_rss'])}")
                print(f"  {row:<14} {lib:<18} {shown}", flush=True)
        print()
        print(f"{'row':<14} {'library':<18} {'time':>8} {'ratio':>7} {'requests':>9} {'received':>10} {'peak RSS':>10}")
        for row in rows:
            mine = next((r for r in results if r["row"] == row and r["lib"] == "neurochunk" and "error" not in r), None)
            for r in (r for r in results if r["row"] == row):
                if "error" in r:
                    print(f"{row:<14} {r['lib']:<18} {'error: ' + r['error'][:60]}")
                    continue
                over = ">" if "timeout" in r else ""
                ratio = f"{over}{r['seconds'] / mine['seconds']:.2f}x" if mine else "-"
                print(f"{row:<14} {r['lib']:<18} {over:>1}{r['seconds']:>7.2f}s {ratio:>7} {r['requests']:>9} "
                      f"{human(r['bytes']):>10} {human(r['peak_rss']):>10}")
        print(f"\nratio: the library's time / neurochunk's (higher: neurochunk faster); latency {a.latency * 1000:.0f} ms "
              f"per request (fault proxy), moto_server on 127.0.0.1, {os.cpu_count()} cores")
        if a.json:
            a.json.write_text(json.dumps({"size": n, "latency": a.latency, "results": results}, indent=2))
    finally:
        if proxy is not None:
            proxy.stop()
        moto.stop()
        import shutil

        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
