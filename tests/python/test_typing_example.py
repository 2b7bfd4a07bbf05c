"""The typed example program (also checked by mypy --strict) runs."""

from __future__ import annotations

from typing_example import precomputed_objects, tables_and_nwb, write_and_read


def test_typing_example_runs(tmp_path):
    tile = write_and_read(tmp_path)
    assert tile.shape == (32, 10)
    assert tables_and_nwb(tmp_path) == (1, ["/units"])


def test_typing_example_precomputed_runs(tmp_path):
    assert precomputed_objects(tmp_path) == (2, 1, 1)
