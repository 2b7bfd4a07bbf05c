"""Conversion paths checked with zarr-python 2.18: structured arrays in every direction, v3
codecs that Zarr v2 cannot express (transpose, crc32c), and `put` into a nested path.

* Structured layouts (convert_paths.STRUCT_LAYOUTS) × directions v2→v3, v3→v2, v2→v2, v3→v3.
  Zarr v2 sources are written by zarr-python 2 (every layout, sub-array fields included); Zarr
  v3 sources by `neurochunk put --format zarr3` (zarr-python 2 writes no Zarr v3). Zarr v2
  results are read by zarr-python 2 and `neurochunk get`, Zarr v3 results by `neurochunk get`
  (zarr-python 3.4 reads them in tests/interop/zarr3/test_convert_paths_zp3.py).
* Zarr v3 arrays with `transpose` / `crc32c` are written once per session by zarr-python 3.4
  (run with the .peers/py312 interpreter) and converted to v2: an inexpressible transpose is
  re-laid out to C order, the full reversal becomes `order: "F"`, and crc32c is dropped (each
  change announced by a `note:` line); stock zarr-python 2 reads the results.
* `put OUT.zarr/a/b --format zarr2` creates `.zgroup` at OUT.zarr and OUT.zarr/a; a second put
  into OUT.zarr/c/d keeps the root's attributes.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from convert_paths import (
    check_put_keeps_root_metadata,
    check_put_nested_creates_parents,
    DIRECTION_IDS, DIRECTIONS, PY312, STRUCT_CHUNKS, STRUCT_LAYOUTS, SUBARRAY_LAYOUT, assert_one_note,
    assert_same_records, run_convert, run_peer, struct_values,
)
from ncli import assert_same_array, cli_form, load_json

# ------------------------------------------------------------------------------------------
# 1. Structured arrays, every layout × every direction
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("direction", DIRECTIONS, ids=DIRECTION_IDS)
@pytest.mark.parametrize("layout", list(STRUCT_LAYOUTS))
def test_struct_converts_without_corruption(layout, direction, tmp_path, nc):
    src_fmt, dst_fmt = direction
    data = struct_values(STRUCT_LAYOUTS[layout])
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    if src_fmt == "zarr2":
        z = zarr.open_array(str(src), mode="w", shape=data.shape, chunks=STRUCT_CHUNKS, dtype=data.dtype)
        z[...] = data
        assert_same_records(zarr.open_array(str(src), mode="r")[...], data, "zarr-python 2 source")
    else:
        nc.put(data, src, "zarr3", chunks=STRUCT_CHUNKS)
        assert_same_records(nc.get(src), data, "neurochunk get of the v3 source written by neurochunk put")
    run_convert(nc, src, dst, dst_fmt)

    if dst_fmt == "zarr2":
        meta = load_json(dst / ".zarray")
        assert isinstance(meta["dtype"], list), meta["dtype"]
        z = zarr.open_array(str(dst), mode="r")
        assert_same_records(z[...], data, "zarr-python 2")
    else:
        assert (dst / "zarr.json").is_file()
    assert_same_records(nc.get(dst), data, "neurochunk get")


def test_struct_subarray_fields_convert_v2_to_v2(tmp_path, nc):
    data = struct_values(SUBARRAY_LAYOUT)
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    z = zarr.open_array(str(src), mode="w", shape=data.shape, chunks=STRUCT_CHUNKS, dtype=data.dtype)
    z[...] = data
    run_convert(nc, src, dst, "zarr2")
    assert_same_records(zarr.open_array(str(dst), mode="r")[...], data, "zarr-python 2")
    assert_same_records(nc.get(dst), data, "neurochunk get")


# ------------------------------------------------------------------------------------------
# 2. Zarr v3 codecs that Zarr v2 cannot express
# ------------------------------------------------------------------------------------------

SHAPE_3D = (4, 5, 6)
CHUNKS_3D = (2, 5, 4)

# Run by zarr-python 3.4 (.peers/py312): argv[1] is the output directory.
_ZP3_SOURCES = r"""
import sys
import numpy as np
import zarr
from zarr.codecs import BytesCodec, Crc32cCodec, TransposeCodec, ZstdCodec

out = sys.argv[1]
data = np.arange(120, dtype="<i4").reshape(4, 5, 6) * 7919 - 123456
for name, order in [("t102", (1, 0, 2)), ("t210", (2, 1, 0))]:
    z = zarr.create_array(f"{out}/{name}.zarr", shape=data.shape, chunks=(2, 5, 4), dtype="<i4",
                          filters=[TransposeCodec(order=order)], serializer=BytesCodec(endian="little"))
    z[...] = data
f8 = (np.arange(300, dtype="<f8") * -2.25 + 1e6).reshape(20, 15)
z = zarr.create_array(f"{out}/crc.zarr", shape=f8.shape, chunks=(8, 8), dtype="<f8",
                      compressors=[ZstdCodec(level=1), Crc32cCodec()])
z[...] = f8
"""


def _sample_3d() -> np.ndarray:
    return np.arange(120, dtype="<i4").reshape(SHAPE_3D) * 7919 - 123456


def _sample_crc() -> np.ndarray:
    return (np.arange(300, dtype="<f8") * -2.25 + 1e6).reshape(20, 15)


@pytest.fixture(scope="session")
def zp3_sources(tmp_path_factory):
    """Zarr v3 arrays written by zarr-python 3.4: t102.zarr, t210.zarr (transpose), crc.zarr."""
    out = tmp_path_factory.mktemp("zp3-sources")
    run_peer(PY312, _ZP3_SOURCES, out)
    codecs = {name: [c["name"] for c in load_json(out / f"{name}.zarr" / "zarr.json")["codecs"]]
              for name in ("t102", "t210", "crc")}
    assert codecs["t102"][0] == "transpose" and codecs["crc"][-1] == "crc32c", codecs
    return out


def test_v3_transpose_102_to_v2_is_relaid_in_c_order(zp3_sources, tmp_path, nc):
    dst = tmp_path / "dst.zarr"
    proc = run_convert(nc, zp3_sources / "t102.zarr", dst, "zarr2")
    meta = load_json(dst / ".zarray")
    assert meta["order"] == "C", meta
    assert "transpose" not in json.dumps(meta.get("filters")).lower(), meta
    assert_one_note(proc.stderr, "/", "transpose")
    expected = _sample_3d()
    assert_same_array(cli_form(zarr.open_array(str(dst), mode="r")[...]), expected, "zarr-python 2")
    assert_same_array(nc.get(dst), expected, "neurochunk get")


def test_v3_transpose_reversal_to_v2_is_order_f(zp3_sources, tmp_path, nc):
    dst = tmp_path / "dst.zarr"
    run_convert(nc, zp3_sources / "t210.zarr", dst, "zarr2")
    meta = load_json(dst / ".zarray")
    assert meta["order"] == "F", meta
    expected = _sample_3d()
    assert_same_array(cli_form(zarr.open_array(str(dst), mode="r")[...]), expected, "zarr-python 2")
    assert_same_array(nc.get(dst), expected, "neurochunk get")


def test_v3_crc32c_to_v2_is_dropped_with_a_note(zp3_sources, tmp_path, nc):
    dst = tmp_path / "dst.zarr"
    proc = run_convert(nc, zp3_sources / "crc.zarr", dst, "zarr2")
    text = (dst / ".zarray").read_text()
    assert "crc32c" not in text, text
    assert_one_note(proc.stderr, "/", "crc32c")
    z = zarr.open_array(str(dst), mode="r")
    assert_same_array(cli_form(z[...]), _sample_crc(), "zarr-python 2")


def test_v3_crc32c_in_group_to_v2_notes_name_the_array(zp3_sources, tmp_path, nc):
    """Inside a hierarchy, the note names the array's node path (here `/grp/checked`)."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    plain = np.arange(40, dtype="<u2").reshape(5, 8) * 515
    nc.put(plain, src / "grp" / "plain", "zarr3", codec="gzip:1")
    nc.put(_sample_crc(), src / "grp" / "checked", "zarr3", codec="zstd:1,crc32c")
    for node in (src, src / "grp"):
        if not (node / "zarr.json").exists():  # parents of a nested put (older binaries)
            node.mkdir(exist_ok=True)
            (node / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    proc = run_convert(nc, src, dst, "zarr2")
    assert_one_note(proc.stderr, "/grp/checked", "crc32c")
    assert "crc32c" not in (dst / "grp" / "checked" / ".zarray").read_text()
    root = zarr.open_group(str(dst), mode="r")
    assert_same_array(cli_form(root["grp/checked"][...]), _sample_crc(), "zarr-python 2")
    assert_same_array(cli_form(root["grp/plain"][...]), plain, "zarr-python 2")


# ------------------------------------------------------------------------------------------
# 3. put into a nested path creates the implicit parent groups
# ------------------------------------------------------------------------------------------


def test_put_zarr2_nested_path_creates_parent_groups(tmp_path, nc):
    check_put_nested_creates_parents(nc, tmp_path, "zarr2", zarr, "zarr-python 2")


def test_put_zarr2_into_existing_root_keeps_its_metadata(tmp_path, nc):
    check_put_keeps_root_metadata(nc, tmp_path, "zarr2", zarr)
