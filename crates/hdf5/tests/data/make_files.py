"""Writes the HDF5 test files of neurochunk-hdf5's tests with h5py (run it with a Python that
has h5py and NumPy; the files are committed, the tests never run Python)."""

import h5py
import numpy as np


def nwb_root(f):
    for key, value in [("neurodata_type", "NWBFile"), ("namespace", "core"), ("nwb_version", "2.8.0")]:
        f.attrs[key] = value


# source.nwb: a chunked + shuffle + deflate grid, a big-endian contiguous array, a partly
# written chunked array with a fill value, an attribute array and a soft link.
with h5py.File("source.nwb", "w", libver="earliest") as f:
    nwb_root(f)
    acq = f.create_group("acquisition")
    grid = acq.create_dataset(
        "grid", data=(np.arange(200, dtype="<i4") * 3 - 100).reshape(20, 10),
        chunks=(7, 4), shuffle=True, compression="gzip", compression_opts=4)
    grid.attrs["scale"] = np.array([0.5, 1.5, 2.5])
    acq.create_dataset("floats", data=np.array([1.0, -2.0, 3.5, 0.0, 1e300, -1e-300], dtype=">f8"))
    sparse = acq.create_dataset("sparse", shape=(25,), chunks=(10,), dtype="<i2", fillvalue=-7)
    sparse[0:10] = 1
    acq["alias"] = h5py.SoftLink("/acquisition/grid")

# big.nwb: enough elements to be referenced chunk by chunk (3 x 3 chunks).
with h5py.File("big.nwb", "w") as f:
    f.create_dataset("values", data=np.arange(6000, dtype="<i4").reshape(100, 60),
                     chunks=(40, 25), shuffle=True, compression="gzip", compression_opts=3)

# userblock.h5: a 1024-byte user block before chunked and contiguous data.
with h5py.File("userblock.h5", "w", userblock_size=1024) as f:
    f.create_dataset("x", data=np.arange(5000, dtype="<i4").reshape(100, 50),
                     chunks=(30, 20), shuffle=True, compression="gzip", compression_opts=4)
    f.create_dataset("c", data=np.arange(2000, dtype="<f8"))

# dangling.nwb: a soft link to nothing.
with h5py.File("dangling.nwb", "w") as f:
    f.create_group("g")
    f["g/broken"] = h5py.SoftLink("/missing/target")

# escaping.nwb: an external link to a file one directory up (the test lays the files out).
with h5py.File("escaping.nwb", "w") as f:
    f["away"] = h5py.ExternalLink("../outside/other.nwb", "/acquisition/grid")
