"""Virtual chunks: chunks of a repository that are byte ranges of other files.

Both directions: repositories whose virtual chunks the `icechunk` Python package wrote are read
by neurochunk at every version, only from the files it is allowed to read; and HDF5 NWB files
that pynwb wrote, imported with `nwb import --virtual`, are read by icechunk + zarr-python with
no chunk data copied into the repository."""

import os
from datetime import datetime, timezone
from pathlib import Path

import icechunk
import numpy as np
import pytest
import zarr

from ncli import Neurochunk, binary_path


@pytest.fixture
def nc(tmp_path):
    return Neurochunk(binary_path(), tmp_path / "scratch")


def file_prefix(directory: Path) -> str:
    return directory.resolve().as_uri() + "/"


def virtual_repository(repo_path: Path, data_dir: Path, values: np.ndarray) -> dict[str, str]:
    """A repository whose array `v` (16 x 16 chunks, uncompressed) has its chunks in
    `data_dir/raw.bin`, written by icechunk: five chunks virtual, one never written; then a
    second commit writes one chunk's bytes into the repository over its reference. Returns the
    snapshot ids by name."""
    data_dir.mkdir(parents=True, exist_ok=True)
    prefix = file_prefix(data_dir)
    chunks = {}
    blob = bytearray()
    for i in range(values.shape[0] // 16):
        for j in range(values.shape[1] // 16):
            if (i, j) == (1, 2):
                continue  # never written: the fill value
            block = np.ascontiguousarray(values[i * 16:(i + 1) * 16, j * 16:(j + 1) * 16])
            blob += b"\xee" * 7  # bytes between chunks that are no chunk's
            chunks[(i, j)] = (len(blob), block.nbytes)
            blob += block.astype("<u2").tobytes()
    (data_dir / "raw.bin").write_bytes(bytes(blob))

    config = icechunk.RepositoryConfig.default()
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(prefix, icechunk.local_filesystem_store(str(data_dir))))
    repo = icechunk.Repository.create(
        icechunk.local_filesystem_storage(str(repo_path)), config=config,
        authorize_virtual_chunk_access={prefix: None})
    session = repo.writable_session("main")
    root = zarr.group(store=session.store)
    root.create_array("v", shape=values.shape, chunks=(16, 16), dtype="uint16",
                      compressors=None, fill_value=0)
    for (i, j), (offset, length) in chunks.items():
        session.store.set_virtual_ref(f"v/c/{i}/{j}", prefix + "raw.bin", offset=offset,
                                      length=length)
    first = session.commit("virtual chunks")
    repo.create_tag("v1", first)
    session = repo.writable_session("main")
    array = zarr.open_array(session.store, path="v", mode="r+")
    array[0:16, 0:16] = 7
    second = session.commit("one chunk written over its reference")
    return {"first": first, "second": second}


def test_virtual_chunks_icechunk_wrote_are_read_at_every_version(nc, tmp_path):
    values = (np.arange(32 * 48, dtype="uint32") * 5 % 65521).astype("uint16").reshape(32, 48)
    data_dir = tmp_path / "data"
    repo_path = data_dir / "repo"
    snapshots = virtual_repository(repo_path, data_dir, values)

    expected_v1 = values.copy()
    expected_v1[16:32, 32:48] = 0
    np.testing.assert_array_equal(_get(nc, repo_path / "v", "--tag", "v1"), expected_v1)
    expected_main = expected_v1.copy()
    expected_main[0:16, 0:16] = 7
    np.testing.assert_array_equal(nc.get(repo_path / "v"), expected_main)
    np.testing.assert_array_equal(
        _get(nc, repo_path / "v", "--snapshot", snapshots["first"]), expected_v1)
    # A region inside one virtual chunk, and one across several.
    np.testing.assert_array_equal(nc.get(repo_path / "v", region="3:9,20:30"),
                                  expected_main[3:9, 20:30])
    np.testing.assert_array_equal(nc.get(repo_path / "v", region="10:30,5:45"),
                                  expected_main[10:30, 5:45])


def _get(nc: Neurochunk, path: Path, *options: str) -> np.ndarray:
    out = nc.scratch / f"get-{abs(hash((str(path),) + options))}.npy"
    nc.scratch.mkdir(parents=True, exist_ok=True)
    nc.run("get", path, *options, "-o", out)
    return np.load(out)


def test_virtual_chunks_outside_the_allowed_places_are_refused(nc, tmp_path):
    values = np.arange(32 * 48, dtype="uint16").reshape(32, 48)
    data_dir = tmp_path / "elsewhere" / "data"
    repo_path = tmp_path / "repos" / "repo"
    virtual_repository(repo_path, data_dir, values)

    # The file is not beside the repository: reading a virtual chunk is refused, naming the
    # container and the option; metadata and the chunk stored in the repository still read.
    err = nc.fails("get", repo_path / "v", "--tag", "v1", "-o", tmp_path / "x.npy",
                   names=["--allow-virtual", file_prefix(data_dir)])
    assert "panicked" not in err
    assert nc.run("info", repo_path / "v").returncode == 0
    np.testing.assert_array_equal(nc.get(repo_path / "v", region="0:16,0:16"),
                                  np.full((16, 16), 7, dtype="uint16"))
    # Allowed by directory, or anywhere.
    expected = values.copy()
    expected[16:32, 32:48] = 0
    np.testing.assert_array_equal(
        _get(nc, repo_path / "v", "--tag", "v1", "--allow-virtual", str(data_dir)), expected)
    np.testing.assert_array_equal(
        _get(nc, repo_path / "v", "--tag", "v1", "--allow-any-virtual"), expected)


def pynwb_file(path: Path) -> dict[str, np.ndarray]:
    """An HDF5 NWB file with a chunked, gzip-compressed and shuffled series, a contiguous
    one, and a chunked one whose last chunks are partial."""
    import pynwb
    from hdmf.backends.hdf5 import H5DataIO

    nwbfile = pynwb.NWBFile(session_description="virtual", identifier="ic-virtual",
                            session_start_time=datetime(2026, 3, 4, tzinfo=timezone.utc))
    rng = np.random.default_rng(5)
    values = {
        "compressed": rng.integers(-2000, 2000, size=(200_000, 4)).astype("int16"),
        "contiguous": rng.normal(size=(2500, 3)).astype("float32"),
        "edges": np.arange(1234 * 3, dtype="float64").reshape(1234, 3),
    }
    nwbfile.add_acquisition(pynwb.TimeSeries(
        name="compressed", unit="uV", rate=1000.0,
        data=H5DataIO(values["compressed"], chunks=(20_000, 4), compression="gzip",
                      shuffle=True)))
    nwbfile.add_acquisition(pynwb.TimeSeries(
        name="contiguous", unit="mV", rate=30.0, data=values["contiguous"]))
    nwbfile.add_acquisition(pynwb.TimeSeries(
        name="edges", unit="mV", rate=30.0, data=H5DataIO(values["edges"], chunks=(500, 3))))
    with pynwb.NWBHDF5IO(str(path), "w") as io:
        io.write(nwbfile)
    return values


def tree_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_nwb_import_virtual_is_read_by_icechunk_without_copying_chunks(nc, tmp_path):
    source = tmp_path / "session.nwb"
    values = pynwb_file(source)
    repo_path = tmp_path / "repo"
    nc.run("init", repo_path)
    out = nc.run("nwb", "import", source, repo_path / "session.nwb", "--virtual",
                 "--message", "virtual import").stdout
    assert "virtual references" in out, out

    # icechunk + zarr-python read every series through the container of the file's
    # directory, once authorised.
    prefix = file_prefix(tmp_path)
    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(str(repo_path)),
                                    authorize_virtual_chunk_access={prefix: None})
    assert [s.message for s in repo.ancestry(branch="main")][0] == "virtual import"
    head = zarr.open_group(repo.readonly_session(branch="main").store, mode="r")
    for name, expected in values.items():
        data = head[f"session.nwb/acquisition/{name}/data"]
        np.testing.assert_array_equal(data[:], expected, err_msg=name)
    codecs = [c["name"] for c in head["session.nwb/acquisition/compressed/data"].metadata
              .to_dict()["codecs"]]
    assert any("zlib" in c for c in codecs) and any("shuffle" in c for c in codecs), codecs

    # The data stayed in the HDF5 file: the repository's chunks (the cached specifications,
    # small datasets) are a small fraction of it.
    data_bytes = sum(v.nbytes for v in values.values())
    assert tree_bytes(repo_path / "chunks") < data_bytes / 8, (tree_bytes(repo_path), data_bytes)

    # neurochunk reads and validates it too.
    for name, expected in values.items():
        np.testing.assert_array_equal(
            nc.get(repo_path / f"session.nwb/acquisition/{name}/data"), expected)
    nc.run("nwb", "validate", repo_path / "session.nwb")

    # A changed file is refused, not read as other data.
    later = source.stat().st_mtime + 3600
    os.utime(source, (later, later))
    nc.fails("get", repo_path / "session.nwb/acquisition/contiguous/data",
             "-o", tmp_path / "x.npy", names=["contiguous"])
