"""N5 written by `neurochunk put` and `neurochunk convert` is read by tensorstore and
zarr-python 2's N5Store, for every data type × compression, in both axis orders.

`put --format n5` stores the .npy array's axes as listed (tensorstore sees the same array,
zarr-python 2 its transpose); with `--n5-axis-order reversed` it is the other way round. Edge
blocks are written truncated, as the Java reference writes them; both peers accept that.
The Java `LZ4Block` stream (`--codec lz4`) is read by neither peer and is checked byte by byte
in the Rust tests (crates/array/src/n5/block.rs, crates/array/tests/n5.rs).
"""

from __future__ import annotations

import pytest

import n5io
import samples
from ncli import assert_same_array, cli_form, json_equal, load_json
from samples import CHUNKS_3D, SHAPE_3D

CASES = [(d, c) for d in n5io.DTYPES for c in n5io.PUT_CODECS]


def _put(nc, data, path, codec, order):
    src = nc.scratch / f"put-{path.name}.npy"
    import numpy as np

    np.save(src, data)
    nc.run("put", src, path, "--format", "n5", "--chunks", ",".join(map(str, CHUNKS_3D)),
           "--codec", codec, "--n5-axis-order", order)


@pytest.mark.parametrize("order", ["listed", "reversed"])
@pytest.mark.parametrize("dtype,codec", CASES, ids=[f"{d}-{c}" for d, c in CASES])
def test_put_n5_is_read_by_both_peers(nc, tmp_path, dtype, codec, order):
    data = samples.sample(dtype, SHAPE_3D, seed=11)
    path = tmp_path / "out.n5"
    _put(nc, data, path, codec, order)
    doc = load_json(path / "attributes.json")
    assert doc["n5"] == "4.0.0"
    assert json_equal(doc["compression"], n5io.PUT_CODECS[codec]), doc["compression"]
    listed = order == "listed"
    assert doc["dimensions"] == list(SHAPE_3D if listed else reversed(SHAPE_3D))
    expected = cli_form(data)
    ts_view = n5io.ts_read(path)
    zp2_view = n5io.zp2_read(path)
    assert_same_array(cli_form(ts_view), expected if listed else expected.T, "tensorstore")
    assert_same_array(cli_form(zp2_view), expected.T if listed else expected, "zarr-python 2")
    # Edge blocks are truncated: the last block along every axis has the remaining extent.
    last = [(s - 1) // c for s, c in zip(doc["dimensions"], doc["blockSize"])]
    block = (path / "/".join(map(str, last))).read_bytes()
    sizes = [int.from_bytes(block[4 + 4 * i: 8 + 4 * i], "big") for i in range(3)]
    assert sizes == [s - i * c for s, c, i in zip(doc["dimensions"], doc["blockSize"], last)]


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_convert_zarr_to_n5_is_read_by_both_peers(nc, tmp_path, fmt):
    data = samples.sample("int32", SHAPE_3D, seed=2)
    zarr_path = tmp_path / f"src.{fmt}"
    nc.put(data, zarr_path, fmt, chunks=CHUNKS_3D, codec="zstd:1", attrs={"unit": "nm"})
    for order in ["listed", "reversed"]:
        out = tmp_path / f"out-{order}.n5"
        nc.run("convert", zarr_path, out, "--format", "n5", "--codec", "gzip:4", "--n5-axis-order", order)
        doc = load_json(out / "attributes.json")
        assert doc["unit"] == "nm"
        assert doc["compression"] == {"type": "gzip", "level": 4, "useZlib": False}
        expected = cli_form(data)
        assert_same_array(cli_form(n5io.ts_read(out)), expected if order == "listed" else expected.T)
        assert_same_array(cli_form(n5io.zp2_read(out)), expected.T if order == "listed" else expected)


def test_convert_hierarchy_between_n5_and_zarr2(nc, tmp_path):
    """A zarr-python 2 N5 hierarchy → Zarr v2 → N5, read by zarr-python at every step."""
    import zarr

    src = tmp_path / "src.n5"
    root = zarr.group(store=n5io.zp2_store(src))
    root.attrs["subject"] = "mouse-042"
    imaging = root.create_group("imaging")
    imaging.attrs.update({"pixel_size_um": [0.4, 0.4, 2.0], "note": "héllo"})
    raw = samples.sample("uint16", SHAPE_3D, seed=8)
    labels = samples.sample("uint64", (9, 4), seed=9)
    imaging.create_dataset("raw", data=raw, chunks=CHUNKS_3D, compressor=n5io.ZP2_COMPRESSORS["gzip"]())
    root.create_dataset("labels", data=labels, chunks=(4, 3), compressor=None)
    root["labels"].attrs["kind"] = "segmentation"

    v2 = tmp_path / "mid.zarr"
    nc.run("convert", src, v2, "--format", "zarr2", "--n5-axis-order", "reversed")
    mid = zarr.open_group(str(v2), mode="r")
    assert mid.attrs["subject"] == "mouse-042"
    assert mid["imaging"].attrs.asdict() == {"pixel_size_um": [0.4, 0.4, 2.0], "note": "héllo"}
    assert_same_array(mid["imaging/raw"][...], raw)
    assert_same_array(mid["labels"][...], labels)
    assert mid["labels"].attrs["kind"] == "segmentation"

    back = tmp_path / "back.n5"
    nc.run("convert", v2, back, "--format", "n5", "--n5-axis-order", "reversed")
    again = zarr.open_group(n5io.zp2_store(back), mode="r")
    assert again.attrs["subject"] == "mouse-042"
    assert again["imaging"].attrs["note"] == "héllo"
    assert_same_array(again["imaging/raw"][...], raw)
    assert_same_array(again["labels"][...], labels)
    assert again["labels"].attrs.asdict() == {"kind": "segmentation"}
    # tensorstore reads the same datasets in the listed order.
    assert_same_array(n5io.ts_read(back / "imaging" / "raw"), raw.T)
    assert load_json(back / "attributes.json")["n5"] == "4.0.0"


def test_convert_tensorstore_n5_through_zarr3_and_back(nc, tmp_path):
    """tensorstore N5 (no root attributes.json) → Zarr v3 (read by tensorstore's zarr3 driver)
    → N5 (read by tensorstore's n5 driver): data, attributes and axes survive."""
    import tensorstore as ts

    src = tmp_path / "src.n5"
    data = samples.sample("float32", SHAPE_3D, seed=4)
    n5io.ts_write(src / "em" / "s0", data, n5io.TS_COMPRESSIONS["blosc"], CHUNKS_3D)
    tree = nc.tree(src)
    assert [n["path"] for n in tree["nodes"]] == ["/", "/em", "/em/s0"]

    v3 = tmp_path / "mid.zarr"
    nc.run("convert", src, v3, "--format", "zarr3")
    mid = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(v3 / "em" / "s0")}}).result()
    assert_same_array(mid.read().result(), data)

    # Blosc needs a plugin in the N5 reference (Java), so with no --codec it becomes gzip, with
    # a note; --codec blosc keeps it.
    back = tmp_path / "back.n5"
    proc = nc.run("convert", v3, back, "--format", "n5")
    assert any("note:" in line and "blosc" in line for line in proc.stderr.splitlines()), proc.stderr
    assert_same_array(n5io.ts_read(back / "em" / "s0"), data)
    doc = load_json(back / "em" / "s0" / "attributes.json")
    assert doc["compression"]["type"] == "gzip"
    kept = tmp_path / "kept.n5"
    nc.run("convert", v3, kept, "--format", "n5", "--codec", "blosc:lz4:5:shuffle")
    assert_same_array(n5io.ts_read(kept / "em" / "s0"), data)
    doc = load_json(kept / "em" / "s0" / "attributes.json")
    assert doc["compression"]["type"] == "blosc"
    assert doc["dimensions"] == list(SHAPE_3D)
