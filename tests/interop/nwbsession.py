"""Session fixtures shared by the NWB suites (imported into tests/interop/nwb2 and nwb3 conftest).

Every fixture file is generated once per session in a tmp dir, lazily (a test run selecting
only a few tests writes only what they need):

* `nwb_files.path(kind)`      a pynwb/hdmf-zarr file of this environment's convention
* `nwb_files.other(kind)`     the same fixture written by the *other* environment
                              (`.peers/py312` from nwb2, `.peers/py311` from nwb3)
* `nwb_files.walk(path)`      the expected `nwb inspect --json` (zarr-python walk), cached;
                              stores of the other convention are walked by the other environment
* `demo_file` / `other_demo_file`  `neurochunk nwb demo` in this / the other convention
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import nwbfixtures
import nwbwalk
from nwbcli import NwbCli

# What the suite conftests import with `from nwbsession import *`.
__all__ = [
    "convention",
    "demo_file",
    "nwb",
    "nwb_files",
    "nwb_session_cli",
    "other_convention",
    "other_demo_file",
    "schema_namespaces",
]

OTHER = {"zarr2": "zarr3", "zarr3": "zarr2"}
SUBPROCESS_TIMEOUT = 300


def require_peer_stack(suite: str, zarr_version: str, hdmf_zarr_version: str, env: str) -> None:
    """The version guard of a suite's conftest: raise (stopping the run before any test) unless
    zarr-python `zarr_version`.* and hdmf-zarr `hdmf_zarr_version`.* are the installed ones, i.e.
    unless the suite runs in its environment `env` (`.peers/pyXYZ`)."""
    import hdmf_zarr
    import zarr

    if not (zarr.__version__.startswith(f"{zarr_version}.") and hdmf_zarr.__version__.startswith(f"{hdmf_zarr_version}.")):
        raise RuntimeError(
            f"tests/interop/{suite} needs zarr-python {zarr_version} and hdmf-zarr {hdmf_zarr_version} "
            f"(found zarr {zarr.__version__}, hdmf-zarr {hdmf_zarr.__version__}); run it with {env}/bin/python -m pytest"
        )


def run_other_python(convention: str, script: str, *args) -> str:
    """Run tests/interop/<script> with the interpreter of `convention`'s environment; stdout."""
    python = nwbfixtures.CONVENTION_PYTHON[convention]
    if not python.is_file():
        pytest.fail(f"{python} not found: run scripts/setup-peers (the NWB suites need both .peers/py311 and .peers/py312)")
    argv = [str(python), "-W", "ignore", str(nwbfixtures.HERE / script), *map(str, args)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return proc.stdout


class FixtureFiles:
    def __init__(self, root: Path, convention: str):
        self.root = root
        self.convention = convention
        self.other_convention = OTHER[convention]
        self._walks: dict[Path, dict] = {}
        self._gets: dict[str, dict] = {}

    def path(self, kind: str) -> Path:
        out = self.root / self.convention / f"{kind}.nwb.zarr"
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            nwbfixtures.FIXTURES[kind](out)
        return out

    def other(self, kind: str) -> Path:
        out = self.root / self.other_convention / f"{kind}.nwb.zarr"
        if not out.exists():
            out.parent.mkdir(parents=True, exist_ok=True)
            run_other_python(self.other_convention, "nwbfixtures.py", kind, out)
        return out

    def walk(self, path: Path) -> dict:
        """Expected inspect document of a store of either convention (cached: stores are not
        modified after creation)."""
        path = Path(path)
        if path not in self._walks:
            if nwbwalk.convention_of(path) == self.convention:
                self._walks[path] = nwbwalk.expected_inspect(path)
            else:
                self._walks[path] = json.loads(run_other_python(self.other_convention, "nwbwalk.py", path))
        return self._walks[path]


    def gets(self, kind: str) -> dict:
        """What `nwb get` must write for the representative datasets of a fixture (pynwb's read)."""
        import nwbpeer

        if kind not in self._gets:
            path = self.path(kind)
            with nwbpeer.open_nwb(path) as io:
                nwbfile = io.read()
                self._gets[kind] = nwbpeer.expected_gets(path, nwbfile, self.walk(path), kind)
            assert sorted(self._gets[kind]) == sorted(nwbpeer.GET_PATHS[kind]), kind
        return self._gets[kind]


@pytest.fixture(scope="session")
def convention() -> str:
    return nwbfixtures.this_convention()


@pytest.fixture(scope="session")
def other_convention(convention) -> str:
    return OTHER[convention]


@pytest.fixture(scope="session")
def nwb_files(tmp_path_factory, convention) -> FixtureFiles:
    return FixtureFiles(tmp_path_factory.mktemp("nwb-fixtures"), convention)


@pytest.fixture
def nwb(neurochunk_binary, tmp_path) -> NwbCli:
    """The CLI wrapper with `nwb ...` helpers; scratch files in this test's tmp_path."""
    return NwbCli(neurochunk_binary, tmp_path / "_neurochunk")


@pytest.fixture(scope="session")
def nwb_session_cli(neurochunk_binary, tmp_path_factory) -> NwbCli:
    return NwbCli(neurochunk_binary, tmp_path_factory.mktemp("nwb-cli"))


@pytest.fixture(scope="session")
def schema_namespaces() -> list[Path]:
    import nwbpeer

    return nwbpeer.schema_namespace_files()


@pytest.fixture(scope="session")
def demo_file(nwb_session_cli, tmp_path_factory, convention, schema_namespaces) -> Path:
    """`neurochunk nwb demo --convention <this> --namespace core --namespace hdmf-common`."""
    out = tmp_path_factory.mktemp("nwb-demo") / f"demo-{convention}.nwb.zarr"
    return nwb_session_cli.demo(out, convention, schema_namespaces)


@pytest.fixture(scope="session")
def other_demo_file(nwb_session_cli, tmp_path_factory, other_convention, schema_namespaces) -> Path:
    out = tmp_path_factory.mktemp("nwb-demo-other") / f"demo-{other_convention}.nwb.zarr"
    return nwb_session_cli.demo(out, other_convention, schema_namespaces)
