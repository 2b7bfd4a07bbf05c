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
import nwbh5
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


def _findings_of(cli, corpus: dict, fmt: str) -> dict[str, list[dict]]:
    """`nwb validate --json` of every file of the corpus in format `fmt` in one run: name ->
    findings."""
    names = {corpus[v.name][fmt]: v.name for v in [BASE, *VARIANTS]}
    proc = cli.run_timed("nwb", "validate", "--json", *names, timeout=TIMEOUT)
    assert proc.returncode == 1, f"exit {proc.returncode} (1: some file is invalid)\n{proc.stderr[-2000:]}"
    findings = json.loads(proc.stdout)
    by_name: dict[str, list[dict]] = {name: [] for name in names.values()}
    for f in findings:
        by_name[names[f["file"]]].append(f)
    return by_name


@pytest.fixture(scope="module")
def our_findings(nwb_session_cli, corpus) -> dict[str, list[dict]]:
    """`nwb validate --json` of every Zarr file of the corpus: name -> findings."""
    return _findings_of(nwb_session_cli, corpus, "zarr")


def _assert_rule_and_no_other(variant, findings: list[dict]) -> list[dict]:
    """The variant's rule at its object, no error of another rule, no warning; the errors."""
    errors = [f for f in findings if f["severity"] == "error"]
    found = Counter((f["rule"], f["path"]) for f in errors)
    assert (variant.rule, variant.path) in found, (
        f"{variant.name}: expected [{variant.rule}] at {variant.path}, got:\n"
        + "\n".join(json.dumps(f) for f in findings)
    )
    assert {f["rule"] for f in errors} == {variant.rule}, "\n".join(json.dumps(f) for f in errors)
    assert not [f for f in findings if f["severity"] != "error"], findings
    return errors


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
    _assert_rule_and_no_other(variant, our_findings[variant.name])


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

    # ---------------------------------------------------------------------------------------
    # `nwb validate` of HDF5 files themselves (imported into scratch storage and validated)
    # ---------------------------------------------------------------------------------------

    @pytest.fixture(scope="module")
    def our_hdf5_findings(nwb_session_cli, corpus) -> dict[str, list[dict]]:
        """`nwb validate --json` of every HDF5 twin in one run: name -> findings; the
        directory holds nothing new afterwards (the imports were scratch)."""
        out = Path(corpus[BASE.name]["hdf5"]).parent
        before = sorted(p.name for p in out.iterdir())
        findings = _findings_of(nwb_session_cli, corpus, "hdf5")
        assert sorted(p.name for p in out.iterdir()) == before
        return findings

    def test_the_unbroken_hdf5_twin_is_valid(our_hdf5_findings):
        assert our_hdf5_findings["base"] == []

    def _pynwb_at(location: str) -> str:
        """The object a pynwb.validate location names (`a/b.attr` -> `/a/b`)."""
        return "/" + location.split(".")[0]

    @pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
    def test_our_verdict_on_the_hdf5_twin_agrees_with_pynwb(our_hdf5_findings, pynwb_verdicts, variant):
        """The HDF5 twin gives the same rule at the same object as the Zarr files; where
        pynwb detects the problem, each of its errors is of a class our rule corresponds to,
        at the object we name (or its parent, where pynwb reports a child it could not
        match)."""
        errors = _assert_rule_and_no_other(variant, our_hdf5_findings[variant.name])
        if variant.pynwb is None:
            return
        verdict = pynwb_verdicts[variant.name]
        if "raises" in verdict:
            assert variant.rule == "missing-namespace", verdict
            return
        ours = {f["path"] for f in errors}
        ours |= {p.rsplit("/", 1)[0] or "/" for p in ours}
        assert verdict["errors"], f"{variant.name}: pynwb reports nothing"
        for e in verdict["errors"]:
            assert e["class"] in PYNWB_CLASSES[variant.rule], (variant.name, e)
            assert _pynwb_at(e["location"]) in ours, (variant.name, e, sorted(ours))

    # Problems that HDF5 files of others have against the schema they cache: (rule, path) of
    # each error we report. pynwb.validate reports each of them too, except where `PYNWB_MISSES`
    # says otherwise.
    HDF5_PROBLEMS = {
        # pynwb's back-compat files written invalid on purpose (its test_read.py expects these).
        "1.5.1_imageseries_no_unit.nwb": {("missing-attribute", "/acquisition/test_imageseries/data")},
        "1.5.1_timeseries_no_data.nwb": {("missing-dataset", "/acquisition/test_timeseries")},
        "1.5.1_timeseries_no_unit.nwb": {("missing-attribute", "/acquisition/test_timeseries/data")},
        # The DANDI file: its cached core 2.1.0 declares electrodes/filtering float32 (a schema
        # bug fixed in 2.2.0) and location/group_name ascii, but they hold UTF-8 text; and the
        # cached namespace lists no nwb.device document, so `Device` is not defined by it.
        nwbh5.DANDI.name: {
            ("dtype", "/general/extracellular_ephys/electrodes/filtering"),
            ("dtype", "/general/extracellular_ephys/electrodes/group_name"),
            ("dtype", "/general/extracellular_ephys/electrodes/location"),
            ("unknown-type", "/general/devices/ADunit"),
            ("unknown-type", "/general/devices/laser"),
        },
    }
    # pynwb resolves types missing from the cache against the namespaces it ships.
    PYNWB_MISSES = {nwbh5.DANDI.name: {"unknown-type"}}
    # pynwb 1.0.2 wrote no specifications: pynwb validates them against the namespaces it
    # ships, we only against given ones (--namespace).
    UNCACHED = [p for p in nwbh5.BACK_COMPAT if p.name.startswith("1.0.2_")]

    def _pynwb_errors(path: Path) -> set[tuple[str, str]]:
        import warnings

        import pynwb

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return {(type(e).__name__, _pynwb_at(e.location or "")) for e in pynwb.validate(path=str(path))}

    def _our_errors(nwb, path: Path, *options) -> tuple[int, set[tuple[str, str]], str]:
        proc = nwb.run_timed("nwb", "validate", path, "--json", *options)
        findings = json.loads(proc.stdout) if proc.stdout.strip() else []
        assert not [f for f in findings if f["severity"] != "error"], findings
        return proc.returncode, {(f["rule"], f["path"]) for f in findings}, proc.stderr

    def _assert_pynwb_agrees(name: str, ours: set[tuple[str, str]], theirs: set[tuple[str, str]]):
        """Every pynwb error is one of ours (a class of our rule, at our object); every one of
        ours pynwb reports too, but for the rules PYNWB_MISSES names."""
        for cls, where in theirs:
            assert any(cls in PYNWB_CLASSES.get(rule, ()) and where == path for rule, path in ours), (name, cls, where, ours)
        for rule, path in ours:
            if rule in PYNWB_MISSES.get(name, set()):
                continue
            assert any(cls in PYNWB_CLASSES[rule] and where == path for cls, where in theirs), (name, rule, path, theirs)

    @pytest.mark.parametrize(
        "src", [nwbh5.DANDI, *[p for p in nwbh5.BACK_COMPAT if p not in UNCACHED]], ids=lambda p: p.name
    )
    def test_hdf5_files_of_others_validate_as_pynwb_says(nwb, src):
        status, ours, stderr = _our_errors(nwb, src)
        expected = HDF5_PROBLEMS.get(src.name, set())
        assert ours == expected, stderr
        assert status == (1 if expected else 0), stderr
        _assert_pynwb_agrees(src.name, ours, _pynwb_errors(src))

    @pytest.mark.parametrize("src", UNCACHED, ids=lambda p: p.name)
    def test_hdf5_files_caching_no_specifications(nwb, src):
        """Without specifications the file cannot be validated (exit 2); against the core and
        hdmf-common namespaces pynwb ships, our errors are pynwb's, plus the fixed value of
        `nwb_version` (2.0b), which pynwb's validator does not check."""
        status, ours, stderr = _our_errors(nwb, src)
        assert status == 2 and "caches no specifications" in stderr, stderr
        import hdmf.common
        import pynwb

        core = Path(pynwb.__file__).parent / "nwb-schema" / "core" / "nwb.namespace.yaml"
        common = Path(hdmf.common.__file__).parent / "hdmf-common-schema" / "common" / "namespace.yaml"
        status, ours, stderr = _our_errors(nwb, src, "--namespace", core, "--namespace", common)
        assert status == 1, stderr
        assert ("value", "/") in ours
        ours.discard(("value", "/"))
        theirs = _pynwb_errors(src)
        assert ours == {("shape", where) for _, where in theirs}, (ours, theirs)
        assert {cls for cls, _ in theirs} <= PYNWB_CLASSES["shape"]
        if src.name != "1.0.2_nwbfile.nwb":
            assert ours, "a scalar where the schema asks for an array"
