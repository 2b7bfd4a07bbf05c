"""Conversion paths checked with zarr-python 3.4 (and tensorstore where zarr-python 3.4 cannot
read): structured arrays in every direction, codecs that the target format cannot express
(transpose, crc32c), and `put` into a nested path.

* Structured layouts (convert_paths.STRUCT_LAYOUTS) × directions v2→v3, v3→v2, v2→v2, v3→v3.
  Sources come from zarr-python 3.4 (`zarr_format=2` or 3); it refuses sub-array fields in
  either format; sub-array fields exist only in v2: v2 -> v2 keeps them (read back by
  tensorstore's `zarr` driver field by field and `neurochunk get`), v2 -> v3 is a clean refusal.
  Every result is compared field by field with the original values (byte order may differ).
* A v3 transpose that v2 cannot express ([1, 0, 2]) is re-laid out to C order with a `note:`
  naming `transpose`; the full reversal ([2, 1, 0]) becomes `order: "F"`.
* crc32c: dropped when converting to v2 (a `note:` names it) unless `--keep-checksums`, which
  keeps a numcodecs `crc32c` in `.zarray`; zarr-python 3.4 reads both.
* `put OUT.zarr/a/b --format zarr3` creates the implicit parent groups; a second put into
  `OUT.zarr/c/d` keeps the existing root's attributes.
"""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts
import zarr
from zarr.codecs import BytesCodec, Crc32cCodec, TransposeCodec, ZstdCodec

from convert_paths import (
    check_put_keeps_root_metadata,
    check_put_nested_creates_parents,
    DIRECTION_IDS, DIRECTIONS, STRUCT_CHUNKS, STRUCT_LAYOUTS, SUBARRAY_LAYOUT, ZP3_STRUCT_LAYOUTS,
    assert_clean_error, assert_one_note, assert_same_records, run_convert, struct_values,
)
from ncli import assert_same_array, cli_form, load_json

# ------------------------------------------------------------------------------------------
# 1. Structured arrays, every layout × every direction
# ------------------------------------------------------------------------------------------


def _write_struct_source(nc, path, data, fmt):
    """zarr-python 3.4 writes the source where it can, else `neurochunk put`."""
    layout_ok = data.dtype in [STRUCT_LAYOUTS[name] for name in ZP3_STRUCT_LAYOUTS]
    if layout_ok:
        z = zarr.create_array(
            str(path), shape=data.shape, chunks=STRUCT_CHUNKS, dtype=data.dtype,
            zarr_format=2 if fmt == "zarr2" else 3,
        )
        z[...] = data
        # The source itself must hold the values (guards the test, not neurochunk).
        assert_same_records(zarr.open_array(str(path), mode="r")[...], data, "zarr-python 3.4 source")
    else:
        nc.put(data, path, fmt, chunks=STRUCT_CHUNKS)


def _ts_v2_fields(path, data):
    """Read a Zarr v2 structured array field by field with tensorstore's `zarr` driver."""
    for name in data.dtype.names:
        spec = {"driver": "zarr", "kvstore": {"driver": "file", "path": str(path)}, "field": name}
        got = ts.open(spec, open=True).result().read().result()
        want = data[name]
        assert_same_array(cli_form(got), cli_form(np.ascontiguousarray(want)), f"tensorstore field {name!r}")


@pytest.mark.parametrize("direction", DIRECTIONS, ids=DIRECTION_IDS)
@pytest.mark.parametrize("layout", list(STRUCT_LAYOUTS))
def test_struct_converts_without_corruption(layout, direction, tmp_path, nc):
    src_fmt, dst_fmt = direction
    data = struct_values(STRUCT_LAYOUTS[layout])
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    _write_struct_source(nc, src, data, src_fmt)
    run_convert(nc, src, dst, dst_fmt)

    if dst_fmt == "zarr3":
        doc = load_json(dst / "zarr.json")
        if layout in ZP3_STRUCT_LAYOUTS:
            assert isinstance(doc["data_type"], dict) and doc["data_type"].get("name") == "struct", doc["data_type"]
    else:
        assert (dst / ".zarray").is_file()

    if layout in ZP3_STRUCT_LAYOUTS:
        z = zarr.open_array(str(dst), mode="r")
        assert z.metadata.zarr_format == (3 if dst_fmt == "zarr3" else 2)
        assert_same_records(z[...], data, "zarr-python 3.4")
    elif dst_fmt == "zarr2":
        _ts_v2_fields(dst, data)
    assert_same_records(nc.get(dst), data, "neurochunk get")


def test_struct_subarray_fields_convert_v2_to_v2(tmp_path, nc):
    data = struct_values(SUBARRAY_LAYOUT)
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    nc.put(data, src, "zarr2", chunks=STRUCT_CHUNKS)
    run_convert(nc, src, dst, "zarr2")
    _ts_v2_fields(dst, data)
    assert_same_records(nc.get(dst), data, "neurochunk get")


def test_struct_subarray_fields_to_v3_is_a_clean_refusal(tmp_path, nc):
    """Zarr v3 struct fields are scalars: the data cannot be represented, so convert refuses,
    naming the array and the field, and writes no array."""
    data = struct_values(SUBARRAY_LAYOUT)
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    nc.put(data, src, "zarr2", chunks=STRUCT_CHUNKS)
    proc = nc.run("convert", src, dst, "--format", "zarr3", check=False)
    line = assert_clean_error(proc, [str(src)])
    assert "sub-array" in line and '"v"' in line, line
    assert not (dst / "zarr.json").exists()


# ------------------------------------------------------------------------------------------
# 2. Codecs the target cannot express: transpose and crc32c to Zarr v2
# ------------------------------------------------------------------------------------------

SHAPE_3D = (4, 5, 6)
CHUNKS_3D = (2, 5, 4)


def _sample_3d() -> np.ndarray:
    return (np.arange(np.prod(SHAPE_3D), dtype="<i4").reshape(SHAPE_3D) * 7919 - 123456)


def test_v3_transpose_102_to_v2_is_relaid_in_c_order(tmp_path, nc):
    data = _sample_3d()
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    z = zarr.create_array(str(src), shape=SHAPE_3D, chunks=CHUNKS_3D, dtype="<i4",
                          filters=[TransposeCodec(order=(1, 0, 2))], serializer=BytesCodec(endian="little"))
    z[...] = data
    proc = run_convert(nc, src, dst, "zarr2")
    meta = load_json(dst / ".zarray")
    assert meta["order"] == "C", meta
    assert "transpose" not in str(meta.get("filters")).lower(), meta
    assert_one_note(proc.stderr, "/", "transpose")
    got = zarr.open_array(str(dst), mode="r")
    assert got.metadata.zarr_format == 2
    assert_same_array(cli_form(got[...]), cli_form(data), "zarr-python 3.4")
    assert_same_array(nc.get(dst), cli_form(data), "neurochunk get")


def test_v3_transpose_reversal_to_v2_is_order_f(tmp_path, nc):
    data = _sample_3d()
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    z = zarr.create_array(str(src), shape=SHAPE_3D, chunks=CHUNKS_3D, dtype="<i4",
                          filters=[TransposeCodec(order=(2, 1, 0))], serializer=BytesCodec(endian="little"))
    z[...] = data
    run_convert(nc, src, dst, "zarr2")
    meta = load_json(dst / ".zarray")
    assert meta["order"] == "F", meta
    got = zarr.open_array(str(dst), mode="r")
    assert_same_array(cli_form(got[...]), cli_form(data), "zarr-python 3.4")
    assert_same_array(nc.get(dst), cli_form(data), "neurochunk get")


def _crc32c_source(path) -> np.ndarray:
    data = (np.arange(300, dtype="<f8") * -2.25 + 1e6).reshape(20, 15)
    z = zarr.create_array(str(path), shape=data.shape, chunks=(8, 8), dtype="<f8",
                          compressors=[ZstdCodec(level=1), Crc32cCodec()])
    z[...] = data
    names = [c["name"] for c in load_json(path / "zarr.json")["codecs"]]
    assert names[-1] == "crc32c", names
    return data


def _v2_codec_ids(meta: dict) -> list[str]:
    ids = [f.get("id") for f in (meta.get("filters") or [])]
    if meta.get("compressor"):
        ids.append(meta["compressor"].get("id"))
    return ids


def test_v3_crc32c_to_v2_is_dropped_with_a_note(tmp_path, nc):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    data = _crc32c_source(src)
    proc = run_convert(nc, src, dst, "zarr2")
    text = (dst / ".zarray").read_text()
    assert "crc32c" not in text, text
    assert_one_note(proc.stderr, "/", "crc32c")
    assert_same_array(cli_form(zarr.open_array(str(dst), mode="r")[...]), data, "zarr-python 3.4")


def test_v3_crc32c_to_v2_keep_checksums(tmp_path, nc):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.zarr"
    data = _crc32c_source(src)
    run_convert(nc, src, dst, "zarr2", "--keep-checksums")
    meta = load_json(dst / ".zarray")
    assert "crc32c" in _v2_codec_ids(meta), meta
    z = zarr.open_array(str(dst), mode="r")
    assert z.metadata.zarr_format == 2
    assert_same_array(cli_form(z[...]), data, "zarr-python 3.4")
    assert_same_array(nc.get(dst), data, "neurochunk get")


# ------------------------------------------------------------------------------------------
# 3. put into a nested path creates the implicit parent groups
# ------------------------------------------------------------------------------------------


def test_put_zarr3_nested_path_creates_parent_groups(tmp_path, nc):
    check_put_nested_creates_parents(nc, tmp_path, "zarr3", zarr, "zarr-python 3.4")


def test_put_zarr3_into_existing_root_keeps_its_metadata(tmp_path, nc):
    check_put_keeps_root_metadata(nc, tmp_path, "zarr3", zarr)
