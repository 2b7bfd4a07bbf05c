"""`neurochunk nwb convert --convention zarr2` turns Zarr v3-convention files (written by pynwb +
hdmf-zarr 0.14 in .peers/py312, and by `nwb demo --convention zarr3`) into legacy files that
pynwb + hdmf-zarr 0.13 open, read and validate, with the same objects (path, type, object id),
links, references, data, cached specs and complete consolidated metadata.

The tests are shared with nwb3 (the other direction): tests/interop/nwbcases_convert.py.
"""

from nwbcases_convert import *  # noqa: F401,F403 - the tests and fixtures shared with nwb3
