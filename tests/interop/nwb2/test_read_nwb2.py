"""neurochunk reads pynwb/hdmf-zarr 0.13 files (legacy Zarr v2 convention): `nwb inspect --json`
equals the zarr-python walk, `nwb specs` lists the cached namespaces, `nwb check` finds nothing
wrong, and `nwb get` of representative datasets equals what pynwb reads.

Fixtures (one per session, see nwbfixtures.py): minimal, ecephys (pickled reference columns,
reference compounds, links incl. shared timestamps), ophys (pixel_mask compound, imaging links),
exported (NWBHDF5IO file exported with NWBZarrIO.export), json2 (ZarrIO with the json2 codec).

The tests are shared with nwb3: tests/interop/nwbcases_read.py.
"""

from nwbcases_read import *  # noqa: F401,F403 - the tests shared with nwb3
