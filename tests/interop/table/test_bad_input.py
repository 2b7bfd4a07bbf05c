"""Bad input gets a clear error naming the file, never a panic."""

import json

import pytest

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq

from na_tables import F64, md, replace, skeleton, skeleton_cols, table


def test_truncated_parquet(cli, tmp_path):
    p = tmp_path / "t.skeletons.parquet"
    pq.write_table(skeleton(), p)
    data = p.read_bytes()
    for cut in (len(data) // 2, len(data) - 3, 7):
        p.write_bytes(data[:cut])
        proc = cli("table", "validate", p)
        assert proc.returncode == 2
        assert str(p) in proc.stderr and "table-unreadable" in proc.stderr
        proc = cli("table", "info", p)
        assert proc.returncode == 2 and str(p) in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
        code, reports = cli.validate(p)
        assert code == 2 and reports[0]["valid"] is False
        assert reports[0]["errors"][0]["rule"] == "table-unreadable"


def test_truncated_arrow(cli, tmp_path):
    p = tmp_path / "t.skeletons.arrow"
    feather.write_feather(skeleton(), p)
    data = p.read_bytes()
    p.write_bytes(data[: len(data) - 40])
    proc = cli("table", "validate", p)
    assert proc.returncode == 2 and str(p) in proc.stderr


def test_corrupt_parquet_page(cli, tmp_path):
    p = tmp_path / "c.skeletons.parquet"
    pq.write_table(skeleton(), p, compression="none")
    data = bytearray(p.read_bytes())
    for i in range(8, min(200, len(data) - 8)):
        data[i] ^= 0x5A
    p.write_bytes(bytes(data))
    proc = cli("table", "validate", p)
    assert proc.returncode in (1, 2)
    assert str(p) in proc.stderr + proc.stdout


def test_not_arrow(cli, tmp_path):
    p = tmp_path / "notes.skeletons.parquet"
    p.write_text("sample_id,parent_id\n1,\n")
    proc = cli("table", "validate", p)
    assert proc.returncode == 2
    assert "not an Arrow IPC or Parquet file" in proc.stderr and str(p) in proc.stderr
    empty = tmp_path / "empty.arrow"
    empty.write_bytes(b"")
    assert cli("table", "info", empty).returncode == 2
    missing = tmp_path / "missing.parquet"
    proc = cli("table", "convert", missing, tmp_path / "o.parquet")
    assert proc.returncode == 2 and str(missing) in proc.stderr


def test_unreadable_among_valid_exit_2(cli, tmp_path):
    good = tmp_path / "g.skeletons.parquet"
    pq.write_table(skeleton(), good)
    bad = tmp_path / "b.skeletons.parquet"
    bad.write_bytes(b"PAR1garbagePAR1")
    code, reports = cli.validate(good, bad)
    assert code == 2
    assert reports[0]["valid"] is True and reports[1]["valid"] is False


def test_wrong_typed_column(cli, tmp_path):
    p = tmp_path / "w.skeletons.parquet"
    cols = replace(skeleton_cols(), "x", ("x", pa.string(), False, ["a", "b", "c", "d", "e", "f"]))
    pq.write_table(table(cols, md()), p)
    proc = cli("table", "validate", p)
    assert proc.returncode == 1
    assert 'error[field-type] field "x": type is Utf8, spec says float64' in proc.stdout
    # Derive on a wrong-typed id column: a clear error, exit 1 or 2, no output left.
    p2 = tmp_path / "w2.skeletons.parquet"
    cols = replace(skeleton_cols(), "parent_id", ("parent_id", F64, True, [None, 1.0, 2.0, 2.0, None, 10.0]))
    pq.write_table(table(cols, md()), p2)
    out = tmp_path / "o.skeletons.parquet"
    proc = cli("table", "derive", p2, out)
    assert proc.returncode in (1, 2) and "parent_id" in proc.stderr and str(p2) in proc.stderr
    assert not out.exists()


def test_bad_usage(cli, tmp_path):
    p = tmp_path / "g.skeletons.parquet"
    pq.write_table(skeleton(), p)
    proc = cli("table", "validate", "--schema", "nonsense", p)
    assert proc.returncode == 2 and "nonsense" in proc.stderr
    proc = cli("table", "convert", p, tmp_path / "out.csv")
    assert proc.returncode == 2 and "out.csv" in proc.stderr
    proc = cli("table", "convert", p, tmp_path / "h", "--partition-by", "nope")
    assert proc.returncode == 2 and "nope" in proc.stderr
    assert not (tmp_path / "h").exists()
    assert not [q for q in tmp_path.iterdir() if q.name.startswith(".")]


def test_bad_swc(cli, tmp_path):
    s = tmp_path / "bad.swc"
    s.write_text("1 1 0 0 0 1 -1\n2 3 x 0 0 1 1\n")
    proc = cli("table", "from-swc", s, tmp_path / "o.skeletons.parquet", "--context", "urn:x:y")
    assert proc.returncode == 2 and "bad.swc" in proc.stderr and "line 2" in proc.stderr


@pytest.mark.parametrize(
    "name,text,problem",
    [
        ("cycle", "1 1 0 0 0 1 2\n2 3 1 0 0 1 1\n", "cycle"),
        ("duplicate", "1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n2 3 2 0 0 1 1\n", "duplicate sample numbers"),
        ("dangling", "1 1 0 0 0 1 -1\n2 3 1 0 0 1 7\n", "not in the file"),
        ("no-root", "1 1 0 0 0 1 1\n", "no root"),
    ],
)
def test_swc_that_is_not_one_tree_is_refused_unless_allowed(cli, tmp_path, name, text, problem):
    s = tmp_path / f"{name}.swc"
    s.write_text(text)
    out = tmp_path / f"{name}.skeletons.parquet"
    proc = cli("table", "from-swc", s, out, "--context", "urn:x:y")
    assert proc.returncode == 1, proc.stderr
    assert f"{name}.swc" in proc.stderr and problem in proc.stderr, proc.stderr
    assert not out.exists()
    proc = cli("table", "from-swc", s, out, "--context", "urn:x:y", "--allow-invalid")
    assert proc.returncode == 0 and problem in proc.stderr, proc.stderr
    # pyarrow reads what was written, and the validator reports the broken tree.
    assert pq.read_table(out).num_rows == text.count("\n")
    assert cli.validate(out)[0] == 1


def test_json_shape(cli, tmp_path):
    p = tmp_path / "v.skeletons.parquet"
    pq.write_table(skeleton(parents=[None, None, 2, 2, None, 10]), p)
    code, reports = cli.validate(p)
    assert code == 1
    r = reports[0]
    assert set(r) >= {"valid", "errors", "warnings", "path", "schema", "rows"}
    assert r["valid"] is False and r["schema"] == "skeletons" and r["rows"] == 6
    e = r["errors"][0]
    assert e["rule"] == "skeleton-root-count" and e["location"] == "fragment 7"
    json.dumps(r)
