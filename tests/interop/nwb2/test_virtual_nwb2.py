"""`neurochunk nwb import --virtual`: LINDI reference files of HDF5 files (no data copied; chunk
entries are byte ranges of the HDF5 file) read by the `lindi` package (LindiH5pyFile, an h5py-like
view; lindi 0.4 needs zarr-python 2, hence this suite only) and by neurochunk itself (the
reference file opened as a read-only store), with values equal to h5py's.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nwbh5

h5py = pytest.importorskip("h5py")
lindi = pytest.importorskip("lindi")


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    return nwbh5.write_sources(tmp_path_factory.mktemp("virtual-sources"))


def _virtual(nwb, src: Path, out: Path) -> dict:
    proc = nwb.run("nwb", "import", src, out, "--virtual")
    assert proc.stdout.startswith("wrote "), proc.stdout
    return json.loads(out.read_text())


def _plain(value):
    """h5py gives bytes for variable-length text, lindi str: compare as str."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":
        return np.array([_plain(v) for v in value.ravel()], dtype=object).reshape(value.shape)
    return value


def _walk_h5(f) -> dict[str, object]:
    found = {}

    def visit(name, obj):
        found[name] = obj  # returning None keeps visititems going

    f.visititems(visit)
    return found


def test_lindi_reads_what_h5py_reads(nwb, sources, tmp_path):
    src = sources["constructs"]
    doc = _virtual(nwb, src, tmp_path / "constructs.lindi.json")
    refs = doc["refs"]
    # The chunked dataset is referenced by byte ranges of the HDF5 file, not copied.
    ranges = [v for k, v in refs.items() if k.startswith("large/") and isinstance(v, list)]
    assert len(ranges) == 4 * 3 and all(r[0] == str(src.resolve()) for r in ranges)
    assert refs["large/.zarray"]["filters"] == [{"elementsize": 4, "id": "shuffle"}, {"id": "zlib", "level": 4}]
    with h5py.File(src, "r") as f:
        g = lindi.LindiH5pyFile.from_lindi_file(str(tmp_path / "constructs.lindi.json"))
        for name in ("large", "grid", "big_endian", "compact", "flags", "fill", "empty", "scalar_float", "fixed_text"):
            np.testing.assert_array_equal(np.asarray(g[name][()]), f[name][()], err_msg=name)
        assert _plain(g["scalar_text"][()]) == _plain(f["scalar_text"][()])
        assert list(_plain(g["vlen_text"][()])) == list(_plain(f["vlen_text"][()]))
        assert [g[r].name for r in g["refs"][:2]] == ["/group", "/grid"]
        assert g["group"].attrs["text"] == "attribute text"
        assert np.isnan(g["group"].attrs["not_a_number"])
        np.testing.assert_array_equal(g["group"].attrs["limits"], [-np.inf, 0.5, np.inf])
        np.testing.assert_array_equal(g["group"].attrs["numbers"], f["group"].attrs["numbers"])
        assert g[g["group"].attrs["target"]].name == "/grid"
        for field in ("start", "value"):
            np.testing.assert_array_equal(g["compound"][field][:], f["compound"][field], err_msg=field)
        assert [g[r].name for r in g["compound"]["target"][:]] == ["/grid", "/group", "/grid"]
        # The soft link and the second hard link lead to their targets.
        assert g["soft"].attrs["text"] == "attribute text"
        np.testing.assert_array_equal(g["hard"][()], f["grid"][()])


def test_neurochunk_reads_the_reference_file_as_a_store(nwb, sources, tmp_path):
    src = sources["constructs"]
    # Beside the HDF5 file: byte ranges are read only inside the reference file's directory.
    out = src.parent / "store-test.lindi.json"
    _virtual(nwb, src, out)
    with h5py.File(src, "r") as f:
        for name in ("large", "grid", "compact", "fill"):
            np.testing.assert_array_equal(nwb.get(out / name), f[name][()], err_msg=name)
        np.testing.assert_array_equal(nwb.get(out / "large", "2:90,1:47"), f["large"][2:90, 1:47])
    nodes = {n["path"]: n for n in nwb.tree(out)["nodes"]}
    assert nodes["/large"]["shape"] == [100, 50] and nodes["/large"]["chunks"] == [30, 20]
    assert nodes["/group"]["node_type"] == "group"


@pytest.mark.parametrize("kind", ["ecephys", "ophys"])
def test_nwb_files_through_lindi_and_neurochunk(nwb, sources, tmp_path, kind):
    src = sources[kind]
    out = src.parent / f"{kind}.lindi.json"
    doc = _virtual(nwb, src, out)
    with h5py.File(src, "r") as f:
        g = lindi.LindiH5pyFile.from_lindi_file(str(out))
        datasets = {k: v for k, v in _walk_h5(f).items() if isinstance(v, h5py.Dataset)}
        assert datasets
        for name, ds in datasets.items():
            if ds.dtype.kind in "iufb":
                np.testing.assert_array_equal(np.asarray(g[name][()]), ds[()], err_msg=name)
                if ds.ndim and ds.size >= 1000:
                    np.testing.assert_array_equal(nwb.get(out / name), ds[()], err_msg=name)
        for name, obj in _walk_h5(f).items():
            for key, value in obj.attrs.items():
                got = g[name].attrs[key]
                if isinstance(value, h5py.Reference):
                    assert g[got].name == f[value].name, (name, key)
                else:
                    np.testing.assert_array_equal(_plain(np.asarray(got)), _plain(np.asarray(value)), err_msg=f"{name}@{key}")
    if kind == "ecephys":
        assert doc["refs"]["acquisition/compressed/data/0.0"][1:] != [0, 0]


def test_reference_file_ranges_outside_its_directory_are_refused(nwb, sources, tmp_path):
    out = tmp_path / "refs" / "constructs.lindi.json"
    out.parent.mkdir()
    _virtual(nwb, sources["constructs"], out)
    # The HDF5 file lies outside the reference file's directory: neurochunk refuses to read it.
    proc = nwb.run("get", out / "large", "-o", tmp_path / "x.npy", check=False)
    assert proc.returncode == 1
    assert "outside" in proc.stderr and "large" in proc.stderr, proc.stderr


@pytest.mark.parametrize("kind", ["ecephys", "ophys", "linking"])
def test_nwb_inspect_of_the_reference_file_equals_the_import(nwb, sources, tmp_path, kind):
    """The NWB layer reads LINDI's conventions (`_SOFT_LINK` groups as links, `_REFERENCE`
    elements as references, `_COMPOUND_DTYPE` compounds, `_SCALAR` scalars, external links as
    `_EXTERNAL_ARRAY_LINK` / `_EXTERNAL_LINK` nodes): the reference file's inventory is the
    import's, external links naming the HDF5 file itself rather than its import."""
    from nwbcli import assert_inspect_equal

    src = sources[kind]
    out = src.parent / f"inspect-{kind}.lindi.json"
    _virtual(nwb, src, out)
    imported = tmp_path / f"{kind}.nwb.zarr"
    nwb.run("nwb", "import", src, imported, "--convention", "zarr2")
    got, expected = nwb.inspect(out), nwb.inspect(imported)
    if kind == "linking":
        assert [link["source"] for link in expected["links"]] == ["../second.nwb.zarr"]
        assert [link["source"] for link in got["links"]] == [str((src.parent / "second.nwb").resolve())]
        assert [link["target"] for link in got["links"]] == [link["target"] for link in expected["links"]]
        expected["links"] = got["links"] = []
    assert_inspect_equal(got, expected)
    if kind == "ecephys":
        for path in ("/intervals/trials/timeseries", "/general/extracellular_ephys/electrodes/group",
                     "/units/spike_times_index", "/session_start_time", "/acquisition/compressed/data"):
            np.testing.assert_array_equal(nwb.nwb_get(out, path), nwb.nwb_get(imported, path), err_msg=path)
        assert nwb.check(out).returncode == 0


def test_lindi_follows_an_external_link_of_the_reference_file(nwb, sources, tmp_path):
    """An HDF5 external link to a dataset becomes lindi's `_EXTERNAL_ARRAY_LINK`: lindi reads
    the linked data from the other file, as h5py does through the link."""
    import shutil

    shutil.copy(sources["second"], tmp_path / "second.nwb")
    src = tmp_path / "pointing.h5"
    with h5py.File(src, "w") as f:
        f["linked_data"] = h5py.ExternalLink("second.nwb", "/acquisition/remote_ts/data")
    out = tmp_path / "pointing.lindi.json"
    _virtual(nwb, src, out)
    attrs = json.loads(out.read_text())["refs"]["linked_data/.zattrs"]
    assert attrs["_EXTERNAL_ARRAY_LINK"]["name"] == "/acquisition/remote_ts/data", attrs
    client = lindi.LindiH5pyFile.from_lindi_file(str(out))
    np.testing.assert_array_equal(client["linked_data"][()], np.arange(12.0))
