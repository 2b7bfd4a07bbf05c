"""LINDI reference files whose byte ranges are remote (issue 14): `nwb import --virtual` of an
HDF5 file given by URL (HTTP and S3) writes a reference file naming the URL; neurochunk reads
its arrays with ranged GETs (neighbouring chunks coalesced into one request, counted through a
proxy), and the `lindi` package (in .peers/py311) reads the same reference file to the same
values. A reference file that is itself remote, with ranges relative to its own URL, reads the
same through neurochunk.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ncli import assert_same_array, cli_form

PY311 = Path(__file__).resolve().parents[3] / ".peers" / "py311" / "bin" / "python"
# 100 x 50 int32 in 12 chunks (30 x 20, gzip + shuffle): referenced chunk by chunk; a
# contiguous float64 dataset of 3000 elements: one range; a small one: inline.
LARGE = (np.arange(5000, dtype="<i4").reshape(100, 50) * 7 - 900).astype("<i4")
CONTIG = np.linspace(-1.0, 1.0, 3000)
SMALL = np.arange(6, dtype="<i2")


@pytest.fixture(scope="module")
def h5_file(tmp_path_factory) -> Path:
    import h5py

    path = tmp_path_factory.mktemp("lindi-src") / "data.h5"
    with h5py.File(path, "w") as f:
        f.create_dataset("large", data=LARGE, chunks=(30, 20), compression="gzip", shuffle=True)
        f.create_dataset("contig", data=CONTIG)
        f.create_dataset("small", data=SMALL)
        f.attrs["title"] = "remote ranges"
    return path


def _entries(reference: Path) -> list[list]:
    refs = json.loads(reference.read_text())["refs"]
    return [v for v in refs.values() if isinstance(v, list)]


def _lindi_values(reference: str) -> dict:
    """What lindi 0.4.6 (.peers/py311) reads from the reference file (a path or URL)."""
    script = """
import json, sys
import lindi
f = lindi.LindiH5pyFile.from_lindi_file(sys.argv[1])
print(json.dumps({name: f[name][()].tolist() for name in ("large", "contig", "small")}))
"""
    assert PY311.is_file(), f"{PY311} is missing (the py311 peer environment holds lindi)"
    proc = subprocess.run([str(PY311), "-c", script, reference], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _assert_values(read) -> None:
    assert_same_array(read("large"), cli_form(LARGE), "large")
    assert_same_array(read("contig"), cli_form(CONTIG), "contig")
    assert_same_array(read("small"), cli_form(SMALL), "small")


def test_http_source_read_by_neurochunk_and_lindi(hnc, http_root, proxy_for, h5_file, tmp_path):
    folder, url = http_root.fresh_dir("lindi")
    shutil.copy(h5_file, folder / "data.h5")
    reference = tmp_path / "data.lindi.json"
    proc = hnc.run("nwb", "import", f"{url}/data.h5", reference, "--virtual")
    assert "chunk references" in proc.stdout, proc.stdout
    entries = _entries(reference)
    assert len(entries) == 13 and {e[0] for e in entries} == {f"{url}/data.h5"}, entries[:3]
    _assert_values(lambda name: hnc.get(f"{reference}/{name}"))
    lindi = _lindi_values(str(reference))
    np.testing.assert_array_equal(np.array(lindi["large"]), LARGE)
    np.testing.assert_array_equal(np.array(lindi["contig"]), CONTIG)
    np.testing.assert_array_equal(np.array(lindi["small"]), SMALL)

    # Through a counting proxy: each batch of chunk reads the array layer makes becomes one
    # ranged GET (its neighbouring ranges coalesced), so the 12 chunks of `large` take far
    # fewer requests than chunks (3 here: one batch per column of chunks).
    proxy = proxy_for(http_root)
    counted = tmp_path / "counted.lindi.json"
    hnc.run("nwb", "import", h5_file, counted, "--virtual", "--url", f"{proxy.url}/{folder.name}/data.h5")
    assert_same_array(hnc.get(f"{counted}/large"), cli_form(LARGE), "large via proxy")
    assert 1 <= proxy.count(method="GET", ranged=True) <= 3, proxy.summary()
    assert proxy.count(method="GET", ranged=False) == 0, proxy.summary()
    proxy.reset()
    assert_same_array(hnc.get(f"{counted}/large", region="0:10,0:10"), cli_form(LARGE[0:10, 0:10]), "one chunk")
    assert proxy.count(method="GET", ranged=True) == 1, proxy.summary()


def test_remote_reference_file_with_relative_ranges(hnc, http_root, h5_file, tmp_path):
    """The reference file on the server beside the HDF5 file, its ranges naming `data.h5`:
    neurochunk resolves them against the reference file's URL. lindi reads the same file
    with absolute URLs from the server."""
    folder, url = http_root.fresh_dir("lindi-rel")
    shutil.copy(h5_file, folder / "data.h5")
    local = tmp_path / "abs.lindi.json"
    hnc.run("nwb", "import", h5_file, local, "--virtual", "--url", f"{url}/data.h5")
    doc = json.loads(local.read_text())
    (folder / "abs.lindi.json").write_text(json.dumps(doc))
    for value in doc["refs"].values():
        if isinstance(value, list):
            value[0] = "data.h5"
    (folder / "rel.lindi.json").write_text(json.dumps(doc))
    _assert_values(lambda name: hnc.get(f"{url}/rel.lindi.json/{name}"))
    _assert_values(lambda name: hnc.get(f"{url}/abs.lindi.json/{name}"))
    lindi = _lindi_values(f"{url}/abs.lindi.json")
    np.testing.assert_array_equal(np.array(lindi["large"]), LARGE)
    # A remote reference file may not name local files.
    for value in doc["refs"].values():
        if isinstance(value, list):
            value[0] = str(h5_file)
    (folder / "local.lindi.json").write_text(json.dumps(doc))
    proc = hnc.run("get", f"{url}/local.lindi.json/large", "-o", tmp_path / "x.npy", check=False)
    assert proc.returncode != 0 and "may not" in proc.stderr, proc.stderr


def test_s3_source_and_remote_reference_file(rnc, s3, bucket, h5_file, tmp_path):
    client = s3.client()
    client.put_object(Bucket=bucket, Key="d/data.h5", Body=h5_file.read_bytes())
    reference = tmp_path / "s3.lindi.json"
    rnc.run("nwb", "import", f"s3://{bucket}/d/data.h5", reference, "--virtual")
    entries = _entries(reference)
    assert {e[0] for e in entries} == {f"s3://{bucket}/d/data.h5"}
    _assert_values(lambda name: rnc.get(f"{reference}/{name}"))
    # The reference file in the bucket beside the file, with relative ranges.
    doc = json.loads(reference.read_text())
    for value in doc["refs"].values():
        if isinstance(value, list):
            value[0] = "data.h5"
    client.put_object(Bucket=bucket, Key="d/rel.lindi.json", Body=json.dumps(doc).encode())
    _assert_values(lambda name: rnc.get(f"s3://{bucket}/d/rel.lindi.json/{name}"))
