"""pynwb + hdmf-zarr as the peer of the NWB suites: opening, validating, reading every object, and
the arrays `neurochunk nwb get` must produce for representative datasets.

Works with hdmf-zarr 0.13 (zarr-python 2) and 0.14 (zarr-python 3); `NWBZarrIO` writes and reads
the convention of the installed hdmf-zarr only.
"""

from __future__ import annotations

import contextlib
import os
import re
import warnings
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")  # see nwb2/conftest.py

import numpy as np  # noqa: E402

import nwbwalk  # noqa: E402
from ncli import assert_same_array, cli_form  # noqa: E402

# The one validator complaint a JSON attribute store cannot avoid: JSON has no unsigned integers,
# so an attribute the schema types uint* reads back as a signed int (hdmf-zarr #323).
TOLERATED_VALIDATION = re.compile(r"incorrect type - expected 'uint(8|16|32|64)?', got '(u?int(8|16|32|64)?|<class 'int'>)'")


@contextlib.contextmanager
def open_nwb(path: Path | str) -> Iterator[Any]:
    """`NWBZarrIO(path, "r")` (cached namespaces loaded) with hdmf/zarr warnings silenced."""
    from hdmf_zarr.nwb import NWBZarrIO

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with NWBZarrIO(str(path), mode="r") as io:
            yield io


def validation_messages(io) -> list[str]:
    import pynwb

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [str(e) for e in pynwb.validate(io=io)]


def assert_valid(io, what: str = "") -> list[str]:
    """pynwb.validate(io=io) reports nothing but the tolerated unsigned-attribute complaint.

    Returns (and prints, for the record) the tolerated messages."""
    messages = validation_messages(io)
    tolerated = [m for m in messages if TOLERATED_VALIDATION.search(m)]
    errors = [m for m in messages if not TOLERATED_VALIDATION.search(m)]
    if tolerated:
        print(f"{what}: tolerated validator messages:\n  " + "\n  ".join(tolerated))
    assert not errors, f"{what}: pynwb.validate reports:\n  " + "\n  ".join(errors)
    return tolerated


def neurodata_type(obj) -> str:
    """The type name as stored on disk (pynwb's `data_type` says DynamicTable for Units etc.)."""
    return getattr(obj, "neurodata_type", None) or obj.data_type


def object_types(nwbfile) -> dict[str, str]:
    """object_id -> neurodata type of every object pynwb read."""
    return {oid: neurodata_type(obj) for oid, obj in nwbfile.objects.items()}


def read_every_object(nwbfile) -> int:
    """Touch every field of every object and read every dataset in full (forces link and
    reference resolution). Returns the number of objects."""
    from hdmf.container import Data

    count = 0
    for obj in nwbfile.objects.values():
        count += 1
        for name in obj.fields:
            value = getattr(obj, name)
            if hasattr(value, "shape") and hasattr(value, "__getitem__") and not isinstance(value, np.ndarray):
                np.asarray(value[()] if value.shape == () else value[:])
        if isinstance(obj, Data) and obj.data is not None and hasattr(obj.data, "__len__"):
            _ = obj.data[:]
    return count


def loaded_namespaces(path: Path | str) -> dict[str, str]:
    """Namespaces hdmf-zarr loads from the file's cache into a fresh catalog: name -> version."""
    from hdmf.spec import NamespaceCatalog
    from hdmf_zarr.nwb import NWBZarrIO
    from pynwb.spec import NWBDatasetSpec, NWBGroupSpec, NWBNamespace

    catalog = NamespaceCatalog(NWBGroupSpec, NWBDatasetSpec, NWBNamespace)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        NWBZarrIO.load_namespaces(catalog, path=str(path))
    return {name: catalog.get_namespace(name).version for name in catalog.namespaces}


def installed_namespace_versions(names) -> dict[str, str]:
    """Versions of the namespaces pynwb itself ships (those of schema_namespace_files())."""
    import pynwb

    catalog = pynwb.get_type_map().namespace_catalog
    return {name: catalog.get_namespace(name).version for name in names}


def count_timeseries(nwbfile) -> int:
    """Objects that are TimeSeries (any subtype)."""
    from pynwb.base import TimeSeries

    return sum(1 for obj in nwbfile.objects.values() if isinstance(obj, TimeSeries))


def schema_namespace_files() -> list[Path]:
    """pynwb's core namespace and hdmf-common's namespace (which also defines hdmf-experimental),
    as installed; their schema sources sit next to them."""
    import hdmf
    import pynwb

    core = Path(pynwb.__file__).parent / "nwb-schema" / "core" / "nwb.namespace.yaml"
    common = Path(hdmf.__file__).parent / "common" / "hdmf-common-schema" / "common" / "namespace.yaml"
    for path in (core, common):
        assert path.is_file(), f"namespace file not found: {path}"
    return [core, common]


# --------------------------------------------------------------------------------------------
# Expected `nwb get` output
# --------------------------------------------------------------------------------------------


@dataclass
class Expected:
    """What `nwb get` must write for one dataset. `flexible` names the text/reference fields (or
    "" for a plain reference array) whose `<U{n}` width the contract leaves open; their values
    are compared, their kind must be `U`."""

    array: np.ndarray
    flexible: tuple[str, ...] = ()


def assert_nwb_array(got: np.ndarray, expected: Expected, what: str) -> None:
    exp = expected.array
    assert got.shape == exp.shape, f"{what}: shape {got.shape} != expected {exp.shape}"
    if exp.dtype.names:
        assert got.dtype.names == exp.dtype.names, f"{what}: fields {got.dtype.names} != {exp.dtype.names}"
        for name in exp.dtype.names:
            if name in expected.flexible or exp.dtype[name].kind == "U":
                assert got.dtype[name].kind == "U", f"{what}: field {name!r} is {got.dtype[name]}, not <U"
                assert got[name].tolist() == exp[name].tolist(), f"{what}: field {name!r} values differ"
            else:
                assert_same_array(got[name], exp[name], f"{what} field {name!r}")
    elif "" in expected.flexible:
        assert got.dtype.kind == "U", f"{what}: dtype {got.dtype.str}, expected <U (target paths)"
        assert got.tolist() == exp.tolist(), f"{what}: values differ:\n got {got.tolist()}\n exp {exp.tolist()}"
    else:
        assert_same_array(got, exp, what)


def _text(values) -> np.ndarray:
    """`<U{maxlen}` of a list/array of str or bytes (bytes decoded as UTF-8), shape kept."""
    arr = np.asarray(values, dtype=object)
    flat = [v.decode("utf-8") if isinstance(v, bytes) else str(v) for v in arr.reshape(-1)]
    width = max((len(v) for v in flat), default=1)
    return np.array(flat, dtype=f"<U{max(width, 1)}").reshape(arr.shape)


def _paths(objects, paths_by_id: dict[str, str]) -> np.ndarray:
    return _text([paths_by_id[o.object_id] for o in objects])


def raw_text(store: Path, node_path: str) -> np.ndarray:
    """A text dataset as zarr-python reads it, as `<U` (legacy scalars `[1]` become 0-d)."""
    root = nwbwalk.open_root(store)
    node = root[node_path.lstrip("/")]
    attrs = nwbwalk.attrs_of(node)
    data = np.asarray(node[...], dtype=object)
    if attrs.get("zarr_dtype") == "scalar":
        data = data.reshape(())
    return _text(data)


def expected_gets(store: Path, nwbfile, doc: dict, kind: str) -> dict[str, Expected]:
    """Representative datasets of a fixture -> what `nwb get` must write, from pynwb's read.

    `doc` is the walk of the store (object_id -> path for reference targets)."""
    paths = nwbwalk.object_paths(doc)
    out: dict[str, Expected] = {}

    # File-level scalars and text: pynwb parses datetimes, so the text comes from zarr-python and
    # is checked against pynwb's value.
    identifier = np.array(nwbfile.identifier, dtype=f"<U{len(nwbfile.identifier)}")
    out["/identifier"] = Expected(identifier)
    out["/session_description"] = Expected(np.array(nwbfile.session_description, dtype=f"<U{len(nwbfile.session_description)}"))
    start = raw_text(store, "/session_start_time")
    assert start.shape == () and datetime.fromisoformat(str(start)) == nwbfile.session_start_time
    out["/session_start_time"] = Expected(start)
    created = raw_text(store, "/file_create_date")
    assert [datetime.fromisoformat(t) for t in created.tolist()] == list(nwbfile.file_create_date)
    out["/file_create_date"] = Expected(created)
    if kind == "minimal":
        return out

    if kind in ("ecephys", "exported", "json2"):
        es = nwbfile.acquisition["ElectricalSeries"]
        out["/acquisition/ElectricalSeries/data"] = Expected(cli_form(es.data[:]))
        out["/acquisition/ElectricalSeries/starting_time"] = Expected(np.array(es.starting_time, dtype="<f8"))
        out["/acquisition/ElectricalSeries/electrodes"] = Expected(cli_form(es.electrodes.data[:]))
        out["/processing/ecephys/LFP/lfp_series/data"] = Expected(
            cli_form(nwbfile.processing["ecephys"]["LFP"]["lfp_series"].data[:])
        )
        ts1, ts2 = nwbfile.acquisition["ts1"], nwbfile.acquisition["ts2"]
        out["/acquisition/ts1/timestamps"] = Expected(cli_form(ts1.timestamps[:]))
        # A link: nwb get follows it to ts1's timestamps.
        out["/acquisition/ts2/timestamps"] = Expected(cli_form(ts2.timestamps[:]))
        electrodes = nwbfile.electrodes
        out["/general/extracellular_ephys/electrodes/location"] = Expected(_text(electrodes["location"].data[:]))
        out["/general/extracellular_ephys/electrodes/group"] = Expected(
            _paths(electrodes["group"].data[:], paths), flexible=("",)
        )
        units = nwbfile.units
        out["/units/spike_times"] = Expected(cli_form(units["spike_times"].target.data[:]))
        out["/units/spike_times_index"] = Expected(cli_form(units["spike_times"].data[:]))
        out["/units/electrode_group"] = Expected(_paths(units["electrode_group"].data[:], paths), flexible=("",))
        if kind != "json2":
            refs = nwbfile.trials["timeseries"].target.data[:]
            targets = [paths[item[2].object_id] for item in refs]
            width = max(len(t) for t in targets)
            dtype = [("idx_start", refs.dtype["idx_start"].newbyteorder("<")), ("count", refs.dtype["count"].newbyteorder("<")), ("timeseries", f"<U{width}")]
            compound = np.array([(int(r[0]), int(r[1]), t) for r, t in zip(refs, targets)], dtype=dtype)
            out["/intervals/trials/timeseries"] = Expected(compound, flexible=("timeseries",))

    if kind == "ophys":
        seg = nwbfile.processing["ophys"]["ImageSegmentation"]["PlaneSegmentation"]
        base = "/processing/ophys/ImageSegmentation/PlaneSegmentation"
        out[f"{base}/pixel_mask"] = Expected(cli_form(seg["pixel_mask"].target.data[:]))
        out[f"{base}/pixel_mask_index"] = Expected(cli_form(seg["pixel_mask"].data[:]))
        out["/acquisition/TwoPhotonSeries/data"] = Expected(cli_form(nwbfile.acquisition["TwoPhotonSeries"].data[:]))
        rrs = nwbfile.processing["ophys"]["Fluorescence"]["RoiResponseSeries"]
        out["/processing/ophys/Fluorescence/RoiResponseSeries/data"] = Expected(cli_form(rrs.data[:]))
        out["/processing/ophys/Fluorescence/RoiResponseSeries/rois"] = Expected(cli_form(rrs.rois.data[:]))
    return out


# --------------------------------------------------------------------------------------------
# Checks of a file against the deterministic fixture data (for converted files)
# --------------------------------------------------------------------------------------------


def assert_fixture_data(nwbfile, kind: str) -> None:
    """pynwb's read of an ecephys/ophys fixture (possibly converted) holds nwbfixtures' data."""
    import nwbfixtures as fx

    assert nwbfile.session_start_time == fx.START
    if kind in ("ecephys", "exported", "json2"):
        np.testing.assert_array_equal(nwbfile.acquisition["ElectricalSeries"].data[:], fx.ES_DATA)
        assert nwbfile.acquisition["ElectricalSeries"].data[:].dtype == fx.ES_DATA.dtype
        np.testing.assert_array_equal(nwbfile.processing["ecephys"]["LFP"]["lfp_series"].data[:], fx.LFP_DATA)
        np.testing.assert_array_equal(nwbfile.acquisition["ts2"].timestamps[:], fx.TS_TIMESTAMPS)
        assert list(nwbfile.electrodes["location"].data[:]) == fx.ELECTRODE_LOCATIONS
        assert [g.name for g in nwbfile.electrodes["group"].data[:]] == ["shank0", "shank0", "shank1", "shank1"]
        for i, spikes in enumerate(fx.SPIKE_TIMES):
            np.testing.assert_array_equal(nwbfile.units["spike_times"][i], spikes)
        assert [g.name for g in nwbfile.units["electrode_group"].data[:]] == [f"shank{g}" for g in fx.UNIT_GROUPS]
        if kind != "json2":  # written without trials/epochs
            trial_series = [nwbfile.trials["timeseries"][i][0].timeseries.name for i in range(len(fx.TRIALS))]
            assert trial_series == [name for _, _, name in fx.TRIALS]
        assert nwbfile.acquisition["ts2"].timestamps is nwbfile.acquisition["ts1"].timestamps
    if kind == "ophys":
        seg = nwbfile.processing["ophys"]["ImageSegmentation"]["PlaneSegmentation"]
        for i, mask in enumerate(fx.PIXEL_MASKS):
            assert [tuple(m) for m in seg["pixel_mask"][i]] == [tuple(m) for m in mask]
        np.testing.assert_array_equal(nwbfile.acquisition["TwoPhotonSeries"].data[:], fx.IMAGING_DATA)
        rrs = nwbfile.processing["ophys"]["Fluorescence"]["RoiResponseSeries"]
        np.testing.assert_array_equal(rrs.data[:], fx.ROI_DATA)
        assert rrs.rois.table is seg


# --------------------------------------------------------------------------------------------
# Semantics of a `neurochunk nwb demo` file, as pynwb sees it
# --------------------------------------------------------------------------------------------


def assert_demo_semantics(store: Path, nwbfile, doc: dict) -> None:
    """References and links of a demo file resolve, in pynwb, to the objects the on-disk paths
    (the walk `doc`) name: electrode groups and their device, the electrodes `group` column, the
    ElectricalSeries region, units spike times and electrode groups, the trials `timeseries`
    column and shared timestamps."""
    from pynwb.base import TimeSeries
    from pynwb.device import Device
    from pynwb.ecephys import ElectricalSeries, ElectrodeGroup

    paths = nwbwalk.object_paths(doc)
    by_path = {p: nwbfile.objects[oid] for oid, p in paths.items() if oid in nwbfile.objects}
    links = {link["path"]: link for link in doc["links"]}
    refs: dict[str, list[dict]] = {}
    for ref in doc["dataset_refs"]:
        refs.setdefault(ref["path"], []).append(ref)
    root = nwbwalk.open_root(store)

    # Devices and electrode groups (group -> device is a link).
    assert nwbfile.devices, "demo has no Device"
    assert nwbfile.electrode_groups, "demo has no ElectrodeGroup"
    for name, group in nwbfile.electrode_groups.items():
        assert isinstance(group.device, Device), f"ElectrodeGroup {name}.device is {type(group.device)}"
        assert nwbfile.devices[group.device.name] is group.device
        link = links.get(f"{paths[group.object_id]}/device")
        assert link is not None, f"no `device` link on {paths[group.object_id]}"
        assert link["target"] == paths[group.device.object_id]

    # The electrodes table and its `group` reference column.
    electrodes = nwbfile.electrodes
    assert electrodes is not None and len(electrodes) > 0, "demo has no electrodes table"
    table_path = paths[electrodes.object_id]
    column = list(electrodes["group"].data[:])
    on_disk = [r["target"] for r in refs.get(f"{table_path}/group", [])]
    assert len(on_disk) == len(column) == len(electrodes)
    assert [paths[g.object_id] for g in column] == on_disk
    for g, target in zip(column, on_disk):
        assert isinstance(g, ElectrodeGroup) and nwbfile.electrode_groups[g.name] is g
        assert g.name == target.rsplit("/", 1)[1]
    if "group_name" in electrodes.colnames:
        assert list(electrodes["group_name"].data[:]) == [g.name for g in column]

    # ElectricalSeries -> DynamicTableRegion -> the electrodes table.
    series = [o for o in nwbfile.objects.values() if isinstance(o, ElectricalSeries)]
    assert series, "demo has no ElectricalSeries"
    for es in series:
        assert es.electrodes.table is electrodes, f"{es.name}.electrodes.table is not the electrodes table"
        rows = np.asarray(es.electrodes.data[:])
        assert rows.size and rows.min() >= 0 and rows.max() < len(electrodes)
        if len(es.data.shape) > 1:
            assert es.data.shape[1] == rows.size, f"{es.name}: {es.data.shape[1]} channels, {rows.size} electrodes"

    # Units: ragged spike times per unit and the electrode_group reference column.
    units = nwbfile.units
    assert units is not None and len(units) > 0, "demo has no units table"
    times = units["spike_times"].target
    flat = np.asarray(root[paths[times.object_id].lstrip("/")][...])
    ends = np.asarray(root[paths[units["spike_times"].object_id].lstrip("/")][...])
    starts = np.concatenate([[0], ends[:-1]])
    assert len(ends) == len(units)
    for i, (a, b) in enumerate(zip(starts, ends)):
        np.testing.assert_array_equal(np.asarray(units["spike_times"][i]), flat[a:b], err_msg=f"unit {i}")
    if "electrode_group" in units.colnames:
        groups = list(units["electrode_group"].data[:])
        assert [paths[g.object_id] for g in groups] == [r["target"] for r in refs.get(f"{paths[units.object_id]}/electrode_group", [])]
        assert all(nwbfile.electrode_groups[g.name] is g for g in groups)

    # Trials: the timeseries column refers to the TimeSeries named on disk.
    trials = nwbfile.trials
    assert trials is not None and "timeseries" in trials.colnames, "demo has no trials timeseries column"
    column = trials["timeseries"].target
    items = column.data[:]
    disk = [r["target"] for r in refs.get(paths[column.object_id], []) if r.get("field") == "timeseries"]
    assert [paths[item[2].object_id] for item in items] == disk
    for idx_start, count, ts in items:
        assert isinstance(ts, TimeSeries)
        length = ts.timestamps.shape[0] if ts.timestamps is not None else ts.data.shape[0]
        assert 0 <= idx_start and idx_start + count <= length, (idx_start, count, length)

    # Shared timestamps: a `timestamps` link to another TimeSeries' timestamps.
    shared = [link for link in doc["links"] if link["path"].endswith("/timestamps")]
    assert shared, "demo has no TimeSeries sharing timestamps through a link"
    for link in shared:
        owner = by_path[link["path"].rsplit("/", 1)[0]]
        original = by_path[link["target"].rsplit("/", 1)[0]]
        np.testing.assert_array_equal(np.asarray(owner.timestamps[:]), np.asarray(original.timestamps[:]))
        assert owner.timestamps is original.timestamps, f"{link['path']} is not the linked dataset"


# Representative datasets per fixture kind, for parametrizing `nwb get` tests at collection time
# (`expected_gets` must produce exactly these).
_COMMON_GETS = ["/identifier", "/session_description", "/session_start_time", "/file_create_date"]
_ECEPHYS_GETS = _COMMON_GETS + [
    "/acquisition/ElectricalSeries/data",
    "/acquisition/ElectricalSeries/starting_time",
    "/acquisition/ElectricalSeries/electrodes",
    "/processing/ecephys/LFP/lfp_series/data",
    "/acquisition/ts1/timestamps",
    "/acquisition/ts2/timestamps",
    "/general/extracellular_ephys/electrodes/location",
    "/general/extracellular_ephys/electrodes/group",
    "/units/spike_times",
    "/units/spike_times_index",
    "/units/electrode_group",
]
GET_PATHS = {
    "minimal": _COMMON_GETS,
    "ecephys": _ECEPHYS_GETS + ["/intervals/trials/timeseries"],
    "exported": _ECEPHYS_GETS + ["/intervals/trials/timeseries"],
    "json2": _ECEPHYS_GETS,
    "ophys": _COMMON_GETS
    + [
        "/processing/ophys/ImageSegmentation/PlaneSegmentation/pixel_mask",
        "/processing/ophys/ImageSegmentation/PlaneSegmentation/pixel_mask_index",
        "/acquisition/TwoPhotonSeries/data",
        "/processing/ophys/Fluorescence/RoiResponseSeries/data",
        "/processing/ophys/Fluorescence/RoiResponseSeries/rois",
    ],
}


def get_cases(kinds) -> list[tuple[str, str]]:
    return [(kind, path) for kind in kinds for path in GET_PATHS[kind]]
