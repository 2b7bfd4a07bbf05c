"""Arrays, layouts and peer-side writers/readers shared by the remote CLI tests."""

from __future__ import annotations

from typing import Any

import numpy as np

import samples

# Small arrays (a few chunks each): the suite is about transport, not codecs.
INT = np.arange(9 * 13, dtype="<i4").reshape(9, 13) * 3 - 50
FLOAT = samples.sample("<f8", (5, 6, 4))  # NaN and infinities included

# name -> (--format, put options, zarr-python readable?, tensorstore driver)
PUT_LAYOUTS: dict[str, tuple[str, dict, bool, str]] = {
    "zarr2": ("zarr2", {"chunks": (4, 5), "codec": "zstd:3"}, True, "zarr"),
    "zarr3": ("zarr3", {"chunks": (4, 5), "codec": "gzip:5"}, True, "zarr3"),
    "zarr3-sharded": ("zarr3", {"chunks": (2, 3), "shards": (4, 6), "codec": "zstd:1,crc32c"}, True, "zarr3"),
    "n5": ("n5", {"chunks": (4, 5), "codec": "gzip"}, False, "n5"),
}

# name -> (zarr_format, chunks, shards) of arrays zarr-python writes
PEER_LAYOUTS: dict[str, tuple[int, tuple, Any]] = {
    "v2": (2, (4, 5), None),
    "v3": (3, (4, 5), None),
    "v3-sharded": (3, (2, 3), (4, 6)),
}

REGION = "1:8,2:11"


def peer_write(store, data: np.ndarray, layout: str, attributes: dict | None = None, chunks: tuple | None = None):
    """zarr-python 3 writes `data` into `store` (any zarr Store) with a PEER_LAYOUTS layout
    (`chunks` overrides the layout's 2-d chunk shape, e.g. for 3-d data; not with shards)."""
    import zarr

    fmt, layout_chunks, shards = PEER_LAYOUTS[layout]
    chunks = chunks or layout_chunks
    kw = {"shards": shards} if shards else {}
    a = zarr.create_array(store, shape=data.shape, chunks=chunks, dtype=data.dtype, zarr_format=fmt,
                          attributes=attributes or {}, **kw)
    a[...] = data
    return a


def peer_read(store) -> np.ndarray:
    import zarr

    return zarr.open_array(store, mode="r")[...]


def peer_hierarchy(store, zarr_format: int, consolidated: bool = False):
    """root (attrs) / raw (int32) / sub (attrs) / sub/x (float64); consolidated on request."""
    import zarr

    g = zarr.open_group(store, mode="w", zarr_format=zarr_format)
    g.attrs.update({"title": "remote", "n": 3})
    raw = g.create_array("raw", shape=INT.shape, chunks=(4, 5), dtype=INT.dtype)
    raw[...] = INT
    sub = g.create_group("sub", attributes={"name": "bär"})
    x = sub.create_array("x", shape=(6,), chunks=(4,), dtype="<f8")
    x[...] = np.linspace(0, 1, 6)
    if consolidated:
        zarr.consolidate_metadata(store)
    return g


HIERARCHY_PATHS = {"/", "/raw", "/sub", "/sub/x"}


def tensorstore_read(s3, bucket: str, path: str, driver: str) -> np.ndarray:
    import tensorstore as ts

    with s3.tensorstore_env():
        return ts.open({"driver": driver, "kvstore": s3.tensorstore_kvstore(bucket, path)}, read=True).result().read().result()


def staged(s3, bucket: str, path: str, tmp_path, write) -> str:
    """write(local_store_path) with zarr-python on a local folder, then upload it to bucket/path
    (much faster than writing through s3fs; for tests about the CLI's requests, not about the
    peer's S3 client). Returns the s3:// URL."""
    local = tmp_path / "_staged" / path
    local.parent.mkdir(parents=True, exist_ok=True)
    write(str(local))
    s3.upload_dir(local, bucket, path)
    return f"s3://{bucket}/{path}"
