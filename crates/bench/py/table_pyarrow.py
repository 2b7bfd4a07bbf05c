"""Read the benchmark skeleton table with pyarrow; print rows/s and peak RSS as JSON.

Usage: python table_pyarrow.py DIR   (reads DIR/bench.skeletons.parquet, the file
written by the Rust side of the table benchmark)
"""

import json
import resource
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq


def main() -> None:
    path = Path(sys.argv[1]) / "bench.skeletons.parquet"
    t0 = time.perf_counter()
    table = pq.read_table(path)
    secs = time.perf_counter() - t0
    rows = table.num_rows
    # Touch the id columns the validator needs, like a tree check would.
    ids = table.column("sample_id").combine_chunks()
    parents = table.column("parent_id").combine_chunks()
    assert len(ids) == len(parents) == rows
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({
        "row": f"pyarrow read_table ({rows} samples)",
        "rows": rows,
        "seconds": secs,
        "rows_per_s": rows / secs if secs > 0 else 0.0,
        "peak_rss_bytes": peak,
        "pyarrow": __import__("pyarrow").__version__,
    }))


if __name__ == "__main__":
    main()
