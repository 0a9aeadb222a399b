"""Benchmark: cost of scanprobe's analysis as graphs grow, up to about 50,000 nodes.

Synthetic user modules: K scans in a chain, each step C parallel chains of M elementwise stages,
some steps with a nested scan; compiled in FAST_COMPILE. For each, `scanprobe inspect --format json`
in a fresh process; the report gives the analysis seconds (the walk of the optimized graph,
inner graphs included, shapes, reads, rules) apart from loading and compiling. Nodes counted:
the function's own nodes plus every scan's step ops. The fitted slope of log(analysis time)
against log(nodes) is 1 for linear growth. The backend's per-node stack traces are turned off
for these modules (traceback limit 0): with them, building the synthetic graphs themselves (the
user's code, not scanprobe) takes minutes.

Usage (inside one backend's environment): python bench/bench_scaling.py
Writes bench/results/scaling_<backend>.json.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# (scans, parallel chains per step, elementwise stages per chain, nested scan in every n-th step)
SHAPES = [(1, 1, 20, 0), (1, 1, 200, 0), (2, 2, 300, 0), (2, 4, 300, 2), (4, 4, 300, 0), (4, 8, 300, 2), (6, 8, 300, 0),
          (6, 8, 300, 2)]


def module(scans, chains, stages, nested_every) -> str:
    lines = [
        "import numpy as np",
        "from _backend import T, th",
        "x0 = T.vector('x0', dtype='float64')",
        "seq = T.matrix('seq', dtype='float64')",
        "SCANPROBE_INPUTS = {'x0': np.ones(4), 'seq': np.ones((16, 4))}",
        "h = x0",
        f"for k in range({scans}):",
        "    nested = " + (f"(k % {nested_every} == 0)" if nested_every else "False"),
        "    def step(s, hp, nested=nested):",
        "        total = hp",
        f"        for c in range({chains}):",
        "            a = hp",
        f"            for j in range({stages}):",
        "                a = T.tanh(a * (0.5 + 0.01 * c) + s)",
        "            total = total + a",
        "        if nested:",
        "            total = th.scan(lambda b: T.tanh(b * 0.5), outputs_info=[total], n_steps=3)[0][-1]",
        "        return total",
        "    h = th.scan(step, sequences=[seq], outputs_info=[h])[0][-1]",
        "f = th.function([x0, seq], h, mode='FAST_COMPILE')",
    ]
    return "\n".join(lines) + "\n"


def main():
    backend = backend_name()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "_backend.py").write_text((ROOT / "sample_graphs" / "_backend.py").read_text())
        for scans, chains, stages, nested in SHAPES:
            path = Path(tmp) / f"synthetic_{scans}_{chains}_{stages}_{nested}.py"
            path.write_text(module(scans, chains, stages, nested))
            env = dict(os.environ, SAMPLE_BACKEND=backend)
            # the backend records a user stack trace on every node it creates, which makes the
            # synthetic module's own scan construction slow (not scanprobe's work): off here
            key, flag = ("THEANO_FLAGS", "traceback.limit=0") if backend == "theano" else ("PYTENSOR_FLAGS", "traceback__limit=0")
            env[key] = ",".join(x for x in (env.get(key, ""), flag) if x)
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "scanprobe", "inspect", str(path), "--format", "json"],
                                  capture_output=True, text=True, env=env, cwd=ROOT)
            wall = time.perf_counter() - t0
            rep = json.loads(proc.stdout)
            assert "targets" in rep, proc.stdout[-2000:] + proc.stderr[-2000:]
            (t,) = rep["targets"]
            nodes = t["n_nodes"] + sum(s["step_ops"] for s in t["scans"])
            row = {"scans": scans, "chains": chains, "stages": stages, "nested_every": nested, "scan_records": len(t["scans"]),
                   "nodes": nodes, "analysis_s": t["analysis_seconds"], "compile_s": t["compile_seconds"], "wall_s": wall}
            rows.append(row)
            print(json.dumps(row), flush=True)
    n = np.array([r["nodes"] for r in rows], float)
    a = np.array([r["analysis_s"] for r in rows], float)
    big = n >= 1000
    result = {
        **provenance(backend, "python bench/bench_scaling.py"),
        "rows": rows,
        "loglog_slope": float(np.polyfit(np.log(n[big]), np.log(a[big]), 1)[0]),
        "seconds_per_1000_nodes": float(np.polyfit(n, a, 1)[0] * 1000),
    }
    out = ROOT / "bench" / "results" / f"scaling_{backend}.json"
    out.write_text(json.dumps(result, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
