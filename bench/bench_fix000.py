"""Benchmark: effect of the fix on seed 000 (memory), beside the hand-written reference.

`scanprobe fix sample_graphs/seed000_pixel_loop.py` at SEED000_SIZE=scaled (32 images of 3x32x32,
1024 steps, FAST_COMPILE): the original and the fixed function run in the same child, from the
same state; RSS above the pre-call level, tracemalloc peak and time of one call, before and after.
The reference a user would write by hand, `seed000_pixel_loop_clean.py` (no scan), is measured by
`scanprobe profile` at the same size.

Usage (inside one backend's environment): python bench/bench_fix000.py
Writes bench/results/fix000_<backend>.json.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run(*args):
    env = dict(os.environ, SEED000_SIZE="scaled")
    proc = subprocess.run([sys.executable, "-m", "scanprobe", *args, "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
    return json.loads(proc.stdout)


def main():
    backend = backend_name()
    fix = run("fix", "sample_graphs/seed000_pixel_loop.py", "--runs", "3")
    (f,) = fix["fixes"]
    clean = run("profile", "sample_graphs/seed000_pixel_loop_clean.py", "--runs", "3")
    (c,) = clean["targets"]
    b, a = f["before"]["measured"], f["after"]["measured"]
    result = {
        **provenance(backend, "SEED000_SIZE=scaled python bench/bench_fix000.py"),
        "outputs_equal": f["outputs_equal"], "max_abs_diff": f["max_abs_diff"],
        "before": {k: b[k] for k in ("rss_peak_above_precall", "tracemalloc_peak", "wall_median_s")},
        "after": {k: a[k] for k in ("rss_peak_above_precall", "tracemalloc_peak", "wall_median_s")},
        "predicted": {"before": f["before"]["predicted_peak"], "after": f["after"]["predicted_peak"]},
        "clean": {k: c["measured"][k] for k in ("rss_peak_above_precall", "tracemalloc_peak", "wall_median_s")},
    }
    result["memory_ratio"] = b["rss_peak_above_precall"] / max(1, a["rss_peak_above_precall"])
    out = ROOT / "bench" / "results" / f"fix000_{backend}.json"
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
