"""The Zarr v2 suite runs in the .peers/py311 environment, against zarr-python 2.18."""

import zarr

if not zarr.__version__.startswith("2.18."):
    raise RuntimeError(
        f"tests/interop/zarr2 needs zarr-python 2.18 (found {zarr.__version__}); "
        "run it with .peers/py311/bin/python -m pytest"
    )
