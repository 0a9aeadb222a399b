"""Helpers for reading JSON reports in tests."""


def buffers(report, target=None):
    out = []
    for t in report["targets"]:
        if target and t["name"] != target:
            continue
        for s in t["scans"]:
            for b in s["buffers"]:
                out.append(dict(b, scan=s["name"], scan_id=s["id"], target=t["name"]))
    return out


def findings(report, code="SP001", severities=("error", "warning")):
    """Findings of one rule (its info notes left out unless asked for)."""
    return [f for f in report["findings"] if f["code"] == code and f["severity"] in severities]


def _alive(pid: int) -> bool:
    """A process that still runs (a zombie waiting for its reaper does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def still_running(pids) -> list[int]:
    """Those of ``pids`` still running once the kernel has had time to end them (a kill already
    sent: only its bookkeeping is waited for, up to a minute, so a busy machine passes too)."""
    import time

    deadline = time.time() + 60
    while time.time() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]
