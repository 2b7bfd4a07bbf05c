"""NWB-on-Zarr fixtures written by pynwb + hdmf-zarr of the running environment.

Imported by the nwb2 suite (.peers/py311: hdmf-zarr 0.13, legacy Zarr v2 convention) and the nwb3
suite (.peers/py312: hdmf-zarr 0.14, Zarr v3 convention); whichever hdmf-zarr is installed decides
the convention of what is written. Every builder is deterministic except for object ids (UUIDs
chosen by hdmf at construction), so a suite can compare a file written by the *other* environment
with the values built here (the module constants below; see nwbpeer.assert_fixture_data).

Run as a script to write one fixture with this interpreter's stack (used for cross-convention
sources: the nwb2 suite runs `.peers/py312/bin/python nwbfixtures.py ecephys OUT` and vice versa):

    python tests/interop/nwbfixtures.py KIND OUT        # KIND in FIXTURES (or "all": OUT is a dir)

Small data only: every fixture writes in well under a second or two.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

# hdmf-zarr 0.13 stores reference columns as numcodecs Pickle, and numcodecs >= 0.15.2 refuses to
# unpickle unless this is set before numcodecs is imported (harmless for hdmf-zarr 0.14).
os.environ.setdefault("NUMCODECS_ALLOW_UNSAFE_PICKLE_DECODE", "1")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
PEERS = REPO_ROOT / ".peers"

# The environment that writes each convention.
CONVENTION_PYTHON = {"zarr2": PEERS / "py311" / "bin" / "python", "zarr3": PEERS / "py312" / "bin" / "python"}

START = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
CREATED = datetime(2024, 1, 2, 4, 5, 6, 123456, tzinfo=timezone.utc)

# Deterministic data shared by both environments (what pynwb must read back from any fixture,
# converted or not).
N_ELECTRODES = 4
ES_DATA = (np.arange(40 * N_ELECTRODES, dtype=np.int16).reshape(40, N_ELECTRODES) * 7 - 300).astype(np.int16)
LFP_DATA = (np.linspace(-1.0, 1.0, 20 * 2, dtype=np.float32)).reshape(20, 2)
TS_TIMESTAMPS = np.arange(10, dtype=np.float64) / 10.0 + 0.05
TS1_DATA = np.arange(10, dtype=np.float64) * 1.5
TS2_DATA = np.arange(10, dtype=np.float32)[::-1].copy()
ELECTRODE_LOCATIONS = ["CA1", "CA1", "DG", "hippocampal formation \u00e9"]
SPIKE_TIMES = [[0.1, 0.25, 0.5], [0.3], [0.05, 0.15, 0.35, 0.9]]
UNIT_GROUPS = [0, 1, 0]  # electrode group index per unit
# (start, stop, series): pynwb computes idx_start/count of the `timeseries` reference itself.
TRIALS = [(0.0, 0.5, "ts1"), (0.01, 0.02, "ElectricalSeries"), (0.5, 0.8, "ts2")]
EPOCHS = [(0.0, 1.5, ["rest"], "ElectricalSeries"), (1.5, 3.0, ["run", "fast"], "ts1")]
PIXEL_MASKS = [[(0, 0, 1.0), (0, 1, 0.5)], [(3, 4, 0.25), (4, 4, 0.75), (5, 5, 1.0)]]
ROI_DATA = np.arange(12 * 2, dtype=np.float32).reshape(12, 2) / 4.0
IMAGING_DATA = (np.arange(3 * 6 * 6, dtype=np.uint16).reshape(3, 6, 6) * 3).astype(np.uint16)


def this_convention() -> str:
    """"zarr2" under hdmf-zarr 0.13 (zarr-python 2), "zarr3" under hdmf-zarr 0.14 (zarr-python 3)."""
    import zarr

    return "zarr2" if zarr.__version__.startswith("2.") else "zarr3"


# --------------------------------------------------------------------------------------------
# Builders (in-memory NWBFiles)
# --------------------------------------------------------------------------------------------


def _nwbfile(identifier: str, description: str):
    from pynwb import NWBFile

    return NWBFile(
        session_description=description,
        identifier=identifier,
        session_start_time=START,
        file_create_date=[CREATED],
        experimenter=["Doe, Jane"],
        lab="interop lab",
        institution="neurochunk",
    )


def ecephys_file(identifier: str = "ecephys-fixture", intervals: bool = True):
    """Extracellular ephys: device, 2 electrode groups (links to the device), 4 electrodes (the
    `group` reference column), an ElectricalSeries with a DynamicTableRegion, LFP in a processing
    module, two TimeSeries sharing timestamps (a dataset link), units with ragged spike times and
    an `electrode_group` reference column, and (with `intervals`) trials/epochs whose
    `timeseries` column is a reference compound."""
    from pynwb import TimeSeries
    from pynwb.ecephys import LFP, ElectricalSeries

    nwb = _nwbfile(identifier, "interop fixture: extracellular electrophysiology")
    device = nwb.create_device(name="probe", description="a 4-channel silicon probe", manufacturer="Acme")
    groups = [
        nwb.create_electrode_group(
            name=f"shank{i}", description=f"shank {i}", location="hippocampus", device=device
        )
        for i in range(2)
    ]
    for i, location in enumerate(ELECTRODE_LOCATIONS):
        nwb.add_electrode(group=groups[i // 2], location=location, x=float(i), y=0.0, z=-float(i))
    region = nwb.create_electrode_table_region(region=list(range(N_ELECTRODES)), description="all electrodes")
    es = ElectricalSeries(name="ElectricalSeries", data=ES_DATA, electrodes=region, rate=1000.0, starting_time=0.0)
    nwb.add_acquisition(es)

    ts1 = TimeSeries(name="ts1", data=TS1_DATA, unit="m", timestamps=TS_TIMESTAMPS, description="position")
    ts2 = TimeSeries(name="ts2", data=TS2_DATA, unit="m/s", timestamps=ts1, description="speed")
    nwb.add_acquisition(ts1)
    nwb.add_acquisition(ts2)

    module = nwb.create_processing_module(name="ecephys", description="processed extracellular data")
    lfp_region = nwb.create_electrode_table_region(region=[0, 2], description="one electrode per shank")
    lfp = LFP(electrical_series=ElectricalSeries(name="lfp_series", data=LFP_DATA, electrodes=lfp_region, rate=100.0))
    module.add(lfp)

    for spikes, g in zip(SPIKE_TIMES, UNIT_GROUPS):
        nwb.add_unit(spike_times=spikes, electrode_group=groups[g], electrodes=[2 * g, 2 * g + 1])

    if intervals:
        series = {"ts1": ts1, "ts2": ts2, "ElectricalSeries": es}
        for start, stop, name in TRIALS:
            nwb.add_trial(start_time=start, stop_time=stop, timeseries=[series[name]])
        for start, stop, tags, name in EPOCHS:
            nwb.add_epoch(start_time=start, stop_time=stop, tags=tags, timeseries=[series[name]])
    return nwb


def ophys_file(identifier: str = "ophys-fixture"):
    """Optical physiology: device, OpticalChannel, ImagingPlane (device link), a TwoPhotonSeries
    (imaging_plane link), a PlaneSegmentation (imaging_plane link) with a `pixel_mask` compound,
    and a RoiResponseSeries whose `rois` region refers to the segmentation."""
    from pynwb.ophys import Fluorescence, ImageSegmentation, OpticalChannel, RoiResponseSeries, TwoPhotonSeries

    nwb = _nwbfile(identifier, "interop fixture: optical physiology")
    device = nwb.create_device(name="microscope", description="two-photon microscope")
    channel = OpticalChannel(name="green", description="GCaMP channel", emission_lambda=520.0)
    plane = nwb.create_imaging_plane(
        name="plane0",
        optical_channel=channel,
        description="layer 2/3",
        device=device,
        excitation_lambda=920.0,
        imaging_rate=30.0,
        indicator="GCaMP6f",
        location="V1",
    )
    movie = TwoPhotonSeries(name="TwoPhotonSeries", data=IMAGING_DATA, imaging_plane=plane, rate=30.0, unit="n.a.")
    nwb.add_acquisition(movie)
    module = nwb.create_processing_module(name="ophys", description="optical physiology")
    segmentation = ImageSegmentation(name="ImageSegmentation")
    module.add(segmentation)
    plane_seg = segmentation.create_plane_segmentation(
        name="PlaneSegmentation", description="two ROIs", imaging_plane=plane, reference_images=movie
    )
    for mask in PIXEL_MASKS:
        plane_seg.add_roi(pixel_mask=mask)
    rois = plane_seg.create_roi_table_region(region=[0, 1], description="both ROIs")
    response = RoiResponseSeries(name="RoiResponseSeries", data=ROI_DATA, rois=rois, unit="lumens", rate=30.0)
    module.add(Fluorescence(name="Fluorescence", roi_response_series=response))
    return nwb


# --------------------------------------------------------------------------------------------
# Writers
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _quiet():
    """pynwb/hdmf warn while building (e.g. regions whose table is not yet an ancestor)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def write_zarr(build: Callable[[], object], path: Path) -> Path:
    """Build an NWBFile and write it with NWBZarrIO (this environment's convention)."""
    from hdmf_zarr.nwb import NWBZarrIO

    with _quiet():
        nwbfile = build()
        with NWBZarrIO(str(path), mode="w") as io:
            io.write(nwbfile)
    return path


def write_ecephys(path: Path) -> Path:
    return write_zarr(ecephys_file, path)


def write_ophys(path: Path) -> Path:
    return write_zarr(ophys_file, path)


def write_minimal(path: Path) -> Path:
    return write_zarr(lambda: _nwbfile("minimal-fixture", "interop fixture: minimal file"), path)


def write_exported(path: Path) -> Path:
    """Written with NWBHDF5IO, then exported to Zarr with NWBZarrIO.export(src_io=NWBHDF5IO)."""
    from hdmf_zarr.nwb import NWBZarrIO
    from pynwb import NWBHDF5IO

    h5 = Path(str(path) + ".h5")
    with _quiet():
        with NWBHDF5IO(str(h5), mode="w") as io:
            io.write(ecephys_file("exported-fixture"))
        with NWBHDF5IO(str(h5), mode="r") as src, NWBZarrIO(str(path), mode="w") as dst:
            dst.export(src_io=src, write_args={"link_data": False})
    h5.unlink()
    return path


def write_json2(path: Path) -> Path:
    """Legacy only: reference columns with the json2 codec (`ZarrIO(object_codec_class=JSON)`;
    NWBZarrIO drops that argument). Without trials/epochs: json2 cannot encode the reference
    compound of their `timeseries` column."""
    import numcodecs
    import pynwb
    from hdmf_zarr.backend import ZarrIO

    with _quiet():
        nwbfile = ecephys_file("json2-fixture", intervals=False)
        with ZarrIO(str(path), mode="w", manager=pynwb.get_manager(), object_codec_class=numcodecs.JSON) as io:
            io.write(nwbfile)
    return path


FIXTURES: dict[str, Callable[[Path], Path]] = {
    "minimal": write_minimal,
    "ecephys": write_ecephys,
    "ophys": write_ophys,
    "exported": write_exported,
    "json2": write_json2,
}


def fixtures_for(convention: str) -> list[str]:
    """Fixture kinds that exist in a convention (json2 is a legacy codec)."""
    return [k for k in FIXTURES if convention == "zarr2" or k != "json2"]


def main(argv: list[str]) -> int:
    if len(argv) != 3 or (argv[1] not in FIXTURES and argv[1] != "all"):
        print(f"usage: {argv[0]} {{{'|'.join(FIXTURES)}|all}} OUT", file=sys.stderr)
        return 2
    kind, out = argv[1], Path(argv[2])
    if kind == "all":
        out.mkdir(parents=True, exist_ok=True)
        for k in fixtures_for(this_convention()):
            FIXTURES[k](out / f"{k}.nwb.zarr")
    else:
        FIXTURES[kind](out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
