"""Corrupt N5 input gives a one-line error that names the dataset and the block, a non-zero
exit status and never a panic."""

from __future__ import annotations

import json

import numpy as np
import pytest

import n5io
from ncli import truncate_file

SHAPE = (6, 4)
CHUNKS = (4, 2)


def _dataset(tmp_path):
    path = tmp_path / "c.n5" / "vol"
    n5io.ts_write(path, np.arange(24, dtype="uint16").reshape(SHAPE), {"type": "raw"}, CHUNKS)
    return path


def _fails(nc, path, *needles):
    proc = nc.run("get", path, "-o", nc.scratch / "x.npy", check=False)
    assert proc.returncode != 0
    message = proc.stderr.strip()
    assert message.startswith("neurochunk: error:") and "\n" not in message, message
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"


def _header(sizes, mode=0):
    out = mode.to_bytes(2, "big") + len(sizes).to_bytes(2, "big")
    return out + b"".join(s.to_bytes(4, "big") for s in sizes)


@pytest.mark.parametrize(
    "case",
    ["truncated-header", "block-larger-than-blockSize", "short-payload", "interior-block-truncated", "wrong-rank"],
)
def test_corrupt_blocks(nc, tmp_path, case):
    path = _dataset(tmp_path)
    block = path / "1" / "0"
    if case == "truncated-header":
        truncate_file(block, 7)
        needles = ["truncated"]
    elif case == "block-larger-than-blockSize":
        block.write_bytes(_header([5, 2]) + bytes(20))
        needles = ["disagrees with blockSize [4, 2]"]
    elif case == "short-payload":
        block.write_bytes(_header([2, 2]) + bytes(6))
        needles = ["payload holds 6 bytes", "needs 8"]
    elif case == "interior-block-truncated":
        block = path / "0" / "0"
        block.write_bytes(_header([3, 2]) + bytes(12))
        needles = ["disagrees with blockSize"]
    else:
        block.write_bytes(_header([2]) + bytes(4))
        needles = ["1 dimensions, the dataset has 2"]
    key = "/".join(block.relative_to(path).parts)
    _fails(nc, path, str(path), f"chunk '{key}'", *needles)


@pytest.mark.parametrize(
    "edit,needle",
    [
        ({"dataType": "complex64"}, "unknown dataType 'complex64'"),
        ({"compression": {"type": "zfp"}}, "unknown compression type 'zfp'"),
        ({"blockSize": [4]}, "'blockSize' has 1 entries"),
        ({"dimensions": "big"}, "'dimensions' must be a list"),
    ],
)
def test_bad_attributes(nc, tmp_path, edit, needle):
    path = _dataset(tmp_path)
    doc = json.loads((path / "attributes.json").read_text())
    doc.update(edit)
    (path / "attributes.json").write_text(json.dumps(doc))
    _fails(nc, path, str(path), "attributes.json" if "compression" not in edit else "vol", needle)


def test_tensorstore_rejects_nothing_we_write_for_edges(nc, tmp_path):
    """Sanity: the undamaged dataset reads back, so the failures above come from the damage."""
    path = _dataset(tmp_path)
    assert (n5io.get(nc, path) == np.arange(24, dtype="uint16").reshape(SHAPE)).all()
