"""The suite's own ground truth, without neurochunk: pynwb-written legacy fixtures are valid, the
zarr-python walk (the expected `nwb inspect --json`) agrees with what pynwb reads, and the crafted
bad inputs really are bad for the peers. These tests pass before the Rust side exists.

The tests shared with nwb3 are written once in tests/interop/nwbcases_walk.py; here only the
legacy-convention ones (json2 codec, pickled reference columns, a live hostile pickle).
"""

from __future__ import annotations

import json
import subprocess
import sys

import nwbcraft
from nwbcases_walk import *  # noqa: F401,F403 - the tests shared with nwb3
from nwbcases_walk import EPHYS, GROUP_REFS, UNIT_REFS, dataset_refs


def test_json2_fixture_uses_json2_codec(nwb_files):
    """ZarrIO(object_codec_class=JSON) really wrote json2 reference columns (NWBZarrIO would not)."""
    path = nwb_files.path("json2")
    for column in (f"{EPHYS}/electrodes/group", "/units/electrode_group"):
        meta = json.loads((path / column.lstrip("/") / ".zarray").read_text())
        assert [f["id"] for f in meta["filters"]] == ["json2"], meta["filters"]
    doc = nwb_files.walk(path)
    assert dataset_refs(doc, f"{EPHYS}/electrodes/group") == GROUP_REFS
    assert dataset_refs(doc, "/units/electrode_group") == UNIT_REFS


def test_ecephys_fixture_pickles_references(nwb_files):
    path = nwb_files.path("ecephys")
    for column in (f"{EPHYS}/electrodes/group", "/intervals/trials/timeseries"):
        meta = json.loads((path / column.lstrip("/") / ".zarray").read_text())
        assert meta["filters"] == [{"id": "pickle", "protocol": 5}], meta
    globals_ = nwbcraft.pickle_globals(nwbcraft.decode_v2_chunk(path, f"{EPHYS}/electrodes/group"))
    assert "hdmf_zarr.utils.ZarrReference" in globals_, globals_


def test_hostile_pickle_payload_is_live(nwb_files, tmp_path):
    """The os.system pickle of the bad-input tests really runs its command when zarr-python +
    numcodecs decode the column (in a child process), so "no marker file" after neurochunk is
    a meaningful check."""
    store = nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "hostile.nwb.zarr")
    marker = tmp_path / "marker-from-python"
    payload = nwbcraft.os_system_pickle(f"touch {marker}")
    assert nwbcraft.pickle_globals(payload) == ["os.system"]
    nwbcraft.write_v2_chunk(store, f"{EPHYS}/electrodes/group", payload)
    assert nwbcraft.decode_v2_chunk(store, f"{EPHYS}/electrodes/group") == payload
    code = (
        "import os; os.environ['NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE'] = '1'\n"
        "import zarr\n"
        f"a = zarr.open_group(zarr.DirectoryStore({str(store)!r}), mode='r')[{EPHYS.lstrip('/') + '/electrodes/group'!r}]\n"
        "try:\n    a[...]\nexcept Exception:\n    pass\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    assert marker.exists(), "the crafted pickle did not run its payload under zarr-python"
