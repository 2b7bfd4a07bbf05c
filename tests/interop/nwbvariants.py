"""Invalid NWB files for `neurochunk nwb validate`, each written as HDF5 and in this environment's
Zarr convention, and pynwb's verdict on the HDF5 twin.

Every variant is the ecephys fixture (nwbfixtures.ecephys_file) with one problem put into the
*builder tree* that pynwb hands to its backend (`BuildManager.build` is wrapped for the write), so
the same break reaches NWBHDF5IO and NWBZarrIO alike, each writing it in its own encoding (legacy
`zarr_dtype`/`zarr_link` with hdmf-zarr 0.13, `_DTYPE`/`_LINKS` with 0.14). A few variants edit the
written file instead (`post`: the cached specifications).

Each variant states what `nwb validate` must report (rule and object path) and what pynwb.validate
reports on the HDF5 twin: an error class and location, or None where pynwb's validator misses a
problem the schema states (the table rules hdmf-common states in prose, some of which pynwb
enforces only when it builds the objects on read; fixed values; unknown types and namespaces;
reference targets of references held in datasets; arrays where a scalar is specified).

Run as a script to write the corpus and print the manifest (JSON), or pynwb's verdicts; `--shard
I/N` takes every N-th variant from the I-th, so that N processes share the work:

    python tests/interop/nwbvariants.py write OUT_DIR [--formats zarr,hdf5] [--shard I/N]
    python tests/interop/nwbvariants.py pynwb OUT_DIR [--shard I/N]   # pynwb.validate of the .nwb.h5
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")  # see nwb2/conftest.py

import numpy as np  # noqa: E402

import nwbfixtures  # noqa: E402


# --------------------------------------------------------------------------------------------
# Builder edits
# --------------------------------------------------------------------------------------------


def _get(root, path: str):
    return root[path] if path else root


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.rpartition("/")
    return parent, name


def remove(root, path: str) -> None:
    """Remove the group, dataset or link at `path` (no leading slash)."""
    parent, name = _split(path)
    p = _get(root, parent)
    kind = p.obj_type.pop(name)
    del dict.__getitem__(p, kind)[name]


def set_data(root, path: str, data, dtype=None, attributes: Optional[dict] = None) -> None:
    """Replace the dataset at `path` by one holding `data` (attributes kept unless given)."""
    from hdmf.build import DatasetBuilder

    old = _get(root, path)
    parent, name = _split(path)
    remove(root, path)
    _get(root, parent).set_dataset(
        DatasetBuilder(name=name, data=data, dtype=dtype, attributes=dict(old.attributes) if attributes is None else attributes)
    )


def set_attr(path: str, name: str, value) -> Callable:
    def edit(root):
        _get(root, path).attributes[name] = value

    return edit


def del_attr(path: str, name: str) -> Callable:
    def edit(root):
        del _get(root, path).attributes[name]

    return edit


def drop(path: str) -> Callable:
    return lambda root: remove(root, path)


def data(path: str, values, dtype=None) -> Callable:
    return lambda root: set_data(root, path, values, dtype)


def ref(root, path: str):
    from hdmf.build import ReferenceBuilder

    return ReferenceBuilder(_get(root, path))


def ref_attr(path: str, name: str, target: str) -> Callable:
    def edit(root):
        _get(root, path).attributes[name] = ref(root, target)

    return edit


def ref_data(path: str, target: str) -> Callable:
    """Every reference of the dataset at `path` leads to `target`."""

    def edit(root):
        old = _get(root, path)
        set_data(root, path, [ref(root, target) for _ in old.data], old.dtype)

    return edit


def relink(path: str, target: str) -> Callable:
    def edit(root):
        from hdmf.build import LinkBuilder

        parent, name = _split(path)
        remove(root, path)
        _get(root, parent).set_link(LinkBuilder(builder=_get(root, target), name=name))

    return edit


def compound_field(path: str, field: int, value: Callable, dtype: Optional[str] = None) -> Callable:
    """Replace field `field` of every row of a compound dataset by `value(root, old)` and, with
    `dtype`, store that field with this type."""

    def edit(root):
        from hdmf.spec import DtypeSpec

        old = _get(root, path)
        rows = [tuple(value(root, v) if i == field else v for i, v in enumerate(row)) for row in old.data]
        fields = list(old.dtype)
        if dtype is not None:
            fields[field] = DtypeSpec(fields[field].name, fields[field].doc, dtype)
        set_data(root, path, rows, fields)

    return edit


def drop_cached_namespace(name: str) -> Callable:
    """A `post` edit: remove one namespace from the cached specifications of the written file."""

    def edit(path: Path, fmt: str) -> None:
        if fmt == "hdf5":
            import h5py

            with h5py.File(path, "a") as f:
                del f["specifications"][name]
        else:
            import zarr

            shutil.rmtree(path / "specifications" / name)
            zarr.consolidate_metadata(str(path))

    return edit


# --------------------------------------------------------------------------------------------
# The variants
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    mutate: Callable
    rule: str  # the rule `nwb validate` names
    path: str  # the object its finding names
    # pynwb.validate on the HDF5 twin: (error class, location as pynwb gives it), or None when
    # pynwb's validator does not see the problem (then `why` says why).
    pynwb: Optional[tuple[str, str]]
    why: str = ""
    post: Optional[Callable] = None
    # Whether NWBHDF5IO.read() of the HDF5 twin fails (pynwb enforcing the rule on read); checked
    # for the variants pynwb's validator misses.
    read_fails: bool = False


ES = "acquisition/ElectricalSeries"
TS1 = "acquisition/ts1"
ELECTRODES = "general/extracellular_ephys/electrodes"
SHANK0 = "general/extracellular_ephys/shank0"
PROBE = "general/devices/probe"

DATASET_REFS = (
    "pynwb checks the target type of references held in attributes; references read back from a dataset "
    "(h5py references, not builders) are not followed"
)
PROSE = "a rule hdmf-common states in prose: pynwb's validator does not check it (its read refuses some of these files: read_fails)"

VARIANTS: list[Variant] = [
    # -- missing required attributes -------------------------------------------------------
    Variant("missing_attr_table_description", del_attr(ELECTRODES, "description"), "missing-attribute", f"/{ELECTRODES}", ("MissingError", ELECTRODES)),
    Variant("missing_attr_colnames", del_attr("units", "colnames"), "missing-attribute", "/units", ("MissingError", "units")),
    Variant("missing_attr_column_description", del_attr("units/spike_times", "description"), "missing-attribute", "/units/spike_times", ("MissingError", "units/spike_times")),
    Variant("missing_attr_data_unit", del_attr(f"{TS1}/data", "unit"), "missing-attribute", f"/{TS1}/data", ("MissingError", f"{TS1}/data")),
    Variant("missing_attr_rate", del_attr(f"{ES}/starting_time", "rate"), "missing-attribute", f"/{ES}/starting_time", ("MissingError", f"{ES}/starting_time")),
    Variant("missing_attr_region_table", del_attr(f"{ES}/electrodes", "table"), "missing-attribute", f"/{ES}/electrodes", ("MissingError", f"{ES}/electrodes")),
    Variant("missing_attr_index_target", del_attr("units/spike_times_index", "target"), "missing-attribute", "/units/spike_times_index", ("MissingError", "units/spike_times_index")),
    Variant("missing_attr_group_location", del_attr(SHANK0, "location"), "missing-attribute", f"/{SHANK0}", ("MissingError", SHANK0)),
    # -- missing required datasets, groups, links ------------------------------------------
    Variant("missing_dataset_identifier", drop("identifier"), "missing-dataset", "/", ("MissingError", "")),
    Variant("missing_dataset_session_start_time", drop("session_start_time"), "missing-dataset", "/", ("MissingError", "")),
    Variant("missing_dataset_series_data", drop(f"{TS1}/data"), "missing-dataset", f"/{TS1}", ("MissingError", TS1)),
    Variant("missing_dataset_table_id", drop("units/id"), "missing-dataset", "/units", ("MissingDataType", "units")),
    Variant("missing_dataset_region", drop(f"{ES}/electrodes"), "missing-dataset", f"/{ES}", ("MissingDataType", ES)),
    Variant("missing_group_analysis", drop("analysis"), "missing-group", "/", ("MissingError", "")),
    Variant("missing_group_presentation", drop("stimulus/presentation"), "missing-group", "/stimulus", ("MissingError", "stimulus")),
    Variant("missing_group_lfp_series", drop("processing/ecephys/LFP/lfp_series"), "missing-group", "/processing/ecephys/LFP", ("MissingDataType", "processing/ecephys/LFP")),
    Variant("missing_link_device", drop(f"{SHANK0}/device"), "missing-link", f"/{SHANK0}", ("MissingDataType", SHANK0)),
    # -- wrong data types -----------------------------------------------------------------
    Variant("dtype_timestamps_int", data(f"{TS1}/timestamps", np.arange(10, dtype=np.int32)), "dtype", f"/{TS1}/timestamps", ("DtypeError", f"{TS1}/timestamps")),
    Variant("dtype_series_data_text", data(f"{ES}/data", np.array([["a", "b"], ["c", "d"]], dtype=object), "text"), "dtype", f"/{ES}/data", ("DtypeError", f"{ES}/data")),
    Variant("dtype_identifier_int", data("identifier", np.int64(7)), "dtype", "/identifier", ("DtypeError", "identifier")),
    Variant("dtype_rate_text", set_attr(f"{ES}/starting_time", "rate", "fast"), "dtype", f"/{ES}/starting_time", ("DtypeError", f"{ES}/starting_time.rate")),
    Variant("dtype_conversion_bool", set_attr(f"{TS1}/data", "conversion", np.bool_(True)), "dtype", f"/{TS1}/data", ("DtypeError", f"{TS1}/data.conversion")),
    Variant("dtype_ids_float", data("units/id", np.array([0.0, 1.0, 2.0])), "dtype", "/units/id", ("DtypeError", "units/id")),
    Variant("dtype_index_float", data("units/spike_times_index", np.array([3.0, 4.0, 8.0])), "dtype", "/units/spike_times_index", ("DtypeError", "units/spike_times_index")),
    Variant("dtype_region_float", data(f"{ES}/electrodes", np.array([0.0, 1.0, 2.0, 3.0])), "dtype", f"/{ES}/electrodes", ("DtypeError", f"{ES}/electrodes")),
    Variant("dtype_start_time_not_iso", data("session_start_time", b"the second of January"), "dtype", "/session_start_time", ("DtypeError", "session_start_time")),
    Variant("dtype_region_table_text", set_attr(f"{ES}/electrodes", "table", "electrodes"), "dtype", f"/{ES}/electrodes", ("DtypeError", f"{ES}/electrodes.table")),
    Variant("dtype_compound_field", compound_field("intervals/trials/timeseries", 0, lambda root, v: float(v) + 0.5, "float64"), "dtype", "/intervals/trials/timeseries", ("DtypeError", "intervals/trials/timeseries")),
    # -- wrong shapes and ranks ------------------------------------------------------------
    Variant("shape_series_data_4d", data(f"{ES}/data", np.zeros((4, 2, 2, 2), dtype=np.int16)), "shape", f"/{ES}/data", ("ShapeError", f"{ES}/data")),
    Variant("shape_timestamps_2d", data(f"{TS1}/timestamps", np.zeros((10, 2))), "shape", f"/{TS1}/timestamps", ("ShapeError", f"{TS1}/timestamps")),
    Variant("shape_ids_2d", data("units/id", np.arange(3, dtype=np.int64).reshape(3, 1)), "shape", "/units/id", ("ShapeError", "units/id")),
    Variant("shape_create_date_scalar", data("file_create_date", b"2024-01-02T04:05:06+00:00"), "shape", "/file_create_date", ("ExpectedArrayError", "file_create_date")),
    Variant("shape_colnames_scalar", set_attr("units", "colnames", "spike_times"), "shape", "/units", ("ExpectedArrayError", "units.colnames")),
    Variant("shape_identifier_array", data("identifier", ["a", "b"]), "shape", "/identifier", None,
            why="an untyped dataset without shape is a scalar; pynwb's check_shape accepts any shape when the specification gives none",
            read_fails=True),
    # -- reference and link targets of the wrong type ---------------------------------------
    Variant("reftarget_region_table", ref_attr(f"{ES}/electrodes", "table", PROBE), "reference-target", f"/{ES}/electrodes", ("IncorrectDataType", f"{ES}/electrodes.table")),
    Variant("reftarget_index_target", ref_attr("units/spike_times_index", "target", PROBE), "reference-target", "/units/spike_times_index", ("IncorrectDataType", "units/spike_times_index.target")),
    Variant("reftarget_units_electrode_group", ref_data("units/electrode_group", PROBE), "reference-target", "/units/electrode_group", None, why=DATASET_REFS),
    Variant("reftarget_electrodes_group", ref_data(f"{ELECTRODES}/group", PROBE), "reference-target", f"/{ELECTRODES}/group", None, why=DATASET_REFS),
    Variant("reftarget_compound_field", compound_field("intervals/trials/timeseries", 2, lambda root, v: ref(root, PROBE)), "reference-target", "/intervals/trials/timeseries", None,
            why="pynwb checks reference targets of plain reference datasets and attributes, not of reference fields in compound datasets"),
    Variant("link_target_wrong_type", relink(f"{SHANK0}/device", TS1), "link-target", f"/{SHANK0}/device", ("MissingDataType", SHANK0)),
    Variant("wrong_type_for_name", set_attr(f"{ES}/electrodes", "neurodata_type", "VectorData"), "wrong-type", f"/{ES}/electrodes", ("MissingDataType", ES)),
    # -- the table rules --------------------------------------------------------------------
    Variant("table_unequal_columns", data(f"{ELECTRODES}/x", np.array([0.0, 1.0, 2.0])), "table-column-length", f"/{ELECTRODES}/x", None, why=PROSE, read_fails=True),
    Variant("table_ragged_rows", data("units/spike_times_index", np.array([3, 4], dtype=np.uint8)), "table-column-length", "/units/spike_times", None, why=PROSE, read_fails=True),
    Variant("table_colnames_ghost", set_attr("units", "colnames", ("spike_times", "electrodes", "electrode_group", "ghost")), "table-colnames", "/units", None, why=PROSE, read_fails=True),
    Variant("table_region_out_of_range", data(f"{ES}/electrodes", np.array([0, 1, 2, 9])), "table-region", f"/{ES}/electrodes", None, why=PROSE),
    Variant("table_index_decreasing", data("units/spike_times_index", np.array([3, 1, 8], dtype=np.uint8)), "vector-index", "/units/spike_times_index", None, why=PROSE),
    Variant("table_index_past_target", data("units/spike_times_index", np.array([3, 4, 12], dtype=np.uint8)), "vector-index", "/units/spike_times_index", None, why=PROSE),
    Variant("table_duplicate_ids", data("units/id", np.array([0, 1, 1])), "duplicate-ids", "/units/id", None, why=PROSE),
    # -- types, namespaces, values, time zones ----------------------------------------------
    Variant("unknown_type", set_attr(TS1, "neurodata_type", "TimeSeriez"), "unknown-type", f"/{TS1}", None,
            why="pynwb's validator leaves an object whose type matches no child specification unchecked", read_fails=True),
    Variant("unknown_namespace", set_attr(TS1, "namespace", "ndx-absent"), "missing-namespace", f"/{TS1}", None,
            why="pynwb's validator looks types up by name in the namespace it validates against and ignores the object's namespace attribute",
            read_fails=True),
    Variant("missing_cached_namespace", lambda root: None, "missing-namespace", "/specifications", ("raises", "Could not load namespace 'hdmf-common'"),
            post=drop_cached_namespace("hdmf-common")),
    Variant("value_unit", set_attr(f"{ES}/data", "unit", "millivolts"), "value", f"/{ES}/data", None,
            why="pynwb's validator does not compare attributes with the fixed value the schema gives"),
    Variant("value_interval", set_attr(f"{TS1}/timestamps", "interval", np.int32(2)), "value", f"/{TS1}/timestamps", None,
            why="pynwb's validator does not compare attributes with the fixed value the schema gives"),
    Variant("timezone_start_time", data("session_start_time", b"2024-01-02T03:04:05"), "timezone", "/session_start_time", ("Error", "session_start_time")),
]

BY_NAME = {v.name: v for v in VARIANTS}
assert len(BY_NAME) == len(VARIANTS), "variant names are unique"


# --------------------------------------------------------------------------------------------
# Writing and pynwb's verdicts
# --------------------------------------------------------------------------------------------

# The unbroken file, written like the variants.
BASE = Variant("base", lambda root: None, "", "", None)


def write_variant(variant: Variant, path: Path, fmt: str) -> Path:
    """Write the ecephys fixture with `variant`'s break as HDF5 (`fmt` "hdf5") or in this
    environment's Zarr convention (`fmt` "zarr")."""
    import pynwb
    from hdmf_zarr.nwb import NWBZarrIO

    manager = pynwb.get_manager()
    build = manager.build

    def broken_build(container, *args, **kwargs):
        builder = build(container, *args, **kwargs)
        if kwargs.get("root"):
            variant.mutate(builder)
        return builder

    manager.build = broken_build
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nwbfile = nwbfixtures.ecephys_file(f"variant-{variant.name}")
        io_class = pynwb.NWBHDF5IO if fmt == "hdf5" else NWBZarrIO
        with io_class(str(path), mode="w", manager=manager) as io:
            io.write(nwbfile)
    if variant.post is not None:
        variant.post(path, fmt)
    return path


def file_name(variant: Variant, fmt: str) -> str:
    return f"{variant.name}.nwb.{'h5' if fmt == 'hdf5' else 'zarr'}"


def shard(variants: list[Variant], which: str) -> list[Variant]:
    """The variants of shard `which` ("I/N": every N-th variant from the I-th)."""
    i, n = (int(x) for x in which.split("/"))
    return variants[i::n]


def write_all(out: Path, formats=("zarr", "hdf5"), which: str = "0/1") -> dict[str, dict[str, str]]:
    """Write the base file and every variant (of shard `which`) in each format; name -> format
    -> path."""
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, dict[str, str]] = {}
    for variant in shard([BASE, *VARIANTS], which):
        for fmt in formats:
            path = out / file_name(variant, fmt)
            if path.exists():
                shutil.rmtree(path) if path.is_dir() else path.unlink()
            write_variant(variant, path, fmt)
            written.setdefault(variant.name, {})[fmt] = str(path)
    return written


def pynwb_verdict(path: Path) -> dict:
    """pynwb.validate of a file: its errors (class, location, text), or the exception it raised;
    and whether NWBHDF5IO.read() succeeds."""
    import pynwb

    verdict: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            errors = pynwb.validate(path=str(path))
            verdict["errors"] = [
                {"class": type(e).__name__, "location": e.location or "", "text": str(e)} for e in errors
            ]
        except Exception as exc:  # noqa: BLE001 - the verdict records what pynwb raised
            verdict["raises"] = f"{type(exc).__name__}: {exc}"
        try:
            with pynwb.NWBHDF5IO(str(path), mode="r") as io:
                io.read()
            verdict["read"] = "ok"
        except Exception as exc:  # noqa: BLE001
            verdict["read"] = f"{type(exc).__name__}: {exc}"
    return verdict


USAGE = """usage: nwbvariants.py write OUT_DIR [--formats zarr,hdf5] [--shard I/N]
       nwbvariants.py pynwb OUT_DIR [--shard I/N]"""


def main(argv: list[str]) -> int:
    args = argv[1:]
    options = {}
    while len(args) > 2 and args[-2] in ("--formats", "--shard"):
        options[args[-2]] = args[-1]
        args = args[:-2]
    if len(args) != 2 or args[0] not in ("write", "pynwb"):
        print(USAGE, file=sys.stderr)
        return 2
    out = Path(args[1])
    which = options.get("--shard", "0/1")
    if args[0] == "write":
        formats = tuple(options.get("--formats", "zarr,hdf5").split(","))
        print(json.dumps(write_all(out, formats, which)))
    else:
        verdicts = {v.name: pynwb_verdict(out / file_name(v, "hdf5")) for v in shard([BASE, *VARIANTS], which)}
        print(json.dumps(verdicts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
