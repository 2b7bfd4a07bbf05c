"""The numcodecs codecs beyond the core set (bitround, quantize, packbits, delta on bool,
jenkins_lookup3, fletcher32, adler32, pcodec, zfpy), in both directions against zarr-python 2.18
with numcodecs 0.15, on random data of each dtype the codec takes, with edge chunks.

pcodec and zfpy need the `pcodec` and `zfpy` packages pinned in requirements-py311.txt; they
are imported unconditionally, so a missing package fails these tests instead of skipping them.

pcodec: numcodecs 0.15 takes pcodec 0.3 (0.3.6 is the newest 0.3 release), which writes the
pco format of before 1.0, while neurochunk writes with pco 1.1. The two formats are
compatible for what numcodecs writes (pcodec 0.3.6 reads pco 1.1's chunks and pco 1.1 reads
pcodec 0.3.6's), but the bytes differ, so pcodec is checked by decoding in both directions,
never by comparing chunks.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pcodec  # noqa: F401  (numcodecs.PCodec needs it; a missing package must fail)
import pytest
import zarr
import zfpy  # noqa: F401  (numcodecs.ZFPY needs it)

from ncli import assert_same_array, cli_form, load_json

SHAPE, CHUNKS = (13, 7), (5, 4)
SHAPE3, CHUNKS3 = (9, 6, 11), (4, 4, 5)
RNG = np.random.default_rng(20261124)
# One full chunk and one edge chunk of each layout.
KEYS = {2: ["0.0", "2.1"], 3: ["0.0.0", "2.1.2"]}


def rand(dtype: str, shape=SHAPE) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.random(shape) < 0.4
    if dt.kind == "f":
        return (RNG.standard_normal(shape) * 100).astype(dt)
    info = np.iinfo(dt)
    return RNG.integers(max(info.min, -(10**6)), min(info.max, 10**6), shape).astype(dt)


class Case:
    def __init__(self, name, dtype, where, codec, spec, *, check="bytes", shape=SHAPE, chunks=CHUNKS, tol=0.0):
        self.name, self.dtype, self.where, self.codec, self.spec = name, dtype, where, codec, spec
        # "bytes": chunks byte-identical with numcodecs'; "values": equal values;
        # "tolerance": |ours - data| <= tol.
        self.check, self.shape, self.chunks, self.tol = check, shape, chunks, tol


CASES = [
    Case("bitround-f2", "<f2", "filters", numcodecs.BitRound(keepbits=5), "bitround:5"),
    Case("bitround-f4", "<f4", "filters", numcodecs.BitRound(keepbits=10), "bitround:10,zstd:3"),
    Case("bitround-f8", "<f8", "filters", numcodecs.BitRound(keepbits=20), "bitround:20"),
    Case("quantize-f4", "<f4", "filters", numcodecs.Quantize(digits=3, dtype="<f4"), "quantize:3"),
    Case("quantize-f8", "<f8", "filters", numcodecs.Quantize(digits=2, dtype="<f8"), "quantize:2,zlib:1"),
    Case("packbits", "|b1", "filters", numcodecs.PackBits(), "packbits"),
    Case("packbits-3d", "|b1", "filters", numcodecs.PackBits(), "packbits", shape=SHAPE3, chunks=CHUNKS3),
    Case("delta-bool", "|b1", "filters", numcodecs.Delta(dtype="|b1"), None),
    Case("jenkins", "<i4", "compressor", numcodecs.JenkinsLookup3(), "jenkins_lookup3"),
    Case("fletcher32", "<u2", "compressor", numcodecs.Fletcher32(), "fletcher32"),
    Case("adler32", "<f8", "compressor", numcodecs.Adler32(), "adler32"),
]
for _dt in ["<u2", "<i2", "<u4", "<i4", "<u8", "<i8", "<f2", "<f4", "<f8"]:
    CASES.append(Case(f"pcodec-{_dt[1:]}", _dt, "compressor", numcodecs.PCodec(level=8), "pcodec:8", check="values"))
CASES.append(Case("pcodec-3d-l3", "<f4", "compressor", numcodecs.PCodec(level=3), "pcodec:3", check="values", shape=SHAPE3, chunks=CHUNKS3))
for _dt in ["<i4", "<i8", "<f4", "<f8"]:
    CASES.append(Case(f"zfpy-reversible-{_dt[1:]}", _dt, "compressor", numcodecs.ZFPY(mode=4, tolerance=-1), "zfpy"))
CASES += [
    Case("zfpy-reversible-3d", "<f4", "compressor", numcodecs.ZFPY(mode=4, tolerance=-1), "zfpy:reversible", shape=SHAPE3, chunks=CHUNKS3),
    Case("zfpy-accuracy-f8", "<f8", "compressor", numcodecs.ZFPY(mode=4, tolerance=0.01), "zfpy:accuracy:0.01", tol=0.01),
    Case("zfpy-rate-f4", "<f4", "compressor", numcodecs.ZFPY(mode=2, rate=12), "zfpy:rate:12"),
    Case("zfpy-precision-f8-3d", "<f8", "compressor", numcodecs.ZFPY(mode=3, precision=20), "zfpy:precision:20", shape=SHAPE3, chunks=CHUNKS3),
    Case("zfpy-accuracy-i8", "<i8", "compressor", numcodecs.ZFPY(mode=4, tolerance=3.0), "zfpy:accuracy:3"),
]


def write_peer(path, data, case: Case):
    kwargs = {"filters": None, "compressor": None}
    kwargs[case.where] = [case.codec] if case.where == "filters" else case.codec
    z = zarr.open_array(str(path), mode="w", shape=data.shape, chunks=case.chunks, dtype=data.dtype, **kwargs)
    z[...] = data
    return zarr.open_array(str(path), mode="r")[...]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_neurochunk_reads_zarr_python2(case: Case, tmp_path, nc):
    data = rand(case.dtype, case.shape)
    expected = write_peer(tmp_path / "peer.zarr", data, case)
    if case.name == "delta-bool":
        # numcodecs stores exclusive-or differences but decodes them with a logical-or
        # cumulative sum, so zarr-python 2 reads back something else than it wrote;
        # neurochunk undoes the exclusive or and reads the data that was written.
        expected = data
    assert_same_array(cli_form(nc.get(tmp_path / "peer.zarr")), cli_form(expected))
    # A region crossing edge chunks.
    region = ",".join(f"{c - 1}:{s}" for c, s in zip(case.chunks, case.shape))
    sel = tuple(slice(c - 1, s) for c, s in zip(case.chunks, case.shape))
    assert_same_array(cli_form(nc.get(tmp_path / "peer.zarr", region=region)), cli_form(expected[sel]))


WRITE_CASES = [c for c in CASES if c.spec is not None]


@pytest.mark.parametrize("case", WRITE_CASES, ids=lambda c: c.name)
def test_zarr_python2_reads_neurochunk(case: Case, tmp_path, nc):
    data = rand(case.dtype, case.shape)
    ours = tmp_path / "ours.zarr"
    nc.put(data, ours, "zarr2", chunks=case.chunks, codec=case.spec)
    meta = load_json(ours / ".zarray")
    ids = [f["id"] for f in meta["filters"] or []] + ([meta["compressor"]["id"]] if meta["compressor"] else [])
    assert case.codec.codec_id in ids, meta
    got = zarr.open_array(str(ours), mode="r")[...]
    if case.tol:
        assert got.dtype == data.dtype
        assert np.all(np.abs(got - data) <= case.tol)
        return
    expected = write_peer(tmp_path / "peer.zarr", data, case)
    assert_same_array(cli_form(got), cli_form(expected))
    if case.check == "bytes" and case.spec.split(",")[0] == case.spec:
        # Same single codec, same data: the stored chunks are byte-identical.
        for key in KEYS[len(case.shape)]:
            assert (ours / key).read_bytes() == (tmp_path / "peer.zarr" / key).read_bytes(), key


def test_zarr_python2_writes_into_neurochunk_zfpy_reversible(tmp_path, nc):
    """Reversible zfpy is stored as numcodecs stores it (mode 4, every parameter -1), so
    zarr-python 2 can also write into an array neurochunk created."""
    data = rand("<f8")
    ours = tmp_path / "ours.zarr"
    nc.put(data, ours, "zarr2", chunks=CHUNKS, codec="zfpy")
    z = zarr.open_array(str(ours), mode="r+")
    z[1:3, 2:6] = -data[1:3, 2:6]
    data[1:3, 2:6] *= -1
    assert_same_array(cli_form(nc.get(ours)), cli_form(data))


@pytest.mark.parametrize("level", [0, 8, 12])
def test_pcodec_03_and_pco_11_read_each_other(level, tmp_path, nc):
    """Large chunks (many pages, every mode pcodec's auto picks) in both directions."""
    n = 300_000
    data = np.concatenate(
        [
            np.round(RNG.standard_normal(n // 3) * 10, 1),  # decimal-ish floats (float mult mode)
            np.arange(n // 3) * 7.0 + 0.5,  # smooth (delta)
            RNG.integers(0, 2**40, n - 2 * (n // 3)).astype("<f8"),  # integers as floats
        ]
    )
    peer = tmp_path / "peer.zarr"
    z = zarr.open_array(str(peer), mode="w", shape=data.shape, chunks=(n // 2,), dtype="<f8", compressor=numcodecs.PCodec(level=level))
    z[...] = data
    assert_same_array(nc.get(peer), data)
    ours = tmp_path / "ours.zarr"
    nc.put(data, ours, "zarr2", chunks=(n // 2,), codec=f"pcodec:{level}")
    assert_same_array(zarr.open_array(str(ours), mode="r")[...], data)


# --------------------------------------------------------------------------------------------
# categorize and vlen-array
# --------------------------------------------------------------------------------------------

LABELS = ["ß", "bar", "baz", "quux", "a longer label"]


def label_data(shape=(11, 7)) -> np.ndarray:
    picks = RNG.integers(0, len(LABELS) + 1, shape)
    return np.array([([""] + LABELS)[i] for i in picks.ravel()], dtype=object).reshape(shape)


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("dtype,astype", [("|O", "|u1"), ("<U14", "|u1"), ("<U14", "<u2"), ("|O", ">u2")])
def test_categorize_both_directions(dtype, astype, tmp_path, nc):
    data = label_data()
    typed = data if dtype == "|O" else data.astype(dtype)
    peer = tmp_path / "peer.zarr"
    z = zarr.open_array(str(peer), mode="w", shape=data.shape, chunks=(4, 3), dtype=object if dtype == "|O" else dtype,
                        filters=[numcodecs.Categorize(LABELS, dtype=dtype, astype=astype)], compressor=numcodecs.Zstd(1))
    z[...] = typed
    assert_same_array(nc.get(peer), cli_form(typed))
    assert_same_array(nc.get(peer, region="3:9,2:"), cli_form(typed[3:9, 2:]))
    # neurochunk writes: labels from the data, in order of first appearance.
    ours = tmp_path / "ours.zarr"
    nc.put(cli_form(typed), ours, "zarr2", chunks=(4, 3), codec="categorize,zstd:1", vlen=dtype == "|O")
    meta = load_json(ours / ".zarray")
    cat = meta["filters"][0]
    assert cat["id"] == "categorize" and cat["astype"] == "|u1", meta
    assert sorted(cat["labels"]) == sorted(LABELS)
    assert meta["dtype"] == ("|O" if dtype == "|O" else "<U14"), meta
    got = zarr.open_array(str(ours), mode="r")[...]
    assert_same_array(cli_form(got), cli_form(typed))
    # With numcodecs' labels, the chunks are the bytes numcodecs writes.
    conv = tmp_path / "conv.zarr"
    nc.convert(peer, conv, "zarr2")
    for key in ["0.0", "2.2"]:
        assert (conv / key).read_bytes() == (peer / key).read_bytes(), key


def ragged(n: int, dtype: str) -> np.ndarray:
    out = np.empty(n, dtype=object)
    for i in range(n):
        k = int(RNG.integers(0, 6))
        out[i] = (RNG.standard_normal(k) * 50).astype(dtype) if dtype[1] == "f" else RNG.integers(-99, 99, k).astype(dtype)
    return out


def load_ragged(path) -> list:
    npz = np.load(path, allow_pickle=False)
    values, offsets, shape = npz["values"], npz["offsets"], npz["shape"]
    assert offsets.dtype == np.int64 and offsets[0] == 0 and offsets[-1] == len(values)
    items = [values[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
    return items, tuple(shape), values.dtype


@pytest.mark.parametrize("dtype", ["<i4", "<f8", "|u1", ">i2"])
def test_vlen_array_both_directions(dtype, tmp_path, nc):
    data = ragged(23, dtype)
    peer = tmp_path / "peer.zarr"
    z = zarr.open_array(str(peer), mode="w", shape=data.shape, chunks=(5,), dtype=object, object_codec=numcodecs.VLenArray(dtype))
    z[...] = data
    # neurochunk get writes values / offsets / shape (no pickle).
    out = tmp_path / "got.npz"
    nc.run("get", peer, "--region=3:19", "-o", out)
    items, shape, vdtype = load_ragged(out)
    assert shape == (16,) and vdtype == np.dtype(dtype).newbyteorder("<")
    for got, want in zip(items, data[3:19], strict=True):
        np.testing.assert_array_equal(got, want)
    # A .npy output is refused with the way out.
    err = nc.fails("get", peer, "-o", tmp_path / "x.npy", names=[".npz"])
    assert "vlen-array" in err
    # neurochunk put from the .npz, zarr-python 2 reads it; same chunks as numcodecs'.
    nc.run("get", peer, "-o", tmp_path / "all.npz")
    ours = tmp_path / "ours.zarr"
    nc.run("put", tmp_path / "all.npz", ours, "--format", "zarr2", "--chunks", "5", "--codec", "none")
    back = zarr.open_array(str(ours), mode="r")[...]
    for got, want in zip(back, data, strict=True):
        np.testing.assert_array_equal(got, want)
    z2 = zarr.open_array(str(tmp_path / "peer-raw.zarr"), mode="w", shape=data.shape, chunks=(5,), dtype=object,
                         object_codec=numcodecs.VLenArray("<" + dtype[1:] if dtype[0] == ">" else dtype), compressor=None)
    z2[...] = data
    for key in ["0", "2"]:  # full chunks (edge chunks are padded with the fill value)
        assert (ours / key).read_bytes() == (tmp_path / "peer-raw.zarr" / key).read_bytes(), key
