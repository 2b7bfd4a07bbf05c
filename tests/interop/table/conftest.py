"""Fixtures for the neurarrow table interop tests.

The CLI binary comes from the environment variable NEUROCHUNK_BIN; tables are
written by pyarrow at test time (no binary fixtures).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def nc_bin() -> str:
    path = os.environ.get("NEUROCHUNK_BIN")
    if not path or not Path(path).exists():
        pytest.skip("NEUROCHUNK_BIN is not set to the neurochunk binary")
    return path


class Runner:
    def __init__(self, binary: str):
        self.binary = binary

    def __call__(self, *args, check=None):
        proc = subprocess.run(
            [self.binary, *map(str, args)], capture_output=True, text=True, timeout=300
        )
        assert "panicked" not in proc.stderr, proc.stderr
        assert "RUST_BACKTRACE" not in proc.stderr, proc.stderr
        if check is not None:
            assert proc.returncode == check, (proc.returncode, proc.stdout, proc.stderr)
        return proc

    def validate(self, *paths, flags=()):
        """Runs `table validate --json`; returns (exit code, [report per table])."""
        proc = self("table", "validate", "--json", *flags, *paths)
        reports = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        return proc.returncode, reports


@pytest.fixture(scope="session")
def nc(nc_bin) -> Runner:
    return Runner(nc_bin)
