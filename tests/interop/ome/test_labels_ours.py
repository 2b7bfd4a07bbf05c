"""Label images built by `neurochunk pyramid SEG IMAGE --label NAME` on an image of ours: the
label's levels equal the NumPy reference (block mode) on the image's grid (same shapes, scales
and translations), the image lists the label, and the peers agree: ome-zarr-models validates
the image with its labels and the label as an ImageLabel, ome-zarr-py's Reader finds the label
node with the same levels, ngff-zarr reads the label image."""

from __future__ import annotations

import numpy as np
import pytest
import zarr

import pyramid_ref as ref
from ncli import assert_same_array
from omeio import build_pyramid, ome_info, read_ngff_zarr

SHAPE = (13, 22, 31)  # odd: edge blocks are partial
SCALE = [2.0, 0.5, 0.5]
TRANSLATION = [10.0, 0.0, 0.0]


def _segmentation() -> np.ndarray:
    rng = np.random.default_rng(8)
    blobs = rng.integers(0, 7, (4, 6, 8))
    seg = np.kron(blobs, np.ones((4, 4, 4), dtype=np.int64))[: SHAPE[0], : SHAPE[1], : SHAPE[2]]
    noise = rng.random(SHAPE) < 0.1  # some voxels of another label: ties and minorities
    return np.where(noise, 9, seg).astype(np.uint32)


@pytest.mark.parametrize("fmt,version", [("zarr3", "0.5"), ("zarr2", "0.4")])
def test_label_pyramid_on_the_image_grid(nc, tmp_path, fmt, version):
    from ome_zarr.io import parse_url
    from ome_zarr.reader import Label, Reader

    if version == "0.5":
        from ome_zarr_models.v05 import Image, ImageLabel
    else:
        from ome_zarr_models.v04 import Image, ImageLabel

    data = np.random.default_rng(3).integers(0, 4000, SHAPE, dtype=np.uint16)
    img = tmp_path / "img.ome.zarr"
    build_pyramid(nc, data, img, fmt, levels=3, scale=SCALE, translation=TRANSLATION,
                  units=["micrometer"] * 3)
    seg = _segmentation()
    src = nc.scratch / "seg.zarr"
    nc.put(seg, src, "zarr3")
    nc.run("pyramid", src, img, "--label", "cells")

    expected = ref.pyramid(seg, 3, "mode", [2, 2, 2], scale=SCALE, translation=TRANSLATION)
    info = ome_info(nc, img)
    assert info["labels"] == ["cells"]
    label_info = ome_info(nc, img / "labels" / "cells")
    assert label_info["image_label"]["source"]["image"] == "../../"
    assert label_info["type"] == "mode"
    for k, want in enumerate(expected):
        assert_same_array(nc.get(img / "labels" / "cells" / str(k)), want.data, f"level {k}")
        assert label_info["levels"][k]["scale"] == pytest.approx(info["levels"][k]["scale"])
        assert label_info["levels"][k]["scale"] == pytest.approx(want.scale)
        assert label_info["levels"][k]["translation"] == pytest.approx(want.translation)
        assert label_info["levels"][k]["shape"] == info["levels"][k]["shape"]

    image_model = Image.from_zarr(zarr.open_group(str(img), mode="r"))
    assert image_model.labels is not None
    ImageLabel.from_zarr(zarr.open_group(str(img / "labels" / "cells"), mode="r"))

    nodes = list(Reader(parse_url(str(img)))())
    labels = [n for n in nodes if any(isinstance(s, Label) for s in n.specs)]
    assert len(labels) == 1, [n.specs for n in nodes]
    for k, want in enumerate(expected):
        assert_same_array(np.asarray(labels[0].data[k]), want.data, f"ome-zarr-py level {k}")

    peer = read_ngff_zarr(img / "labels" / "cells")
    for k, want in enumerate(expected):
        assert peer.scales[k] == pytest.approx(want.scale)
        assert_same_array(peer.arrays[k], want.data, f"ngff-zarr level {k}")


def test_label_that_does_not_fit_is_refused(nc, tmp_path):
    img = tmp_path / "img.ome.zarr"
    build_pyramid(nc, np.zeros(SHAPE, dtype=np.uint16), img, "zarr3", levels=2)
    src = nc.scratch / "small-seg.zarr"
    nc.put(np.zeros((13, 22, 30), dtype=np.uint32), src, "zarr3")
    proc = nc.run("pyramid", src, img, "--label", "cells", check=False)
    assert proc.returncode != 0
    assert "[13, 22, 30]" in proc.stderr and "[13, 22, 31]" in proc.stderr, proc.stderr
    assert not (img / "labels").exists()
    assert ome_info(nc, img)["labels"] == []
