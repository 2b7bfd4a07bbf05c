"""What `neurochunk nwb demo --convention zarr2` writes, read by pynwb + hdmf-zarr 0.13.

The checks shared with nwb3 (every object reads, references and links resolve, the file validates,
cached specs load, `nwb inspect --json` equals the walk, `--scale`) are in
tests/interop/nwbcases_write.py; here the legacy on-disk form (`[1]` + "scalar" scalars).
"""

from __future__ import annotations

import nwbwalk
from nwbcases_write import *  # noqa: F401,F403 - the tests shared with nwb3


def test_demo_is_legacy_convention(demo_file):
    """hdmf-zarr 0.13 cannot read 0-d scalars: the legacy profile writes `[1]` + "scalar"."""
    assert nwbwalk.convention_of(demo_file) == "zarr2"
    root = nwbwalk.open_root(demo_file)
    assert root["identifier"].shape == (1,)
    assert root["identifier"].attrs["zarr_dtype"] == "scalar"
