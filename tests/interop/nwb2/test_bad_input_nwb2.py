"""Bad legacy-convention input through the CLI: hostile and truncated pickles, references and links
to missing targets, link cycles, external links escaping the file's directory, malformed
`zarr_link` lists. Each victim is a copy of the pynwb-written ecephys fixture with one fault
crafted by zarr-python or raw bytes (nwbcraft.py). Never a panic (NwbCli fails the test on
`panicked at`), never a hang (timeouts), never execution of stored code.

The tests shared with nwb3 (and the `victim` / `external_layout` fixtures) are written once in
tests/interop/nwbcases_bad_input.py; here only the pickles, which exist in this convention only.
"""

from __future__ import annotations

import re

import pytest

import nwbcraft
from nwbcases_bad_input import *  # noqa: F401,F403 - the tests and fixtures shared with nwb3
from nwbcases_bad_input import GROUP_COLUMN, TRIALS_COLUMN, check_reference_to_missing_path


def test_reference_to_missing_path(nwb, victim):
    check_reference_to_missing_path(nwb, victim)


# -- pickles ----------------------------------------------------------------------------------


@pytest.mark.parametrize("column", [GROUP_COLUMN, TRIALS_COLUMN])
@pytest.mark.parametrize("command", ["inspect", "check", "get"])
def test_hostile_pickle_is_refused(nwb, victim, tmp_path, column, command):
    """A reference column whose pickle calls os.system: refused, the global named, not run."""
    marker = tmp_path / "pwned"
    nwbcraft.write_v2_chunk(victim, column, nwbcraft.os_system_pickle(f"touch {marker}"))
    args = {
        "inspect": ("nwb", "inspect", victim, "--json"),
        "check": ("nwb", "check", victim),
        "get": ("nwb", "get", victim, column, "-o", tmp_path / "out.npy"),
    }[command]
    stderr = nwb.nwb_fails(*args)
    assert re.search(r"os[. ]system", stderr), f"error does not name the global os.system:\n{stderr}"
    assert column.lstrip("/") in stderr, f"error does not name the array {column}:\n{stderr}"
    assert not marker.exists(), "neurochunk executed the pickled os.system call"


@pytest.mark.parametrize("command", ["inspect", "check", "get"])
def test_truncated_pickle(nwb, victim, tmp_path, command):
    good = nwbcraft.decode_v2_chunk(victim, GROUP_COLUMN)
    nwbcraft.write_v2_chunk(victim, GROUP_COLUMN, good[: len(good) // 2])
    args = {
        "inspect": ("nwb", "inspect", victim, "--json"),
        "check": ("nwb", "check", victim),
        "get": ("nwb", "get", victim, GROUP_COLUMN, "-o", tmp_path / "out.npy"),
    }[command]
    nwb.nwb_fails(*args, names=[GROUP_COLUMN.lstrip("/")])


def test_pickle_with_unknown_global(nwb, victim, tmp_path):
    """Anything outside the allow-list is refused, not only os.system (builtins.eval here)."""
    payload = b"\x80\x02cbuiltins\neval\nX\x04\x00\x00\x001+1\x85R."
    nwbcraft.write_v2_chunk(victim, GROUP_COLUMN, payload)
    stderr = nwb.nwb_fails("nwb", "inspect", victim, "--json", names=[GROUP_COLUMN.lstrip("/")])
    assert "eval" in stderr, stderr
