"""What `neurochunk nwb inspect PATH --json` must print, computed with zarr-python alone.

Works under zarr-python 2 (legacy hdmf-zarr convention: `zarr_dtype`, `zarr_link`,
`{"zarr_dtype": "object", "value": {...}}`, pickled/json2 reference arrays) and zarr-python 3
(hdmf-zarr 0.14 convention: `_DTYPE`, `_LINKS`, `{"_REFERENCE": {...}}`, path-string reference
arrays, `struct` compounds with `_REFERENCE_FIELDS`). The hierarchy is walked for real (no
consolidated metadata), so a stale or incomplete `.zmetadata` / inline metadata cannot hide nodes.

Also runnable as a script (prints the expected JSON), so that a suite can walk a store of the
other convention with the other environment's zarr-python:

    .peers/py312/bin/python tests/interop/nwbwalk.py STORE      # -> {"objects": ..., ...}
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

# Legacy reference arrays are numcodecs Pickle; numcodecs >= 0.15.2 refuses to decode them unless
# this is set before numcodecs is imported. Only ever applied to stores written by hdmf-zarr here.
os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")

import numpy as np  # noqa: E402
import zarr  # noqa: E402

ZARR2 = zarr.__version__.startswith("2.")

# --------------------------------------------------------------------------------------------
# Walking the hierarchy
# --------------------------------------------------------------------------------------------


def open_root(path: Path | str):
    """The root group, opened without consolidated metadata."""
    found = convention_of(path)
    if found != ("zarr2" if ZARR2 else "zarr3"):
        raise ValueError(
            f"{path} is a {found} store; walk it with the other environment's zarr-python "
            f"(`.peers/{'py311' if found == 'zarr2' else 'py312'}/bin/python tests/interop/nwbwalk.py STORE`)"
        )
    if ZARR2:
        return zarr.open_group(zarr.DirectoryStore(str(path)), mode="r")
    return zarr.open_group(str(path), mode="r", use_consolidated=False)


def is_array(node) -> bool:
    return isinstance(node, zarr.Array)


def walk(path: Path | str) -> Iterator[tuple[str, Any]]:
    """Every node below (and including) the root as (NWB path, zarr node), parents first."""
    root = open_root(path)

    def visit(group, prefix: str):
        for name, child in sorted(group.members() if not ZARR2 else _members2(group)):
            child_path = f"{prefix}/{name}"
            yield child_path, child
            if not is_array(child):
                yield from visit(child, child_path)

    yield "/", root
    yield from visit(root, "")


def _members2(group):
    return list(group.groups()) + list(group.arrays())


def attrs_of(node) -> dict:
    return dict(node.attrs.asdict()) if hasattr(node.attrs, "asdict") else dict(node.attrs)


def join(parent: str, name: str) -> str:
    return f"/{name}" if parent == "/" else f"{parent}/{name}"


# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


def attribute_reference(value: Any) -> dict | None:
    """The reference dict held by an attribute value, or None if the value is no reference."""
    if isinstance(value, dict):
        if "_REFERENCE" in value and isinstance(value["_REFERENCE"], dict):
            return value["_REFERENCE"]
        if value.get("zarr_dtype") == "object" and isinstance(value.get("value"), dict):
            return value["value"]
    return None


def element_target(element: Any) -> str | None:
    """Target path of one reference element (legacy dict / ZarrReference, v3 path string or JSON
    text of a dict); None for the "no reference" values (None, 0, "")."""
    if element is None:
        return None
    if isinstance(element, np.generic):
        element = element.item()
    if isinstance(element, bytes):
        element = element.decode("utf-8")
    if isinstance(element, dict):
        return element.get("path") or None
    if isinstance(element, str):
        text = element.strip("\x00")
        if not text:
            return None
        if text.startswith("{"):
            try:
                parsed = json.loads(text)
            except json.JSONDecodeError:
                return text
            if isinstance(parsed, dict):
                return parsed.get("path") or None
        return text
    if isinstance(element, (int, float)) and element == 0:
        return None
    raise ValueError(f"unexpected reference element {element!r} ({type(element).__name__})")


def reference_fields(node, attrs: dict) -> list[str]:
    """Names of the reference fields of a compound array (empty for other arrays)."""
    if "_REFERENCE_FIELDS" in attrs:
        return list(attrs["_REFERENCE_FIELDS"])
    zdt = attrs.get("zarr_dtype")
    if isinstance(zdt, list):
        return [f["name"] for f in zdt if isinstance(f, dict) and f.get("dtype") == "object"]
    return []


def is_reference_array(attrs: dict) -> bool:
    return attrs.get("zarr_dtype") == "object" or attrs.get("_DTYPE") == "object_reference"


def read_all(node) -> np.ndarray:
    data = node[...]
    return np.asarray(data) if not isinstance(data, np.ndarray) else data


def compound_elements(node, fields: list[str]) -> Iterator[tuple[int, str, Any]]:
    """(flat index, field, raw element) of a compound array's reference fields.

    Legacy <= 0.5 stored reference compounds as an object array of lists `[idx, count, ref]`; a
    genuine structured array is the current layout. Both are accepted."""
    data = read_all(node)
    flat = data.reshape(-1)
    names = data.dtype.names
    for index, item in enumerate(flat):
        for field in fields:
            if names:
                value = item[field]
            else:  # object array of sequences (hdmf-zarr <= 0.5): position from the field list
                order = [f["name"] for f in node.attrs["zarr_dtype"]]
                value = item[order.index(field)]
            yield index, field, value


# --------------------------------------------------------------------------------------------
# The expected `nwb inspect --json` document
# --------------------------------------------------------------------------------------------


def expected_inspect(path: Path | str) -> dict:
    """The `{"objects", "links", "attribute_refs", "dataset_refs"}` document for a store."""
    objects, links, attribute_refs, dataset_refs = [], [], [], []
    for node_path, node in walk(path):
        attrs = attrs_of(node)
        type_key = "neurodata_type" if "neurodata_type" in attrs else "data_type" if "data_type" in attrs else None
        if type_key is not None:
            objects.append(
                {
                    "path": node_path,
                    "neurodata_type": attrs[type_key],
                    "namespace": attrs.get("namespace"),
                    "object_id": attrs.get("object_id"),
                }
            )
        if not is_array(node):
            for entry in attrs.get("zarr_link", attrs.get("_LINKS", [])) or []:
                links.append({"path": join(node_path, entry["name"]), "target": entry["path"], "source": entry["source"]})
        for name in sorted(attrs):
            ref = attribute_reference(attrs[name])
            if ref is not None:
                item = {"path": node_path, "attribute": name, "target": ref.get("path")}
                if "region" in ref:
                    item["region"] = ref["region"]
                attribute_refs.append(item)
        if is_array(node):
            fields = reference_fields(node, attrs)
            if fields:
                for index, field, value in compound_elements(node, fields):
                    target = element_target(value)
                    if target is not None:
                        dataset_refs.append({"path": node_path, "index": index, "field": field, "target": target})
            elif is_reference_array(attrs):
                for index, value in enumerate(read_all(node).reshape(-1)):
                    target = element_target(value)
                    if target is not None:
                        dataset_refs.append({"path": node_path, "index": index, "target": target})
    objects.sort(key=lambda o: o["path"])
    links.sort(key=lambda o: o["path"])
    attribute_refs.sort(key=lambda o: (o["path"], o["attribute"]))
    dataset_refs.sort(key=lambda o: (o["path"], o["index"], o.get("field", "")))
    return {"objects": objects, "links": links, "attribute_refs": attribute_refs, "dataset_refs": dataset_refs}


def _children(group) -> tuple[list, list]:
    """(groups, arrays) of a group as sorted (name, node) lists."""
    members = _members2(group) if ZARR2 else list(group.members())
    groups = sorted((n, c) for n, c in members if not is_array(c))
    arrays = sorted((n, c) for n, c in members if is_array(c))
    return groups, arrays


def scalar_text(array) -> str:
    """The text of a scalar dataset (legacy `[1]`-shaped or v3 0-d)."""
    value = np.asarray(array[...], dtype=object).reshape(-1)[0]
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def cached_specs(path: Path | str) -> list[dict]:
    """What `nwb specs PATH --json` must list: one entry per cached namespace version,
    `{"namespace", "version", "sources"}` (sources = the schema source datasets, i.e. every
    dataset of the version group but the `namespace` document; sorted here), sorted by namespace.

    Also checks that each cached namespace document names itself with that version."""
    root = open_root(path)
    loc = attrs_of(root).get(".specloc")
    if loc is None:
        return []
    if isinstance(loc, dict):
        loc = attribute_reference(loc)["path"]
    out = []
    ns_groups, _ = _children(root[loc.strip("/")])
    for ns_name, ns_group in ns_groups:
        versions, _ = _children(ns_group)
        for version, version_group in versions:
            _, datasets = _children(version_group)
            names = [n for n, _ in datasets]
            assert "namespace" in names, f"{loc}/{ns_name}/{version} has no namespace document"
            document = json.loads(scalar_text(version_group["namespace"]))
            declared = {ns["name"]: ns.get("version") for ns in document["namespaces"]}
            assert declared.get(ns_name) == version, f"{ns_name}/{version}: namespace document says {declared}"
            out.append({"namespace": ns_name, "version": version, "sources": sorted(n for n in names if n != "namespace")})
    return sorted(out, key=lambda e: (e["namespace"], e["version"]))


def consolidated_keys(path: Path | str) -> set[str] | None:
    """Node paths ("" = root excluded) listed by the store's consolidated metadata, or None if
    it has none (v2 `.zmetadata`, v3 inline `consolidated_metadata` of the root zarr.json)."""
    path = Path(path)
    if (path / ".zmetadata").is_file():
        meta = json.loads((path / ".zmetadata").read_text())["metadata"]
        return {k.rsplit("/", 1)[0] for k in meta if k.endswith((".zgroup", ".zarray")) and "/" in k}
    if (path / "zarr.json").is_file():
        root = json.loads((path / "zarr.json").read_text())
        cm = root.get("consolidated_metadata")
        if not cm:
            return None
        return set(cm["metadata"])
    return None


def all_node_keys(path: Path | str) -> set[str]:
    """Every node path below the root (no leading slash), from the real hierarchy."""
    return {p.lstrip("/") for p, _ in walk(path) if p != "/"}


def object_paths(document: dict) -> dict[str, str]:
    """object_id -> path of every typed object of an inspect document."""
    return {o["object_id"]: o["path"] for o in document["objects"] if o["object_id"] is not None}


def object_set(document: dict) -> set[tuple[str, str, str | None]]:
    """{(path, neurodata_type, object_id)} of an inspect document."""
    return {(o["path"], o["neurodata_type"], o["object_id"]) for o in document["objects"]}


def convention_of(path: Path | str) -> str:
    """"zarr3" if the root has zarr.json, "zarr2" if it has .zgroup."""
    path = Path(path)
    if (path / "zarr.json").is_file():
        return "zarr3"
    if (path / ".zgroup").is_file():
        return "zarr2"
    raise ValueError(f"{path} is neither a Zarr v2 nor a Zarr v3 group")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} STORE", file=sys.stderr)
        sys.exit(2)
    json.dump(expected_inspect(sys.argv[1]), sys.stdout)
    print()
