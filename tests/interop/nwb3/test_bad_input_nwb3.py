"""Bad Zarr v3-convention input through the CLI: references (path strings, JSON-text elements,
`_REFERENCE` attributes, compound reference fields) and links to missing targets, link cycles,
external links escaping the file's directory, malformed `_LINKS` lists. Pickles exist only in the
legacy convention (tests/interop/nwb2). Each victim is a copy of the pynwb-written ecephys fixture
with one fault crafted by zarr-python (nwbcraft.py). Never a panic (NwbCli fails the test on
`panicked at`), never a hang (timeouts).

The tests shared with nwb2 (and the `victim` / `external_layout` fixtures) are written once in
tests/interop/nwbcases_bad_input.py; here the reference test runs for both element forms.
"""

from __future__ import annotations

import pytest

from nwbcases_bad_input import *  # noqa: F401,F403 - the tests and fixtures shared with nwb2
from nwbcases_bad_input import check_reference_to_missing_path


@pytest.mark.parametrize("as_json", [False, True], ids=["path-string", "json-text"])
def test_reference_to_missing_path(nwb, victim, as_json):
    check_reference_to_missing_path(nwb, victim, as_json)
