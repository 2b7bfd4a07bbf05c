"""Icechunk repositories: versioned, transactional Zarr v3 hierarchies on a local disk or in a
bucket, written and read with icechunk's own format (its Python package reads what neurochunk
writes, and the other way round).

Any path or URL inside a repository opens like any hierarchy, at the head of ``main`` unless
``branch=``, ``tag=`` or ``snapshot=`` says otherwise (:func:`neurochunk.open`). Writing
happens in a :func:`session`: while it is open, every neurochunk writer (arrays, groups, NWB
files, OME-Zarr pyramids) given a path inside the repository writes into it, readers in this
process see those writes, and nobody else sees anything until the session commits, which it
does when the ``with`` block ends without an exception.

>>> import numpy as np, neurochunk as nc
>>> nc.icechunk.init("lab.icechunk")
>>> with nc.icechunk.session("lab.icechunk", message="first volume") as s:
...     a = nc.create_array(s.path("volume"), shape=(64, 64), dtype="uint8", chunks=(32, 32))
...     a[:] = 7
>>> nc.icechunk.log("lab.icechunk")["snapshots"][0]["message"]
'first volume'
>>> int(nc.open("lab.icechunk/volume")[0, 0])
7
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from . import _neurochunk as _native
from ._core import _location, _options_json, with_version

__all__ = ["Fork", "Session", "init", "log", "create_tag", "create_branch", "session"]


class Session:
    """An open session on a branch of a repository (see :func:`session`)."""

    def __init__(self, raw: _native.RawSession) -> None:
        self._raw = raw

    @property
    def branch(self) -> str:
        """The branch the session commits to."""
        return self._raw.branch

    @property
    def repository(self) -> str:
        """The repository's location, as given."""
        return self._raw.repository

    @property
    def has_changes(self) -> bool:
        """True when the session holds changes not committed yet."""
        return self._raw.has_changes

    @property
    def is_open(self) -> bool:
        """True until the session commits or is aborted."""
        return self._raw.open

    def path(self, *parts: str) -> str:
        """The location of a node inside the repository (``s.path("group", "array")``)."""
        inside = "/".join(p.strip("/") for p in parts if p.strip("/"))
        base = self.repository.rstrip("/")
        return f"{base}/{inside}" if inside else base

    def commit(self, message: str) -> str | None:
        """Commit the changes as one snapshot and close the session: the snapshot's id, or
        None when nothing changed. A conflict with a newer commit on the branch that cannot be
        rebased raises :class:`neurochunk.StoreError` naming the arrays and chunks both wrote;
        the session is closed either way."""
        return self._raw.commit(message)

    def abort(self) -> None:
        """Close the session and discard its changes."""
        self._raw.abort()

    def fork(self) -> Fork:
        """A fork of the session for a worker in another process (Dask's distributed
        scheduler, a process pool): it pickles, the worker writes inside ``with fork:``, and
        returns it; :meth:`merge` takes the returned forks' changes into this session. The
        session's own changes so far are the forks' starting point."""
        return Fork(self._raw.fork())

    def merge(self, *forks: Fork) -> int:
        """Take the changes of ``forks`` (as the workers returned them) into the session, to
        be committed with it. Chunks (or shards) that several forks wrote are combined element
        by element: every element a fork changed is kept, and an element two forks changed to
        different values raises :class:`neurochunk.StoreError` naming it (nothing is merged
        then). Returns the number of chunks so combined."""
        for fork in forks:
            if not isinstance(fork, Fork):
                raise TypeError(f"merge takes Fork objects, not {type(fork).__name__}")
        return self._raw.merge([fork._state for fork in forks])

    def __repr__(self) -> str:
        state = "open" if self.is_open else "closed"
        return f"<neurochunk.icechunk.Session {self.repository} branch={self.branch!r} {state}>"


class Fork:
    """A fork of a :class:`Session` (see :meth:`Session.fork`), sent to a worker process.

    Inside ``with fork:`` every neurochunk writer in the worker's process given a path inside
    the repository writes into the fork (one fork is open per branch and process at a time);
    at the block's end the fork holds those changes. Return it to the process holding the
    session and pass it to :meth:`Session.merge`.

    >>> def task(fork, rows):  # doctest: +SKIP
    ...     with fork:
    ...         nc.open("lab.icechunk/volume", mode="r+")[rows] = 1
    ...     return fork
    """

    def __init__(self, state: bytes) -> None:
        self._state = state
        self._open: _native.RawFork | None = None

    def __enter__(self) -> Fork:
        if self._open is not None:
            raise RuntimeError("this fork is already open")
        self._open = _native.icechunk_fork_open(self._state)
        return self

    def __exit__(self, *exc: object) -> None:
        opened, self._open = self._open, None
        if opened is not None:
            finished = opened.finish()
            if exc[0] is None:
                self._state = finished

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        if self._open is not None:
            raise RuntimeError("an open fork cannot be sent to another process")
        return (Fork, (self._state,))

    def __repr__(self) -> str:
        return f"<neurochunk.icechunk.Fork {len(self._state)} bytes>"


@contextmanager
def session(
    repo: Any,
    branch: str = "main",
    message: str | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> Iterator[Session]:
    """Open a session on ``branch`` of the repository at ``repo`` (a directory or a URL):
    the block's writes into the repository become one commit with ``message`` (default:
    ``"neurochunk session"``) when it ends normally, and are discarded when it raises.
    A process has at most one session per branch of a repository at a time."""
    raw = _native.icechunk_session(_location(repo), branch, _options_json(storage_options))
    opened = Session(raw)
    try:
        yield opened
    except BaseException:
        if opened.is_open:
            opened.abort()
        raise
    if opened.is_open:
        opened.commit(message if message is not None else "neurochunk session")


def init(repo: Any, *, storage_options: Mapping[str, Any] | None = None) -> None:
    """Create an empty repository (with its ``main`` branch) at a missing or empty directory,
    or an empty URL prefix."""
    _native.icechunk_init(_location(repo), _options_json(storage_options))


def log(
    repo: Any,
    *,
    branch: str | None = None,
    tag: str | None = None,
    snapshot: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The history from a version back to the first snapshot (newest first; default: the head
    of ``main``) and the repository's names: ``{"snapshots": [{"id", "parent", "time",
    "message"}, ...], "branches": {name: id}, "tags": {name: id}}``."""
    options = with_version(storage_options, branch, tag, snapshot)
    result: dict[str, Any] = json.loads(_native.icechunk_log(_location(repo), _options_json(options)))
    return result


def create_tag(
    repo: Any,
    name: str,
    *,
    branch: str | None = None,
    tag: str | None = None,
    snapshot: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """Create a tag (which never moves) at a version (default: the head of ``main``); returns
    the snapshot id. An existing tag is an error."""
    options = with_version(storage_options, branch, tag, snapshot)
    return _native.icechunk_create_ref(_location(repo), "tag", name, _options_json(options))


def create_branch(
    repo: Any,
    name: str,
    *,
    branch: str | None = None,
    tag: str | None = None,
    snapshot: str | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> str:
    """Create a branch at a version (default: the head of ``main``); returns the snapshot id."""
    options = with_version(storage_options, branch, tag, snapshot)
    return _native.icechunk_create_ref(_location(repo), "branch", name, _options_json(options))
