"""The Python API on its own: every dtype in every format, groups, attributes, errors, modes,
conversion, resizing, pickling, large reads in slabs."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import neurochunk as nc

FORMATS = [2, 3, "n5"]


def sample(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """Deterministic values of any dtype."""
    n = int(np.prod(shape))
    rng = np.random.default_rng(7)
    if dtype.fields is not None:
        out = np.zeros(n, dtype=dtype)
        for name in dtype.names:
            out[name] = sample(dtype.fields[name][0], (n,))
        return out.reshape(shape)
    kind = dtype.kind
    if kind == "b":
        v = rng.integers(0, 2, n).astype(bool)
    elif kind in "iu":
        info = np.iinfo(dtype)
        v = rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), n, dtype=np.int64, endpoint=True).astype(dtype)
    elif kind == "f":
        v = rng.normal(size=n).astype(dtype)
    elif kind == "c":
        v = (rng.normal(size=n) + 1j * rng.normal(size=n)).astype(dtype)
    elif kind in "Mm":
        v = rng.integers(-(10**12), 10**12, n).astype(dtype)
    elif kind == "S":
        v = np.array([f"b{i % 97}".encode()[: dtype.itemsize] for i in range(n)], dtype=dtype)
    elif kind == "U":
        v = np.array([f"ü{i % 89}"[: dtype.itemsize // 4] for i in range(n)], dtype=dtype)
    elif kind == "V":
        v = np.frombuffer(rng.bytes(n * dtype.itemsize), dtype=dtype)
    else:
        raise AssertionError(dtype)
    return v.reshape(shape)


FIXED_DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
    "datetime64[ns]", "datetime64[D]", "timedelta64[ms]", "S7", "U5", "V6",
    [("x", "<f4"), ("n", "<i2"), ("tag", "S3")],
    ">i4", ">f8",
]


def n5_holds(dt: np.dtype) -> bool:
    """N5 holds integers, float32 and float64 only."""
    return dt.fields is None and (dt.kind in "iu" or dt in (np.dtype("f4"), np.dtype("f8"), np.dtype(">f8")))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", FIXED_DTYPES, ids=str)
def test_every_fixed_dtype_round_trips(tmp_path, fmt, dtype):
    dt = np.dtype(dtype)
    if fmt == "n5" and not n5_holds(dt):
        with pytest.raises(nc.InvalidInputError):
            nc.create_array(tmp_path / "a", shape=(5, 6), dtype=dt, zarr_format=fmt)
        return
    data = sample(dt, (11, 6))
    a = nc.create_array(tmp_path / "a", shape=data.shape, dtype=dt, chunks=(4, 5), zarr_format=fmt)
    assert a.dtype == dt.newbyteorder("<") if dt.byteorder == ">" else a.dtype == dt
    a[...] = data
    b = nc.open(tmp_path / "a")
    assert isinstance(b, nc.Array)
    got = b[...]
    assert got.dtype == a.dtype
    np.testing.assert_array_equal(got, data.astype(a.dtype))
    np.testing.assert_array_equal(np.asarray(b)[2:9:3, ::-2], data[2:9:3, ::-2].astype(a.dtype))


@pytest.mark.parametrize("fmt", [2, 3])
@pytest.mark.parametrize("kind", [str, bytes])
def test_variable_length_strings_and_bytes(tmp_path, fmt, kind):
    values = ["", "a", "ünï", "longer text " * 5, "z"] * 3
    data = np.array([kind(v, "utf-8") if kind is bytes else v for v in values], dtype=object).reshape(3, 5)
    a = nc.create_array(tmp_path / "s", shape=(3, 5), dtype=kind, chunks=(2, 2), zarr_format=fmt)
    assert a.dtype == np.dtype(object)
    a[...] = data
    got = nc.open(tmp_path / "s")[...]
    assert got.dtype == object
    assert got.tolist() == data.tolist()
    assert a[1, ::-2].tolist() == data[1, ::-2].tolist()
    a[0, 1] = kind("x", "utf-8") if kind is bytes else "x"
    assert a[0, 1] == (b"x" if kind is bytes else "x")
    with pytest.raises(nc.InvalidInputError):
        a[0, 0] = 5


def test_scalars_fill_values_and_zero_d(tmp_path):
    a = nc.create_array(tmp_path / "f", shape=(10,), dtype="float32", chunks=(3,), fill_value=np.nan)
    assert np.isnan(a.fill_value)
    assert np.isnan(a[...]).all()
    a[4] = 1.5
    assert isinstance(a[4], np.float32) and a[4] == 1.5
    assert a[-6] == 1.5
    s = nc.create_array(tmp_path / "s", shape=(), dtype="int64", fill_value=-3)
    assert s[()] == -3 and s[...].shape == ()
    s[...] = 7
    assert int(np.asarray(s)) == 7
    t = nc.create_array(tmp_path / "t", shape=(2,), dtype=str, fill_value="none")
    assert t.fill_value == "none" and t[...].tolist() == ["none", "none"]


def test_properties_and_info(tmp_path):
    a = nc.create_array(
        tmp_path / "v", shape=(40, 30, 20), dtype="uint16", chunks=(5, 10, 10), shards=(10, 30, 20),
        compressors="zstd:5,crc32c", dimension_names=["z", "y", "x"], attributes={"unit": "um"},
    )
    assert a.shape == (40, 30, 20) and a.ndim == 3 and a.size == 24000 and a.nbytes == 48000
    assert a.chunks == (5, 10, 10) and a.shards == (10, 30, 20)
    assert a.dimension_names == ("z", "y", "x") and a.zarr_format == 3
    assert a.attrs["unit"] == "um" and len(a) == 40
    assert a.metadata["node_type"] == "array"
    assert "Shard shape" in a.info and "0 of 4" in a.info
    a[:10] = 1
    assert a.nchunks_initialized == 1
    v2 = nc.create_array(tmp_path / "v2", shape=(8,), dtype="<i4", compressors=[{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}], zarr_format=2)
    assert v2.metadata["compressor"]["id"] == "blosc"
    none = nc.create_array(tmp_path / "none", shape=(8,), dtype="i1", compressors=[], zarr_format=2)
    assert none.metadata["compressor"] is None


def test_attributes_persist_on_write(tmp_path):
    for fmt in FORMATS:
        a = nc.create_array(tmp_path / f"a{fmt}", shape=(2,), dtype="i4", zarr_format=fmt)
        a.attrs["x"] = [1, 2]
        a.attrs.update({"y": "z", "n": np.int64(3)})
        del a.attrs["x"]
        assert dict(nc.open(tmp_path / f"a{fmt}").attrs) == {"y": "z", "n": 3}
        with pytest.raises(nc.InvalidInputError):
            a.attrs["bad"] = float("nan")
    ro = nc.open(tmp_path / "a3", mode="r")
    with pytest.raises(nc.ReadOnlyError):
        ro.attrs["q"] = 1
    with pytest.raises(PermissionError):
        ro[0] = 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_groups(tmp_path, fmt):
    root = nc.create_group(tmp_path / "h", zarr_format=fmt, attributes={"a": 1})
    sub = root.create_group("sub", attributes={"b": 2})
    arr = sub.create_array("x", shape=(4, 4), dtype="int32", chunks=(2, 2))
    arr[...] = np.arange(16).reshape(4, 4)
    root.create_array("y", shape=(3,), dtype="float64")
    deep = root.create_group("p/q")
    assert deep.path == "p/q"
    g = nc.open(tmp_path / "h", mode="r+")
    assert isinstance(g, nc.Group) and g.zarr_format == fmt
    assert list(g) == ["p", "sub", "y"] and len(g) == 3
    assert "sub" in g and "sub/x" in g and "nope" not in g
    assert g["sub/x"][1, 1] == 5
    assert g["sub"].attrs["b"] == 2 and g.attrs["a"] == 1
    assert [n for n, _ in g.members()] == ["p", "sub", "y"]
    assert [n for n, _ in g.members(max_depth=None)] == ["p", "p/q", "sub", "sub/x", "y"]
    assert [n for n, _ in g.arrays()] == ["y"] and [n for n, _ in g.groups()] == ["p", "sub"]
    tree = g.tree()
    assert "x (4, 4) int32" in tree and "└── q" in tree
    with pytest.raises(KeyError):
        g["missing"]
    with pytest.raises(nc.NodeExistsError):
        g.create_array("y", shape=(1,), dtype="i1")
    g.create_array("y", shape=(1,), dtype="i1", overwrite=True)
    assert g["y"].dtype == np.dtype("i1")
    del g["p"]
    assert "p" not in g
    g.attrs["c"] = 3
    assert nc.open(tmp_path / "h").attrs.asdict() == {"a": 1, "c": 3}
    if fmt != "n5":
        assert g.consolidate() == 4  # the group itself, sub, sub/x, y
        assert "sub/x" in nc.open(tmp_path / "h")


def test_modes(tmp_path):
    p = tmp_path / "m.zarr"
    with pytest.raises(FileNotFoundError):
        nc.open(p)
    with pytest.raises(nc.NodeNotFoundError, match="m.zarr"):
        nc.open(p, mode="r+")
    g = nc.open(p, mode="a")
    assert isinstance(g, nc.Group)
    with pytest.raises(nc.NodeExistsError):
        nc.open(p, mode="w-")
    a = nc.open(p, mode="w", shape=(3,), dtype="u1", zarr_format=2)
    assert isinstance(a, nc.Array) and a.zarr_format == 2
    with pytest.raises(nc.InvalidInputError):
        nc.open(p, mode="x")  # type: ignore[arg-type]
    assert isinstance(nc.open(p, mode="a"), nc.Array)


def test_mode_w_replaces_a_store_but_never_files_that_are_not_part_of_one(tmp_path):
    # zarr-python's mode="w" empties the store; a directory holding anything else is refused.
    mine = tmp_path / "experiments"
    (mine / "raw").mkdir(parents=True)
    (mine / "notes.txt").write_text("my notes")
    (mine / "raw" / "cell.tif").write_bytes(b"pixels")
    for make in (
        lambda: nc.open(mine, mode="w", shape=(3,), dtype="u1"),
        lambda: nc.create_array(mine, shape=(3,), dtype="u1", overwrite=True),
        lambda: nc.create_group(mine, overwrite=True),
        lambda: nc.open_group(mine, mode="w"),
    ):
        with pytest.raises(nc.NodeExistsError, match=r"notes\.txt"):
            make()
        assert (mine / "notes.txt").read_text() == "my notes"
        assert (mine / "raw" / "cell.tif").read_bytes() == b"pixels"
    # Inside a group: a child holding a foreign file is not replaced either.
    g = nc.create_group(tmp_path / "g.zarr", zarr_format=3)
    g.create_array("a", shape=(2,), dtype="u1")
    (tmp_path / "g.zarr" / "a" / "README").write_text("keep")
    with pytest.raises(nc.NodeExistsError, match="README"):
        g.create_array("a", shape=(2,), dtype="u1", overwrite=True)
    with pytest.raises(FileExistsError):
        g.create_group("a", overwrite=True)
    assert (tmp_path / "g.zarr" / "a" / "README").read_text() == "keep"
    # A store of ours is replaced, whatever its format was.
    old = nc.create_array(tmp_path / "old.zarr", shape=(4,), dtype="i4", zarr_format=2)
    old[...] = 7
    new = nc.open(tmp_path / "old.zarr", mode="w", shape=(2,), dtype="u1", zarr_format=3)
    assert new.shape == (2,) and not (tmp_path / "old.zarr" / ".zarray").exists()


def test_errors_are_clean(tmp_path):
    a = nc.create_array(tmp_path / "e", shape=(10, 10), dtype="f8", chunks=(5, 5), compressors="gzip")
    a[...] = 1.0
    with pytest.raises(IndexError):
        a[10]
    with pytest.raises(nc.OutOfBoundsError):
        a[0, -11]
    with pytest.raises(IndexError):
        a[1, 2, 3]
    with pytest.raises(ValueError):
        a[::0]
    with pytest.raises(ValueError):
        a[0:3] = np.ones((2, 10))
    with pytest.raises(nc.InvalidInputError):
        a[[1, 2], [3, 4]]
    with pytest.raises(nc.InvalidInputError):
        nc.create_array(tmp_path / "b", shape=(3,), dtype="f8", compressors="snappy")
    with pytest.raises(nc.InvalidInputError):
        nc.create_array(tmp_path / "c", shape=(3,), dtype=np.dtype([("a", "i1"), ("b", "i4")], align=True))
    # Corrupt chunk: a clean error naming the chunk, never a crash.
    (tmp_path / "e" / "c" / "0" / "0").write_bytes(b"garbage")
    with pytest.raises(nc.CorruptDataError, match="c/0/0"):
        a[...]
    assert a[7, 7] == 1.0
    (tmp_path / "e" / "zarr.json").write_text("{not json")
    with pytest.raises(nc.Error):
        nc.open(tmp_path / "e")
    # A URL of a service no store speaks, and storage options that do not exist.
    with pytest.raises(nc.InvalidInputError, match="unsupported URL"):
        nc.open("ftp://host/x")
    with pytest.raises(nc.InvalidInputError, match="not supported"):
        nc.open("s3://bucket/x", storage_options={"secret": "s"})


def test_resize_and_pickle(tmp_path):
    a = nc.create_array(tmp_path / "r", shape=(10, 4), dtype="i2", chunks=(3, 4))
    a[...] = np.arange(40).reshape(10, 4)
    a.resize(5, 6)
    assert a.shape == (5, 6)
    np.testing.assert_array_equal(a[:, :4], np.arange(20).reshape(5, 4))
    assert (a[:, 4:] == 0).all()
    b = pickle.loads(pickle.dumps(a))
    assert b.shape == (5, 6) and not b.read_only
    np.testing.assert_array_equal(b[...], a[...])
    g = pickle.loads(pickle.dumps(nc.create_group(tmp_path / "g")))
    assert isinstance(g, nc.Group)


def test_convert_between_formats(tmp_path):
    src = nc.create_group(tmp_path / "src.zarr", attributes={"k": "v"})
    vol = src.create_array("vol", shape=(20, 20), dtype="uint16", chunks=(5, 5), shards=(10, 10))
    vol[...] = np.arange(400).reshape(20, 20)
    seen = []
    notes = nc.convert(tmp_path / "src.zarr", tmp_path / "dst.n5", format="n5", compressors="gzip:4", progress=seen.append)
    assert sum(seen) > 0
    assert any("shard" in n for n in notes)
    dst = nc.open(tmp_path / "dst.n5")
    assert dst.zarr_format == "n5" and dst.attrs["k"] == "v"
    np.testing.assert_array_equal(dst["vol"][...], vol[...])
    assert dst["vol"].chunks == (5, 5)
    nc.convert(tmp_path / "dst.n5", tmp_path / "back.zarr", format=2, chunks=(7, 7))
    back = nc.open(tmp_path / "back.zarr/vol")
    assert back.zarr_format == 2 and back.chunks == (7, 7)
    np.testing.assert_array_equal(back[...], vol[...])
    with pytest.raises(nc.NodeExistsError):
        nc.convert(tmp_path / "src.zarr", tmp_path / "back.zarr")


def test_large_reads_and_writes_go_in_slabs(tmp_path):
    # 96 MiB: more than one slab (64 MiB) along the first axis.
    a = nc.create_array(tmp_path / "big", shape=(3000, 4096), dtype="float64", chunks=(256, 4096), compressors=[])
    rows = np.arange(3000, dtype="float64")[:, None] * np.ones(4096)
    a[...] = rows
    got = a[...]
    np.testing.assert_array_equal(got, rows)
    del got
    back = a[::-7, 5]
    np.testing.assert_array_equal(back, rows[::-7, 5])
    assert json.loads(json.dumps(a.metadata))["shape"] == [3000, 4096]


def test_ctrl_c_interrupts_a_long_read(tmp_path):
    import os
    import signal
    import threading
    import time

    # 1 GiB, never written: sixteen slabs of 64 MiB, with a signal check between slabs.
    a = nc.create_array(tmp_path / "huge", shape=(262144, 4096), dtype="uint8", chunks=(4096, 4096))
    timer = threading.Timer(0.01, os.kill, (os.getpid(), signal.SIGINT))
    finished = []
    # Python's own SIGINT handler, also when the test runs in a background job (which starts
    # with SIGINT ignored).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            a[...]
            finished.append(True)
            timer.join()
            time.sleep(1)  # the signal arrives here when the read was faster than the timer
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert not finished, "the read finished before the signal arrived"


def test_bad_creation_arguments_and_huge_regions(tmp_path):
    bad = [
        dict(shape=(10,), dtype="i4", shards=(5,), zarr_format=2),
        dict(shape=(10,), dtype="i4", chunks=(3,), shards=(5,)),
        dict(shape=(10,), dtype="i4", chunks=(0,)),
        dict(shape=(-1,), dtype="i4"),
        dict(shape=(10,), dtype="i4", chunks=(2, 2)),
        dict(shape=(10,), dtype=str, zarr_format="n5"),
        dict(shape=(10,), dtype="i4", fill_value="x"),
        dict(shape=(10,), dtype="i4", compressors=[{"name": "zstd", "configuration": {"level": 99}}]),
        dict(shape=(10,), dtype="i4", dimension_names=["a", "b"]),
    ]
    for i, kwargs in enumerate(bad):
        with pytest.raises(nc.InvalidInputError):
            nc.create_array(tmp_path / f"a{i}", **kwargs)
    a = nc.create_array(tmp_path / "big", shape=(2**40, 2**40), dtype="f8", chunks=(1024, 1024))
    with pytest.raises(nc.InvalidInputError, match="cannot be held in memory"):
        a[...]
    assert (a[2**40 - 1, 5:8] == 0).all()


# (dtype, codec arguments, Zarr v3 codec names stored, largest absolute error allowed; the
# float samples are standard normal)
CODEC_ARGUMENTS = [
    ("float32", dict(filters="bitround:10"), ["numcodecs.bitround", "bytes", "zstd"], 0.01),
    ("float64", dict(filters=[{"id": "quantize", "digits": 2, "dtype": "<f8"}], compressors="gzip:1"),
     ["numcodecs.quantize", "bytes", "gzip"], 0.01),
    ("bool", dict(filters="packbits", compressors=[]), ["numcodecs.packbits", "bytes"], 0),
    ("uint16", dict(serializer="pcodec:4", compressors=[]), ["numcodecs.pcodec"], 0),
    ("int64", dict(serializer={"name": "numcodecs.pcodec", "configuration": {"level": 8, "mode_spec": "auto"}}),
     ["numcodecs.pcodec", "zstd"], 0),
    ("int32", dict(serializer="zfpy"), ["numcodecs.zfpy", "zstd"], 0),
    ("float64", dict(serializer={"id": "zfpy", "mode": 4, "tolerance": 0.01}, compressors=[]), ["numcodecs.zfpy"], 0.01),
    ("float32", dict(serializer="zfpy:rate:16", compressors=[]), ["numcodecs.zfpy"], 0.05),
    ("uint8", dict(compressors="adler32,fletcher32,jenkins_lookup3"),
     ["bytes", "numcodecs.adler32", "numcodecs.fletcher32", "numcodecs.jenkins_lookup3"], 0),
    # The command line's form: filters, serializer and compressions in one list.
    ("float32", dict(compressors="quantize:3,pcodec,crc32c"), ["numcodecs.quantize", "numcodecs.pcodec", "crc32c"], 0.001),
]


@pytest.mark.parametrize("dtype,kwargs,names,error", CODEC_ARGUMENTS, ids=lambda v: str(v)[:40])
def test_filters_serializers_and_checksums(tmp_path, dtype, kwargs, names, error):
    dt = np.dtype(dtype)
    data = sample(dt, (23, 9))
    a = nc.create_array(tmp_path / "a", shape=data.shape, dtype=dt, chunks=(10, 4), **kwargs)
    a[...] = data
    assert [c["name"] for c in a.metadata["codecs"]] == names
    got = nc.open(tmp_path / "a")[...]
    assert got.dtype == dt
    if error == 0:
        np.testing.assert_array_equal(got, data)
    else:
        assert 0 < np.max(np.abs(got.astype("f8") - data.astype("f8"))) <= error


def test_filters_and_serializers_in_zarr_v2(tmp_path):
    data = sample(np.dtype("float64"), (20, 6))
    a = nc.create_array(tmp_path / "q", shape=data.shape, dtype="f8", chunks=(7, 6), zarr_format=2,
                        filters="quantize:2", compressors="zstd:1")
    a[...] = data
    assert a.metadata["filters"] == [{"id": "quantize", "digits": 2, "dtype": "<f8", "astype": "<f8"}]
    assert a.metadata["compressor"]["id"] == "zstd"
    z = nc.create_array(tmp_path / "z", shape=data.shape, dtype="f8", chunks=(7, 6), zarr_format=2,
                        serializer="zfpy", compressors=[])
    z[...] = data
    assert z.metadata["compressor"]["id"] == "zfpy" and z.metadata["filters"] is None
    np.testing.assert_array_equal(z[...], data)
    # Conversion takes the same list as the command line's --codec.
    nc.convert(tmp_path / "z", tmp_path / "p", format=3, compressors="pcodec:2")
    p = nc.open(tmp_path / "p")
    assert [c["name"] for c in p.metadata["codecs"]] == ["numcodecs.pcodec"]
    np.testing.assert_array_equal(p[...], data)


@pytest.mark.parametrize("kwargs,message", [
    (dict(filters="zstd"), "filters: zstd is a compression or checksum, not a filter"),
    (dict(serializer="bitround:3"), "serializer: bitround is a filter, not a serializer"),
    (dict(serializer=["pcodec", "zfpy"]), "one codec"),
    (dict(filters=[{"id": "quantize", "digits": 2, "dtype": "<f8", "astype": "<f4"}]), "astype"),
    (dict(filters=[{"id": "bitround"}]), "needs 'keepbits'"),
    (dict(compressors=[{"id": "jenkins_lookup3", "initval": 5}]), "'initval' 5 is not supported"),
    (dict(compressors=[{"id": "adler32", "location": "end"}]), "'location'"),
    (dict(serializer={"id": "pcodec", "level": 8, "mode_spec": "classic"}), "only 'level' can be chosen"),
    (dict(serializer={"id": "zfpy", "mode": 7}), "'mode' 7 is not supported"),
    (dict(serializer="zfpy:fast"), "unknown zfpy mode"),
    (dict(serializer="zfpy:rate"), "needs a rate"),
    (dict(filters=[{"id": "categorize", "labels": []}]), "needs 'labels'"),
    (dict(compressors="vlen-array"), "unknown codec 'vlen-array'"),
])
def test_codec_arguments_are_checked(tmp_path, kwargs, message):
    with pytest.raises(nc.InvalidInputError, match=message):
        nc.create_array(tmp_path / "bad", shape=(4,), dtype="f8", **kwargs)
    assert not (tmp_path / "bad").exists()


def test_categorize_filter_on_strings(tmp_path):
    labels = ["apple", "pear", "fig"]
    data = np.array(["pear", "fig", "apple", "fig", "", "pear"], dtype=object)
    a = nc.create_array(tmp_path / "c", shape=data.shape, dtype=str, chunks=(4,), zarr_format=2,
                        filters=[{"id": "categorize", "labels": labels, "dtype": "|O", "astype": "|u1"}])
    a[...] = data
    assert a.metadata["filters"][0]["labels"] == labels
    assert nc.open(tmp_path / "c")[...].tolist() == data.tolist()


def test_lindi_reference_files_open_read_only(tmp_path):
    """A path through a LINDI reference file (`x.lindi.json/array`) opens its read-only store:
    inline values and byte ranges of a file beside it; ranges leading out of its directory are
    refused."""
    values = np.arange(60, dtype="<i4").reshape(6, 10)
    raw = tmp_path / "data.bin"
    raw.write_bytes(b"header" + values[:3].tobytes() + values[3:].tobytes())
    half = values[:3].nbytes
    zarray = {"chunks": [3, 10], "compressor": None, "dtype": "<i4", "fill_value": 0, "filters": None,
              "order": "C", "shape": [6, 10], "zarr_format": 2}
    refs = {
        "version": 1,
        "refs": {
            ".zgroup": {"zarr_format": 2},
            "a/.zarray": zarray,
            "a/.zattrs": {"unit": "mV"},
            "a/0.0": [str(raw), 6, half],
            "a/1.0": [str(raw), 6 + half, half],
            "b/.zarray": dict(zarray, shape=[3, 10]),
            "b/0.0": "base64:" + __import__("base64").b64encode(values[:3].tobytes()).decode(),
        },
    }
    ref_file = tmp_path / "x.lindi.json"
    ref_file.write_text(json.dumps(refs))
    a = nc.open(str(ref_file / "a"))
    np.testing.assert_array_equal(a[...], values)
    np.testing.assert_array_equal(a[2:5, 3:7], values[2:5, 3:7])
    assert a.attrs["unit"] == "mV"
    np.testing.assert_array_equal(nc.open(str(ref_file / "b"))[...], values[:3])
    with pytest.raises(nc.Error):
        nc.open(str(ref_file / "a"), mode="r+")
    outside = tmp_path / "sub"
    outside.mkdir()
    (outside / "y.lindi.json").write_text(json.dumps(refs))
    with pytest.raises(nc.Error, match="outside"):
        nc.open(str(outside / "y.lindi.json" / "a"))[...]
