"""`neurochunk nwb validate` on files of the legacy (Zarr v2) convention: valid pynwb, converted
and demo files, and the corpus of invalid variants (their HDF5 twins go through pynwb in the nwb3 suite).

The tests are shared with nwb3: tests/interop/nwbcases_validate.py.
"""

from nwbcases_validate import *  # noqa: F401,F403 - the tests and fixtures shared with nwb3
