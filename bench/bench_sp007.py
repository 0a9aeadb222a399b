"""Benchmark: SP007's fix (the gradient scan's zero-fed tapes as running states) on an LSTM
training step, at 100, 1,000 and 10,000 steps.

`scanprobe fix sample_graphs/lstm_classifier.py` (batch 16, 32 units, float64, loss on h[-1]):
the original and the fixed training step run in the same child from the same state (predicted
scan buffers, RSS above the pre-call level, tracemalloc peak, median time of 3 calls). The same
again with the backend's `more_mem` rewrites excluded from the mode (`optimizer_excluding=more_mem`
in the backend's flags): those rewrites push the weight gradient's dot out of the backward scan
and leave the per-step terms as n_steps-row outputs; this is the hand-set anchor for part 2 of
issue 26 (per-step gradient terms), measured side by side with part 1.

Usage (inside one backend's environment): python bench/bench_sp007.py
Writes bench/results/sp007_<backend>.json.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("rss_peak_above_precall", "tracemalloc_peak", "wall_median_s")
STEPS = (100, 1000, 10000)


def fix(steps, flags=""):
    env = dict(os.environ, LSTM_STEPS=str(steps))
    var = "THEANO_FLAGS" if backend_name() == "theano" else "PYTENSOR_FLAGS"
    if flags:
        env[var] = ",".join(f for f in (env.get(var, ""), flags) if f)
    proc = subprocess.run([sys.executable, "-m", "scanprobe", "fix", "sample_graphs/lstm_classifier.py", "--runs", "3",
                           "--format", "json"], capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    (f,) = json.loads(proc.stdout)["fixes"]
    b, a = f["before"]["measured"], f["after"]["measured"]
    return {"predicted": {"before": f["before"]["predicted_peak"], "after": f["after"]["predicted_peak"]},
            "before": {k: b[k] for k in KEYS}, "after": {k: a[k] for k in KEYS},
            "outputs_equal": f["outputs_equal"], "max_abs_diff": f["max_abs_diff"], "rules": f["rules"]}


def main():
    backend = backend_name()
    rows = []
    for steps in STEPS:
        rows.append({"steps": steps, "default": fix(steps), "no_more_mem": fix(steps, "optimizer_excluding=more_mem")})
        print(json.dumps(rows[-1]), flush=True)
    result = {**provenance(backend, "python bench/bench_sp007.py"), "rows": rows}
    out = ROOT / "bench" / "results" / f"sp007_{backend}.json"
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
