"""neurochunk reads pynwb/hdmf-zarr files of this environment's convention: `nwb inspect --json`
equals the zarr-python walk, `nwb specs` lists the cached namespaces, `nwb check` finds nothing
wrong, and `nwb get` of representative datasets equals what pynwb reads.

Imported into tests/interop/nwb2/test_read_nwb2.py and nwb3/test_read_nwb3.py (pytest collects
them there); the fixtures are those of nwbfixtures.fixtures_for(this convention).
"""

from __future__ import annotations

import pytest

import nwbfixtures
import nwbpeer
import nwbwalk
from nwbcli import assert_inspect_equal, normalized_specs

KINDS = nwbfixtures.fixtures_for(nwbfixtures.this_convention())
# A few typed objects the readable tree must mention (by name or full path), per fixture.
TREE_MENTIONS = {
    "ecephys": ["/acquisition/ElectricalSeries", "/general/extracellular_ephys/electrodes", "/units"],
    "exported": ["/acquisition/ElectricalSeries", "/intervals/trials"],
    "json2": ["/general/extracellular_ephys/shank0", "/units"],  # legacy convention only
    "ophys": ["/processing/ophys/ImageSegmentation/PlaneSegmentation", "/general/optophysiology/plane0"],
}


@pytest.mark.parametrize("kind", KINDS)
def test_inspect_json_equals_walk(nwb, nwb_files, kind):
    path = nwb_files.path(kind)
    assert_inspect_equal(nwb.inspect(path), nwb_files.walk(path))


@pytest.mark.parametrize("kind", [k for k in KINDS if k in TREE_MENTIONS])
def test_inspect_tree(nwb, nwb_files, kind):
    """Without --json: exit 0 and a readable tree naming some objects (full path or leaf name)."""
    text = nwb.inspect_text(nwb_files.path(kind))
    for path in TREE_MENTIONS[kind]:
        assert path.rsplit("/", 1)[1] in text, f"`nwb inspect` tree does not mention {path}:\n{text[:3000]}"


@pytest.mark.parametrize("kind", KINDS)
def test_specs_json(nwb, nwb_files, kind):
    path = nwb_files.path(kind)
    got = nwb.specs(path)
    assert normalized_specs(got) == nwbwalk.cached_specs(path)
    assert {e["namespace"]: e["version"] for e in got} == {
        "core": "2.11.0",
        "hdmf-common": "1.10.0",
        "hdmf-experimental": "0.6.0",
    }


@pytest.mark.parametrize("kind", KINDS)
def test_check_is_clean(nwb, nwb_files, kind):
    proc = nwb.check(nwb_files.path(kind))
    assert proc.returncode == 0, f"nwb check reports problems in a pynwb-written file:\n{proc.stderr}"


@pytest.mark.parametrize(("kind", "object_path"), nwbpeer.get_cases(KINDS))
def test_get_equals_pynwb(nwb, nwb_files, kind, object_path):
    """Scalars 0-d, text `<U{maxlen}` (legacy vlen-bytes datetimes too), references as target
    paths, compounds (v3 `struct`s) as structured arrays (reference and text fields `<U`), links
    followed."""
    expected = nwb_files.gets(kind)[object_path]
    got = nwb.nwb_get(nwb_files.path(kind), object_path)
    nwbpeer.assert_nwb_array(got, expected, f"{kind}:{object_path}")
