"""Record the per-leg times a `bash .ci/run` (or `bash scripts/test`) printed.

Usage: python3 bench/record_suite.py CI_LOG "command that made it"
The log's "CI exit N in S s" line (printed last by .ci/run) gives the whole run; "date" is when
the log was written (its modification time), not when it was recorded.
Writes bench/results/suite_ci_<date>.json (read by bench/render.py, table 7; earlier runs kept).
"""

import json
import os
import platform
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main():
    log = Path(sys.argv[1])
    text = log.read_text()
    written = time.gmtime(log.stat().st_mtime)
    command = sys.argv[2] if len(sys.argv) > 2 else "bash .ci/run"
    setups = {m.group(1): int(m.group(2)) for m in re.finditer(r"^set-up (\S+): (\d+) s$", text, re.M)}
    legs = [{"leg": m.group(1), "version": m.group(2), "exit": int(m.group(3)), "tests_s": int(m.group(4)),
             "setup_s": setups.get(m.group(1))}
            for m in re.finditer(r"^  (\S+) \(([^)]*)\): exit (\d+), tests (\d+) s$", text, re.M)]
    total = re.search(r"CI exit (\d+) in (\d+) s", text)
    how = re.search(r"^=== legs \((.*)\):$", text, re.M)
    result = {
        "command": command, "legs": legs, "total_s": int(total.group(2)) if total else None,
        "exit": int(total.group(1)) if total else None,
        "how": how.group(1) if how else None,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d %H:%M UTC", written),
    }
    name = "suite_ci_" + time.strftime("%Y%m%d_%H%M", written) + ".json"  # earlier runs stay beside it
    (HERE / "results" / name).write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
