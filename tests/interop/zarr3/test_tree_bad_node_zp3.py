"""One bad node must not hide the rest of a hierarchy.

zarr-python 3.4 writes a group (Zarr v3 or v2, with or without consolidated metadata) holding
three arrays; then the middle one, `broken`, gets a codec no implementation knows: a v3 codec
`{"name": "no_such_codec"}` or a v2 compressor `{"id": "no_such_compressor"}` (patched in the
array's own metadata document and, when consolidated, in the consolidated copy too).

`neurochunk tree` exits 0, prints the good arrays with their shapes and marks `broken` with
`error` and the codec name on its line; `tree --json` gives `broken` an `"error"` string;
`info GROUP` exits 0; `get GROUP/broken` fails with a one-line error naming the array and the
codec, while the good arrays still read.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import zarr

from ncli import assert_same_array, cli_form

GOOD = {
    "alpha": np.arange(70, dtype="<u2").reshape(10, 7) * 515,
    "gamma": np.linspace(-2.25, 1e6, 5, dtype="<f4"),
}
BROKEN = np.arange(24, dtype="<i4").reshape(6, 4) - 12
BAD_CODEC = {3: "no_such_codec", 2: "no_such_compressor"}


def _patch(doc: dict, zarr_format: int) -> dict:
    if zarr_format == 3:
        codecs = [c for c in doc["codecs"] if c.get("name") not in ("zstd", "gzip", "blosc")]
        doc["codecs"] = codecs + [{"name": BAD_CODEC[3]}]
    else:
        doc["compressor"] = {"id": BAD_CODEC[2], "level": 1}
    return doc


def _build(root: Path, zarr_format: int, consolidated: bool) -> None:
    g = zarr.open_group(str(root), mode="w", zarr_format=zarr_format)
    g.attrs["title"] = "one bad node"
    for name, data in [("alpha", GOOD["alpha"]), ("broken", BROKEN), ("gamma", GOOD["gamma"])]:
        a = g.create_array(name, shape=data.shape, chunks=tuple(max(1, s // 2) for s in data.shape), dtype=data.dtype)
        a[...] = data
    if consolidated:
        zarr.consolidate_metadata(str(root))
    doc_name = "zarr.json" if zarr_format == 3 else ".zarray"
    doc_path = root / "broken" / doc_name
    doc_path.write_text(json.dumps(_patch(json.loads(doc_path.read_text()), zarr_format), indent=2))
    if consolidated and zarr_format == 3:
        top = json.loads((root / "zarr.json").read_text())
        entries = top["consolidated_metadata"]["metadata"]
        entries["broken"] = _patch(entries["broken"], 3)
        (root / "zarr.json").write_text(json.dumps(top, indent=2))
    elif consolidated:
        zmeta = json.loads((root / ".zmetadata").read_text())
        zmeta["metadata"]["broken/.zarray"] = _patch(zmeta["metadata"]["broken/.zarray"], 2)
        (root / ".zmetadata").write_text(json.dumps(zmeta, indent=2))


CASES = [(3, False), (3, True), (2, False), (2, True)]
IDS = ["v3-plain", "v3-consolidated", "v2-plain", "v2-consolidated"]


@pytest.fixture(params=CASES, ids=IDS)
def bad_group(request, tmp_path):
    zarr_format, consolidated = request.param
    root = tmp_path / "g.zarr"
    _build(root, zarr_format, consolidated)
    return root, zarr_format


def test_tree_text_shows_good_nodes_and_marks_the_bad_one(bad_group, nc):
    root, zarr_format = bad_group
    proc = nc.run("tree", root)  # must exit 0
    lines = proc.stdout.splitlines()
    for name, data in GOOD.items():
        shape = str(list(data.shape))
        assert any(name in line and shape in line for line in lines), (
            f"no line shows {name} with shape {shape}:\n{proc.stdout}"
        )
    bad = [line for line in lines if "broken" in line]
    assert len(bad) == 1, f"expected one line for 'broken':\n{proc.stdout}"
    assert "error" in bad[0].lower() and BAD_CODEC[zarr_format] in bad[0], bad[0]


def test_tree_json_gives_the_bad_node_an_error(bad_group, nc):
    root, _ = bad_group
    nodes = {node["path"]: node for node in nc.tree(root)["nodes"]}
    assert {"/", "/alpha", "/broken", "/gamma"} <= set(nodes), sorted(nodes)
    assert isinstance(nodes["/broken"].get("error"), str) and nodes["/broken"]["error"], nodes["/broken"]
    for name, data in GOOD.items():
        node = nodes[f"/{name}"]
        assert node.get("shape") == list(data.shape), node
        assert "error" not in node, node


def test_info_of_the_group_succeeds(bad_group, nc):
    root, _ = bad_group
    proc = nc.run("info", root)  # must exit 0
    assert "group" in proc.stdout


def test_get_of_the_bad_array_fails_cleanly_and_the_good_ones_read(bad_group, nc):
    root, zarr_format = bad_group
    nc.fails("get", root / "broken", "-o", nc.scratch / "bad.npy", names=["broken", BAD_CODEC[zarr_format]])
    for name, data in GOOD.items():
        assert_same_array(nc.get(root / name), cli_form(data), name)
