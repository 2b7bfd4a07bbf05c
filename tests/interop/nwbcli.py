"""The `neurochunk nwb ...` subcommands, driven from the NWB suites (tests/interop/nwb2, nwb3).

`NwbCli` extends ncli's `Neurochunk` (same binary, same panic check, same scratch directory):

* `inspect(path)`   -> the `nwb inspect PATH --json` document (objects/links/attribute_refs/dataset_refs)
* `specs(path)`     -> the `nwb specs PATH --json` list
* `check(path)`     -> the CompletedProcess of `nwb check PATH` (exit 0 = no problem, 1 = problems)
* `nwb_get(file, object_path)` -> the array `nwb get FILE OBJECT_PATH -o OUT.npy` wrote
* `demo(out, convention, namespaces, scale)` and `nwb_convert(src, dst, convention)`
* `nwb_fails(...)`  -> run a command that must fail cleanly; returns stderr

Every call fails the test when stderr contains a Rust panic (`panicked at`), whatever the exit code.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pytest

from ncli import PANIC_MARKER, TIMEOUT_SECONDS, Neurochunk

INSPECT_KEYS = ("objects", "links", "attribute_refs", "dataset_refs")
ENTRY_KEYS = {
    "objects": ("path", "neurodata_type", "namespace", "object_id"),
    "links": ("path", "target", "source"),
    "attribute_refs": ("path", "attribute", "target"),
    "dataset_refs": ("path", "index", "target"),
}


class NwbCli(Neurochunk):
    """`neurochunk nwb ...` on top of the generic wrapper."""

    def run_timed(self, *args: Any, timeout: float = TIMEOUT_SECONDS) -> subprocess.CompletedProcess:
        """Like `run(..., check=False)` but with a custom timeout that fails the test (not a hang)."""
        argv = [str(self.binary), *map(str, args)]
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, errors="replace", timeout=timeout, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"neurochunk did not finish within {timeout} s (hang?): {shlex.join(argv)}")
        if PANIC_MARKER in proc.stderr:
            pytest.fail(f"neurochunk panicked: {shlex.join(argv)}\n{proc.stderr}")
        return proc

    # -- reading -------------------------------------------------------------------------

    def _json(self, subcommand: str, path: Path, kind: type, kind_name: str) -> Any:
        """`nwb SUBCOMMAND PATH --json`: one JSON document of type `kind` on stdout."""
        proc = self.run("nwb", subcommand, path, "--json")
        try:
            value = json.loads(proc.stdout)
        except json.JSONDecodeError as exc:
            pytest.fail(f"nwb {subcommand} --json did not print one JSON document ({exc}):\n{proc.stdout[:2000]}")
        assert isinstance(value, kind), f"nwb {subcommand} --json printed {type(value).__name__}, not {kind_name}"
        return value

    def inspect(self, path: Path) -> dict:
        doc = self._json("inspect", path, dict, "an object")
        assert sorted(doc) == sorted(INSPECT_KEYS), f"nwb inspect --json keys {sorted(doc)}"
        return doc

    def inspect_text(self, path: Path) -> str:
        return self.run("nwb", "inspect", path).stdout

    def specs(self, path: Path) -> list:
        return self._json("specs", path, list, "a list")

    def check(self, path: Path, *options: Any, timeout: float = TIMEOUT_SECONDS) -> subprocess.CompletedProcess:
        """`nwb check PATH [options]`; the caller asserts on returncode / stderr."""
        proc = self.run_timed("nwb", "check", path, *options, timeout=timeout)
        assert proc.returncode in (0, 1), (
            f"nwb check exits 0 (no problem) or 1 (problems), got {proc.returncode}\nstderr: {proc.stderr}"
        )
        return proc

    def nwb_get(self, file: Path, object_path: str) -> np.ndarray:
        out = self._scratch_file("nwb-get", ".npy")
        self.run("nwb", "get", file, object_path, "-o", out)
        assert out.is_file(), f"nwb get exited 0 but wrote no {out}"
        return np.load(out, allow_pickle=False)

    # -- writing -------------------------------------------------------------------------

    def demo(self, out: Path, convention: str, namespaces: Sequence[Path] = (), scale: int | None = None) -> Path:
        args: list[Any] = ["nwb", "demo", out, "--convention", convention]
        for ns in namespaces:
            args += ["--namespace", ns]
        if scale is not None:
            args += ["--scale", scale]
        self.run(*args)
        return out

    def nwb_convert(self, src: Path, dst: Path, convention: str) -> Path:
        self.run("nwb", "convert", src, dst, "--convention", convention)
        return dst

    # -- failures ------------------------------------------------------------------------

    def nwb_fails(self, *args: Any, names: Iterable[str] = (), timeout: float = TIMEOUT_SECONDS) -> str:
        """Run a command that must fail: non-zero exit, no panic, an error on stderr naming every
        string of `names`. Returns stderr."""
        proc = self.run_timed(*args, timeout=timeout)
        cmd = shlex.join([str(self.binary), *map(str, args)])
        stderr = proc.stderr.strip()
        assert proc.returncode != 0, f"expected failure, got exit 0: {cmd}\nstdout: {proc.stdout[:500]}"
        assert stderr, f"failed without an error message on stderr: {cmd}"
        for name in names:
            assert name in stderr, f"error does not name {name!r}: {cmd}\n{stderr}"
        return stderr


def normalized_specs(entries: list) -> list:
    """`nwb specs --json` entries with sorted sources and without the `namespace` document:
    the contract's "sources" leaves open whether the namespace document itself is listed
    (neurochunk lists every document of the version group; nwbwalk.cached_specs lists the
    schema sources only)."""
    assert [e["namespace"] for e in entries] == sorted(e["namespace"] for e in entries), "not sorted by namespace"
    for e in entries:
        assert tuple(e) == ("namespace", "version", "sources"), f"specs entry keys {tuple(e)}"
    return [{**e, "sources": sorted(s for s in e["sources"] if s != "namespace")} for e in entries]


def assert_inspect_form(doc: dict) -> None:
    """Key order inside each entry and the sort order of each list, as the contract fixes them."""
    for key in INSPECT_KEYS:
        entries = doc[key]
        assert isinstance(entries, list), f"{key} is not a list"
        for entry in entries:
            keys = tuple(entry)
            want = ENTRY_KEYS[key]
            if key == "dataset_refs" and "field" in entry:
                want = ("path", "index", "field", "target")
            if key == "attribute_refs" and "region" in entry:
                want = ("path", "attribute", "target", "region")
            assert keys == want, f"{key} entry keys {keys} != {want}: {entry}"
    assert doc["objects"] == sorted(doc["objects"], key=lambda o: o["path"]), "objects not sorted by path"
    assert doc["links"] == sorted(doc["links"], key=lambda o: o["path"]), "links not sorted by path"
    assert doc["attribute_refs"] == sorted(doc["attribute_refs"], key=lambda o: (o["path"], o["attribute"]))
    assert doc["dataset_refs"] == sorted(
        doc["dataset_refs"], key=lambda o: (o["path"], o["index"], o.get("field", ""))
    ), "dataset_refs not sorted by (path, index, field)"


def diff_inspect(got: dict, expected: dict) -> str:
    """A short human-readable difference of two inspect documents (empty when equal)."""
    lines = []
    for key in INSPECT_KEYS:
        g = [json.dumps(e, sort_keys=True) for e in got.get(key, [])]
        e = [json.dumps(x, sort_keys=True) for x in expected.get(key, [])]
        missing = sorted(set(e) - set(g))
        extra = sorted(set(g) - set(e))
        for m in missing[:10]:
            lines.append(f"{key}: missing {m}")
        for x in extra[:10]:
            lines.append(f"{key}: unexpected {x}")
        if not missing and not extra and g != e:
            lines.append(f"{key}: same entries, different order or multiplicity")
    return "\n".join(lines)


def assert_inspect_equal(got: dict, expected: dict) -> None:
    assert_inspect_form(got)
    if got != expected:
        pytest.fail("nwb inspect --json differs from the zarr-python walk:\n" + diff_inspect(got, expected))
