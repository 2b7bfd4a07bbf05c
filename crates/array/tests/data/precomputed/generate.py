"""Generate the Neuroglancer precomputed fixtures of crates/array/tests/precomputed.rs.

Writers: tensorstore (layers `ts_*`) and cloud-volume (layers `cv_*`). Run from this folder in
an environment with both (tensorstore==0.1.86, cloud-volume==12.15.2, numpy), e.g.

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install tensorstore==0.1.86 \
        cloud-volume==12.15.2 numpy
    /tmp/venv/bin/python generate.py

Every scale's values, as the writer itself reads them back (x, y, z, channel; C order), are
saved as `expected/LAYER__KEY.npy` (jpeg: the lossy values the writer decodes).
"""

import json
import os
import shutil

import numpy as np
import tensorstore as ts

HERE = os.path.dirname(os.path.abspath(__file__))
EXPECTED = os.path.join(HERE, "expected")


def image(shape, dtype, seed=0):
    """Smooth-ish deterministic values (so jpeg stays close), distinct per channel."""
    x, y, z, c = np.indices(shape)
    v = (x * 7 + y * 3 + z * 11 + c * 50 + seed) % 251
    if np.dtype(dtype).kind == "f":
        return (v * 0.5 - 17.25).astype(dtype)
    return (v * (1 if np.dtype(dtype).itemsize == 1 else 257)).astype(dtype)


def labels(shape, dtype, big=0):
    x, y, z, c = np.indices(shape)
    v = (x // 3) + 10 * (y // 4) + 100 * (z // 2) + 1000 * c
    v = v.astype(np.uint64) + np.uint64(big)
    return v.astype(dtype)


def save_expected(layer, key, arr):
    os.makedirs(EXPECTED, exist_ok=True)
    np.save(os.path.join(EXPECTED, f"{layer}__{key}.npy"), np.ascontiguousarray(arr))


def ts_scale(layer, dtype, nch, typ, scale, data):
    spec = {
        "driver": "neuroglancer_precomputed",
        "kvstore": {"driver": "file", "path": os.path.join(HERE, layer)},
        "multiscale_metadata": {"data_type": dtype, "num_channels": nch, "type": typ},
        "scale_metadata": scale,
        "open": True,
        "create": True,
    }
    t = ts.open(spec).result()
    t[...] = data
    back = t[...].read().result()
    if scale.get("encoding") != "jpeg":
        assert np.array_equal(back, data), layer
    save_expected(layer, scale["key"], back)


def tensorstore_layers():
    # raw uint8, voxel offset, two scales, edge chunks
    d = image((20, 18, 7, 1), np.uint8)
    ts_scale("ts_raw_u8", "uint8", 1, "image",
             {"key": "4_4_40", "size": [20, 18, 7], "resolution": [4, 4, 40],
              "voxel_offset": [3, 5, 2], "chunk_size": [8, 8, 4], "encoding": "raw"}, d)
    ts_scale("ts_raw_u8", "uint8", 1, "image",
             {"key": "8_8_40", "size": [10, 9, 7], "resolution": [8, 8, 40],
              "voxel_offset": [1, 2, 2], "chunk_size": [8, 8, 4], "encoding": "raw"},
             d[::2, ::2])
    # raw, three channels
    ts_scale("ts_raw_u16_c3", "uint16", 3, "image",
             {"key": "s0", "size": [11, 9, 5], "resolution": [1, 1, 1],
              "chunk_size": [8, 4, 4], "encoding": "raw"}, image((11, 9, 5, 3), np.uint16))
    for dtype in ["uint32", "uint64", "float32"]:
        ts_scale(f"ts_raw_{dtype}", dtype, 1, "image",
                 {"key": "s0", "size": [9, 7, 5], "resolution": [1, 1, 1],
                  "chunk_size": [4, 4, 4], "encoding": "raw"}, image((9, 7, 5, 1), dtype))
    # compressed segmentation
    ts_scale("ts_cseg_u32_888", "uint32", 1, "segmentation",
             {"key": "s0", "size": [21, 19, 9], "resolution": [1, 1, 1],
              "chunk_size": [16, 16, 8], "encoding": "compressed_segmentation",
              "compressed_segmentation_block_size": [8, 8, 8]},
             labels((21, 19, 9, 1), np.uint32))
    ts_scale("ts_cseg_u64_442", "uint64", 1, "segmentation",
             {"key": "s0", "size": [13, 11, 5], "resolution": [1, 1, 1],
              "voxel_offset": [10, 20, 30], "chunk_size": [8, 8, 4],
              "encoding": "compressed_segmentation",
              "compressed_segmentation_block_size": [4, 4, 2]},
             labels((13, 11, 5, 1), np.uint64, big=1 << 40))
    ts_scale("ts_cseg_u32_c2", "uint32", 2, "image",
             {"key": "s0", "size": [10, 9, 3], "resolution": [1, 1, 1],
              "chunk_size": [8, 8, 2], "encoding": "compressed_segmentation",
              "compressed_segmentation_block_size": [4, 4, 1]},
             labels((10, 9, 3, 2), np.uint32))
    # jpeg and png
    for nch in [1, 3]:
        ts_scale(f"ts_jpeg_c{nch}", "uint8", nch, "image",
                 {"key": "s0", "size": [20, 18, 7], "resolution": [1, 1, 1],
                  "chunk_size": [8, 8, 4], "encoding": "jpeg", "jpeg_quality": 95},
                 image((20, 18, 7, nch), np.uint8))
    ts_scale("ts_png_u8", "uint8", 1, "image",
             {"key": "s0", "size": [20, 18, 7], "resolution": [1, 1, 1],
              "chunk_size": [8, 8, 4], "encoding": "png"}, image((20, 18, 7, 1), np.uint8))
    ts_scale("ts_png_u16_c3", "uint16", 3, "image",
             {"key": "s0", "size": [9, 7, 3], "resolution": [1, 1, 1],
              "chunk_size": [4, 4, 2], "encoding": "png"}, image((9, 7, 3, 3), np.uint16))
    # sharded
    ts_scale("ts_shard_identity", "uint16", 1, "image",
             {"key": "s0", "size": [20, 18, 7], "resolution": [1, 1, 1],
              "chunk_size": [8, 8, 4], "encoding": "raw",
              "sharding": {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 0,
                           "hash": "identity", "minishard_bits": 1, "shard_bits": 1,
                           "minishard_index_encoding": "raw", "data_encoding": "raw"}},
             image((20, 18, 7, 1), np.uint16))
    ts_scale("ts_shard_murmur_gzip", "uint64", 1, "segmentation",
             {"key": "s0", "size": [21, 19, 9], "resolution": [1, 1, 1],
              "voxel_offset": [5, 0, 1], "chunk_size": [8, 8, 4],
              "encoding": "compressed_segmentation",
              "compressed_segmentation_block_size": [8, 8, 8],
              "sharding": {"@type": "neuroglancer_uint64_sharded_v1", "preshift_bits": 1,
                           "hash": "murmurhash3_x86_128", "minishard_bits": 2,
                           "shard_bits": 2, "minishard_index_encoding": "gzip",
                           "data_encoding": "gzip"}},
             labels((21, 19, 9, 1), np.uint64, big=(1 << 50) + 7))


def cv_layer(layer, dtype, nch, typ, enc, size, chunk, data, offset=(0, 0, 0), compress=None,
             block=None, sharding=None):
    from cloudvolume import CloudVolume

    path = os.path.join(HERE, layer)
    info = CloudVolume.create_new_info(
        num_channels=nch, layer_type=typ, data_type=dtype, encoding=enc,
        resolution=[4, 4, 40], voxel_offset=list(offset), chunk_size=list(chunk),
        volume_size=list(size),
        compressed_segmentation_block_size=list(block) if block else (8, 8, 8),
    )
    if sharding:
        info["scales"][0]["sharding"] = sharding
    vol = CloudVolume("file://" + path, info=info, compress=compress, progress=False,
                      fill_missing=False)
    vol.commit_info()
    x0, y0, z0 = offset
    vol[x0:x0 + size[0], y0:y0 + size[1], z0:z0 + size[2]] = data
    back = np.asarray(vol[x0:x0 + size[0], y0:y0 + size[1], z0:z0 + size[2]])
    if enc != "jpeg":
        assert np.array_equal(back, data), layer
    save_expected(layer, vol.key, back)


def cloudvolume_layers():
    cv_layer("cv_raw_gzip", "uint8", 1, "image", "raw", (20, 18, 7), (8, 8, 4),
             image((20, 18, 7, 1), np.uint8), offset=(3, 5, 2), compress="gzip")
    cv_layer("cv_cseg_u64", "uint64", 1, "segmentation", "compressed_segmentation",
             (13, 11, 5), (8, 8, 4), labels((13, 11, 5, 1), np.uint64, big=1 << 33),
             block=(4, 4, 2), compress="gzip")
    cv_layer("cv_png_u8", "uint8", 1, "image", "png", (9, 7, 3), (4, 4, 2),
             image((9, 7, 3, 1), np.uint8))


if __name__ == "__main__":
    for name in os.listdir(HERE):
        full = os.path.join(HERE, name)
        if os.path.isdir(full) and (name.startswith(("ts_", "cv_")) or name == "expected"):
            shutil.rmtree(full)
    tensorstore_layers()
    cloudvolume_layers()
