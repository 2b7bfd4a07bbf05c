"""Fixtures for the neurarrow table interop tests (run in the `.peers/py312` environment).

The binary is the shared `neurochunk_binary` fixture ($NEUROCHUNK_BIN, default
target/release/neurochunk; a missing binary fails the tests). Tables are written
by pyarrow at test time (no binary fixtures).
"""

import json
import subprocess

import pytest


class TableCli:
    """Runs `neurochunk` and checks that it never panics."""

    def __init__(self, binary):
        self.binary = str(binary)

    def __call__(self, *args, check=None):
        proc = subprocess.run(
            [self.binary, *map(str, args)], capture_output=True, text=True, timeout=600
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
def cli(neurochunk_binary) -> TableCli:
    return TableCli(neurochunk_binary)
