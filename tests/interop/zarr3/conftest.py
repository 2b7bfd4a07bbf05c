"""The Zarr v3 suite runs in the .peers/py312 environment, against zarr-python 3."""

import zarr

if not zarr.__version__.startswith("3."):
    raise RuntimeError(
        f"tests/interop/zarr3 needs zarr-python 3 (found {zarr.__version__}); "
        "run it with .peers/py312/bin/python -m pytest"
    )
