"""Benchmark: does `scanprobe fix` give the same verdict on a busy machine? (issue 29, item 16)

A fix whose rule moves time (SP002's vectorized map, SP003's per-example form) is verified by
comparing the fixed call's fastest run with the original's. With `--runs 1` that is one run of a
sub-millisecond call: on a machine with more runnable processes than cores, one run in a few dozen
waits for a core and measures tens of milliseconds of wall time. This runs the fix of both fixtures
N times beside `--busy` CPU-bound processes (bench/busy.py) and records, per run, both sides' wall
and CPU time, scanprobe's verdict (slower on the clock and in CPU time) and the verdict the wall-time rule
(1.25x + 10 ms on the fastest run's wall time, before ea7eafd) would have given.

Usage (inside one backend's environment, from the repository root):
    SAMPLE_BACKEND=theano python bench/fix_verdict_load.py --busy 14 --repeat 24
Writes bench/results/fixverdict_<backend>.json.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402
from busy import busy_loops  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CASES = [("map_scan", []), ("per_example_kept", ["--input", "x=6x5:float32"])]


def wall_rule(before: dict, after: dict) -> str:
    """The verdict on time before ea7eafd: the fastest run's wall time, 1.25x + 10 ms."""
    return "failed" if after["wall_min_s"] > 1.25 * before["wall_min_s"] + 0.010 else "verified"


def one(name: str, extra: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests" / "fixtures"))
    proc = subprocess.run([sys.executable, "-m", "scanprobe", "fix", str(ROOT / "tests" / "fixtures" / f"{name}.py"),
                           *extra, "--runs", "1", "--format", "json"], capture_output=True, text=True, env=env, cwd=ROOT)
    (fix,) = json.loads(proc.stdout)["fixes"]
    b, a = fix["before"]["measured"], fix["after"]["measured"]
    return {"case": name, "exit": proc.returncode, "status": fix["status"], "why_failed": fix["why_failed"],
            "wall_rule": wall_rule(b, a), **{f"{side}_{k}": m[k] for side, m in (("before", b), ("after", a))
                                             for k in ("wall_min_s", "cpu_min_s")}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--busy", type=int, default=14)
    ap.add_argument("--repeat", type=int, default=24)
    args = ap.parse_args()
    backend = backend_name()
    runs = []
    with busy_loops(args.busy):
        for i in range(args.repeat):
            for name, extra in CASES:
                runs.append(one(name, extra))
                r = runs[-1]
                print(f"{i + 1:3d} {name:17s} {r['status']:9s} wall {r['before_wall_min_s'] * 1e3:7.2f} -> "
                      f"{r['after_wall_min_s'] * 1e3:7.2f} ms, cpu {r['before_cpu_min_s'] * 1e3:6.2f} -> "
                      f"{r['after_cpu_min_s'] * 1e3:6.2f} ms; wall rule: {r['wall_rule']}", flush=True)
    waited = [r for r in runs if max(r["before_wall_min_s"], r["after_wall_min_s"]) > 0.005]
    out = {
        **provenance(backend, f"SAMPLE_BACKEND={backend} python bench/fix_verdict_load.py --busy {args.busy} "
                              f"--repeat {args.repeat}"),
        "busy": args.busy, "runs": runs,
        "summary": {"fixes": len(runs), "verified": sum(r["status"] == "verified" for r in runs),
                    "wall_rule_failed": sum(r["wall_rule"] == "failed" for r in runs),
                    "waited_over_5ms": len(waited)},
    }
    path = ROOT / "bench" / "results" / f"fixverdict_{backend}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["summary"]), "->", path.relative_to(ROOT))
    return 0 if out["summary"]["verified"] == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main())
