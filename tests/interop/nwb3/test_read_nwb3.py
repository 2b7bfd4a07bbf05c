"""neurochunk reads pynwb/hdmf-zarr 0.14 files (Zarr v3 convention): `nwb inspect --json`
equals the zarr-python walk, `nwb specs` lists the cached namespaces, `nwb check` finds nothing
wrong, and `nwb get` of representative datasets equals what pynwb reads.

Fixtures (one per session, see nwbfixtures.py): minimal, ecephys (path-string reference columns,
`struct` reference compounds with `_REFERENCE_FIELDS`, `_LINKS` incl. shared timestamps), ophys
(pixel_mask `struct`, imaging links), exported (NWBHDF5IO file exported with NWBZarrIO.export).

The tests shared with nwb2 are written once in tests/interop/nwbcases_read.py; here only the
JSON-text reference elements of this convention.
"""

from __future__ import annotations

import nwbcraft
import nwbpeer
import nwbwalk
from nwbcases_read import *  # noqa: F401,F403 - the tests shared with nwb2
from nwbcli import assert_inspect_equal


def test_reference_element_as_json_text(nwb, nwb_files, tmp_path):
    """An element holding the JSON text of a {"source", "path"} dict is read as its path."""
    store = nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "json-text.nwb.zarr")
    column = "/general/extracellular_ephys/electrodes/group"
    nwbcraft.set_reference_element(store, column, 1, "/general/extracellular_ephys/shank0", as_json=True)
    assert_inspect_equal(nwb.inspect(store), nwbwalk.expected_inspect(store))
    assert nwb.check(store).returncode == 0
    got = nwb.nwb_get(store, column)
    nwbpeer.assert_nwb_array(got, nwb_files.gets("ecephys")[column], column)
