"""Drive the `neurochunk` binary from tests and compare its results with what peers produce.

Everything here is independent of the peer library in use (zarr-python 2, zarr-python 3,
tensorstore), so every virtual environment can import it.

* `Neurochunk` wraps the CLI contract: get / put / convert / consolidate / info / tree.
* `cli_form` turns an array as a peer returns it into the form `neurochunk get` must write
  (little-endian, C order, variable-length strings as `<U{maxlen}`, bytes as `|S{maxlen}`).
* `assert_same_array` compares element for element (NaN-aware), dtype and shape included.
* `parse_region` applies a `--region` selection with NumPy semantics to compute expectations.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_BINARY = REPO_ROOT / "target" / "release" / "neurochunk"
PANIC_MARKER = "panicked at"
TIMEOUT_SECONDS = 120


def binary_path() -> Path:
    """The neurochunk binary under test: $NEUROCHUNK_BIN or target/release/neurochunk."""
    value = os.environ.get("NEUROCHUNK_BIN")
    path = Path(value) if value else DEFAULT_BINARY
    if not path.is_absolute():
        path = (REPO_ROOT / path).resolve()
    return path


# --------------------------------------------------------------------------------------------
# The CLI wrapper
# --------------------------------------------------------------------------------------------


class Neurochunk:
    """Runs `neurochunk` subcommands; scratch files (npy in/out) go to `scratch`."""

    def __init__(self, binary: Path, scratch: Path, env: dict[str, str] | None = None, cwd: Path | None = None):
        self.binary = binary
        self.scratch = scratch
        # The environment and working directory of every run (None: this process's own), e.g.
        # remote-store settings, and a scratch folder so that a URL taken for a relative path
        # lands there rather than in the source tree.
        self.env = env
        self.cwd = cwd
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._counter = 0

    def _scratch_file(self, stem: str, suffix: str) -> Path:
        self._counter += 1
        return self.scratch / f"{stem}-{self._counter}{suffix}"

    def run(self, *args: Any, check: bool = True) -> subprocess.CompletedProcess:
        """Run the binary; with check=True a non-zero exit fails the test with stderr shown."""
        argv = [str(self.binary), *map(str, args)]
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIMEOUT_SECONDS,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=self.cwd,
        )
        if PANIC_MARKER in proc.stderr:
            pytest.fail(f"neurochunk panicked: {shlex.join(argv)}\n{proc.stderr}")
        if check and proc.returncode != 0:
            pytest.fail(
                f"neurochunk exited with {proc.returncode}: {shlex.join(argv)}\n"
                f"stderr: {proc.stderr.strip()}"
            )
        return proc

    # -- reading -------------------------------------------------------------------------

    def get(self, path: Path, region: str | None = None) -> np.ndarray:
        """`neurochunk get PATH [--region SEL] -o OUT.npy`, loaded with NumPy."""
        out = self._scratch_file("get", ".npy")
        args: list[Any] = ["get", path]
        if region is not None:
            args += [f"--region={region}"]
        args += ["-o", out]
        self.run(*args)
        assert out.is_file(), f"neurochunk get exited 0 but wrote no {out}"
        return np.load(out, allow_pickle=False)

    def info(self, path: Path) -> dict:
        """`neurochunk info PATH --json` as a dict (bare NaN/Infinity accepted)."""
        proc = self.run("info", path, "--json")
        return _parse_one_json_object(proc.stdout, "info --json")

    def tree(self, path: Path) -> dict:
        """`neurochunk tree PATH --json` as a dict."""
        proc = self.run("tree", path, "--json")
        return _parse_one_json_object(proc.stdout, "tree --json")

    # -- writing -------------------------------------------------------------------------

    def put(self, data: np.ndarray, path: Path, fmt: str, **options: Any) -> None:
        """`neurochunk put IN.npy PATH --format FMT [options]`; options as in `put_options`."""
        src = self._scratch_file("put", ".npy")
        np.save(src, data, allow_pickle=False)
        self.run("put", src, path, "--format", fmt, *put_options(**options))

    def convert(self, src: Path, dst: Path, fmt: str, **options: Any) -> None:
        """`neurochunk convert SRC DST --format FMT [--chunks] [--shards] [--codec] [--consolidate]`."""
        self.run("convert", src, dst, "--format", fmt, *put_options(**options))

    def consolidate(self, path: Path) -> None:
        self.run("consolidate", path)

    # -- failures ------------------------------------------------------------------------

    def fails(self, *args: Any, names: Iterable[str] = ()) -> str:
        """Run a command that must fail cleanly; return its stderr.

        Checks: non-zero exit, no Rust panic, a one-line error on stderr that contains every
        string in `names` (e.g. the array's directory name and the chunk key).
        """
        proc = self.run(*args, check=False)
        cmd = shlex.join([str(self.binary), *map(str, args)])
        stderr = proc.stderr.strip()
        assert proc.returncode != 0, f"expected failure, got exit 0: {cmd}\nstdout: {proc.stdout[:500]}"
        assert stderr, f"failed without an error message on stderr: {cmd}"
        assert len(stderr.splitlines()) == 1, f"error is not one line: {cmd}\n{stderr}"
        for name in names:
            assert name in stderr, f"error does not name {name!r}: {cmd}\n{stderr}"
        return stderr


def put_options(
    *,
    chunks: Sequence[int] | None = None,
    shards: Sequence[int] | None = None,
    codec: str | None = None,
    fill_value: Any = None,
    attrs: dict | None = None,
    order: str | None = None,
    endian: str | None = None,
    dimension_separator: str | None = None,
    vlen: bool = False,
    consolidate: bool = False,
) -> list[str]:
    """Command-line options of `put`/`convert` for the given settings (None = default)."""
    args: list[str] = []
    if chunks is not None:
        args += ["--chunks", ",".join(map(str, chunks))]
    if shards is not None:
        args += ["--shards", ",".join(map(str, shards))]
    if codec is not None:
        args += ["--codec", codec]
    if fill_value is not None:
        args += ["--fill-value", json.dumps(fill_value)]
    if attrs is not None:
        args += ["--attrs", json.dumps(attrs, ensure_ascii=False)]
    if order is not None:
        args += ["--order", order]
    if endian is not None:
        args += ["--endian", endian]
    if dimension_separator is not None:
        args += ["--dimension-separator", dimension_separator]
    if vlen:
        args += ["--vlen"]
    if consolidate:
        args += ["--consolidate"]
    return args


def _parse_one_json_object(text: str, what: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        pytest.fail(f"{what} did not print one JSON document ({exc}):\n{text[:2000]}")
    assert isinstance(value, dict), f"{what} printed {type(value).__name__}, not an object"
    return value


# --------------------------------------------------------------------------------------------
# Expected forms and comparison
# --------------------------------------------------------------------------------------------


def little_endian(dtype: np.dtype) -> np.dtype:
    """The dtype with every multi-byte component (fields, sub-arrays) little-endian."""
    return dtype.newbyteorder("<")


def cli_form(array: Any) -> np.ndarray:
    """What `neurochunk get` must write for an array as a peer returned it.

    Object / StringDType arrays of str become `<U{maxlen}`, of bytes `|S{maxlen}`; everything
    else becomes little-endian C order with the same values.
    """
    array = np.asarray(array)
    if array.dtype.kind in ("O", "T"):
        items = [array.item()] if array.ndim == 0 else list(array.reshape(-1))
        if all(isinstance(x, str) for x in items):
            width = max((len(x) for x in items), default=1)
            return np.array(array.tolist(), dtype=f"<U{max(width, 1)}").reshape(array.shape)
        if all(isinstance(x, bytes) for x in items):
            width = max((len(x) for x in items), default=1)
            return np.array(array.tolist(), dtype=f"|S{max(width, 1)}").reshape(array.shape)
        raise AssertionError(f"object array mixes element types: {set(type(x) for x in items)}")
    # astype(order="C") keeps 0-d arrays 0-d (np.ascontiguousarray would make them 1-d).
    return array.astype(little_endian(array.dtype), order="C")


def assert_same_array(got: np.ndarray, expected: np.ndarray, what: str = "") -> None:
    """Element-for-element equality, NaN/NaT-aware, with dtype and shape compared too."""
    prefix = f"{what}: " if what else ""
    assert got.shape == expected.shape, f"{prefix}shape {got.shape} != expected {expected.shape}"
    assert got.dtype == expected.dtype, (
        f"{prefix}dtype {got.dtype.descr if got.dtype.names else got.dtype.str} != "
        f"expected {expected.dtype.descr if expected.dtype.names else expected.dtype.str}"
    )
    if expected.dtype.names:
        for name in expected.dtype.names:
            assert_same_array(got[name], expected[name], f"{what} field {name!r}")
    elif expected.dtype.kind == "V":
        assert got.tobytes() == expected.tobytes(), f"{prefix}raw bytes differ"
    else:
        np.testing.assert_array_equal(got, expected, strict=True, err_msg=prefix)


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality where NaN equals NaN (attributes may hold bare NaN)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b


def load_json(path: Path) -> Any:
    """Parse a metadata file the way Python's json does (accepts bare NaN)."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


# --------------------------------------------------------------------------------------------
# Regions
# --------------------------------------------------------------------------------------------


def parse_region(selection: str) -> tuple:
    """`--region` text -> NumPy index tuple (ints and slices, NumPy basic-slicing semantics)."""
    parts = []
    for part in selection.split(","):
        part = part.strip()
        if ":" in part:
            bounds = [int(b) if b.strip() else None for b in part.split(":")]
            if len(bounds) > 3:
                raise ValueError(f"bad slice {part!r}")
            parts.append(slice(*bounds))
        else:
            parts.append(int(part))
    return tuple(parts)


def select(array: np.ndarray, selection: str) -> np.ndarray:
    """`array[selection]` as an array of the same dtype (0-d when every axis is an integer).

    Apply it to the peer's own read-back and then `cli_form`: the width of variable-length text
    in `get --region` output is the longest string of the region, not of the whole array.
    """
    out = array[parse_region(selection)]
    if not isinstance(out, np.ndarray):
        out = np.array(out, dtype=array.dtype)
    return out.copy(order="C")


# --------------------------------------------------------------------------------------------
# Bytes-level helpers for corrupting stored chunks
# --------------------------------------------------------------------------------------------

_CRC32C_TABLE: list[int] = []


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as the Zarr v3 `crc32c` codec stores it (little-endian uint32)."""
    if not _CRC32C_TABLE:
        for n in range(256):
            c = n
            for _ in range(8):
                c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
            _CRC32C_TABLE.append(c)
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def flip_byte(path: Path, offset: int) -> None:
    """Invert one byte of a file (negative offsets count from the end)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def truncate_file(path: Path, keep: int) -> None:
    """Keep only the first `keep` bytes (negative: drop that many from the end)."""
    data = path.read_bytes()
    path.write_bytes(data[:keep])
