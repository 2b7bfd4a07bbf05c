"""Neuroglancer precomputed annotations both ways against Neuroglancer's Python package:
collections `neurochunk table convert IN.parquet LAYER --format precomputed [--sharded]` writes
from point cloud and connections tables, read by Neuroglancer's `AnnotationReader` through all
three indexes (by id, related segment, spatial); and collections Neuroglancer's
`AnnotationWriter` writes, read by `neurochunk table convert LAYER OUT.parquet` into tables
compared with pyarrow."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import neuroglancer
from neuroglancer.read_precomputed_annotations import AnnotationReader
from neuroglancer.write_annotations import AnnotationWriter

CONTEXT = "urn:uuid:0c7a3d1e-annotation-interop"
N = 40


def point_cloud(path):
    rng = np.random.default_rng(3)
    xyz = rng.integers(0, 1000, size=(N, 3)).astype(np.float64) * 2.0
    table = pa.table(
        {
            "sample_id": pa.array(np.arange(1000, 1000 + N), pa.uint64()),
            "fragment_id": pa.array(np.arange(N) % 4 + 7, pa.uint64()),
            "x": xyz[:, 0],
            "y": xyz[:, 1],
            "z": xyz[:, 2],
            "attr:score": pa.array(np.arange(N) / 4, pa.float32()),
            "attr:kind": pa.array(np.arange(N) % 5, pa.uint8()),
            "attr:depth": pa.array(-np.arange(N), pa.int16()),
        }
    )
    table = table.replace_schema_metadata(
        {"version": "0.2.1", "context": CONTEXT, "unit": "nanometer"}
    )
    pq.write_table(table, path)
    return table


def connections(path):
    rng = np.random.default_rng(5)
    pre = rng.integers(0, 500, size=(N, 3)).astype(np.float64)
    post = pre + rng.integers(1, 20, size=(N, 3))
    types = pa.array(["synapse" if i % 3 else "gap_junction" for i in range(N)]).dictionary_encode()
    table = pa.table(
        {
            "connection_id": pa.array(np.arange(1, N + 1), pa.uint64()),
            "src_sample_id": pa.array(np.arange(N) * 2, pa.uint64()),
            "tgt_sample_id": pa.array(np.arange(N) * 2 + 1, pa.uint64()),
            "type": types.cast(pa.dictionary(pa.uint16(), pa.string())),
            "src_fragment_id": pa.array(np.arange(N) % 3 + 100, pa.uint64()),
            "tgt_fragment_id": pa.array(np.arange(N) % 5 + 200, pa.uint64()),
            **{f"attr:pre_{a}": pre[:, k] for k, a in enumerate("xyz")},
            **{f"attr:post_{a}": post[:, k] for k, a in enumerate("xyz")},
        }
    )
    table = table.replace_schema_metadata(
        {"version": "0.2.1", "context": CONTEXT, "attr:unit": "micrometer"}
    )
    pq.write_table(table, path)
    return table


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
def test_point_cloud_read_by_neuroglancer(nc, tmp_path, sharded):
    src = tmp_path / "cells.pointclouds.parquet"
    table = point_cloud(src)
    layer = tmp_path / "cells"
    nc.run("table", "convert", src, layer, "--format", "precomputed", *(["--sharded"] if sharded else []))
    reader = AnnotationReader(f"file://{layer}/")
    assert reader.annotation_type == "point"
    assert list(reader.coordinate_space.names) == ["x", "y", "z"]
    assert list(reader.coordinate_space.units) == ["m"] * 3
    np.testing.assert_allclose(reader.coordinate_space.scales, [1e-9] * 3)
    names = [p.id for p in reader.properties]
    assert sorted(names) == ["depth", "kind", "score"]
    rows = table.to_pydict()
    for i in range(N):
        a = reader.by_id[int(rows["sample_id"][i])]
        np.testing.assert_array_equal(a.point, [rows["x"][i], rows["y"][i], rows["z"][i]])
        props = dict(zip(names, a.props))
        assert props["score"] == np.float32(rows["attr:score"][i])
        assert props["kind"] == rows["attr:kind"][i]
        assert props["depth"] == rows["attr:depth"][i]
        assert [int(s) for s in a.segments[0]] == [rows["fragment_id"][i]]
    for fragment in range(7, 11):
        related = reader.relationships["segments"][fragment]
        expected = {rows["sample_id"][i] for i in range(N) if rows["fragment_id"][i] == fragment}
        assert {int(a.id) for a in related} == expected
    found = {int(a.id) for a in reader.get_within_spatial_bounds()}
    assert found == set(rows["sample_id"])
    # Neuroglancer's bounds query within a box finds exactly the points inside it.
    lo, hi = [0, 0, 0], [1000, 1000, 2000]
    inside = {
        rows["sample_id"][i]
        for i in range(N)
        if all(lo[k] <= (rows["x"], rows["y"], rows["z"])[k][i] < hi[k] for k in range(3))
    }
    got = {int(a.id) for a in reader.get_within_spatial_bounds(lower_bound=lo, upper_bound=hi)}
    assert got == inside


@pytest.mark.parametrize("kind", ["line", "point"])
def test_connections_read_by_neuroglancer(nc, tmp_path, kind):
    src = tmp_path / "syn.connections.parquet"
    table = connections(src)
    layer = tmp_path / "syn"
    nc.run("table", "convert", src, layer, "--format", "precomputed", "--annotation-type", kind)
    reader = AnnotationReader(f"file://{layer}/")
    assert reader.annotation_type == kind
    np.testing.assert_allclose(reader.coordinate_space.scales, [1e-6] * 3)
    assert list(reader.relationships) == ["pre_segment", "post_segment", "pre_sample", "post_sample"]
    (type_spec,) = [p for p in reader.properties if p.id == "type"]
    labels = dict(zip(type_spec.enum_values, type_spec.enum_labels))
    rows = table.to_pydict()
    for i in range(N):
        a = reader.by_id[i + 1]
        post = [rows[f"attr:post_{c}"][i] for c in "xyz"]
        if kind == "line":
            np.testing.assert_array_equal(a.point_a, [rows[f"attr:pre_{c}"][i] for c in "xyz"])
            np.testing.assert_array_equal(a.point_b, post)
        else:
            np.testing.assert_array_equal(a.point, post)
        assert labels[int(a.props[0])] == rows["type"][i]
        assert [int(s) for s in a.segments[0]] == [rows["src_fragment_id"][i]]
        assert [int(s) for s in a.segments[1]] == [rows["tgt_fragment_id"][i]]
    partners = reader.relationships["post_segment"][202]
    assert {int(a.id) for a in partners} == {i + 1 for i in range(N) if i % 5 == 2}
    assert {int(a.id) for a in reader.get_within_spatial_bounds()} == set(range(1, N + 1))


def test_neuroglancer_collections_read_by_neurochunk(nc, tmp_path):
    space = neuroglancer.CoordinateSpace(names=["x", "y", "z"], units="nm", scales=[8, 8, 40])
    points = AnnotationWriter(
        coordinate_space=space,
        annotation_type="point",
        relationships=["segments"],
        properties=[
            neuroglancer.AnnotationPropertySpec(id="size", type="float32"),
            neuroglancer.AnnotationPropertySpec(id="level", type="int8"),
            neuroglancer.AnnotationPropertySpec(
                id="cls", type="uint8", enum_values=[0, 1], enum_labels=["bouton", "spine"]
            ),
        ],
    )
    for i in range(N):
        points.add_point([i, 2 * i, 3], id=500 + i, size=i / 2, level=-i, cls=i % 2, segments=[30 + i % 4])
    points.write(tmp_path / "ng_points")
    lines = AnnotationWriter(coordinate_space=space, annotation_type="line", relationships=["pre", "post"])
    for i in range(N):
        lines.add_line([i, 0, 1], [i, 5, 2], id=i + 1, pre=[60 + i], post=[90 + i])
    lines.write(tmp_path / "ng_lines")

    out = tmp_path / "ng_points.pointclouds.parquet"
    nc.run("table", "convert", tmp_path / "ng_points", out, "--context", CONTEXT)
    nc.run("table", "validate", "--strict", out)
    t = pq.read_table(out)
    assert t.schema.metadata[b"unit"] == b"nanometer"
    order = np.argsort(t["sample_id"].to_numpy())
    assert list(t["sample_id"].to_numpy()[order]) == [500 + i for i in range(N)]
    np.testing.assert_array_equal(t["x"].to_numpy()[order], [8.0 * i for i in range(N)])
    np.testing.assert_array_equal(t["y"].to_numpy()[order], [16.0 * i for i in range(N)])
    np.testing.assert_array_equal(t["z"].to_numpy()[order], [120.0] * N)
    np.testing.assert_array_equal(t["fragment_id"].to_numpy()[order], [30 + i % 4 for i in range(N)])
    np.testing.assert_array_equal(t["attr:size"].to_numpy()[order], np.arange(N, dtype=np.float32) / 2)
    np.testing.assert_array_equal(t["attr:level"].to_numpy()[order], -np.arange(N))
    cls = t["attr:cls"].cast(pa.string()).to_pylist()
    assert [cls[k] for k in order] == ["bouton" if i % 2 == 0 else "spine" for i in range(N)]

    out = tmp_path / "ng_lines.parquet"
    nc.run("table", "convert", tmp_path / "ng_lines", out, "--context", CONTEXT)
    nc.run("table", "validate", "--strict", "--schema", "connections", out)
    t = pq.read_table(out).sort_by("connection_id")
    assert t["connection_id"].to_pylist() == list(range(1, N + 1))
    assert t["src_fragment_id"].to_pylist() == [60 + i for i in range(N)]
    assert t["tgt_fragment_id"].to_pylist() == [90 + i for i in range(N)]
    np.testing.assert_array_equal(t["attr:pre_x"].to_numpy(), 8.0 * np.arange(N))
    np.testing.assert_array_equal(t["attr:post_y"].to_numpy(), [40.0] * N)
    np.testing.assert_array_equal(t["attr:post_z"].to_numpy(), [80.0] * N)
