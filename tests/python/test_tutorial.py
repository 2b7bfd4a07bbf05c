"""docs/python.md runs: its ```python blocks are executed in order, as one script, in an
empty directory (where Polars and DuckDB are installed, .peers/py312)."""

from __future__ import annotations

import re
from pathlib import Path

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def blocks() -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", TUTORIAL.read_text(), flags=re.S | re.M)


def test_tutorial_has_every_step():
    code = "\n".join(blocks())
    for needed in ["nc.open(", "nc.convert(", "shards=", ".to_dask()", "nc.nwb.open(", "/units",
                   "nc.table.validate(", "pl.DataFrame(", "duckdb.sql(", "nc.ome.pyramid(", "nc.ome.open(", "pc.write_skeletons(", "pc.annotations("]:
        assert needed in code, needed


def test_tutorial_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "tutorial"}
    for i, block in enumerate(blocks()):
        exec(compile(block, f"{TUTORIAL.name} block {i + 1}", "exec"), namespace)  # noqa: S102
    out = capsys.readouterr().out
    assert "units; unit 0 fired" in out and "valid" in out
    assert (tmp_path / "by-neuron" / "fragment_id=9").is_dir()
