"""`neurochunk serve` as a person uses it: the printed link opened in headless Chromium shows the
served segmentation and its skeletons, and a served annotation layer's points.

A 64 x 64 x 32 uint64 segmentation (segment 1 where x < 32, 2 where x >= 32 and y < 32, 3 where
x >= 32 and y >= 32), written by `neurochunk put --format precomputed` with
compressed_segmentation, is served with a precomputed skeleton source holding one skeleton per
segment. The viewer (the `neuroglancer` package's own server, started by `serve`, so nothing is
fetched from the internet) draws each segment in a colour of its own, derived from its id; the
test finds the three colours in the xy panel, checks where each lies against the known layout,
then serves the skeletons alone and checks that their vertices are drawn in the same three
colours at the same relative places. A wrong axis order, a misread chunk, a blank canvas or a
skeleton source that does not load fails it. Requests go through the served tree only
(`--log`), and the data come from another origin than the viewer, so CORS is exercised too.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
BROWSER_ARGS = [
    "--no-sandbox",
    "--use-gl=angle",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 800, "height": 600}
# Skeleton vertices (x, y, z) of each segment, inside that segment's part of the volume.
SKELETONS = {
    1: [(16.0, 32.0, 4.0), (16.0, 32.0, 16.0), (20.0, 36.0, 28.0)],
    2: [(48.0, 16.0, 4.0), (48.0, 16.0, 16.0), (52.0, 20.0, 28.0)],
    3: [(48.0, 48.0, 4.0), (48.0, 48.0, 16.0), (52.0, 52.0, 28.0)],
}


def segmentation() -> np.ndarray:
    labels = np.zeros((64, 64, 32), dtype=np.uint64)
    labels[:32] = 1
    labels[32:, :32] = 2
    labels[32:, 32:] = 3
    return labels


def write_skeletons(directory: Path) -> None:
    directory.mkdir(parents=True)
    (directory / "info").write_text(
        json.dumps(
            {
                "@type": "neuroglancer_skeletons",
                "transform": [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0],
                "vertex_attributes": [],
            }
        )
    )
    for segment, vertices in SKELETONS.items():
        edges = [(0, 1), (1, 2)]
        body = struct.pack("<II", len(vertices), len(edges))
        body += b"".join(struct.pack("<3f", *v) for v in vertices)
        body += b"".join(struct.pack("<2I", *e) for e in edges)
        (directory / str(segment)).write_bytes(body)


class Served:
    """`neurochunk serve DIR --port 0 --log`, its link, stopped at the end."""

    def __init__(self, binary: Path, root: Path, *extra: str):
        env = dict(os.environ, NEUROCHUNK_PYTHON=sys.executable)
        self.process = subprocess.Popen(
            [str(binary), "serve", str(root), "--port", "0", "--log", *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdout is not None
        self.link = self.process.stdout.readline().strip()
        if not self.link.startswith("http"):
            self.stop()
            raise AssertionError(f"serve printed no link: {self.link!r}; stderr: {self.log}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
        try:
            _, self.log = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _, self.log = self.process.communicate()

    log = ""


def screenshot(url: str, ready, path: Path, timeout: float = 60.0) -> np.ndarray:
    """Opens `url` and takes screenshots until `ready(pixels)` holds (or the time is up)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url)
            deadline = time.monotonic() + timeout
            while True:
                page.wait_for_timeout(1000)
                page.screenshot(path=str(path))
                pixels = np.asarray(Image.open(path).convert("RGB")).astype(int)
                if ready(pixels) or time.monotonic() > deadline:
                    assert not errors, errors
                    return pixels
        finally:
            browser.close()


def xy_panel(pixels: np.ndarray) -> np.ndarray:
    """The 4-panel layout's top-left (xy) panel, below the viewer's two bars."""
    height, width, _ = pixels.shape
    return pixels[50 : height // 2, : width // 2]


def saturated(pixels: np.ndarray) -> np.ndarray:
    """Pixels with a colour (not the panels' grey, black or white)."""
    return (pixels.max(axis=2) - pixels.min(axis=2)) > 60


# The outline Neuroglancer draws around a volume's bounds.
OUTLINE_YELLOW = np.array([255, 255, 0])


def big_colours(panel: np.ndarray, least: int) -> list[tuple[tuple[int, int, int], np.ndarray]]:
    """The colours covering at least `least` pixels (the bounds' outline aside), each with its
    pixels' (row, col) list."""
    mask = saturated(panel) & ~np.all(np.abs(panel - OUTLINE_YELLOW) <= 8, axis=2)
    colours, counts = np.unique(panel[mask] // 4 * 4, axis=0, return_counts=True)
    found = []
    for colour, count in zip(colours, counts):
        if count >= least:
            where = np.argwhere(np.all(np.abs(panel - colour) <= 6, axis=2))
            found.append((tuple(int(c) for c in colour), where))
    return found


def near(panel: np.ndarray, colour: tuple[int, int, int], tolerance: int = 24) -> np.ndarray:
    return np.argwhere(np.all(np.abs(panel - np.array(colour)) <= tolerance, axis=2))


def test_the_served_segmentation_and_skeletons_are_drawn(neurochunk_binary, tmp_path):
    root = tmp_path / "served"
    root.mkdir()
    labels = tmp_path / "labels.npy"
    np.save(labels, segmentation())
    subprocess.run(
        [str(neurochunk_binary), "put", str(labels), str(root / "seg"), "--format", "precomputed",
         "--codec", "compressed_segmentation"],
        check=True,
    )
    info = json.loads((root / "seg" / "info").read_text())
    info["skeletons"] = "skeletons"
    (root / "seg" / "info").write_text(json.dumps(info))
    write_skeletons(root / "seg" / "skeletons")

    # 1. The segmentation: three colours where the three segments lie.
    served = Served(neurochunk_binary, root)
    try:
        assert "/v/" in served.link, served.link  # the neuroglancer package's own viewer
        pixels = screenshot(
            served.link, lambda p: len(big_colours(xy_panel(p), 300)) >= 3, tmp_path / "seg.png"
        )
    finally:
        served.stop()
    for request in ["GET /seg/info 200", "GET /seg/1_1_1/0-64_0-64_0-32 200", "GET /seg/skeletons/1 200"]:
        assert request in served.log, served.log
    regions = big_colours(xy_panel(pixels), 300)
    assert len(regions) == 3, f"expected three segment colours, found {[c for c, _ in regions]}"
    by_size = sorted(regions, key=lambda r: -len(r[1]))
    (colour_1, where_1), others = by_size[0], by_size[1:]
    # Segment 1 covers half of the section, 2 and 3 a quarter each.
    assert len(where_1) > 1.6 * max(len(w) for _, w in others)
    # Segment 1 is left of both others (x grows to the right); 2 is above 3 (y grows down).
    (colour_a, where_a), (colour_b, where_b) = others
    if where_a[:, 0].mean() > where_b[:, 0].mean():
        (colour_a, where_a), (colour_b, where_b) = (colour_b, where_b), (colour_a, where_a)
    colour_2, where_2, colour_3, where_3 = colour_a, where_a, colour_b, where_b
    assert where_1[:, 1].max() <= min(where_2[:, 1].min(), where_3[:, 1].min()) + 2
    assert where_2[:, 0].max() <= where_3[:, 0].min() + 2
    # Each part is a filled rectangle of the same height (segment 1) or half (2 and 3).
    for where in (where_1, where_2, where_3):
        rows = where[:, 0].max() - where[:, 0].min() + 1
        cols = where[:, 1].max() - where[:, 1].min() + 1
        assert len(where) > 0.9 * rows * cols
    height_1 = where_1[:, 0].max() - where_1[:, 0].min() + 1
    height_2 = where_2[:, 0].max() - where_2[:, 0].min() + 1
    assert abs(height_1 - 2 * height_2) <= 3

    # 2. The skeletons alone: their vertices drawn in the segments' colours, where they lie.
    skeletons_only = tmp_path / "skeletons-only"
    skeletons_only.mkdir()
    shutil.copytree(root / "seg" / "skeletons", skeletons_only / "skel")
    colours = {1: colour_1, 2: colour_2, 3: colour_3}
    served = Served(neurochunk_binary, skeletons_only)
    try:
        pixels = screenshot(
            served.link,
            lambda p: all(len(near(xy_panel(p), c)) >= 4 for c in colours.values()),
            tmp_path / "skeletons.png",
        )
    finally:
        served.stop()
    for segment in SKELETONS:
        assert f"GET /skel/{segment} 200" in served.log, served.log
    centre = {s: near(xy_panel(pixels), c).mean(axis=0) for s, c in colours.items()}
    for segment, colour in colours.items():
        assert len(near(xy_panel(pixels), colour)) >= 4, f"skeleton {segment} ({colour}) not drawn"
    # In the xy plane: 1 at (16, 32), 2 at (48, 16), 3 at (48, 48).
    assert centre[1][1] < centre[2][1] and centre[1][1] < centre[3][1]
    assert centre[2][0] < centre[1][0] < centre[3][0]
    assert abs(centre[2][1] - centre[3][1]) < abs(centre[1][1] - centre[2][1])


def test_without_a_local_viewer_the_link_opens_the_public_one(neurochunk_binary, tmp_path):
    np.save(tmp_path / "labels.npy", segmentation())
    subprocess.run(
        [str(neurochunk_binary), "put", str(tmp_path / "labels.npy"), str(tmp_path / "root" / "seg"),
         "--format", "precomputed", "--codec", "compressed_segmentation"],
        check=True,
    )
    served = Served(neurochunk_binary, tmp_path / "root", "--no-client")
    try:
        client, fragment = served.link.split("#!", 1)
        state = json.loads(urllib.parse.unquote(fragment))
        base = state["layers"][0]["source"].removeprefix("precomputed://").removesuffix("seg/")
        # The printed source is served: the info document comes back with CORS headers.
        with urllib.request.urlopen(base + "seg/info") as reply:
            assert json.loads(reply.read())["type"] == "segmentation"
            assert reply.headers["Access-Control-Allow-Origin"] == "*"
        request = urllib.request.Request(base + "../labels.npy")
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(request)
    finally:
        served.stop()
    assert client == "https://neuroglancer-demo.appspot.com/"
    assert state["layers"] == [
        {"type": "segmentation", "source": state["layers"][0]["source"], "name": "seg", "segments": []}
    ]
    assert state["layers"][0]["source"].startswith("precomputed://http://127.0.0.1:")


# Annotation points (x, y, z in nanometres): two near the top of the xy view, one lower down
# in the middle.
POINTS = {101: (10.0, 10.0, 5.0), 102: (50.0, 10.0, 5.0), 103: (30.0, 50.0, 5.0)}
MAGENTA = (255, 0, 255)


def components(mask: np.ndarray) -> list[np.ndarray]:
    """The 8-connected groups of true pixels, largest first, each as (row, column) pairs."""
    seen = np.zeros_like(mask, dtype=bool)
    groups = []
    for start in map(tuple, np.argwhere(mask)):
        if seen[start]:
            continue
        seen[start] = True
        stack, group = [start], []
        while stack:
            r, c = stack.pop()
            group.append((r, c))
            for dr in (-1, 0, 1):
                for dc in (-1, 0, 1):
                    n = (r + dr, c + dc)
                    if 0 <= n[0] < mask.shape[0] and 0 <= n[1] < mask.shape[1] and mask[n] and not seen[n]:
                        seen[n] = True
                        stack.append(n)
        groups.append(np.array(group))
    return sorted(groups, key=len, reverse=True)


def spots(pixels: np.ndarray) -> list[np.ndarray]:
    """Centres of the magenta spots of the xy panel: groups of at least 4 pixels, groups closer
    than 10 pixels joined (the cross-hair lines cut a marker drawn on them in parts)."""
    mask = np.all(np.abs(xy_panel(pixels) - np.array(MAGENTA)) <= 60, axis=2)
    merged: list[np.ndarray] = []
    for group in components(mask):
        for k, other in enumerate(merged):
            if np.min(np.abs(other[:, None, :] - group[None, :, :]).max(axis=2)) <= 10:
                merged[k] = np.concatenate([other, group])
                break
        else:
            merged.append(group)
    return [g.mean(axis=0) for g in merged if len(g) >= 4]


def test_a_served_annotation_layer_draws_its_points(neurochunk_binary, tmp_path):
    """A point cloud table written as a precomputed annotation collection by `neurochunk table
    convert --format precomputed` is offered as an annotation layer; with the layer's colour set
    to magenta in the state, the three points are drawn where they lie."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = list(POINTS)
    table = pa.table(
        {
            "sample_id": pa.array(ids, pa.uint64()),
            "fragment_id": pa.array([1, 2, 3], pa.uint64()),
            **{axis: [POINTS[i][k] for i in ids] for k, axis in enumerate("xyz")},
        }
    ).replace_schema_metadata(
        {"version": "0.2.1", "context": "urn:uuid:0c7a3d1e-viewer", "unit": "nanometer"}
    )
    pq.write_table(table, tmp_path / "points.pointclouds.parquet")
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(
        [str(neurochunk_binary), "table", "convert", str(tmp_path / "points.pointclouds.parquet"),
         str(root / "points"), "--format", "precomputed"],
        check=True,
    )
    # The state serve prints (with --no-client, in the link's fragment), its annotation layer
    # coloured magenta, opened in the neuroglancer package's viewer as serve opens it.
    import neuroglancer

    served = Served(neurochunk_binary, root, "--no-client")
    try:
        _, fragment = served.link.split("#!", 1)
        state = json.loads(urllib.parse.unquote(fragment))
        (layer,) = state["layers"]
        assert layer["type"] == "annotation" and layer["source"].startswith("precomputed://http")
        layer["annotationColor"] = "#ff00ff"
        neuroglancer.set_server_bind_address("127.0.0.1")
        viewer = neuroglancer.Viewer()
        viewer.set_state(neuroglancer.ViewerState(state))

        def drawn(pixels):
            return len(spots(pixels)) >= 3

        pixels = screenshot(viewer.get_viewer_url(), drawn, tmp_path / "annotations.png")
    finally:
        served.stop()
    assert "GET /points/info 200" in served.log, served.log
    centres = spots(pixels)
    assert len(centres) == 3, f"expected three annotation points, found magenta spots at {centres}"
    # (row, column) centres, left to right: 101 (top left), 103 (lower middle), 102 (top right).
    left, middle, right = sorted(centres, key=lambda c: c[1])
    assert abs(left[0] - right[0]) < 0.25 * abs(middle[0] - left[0])
    assert middle[0] > left[0] and middle[0] > right[0]
    assert left[1] < middle[1] < right[1]
    assert abs((middle[1] - left[1]) - (right[1] - middle[1])) < 0.25 * (right[1] - left[1])
