"""The command line itself: instant help without a backend, rules, the JSON contract."""

import json
from pathlib import Path
import subprocess
import sys

from conftest import ROOT, SAMPLES, child_env, scanprobe
from scanprobe import REPORT_SCHEMA


def test_help_imports_no_backend():
    code = (
        "import sys; from click.testing import CliRunner; from scanprobe.cli import main;"
        "r = CliRunner().invoke(main, ['inspect', '--help']); assert r.exit_code == 0, r.output;"
        "heavy = [m for m in ('theano', 'pytensor', 'numpy', 'rich') if m in sys.modules];"
        "print(heavy)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_help_text():
    res = scanprobe("--help")
    assert res.rc == 0 and "inspect" in res.out and "Exit codes" in res.out
    res = scanprobe("inspect", "--help")
    assert "FILE[:TARGET]" in res.out and "--input" in res.out


def test_rules_command():
    res = scanprobe("rules")
    assert res.rc == 0 and "SP001" in res.out
    res = scanprobe("rules", "SP001")
    assert "## Why is this bad?" in res.out and "25.2 GB" in res.out
    res = scanprobe("rules", "SP999")
    assert res.rc == 2 and "no rule" in res.err


def test_json_contract_keys(backend):
    res = scanprobe("inspect", SAMPLES / "seed000_pixel_loop.py", "--mode", "FAST_COMPILE", "--format", "json")
    rep = res.json()
    assert rep["schema"] == REPORT_SCHEMA == "scanprobe.report/6"
    assert sorted(rep) == ["backend", "file", "findings", "notes", "scanprobe", "schema", "summary", "targets"]
    assert sorted(rep["summary"]) == ["exit_code", "findings", "notes", "removable_bytes", "targets"]
    target = rep["targets"][0]
    assert sorted(target) == [
        "analysis_seconds", "compile_seconds", "inputs", "mode", "n_nodes", "name", "scans", "site",
    ]
    for key in ("recurrent", "step_ops", "step_work", "blockers", "opaque"):
        assert key in target["scans"][0]
    buf = target["scans"][0]["buffers"][0]
    for key in ("role", "dims", "shape", "bytes", "bytes_formula", "dtype", "status", "verdict", "why",
                "belongs_to", "created_by", "created_site", "leading_offset", "reads"):
        assert key in buf
    finding = rep["findings"][0]
    assert sorted(finding) == [
        "bytes", "code", "explanation", "fix", "message", "name", "scan", "severity", "site", "target",
    ]
    # keys are sorted in the output (a stable contract for diffs)
    assert res.out == json.dumps(rep, indent=2, sort_keys=True, default=str) + "\n"


def test_exit_zero(backend):
    res = scanprobe("inspect", SAMPLES / "seed000_pixel_loop.py", "--mode", "FAST_COMPILE", "--exit-zero")
    assert res.rc == 0 and "SP001" in res.out


def test_a_long_step_says_what_runs_when_stderr_is_not_a_terminal():
    """Issue 27, item 4: `fix` ran 15 minutes with nothing on the terminal. A step that runs longer
    than 5 s prints one line on stderr, with the step (here the module's import, asleep for 6 s:
    the line is printed however fast the machine is); stdout stays the report. On a busy machine
    other steps (importing the backend, optimizing) pass 5 s too and say so, each once."""
    import re

    from conftest import FIXTURES

    res = scanprobe("inspect", FIXTURES / "slow_import.py", "--format", "json", isolated=True)
    assert res.rc == 0, res
    lines = [line for line in res.err_raw.splitlines() if line.startswith("scanprobe: ")]
    assert "scanprobe: running slow_import.py (still running after 5 s)" in lines, res.err_raw
    assert all(re.fullmatch(r"scanprobe: \S.* \(still running after 5 s\)", line) for line in lines), res.err_raw
    assert len(set(lines)) == len(lines), res.err_raw
    res.json()  # stdout: the report alone


def test_the_cli_reference_in_docs_is_current():
    """docs/cli.md holds every command's --help (issue 27: every option in docs/)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "scripts" / "cli_reference.py"
    spec = importlib.util.spec_from_file_location("cli_reference", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.TARGET.read_text() == mod.render(), "docs/cli.md is stale: python scripts/cli_reference.py"


def test_a_ctrl_c_that_python_wraps_is_an_interruption(capsys):
    """Ctrl-C while scanprobe's own modules import (slow on a busy machine) can land in a class
    body's ``__set_name__``, which Python 3.11 wraps in a RuntimeError: it was reported as
    "internal error: RuntimeError" (the loaded Theano leg, issue 29). An interruption, exit 2."""
    import pytest

    from scanprobe.cli import _run

    class Hook:
        def __set_name__(self, owner, name):
            raise KeyboardInterrupt

    def work(progress):
        class Record:  # noqa: F841 (its creation runs the hook)
            field = Hook()

    with pytest.raises(SystemExit) as ended:
        _run(work)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert "interrupted (Ctrl-C)" in err and "internal error" not in err, err
