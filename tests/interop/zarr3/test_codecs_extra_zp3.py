"""The numcodecs codecs beyond the core set (bitround, quantize, packbits, delta on bool,
jenkins_lookup3, fletcher32, adler32, pcodec, zfpy), in both directions against zarr-python 3,
on random data of each dtype the codec takes, with edge chunks.

pcodec and zfpy need the `pcodec` and `zfpy` packages (pinned in requirements-py312.txt); they
are imported unconditionally, so a missing package fails these tests instead of skipping them.

categorize: zarr-python 3 reads and writes it only in Zarr v2 arrays of `<U` text (neither
`|O` categorize nor `vlen-array` has a zarr-python 3 data type, and numcodecs has no Zarr v3
form of either), so that is what is checked here.
"""

from __future__ import annotations

import numcodecs
import numpy as np
import pcodec  # noqa: F401  (numcodecs' PCodec needs it; a missing package must fail)
import pytest
import zarr
import zfpy  # noqa: F401  (numcodecs' ZFPY needs it)
from zarr.codecs import BytesCodec

from ncli import assert_same_array, cli_form, load_json

SHAPE, CHUNKS = (13, 7), (5, 4)
RNG = np.random.default_rng(20261124)


def rand(dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.random(SHAPE) < 0.4
    if dt.kind == "f":
        return (RNG.standard_normal(SHAPE) * 100).astype(dt)
    info = np.iinfo(dt)
    return RNG.integers(max(info.min, -(10**6)), min(info.max, 10**6), SHAPE).astype(dt)


# (id, dtype, numcodecs codec as zarr-python 3 filter/serializer/compressor, --codec spec, exact)
CASES = [
    ("bitround-f2", "<f2", ("filters", numcodecs.BitRound(keepbits=5)), "bitround:5", True),
    ("bitround-f4", "<f4", ("filters", numcodecs.BitRound(keepbits=10)), "bitround:10", True),
    ("bitround-f8", "<f8", ("filters", numcodecs.BitRound(keepbits=20)), "bitround:20", True),
    ("quantize-f4", "<f4", ("filters", numcodecs.Quantize(digits=3, dtype="<f4")), "quantize:3", True),
    ("quantize-f8", "<f8", ("filters", numcodecs.Quantize(digits=2, dtype="<f8")), "quantize:2", True),
    ("packbits", "|b1", ("filters", numcodecs.PackBits()), "packbits", True),
    ("jenkins", "<i4", ("compressors", numcodecs.JenkinsLookup3()), "jenkins_lookup3", True),
    ("fletcher32", "<u2", ("compressors", numcodecs.Fletcher32()), "fletcher32", True),
    ("adler32", "<f8", ("compressors", numcodecs.Adler32()), "adler32", True),
]
for dt in ["<u2", "<i4", "<u8", "<f4", "<f8"]:
    CASES.append((f"pcodec-{dt[1:]}", dt, ("serializer", "pcodec"), "pcodec:8", True))
for dt in ["<i4", "<i8", "<f4", "<f8"]:
    CASES.append((f"zfpy-reversible-{dt[1:]}", dt, ("serializer", "zfpy"), "zfpy:reversible", True))
CASES.append(("zfpy-accuracy-f8", "<f8", ("serializer", "zfpy-acc"), "zfpy:accuracy:0.01", False))


def peer_codec(what):
    kind, codec = what
    if codec == "pcodec":
        from numcodecs.zarr3 import PCodec

        return "serializer", PCodec(level=8)
    if codec in ("zfpy", "zfpy-acc"):
        from numcodecs.zarr3 import ZFPY

        return "serializer", (ZFPY(mode=4, tolerance=-1) if codec == "zfpy" else ZFPY(mode=4, tolerance=0.01))
    from numcodecs import zarr3 as nz3

    wrapped = getattr(nz3, type(codec).__name__)(**{k: v for k, v in codec.get_config().items() if k != "id"})
    return kind, wrapped


def write_peer(path, data, what):
    kind, codec = peer_codec(what)
    kwargs = {"filters": None, "compressors": None, "serializer": BytesCodec()}
    kwargs[kind] = [codec] if kind != "serializer" else codec
    if kind == "filters":
        kwargs["filters"] = [codec]
    z = zarr.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype=data.dtype, zarr_format=3, **kwargs)
    z[...] = data
    return zarr.open_array(str(path), mode="r")[...]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_neurochunk_reads_zarr_python3(case, tmp_path, nc):
    name, dtype, what, _, _ = case
    data = rand(dtype)
    expected = write_peer(tmp_path / "peer.zarr", data, what)
    got = nc.get(tmp_path / "peer.zarr")
    assert_same_array(cli_form(got), cli_form(expected))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_zarr_python3_reads_neurochunk(case, tmp_path, nc):
    name, dtype, what, spec, exact = case
    data = rand(dtype)
    ours = tmp_path / "ours.zarr"
    nc.put(data, ours, "zarr3", chunks=CHUNKS, codec=spec)
    assert_reads_like_peer(ours, data, what, exact, tmp_path)


def assert_reads_like_peer(ours, data, what, exact, tmp_path):
    """zarr-python 3 reads `ours` as the peer's array of `data` with codec `what`."""
    got = zarr.open_array(str(ours), mode="r")[...]
    expected = write_peer(tmp_path / "peer.zarr", data, what)
    if exact:
        assert_same_array(cli_form(got), cli_form(expected))
        # Same codec, same data: the stored chunks are byte-identical.
        for key in ["c/0/0", "c/2/1"]:
            assert (ours / key).read_bytes() == (tmp_path / "peer.zarr" / key).read_bytes(), key
    else:
        assert np.all(np.abs(got - data) <= 0.01)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_convert_codec_forms_read_in_zarr_python3(case, tmp_path, nc):
    """`neurochunk convert --codec SPEC` re-encodes a plain array with the codec, as `put` does."""
    name, dtype, what, spec, exact = case
    data = rand(dtype)
    plain = tmp_path / "plain.zarr"
    nc.put(data, plain, "zarr2", chunks=CHUNKS, codec="none")
    conv = tmp_path / "conv.zarr"
    nc.convert(plain, conv, "zarr3", codec=spec)
    assert_reads_like_peer(conv, data, what, exact, tmp_path)


LABELS = ["ß", "bar", "baz", "quux", "a longer label"]


def test_categorize_in_zarr_v2_both_directions(tmp_path, nc):
    picks = RNG.integers(0, len(LABELS), (11, 7))
    data = np.array(LABELS)[picks].astype("<U14")
    peer = tmp_path / "peer.zarr"
    z = zarr.create_array(str(peer), shape=data.shape, chunks=(4, 3), dtype="<U14", zarr_format=2,
                          filters=[numcodecs.Categorize(LABELS, dtype="<U14")], compressors=None)
    z[...] = data
    assert_same_array(nc.get(peer), cli_form(data))
    ours = tmp_path / "ours.zarr"
    nc.put(data, ours, "zarr2", chunks=(4, 3), codec="categorize,zstd:1")
    assert load_json(ours / ".zarray")["filters"][0]["id"] == "categorize"
    assert_same_array(cli_form(zarr.open_array(str(ours), mode="r")[...]), cli_form(data))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_zarrs_pipeline_reads_neurochunk_where_it_reads_zarr_python3(case, tmp_path, nc):
    """zarr-python 3 with zarrs-python's codec pipeline (strict: no fall-back to zarr-python's
    own codecs). zarrs-python 0.2.3 decodes pcodec; for the other codecs of this set it refuses
    the metadata of zarr-python's own arrays as well, which this checks too, so the day it
    reads them, it must read ours equal."""
    name, dtype, what, spec, exact = case
    data = rand(dtype)
    ours = tmp_path / "ours.zarr"
    nc.put(data, ours, "zarr3", chunks=CHUNKS, codec=spec)
    expected = write_peer(tmp_path / "peer.zarr", data, what)
    with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}):
        outcomes = []
        for path in (ours, tmp_path / "peer.zarr"):
            try:
                outcomes.append(zarr.open_array(str(path), mode="r")[...])
            except Exception as err:  # noqa: BLE001 - the peer's refusal, compared below
                outcomes.append(type(err).__name__)
    if name.startswith("pcodec"):
        assert not isinstance(outcomes[0], str), outcomes[0]
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1] == "UnsupportedMetadataError"
        return
    assert_same_array(cli_form(outcomes[0]), cli_form(expected))
    assert_same_array(cli_form(outcomes[1]), cli_form(expected))
