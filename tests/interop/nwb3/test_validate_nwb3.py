"""`neurochunk nwb validate` on files of the Zarr v3 convention: valid pynwb, converted
and demo files, and the corpus of invalid variants, with pynwb.validate of each variant's HDF5 twin.

The tests are shared with nwb2: tests/interop/nwbcases_validate.py.
"""

from nwbcases_validate import *  # noqa: F401,F403 - the tests and fixtures shared with nwb2
