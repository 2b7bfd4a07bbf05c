"""The NWB suites' own ground truth, without neurochunk, for both conventions: pynwb-written
fixtures are valid, the zarr-python walk (the expected `nwb inspect --json`) agrees with what
pynwb reads, and the crafted bad inputs really are bad for the peers. These tests pass before the
Rust side exists.

Imported into tests/interop/nwb2/test_walk_nwb2.py and nwb3/test_walk_nwb3.py (pytest collects
them there); the convention is the running environment's (`nwbfixtures.this_convention()`), and
the tests of one convention only stay in the suite files.
"""

from __future__ import annotations

import pytest

import nwbcraft
import nwbfixtures
import nwbpeer
import nwbwalk

KINDS = nwbfixtures.fixtures_for(nwbfixtures.this_convention())
EPHYS = "/general/extracellular_ephys"
ECEPHYS_LINKS = [
    {"path": "/acquisition/ts2/timestamps", "target": "/acquisition/ts1/timestamps", "source": "."},
    {"path": f"{EPHYS}/shank0/device", "target": "/general/devices/probe", "source": "."},
    {"path": f"{EPHYS}/shank1/device", "target": "/general/devices/probe", "source": "."},
]
ECEPHYS_REF_ATTRS = [
    ("/acquisition/ElectricalSeries/electrodes", "table", f"{EPHYS}/electrodes"),
    ("/intervals/epochs/tags_index", "target", "/intervals/epochs/tags"),
    ("/intervals/epochs/timeseries_index", "target", "/intervals/epochs/timeseries"),
    ("/intervals/trials/timeseries_index", "target", "/intervals/trials/timeseries"),
    ("/processing/ecephys/LFP/lfp_series/electrodes", "table", f"{EPHYS}/electrodes"),
    ("/units/electrodes", "table", f"{EPHYS}/electrodes"),
    ("/units/electrodes_index", "target", "/units/electrodes"),
    ("/units/spike_times_index", "target", "/units/spike_times"),
]
GROUP_REFS = [f"{EPHYS}/shank0", f"{EPHYS}/shank0", f"{EPHYS}/shank1", f"{EPHYS}/shank1"]
UNIT_REFS = [f"{EPHYS}/shank{g}" for g in nwbfixtures.UNIT_GROUPS]
TRIAL_REFS = [f"/acquisition/{name}" for _, _, name in nwbfixtures.TRIALS]
EPOCH_REFS = [f"/acquisition/{name}" for *_, name in nwbfixtures.EPOCHS]


def dataset_refs(doc, path, field=None):
    """The targets of the `dataset_refs` of one array (and compound field) of an inspect document."""
    return [r["target"] for r in doc["dataset_refs"] if r["path"] == path and r.get("field") == field]


@pytest.mark.parametrize("kind", KINDS)
def test_fixture_is_valid_and_walk_matches_pynwb(nwb_files, kind):
    """pynwb opens, reads and validates every fixture; the walk finds exactly pynwb's objects
    (same object ids, same types), and every dataset reference it lists names a typed object."""
    path = nwb_files.path(kind)
    doc = nwb_files.walk(path)
    with nwbpeer.open_nwb(path) as io:
        nwbpeer.assert_valid(io, kind)
        nwbfile = io.read()
        nwbpeer.read_every_object(nwbfile)
        types = nwbpeer.object_types(nwbfile)
    walked = {o["object_id"]: o["neurodata_type"] for o in doc["objects"]}
    assert walked == types
    typed_paths = {o["path"] for o in doc["objects"]}
    for ref in doc["dataset_refs"] + doc["attribute_refs"]:
        assert ref["target"] in typed_paths, ref
    for link in doc["links"]:
        assert link["source"] == "."


@pytest.mark.parametrize("kind", ["ecephys", "exported"])
def test_walk_of_ecephys(nwb_files, kind):
    doc = nwb_files.walk(nwb_files.path(kind))
    assert len(doc["objects"]) == 41
    assert doc["links"] == ECEPHYS_LINKS
    assert [(r["path"], r["attribute"], r["target"]) for r in doc["attribute_refs"]] == ECEPHYS_REF_ATTRS
    assert dataset_refs(doc, f"{EPHYS}/electrodes/group") == GROUP_REFS
    assert dataset_refs(doc, "/units/electrode_group") == UNIT_REFS
    assert dataset_refs(doc, "/intervals/trials/timeseries", "timeseries") == TRIAL_REFS
    assert dataset_refs(doc, "/intervals/epochs/timeseries", "timeseries") == EPOCH_REFS
    assert len(doc["dataset_refs"]) == 4 + 3 + 3 + 2
    assert doc["objects"][0] == {
        "path": "/",
        "neurodata_type": "NWBFile",
        "namespace": "core",
        "object_id": doc["objects"][0]["object_id"],
    }


def test_walk_of_ophys(nwb_files):
    doc = nwb_files.walk(nwb_files.path("ophys"))
    seg = "/processing/ophys/ImageSegmentation/PlaneSegmentation"
    assert [link["path"] for link in doc["links"]] == [
        "/acquisition/TwoPhotonSeries/imaging_plane",
        "/general/optophysiology/plane0/device",
        f"{seg}/imaging_plane",
        f"{seg}/reference_images/TwoPhotonSeries",
    ]
    assert [(r["path"], r["attribute"], r["target"]) for r in doc["attribute_refs"]] == [
        ("/processing/ophys/Fluorescence/RoiResponseSeries/rois", "table", seg),
        (f"{seg}/pixel_mask_index", "target", f"{seg}/pixel_mask"),
    ]
    assert doc["dataset_refs"] == []  # pixel_mask is a numeric compound, no reference field


@pytest.mark.parametrize("kind", KINDS)
def test_fixture_consolidated_metadata_is_complete(nwb_files, kind):
    path = nwb_files.path(kind)
    assert nwbwalk.consolidated_keys(path) == nwbwalk.all_node_keys(path)


@pytest.mark.parametrize("kind", KINDS)
def test_fixture_cached_specs(nwb_files, kind):
    path = nwb_files.path(kind)
    specs = nwbwalk.cached_specs(path)
    versions = {s["namespace"]: s["version"] for s in specs}
    assert versions == {"core": "2.11.0", "hdmf-common": "1.10.0", "hdmf-experimental": "0.6.0"}
    assert "nwb.ecephys" in next(s for s in specs if s["namespace"] == "core")["sources"]
    assert nwbpeer.loaded_namespaces(path) == versions


def test_walk_ignores_stale_consolidated_metadata(nwb_files, tmp_path):
    """A node added after consolidation (stale .zmetadata / inline metadata) is still found by the walk."""
    store = nwbcraft.copy_store(nwb_files.path("minimal"), tmp_path / "stale.nwb.zarr")
    root = nwbcraft.node(store, "/")  # opened without consolidated metadata, not re-consolidated
    extra = root.require_group("acquisition").create_group("late")
    extra.attrs.update({"namespace": "core", "neurodata_type": "Device", "object_id": "late-object"})
    assert "acquisition/late" not in nwbwalk.consolidated_keys(store)
    doc = nwbwalk.expected_inspect(store)
    assert {"path": "/acquisition/late", "neurodata_type": "Device", "namespace": "core", "object_id": "late-object"} in doc["objects"]


def test_walk_accepts_data_type_key(tmp_path):
    """Plain-HDMF files carry `data_type` instead of `neurodata_type`."""
    root = nwbcraft.new_root(tmp_path / "hdmf.zarr")
    root.attrs.update({"data_type": "SimpleMultiContainer", "namespace": "hdmf-common", "object_id": "r"})
    root.create_group("table").attrs.update({"data_type": "DynamicTable", "namespace": "hdmf-common"})
    doc = nwbwalk.expected_inspect(tmp_path / "hdmf.zarr")
    assert doc["objects"] == [
        {"path": "/", "neurodata_type": "SimpleMultiContainer", "namespace": "hdmf-common", "object_id": "r"},
        {"path": "/table", "neurodata_type": "DynamicTable", "namespace": "hdmf-common", "object_id": None},
    ]


def test_other_convention_fixture(nwb_files, other_convention):
    """The other environment writes the same ecephys file in the other convention: same typed
    paths, links and references (object ids differ: new UUIDs per build)."""
    ours = nwb_files.walk(nwb_files.path("ecephys"))
    other_path = nwb_files.other("ecephys")
    assert nwbwalk.convention_of(other_path) == other_convention
    theirs = nwb_files.walk(other_path)
    assert [(o["path"], o["neurodata_type"]) for o in ours["objects"]] == [
        (o["path"], o["neurodata_type"]) for o in theirs["objects"]
    ]
    for key in ("links", "attribute_refs", "dataset_refs"):
        assert ours[key] == theirs[key], key


def test_demo_checks_accept_a_pynwb_file(nwb_files):
    """The checks applied to `nwb demo` output accept a pynwb-written file with the same features."""
    path = nwb_files.path("ecephys")
    with nwbpeer.open_nwb(path) as io:
        nwbpeer.assert_demo_semantics(path, io.read(), nwb_files.walk(path))


@pytest.mark.parametrize("kind", [k for k in ("ecephys", "exported", "json2", "ophys", "minimal") if k in KINDS])
def test_expected_gets_are_computed(nwb_files, kind):
    expected = nwb_files.gets(kind)
    assert expected["/identifier"].array.shape == ()
    assert expected["/session_start_time"].array.tolist() == "2024-01-02T03:04:05+00:00"
    if kind in ("ecephys", "exported"):
        compound = expected["/intervals/trials/timeseries"].array
        assert compound["timeseries"].tolist() == TRIAL_REFS
        assert expected["/units/spike_times_index"].array.dtype == "|u1"
    if kind == "ophys":
        mask = expected["/processing/ophys/ImageSegmentation/PlaneSegmentation/pixel_mask"].array
        assert mask.dtype.descr == [("x", "<u4"), ("y", "<u4"), ("weight", "<f4")]


# -- the crafted bad inputs are bad for the peers too ------------------------------------------


def test_missing_link_target_breaks_pynwb(nwb_files, tmp_path):
    store = nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "bad-link.nwb.zarr")
    nwbcraft.retarget_link(store, f"{EPHYS}/shank0", "device", "/general/devices/nowhere")
    with pytest.raises(Exception):
        with nwbpeer.open_nwb(store) as io:
            io.read()


def test_crafted_reference_edit_round_trips(nwb_files, tmp_path):
    """set_reference_element rewrites one reference element (a pickled ZarrReference in the legacy
    convention, a path string in Zarr v3); pynwb-independent check via the walk."""
    store = nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "ref.nwb.zarr")
    nwbcraft.set_reference_element(store, f"{EPHYS}/electrodes/group", 1, f"{EPHYS}/nowhere")
    assert dataset_refs(nwbwalk.expected_inspect(store), f"{EPHYS}/electrodes/group") == [
        GROUP_REFS[0], f"{EPHYS}/nowhere", *GROUP_REFS[2:]
    ]
    assert nwbwalk.consolidated_keys(store) == nwbwalk.all_node_keys(store)
