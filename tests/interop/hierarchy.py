"""Helpers for hierarchy tests shared by the Zarr v2 and v3 suites (no peer imports here).

* `ATTRS_*`: attribute sets with non-ASCII text, NaN and infinities, nested values.
* `expected_tree_nodes` / `check_tree` compare `neurochunk tree --json` with a peer's walk.
* `check_zmetadata` / `check_inline_consolidated` verify consolidated metadata against the files.
"""

from __future__ import annotations

import math
from pathlib import Path

from ncli import json_equal, load_json

ATTRS_ROOT = {
    "title": "Ünïcode ☃ 日本語",
    "nan": math.nan,
    "inf": math.inf,
    "neg_inf": -math.inf,
    "numbers": [1, -2, 3.5, 1e300],
    "nested": {"µ": None, "ok": True, "list": [[], {}]},
}
ATTRS_ARRAY = {"unit": "µV", "scale": 0.5, "nan_values": [math.nan, 1.0]}
ATTRS_SUB = {"n": 1, "name": "bär"}


def tree_paths(tree: dict) -> list[str]:
    return [node["path"] for node in tree["nodes"]]


def check_tree(tree: dict, expected: dict[str, dict]) -> None:
    """`expected` maps node path ('/', '/a/b') to the fields it must have (subset match)."""
    assert "nodes" in tree and isinstance(tree["nodes"], list), f"no 'nodes' list in {tree}"
    paths = tree_paths(tree)
    assert paths == sorted(paths), f"tree nodes not sorted by path: {paths}"
    assert set(paths) == set(expected), (
        f"tree paths differ: missing {sorted(set(expected) - set(paths))}, "
        f"unexpected {sorted(set(paths) - set(expected))}"
    )
    for node in tree["nodes"]:
        want = expected[node["path"]]
        for key, value in want.items():
            assert key in node, f"{node['path']}: no {key!r} in {node}"
            assert json_equal(node[key], value), f"{node['path']}: {key} = {node[key]!r}, expected {value!r}"
        if node["node_type"] == "array":
            for key in ("shape", "data_type", "chunks", "codecs"):
                assert key in node, f"{node['path']}: array node lacks {key!r}: {node}"
            assert isinstance(node["codecs"], list) and all(
                isinstance(c, dict) and "name" in c for c in node["codecs"]
            ), f"{node['path']}: codecs are not a v3-style list: {node['codecs']}"


def check_info_common(info: dict, node_type: str, zarr_format: int, attrs: dict) -> None:
    for key in ("path", "node_type", "zarr_format", "attributes", "metadata"):
        assert key in info, f"info --json lacks {key!r}: {sorted(info)}"
    assert info["node_type"] == node_type
    assert info["zarr_format"] == zarr_format
    assert json_equal(info["attributes"], attrs), f"attributes {info['attributes']!r} != {attrs!r}"


def metadata_files_v2(root: Path) -> dict[str, object]:
    """Every .zgroup/.zarray/.zattrs below root, keyed relative to root, parsed."""
    found = {}
    for name in (".zgroup", ".zarray", ".zattrs"):
        for path in root.rglob(name):
            found[path.relative_to(root).as_posix()] = load_json(path)
    return found


def check_zmetadata(root: Path) -> None:
    """A v2 `.zmetadata` that lists every metadata file under root with identical content."""
    consolidated = load_json(root / ".zmetadata")
    assert consolidated.get("zarr_consolidated_format") == 1, consolidated.keys()
    entries = consolidated["metadata"]
    files = metadata_files_v2(root)
    missing = sorted(set(files) - set(entries))
    assert not missing, f".zmetadata lacks {missing}"
    for key, value in files.items():
        assert json_equal(entries[key], value), f".zmetadata[{key!r}] = {entries[key]!r}, file has {value!r}"
    for key in set(entries) - set(files):
        # Tolerated: empty .zattrs entries for nodes without a .zattrs file (zarr-python 3 style).
        assert key.endswith(".zattrs") and entries[key] == {}, f".zmetadata has {key!r} but no such file"


def check_inline_consolidated(root: Path) -> None:
    """A v3 root `zarr.json` whose inline consolidated_metadata lists every node below it."""
    doc = load_json(root / "zarr.json")
    assert doc.get("node_type") == "group"
    cm = doc.get("consolidated_metadata")
    assert isinstance(cm, dict), f"no consolidated_metadata in root zarr.json: {sorted(doc)}"
    assert cm.get("kind") == "inline" and cm.get("must_understand") is False, cm
    entries = cm["metadata"]
    nodes = {
        p.parent.relative_to(root).as_posix(): load_json(p) for p in root.rglob("zarr.json") if p.parent != root
    }
    assert set(entries) == set(nodes), (
        f"consolidated entries differ: missing {sorted(set(nodes) - set(entries))}, "
        f"extra {sorted(set(entries) - set(nodes))}"
    )
    for key, node in nodes.items():
        entry = dict(entries[key])
        entry.pop("consolidated_metadata", None)
        node = dict(node)
        node.pop("consolidated_metadata", None)
        for field in ("node_type", "zarr_format", "shape", "data_type", "codecs", "fill_value"):
            if field in node:
                assert json_equal(entry.get(field), node[field]), f"{key}: {field} {entry.get(field)!r} != {node[field]!r}"
        assert json_equal(entry.get("attributes", {}), node.get("attributes", {})), f"{key}: attributes differ"
