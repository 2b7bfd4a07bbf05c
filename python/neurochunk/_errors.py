"""The exception classes of neurochunk.

Every error the package raises on purpose is a :class:`neurochunk.Error`; each also derives
from the built-in class a Python user would catch for it (``KeyError`` and
``FileNotFoundError`` for a missing node, ``ValueError`` for bad input, ``IndexError`` for an
index out of bounds, ``NotImplementedError`` for data this build cannot decode,
``PermissionError`` for a write to a read-only node, ``OSError`` for a failing store).
"""

from __future__ import annotations

__all__ = [
    "Error",
    "NodeNotFoundError",
    "NodeExistsError",
    "InvalidInputError",
    "OutOfBoundsError",
    "CorruptDataError",
    "ReadOnlyError",
    "StoreError",
    "UnsupportedError",
]


class Error(Exception):
    """Base class of every neurochunk error."""


class NodeNotFoundError(Error, KeyError, FileNotFoundError):
    """No array or group at the given path (a ``KeyError`` and a ``FileNotFoundError``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class NodeExistsError(Error, FileExistsError):
    """A node already exists where one was to be created."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InvalidInputError(Error, ValueError):
    """Bad input: an unknown dtype or compressor, a wrong shape, a malformed selection."""


class OutOfBoundsError(Error, IndexError):
    """An index outside the array's shape."""


class CorruptDataError(Error):
    """Stored data or metadata that cannot be decoded (names the node and chunk)."""


class ReadOnlyError(Error, PermissionError):
    """A write to a node opened read-only."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StoreError(Error, OSError):
    """The storage backend failed (a file system or network error)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class UnsupportedError(Error, NotImplementedError):
    """Valid data this build cannot decode (e.g. Draco-encoded mesh fragments); names the
    file."""
