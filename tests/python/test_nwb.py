"""neurochunk.nwb against pynwb + hdmf-zarr of this environment (0.13 and the legacy Zarr v2
convention in .peers/py311, 0.14 and the Zarr v3 convention in .peers/py312): files pynwb
writes read the same through us (typed objects, attributes, lazy numeric datasets, text,
links, object and region references, compounds, ragged columns, cached specifications), and
pynwb opens the files we write (conversions and the demo)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import nwbfixtures as fx  # noqa: E402  (sets NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE for legacy files)
import numcodecs.pickles  # noqa: E402

# hdmf-zarr 0.13 pickles reference columns; the environment variable only counts when it is
# set before numcodecs is first imported, which other test modules may have done already.
numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = True

import neurochunk as nc  # noqa: E402

THIS = "legacy" if fx.this_convention() == "zarr2" else "v3"
OTHER = "v3" if THIS == "legacy" else "legacy"


def pynwb_read(path):
    from hdmf_zarr.nwb import NWBZarrIO

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        io = NWBZarrIO(str(path), mode="r")
        return io, io.read()


@pytest.fixture(scope="module")
def ecephys(tmp_path_factory):
    path = tmp_path_factory.mktemp("nwb") / "ecephys.nwb.zarr"
    fx.write_ecephys(path)
    io, nwbfile = pynwb_read(path)
    yield path, nwbfile
    io.close()


def test_typed_objects_and_attributes_match_pynwb(ecephys):
    path, theirs = ecephys
    f = nc.nwb.open(path)
    assert f.convention == THIS
    assert f.nwb_version is not None and f.nwb_version.split(".")[0] == "2"
    (es,) = f.objects(type="ElectricalSeries")[:1]
    assert es.path == "/acquisition/ElectricalSeries" and es.kind == "group"
    assert es.object_id == theirs.acquisition["ElectricalSeries"].object_id
    assert {o.path for o in f.objects(type="TimeSeries")} == {"/acquisition/ts1", "/acquisition/ts2"}
    # Every pynwb object is listed with its type and object id.
    ours = {o.object_id: o.neurodata_type for o in f.objects()}
    for obj in theirs.objects.values():
        assert ours[obj.object_id] == type(obj).__name__, obj
    found = f.find(theirs.units.object_id)
    assert isinstance(found, nc.nwb.Group) and found.path == "/units"
    assert f.find("no-such-id") is None
    series = f["/acquisition/ElectricalSeries"]
    assert series.neurodata_type == "ElectricalSeries" and series.namespace == "core"
    assert series["starting_time"].attrs["rate"] == 1000.0
    assert f["session_description"][()] == theirs.session_description
    assert f["/general/devices/probe"].attrs["manufacturer"] == "Acme"
    assert sorted(f["/acquisition"].keys()) == ["ElectricalSeries", "ts1", "ts2"]
    with pytest.raises(KeyError):
        f["/acquisition/nope"]


def test_numeric_datasets_are_lazy_arrays(ecephys):
    path, theirs = ecephys
    f = nc.nwb.open(path)
    data = f["/acquisition/ElectricalSeries/data"]
    assert data.kind == "numeric" and data.shape == fx.ES_DATA.shape and data.dtype == np.int16
    assert isinstance(data.array, nc.Array)
    np.testing.assert_array_equal(data[5:30:3, ::-2], fx.ES_DATA[5:30:3, ::-2])
    np.testing.assert_array_equal(np.asarray(data), theirs.acquisition["ElectricalSeries"].data[:])
    np.testing.assert_array_equal(data.array.oindex[[0, 7, 39], [3, 1]], fx.ES_DATA[np.ix_([0, 7, 39], [3, 1])])
    lfp = f["/processing/ecephys/LFP/lfp_series/data"]
    np.testing.assert_array_equal(lfp[...], fx.LFP_DATA)
    # A dataset link: ts2's timestamps are ts1's.
    np.testing.assert_array_equal(f["/acquisition/ts2/timestamps"][...], fx.TS_TIMESTAMPS)
    np.testing.assert_array_equal(f["/acquisition/ts2"]["data"][::-1], fx.TS2_DATA[::-1])
    # Text columns.
    loc = f["/general/extracellular_ephys/electrodes/location"]
    assert loc.kind == "text" and list(loc[...]) == fx.ELECTRODE_LOCATIONS
    assert list(loc[1:3]) == fx.ELECTRODE_LOCATIONS[1:3] and loc[3] == fx.ELECTRODE_LOCATIONS[3]


def test_links_and_references_resolve(ecephys):
    path, theirs = ecephys
    f = nc.nwb.open(path)
    # A group link: each electrode group's device.
    assert f["/general/extracellular_ephys/shank1/device"].path == "/general/devices/probe"
    links = {p: (t, s) for p, t, s in f.links()}
    assert links["/general/extracellular_ephys/shank0/device"] == ("/general/devices/probe", ".")
    # Object references in a column: the electrodes' groups.
    groups = f["/general/extracellular_ephys/electrodes/group"]
    assert groups.kind == "references"
    refs = list(groups[...])
    assert all(isinstance(r, nc.nwb.Reference) for r in refs)
    want = [g.name for g in theirs.electrodes["group"][:]]
    assert [r.target().name for r in refs] == want
    assert refs[0].resolve().attrs["location"] == "hippocampus"
    # The units' electrode_group column, read from a region of the column.
    eg = f["/units/electrode_group"][1:]
    assert [r.target().path for r in eg] == [f"/general/extracellular_ephys/shank{g}" for g in fx.UNIT_GROUPS[1:]]
    # A reference attribute: the DynamicTableRegion's table.
    table = f["/acquisition/ElectricalSeries/electrodes"].attrs["table"]
    assert isinstance(table, nc.nwb.Reference) and table.target().path == "/general/extracellular_ephys/electrodes"
    np.testing.assert_array_equal(f["/acquisition/ElectricalSeries/electrodes"][...], np.arange(fx.N_ELECTRODES))


def test_units_table_and_compound_references(ecephys):
    path, theirs = ecephys
    f = nc.nwb.open(path)
    units = f["/units"].to_dict()
    assert [list(s) for s in units["spike_times"]] == fx.SPIKE_TIMES
    assert [list(s) for s in units["spike_times"]] == [list(x) for x in theirs.units["spike_times"][:]]
    np.testing.assert_array_equal(units["id"], theirs.units.id[:])
    assert "spike_times_index" not in units
    # trials' timeseries: a compound of (idx_start, count, reference) per row.
    ts = f["/intervals/trials/timeseries"]
    assert ts.kind == "compound"
    rows = ts[...]
    assert rows.dtype.names == ("idx_start", "count", "timeseries")
    pynwb_rows = [r for cell in theirs.trials["timeseries"][:] for r in cell]
    assert [int(r["idx_start"]) for r in rows] == [int(r.idx_start) for r in pynwb_rows]
    assert [int(r["count"]) for r in rows] == [int(r.count) for r in pynwb_rows]
    assert [r["timeseries"].target().name for r in rows] == [r.timeseries.name for r in pynwb_rows]
    np.testing.assert_array_equal(f["/intervals/trials/start_time"][...], [t[0] for t in fx.TRIALS])


def test_cached_specifications(ecephys):
    path, _ = ecephys
    f = nc.nwb.open(path)
    specs = {name: (version, docs) for name, version, docs in f.specifications()}
    assert {"core", "hdmf-common"} <= set(specs)
    version, docs = specs["core"]
    assert "namespace" in docs
    ns = f.specification("core", version, "namespace")
    assert ns["namespaces"][0]["name"] == "core" and ns["namespaces"][0]["version"] == version


def test_pynwb_opens_what_we_write(ecephys, tmp_path):
    path, theirs = ecephys
    # Through the other convention and back: every byte pynwb reads was written by us.
    there = tmp_path / "other.nwb.zarr"
    back = tmp_path / "back.nwb.zarr"
    summary = nc.nwb.convert(path, there, convention=OTHER)
    assert summary["datasets"] > 10 and summary["links"] >= 3
    assert nc.nwb.open(there).convention == OTHER
    nc.nwb.convert(there, back, convention=THIS)
    io, ours = pynwb_read(back)
    try:
        np.testing.assert_array_equal(ours.acquisition["ElectricalSeries"].data[:], fx.ES_DATA)
        assert [list(x) for x in ours.units["spike_times"][:]] == fx.SPIKE_TIMES
        assert [g.name for g in ours.electrodes["group"][:]] == [g.name for g in theirs.electrodes["group"][:]]
        assert ours.acquisition["ts2"].timestamps[:].tolist() == fx.TS_TIMESTAMPS.tolist()
        assert ours.acquisition["ElectricalSeries"].object_id == theirs.acquisition["ElectricalSeries"].object_id
    finally:
        io.close()
    # The demo file, in this environment's convention.
    demo = tmp_path / "demo.nwb.zarr"
    info = nc.nwb.demo(demo, convention=THIS)
    io, d = pynwb_read(demo)
    try:
        assert len(d.units) == info["units"] and len(d.electrodes) == info["electrodes"]
        ours_units = nc.nwb.open(demo)["/units"].to_dict()
        for i, spikes in enumerate(d.units["spike_times"][:]):
            np.testing.assert_array_equal(ours_units["spike_times"][i], spikes)
    finally:
        io.close()


def test_nwb_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        nc.nwb.open(tmp_path / "missing.nwb.zarr")
    # A plain Zarr hierarchy opens as an untyped file: no version, no typed objects.
    g = nc.create_group(tmp_path / "plain.zarr", zarr_format=2)
    g.create_array("x", shape=(3,), dtype="int8")[...] = [1, 2, 3]
    plain = nc.nwb.open(tmp_path / "plain.zarr")
    assert plain.nwb_version is None and plain.objects() == []
    assert list(plain["x"][...]) == [1, 2, 3] and plain["/x"].neurodata_type is None
    with pytest.raises(KeyError):
        plain["/y"]
    with pytest.raises(nc.Error):
        plain["x"][5]
    with pytest.raises(ValueError, match="convention"):
        nc.nwb.demo(tmp_path / "d.nwb.zarr", convention="v9")
    # A file replaces an earlier file, never a directory holding other files.
    share = tmp_path / "share"
    share.mkdir()
    (share / "notes.txt").write_text("mine")
    with pytest.raises(nc.NodeExistsError, match=r"notes\.txt"):
        nc.nwb.demo(share)
    nc.nwb.demo(tmp_path / "d.nwb.zarr")
    with pytest.raises(FileExistsError, match=r"notes\.txt"):
        nc.nwb.convert(tmp_path / "d.nwb.zarr", share, convention="legacy")
    assert (share / "notes.txt").read_text() == "mine"
    # The earlier file (v3) is replaced by one in the other convention.
    nc.nwb.demo(tmp_path / "d.nwb.zarr", convention="legacy")
    assert (tmp_path / "d.nwb.zarr" / ".zgroup").is_file()
    assert not (tmp_path / "d.nwb.zarr" / "zarr.json").exists()


@pytest.mark.parametrize("convention", ["v3", "legacy"])
def test_region_references_resolve_to_data(tmp_path, convention):
    path = tmp_path / "regions.nwb.zarr"
    nc.nwb.demo(path, convention=convention)
    target = "/acquisition/ElectricalSeries/data"
    slab = {"source": ".", "path": target, "region": [[10, 20, 2], [1, 4, 1]]}
    points = {"source": ".", "path": target, "region": {"points": [[0, 0], [5, 3], [2, 7]]}}
    obj = {"source": ".", "path": "/units"}

    def wrap(ref, kind):
        return {"_REFERENCE": ref} if convention == "v3" else {"zarr_dtype": kind, "value": ref}

    # Attributes written with the Zarr layer, then the file's consolidated metadata renewed.
    series = nc.open_group(path / "acquisition" / "ElectricalSeries", mode="r+")
    series.attrs.update({"slab": wrap(slab, "region"), "picked": wrap(points, "region"), "units_ref": wrap(obj, "object")})
    nc.open_group(path, mode="r+").consolidate()

    f = nc.nwb.open(path)
    data = f[target][...]
    attrs = f["/acquisition/ElectricalSeries"].attrs
    r = attrs["slab"]
    assert isinstance(r, nc.nwb.Reference) and r.region == [[10, 20, 2], [1, 4, 1]]
    assert r.target().path == target
    np.testing.assert_array_equal(r.resolve(), data[10:20:2, 1:4])
    np.testing.assert_array_equal(attrs["picked"].read(), data[[0, 5, 2], [0, 3, 7]])
    units = attrs["units_ref"].resolve()
    assert isinstance(units, nc.nwb.Group) and units.path == "/units"
    # An object reference to a dataset reads the whole dataset.
    whole = nc.nwb.Reference(path=target, _file=f)
    np.testing.assert_array_equal(whole.read(), data)
