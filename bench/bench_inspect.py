"""Benchmark: `scanprobe inspect` on seed 000 at its real size (FAST_COMPILE), cold and warm,
beside the user's own compile of the same target, measured side by side in one run.

Usage (inside one backend's environment): python bench/bench_inspect.py [--repeats N]
Writes bench/results/inspect_<backend>.json.
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

from _common import backend_name  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_graphs" / "seed000_pixel_loop.py"



def run(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{cmd} failed:\n{proc.stderr}")
    return wall, max(peak, before), proc.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    backend = backend_name()
    cache = Path(tempfile.mkdtemp(prefix="scanprobe-bench-"))
    env = dict(os.environ, SEED000_SIZE="real", SAMPLE_BACKEND=backend)
    env["THEANO_FLAGS"] = f"base_compiledir={cache / 'theano'}"
    env["NUMBA_CACHE_DIR"] = str(cache / "numba")
    inspect_cmd = [sys.executable, "-m", "scanprobe", "inspect", str(SAMPLE), "--mode", "FAST_COMPILE", "--format", "json"]
    alone_cmd = [sys.executable, str(ROOT / "bench" / "compile_alone.py"), "FAST_COMPILE"]
    rows = {}
    # cold: an empty compile cache (Theano compiles its C helpers on first import)
    wall, peak, out = run(inspect_cmd, env)
    report = json.loads(out)
    rows["inspect_cold_s"] = wall
    rows["inspect_cold_peak_rss_kib"] = peak
    wall, _, out = run(alone_cmd, env)
    rows["compile_alone_cold_total_s"] = wall
    # warm, interleaved so that both see the same machine load
    inspect_w, alone_w, alone_compile = [], [], []
    for _ in range(args.repeats):
        wall, peak, _ = run(inspect_cmd, env)
        inspect_w.append(wall)
        rows["inspect_warm_peak_rss_kib"] = max(rows.get("inspect_warm_peak_rss_kib", 0), peak)
        wall, _, out = run(alone_cmd, env)
        alone_w.append(wall)
        alone_compile.append(json.loads(out.strip().splitlines()[-1])["compile_s"])
    shutil.rmtree(cache, ignore_errors=True)
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    rows.update(
        inspect_warm_s=med(inspect_w),
        compile_alone_warm_total_s=med(alone_w),
        compile_alone_warm_compile_call_s=med(alone_compile),
        ratio_inspect_to_compile_alone_total=med(inspect_w) / med(alone_w),
        predicted_bytes=[f["bytes"] for f in report["findings"] if f["code"] == "SP001"],
        removable_bytes=report["summary"]["removable_bytes"],
    )
    result = {
        "command": "python bench/bench_inspect.py --repeats %d  (in .venv-%s)" % (args.repeats, backend),
        "backend": backend,
        "backend_version": report["backend"]["version"],
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.platform()}",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "repeats": args.repeats,
        "results": rows,
    }
    out = ROOT / "bench" / "results" / f"inspect_{backend}.json"
    out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(json.dumps(result, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
