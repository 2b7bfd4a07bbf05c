"""neurochunk.table: reading into pyarrow through the Arrow PyCapsule stream interface,
writing from any exporter, projections and filters, Hive partitions, validation, derived
fields and SWC. pyarrow is the reference reader (both environments); Polars and DuckDB are
in test_table_engines.py."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

import neurochunk as nc

SWC_A = """# neuron a
1 1 0.0 0.0 0.0 2.0 -1
2 3 10.0 0.0 0.0 1.0 1
3 3 20.0 5.0 0.0 1.0 2
4 3 10.0 10.0 0.0 1.0 2
5 3 30.0 5.0 1.5 0.5 3
"""
SWC_B = """1 1 100.0 0.0 0.0 3.0 -1
2 4 110.0 0.0 0.0 1.0 1
3 4 120.0 0.0 0.0 1.0 2
"""


@pytest.fixture
def skeletons(tmp_path):
    """A valid skeletons table of two neurons (fragments 7 and 9) imported from SWC."""
    (tmp_path / "7.swc").write_text(SWC_A)
    (tmp_path / "9.swc").write_text(SWC_B)
    out = tmp_path / "neurons.skeletons.parquet"
    summary = nc.table.from_swc([tmp_path / "7.swc", tmp_path / "9.swc"], out, context="urn:uuid:test-context")
    assert summary["rows"] == 8
    assert sorted(f for _, f in summary["fragments"]) == [7, 9]
    return out


def test_read_streams_into_pyarrow(skeletons):
    t = nc.table.read(skeletons)
    theirs = pq.read_table(skeletons)
    ours = pa.table(t)
    assert ours.schema.names == theirs.schema.names
    assert ours.equals(theirs.cast(ours.schema))
    assert ours.column("x").to_pylist() == [0.0, 10.0, 20.0, 10.0, 30.0, 100.0, 110.0, 120.0]
    # The table's metadata (context, unit) travels with the schema.
    assert t.metadata == {k.decode(): v.decode() for k, v in (theirs.schema.metadata or {}).items()}
    assert t.num_rows == 8 and t.format == "parquet" and t.partition_columns == []
    # Every export reads anew: the same Table feeds a second consumer.
    assert pa.table(t).equals(ours)
    # The schema capsule, too.
    assert pa.schema(t) == ours.schema


def test_columns_and_filters_match_pyarrow(skeletons):
    theirs = pq.read_table(skeletons)
    t = nc.table.read(skeletons, columns=["x", "sample_id"], filter=[("fragment_id", "==", 7), ("x", ">=", 10)])
    got = pa.table(t)
    assert got.schema.names == ["x", "sample_id"]
    mask = pc.and_(pc.equal(theirs["fragment_id"], 7), pc.greater_equal(theirs["x"], 10.0))
    want = theirs.filter(mask).select(["x", "sample_id"])
    assert got.equals(want.cast(got.schema))
    assert got.num_rows == 4
    # Disjunctions, 'in', 'not in', None for nulls (the roots' parent_id), small batches.
    cases = [
        ([[("fragment_id", "==", 9)], [("x", "<", 10)]], pc.or_(pc.equal(theirs["fragment_id"], 9), pc.less(theirs["x"], 10.0))),
        ([("sample_id", "in", [1, 3, 5])], pc.is_in(theirs["sample_id"], pa.array([1, 3, 5], theirs["sample_id"].type))),
        ([("sample_id", "not in", np.array([1, 2]))], pc.invert(pc.is_in(theirs["sample_id"], pa.array([1, 2], theirs["sample_id"].type)))),
        ([("parent_id", "==", None)], pc.is_null(theirs["parent_id"])),
        ([("parent_id", "!=", None), ("y", "!=", 0)], pc.and_(pc.is_valid(theirs["parent_id"]), pc.not_equal(theirs["y"], 0.0))),
        ([("x", "<=", np.float32(10))], pc.less_equal(theirs["x"], 10.0)),
    ]
    for filt, mask in cases:
        got = pa.table(nc.table.read(skeletons, filter=filt, batch_size=3))
        want = theirs.filter(mask)
        assert got.to_pylist() == want.to_pylist(), filt
    # A filter that keeps nothing is an empty table with the schema.
    empty = pa.table(nc.table.read(skeletons, filter=[("x", ">", 1e9)]))
    assert empty.num_rows == 0 and empty.schema.names == theirs.schema.names


def test_read_errors(skeletons, tmp_path):
    with pytest.raises(FileNotFoundError):
        nc.table.read(tmp_path / "missing.parquet")
    with pytest.raises(nc.Error, match="no column \"nope\""):
        nc.table.read(skeletons, columns=["nope"])
    with pytest.raises(ValueError, match="nope"):
        nc.table.read(skeletons, filter=[("nope", "==", 1)])
    with pytest.raises(ValueError, match="operator"):
        nc.table.read(skeletons, filter=[("x", "~", 1)])
    with pytest.raises(ValueError, match="not a"):
        pa.table(nc.table.read(skeletons, filter=[("x", "==", "abc")]))
    with pytest.raises(ValueError, match="take a list"):
        nc.table.read(skeletons, filter=[("x", "in", 3)])
    (tmp_path / "junk.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(nc.CorruptDataError):
        nc.table.read(tmp_path / "junk.parquet")


def test_write_from_pyarrow_each_format(tmp_path):
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 4], pa.uint64()),
            "name": ["a", "b", None, "d"],
            "value": pa.array([0.5, np.nan, -1.0, 2.5], pa.float32()),
            "when": pa.array([0, 1, 2, 3], pa.timestamp("ms")),
        }
    ).replace_schema_metadata({"note": "kept"})
    for name in ["t.parquet", "t.arrow", "t.feather"]:
        n = nc.table.write(table, tmp_path / name)
        assert n == 4
        back = pa.table(nc.table.read(tmp_path / name))
        assert back.schema == table.schema, name
        assert back.drop_columns(["value"]).equals(table.drop_columns(["value"])), name
        np.testing.assert_array_equal(back["value"].to_numpy(), table["value"].to_numpy())  # NaN too
        assert back.schema.metadata[b"note"] == b"kept"
    # pyarrow reads what we wrote.
    import pyarrow.feather as feather

    for theirs in [pq.read_table(tmp_path / "t.parquet"), feather.read_table(tmp_path / "t.arrow")]:
        assert theirs.schema == table.schema
        assert theirs.drop_columns(["value"]).equals(table.drop_columns(["value"]))
        np.testing.assert_array_equal(theirs["value"].to_numpy(), table["value"].to_numpy())
    # A RecordBatchReader (a one-shot stream) is accepted too, in several batches.
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=1))
    assert nc.table.write(reader, tmp_path / "r.parquet", compression="zstd", row_group_rows=2) == 4
    assert pq.ParquetFile(tmp_path / "r.parquet").metadata.num_row_groups == 2
    assert pq.ParquetFile(tmp_path / "r.parquet").metadata.row_group(0).column(0).compression == "ZSTD"
    # Our own Table round-trips through write.
    assert nc.table.write(nc.table.read(tmp_path / "t.parquet", filter=[("id", ">", 2)]), tmp_path / "f.arrow") == 2
    with pytest.raises(nc.InvalidInputError, match="__arrow_c_stream__"):
        nc.table.write([1, 2, 3], tmp_path / "x.parquet")
    with pytest.raises(nc.InvalidInputError, match="compression"):
        nc.table.write(table, tmp_path / "x.parquet", compression="brotli9")
    with pytest.raises(nc.NodeExistsError, match="already exists"):
        nc.table.write(table, tmp_path / "t.parquet", overwrite=False)
    # A table replaces a table, never a file of another kind or a directory of other files.
    (tmp_path / "notes.parquet").write_text("not a table")
    with pytest.raises(FileExistsError, match="not a Parquet or Arrow IPC file"):
        nc.table.write(table, tmp_path / "notes.parquet")
    assert (tmp_path / "notes.parquet").read_text() == "not a table"
    (tmp_path / "share").mkdir()
    (tmp_path / "share" / "cell.tif").write_bytes(b"pixels")
    with pytest.raises(nc.NodeExistsError, match=r"cell\.tif"):
        nc.table.write(table, tmp_path / "share", partition_by="id")
    assert (tmp_path / "share" / "cell.tif").read_bytes() == b"pixels"


def test_hive_partitions_round_trip_with_pyarrow(skeletons, tmp_path):
    out = tmp_path / "hive.skeletons"
    assert nc.table.write(nc.table.read(skeletons), out, partition_by="fragment_id", schema="skeletons") == 8
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["fragment_id=7", "fragment_id=9"]
    assert [p.name for p in (out / "fragment_id=7").iterdir()] == ["part-0.skeletons.parquet"]
    theirs = ds.dataset(out, format="parquet", partitioning="hive").to_table()
    src = pq.read_table(skeletons)
    assert sorted(theirs.column("fragment_id").to_pylist()) == sorted(src.column("fragment_id").to_pylist())
    # Read back: the partition column comes from the directory names, values intact.
    t = nc.table.read(out)
    assert t.format == "hive-parquet" and t.partition_columns == ["fragment_id"]
    back = pa.table(t)
    assert sorted(back.to_pylist(), key=lambda r: r["sample_id"] + 100 * r["fragment_id"]) == sorted(
        src.to_pylist(), key=lambda r: r["sample_id"] + 100 * r["fragment_id"]
    )
    # Filtering on the partition column, alone or in alternatives.
    nine = pa.table(nc.table.read(out, columns=["sample_id", "fragment_id"], filter=[("fragment_id", "==", 9)]))
    assert nine.column("fragment_id").to_pylist() == [9, 9, 9]
    want = sorted(r["sample_id"] for r in src.to_pylist() if r["fragment_id"] == 9)
    assert sorted(nine.column("sample_id").to_pylist()) == want and len(want) == 3
    either = nc.table.read(out, filter=[[("fragment_id", ">", 8), ("x", ">", 105)], [("fragment_id", "in", [9, 10])]])
    assert sorted(pa.table(either).column("sample_id").to_pylist()) == want


def test_partition_filters_skip_partitions(tmp_path):
    """Partitions a filter rules out are not read: after opening, the data pages of one
    partition's file (larger than what opening reads of it) are zeroed in place."""
    n = 300_000
    rng = np.random.default_rng(3)
    t = pa.table({"part": pa.array(np.repeat([1, 2], n), pa.int64()), "v": rng.random(2 * n)})
    nc.table.write(t, tmp_path / "h", partition_by="part", compression="none")
    broken = next((tmp_path / "h" / "part=1").iterdir())
    assert broken.stat().st_size > 2 << 20
    only_two = nc.table.read(tmp_path / "h", filter=[("part", "==", 2)])
    alternatives = nc.table.read(tmp_path / "h", filter=[[("part", ">", 1)], [("part", "==", 3), ("v", ">", 0)]])
    both = nc.table.read(tmp_path / "h", filter=[("v", ">=", 0)])
    with open(broken, "r+b") as f:
        f.write(bytes(1 << 20))
    got = pa.table(only_two)
    assert got.num_rows == n and set(got.column("part").to_pylist()) == {2}
    np.testing.assert_array_equal(got.column("v").to_numpy(), t.column("v").to_numpy()[n:])
    assert pa.table(alternatives).num_rows == n
    # Without a filter on the partition the zeroed file is read: the consumer (pyarrow)
    # reports our error, naming the file.
    with pytest.raises(Exception, match="part=1"):
        pa.table(both)


def test_validate_reports(skeletons, tmp_path):
    report = nc.table.validate(skeletons)
    assert report.valid and bool(report)
    (only,) = report.tables
    assert only.schema == "skeletons" and only.rows == 8 and not only.unreadable
    d = report.to_dict()
    assert d["valid"] is True and d["tables"][0]["schema"] == "skeletons" and d["tables"][0]["errors"] == []
    json.dumps(d)
    # A broken table: a parent that does not exist (rewritten with pyarrow).
    t = pq.read_table(skeletons)
    parents = t.column("parent_id").to_pylist()
    parents[2] = 999
    bad = t.set_column(t.schema.get_field_index("parent_id"), t.schema.field("parent_id"), pa.array(parents, t.schema.field("parent_id").type))
    pq.write_table(bad, tmp_path / "bad.skeletons.parquet")
    report = nc.table.validate([tmp_path / "bad.skeletons.parquet"])
    assert not report.valid and report.errors
    assert any("999" in v.message or "parent" in v.message for v in report.errors)
    assert report.to_dict()["tables"][0]["errors"][0]["rule"] == report.errors[0].rule
    # Unreadable tables are reported, not raised; an unknown schema is an error.
    (tmp_path / "junk.parquet").write_bytes(b"nope")
    r = nc.table.validate([tmp_path / "junk.parquet"])
    assert not r.valid and r.tables[0].unreadable
    with pytest.raises(nc.InvalidInputError):
        nc.table.validate(skeletons, schema="no-such-schema")


def test_derive_and_swc_round_trip(skeletons, tmp_path):
    out = tmp_path / "derived.skeletons.parquet"
    summary = nc.table.derive(skeletons, out)
    assert summary["schema"] == "skeletons" and summary["rows"] == 8
    assert set(summary["columns"]) == {"child_ids", "n_children", "strahler"}
    t = pa.table(nc.table.read(out, filter=[("fragment_id", "==", 7)]))
    by_id = {r["sample_id"]: r for r in t.to_pylist()}
    assert by_id[2]["n_children"] == 2 and sorted(by_id[2]["child_ids"]) == [3, 4]
    assert by_id[5]["n_children"] == 0
    assert by_id[1]["strahler"] == 2 and by_id[5]["strahler"] == 1
    assert nc.table.validate(out).valid
    files = nc.table.to_swc(skeletons, tmp_path / "swc")
    assert sorted(p.rsplit("/", 1)[-1] for p in files) == ["7.swc", "9.swc"]
    rows = [line.split() for line in open(tmp_path / "swc" / "7.swc") if line.strip() and not line.startswith("#")]
    assert [(int(r[0]), int(r[1]), float(r[2]), int(r[6])) for r in rows] == [
        (1, 1, 0.0, -1), (2, 3, 10.0, 1), (3, 3, 20.0, 2), (4, 3, 10.0, 2), (5, 3, 30.0, 3)
    ]
    (one,) = nc.table.to_swc(skeletons, tmp_path / "nine.swc", fragment=9)
    assert one.endswith("nine.swc")
    (tmp_path / "cycle.swc").write_text("1 1 0 0 0 1 2\n2 1 0 0 0 1 1\n")
    with pytest.raises(nc.Error):
        nc.table.from_swc(tmp_path / "cycle.swc", tmp_path / "c.skeletons.parquet", context="urn:x")
    # A file of two trees (two roots): one fragment per tree, every sample kept.
    (tmp_path / "5.swc").write_text("1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n7 1 9 9 9 1 -1\n8 3 8 8 8 1 7\n")
    forest = nc.table.from_swc(tmp_path / "5.swc", tmp_path / "f.skeletons.parquet", context="urn:x")
    assert forest["rows"] == 4 and [f[1] for f in forest["fragments"]] == [5, 6], forest
    assert any("2 trees" in n for n in forest["notes"]), forest["notes"]
