"""Benchmark: `scanprobe fix --max-buffer` on LSTM and GRU training steps (loss on the last state)
at 100, 1,000 and 10,000 steps, beside the backend's own `scan_checkpoints` written by hand.

Model: bench/models/train_step.py (batch 16, float64; LSTM 32 units, GRU 64). Per cell and steps:

- `fix --max-buffer FREE`: FREE is the forward history's size, so only the free fixes apply
  (the tape, SP007, and the per-step gradient terms, SP008);
- `fix --max-buffer TIGHT`: TIGHT is twice the least one level of checkpoints can meet, plus two
  copies of the largest weight (its gradient accumulator): the history is checkpointed (SP010);
- `profile` of the hand-written `scan_checkpoints` form (save_every_N: the divisor of the steps
  nearest sqrt(steps), so that no padding is needed).

`fix` runs the original and the fixed step in one child from the same state (predicted scan
buffers, tracemalloc peak, RSS above the pre-call level, median of 3 calls), so each ratio is
measured side by side; the anchor runs in its own child the same way.

Usage (inside one backend's environment): python bench/bench_checkpoint.py [steps...]
Writes bench/results/checkpoint_<backend>.json.
"""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODEL = "bench/models/train_step.py"
KEYS = ("rss_peak_above_precall", "tracemalloc_peak", "wall_median_s")
CELLS = {"lstm": (32, 4, 2), "gru": (64, 3, 1)}  # units, gates, states


def _run(args, env):
    proc = subprocess.run([sys.executable, "-m", "scanprobe", *args, "--format", "json"], capture_output=True,
                          text=True, env=dict(os.environ, **env), cwd=ROOT, timeout=3000)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{args}: exit {proc.returncode}\n{proc.stderr[-3000:]}") from None


def budgets(cell, steps):
    from scanprobe.fixes.checkpoint import rows_kept, segment_length

    units, gates, _ = CELLS[cell]
    row = 16 * units * 8
    weight = units * gates * units * 8
    return {"free": (steps + 1) * row, "tight": 2 * rows_kept(steps, segment_length(steps)) * row + 2 * weight}


def fix(cell, steps, budget):
    d = _run(["fix", MODEL, "--max-buffer", str(budget), "--runs", "3"], {"BENCH_STEPS": str(steps), "BENCH_CELL": cell})
    (f,) = d["fixes"]
    b, a = f["before"]["measured"], f["after"]["measured"]
    return {"budget": budget, "rules": f["rules"], "status": d["summary"],
            "predicted": {"before": f["before"]["predicted_peak"], "after": f["after"]["predicted_peak"]},
            "before": {k: b[k] for k in KEYS}, "after": {k: a[k] for k in KEYS},
            "outputs_equal": f["outputs_equal"], "max_abs_diff": f["max_abs_diff"],
            "remaining": f["after"].get("remaining", {}),
            "forms": [r["form"] for r in f["rewrites"]]}


def anchor(cell, steps):
    d = _run(["profile", MODEL, "--runs", "3", "--no-node-profile"],
             {"BENCH_STEPS": str(steps), "BENCH_CELL": cell, "BENCH_FORM": "checkpoints"})
    if not d["targets"]:  # Theano 1.0.5's scan_checkpoints fails on Python 3 (a float shape): said, not hidden
        return {"error": (d.get("error") or {}).get("message", "no target")}
    (t,) = d["targets"]
    every = min((d for d in range(1, steps + 1) if steps % d == 0), key=lambda d: abs(d - math.sqrt(steps)))
    return {"save_every_N": every, "predicted": t["predicted_peak"],
            "measured": {k: t["measured"][k] for k in KEYS}}


def main():
    backend = backend_name()
    steps_list = [int(s) for s in sys.argv[1:]] or [100, 1000, 10000]
    rows = []
    for cell in CELLS:
        for steps in steps_list:
            b = budgets(cell, steps)
            row = {"cell": cell, "steps": steps, "free": fix(cell, steps, b["free"]),
                   "tight": fix(cell, steps, b["tight"]), "anchor": anchor(cell, steps)}
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {**provenance(backend, "python bench/bench_checkpoint.py " + " ".join(sys.argv[1:])), "rows": rows}
    out = ROOT / "bench" / "results" / f"checkpoint_{backend}.json"
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
