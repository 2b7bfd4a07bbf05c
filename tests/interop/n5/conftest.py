"""The N5 suite runs in the .peers/py311 environment: zarr-python 2.18's `N5Store` and
tensorstore's `n5` driver are the peers.

    .peers/py311/bin/python -m pytest tests/interop/n5
"""

import tensorstore  # noqa: F401 - fail collection with a clear ImportError when missing
import zarr

if not zarr.__version__.startswith("2.18."):
    raise RuntimeError(
        f"tests/interop/n5 needs zarr-python 2.18 for its N5Store (found {zarr.__version__}); "
        "run it with .peers/py311/bin/python -m pytest"
    )
