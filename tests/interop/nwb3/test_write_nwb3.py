"""What `neurochunk nwb demo --convention zarr3` writes, read by pynwb + hdmf-zarr 0.14.

Shared with nwb2 (tests/interop/nwbcases_write.py): reading, validation, cached specs, inspect
against the zarr-python walk, `--scale`. Only the Zarr v3 on-disk form is checked here: 0-d
scalars and inline consolidated metadata.
"""

from __future__ import annotations

import json

import nwbwalk
from nwbcases_write import *  # noqa: F401,F403 - the tests shared with nwb2


def test_demo_is_v3_convention(demo_file):
    """Zarr v3 metadata, 0-d scalars, inline consolidated metadata."""
    assert nwbwalk.convention_of(demo_file) == "zarr3"
    root = nwbwalk.open_root(demo_file)
    assert root["identifier"].shape == ()
    root_json = json.loads((demo_file / "zarr.json").read_text())
    assert root_json["consolidated_metadata"]["kind"] == "inline"
