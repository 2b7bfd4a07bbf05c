"""Hierarchies and consolidated metadata with zarr-python 3.

zarr-python 3 writes v3 and v2 hierarchies (attributes with non-ASCII text, NaN, infinities)
that `neurochunk tree/info` walks; `neurochunk convert` + `consolidate` writes hierarchies
that `zarr.open_group(..., use_consolidated=True)` opens, in both formats.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import zarr
from zarr.codecs import BytesCodec, ShardingCodec, ZstdCodec

import samples
from hierarchy import (
    ATTRS_ARRAY, ATTRS_ROOT, ATTRS_SUB, check_info_common, check_inline_consolidated, check_tree, check_zmetadata,
)
from ncli import assert_same_array, cli_form, json_equal, load_json


def build_zp3_hierarchy(root: Path, zarr_format: int = 3, consolidated: bool = False) -> zarr.Group:
    """root (attrs) / raw (uint16, dimension names) / sub (attrs) / sub/x (bool) /
    sub/deeper/nest/strings (string) / sharded (v3 only) / empty (group)."""
    g = zarr.open_group(str(root), mode="w", zarr_format=zarr_format)
    g.attrs.update(ATTRS_ROOT)
    raw = g.create_array("raw", shape=(10, 7), chunks=(4, 4), dtype="<u2", attributes=ATTRS_ARRAY,
                         dimension_names=("y", "x") if zarr_format == 3 else None)
    raw[...] = samples.sample("<u2", (10, 7))
    sub = g.create_group("sub", attributes=ATTRS_SUB)
    x = sub.create_array("x", shape=(5,), chunks=(2,), dtype=bool, fill_value=True)
    x[:3] = [False, True, False]
    nest = sub.create_group("deeper/nest")
    strings = nest.create_array("strings", shape=(3, 4), chunks=(2, 2), dtype=str)
    strings[...] = samples.text((3, 4))
    if zarr_format == 3:
        sharded = g.create_array(
            "sharded", shape=(16, 16), chunks=(8, 8), dtype="<f4",
            serializer=ShardingCodec(chunk_shape=(4, 4), codecs=[BytesCodec(), ZstdCodec(level=1)]),
        )
        sharded[...] = samples.sample("<f4", (16, 16))
    g.create_group("empty")
    if consolidated:
        zarr.consolidate_metadata(str(root))
    return g


def expected_nodes(root: Path, zarr_format: int) -> dict[str, dict]:
    nodes = {
        "/": dict(node_type="group"),
        "/empty": dict(node_type="group"),
        "/raw": dict(node_type="array", shape=[10, 7], chunks=[4, 4], data_type="uint16"),
        "/sub": dict(node_type="group"),
        "/sub/x": dict(node_type="array", shape=[5], chunks=[2], data_type="bool"),
        "/sub/deeper": dict(node_type="group"),
        "/sub/deeper/nest": dict(node_type="group"),
        "/sub/deeper/nest/strings": dict(node_type="array", shape=[3, 4], chunks=[2, 2], data_type="string"),
    }
    if zarr_format == 3:
        nodes["/sharded"] = dict(node_type="array", shape=[16, 16], data_type="float32")
        for path, node in nodes.items():
            if node["node_type"] == "array":
                node["codecs"] = load_json(root / path.lstrip("/") / "zarr.json")["codecs"]
    for node in nodes.values():
        node["zarr_format"] = zarr_format
    return nodes


@pytest.mark.parametrize(
    "zarr_format,consolidated", [(3, False), (3, True), (2, False), (2, True)],
    ids=["v3-plain", "v3-consolidated", "v2-plain", "v2-consolidated"],
)
def test_tree_walks_zarr_python3_hierarchy(zarr_format, consolidated, tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp3_hierarchy(root, zarr_format, consolidated)
    check_tree(nc.tree(root), expected_nodes(root, zarr_format))


def test_info_of_v3_root_group(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp3_hierarchy(root, consolidated=True)
    info = nc.info(root)
    check_info_common(info, "group", 3, ATTRS_ROOT)
    assert json_equal(info["metadata"], load_json(root / "zarr.json"))


def test_info_of_v3_array(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp3_hierarchy(root)
    info = nc.info(root / "raw")
    check_info_common(info, "array", 3, ATTRS_ARRAY)
    stored = load_json(root / "raw" / "zarr.json")
    assert json_equal(info["metadata"], stored)
    assert info["shape"] == [10, 7] and info["chunks"] == [4, 4]
    assert info["data_type"] == "uint16" and info["fill_value"] == 0
    assert json_equal(info["codecs"], stored["codecs"]), info["codecs"]


def test_info_of_v3_sharded_array_reports_inner_chunks(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp3_hierarchy(root)
    info = nc.info(root / "sharded")
    check_info_common(info, "array", 3, {})
    assert info["shape"] == [16, 16] and info["data_type"] == "float32"
    assert info["codecs"][0]["name"] == "sharding_indexed"


def test_info_of_v2_string_array_written_by_zarr_python3(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp3_hierarchy(root, zarr_format=2)
    info = nc.info(root / "sub" / "deeper" / "nest" / "strings")
    check_info_common(info, "array", 2, {})
    assert json_equal(info["metadata"], load_json(root / "sub" / "deeper" / "nest" / "strings" / ".zarray"))
    assert info["data_type"] == "string"


def assert_same_zp3_hierarchy(got: zarr.Group, want: zarr.Group) -> None:
    got_members = dict(got.members(max_depth=None))
    want_members = dict(want.members(max_depth=None))
    assert sorted(got_members) == sorted(want_members), "members differ"
    assert json_equal(dict(got.attrs), dict(want.attrs)), "root attributes differ"
    for name, node in want_members.items():
        other = got_members[name]
        assert isinstance(other, zarr.Array) == isinstance(node, zarr.Array), f"{name}: node type differs"
        assert json_equal(dict(other.attrs), dict(node.attrs)), f"{name}: attributes differ"
        if isinstance(node, zarr.Array):
            assert_same_array(cli_form(other[...]), cli_form(node[...]), name)


@pytest.mark.parametrize(
    "source_format,target_format,how",
    [
        (3, "zarr3", "convert-with-consolidate-flag"),
        (3, "zarr3", "convert-then-consolidate"),
        (3, "zarr2", "convert-with-consolidate-flag"),
        (2, "zarr3", "convert-then-consolidate"),
        (2, "zarr2", "convert-with-consolidate-flag"),
        (3, "zarr3", "consolidate-in-place"),
        (2, "zarr2", "consolidate-in-place"),
    ],
    ids=lambda v: str(v) if not isinstance(v, int) else f"from-v{v}",
)
def test_open_group_use_consolidated_reads_neurochunk_hierarchy(source_format, target_format, how, tmp_path, nc):
    src = tmp_path / "src.zarr"
    build_zp3_hierarchy(src, source_format)
    if how == "consolidate-in-place":
        dst = src
        nc.consolidate(dst)
    elif how == "convert-then-consolidate":
        dst = tmp_path / "dst.zarr"
        nc.convert(src, dst, target_format)
        nc.consolidate(dst)
    else:
        dst = tmp_path / "dst.zarr"
        nc.convert(src, dst, target_format, consolidate=True)
    if target_format == "zarr2":
        check_zmetadata(dst)
    else:
        check_inline_consolidated(dst)
    got = zarr.open_group(str(dst), mode="r", use_consolidated=True)
    assert got.metadata.zarr_format == (2 if target_format == "zarr2" else 3)
    assert got.metadata.consolidated_metadata is not None
    assert_same_zp3_hierarchy(got, zarr.open_group(str(src), mode="r"))
