"""HDF5 NWB files read where they are, over HTTP and S3 (issue: NWB where it lives):
`nwb inspect`, `nwb get`, `nwb validate`, `tree` and `nwb import` of a URL read the file by
ranged requests, counted through a proxy: opening and listing read a small part of the file,
a one-chunk slice reads about that chunk, and nothing is downloaded whole. The values are
h5py's (pynwb's file, written here).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ncli import assert_same_array, cli_form

# A TimeSeries of 600 000 x 16 int16 (19.2 MB of samples, incompressible), chunks of
# 20 000 x 16 (640 KB), gzip: the file is about 19 MB.
ROWS, COLS, CHUNK_ROWS = 600_000, 16, 20_000
HUGE_ELEMENTS = 1 << 29  # 1 GiB of int16


@pytest.fixture(scope="module")
def nwb_file(tmp_path_factory) -> Path:
    from datetime import datetime, timezone

    from hdmf.backends.hdf5 import H5DataIO
    from pynwb import NWBHDF5IO, NWBFile, TimeSeries

    rng = np.random.default_rng(7)
    data = rng.integers(-32000, 32000, size=(ROWS, COLS), dtype=np.int16)
    nwbfile = NWBFile(
        session_description="remote in place",
        identifier="remote-hdf5",
        session_start_time=datetime(2024, 1, 2, tzinfo=timezone.utc),
    )
    for i in range(20):
        nwbfile.add_acquisition(TimeSeries(name=f"small_{i:02d}", data=np.arange(5.0) + i, unit="V", rate=1.0))
    nwbfile.add_acquisition(
        TimeSeries(
            name="big",
            data=H5DataIO(data, chunks=(CHUNK_ROWS, COLS), compression="gzip", compression_opts=1),
            unit="uV",
            rate=30000.0,
        )
    )
    path = tmp_path_factory.mktemp("remote-hdf5") / "session.nwb"
    with NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)
    return path


def _with_huge_dataset(path: Path) -> None:
    """Add a 1 GiB contiguous dataset whose last element only is written: the file is then
    over 1 GB (sparse on disk), as a raw recording would make it."""
    import h5py

    with h5py.File(path, "a") as f:
        raw = f["acquisition"].create_dataset("raw", shape=(HUGE_ELEMENTS,), dtype="<i2")
        raw[-1] = 7


def _expected(path: Path, dataset: str, rows: slice) -> np.ndarray:
    import h5py

    with h5py.File(path, "r") as f:
        return f[dataset][rows]


def _nwb_get(nc, file, dataset: str, region: str | None = None) -> np.ndarray:
    """`neurochunk nwb get FILE DATASET [--region SEL] -o OUT.npy`, loaded with NumPy."""
    out = nc._scratch_file("nwb-get", ".npy")
    args = ["nwb", "get", file, dataset, "-o", out]
    if region is not None:
        args.append(f"--region={region}")
    nc.run(*args)
    return np.load(out, allow_pickle=False)


def test_http_file_is_read_in_place_by_ranged_requests(hnc, http_root, proxy_for, nwb_file, tmp_path):
    folder, _ = http_root.fresh_dir("h5")
    shutil.copy(nwb_file, folder / "session.nwb")
    _with_huge_dataset(folder / "session.nwb")
    shutil.copy(nwb_file, folder / "small.nwb")
    size = (folder / "session.nwb").stat().st_size
    proxy = proxy_for(http_root)
    url = f"{proxy.url}/{folder.name}/session.nwb"

    # Opening and listing: the metadata only, a small part of the file.
    inventory = json.loads(hnc.run("nwb", "inspect", url, "--json").stdout)
    types = {o["path"]: o["neurodata_type"] for o in inventory["objects"]}
    assert types["/acquisition/big"] == "TimeSeries" and types["/acquisition/small_07"] == "TimeSeries", types
    # (the first read takes the first 256 KiB, the rest is pages of metadata: a fixed amount,
    # whatever the size of the samples)
    opened = proxy.bytes_sent(method="GET")
    assert size > 1 << 30
    # Under 1% of the file, as the HDF5 issue asks (the open's head and tail reads and 256 KiB
    # metadata pages come to under 2 MiB of this 1.09 GB file).
    assert opened < min(size / 100, 2 << 20), f"opening read {opened} of {size} bytes: {proxy.summary()}"
    assert proxy.count(method="GET") <= 16, proxy.summary()
    assert proxy.count(method="GET", ranged=False) == 0, proxy.summary()

    # A one-chunk slice: the chunk (about 640 KB stored) and the metadata again.
    proxy.reset()
    out = _nwb_get(hnc, url, "/acquisition/big/data", region="20000:20010,:")
    assert_same_array(out, cli_form(_expected(nwb_file, "acquisition/big/data", slice(20000, 20010))), "slice")
    read = proxy.bytes_sent(method="GET")
    chunk = CHUNK_ROWS * COLS * 2
    assert read < opened + 1.5 * chunk, f"a one-chunk slice read {read} bytes: {proxy.summary()}"

    # A slice of the contiguous 1 GiB dataset reads its byte range.
    proxy.reset()
    out = _nwb_get(hnc, url, "/acquisition/raw", region=f"{HUGE_ELEMENTS - 5}:{HUGE_ELEMENTS}")
    assert out.tolist() == [0, 0, 0, 0, 7], out
    assert proxy.bytes_sent(method="GET") < opened + (2 << 20), proxy.summary()

    # A slice across three chunks reads three chunks, not the dataset.
    proxy.reset()
    out = _nwb_get(hnc, url, "/acquisition/big/data", region="39990:80010,3")
    assert_same_array(out, cli_form(_expected(nwb_file, "acquisition/big/data", slice(39990, 80010))[:, 3]), "three chunks")
    assert proxy.bytes_sent(method="GET") < opened + 4.5 * chunk, proxy.summary()

    # Validation in place: no copy of the samples.
    proxy.reset()
    proc = hnc.run("nwb", "validate", url, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proxy.bytes_sent(method="GET") < size / 200, proxy.summary()

    # `tree` sees the file as a hierarchy.
    tree = hnc.run("tree", url).stdout
    assert "big" in tree and "small_19" in tree, tree

    # A copying import streams the file by ranged reads (no whole-file GET), and pynwb's
    # values come out (a copy without the 1 GiB dataset, to keep the test short).
    proxy.reset()
    dst = tmp_path / "imported.nwb.zarr"
    proc = hnc.run("nwb", "import", f"{proxy.url}/{folder.name}/small.nwb", dst, "--convention", "zarr2")
    assert proc.stdout.startswith("imported "), proc.stdout
    assert proxy.count(method="GET", ranged=False) == 0, proxy.summary()
    got = _nwb_get(hnc, dst, "/acquisition/big/data", region="599990:600000,:")
    assert_same_array(got, cli_form(_expected(nwb_file, "acquisition/big/data", slice(599990, 600000))), "import")


def test_s3_file_is_read_in_place(rnc, s3, bucket, nwb_file, tmp_path):
    client = s3.client()
    client.put_object(Bucket=bucket, Key="dandi/session.nwb", Body=nwb_file.read_bytes())
    url = f"s3://{bucket}/dandi/session.nwb"
    inventory = json.loads(rnc.run("nwb", "inspect", url, "--json").stdout)
    assert any(o["path"] == "/acquisition/big" for o in inventory["objects"]), inventory
    out = _nwb_get(rnc, url, "/acquisition/small_03/data")
    assert_same_array(out, cli_form(_expected(nwb_file, "acquisition/small_03/data", slice(None))), "small")
    out = _nwb_get(rnc, url, "/acquisition/big/data", region="123456:123470,:")
    assert_same_array(out, cli_form(_expected(nwb_file, "acquisition/big/data", slice(123456, 123470))), "big")
    proc = rnc.run("nwb", "validate", url, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # A LINDI reference file from the object's metadata: its chunk entries name the URL.
    reference = tmp_path / "s3.lindi.json"
    rnc.run("nwb", "import", url, reference, "--virtual")
    refs = json.loads(reference.read_text())["refs"]
    ranges = [v for v in refs.values() if isinstance(v, list)]
    assert len(ranges) == ROWS // CHUNK_ROWS and {r[0] for r in ranges} == {url}, ranges[:2]
