"""The NWB Zarr v3-convention suite runs in the .peers/py312 environment: pynwb 4.2 + hdmf-zarr
0.14 + zarr-python 3 (`_DTYPE` / `_LINKS` / `_REFERENCE`, path-string references, 0-d scalars,
`struct` compounds with `_REFERENCE_FIELDS`, inline consolidated metadata).

    .peers/py312/bin/python -m pytest tests/interop/nwb3

Cross-convention sources (nwb convert tests) are written and walked by .peers/py311.
"""

import os

# Harmless here (hdmf-zarr 0.14 never pickles); set for symmetry with nwb2 and for the shared
# helpers, which may decode legacy stores.
os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")

from nwbsession import require_peer_stack  # noqa: E402

require_peer_stack("nwb3", zarr_version="3", hdmf_zarr_version="0.14", env=".peers/py312")

from nwbsession import *  # noqa: E402,F401,F403 - the session fixtures of the NWB suites
