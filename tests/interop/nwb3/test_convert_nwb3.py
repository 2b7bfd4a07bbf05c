"""`neurochunk nwb convert --convention zarr3` turns legacy-convention files (written by pynwb +
hdmf-zarr 0.13 in .peers/py311: pickled and json2 references, HDF5 export, and by `nwb demo
--convention zarr2`) into Zarr v3-convention files that pynwb + hdmf-zarr 0.14 open, read and
validate, with the same objects (path, type, object id), links, references, data, cached specs
and complete consolidated metadata.

The tests are shared with nwb2 (the other direction): tests/interop/nwbcases_convert.py.
"""

from nwbcases_convert import *  # noqa: F401,F403 - the tests and fixtures shared with nwb2
