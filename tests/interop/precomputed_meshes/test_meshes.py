"""Neuroglancer precomputed meshes against cloud-volume: legacy meshes both ways (vertices and
faces identical), gzip fragments, the tables `neurochunk mesh export` writes, and
multi-resolution layers (Draco fragments from DracoPy): the manifest `mesh show` reads, and the
fixture crates/array/tests/data/multires_draco (unsharded and sharded) whose every lod
cloud-volume's `mesh.get` and `mesh export --lod` read to the same vertices and triangles."""

import json
import shutil
import struct
from pathlib import Path

import DracoPy
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from cloudvolume import CloudVolume, Mesh


def new_layer(path):
    info = CloudVolume.create_new_info(
        num_channels=1,
        layer_type="segmentation",
        data_type="uint64",
        encoding="raw",
        resolution=[8, 8, 8],
        voxel_offset=[0, 0, 0],
        chunk_size=[64, 64, 64],
        volume_size=[256, 256, 256],
        mesh="mesh",
    )
    cv = CloudVolume(f"file://{path}", info=info, progress=False)
    cv.commit_info()
    return cv


def random_mesh(seed, n=50, m=80):
    rng = np.random.default_rng(seed)
    vertices = (rng.random((n, 3)) * 2000).astype(np.float32)
    faces = rng.integers(0, n, size=(m, 3)).astype(np.uint32)
    return vertices, faces


def exported(nc, mesh_dir, tmp_path, name):
    out = tmp_path / name
    nc.run("mesh", "export", mesh_dir, out)
    return pq.read_table(out / "vertices.parquet"), pq.read_table(out / "faces.parquet")


def segment_arrays(vertices, faces, segid):
    v = vertices.filter(vertices["segment_id"].to_numpy() == segid)
    f = faces.filter(faces["segment_id"].to_numpy() == segid)
    xyz = np.stack([v[c].to_numpy() for c in "xyz"], axis=1)
    tri = np.stack([f[c].to_numpy() for c in ("v0", "v1", "v2")], axis=1)
    return xyz, tri


def test_cloudvolume_writes_neurochunk_reads(nc, tmp_path):
    layer = tmp_path / "seg"
    cv = new_layer(layer)
    meshes = {segid: random_mesh(segid) for segid in (7, 12, 2**40 + 3)}
    for segid, (v, f) in meshes.items():
        cv.mesh.put(Mesh(v, f, segid=segid), compress="gzip")
    # cloud-volume stores the fragments gzip-compressed as NAME.gz.
    assert list((layer / "mesh").glob("*.gz"))
    listing = json.loads(nc.run("mesh", "ls", layer, "--json").stdout)
    assert listing["kind"] == "legacy"
    assert listing["segments"] == sorted(meshes)
    vertices, faces = exported(nc, layer, tmp_path, "tables")
    for segid, (v, f) in meshes.items():
        xyz, tri = segment_arrays(vertices, faces, segid)
        np.testing.assert_array_equal(xyz, v)
        np.testing.assert_array_equal(tri, f)
        ours = cv.mesh.get(segid, remove_duplicate_vertices=False)
        np.testing.assert_array_equal(ours.vertices, xyz)
        np.testing.assert_array_equal(ours.faces, tri)


def test_neurochunk_writes_cloudvolume_reads(nc, tmp_path):
    meshes = {3: random_mesh(3), 99: random_mesh(99, n=10, m=5)}
    # Segment 3 in two fragments (the second's faces indexing the segment's vertices).
    rows_v, rows_f = {k: [] for k in ("segment_id", "fragment", "x", "y", "z")}, {
        k: [] for k in ("segment_id", "fragment", "v0", "v1", "v2")
    }
    for segid, (v, f) in meshes.items():
        half = len(v) // 2 if segid == 3 else len(v)
        for i, p in enumerate(v):
            for k, val in zip(("segment_id", "fragment", "x", "y", "z"), (segid, int(i >= half), *p)):
                rows_v[k].append(val)
        for t in f:
            frag = int(all(i >= half for i in t)) if segid == 3 else 0
            if segid == 3 and not (all(i >= half for i in t) or all(i < half for i in t)):
                continue
            for k, val in zip(("segment_id", "fragment", "v0", "v1", "v2"), (segid, frag, *t)):
                rows_f[k].append(val)
    tables = tmp_path / "tables"
    tables.mkdir()
    pq.write_table(
        pa.table(
            {
                "segment_id": pa.array(rows_v["segment_id"], pa.uint64()),
                "fragment": pa.array(rows_v["fragment"], pa.uint32()),
                **{c: pa.array(rows_v[c], pa.float32()) for c in "xyz"},
            }
        ),
        tables / "vertices.parquet",
    )
    pq.write_table(
        pa.table(
            {
                "segment_id": pa.array(rows_f["segment_id"], pa.uint64()),
                "fragment": pa.array(rows_f["fragment"], pa.uint32()),
                **{c: pa.array(rows_f[c], pa.uint32()) for c in ("v0", "v1", "v2")},
            }
        ),
        tables / "faces.parquet",
    )
    for gzip in (False, True):
        layer = tmp_path / f"seg-{gzip}"
        new_layer(layer)
        args = ["mesh", "import", tables, layer / "mesh", "--format", "precomputed"]
        nc.run(*args, *(["--gzip"] if gzip else []))
        manifest = "3:0.gz" if gzip else "3:0"
        assert (layer / "mesh" / manifest).exists()
        cv = CloudVolume(f"file://{layer}", progress=False)
        for segid, (v, f) in meshes.items():
            got = cv.mesh.get(segid, remove_duplicate_vertices=False)
            sel = np.asarray(rows_v["segment_id"]) == segid
            fsel = np.asarray(rows_f["segment_id"]) == segid
            np.testing.assert_array_equal(got.vertices, v)
            expected_faces = np.stack([np.asarray(rows_f[c])[fsel] for c in ("v0", "v1", "v2")], axis=1)
            assert sel.sum() == len(v)
            # Faces come back grouped by fragment, each indexing the concatenated vertices.
            order = np.argsort(np.asarray(rows_f["fragment"])[fsel], kind="stable")
            np.testing.assert_array_equal(got.faces, expected_faces[order])
    # Two fragments for segment 3.
    manifest = json.loads((tmp_path / "seg-False" / "mesh" / "3:0").read_text())
    assert len(manifest["fragments"]) == 2


def test_damaged_fragment_is_an_error(nc, tmp_path):
    layer = tmp_path / "seg"
    cv = new_layer(layer)
    v, f = random_mesh(5)
    cv.mesh.put(Mesh(v, f, segid=5), compress=None)
    frag = layer / "mesh" / "5:0:1"
    frag.write_bytes(frag.read_bytes()[:-7])
    proc = nc.run("mesh", "export", layer, tmp_path / "out", check=False)
    assert proc.returncode != 0
    assert "5:0:1" in proc.stderr and "segment 5" in proc.stderr
    assert "panicked" not in proc.stderr


def write_multires(path, segid, lods):
    """A multi-resolution mesh directory by hand: DracoPy-encoded fragments, the index file."""
    mesh_dir = path / "mesh"
    mesh_dir.mkdir(parents=True)
    (mesh_dir / "info").write_text(
        json.dumps(
            {
                "@type": "neuroglancer_multilod_draco",
                "vertex_quantization_bits": 16,
                "transform": [8, 0, 0, 0, 0, 8, 0, 0, 0, 0, 8, 0],
                "lod_scale_multiplier": 1.0,
            }
        )
    )
    data = b""
    positions, sizes = [], []
    for lod, fragments in enumerate(lods):
        pos, siz = [], []
        for position, (v, f) in fragments:
            blob = DracoPy.encode(v, f, quantization_bits=16)
            data += blob
            pos.append(position)
            siz.append(len(blob))
        positions.append(pos)
        sizes.append(siz)
    num_lods = len(lods)
    index = struct.pack("<3f", 64, 64, 64) + struct.pack("<3f", 0, 0, 0)
    index += struct.pack("<I", num_lods)
    index += struct.pack(f"<{num_lods}f", *[2.0**i for i in range(num_lods)])
    index += struct.pack(f"<{3 * num_lods}f", *([0.0] * 3 * num_lods))
    index += struct.pack(f"<{num_lods}I", *[len(p) for p in positions])
    for pos, siz in zip(positions, sizes):
        arr = np.asarray(pos, dtype="<u4").reshape(-1, 3)
        index += arr.T.tobytes() + np.asarray(siz, dtype="<u4").tobytes()
    (mesh_dir / f"{segid}.index").write_bytes(index)
    (mesh_dir / str(segid)).write_bytes(data)
    return positions, sizes


def test_multires_manifest_and_draco_refused(nc, tmp_path):
    rng = np.random.default_rng(1)

    def frag(n=30, m=20):
        v = (rng.random((n, 3)) * 60000).astype(np.float32)
        f = rng.integers(0, n, size=(m, 3)).astype(np.uint32)
        return v, f

    lods = [[([0, 0, 0], frag()), ([1, 0, 0], frag()), ([0, 1, 1], frag())], [([0, 0, 0], frag())]]
    positions, sizes = write_multires(tmp_path, 42, lods)
    listing = json.loads(nc.run("mesh", "ls", tmp_path / "mesh", "--json").stdout)
    assert listing == {"kind": "multires", "directory": "", "segments": [42]}
    shown = json.loads(nc.run("mesh", "show", tmp_path / "mesh", "42", "--json").stdout)
    assert shown["chunk_shape"] == [64, 64, 64]
    assert [l["scale"] for l in shown["lods"]] == [1.0, 2.0]
    offset = 0
    for lod, pos, siz in zip(shown["lods"], positions, sizes):
        assert [f["position"] for f in lod["fragments"]] == pos
        assert [f["size"] for f in lod["fragments"]] == siz
        for f in lod["fragments"]:
            assert f["offset"] == offset
            offset += f["size"]
    assert offset == (tmp_path / "mesh" / "42").stat().st_size
    proc = nc.run("mesh", "export", tmp_path / "mesh", tmp_path / "out", check=False)
    assert "panicked" not in proc.stderr
    if proc.returncode != 0:
        # A build without the `draco` feature refuses the fragments by name.
        assert "Draco-encoded fragments are not decoded by this build" in proc.stderr
        assert "segment 42" in proc.stderr
    else:
        # Decoded: lod 0's fragments, one row per Draco point.
        v = pq.read_table(tmp_path / "out" / "vertices.parquet")
        data = (tmp_path / "mesh" / "42").read_bytes()
        points = [len(DracoPy.decode(data[o:o + n]).points)
                  for o, n in zip(np.cumsum([0] + sizes[0][:-1]), sizes[0])]
        assert v.num_rows == sum(points)
    # A truncated index is an error naming the file and the segment.
    index = tmp_path / "mesh" / "42.index"
    index.write_bytes(index.read_bytes()[:-3])
    proc = nc.run("mesh", "show", tmp_path / "mesh", "42", check=False)
    assert proc.returncode != 0
    assert "42.index" in proc.stderr and "segment 42" in proc.stderr


FIXTURE = Path(__file__).resolve().parents[3] / "crates/array/tests/data/multires_draco"


def triangles(vertices, faces):
    """The triangles as a sorted list of vertex-position triples (order-free comparison)."""
    return sorted(tuple(map(tuple, vertices[f])) for f in faces)


def test_multires_draco_fixture_cloudvolume_and_export_agree(nc, tmp_path):
    expected = json.loads((FIXTURE / "expected.json").read_text())
    for name in ("plain", "sharded"):
        layer = tmp_path / name
        shutil.copytree(FIXTURE / name, layer)
        cv = CloudVolume(f"file://{layer}", progress=False)
        for lod in range(len(expected["lods"])):
            got = cv.mesh.get(5, lod=lod)
            got = got[5] if isinstance(got, dict) else got
            out = tmp_path / f"{name}_lod{lod}"
            proc = nc.run("mesh", "export", layer, out, "--lod", lod, check=False)
            if proc.returncode != 0:
                assert "not decoded by this build" in proc.stderr, proc.stderr
                return
            xyz, tri = segment_arrays(
                pq.read_table(out / "vertices.parquet"), pq.read_table(out / "faces.parquet"), 5
            )
            # cloud-volume computes in float32 and neurochunk in float64 rounded once to
            # float32: the same vertices to within a float32 rounding.
            assert xyz.shape == got.vertices.shape and tri.shape == got.faces.shape
            np.testing.assert_allclose(xyz, got.vertices, rtol=2e-7, atol=0)
            assert np.array_equal(tri, got.faces)
            # Against DracoPy's decode placed in float64 (expected.json): exact after rounding.
            want = np.concatenate(
                [np.asarray(f["vertices"]).reshape(-1, 3) for f in expected["lods"][lod]]
            ).astype(np.float32)
            assert np.array_equal(xyz, want)
            assert triangles(xyz, tri) == triangles(want, tri)
        proc = nc.run("mesh", "export", layer, tmp_path / "bad", "--lod", "2", check=False)
        assert proc.returncode != 0 and "no lod 2" in proc.stderr
