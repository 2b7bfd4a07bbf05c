"""HDF5 NWB sources for `neurochunk nwb import`, and the pynwb view both sides are compared by.

* `write_sources(dir)` writes, with pynwb's NWBHDF5IO (and h5py for what pynwb does not write):
  `ecephys.nwb` (electrodes table with a DynamicTableRegion, chunked + gzip + shuffle data,
  units with ragged columns, trials/epochs with a TimeSeriesReferenceVectorData column, a
  dataset link), `ophys.nwb` (a PlaneSegmentation with image masks and pixel masks, a
  RoiResponseSeries region), `second.nwb` and `linking.nwb` (an external link into
  `second.nwb`), and `constructs.h5` (h5py only: a chunked + gzip array large enough to be referenced
  by byte ranges, region references, a compound with a reference field, scalars, fixed and variable-length text, an h5py bool, a big-endian
  contiguous array, a compact array, a fill value, an empty chunked array, a hard link).
* `snapshot(nwbfile)` is every object pynwb read (by place): type, name, and every
  field normalised (containers by place, arrays as dtype + nested lists, text as str,
  datetimes as ISO text), so that an HDF5 source and its import compare with `==`.
"""

from __future__ import annotations

import contextlib
import datetime
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

import nwbfixtures

# HDF5 NWB files written by others (../shared/thirdparty, see its README): pynwb's back-compat
# files and the DANDI example file of hdmf-zarr's gallery.
THIRDPARTY = Path(__file__).resolve().parents[3] / "shared" / "thirdparty"
BACK_COMPAT = sorted((THIRDPARTY / "pynwb" / "tests" / "back_compat").glob("*.nwb"))
DANDI = THIRDPARTY / "hdmf-zarr" / "docs" / "gallery" / "resources" / "sub_anm00239123_ses_20170627T093549_ecephys_and_ogen.nwb"

ES_H5_DATA = (np.arange(3000 * 8, dtype=np.int16).reshape(3000, 8) % 977 - 400).astype(np.int16)
IMAGE_MASKS = [np.eye(6, dtype=np.float32) * (i + 1) for i in range(3)]


def _quiet():
    return nwbfixtures._quiet()


def _write(nwbfile, path: Path, manager=None) -> Path:
    from pynwb import NWBHDF5IO

    with _quiet(), NWBHDF5IO(str(path), mode="w", manager=manager) as io:
        io.write(nwbfile)
    return path


def ecephys(path: Path) -> Path:
    from hdmf.backends.hdf5 import H5DataIO
    from pynwb.ecephys import ElectricalSeries

    nwb = nwbfixtures.ecephys_file("h5-ecephys")
    region = nwb.create_electrode_table_region(region=[0, 1, 2, 3], description="again all electrodes")
    # Electrodes beyond the fixture's four, for an 8-channel chunked + compressed series.
    group = nwb.electrode_groups["shank0"]
    for i in range(4):
        nwb.add_electrode(group=group, location=f"extra{i}", x=10.0 + i, y=1.0, z=0.0)
    region8 = nwb.create_electrode_table_region(region=list(range(8)), description="eight electrodes")
    data = H5DataIO(ES_H5_DATA, chunks=(512, 4), compression="gzip", compression_opts=4, shuffle=True)
    nwb.add_acquisition(ElectricalSeries(name="compressed", data=data, electrodes=region8, rate=30000.0))
    nwb.add_acquisition(ElectricalSeries(name="contiguous", data=ES_H5_DATA[:50, :4].copy(), electrodes=region, rate=30.0))
    if nwb.keywords is None:
        nwb.keywords = ["hdf5", "import", "ünïcode"]
    return _write(nwb, path)


def ophys(path: Path) -> Path:
    nwb = nwbfixtures.ophys_file("h5-ophys")
    module = nwb.processing["ophys"]
    segmentation = module["ImageSegmentation"]
    plane = nwb.imaging_planes["plane0"]
    masks = segmentation.create_plane_segmentation(
        name="ImageMasks", description="image masks", imaging_plane=plane
    )
    for mask in IMAGE_MASKS:
        masks.add_roi(image_mask=mask)
    return _write(nwb, path)


def linked_pair(directory: Path) -> tuple[Path, Path]:
    """`second.nwb` with a TimeSeries; `linking.nwb` whose acquisition links to it (an HDF5
    external link, as NWBHDF5IO writes when a container of another file is added)."""
    import h5py
    from pynwb import TimeSeries

    second = nwbfixtures._nwbfile("h5-second", "the external link's target")
    second.add_acquisition(TimeSeries(name="remote_ts", data=np.arange(12.0), unit="V", rate=2.0))
    second_path = _write(second, directory / "second.nwb")
    linking = nwbfixtures._nwbfile("h5-linking", "links into second.nwb")
    linking_path = _write(linking, directory / "linking.nwb")
    with h5py.File(linking_path, "a") as f:
        f["acquisition/remote_ts"] = h5py.ExternalLink("second.nwb", "/acquisition/remote_ts")
    return second_path, linking_path


def constructs(path: Path) -> Path:
    """A plain HDF5 file (h5py) with the constructs pynwb files do not show."""
    import h5py

    with h5py.File(path, "w") as f:
        grid = f.create_dataset("grid", data=np.arange(200, dtype="<i4").reshape(20, 10), chunks=(7, 4), compression="gzip", shuffle=True)
        f.create_dataset("large", data=np.arange(5000, dtype="<i4").reshape(100, 50), chunks=(30, 20), compression="gzip", shuffle=True)
        f.create_dataset("big_endian", data=np.linspace(0, 1, 12).reshape(3, 4).astype(">f8"))
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_layout(h5py.h5d.COMPACT)
        space = h5py.h5s.create_simple((5,))
        h5py.h5d.create(f.id, b"compact", h5py.h5t.STD_U16LE, space, dcpl).write(
            h5py.h5s.ALL, h5py.h5s.ALL, np.arange(5, dtype="<u2") * 3
        )
        f.create_dataset("scalar_float", data=2.5)
        f.create_dataset("scalar_text", data="one string", dtype=h5py.string_dtype())
        f.create_dataset("vlen_text", data=["a", "bb", "ccc ü"], dtype=h5py.string_dtype())
        f.create_dataset("fixed_text", data=np.array([b"ab", b"c"], dtype="S3"))
        f.create_dataset("flags", data=np.array([True, False, True]))
        f.create_dataset("fill", shape=(30,), dtype="i4", chunks=(8,), fillvalue=-7)[:8] = 1
        f.create_dataset("empty", shape=(0, 3), dtype="f4", chunks=(4, 3), maxshape=(None, 3))
        group = f.create_group("group")
        group.attrs["text"] = "attribute text"
        group.attrs["numbers"] = np.array([[1, 2], [3, 4]], dtype="i2")
        group.attrs["not_a_number"] = np.nan
        group.attrs["limits"] = np.array([-np.inf, 0.5, np.inf])
        group.attrs["target"] = grid.ref
        group.attrs["region"] = grid.regionref[2:5, 1:3]
        refs = np.array([group.ref, grid.ref, h5py.Reference()], dtype=h5py.ref_dtype)
        f.create_dataset("refs", data=refs)
        f.create_dataset(
            "regions",
            data=np.array(
                [grid.regionref[2:5, 1:3], grid.regionref[10, :], grid.regionref[::3, 2], h5py.RegionReference()],
                dtype=h5py.regionref_dtype,
            ),
        )
        compound = np.zeros(3, dtype=[("start", "<i4"), ("value", "<f8"), ("target", h5py.ref_dtype)])
        compound["start"] = [0, 5, 9]
        compound["value"] = [0.5, 1.5, -2.0]
        compound["target"] = [grid.ref, group.ref, grid.ref]
        f.create_dataset("compound", data=compound)
        f["soft"] = h5py.SoftLink("/group")
        f["hard"] = grid  # a second hard link to /grid
    return path


def write_sources(directory: Path) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    second, linking = linked_pair(directory)
    return {
        "ecephys": ecephys(directory / "ecephys.nwb"),
        "ophys": ophys(directory / "ophys.nwb"),
        "second": second,
        "linking": linking,
        "constructs": constructs(directory / "constructs.h5"),
    }


# --------------------------------------------------------------------------------------------
# The pynwb view


def _path(obj) -> str:
    """An object's place: its names from the root (object ids of files without them are drawn
    anew at every read, so objects are keyed and referred to by place)."""
    names = []
    while obj is not None and obj.parent is not None:
        names.append(obj.name)
        obj = obj.parent
    return "/" + "/".join(reversed(names))


def _numbers(values: list) -> Any:
    return ["numbers", [_norm(x) for x in values]]


def _array(a: np.ndarray) -> Any:
    if a.dtype.kind in "iub":
        return ["array", a.dtype.kind, list(a.shape), a.tolist()]
    if a.dtype.kind == "f":
        return ["array", "f", list(a.shape), [_norm(x) for x in a.ravel().tolist()]]
    if a.dtype.names:
        return ["records", [[_norm(row[n]) for n in a.dtype.names] for row in a]]
    return ["items", list(a.shape), [_norm(x) for x in a.ravel().tolist()]]


def _norm(v: Any, depth: int = 0) -> Any:
    from hdmf.container import AbstractContainer

    if depth > 8:
        return repr(type(v))
    if isinstance(v, AbstractContainer):
        return ["object", _path(v)]
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, str):
        return v
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, np.generic):
        return _norm(v.item(), depth + 1)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else v
    if isinstance(v, int):
        return v
    if isinstance(v, dict):
        return {str(k): _norm(x, depth + 1) for k, x in sorted(v.items(), key=lambda kv: str(kv[0]))}
    if isinstance(v, np.ndarray):
        # In-memory arrays are attributes: HDF5 gives arrays, Zarr's JSON attributes lists.
        if v.dtype.kind in "iufb" and v.ndim == 1:
            return _numbers(v.tolist())
        return _array(v)
    if hasattr(v, "shape") and hasattr(v, "__getitem__"):
        # h5py / zarr datasets and hdmf's reference-resolving wrappers.
        shape = tuple(v.shape)
        if shape == ():
            return _norm(v[()], depth + 1)
        data = v[:]
        if isinstance(data, np.ndarray) and data.dtype.kind != "O":
            return _array(data)
        return ["items", [len(data)], [_norm(x, depth + 1) for x in data]]
    if isinstance(v, (list, tuple)):
        if v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            return _numbers(list(v))
        return [_norm(x, depth + 1) for x in v]
    return repr(type(v).__name__)


def snapshot(nwbfile, ids: bool = True) -> dict[str, Any]:
    """Every object pynwb read, by place: type, name, object id (`ids`: files written before
    object ids existed get new ones at every read), fields normalised."""
    from hdmf.container import Data

    out = {}
    for obj in nwbfile.objects.values():
        entry = {"type": type(obj).__name__, "name": obj.name}
        if ids:
            entry["object_id"] = obj.object_id
        for name in sorted(obj.fields):
            entry[name] = _norm(obj.fields[name])
        if isinstance(obj, Data):
            # Data containers (VectorData, indexes, regions, ...) hold their values here.
            entry["data"] = _norm(obj.data)
        out[_path(obj)] = entry
    return out


@contextlib.contextmanager
def open_hdf5(path: Path):
    from pynwb import NWBHDF5IO

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with NWBHDF5IO(str(path), mode="r") as io:
            yield io


def diff(a: dict, b: dict, limit: int = 12) -> str:
    """The first differences between two snapshots, readable."""
    lines = []
    for oid in sorted(set(a) | set(b)):
        if oid not in a or oid not in b:
            lines.append(f"{oid}: only in {'source' if oid in a else 'import'}: {(a.get(oid) or b.get(oid))['name']}")
            continue
        for key in sorted(set(a[oid]) | set(b[oid])):
            if a[oid].get(key) != b[oid].get(key):
                lines.append(f"{a[oid]['type']} {a[oid]['name']}.{key}: {str(a[oid].get(key))[:200]} != {str(b[oid].get(key))[:200]}")
        if len(lines) >= limit:
            break
    return "\n".join(lines[:limit])


# --------------------------------------------------------------------------------------------
# An HDF5 file read in place, against h5py


def _same_value(ours: Any, theirs: Any, h5, where: str) -> None:
    """One value neurochunk read (`ours`) equals what h5py read (`theirs`)."""
    import h5py

    if isinstance(theirs, h5py.Reference):
        if not theirs:
            assert ours is None, f"{where}: {ours!r} for a null reference"
        else:
            assert ours is not None and ours.path == h5[theirs].name, f"{where}: {ours!r} != {h5[theirs].name}"
        return
    if isinstance(theirs, bytes):
        assert ours == theirs.decode(), f"{where}: {ours!r} != {theirs!r}"
        return
    if isinstance(theirs, str):
        assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"
        return
    if isinstance(theirs, np.void) and theirs.dtype.names:
        for i, name in enumerate(theirs.dtype.names):
            _same_value(ours[i] if isinstance(ours, (list, tuple)) else ours[name], theirs[name], h5, f"{where}.{name}")
        return
    if isinstance(theirs, np.ndarray):
        if theirs.dtype.names:
            assert len(ours) == len(theirs), where
            for i, (a, b) in enumerate(zip(ours, theirs)):
                _same_value(a, b, h5, f"{where}[{i}]")
            return
        if theirs.dtype.kind in "OSU":
            ours = np.asarray(ours, dtype=object)
            assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} != {theirs.shape}"
            for i, (a, b) in enumerate(zip(ours.ravel(), theirs.ravel())):
                _same_value(a, b, h5, f"{where}[{i}]")
            return
        got = np.asarray(ours)
        assert got.shape == theirs.shape, f"{where}: shape {got.shape} != {theirs.shape}"
        np.testing.assert_array_equal(got.astype(theirs.dtype), theirs, err_msg=where)
        return
    if isinstance(theirs, (float, np.floating)) and math.isnan(theirs):
        assert isinstance(ours, float) and math.isnan(ours), f"{where}: {ours!r} is not NaN"
        return
    assert ours == theirs, f"{where}: {ours!r} != {theirs!r}"


def assert_reads_like_h5py(f, path: Path) -> int:
    """Every dataset (values, element type class) and every attribute h5py reads from the HDF5
    file at `path` equals what the neurochunk NWB file `f` (`nc.nwb.open` of that file, where
    it is) reads; references compare by target path. Returns how many values were compared."""
    import h5py

    compared = 0
    with h5py.File(path, "r") as h5:
        found: list = []
        h5.visititems(lambda name, obj: found.append((name, obj)) and None)
        for name, obj in [("", h5), *found]:
            if name.startswith("specifications"):
                continue
            node = f["/" + name]
            for key, value in obj.attrs.items():
                if key == ".specloc":
                    continue
                assert key in node.attrs, f"/{name}: attribute {key} missing"
                _same_value(node.attrs[key], value, h5, f"/{name}@{key}")
                compared += 1
            if isinstance(obj, h5py.Dataset):
                theirs = obj[()]
                ours = node[()] if obj.shape == () else node[...]
                _same_value(ours, theirs, h5, f"/{name}")
                compared += 1
    return compared
