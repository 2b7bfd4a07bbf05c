"""`neurochunk nwb import --convention zarr2`: HDF5 NWB files (written here by pynwb's NWBHDF5IO and
h5py, pynwb's back-compat files, the DANDI example file) read by pynwb + hdmf-zarr of this
environment exactly as NWBHDF5IO reads the source; bad input fails cleanly.

The tests are shared with nwb3: tests/interop/nwbcases_import.py.
"""

from nwbcases_import import *  # noqa: F401,F403 - the tests and fixtures shared with the other suite
