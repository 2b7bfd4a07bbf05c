"""A small program over the public API, checked by `mypy --strict` against the package's
annotations and stubs (scripts/test-python), and run by test_typing_example.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

import neurochunk as nc


def write_and_read(root: Path) -> npt.NDArray[np.uint16]:
    group = nc.create_group(root / "session.zarr", attributes={"subject": "m1"})
    raw = group.create_array(
        "raw",
        shape=(8, 64, 64),
        dtype="uint16",
        chunks=(1, 32, 32),
        shards=(4, 64, 64),
        compressors="zstd:3",
        dimension_names=["t", "y", "x"],
    )
    raw[...] = np.arange(8 * 64 * 64, dtype="uint16").reshape(8, 64, 64)
    raw.attrs["unit"] = "counts"
    opened = nc.open(root / "session.zarr", mode="r")
    assert isinstance(opened, nc.Group)
    node = opened["raw"]
    assert isinstance(node, nc.Array)
    tile: npt.NDArray[np.uint16] = node[2, ::2, 10:20]
    picked = node.oindex[[0, 7], 5, np.arange(64) % 2 == 0]
    assert picked.shape == (2, 32)
    names: list[str] = list(opened)
    assert names == ["raw"]
    try:
        nc.open(root / "missing.zarr")
    except nc.NodeNotFoundError as err:
        print("missing:", err, file=sys.stderr)
    notes: list[str] = nc.convert(root / "session.zarr", root / "session.n5", format="n5")
    print(opened.tree(), notes, node.info, sep="\n")
    return tile


def tables_and_nwb(root: Path) -> tuple[int, list[str]]:
    (root / "7.swc").write_text("1 1 0 0 0 1 -1\n2 3 5 0 0 1 1\n")
    out = root / "n.skeletons.parquet"
    summary: dict[str, object] = nc.table.from_swc(root / "7.swc", out, context="urn:uuid:typing")
    report: nc.table.ValidationReport = nc.table.validate(out, strict=False)
    assert report.valid, report.to_dict()
    table: nc.table.Table = nc.table.read(out, columns=["sample_id", "x"], filter=[("x", ">", 1.0)])
    rows: int = nc.table.write(table, root / "copy.arrow")
    nc.nwb.demo(root / "s.nwb.zarr", convention="legacy")
    f: nc.nwb.File = nc.nwb.open(root / "s.nwb.zarr")
    units = f["/units"]
    assert isinstance(units, nc.nwb.Group)
    spikes: list[object] = units.to_dict()["spike_times"]
    data = f["/acquisition/ElectricalSeries/data"]
    assert isinstance(data, nc.nwb.Dataset) and data.array.ndim == 2
    print(summary, len(spikes))
    return rows, [o.path for o in f.objects(type="Units")]


def precomputed_objects(root: Path) -> tuple[int, int, int]:
    pc = nc.precomputed
    vertices = np.array([[0, 0, 0], [8, 0, 0], [8, 8, 0]], dtype=np.float32)
    edges = np.array([[1, 0], [2, 1]], dtype=np.uint32)
    pc.write_skeletons(root / "skel", {5: (vertices, edges, {"radius": np.ones(3, np.float32)})}, sharded=True)
    layer: nc.precomputed.SkeletonLayer = pc.skeletons(root / "skel")
    skeleton: nc.precomputed.Skeleton = layer.get(5)
    radius: npt.NDArray[np.float32] = skeleton.attributes["radius"]
    faces = np.array([[0, 1, 2]], dtype=np.uint32)
    pc.write_meshes(root / "mesh", {5: (vertices, faces)}, gzip=True)
    mesh: nc.precomputed.Mesh = pc.meshes(root / "mesh").get(5)
    pc.write_annotations(root / "ann", "line", vertices[None, :2], properties={"w": [1.5]}, relationships={"seg": [[5]]})
    found: nc.precomputed.Annotations = pc.annotations(root / "ann").by_segment("seg", 5)
    print(layer, skeleton, radius.sum(), mesh, found)
    return len(skeleton.edges), len(mesh.faces), len(found)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        write_and_read(Path(tmp))
        tables_and_nwb(Path(tmp))
        precomputed_objects(Path(tmp))
