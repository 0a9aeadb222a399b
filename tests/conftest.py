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
import time
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
os.environ.setdefault("SAMPLE_BACKEND", BACKEND)  # samples run in this process pick the same backend
# the C backends' compile cache in the tests' own folder (outliving the clone), one per pytest-xdist
# worker, finished modules copied between workers before each test (tests/compile_cache.py)
import compile_cache as _compile_cache  # noqa: E402

_WORKER = os.environ.get("PYTEST_XDIST_WORKER") or None
#: the backends' flags as the shell gave them, before the lines below point the caches elsewhere
USER_FLAGS = {k: os.environ.get(k, "") for k in ("THEANO_FLAGS", "PYTENSOR_FLAGS", "AESARA_FLAGS")}
_CACHE = _compile_cache.configure(BACKEND, _WORKER)
# PyTensor: numba at LLVM level 1, in a compile cache of the tests' own (tests/compile_cache.py)
NUMBA_TEST_CACHE = _compile_cache.configure_numba(BACKEND)
COMPILE_CACHE = _CACHE  # this process's compile cache (None for a backend without one)
# the includes every C module starts with, precompiled once per leg (made by the first process, the
# pytest-xdist controller, before the workers start)
_PCH = _compile_cache.precompiled_header(BACKEND, build=not _WORKER) if _CACHE else None
if _PCH is not None:
    _compile_cache.use_precompiled_header(BACKEND, _PCH)
_SYNC = _compile_cache.SiblingSync(_CACHE) if (_CACHE is not None and _WORKER) else None
#: the backends' flag variables as this run started: loading a backend in this process adds to
#: them (Theano's blas.ldflags=), and the child every command starts would inherit that and say
#: something else than in a user's shell, depending on which test ran first in this worker
_START_FLAGS = {k: os.environ[k] for k in ("THEANO_FLAGS", "PYTENSOR_FLAGS", "AESARA_FLAGS") if k in os.environ}
os.environ.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
# the children of the commands run in this process start from a fork server that imported the
# backend once (scanprobe/runners/forkserver.py: PyTensor 3.0 leg 246 -> 178 s; every leg passed
# with it, on a fresh machine: bench/RESULTS.md table 7); SCANPROBE_FORK_SERVER=0 starts each
# with exec instead. The commands a test runs in a child process of their own (isolated=True)
# start theirs with exec, as a user's single command does
os.environ.setdefault("SCANPROBE_FORK_SERVER", "1")


def _backend_version() -> str:
    """major.minor of the installed backend (golden files may differ per version)."""
    import importlib.metadata

    try:
        return ".".join(importlib.metadata.version(BACKEND).split(".")[:2]) if BACKEND else ""
    except importlib.metadata.PackageNotFoundError:
        return ""


BACKEND_VERSION = _backend_version()
GOLDEN = ROOT / "tests" / "golden"


def normalize(text: str) -> str:
    """Output with what legitimately differs between versions of one backend replaced: the
    version string, node and op counts (rewrites of one version fuse more ops than another's)."""
    import re

    text = re.sub(rf"({BACKEND} )\d+\.\d+\.\d+\S*", r"\1<version>", text)
    text = re.sub(r"· \d+ nodes", "· <n> nodes", text)
    text = re.sub(r"\d+ ops run once per step", "<n> ops run once per step", text)
    text = re.sub(r"\((\d+|\?) ops inside\)", "(<n> ops inside)", text)
    return text


def check_golden(relpath: str, text: str) -> None:
    """Compare normalized output with tests/golden/<backend>[-<major.minor>]/<relpath>.

    The per-version folder wins where it has the file (output that legitimately differs there).
    SCANPROBE_REGEN_GOLDEN=1 rewrites the backend's file; =version rewrites the per-version one.
    """
    text = normalize(text)
    versioned = GOLDEN / f"{BACKEND}-{BACKEND_VERSION}" / relpath
    path = versioned if versioned.exists() else GOLDEN / BACKEND / relpath
    regen = os.environ.get("SCANPROBE_REGEN_GOLDEN")
    if regen:
        path = versioned if regen == "version" else GOLDEN / BACKEND / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}: regenerate with SCANPROBE_REGEN_GOLDEN=1"
    assert text == path.read_text(), f"output differs from {path.relative_to(ROOT)}"

pytest_plugins = ["pytester"]


def child_env(**extra) -> dict:
    env = dict(os.environ)
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".cache" / "numba"))
    env["SAMPLE_BACKEND"] = BACKEND
    env.pop("SCANPROBE_DEBUG", None)
    env.pop("SCANPROBE_FORK_SERVER", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Result:
    """A command's exit code, stdout and stderr. ``err`` leaves out the progress lines
    (``scanprobe: STEP (still running after 5 s)``, printed only when a step runs long, so
    present or not by how busy the machine is); ``err_raw`` keeps them."""

    def __init__(self, rc, out, err):
        self.rc = rc
        self.out = out
        self.err_raw = err
        self.err = "".join(line for line in err.splitlines(keepends=True) if not line.startswith("scanprobe: "))

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"<rc={self.rc}\nstdout:\n{self.out}\nstderr:\n{self.err}>"


#: Environment variables read only when a backend is imported: a test that sets one needs a
#: fresh process.
_IMPORT_TIME_ENV = ("THEANO_FLAGS", "PYTENSOR_FLAGS", "AESARA_FLAGS", "NUMBA_CACHE_DIR", "JAX_PLATFORMS")


def scanprobe(*args, env=None, cwd=None, timeout=600, isolated=False) -> Result:
    """Run the real command line: in this process (click's runner: the same parsing, reporters
    and exit codes, the backend imported once for the whole run), or in a child process where
    isolation is what a test is about (``isolated=True``, or an environment variable a backend
    reads at import). With SCANPROBE_TEST_CALL_LOG=FILE each call appends a JSON line (test,
    arguments, seconds) to FILE: how the suite's time was split among calls (docs/next.md)."""
    env = {k: str(v) for k, v in (env or {}).items()}
    log = os.environ.get("SCANPROBE_TEST_CALL_LOG")
    t0 = time.monotonic()
    try:
        return _scanprobe(args, env, cwd, timeout, isolated)
    finally:
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0],
                                    "args": [str(a) for a in args], "env": env, "cwd": str(cwd or ""),
                                    "isolated": isolated, "s": round(time.monotonic() - t0, 2)}) + "\n")


def _scanprobe(args, env, cwd, timeout, isolated) -> Result:
    if isolated or any(k in env for k in _IMPORT_TIME_ENV) or os.environ.get("SCANPROBE_TEST_SUBPROCESS"):
        proc = subprocess.run(
            [sys.executable, "-m", "scanprobe", *map(str, args)],
            capture_output=True, text=True, env=child_env(**env), cwd=cwd or ROOT, timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)
    from click.testing import CliRunner

    from scanprobe.cli import main

    old = os.getcwd()
    os.chdir(cwd or ROOT)
    before = set(sys.modules)
    env = {**_START_FLAGS, **env}  # the children see the flags a shell would give them
    try:
        res = CliRunner().invoke(main, [str(a) for a in args], env=env)
    finally:
        os.chdir(old)
        # modules the run imported from outside the environment (fixtures' libraries, a
        # temporary site-packages) are forgotten, as a fresh process would not have them
        for name in set(sys.modules) - before:
            path = getattr(sys.modules.get(name), "__file__", None) or ""
            if path and not path.startswith((sys.prefix, sys.base_prefix, str(ROOT / "scanprobe"))):
                sys.modules.pop(name, None)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return Result(res.exit_code, res.stdout, res.stderr)


#: tests that another leg runs with the same outcome, skipped on the legs named here:
#: ``same_backend`` ones (sizes against what the backend allocates, whole training steps compiled
#: and run, reports read from the analysis: what the backend version decides, not Python) once
#: per backend version; ``once_per_python`` ones (what scanprobe's own process handling, options,
#: output files and rendering decide: a module that exits, forks, hangs or hogs memory, signals,
#: option errors; no backend version changes their outcome) once per Python version: on Python
#: 3.11 the Theano leg runs them (Theano's g++ children are the ones a stopped command must also
#: kill), on 3.12 and 3.13 the PyTensor 3.3 legs
RUN_ELSEWHERE = {
    "pytensor-3.3-py313": {"same_backend": "pytensor-3.3"},
    "aesara": {"once_per_python": "theano"},
    "pytensor-2.38": {"once_per_python": "theano"},
    "pytensor-3.0": {"once_per_python": "theano"},
}
_WHAT = {"same_backend": "the same backend version", "once_per_python": "the same Python"}


def pytest_collection_modifyitems(config, items):
    elsewhere = RUN_ELSEWHERE.get(os.environ.get("SCANPROBE_LEG", ""), {})
    if not elsewhere or os.environ.get("SCANPROBE_ALL_TESTS"):
        return
    skips = {kind: pytest.mark.skip(reason=f"{_WHAT[kind]} runs this on the {leg} leg "
                                           "(SCANPROBE_ALL_TESTS=1 runs it here too)")
             for kind, leg in elsewhere.items()}
    for item in items:
        for kind, skip in skips.items():
            if item.get_closest_marker(kind):
                item.add_marker(skip)
                break


@pytest.fixture(autouse=True)
def _modules_from_other_workers():
    """Modules the other workers compiled, copied into this worker's cache before each test."""
    if _SYNC is not None:
        _SYNC()
    yield


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
