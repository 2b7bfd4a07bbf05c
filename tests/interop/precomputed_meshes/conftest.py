"""The precomputed meshes suite runs in the .peers/py312 environment: cloud-volume 12.15.2
writes and reads the legacy mesh directories neurochunk reads and writes; DracoPy (a
cloud-volume dependency) encodes the fragments of a multi-resolution layer."""

import cloudvolume  # noqa: F401 - fail collection with a clear ImportError when missing
import DracoPy  # noqa: F401
