"""Benchmark: time to answer "how much memory will seed 000 take?", scanprobe versus the backend's
own memory profiler, side by side at growing batch sizes; scanprobe alone at the real size.

- scanprobe: `scanprobe inspect sample_graphs/seed000_pixel_loop.py --format json` (a fresh
  process: Python start, backend import, the user's module, the compile without linking, the
  analysis). Its split comes from the report: compile (optimize) and analysis seconds per target;
  loading is the rest of the wall time.
- profile_memory: what a user does without scanprobe: the backend's flags `profile=True,
  profile_memory=True`, run the module, call the function once; the summary printed at exit holds
  the peak. It has to run the function: at the real size (50 GB) it cannot, so it is never started.

Sizes: SEED000_SIZE=medium (16x16 images, 256 steps) with SEED000_BATCH 8..128, FAST_COMPILE.
Usage (inside one backend's environment): python bench/bench_answer.py [--batches 8,16,...]
Writes bench/results/answer_<backend>.json.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_graphs" / "seed000_pixel_loop.py"

PROFILE_SCRIPT = r"""
import sys
sys.path.insert(0, {samples!r})
import seed000_pixel_loop as m
m.cost_and_grads()
"""



def env_for(backend, batch, size, flags=""):
    env = dict(os.environ)
    env.update(SAMPLE_BACKEND=backend, SEED000_SIZE=size, SEED000_BATCH=str(batch))
    key = "THEANO_FLAGS" if backend == "theano" else "PYTENSOR_FLAGS"
    base = env.get(key, "")
    if backend == "theano" and "base_compiledir" not in base:
        base = ",".join(x for x in (base, f"base_compiledir={ROOT / '.cache' / 'theano'}") if x)
    env[key] = ",".join(x for x in (base, flags) if x)
    return env


def scanprobe_run(backend, batch, size):
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "scanprobe", "inspect", str(SAMPLE), "--format", "json"],
                          capture_output=True, text=True, env=env_for(backend, batch, size), cwd=ROOT)
    wall = time.perf_counter() - t0
    rep = json.loads(proc.stdout)
    (t,) = rep["targets"]
    predicted = sum(b["bytes"] or 0 for s in t["scans"] for b in s["buffers"])
    history = rep["summary"]["removable_bytes"]
    return {
        "wall_s": wall,
        "compile_s": t["compile_seconds"],
        "analysis_s": t["analysis_seconds"],
        "loading_s": wall - t["compile_seconds"] - t["analysis_seconds"],
        "predicted_scan_buffers_bytes": predicted,
        "removable_bytes": history,
    }


_PEAK = re.compile(r"Max peak memory with current setting.*?CPU:\s*([0-9.]+)\s*([KMG]?B)", re.S)


def profiler_run(backend, batch, size):
    script = PROFILE_SCRIPT.format(samples=str(ROOT / "sample_graphs"))
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env_for(backend, batch, size, "profile=True,profile_memory=True"), cwd=ROOT)
    wall = time.perf_counter() - t0
    text = proc.stdout + proc.stderr
    match = _PEAK.search(text)
    peak = None
    if match:
        peak = float(match.group(1)) * {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}[match.group(2)]
    return {"wall_s": wall, "reported_peak_bytes": peak, "rc": proc.returncode}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="8,16,32,64,128")
    ap.add_argument("--size", default="medium")
    opts = ap.parse_args()
    backend = backend_name()
    rows = []
    for batch in [int(b) for b in opts.batches.split(",")]:
        sp = scanprobe_run(backend, batch, opts.size)  # interleaved: same machine load for both
        pr = profiler_run(backend, batch, opts.size)
        row = {"batch": batch, "scanprobe": sp, "profile_memory": pr, "ratio_profiler_to_scanprobe": pr["wall_s"] / sp["wall_s"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    real = scanprobe_run(backend, 2000, "real")
    bs = [r["batch"] for r in rows]

    def slope(key):
        ys = [r[key]["wall_s"] for r in rows]
        return float(np.polyfit(np.log(bs), np.log(ys), 1)[0])

    result = {
        **provenance(backend, f"python bench/bench_answer.py --batches {opts.batches} --size {opts.size}"),
        "rows": rows,
        "real": real,
        "slopes": {"scanprobe": slope("scanprobe"), "profile_memory": slope("profile_memory")},
    }
    out = ROOT / "bench" / "results" / f"answer_{backend}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
