"""The suite's own ground truth, without neurochunk: pynwb-written Zarr v3 fixtures are valid, the
zarr-python walk (the expected `nwb inspect --json`) agrees with what pynwb reads, and the crafted
bad inputs really are bad for the peers. These tests pass before the Rust side exists.

The tests shared with nwb2 are written once in tests/interop/nwbcases_walk.py; here only the
Zarr v3-convention ones (on-disk layout, JSON-text reference elements).
"""

from __future__ import annotations

import json

import zarr

import nwbcraft
import nwbpeer
import nwbwalk
from nwbcases_walk import *  # noqa: F401,F403 - the tests shared with nwb2
from nwbcases_walk import EPHYS


def test_fixtures_use_the_v3_convention(nwb_files):
    """The on-disk facts the nwb3 tests rely on (hdmf-zarr 0.14 + zarr-python 3.4)."""
    path = nwb_files.path("ecephys")
    root = json.loads((path / "zarr.json").read_text())
    assert root["consolidated_metadata"]["kind"] == "inline"
    identifier = json.loads((path / "identifier" / "zarr.json").read_text())
    assert identifier["shape"] == [] and identifier["attributes"] == {"_DTYPE": "str"}
    group = json.loads((path / "general/extracellular_ephys/electrodes/group/zarr.json").read_text())
    assert group["data_type"] == "string" and group["attributes"]["_DTYPE"] == "object_reference"
    trials = json.loads((path / "intervals/trials/timeseries/zarr.json").read_text())
    assert trials["data_type"]["name"] == "struct"
    assert trials["attributes"]["_REFERENCE_FIELDS"] == ["timeseries"]
    assert "_DTYPE" not in trials["attributes"]
    shank = json.loads((path / "general/extracellular_ephys/shank0/zarr.json").read_text())
    assert shank["attributes"]["_LINKS"] == [{"source": ".", "path": "/general/devices/probe", "name": "device"}]


def test_reference_element_as_json_text(nwb_files, tmp_path):
    """A v3 reference element may be the JSON text of a {"source", "path"} dict: hdmf-zarr 0.14
    resolves it, and the walk reports its path like a plain one."""
    store = nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "json-text.nwb.zarr")
    nwbcraft.set_reference_element(store, f"{EPHYS}/electrodes/group", 1, f"{EPHYS}/shank0", as_json=True)
    column = zarr.open_array(str(store / "general/extracellular_ephys/electrodes/group"), mode="r")[...]
    assert str(column[1]).startswith("{")
    assert nwbwalk.expected_inspect(store) == nwb_files.walk(nwb_files.path("ecephys"))
    with nwbpeer.open_nwb(store) as io:
        nwbpeer.assert_valid(io, "json-text reference")
        assert [g.name for g in io.read().electrodes["group"].data[:]] == ["shank0", "shank0", "shank1", "shank1"]
