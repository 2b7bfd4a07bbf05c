"""Write or read the benchmark volume with numcodecs' serializers through zarr-python 3; print
the timing as one JSON line.

Usage: python codecs_numcodecs.py write|read DIR INPUT SIZE ROW_JSON

The peer side of the `--codecs` rows of the neurochunk benchmark (`src/codec_rows.rs`). INPUT
is the raw little-endian uint16 volume (SIZE^3), ROW_JSON the row: `dtype` (uint16 or
float32), cubic `chunk`, `serializer` (`{"name": "pcodec", "level": L}` or `{"name": "zfpy",
"mode": "reversible" | "accuracy", "tolerance": T}`), `zstd` (a level or null) and the
`tolerance` a read may show.

- write: the volume is loaded in the row's dtype before the timer starts; timed are
  `zarr.create_array(DIR, ...)` (Zarr v3, `numcodecs.zarr3` serializer) and `z[...] = data`.
- read: timed are `zarr.open_array(DIR, mode="r")` and `z[...]`; after the timer (and the peak
  RSS reading) the result is compared with INPUT, exactly or within the tolerance.

The result line starts with `NEUROCHUNK-BENCH-RESULT `; `peak_rss_bytes` is the process's
ru_maxrss (interpreter and imports included). A missing zarr-python 3, numcodecs, pcodec or
zfpy exits with status 3 and a message.
"""

import json
import resource
import sys
import time

import numpy as np

MARKER = "NEUROCHUNK-BENCH-RESULT "
BLOCK = 1 << 20  # elements per slab when loading or checking


def rss_bytes() -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def imports():
    try:
        import numcodecs
        import pcodec  # noqa: F401  (numcodecs' PCodec needs it)
        import zarr
        import zfpy  # noqa: F401  (numcodecs' ZFPY needs it)
        from numcodecs.zarr3 import PCodec, ZFPY
    except ImportError as err:
        print(f"needs zarr-python 3, numcodecs, pcodec and zfpy: {err}", file=sys.stderr)
        sys.exit(3)
    if int(zarr.__version__.split(".")[0]) < 3:
        print(f"needs zarr-python 3, found {zarr.__version__}", file=sys.stderr)
        sys.exit(3)
    return zarr, numcodecs, PCodec, ZFPY


def load(path: str, n: int, dtype: np.dtype) -> np.ndarray:
    """The volume in `dtype`, converted slab by slab (no second full-size copy)."""
    total = n**3
    out = np.empty(total, dtype=dtype)
    with open(path, "rb") as f:
        for start in range(0, total, BLOCK):
            k = min(BLOCK, total - start)
            out[start : start + k] = np.frombuffer(f.read(2 * k), dtype="<u2")
    return out.reshape(n, n, n)


def check(got: np.ndarray, path: str, n: int, tolerance: float) -> None:
    if got.shape != (n, n, n):
        raise SystemExit(f"read shape {got.shape}, expected {(n, n, n)}")
    flat = got.reshape(-1)
    total = n**3
    with open(path, "rb") as f:
        for start in range(0, total, BLOCK):
            k = min(BLOCK, total - start)
            expected = np.frombuffer(f.read(2 * k), dtype="<u2").astype("f8")
            error = np.abs(flat[start : start + k].astype("f8") - expected)
            if not np.all(error <= tolerance):
                i = start + int(np.argmax(~(error <= tolerance)))
                raise SystemExit(f"WRONG DATA: element {i} is {flat[i]}, expected {expected[i - start]} (tolerance {tolerance})")


def main() -> None:
    if len(sys.argv) != 6 or sys.argv[1] not in ("write", "read"):
        sys.exit(__doc__)
    op, directory, input_path, size, row_text = sys.argv[1:]
    n = int(size)
    row = json.loads(row_text)
    zarr, numcodecs, PCodec, ZFPY = imports()
    dtype = np.dtype(row["dtype"])
    ser = row["serializer"]
    if ser["name"] == "pcodec":
        serializer = PCodec(level=ser["level"])
    elif ser["name"] == "zfpy":
        # numcodecs' reversible form: fixed accuracy with every parameter -1.
        tolerance = -1 if ser["mode"] == "reversible" else ser["tolerance"]
        serializer = ZFPY(mode=4, tolerance=tolerance)
    else:
        serializer = "auto"
    compressors = None
    if row["zstd"] is not None:
        from zarr.codecs import ZstdCodec

        compressors = [ZstdCodec(level=row["zstd"], checksum=False)]

    if op == "write":
        data = load(input_path, n, dtype)
        before = rss_bytes()
        t0 = time.perf_counter()
        z = zarr.create_array(
            store=directory, shape=data.shape, chunks=(row["chunk"],) * 3, dtype=dtype,
            serializer=serializer, compressors=compressors, filters=None, fill_value=0,
            zarr_format=3,
        )
        z[...] = data
        seconds = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    else:
        before = rss_bytes()
        t0 = time.perf_counter()
        got = zarr.open_array(directory, mode="r")[...]
        seconds = time.perf_counter() - t0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        if got.dtype != dtype:
            raise SystemExit(f"read dtype {got.dtype}, expected {dtype}")
        check(got, input_path, n, row["tolerance"])

    print(MARKER + json.dumps({
        "library": "numcodecs",
        "row": row["id"],
        "op": op,
        "seconds": seconds,
        "decoded_bytes": n**3 * dtype.itemsize,
        "peak_rss_bytes": peak,
        "rss_before_bytes": before,
        "versions": {
            "python": sys.version.split()[0],
            "zarr": zarr.__version__,
            "numcodecs": numcodecs.__version__,
            "pcodec": getattr(__import__("pcodec"), "__version__", None),
            "zfpy": getattr(__import__("zfpy"), "__version__", None),
            "numpy": np.__version__,
            "zarr_threads": zarr.config.get("threading.max_workers"),
            "zarr_concurrency": zarr.config.get("async.concurrency"),
        },
    }), flush=True)


if __name__ == "__main__":
    main()
