"""The property test at scale: random scan programs, every buffer (nested ones included) against
what the backend really allocates, and the verdicts against how each program reads its history.

Runs tests/test_properties.py with SCANPROBE_HYPOTHESIS_EXAMPLES (default 500) random examples in
this environment and records examples, outcome and time. CI runs a fixed set of 12 per leg.

Usage (inside one backend's environment): python bench/bench_properties.py [EXAMPLES]
Writes bench/results/properties_<backend>.json.
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import backend_name, provenance  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main():
    backend = backend_name()
    examples = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    env = dict(os.environ, SCANPROBE_HYPOTHESIS_EXAMPLES=str(examples), SAMPLE_BACKEND=backend)
    env.setdefault("THEANO_FLAGS", f"base_compiledir={ROOT / '.cache' / 'theano'}")
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "tests/test_properties.py", "-q", "-p", "no:cacheprovider",
                           "-W", "ignore", "--hypothesis-show-statistics"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=4 * 3600)
    seconds = time.perf_counter() - t0
    passing = re.search(r"(\d+) passing(?: examples)?, (\d+) failing(?: examples)?,(?: and)? (\d+) invalid", proc.stdout)
    result = {
        **provenance(backend, f"SAMPLE_BACKEND={backend} python bench/bench_properties.py {examples}"),
        "examples_asked": examples,
        "passing": int(passing.group(1)) if passing else None,
        "failing": int(passing.group(2)) if passing else None,
        "invalid": int(passing.group(3)) if passing else None,
        "pytest_exit": proc.returncode, "seconds": round(seconds, 1),
        "tail": proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr[-500:],
    }
    if proc.returncode != 0:  # the falsifying example, as hypothesis printed it
        errors = [line for line in proc.stdout.splitlines() if line.startswith("E ")]
        result["failure"] = "\n".join(errors[:60])
    out = ROOT / "bench" / "results" / f"properties_{backend}.json"
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    sys.exit(0 if proc.returncode == 0 else 1)


if __name__ == "__main__":
    main()
