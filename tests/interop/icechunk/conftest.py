"""The Icechunk suite runs in the .peers/py312 environment: the `icechunk` Python package (with
zarr-python 3) writes and reads the repositories neurochunk reads, and reads the tags and
branches neurochunk creates."""

import icechunk  # noqa: F401 - fail collection with a clear ImportError when missing
