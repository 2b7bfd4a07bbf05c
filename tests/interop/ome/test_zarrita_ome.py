"""zarrita.js (JavaScript, .peers/node from scripts/setup-peers) reads our sharded OME-Zarr 0.5:
the group's `ome` attributes and every level's shape, inner chunks and values (NumPy reference)."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

import pyramid_ref as ref
from ncli import REPO_ROOT
from omeio import build_pyramid

NODE_MODULES = REPO_ROOT / ".peers" / "node" / "node_modules"
SCRIPT = REPO_ROOT / "tests" / "interop" / "ome" / "zarrita_read.mjs"


def zarrita_read(store, levels: list[str]) -> dict:
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "zarrita" / "package.json").is_file():
        pytest.fail("zarrita.js is not installed: run `scripts/setup-peers node` (needs node and npm)")
    proc = subprocess.run(
        [node, str(SCRIPT), str(NODE_MODULES), str(store), *levels], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"zarrita failed:\n{proc.stderr}"
    return json.loads(proc.stdout)


@pytest.mark.parametrize("dtype", ["uint16", "float32", "int64"])
def test_zarrita_reads_our_sharded_pyramid(nc, tmp_path, dtype):
    rng = np.random.default_rng(7)
    data = (rng.standard_normal((23, 40, 33)) * 900).astype(dtype) if dtype == "float32" else rng.integers(
        -5 if dtype == "int64" else 0, 3000, (23, 40, 33)).astype(dtype)
    expected = ref.pyramid(data, 3, "mean", [2, 2, 2], scale=[1.0, 0.5, 0.5])
    dst = tmp_path / "ours.ome.zarr"
    build_pyramid(
        nc, data, dst, "zarr3", levels=3, method="mean", factors=[2, 2, 2], chunks=[8, 8, 8], shards=[16, 16, 16],
        scale=[1.0, 0.5, 0.5],
    )
    got = zarrita_read(dst, ["0", "1", "2"])
    ome = got["attributes"]["ome"]
    assert ome["version"] == "0.5"
    datasets = ome["multiscales"][0]["datasets"]
    assert [d["path"] for d in datasets] == ["0", "1", "2"]
    for k, want in enumerate(expected):
        level = got["levels"][str(k)]
        assert level["shape"] == list(want.data.shape), f"level {k}"
        # Inner chunks of 8, clipped to a level smaller than that (docs/ome.md).
        assert level["chunks"] == [min(8, n) for n in want.data.shape], f"level {k}: inner chunks"
        assert level["dtype"] == dtype
        values = np.array([int(v) for v in level["data"]] if dtype == "int64" else level["data"], dtype=dtype)
        np.testing.assert_array_equal(values.reshape(want.data.shape), want.data, err_msg=f"level {k}")
        assert datasets[k]["coordinateTransformations"][0]["scale"] == pytest.approx(want.scale)
