"""Tests run once per backend, each in its own virtual environment (see scripts/test).

Every analysis test compiles and analyses real graphs with the installed backend, through the
real command line in a child process (exit codes, output formats and user-module isolation are
part of what is tested).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "sample_graphs"


def _installed_backend() -> str:
    wanted = os.environ.get("SAMPLE_BACKEND")
    if wanted:
        return wanted
    for name in ("theano", "pytensor"):
        if importlib.util.find_spec(name) is not None:
            return name
    return ""


BACKEND = _installed_backend()

pytest_plugins = ["pytester"]


def child_env(**extra) -> dict:
    env = dict(os.environ)
    env.setdefault("THEANO_FLAGS", f"base_compiledir={ROOT / '.cache' / 'theano'}")
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    env["SAMPLE_BACKEND"] = BACKEND
    env.pop("SCANPROBE_DEBUG", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Result:
    def __init__(self, proc):
        self.rc = proc.returncode
        self.out = proc.stdout
        self.err = proc.stderr

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"<rc={self.rc}\nstdout:\n{self.out}\nstderr:\n{self.err}>"


def scanprobe(*args, env=None, cwd=None, timeout=600) -> Result:
    """Run the real CLI in a child process."""
    proc = subprocess.run(
        [sys.executable, "-m", "scanprobe", *map(str, args)],
        capture_output=True,
        text=True,
        env=child_env(**(env or {})),
        cwd=cwd or ROOT,
        timeout=timeout,
    )
    return Result(proc)


@pytest.fixture
def backend() -> str:
    if not BACKEND:
        pytest.fail("no backend installed: run the tests through scripts/test")
    return BACKEND


# Hypothesis: random in development; in CI the same examples every run (a landing must not
# depend on luck). SCANPROBE_HYPOTHESIS_EXAMPLES widens a local search.
try:
    from hypothesis import settings as _hsettings

    _hsettings.register_profile("ci", derandomize=True, database=None)
    _hsettings.register_profile("dev")
    _hsettings.load_profile("ci" if os.environ.get("CI") else "dev")
except ImportError:  # pragma: no cover - hypothesis is a test requirement
    pass
