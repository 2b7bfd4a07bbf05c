"""Neuroglancer precomputed skeletons, meshes and annotations through `neurochunk.precomputed`:
round trips (unsharded and sharded, gzip, every geometry and property type), the skeleton
table conversion both ways, and damaged or wrong input, which raises an error naming the
file rather than crashing."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import neurochunk as nc
from neurochunk import precomputed as pc

CONTEXT = "urn:uuid:0c4f1d1e-python-precomputed"


def tree(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A random tree: vertex i > 0 hangs from an earlier vertex, edges (child, parent)."""
    rng = np.random.default_rng(seed)
    vertices = (rng.random((n, 3)) * 1000).astype(np.float32)
    edges = np.array([(i, int(rng.integers(0, i))) for i in range(1, n)], dtype=np.uint32).reshape(-1, 2)
    return vertices, edges


def sample_skeletons() -> dict[int, dict]:
    out = {}
    for segid, n in [(3, 20), (2**40 + 5, 50), (9, 1)]:
        v, e = tree(segid % 1000, n)
        rng = np.random.default_rng(segid % 997)
        out[segid] = {
            "vertices": v,
            "edges": e,
            "attributes": {
                "radius": rng.random(n).astype(np.float32) * 10,
                "vertex_types": rng.integers(0, 8, n).astype(np.uint8),
                "normal": rng.integers(-100, 100, (n, 3)).astype(np.int16),
            },
        }
    return out


# --- skeletons -------------------------------------------------------------------------------


@pytest.mark.parametrize("sharded", [False, True])
def test_skeletons_round_trip(tmp_path: Path, sharded: bool) -> None:
    data = sample_skeletons()
    layer_dir = tmp_path / "skel"
    assert pc.write_skeletons(layer_dir, data, sharded=sharded) == 3
    layer = pc.skeletons(layer_dir)
    assert layer.sharded is sharded
    assert layer.segment_ids() == sorted(data)
    assert len(layer) == 3
    assert layer.vertex_attributes == {"radius": ("float32", 1), "vertex_types": ("uint8", 1), "normal": ("int16", 3)}
    for segid, want in data.items():
        s = layer.get(segid)
        assert s.segment_id == segid
        assert s.vertices.dtype == np.float32 and s.vertices.shape == (len(want["vertices"]), 3)
        assert s.edges.dtype == np.uint32 and s.edges.shape == want["edges"].shape
        np.testing.assert_array_equal(s.vertices, want["vertices"])
        np.testing.assert_array_equal(s.edges, want["edges"])
        for name, values in want["attributes"].items():
            assert s.attributes[name].dtype == values.dtype
            np.testing.assert_array_equal(s.attributes[name], values)
    assert [s.segment_id for s in layer] == sorted(data)
    assert 3 in layer and 4 not in layer
    with pytest.raises(nc.NodeNotFoundError, match="segment 4"):
        layer.get(4)
    with pytest.raises(KeyError):
        layer[4]


def test_skeleton_transform_is_applied(tmp_path: Path) -> None:
    v, e = tree(1, 5)
    transform = [2, 0, 0, 8, 0, 2, 0, 0, 0, 0, 4, -40]
    pc.write_skeletons(tmp_path / "s", {1: (v, e)}, transform=transform)
    layer = pc.skeletons(tmp_path / "s")
    np.testing.assert_array_equal(layer.transform, np.asarray(transform, float).reshape(3, 4))
    got = layer.get(1)
    want = v.astype(np.float64) @ layer.transform[:, :3].T + layer.transform[:, 3]
    np.testing.assert_allclose(got.vertices, want.astype(np.float32), rtol=1e-6)
    np.testing.assert_array_equal(layer.get(1, transform=False).vertices, v)
    assert layer.get(1).attributes == {}


def test_skeletons_table_round_trip(tmp_path: Path) -> None:
    data = sample_skeletons()
    pc.write_skeletons(tmp_path / "a", data)
    table = pc.skeletons(tmp_path / "a").to_table(CONTEXT, space="test-space")
    assert isinstance(table, pa.Table)
    assert table.num_rows == sum(len(d["vertices"]) for d in data.values())
    md = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert md["context"] == CONTEXT and md["unit"] == "nanometer" and md["space"] == "test-space"
    assert {"sample_id", "fragment_id", "parent_id", "x", "y", "z", "radius"} <= set(table.column_names)
    # The table back to a layer (sharded): the same skeletons, attribute types kept.
    assert pc.write_skeletons(tmp_path / "b", table, sharded=True) == 3
    back = pc.skeletons(tmp_path / "b")
    assert back.sharded
    assert back.vertex_attributes == pc.skeletons(tmp_path / "a").vertex_attributes
    for segid, want in data.items():
        s = back.get(segid)
        np.testing.assert_array_equal(s.vertices, want["vertices"])
        np.testing.assert_array_equal(s.edges, want["edges"])
        np.testing.assert_array_equal(s.attributes["normal"], want["attributes"]["normal"])
    # Any Arrow stream works: a neurochunk table read from Parquet.
    nc.table.write(table, tmp_path / "t.skeletons.parquet")
    pc.write_skeletons(tmp_path / "c", nc.table.read(tmp_path / "t.skeletons.parquet"))
    assert pc.skeletons(tmp_path / "c").segment_ids() == sorted(data)


def test_skeleton_write_refuses_bad_input(tmp_path: Path) -> None:
    v, e = tree(2, 4)
    with pytest.raises(nc.InvalidInputError, match="edges"):
        pc.write_skeletons(tmp_path / "x", {1: (v, np.array([[0, 9]], np.uint32))})
    with pytest.raises(nc.InvalidInputError, match=r"\(N, 3\)"):
        pc.write_skeletons(tmp_path / "x", {1: (v[:, :2], e)})
    with pytest.raises(nc.InvalidInputError, match="lacks the vertex attributes"):
        pc.write_skeletons(tmp_path / "x", {1: (v, e, {"radius": np.ones(4)}), 2: (v, e, {"other": np.ones(4)})})
    with pytest.raises(nc.InvalidInputError, match="segment id"):
        pc.write_skeletons(tmp_path / "x", {-1: (v, e)})
    pc.write_skeletons(tmp_path / "y", {1: (v, e)})
    with pytest.raises(nc.NodeExistsError):
        pc.write_skeletons(tmp_path / "y", {1: (v, e)})
    pc.write_skeletons(tmp_path / "y", {2: (v, e)}, overwrite=True)
    assert pc.skeletons(tmp_path / "y").segment_ids() == [1, 2]
    with pytest.raises(nc.InvalidInputError, match="not a skeletons table"):
        pc.write_skeletons(tmp_path / "z", pa.table({"a": [1, 2]}))


def test_damaged_skeletons_name_the_file(tmp_path: Path) -> None:
    v, e = tree(3, 6)
    pc.write_skeletons(tmp_path / "s", {1: (v, e, {"radius": np.ones(6, np.float32)}), 2: (v, e)})
    (tmp_path / "s" / "1").write_bytes((tmp_path / "s" / "1").read_bytes()[:30])
    layer = pc.skeletons(tmp_path / "s")
    with pytest.raises(nc.CorruptDataError, match=r"'/?1'.*segment 1"):
        layer.get(1)
    (tmp_path / "s" / "2").write_bytes(b"\x01\x00")
    with pytest.raises(nc.CorruptDataError, match="segment 2"):
        layer.get(2)
    (tmp_path / "s" / "2").write_bytes(gzip.compress(b"x" * 3)[:-4])
    with pytest.raises(nc.CorruptDataError, match="segment 2"):
        layer.get(2)
    with pytest.raises(nc.NodeNotFoundError):
        pc.skeletons(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "info").write_text("{not json")
    with pytest.raises(nc.CorruptDataError, match="JSON"):
        pc.skeletons(tmp_path / "bad")
    (tmp_path / "bad" / "info").write_text(json.dumps({"@type": "neuroglancer_annotations_v1"}))
    with pytest.raises(nc.InvalidInputError, match="neuroglancer_skeletons"):
        pc.skeletons(tmp_path / "bad")


def test_skeletons_through_a_volume_info_and_file_url(tmp_path: Path) -> None:
    v, e = tree(4, 8)
    pc.write_skeletons(tmp_path / "seg" / "skeletons", {5: (v, e)})
    (tmp_path / "seg" / "info").write_text(json.dumps({"type": "segmentation", "scales": [], "skeletons": "skeletons"}))
    layer = pc.skeletons((tmp_path / "seg").as_uri())
    np.testing.assert_array_equal(layer.get(5).vertices, v)


# --- meshes ----------------------------------------------------------------------------------


def random_mesh(seed: int, n: int = 30, m: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.random((n, 3)) * 500).astype(np.float32), rng.integers(0, n, (m, 3)).astype(np.uint32)


@pytest.mark.parametrize("gz", [False, True])
def test_meshes_round_trip(tmp_path: Path, gz: bool) -> None:
    a, b = random_mesh(1), random_mesh(2, n=5, m=2)
    meshes = {7: a, 2**50 + 1: [a, b], 9: pc.Mesh(9, *b)}
    assert pc.write_meshes(tmp_path / "mesh", meshes, gzip=gz) == 3
    if gz:
        assert (tmp_path / "mesh" / "7:0.gz").exists()
    layer = pc.meshes(tmp_path / "mesh")
    assert layer.kind == "legacy"
    assert layer.info == {"@type": "neuroglancer_legacy_mesh"}
    assert layer.segment_ids() == sorted(meshes)
    m = layer.get(7)
    assert m.vertices.dtype == np.float32 and m.faces.dtype == np.uint32
    np.testing.assert_array_equal(m.vertices, a[0])
    np.testing.assert_array_equal(m.faces, a[1])
    two = layer.get(2**50 + 1)
    np.testing.assert_array_equal(two.vertices, np.concatenate([a[0], b[0]]))
    np.testing.assert_array_equal(two.faces, np.concatenate([a[1], b[1] + len(a[0])]))
    assert [len(f.faces) for f in layer.fragments(2**50 + 1)] == [40, 2]
    assert [x.segment_id for x in layer] == sorted(meshes)
    with pytest.raises(nc.NodeNotFoundError, match="segment 8"):
        layer.get(8)
    with pytest.raises(nc.InvalidInputError, match="lod"):
        layer.get(7, lod=1)
    with pytest.raises(nc.InvalidInputError, match="legacy"):
        layer.manifest(7)


def test_meshes_through_a_segmentation_layer(tmp_path: Path) -> None:
    pc.write_meshes(tmp_path / "seg" / "mesh", {1: random_mesh(3)})
    (tmp_path / "seg" / "info").write_text(json.dumps({"type": "segmentation", "scales": [], "mesh": "mesh"}))
    assert pc.meshes(tmp_path / "seg").segment_ids() == [1]


def test_mesh_write_and_read_errors(tmp_path: Path) -> None:
    v, f = random_mesh(4, n=4, m=2)
    with pytest.raises(nc.InvalidInputError, match="faces"):
        pc.write_meshes(tmp_path / "m", {1: (v, np.array([[0, 1, 4]]))})
    with pytest.raises(nc.InvalidInputError, match=r"\(N, 3\)"):
        pc.write_meshes(tmp_path / "m", {1: (v.reshape(-1), f)})
    pc.write_meshes(tmp_path / "m", {1: (v, f), 2: (v, f)})
    with pytest.raises(nc.NodeExistsError):
        pc.write_meshes(tmp_path / "m", {1: (v, f)})
    (tmp_path / "m" / "1:0:0").write_bytes(b"\xff\x00\x00\x00")
    with pytest.raises(nc.CorruptDataError, match=r"1:0:0.*segment 1"):
        pc.meshes(tmp_path / "m").get(1)
    (tmp_path / "m" / "2:0").write_text("{")
    with pytest.raises(nc.CorruptDataError, match=r"2:0.*segment 2"):
        pc.meshes(tmp_path / "m").get(2)
    with pytest.raises(nc.NodeNotFoundError):
        pc.meshes(tmp_path / "nowhere")


def test_multires_fragments_are_read_through_the_library(tmp_path: Path) -> None:
    """A multi-resolution directory whose fragment is not Draco data: the manifest reads, the
    fragment is an error naming the file and the segment (unsupported, or damaged once the
    library decodes Draco)."""
    d = tmp_path / "mesh"
    d.mkdir()
    (d / "info").write_text(
        json.dumps(
            {
                "@type": "neuroglancer_multilod_draco",
                "vertex_quantization_bits": 10,
                "transform": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0],
                "lod_scale_multiplier": 1.0,
            }
        )
    )
    index = np.array([64, 64, 64, 0, 0, 0], "<f4").tobytes() + np.array([1], "<u4").tobytes()
    index += np.array([1], "<f4").tobytes() + np.zeros(3, "<f4").tobytes() + np.array([1], "<u4").tobytes()
    index += np.zeros(3, "<u4").tobytes() + np.array([16], "<u4").tobytes()
    (d / "42.index").write_bytes(index)
    (d / "42").write_bytes(b"\x00" * 16)
    layer = pc.meshes(d)
    assert layer.kind == "multires"
    assert layer.segment_ids() == [42]
    manifest = layer.manifest(42)
    assert manifest["chunk_shape"] == [64, 64, 64]
    assert [len(lod["fragments"]) for lod in manifest["lods"]] == [1]
    with pytest.raises((nc.UnsupportedError, nc.CorruptDataError), match=r"42.*segment 42"):
        layer.get(42)
    with pytest.raises(nc.InvalidInputError, match="lod=3"):
        layer.get(42, lod=3)


# --- annotations -----------------------------------------------------------------------------


@pytest.mark.parametrize("sharded", [False, True])
def test_point_annotations_round_trip(tmp_path: Path, sharded: bool) -> None:
    rng = np.random.default_rng(5)
    n = 300
    points = (rng.random((n, 3)) * 1000).astype(np.float32)
    ids = np.arange(n, dtype=np.uint64) * 3 + 10
    props = {
        "score": rng.random(n).astype(np.float32),
        "kind": {"values": rng.integers(0, 3, n).astype(np.uint8), "enum_values": [0, 1, 2], "enum_labels": ["a", "b", "c"]},
        "count": rng.integers(-5, 5, n).astype(np.int16),
        "big": rng.integers(0, 2**31, n),  # int64 values stored as int32
        "color": rng.integers(0, 256, (n, 3)).astype(np.uint8),
        "rgba": {"values": rng.integers(0, 256, (n, 4)), "type": "rgba", "description": "colour"},
    }
    pre = [[int(i % 7)] for i in range(n)]
    post = [list(rng.integers(100, 110, i % 3)) for i in range(n)]
    written = pc.write_annotations(
        tmp_path / "a",
        "point",
        points,
        ids=ids,
        properties=props,
        relationships={"presyn": pre, "postsyn": post},
        dimensions={"x": (8.0, "nm"), "y": (8.0, "nm"), "z": (40.0, "nm")},
        limit=50,
        sharded=sharded,
    )
    assert written == n
    col = pc.annotations(tmp_path / "a")
    assert col.type == "point" and col.rank == 3 and col.sharded is sharded
    assert col.dimensions == {"x": (8.0, "nm"), "y": (8.0, "nm"), "z": (40.0, "nm")}
    assert [(p.id, p.type) for p in col.properties] == [
        ("score", "float32"),
        ("kind", "uint8"),
        ("count", "int16"),
        ("big", "int32"),
        ("color", "rgb"),
        ("rgba", "rgba"),
    ]
    assert col.properties[1].enum_labels == ["a", "b", "c"]
    assert col.properties[5].description == "colour"
    assert col.relationships == ["presyn", "postsyn"]
    assert np.all(col.lower_bound <= points.min(0)) and np.all(col.upper_bound > points.max(0))
    everything = col.all()
    assert len(everything) == n
    np.testing.assert_array_equal(everything.ids, ids)
    np.testing.assert_array_equal(everything.geometry, points)
    for name in ("score", "count", "big", "color"):
        values = props[name]
        np.testing.assert_array_equal(everything.properties[name], values)
    np.testing.assert_array_equal(everything.properties["kind"], props["kind"]["values"])
    assert everything.properties["big"].dtype == np.int32
    assert everything.properties["color"].shape == (n, 3)
    assert [list(r) for r in everything.relationships["postsyn"]] == [[int(x) for x in p] for p in post]
    one = col.get(int(ids[4]))
    assert one.id == int(ids[4]) and one.type == "point"
    np.testing.assert_array_equal(one.geometry, points[4])
    assert one.properties["score"] == pytest.approx(float(props["score"][4]))
    assert list(one.relationships["presyn"]) == pre[4]
    with pytest.raises(nc.NodeNotFoundError):
        col.get(11)
    related = col.by_segment("presyn", 3)
    assert sorted(related.ids.tolist()) == [int(ids[i]) for i in range(n) if pre[i] == [3]]
    assert len(col.by_segment("presyn", 12345)) == 0
    with pytest.raises(nc.InvalidInputError, match="relationship"):
        col.by_segment("nope", 1)
    table = col.to_table()
    assert table.column_names[:4] == ["id", "x", "y", "z"]
    assert table.num_rows == n
    assert table.column("presyn").to_pylist()[4] == pre[4]


@pytest.mark.parametrize("kind", ["line", "axis_aligned_bounding_box", "ellipsoid"])
def test_two_point_annotations_round_trip(tmp_path: Path, kind: str) -> None:
    rng = np.random.default_rng(6)
    geometry = (rng.random((20, 2, 3)) * 100).astype(np.float32)
    if kind == "axis_aligned_bounding_box":
        geometry.sort(axis=1)
    pc.write_annotations(tmp_path / kind, kind, geometry)  # type: ignore[arg-type]
    col = pc.annotations(tmp_path / kind)
    got = col.all()
    assert got.type == kind
    np.testing.assert_array_equal(got.ids, np.arange(20))
    np.testing.assert_array_equal(got.geometry, geometry)
    assert col.get(3).geometry.shape == (2, 3)
    names = col.to_table().column_names
    assert names[1] == ("center_x" if kind == "ellipsoid" else "point_a_x")


def test_polyline_annotations_round_trip(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    lines = [(rng.random((k, 2)) * 50).astype(np.float32) for k in (2, 5, 3)]
    pc.write_annotations(tmp_path / "p", "polyline", lines, dimensions={"u": (1.0, "um"), "v": (1.0, "um")}, ids=[5, 1, 9])
    got = pc.annotations(tmp_path / "p").all()
    np.testing.assert_array_equal(got.ids, [1, 5, 9])
    for i, j in zip(range(3), [1, 0, 2]):
        np.testing.assert_array_equal(got.geometry[i], lines[j])
    assert pc.annotations(tmp_path / "p").to_table().column("points").to_pylist()[1] == lines[0].tolist()


def test_annotation_write_refuses_bad_input(tmp_path: Path) -> None:
    pts = np.zeros((3, 3), np.float32)
    with pytest.raises(nc.InvalidInputError, match="type"):
        pc.write_annotations(tmp_path / "x", "circle", pts)  # type: ignore[arg-type]
    with pytest.raises(nc.InvalidInputError, match=r"\(n, 3\)"):
        pc.write_annotations(tmp_path / "x", "point", np.zeros((3, 2)))
    with pytest.raises(nc.InvalidInputError, match="unique"):
        pc.write_annotations(tmp_path / "x", "point", pts, ids=[1, 1, 2])
    with pytest.raises(nc.InvalidInputError, match="score"):
        pc.write_annotations(tmp_path / "x", "point", pts, properties={"score": [1.0, 2.0]})
    with pytest.raises(nc.InvalidInputError, match="Bad"):
        pc.write_annotations(tmp_path / "x", "point", pts, properties={"Bad": [1, 2, 3]})
    with pytest.raises(nc.InvalidInputError, match="uint8"):
        pc.write_annotations(tmp_path / "x", "point", pts, properties={"k": {"values": [1, 2, 300], "type": "uint8"}})
    with pytest.raises(nc.InvalidInputError, match="entries"):
        pc.write_annotations(tmp_path / "x", "point", pts, relationships={"r": [1, 2]})
    with pytest.raises(nc.InvalidInputError, match="finite"):
        pc.write_annotations(tmp_path / "x", "point", np.full((1, 3), np.nan))
    pc.write_annotations(tmp_path / "y", "point", pts)
    with pytest.raises(nc.NodeExistsError):
        pc.write_annotations(tmp_path / "y", "point", pts)
    assert pc.write_annotations(tmp_path / "y", "point", pts[:1], overwrite=True) == 1


def test_damaged_annotations_name_the_file(tmp_path: Path) -> None:
    pc.write_annotations(tmp_path / "a", "point", np.ones((4, 3), np.float32), relationships={"seg": [1, 1, 2, 2]})
    (tmp_path / "a" / "by_id" / "2").write_bytes(b"\x01\x02")
    col = pc.annotations(tmp_path / "a")
    with pytest.raises(nc.CorruptDataError, match="by_id"):
        col.get(2)
    with pytest.raises(nc.CorruptDataError, match="by_id"):
        col.all()
    (tmp_path / "a" / "rel_seg" / "1").write_bytes(b"\xff" * 9)
    with pytest.raises(nc.CorruptDataError, match="rel_seg"):
        col.by_segment("seg", 1)
    with pytest.raises(nc.NodeNotFoundError):
        pc.annotations(tmp_path / "none")
    (tmp_path / "a" / "info").write_text(json.dumps({"@type": "neuroglancer_annotations_v1", "dimensions": {}}))
    with pytest.raises(nc.CorruptDataError, match="dimensions"):
        pc.annotations(tmp_path / "a")


def test_damaged_shards_name_the_shard(tmp_path: Path) -> None:
    pc.write_skeletons(tmp_path / "s", sample_skeletons(), sharded=True)
    shards = sorted((tmp_path / "s").glob("*.shard"))
    assert shards
    shards[0].write_bytes(shards[0].read_bytes()[:100])
    layer = pc.skeletons(tmp_path / "s")
    with pytest.raises(nc.CorruptDataError, match=r"\.shard"):
        layer.segment_ids()
    with pytest.raises(nc.CorruptDataError, match=r"\.shard"):
        list(layer)
    pc.write_annotations(tmp_path / "a", "point", np.ones((3, 3), np.float32), sharded=True)
    for shard in (tmp_path / "a" / "by_id").glob("*.shard"):
        shard.write_bytes(b"\x00" * 7)
    with pytest.raises(nc.CorruptDataError, match="by_id"):
        pc.annotations(tmp_path / "a").get(1)
