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
