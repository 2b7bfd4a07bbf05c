"""`neurochunk nwb import IN.nwb OUT --convention <this environment's>`: HDF5 NWB files written
here by pynwb's NWBHDF5IO (and h5py), pynwb's back-compat files and the DANDI example file are
imported; this environment's pynwb + hdmf-zarr reads every object of the import with the same
type, name, object id, fields, data, links and references as NWBHDF5IO reads from the source
(nwbh5.snapshot), validates it, and `nwb check` resolves everything. Constructs pynwb does not
show (region references, compounds, a hard link, big-endian, compact and fill-valued arrays) are
checked against h5py. Bad input fails with one line naming the object, and nothing is written.

Imported into tests/interop/nwb2/test_import_nwb2.py and nwb3/test_import_nwb3.py.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import nwbfixtures
import nwbh5
import nwbpeer
import nwbwalk
from nwbcli import assert_inspect_equal

CONVENTION = nwbfixtures.this_convention()
BACK_COMPAT = nwbh5.BACK_COMPAT
DANDI = nwbh5.DANDI


@pytest.fixture(scope="session")
def h5_sources(tmp_path_factory) -> dict[str, Path]:
    return nwbh5.write_sources(tmp_path_factory.mktemp("h5-sources"))


def _array_document(store: Path, path: str) -> dict:
    """The array's metadata document as written (`.zarray` or `zarr.json`)."""
    name = ".zarray" if CONVENTION == "zarr2" else "zarr.json"
    return json.loads((store / path / name).read_text())


def _import(nwb, src: Path, dst: Path, *options) -> Path:
    proc = nwb.run("nwb", "import", src, dst, "--convention", CONVENTION, *options, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("imported "), proc.stdout
    assert nwbwalk.convention_of(dst) == CONVENTION
    return dst


def _chunks(doc: dict) -> list[int]:
    if "chunks" in doc:
        return doc["chunks"]
    return doc["chunk_grid"]["configuration"]["chunk_shape"]


def _assert_same_as_hdf5(src: Path, dst: Path, ids: bool = True) -> dict:
    with nwbh5.open_hdf5(src) as io:
        expected = nwbh5.snapshot(io.read(), ids=ids)
    with nwbpeer.open_nwb(dst) as io:
        nwbpeer.assert_valid(io, f"import of {src.name}")
        got = nwbh5.snapshot(io.read(), ids=ids)
    assert got == expected, f"{src.name}: pynwb reads the import differently:\n{nwbh5.diff(expected, got)}"
    assert nwbwalk.consolidated_keys(dst) == nwbwalk.all_node_keys(dst)
    return got


@pytest.mark.parametrize("kind", ["ecephys", "ophys"])
def test_pynwb_reads_the_import_as_the_hdf5_source(nwb, h5_sources, tmp_path, kind):
    src = h5_sources[kind]
    dst = _import(nwb, src, tmp_path / f"{kind}.nwb.zarr")
    got = _assert_same_as_hdf5(src, dst)
    assert nwb.check(dst).returncode == 0
    if kind == "ecephys":
        # The chunked + gzip + shuffle series keeps its chunking and compression (its chunks are
        # copied as stored), and reads back exactly.
        series = got["/compressed"]
        assert series["data"] == ["array", "i", [3000, 8], nwbh5.ES_H5_DATA.tolist()]
        doc = _array_document(dst, "acquisition/compressed/data")
        assert _chunks(doc) == [512, 4]
        codecs = json.dumps(doc)
        assert "zlib" in codecs and "shuffle" in codecs, codecs
        # The electrodes region, the trials' TimeSeriesReferenceVectorData and the ragged
        # spike times went through pynwb's comparison; inspect lists the reference columns.
        inventory = nwb.inspect(dst)
        fields = {(r["path"], r.get("field")) for r in inventory["dataset_refs"]}
        assert ("/intervals/trials/timeseries", "timeseries") in fields
        assert any(r["path"] == "/general/extracellular_ephys/electrodes/group" for r in inventory["dataset_refs"])
    else:
        masks = got["/ophys/ImageSegmentation/ImageMasks/image_mask"]
        assert masks["data"] == ["array", "f", [3, 6, 6], np.stack(nwbh5.IMAGE_MASKS).ravel().tolist()]


def test_external_link_into_a_second_imported_file(nwb, h5_sources, tmp_path):
    # The link's target file is imported beside the linking one, under the name the link gets.
    _import(nwb, h5_sources["second"], tmp_path / "second.nwb.zarr")
    dst = _import(nwb, h5_sources["linking"], tmp_path / "linking.nwb.zarr")
    got = _assert_same_as_hdf5(h5_sources["linking"], dst)
    assert got["/remote_ts"]["data"] == ["array", "f", [12], [float(x) for x in range(12)]]
    links = nwb.inspect(dst)["links"]
    assert links == [{"path": "/acquisition/remote_ts", "target": "/acquisition/remote_ts", "source": "../second.nwb.zarr"}]
    assert nwb.check(dst).returncode == 0


@pytest.mark.parametrize("src", [DANDI, *BACK_COMPAT], ids=lambda p: p.name)
def test_thirdparty_hdf5_files(nwb, tmp_path, src):
    if not src.exists():
        pytest.skip(f"{src} is not present")
    dst = _import(nwb, src, tmp_path / (src.stem + ".nwb.zarr"))
    # Files of pynwb 1.0.x have no object ids: pynwb draws new ones at every read.
    ids = not src.name.startswith("1.0.")
    with nwbh5.open_hdf5(src) as io:
        expected = nwbh5.snapshot(io.read(), ids=ids)
    with nwbpeer.open_nwb(dst) as io:
        got = nwbh5.snapshot(io.read(), ids=ids)
    assert got == expected, nwbh5.diff(expected, got)
    if src == DANDI:
        units = got["/units"]
        assert units["colnames"] == expected["/units"]["colnames"]
        spike_index = got["/units/spike_times_index"]["data"]
        assert spike_index[-1][-1] == 34057


def test_constructs_read_back_as_h5py_reads_them(nwb, h5_sources, tmp_path):
    import h5py

    src = h5_sources["constructs"]
    dst = _import(nwb, src, tmp_path / "constructs.zarr")
    with h5py.File(src, "r") as f:
        for name in ("grid", "big_endian", "compact", "flags", "fill", "empty", "scalar_float"):
            got = nwb.nwb_get(dst, f"/{name}")
            expected = f[name][()]
            assert got.dtype == expected.dtype.newbyteorder("<") or got.dtype == expected.dtype, name
            np.testing.assert_array_equal(got, expected, err_msg=name)
        assert nwb.nwb_get(dst, "/scalar_text")[()] == "one string"
        np.testing.assert_array_equal(nwb.nwb_get(dst, "/vlen_text"), np.array(["a", "bb", "ccc ü"]))
        np.testing.assert_array_equal(nwb.nwb_get(dst, "/fixed_text"), np.array(["ab", "c"]))
        # References become paths; the hard link /hard a link to /grid.
        np.testing.assert_array_equal(nwb.nwb_get(dst, "/refs"), np.array(["/group", "/grid", ""]))
        compound = nwb.nwb_get(dst, "/compound")
        np.testing.assert_array_equal(compound["start"], [0, 5, 9])
        np.testing.assert_array_equal(compound["value"], [0.5, 1.5, -2.0])
        np.testing.assert_array_equal(compound["target"], ["/grid", "/group", "/grid"])
        # Region references select what h5py's do.
        for index in range(3):
            out = tmp_path / f"region{index}.npy"
            nwb.run("nwb", "deref", dst, "/regions", "--index", index, "-o", out)
            expected = f["grid"][f["regions"][index]]
            np.testing.assert_array_equal(np.load(out).ravel(), np.asarray(expected).ravel(), err_msg=f"region {index}")
        out = tmp_path / "attr_region.npy"
        nwb.run("nwb", "deref", dst, "/group", "--attribute", "region", "-o", out)
        np.testing.assert_array_equal(np.load(out), f["grid"][f["group"].attrs["region"]])
    # Attributes, and the soft and hard links.
    attrs = nwbwalk.attrs_of(nwbwalk.open_root(dst)["group"])
    assert attrs["text"] == "attribute text"
    assert attrs["numbers"] == [[1, 2], [3, 4]]
    # Non-finite floats are stored as zarr-python stores them (bare NaN / Infinity).
    assert np.isnan(attrs["not_a_number"])
    assert attrs["limits"] == [-np.inf, 0.5, np.inf]
    nwb.run("nwb", "deref", dst, "/group", "--attribute", "target", "-o", tmp_path / "t.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "t.npy"), np.arange(200).reshape(20, 10))
    np.testing.assert_array_equal(nwb.nwb_get(dst, "/hard"), np.arange(200).reshape(20, 10))
    root = nwbwalk.attrs_of(nwbwalk.open_root(dst))
    links = {(entry["name"], entry["path"], entry["source"]) for entry in root["zarr_link" if CONVENTION == "zarr2" else "_LINKS"]}
    assert links == {("soft", "/group", "."), ("hard", "/grid", ".")}


def test_rechunk_and_recompress(nwb, h5_sources, tmp_path):
    src = h5_sources["ecephys"]
    dst = _import(
        nwb, src, tmp_path / "rechunked.nwb.zarr",
        "--compressors", "zstd:3", "--chunks", "/acquisition/compressed/data=1000,8",
    )
    doc = _array_document(dst, "acquisition/compressed/data")
    assert _chunks(doc) == [1000, 8]
    assert "zstd" in json.dumps(doc) and "zlib" not in json.dumps(doc)
    _assert_same_as_hdf5(src, dst)


# -- bad input ---------------------------------------------------------------------------------


def _fails(nwb, src: Path, dst: Path, *names: str, options=()) -> str:
    proc = nwb.run("nwb", "import", src, dst, "--convention", CONVENTION, *options, check=False)
    assert proc.returncode == 1, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "panicked" not in proc.stderr, proc.stderr
    for name in names:
        assert name in lines[0], lines[0]
    assert not dst.exists(), "a failed import left something at the destination"
    assert not [p for p in dst.parent.iterdir() if p.name.startswith(f".{dst.name}")], "staging left behind"
    return lines[0]


def test_bad_input_is_one_error_and_nothing_written(nwb, h5_sources, tmp_path):
    import h5py

    work = tmp_path / "bad"
    work.mkdir()
    dst = work / "out.nwb.zarr"
    not_hdf5 = work / "text.nwb"
    not_hdf5.write_text("not an HDF5 file\n")
    _fails(nwb, not_hdf5, dst, "text.nwb", "HDF5")
    truncated = work / "truncated.nwb"
    truncated.write_bytes(h5_sources["ecephys"].read_bytes()[:4000])
    _fails(nwb, truncated, dst, "truncated.nwb")

    dangling = work / "dangling.h5"
    with h5py.File(dangling, "w") as f:
        f.create_group("g")
        f["g/broken"] = h5py.SoftLink("/nowhere")
    _fails(nwb, dangling, dst, "/g/broken", "/nowhere")

    lzf = work / "lzf.h5"
    with h5py.File(lzf, "w") as f:
        f.create_dataset("packed", data=np.arange(100), chunks=(10,), compression="lzf")
    # LZF (h5py's own filter, no Zarr codec) is decoded by neurochunk's reader: the import
    # succeeds, the data compressed with the convention's default, and a note says so.
    proc = nwb.run("nwb", "import", lzf, work / "lzf.nwb.zarr", "--convention", CONVENTION, check=False)
    assert proc.returncode == 0 and "/packed" in proc.stderr and "32000" in proc.stderr, proc.stderr
    import zarr

    packed = zarr.open(store=str(work / "lzf.nwb.zarr"), mode="r")["packed"]
    np.testing.assert_array_equal(packed[...], np.arange(100))

    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(h5_sources["second"], outside / "second.nwb")
    escaping = work / "escaping.h5"
    with h5py.File(escaping, "w") as f:
        f["away"] = h5py.ExternalLink("../outside/second.nwb", "/acquisition/remote_ts")
    _fails(nwb, escaping, dst, "/away", "outside")
    # Allowed explicitly, it imports.
    _import(nwb, escaping, work / "allowed.zarr", "--allow-external", tmp_path)

    missing = work / "missing_target.h5"
    with h5py.File(missing, "w") as f:
        f["gone"] = h5py.ExternalLink("second.nwb", "/acquisition/remote_ts")
    _fails(nwb, missing, dst, "/gone", "second.nwb")


# -- against hdmf-zarr's own export ------------------------------------------------------------


def _export(src: Path, dst: Path) -> Path:
    """NWBZarrIO.export from NWBHDF5IO: hdmf-zarr's own route from HDF5."""
    import warnings

    from hdmf_zarr.nwb import NWBZarrIO
    from pynwb import NWBHDF5IO

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with NWBHDF5IO(str(src), "r") as source, NWBZarrIO(str(dst), mode="w") as target:
            target.export(src_io=source, write_args={"link_data": False})
    return dst


@pytest.mark.parametrize("kind", ["ecephys", "ophys", "dandi"])
def test_inspect_equals_hdmf_zarr_export(nwb, h5_sources, tmp_path, kind):
    """`nwb inspect --json` of the import equals that of hdmf-zarr's export of the same file:
    objects (path, type, namespace, object id), links, attribute and dataset references. One
    difference is hdmf-zarr's: its export writes the electrodes table of the DANDI file (NWB
    2.1.0, stored as `DynamicTable`) as pynwb's current `ElectrodesTable`, a type the file
    never had; the import keeps the stored type."""
    src = DANDI if kind == "dandi" else h5_sources[kind]
    if not src.exists():
        pytest.skip(f"{src} is not present")
    exported = nwb.inspect(_export(src, tmp_path / "exported.nwb.zarr"))
    imported = nwb.inspect(_import(nwb, src, tmp_path / "imported.nwb.zarr"))
    if kind == "dandi":
        path = "/general/extracellular_ephys/electrodes"
        [theirs] = [o for o in exported["objects"] if o["path"] == path]
        [ours] = [o for o in imported["objects"] if o["path"] == path]
        assert (theirs["neurodata_type"], ours["neurodata_type"]) == ("ElectrodesTable", "DynamicTable")
        with h5py_file(src) as f:
            assert f[path].attrs["neurodata_type"] in ("DynamicTable", b"DynamicTable")
        theirs.update(namespace=ours["namespace"], neurodata_type=ours["neurodata_type"])
    assert_inspect_equal(imported, exported)


def test_external_link_kept_where_hdmf_zarr_export_copies(nwb, h5_sources, tmp_path):
    """hdmf-zarr's export replaces the external link by a copy of the linked TimeSeries (the
    link is lost and the data duplicated); the import keeps it as a link into the imported
    second file. Everything else is the same."""
    exported = nwb.inspect(_export(h5_sources["linking"], tmp_path / "exported.nwb.zarr"))
    imported = nwb.inspect(_import(nwb, h5_sources["linking"], tmp_path / "imported.nwb.zarr"))
    assert [o["path"] for o in exported["objects"] if o["path"] == "/acquisition/remote_ts"] == ["/acquisition/remote_ts"]
    assert exported["links"] == []
    assert imported["links"] == [{"path": "/acquisition/remote_ts", "target": "/acquisition/remote_ts", "source": "../second.nwb.zarr"}]
    exported["objects"] = [o for o in exported["objects"] if o["path"] != "/acquisition/remote_ts"]
    exported["links"] = imported["links"]
    assert_inspect_equal(imported, exported)


@contextlib.contextmanager
def h5py_file(path: Path):
    import h5py

    with h5py.File(path, "r") as f:
        yield f
