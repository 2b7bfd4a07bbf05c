"""Bad NWB-on-Zarr input for the NWB suites, crafted from a valid pynwb-written store with
zarr-python and raw bytes: broken references and links, link cycles, escaping external links,
malformed link lists, and (legacy convention) hostile or truncated pickles.

Every mutation re-writes the consolidated metadata afterwards, so that a reader that prefers
`.zmetadata` / the inline v3 metadata sees the same (bad) content as one that walks the store.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")  # see nwb2/conftest.py

import numpy as np  # noqa: E402
import zarr  # noqa: E402

import nwbwalk  # noqa: E402

ZARR2 = nwbwalk.ZARR2
LINKS_KEY = "zarr_link" if ZARR2 else "_LINKS"


def copy_store(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def consolidate(store: Path) -> None:
    if ZARR2:
        zarr.consolidate_metadata(zarr.DirectoryStore(str(store)))
    else:
        zarr.consolidate_metadata(str(store))


def node(store: Path, node_path: str, mode: str = "r+"):
    """A group or array of the store, opened for writing without consolidated metadata."""
    key = node_path.strip("/")
    if ZARR2:
        root = zarr.open_group(zarr.DirectoryStore(str(store)), mode=mode)
    else:
        root = zarr.open_group(str(store), mode=mode, use_consolidated=False)
    return root[key] if key else root


def new_root(store: Path):
    """An empty root group of a new store in this environment's Zarr format (v2 / v3)."""
    if ZARR2:
        return zarr.open_group(zarr.DirectoryStore(str(store)), mode="w")
    return zarr.open_group(str(store), mode="w", zarr_format=3)


def set_attribute(store: Path, node_path: str, name: str, value: Any) -> None:
    node(store, node_path).attrs[name] = value
    consolidate(store)


def set_links(store: Path, group_path: str, value: Any) -> None:
    """Replace a group's link list (`zarr_link` / `_LINKS`) with `value`, whatever it is."""
    set_attribute(store, group_path, LINKS_KEY, value)


def add_link(store: Path, group_path: str, name: str, target: str, source: str = ".") -> None:
    group = node(store, group_path)
    links = list(nwbwalk.attrs_of(group).get(LINKS_KEY, []))
    links.append({"name": name, "path": target, "source": source})
    set_links(store, group_path, links)


def retarget_link(store: Path, group_path: str, name: str, target: str, source: str | None = None) -> None:
    links = list(nwbwalk.attrs_of(node(store, group_path)).get(LINKS_KEY, []))
    for entry in links:
        if entry["name"] == name:
            entry["path"] = target
            if source is not None:
                entry["source"] = source
            break
    else:
        raise KeyError(f"{group_path} has no link {name!r}")
    set_links(store, group_path, links)


def reference_attribute(target: str) -> dict:
    """The attribute form of an object reference in this convention."""
    if ZARR2:
        return {"zarr_dtype": "object", "value": {"source": ".", "path": target, "object_id": None, "source_object_id": None}}
    return {"_REFERENCE": {"source": ".", "path": target}}


def set_reference_element(store: Path, array_path: str, index: int, target: str, as_json: bool = False) -> None:
    """Point element `index` of a reference array at `target` (legacy: a ZarrReference pickled
    or json2-encoded by zarr-python with the array's own codec; v3: a path string, or with
    `as_json` the JSON text of a `{"source", "path"}` dict)."""
    array = node(store, array_path)
    if ZARR2:
        from hdmf_zarr.utils import ZarrReference

        data = array[...]
        data[index] = ZarrReference(source=".", path=target, object_id=None, source_object_id=None)
        array[...] = data
    else:
        array[index] = json.dumps({"source": ".", "path": target}) if as_json else target
    consolidate(store)


def set_compound_reference(store: Path, array_path: str, index: int, field: str, target: str) -> None:
    """Point the reference field `field` of compound element `index` at `target` (legacy: a
    ZarrReference re-pickled by zarr-python; v3: the fixed-length path string)."""
    array = node(store, array_path)
    data = array[...]
    if ZARR2:
        from hdmf_zarr.utils import ZarrReference

        data[field][index] = ZarrReference(source=".", path=target, object_id=None, source_object_id=None)
    else:
        data[field][index] = target
    array[...] = data
    consolidate(store)


# --------------------------------------------------------------------------------------------
# Legacy pickles
# --------------------------------------------------------------------------------------------


def os_system_pickle(command: str) -> bytes:
    """A pickle whose GLOBAL is `os system`: unpickling it runs `command` in a shell.

    Hand-assembled (protocol 2) because `pickle.dumps` would name `posix.system` on Linux."""
    arg = command.encode("utf-8")
    return (
        b"\x80\x02"  # PROTO 2
        + b"cos\nsystem\n"  # GLOBAL os.system
        + b"X" + len(arg).to_bytes(4, "little") + arg  # BINUNICODE command
        + b"\x85"  # TUPLE1
        + b"R"  # REDUCE -> os.system(command)
        + b"."  # STOP
    )


def v2_chunk_path(store: Path, array_path: str, key: str = "0") -> Path:
    return store / array_path.strip("/") / key


def decode_v2_chunk(store: Path, array_path: str, key: str = "0") -> bytes:
    """The chunk's bytes after the compressor (i.e. what the filters, e.g. pickle, see)."""
    import numcodecs

    meta = json.loads((store / array_path.strip("/") / ".zarray").read_text())
    raw = v2_chunk_path(store, array_path, key).read_bytes()
    if meta.get("compressor"):
        raw = bytes(numcodecs.get_codec(meta["compressor"]).decode(raw))
    return raw


def write_v2_chunk(store: Path, array_path: str, payload: bytes, key: str = "0") -> None:
    """Replace a chunk by `payload` run through the array's compressor (filters bypassed)."""
    import numcodecs

    meta = json.loads((store / array_path.strip("/") / ".zarray").read_text())
    if meta.get("compressor"):
        payload = bytes(numcodecs.get_codec(meta["compressor"]).encode(np.frombuffer(payload, dtype="u1")))
    v2_chunk_path(store, array_path, key).write_bytes(payload)


def pickle_globals(payload: bytes) -> list[str]:
    """The `module.name` globals a pickle stream names (GLOBAL and STACK_GLOBAL)."""
    import pickletools

    names, strings = [], []
    for op, arg, _ in pickletools.genops(payload):
        if op.name == "GLOBAL":
            names.append(arg.replace(" ", "."))
        elif op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            names.append(".".join(strings[-2:]))
    return names

