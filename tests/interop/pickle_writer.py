"""The restricted pickle writer's output, checked with NumPy's own `pickle.loads` and numcodecs.

The Rust example `pickle_writer_cases` (crates/codec/examples) writes every writer case, the
golden outputs that crates/pickle/tests/pickle.rs pins byte for byte, and the `pickle` codec's
own output to a directory; `check_writer_output` loads each with the peer's NumPy and checks
the values, dtypes and shapes. Any DeprecationWarning (e.g. a `numpy.core` path) fails.
"""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def examples_dir() -> Path:
    """Where cargo put the example programs (`scripts/test` sets NEUROCHUNK_EXAMPLES)."""
    env = os.environ.get("NEUROCHUNK_EXAMPLES")
    if env:
        return Path(env)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "release" / "examples"


def write_cases(out: Path) -> None:
    program = examples_dir() / "pickle_writer_cases"
    assert program.is_file(), f"{program} is missing: build with `cargo build --release --workspace --all-targets`"
    proc = subprocess.run([str(program), str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def check_writer_output(d: Path) -> None:
    def load(name):
        with open(d / f"{name}.pickle", "rb") as f, warnings.catch_warnings():
            warnings.simplefilter("error")  # a DeprecationWarning (numpy.core) fails the check
            return pickle.loads(f.read())

    a = load('objects')
    assert a.dtype == np.dtype('O') and a.shape == (5,), (a.dtype, a.shape)
    assert a[0] == 'a' and type(a[0]) is str
    assert a[1] == {'k': [1, 2.5, None, True], 'é': 'ü🦀'} and list(a[1]) == ['k', 'é']
    assert a[2] == 2**64 - 1 and a[3] == -2**63 and type(a[2]) is int
    assert isinstance(a[4], float) and math.isnan(a[4])
    g = load('grid')
    assert g.dtype == object and g.shape == (2, 2) and g.tolist() == [['r0c0', 'r0c1'], ['r1c0', 70000]], g
    assert g.flags.c_contiguous
    z = load('zero_d'); assert z.shape == () and z.dtype == object and z[()] == 'x'
    e = load('empty'); assert e.shape == (0,) and e.dtype == object
    r = load('record')
    want = np.dtype([('idx_start', '<i4'), ('count', '<i4'), ('timeseries', 'O')])
    assert r.dtype == want and r.shape == (2,), r.dtype
    assert r.dtype.fields['timeseries'][1] == 8 and r.dtype.itemsize == 16
    assert r[0]['idx_start'] == 0 and r[0]['count'] == 5 and r[1]['idx_start'] == 5 and r[1]['count'] == 3
    assert r[0]['timeseries'] == {'source': '.', 'path': '/acquisition/ts1', 'object_id': 'oid-1', 'source_object_id': 'root-0'}
    assert r[1]['timeseries']['object_id'] is None
    n = load('numeric_record')
    want = np.dtype([('a', '<i2'), ('b', '>f8'), ('c', '?'), ('d', '<u8'), ('e', '<f4')])
    assert n.dtype == want, n.dtype
    assert n['a'].tolist() == [-2, 7] and n['b'][0] == 1.5 and n['b'][1] == -np.inf
    assert n['c'].tolist() == [True, False] and n['d'].tolist() == [2**64 - 1, 0]
    assert n['e'][0] == 0.25 and math.isnan(n['e'][1])
    t = load('codec_texts')
    assert t.dtype == object and t.shape == (2500,) and t.tolist() == [f't{i}é' for i in range(2500)]
    # numcodecs' Pickle codec itself (what zarr-python / hdmf-zarr call).
    # These bytes were made by our own writer just above, so decoding them is safe; newer
    # numcodecs refuse pickles unless told so.
    import numcodecs
    import numcodecs.pickles
    allowed = getattr(numcodecs.pickles, 'ALLOW_UNSAFE_PICKLE_DECODE', None)
    if allowed is not None:
        numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = True
    try:
        with open(d / 'record.pickle', 'rb') as f:
            dec = numcodecs.Pickle(protocol=5).decode(f.read())
    finally:
        if allowed is not None:
            numcodecs.pickles.ALLOW_UNSAFE_PICKLE_DECODE = allowed
    assert dec.dtype == r.dtype and dec.shape == (2,) and dec[1]['count'] == 3
    go = load('golden_objects')
    assert go.dtype == object and go.tolist() == ['a', {'k': 1}]
    gr = load('golden_record')
    assert gr.dtype == r.dtype and gr.shape == (1,) and gr[0]['idx_start'] == 1 and gr[0]['count'] == 2
    assert gr[0]['timeseries'] == {'source': '.', 'path': '/x', 'object_id': 'o', 'source_object_id': 'root-0'}
