"""The NWB legacy-convention suite runs in the .peers/py311 environment: pynwb 4.2 + hdmf-zarr 0.13
+ zarr-python 2.18 (Zarr v2, `zarr_dtype` / `zarr_link`, pickled reference columns).

    .peers/py311/bin/python -m pytest tests/interop/nwb2

Cross-convention sources (nwb convert tests) are written and walked by .peers/py312.
"""

import os

# hdmf-zarr 0.13 stores object-reference columns (electrodes/group, units/electrode_group, the
# trials/epochs `timeseries` compound) with numcodecs' Pickle codec, and numcodecs 0.15.2 refuses
# to unpickle unless this variable is set *before numcodecs is imported*: without it pynwb cannot
# open any file with an electrodes table. Only files written by hdmf-zarr in this session are ever
# unpickled by Python here; the hostile pickles of the bad-input tests go to neurochunk only.
os.environ["NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE"] = "1"
# numcodecs reads the variable once, when numcodecs.pickles is imported; when another suite of
# the same pytest run (zarr2, n5) imported it first, flip the module switch it was read into.
import sys  # noqa: E402

if "numcodecs.pickles" in sys.modules:
    sys.modules["numcodecs.pickles"].ALLOW_UNSAFE_PICKLE_DECODE = True

from nwbsession import require_peer_stack  # noqa: E402

require_peer_stack("nwb2", zarr_version="2.18", hdmf_zarr_version="0.13", env=".peers/py311")

from nwbsession import *  # noqa: E402,F401,F403 - the session fixtures of the NWB suites
