"""Write the multi-resolution Draco mesh fixture of crates/array/tests/precomputed_meshes.rs.

    python generate.py   (DracoPy 2.2.0, numpy; writes next to this file)

Two segmentation layers holding the same mesh of segment 5, `plain/` (unsharded: mesh/5.index
and mesh/5) and `sharded/` (one shard mesh/0.shard, raw encodings, identity hash), following
Neuroglancer's multi-resolution mesh format: each fragment is a Draco mesh whose positions are
integers in [0, 2**vertex_quantization_bits) of the fragment's octree node (DracoPy quantizes
with range 2**bits - 1 and origin 0, so the quantized values are the integers). lod 0 has two
fragments and an empty one (0 bytes), lod 1 one fragment. `expected.json` records DracoPy's
decode of every fragment (integer positions, faces) and the vertices in model coordinates
(stored model coordinates of the spec's formula, then the info's transform), in float64.
"""
import json
import os
import struct

import DracoPy
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BITS = 10
Q = 2**BITS - 1
CHUNK = [64.0, 64.0, 32.0]
ORIGIN = [-16.0, 8.0, 0.0]
OFFSETS = [[0.0, 0.0, 0.0], [0.5, 0.25, 0.0]]
TRANSFORM = [4.0, 0, 0, 100.0, 0, 4.0, 0, -50.0, 0, 0, 40.0, 0.0]


def octahedron(center, r):
    c = np.array(center, dtype=np.float64)
    pts = [c + d for d in ([r, 0, 0], [-r, 0, 0], [0, r, 0], [0, -r, 0], [0, 0, r], [0, 0, -r])]
    faces = [[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4], [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]]
    return np.clip(np.round(pts), 0, Q).astype(np.float32), np.array(faces, dtype=np.uint32)


def grid_patch(n):
    """An n x n sheet of triangles across the node, z varying."""
    pts = []
    for i in range(n + 1):
        for j in range(n + 1):
            pts.append([i * Q // n, j * Q // n, (i * 37 + j * 91) % (Q + 1)])
    faces = []
    for i in range(n):
        for j in range(n):
            a = i * (n + 1) + j
            faces += [[a, a + 1, a + n + 1], [a + 1, a + n + 2, a + n + 1]]
    return np.array(pts, dtype=np.float32), np.array(faces, dtype=np.uint32)


def encode(pts, faces):
    return DracoPy.encode(pts, faces, quantization_bits=BITS, quantization_range=Q,
                          quantization_origin=[0, 0, 0], compression_level=7)


# lod 0: fragments at grid positions (0,0,0), (1,0,0) (empty) and (1,1,0), Z-curve order.
lods = [
    [((0, 0, 0), grid_patch(5)), ((1, 0, 0), None), ((1, 1, 0), octahedron([500, 400, 300], 200))],
    [((0, 0, 0), octahedron([300, 600, 700], 250))],
]
fragments = []  # (lod, position, bytes)
for lod, frags in enumerate(lods):
    for pos, mesh in frags:
        fragments.append((lod, pos, b"" if mesh is None else encode(*mesh)))

manifest = struct.pack("<3f", *CHUNK) + struct.pack("<3f", *ORIGIN)
manifest += struct.pack("<I", len(lods))
manifest += struct.pack(f"<{len(lods)}f", *[1.0, 2.0])
manifest += struct.pack(f"<{3 * len(lods)}f", *[v for o in OFFSETS for v in o])
manifest += struct.pack(f"<{len(lods)}I", *[len(f) for f in lods])
for lod in range(len(lods)):
    mine = [f for f in fragments if f[0] == lod]
    for axis in range(3):
        manifest += struct.pack(f"<{len(mine)}I", *[f[1][axis] for f in mine])
    manifest += struct.pack(f"<{len(mine)}I", *[len(f[2]) for f in mine])
data = b"".join(f[2] for f in fragments)

mesh_info = {"@type": "neuroglancer_multilod_draco", "vertex_quantization_bits": BITS,
             "transform": TRANSFORM, "lod_scale_multiplier": 1.0}
volume_info = {"type": "segmentation", "data_type": "uint64", "num_channels": 1, "mesh": "mesh",
               "scales": [{"key": "8_8_8", "resolution": [8, 8, 8], "voxel_offset": [0, 0, 0],
                           "size": [64, 64, 64], "chunk_sizes": [[64, 64, 64]],
                           "encoding": "raw"}]}


def write(path, payload):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(payload if isinstance(payload, bytes) else json.dumps(payload, indent=1).encode())


write(f"{HERE}/plain/info", volume_info)
write(f"{HERE}/plain/mesh/info", mesh_info)
write(f"{HERE}/plain/mesh/5.index", manifest)
write(f"{HERE}/plain/mesh/5", data)

# Sharded: preshift 0, identity hash, no minishard or shard bits: one shard 0.shard with one
# minishard; the chunk of id 5 is the manifest, the fragment data just before it.
sharding = {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0, "hash": "identity",
            "minishard_bits": 0, "shard_bits": 0, "minishard_index_encoding": "raw",
            "data_encoding": "raw"}
index_bytes = 16  # one minishard: [start, end) of its index
body = data + manifest
minishard = struct.pack("<3q", 5, len(data), len(manifest))  # id delta, start delta, size
shard = struct.pack("<2Q", len(body), len(body) + len(minishard)) + body + minishard
write(f"{HERE}/sharded/info", volume_info)
write(f"{HERE}/sharded/mesh/info", dict(mesh_info, sharding=sharding))
write(f"{HERE}/sharded/mesh/0.shard", shard)

# What DracoPy decodes, and the model coordinates of every vertex.
T = np.array(TRANSFORM + [0, 0, 0, 1], dtype=np.float64).reshape(4, 4)
expected = {"segment": 5, "vertex_quantization_bits": BITS, "lods": []}
for lod in range(len(lods)):
    out = []
    for (flod, pos, blob) in fragments:
        if flod != lod:
            continue
        if not blob:
            out.append({"position": list(pos), "bytes": 0, "quantized": [], "faces": [],
                        "vertices": []})
            continue
        m = DracoPy.decode(blob)
        q = np.asarray(m.points, dtype=np.float64).reshape(-1, 3)
        faces = np.asarray(m.faces, dtype=np.int64).reshape(-1, 3)
        stored = (np.array(ORIGIN) + np.array(OFFSETS[lod])
                  + np.array(CHUNK) * 2**lod * (np.array(pos) + q / Q))
        model = stored @ T[:3, :3].T + T[:3, 3]
        out.append({"position": list(pos), "bytes": len(blob), "quantized": q.astype(int).tolist(),
                    "faces": faces.tolist(), "vertices": model.tolist()})
    expected["lods"].append(out)
write(f"{HERE}/expected.json", expected)
print("fragments:", [(l, p, len(b)) for l, p, b in fragments], "data", len(data), "shard", len(shard))
