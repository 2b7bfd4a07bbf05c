"""The precomputed suite runs in the .peers/py312 environment: tensorstore's
neuroglancer_precomputed driver."""

import tensorstore  # noqa: F401 - fail collection with a clear ImportError when missing
