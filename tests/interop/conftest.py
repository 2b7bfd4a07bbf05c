"""Shared fixtures of the interop suite: the `neurochunk` binary under test and its wrapper.

The binary is $NEUROCHUNK_BIN (default target/release/neurochunk); a missing binary fails every
test that needs it rather than skipping, so an unbuilt tree never looks green.
"""

from __future__ import annotations

import os

import pytest

from ncli import Neurochunk, binary_path


@pytest.fixture(scope="session")
def neurochunk_binary():
    path = binary_path()
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"neurochunk binary not found at {path}: run `cargo build --release -p neurochunk` "
            "or set NEUROCHUNK_BIN"
        )
    return path


@pytest.fixture
def nc(neurochunk_binary, tmp_path) -> Neurochunk:
    """The CLI wrapper; its scratch npy files live in this test's tmp_path."""
    return Neurochunk(neurochunk_binary, tmp_path / "_neurochunk")
