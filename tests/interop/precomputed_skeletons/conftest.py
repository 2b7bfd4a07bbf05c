"""The precomputed skeletons suite runs in the .peers/py312 environment: cloud-volume writes and
reads the Neuroglancer precomputed skeleton layers neurochunk reads and writes."""

import cloudvolume  # noqa: F401 - fail collection with a clear ImportError when missing
