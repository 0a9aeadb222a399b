"""Benchmark: `scanprobe inspect` on real models beside the user's own script that compiles the
same functions, CPU time of whole processes (children included), interleaved pairs, warm caches
(issue 25, item 7: inspect should take no more than 1.2x the user's own import).

Three model shapes:

- ``lstm``: the Theano tutorial LSTM (github:lisa-lab/DeepLearningTutorials, code/lstm.py, not
  copied here): the six functions `train_lstm` compiles (dim_proj 64, 1000 words, x and mask of
  100 x 16, adadelta), with a stub for `imdb` (no data is read). Theano.
- ``rnnrbm``: the tutorial RNN-RBM (code/rnnrbm.py: nested scans, a Gibbs chain inside the
  generation's recurrence), training and generation functions, a stub for `midi.utils`. Theano.
- ``statespace``: a structural time-series model of pymc-extras (bench/models/statespace_model.py:
  local linear trend, 12-period seasonality, measurement error, 120 observations; its Kalman
  filter is a scan). *User* imports it and compiles what `pm.sample` and
  `pm.sample_posterior_predictive` compile (the initial point, the log-density and its gradient,
  the log-density, the forward draws); PyMC 5 and 6 (needs `pip install pymc-extras`).

    THEANO_FLAGS=blas.ldflags= .venv-theano/bin/python bench/bench_real_model.py lstm DeepLearningTutorials/code
    THEANO_FLAGS=blas.ldflags= .venv-theano/bin/python bench/bench_real_model.py rnnrbm DeepLearningTutorials/code
    PYTHON_WITH_PYMC_EXTRAS bench/bench_real_model.py statespace [--mode FAST_COMPILE]

Writes bench/results/realmodel_<model>_<backend version>[_<mode>].json.
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

#: what a user on Python >= 3.11 runs: Theano's C scan does not build there, its Python loop does
THEANO_USER = '''import runpy, sys
sys.modules["theano.scan_module.scan_perform_ext"] = None
runpy.run_path("driver.py", run_name="driver")
'''
#: what PyMC's samplers compile for the model the module binds (pm.sample with NUTS, then
#: pm.sample_posterior_predictive): the user's own import of the model, then those compiles
PYMC_USER = '''import runpy
import pymc as pm
from pymc.sampling.forward import compile_forward_sampling_function

model = runpy.run_path("driver.py", run_name="driver")["model"]
point = model.initial_point()
model.compile_fn(list(model.unobserved_value_vars), inputs=model.value_vars, on_unused_input="ignore")(point)
model.logp_dlogp_function(ravel_inputs=True, initial_point=point)
model.compile_logp()(point)
compile_forward_sampling_function(outputs=model.observed_RVs, vars_in_trace=model.free_RVs, basic_rvs=model.basic_RVs)
'''
SHAPES = {
    "lstm": ("lisa-lab/DeepLearningTutorials code/lstm.py (six functions of train_lstm)", "theano"),
    "rnnrbm": ("lisa-lab/DeepLearningTutorials code/rnnrbm.py (training and generation, nested scans)", "theano"),
    "statespace": ("pymc-extras structural time series (trend + seasonality + error, 120 steps)", "pytensor"),
}


def cpu(cmd, cwd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def prepare(model, code, work, env, mode):
    """Write the model's files into ``work``; returns the environment of both processes."""
    if model == "statespace":
        shutil.copy(ROOT / "bench" / "models" / "statespace_model.py", work / "driver.py")
        (work / "run_user.py").write_text(PYMC_USER)
        env["PYTENSOR_FLAGS"] = f"compiledir={work / 'cache'}" + (f",mode={mode}" if mode else "")
        return env
    if code is None:
        raise SystemExit(f"{model}: give the DeepLearningTutorials/code folder")
    source = f"{model}.py"
    shutil.copy(Path(code) / source, work / source)
    for rel, text in STUBS.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    (work / "driver.py").write_text(MODELS[source])
    (work / "run_user.py").write_text(THEANO_USER)
    flags = env.get("THEANO_FLAGS", "blas.ldflags=")
    env["THEANO_FLAGS"] = f"{flags},base_compiledir={work / 'cache'}" + (f",mode={mode}" if mode else "")
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(SHAPES))
    ap.add_argument("code", nargs="?", help="DeepLearningTutorials/code (lstm, rnnrbm)")
    ap.add_argument("--mode", default=None, help="the backend's mode for both (default: its default)")
    ap.add_argument("--pairs", type=int, default=3)
    args = ap.parse_args()
    what, backend = SHAPES[args.model]
    work = Path(tempfile.mkdtemp(prefix="scanprobe-realmodel-"))
    env = prepare(args.model, args.code, work, dict(os.environ), args.mode)
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
    lib = __import__(backend)
    extra = {}
    if backend == "pytensor":
        from importlib.metadata import version

        extra = {"pymc": version("pymc"), "pymc_extras": version("pymc-extras")}
    code_arg = " DeepLearningTutorials/code" if args.code else ""
    mode_arg = f" --mode {args.mode}" if args.mode else ""
    data = {
        "command": f"{Path(sys.executable).parent.parent.name}/bin/python bench/bench_real_model.py "
                   f"{args.model}{code_arg}{mode_arg}",
        "model": what, "shape": args.model, "mode": args.mode or "default",
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "python": platform.python_version(),
        "backend": backend, "backend_version": lib.__version__, **extra, "date": time.strftime("%Y-%m-%d"),
        "targets": len(report["targets"]), "pairs": pairs, "median_cpu_ratio": ratios[len(ratios) // 2],
    }
    name = f"realmodel_{args.model}_{lib.__version__}" + (f"_{args.mode.lower()}" if args.mode else "")
    out_path = ROOT / "bench" / "results" / f"{name}.json"
    out_path.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(data, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
