"""Symbolic sizes stay readable and bounded (issue: a GRU's JSON report was 1.5 MB, one formula
716 kB): clamps that facts decide are dropped, sums folded, long formulas become a named
placeholder, and --full-formulas keeps the whole expression."""

import functools
import io
import json
import re

import pytest

from conftest import FIXTURES, SAMPLES, scanprobe

pytestmark = pytest.mark.same_backend  # reports read from the analysis (conftest.RUN_ELSEWHERE)

#: every shipped sample and fixture that analyses cleanly (the bad_* ones stop on purpose; the
#: hog_* ones allocate gigabytes at import for the memory-limit tests: 70 s of writing 6 GiB here;
#: slow_import sleeps 6 s for the progress tests)
FILES = sorted(
    [p for p in SAMPLES.glob("[!_]*.py") if "seed001_function" not in p.name]
    + [p for p in FIXTURES.glob("[!_]*.py")
       if not p.name.startswith(("bad_", "run_behaviours", "excluded", "pymc_factory", "hog_", "slow_"))]
)


@functools.lru_cache(maxsize=None)
def _gru_report() -> str:
    """The JSON report of the GRU fixture, read by two tests (one analysis per worker)."""
    res = scanprobe("inspect", FIXTURES / "gru_unknown_sizes.py", "--format", "json")
    assert res.rc in (0, 1), res
    return res.out


def test_unknown_sizes_read_as_short_formulas_or_placeholders(backend):
    scans = {s["name"]: s for s in json.loads(_gru_report())["targets"][0]["scans"]}
    grad = scans["grad_of_scan_fn"]
    # truncate_gradient=20: the backward pass runs min(steps, 20) steps, said as such
    assert grad["n_steps"]["formula"] == "min(min(x.shape[0], mask.shape[0]), 20)", grad["n_steps"]
    for s in scans.values():
        for b in s["buffers"]:
            for d in b["dims"]:
                f = d["formula"]
                assert len(f) <= 48 or f.startswith("<size from "), f
                assert "Switch(" not in f and "Composite" not in f, f


def test_full_formulas_on_request(backend):
    short = json.loads(_gru_report())
    full = scanprobe("inspect", FIXTURES / "gru_unknown_sizes.py", "--format", "json", "--full-formulas").json()

    def dims(rep):
        return [d["formula"] for s in rep["targets"][0]["scans"] for b in s["buffers"] for d in b["dims"]]

    placeholders = [(a, b) for a, b in zip(dims(short), dims(full)) if a.startswith("<size from ")]
    if not placeholders:  # this backend's rewrites left every size short
        return
    # at least one long formula is given whole (one whose building passes the full budget of
    # a million characters stays a placeholder: Aesara's save-mem lengths)
    assert any(len(b) > 48 and not b.startswith("<size") for _, b in placeholders), placeholders


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_reports_are_bounded(backend, path):
    """No JSON report of a sample or fixture over 200 kB; no formula over 200 characters in its
    terminal report."""
    if path.name.startswith("pymc_"):
        pytest.importorskip("pymc")  # PyMC samples: on the legs that have PyMC
    from scanprobe.commands.inspect import run_inspect
    from scanprobe.report import render

    report = run_inspect(str(path))
    body = json.dumps(report.to_json(), sort_keys=True, default=str)
    assert len(body) < 200_000, (path.name, len(body))
    out = io.StringIO()
    render("inspect", "text", report, out)
    for t in report.targets:
        for s in t.scans:
            for text in [s.n_steps.formula] + [b.bytes_formula() for b in s.buffers]:
                assert len(text) <= 200, (path.name, text[:300])
    assert not re.search(r"[^\s]{201,}", out.getvalue())
