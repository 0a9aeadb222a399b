"""Benchmark: `scanprobe inspect` on a public model beside the user's own script that compiles
the same functions, CPU time of whole processes (children included), interleaved pairs, warm
caches (issue 25, item 7: inspect should take no more than 1.2x the user's own import).

The model is the Theano tutorial LSTM (github:lisa-lab/DeepLearningTutorials, code/lstm.py, not
copied here): fetch that repository, then

    THEANO_FLAGS=blas.ldflags= .venv-theano/bin/python bench/bench_real_model.py /path/to/DeepLearningTutorials/code

The driver written below builds its six functions as `train_lstm` does (dim_proj 64, 1000
words, x and mask of 100 x 16, adadelta, FAST_RUN), with a stub for `imdb` (no data is read).
Writes bench/results/realmodel_theano.json.
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_public_truth import MODELS, STUBS

ROOT = Path(__file__).resolve().parent.parent

#: the tutorial LSTM's six functions, built as train_lstm does (the driver of bench_public_truth.py)
DRIVER = MODELS["lstm.py"]
#: what a user on Python >= 3.11 runs: Theano's C scan does not build there, its Python loop does
USER = '''import runpy, sys
sys.modules["theano.scan_module.scan_perform_ext"] = None
runpy.run_path("driver.py", run_name="driver")
'''


def cpu(cmd, cwd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("code", help="DeepLearningTutorials/code (holds lstm.py)")
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="scanprobe-realmodel-"))
    shutil.copy(Path(args.code) / "lstm.py", work / "lstm.py")
    (work / "imdb.py").write_text(STUBS["imdb.py"])
    (work / "driver.py").write_text(DRIVER)
    (work / "run_user.py").write_text(USER)
    env = dict(os.environ)
    flags = env.get("THEANO_FLAGS", "blas.ldflags=")
    env["THEANO_FLAGS"] = f"{flags},base_compiledir={work / 'cache'}"
    user = [sys.executable, "run_user.py"]
    inspect = [sys.executable, "-m", "scanprobe", "inspect", "driver.py", "--format", "json"]
    cpu(user, work, env)  # warm both caches: C modules compiled once
    _, _, out = cpu(inspect, work, env)
    report = json.loads(out)
    pairs = []
    for _ in range(args.pairs):
        u = cpu(user, work, env)
        i = cpu(inspect, work, env)
        pairs.append({"user_wall_s": u[0], "user_cpu_s": u[1], "inspect_wall_s": i[0], "inspect_cpu_s": i[1]})
    ratios = sorted(p["inspect_cpu_s"] / p["user_cpu_s"] for p in pairs)
    import theano

    data = {
        "command": "THEANO_FLAGS=blas.ldflags= .venv-theano/bin/python bench/bench_real_model.py DeepLearningTutorials/code",
        "model": "lisa-lab/DeepLearningTutorials code/lstm.py (six functions of train_lstm, FAST_RUN)",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version(),
        "backend": "theano", "backend_version": theano.__version__, "date": time.strftime("%Y-%m-%d"),
        "targets": len(report["targets"]), "pairs": pairs, "median_cpu_ratio": ratios[len(ratios) // 2],
    }
    out_path = ROOT / "bench" / "results" / "realmodel_theano.json"
    out_path.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
