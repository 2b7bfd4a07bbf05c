"""`neurochunk.precomputed` against cloud-volume (.peers/py312 only): skeletons and legacy
meshes cloud-volume writes read by neurochunk, and what neurochunk writes read by
cloud-volume (`vol.skeleton.get`, `vol.mesh.get`), unsharded, sharded and gzip-compressed;
a multi-resolution mesh of DracoPy-encoded fragments read through the library."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest
from cloudvolume import CloudVolume, Mesh, Skeleton

import neurochunk as nc
from neurochunk import precomputed as pc

SHARDING = {
    "@type": "neuroglancer_uint64_sharded_v1",
    "hash": "murmurhash3_x86_128",
    "preshift_bits": 0,
    "minishard_bits": 2,
    "shard_bits": 0,
    "minishard_index_encoding": "gzip",
    "data_encoding": "gzip",
}


def volume(path: Path, **kw: str) -> CloudVolume:
    info = CloudVolume.create_new_info(
        num_channels=1,
        layer_type="segmentation",
        data_type="uint64",
        encoding="raw",
        resolution=[8, 8, 40],
        voxel_offset=[0, 0, 0],
        chunk_size=[64, 64, 64],
        volume_size=[512, 512, 64],
        **kw,
    )
    cv = CloudVolume(f"file://{path}", info=info, progress=False)
    cv.commit_info()
    return cv


def tree(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    vertices = rng.integers(0, 500, size=(n, 3)).astype(np.float32) + np.float32(0.25)
    edges = np.array([(i, int(rng.integers(0, i))) for i in range(1, n)], dtype=np.uint32).reshape(-1, 2)
    return vertices, edges


@pytest.mark.parametrize("sharded", [False, True])
def test_cloudvolume_skeletons_read_by_neurochunk(tmp_path: Path, sharded: bool) -> None:
    cv = volume(tmp_path / "seg", skeletons="skeletons")
    cv.skeleton.meta.info["transform"] = [2, 0, 0, 8, 0, 2, 0, 0, 0, 0, 4, -40]
    if sharded:
        cv.skeleton.meta.info["sharding"] = SHARDING
    cv.skeleton.meta.commit_info()
    cv = CloudVolume(f"file://{tmp_path / 'seg'}", compress=True, progress=False)
    want = {}
    for segid, n in [(5, 40), (1234567890123, 100), (77, 1)]:
        v, e = tree(segid % 1000, n)
        rng = np.random.default_rng(segid % 97)
        s = Skeleton(v, e, radii=rng.random(n).astype(np.float32) * 30, vertex_types=rng.integers(0, 8, n).astype(np.uint8), segid=segid)
        want[segid] = s
    if sharded:
        cv.skeleton.upload(list(want.values()))
    else:
        for s in want.values():
            cv.skeleton.upload(s)
    layer = pc.skeletons(tmp_path / "seg")  # through the volume's "skeletons" member
    assert layer.sharded is sharded
    assert layer.segment_ids() == sorted(want)
    for segid, s in want.items():
        got = layer.get(segid, transform=False)
        np.testing.assert_array_equal(got.vertices, s.vertices)
        np.testing.assert_array_equal(got.edges, s.edges)
        np.testing.assert_array_equal(got.attributes["radius"], s.radius)
        np.testing.assert_array_equal(got.attributes["vertex_types"], s.vertex_types)
        # cloud-volume applies the transform when it reads.
        theirs = cv.skeleton.get(segid)
        np.testing.assert_allclose(layer.get(segid).vertices, theirs.vertices, rtol=1e-6)


@pytest.mark.parametrize("sharded", [False, True])
def test_neurochunk_skeletons_read_by_cloudvolume(tmp_path: Path, sharded: bool) -> None:
    volume(tmp_path / "seg", skeletons="skeletons")
    data = {}
    for segid, n in [(3, 30), (2**40 + 1, 64)]:
        v, e = tree(segid % 100, n)
        data[segid] = (v, e, {"radius": np.linspace(1, 2, n, dtype=np.float32), "vertex_types": np.full(n, 3, np.uint8)})
    pc.write_skeletons(tmp_path / "seg" / "skeletons", data, sharded=sharded, overwrite=True)
    cv = CloudVolume(f"file://{tmp_path / 'seg'}", progress=False)
    for segid, (v, e, attrs) in data.items():
        s = cv.skeleton.get(segid)
        np.testing.assert_array_equal(s.vertices, v)
        np.testing.assert_array_equal(s.edges, e)
        np.testing.assert_array_equal(s.radius, attrs["radius"])
        np.testing.assert_array_equal(s.vertex_types, attrs["vertex_types"])


def random_mesh(seed: int, n: int = 50, m: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.random((n, 3)) * 2000).astype(np.float32), rng.integers(0, n, size=(m, 3)).astype(np.uint32)


def test_cloudvolume_meshes_read_by_neurochunk(tmp_path: Path) -> None:
    cv = volume(tmp_path / "seg", mesh="mesh")
    meshes = {segid: random_mesh(segid) for segid in (7, 12, 2**40 + 3)}
    for segid, (v, f) in meshes.items():
        cv.mesh.put(Mesh(v, f, segid=segid), compress="gzip")
    layer = pc.meshes(tmp_path / "seg")
    assert layer.kind == "legacy"
    assert layer.segment_ids() == sorted(meshes)
    for segid, (v, f) in meshes.items():
        got = layer.get(segid)
        np.testing.assert_array_equal(got.vertices, v)
        np.testing.assert_array_equal(got.faces, f)


@pytest.mark.parametrize("gz", [False, True])
def test_neurochunk_meshes_read_by_cloudvolume(tmp_path: Path, gz: bool) -> None:
    volume(tmp_path / "seg", mesh="mesh")
    a, b = random_mesh(1), random_mesh(2, n=10, m=6)
    pc.write_meshes(tmp_path / "seg" / "mesh", {3: [a, b], 99: b}, gzip=gz)
    cv = CloudVolume(f"file://{tmp_path / 'seg'}", progress=False)
    got = cv.mesh.get(3, remove_duplicate_vertices=False)
    np.testing.assert_array_equal(got.vertices, np.concatenate([a[0], b[0]]))
    np.testing.assert_array_equal(got.faces, np.concatenate([a[1], b[1] + len(a[0])]))
    got = cv.mesh.get(99, remove_duplicate_vertices=False)
    np.testing.assert_array_equal(got.vertices, b[0])
    np.testing.assert_array_equal(got.faces, b[1])


def test_draco_multires_mesh(tmp_path: Path) -> None:
    """DracoPy-encoded fragments: decoded by the library when it can, else an
    UnsupportedError naming the file, the segment and the fragment."""
    DracoPy = pytest.importorskip("DracoPy")
    d = tmp_path / "mesh"
    d.mkdir()
    (d / "info").write_text(
        json.dumps(
            {
                "@type": "neuroglancer_multilod_draco",
                "vertex_quantization_bits": 16,
                "transform": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0],
                "lod_scale_multiplier": 1.0,
            }
        )
    )
    rng = np.random.default_rng(3)
    v = (rng.random((30, 3)) * 60000).astype(np.float32)
    f = np.array([[i, (i + 1) % 30, (i + 2) % 30] for i in range(30)], dtype=np.uint32)
    blob = DracoPy.encode(v, f, quantization_bits=16)
    index = struct.pack("<3f", 64, 64, 64) + struct.pack("<3f", 0, 0, 0) + struct.pack("<I", 1)
    index += struct.pack("<f", 1.0) + struct.pack("<3f", 0, 0, 0) + struct.pack("<I", 1)
    index += struct.pack("<3I", 0, 0, 0) + struct.pack("<I", len(blob))
    (d / "42.index").write_bytes(index)
    (d / "42").write_bytes(blob)
    layer = pc.meshes(d)
    assert layer.kind == "multires" and layer.segment_ids() == [42]
    try:
        got = layer.get(42)
    except nc.UnsupportedError as e:
        assert "segment 42" in str(e) and "fragment 0" in str(e)
        assert isinstance(e, NotImplementedError)
    else:
        assert got.faces.shape == (30, 3)
