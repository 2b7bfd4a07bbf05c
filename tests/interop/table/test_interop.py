"""Tables written by neurochunk read by pyarrow (schema, metadata, values), and
pyarrow-written tables converted by neurochunk."""

import json

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from na_tables import CTX, F64, U64, connections, derived_cols, md, skeleton, skeleton_cols, table

BIG = [18446744073709551615, 9223372036854775808, 9223372036854775809, 18446744073709551614, 5, 6]
NEURO_KEYS = {b"version", b"context", b"unit"}


def big_skeleton():
    return skeleton(ids=BIG, frags=[7, 7, 7, 7, 9, 9], parents=[None, BIG[0], BIG[1], BIG[1], None, 5])


def read_any(path):
    if str(path).endswith((".arrow", ".feather")):
        with pa.memory_map(str(path)) as src:
            return ipc.open_file(src).read_all()
    return pq.read_table(path)


@pytest.mark.parametrize("out", ["o.skeletons.parquet", "o.skeletons.arrow"])
@pytest.mark.parametrize("src_kind", ["parquet", "arrow"])
def test_convert_roundtrip_preserves_schema_metadata_and_big_ids(cli, tmp_path, out, src_kind):
    t = big_skeleton()
    src = tmp_path / f"in.skeletons.{src_kind}"
    if src_kind == "parquet":
        pq.write_table(t, src)
    else:
        feather.write_feather(t, src)
    dst = tmp_path / out
    cli("table", "convert", src, dst, check=0)
    back = read_any(dst)
    assert back.schema.equals(t.schema, check_metadata=True), (back.schema, t.schema)
    assert back.column("sample_id").to_pylist() == BIG
    assert back.column("sample_id").type == pa.uint64()
    assert back.equals(t)
    if out.endswith(".parquet"):
        # Visible as plain footer key/values (pq.read_metadata, navis), not only ARROW:schema.
        kv = pq.read_metadata(dst).metadata
        assert NEURO_KEYS <= set(kv), kv
        assert kv[b"context"] == CTX.encode()
        assert pq.read_schema(dst).metadata[b"unit"] == b"nanometer"
        # uint64 is annotated as unsigned in Parquet, so >= 2^63 survives.
        assert pq.read_schema(dst).field("sample_id").type == pa.uint64()
        assert not pq.read_schema(dst).field("sample_id").nullable


@pytest.mark.parametrize("out", ["c.connections.parquet", "c.connections.arrow"])
def test_dictionary_type_preserved(cli, tmp_path, out):
    t = connections(src_frag=[7, 7], tgt_frag=[9, 9])
    src = tmp_path / "in.connections.parquet"
    pq.write_table(t, src)
    dst = tmp_path / out
    cli("table", "convert", src, dst, check=0)
    back = read_any(dst)
    assert back.schema.field("type").type == pa.dictionary(pa.uint16(), pa.string())
    assert back.column("type").to_pylist() == ["synapse", "gap_junction"]
    assert not back.schema.field("type").nullable
    assert back.schema.metadata == t.schema.metadata


def test_hive_written_by_neurochunk_read_by_pyarrow_dataset(cli, tmp_path):
    t = big_skeleton()
    src = tmp_path / "in.skeletons.parquet"
    pq.write_table(t, src)
    out = tmp_path / "hive.skeletons"
    cli("table", "convert", src, out, "--partition-by", "fragment_id", check=0)
    parts = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.parquet"))
    assert parts == ["fragment_id=7/part-0.skeletons.parquet", "fragment_id=9/part-0.skeletons.parquet"]
    part_schema = pa.schema([pa.field("fragment_id", pa.uint64())])
    dset = ds.dataset(out, format="parquet", partitioning=ds.partitioning(part_schema, flavor="hive"))
    back = dset.to_table().sort_by("sample_id")
    want = t.sort_by("sample_id")
    assert back.column("sample_id").to_pylist() == want.column("sample_id").to_pylist()
    assert back.column("fragment_id").to_pylist() == want.column("fragment_id").to_pylist()
    assert back.column("parent_id").to_pylist() == want.column("parent_id").to_pylist()
    # Every part file carries the metadata, in the footer key/values too.
    for p in out.rglob("*.parquet"):
        assert NEURO_KEYS <= set(pq.read_metadata(p).metadata)
        assert pq.read_schema(p).metadata[b"context"] == CTX.encode()
    # The common metadata file has the full logical schema.
    common = pq.read_schema(out / "_common_metadata")
    assert common.field("fragment_id").type == pa.uint64() and not common.field("fragment_id").nullable
    # And neurochunk reads it back as one valid logical table with fragment_id restored.
    code, reports = cli.validate(out)
    assert code == 0 and reports[0]["rows"] == 6, reports
    info = json.loads(cli("table", "info", "--json", out, check=0).stdout)
    assert info["partitions"] == ["fragment_id"]
    assert {"name": "fragment_id", "type": "UInt64", "nullable": False} in info["fields"]
    assert info["fragments"]["rows"] == [[7, 4], [9, 2]]


def test_hive_from_pyarrow_converted_to_single_file(cli, tmp_path):
    t = skeleton()
    root = tmp_path / "py.skeletons"
    ds.write_dataset(t, root, format="parquet", partitioning=["fragment_id"], partitioning_flavor="hive")
    dst = tmp_path / "flat.skeletons.arrow"
    cli("table", "convert", root, dst, check=0)
    back = read_any(dst)
    assert back.schema.field("fragment_id").type == pa.uint64()
    assert not back.schema.field("fragment_id").nullable
    assert back.schema.metadata == t.schema.metadata
    assert sorted(zip(back.column("sample_id").to_pylist(), back.column("fragment_id").to_pylist())) == sorted(
        zip(t.column("sample_id").to_pylist(), t.column("fragment_id").to_pylist())
    )


def test_hive_partitions_that_disagree_in_schema_fail_strict_validation(cli, tmp_path):
    t = skeleton()
    root = tmp_path / "mixed.skeletons"
    ds.write_dataset(t, root, format="parquet", partitioning=["fragment_id"], partitioning_flavor="hive")
    parts = sorted(root.rglob("*.parquet"))
    assert len(parts) >= 2
    code, reports = cli.validate(root, flags=("--strict",))
    assert code == 0, reports
    # One part file stores x as float32 and carries a column the others do not have.
    part = pq.read_table(parts[-1])
    x = part.schema.get_field_index("x")
    changed = part.set_column(x, pa.field("x", pa.float32(), nullable=False), part.column("x").cast(pa.float32()))
    changed = changed.append_column("stray", pa.array(range(changed.num_rows), pa.int64()))
    pq.write_table(changed.replace_schema_metadata(part.schema.metadata), parts[-1])

    code, reports = cli.validate(root)
    assert code == 0, reports
    warnings = [w for w in reports[0]["warnings"] if w["rule"] == "hive-schema"]
    assert warnings and parts[-1].name in warnings[0]["location"], reports
    assert "Float32" in warnings[0]["message"] and "stray" in warnings[0]["message"], warnings
    code, reports = cli.validate(root, flags=("--strict",))
    assert code == 1, reports
    assert any(e["rule"] == "hive-schema" for e in reports[0]["errors"]), reports


def test_derive_skeleton_values_read_by_pyarrow(cli, tmp_path):
    src = tmp_path / "in.skeletons.parquet"
    # Stale derived columns are replaced.
    pq.write_table(table(skeleton_cols() + derived_cols(n_children=[9] * 6), md()), src)
    dst = tmp_path / "out.skeletons.parquet"
    cli("table", "derive", src, dst, check=0)
    back = pq.read_table(dst)
    assert back.column("child_ids").to_pylist() == [[2], [3, 4], [], [], [11], []]
    assert back.column("n_children").to_pylist() == [1, 2, 0, 0, 1, 0]
    assert back.column("strahler").to_pylist() == [2, 2, 1, 1, 1, 1]
    assert back.schema.field("child_ids").type == pa.list_(pa.uint64())
    assert back.schema.field("n_children").type == pa.uint32()
    assert back.schema.metadata == pq.read_schema(src).metadata
    code, reports = cli.validate(dst, flags=("--strict",))
    assert code == 0 and not reports[0]["warnings"], reports


def test_derive_connections_fragments(cli, tmp_path):
    sk = tmp_path / "a.skeletons.parquet"
    pq.write_table(skeleton(), sk)
    src = tmp_path / "in.connections.arrow"
    feather.write_feather(connections(src=(3, 4), tgt=(11, 555)), src)
    dst = tmp_path / "out.connections.arrow"
    proc = cli("table", "derive", src, dst, "--samples", sk, check=0)
    assert "1 connection endpoint" in proc.stderr
    back = read_any(dst)
    assert back.column("src_fragment_id").to_pylist() == [7, 7]
    assert back.column("tgt_fragment_id").to_pylist() == [9, None]
    assert back.schema.field("type").type == pa.dictionary(pa.uint16(), pa.string())


def test_derive_refuses_invalid_tree(cli, tmp_path):
    src = tmp_path / "bad.skeletons.parquet"
    pq.write_table(skeleton(parents=[2, 1, 2, 2, None, 10]), src)
    proc = cli("table", "derive", src, tmp_path / "o.skeletons.parquet", check=1)
    assert "bad.skeletons.parquet" in proc.stderr and "cycle" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o.skeletons.parquet").exists()


SWC = """# ORIGINAL_SOURCE test
#   indented line
# <swcPlus version="0.3">
#   <customTypes>
#     <marker id="16" name="Spine"/>
#   </customTypes>
# </swcPlus>
1 1 0.5 1.25 -3 4.5 -1
2 3 1 2 3 -1 1
3 3 1.5 2.5 3.5 0.75 2
4 16 2 2 2 0.1 2
"""


def test_swc_import_export(cli, tmp_path):
    swc = tmp_path / "42.swc"
    swc.write_text(SWC)
    out = tmp_path / "n.skeletons.parquet"
    cli("table", "from-swc", swc, out, "--context", CTX, check=0)
    t = pq.read_table(out)
    m = t.schema.metadata
    assert m[b"unit"] == b"micrometer" and m[b"net.clbarnes.swc:version"] == b"0.1"
    assert m[b"net.clbarnes.swc:type:16"] == b"Spine"
    assert m[b"net.clbarnes.swc:type:1"] == b"soma"
    assert m[b"net.clbarnes.swc:header:42"].decode().startswith("ORIGINAL_SOURCE test\n  indented line\n<swcPlus")
    assert t.column("sample_id").to_pylist() == [1, 2, 3, 4]
    assert t.column("fragment_id").to_pylist() == [42] * 4
    assert t.column("parent_id").to_pylist() == [None, 1, 2, 2]
    assert t.column("radius").to_pylist() == [4.5, None, 0.75, 0.1]  # negative -> null
    assert t.column("net.clbarnes.swc:type_id").to_pylist() == [1, 3, 3, 16]
    assert t.schema.field("net.clbarnes.swc:type_id").type == pa.int64()
    assert not t.schema.field("net.clbarnes.swc:type_id").nullable
    assert cli.validate(out)[0] == 0
    back = tmp_path / "back.swc"
    cli("table", "to-swc", out, back, check=0)
    data = [l.split() for l in back.read_text().splitlines() if l and not l.startswith("#")]
    orig = [l.split() for l in SWC.splitlines() if l and not l.startswith("#")]
    assert [[float(v) for v in r] for r in data] == [[float(v) for v in r] for r in orig]
    header = [l for l in back.read_text().splitlines() if l.startswith("#")]
    assert header[0] == "# ORIGINAL_SOURCE test" and header[1] == "#   indented line"


def test_swc_many_files_shift_colliding_ids(cli, tmp_path):
    d = tmp_path / "swcs"
    d.mkdir()
    (d / "1.swc").write_text("1 1 0 0 0 1 -1\n2 3 1 0 0 1 1\n")
    (d / "2.swc").write_text("1 1 5 0 0 1 -1\n2 3 6 0 0 1 1\n3 3 7 0 0 1 2\n")
    out = tmp_path / "all.skeletons.arrow"
    cli("table", "from-swc", d, out, "--context", CTX, "--unit", "nanometer", check=0)
    t = read_any(out)
    ids = t.column("sample_id").to_pylist()
    assert len(set(ids)) == 5
    assert cli.validate(out)[0] == 0
    outdir = tmp_path / "exported"
    cli("table", "to-swc", out, outdir, check=0)
    assert (outdir / "2.swc").read_text().split("\n")[0].split()[0] == "1"
    assert [l.split()[6] for l in (outdir / "2.swc").read_text().splitlines()] == ["-1", "1", "2"]


def test_demo_tables_readable_by_pyarrow(cli, tmp_path):
    """`neurochunk demo DIR` writes skeleton and connection tables and validates them."""
    r = cli("demo", tmp_path)
    assert "unrecognized" not in r.stderr and "unexpected" not in r.stderr, (
        f"this neurochunk binary has no `demo DIR` subcommand: {r.stderr}"
    )
    assert r.returncode == 0, r.stderr
    sk = next(tmp_path.rglob("demo.skeletons.parquet"))
    cn = next(tmp_path.rglob("demo.connections.parquet"))
    t = pq.read_table(sk)
    assert t.num_rows == 1200 and t.schema.field("strahler").type == pa.uint32()
    c = pq.read_table(cn)
    assert c.schema.field("type").type == pa.dictionary(pa.uint16(), pa.string())
    assert pq.read_metadata(cn).metadata[b"context"] == pq.read_metadata(sk).metadata[b"context"]
    code, reports = cli.validate(sk, cn, flags=("--strict",))
    assert code == 0 and all(r["valid"] and not r["warnings"] for r in reports), reports
