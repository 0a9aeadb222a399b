"""Benchmark: seed 002 (mean of squared per-example gradients), naive scan versus scanprobe's fix.

Side by side in one process, for each batch size: the sample's naive scan (`grad(cost[i], p) ** 2`
in a scan over the batch), the function `scanprobe.fix` returns for it (the sum-of-squares form:
one backward pass), the per-example graph (the clone-with-slice answer, scanprobe's fallback form),
and the floor: one ordinary gradient of the batch's mean cost. Times are medians of interleaved
calls; every fixed result is compared with the naive one (float64).

Usage (inside one backend's environment): python bench/bench_seed002.py [--batches 64,128,...]
Writes bench/results/seed002_<backend>.json.
"""

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "sample_graphs"))
sys.path.insert(0, str(ROOT))


def timed(fn, args, budget_s, min_runs=3, max_runs=50):
    fn(*args)  # warm-up
    times = []
    t_start = time.perf_counter()
    while len(times) < max_runs and (len(times) < min_runs or time.perf_counter() - t_start < budget_s):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), len(times)


def slope(xs, ys):
    lx, ly = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    return float(np.polyfit(lx, ly, 1)[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", default="64,128,256,512,1024")
    ap.add_argument("--size", default="medium")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of repeated calls per form and batch")
    opts = ap.parse_args()
    os.environ["SEED002_SIZE"] = opts.size
    import scanprobe
    import seed002_per_example_grads as m
    from scanprobe.backends import rewrites

    th, T = m.th, m.T
    naive = m.mean_sq_grads
    fixed = scanprobe.fix([m.x, m.y], m.g_square, verify=False)
    assert any(r["form"] == "sum-of-squares" for r in fixed.rewrites), fixed.rewrites
    # the per-example graph (the clone-with-slice answer): scanprobe's fallback form, forced by
    # asking for the per-example squares themselves and summing them afterwards
    per_example_outs = [s.sum(axis=0) / m.x.shape[0] for s in m.sq]
    be = scanprobe.api._backend_for(m.x)
    rw = rewrites.per_example(be, list(m.sq))
    assert rw[0].form == "per-example", rw[0].plain()
    new_sq = rewrites.apply(be.api, list(m.sq), rw)
    per_example = th.function([m.x, m.y], [s.sum(axis=0) / m.x.shape[0] for s in new_sq])
    floor = th.function([m.x, m.y], T.grad(T.mean(m.cost), m.params))
    del per_example_outs
    rng = np.random.default_rng(0)
    rows = []
    for B in [int(b) for b in opts.batches.split(",")]:
        X, Y = rng.normal(size=(B, m.D)), rng.normal(size=(B, m.K))
        ref = naive(X, Y)
        diffs = {}
        for label, fn in (("fixed", fixed), ("per_example", per_example)):
            out = fn(X, Y)
            diffs[label] = max(float(np.max(np.abs(a - b) / np.maximum(1e-300, np.abs(a)).max())) for a, b in zip(ref, out))
        row = {"batch": B, "max_rel_diff": diffs}
        for label, fn in (("naive", naive), ("fixed", fixed), ("per_example", per_example), ("floor", floor)):
            row[f"{label}_s"], row[f"{label}_runs"] = timed(fn, (X, Y), opts.budget)
        row["speedup_fixed_vs_naive"] = row["naive_s"] / row["fixed_s"]
        row["fixed_over_floor"] = row["fixed_s"] / row["floor_s"]
        rows.append(row)
        print(json.dumps(row), flush=True)
    bs = [r["batch"] for r in rows]
    result = {
        "backend": m.BACKEND,
        "backend_version": th.__version__,
        "numpy": np.__version__,
        "size": {"inputs": m.D, "hidden": m.H, "outputs": m.K, "dtype": "float64"},
        "command": f"python bench/bench_seed002.py --batches {opts.batches} --size {opts.size} --budget {opts.budget}",
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "rows": rows,
        "slopes": {k: slope(bs, [r[f"{k}_s"] for r in rows]) for k in ("naive", "fixed", "per_example", "floor")},
    }
    out = ROOT / "bench" / "results" / f"seed002_{m.BACKEND}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
