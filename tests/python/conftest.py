"""Tests of the neurochunk Python package (python/), run by scripts/test-python with the wheel
installed in .peers/py312 (every file) and .peers/py311 (every file but those needing what
only py312 holds: zarr-python 3 for test_zarr3_interop.py, dask and xarray for
test_dask_xarray.py, distributed for test_distributed.py, Polars and DuckDB for
test_table_engines.py and the tutorial, moto's S3 server for test_remote.py, ome-zarr-py and
ngff-zarr for test_ome.py, cloud-volume for test_precomputed_cloudvolume.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util

collect_ignore: list[str] = []
if int(importlib.metadata.version("zarr").split(".")[0]) < 3:
    collect_ignore.append("test_zarr3_interop.py")
else:
    collect_ignore.append("test_n5_zarr2.py")  # zarr-python 2's N5Store (.peers/py311)
if importlib.util.find_spec("dask") is None or importlib.util.find_spec("xarray") is None:
    collect_ignore.append("test_dask_xarray.py")
if importlib.util.find_spec("distributed") is None:
    collect_ignore.append("test_distributed.py")
if importlib.util.find_spec("polars") is None or importlib.util.find_spec("duckdb") is None:
    collect_ignore += ["test_table_engines.py", "test_tutorial.py"]
if importlib.util.find_spec("moto") is None:
    collect_ignore.append("test_remote.py")
if importlib.util.find_spec("cloudvolume") is None:
    collect_ignore.append("test_precomputed_cloudvolume.py")  # cloud-volume (py312)
if importlib.util.find_spec("ome_zarr") is None or importlib.util.find_spec("ngff_zarr") is None:
    collect_ignore.append("test_ome.py")  # the OME-Zarr peers (py312)

# No example database in the working tree: each run draws new examples, and a failure prints
# the example that reproduces it.
from hypothesis import settings  # noqa: E402

settings.register_profile("neurochunk", database=None)
settings.load_profile("neurochunk")
