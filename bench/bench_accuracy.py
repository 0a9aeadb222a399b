"""Benchmark: accuracy of scanprobe's predictions against measured runs.

For every shipped sample and test fixture that runs, plus programs drawn from the same space as
the property-based test (tests/test_properties.py, a fixed seed here), `scanprobe profile
--format json --runs 1` predicts every scan buffer's bytes from the optimized graph, then runs
the function in a child: a profiled twin measures each buffer; RSS above the pre-call level is
the measured peak. Recorded: buffers predicted exactly / within 1% / not predicted (symbolic),
and per target the measured peak over the predicted scan-buffer peak.

Usage (inside one backend's environment): python bench/bench_accuracy.py [--programs 12]
Writes bench/results/accuracy_<backend>.json.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

MODULES = [  # (module, environment, extra arguments: the inputs a module does not give)
    ("sample_graphs/seed000_pixel_loop.py", {"SEED000_SIZE": "medium"}, []),
    ("sample_graphs/rnn_bptt.py", {}, []),
    ("sample_graphs/seed002_per_example_grads.py", {}, []),
    ("tests/fixtures/nested.py", {}, ["--input", "x=100x4"]),
    ("tests/fixtures/taps_multi.py", {}, ["--input", "n=1000"]),
    ("tests/fixtures/while_scan.py", {}, ["--input", "x0=1"]),
    ("tests/fixtures/truncated.py", {}, ["--input", "x=100x6"]),
    ("tests/fixtures/map_scan.py", {}, []),
]


def profile(path, env_extra, args=(), cwd=ROOT):
    env = dict(os.environ, **env_extra)
    proc = subprocess.run([sys.executable, "-m", "scanprobe", "profile", str(path), *args, "--runs", "1", "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=cwd, timeout=900)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"error": {"message": (proc.stderr or proc.stdout)[-500:]}, "targets": []}


def programs(n, backend):
    import test_properties as tp

    rng = random.Random(0)
    out = []
    for _ in range(n):
        out.append({
            "steps": rng.randint(1, 25), "width": rng.randint(1, 6),
            "dtype": rng.choice(["float32", "float64"]),
            "state": rng.choice(["sit_sot", "mit_sot2", "mit_sot3", "none"]),
            "sequence": rng.random() < 0.5, "non_seq": rng.choice(["shared", "explicit", "none"]),
            "nested": rng.random() < 0.5, "read": rng.choice(["last", "full", "sum"]),
            "grad": rng.random() < 0.5, "until": rng.random() < 0.3,
            "mode": rng.choice(tp.MODES.get(backend, ["FAST_COMPILE"])),
        })
    return [(p, tp.module_source(p)) for p in out]


def collect(name, prof, rows, targets):
    if prof.get("error"):
        targets.append({"module": name, "error": prof["error"]["message"][:200]})
        return
    for t in prof["targets"]:
        top = {s["id"] for s in (t.get("profile") or {}).get("target", {}).get("scans", []) if s["parent"] is None}
        for b in (t.get("profile") or {}).get("buffers", []):
            if b["scan_id"] in top:
                rows.append({"module": name, "target": t["name"], "role": b["role"],
                             "predicted": b["predicted_bytes"], "measured": b["measured_bytes"]})
        measured = (t.get("measured") or {}).get("rss_peak_above_precall")
        targets.append({"module": name, "target": t["name"], "predicted_peak": t.get("predicted_peak"),
                        "measured_rss_peak": measured})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--programs", type=int, default=8)
    opts = ap.parse_args()
    backend = backend_name()
    rows, targets = [], []
    for rel, env, args in MODULES:
        collect(rel, profile(ROOT / rel, dict(env, SAMPLE_BACKEND=backend), args), rows, targets)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "_backend.py").write_text((ROOT / "tests" / "fixtures" / "_backend.py").read_text())
        for k, (p, src) in enumerate(programs(opts.programs, backend)):
            path = Path(tmp) / f"program_{k}.py"
            path.write_text(src)
            collect(f"generated #{k}", profile(path, {"SAMPLE_BACKEND": backend}), rows, targets)
    sized = [r for r in rows if r["predicted"] is not None]
    exact = sum(1 for r in sized if r["predicted"] == r["measured"])
    close = sum(1 for r in sized if r["measured"] and abs(r["predicted"] - r["measured"]) <= 0.01 * r["measured"])
    result = {
        **provenance(backend, f"python bench/bench_accuracy.py --programs {opts.programs}"),
        "buffers": len(rows), "sized": len(sized), "exact": exact, "within_1pct": close,
        "symbolic": len(rows) - len(sized),
        "over": sum(1 for r in sized if r["measured"] is not None and r["predicted"] > r["measured"]),
        "rows": rows, "targets": targets,
    }
    out = ROOT / "bench" / "results" / f"accuracy_{backend}.json"
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k not in ("rows", "targets")}))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
