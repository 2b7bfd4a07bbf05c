"""Smoke test of an installed neurochunk wheel (run in a fresh virtual environment with no
Rust toolchain on PATH): a sharded Zarr v3 array, an N5 dataset, an NWB file and a Parquet
table are written and read back."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

import neurochunk as nc


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="neurochunk-wheel-"))
    data = np.arange(64 * 64 * 8, dtype="uint16").reshape(8, 64, 64)

    v3 = nc.create_array(root / "v3", shape=data.shape, dtype="uint16", chunks=(4, 16, 16), shards=(8, 32, 32),
                         compressors="zstd:3", zarr_format=3)
    v3[...] = data
    assert (nc.open(root / "v3")[2:6, 10:50, 3] == data[2:6, 10:50, 3]).all()

    n5 = nc.create_array(root / "c.n5", shape=data.shape, dtype="uint16", chunks=(4, 16, 16), zarr_format="n5")
    n5[...] = data
    assert (nc.open(root / "c.n5")[...] == data).all()

    nc.nwb.demo(root / "demo.nwb.zarr", convention="v3")
    nwb = nc.nwb.open(root / "demo.nwb.zarr")
    assert any(o.neurodata_type == "ElectricalSeries" for o in nwb.objects())

    swc = root / "1.swc"
    swc.write_text("1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n3 3 2 0 0 1 2\n")
    out = nc.table.from_swc(swc, root / "n.skeletons.parquet", context="urn:uuid:wheel-smoke")
    assert out["rows"] == 3, out
    assert nc.table.validate(root / "n.skeletons.parquet").valid
    print(f"neurochunk {nc.__version__} on Python {sys.version.split()[0]}: Zarr v3, N5, NWB, Parquet ok")


if __name__ == "__main__":
    main()
