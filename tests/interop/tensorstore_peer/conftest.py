"""The tensorstore suite runs in the .peers/py312 environment: tensorstore's zarr and zarr3 drivers.

(The folder is not called `tensorstore` so that it can never shadow the real package.)
"""

import tensorstore  # noqa: F401 - fail collection with a clear ImportError when missing
