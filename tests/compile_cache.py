"""Compile caches of the C backends during a test run (Theano's and Aesara's: see PER_WORKER): one per
pytest-xdist worker, shared by copying finished modules.

Theano, Aesara and PyTensor hold one lock per compile cache while gcc runs
(`ModuleCache.module_from_key`), so workers sharing one cache compile one at a time (cold Theano
leg, 2 workers: 646 s with one cache, 555 s with one per worker; docs/next.md). With one cache
per worker, a module both need is compiled twice (473 modules instead of 360). So before each
test a worker copies in the modules its siblings have finished: a ``tmp*`` module directory
whose ``key.pkl`` (written last, after gcc) is at least a second old and whose module (named by
its hash, ``m<hash>.so``) the worker does not have yet. Nothing of the backend is patched: its
own ``refresh()``, which runs on every miss before compiling, loads the copied directory (a
``tmp*`` directory under another parent is accepted as the same entry: ``is_same_entry``).

Each module's first lines are the includes its backend's ``DynamicModule`` always writes first
(``<Python.h>``, the backend's ``*_mod_helper.h``, for Theano and Aesara ``<iostream>``). gcc spends
most of a module's second parsing them (a 801-line Theano module: 0.96 s, 0.43 s with them
precompiled), so a test run precompiles exactly those lines once per leg, with the flags the backend
itself compiles with (read from its own ``Running cmd`` log line), into
``<tests' cache>/pch/<leg>/Python.h.gch`` and puts that folder first on the include path
(``gcc.cxxflags`` / ``gcc__cxxflags``). The machine code is the same (objdump of a module built both
ways: no difference); where gcc finds the precompiled header unusable (another flag, e.g. a module
built without -O3) it reads the folder's ``Python.h``, one ``#include_next <Python.h>``: the header
it would have read anyway.

The caches live in a folder of the tests' own that outlives a clone (``persistent_cache_home()``:
``scanprobe-tests/<backend>[/<worker>]`` and ``scanprobe-tests/pch/<leg>`` under ``$XDG_CACHE_HOME``,
default ``~/.cache``, or ``$SCANPROBE_TEST_CACHE``), never the user's ``~/.theano`` / ``~/.aesara``:
a clean clone's CI on a machine that ran the tests before starts warm (under the clone, the Theano
and Aesara legs were cold on every CI run). The precompiled header's folder is there too, not
under the clone: its ``-I`` path is part of every module's key (the backends key a module by its
compile options), so a path that changed with every clone would miss every module.

PyTensor's tests compile with numba at LLVM level 1 (``NUMBA_OPT=1``): a cold PyTensor leg spends
84% of its time in numba's JIT, and ``tests/test_checkpoint.py`` took 87 s cold at O1 against 208 s
at numba's default O3 (O0 is slower still: numba refuses to cache its code, docs/next.md). PyTensor's
numba cache (``<base_compiledir>/numba``) does not key by that level, so the tests' PyTensor cache
is a folder of their own, never the user's ``~/.pytensor``: ``scanprobe-tests/pytensor`` under
``$XDG_CACHE_HOME`` (default ``~/.cache``), or ``$SCANPROBE_TEST_CACHE``. It outlives the clone, so
a clean clone's CI on a machine that ran the tests before starts warm, as it did with
``~/.pytensor``. A ``base_compiledir`` in the user's own ``PYTENSOR_FLAGS`` wins, and then the level
is left as it was.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from pathlib import Path

#: backend -> the environment variable its flags are read from
FLAG_VARS = {"theano": "THEANO_FLAGS", "aesara": "AESARA_FLAGS", "pytensor": "PYTENSOR_FLAGS"}


#: backends whose test-run cache is one per worker, in the tests' own folder. Aesara: its cold leg
#: 327 s with one cache in ``~/.aesara``, 243 s so (per-worker caches shared by copying, and its
#: first includes, which hold ``<iostream>``, precompiled). PyTensor keeps one cache for both
#: workers (``configure_numba``): its cold 2.38 leg took 219 s with one, and a precompiled header
#: gains nothing (its fixed first includes are Python.h and its helper, no C++ header: one module
#: 0.54 s without, 0.61 s with)
PER_WORKER = {"theano", "aesara"}


def with_compiledir(flags: str, path: Path) -> str:
    """``flags`` with ``base_compiledir`` set to ``path`` (a user's own value is kept, with the
    worker's folder under it)."""
    m = re.search(r"base_compiledir=([^,]*)", flags)
    if m:
        return flags[: m.start(1)] + str(path) + flags[m.end(1):]
    return f"{flags},base_compiledir={path}" if flags else f"base_compiledir={path}"


def configure(backend: str, worker: str | None) -> Path | None:
    """Point the backend's compile cache at the tests' own (the worker's own under xdist); returns
    the folder, or None for a backend without one."""
    var = FLAG_VARS.get(backend)
    if var is None or backend not in PER_WORKER:
        return None
    flags = os.environ.get(var, "")
    m = re.search(r"base_compiledir=([^,]*)", flags)
    base = Path(m.group(1)) if m else persistent_cache_home() / backend
    if worker:
        base = base / worker
    os.environ[var] = with_compiledir(flags, base)
    return base


def persistent_cache_home() -> Path:
    """Where the tests keep the compile caches that outlive a clone."""
    own = os.environ.get("SCANPROBE_TEST_CACHE")
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "scanprobe-tests"


def configure_numba(backend: str) -> Path | None:
    """PyTensor: its compile cache in the tests' own folder and numba at level 1 (see the module's
    notes); returns the folder, or None where the user's own ``base_compiledir`` is kept."""
    if backend != "pytensor":
        return None
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    base = persistent_cache_home() / "pytensor"
    m = re.search(r"base_compiledir=([^,]*)", flags)
    if m and Path(m.group(1)) != base:  # the user's own (a worker inherits the run's: the same)
        return None
    os.environ["PYTENSOR_FLAGS"] = with_compiledir(flags, base)
    os.environ["NUMBA_OPT"] = "1"
    return base


class SiblingSync:
    """Copies finished modules from the other workers' caches into this worker's."""

    SETTLE_S = 1.0

    def __init__(self, own: Path):
        self.own = own
        self.parent = own.parent
        self.have: set[str] = set()      # m<hash>.so names this cache has
        self.looked: set[Path] = set()   # sibling module directories already handled

    def _module_name(self, d: Path) -> str | None:
        try:
            for f in os.listdir(d):
                if f.startswith("m") and f.endswith(".so"):
                    return f
        except OSError:
            return None
        return None

    def _scan_own(self) -> None:
        for comp in self.own.glob("compiledir_*"):
            for d in comp.glob("tmp*"):
                if d not in self.looked:
                    name = self._module_name(d)
                    if name and (d / "key.pkl").exists():
                        self.have.add(name)
                        self.looked.add(d)

    def __call__(self) -> int:
        """Copy what is new; returns how many modules were copied."""
        if not self.parent.is_dir():
            return 0
        self._scan_own()
        now = time.time()
        copied = 0
        for sib in self.parent.iterdir():
            if sib == self.own or not sib.is_dir():
                continue
            for comp in sib.glob("compiledir_*"):
                for d in comp.glob("tmp*"):
                    if d in self.looked:
                        continue
                    key = d / "key.pkl"
                    try:
                        if now - key.stat().st_mtime < self.SETTLE_S:
                            continue  # still being written: next time
                    except OSError:
                        continue  # no key yet: gcc still running
                    name = self._module_name(d)
                    if name is None:
                        continue
                    self.looked.add(d)
                    target = self.own / comp.name / d.name
                    if name in self.have or target.exists():
                        continue
                    staging = self.own / comp.name / f".copy-{d.name}"
                    try:
                        shutil.copytree(d, staging)
                        os.rename(staging, target)
                    except OSError:
                        shutil.rmtree(staging, ignore_errors=True)
                        continue
                    self.have.add(name)
                    copied += 1
        return copied


#: backend -> (its C module package, the flag that adds compiler options)
_C_MODULE = {
    "theano": ("theano.gof.cmodule", "gcc.cxxflags"),
    "aesara": ("aesara.link.c.cmodule", "gcc__cxxflags"),
    "pytensor": ("pytensor.link.c.cmodule", "gcc__cxxflags"),
}

# run in the leg's interpreter: the includes every module starts with, and the command the backend
# compiles a module with (an elementwise function in a throw-away cache)
_PROBE = r"""
import importlib, json, logging, sys
name, cmodule = sys.argv[1], sys.argv[2]
backend = importlib.import_module(name)
cm = importlib.import_module(cmodule)
cmds = []

class Grab(logging.Handler):
    def emit(self, record):
        msg = record.getMessage()
        if msg.startswith("Running cmd: ") and "mod.c" in msg and "lazylinker" not in msg and "cutils" not in msg:
            cmds.append(msg[len("Running cmd: "):])

log = logging.getLogger(cmodule)
log.addHandler(Grab())
log.setLevel(logging.DEBUG)
T = importlib.import_module(name + ".tensor")
x = T.dvector("x")
backend.function([x], T.exp(x) * 3 + 1)
print(json.dumps({"includes": list(cm.DynamicModule().includes), "cmd": cmds[-1] if cmds else None}))
"""


def _leg_key(backend: str) -> str:
    """Backend, numpy and Python versions of this interpreter's leg: a precompiled header is
    only valid for the headers it was made from."""
    import importlib.metadata as meta

    py = ".".join(map(str, sys.version_info[:3]))
    return f"{backend}-{meta.version(backend)}-numpy{meta.version('numpy')}-py{py}"


def precompiled_header(backend: str, build: bool) -> Path | None:
    """The folder holding this interpreter's leg's ``Python.h.gch`` (made when ``build`` and missing), or None
    where there is none (no C backend, no compiler, the probe failed: modules are then compiled
    as they always are)."""
    import json
    import shlex
    import subprocess
    import tempfile

    if backend not in _C_MODULE or shutil.which("g++") is None:
        return None
    try:
        folder = persistent_cache_home() / "pch" / _leg_key(backend)
    except ImportError:
        return None
    if (folder / "Python.h.gch").exists() or not build:
        return folder if (folder / "Python.h.gch").exists() else None
    cmodule = _C_MODULE[backend][0]
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        var = FLAG_VARS[backend]
        flags = "base_compiledir=" + str(Path(tmp) / "cache")
        if backend == "theano":
            flags += ",blas.ldflags="  # Theano on Python >= 3.11 imports only without numpy's BLAS probe
        env[var] = flags
        try:
            out = subprocess.run([sys.executable, "-c", _PROBE, backend, cmodule], capture_output=True, text=True,
                                 env=env, cwd=tmp, timeout=300)
            probe = json.loads(out.stdout.strip().splitlines()[-1])
        except (subprocess.SubprocessError, OSError, ValueError, IndexError):
            return None
        if not probe.get("cmd") or probe["includes"][:1] != ["<Python.h>"]:
            return None
        words = shlex.split(probe["cmd"])
        keep, skip = [], False
        for w in words[1:]:
            if skip:
                skip = False
            elif w == "-o":
                skip = True
            elif w == "-shared" or w.startswith(("-L", "-l")) or w.endswith(("mod.cpp", "mod.c")):
                continue
            else:
                keep.append(w)
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=folder.parent))
        preamble = staging / "preamble.h"
        preamble.write_text("".join(f"#include {h}\n" for h in probe["includes"]))
        built = subprocess.run([words[0], *keep, "-x", "c++-header", str(preamble), "-o",
                                str(staging / "Python.h.gch")], capture_output=True, text=True)
        if built.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            return None
        (staging / "Python.h").write_text("#include_next <Python.h>\n")
        (staging / "command.txt").write_text(shlex.join([words[0], *keep]) + "\n")
        try:
            os.rename(staging, folder)
        except OSError:  # made by another process meanwhile
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def use_precompiled_header(backend: str, folder: Path) -> None:
    """Put ``folder`` first on the backend's include path for this process and its children."""
    var = FLAG_VARS[backend]
    flag = _C_MODULE[backend][1]
    flags = os.environ.get(var, "")
    if f"{flag}=" in flags:
        return  # the user's own compiler options win
    os.environ[var] = f"{flags},{flag}=-I{folder}" if flags else f"{flag}=-I{folder}"
