"""Benchmark: PyMC models as targets, predicted beside measured per buffer, and the SP006 fix.

For each PyMC sample (nothing compiled by the module): `scanprobe profile` runs every function
the samplers compile (logp_dlogp, logp, forward) at the model's initial point in the supervised
child and compares each scan buffer's predicted bytes with the buffer the backend allocated;
`scanprobe fix sample_graphs/pymc_garch.py` carries the summed log-likelihood in the step and
reruns both functions from the same state.

Usage (inside an environment with PyMC): python bench/bench_pymc.py [LEG]
Writes bench/results/pymc_<leg>.json.
"""

import json
import os
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from _common import provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ("pymc_garch.py", "pymc_ar_customdist.py")


def run(*args):
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "scanprobe", *args, "--format", "json"],
                          capture_output=True, text=True, env=dict(os.environ), cwd=ROOT, timeout=1800)
    return json.loads(proc.stdout), proc.returncode, time.perf_counter() - t0


def main():
    leg = sys.argv[1] if len(sys.argv) > 1 else f"pytensor-{version('pytensor')}"
    result = {**provenance("pytensor", "python bench/bench_pymc.py " + leg), "pymc": version("pymc"),
              "leg": leg, "profiles": [], "fix": None}
    for sample in SAMPLES:
        prof, rc, secs = run("profile", f"sample_graphs/{sample}", "--runs", "3")
        for t in prof["targets"]:
            result["profiles"].append({
                "sample": sample, "target": t["name"], "exit": rc, "seconds_whole_command": round(secs, 1),
                "gaps": len(t["gaps"]), "linker": t.get("profile", {}).get("source", ""),
                "buffers": [{"belongs_to": b["belongs_to"], "role": b["role"], "predicted": b["predicted_bytes"],
                             "measured": b["measured_bytes"]} for b in t["profile"]["buffers"]],
            })
    fix, rc, secs = run("fix", "sample_graphs/pymc_garch.py", "--runs", "3")
    result["fix"] = [{
        "target": f["name"], "status": f["status"], "outputs_equal": f["outputs_equal"],
        "max_abs_diff": f["max_abs_diff"], "predicted_before": f["before"]["predicted_peak"],
        "predicted_after": f["after"]["predicted_peak"],
        "tracemalloc_before": f["before"]["measured"]["tracemalloc_peak"],
        "tracemalloc_after": f["after"]["measured"]["tracemalloc_peak"],
        "wall_before_s": f["before"]["measured"]["wall_median_s"], "wall_after_s": f["after"]["measured"]["wall_median_s"],
    } for f in fix["fixes"]]
    out = ROOT / "bench" / "results" / f"pymc_{leg}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(out)


if __name__ == "__main__":
    main()
