"""A small program over the public API, checked by `mypy --strict` against the package's
annotations and stubs (scripts/test-python), and run by test_typing_example.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

import neurochunk as nc


def write_and_read(root: Path) -> npt.NDArray[np.uint16]:
    group = nc.create_group(root / "session.zarr", attributes={"subject": "m1"})
    raw = group.create_array(
        "raw",
        shape=(8, 64, 64),
        dtype="uint16",
        chunks=(1, 32, 32),
        shards=(4, 64, 64),
        compressors="zstd:3",
        dimension_names=["t", "y", "x"],
    )
    raw[...] = np.arange(8 * 64 * 64, dtype="uint16").reshape(8, 64, 64)
    raw.attrs["unit"] = "counts"
    opened = nc.open(root / "session.zarr", mode="r")
    assert isinstance(opened, nc.Group)
    node = opened["raw"]
    assert isinstance(node, nc.Array)
    tile: npt.NDArray[np.uint16] = node[2, ::2, 10:20]
    picked = node.oindex[[0, 7], 5, np.arange(64) % 2 == 0]
    assert picked.shape == (2, 32)
    names: list[str] = list(opened)
    assert names == ["raw"]
    try:
        nc.open(root / "missing.zarr")
    except nc.NodeNotFoundError as err:
        print("missing:", err, file=sys.stderr)
    notes: list[str] = nc.convert(root / "session.zarr", root / "session.n5", format="n5")
    print(opened.tree(), notes, node.info, sep="\n")
    return tile


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        write_and_read(Path(tmp))
