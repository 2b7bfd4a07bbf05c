"""Read an NWB-on-Zarr file with pynwb + hdmf-zarr; print the timing as one JSON line.

Usage:
  python nwb_hdmf_zarr.py read PATH CONVENTION   time NWBZarrIO(PATH, "r").read() and count
                                                 its objects (CONVENTION: zarr2 or zarr3)
  python nwb_hdmf_zarr.py namespaces             print pynwb's core and hdmf-common namespace
                                                 files (cached in the file neurochunk writes)
  python nwb_hdmf_zarr.py export PATH CONVENTION OUT.h5
                                                 read the Zarr file with NWBZarrIO and export it
                                                 to HDF5 with NWBHDF5IO (its HDF5 twin)
  python nwb_hdmf_zarr.py validate OUT.h5        time pynwb.validate(path=OUT.h5) (against the
                                                 namespaces cached in the file)

The peer side of the `--nwb` rows of the neurochunk benchmark (`src/nwb_rows.rs`). The timed
region is `NWBZarrIO(path, "r")` (which loads the file's cached namespaces), `.read()` and
`len(list(nwbfile.objects))`; interpreter start-up is outside it, and the imports of pynwb and
hdmf-zarr are timed separately (`import_seconds`). Warnings raised by the read are recorded with
the `default` action (the first of each per code location, DeprecationWarning included, which
Python's default filters would hide) and summarised in the output. The result line starts
with `NEUROCHUNK-BENCH-RESULT `. hdmf-zarr <= 0.13 reads the legacy Zarr v2 convention only and
0.14 the Zarr v3 one only; a mismatch exits with status 3 and a message.
"""

import json
import resource
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

MARKER = "NEUROCHUNK-BENCH-RESULT "


def emit(doc: dict) -> None:
    print(MARKER + json.dumps(doc), flush=True)


def version_tuple(text: str) -> tuple:
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def namespaces() -> None:
    import hdmf
    import pynwb

    core = Path(pynwb.__file__).parent / "nwb-schema" / "core" / "nwb.namespace.yaml"
    common = Path(hdmf.__file__).parent / "common" / "hdmf-common-schema" / "common" / "namespace.yaml"
    emit({"namespaces": [str(p) for p in (core, common) if p.is_file()]})


def read(path: str, convention: str) -> None:
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as import_warnings:
        import hdmf_zarr
        import pynwb
        import zarr
        from hdmf_zarr.nwb import NWBZarrIO
    import_seconds = time.perf_counter() - t0

    legacy_reader = version_tuple(hdmf_zarr.__version__) < (0, 14)
    if (convention == "zarr2") != legacy_reader:
        wanted = "<= 0.13" if convention == "zarr2" else ">= 0.14"
        print(
            f"hdmf-zarr {hdmf_zarr.__version__} cannot read the {convention} convention (needs hdmf-zarr {wanted})",
            file=sys.stderr,
        )
        sys.exit(3)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")  # also DeprecationWarning, first one per location
        t0 = time.perf_counter()
        with NWBZarrIO(path, mode="r") as io:
            nwbfile = io.read()
            objects = len(list(nwbfile.objects))
            seconds = time.perf_counter() - t0

    counts = Counter(f"{w.category.__name__}: {w.message}" for w in list(import_warnings) + list(caught))
    emit(
        {
            "seconds": seconds,
            "import_seconds": import_seconds,
            "objects": objects,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "python": sys.version.split()[0],
            "pynwb": pynwb.__version__,
            "hdmf_zarr": hdmf_zarr.__version__,
            "zarr": zarr.__version__,
            "warnings_total": sum(counts.values()),
            "warnings": [{"message": m[:300], "count": n} for m, n in counts.most_common(10)],
        }
    )


def export(path: str, convention: str, out: str) -> None:
    import hdmf_zarr
    from hdmf_zarr.nwb import NWBZarrIO
    from pynwb import NWBHDF5IO

    if (convention == "zarr2") != (version_tuple(hdmf_zarr.__version__) < (0, 14)):
        print(f"hdmf-zarr {hdmf_zarr.__version__} cannot read the {convention} convention", file=sys.stderr)
        sys.exit(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        with NWBZarrIO(path, mode="r") as src, NWBHDF5IO(out, mode="w") as dst:
            dst.export(src_io=src, write_args={"link_data": False})
        seconds = time.perf_counter() - t0
    emit({"seconds": seconds, "bytes": Path(out).stat().st_size})


def validate(path: str) -> None:
    t0 = time.perf_counter()
    import pynwb

    import_seconds = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        errors = pynwb.validate(path=path)
        seconds = time.perf_counter() - t0
    emit(
        {
            "seconds": seconds,
            "import_seconds": import_seconds,
            "errors": len(errors),
            "first_errors": [str(e)[:300] for e in errors[:5]],
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "pynwb": pynwb.__version__,
        }
    )


def main() -> None:
    match sys.argv[1:]:
        case ["namespaces"]:
            namespaces()
        case ["read", path, convention]:
            read(path, convention)
        case ["export", path, convention, out]:
            export(path, convention, out)
        case ["validate", path]:
            validate(path)
        case _:
            sys.exit(__doc__)


if __name__ == "__main__":
    main()
