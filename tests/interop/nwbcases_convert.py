"""`neurochunk nwb convert --convention <this environment's>` turns files of the other convention
(written by pynwb + hdmf-zarr of the other environment, and by `nwb demo --convention <other>`)
into files that this environment's pynwb + hdmf-zarr open, read and validate, with the same
objects (path, type, object id), links, references, data, cached specs and complete consolidated
metadata.

Imported into tests/interop/nwb2/test_convert_nwb2.py (zarr3 -> zarr2) and
nwb3/test_convert_nwb3.py (zarr2 -> zarr3, json2 sources too); pytest collects them there.
"""

from __future__ import annotations

import pytest

import nwbfixtures
import nwbpeer
import nwbsession
import nwbwalk
from nwbcli import assert_inspect_equal

TARGET = nwbfixtures.this_convention()  # converted into this environment's convention
SOURCES = nwbfixtures.fixtures_for(nwbsession.OTHER[TARGET])  # json2 exists in the legacy convention only
SOURCE_KINDS = [k for k in ("ecephys", "ophys", "exported", "json2") if k in SOURCES]
CONVERTED_GETS = [
    "/identifier",
    "/session_start_time",
    "/acquisition/ElectricalSeries/data",
    "/acquisition/ts2/timestamps",
    "/general/extracellular_ephys/electrodes/location",
    "/general/extracellular_ephys/electrodes/group",
    "/units/spike_times",
    "/units/spike_times_index",
    "/intervals/trials/timeseries",
]


def _convert(nwb, src, tmp_path):
    dst = nwb.nwb_convert(src, tmp_path / f"converted-{TARGET}.nwb.zarr", TARGET)
    assert nwbwalk.convention_of(dst) == TARGET
    return dst


def _assert_same_file(nwb_files, src, dst):
    """Same objects/links/references (walks of both conventions), readable and valid here,
    pynwb objects == on-disk objects, consolidated metadata complete, same cached specs."""
    before = nwb_files.walk(src)  # walked by the source convention's environment
    after = nwbwalk.expected_inspect(dst)
    assert nwbwalk.object_set(after) == nwbwalk.object_set(before)
    for key in ("links", "attribute_refs", "dataset_refs"):
        assert after[key] == before[key], key
    with nwbpeer.open_nwb(dst) as io:
        nwbpeer.assert_valid(io, f"converted {src.name}")
        nwbfile = io.read()
        nwbpeer.read_every_object(nwbfile)
        assert nwbpeer.object_types(nwbfile) == {o["object_id"]: o["neurodata_type"] for o in after["objects"]}
    assert nwbwalk.consolidated_keys(dst) == nwbwalk.all_node_keys(dst)
    return after


@pytest.mark.parametrize("kind", SOURCE_KINDS)
def test_convert_pynwb_file(nwb, nwb_files, tmp_path, kind):
    src = nwb_files.other(kind)
    dst = _convert(nwb, src, tmp_path)
    after = _assert_same_file(nwb_files, src, dst)
    with nwbpeer.open_nwb(dst) as io:
        nwbpeer.assert_fixture_data(io.read(), kind)
    assert {s["namespace"]: s["version"] for s in nwbwalk.cached_specs(dst)} == {
        "core": "2.11.0",
        "hdmf-common": "1.10.0",
        "hdmf-experimental": "0.6.0",
    }
    assert_inspect_equal(nwb.inspect(dst), after)
    assert nwb.check(dst).returncode == 0


def test_convert_other_demo(nwb, nwb_files, tmp_path, other_demo_file):
    dst = _convert(nwb, other_demo_file, tmp_path)
    after = _assert_same_file(nwb_files, other_demo_file, dst)
    with nwbpeer.open_nwb(dst) as io:
        nwbpeer.assert_demo_semantics(dst, io.read(), after)
    assert nwb.check(dst).returncode == 0


@pytest.fixture(scope="module")
def converted_ecephys(nwb_session_cli, nwb_files, tmp_path_factory):
    return _convert(nwb_session_cli, nwb_files.other("ecephys"), tmp_path_factory.mktemp("converted"))


@pytest.mark.parametrize("object_path", CONVERTED_GETS)
def test_convert_representative_data(nwb, nwb_files, converted_ecephys, object_path):
    """`nwb get` of the converted file equals pynwb's read of this environment's twin fixture
    (same deterministic builder; reference targets compared as paths)."""
    dst = converted_ecephys
    expected = nwb_files.gets("ecephys")[object_path]
    nwbpeer.assert_nwb_array(nwb.nwb_get(dst, object_path), expected, f"converted:{object_path}")
