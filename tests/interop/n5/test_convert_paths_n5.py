"""Conversion paths into N5 and N5 input the peers rarely write, checked with tensorstore's `n5`
driver and zarr-python 2's `N5Store`.

* Converting to N5 never refuses for encoding reasons: Zarr v2 filters (Delta, Shuffle) and a
  v3 `crc32c` are dropped, zstd / blosc compression becomes gzip (gzip and bzip2 are kept), and
  each array whose codecs changed gets one `neurochunk: note: /<array>: ...` line on stderr.
  N5 `dimensions` equal the Zarr shape in the same order (default `--n5-axis-order listed`), so
  tensorstore reads the same array.
* Variable-length strings cannot be stored in N5: a clean one-line error naming the array.
* `put OUT.n5/a/b/ds` creates the container root (`{"n5": "4.0.0"}`) and the group directories;
  a second put keeps the root's attributes.
* Blocks in varlength mode (header mode 1, with `num_elements`) are read as the Java reference
  reads them; tensorstore refuses them ("varlength chunks not supported"), so the datasets are
  crafted byte by byte here and compared with the same data in mode 0.
"""

from __future__ import annotations

import gzip
import json
import warnings
from pathlib import Path

import numcodecs
import numpy as np
import pytest
import tensorstore as ts
import zarr

import n5io
from convert_paths import assert_clean_error, assert_one_note, note_lines, run_convert
from ncli import assert_same_array, cli_form, load_json

SHAPE = (12, 10)
CHUNKS = (5, 4)


def _data(dtype="<i4") -> np.ndarray:
    return (np.arange(np.prod(SHAPE), dtype="<i8").reshape(SHAPE) * 7919 - 400000).astype(dtype)


def _zp2_array(path: Path, data: np.ndarray, **kwargs):
    z = zarr.open_array(str(path), mode="w", shape=data.shape, chunks=CHUNKS, dtype=data.dtype, **kwargs)
    z[...] = data
    assert_same_array(cli_form(zarr.open_array(str(path), mode="r")[...]), cli_form(data), "zarr-python 2 source")


def _check_n5_dataset(path: Path, data: np.ndarray) -> dict:
    """attributes.json lists the Zarr shape as is; tensorstore reads the values."""
    doc = load_json(path / "attributes.json")
    assert doc["dimensions"] == list(data.shape), doc
    assert_same_array(cli_form(n5io.ts_read(path)), cli_form(data), "tensorstore n5")
    return doc


# ------------------------------------------------------------------------------------------
# Codecs N5 cannot store are dropped, with one note per array
# ------------------------------------------------------------------------------------------


def test_zarr2_filters_are_dropped_converting_to_n5(tmp_path, nc):
    """/grp/filtered has Delta + Shuffle filters (zarr-python 2); /grp/plain has none."""
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.n5"
    zarr.open_group(str(src), mode="w").create_group("grp")
    filtered, plain = _data("<i4"), _data("<u2")
    _zp2_array(src / "grp" / "filtered", filtered,
               filters=[numcodecs.Delta(dtype="<i4"), numcodecs.Shuffle(elementsize=4)],
               compressor=numcodecs.GZip(level=5))
    _zp2_array(src / "grp" / "plain", plain, compressor=numcodecs.GZip(level=5))
    proc = run_convert(nc, src, dst, "n5")
    assert_one_note(proc.stderr, "/grp/filtered", "delta", "shuffle")
    assert not [n for n in note_lines(proc.stderr) if "/grp/plain" in n and ("delta" in n or "shuffle" in n)]
    doc = _check_n5_dataset(dst / "grp" / "filtered", filtered)
    text = json.dumps(doc).lower()
    assert "delta" not in text and "shuffle" not in text, doc
    assert doc["compression"]["type"] == "gzip", doc
    _check_n5_dataset(dst / "grp" / "plain", plain)
    assert_same_array(nc.get(dst / "grp" / "filtered"), cli_form(filtered), "neurochunk get")


def test_zarr3_crc32c_is_dropped_converting_to_n5(tmp_path, nc):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.n5"
    data = _data("<f8") * 1.5
    nc.put(data, src, "zarr3", chunks=CHUNKS, codec="gzip:2,crc32c")
    assert [c["name"] for c in load_json(src / "zarr.json")["codecs"]][-1] == "crc32c"
    proc = run_convert(nc, src, dst, "n5")
    assert_one_note(proc.stderr, "/", "crc32c")
    doc = _check_n5_dataset(dst, data)
    assert "crc32c" not in json.dumps(doc), doc
    assert doc["compression"]["type"] == "gzip", doc


COMPRESSIONS = {
    # source compressor, expected N5 compression subset, codec a note must name (None: no check)
    "zstd": (lambda: numcodecs.Zstd(level=3), {"type": "gzip"}, "zstd"),
    "blosc": (lambda: numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE), {"type": "gzip"}, "blosc"),
    "gzip": (lambda: numcodecs.GZip(level=5), {"type": "gzip", "level": 5}, None),
    "bz2": (lambda: numcodecs.BZ2(level=4), {"type": "bzip2", "blockSize": 4}, None),
}


@pytest.mark.parametrize("name", list(COMPRESSIONS))
def test_default_n5_compression_from_zarr2_source(name, tmp_path, nc):
    make, expected, mention = COMPRESSIONS[name]
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.n5"
    data = _data("<u2")
    _zp2_array(src, data, compressor=make())
    proc = run_convert(nc, src, dst, "n5")
    doc = _check_n5_dataset(dst, data)
    for key, value in expected.items():
        assert doc["compression"].get(key) == value, f"compression {doc['compression']} lacks {key}={value!r}"
    if mention:
        assert_one_note(proc.stderr, "/", mention)


@pytest.mark.parametrize("fmt", ["zarr2", "zarr3"])
def test_vlen_strings_to_n5_fail_cleanly(fmt, tmp_path, nc):
    src, dst = tmp_path / "src.zarr", tmp_path / "dst.n5"
    words = np.array([["alpha", "β", ""], ["gamma", "日本", "x" * 12]], dtype=object)
    if fmt == "zarr2":
        g = zarr.open_group(str(src), mode="w")
        labels = g.create_group("labels")
        z = labels.create_dataset("unit_names", shape=words.shape, chunks=(1, 3), dtype=object,
                                  object_codec=numcodecs.VLenUTF8())
        z[...] = words
        labels.create_dataset("ids", data=np.arange(6, dtype="<i4").reshape(2, 3))
    else:
        nc.put(words.astype("<U12"), src / "labels" / "unit_names", "zarr3", vlen=True)
        nc.put(np.arange(6, dtype="<i4").reshape(2, 3), src / "labels" / "ids", "zarr3")
        for node in (src, src / "labels"):  # parents of a nested put, whatever `put` made of them
            if not (node / "zarr.json").exists():
                (node / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
        assert load_json(src / "labels" / "unit_names" / "zarr.json")["data_type"] == "string"
    proc = nc.run("convert", src, dst, "--format", "n5", check=False)
    message = assert_clean_error(proc, ["unit_names"])
    assert "string" in message.lower() and "n5" in message.lower(), message


# ------------------------------------------------------------------------------------------
# put into a nested N5 path
# ------------------------------------------------------------------------------------------


def _ts_read_at(root: Path, path: str) -> np.ndarray:
    spec = {"driver": "n5", "kvstore": {"driver": "file", "path": str(root) + "/"}, "path": path}
    return ts.open(spec, open=True).result().read().result()


def _zp2_read_at(root: Path, path: str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return zarr.open_group(n5io.zp2_store(root), mode="r")[path][...]


def test_put_n5_nested_path_creates_root_and_groups(tmp_path, nc):
    data = _data("<u2")
    out = tmp_path / "OUT.n5"
    nc.put(data, out / "a" / "b" / "ds", "n5", chunks=CHUNKS)
    root_doc = load_json(out / "attributes.json")
    assert root_doc.get("n5") == "4.0.0", root_doc
    assert "dimensions" not in root_doc, root_doc
    assert (out / "a").is_dir() and (out / "a" / "b").is_dir()
    assert not (tmp_path / "attributes.json").exists(), "metadata written above the container root"
    assert_same_array(cli_form(_ts_read_at(out, "a/b/ds")), cli_form(data), "tensorstore n5")
    assert_same_array(cli_form(_zp2_read_at(out, "a/b/ds")), cli_form(data).T, "zarr-python 2 N5Store")


def test_put_n5_into_existing_root_keeps_its_attributes(tmp_path, nc):
    first, second = _data("<u2"), _data("<f4") * 0.25
    out = tmp_path / "OUT.n5"
    nc.put(first, out / "a" / "b", "n5", chunks=CHUNKS)
    assert (out / "attributes.json").is_file(), "put into OUT.n5/a/b created no root attributes.json"
    doc = load_json(out / "attributes.json")
    doc["keep"] = "me"
    (out / "attributes.json").write_text(json.dumps(doc))
    nc.put(second, out / "c" / "d", "n5", chunks=CHUNKS)
    doc = load_json(out / "attributes.json")
    assert doc.get("keep") == "me" and doc.get("n5") == "4.0.0", doc
    assert_same_array(cli_form(_ts_read_at(out, "a/b")), cli_form(first), "first put")
    assert_same_array(cli_form(_ts_read_at(out, "c/d")), cli_form(second), "second put")


# ------------------------------------------------------------------------------------------
# N5 blocks in varlength mode (header mode 1)
# ------------------------------------------------------------------------------------------

DIMS = [5, 7]  # listed view: an array of shape (5, 7)
BLOCK = [3, 4]  # blocks 0/0 (3x4), 1/0 (2x4, edge), 0/1 (3x3, edge), 1/1 (2x3, edge)
DTYPES = {"uint16": ">u2", "float32": ">f4"}


def _values(data_type: str) -> np.ndarray:
    n = int(np.prod(DIMS))
    if data_type == "uint16":
        flat = (np.arange(n, dtype=np.uint32) * 1031 + 258) % 65536
    else:
        flat = np.arange(n, dtype=np.float64) * -2.25 + 1.5
        flat[1] = 1e6
    return flat.astype(DTYPES[data_type].replace(">", "<")).reshape(DIMS)


def _header(sizes, mode: int, num_elements: int | None = None) -> bytes:
    out = mode.to_bytes(2, "big") + len(sizes).to_bytes(2, "big")
    out += b"".join(int(s).to_bytes(4, "big") for s in sizes)
    if mode == 1:
        out += int(num_elements).to_bytes(4, "big")
    return out


def _payload(block: np.ndarray, data_type: str) -> bytes:
    """Big-endian elements, the first (listed) dimension fastest."""
    return np.asarray(block, dtype=DTYPES[data_type]).flatten(order="F").tobytes()


def _write_dataset(path: Path, data: np.ndarray, data_type: str, compression: str, mode: int,
                   extra: int = 0) -> None:
    """Every block of `data` (edge blocks truncated), in header `mode`; with `extra`, block 0/0
    claims and holds `extra` more elements than its size."""
    path.mkdir(parents=True)
    comp = {"type": "raw"} if compression == "raw" else {"type": "gzip", "level": 6, "useZlib": False}
    (path / "attributes.json").write_text(json.dumps(
        {"dimensions": DIMS, "blockSize": BLOCK, "dataType": data_type, "compression": comp}))
    for i in range(-(-DIMS[0] // BLOCK[0])):
        for j in range(-(-DIMS[1] // BLOCK[1])):
            block = data[i * BLOCK[0]:(i + 1) * BLOCK[0], j * BLOCK[1]:(j + 1) * BLOCK[1]]
            payload = _payload(block, data_type)
            count = block.size
            if extra and (i, j) == (0, 0):
                more = np.arange(extra, dtype=DTYPES[data_type]) + 7
                payload += more.tobytes()
                count += extra
            if compression == "gzip":
                payload = gzip.compress(payload, mtime=0)
            (path / str(i)).mkdir(exist_ok=True)
            (path / str(i) / str(j)).write_bytes(_header(block.shape, mode, count) + payload)


@pytest.mark.parametrize("compression", ["raw", "gzip"])
@pytest.mark.parametrize("data_type", list(DTYPES))
def test_varlength_mode_blocks_read_like_mode_0(data_type, compression, tmp_path, nc):
    data = _values(data_type)
    mode0, mode1 = tmp_path / "c.n5" / "mode0", tmp_path / "c.n5" / "mode1"
    _write_dataset(mode0, data, data_type, compression, mode=0)
    _write_dataset(mode1, data, data_type, compression, mode=1)
    # tensorstore reads the mode-0 twin: the crafting is right.
    assert_same_array(cli_form(n5io.ts_read(mode0)), cli_form(data), "tensorstore, mode 0")
    assert (mode1 / "1" / "1").read_bytes()[:2] == b"\x00\x01"
    got = nc.get(mode1)
    assert_same_array(got, cli_form(data), "neurochunk get, mode 1")
    assert_same_array(got, nc.get(mode0), "mode 1 vs mode 0")
    assert_same_array(nc.get(mode1, region="1:4,2:6"), cli_form(data[1:4, 2:6]), "mode 1, region")


@pytest.mark.parametrize("compression", ["raw", "gzip"])
def test_varlength_block_with_too_many_elements_does_not_crash(compression, tmp_path, nc):
    data = _values("uint16")
    path = tmp_path / "c.n5" / "ds"
    _write_dataset(path, data, "uint16", compression, mode=1, extra=5)
    out = nc.scratch / "big.npy"
    proc = nc.run("get", path, "-o", out, check=False)
    assert "panicked" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr)
    if proc.returncode == 0:
        assert_same_array(np.load(out), cli_form(data), "leading elements of the oversized block")
    else:
        message = proc.stderr.strip()
        assert len(message.splitlines()) == 1, message
        assert "0/0" in message, f"error does not name block 0/0: {message!r}"
