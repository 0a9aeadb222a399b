"""The test run's compile caches (tests/compile_cache.py): finished modules are shared between
workers, unfinished or already present ones are not; the precompiled header falls back to the
real header."""

import os
import time

from compile_cache import PER_WORKER, SiblingSync, persistent_cache_home, with_compiledir

from conftest import BACKEND, COMPILE_CACHE, USER_FLAGS


def _module(parent, name, so, age_s=10.0, key=True):
    d = parent / "compiledir_X" / name
    d.mkdir(parents=True)
    (d / "mod.cpp").write_text("// code\n")
    (d / f"m{so}.so").write_bytes(b"\x7fELF")
    if key:
        (d / "key.pkl").write_bytes(b"k")
        old = time.time() - age_s
        os.utime(d / "key.pkl", (old, old))
    return d


def test_finished_modules_are_copied_once_and_others_left(tmp_path):
    own, other = tmp_path / "gw0", tmp_path / "gw1"
    _module(own, "tmpmine", "aaa")
    _module(other, "tmpdone", "bbb")
    _module(other, "tmpsame", "aaa")                # a module this worker has: not copied
    _module(other, "tmpfresh", "ccc", age_s=0.0)    # key.pkl still being written
    _module(other, "tmpgcc", "ddd", key=False)       # gcc still running
    sync = SiblingSync(own)
    assert sync() == 1
    names = sorted(p.name for p in (own / "compiledir_X").iterdir())
    assert names == ["tmpdone", "tmpmine"]
    assert (own / "compiledir_X" / "tmpdone" / "mbbb.so").read_bytes() == b"\x7fELF"
    assert sync() == 0  # nothing new
    old = time.time() - 10
    os.utime(other / "compiledir_X" / "tmpfresh" / "key.pkl", (old, old))
    assert sync() == 1 and (own / "compiledir_X" / "tmpfresh").is_dir()


def test_compiledir_flag_is_set_or_replaced():
    assert with_compiledir("", "/c") == "base_compiledir=/c"
    assert with_compiledir("floatX=float32", "/c") == "floatX=float32,base_compiledir=/c"
    assert with_compiledir("base_compiledir=/a,floatX=float32", "/c") == "base_compiledir=/c,floatX=float32"


def test_pytensor_tests_compile_numba_at_level_1_in_a_cache_of_their_own():
    """PyTensor's numba cache does not key by LLVM level: the tests' level-1 code must never land
    in the user's ~/.pytensor, and the level must reach numba in this process and in the
    commands' children (tests/compile_cache.py)."""
    import pytest

    from conftest import NUMBA_TEST_CACHE

    if BACKEND != "pytensor":
        pytest.skip("PyTensor's numba cache")
    if NUMBA_TEST_CACHE is None:
        pytest.skip("the user's own base_compiledir is kept")
    import subprocess
    import sys

    from compile_cache import persistent_cache_home
    from conftest import child_env

    assert NUMBA_TEST_CACHE == persistent_cache_home() / "pytensor"
    assert os.path.expanduser("~/.pytensor") != str(NUMBA_TEST_CACHE)
    code = "import numba, pytensor; print(numba.config.OPT, pytensor.config.base_compiledir)"
    out = subprocess.run([sys.executable, "-c", code], env=child_env(), capture_output=True, text=True, check=True)
    level, folder = out.stdout.split()
    assert level in ("1", "_OptLevel(1)") and folder == str(NUMBA_TEST_CACHE)
    import numba

    assert int(numba.config.OPT) == 1


def test_the_precompiled_header_falls_back_to_the_real_one():
    """On a leg whose cache the run keeps one per worker (in the tests' own folder, outside the
    clone, as the precompiled header), the folder's Python.h is only the real header and the
    backend's flags put the folder on the include path of this run's compiles; on the others, the
    backend's own cache and compiler options are left as they were."""
    var = {"theano": "THEANO_FLAGS", "aesara": "AESARA_FLAGS", "pytensor": "PYTENSOR_FLAGS"}[BACKEND]
    flags = os.environ.get(var, "")
    if BACKEND not in PER_WORKER:
        assert COMPILE_CACHE is None and "cxxflags=-I" not in flags and ".cache/" + BACKEND not in flags
        return
    assert f"base_compiledir={COMPILE_CACHE}" in flags
    from conftest import ROOT

    home = persistent_cache_home()
    if "base_compiledir=" not in USER_FLAGS[var]:  # not the user's own folder: the tests' own
        assert COMPILE_CACHE.parent in (home / BACKEND, home) and ROOT not in COMPILE_CACHE.parents
    if "cxxflags=-I" in flags:
        folder = flags.split("cxxflags=-I", 1)[1].split(",")[0]
        assert open(os.path.join(folder, "Python.h")).read() == "#include_next <Python.h>\n"
        assert os.path.getsize(os.path.join(folder, "Python.h.gch")) > 0
        # outside the clone: the -I path is part of every module's key, the same in every clone
        assert os.path.dirname(folder) == str(home / "pch") or "cxxflags=-I" in USER_FLAGS[var]


def test_a_second_run_compiles_no_module_again(tmp_path):
    """Theano 1.0.5 keys DimShuffle's C module (an op with params) by Python's string hash, which
    differs in every process unless PYTHONHASHSEED is fixed: every `scanprobe` run compiled it
    again and left one more directory in the cache for every later start to read. The command's
    child gets a fixed seed, so a second run of the same module compiles nothing."""
    import pytest

    if BACKEND != "theano":
        pytest.skip("Theano's compile cache")
    import subprocess
    import sys

    from conftest import ROOT, SAMPLES, child_env

    env = child_env(THEANO_FLAGS=f"base_compiledir={tmp_path / 'cache'},blas.ldflags=")
    env.pop("PYTHONHASHSEED", None)  # as a shell without the variable

    def run():
        return subprocess.run([sys.executable, "-m", "scanprobe", "inspect", str(SAMPLES / "seed002_clean.py")],
                              capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)

    def modules():
        return sorted(p.parent.name for p in (tmp_path / "cache").glob("*/*/key.pkl"))

    first = run()
    assert first.returncode == 0, first.stderr
    after_first = modules()
    assert after_first
    second = run()
    assert second.returncode == 0 and second.stdout == first.stdout, second.stderr
    assert modules() == after_first
