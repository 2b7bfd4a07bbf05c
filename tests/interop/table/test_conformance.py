"""Conformance suite: tables written by pyarrow, each with the expected verdict
and the rule(s) it breaks; the neurochunk validator must agree on every one.

Cases V*/I* follow the digest's conformance list (section 6); C* are our own.
"""

from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from na_tables import (
    CTX,
    F64,
    U32,
    U64,
    connections,
    derived_cols,
    dotprops,
    md,
    pointcloud_cols,
    replace,
    skeleton,
    skeleton_cols,
    table,
)


def pq_out(name):
    def w(t, d):
        p = d / name
        pq.write_table(t, p)
        return [p]

    return w


def ipc_out(name, compression="lz4"):
    def w(t, d):
        p = d / name
        feather.write_feather(t, p, compression=compression)
        return [p]

    return w


SK = pq_out("t.skeletons.parquet")


@dataclass
class Case:
    id: str
    build: Callable  # (tmp_path) -> list of paths
    exit: int  # expected exit code: 0 valid, 1 invalid
    errors: set = field(default_factory=set)  # rules expected as errors
    warnings: set = field(default_factory=set)  # rules expected as warnings
    flags: tuple = ()
    no_warnings: bool = False  # the report must be completely clean


def one(t, writer=SK):
    return lambda d: writer(t, d)


def many(*pairs):
    def b(d):
        out = []
        for t, w in pairs:
            out += w(t, d)
        return out

    return b


def hive(t, by="fragment_id", name="h.skeletons"):
    def b(d):
        root = d / name
        ds.write_dataset(t, root, format="parquet", partitioning=[by], partitioning_flavor="hive",
                         basename_template="part-{i}.skeletons.parquet")
        return [root]

    return b


def hive_mixed_context(d):
    root = d / "mixed.skeletons"
    a = skeleton(ids=[1, 2], frags=[7, 7], parents=[None, 1])
    b = skeleton(metadata=md(context="urn:uuid:other"), ids=[10, 11], frags=[9, 9], parents=[None, 10])
    for t, f in ((a, 7), (b, 9)):
        sub = root / f"fragment_id={f}"
        sub.mkdir(parents=True)
        pq.write_table(t.drop_columns(["fragment_id"]), sub / "part-0.skeletons.parquet")
    return [root]


def ipc_stream_as_arrow(d):
    p = d / "s.skeletons.arrow"
    t = skeleton()
    with ipc.new_stream(p, t.schema) as w:
        w.write_table(t)
    return [p]


def parquet_named_arrow(d):
    p = d / "p.skeletons.arrow"
    pq.write_table(skeleton(), p)
    return [p]


def field_metadata(d):
    t = skeleton()
    s = t.schema
    i = s.get_field_index("x")
    s = s.set(i, s.field("x").with_metadata({"foo": "bar"}))
    return SK(t.cast(s), d)


def duplicate_x(d):
    cols = skeleton_cols() + [("x", F64, False, [0.0] * 6)]
    return SK(table(cols, md()), d)


def invalid_utf8(kind):
    def b(d):
        t = skeleton(metadata={b"version": b"0.2.1", b"context": b"\xff\xfe", b"unit": b"nanometer"})
        if kind == "parquet":
            p = d / "u.skeletons.parquet"
            pq.write_table(t, p)
        else:
            p = d / "u.skeletons.arrow"
            with ipc.new_file(p, t.schema) as w:
                w.write_table(t)
        return [p]

    return b


V2 = table(skeleton_cols() + [("radius", F64, True, [1.0, None, None, 0.5, 2.0, None])] + derived_cols(), md())
V6_CONN = connections(src_frag=[7, 7], tgt_frag=[9, 9])
ATTR_MAP = ("attr", pa.map_(pa.string(), pa.string()), True, [[("tag", "a")], None, [], None, [("k", "v")], None])
ATTR_BIN = ("attr", pa.map_(pa.string(), pa.binary()), True, [[("tag", b"a")], None, [], None, None, None])
SWC_COL = ("net.clbarnes.swc:type_id", pa.int64(), False, [1, 3, 3, 3, 1, 3])
SWC_MD = md(**{"net.clbarnes.swc:version": "0.1", "net.clbarnes.swc:type:1": "soma"})
BIG = [18446744073709551615, 9223372036854775808, 9223372036854775809, 18446744073709551614, 5, 6]

CASES = [
    # ---- valid (digest 6.1)
    Case("V1", one(skeleton()), 0, no_warnings=True),
    Case("V1-arrow-lz4", one(skeleton(), ipc_out("t.skeletons.arrow")), 0, no_warnings=True),
    Case("V1-arrow-zstd", one(skeleton(), ipc_out("t.skeletons.feather", "zstd")), 0, no_warnings=True),
    Case("V2", one(V2), 0, no_warnings=True),
    Case("V3", one(skeleton(metadata=md(unit=""))), 0, no_warnings=True),
    Case("V4", one(table(pointcloud_cols(), md(space="https://example.org/space/FAFB", **{"frag:7:name": "DA1_lPN_R", "attr:acquired": "2024-01-01"})), pq_out("t.pointclouds.parquet")), 0, no_warnings=True),
    Case("V5", one(dotprops(), pq_out("t.dotprops.parquet")), 0, no_warnings=True),
    Case("V6", many((skeleton(), SK), (V6_CONN, pq_out("t.connections.parquet"))), 0, no_warnings=True),
    Case("V7", one(table(skeleton_cols() + [ATTR_MAP, ("attr:note", pa.string(), True, ["n", None, None, None, None, None])], md())), 0, no_warnings=True),
    Case("V7-binary", one(table(skeleton_cols() + [ATTR_BIN], md())), 0, no_warnings=True),
    Case("V8", one(table(skeleton_cols() + [SWC_COL], SWC_MD)), 0, no_warnings=True),
    Case("V9", one(connections(metadata=md(unit=None, **{"com.example.ext:version": "1.0"}), types=("com.example.ext:electrical", "synapse")), pq_out("t.connections.parquet")), 0, no_warnings=True),
    Case("V10", one(skeleton(ids=[], frags=[], parents=[], x=[])), 0, no_warnings=True),
    Case("V11", one(skeleton(ids=BIG, frags=[7, 7, 7, 7, 9, 9], parents=[None, BIG[0], BIG[1], BIG[1], None, 5])), 0, no_warnings=True),
    Case("V12-arrow", one(V6_CONN, ipc_out("t.connections.arrow")), 0, no_warnings=True),
    Case("V14", hive(skeleton()), 0, no_warnings=True),
    Case("V15", one(skeleton(metadata=md(version="v0.2.1"))), 0, warnings={"version-normalized"}),
    # ---- invalid (digest 6.2)
    Case("I1", one(table(skeleton_cols(ids=[0, 1, 2, 3], frags=[0] * 4, parents=[None, 0, 1, 1]) + [("radius", F64, True, [1.0, None, None, 0.5])], {"version": "0.2", "unit": "nanometer"})), 1, errors={"metadata-required"}),
    Case("I2", one(skeleton(metadata=md(unit=None))), 1, errors={"metadata-required"}),
    *[Case(f"I3-{u}", one(skeleton(metadata=md(unit=u))), 1, errors={"unit-invalid"}) for u in ("nm", "micron", "Nanometer", "nanometers", "metre", "decameter")],
    Case("I4", one(skeleton(metadata=md(version="latest"))), 1, errors={"version-pep440"}),
    Case("I5", one(table(skeleton_cols()[:5], md())), 1, errors={"field-required"}),
    Case("I6-lenient", one(table(replace(skeleton_cols(), "sample_id", ("sample_id", pa.int64(), False, [1, 2, 3, 4, 10, 11])), md())), 0, warnings={"field-type-cast"}),
    Case("I6-strict", one(table(replace(skeleton_cols(), "sample_id", ("sample_id", pa.int64(), False, [1, 2, 3, 4, 10, 11])), md())), 1, errors={"field-type-cast"}, flags=("--strict",)),
    Case("I7-lenient", one(table(replace(skeleton_cols(), "sample_id", ("sample_id", U64, True, [1, 2, 3, 4, 10, 11])), md())), 0, no_warnings=True),
    Case("I7-strict", one(table(replace(skeleton_cols(), "sample_id", ("sample_id", U64, True, [1, 2, 3, 4, 10, 11])), md())), 1, errors={"field-nullability"}, flags=("--strict",)),
    Case("I8", one(table(replace(skeleton_cols(), "x", ("x", F64, True, [0.0, None, 1.0, 1.0, 1.0, 1.0])), md())), 1, errors={"field-null"}),
    Case("I9", one(skeleton(ids=[1, 2, 3, 3, 10, 11])), 1, errors={"sample-id-unique"}),
    Case("I10", one(skeleton(parents=[None, 1, 2, 2, None, None])), 1, errors={"skeleton-root-count"}),
    Case("I11", one(skeleton(parents=[2, 1, 2, 2, None, 10])), 1, errors={"skeleton-root-count", "skeleton-cycle"}),
    Case("I12", one(skeleton(parents=[None, 1, 2, 99, None, 10])), 1, errors={"skeleton-parent-missing"}),
    Case("I13", one(skeleton(parents=[None, 1, 2, 2, None, 4])), 1, errors={"skeleton-parent-fragment"}),
    Case("I14", one(skeleton(parents=[None, 1, 3, 2, None, 10])), 1, errors={"skeleton-self-parent"}),
    Case("I15-n-lenient", one(table(skeleton_cols() + derived_cols(n_children=[5, 2, 0, 0, 1, 0]), md())), 0, warnings={"derived-n-children"}),
    Case("I15-n-strict", one(table(skeleton_cols() + derived_cols(n_children=[5, 2, 0, 0, 1, 0]), md())), 1, errors={"derived-n-children"}, flags=("--strict",)),
    Case("I15-strahler", one(table(skeleton_cols() + derived_cols(strahler=[1, 2, 1, 1, 1, 1]), md())), 0, warnings={"derived-strahler"}),
    Case("I15-child-ids", one(table(skeleton_cols() + derived_cols(child_ids=[[2], [3], [], [], [11], []]), md())), 1, errors={"derived-child-ids"}, flags=("--strict",)),
    Case("I16", one(table(skeleton_cols() + derived_cols(child_ids=[[2], [3, 4], None, [], [11], []]), md())), 0, warnings={"derived-leaf-null"}),
    Case("I17", one(table(skeleton_cols() + [("attr", pa.map_(pa.string(), pa.int64()), True, [None] * 6)], md())), 1, errors={"attr-field"}),
    Case("I18", one(table(skeleton_cols() + [("attr", pa.map_(pa.string(), pa.string()), True, [[("attr:x", "1")], None, None, None, None, None])], md())), 0, warnings={"attr-key-prefix"}),
    Case("I19", one(table(skeleton_cols() + [("com.example.ext:foo", pa.int64(), True, [1] * 6)], md())), 1, errors={"extension-version"}),
    Case("I20", one(table(skeleton_cols() + [SWC_COL], md(**{"net.clbarnes.swc:version": "one"}))), 1, errors={"version-pep440"}),
    Case("I21-lenient", one(table(skeleton_cols() + [("foo", pa.int64(), True, [1] * 6)], md())), 0, warnings={"field-unknown"}),
    Case("I21-strict", one(table(skeleton_cols() + [("foo", pa.int64(), True, [1] * 6)], md())), 1, errors={"field-unknown"}, flags=("--strict",)),
    Case("I22-lenient", one(skeleton(metadata=md(foo="bar"))), 0, warnings={"metadata-unknown"}),
    Case("I22-strict", one(skeleton(metadata=md(foo="bar"))), 1, errors={"metadata-unknown"}, flags=("--strict",)),
    Case("I22-pandas-ignored", one(skeleton(metadata=md(pandas="{}")), ), 0, no_warnings=True, flags=("--strict",)),
    Case("I23", one(dotprops(metadata=md()), pq_out("t.dotprops.parquet")), 1, errors={"metadata-required"}),
    *[Case(f"I24-{i}", one(dotprops(metadata=md(neighborhood_size=v)), pq_out("t.dotprops.parquet")), 1, errors={"neighborhood-size"}) for i, v in enumerate(["-5", "5.0", " 5", "five", ""])],
    Case("I25", one(dotprops(colinearity=(0.1, None, 1.0), col_nullable=True), pq_out("t.dotprops.parquet")), 1, errors={"field-null"}),
    Case("I26-lenient", one(dotprops(colinearity=(0.1, 1.5, 1.0)), pq_out("t.dotprops.parquet")), 0, warnings={"colinearity-range"}),
    Case("I26-strict", one(dotprops(colinearity=(0.1, 1.5, 1.0)), pq_out("t.dotprops.parquet")), 1, errors={"colinearity-range"}, flags=("--strict",)),
    Case("I27", one(dotprops(tangent=[(1.0, 1.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]), pq_out("t.dotprops.parquet")), 0, warnings={"tangent-normalized"}),
    *[Case(f"I28-{v}", one(connections(types=("synapse", v)), pq_out("t.connections.parquet")), 1, errors={"connection-type"}) for v in ("gapjunction", "chemical")],
    Case("I29", one(connections(types=("com.example.ext:electrical", "synapse")), pq_out("t.connections.parquet")), 1, errors={"connection-type"}),
    Case("I30-utf8-lenient", one(connections(type_kind="utf8"), pq_out("t.connections.parquet")), 0, warnings={"field-type-cast"}),
    Case("I30-utf8-strict", one(connections(type_kind="utf8"), pq_out("t.connections.parquet")), 1, errors={"field-type-cast"}, flags=("--strict",)),
    Case("I30-dict32-strict", one(connections(type_kind="dict32"), ipc_out("t.connections.arrow")), 1, errors={"field-type-cast"}, flags=("--strict",)),
    Case("I31", one(connections(ids=(1, 1)), pq_out("t.connections.parquet")), 1, errors={"connection-id-unique"}),
    Case("I32", one(connections(src=(3, 11), tgt=(11, 3), types=("gap_junction", "gap_junction")), pq_out("t.connections.parquet")), 0, warnings={"gap-junction-duplicate"}),
    Case("I33", many((skeleton(), SK), (connections(src=(999, 4)), pq_out("t.connections.parquet"))), 1, errors={"connection-sample-missing"}),
    Case("I34-lenient", many((skeleton(), SK), (connections(src_frag=[9, 7], tgt_frag=[9, 9]), pq_out("t.connections.parquet"))), 0, warnings={"derived-fragment-id"}),
    Case("I34-strict", many((skeleton(), SK), (connections(src_frag=[9, 7], tgt_frag=[9, 9]), pq_out("t.connections.parquet"))), 1, errors={"derived-fragment-id"}, flags=("--strict",)),
    Case("I35", many((skeleton(metadata=md(space="A")), SK), (dotprops(metadata=md(space="B", neighborhood_size="5")), pq_out("t.dotprops.parquet"))), 1, errors={"context-space"}),
    Case("I36", many((skeleton(), SK), (table(pointcloud_cols(ids=[1, 50, 51, 52, 53, 54]), md()), pq_out("t.pointclouds.parquet"))), 1, errors={"context-id-unique"}),
    Case("I37-parquet", invalid_utf8("parquet"), 1, errors={"metadata-encoding"}),
    Case("I37-arrow", invalid_utf8("arrow"), 1, errors={"metadata-encoding"}),
    Case("I38", duplicate_x, 1, errors={"field-duplicate"}),
    Case("I39", field_metadata, 0, warnings={"field-metadata"}),
    Case("I40", one(table(pointcloud_cols(), md(**{"frag:abc:name": "x"})), pq_out("t.pointclouds.parquet")), 0, warnings={"frag-key-format"}),
    Case("I41", one(connections(metadata=md(unit=None, **{"frag:1:name": "x"})), pq_out("t.connections.parquet")), 1, errors={"frag-key-schema"}),
    Case("I42", hive_mixed_context, 1, errors={"hive-metadata"}),
    Case("I43", one(skeleton(), pq_out("brain.parquet")), 0, warnings={"file-name"}),
    # ---- our own cases
    Case("C1-parquet-named-arrow", parquet_named_arrow, 1, errors={"file-format"}),
    Case("C2-ipc-stream-as-arrow", ipc_stream_as_arrow, 1, errors={"file-format"}),
    Case("C3-frag-key-unknown-fragment", one(table(pointcloud_cols(), md(**{"frag:8:name": "x"})), pq_out("t.pointclouds.parquet")), 0, warnings={"frag-key-fragment"}),
    Case("C4-version-0.1", one(skeleton(metadata=md(version="0.1"))), 1, errors={"version-unsupported"}),
    Case("C5-version-newer", one(skeleton(metadata=md(version="0.3.0"))), 0, warnings={"version-newer"}),
    Case("C6-swc-type-key", one(table(skeleton_cols() + [SWC_COL], md(**{"net.clbarnes.swc:version": "0.1", "net.clbarnes.swc:type:soma": "1"}))), 1, errors={"extension-key"}),
    Case("C7-swc-missing-type-id", one(table(skeleton_cols(), SWC_MD)), 1, errors={"field-required"}),
    Case("C8-radius-negative", one(table(skeleton_cols() + [("radius", F64, True, [1.0, -2.0, None, 1.0, float("nan"), 1.0])], md())), 0, warnings={"radius-value"}),
    Case("C9-x-infinite", one(skeleton(x=[0.0, float("inf"), 1.0, 1.0, 1.0, 1.0])), 0, warnings={"coordinate-finite"}),
    Case("C10-child-ids-null-item", one(table(skeleton_cols() + derived_cols(child_ids=[[2], [3, None], [], [], [11], []]), md())), 1, errors={"derived-null-item"}),
    Case("C11-radius-declared-non-null-strict", one(table(skeleton_cols() + [("radius", F64, False, [1.0] * 6)], md())), 1, errors={"field-nullability"}, flags=("--strict",)),
    Case("C12-big-ids-cycle", one(skeleton(ids=BIG, frags=[7] * 6, parents=[BIG[1], BIG[0], None, BIG[2], BIG[3], 5])), 1, errors={"skeleton-cycle"}),
    Case("C13-context-not-iri", one(skeleton(metadata=md(context="some-context"))), 0, warnings={"context-format"}),
    Case("C14-unknown-extension-ok", one(table(skeleton_cols() + [("org.example.x:foo", pa.int64(), True, [1] * 6)], md(**{"org.example.x:version": "2"}))), 0, no_warnings=True),
    Case("C15-abstract-schema", one(table([], md()), pq_out("t.base.parquet")), 0, warnings={"abstract-schema"}, flags=("--schema", "base")),
    Case("C16-forced-dotprops", one(skeleton()), 1, errors={"field-required", "metadata-required"}, flags=("--schema", "dotprops")),
    Case("C17-self-connection", one(connections(src=(3, 4), tgt=(3, 10)), pq_out("t.connections.parquet")), 0, warnings={"self-connection"}),
    Case("C18-null-type-value", lambda d: null_dictionary_value(d), 1, errors={"field-null"}),
    Case("C19-hive-bad-partition-value", lambda d: hive_bad_value(d), 1, errors={"field-type"}),
    Case("C20-colinearity-nan", one(dotprops(colinearity=(0.1, float("nan"), 1.0)), pq_out("t.dotprops.parquet")), 0, warnings={"colinearity-range"}),
    Case("C21-dataset-space-missing", many((skeleton(metadata=md(space="https://x.org/s")), SK), (table(pointcloud_cols(ids=[60, 61, 62, 63, 64, 65]), md()), pq_out("t.pointclouds.parquet"))), 0, warnings={"context-space-missing"}),
    Case("C22-dataset-other-context-no-clash", many((skeleton(), SK), (table(pointcloud_cols(), md(context="urn:uuid:another")), pq_out("t.pointclouds.parquet"))), 0, no_warnings=True),
    Case("C23-connectors-sidecar", one(table([("connector_id", U64, False, [1, 2]), ("x", F64, False, [0.0, 1.0]), ("y", F64, False, [0.0, 1.0]), ("z", F64, False, [0.0, 1.0]), ("src_sample_ids", pa.list_(U64), True, [[3], [4]]), ("tgt_sample_ids", pa.list_(U64), True, [[11], [10]])], md(**{"net.clbarnes.connectors:version": "0.2"})), pq_out("t.connectors.parquet")), 0, no_warnings=True),
    Case("C24-connectors-missing-version", one(table([("connector_id", U64, False, [1, 1]), ("x", F64, False, [0.0, 1.0]), ("y", F64, False, [0.0, 1.0]), ("z", F64, False, [0.0, 1.0])], md()), pq_out("t.connectors.parquet")), 1, errors={"metadata-required", "id-unique"}),
    Case("C25-wrong-type-float-ids", one(table(replace(skeleton_cols(), "sample_id", ("sample_id", F64, False, [1.0, 2.0, 3.0, 4.0, 10.0, 11.0])), md())), 1, errors={"field-type"}),
    Case("C26-unknown-schema", one(table([("a", pa.int64(), False, [1])], md()), pq_out("data.parquet")), 1, errors={"schema-unknown"}),
    Case("C27-duplicate-gj-same-direction-ok", one(connections(src=(3, 3), tgt=(11, 11), types=("gap_junction", "synapse")), pq_out("t.connections.parquet")), 0, no_warnings=True),
]


def null_dictionary_value(d):
    """A non-null key pointing at a null dictionary value counts as a null type."""
    t = connections()
    arr = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.uint16()), pa.array(["synapse", None]))
    t = t.set_column(3, pa.field("type", arr.type, False), arr)
    p = d / "t.connections.arrow"
    feather.write_feather(t, p)
    return [p]


def hive_bad_value(d):
    root = d / "bad.skeletons"
    sub = root / "fragment_id=abc"
    sub.mkdir(parents=True)
    pq.write_table(skeleton().drop_columns(["fragment_id"]), sub / "part-0.skeletons.parquet")
    return [root]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_conformance(cli, tmp_path, case):
    paths = case.build(tmp_path)
    code, reports = cli.validate(*paths, flags=case.flags)
    errors = {e["rule"] for r in reports for e in r["errors"]}
    warnings = {w["rule"] for r in reports for w in r["warnings"]}
    detail = [(e["rule"], e["location"], e["message"]) for r in reports for e in r["errors"] + r["warnings"]]
    assert code == case.exit, detail
    assert all(r["valid"] == (not r["errors"]) for r in reports)
    assert case.errors <= errors, detail
    assert case.warnings <= warnings, detail
    if case.exit == 0:
        assert not errors, detail
    if case.no_warnings:
        assert not warnings, detail
    for r in reports:
        for v in r["errors"] + r["warnings"]:
            assert v["rule"] and v["location"] and v["message"]


def test_human_output_names_rule_and_location(cli, tmp_path):
    paths = one(skeleton(parents=[None, 1, 2, 99, None, 10]))(tmp_path)
    proc = cli("table", "validate", *paths)
    assert proc.returncode == 1
    lines = [l for l in proc.stdout.splitlines() if "error[" in l]
    assert len(lines) == 1
    assert "error[skeleton-parent-missing]" in lines[0]
    assert "row 3 (sample_id 4)" in lines[0] and "99" in lines[0]
