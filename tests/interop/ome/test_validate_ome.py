"""`neurochunk ome validate` on broken OME-Zarr 0.4 / 0.5 metadata (omevariants.py): exit 1 with
a message naming the broken rule, in agreement with ome-zarr-models (each variant records the
peer's verdict; where the two disagree, the variant says so and the test asserts it)."""

from __future__ import annotations

import pytest

from omeio import build_pyramid, models_validate, ome_validate
from omevariants import VARIANTS, write_image

CASES = [(v, version) for v in VARIANTS for version in v.versions]


@pytest.mark.parametrize("version", ["0.4", "0.5"])
def test_valid_image_passes(nc, tmp_path, version):
    path = tmp_path / "valid.ome.zarr"
    write_image(path, version)
    assert models_validate(path, version) is None
    proc = ome_validate(nc, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("variant,version", CASES, ids=[f"{v.name}-{ver}" for v, ver in CASES])
def test_invalid_variant(nc, tmp_path, variant, version):
    path = tmp_path / f"{variant.name}.ome.zarr"
    write_image(path, version, variant.edit, variant.shapes, variant.dimension_names)
    verdict = models_validate(path, version)
    assert (verdict is not None) == variant.models_rejects[version], (
        f"ome-zarr-models {'rejects' if verdict else 'accepts'} {variant.name} ({version}): {verdict}"
    )
    proc = ome_validate(nc, path)
    output = (proc.stdout + proc.stderr).lower()
    assert proc.returncode == variant.ours_exit, (
        f"exit {proc.returncode} for {variant.name}:\n{proc.stdout}{proc.stderr}"
    )
    assert "panicked" not in output
    assert not variant.rule or any(word.lower() in output for word in variant.rule), (
        f"{variant.name}: no mention of {variant.rule}:\n{proc.stdout}{proc.stderr}"
    )


def test_unreadable_path_exits_2(nc, tmp_path):
    proc = ome_validate(nc, tmp_path / "missing.ome.zarr")
    assert proc.returncode == 2, proc.stdout + proc.stderr


@pytest.mark.parametrize("fmt,version", [("zarr2", "0.4"), ("zarr3", "0.5")])
def test_our_pyramid_is_valid_for_both(nc, tmp_path, fmt, version):
    import numpy as np

    path = tmp_path / "ours.ome.zarr"
    build_pyramid(nc, np.zeros((9, 10, 11), dtype=np.uint8), path, fmt, levels=3)
    assert models_validate(path, version) is None
    proc = ome_validate(nc, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
