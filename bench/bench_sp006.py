"""Benchmark: effect of SP006's fix (a reduction over a scan's history carried in the step).

`scanprobe fix sample_graphs/rnn_mean_pool.py`: a sentence encoder that mean-pools 2000 RNN
states of 64 x 256 float32 (131.1 MB kept to be averaged). The original and the fixed function
run in the same child, from the same state: RSS above the pre-call level, tracemalloc peak and
time of one call, before and after; the predicted scan buffers of both graphs. The hand-written
form, `rnn_mean_pool_clean.py`, is measured by `scanprobe profile` beside it.

Usage (inside one backend's environment): python bench/bench_sp006.py
Writes bench/results/sp006_<backend>.json.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
KEYS = ("rss_peak_above_precall", "tracemalloc_peak", "wall_median_s")


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "scanprobe", *args, "--format", "json"],
                          capture_output=True, text=True, env=dict(os.environ), cwd=ROOT, timeout=1800)
    return json.loads(proc.stdout)


def main():
    backend = backend_name()
    fix = run("fix", "sample_graphs/rnn_mean_pool.py", "--runs", "3")
    (f,) = fix["fixes"]
    clean = run("profile", "sample_graphs/rnn_mean_pool_clean.py", "--runs", "3")
    (c,) = clean["targets"]
    b, a = f["before"]["measured"], f["after"]["measured"]
    result = {
        **provenance(backend, "python bench/bench_sp006.py"),
        "rules": f["rules"], "forms": [r["form"] for r in f["rewrites"] if r["form"]],
        "outputs_equal": f["outputs_equal"], "max_abs_diff": f["max_abs_diff"],
        "before": {k: b[k] for k in KEYS}, "after": {k: a[k] for k in KEYS},
        "predicted": {"before": f["before"]["predicted_peak"], "after": f["after"]["predicted_peak"]},
        "clean": {k: c["measured"][k] for k in KEYS},
    }
    result["tracemalloc_ratio"] = b["tracemalloc_peak"] / max(1, a["tracemalloc_peak"])
    out = ROOT / "bench" / "results" / f"sp006_{backend}.json"
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
