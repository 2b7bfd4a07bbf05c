"""pynwb + hdmf-zarr of this environment read what `neurochunk nwb demo --convention <this>`
writes: every object reads, references and links resolve to the right objects, the file validates
(only the known unsigned-attribute complaint tolerated), the cached specs load, and
`nwb inspect --json` of the demo equals the zarr-python walk.

Imported into tests/interop/nwb2/test_write_nwb2.py and nwb3/test_write_nwb3.py (pytest collects
them there); the on-disk checks of each convention stay in the suite files.
"""

from __future__ import annotations

import pytest

import nwbpeer
import nwbwalk
from nwbcli import assert_inspect_equal, normalized_specs

CACHED = {"core", "hdmf-common", "hdmf-experimental"}


def test_demo_reads_every_object(demo_file):
    """All typed objects on disk are objects pynwb builds, with the same ids and types."""
    doc = nwbwalk.expected_inspect(demo_file)
    with nwbpeer.open_nwb(demo_file) as io:
        nwbfile = io.read()
        count = nwbpeer.read_every_object(nwbfile)
        assert nwbpeer.object_types(nwbfile) == {o["object_id"]: o["neurodata_type"] for o in doc["objects"]}
    assert count == len(doc["objects"])


def test_demo_references_and_links_resolve(demo_file):
    doc = nwbwalk.expected_inspect(demo_file)
    with nwbpeer.open_nwb(demo_file) as io:
        nwbpeer.assert_demo_semantics(demo_file, io.read(), doc)


def test_demo_validates(demo_file, convention):
    with nwbpeer.open_nwb(demo_file) as io:
        nwbpeer.assert_valid(io, f"nwb demo --convention {convention}")


def test_demo_inspect_json_equals_walk(nwb, demo_file):
    assert_inspect_equal(nwb.inspect(demo_file), nwbwalk.expected_inspect(demo_file))


def test_demo_check_is_clean(nwb, demo_file):
    proc = nwb.check(demo_file)
    assert proc.returncode == 0, proc.stderr


def test_demo_cached_specs_load(nwb, demo_file, schema_namespaces):
    """hdmf-zarr's namespace loading finds core (and the hdmf-common namespaces) in the cache,
    with the versions of the YAML files passed to --namespace; `nwb specs` lists the same."""
    loaded = nwbpeer.loaded_namespaces(demo_file)
    assert CACHED <= set(loaded), loaded
    assert {name: loaded[name] for name in CACHED} == nwbpeer.installed_namespace_versions(CACHED)
    specs = nwbwalk.cached_specs(demo_file)
    assert {s["namespace"] for s in specs} >= CACHED
    assert normalized_specs(nwb.specs(demo_file)) == specs


def test_demo_consolidated_metadata_is_complete(demo_file):
    assert nwbwalk.consolidated_keys(demo_file) == nwbwalk.all_node_keys(demo_file)


@pytest.mark.parametrize("scale", [3])
def test_demo_scale_adds_timeseries(nwb, tmp_path, demo_file, convention, schema_namespaces, scale):
    scaled = nwb.demo(tmp_path / "scaled.nwb.zarr", convention, schema_namespaces, scale=scale)
    with nwbpeer.open_nwb(demo_file) as io:
        base = nwbpeer.count_timeseries(io.read())
    with nwbpeer.open_nwb(scaled) as io:
        nwbpeer.assert_valid(io, f"nwb demo --scale {scale}")
        nwbfile = io.read()
        nwbpeer.read_every_object(nwbfile)
        grown = nwbpeer.count_timeseries(nwbfile)
    assert grown == base + scale
    assert_inspect_equal(nwb.inspect(scaled), nwbwalk.expected_inspect(scaled))
