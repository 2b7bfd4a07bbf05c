"""Shared cases and checks for the conversion-path tests (`test_convert_paths_*.py`,
`test_tree_bad_node_*.py`); no peer imports here, so every environment can import it.

* `STRUCT_LAYOUTS` / `struct_values`: the structured layouts every direction must convert
  without corrupting data (mixed and big byte order, nested, sub-array fields), filled with
  values whose bytes differ when swapped (1.5, -2.25, 1e6, 258, ...).
* `DIRECTIONS`: the (source format, destination format) pairs of `neurochunk convert`.
* `run_convert`: `neurochunk convert` returning the process, so that stderr can be checked.
* `note_lines` / `assert_one_note`: the `neurochunk: note: /<array>: <what changed>` lines that
  a conversion prints on stderr, one per array, whenever it drops or changes a codec.
* `assert_clean_error`: a non-zero exit with a one-line error, no panic, no traceback.
* `check_put_nested_creates_parents` / `check_put_keeps_root_metadata`: `neurochunk put` into
  a nested path of a Zarr container, read back by the zarr-python module the caller passes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from ncli import REPO_ROOT, Neurochunk, assert_same_array, cli_form, load_json

PEERS = REPO_ROOT / ".peers"
PY312 = PEERS / "py312" / "bin" / "python"
PY311 = PEERS / "py311" / "bin" / "python"

# ------------------------------------------------------------------------------------------
# Structured layouts
# ------------------------------------------------------------------------------------------

STRUCT_LAYOUTS = {
    "mixed-endian": np.dtype([("a", "<i2"), ("b", ">f4"), ("c", "S3")]),
    "big-endian": np.dtype([("x", ">i4"), ("y", ">f8")]),
    "nested": np.dtype([("p", [("x", "<f4"), ("y", ">f4")]), ("id", ">u2")]),
}

# Sub-array fields exist only in Zarr v2: the v3 `struct` type has scalar fields only (and
# zarr-python 3.4 refuses them in either format), so v2 -> v3 must refuse, naming the array,
# and no v3 source of this layout can exist.
SUBARRAY_LAYOUT = np.dtype([("v", "<f4", (3,)), ("m", ">i2", (2, 2))])

# Layouts zarr-python 3.4 can write and read.
ZP3_STRUCT_LAYOUTS = list(STRUCT_LAYOUTS)

# (source format, destination format)
DIRECTIONS = [("zarr2", "zarr3"), ("zarr3", "zarr2"), ("zarr2", "zarr2"), ("zarr3", "zarr3")]
DIRECTION_IDS = [f"{a[-1]}to{b[-1]}" for a, b in DIRECTIONS]  # "2to3", "3to2", ...

STRUCT_SHAPE = (7, 5)  # 35 records; chunks (3, 2) leave partial edge chunks
STRUCT_CHUNKS = (3, 2)

_FLOAT_HEAD = [1.5, -2.25, 1e6, -7.0e-3, 65504.0, -1e6, 0.1, 3.25]
_BYTES_POOL = [b"abc", b"xy", b"", b"q\xffr", b"\x01\x02\x03", b"zz", b"Z"]


def _field_values(dtype: np.dtype, count: int, seed: int) -> np.ndarray:
    """`count` values of a scalar `dtype` (native order) whose bytes are not palindromes."""
    rng = np.random.default_rng(seed)
    native = dtype.newbyteorder("=")
    if dtype.kind in "iu":
        info = np.iinfo(native)
        flat = rng.integers(info.min, info.max, count, dtype=native, endpoint=True)
        head = [258, info.max, info.min, 1, 0x0102 if info.bits > 8 else 7]
        flat[: min(count, len(head))] = np.array(head[:count], dtype=native)
        return flat
    if dtype.kind == "f":
        flat = (rng.standard_normal(count) * 1000).astype(native)
        head = _FLOAT_HEAD[:count]
        flat[: len(head)] = head
        return flat
    if dtype.kind == "S":
        pool = [b[: dtype.itemsize] for b in _BYTES_POOL]
        return np.array([pool[(i * 3 + seed) % len(pool)] for i in range(count)], dtype=dtype)
    raise ValueError(f"no values for {dtype}")


def struct_values(dtype: np.dtype, shape=STRUCT_SHAPE, seed: int = 1) -> np.ndarray:
    """A deterministic structured array of `dtype` (any nesting, sub-array fields)."""
    n = int(np.prod(shape))
    out = np.zeros(n, dtype=dtype)
    for i, name in enumerate(dtype.names):
        field = dtype.fields[name][0]
        if field.names:
            out[name] = struct_values(field, (n,), seed + 31 * (i + 1))
            continue
        sub = field.shape
        count = n * int(np.prod(sub, dtype=np.int64))
        out[name] = _field_values(field.base, count, seed + 31 * (i + 1)).reshape((n, *sub))
    return out.reshape(shape)


def assert_same_records(got: Any, expected: np.ndarray, what: str = "") -> None:
    """Field by field, value by value; byte order of either side does not matter."""
    got = np.asarray(got)
    assert got.dtype.names is not None, f"{what}: read back {got.dtype}, not a structured dtype"
    assert list(got.dtype.names) == list(expected.dtype.names), (
        f"{what}: fields {got.dtype.names} != {expected.dtype.names}"
    )
    assert_same_array(cli_form(got), cli_form(expected), what)


# ------------------------------------------------------------------------------------------
# Running conversions and reading their notes
# ------------------------------------------------------------------------------------------


def run_convert(nc: Neurochunk, src: Path, dst: Path, fmt: str, *extra: Any) -> subprocess.CompletedProcess:
    """`neurochunk convert SRC DST --format FMT EXTRA...`; must exit 0 (no panic)."""
    return nc.run("convert", src, dst, "--format", fmt, *extra)


def note_lines(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if "note:" in line]


def assert_one_note(stderr: str, array_path: str, *mentions: str) -> str:
    """Exactly one `note:` line names `array_path` (e.g. "/" or "/grp/arr") and mentions every
    codec name in `mentions` (case-insensitive); returns that line."""
    notes = note_lines(stderr)
    if array_path == "/":
        mine = notes  # a root array is the only array converted: its note is the only note
    else:
        mine = [n for n in notes if array_path in n]
    assert len(mine) == 1, (
        f"expected exactly one note line for {array_path!r} mentioning {list(mentions)}, "
        f"got {len(mine)}:\n{stderr}"
    )
    line = mine[0]
    for word in mentions:
        assert word.lower() in line.lower(), f"note for {array_path!r} does not mention {word!r}: {line!r}"
    return line


def assert_clean_error(proc: subprocess.CompletedProcess, names: Iterable[str] = ()) -> str:
    """Non-zero exit, one line on stderr naming every string in `names`, no panic/traceback."""
    stderr = proc.stderr.strip()
    assert proc.returncode != 0, f"expected failure, got exit 0; stderr: {stderr!r}"
    assert "panicked" not in stderr, stderr
    assert "Traceback" not in stderr and "stack backtrace" not in stderr, stderr
    assert stderr, "failed without an error message on stderr"
    assert len(stderr.splitlines()) == 1, f"error is not one line:\n{stderr}"
    for name in names:
        assert name in stderr, f"error does not name {name!r}: {stderr!r}"
    return stderr


def run_peer(python: Path, script: str, *args: Any) -> None:
    """Run `script` with another environment's interpreter (e.g. zarr-python 3.4 from py311)."""
    proc = subprocess.run(
        [str(python), "-c", script, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{python} failed:\n{proc.stderr[-3000:]}"


# ------------------------------------------------------------------------------------------
# put into nested paths
# ------------------------------------------------------------------------------------------

# The document of a Zarr group, and what it must hold, per format.
GROUP_DOCUMENTS = {
    "zarr2": (".zgroup", lambda doc: doc == {"zarr_format": 2}),
    "zarr3": ("zarr.json", lambda doc: doc.get("zarr_format") == 3 and doc.get("node_type") == "group"),
}


def _root_attributes(out: Path, fmt: str) -> dict:
    if fmt == "zarr2":
        return load_json(out / ".zattrs")
    return load_json(out / "zarr.json").get("attributes", {})


def check_put_nested_creates_parents(nc: Neurochunk, tmp_path: Path, fmt: str, zarr: Any, peer: str) -> None:
    """`put OUT.zarr/a/b` writes group documents for OUT.zarr and OUT.zarr/a (none above the
    container), and `peer` (a zarr-python module) reads the array through the groups."""
    document, is_group = GROUP_DOCUMENTS[fmt]
    data = np.arange(120, dtype="<u2").reshape(12, 10) * 257
    out = tmp_path / "OUT.zarr"
    nc.put(data, out / "a" / "b", fmt, chunks=(5, 4))
    for group in (out, out / "a"):
        doc = load_json(group / document)
        assert is_group(doc), (group, doc)
    assert not (tmp_path / document).exists(), "metadata written above the container root"
    root = zarr.open_group(str(out), mode="r")
    assert_same_array(cli_form(root["a/b"][...]), data, peer)
    assert_same_array(cli_form(root["a"]["b"][...]), data, f"{peer} via group a")


def check_put_keeps_root_metadata(nc: Neurochunk, tmp_path: Path, fmt: str, zarr: Any) -> None:
    """A second `put` into an existing container keeps the root's attributes (set by `zarr`)."""
    document, is_group = GROUP_DOCUMENTS[fmt]
    first = np.arange(60, dtype="<i4").reshape(6, 10) - 30
    second = np.linspace(-2.25, 1e6, 40, dtype="<f4").reshape(8, 5)
    out = tmp_path / "OUT.zarr"
    nc.put(first, out / "a" / "b", fmt)
    assert (out / document).is_file(), f"put into OUT.zarr/a/b created no root group OUT.zarr/{document}"
    zarr.open_group(str(out), mode="r+").attrs["keep"] = "me"
    nc.put(second, out / "c" / "d", fmt)
    assert _root_attributes(out, fmt) == {"keep": "me"}
    assert is_group(load_json(out / "c" / document))
    root = zarr.open_group(str(out), mode="r")
    assert root.attrs["keep"] == "me"
    assert_same_array(cli_form(root["a/b"][...]), first, "first put")
    assert_same_array(cli_form(root["c/d"][...]), second, "second put")
