"""pyarrow builders for neurarrow tables (the digest's conformance fixtures)."""

import pyarrow as pa

CTX = "urn:uuid:00000000-0000-4000-8000-000000000001"
U64, F64, U32 = pa.uint64(), pa.float64(), pa.uint32()


def md(**kw):
    """Default metadata plus overrides; a value of None removes the key."""
    m = {"version": "0.2.1", "context": CTX, "unit": "nanometer"}
    for k, v in kw.items():
        k = k.replace("__", ":")
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    return m


def table(columns, metadata):
    """columns: list of (name, type, nullable, values)."""
    fields = [pa.field(n, t, nl) for n, t, nl, _ in columns]
    arrays = [pa.array(v, type=t) for _, t, _, v in columns]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))


def skeleton_cols(ids=None, frags=None, parents=None, x=None):
    ids = ids if ids is not None else [1, 2, 3, 4, 10, 11]
    n = len(ids)
    return [
        ("sample_id", U64, False, ids),
        ("fragment_id", U64, False, frags if frags is not None else [7, 7, 7, 7, 9, 9][:n]),
        ("x", F64, False, x if x is not None else [float(i) for i in range(n)]),
        ("y", F64, False, [1.0] * n),
        ("z", F64, False, [2.0] * n),
        ("parent_id", U64, True, parents if parents is not None else [None, 1, 2, 2, None, 10][:n]),
    ]


def skeleton(metadata=None, **kw):
    return table(skeleton_cols(**kw), metadata if metadata is not None else md())


def derived_cols(child_ids=None, n_children=None, strahler=None):
    return [
        ("child_ids", pa.list_(U64), True, child_ids if child_ids is not None else [[2], [3, 4], [], [], [11], []]),
        ("n_children", U32, True, n_children if n_children is not None else [1, 2, 0, 0, 1, 0]),
        ("strahler", U32, True, strahler if strahler is not None else [2, 2, 1, 1, 1, 1]),
    ]


def replace(cols, name, new):
    return [new if c[0] == name else c for c in cols]


def pointcloud_cols(ids=None, frags=None):
    return skeleton_cols(ids=ids, frags=frags)[:5]


def dotprops(metadata=None, tangent=None, colinearity=(0.1, 0.5, 1.0), col_nullable=False):
    t = tangent or [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
    cols = [
        ("sample_id", U64, False, [100, 101, 102]),
        ("fragment_id", U64, False, [5, 5, 5]),
        ("x", F64, False, [0.0, 1.0, 2.0]),
        ("y", F64, False, [0.0, 1.0, 2.0]),
        ("z", F64, False, [0.0, 1.0, 2.0]),
        ("tangent_x", F64, False, [v[0] for v in t]),
        ("tangent_y", F64, False, [v[1] for v in t]),
        ("tangent_z", F64, False, [v[2] for v in t]),
    ]
    if colinearity is not None:
        cols.append(("colinearity", F64, col_nullable, list(colinearity)))
    return table(cols, metadata if metadata is not None else md(neighborhood_size="5"))


def type_array(values, index=pa.uint16()):
    return pa.array(values, type=pa.string()).dictionary_encode().cast(pa.dictionary(index, pa.string()))


def connections(
    metadata=None,
    ids=(1, 2),
    src=(3, 4),
    tgt=(11, 10),
    types=("synapse", "gap_junction"),
    type_kind="dict16",
    src_frag=None,
    tgt_frag=None,
):
    m = metadata if metadata is not None else md(unit=None)
    fields = [
        pa.field("connection_id", U64, False),
        pa.field("src_sample_id", U64, False),
        pa.field("tgt_sample_id", U64, False),
    ]
    arrays = [pa.array(list(ids), U64), pa.array(list(src), U64), pa.array(list(tgt), U64)]
    if type_kind == "dict16":
        arr = type_array(list(types))
    elif type_kind == "dict32":
        arr = type_array(list(types), pa.int32())
    else:
        arr = pa.array(list(types), pa.string())
    fields.append(pa.field("type", arr.type, False))
    arrays.append(arr)
    for name, vals in (("src_fragment_id", src_frag), ("tgt_fragment_id", tgt_frag)):
        if vals is not None:
            fields.append(pa.field(name, U64, True))
            arrays.append(pa.array(list(vals), U64))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=m))
