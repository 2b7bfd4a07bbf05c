"""The multiscale-image suite runs in the .peers/py312 environment: ome-zarr-py, ngff-zarr and
ome-zarr-models (OME-Zarr 0.4 / 0.5), tensorstore's n5 driver, and zarrita (JavaScript, under
.peers/node, installed by scripts/setup-peers) as the peers. zarr-python 2's N5Store writes its
N5 fixtures in a .peers/py311 subprocess.

    .peers/py312/bin/python -m pytest tests/interop/ome
"""

import ngff_zarr  # noqa: F401 - fail collection with a clear ImportError when missing
import ome_zarr  # noqa: F401
import ome_zarr_models  # noqa: F401
import tensorstore  # noqa: F401
import zarr

if not zarr.__version__.startswith("3."):
    raise RuntimeError(
        f"tests/interop/ome needs zarr-python 3 (found {zarr.__version__}); "
        "run it with .peers/py312/bin/python -m pytest"
    )
