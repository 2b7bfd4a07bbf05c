"""Tests of the neurochunk Python package (python/), run by scripts/test-python with the wheel
installed in .peers/py312 (every file) and .peers/py311 (every file but the zarr-python 3
comparisons, which need zarr-python 3: test_zarr3_interop.py)."""

from __future__ import annotations

import importlib.metadata

collect_ignore: list[str] = []
if int(importlib.metadata.version("zarr").split(".")[0]) < 3:
    collect_ignore.append("test_zarr3_interop.py")
