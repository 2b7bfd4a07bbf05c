"""Bad NWB input through the CLI, for both conventions: references (and, in Zarr v3, JSON-text
elements) and links to missing targets, link cycles, external links escaping the file's directory,
malformed link lists (`zarr_link` / `_LINKS`). Each victim is a copy of the pynwb-written ecephys
fixture with one fault crafted by zarr-python or raw bytes (nwbcraft.py). Never a panic (NwbCli
fails the test on `panicked at`), never a hang (timeouts).

Imported into tests/interop/nwb2/test_bad_input_nwb2.py and nwb3/test_bad_input_nwb3.py (pytest
collects the tests and fixtures there); the pickle tests of the legacy convention stay in nwb2.
"""

from __future__ import annotations

import pytest

import nwbcraft
import nwbwalk
from nwbcli import assert_inspect_equal

EPHYS = "/general/extracellular_ephys"
GROUP_COLUMN = f"{EPHYS}/electrodes/group"
TRIALS_COLUMN = "/intervals/trials/timeseries"
HANG_TIMEOUT = 30


@pytest.fixture
def victim(nwb_files, tmp_path):
    return nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "victim.nwb.zarr")


def _names(path: str, text: str) -> bool:
    """`text` names the NWB object `path` (with or without its leading slash)."""
    return path.lstrip("/") in text


def _assert_one_problem(proc, path: str, *words: str) -> None:
    """`nwb check` exited 1 with exactly one stderr line about `path` (a closing summary line
    that names only the file is allowed), and that line contains `words`."""
    assert proc.returncode == 1, f"nwb check missed the problem at {path}:\n{proc.stderr}"
    lines = [line for line in proc.stderr.splitlines() if _names(path, line)]
    assert len(lines) == 1, f"expected one problem line naming {path}:\n{proc.stderr}"
    for word in words:
        assert word in lines[0], f"problem line does not mention {word!r}: {lines[0]}"


# -- dangling references and links ------------------------------------------------------------


def check_reference_to_missing_path(nwb, victim, as_json: bool = False) -> None:
    """One element of the electrodes `group` reference column names a missing object (the suites
    run it per element form: nwb3 also as JSON text)."""
    nwbcraft.set_reference_element(victim, GROUP_COLUMN, 1, f"{EPHYS}/nowhere", as_json=as_json)
    assert_inspect_equal(nwb.inspect(victim), nwbwalk.expected_inspect(victim))  # inspect does not resolve
    _assert_one_problem(nwb.check(victim), GROUP_COLUMN, "nowhere")


def test_compound_reference_to_missing_path(nwb, victim):
    """The reference field of the trials `timeseries` compound (a pickled ZarrReference in the
    legacy convention, a `_REFERENCE_FIELDS` field of a v3 `struct`) names a missing TimeSeries."""
    nwbcraft.set_compound_reference(victim, TRIALS_COLUMN, 2, "timeseries", "/acquisition/nowhere")
    doc = nwb.inspect(victim)
    assert {"path": TRIALS_COLUMN, "index": 2, "field": "timeseries", "target": "/acquisition/nowhere"} in doc["dataset_refs"]
    assert_inspect_equal(doc, nwbwalk.expected_inspect(victim))
    _assert_one_problem(nwb.check(victim), TRIALS_COLUMN, "nowhere")


def test_attribute_reference_to_missing_path(nwb, victim):
    region = "/acquisition/ElectricalSeries/electrodes"
    nwbcraft.set_attribute(victim, region, "table", nwbcraft.reference_attribute(f"{EPHYS}/nowhere"))
    assert_inspect_equal(nwb.inspect(victim), nwbwalk.expected_inspect(victim))
    _assert_one_problem(nwb.check(victim), region, "nowhere")


def test_link_to_missing_target(nwb, victim):
    nwbcraft.retarget_link(victim, f"{EPHYS}/shank0", "device", "/general/devices/nowhere")
    assert_inspect_equal(nwb.inspect(victim), nwbwalk.expected_inspect(victim))
    _assert_one_problem(nwb.check(victim), f"{EPHYS}/shank0", "nowhere")


@pytest.mark.parametrize("shape", ["two-links", "self"])
def test_link_cycle(nwb, victim, tmp_path, shape):
    """A -> B where B is a link back to A (or A -> A): reported, no hang."""
    if shape == "self":
        nwbcraft.add_link(victim, "/acquisition/ts1", "loop_a", "/acquisition/ts1/loop_a")
    else:
        nwbcraft.add_link(victim, "/acquisition/ts1", "loop_a", "/acquisition/ts2/loop_b")
        nwbcraft.add_link(victim, "/acquisition/ts2", "loop_b", "/acquisition/ts1/loop_a")
    doc = nwb.inspect(victim)  # inspect lists links without following them
    assert any(link["path"] == "/acquisition/ts1/loop_a" for link in doc["links"])
    assert_inspect_equal(doc, nwbwalk.expected_inspect(victim))
    proc = nwb.check(victim, timeout=HANG_TIMEOUT)
    assert proc.returncode == 1, proc.stderr
    assert "loop_a" in proc.stderr or "loop_b" in proc.stderr, proc.stderr
    nwb.nwb_fails("nwb", "get", victim, "/acquisition/ts1/loop_a", "-o", tmp_path / "out.npy", timeout=HANG_TIMEOUT)


# -- external links ---------------------------------------------------------------------------


@pytest.fixture
def external_layout(nwb_files, tmp_path):
    """tmp/a/b/file.nwb.zarr with ts2's `timestamps` link pointing at another store; that store
    exists both at tmp/ext.nwb.zarr (outside tmp/a/b) and at tmp/a/b/sibling.nwb.zarr."""
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    store = nwbcraft.copy_store(nwb_files.path("ecephys"), inner / "file.nwb.zarr")
    nwbcraft.copy_store(nwb_files.path("ecephys"), tmp_path / "ext.nwb.zarr")
    nwbcraft.copy_store(nwb_files.path("ecephys"), inner / "sibling.nwb.zarr")
    return tmp_path, store


def test_external_link_escaping_parent_is_refused(nwb, external_layout):
    top, store = external_layout
    nwbcraft.retarget_link(store, "/acquisition/ts2", "timestamps", "/acquisition/ts1/timestamps", source="../../../ext.nwb.zarr")
    assert (store / "../../../ext.nwb.zarr").resolve() == (top / "ext.nwb.zarr").resolve()
    doc = nwb.inspect(store)
    assert {"path": "/acquisition/ts2/timestamps", "target": "/acquisition/ts1/timestamps", "source": "../../../ext.nwb.zarr"} in doc["links"]
    proc = nwb.check(store)
    assert proc.returncode == 1, f"an external link escaping the file's directory was accepted:\n{proc.stderr}"
    assert _names("/acquisition/ts2", proc.stderr), proc.stderr
    # Allowed when --allow-external covers the target; a directory that does not cover it is not enough.
    assert nwb.check(store, "--allow-external", top).returncode == 0
    assert nwb.check(store, "--allow-external", top / "a").returncode == 1


def test_external_link_to_sibling_store(nwb, external_layout):
    """A sibling store (source `../sibling.nwb.zarr`) stays inside the parent directory: resolved."""
    _, store = external_layout
    nwbcraft.retarget_link(store, "/acquisition/ts2", "timestamps", "/acquisition/ts1/timestamps", source="../sibling.nwb.zarr")
    proc = nwb.check(store)
    assert proc.returncode == 0, proc.stderr


def test_external_link_to_missing_store(nwb, external_layout):
    _, store = external_layout
    nwbcraft.retarget_link(store, "/acquisition/ts2", "timestamps", "/acquisition/ts1/timestamps", source="../absent.nwb.zarr")
    proc = nwb.check(store)
    assert proc.returncode == 1 and _names("/acquisition/ts2", proc.stderr), proc.stderr


# -- malformed link lists ---------------------------------------------------------------------


MALFORMED_LINKS = {
    "not-a-list": {"name": "device", "path": "/general/devices/probe", "source": "."},
    "a-string": "/general/devices/probe",
    "entry-without-path": [{"name": "device", "source": "."}],
    "entry-not-an-object": ["device"],
}


@pytest.mark.parametrize("case", list(MALFORMED_LINKS))
@pytest.mark.parametrize("command", ["inspect", "check"])
def test_malformed_link_list(nwb, victim, case, command):
    group = f"{EPHYS}/shank0"
    nwbcraft.set_links(victim, group, MALFORMED_LINKS[case])
    args = ("nwb", "inspect", victim, "--json") if command == "inspect" else ("nwb", "check", victim)
    nwb.nwb_fails(*args, names=[group.lstrip("/")])
