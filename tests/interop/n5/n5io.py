"""Writing and reading N5 with the two peers: tensorstore's `n5` driver and zarr-python 2's
`N5Store`.

Axis orders: tensorstore presents an N5 dataset in the order `attributes.json` lists its
dimensions (neurochunk's default, `--n5-axis-order listed`); zarr-python 2 presents the reversed
order (`--n5-axis-order reversed`). The same data in the other view is the transpose.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numcodecs
import numpy as np
import tensorstore as ts
import zarr

# Every N5 data type (the numeric ones both peers support).
DTYPES = ["uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64", "float32", "float64"]

# tensorstore writes these compressions (it has no lz4).
TS_COMPRESSIONS = {
    "raw": {"type": "raw"},
    "gzip": {"type": "gzip", "level": 5},
    "zlib": {"type": "gzip", "useZlib": True, "level": 3},
    "bzip2": {"type": "bzip2", "blockSize": 9},
    "xz": {"type": "xz", "preset": 6},
    "blosc": {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1},
    "zstd": {"type": "zstd", "level": 3},
}

# zarr-python 2's N5Store maps these numcodecs compressors (lz4 and zstd are written with stray
# numcodecs keys; lz4 in numcodecs' framing, not Java's).
ZP2_COMPRESSORS = {
    "raw": lambda: None,
    "gzip": lambda: numcodecs.GZip(level=5),
    "zlib": lambda: numcodecs.Zlib(level=3),
    "bzip2": lambda: numcodecs.BZ2(level=9),
    "xz": lambda: numcodecs.LZMA(preset=6),
    "blosc": lambda: numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1),
    "zstd": lambda: numcodecs.Zstd(level=3),
    "lz4": lambda: numcodecs.LZ4(acceleration=1),
}

# `neurochunk put --codec` specs for N5 and the `compression` object each must produce.
PUT_CODECS = {
    "none": {"type": "raw"},
    "gzip:5": {"type": "gzip", "level": 5, "useZlib": False},
    "zlib:3": {"type": "gzip", "level": 3, "useZlib": True},
    "bz2:9": {"type": "bzip2", "blockSize": 9},
    "lzma:6": {"type": "xz", "preset": 6},
    "blosc:lz4:5:shuffle": {"type": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    "zstd:3": {"type": "zstd", "level": 3},
}


def _spec(path: Path) -> dict:
    return {"driver": "n5", "kvstore": {"driver": "file", "path": str(path)}}


def ts_write(path: Path, data: np.ndarray, compression: dict, chunks, sparse: bool = False) -> np.ndarray:
    """Create an N5 dataset with tensorstore, write `data` (only its first block when sparse)
    and return what tensorstore reads back."""
    metadata = {
        "dimensions": list(data.shape),
        "blockSize": list(chunks),
        "dataType": str(data.dtype),
        "compression": compression,
    }
    store = ts.open({**_spec(path), "metadata": metadata}, create=True).result()
    if sparse:
        first = tuple(slice(0, c) for c in chunks)
        store[first].write(data[first]).result()
    else:
        store.write(data).result()
    return ts_read(path)


def ts_read(path: Path) -> np.ndarray:
    return ts.open(_spec(path), open=True).result().read().result()


def zp2_store(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return zarr.N5Store(str(path))


def zp2_write(path: Path, data: np.ndarray, compressor, chunks, sparse: bool = False, name: str | None = None) -> np.ndarray:
    """Create an N5 array with zarr-python 2 (its shape is the reversed N5 dimensions), write
    `data` (only its first chunk when sparse) and return what zarr-python reads back."""
    store = zp2_store(path)
    z = zarr.create(
        shape=data.shape, chunks=chunks, dtype=data.dtype, compressor=compressor, store=store, path=name, fill_value=0
    )
    if sparse:
        first = tuple(slice(0, c) for c in chunks)
        z[first] = data[first]
    else:
        z[...] = data
    return zp2_read(path, name)


def zp2_read(path: Path, name: str | None = None) -> np.ndarray:
    z = zarr.open_array(zp2_store(path), mode="r", path=name)
    return z[...]


_counter = [0]


def get(nc, path: Path, n5_axis_order: str | None = None, region: str | None = None) -> np.ndarray:
    """`neurochunk get PATH [--n5-axis-order ORDER] [--region SEL]`, loaded with NumPy."""
    _counter[0] += 1
    out = nc.scratch / f"n5get-{_counter[0]}.npy"
    args: list = ["get", path, "-o", out]
    if n5_axis_order is not None:
        args += ["--n5-axis-order", n5_axis_order]
    if region is not None:
        args += [f"--region={region}"]
    nc.run(*args)
    return np.load(out, allow_pickle=False)
