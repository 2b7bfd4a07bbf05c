"""neurochunk.table with Polars and DuckDB (where they are installed, .peers/py312): both
consume our Arrow C streams directly, we write what they export, and both scan our
Hive-partitioned tables with their own readers, partition column and values intact."""

from __future__ import annotations

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neurochunk as nc


@pytest.fixture
def points(tmp_path):
    """A table of 1,000 rows, 4 fragments, written by pyarrow."""
    n = 1000
    t = pa.table(
        {
            "sample_id": pa.array(range(n), pa.uint64()),
            "fragment_id": pa.array([(i * 7) % 4 + 10 for i in range(n)], pa.uint64()),
            "x": pa.array([i * 0.5 for i in range(n)], pa.float64()),
            "label": [f"s{i % 13}" for i in range(n)],
        }
    )
    path = tmp_path / "points.parquet"
    pq.write_table(t, path, row_group_size=300)
    return path, t


def test_polars_and_duckdb_consume_our_stream(points):
    path, t = points
    ours = nc.table.read(path, columns=["sample_id", "x", "label"], filter=[("fragment_id", "in", [10, 12])], batch_size=128)
    want = pl.from_arrow(t).filter(pl.col("fragment_id").is_in([10, 12])).select(["sample_id", "x", "label"])
    df = pl.DataFrame(ours)
    assert df.equals(want)
    rel = duckdb.sql("SELECT label, count(*) AS n, sum(x) AS s FROM ours GROUP BY label ORDER BY label")
    got = rel.fetchall()
    expect = want.group_by("label").agg(pl.len().alias("n"), pl.col("x").sum().alias("s")).sort("label")
    assert [(a, b) for a, b, _ in got] == list(zip(expect["label"].to_list(), expect["n"].to_list()))
    assert [c for _, _, c in got] == pytest.approx(expect["s"].to_list())
    # DuckDB's own arrow import of the stream.
    assert duckdb.from_arrow(ours).count("*").fetchall()[0][0] == want.height


def test_write_from_polars_and_duckdb(points, tmp_path):
    path, t = points
    df = pl.from_arrow(t)
    assert nc.table.write(df, tmp_path / "from_polars.parquet") == 1000
    assert pl.read_parquet(tmp_path / "from_polars.parquet").equals(df)
    rel = duckdb.sql(f"SELECT sample_id, x FROM read_parquet('{path}') WHERE x < 100")
    assert nc.table.write(rel, tmp_path / "from_duckdb.arrow") == 200
    back = pa.table(nc.table.read(tmp_path / "from_duckdb.arrow"))
    assert back.column("x").to_pylist() == [i * 0.5 for i in range(200)]


def test_duckdb_and_polars_read_our_hive_tables(points, tmp_path):
    path, t = points
    out = tmp_path / "hive"
    assert nc.table.write(nc.table.read(path), out, partition_by="fragment_id") == 1000
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [f"fragment_id={v}" for v in (10, 11, 12, 13)]
    want = pl.from_arrow(t).sort("sample_id")

    duck = duckdb.sql(
        f"SELECT sample_id, fragment_id, x, label FROM read_parquet('{out}/**/*.parquet', hive_partitioning = true) "
        "ORDER BY sample_id"
    ).pl()
    assert duck["fragment_id"].to_list() == want["fragment_id"].to_list()
    assert duck["sample_id"].to_list() == want["sample_id"].to_list()
    assert duck["x"].to_list() == want["x"].to_list() and duck["label"].to_list() == want["label"].to_list()
    counts = duckdb.sql(
        f"SELECT fragment_id, count(*) FROM read_parquet('{out}/**/*.parquet', hive_partitioning = true) "
        "GROUP BY fragment_id ORDER BY fragment_id"
    ).fetchall()
    assert [(int(a), b) for a, b in counts] == [(v, 250) for v in (10, 11, 12, 13)]

    # A glob: the directory also holds _common_metadata (the full schema), which Polars will
    # not mix with the part files when given the bare directory.
    lazy = pl.scan_parquet(f"{out}/**/*.parquet", hive_partitioning=True)
    assert "fragment_id" in lazy.collect_schema().names()
    scanned = lazy.select(["sample_id", "fragment_id", "x", "label"]).sort("sample_id").collect()
    assert scanned["fragment_id"].cast(pl.UInt64).to_list() == want["fragment_id"].to_list()
    assert scanned.drop("fragment_id").equals(want.drop("fragment_id").select(["sample_id", "x", "label"]))
    eleven = pl.scan_parquet(f"{out}/**/*.parquet", hive_partitioning=True).filter(pl.col("fragment_id") == 11).collect()
    assert eleven.height == 250 and set(eleven["fragment_id"].to_list()) == {11}

    # And our reader agrees with both on the partition column.
    ours = pl.DataFrame(nc.table.read(out)).sort("sample_id")
    assert ours["fragment_id"].to_list() == want["fragment_id"].to_list()
