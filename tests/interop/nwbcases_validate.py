"""`neurochunk nwb validate` against pynwb's validator.

* Every valid file we have gives no error: pynwb/hdmf-zarr fixtures of this environment's
  convention, the same fixtures written by the other environment and converted with
  `nwb convert`, and `nwb demo` in this convention.
* The corpus of nwbvariants.py (one problem each, written by pynwb through this environment's
  hdmf-zarr, so in this suite's convention) gives the rule and object each variant names, and no
  error of another rule.
* In the nwb3 suite (.peers/py312) the HDF5 twin of each variant goes through pynwb.validate:
  where pynwb detects the problem, its error class and location must match our rule and path
  (PYNWB_CLASSES: the pynwb classes each of our rules corresponds to); where the variant says
  pynwb misses it, pynwb must indeed report nothing, so the claim in the variant's `why` (and in
  docs/nwb.md) stays true. The nwb2 suite checks the legacy files against the same table: the
  pynwb and hdmf of both environments are the same versions, so the HDF5 side runs once.

Imported into tests/interop/nwb2/test_validate_nwb2.py and nwb3/test_validate_nwb3.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import nwbfixtures
import nwbvariants
from nwbvariants import BASE, VARIANTS

CONVENTION = nwbfixtures.this_convention()
HDF5_SIDE = CONVENTION == "zarr3"
PROCESSES = 2  # writers (and pynwb validators) run side by side
TIMEOUT = 900

# Our rule -> the pynwb.validate error classes that report the same problem.
PYNWB_CLASSES = {
    "missing-attribute": {"MissingError"},
    "missing-dataset": {"MissingError", "MissingDataType"},
    "missing-group": {"MissingError", "MissingDataType"},
    "missing-link": {"MissingDataType"},
    "dtype": {"DtypeError"},
    "shape": {"ShapeError", "ExpectedArrayError"},
    "reference-target": {"IncorrectDataType"},
    # pynwb leaves a child of the wrong type unmatched: the specification it should fill is missing.
    "link-target": {"MissingDataType"},
    "wrong-type": {"MissingDataType"},
    "timezone": {"Error"},
    # pynwb cannot load the cached namespaces at all.
    "missing-namespace": {"raises"},
}

# What the corpus must cover (the issue's list).
REQUIRED_RULES = {
    "missing-attribute",
    "missing-dataset",
    "missing-group",
    "missing-link",
    "dtype",
    "shape",
    "reference-target",
    "link-target",
    "table-column-length",
    "table-colnames",
    "table-region",
    "vector-index",
    "duplicate-ids",
    "unknown-type",
    "missing-namespace",
}


def _sharded(args: list[str]) -> dict:
    """Run `nwbvariants.py ARGS --shard I/N` in PROCESSES processes; their JSON merged."""
    script = str(Path(nwbvariants.__file__))
    procs = [
        subprocess.Popen(
            [sys.executable, "-W", "ignore", script, *args, "--shard", f"{i}/{PROCESSES}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        for i in range(PROCESSES)
    ]
    merged: dict = {}
    for proc in procs:
        out, err = proc.communicate(timeout=TIMEOUT)
        if proc.returncode != 0:
            pytest.fail(f"nwbvariants.py {' '.join(args)} failed ({proc.returncode}):\n{err[-3000:]}")
        merged.update(json.loads(out))
    return merged


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, dict[str, str]]:
    """name -> format -> path of the base file and every variant."""
    out = tmp_path_factory.mktemp("nwb-variants")
    formats = "zarr,hdf5" if HDF5_SIDE else "zarr"
    written = _sharded(["write", str(out), "--formats", formats])
    assert sorted(written) == sorted(v.name for v in [BASE, *VARIANTS])
    return written


@pytest.fixture(scope="module")
def our_findings(nwb_session_cli, corpus) -> dict[str, list[dict]]:
    """`nwb validate --json` of every Zarr file of the corpus in one run: name -> findings."""
    names = {corpus[v.name]["zarr"]: v.name for v in [BASE, *VARIANTS]}
    proc = nwb_session_cli.run_timed("nwb", "validate", "--json", *names, timeout=TIMEOUT)
    assert proc.returncode == 1, f"exit {proc.returncode} (1: some file is invalid)\n{proc.stderr[-2000:]}"
    findings = json.loads(proc.stdout)
    by_name: dict[str, list[dict]] = {name: [] for name in names.values()}
    for f in findings:
        by_name[names[f["file"]]].append(f)
    return by_name


def _validate(nwb, path: Path) -> dict:
    proc = nwb.run_timed("nwb", "validate", path, "--json")
    findings = json.loads(proc.stdout) if proc.stdout.strip() else []
    errors = [f for f in findings if f["severity"] == "error"]
    assert proc.returncode == 0 and not errors, (
        f"{path} (exit {proc.returncode}) is reported invalid:\n"
        + "\n".join(json.dumps(e) for e in errors[:20])
        + proc.stderr[-2000:]
    )
    return findings


def test_the_corpus_covers_every_rule_the_issue_lists():
    assert len(VARIANTS) >= 40
    assert REQUIRED_RULES <= {v.rule for v in VARIANTS}
    assert set(PYNWB_CLASSES) <= {v.rule for v in VARIANTS}
    # Every variant pynwb misses says why.
    assert all(v.why for v in VARIANTS if v.pynwb is None)


@pytest.mark.parametrize("kind", nwbfixtures.fixtures_for(CONVENTION))
def test_pynwb_files_are_valid(nwb, nwb_files, kind):
    findings = _validate(nwb, nwb_files.path(kind))
    assert not findings, f"{kind}: unexpected warnings: {findings[:5]}"


@pytest.mark.parametrize("kind", ["ecephys", "ophys"])
def test_converted_files_are_valid(nwb, nwb_files, tmp_path, kind):
    dst = nwb.nwb_convert(nwb_files.other(kind), tmp_path / f"{kind}.nwb.zarr", CONVENTION)
    assert not _validate(nwb, dst)


def test_demo_files_are_valid(nwb, demo_file, other_demo_file, tmp_path):
    assert not _validate(nwb, demo_file)
    converted = nwb.nwb_convert(other_demo_file, tmp_path / "demo-converted.nwb.zarr", CONVENTION)
    assert not _validate(nwb, converted)


def test_the_unbroken_variant_is_valid(our_findings):
    assert our_findings["base"] == []


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_variant_gives_its_rule_and_no_other(our_findings, variant):
    findings = our_findings[variant.name]
    errors = [f for f in findings if f["severity"] == "error"]
    found = Counter((f["rule"], f["path"]) for f in errors)
    assert (variant.rule, variant.path) in found, (
        f"{variant.name}: expected [{variant.rule}] at {variant.path}, got:\n"
        + "\n".join(json.dumps(f) for f in findings)
    )
    assert {f["rule"] for f in errors} == {variant.rule}, "\n".join(json.dumps(f) for f in errors)
    assert not [f for f in findings if f["severity"] != "error"], findings


if HDF5_SIDE:

    @pytest.fixture(scope="module")
    def pynwb_verdicts(corpus) -> dict[str, dict]:
        """pynwb.validate (and NWBHDF5IO.read) of every HDF5 twin: name -> verdict."""
        out = Path(corpus[BASE.name]["hdf5"]).parent
        verdicts = _sharded(["pynwb", str(out)])
        assert sorted(verdicts) == sorted(v.name for v in [BASE, *VARIANTS])
        return verdicts

    def test_pynwb_finds_the_unbroken_twin_valid(pynwb_verdicts):
        assert pynwb_verdicts["base"] == {"errors": [], "read": "ok"}

    @pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
    def test_pynwb_on_the_hdf5_twin_agrees(pynwb_verdicts, variant):
        verdict = pynwb_verdicts[variant.name]
        if variant.pynwb is None:
            # pynwb misses the problem; the variant (and docs/nwb.md) says so and why, and
            # whether pynwb's read refuses the file.
            assert verdict.get("errors") == [], f"{variant.name}: pynwb now detects it: {verdict}"
            assert (verdict["read"] != "ok") == variant.read_fails, f"{variant.name}: read {verdict['read']}"
            return
        expected_class, location = variant.pynwb
        assert expected_class in PYNWB_CLASSES[variant.rule], (variant.rule, expected_class)
        if expected_class == "raises":
            assert location in verdict.get("raises", ""), verdict
            return
        errors = {(e["class"], e["location"]) for e in verdict.get("errors", [])}
        assert (expected_class, location) in errors, f"{variant.name}: pynwb reports {verdict}"
        assert {c for c, _ in errors} <= PYNWB_CLASSES[variant.rule], f"{variant.name}: {errors}"
        # The same object: pynwb names attributes as `path.attribute`, and reports a child it
        # could not match at its parent.
        where = "/" + location.split(".")[0]
        ours = variant.path
        parent = ours.rsplit("/", 1)[0] or "/"
        assert where in (ours, parent), f"{variant.name}: pynwb at {where}, ours at {ours}"
