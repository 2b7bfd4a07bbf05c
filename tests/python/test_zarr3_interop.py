"""The package against zarr-python 3 on the same files, both directions: arrays we write are
read by zarr-python and arrays zarr-python writes are read by us (Zarr v2, v3, sharded v3),
for every data type both hold; groups and attributes too. N5 (which zarr-python 3 lacks) is
compared with our own Zarr reading of the same data."""

from __future__ import annotations

import numpy as np
import pytest
import zarr
from zarr.codecs import BloscCodec, ZstdCodec

import neurochunk as nc

DTYPES = [
    "bool", "int8", "uint16", "int32", "uint64", "float16", "float32", "float64",
    "complex64", "complex128", "datetime64[ns]", "timedelta64[s]", "S5", "U4",
]
LAYOUTS = [
    pytest.param(2, None, id="v2"),
    pytest.param(3, None, id="v3"),
    pytest.param(3, (6, 8), id="v3-sharded"),
]


def values(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    base = np.arange(n)
    if dt.kind == "b":
        v = base % 3 == 0
    elif dt.kind in "SU":
        v = np.array([f"e{i % 50}" for i in base], dtype=dt)
    elif dt.kind == "c":
        v = (base + 0.5j * base).astype(dt)
    else:
        v = (base * 7 % 251).astype(dt)
    return v.reshape(shape)


@pytest.mark.parametrize("zarr_format,shards", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_we_write_zarr_reads(tmp_path, dtype, zarr_format, shards):
    data = values(dtype, (12, 16))
    a = nc.create_array(tmp_path / "a", shape=data.shape, dtype=dtype, chunks=(3, 4), shards=shards, zarr_format=zarr_format, attributes={"k": [1, "x"]})
    a[...] = data
    a[2:9:3, ::-5] = data[:3, :4][:, ::-1]
    expected = data.copy()
    expected[2:9:3, ::-5] = data[:3, :4][:, ::-1]
    z = zarr.open_array(tmp_path / "a", mode="r")
    assert z.shape == data.shape and z.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(z[...], expected)
    assert dict(z.attrs) == {"k": [1, "x"]}


@pytest.mark.parametrize("zarr_format,shards", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_zarr_writes_we_read(tmp_path, dtype, zarr_format, shards):
    data = values(dtype, (12, 16))
    kwargs = {} if shards is None else {"shards": shards}
    z = zarr.create_array(tmp_path / "z", shape=data.shape, dtype=dtype, chunks=(3, 4), zarr_format=zarr_format, **kwargs)
    z[...] = data
    z.attrs["who"] = "zarr"
    a = nc.open(tmp_path / "z")
    assert isinstance(a, nc.Array)
    assert a.dtype == z.dtype and a.chunks == (3, 4) and a.shards == (None if shards is None else shards)
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[-1:0:-2, 3], data[-1:0:-2, 3])
    np.testing.assert_array_equal(a.oindex[[0, 11, 5], [15, 0]], data[np.ix_([0, 11, 5], [15, 0])])
    assert a.attrs["who"] == "zarr"


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_strings_both_directions(tmp_path, zarr_format):
    words = np.array(["", "α", "beta", "a longer string", "x"] * 4, dtype=object).reshape(4, 5)
    a = nc.create_array(tmp_path / "ours", shape=(4, 5), dtype=str, chunks=(2, 2), zarr_format=zarr_format)
    a[...] = words
    assert zarr.open_array(tmp_path / "ours", mode="r")[...].tolist() == words.tolist()
    z = zarr.create_array(tmp_path / "theirs", shape=(4, 5), dtype=str, chunks=(3, 3), zarr_format=zarr_format)
    z[...] = words.astype(str)
    assert nc.open(tmp_path / "theirs")[...].tolist() == words.tolist()


def test_structured_v2_both_directions(tmp_path):
    dt = np.dtype([("x", "<f8"), ("id", "<u2"), ("name", "S4")])
    data = np.array([(i * 0.5, i, f"n{i}".encode()) for i in range(10)], dtype=dt)
    a = nc.create_array(tmp_path / "ours", shape=(10,), dtype=dt, chunks=(4,), zarr_format=2)
    a[...] = data
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "ours", mode="r")[...], data)
    z = zarr.create_array(tmp_path / "theirs", shape=(10,), dtype=dt, chunks=(3,), zarr_format=2)
    z[...] = data
    np.testing.assert_array_equal(nc.open(tmp_path / "theirs")[...], data)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_compressors_both_directions(tmp_path, zarr_format):
    data = np.arange(2000, dtype="int64").reshape(40, 50)
    for i, comp in enumerate(["zstd:5", "blosc:lz4:5:shuffle", "gzip:6", "zlib:1"]):
        a = nc.create_array(tmp_path / f"o{i}", shape=data.shape, dtype=data.dtype, chunks=(10, 10), compressors=comp, zarr_format=zarr_format)
        a[...] = data
        np.testing.assert_array_equal(zarr.open_array(tmp_path / f"o{i}", mode="r")[...], data)
    codecs = [ZstdCodec(level=3)] if zarr_format == 3 else None
    z = zarr.create_array(tmp_path / "z", shape=data.shape, dtype=data.dtype, chunks=(10, 10), compressors=codecs or "auto", zarr_format=zarr_format)
    z[...] = data
    np.testing.assert_array_equal(nc.open(tmp_path / "z")[...], data)
    # zarr-python's own codec objects are accepted as compressors.
    if zarr_format == 3:
        a = nc.create_array(tmp_path / "objs", shape=(5,), dtype="f4", compressors=[BloscCodec(cname="zstd", clevel=3)])
        a[...] = 1.5
        assert (zarr.open_array(tmp_path / "objs", mode="r")[...] == 1.5).all()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_hierarchies_both_directions(tmp_path, zarr_format):
    g = nc.create_group(tmp_path / "ours", zarr_format=zarr_format, attributes={"top": 1})
    g.create_group("a", attributes={"mid": 2}).create_array("x", shape=(3,), dtype="i2")[...] = [1, 2, 3]
    g.consolidate()
    z = zarr.open_group(tmp_path / "ours", mode="r")
    assert z.attrs["top"] == 1 and z["a"].attrs["mid"] == 2
    assert z["a/x"][...].tolist() == [1, 2, 3]
    zc = zarr.open_consolidated(tmp_path / "ours", zarr_format=zarr_format)
    assert sorted(k for k, _ in zc.members(max_depth=None)) == ["a", "a/x"]

    t = zarr.open_group(tmp_path / "theirs", mode="w", zarr_format=zarr_format)
    t.attrs["top"] = "z"
    t.create_group("g1").create_array("y", shape=(2, 2), dtype="f8")[...] = 2.0
    t.create_array("w", shape=(4,), dtype="u1")
    ours = nc.open(tmp_path / "theirs")
    assert isinstance(ours, nc.Group)
    assert list(ours) == ["g1", "w"] and ours.attrs["top"] == "z"
    assert (ours["g1/y"][...] == 2.0).all() and (ours["w"][...] == 0).all()


def test_n5_matches_our_zarr(tmp_path):
    data = np.arange(30 * 20, dtype="uint16").reshape(30, 20)
    z = nc.create_array(tmp_path / "z.zarr", shape=data.shape, dtype=data.dtype, chunks=(7, 6))
    z[...] = data
    nc.convert(tmp_path / "z.zarr", tmp_path / "n.n5", format="n5")
    n = nc.open(tmp_path / "n.n5", mode="r+")
    assert isinstance(n, nc.Array) and n.zarr_format == "n5"
    np.testing.assert_array_equal(n[...], z[...])
    np.testing.assert_array_equal(n[5:29:4, ::-3], data[5:29:4, ::-3])
    n[0:7, 0:6] = 9
    data[0:7, 0:6] = 9
    np.testing.assert_array_equal(nc.open(tmp_path / "n.n5")[...], data)


def _numcodecs_cases() -> list:
    """(dtype, zarr-python 3 codec arguments, ours for the same chain, lossless) of the numcodecs
    filters, serializers and checksums; ours in every spelling the package takes."""
    import numcodecs
    import pcodec  # noqa: F401  (numcodecs' PCodec needs it: a missing package must fail)
    import zfpy  # noqa: F401
    from numcodecs import zarr3 as nz3

    return [
        ("float32", {"filters": [nz3.BitRound(keepbits=10)]}, {"filters": [numcodecs.BitRound(keepbits=10)]}, True),
        ("float64", {"filters": [nz3.Quantize(digits=3, dtype="<f8")]},
         {"filters": [{"id": "quantize", "digits": 3, "dtype": "<f8"}]}, True),
        ("bool", {"filters": [nz3.PackBits()]}, {"filters": "packbits"}, True),
        ("uint16", {"serializer": nz3.PCodec(level=8)}, {"serializer": nz3.PCodec(level=8)}, True),
        ("float64", {"serializer": nz3.PCodec(level=3)}, {"serializer": "pcodec:3"}, True),
        ("float32", {"serializer": nz3.ZFPY(mode=4, tolerance=-1)}, {"serializer": "zfpy"}, True),
        ("int64", {"serializer": nz3.ZFPY(mode=4, tolerance=-1)}, {"serializer": {"id": "zfpy"}}, True),
        # Lossy: within the tolerance, not necessarily the same bytes.
        ("float64", {"serializer": nz3.ZFPY(mode=4, tolerance=0.01)}, {"serializer": nz3.ZFPY(mode=4, tolerance=0.01)}, False),
        ("int32", {"compressors": [nz3.JenkinsLookup3(), nz3.Fletcher32()]},
         {"compressors": [numcodecs.JenkinsLookup3(), "fletcher32"]}, True),
        ("uint8", {"compressors": [nz3.Adler32()]}, {"compressors": "adler32"}, True),
    ]


@pytest.mark.parametrize("case", range(10))
def test_numcodecs_filters_and_serializers_both_directions(tmp_path, case):
    dtype, theirs, ours, lossless = _numcodecs_cases()[case]
    data = values(dtype, (23, 9))
    if np.dtype(dtype).kind == "f":
        data = data * np.asarray(1.0173, dtype=dtype) - np.asarray(100, dtype=dtype)
    kwargs = dict(shape=data.shape, dtype=data.dtype, chunks=(10, 4), zarr_format=3)
    z = zarr.create_array(tmp_path / "theirs", compressors=theirs.pop("compressors", None), **theirs, **kwargs)
    z[...] = data
    a = nc.create_array(tmp_path / "ours", compressors=ours.pop("compressors", []), **ours, **kwargs)
    a[...] = data
    expected = zarr.open_array(tmp_path / "theirs", mode="r")[...]
    np.testing.assert_array_equal(nc.open(tmp_path / "theirs")[...], expected)
    got = zarr.open_array(tmp_path / "ours", mode="r")[...]
    np.testing.assert_array_equal(got, a[...])
    if not lossless:
        assert np.max(np.abs(got - data)) <= 0.01
        return
    # The same codecs on the same data: the same stored chunks (all-fill chunks skipped by
    # both), read the same by both.
    ours_chunks = sorted(p.relative_to(tmp_path / "ours") for p in (tmp_path / "ours" / "c").rglob("*") if p.is_file())
    theirs_chunks = sorted(p.relative_to(tmp_path / "theirs") for p in (tmp_path / "theirs" / "c").rglob("*") if p.is_file())
    assert ours_chunks == theirs_chunks and len(ours_chunks) > 3
    for key in ours_chunks:
        assert (tmp_path / "ours" / key).read_bytes() == (tmp_path / "theirs" / key).read_bytes(), key
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_structured_fields_both_directions(tmp_path, zarr_format):
    dt = np.dtype([("a", "<i4"), ("b", "<f8")])
    data = np.zeros((6, 4), dtype=dt)
    data["a"] = np.arange(24).reshape(6, 4)
    data["b"] = np.arange(24).reshape(6, 4) / 8
    z = zarr.create_array(tmp_path / "s", shape=data.shape, dtype=dt, chunks=(3, 2), zarr_format=zarr_format)
    z[...] = data
    ours = nc.open(tmp_path / "s", mode="r+")
    np.testing.assert_array_equal(ours["b", 1:5, ::3], data["b"][1:5, ::3])
    ours["a", 2] = -1
    ours.oindex[[0, 5], [3]] = np.array([[(7, 0.5)], [(8, 1.5)]], dtype=dt)
    data["a"][2] = -1
    data[np.ix_([0, 5], [3])] = np.array([[(7, 0.5)], [(8, 1.5)]], dtype=dt)
    np.testing.assert_array_equal(zarr.open_array(tmp_path / "s", mode="r")[...], data)
