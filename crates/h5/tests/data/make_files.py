#!/usr/bin/env python3
"""Generate the small HDF5 test files of neurochunk-h5 and, for each, a JSON file of what
h5py (the HDF5 C library) reads from it.

Run from this directory with a Python that has h5py and numcodecs (for the zstd, blosc and
lz4 chunks, compressed here and written with write_direct_chunk):

    python make_files.py

The Rust tests compare the reader against the JSON files; they never run Python.
"""

import ctypes
import glob
import gzip
import json
import os
import shutil

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_VALUES = 20000  # datasets with more elements record no values

# ---------------------------------------------------------------------------------------------
# The HDF5 C library h5py is built on, for what h5py does not expose (1.12 references, shared
# object header messages, B-tree K values).

_lib = None


def lib():
    global _lib
    if _lib is None:
        libs = glob.glob(os.path.join(os.path.dirname(h5py.__file__), "..", "h5py.libs", "libhdf5-*.so*"))
        libs = [p for p in libs if "hdf5_hl" not in p]
        _lib = ctypes.CDLL(libs[0] if libs else "libhdf5.so")
        _lib.H5open()
    return _lib


hid_t = ctypes.c_int64
H5P_DEFAULT = hid_t(0)


class H5RRef(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint8 * 64)]


def std_ref_type():
    return hid_t.in_dll(lib(), "H5T_STD_REF_g")


# ---------------------------------------------------------------------------------------------
# What h5py reads, as JSON


def fnum(x):
    x = float(x)
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def tdesc(t):
    """A datatype as JSON, from the low-level type."""
    c = t.get_class()
    if c == h5py.h5t.INTEGER:
        return {"class": "int", "size": t.get_size(), "signed": t.get_sign() == h5py.h5t.SGN_2,
                "be": t.get_order() == h5py.h5t.ORDER_BE}
    if c == h5py.h5t.FLOAT:
        return {"class": "float", "size": t.get_size(), "be": t.get_order() == h5py.h5t.ORDER_BE}
    if c == h5py.h5t.STRING:
        cset = "utf8" if t.get_cset() == h5py.h5t.CSET_UTF8 else "ascii"
        pad = {h5py.h5t.STR_NULLTERM: "nullterm", h5py.h5t.STR_NULLPAD: "nullpad",
               h5py.h5t.STR_SPACEPAD: "spacepad"}[t.get_strpad()]
        if t.is_variable_str():
            return {"class": "vstr", "cset": cset, "pad": pad}
        return {"class": "str", "size": t.get_size(), "cset": cset, "pad": pad}
    if c == h5py.h5t.ENUM:
        members = [[t.get_member_name(i).decode(), int(t.get_member_value(i))] for i in range(t.get_nmembers())]
        if t.get_size() == 1 and sorted(members) == [["FALSE", 0], ["TRUE", 1]]:
            return {"class": "bool"}
        return {"class": "enum", "base": tdesc(t.get_super()), "members": members}
    if c == h5py.h5t.COMPOUND:
        return {"class": "compound", "size": t.get_size(),
                "fields": [[t.get_member_name(i).decode(), t.get_member_offset(i), tdesc(t.get_member_type(i))]
                           for i in range(t.get_nmembers())]}
    if c == h5py.h5t.REFERENCE:
        if t.equal(h5py.h5t.STD_REF_OBJ):
            return {"class": "objref"}
        if t.equal(h5py.h5t.STD_REF_DSETREG):
            return {"class": "regref"}
        return {"class": "ref2"}
    if c == h5py.h5t.ARRAY:
        return {"class": "array", "dims": list(t.get_array_dims()), "base": tdesc(t.get_super())}
    if c == h5py.h5t.VLEN:
        return {"class": "vlen", "base": tdesc(t.get_super())}
    if c == h5py.h5t.OPAQUE:
        return {"class": "opaque", "size": t.get_size(), "tag": t.get_tag().decode()}
    if c == h5py.h5t.BITFIELD:
        return {"class": "bitfield", "size": t.get_size(), "be": t.get_order() == h5py.h5t.ORDER_BE}
    if c == 11:
        return {"class": "complex", "size": t.get_size(), "base": tdesc(t.get_super())}
    return {"class": "other:%d" % c}


def sel_json(space):
    """A dataspace selection as JSON: its kind and the points it selects (C order)."""
    st = space.get_select_type()
    if st == h5py.h5s.SEL_NONE:
        return {"type": "none", "points": []}
    if st == h5py.h5s.SEL_ALL:
        return {"type": "all", "dims": list(space.shape)}
    if st == h5py.h5s.SEL_POINTS:
        pts = space.get_select_elem_pointlist()
        return {"type": "points", "points": [[int(v) for v in p] for p in pts]}
    blocks = space.get_select_hyper_blocklist()
    points = set()
    for b in blocks:
        lo, hi = b[0], b[1]
        for p in np.ndindex(*[int(h - l + 1) for l, h in zip(lo, hi)]):
            points.add(tuple(int(l + q) for l, q in zip(lo, p)))
    out = {"type": "hyperslab", "points": sorted(list(p) for p in points)}
    if space.is_regular_hyperslab():
        out["regular"] = [[int(v) for v in a] for a in space.get_regular_hyperslab()]
    return out


def value_json(f, t, v):
    """One element as JSON. `t` is its low-level type, `v` what h5py returned."""
    c = t.get_class()
    if c == h5py.h5t.INTEGER or c == h5py.h5t.BITFIELD:
        return int(v)
    if c == h5py.h5t.FLOAT:
        return fnum(v)
    if c == h5py.h5t.STRING:
        if isinstance(v, bytes):
            return v.decode("utf-8", "replace")
        if isinstance(v, np.bytes_):
            return bytes(v).decode("utf-8", "replace")
        return str(v)
    if c == h5py.h5t.ENUM:
        d = tdesc(t)
        if d["class"] == "bool":
            return bool(v)
        return int(v)
    if c == h5py.h5t.COMPOUND:
        return {"fields": [[t.get_member_name(i).decode(), value_json(f, t.get_member_type(i), v[i])]
                           for i in range(t.get_nmembers())]}
    if c == h5py.h5t.REFERENCE:
        if not v:
            return {"ref": None}
        if isinstance(v, h5py.RegionReference):
            target = f[v]
            space = h5py.h5r.get_region(v, target.id)
            return {"ref": target.name, "sel": sel_json(space)}
        return {"ref": f[v].name}
    if c == h5py.h5t.ARRAY:
        base = t.get_super()
        return [value_json(f, base, x) for x in np.asarray(v).reshape(-1)]
    if c == h5py.h5t.VLEN:
        base = t.get_super()
        return [value_json(f, base, x) for x in np.asarray(v).reshape(-1)]
    if c == h5py.h5t.OPAQUE:
        return {"hex": bytes(np.asarray(v).tobytes()).hex()}
    if c == 11:
        return {"complex": [fnum(np.real(v)), fnum(np.imag(v))]}
    return None


def fixed_str_values(raw, size, pad):
    """Fixed-length strings from their raw bytes, by the padding rule."""
    out = []
    for i in range(len(raw) // size if size else 0):
        b = raw[i * size:(i + 1) * size]
        if pad == "nullterm":
            b = b.split(b"\0", 1)[0]
        elif pad == "nullpad":
            b = b.rstrip(b"\0")
        else:
            b = b.split(b"\0", 1)[0].rstrip(b" ")
        out.append(b.decode("utf-8", "replace"))
    return out


def shape_json(space):
    cls = space.get_simple_extent_type()
    if cls == h5py.h5s.NULL:
        return "null"
    if cls == h5py.h5s.SCALAR:
        return "scalar"
    return list(space.shape)


def values_of(f, t, arr, raw=None):
    d = tdesc(t)
    if d["class"] == "str" and raw is not None:
        return fixed_str_values(raw, d["size"], d["pad"])
    if d["class"] == "array":
        n = int(np.prod(d["dims"]))
        flat = np.asarray(arr).reshape(-1, n)
        return [value_json(f, t, x) for x in flat]
    flat = np.asarray(arr).reshape(-1) if not isinstance(arr, (bytes, str)) else [arr]
    return [value_json(f, t, x) for x in flat]


def raw_read_dataset(ds):
    """The raw bytes of a dataset read with its own file type (fixed strings only)."""
    t = ds.id.get_type()
    buf = np.zeros(ds.id.shape if ds.id.shape else (), dtype="V%d" % t.get_size())
    ds.id.read(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=t)
    return buf.tobytes()


def attr_json(f, obj, name):
    a = h5py.h5a.open(obj.id, name.encode())
    t = a.get_type()
    space = a.get_space()
    out = {"name": name, "dtype": tdesc(t), "shape": shape_json(space)}
    if out["shape"] == "null":
        out["values"] = []
        return out
    d = out["dtype"]
    if d["class"] == "ref2":
        return out
    if d["class"] == "str":
        buf = np.zeros(a.shape if a.shape else (), dtype="V%d" % t.get_size())
        a.read(buf, mtype=t)
        out["values"] = fixed_str_values(buf.tobytes(), d["size"], d["pad"])
        return out
    v = obj.attrs[name]
    out["values"] = values_of(f, t, v)
    return out


def dataset_json(f, ds, expected_index=None):
    dcpl = ds.id.get_create_plist()
    t = ds.id.get_type()
    space = ds.id.get_space()
    out = {"kind": "dataset", "addr": h5py.h5o.get_info(ds.id).addr, "dtype": tdesc(t),
           "shape": shape_json(space)}
    out["maxshape"] = [None if m is None else int(m) for m in ds.maxshape] if out["shape"] not in ("null", "scalar") else None
    layout = dcpl.get_layout()
    out["layout"] = {0: "compact", 1: "contiguous", 2: "chunked", 3: "virtual"}[layout]
    if layout == 2:
        out["chunks"] = list(dcpl.get_chunk())
    if expected_index:
        out["index"] = expected_index
    filters = []
    for i in range(dcpl.get_nfilters()):
        code, flags, values, name = dcpl.get_filter(i)
        filters.append([int(code), int(flags), [int(v) for v in values], name.decode()])
    out["filters"] = filters
    out["external"] = dcpl.get_external_count()
    fd = dcpl.fill_value_defined()
    out["fill_defined"] = int(fd)
    d = out["dtype"]
    if fd == h5py.h5d.FILL_VALUE_USER_DEFINED and d["class"] in ("int", "float", "bool", "enum"):
        arr = np.zeros((1,), dtype=ds.dtype)
        dcpl.get_fill_value(arr)
        out["fill"] = value_json(f, t, arr[0])
    if layout == 2:
        n = ds.id.get_num_chunks()
        chunks = []
        for i in range(n):
            ci = ds.id.get_chunk_info(i)
            chunks.append([list(ci.chunk_offset), int(ci.filter_mask), int(ci.byte_offset), int(ci.size)])
        out["chunk_info"] = sorted(chunks)
        unlimited = [i for i, m in enumerate(ds.maxshape or ()) if m is None]
        if len(unlimited) == 1 and unlimited[0] != 0:
            # HDF5 reports the coordinates of such chunks (extensible array index, unlimited
            # axis not first) unswizzled, i.e. wrong; their addresses and sizes are right.
            out["chunk_coords_unreliable"] = True
    elif layout == 1:
        off = ds.id.get_offset()
        out["contiguous"] = [None if off is None else int(off), int(ds.id.get_storage_size())]
    count = 0 if out["shape"] == "null" else int(np.prod(ds.shape)) if ds.shape else 1
    if d["class"] in ("ref2", "complex"):
        return out
    if count <= MAX_VALUES:
        try:
            if d["class"] == "str":
                out["values"] = fixed_str_values(raw_read_dataset(ds), d["size"], d["pad"])
            else:
                out["values"] = [] if count == 0 else values_of(f, t, ds[()])
        except Exception as e:  # noqa: BLE001 (unreadable by h5py: a filter it lacks)
            out["read_error"] = str(e)[:200]
    return out


def walk(f, expected_index=None):
    """Every object reachable by hard links from the root, by path (first path found)."""
    expected_index = expected_index or {}
    objects = {}
    seen = {}

    def visit(path, obj):
        addr = h5py.h5o.get_info(obj.id).addr
        if addr in seen:
            objects[path] = {"same_as": seen[addr], "addr": addr}
            return
        seen[addr] = path
        if isinstance(obj, h5py.Dataset):
            entry = dataset_json(f, obj, expected_index.get(path))
        elif isinstance(obj, h5py.Group):
            entry = {"kind": "group", "addr": addr, "links": []}
        else:
            entry = {"kind": "datatype", "addr": addr, "dtype": tdesc(obj.id)}
        info = h5py.h5o.get_info(obj.id)
        # The library reports the time of a version 1 header's modification time message as
        # its change time.
        entry["mtime"] = info.mtime or info.ctime
        entry["attrs"] = [attr_json(f, obj, n) for n in sorted(obj.attrs.keys(), key=lambda s: s.encode())]
        objects[path] = entry
        if isinstance(obj, h5py.Group):
            names = sorted(obj.keys(), key=lambda s: s.encode())
            for name in names:
                link = obj.get(name, getlink=True)
                child = (path.rstrip("/") + "/" + name)
                if isinstance(link, h5py.SoftLink):
                    entry["links"].append({"name": name, "type": "soft", "target": link.path})
                elif isinstance(link, h5py.ExternalLink):
                    entry["links"].append({"name": name, "type": "external", "file": link.filename,
                                           "path": link.path})
                else:
                    target = obj[name]
                    entry["links"].append({"name": name, "type": "hard",
                                           "addr": h5py.h5o.get_info(target.id).addr})
                    visit(child, target)

    visit("/", f["/"])
    return objects


def describe(path, expected_index=None, extra=None):
    with h5py.File(path, "r") as f:
        raw = open(path, "rb").read()
        base = 0
        while raw[base:base + 8] != b"\x89HDF\r\n\x1a\n":
            base = 512 if base == 0 else base * 2
        out = {"file": os.path.basename(path), "size": len(raw), "userblock": base,
               "superblock_version": raw[base + 8], "objects": walk(f, expected_index)}
        out.update(extra or {})
    with gzip.open(path + ".json.gz", "wt", compresslevel=9) as j:
        json.dump(out, j, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------------------------------------
# The files


def common_content(f, big_endian=True):
    """Datasets and attributes found in every format version's file."""
    g = f.create_group("data")
    g.attrs["title"] = "common content"
    g.attrs["count"] = np.int32(7)
    g.attrs["values"] = np.arange(5, dtype="f8") / 4
    g.create_dataset("contiguous", data=np.arange(100, dtype="i4").reshape(10, 10))
    g.create_dataset("compact", data=np.arange(12, dtype="i2"),
                     **({} if False else {}))
    # chunked with edge chunks and filters
    a = (np.arange(37 * 23, dtype="f8").reshape(37, 23) * 1.5) - 100
    g.create_dataset("chunked", data=a, chunks=(8, 5))
    g.create_dataset("gzip", data=a, chunks=(8, 5), compression="gzip", compression_opts=4)
    g.create_dataset("shuffle_gzip", data=a, chunks=(10, 10), shuffle=True, compression="gzip")
    g.create_dataset("fletcher32", data=np.arange(1000, dtype="i8"), chunks=(64,), fletcher32=True)
    g.create_dataset("lzf", data=np.arange(3000, dtype="u2") % 97, chunks=(250,), compression="lzf")
    g.create_dataset("shuffle_lzf_fletcher", data=np.arange(777, dtype="i4") * 3, chunks=(100,),
                     shuffle=True, compression="lzf", fletcher32=True)
    g.create_dataset("gzip_fletcher", data=np.linspace(0, 1, 500, dtype="f4"), chunks=(128,),
                     compression="gzip", fletcher32=True, shuffle=True)
    # many chunks: a multi-level chunk index
    g.create_dataset("many_chunks", data=np.arange(3000, dtype="i2"), chunks=(4,))
    # never written: read as the fill value
    g.create_dataset("unwritten", shape=(20, 20), dtype="i4", chunks=(5, 5), fillvalue=-7)
    g.create_dataset("unwritten_contig", shape=(30,), dtype="f4", fillvalue=2.5)
    part = g.create_dataset("partial", shape=(40,), dtype="u1", chunks=(8,), fillvalue=9)
    part[10:20] = np.arange(10, dtype="u1")
    if big_endian:
        g.create_dataset("be_i4", data=np.arange(-10, 10, dtype=">i4"))
        g.create_dataset("be_f8", data=np.linspace(-2, 2, 9).astype(">f8"), chunks=(4,), compression="gzip")
        g.create_dataset("be_u2", data=np.arange(50, dtype=">u2"), chunks=(7,), shuffle=True, compression="gzip")
    g.create_dataset("scalar", data=np.float64(3.25))
    g.create_dataset("empty", data=h5py.Empty("f4"))
    g.create_dataset("zero_len", shape=(0,), dtype="i4", maxshape=(None,), chunks=(10,))
    s = f.create_group("strings")
    s.create_dataset("vlen_utf8", data=["héllo", "wörld", "", "a longer string with ünicode ☃"],
                     dtype=h5py.string_dtype("utf-8"))
    s.create_dataset("vlen_ascii", data=[b"abc", b"de", b""], dtype=h5py.string_dtype("ascii"))
    s.create_dataset("fixed", data=np.array([b"ab", b"cdef", b""], dtype="S6"))
    s.attrs["vlen_attr"] = "a vlen string attribute"
    s.attrs["fixed_attr"] = np.bytes_(b"fixed")
    s.attrs["str_list"] = ["one", "two", "three"]
    # links of every kind; one object under two names
    lk = f.create_group("links")
    lk["soft"] = h5py.SoftLink("/data/contiguous")
    lk["soft_relative"] = h5py.SoftLink("../data/scalar")
    lk["dangling"] = h5py.SoftLink("/no/such/object")
    lk["external"] = h5py.ExternalLink("other.h5", "/some/path")
    lk["hard_again"] = f["data/chunked"]
    lk.create_group("sub").create_group("deeper").attrs["depth"] = 2


def make_earliest():
    path = os.path.join(HERE, "earliest.h5")
    with h5py.File(path, "w", libver="earliest") as f:
        common_content(f)
        # many links in an old-style group: several symbol table nodes
        g = f.create_group("many_links")
        for i in range(40):
            g.create_group("g%02d" % i)
        f["data"].create_dataset("scaleoffset", data=np.arange(100, dtype="i4"), chunks=(10,), scaleoffset=0)
        f["data"].create_dataset("szip", data=np.arange(100, dtype="i4"), chunks=(10,), compression="szip")
        # data in an external raw file (reported, not read)
        f["data"].create_dataset("external", shape=(10,), dtype="<i4", external=[("external.bin", 0, 40)])
        # many attributes (compact in version 1 headers)
        for i in range(12):
            f["many_links"].attrs["attr%02d" % i] = i
    describe(path, {"/data/chunked": "btree1", "/data/many_chunks": "btree1"})


def make_latest():
    path = os.path.join(HERE, "latest.h5")
    with h5py.File(path, "w", libver="latest") as f:
        common_content(f)
        c = f.create_group("index")
        a = np.arange(600, dtype="i4").reshape(20, 30)
        c.create_dataset("single", data=a, chunks=(20, 30))
        c.create_dataset("single_filtered", data=a, chunks=(20, 30), compression="gzip")
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 6))
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        sp = h5py.h5s.create_simple((20, 30))
        h5py.h5d.create(c.id, b"implicit", h5py.h5t.STD_I32LE, sp, dcpl=dcpl)
        c["implicit"][...] = a
        c.create_dataset("fixed_array", data=np.arange(3000, dtype="i2"), chunks=(2,))
        c.create_dataset("fixed_array_filtered", data=np.arange(2100, dtype="i4"), chunks=(2,), compression="gzip")
        c.create_dataset("fixed_small", data=a, chunks=(7, 7))
        ea = c.create_dataset("extensible", shape=(0, 1), maxshape=(None, 1), dtype="i4", chunks=(1, 1))
        ea.resize((2100, 1))
        ea[...] = np.arange(2100, dtype="i4").reshape(2100, 1)
        eaf = c.create_dataset("extensible_filtered", shape=(0,), maxshape=(None,), dtype="f8", chunks=(3,),
                               compression="gzip", shuffle=True)
        eaf.resize((900,))
        eaf[...] = np.sin(np.arange(900))
        eam = c.create_dataset("extensible_middle", shape=(5, 0), maxshape=(5, None), dtype="u1", chunks=(2, 2))
        eam.resize((5, 300))
        eam[:, :250] = (np.arange(5 * 250) % 251).reshape(5, 250).astype("u1")
        # An extensible array whose late data blocks are paged (super blocks with page
        # bitmaps): only a few chunks are written.
        eap = c.create_dataset("extensible_paged", shape=(0,), maxshape=(None,), dtype="u1", chunks=(1,))
        eap.resize((140000,))
        for lo, hi in [(0, 5), (1000, 1003), (131100, 131110), (139990, 140000)]:
            eap[lo:hi] = (np.arange(lo, hi) % 251).astype("u1")
        # Partial edge chunks stored unfiltered (H5D_CHUNK_DONT_FILTER_PARTIAL_CHUNKS).
        L = lib()
        L.H5Pset_chunk_opts.argtypes = [hid_t, ctypes.c_uint]
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_chunk((4, 4))
        dcpl.set_shuffle()
        dcpl.set_deflate(6)
        assert L.H5Pset_chunk_opts(dcpl.id, 0x0002) >= 0
        sp = h5py.h5s.create_simple((10, 10))
        h5py.h5d.create(c.id, b"dont_filter_partial", h5py.h5t.STD_I32LE, sp, dcpl=dcpl)
        c["dont_filter_partial"][...] = np.arange(100, dtype="<i4").reshape(10, 10)
        # A v2 B-tree of depth 2 (internal nodes above internal nodes).
        btd = c.create_dataset("btree2_deep", shape=(0, 0), maxshape=(None, None), dtype="u1", chunks=(1, 1))
        btd.resize((90, 90))
        btd[...] = (np.arange(8100) % 251).astype("u1").reshape(90, 90)
        bt = c.create_dataset("btree2", shape=(0, 0), maxshape=(None, None), dtype="i2", chunks=(2, 2))
        bt.resize((60, 60))
        bt[...] = np.arange(3600, dtype="i2").reshape(60, 60)
        btf = c.create_dataset("btree2_filtered", shape=(0, 0), maxshape=(None, None), dtype="i4", chunks=(3, 3),
                               compression="gzip")
        btf.resize((31, 31))
        btf[:20, :] = np.arange(20 * 31, dtype="i4").reshape(20, 31)
        # dense links, with and without creation order
        d = f.create_group("dense")
        for i in range(30):
            d.create_group("child%02d" % (29 - i))
        o = f.create_group("ordered", track_order=True)
        for i in range(25):
            o.create_dataset("z%02d" % (24 - i), data=np.int8(i))
        # dense attributes, with and without creation order
        da = f.create_group("dense_attrs")
        for i in range(20):
            da.attrs["a%02d" % (19 - i)] = np.arange(i + 1, dtype="i4")
        da.attrs["huge"] = (np.arange(66000) % 251).astype("u1")
        oa = f.create_group("ordered_attrs", track_order=True)
        for i in range(15):
            oa.attrs["b%02d" % (14 - i)] = "value %d" % i
        # a virtual dataset (reported, not read)
        layout = h5py.VirtualLayout(shape=(2, 4), dtype="i2")
        layout[0] = h5py.VirtualSource(".", "/index/btree2", shape=(60, 60))[0, :4]
        layout[1] = h5py.VirtualSource(".", "/index/btree2", shape=(60, 60))[1, :4]
        f.create_virtual_dataset("virtual", layout, fillvalue=-1)
        # a committed datatype, used by a dataset and an attribute
        f["named_type"] = np.dtype([("x", "<i4"), ("y", "<f8")])
        nt = f["named_type"]
        ds = f.create_dataset("typed", shape=(3,), dtype=nt)
        ds[...] = np.array([(1, 1.5), (2, 2.5), (3, 3.5)], dtype=nt.dtype)
        ds.attrs.create("typed_attr", np.array((9, 9.5), dtype=nt.dtype), dtype=nt)
    describe(path, {
        "/index/single": "single", "/index/single_filtered": "single", "/index/implicit": "implicit",
        "/index/fixed_array": "fixed_array", "/index/fixed_array_filtered": "fixed_array",
        "/index/fixed_small": "fixed_array", "/index/extensible": "extensible_array",
        "/index/extensible_filtered": "extensible_array", "/index/extensible_middle": "extensible_array",
        "/index/btree2": "btree2", "/index/btree2_filtered": "btree2",
        "/index/extensible_paged": "extensible_array", "/index/btree2_deep": "btree2",
    })


def make_types():
    path = os.path.join(HERE, "types.h5")
    with h5py.File(path, "w") as f:
        t = f.create_group("types")
        for dt in ["i1", "u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4", "<u4", ">u4", "<i8", ">i8", "<u8", ">u8",
                   "<f2", ">f2", "<f4", ">f4", "<f8", ">f8"]:
            name = dt.replace("<", "le_").replace(">", "be_")
            info = np.iinfo(dt) if dt[-2] in "iu" else None
            if info is not None:
                vals = np.array([info.min, info.max, 0, 1, -1 if info.min < 0 else 2], dtype=dt)
            else:
                vals = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 65504.0], dtype=dt)
            t.create_dataset(name, data=vals)
            t.attrs[name] = vals
        t.create_dataset("bool", data=np.array([True, False, True]))
        t.attrs["bool"] = np.bool_(True)
        colors = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i2")
        t.create_dataset("enum", data=np.array([0, 42, 1], dtype="i2"), dtype=colors)
        t.create_dataset("enum_u8", data=np.array([5, 200], dtype="u1"),
                         dtype=h5py.enum_dtype({"LOW": 5, "HIGH": 200}, basetype="u1"))
        # strings of every padding and character set
        for pad, pname in [(h5py.h5t.STR_NULLTERM, "nullterm"), (h5py.h5t.STR_NULLPAD, "nullpad"),
                           (h5py.h5t.STR_SPACEPAD, "spacepad")]:
            for cset, cname in [(h5py.h5t.CSET_ASCII, "ascii"), (h5py.h5t.CSET_UTF8, "utf8")]:
                st = h5py.h5t.C_S1.copy()
                st.set_size(8)
                st.set_strpad(pad)
                st.set_cset(cset)
                sp = h5py.h5s.create_simple((3,))
                name = ("str_%s_%s" % (pname, cname)).encode()
                dsid = h5py.h5d.create(t.id, name, st, sp)
                raw = [b"abc", b"12345678", b"x y  "]
                if pad == h5py.h5t.STR_SPACEPAD:
                    raw = [r.ljust(8, b" ") for r in raw]
                buf = np.array(raw, dtype="S8")
                dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, buf, mtype=st)
        t.create_dataset("vlen_str_utf8", data=np.array(["ä", "bb", "ccc☃"], dtype=object),
                         dtype=h5py.string_dtype())
        t.create_dataset("vlen_int", data=np.array([np.arange(3, dtype="i4"), np.arange(0, dtype="i4"),
                                                   np.arange(5, dtype="i4") * 2], dtype=object),
                         dtype=h5py.vlen_dtype("i4"))
        t.create_dataset("vlen_f8", data=np.array([np.array([1.5]), np.array([2.5, 3.5])], dtype=object),
                         dtype=h5py.vlen_dtype("f8"))
        arr = t.create_dataset("array", shape=(4,), dtype=np.dtype(("<i4", (2, 3))))
        arr.id.write(h5py.h5s.ALL, h5py.h5s.ALL, np.arange(24, dtype="<i4").reshape(4, 2, 3),
                     mtype=h5py.h5t.array_create(h5py.h5t.STD_I32LE, (2, 3)))
        t.create_dataset("opaque", data=np.array([b"\x01\x02\x03\x04\x05\x06\x07", b"abcdefg"], dtype="V7"))
        bf = h5py.h5t.STD_B16LE.copy()
        sp = h5py.h5s.create_simple((4,))
        dsid = h5py.h5d.create(t.id, b"bitfield", bf, sp)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1, 2, 0x8000, 0xffff], dtype="<u2"), mtype=bf)
        # complex numbers: as a compound (h5py) and as the HDF5 2.0 complex class
        t.create_dataset("complex_compound", data=np.array([1 + 2j, -3.5 - 0.25j], dtype="c16"))
        ct = h5py.h5t.COMPLEX_IEEE_F32LE
        sp = h5py.h5s.create_simple((2,))
        dsid = h5py.h5d.create(t.id, b"complex_class", ct, sp)
        dsid.write(h5py.h5s.ALL, h5py.h5s.ALL, np.array([1 + 2j, -3.5 - 0.25j], dtype="c8"),
                   mtype=h5py.h5t.NATIVE_FLOAT_COMPLEX)
        # references
        r = f.create_group("refs")
        target = r.create_dataset("target", data=np.arange(100, dtype="i4").reshape(10, 10))
        r.create_group("group_target")
        r.create_dataset("object_refs", data=np.array([f["refs/target"].ref, f["refs/group_target"].ref,
                                                         h5py.Reference(), f["/"].ref], dtype=h5py.ref_dtype))
        regions = [target.regionref[2:5, 3:7], target.regionref[0:10:3, 1],
                   target.regionref[...], target.regionref[1:9:2, 0:10:4]]
        r.create_dataset("region_refs", data=np.array(regions + [h5py.RegionReference()], dtype=h5py.regionref_dtype),
                         dtype=h5py.regionref_dtype)
        pts = target.id.get_space()
        pts.select_elements(np.array([[0, 0], [9, 9], [4, 5]], dtype="u8"))
        irr = target.id.get_space()
        irr.select_hyperslab((0, 0), (2, 2))
        irr.select_hyperslab((5, 5), (3, 1), op=h5py.h5s.SELECT_OR)
        none = target.id.get_space()
        none.select_none()
        more = [h5py.h5r.create(target.id, b".", h5py.h5r.DATASET_REGION, s) for s in (pts, irr, none)]
        r.create_dataset("region_refs_more", data=np.array(more, dtype=h5py.regionref_dtype),
                         dtype=h5py.regionref_dtype)
        r.attrs["obj_ref_attr"] = f["refs/target"].ref
        r.attrs["region_ref_attr"] = target.regionref[1:3, 1:3]
        cdt = np.dtype([("id", "<i4"), ("name", h5py.string_dtype()), ("ref", h5py.ref_dtype),
                        ("pos", "<f4", (2,)), ("inner", [("a", "u1"), ("b", ">i2")])])
        comp = np.zeros(3, dtype=cdt)
        comp["id"] = [1, 2, 3]
        comp["name"] = ["first", "second", "third"]
        comp["ref"] = [f["refs/target"].ref, f["refs/group_target"].ref, h5py.Reference()]
        comp["pos"] = [[1, 2], [3, 4], [5, 6]]
        comp["inner"]["a"] = [7, 8, 9]
        comp["inner"]["b"] = [-1, -2, -3]
        r.create_dataset("compound", data=comp)
        r.attrs["compound_attr"] = comp[:2]
        # attributes of every kind
        a = f.create_group("attrs")
        a.attrs["scalar_int"] = np.int64(-5)
        a.attrs["scalar_float"] = 2.5
        a.attrs["array_2d"] = np.arange(6, dtype="u2").reshape(2, 3)
        a.attrs["vlen_str"] = "text"
        a.attrs["vlen_strs"] = np.array(["x", "yy"], dtype=h5py.string_dtype())
        a.attrs["fixed_strs"] = np.array([b"ab", b"c"], dtype="S3")
        a.attrs["empty"] = h5py.Empty("i4")
        a.attrs["utf8_name_ü"] = 1
        a.attrs["vlen_int"] = np.array([np.arange(2, dtype="i4")], dtype=object) if False else np.int8(3)
        a.attrs.create("vlen_seq", data=np.array([np.arange(2, dtype="i2"), np.arange(3, dtype="i2")], dtype=object),
                       dtype=h5py.vlen_dtype("i2"))
        big = np.arange(2000, dtype="f8")
        a.attrs["large_compact"] = big
    describe(path)


def make_refs112():
    """HDF5 1.12 references (H5R_OBJECT2, H5R_DATASET_REGION2, H5R_ATTR), through the C library."""
    path = os.path.join(HERE, "refs112.h5")
    L = lib()
    with h5py.File(path, "w", libver="latest") as f:
        target = f.create_dataset("target", data=np.arange(60, dtype="i4").reshape(6, 10))
        target.attrs["units"] = "m"
        f.create_group("grp")
        fid = f.id.id
        refs = (H5RRef * 6)()
        L.H5Rcreate_object.argtypes = [hid_t, ctypes.c_char_p, hid_t, ctypes.POINTER(H5RRef)]
        L.H5Rcreate_region.argtypes = [hid_t, ctypes.c_char_p, hid_t, hid_t, ctypes.POINTER(H5RRef)]
        L.H5Rcreate_attr.argtypes = [hid_t, ctypes.c_char_p, ctypes.c_char_p, hid_t, ctypes.POINTER(H5RRef)]
        assert L.H5Rcreate_object(fid, b"/target", H5P_DEFAULT, ctypes.byref(refs[0])) >= 0
        assert L.H5Rcreate_object(fid, b"/grp", H5P_DEFAULT, ctypes.byref(refs[1])) >= 0
        s1 = target.id.get_space()
        s1.select_hyperslab((1, 2), (2, 3))
        assert L.H5Rcreate_region(fid, b"/target", s1.id, H5P_DEFAULT, ctypes.byref(refs[2])) >= 0
        s2 = target.id.get_space()
        s2.select_elements(np.array([[0, 1], [5, 9]], dtype="u8"))
        assert L.H5Rcreate_region(fid, b"/target", s2.id, H5P_DEFAULT, ctypes.byref(refs[3])) >= 0
        assert L.H5Rcreate_attr(fid, b"/target", b"units", H5P_DEFAULT, ctypes.byref(refs[4])) >= 0
        # refs[5] stays all zero: a null reference
        L.H5Screate_simple.restype = hid_t
        L.H5Screate_simple.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64), ctypes.c_void_p]
        L.H5Dcreate2.restype = hid_t
        L.H5Dcreate2.argtypes = [hid_t, ctypes.c_char_p, hid_t, hid_t, hid_t, hid_t, hid_t]
        L.H5Dwrite.argtypes = [hid_t, hid_t, hid_t, hid_t, hid_t, ctypes.c_void_p]
        L.H5Dclose.argtypes = [hid_t]
        L.H5Sclose.argtypes = [hid_t]
        L.H5Acreate2.restype = hid_t
        L.H5Acreate2.argtypes = [hid_t, ctypes.c_char_p, hid_t, hid_t, hid_t, hid_t]
        L.H5Awrite.argtypes = [hid_t, hid_t, ctypes.c_void_p]
        L.H5Aclose.argtypes = [hid_t]
        L.H5Rdestroy.argtypes = [ctypes.POINTER(H5RRef)]
        dims = (ctypes.c_uint64 * 1)(6)
        space = L.H5Screate_simple(1, dims, None)
        rt = std_ref_type()
        dset = L.H5Dcreate2(fid, b"refs", rt, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT)
        assert dset >= 0
        assert L.H5Dwrite(dset, rt, hid_t(0), hid_t(0), H5P_DEFAULT, ctypes.cast(refs, ctypes.c_void_p)) >= 0
        dims2 = (ctypes.c_uint64 * 1)(2)
        space2 = L.H5Screate_simple(1, dims2, None)
        pair = (H5RRef * 2)(refs[0], refs[2])
        grp = f["grp"]
        attr = L.H5Acreate2(grp.id.id, b"ref_attr", rt, space2, H5P_DEFAULT, H5P_DEFAULT)
        assert attr >= 0
        assert L.H5Awrite(attr, rt, ctypes.cast(pair, ctypes.c_void_p)) >= 0
        L.H5Sclose(space2)
        L.H5Aclose(attr)
        L.H5Dclose(dset)
        L.H5Sclose(space)
        for i in range(5):
            L.H5Rdestroy(ctypes.byref(refs[i]))
    expected_refs = [
        {"kind": "object", "path": "/target"},
        {"kind": "object", "path": "/grp"},
        {"kind": "region", "path": "/target",
         "points": [[r, c] for r in (1, 2) for c in (2, 3, 4)]},
        {"kind": "region", "path": "/target", "points": [[0, 1], [5, 9]]},
        {"kind": "attribute", "path": "/target", "attribute": "units"},
        None,
    ]
    describe(path, extra={"refs": expected_refs})


def make_plugins():
    """Chunks compressed here (numcodecs) with the registered plugin filters' framing, written
    with write_direct_chunk: zstd (32015), blosc (32001), lz4 (32004); and a chunk that skips
    its filter through the filter mask."""
    import numcodecs
    import struct
    path = os.path.join(HERE, "plugins.h5")
    data = (np.arange(4000, dtype="<i4") % 113).reshape(40, 100)
    chunk = (10, 100)

    def write(ds, encode, skip_last=False):
        for i in range(4):
            block = np.ascontiguousarray(data[i * 10:(i + 1) * 10])
            if skip_last and i == 3:
                ds.id.write_direct_chunk((i * 10, 0), block.tobytes(), filter_mask=1)
            else:
                ds.id.write_direct_chunk((i * 10, 0), encode(block.tobytes()))

    def lz4_hdf5(raw):
        # HDF5 lz4 filter framing: original size (8 bytes BE), block size (4 bytes BE), then per
        # block its compressed size (4 bytes BE) and bytes (stored raw when not smaller).
        block = 4096
        out = struct.pack(">QI", len(raw), block)
        for i in range(0, len(raw), block):
            part = raw[i:i + block]
            comp = numcodecs.LZ4(acceleration=1).encode(part)[4:]
            if len(comp) >= len(part):
                out += struct.pack(">I", len(part)) + part
            else:
                out += struct.pack(">I", len(comp)) + comp
        return out

    with h5py.File(path, "w") as f:
        zs = f.create_dataset("zstd", shape=data.shape, dtype="<i4", chunks=chunk, compression=32015,
                              compression_opts=(3,), allow_unknown_filter=True)
        write(zs, lambda b: numcodecs.Zstd(level=3).encode(b), skip_last=True)
        bl = f.create_dataset("blosc", shape=data.shape, dtype="<i4", chunks=chunk, compression=32001,
                              compression_opts=(2, 2, 4, 4000, 5, 1, 1), allow_unknown_filter=True)
        write(bl, lambda b: numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1, typesize=4).encode(b))
        l4 = f.create_dataset("lz4", shape=data.shape, dtype="<i4", chunks=chunk, compression=32004,
                              compression_opts=(4096,), allow_unknown_filter=True)
        write(l4, lz4_hdf5)
        sh = f.create_dataset("shuffle_zstd", shape=data.shape, dtype="<i4", chunks=chunk, shuffle=True,
                              compression=32015, allow_unknown_filter=True)

        def shuf_zstd(b):
            a = np.frombuffer(b, dtype="u1").reshape(-1, 4).T.copy()
            return numcodecs.Zstd(level=1).encode(a.tobytes())
        write(sh, shuf_zstd)
        gz = f.create_dataset("gzip_masked", data=data, chunks=chunk, compression="gzip")
        gz.id.write_direct_chunk((30, 0), np.ascontiguousarray(data[30:40]).tobytes(), filter_mask=1)
    describe(path, extra={"plugin_values": data.reshape(-1).tolist()})


def make_userblock():
    path = os.path.join(HERE, "userblock.h5")
    with h5py.File(path, "w", userblock_size=1024, libver=("v108", "v108")) as f:
        f.create_dataset("data", data=np.arange(50, dtype="i4"), chunks=(10,), compression="gzip")
        f.create_dataset("contig", data=np.arange(10, dtype="f8"))
        f.attrs["note"] = "user block of 1024 bytes"
    with open(path, "r+b") as raw:
        raw.write(b"neurochunk test user block".ljust(64, b"\0"))
    describe(path)


def make_sb1_small_offsets():
    """Superblock version 1 (non-default indexed storage K) with 4-byte offsets and lengths."""
    L = lib()
    path = os.path.join(HERE, "sb1_offsets4.h5")
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_sizes(4, 4)
    L.H5Pset_istore_k.argtypes = [hid_t, ctypes.c_uint]
    assert L.H5Pset_istore_k(fcpl.id, 64) >= 0
    L.H5Pset_sym_k.argtypes = [hid_t, ctypes.c_uint, ctypes.c_uint]
    assert L.H5Pset_sym_k(fcpl.id, 8, 2) >= 0
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)
    with h5py.File(fid) as f:
        f.create_dataset("chunked", data=np.arange(500, dtype="i4"), chunks=(5,), compression="gzip")
        f.create_dataset("strings", data=["a", "bb", "ccc"], dtype=h5py.string_dtype())
        g = f.create_group("g")
        for i in range(20):
            g.create_group("sub%02d" % i)
        f["refs"] = np.array([f["g"].ref, f["chunked"].ref], dtype=h5py.ref_dtype)
        f["region"] = np.array([f["chunked"].regionref[10:20]], dtype=h5py.regionref_dtype)
        f.attrs["a"] = np.arange(3)
    describe(path)


def make_latest_small_offsets():
    """Superblock 3 with 4-byte offsets (lengths stay 8 bytes: the library cannot read back an
    unlimited maximum dimension in 4-byte lengths): every version 2 structure (v2
    B-trees, fractal heaps, fixed and extensible arrays) with small address fields."""
    path = os.path.join(HERE, "latest_offsets4.h5")
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    fcpl.set_sizes(4, 8)
    fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
    fapl.set_libver_bounds(h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl, fapl=fapl)
    with h5py.File(fid) as f:
        g = f.create_group("dense", track_order=True)
        for i in range(20):
            g.create_group("g%02d" % i)
            g.attrs["a%02d" % i] = np.arange(i + 1, dtype="<i2")
        f.create_dataset("fixed", data=np.arange(3000, dtype="<i4"), chunks=(2,), compression="gzip")
        ea = f.create_dataset("extensible", shape=(0,), maxshape=(None,), dtype="<u2", chunks=(3,), shuffle=True,
                              compression="gzip")
        ea.resize((2000,))
        ea[...] = np.arange(2000, dtype="<u2")
        bt = f.create_dataset("btree2", shape=(0, 0), maxshape=(None, None), dtype="<f4", chunks=(3, 3))
        bt.resize((40, 40))
        bt[...] = np.arange(1600, dtype="<f4").reshape(40, 40)
        f.create_dataset("strings", data=["x", "yy", "zzz"], dtype=h5py.string_dtype())
        f["refs"] = np.array([f["fixed"].ref, f["dense"].ref], dtype=h5py.ref_dtype)
        f["regions"] = np.array([f["btree2"].regionref[1:3, 2:8:2]], dtype=h5py.regionref_dtype)
    describe(path)


def make_sohm():
    """Shared object header messages (datatypes, dataspaces, attributes) in the superblock
    extension's table."""
    L = lib()
    path = os.path.join(HERE, "sohm.h5")
    fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
    L.H5Pset_shared_mesg_nindexes.argtypes = [hid_t, ctypes.c_uint]
    L.H5Pset_shared_mesg_index.argtypes = [hid_t, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]
    assert L.H5Pset_shared_mesg_nindexes(fcpl.id, 2) >= 0
    # Index 0: dataspaces and datatypes (H5O_SHMESG_SDSPACE_FLAG | DTYPE_FLAG, bits 1 << type);
    # index 1: fill values, filter pipelines and attributes.
    assert L.H5Pset_shared_mesg_index(fcpl.id, 0, (1 << 1) | (1 << 3), 1) >= 0
    assert L.H5Pset_shared_mesg_index(fcpl.id, 1, (1 << 5) | (1 << 11) | (1 << 12), 1) >= 0
    fid = h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)
    with h5py.File(fid) as f:
        cdt = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S10")])
        for i in range(60):
            ds = f.create_dataset("ds%02d" % i, shape=(4, 3), dtype=cdt, chunks=(2, 3), compression="gzip",
                                  fillvalue=np.array((1, 2.0, b"x"), dtype=cdt))
            ds[...] = np.array([(i, i * 0.5, b"s%d" % i)] * 12, dtype=cdt).reshape(4, 3)
            ds.attrs["shared_attr"] = np.arange(10, dtype="i8")
            ds.attrs["own"] = i
    describe(path)


def make_big():
    """A multi-megabyte file (stored gzipped) for the request and byte counts: a large chunked
    dataset, a large contiguous one and many small groups and attributes."""
    path = os.path.join(HERE, "big.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("chunked", data=(np.arange(1000 * 1000, dtype="f8") % 7).reshape(1000, 1000),
                         chunks=(100, 100))
        f.create_dataset("contiguous", data=(np.arange(500 * 1000, dtype="i4") % 11).reshape(500, 1000))
        for i in range(40):
            g = f.create_group("group%02d" % i)
            g.attrs["index"] = i
            g.attrs["name"] = "group number %d" % i
            g.create_dataset("small", data=np.arange(i + 1, dtype="i2"))
    describe(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb", compresslevel=9) as dst:
        shutil.copyfileobj(src, dst)
    os.remove(path)


def make_tiny():
    """The doc example's file (kept uncompressed)."""
    path = os.path.join(HERE, "tiny.h5")
    with h5py.File(path, "w", libver="latest") as f:
        f.attrs["title"] = "tiny"
        f.create_dataset("data", data=np.arange(20, dtype="<i4").reshape(4, 5))
        f.create_group("group")
        f["soft"] = h5py.SoftLink("/data")
    describe(path)


def make_family():
    """The first member of a file of the family driver (refused: its addresses span files)."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        with h5py.File(os.path.join(tmp, "fam%d.h5"), "w", driver="family", memb_size=1 << 20) as f:
            f["x"] = np.arange(10)
        shutil.copyfile(os.path.join(tmp, "fam0.h5"), os.path.join(HERE, "family0.h5"))


def copy_backcompat():
    """Three of pynwb's back-compat files, from the repository's gzipped copies of them
    (tests/interop/data/nwb-hdf5, see its README)."""
    src = os.path.join(HERE, "..", "..", "..", "..", "tests", "interop", "data", "nwb-hdf5")
    for name in ["1.5.1_timeseries_no_unit.nwb", "2.1.0_nwbfile_with_extension.nwb",
                 "2.2.0_subject_no_age__reference.nwb"]:
        dst = os.path.join(HERE, name)
        with gzip.open(os.path.join(src, name + ".gz"), "rb") as f, open(dst, "wb") as out:
            shutil.copyfileobj(f, out)
        describe(dst)


if __name__ == "__main__":
    make_earliest()
    make_latest()
    make_types()
    make_refs112()
    make_plugins()
    make_userblock()
    make_sb1_small_offsets()
    make_latest_small_offsets()
    make_sohm()
    make_big()
    make_family()
    copy_backcompat()
    make_tiny()
    # The files are stored gzipped (the tests unpack them in memory): HDF5 files are mostly
    # padding and repeated metadata.
    for name in sorted(os.listdir(HERE)):
        if name.endswith((".h5", ".nwb")) and name != "tiny.h5":
            p = os.path.join(HERE, name)
            with open(p, "rb") as src, gzip.open(p + ".gz", "wb", compresslevel=9) as dst:
                shutil.copyfileobj(src, dst)
            os.remove(p)
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(HERE, "*")) if os.path.isfile(p))
    print("total bytes in", HERE, ":", total)
