"""``--format json``: the versioned machine-readable report (schema in docs/json-schema.md)."""

from __future__ import annotations

import json

from scanprobe import REPORT_SCHEMA, __version__
from scanprobe.records import to_plain


def as_dict(report) -> dict:
    targets = []
    for t in report.targets:
        td = to_plain(t)
        verdicts = {(v.buffer.scan_id, v.buffer.role, v.buffer.index): v for v in report.verdicts.get(t.name, [])}
        for sd, scan in zip(td["scans"], t.scans):
            for bd, buf in zip(sd["buffers"], scan.buffers):
                v = verdicts.get((buf.scan_id, buf.role, buf.index))
                bd["bytes"] = buf.bytes
                bd["shape"] = list(buf.shape) if buf.shape is not None else None
                bd["bytes_formula"] = buf.bytes_formula()
                bd["status"] = v.status if v else "unknown"
                bd["verdict"] = v.verdict if v else ""
                bd["why"] = list(v.why) if v else []
        targets.append(td)
    removable = sum(f.bytes or 0 for f in report.findings if f.code == "SP001")
    counted = [f for f in report.findings if f.severity in ("error", "warning")]
    return {
        "schema": REPORT_SCHEMA,
        "scanprobe": __version__,
        "file": report.file,
        "backend": {"name": report.backend, "version": report.backend_version, "why": report.backend_why},
        "notes": list(report.notes),
        "targets": targets,
        "findings": [to_plain(f) for f in report.findings],
        "summary": {
            "targets": len(report.targets),
            "findings": len(counted),
            "notes": len(report.findings) - len(counted),
            "removable_bytes": removable,
            "exit_code": report.exit_code,
        },
    }


def render(report, out) -> None:
    json.dump(as_dict(report), out, indent=2, sort_keys=True, default=str)
    out.write("\n")


def render_error(error, out) -> None:
    json.dump(
        {
            "schema": REPORT_SCHEMA,
            "scanprobe": __version__,
            "error": {
                "message": error.message,
                "hint": error.hint,
                "frames": [to_plain(f) for f in error.frames],
                "exit_code": error.exit_code,
            },
        },
        out,
        indent=2,
        sort_keys=True,
    )
    out.write("\n")
