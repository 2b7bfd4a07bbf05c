"""neurochunk.nwb.validate and neurochunk.nwb.import_file against pynwb and the CLI.

* import_file of HDF5 files pynwb writes (and a back-compat file pynwb wrote long ago): this
  environment's pynwb + hdmf-zarr reads the import equal to what NWBHDF5IO reads from the
  source; re-chunking, re-compression and progress; virtual reference files whose chunk
  entries point into the source; bad input (nothing written).
* validate of invalid variants (nwbvariants.py), as HDF5 and in this environment's Zarr
  convention: the same findings as `neurochunk nwb validate --json` (the binary under test,
  $NEUROCHUNK_BIN or target/release/neurochunk), the rule each variant names, pynwb's verdict
  where pynwb detects the problem.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

import nwbfixtures as fx  # noqa: E402
import nwbh5  # noqa: E402
import nwbpeer  # noqa: E402
import nwbvariants  # noqa: E402
from ncli import binary_path  # noqa: E402

import neurochunk as nc  # noqa: E402

CONVENTION = fx.this_convention()  # "zarr2" or "zarr3"
THIS = "legacy" if CONVENTION == "zarr2" else "v3"
VARIANTS = {v.name: v for v in nwbvariants.VARIANTS}
# A few variants of different rules, some pynwb detects, some it misses.
CHOSEN = [
    "missing_attr_data_unit",
    "dtype_timestamps_int",
    "shape_ids_2d",
    "reftarget_index_target",
    "table_duplicate_ids",
    "table_region_out_of_range",
]


def cli_validate(*args) -> tuple[int, list[dict]]:
    binary = binary_path()
    assert binary.is_file(), f"neurochunk binary not found at {binary} (set NEUROCHUNK_BIN)"
    proc = subprocess.run(
        [str(binary), "nwb", "validate", "--json", *map(str, args)], capture_output=True, text=True, timeout=300
    )
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    return nwbh5.write_sources(tmp_path_factory.mktemp("h5"))


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> dict[str, dict[str, Path]]:
    """name -> format -> path of the base file and the chosen variants."""
    out = tmp_path_factory.mktemp("variants")
    written: dict[str, dict[str, Path]] = {}
    for variant in [nwbvariants.BASE, *(VARIANTS[n] for n in CHOSEN)]:
        for fmt in ("hdf5", "zarr"):
            path = out / nwbvariants.file_name(variant, fmt)
            written.setdefault(variant.name, {})[fmt] = nwbvariants.write_variant(variant, path, fmt)
    return written


# --- HDF5 files opened in place -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ecephys", "ophys"])
def test_hdf5_files_open_in_place_with_h5py_values(sources, kind):
    """nc.nwb.open of an HDF5 file reads it where it is: every numeric dataset h5py sees, by
    slices too, typed objects with pynwb's types, DynamicTables as dictionaries."""
    import h5py

    f = nc.nwb.open(sources[kind])
    assert f.storage == "hdf5"
    compared = []
    with h5py.File(sources[kind], "r") as h:

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.startswith("specifications"):
                if obj.dtype.kind in "iufb" and obj.shape not in ((), (0,)):
                    np.testing.assert_array_equal(f["/" + name][...], obj[()], err_msg=name)
                    first = slice(0, max(1, obj.shape[0] // 3))
                    np.testing.assert_array_equal(f["/" + name][first], obj[first], err_msg=name)
                    compared.append(name)

        h.visititems(visit)
        typed = sorted(
            "/" + name
            for name, obj in _walk(h)
            if "neurodata_type" in obj.attrs and not name.startswith("specifications")
        )
    assert len(compared) > 3, compared
    assert sorted(o.path for o in f.objects()) == ["/", *typed]
    with nwbh5.open_hdf5(sources[kind]) as io:
        nwbfile = io.read()
        for table in ("units", "electrodes") if kind == "ecephys" else ():
            theirs = (nwbfile.units if table == "units" else nwbfile.electrodes).to_dataframe()
            ours = f[f"/{table}" if table == "units" else "/general/extracellular_ephys/electrodes"].to_dict()
            np.testing.assert_array_equal(np.asarray(ours["id"]), theirs.index.to_numpy())


def _walk(h) -> list:
    found = []
    h.visititems(lambda name, obj: found.append((name, obj)) and None)
    return found


@pytest.mark.parametrize("kind", ["ecephys", "ophys", "constructs", "second", "linking"])
def test_every_value_h5py_reads_is_read_in_place(sources, kind):
    f = nc.nwb.open(sources[kind])
    assert nwbh5.assert_reads_like_h5py(f, sources[kind]) > 5


def test_nc_open_reads_an_hdf5_file_as_a_store(sources):
    import h5py

    group = nc.open(sources["ecephys"], mode="r")
    with h5py.File(sources["ecephys"], "r") as h:
        expected = h["acquisition/compressed/data"][()]
    np.testing.assert_array_equal(group["acquisition/compressed/data"][100:200], expected[100:200])
    array = nc.open(str(sources["ecephys"]) + "/acquisition/compressed/data", mode="r")
    assert array.shape == expected.shape
    np.testing.assert_array_equal(array[...], expected)


# --- import_file -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ecephys", "ophys", "back_compat"])
def test_import_reads_like_the_hdf5_source_in_pynwb(sources, tmp_path, kind):
    src = nwbh5.BACK_COMPAT[-1] if kind == "back_compat" else sources[kind]
    dst = tmp_path / f"{kind}.nwb.zarr"
    summary = nc.nwb.import_file(src, dst, convention=CONVENTION)
    assert summary["groups"] > 0 and summary["datasets"] > 0 and summary["namespaces"] >= 2, summary
    assert nc.nwb.open(dst).convention == THIS
    with nwbh5.open_hdf5(src) as io:
        expected = nwbh5.snapshot(io.read())
    with nwbpeer.open_nwb(dst) as io:
        got = nwbh5.snapshot(io.read())
    assert got == expected, nwbh5.diff(expected, got)


def test_import_rechunks_recompresses_and_reports_progress(sources, tmp_path):
    import h5py

    dst = tmp_path / "rechunked.nwb.zarr"
    calls: list[tuple[int, int]] = []
    summary = nc.nwb.import_file(
        sources["ecephys"],
        dst,
        convention=CONVENTION,
        chunks={"/acquisition/compressed/data": [1000, 8]},
        compressors="zstd",
        progress=lambda done, total: calls.append((done, total)),
    )
    assert summary["chunks_copied"] == 0 and summary["chunks_encoded"] > 0, summary
    data = nc.nwb.open(dst)["/acquisition/compressed/data"]
    assert data.array.chunks == (1000, 8)
    with h5py.File(sources["ecephys"], "r") as f:
        np.testing.assert_array_equal(data[...], f["acquisition/compressed/data"][()])
    assert calls and calls[-1][0] == calls[-1][1] == summary["bytes"], (calls[-3:], summary)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)
    # A size for every dataset; without compressors the HDF5 chunks are copied as stored.
    small = nc.nwb.import_file(sources["ecephys"], tmp_path / "small.nwb.zarr", convention=CONVENTION, chunks="4K")
    assert small["chunks_encoded"] > 0
    kept = nc.nwb.import_file(sources["ecephys"], tmp_path / "kept.nwb.zarr", convention=CONVENTION)
    # (contiguous datasets have no stored chunks: they are encoded)
    assert kept["chunks_copied"] > 0 and kept["chunks_encoded"] < summary["chunks_encoded"], kept


def test_virtual_reference_file_points_into_the_source(sources, tmp_path):
    import h5py

    src = sources["constructs"]
    dst = tmp_path / "constructs.lindi.json"
    summary = nc.nwb.import_file(src, dst, virtual=True)
    assert summary["chunk_refs"] > 0, summary
    refs = json.loads(dst.read_text())["refs"]
    entries = [v for v in refs.values() if isinstance(v, list)]
    assert entries and all(e[0] == str(Path(src).resolve()) for e in entries)
    # Every referenced byte range is the stored chunk h5py finds at that offset.
    with h5py.File(src, "r") as f:
        large = f["large"]
        stored = {
            (info.byte_offset, info.size)
            for info in (large.id.get_chunk_info(i) for i in range(large.id.get_num_chunks()))
        }
    assert len(stored) == 12 and stored <= {(e[1], e[2]) for e in entries}
    # Small datasets are inline (the 200-element grid), not referenced.
    assert not any(k.startswith("grid/") and isinstance(v, list) for k, v in refs.items())
    at_url = nc.nwb.import_file(src, tmp_path / "at-url.lindi.json", virtual=True, url="https://example.org/c.h5")
    assert at_url["chunk_refs"] == summary["chunk_refs"]
    refs = json.loads((tmp_path / "at-url.lindi.json").read_text())["refs"]
    assert {v[0] for v in refs.values() if isinstance(v, list)} == {"https://example.org/c.h5"}


def test_import_errors_write_nothing(tmp_path):
    text = tmp_path / "text.nwb"
    text.write_text("not hdf5")
    with pytest.raises(nc.InvalidInputError, match="not an HDF5 file"):
        nc.nwb.import_file(text, tmp_path / "out.nwb.zarr")
    assert not (tmp_path / "out.nwb.zarr").exists()
    with pytest.raises(nc.NodeNotFoundError):
        nc.nwb.import_file(tmp_path / "absent.nwb", tmp_path / "out.nwb.zarr")
    with pytest.raises(nc.InvalidInputError, match="lindi.json"):
        nc.nwb.import_file(text, tmp_path / "out.json", virtual=True)
    with pytest.raises(nc.InvalidInputError, match="convention"):
        nc.nwb.import_file(text, tmp_path / "out.nwb.zarr", convention="zarr4")  # type: ignore[arg-type]
    with pytest.raises(nc.InvalidInputError, match="size"):
        nc.nwb.import_file(text, tmp_path / "out.nwb.zarr", chunks="4 parsecs")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text.nwb"]


# --- validate ----------------------------------------------------------------------------------


def test_validate_agrees_with_the_cli(variants):
    paths = [p for by_format in variants.values() for p in by_format.values()]
    report = nc.nwb.validate(paths)
    status, findings = cli_validate(*paths)
    assert report.status == status == 1
    assert not report.ok and not report
    assert report.to_dict() == {"ok": False, "status": 1, "problems": findings}
    for name, by_format in variants.items():
        for fmt, path in by_format.items():
            ours = {(p.rule, p.path) for p in report.errors if p.file == str(path)}
            if name == "base":
                assert ours == set(), (fmt, ours)
            else:
                v = VARIANTS[name]
                assert {r for r, _ in ours} == {v.rule} and (v.rule, v.path) in ours, (name, fmt, ours)


@pytest.mark.parametrize("name", [n for n in CHOSEN if VARIANTS[n].pynwb is not None])
def test_validate_of_the_hdf5_twin_agrees_with_pynwb(variants, name):
    import pynwb

    variant = VARIANTS[name]
    path = variants[name]["hdf5"]
    report = nc.nwb.validate(path)
    assert report.status == 1
    (problem,) = report.problems
    assert (problem.rule, problem.path, problem.file) == (variant.rule, variant.path, str(path))
    assert str(problem).startswith(f"error [{variant.rule}] {variant.path} (")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = {(type(e).__name__, "/" + (e.location or "").split(".")[0]) for e in pynwb.validate(path=str(path))}
    parent = variant.path.rsplit("/", 1)[0] or "/"
    assert theirs and all(where in (variant.path, parent) for _, where in theirs), theirs
    assert variant.pynwb[0] in {c for c, _ in theirs}


def test_validate_valid_files_and_namespaces(variants, tmp_path):
    report = nc.nwb.validate([variants["base"]["hdf5"], variants["base"]["zarr"]])
    assert report.ok and report.status == 0 and report.problems == []
    assert str(report).startswith("valid: 0 error(s)")
    # pynwb 1.0.2 cached nothing: unreadable without namespaces, checked against given ones.
    old = next(p for p in nwbh5.BACK_COMPAT if p.name == "1.0.2_str_pub.nwb")
    report = nc.nwb.validate(old)
    assert report.status == 2 and [p.rule for p in report.problems] == ["unreadable"]
    assert "caches no specifications" in report.problems[0].message
    import hdmf.common
    import pynwb

    core = Path(pynwb.__file__).parent / "nwb-schema" / "core" / "nwb.namespace.yaml"
    common = Path(hdmf.common.__file__).parent / "hdmf-common-schema" / "common" / "namespace.yaml"
    report = nc.nwb.validate(old, namespaces=[core, common])
    assert {(p.rule, p.path) for p in report.problems} == {("value", "/"), ("shape", "/general/related_publications")}
    status, findings = cli_validate(old, "--namespace", core, "--namespace", common)
    assert (report.status, report.to_dict()["problems"]) == (status, findings)
    # A missing file is a problem, not an exception.
    report = nc.nwb.validate(tmp_path / "absent.nwb.zarr")
    assert report.status == 2 and report.problems[0].rule == "unreadable"
