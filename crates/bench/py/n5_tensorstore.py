"""tensorstore side of the N5 benchmark (`cargo bench -p neurochunk-bench --bench n5`).

Writes or reads an N x N x N uint16 N5 dataset with 64^3 blocks through tensorstore's `n5`
driver and prints one JSON line: the best time of `--reps` repetitions of the operation alone
(opening included; loading the input volume and process start-up excluded) and the peak RSS.

Usage: python n5_tensorstore.py --op write|read --compression gzip|raw --dir DIR
                                 --volume VOLUME.raw --size N [--reps R] [--block B] [--level L]

`--volume` is the raw little-endian uint16 volume (C order) the Rust side wrote; every read is
compared with it.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from pathlib import Path

import numpy as np
import tensorstore as ts


def spec(path: Path) -> dict:
    return {"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}


def compression(kind: str, level: int) -> dict:
    if kind == "gzip":
        return {"type": "gzip", "level": level, "useZlib": False}
    return {"type": "raw"}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--op", choices=["write", "read"], required=True)
    p.add_argument("--compression", choices=["gzip", "raw"], required=True)
    p.add_argument("--dir", type=Path, required=True)
    p.add_argument("--volume", type=Path, required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--level", type=int, default=1)
    a = p.parse_args()
    n = a.size
    volume = np.fromfile(a.volume, dtype="<u2").reshape(n, n, n)
    times = []
    for _ in range(a.reps):
        if a.op == "write":
            shutil.rmtree(a.dir, ignore_errors=True)
            t0 = time.perf_counter()
            store = ts.open(
                {
                    **spec(a.dir),
                    "metadata": {
                        "dimensions": [n, n, n],
                        "blockSize": [a.block] * 3,
                        "dataType": "uint16",
                        "compression": compression(a.compression, a.level),
                    },
                },
                create=True,
            ).result()
            store.write(volume).result()
            times.append(time.perf_counter() - t0)
        else:
            t0 = time.perf_counter()
            data = ts.open(spec(a.dir), open=True).result().read().result()
            times.append(time.perf_counter() - t0)
            if not np.array_equal(data, volume):
                raise SystemExit("tensorstore read back different data")
            del data
    stored = sum(f.stat().st_size for f in a.dir.rglob("*") if f.is_file())
    print(
        json.dumps(
            {
                "library": "tensorstore",
                "op": a.op,
                "compression": a.compression,
                "seconds": min(times),
                "all_seconds": times,
                "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "stored_bytes": stored,
            }
        )
    )


if __name__ == "__main__":
    main()
