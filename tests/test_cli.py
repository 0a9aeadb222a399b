"""The command line itself: instant help without a backend, rules, the JSON contract."""

import json
from pathlib import Path
import subprocess
import sys

import pytest
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


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
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


_STAYS_IGNORED = """
import signal, sys
import scanprobe.entry as entry
from scanprobe.cli import _run

entry._OWN_PROCESS = True  # as in the scanprobe command's own process (entry.main)


def work(progress):
    raise KeyboardInterrupt


try:
    _run(work)
except SystemExit as ended:
    print(ended.code, signal.getsignal(signal.SIGTERM) is signal.SIG_IGN, file=sys.__stdout__)
"""


def test_sigterm_stays_ignored_while_an_interrupted_command_exits():
    """Once interrupted, the command's own process ignores SIGTERM while it writes its error and
    exits; `_run`'s clean-up put scanprobe's SIGTERM handler back while `sys.exit(2)` unwound, so a
    SIGTERM in those last moments raised again (the review of 2026-12-07)."""
    proc = subprocess.run([sys.executable, "-c", _STAYS_IGNORED], capture_output=True, text=True,
                          env=child_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "True"], (proc.stdout, proc.stderr)


_SIGNAL_WHILE_IMPORTING = """
import os, runpy, signal, sys

SIGNAL = getattr(signal, sys.argv[1])


class SignalOnImport:  # the signal arrives while the command line's own modules import
    sent = False

    def find_spec(self, name, path=None, target=None):
        if name == "scanprobe.backends" and not SignalOnImport.sent:
            SignalOnImport.sent = True
            os.kill(os.getpid(), SIGNAL)
        return None

sys.meta_path.insert(0, SignalOnImport())
sys.argv = ["scanprobe", "inspect", "model.py", *sys.argv[2:]]
runpy.run_module("scanprobe", run_name="__main__")
"""


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("sig, said", [("SIGINT", "interrupted (Ctrl-C)"), ("SIGTERM", "terminated (SIGTERM)")])
@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_signal_while_scanprobes_own_modules_import_is_an_interruption(sig, said, fmt):
    """Ctrl-C in the first second of a command (several on a busy machine: `import scanprobe`
    imported every rule, and the command line its modules, before any handler ran) ended with a
    traceback and the signal's own exit status (-2, -15); the loaded Aesara leg's Ctrl-C test hit
    it (issue 29). Now an interruption: one line and a hint (the JSON error with --format json),
    exit 2. The signal is real, sent by the process to itself while scanprobe.backends imports."""
    args = [sig] + (["--format", "json"] if fmt == "json" else [])
    proc = subprocess.run([sys.executable, "-c", _SIGNAL_WHILE_IMPORTING, *args], capture_output=True, text=True,
                          env=child_env(), cwd=ROOT, preexec_fn=_default_sigint)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert f"error: {said}: nothing was reported" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert "hint:" in proc.stderr
    if fmt == "json":
        assert json.loads(proc.stdout)["error"]["message"].startswith(said), proc.stdout
    else:
        assert proc.stdout == ""


def test_import_scanprobe_is_light():
    """`import scanprobe` (which runs before any handler of the command's can) imports no rule,
    backend adapter or third-party package: the window where a Ctrl-C is a traceback is Python's
    own start."""
    code = "import sys, scanprobe; print(sorted(m for m in sys.modules if m.startswith(('scanprobe.', 'numpy', 'click'))))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['scanprobe.contracts']", proc.stdout


def _default_sigint():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as from a terminal (a background job inherits it ignored)
