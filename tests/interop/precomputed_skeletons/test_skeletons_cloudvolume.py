"""Neuroglancer precomputed skeletons both ways against cloud-volume: layers cloud-volume writes
(unsharded gzip files, sharded; radius, vertex types and a three-component attribute; a
transform) read by `neurochunk table convert LAYER OUT.parquet` and compared with pyarrow, and
layers `neurochunk table convert IN.parquet LAYER --format precomputed [--sharded]` writes
(from a real SWC file) read by cloud-volume with identical vertices, edges and radii."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from cloudvolume import CloudVolume, Skeleton
from cloudvolume.datasource.precomputed.skeleton import PrecomputedSkeletonSource

CONTEXT = "urn:uuid:5f1c9a52-skeleton-interop"
SWC_DATA = Path(__file__).resolve().parents[3] / "crates/table/tests/data/swc"
# An exact transform in float32 (cloud-volume applies it in float32): x' = 2x + 8, y' = 2y,
# z' = 4z - 40.
TRANSFORM = [2, 0, 0, 8, 0, 2, 0, 0, 0, 0, 4, -40]


def tree(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A random tree of n vertices: vertex i > 0 hangs from a random earlier vertex; edges in
    random orientation, so readers cannot rely on (child, parent) order."""
    rng = np.random.default_rng(seed)
    vertices = rng.integers(0, 500, size=(n, 3)).astype(np.float32) + np.float32(0.25)
    edges = []
    for i in range(1, n):
        p = int(rng.integers(0, i))
        edges.append((i, p) if rng.random() < 0.5 else (p, i))
    return vertices, np.array(edges, dtype=np.uint32).reshape(-1, 2)


def volume(path: Path, sharded: bool = False) -> CloudVolume:
    info = CloudVolume.create_new_info(
        num_channels=1,
        layer_type="segmentation",
        data_type="uint64",
        encoding="raw",
        resolution=[8, 8, 40],
        voxel_offset=[0, 0, 0],
        chunk_size=[64, 64, 64],
        volume_size=[512, 512, 64],
        skeletons="skeletons",
    )
    cv = CloudVolume(f"file://{path}", info=info, compress=True)
    cv.commit_info()
    cv.skeleton.meta.info["transform"] = TRANSFORM
    cv.skeleton.meta.info["vertex_attributes"].append(
        {"id": "normal", "data_type": "int16", "num_components": 3}
    )
    if sharded:
        cv.skeleton.meta.info["sharding"] = {
            "@type": "neuroglancer_uint64_sharded_v1",
            "hash": "murmurhash3_x86_128",
            "preshift_bits": 0,
            "minishard_bits": 2,
            "shard_bits": 0,
            "minishard_index_encoding": "gzip",
            "data_encoding": "gzip",
        }
    cv.skeleton.meta.commit_info()
    return CloudVolume(f"file://{path}", compress=True)


def skeletons() -> dict[int, Skeleton]:
    out = {}
    for segid, n in [(5, 40), (1234567890123, 200), (77, 1)]:
        vertices, edges = tree(segid % 1000, n)
        rng = np.random.default_rng(segid % 997)
        skel = Skeleton(
            vertices,
            edges,
            radii=rng.random(n).astype(np.float32) * 30,
            vertex_types=rng.integers(0, 8, n).astype(np.uint8),
            segid=segid,
        )
        skel.extra_attributes = skel.extra_attributes + [
            {"id": "normal", "data_type": "int16", "num_components": 3}
        ]
        skel.normal = rng.integers(-300, 300, size=(n, 3)).astype(np.int16)
        out[segid] = skel
    return out


def check_table(table_path: Path, written: dict[int, Skeleton]) -> None:
    """The table holds each skeleton's vertices (transform applied), a parent for every edge,
    and the attributes, in vertex order."""
    t = pq.read_table(table_path)
    md = {k.decode(): v.decode() for k, v in t.schema.metadata.items()}
    assert md["unit"] == "nanometer" and md["context"] == CONTEXT
    assert json.loads(md["attr:precomputed:info"])["transform"] == TRANSFORM
    cols = t.to_pydict()
    assert t.schema.field("attr:vertex_types").type == "uint8"
    assert t.schema.field("attr:normal:0").type == "int16"
    start = 0
    for segid in sorted(written):
        skel = written[segid]
        n = len(skel.vertices)
        rows = slice(start, start + n)
        assert cols["fragment_id"][rows] == [segid] * n, segid
        assert cols["sample_id"][rows] == list(range(start, start + n))
        m = np.array(TRANSFORM, dtype=np.float64).reshape(3, 4)
        expected = skel.vertices.astype(np.float64) @ m[:, :3].T + m[:, 3]
        got = np.stack([cols["x"][rows], cols["y"][rows], cols["z"][rows]], axis=1)
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(np.array(cols["radius"][rows], dtype=np.float32), skel.radius)
        assert cols["attr:vertex_types"][rows] == skel.vertex_types.tolist()
        normal = np.stack([cols[f"attr:normal:{c}"][rows] for c in range(3)], axis=1)
        np.testing.assert_array_equal(normal, skel.normal)
        # Parents: every edge once, as (child, parent), each vertex but the root a child.
        parents = cols["parent_id"][rows]
        assert sum(p is None for p in parents) == 1
        got_edges = {
            frozenset((i, p - start)) for i, p in enumerate(parents) if p is not None
        }
        assert got_edges == {frozenset(map(int, e)) for e in skel.edges}
        start += n
    assert start == len(t)


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
def test_cloudvolume_layer_to_table(nc, tmp_path, sharded):
    layer = tmp_path / "vol"
    cv = volume(layer, sharded)
    written = skeletons()
    cv.skeleton.upload(list(written.values()))
    if sharded:
        assert [p.name for p in (layer / "skeletons").glob("*.shard")] == ["0.shard"]
    else:
        # cloud-volume stores gzip-compressed files.
        assert (layer / "skeletons" / "5.gz").is_file()
    out = tmp_path / "vol.skeletons.parquet"
    # Through the volume's `skeletons` member, and straight from the skeleton directory.
    for src in [layer, layer / "skeletons"]:
        proc = nc.run("table", "convert", src, out, "--context", CONTEXT, "--overwrite")
        assert "241 vertices in 3 segment(s), 3 fragment(s)" in proc.stdout, proc.stdout
        check_table(out, written)
    nc.run("table", "validate", out, "--strict")


def swc_table(nc, tmp_path: Path, name: str) -> Path:
    src = tmp_path / f"{name}.swc"
    if (SWC_DATA / f"{name}.swc.gz").is_file():
        src.write_bytes(gzip.decompress((SWC_DATA / f"{name}.swc.gz").read_bytes()))
    else:
        shutil.copy(SWC_DATA / f"{name}.swc", src)
    out = tmp_path / f"{name}.skeletons.parquet"
    nc.run("table", "from-swc", src, out, "--context", CONTEXT)
    return out


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
def test_neurochunk_layer_read_by_cloudvolume(nc, tmp_path, sharded):
    # navis' hemibrain neuron (4,881 samples, two trees) and MorphIO's multiple_soma.swc.
    for name in ["754538881", "multiple_soma"]:
        table = swc_table(nc, tmp_path, name)
        layer = tmp_path / f"{name}-layer"
        args = ["table", "convert", table, layer, "--format", "precomputed"]
        nc.run(*args, *(["--sharded"] if sharded else []))
        info = json.loads((layer / "info").read_text())
        assert info["@type"] == "neuroglancer_skeletons"
        assert ("sharding" in info) == sharded
        source = PrecomputedSkeletonSource.from_cloudpath(f"file://{layer}")
        t = pq.read_table(table).to_pydict()
        frags = sorted(set(t["fragment_id"]))
        assert len(frags) == 2
        for frag in frags:
            rows = sorted(
                (sid, i) for i, (sid, f) in enumerate(zip(t["sample_id"], t["fragment_id"])) if f == frag
            )
            order = [i for _, i in rows]
            skel = source.get(frag)
            # Micrometres in the table, nanometres in the layer, float32 as stored.
            xyz = np.stack([np.array(t[c], dtype=np.float64)[order] for c in "xyz"], axis=1)
            np.testing.assert_array_equal(skel.vertices, (xyz * 1000).astype(np.float32))
            radius = np.array([t["radius"][i] for i in order], dtype=np.float64) * 1000
            np.testing.assert_array_equal(skel.radius, radius.astype(np.float32))
            index = {t["sample_id"][i]: k for k, i in enumerate(order)}
            expected = sorted(
                (index[t["sample_id"][i]], index[t["parent_id"][i]])
                for i in order
                if t["parent_id"][i] is not None
            )
            assert sorted(map(tuple, skel.edges.tolist())) == expected
        # And back: the same vertices, parents and radii (in nanometres).
        back = tmp_path / f"{name}-back.skeletons.parquet"
        nc.run("table", "convert", layer, back, "--context", CONTEXT)
        b = pq.read_table(back).to_pydict()
        assert len(b["x"]) == len(t["x"])
        assert sorted(b["x"]) == sorted(float(np.float32(v * 1000)) for v in t["x"])
        assert sum(p is None for p in b["parent_id"]) == sum(p is None for p in t["parent_id"])


def test_damaged_layer_is_an_error(nc, tmp_path):
    layer = tmp_path / "vol"
    cv = volume(layer)
    cv.skeleton.upload([skeletons()[5]])
    path = layer / "skeletons" / "5.gz"
    data = gzip.decompress(path.read_bytes())
    path.write_bytes(gzip.compress(data[:100]))
    nc.fails(
        "table", "convert", layer, tmp_path / "x.skeletons.parquet", "--context", CONTEXT,
        names=["5.gz", "segment 5"],
    )
    nc.fails(
        "table", "convert", layer, tmp_path / "y.skeletons.parquet",
        names=["--context"],
    )
