"""Benchmark (not a test): an HDF5 NWB file read where it lives, neurochunk against pynwb/h5py.

One run, side by side, as ratios, with requests, bytes and peak memory of every process:

    .peers/py312/bin/python crates/bench/py/nwb_hdf5.py                  # 10,000 objects, 1 GB
    .peers/py312/bin/python crates/bench/py/nwb_hdf5.py --objects 2000 --seconds 10 --reps 1

The file is written once with pynwb (kept in --workdir between runs): an ElectricalSeries of
384 int16 channels at 30 kHz (SECONDS of it; 45 s is 1.04 GB of samples), chunks of
(30000, 64), gzip level 4 with shuffle, and OBJECTS small TimeSeries in a processing module (so
that the file holds OBJECTS typed objects, as large sessions do). A Range-capable HTTP server
started here on 127.0.0.1 serves it, sleeping LATENCY before each answer, and counts requests
and bytes. Rows:

    open+list    open the file and list its typed objects: `neurochunk nwb inspect URL --json`
                 (a whole process) and `nc.nwb.open(URL).objects()`; pynwb's `NWBHDF5IO.read()`
                 over remfile and over fsspec, and over lindi's `LindiH5pyFile.from_hdf5_file`
    one chunk    a slice inside one row of chunks of the series (the read alone: both sides
                 have opened the file and the dataset before the timer starts)
    one channel  one column of the series (one column of chunks, every row of them)
    whole        the whole series over HTTP (`neurochunk nwb get … -o out.npy` includes the
                 open and writing the file)
    local        the whole series from the local file, in one process, the read alone (best of
                 REPS), beside the floor: inflating the stored chunks with zlib on every core

Each row runs in a process of its own. `op s` is the operation alone, timed inside the process
after the imports (so interpreter start-up and `import pynwb` are not counted against a peer);
the ratio is peer op / neurochunk op (above 1: neurochunk faster). `wall s` is the whole process.
The Python peers come from this interpreter's environment (`.peers/py312`: pynwb, h5py,
remfile, fsspec); lindi needs zarr-python 2 and runs in `.peers/py311`.
"""

from __future__ import annotations

import argparse
import http.server
import os
import resource
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DATASET = "acquisition/es/data"
RATE, CHANNELS, CHUNK = 30000, 384, (30000, 64)

GENERATE = r"""
import sys, time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from hdmf.backends.hdf5 import H5DataIO
from pynwb import NWBHDF5IO, NWBFile, TimeSeries
from pynwb.ecephys import ElectricalSeries

src, seconds, objects = Path(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
RATE, CHANNELS, CHUNK = 30000, 384, (30000, 64)
t0 = time.time()
f = NWBFile("bench", "bench-read", datetime(2024, 1, 1, tzinfo=timezone.utc))
device = f.create_device("probe")
group = f.create_electrode_group("shank", "a shank", "brain", device)
for _ in range(CHANNELS):
    f.add_electrode(group=group, location="brain")
region = f.create_electrode_table_region(list(range(CHANNELS)), "all")
samples = int(seconds * RATE)


from hdmf.data_utils import GenericDataChunkIterator


class Samples(GenericDataChunkIterator):
    def _get_data(self, selection):
        rows = selection[0]
        t = np.arange(rows.start, rows.stop)[:, None]
        noise = np.random.default_rng(rows.start).integers(-50, 50, (len(t), CHANNELS))
        return ((np.sin(t / 50.0 + np.arange(CHANNELS)) * 2000) + noise).astype(np.int16)[:, selection[1]]

    def _get_maxshape(self):
        return (samples, CHANNELS)

    def _get_dtype(self):
        return np.dtype("int16")


data = Samples(buffer_shape=(min(CHUNK[0] * 4, samples), CHANNELS), chunk_shape=CHUNK, display_progress=False)
f.add_acquisition(ElectricalSeries(
    name="es", data=H5DataIO(data, chunks=CHUNK, compression="gzip", compression_opts=4, shuffle=True),
    electrodes=region, rate=float(RATE)))
module = f.create_processing_module("many", "many small objects")
for i in range(objects):
    module.add(TimeSeries(name=f"ts_{i:05d}", data=np.arange(4.0) + i, unit="a.u.", rate=1.0))
with NWBHDF5IO(str(src), "w") as io:
    io.write(f)
print(f"wrote {src.name}: {src.stat().st_size / 1e6:.0f} MB in {time.time() - t0:.0f} s", flush=True)
"""


class Server:
    """A Range-capable HTTP server on 127.0.0.1 that waits `latency` before every answer."""

    def __init__(self, root: Path, latency: float) -> None:
        self.requests = 0
        self.bytes = 0
        self.arrivals: list[float] = []
        self.latency = latency
        self.lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _serve(self, body: bool) -> None:
                with outer.lock:
                    outer.arrivals.append(time.perf_counter())
                time.sleep(latency)
                path = root / self.path.lstrip("/").split("?")[0]
                if not path.is_file():
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                size = path.stat().st_size
                start, end = 0, size - 1
                ranged = self.headers.get("Range", "")
                if ranged.startswith("bytes="):
                    a, _, b = ranged[6:].partition("-")
                    if a == "":
                        start = max(0, size - int(b))
                    else:
                        start, end = int(a), min(size - 1, int(b) if b else size - 1)
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                else:
                    self.send_response(200)
                length = end - start + 1
                self.send_header("Content-Length", str(length))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                with outer.lock:
                    outer.requests += 1
                    outer.bytes += length if body else 0
                if body:
                    # In pieces: the server's memory stays small (children inherit its peak RSS).
                    with open(path, "rb") as f:
                        f.seek(start)
                        left = length
                        try:
                            while left > 0:
                                piece = f.read(min(left, 1 << 20))
                                if not piece:
                                    break
                                self.wfile.write(piece)
                                left -= len(piece)
                        except (BrokenPipeError, ConnectionResetError):
                            pass  # a client that stopped reading (fsspec drops read-ahead)

            def do_GET(self) -> None:
                self._serve(True)

            def do_HEAD(self) -> None:
                self._serve(False)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def reset(self) -> None:
        with self.lock:
            self.requests = self.bytes = 0
            self.arrivals.clear()

    def waves(self) -> int:
        """How many times the client waited for answers before asking again: requests that
        arrive within half a latency of the previous one belong to its wave. For a reader that
        reads only metadata this is bounded below by the depth of the file's structures, each
        level naming the addresses of the next."""
        with self.lock:
            times = sorted(self.arrivals)
        return sum(1 for a, b in zip([None, *times], times) if a is None or b - a > self.latency / 2)


class Measured:
    def __init__(self, wall: float, op: float, rss_mib: float, requests: int, sent: int, waves: int) -> None:
        self.wall, self.op, self.rss_mib, self.requests, self.sent = wall, op, rss_mib, requests, sent
        self.waves = waves


def measure(server: Server, argv: list[str]) -> Measured:
    """One process: wall and operation seconds, peak RSS (MiB), requests and bytes served."""
    server.reset()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    with ThreadPoolExecutor(2) as pool:
        out_f = pool.submit(proc.stdout.read)
        err_f = pool.submit(proc.stderr.read)
        _, status, usage = os.wait4(proc.pid, 0)
        out, err = out_f.result().decode(), err_f.result().decode()
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{err[-3000:]}")
    op = wall
    for line in out.splitlines():
        if line.startswith("OP "):
            op = float(line.split()[1])
    return Measured(wall, op, usage.ru_maxrss / 1024, server.requests, server.bytes, server.waves())


def timed(imports: str, body: str) -> str:
    """Python source timing `body` alone, after `imports`; it prints `OP seconds`."""
    return f"{imports}\nimport time\n_t0 = time.perf_counter()\n{body}\nprint('OP', time.perf_counter() - _t0)"


H5_OPENERS = {
    "remfile": ("import h5py, remfile", "f = h5py.File(remfile.File(URL), 'r')"),
    "fsspec": ("import h5py, fsspec", "f = h5py.File(fsspec.open(URL, 'rb', block_size=2**20).open(), 'r')"),
}
PYNWB_LIST = (
    "io = NWBHDF5IO(file=f, mode='r', load_namespaces=True)\nnwb = io.read()\n"
    "n = len(list(nwb.objects))\nassert n > OBJECTS, n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=45.0, help="seconds of 384-channel data (45: 1.04 GB)")
    parser.add_argument("--objects", type=int, default=10000, help="small TimeSeries in the file")
    parser.add_argument("--latency-ms", type=float, default=20.0, help="wait before each HTTP answer")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the local in-process read (best)")
    parser.add_argument("--workdir", type=Path, default=ROOT / "target" / "neurochunk-bench" / "nwb-hdf5")
    parser.add_argument("--binary", default=os.environ.get("NEUROCHUNK_BIN", str(ROOT / "target/release/neurochunk")))
    parser.add_argument("--no-lindi", action="store_true", help="skip lindi (slow on many objects)")
    args = parser.parse_args()

    workdir: Path = args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / f"session-{args.seconds:g}s-{args.objects}.nwb"
    if not src.exists():
        # Written by a process of its own, into a name published only when complete.
        part = src.with_suffix(".part")
        subprocess.run([sys.executable, "-c", GENERATE, str(part), str(args.seconds), str(args.objects)], check=True)
        part.rename(src)
    py = sys.executable
    py311 = ROOT / ".peers" / "py311" / "bin" / "python"
    server = Server(workdir, args.latency_ms / 1000)
    url = f"{server.base}/{src.name}"
    out = workdir / "out.npy"
    lo, hi = 35000, 35100  # inside chunk row 1

    def subst(code: str) -> str:
        return code.replace("URL", repr(url)).replace("OBJECTS", str(args.objects))

    # The read rows time the read alone: each side has opened the file and the dataset first
    # (the open is the open+list row's).
    restart = "_t0 = time.perf_counter()"

    def h5(body: str) -> dict[str, list[str]]:
        return {
            f"h5py+{name}": [py, "-c", subst(timed(imp, f"{opener}\nd = f['{DATASET}']\n{restart}\n{body}"))]
            for name, (imp, opener) in H5_OPENERS.items()
        }

    def ours(body: str) -> list[str]:
        return [py, "-c", subst(timed("import neurochunk as nc", f"d = nc.nwb.open(URL)['/{DATASET}']\n{restart}\n{body}"))]

    listing = {
        f"pynwb+{name}": [py, "-c", subst(timed(f"{imp}\nfrom pynwb import NWBHDF5IO", f"{opener}\n{PYNWB_LIST}"))]
        for name, (imp, opener) in H5_OPENERS.items()
    }
    if py311.is_file() and not args.no_lindi:
        listing["pynwb+lindi"] = [
            str(py311), "-c",
            subst(timed("import lindi\nfrom pynwb import NWBHDF5IO", f"f = lindi.LindiH5pyFile.from_hdf5_file(URL)\n{PYNWB_LIST}")),
        ]
    rows: list[tuple[str, dict[str, list[str]], dict[str, list[str]]]] = [
        ("open+list", {
            "neurochunk cli": [args.binary, "nwb", "inspect", url, "--json"],
            "neurochunk py": [py, "-c", subst(timed("import neurochunk as nc", "n = len(nc.nwb.open(URL).objects())\nassert n > OBJECTS, n"))],
        }, listing),
        ("one chunk", {"neurochunk py": ours(f"x = d[{lo}:{hi}, :]")}, h5(f"x = d[{lo}:{hi}, :]")),
        ("one channel", {"neurochunk py": ours("x = d[:, 5]")}, h5("x = d[:, 5]")),
        ("whole", {
            "neurochunk py": ours("x = d[...]"),
            "neurochunk cli": [args.binary, "nwb", "get", url, f"/{DATASET}", "-o", str(out)],
        }, h5("x = d[()]")),
    ]

    size = src.stat().st_size
    print(f"file {size / 1e6:.0f} MB ({args.seconds:g} s x {CHANNELS} int16 channels = "
          f"{args.seconds * RATE * CHANNELS * 2 / 1e9:.2f} GB of samples), {args.objects} small TimeSeries, "
          f"{args.latency_ms:g} ms per request, {os.cpu_count()} cores")
    print(f"(peak MiB includes this process's {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, "
          "inherited by each child before it runs)")
    header = f"{'row':12} {'tool':15} {'op s':>8} {'wall s':>8} {'ratio':>7} {'requests':>9} {'waves':>6} {'MB read':>9} {'peak MiB':>9}"
    print(header)
    summary: dict[str, tuple[Measured, str, Measured]] = {}
    for name, ourside, peers in rows:
        best_ours: Measured | None = None
        for tool, argv in ourside.items():
            m = measure(server, argv)
            best_ours = m if best_ours is None or m.op < best_ours.op else best_ours
            print(f"{name:12} {tool:15} {m.op:8.2f} {m.wall:8.2f} {'':>7} {m.requests:9d} {m.waves:6d} {m.sent / 1e6:9.2f} {m.rss_mib:9.0f}", flush=True)
        assert best_ours is not None
        best_peer: tuple[str, Measured] | None = None
        for tool, argv in peers.items():
            m = measure(server, argv)
            if best_peer is None or m.op < best_peer[1].op:
                best_peer = (tool, m)
            print(f"{'':12} {tool:15} {m.op:8.2f} {m.wall:8.2f} {m.op / best_ours.op:7.2f} {m.requests:9d} "
                  f"{m.waves:6d} {m.sent / 1e6:9.2f} {m.rss_mib:9.0f}", flush=True)
        if best_peer is not None:
            summary[name] = (best_ours, best_peer[0], best_peer[1])

    # The local whole read, in one process each, the read alone (after opening), best of REPS.
    local = {
        "neurochunk py": timed("import neurochunk as nc", f"d = nc.nwb.open({str(src)!r})['/{DATASET}']\n_t0 = time.perf_counter()\nx = d[...]"),
        "h5py": timed("import h5py", f"d = h5py.File({str(src)!r}, 'r')['{DATASET}']\n_t0 = time.perf_counter()\nx = d[()]"),
    }
    best_local: dict[str, Measured] = {}
    for tool, code in local.items():
        runs = [measure(server, [py, "-c", code]) for _ in range(args.reps)]
        best_local[tool] = min(runs, key=lambda m: m.op)
    for tool, m in best_local.items():
        ratio = best_local["h5py"].op / m.op
        print(f"{'local read':12} {tool:15} {m.op:8.2f} {m.wall:8.2f} {ratio:7.2f} {'':>9} {'':>6} {'':>9} {m.rss_mib:9.0f}")

    # The floor of the local whole read: inflating the stored chunks (zlib, the same library
    # h5py uses) on every core; shuffle and the copy into the output come on top.
    import h5py

    with h5py.File(src, "r") as f:
        ds = f[DATASET]
        stored = [ds.id.read_direct_chunk(ds.id.get_chunk_info(i).chunk_offset)[1] for i in range(ds.id.get_num_chunks())]
    t0 = time.perf_counter()
    for c in stored:
        zlib.decompress(c)
    one_core = time.perf_counter() - t0
    cores = os.cpu_count() or 1
    floor = one_core / cores
    h5py_read = best_local["h5py"].op
    print(f"floor of the local read: zlib inflate of the {sum(map(len, stored)) / 1e6:.0f} MB stored, {one_core:.2f} s "
          f"on one core, {floor:.2f} s on {cores}: no reader can beat h5py by more than {h5py_read / floor:.2f}x here; "
          f"neurochunk is at {best_local['neurochunk py'].op / floor:.2f}x the floor")

    print("\nsummary (goal: open+list >= 5x the best peer with <= 1/5 of its requests; local whole read >= 2x h5py)")
    for name, (ours_m, peer, peer_m) in summary.items():
        print(f"  {name:12} best peer {peer:15} {peer_m.op / ours_m.op:6.2f}x the time, "
              f"{peer_m.requests / max(ours_m.requests, 1):6.2f}x the requests, "
              f"{peer_m.sent / max(ours_m.sent, 1):6.2f}x the bytes, "
              f"peak {ours_m.rss_mib:.0f} MiB vs {peer_m.rss_mib:.0f} MiB")
    if "open+list" in summary:
        ours_m = summary["open+list"][0]
        peer_m = summary["open+list"][2]
        print(f"  open+list: neurochunk's {ours_m.requests} requests came in {ours_m.waves} waves, one per level of "
              "the file's structures that names the next (superblock, root group, a group's index, its nodes, the "
              "members' headers): the floor of a reader that reads only metadata; fewer requests than that takes "
              f"reading far more than the metadata ({peer_m.sent / 1e6:.0f} MB for the best peer's "
              f"{peer_m.requests}, against {ours_m.sent / 1e6:.0f} MB)")
    print(f"  {'local read':12} h5py {h5py_read / best_local['neurochunk py'].op:.2f}x the time "
          f"(ceiling on {cores} cores from the inflate floor: {h5py_read / floor:.2f}x)")


if __name__ == "__main__":
    main()
