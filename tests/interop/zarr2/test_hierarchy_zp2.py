"""Zarr v2 hierarchies: zarr-python 2.18 writes them and `neurochunk tree/info` walks them;
`neurochunk convert` + `consolidate` writes them and `zarr.open_consolidated` opens them.

Attributes include non-ASCII text, NaN and infinities (stored by zarr-python as bare JSON
`NaN` / `Infinity`).
"""

from __future__ import annotations

from pathlib import Path

import numcodecs
import pytest
import tensorstore as ts
import zarr

import samples
from hierarchy import (
    ATTRS_ARRAY, ATTRS_ROOT, ATTRS_SUB, check_info_common, check_inline_consolidated, check_tree, check_zmetadata,
)
from ncli import assert_same_array, cli_form, json_equal, load_json


def build_zp2_hierarchy(root: Path, consolidated: bool = False) -> zarr.Group:
    """root (attrs) / raw (uint16 2-D) / sub (attrs) / sub/x (bool) / sub/deeper/nest/strings
    (vlen-utf8) / sub/deeper/nest/when (datetime64) / empty (group)."""
    g = zarr.open_group(str(root), mode="w")
    g.attrs.update(ATTRS_ROOT)
    raw = g.create_dataset("raw", shape=(10, 7), chunks=(4, 4), dtype="<u2")
    raw[...] = samples.sample("<u2", (10, 7))
    raw.attrs.update(ATTRS_ARRAY)
    sub = g.create_group("sub")
    sub.attrs.update(ATTRS_SUB)
    x = sub.create_dataset("x", shape=(5,), chunks=(2,), dtype=bool, compressor=numcodecs.Zstd(1), fill_value=True)
    x[:3] = [False, True, False]
    nest = sub.create_group("deeper/nest")
    strings = nest.create_dataset("strings", shape=(3, 4), chunks=(2, 2), dtype=object, object_codec=numcodecs.VLenUTF8())
    strings[...] = samples.text((3, 4))
    when = nest.create_dataset("when", shape=(6,), chunks=(4,), dtype="<M8[ms]", compressor=None)
    when[...] = samples.sample("<M8[ms]", (6,))
    g.create_group("empty")
    if consolidated:
        zarr.consolidate_metadata(str(root))
    return g


EXPECTED_NODES = {
    "/": dict(node_type="group", zarr_format=2),
    "/empty": dict(node_type="group", zarr_format=2),
    "/raw": dict(node_type="array", zarr_format=2, shape=[10, 7], chunks=[4, 4], data_type="uint16"),
    "/sub": dict(node_type="group", zarr_format=2),
    "/sub/x": dict(node_type="array", zarr_format=2, shape=[5], chunks=[2], data_type="bool"),
    "/sub/deeper": dict(node_type="group", zarr_format=2),
    "/sub/deeper/nest": dict(node_type="group", zarr_format=2),
    "/sub/deeper/nest/strings": dict(node_type="array", zarr_format=2, shape=[3, 4], chunks=[2, 2]),
    "/sub/deeper/nest/when": dict(node_type="array", zarr_format=2, shape=[6], chunks=[4]),
}


@pytest.mark.parametrize("consolidated", [False, True], ids=["plain", "consolidated"])
def test_tree_walks_zarr_python2_hierarchy(consolidated, tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp2_hierarchy(root, consolidated)
    check_tree(nc.tree(root), EXPECTED_NODES)


def test_tree_of_subgroup_is_relative_to_it(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp2_hierarchy(root)
    expected = {
        p[len("/sub"):] or "/": v for p, v in EXPECTED_NODES.items() if p == "/sub" or p.startswith("/sub/")
    }
    check_tree(nc.tree(root / "sub"), expected)


def test_info_of_root_group_with_nan_and_unicode_attributes(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp2_hierarchy(root)
    info = nc.info(root)
    check_info_common(info, "group", 2, ATTRS_ROOT)
    assert json_equal(info["metadata"], load_json(root / ".zgroup"))


def test_info_of_array(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp2_hierarchy(root)
    info = nc.info(root / "raw")
    check_info_common(info, "array", 2, ATTRS_ARRAY)
    assert json_equal(info["metadata"], load_json(root / "raw" / ".zarray")), info["metadata"]
    assert info["shape"] == [10, 7]
    assert info["chunks"] == [4, 4]
    assert info["data_type"] == "uint16"
    assert info["fill_value"] == 0
    names = [c["name"] for c in info["codecs"]]
    assert any("blosc" in n for n in names), f"codecs {info['codecs']} do not mention blosc"


def test_info_of_subgroup_and_bool_array(tmp_path, nc):
    root = tmp_path / "h.zarr"
    build_zp2_hierarchy(root)
    check_info_common(nc.info(root / "sub"), "group", 2, ATTRS_SUB)
    info = nc.info(root / "sub" / "x")
    check_info_common(info, "array", 2, {})
    assert info["data_type"] == "bool" and info["fill_value"] is True


def assert_same_zp2_hierarchy(got: zarr.Group, want: zarr.Group, where: str = "/") -> None:
    assert json_equal(got.attrs.asdict(), want.attrs.asdict()), f"{where}: attributes differ"
    assert sorted(got.group_keys()) == sorted(want.group_keys()), f"{where}: groups differ"
    assert sorted(got.array_keys()) == sorted(want.array_keys()), f"{where}: arrays differ"
    for name in want.array_keys():
        a, b = got[name], want[name]
        assert json_equal(a.attrs.asdict(), b.attrs.asdict()), f"{where}{name}: attributes differ"
        assert_same_array(cli_form(a[...]), cli_form(b[...]), f"{where}{name}")
    for name in want.group_keys():
        assert_same_zp2_hierarchy(got[name], want[name], f"{where}{name}/")


@pytest.mark.parametrize(
    "how", ["convert-then-consolidate", "convert-with-consolidate-flag", "consolidate-in-place"]
)
def test_open_consolidated_reads_neurochunk_hierarchy(how, tmp_path, nc):
    src = tmp_path / "src.zarr"
    build_zp2_hierarchy(src)
    if how == "consolidate-in-place":
        dst = src
        nc.consolidate(dst)
    elif how == "convert-then-consolidate":
        dst = tmp_path / "dst.zarr"
        nc.convert(src, dst, "zarr2", codec="zstd:1")
        nc.consolidate(dst)
    else:
        dst = tmp_path / "dst.zarr"
        nc.convert(src, dst, "zarr2", codec="gzip:1", consolidate=True)
    check_zmetadata(dst)
    got = zarr.open_consolidated(str(dst), mode="r")
    assert_same_zp2_hierarchy(got, zarr.open_group(str(src), mode="r"))


def test_convert_hierarchy_to_zarr3_consolidated(tmp_path, nc):
    """A zarr-python 2 hierarchy converted to Zarr v3: tree, attributes, inline consolidated
    metadata, and array values (numeric ones also through tensorstore)."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    group = build_zp2_hierarchy(src)
    nc.convert(src, dst, "zarr3", consolidate=True)
    check_inline_consolidated(dst)
    expected_nodes = {p: dict(v, zarr_format=3) for p, v in EXPECTED_NODES.items()}
    check_tree(nc.tree(dst), expected_nodes)
    for node, attrs in [("", ATTRS_ROOT), ("raw", ATTRS_ARRAY), ("sub", ATTRS_SUB)]:
        stored = load_json(dst / node / "zarr.json").get("attributes")
        assert json_equal(stored, attrs), f"/{node}: attributes {stored!r} != {attrs!r}"
    for name in ["raw", "sub/x", "sub/deeper/nest/strings", "sub/deeper/nest/when"]:
        assert_same_array(nc.get(dst / name), cli_form(group[name][...]), name)
    # `raw` carries NaN attributes, which zarr-python 3 (like us) writes as bare `NaN`;
    # tensorstore's strict JSON parser rejects such documents, so only `sub/x` goes through it.
    for name in ["sub/x"]:
        store = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(dst / name)}}, open=True).result()
        assert_same_array(cli_form(store.read().result()), cli_form(group[name][...]), f"tensorstore {name}")
