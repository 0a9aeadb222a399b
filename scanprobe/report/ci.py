"""Reporters of ``scanprobe check``: text, sarif (2.1.0), github (workflow annotations).

Each reads a ``results.CheckResult`` (its settings, rows and summary); JSON is ``json_out``.
"""

from __future__ import annotations

import json
import os

from scanprobe.contracts import __version__


def _location(rep, f):
    """Where a finding points: its own site, else its scan's, else its target's compile call."""
    target = next((t for t in rep.targets if t.name == f.target), None)
    site = f.site
    if site is None and target is not None:
        scan = next((s for s in target.scans if s.name == f.scan and s.site), None)
        site = scan.site if scan is not None else target.site
    if site is not None:
        return os.path.relpath(site.file), site.line
    return os.path.relpath(rep.file), 1


def _is_budget(code) -> bool:
    from scanprobe.rules import by_code

    rule = by_code(code)
    return bool(rule is not None and rule.budget)


def render_text(result, out, color=None):
    settings = result.settings
    hinted = set()
    for rep, f in result.rows():
        path, line = _location(rep, f)
        out.write(f"{path}:{line}: {f.code} [{f.target}] {f.message}\n")
        if f.fix and rep.file not in hinted and _is_budget(f.code):  # once per file: the budget's fix
            hinted.add(rep.file)
            out.write(f"  hint: {f.fix[0].replace('FILE', os.path.relpath(rep.file))}\n")
    for e in result.errors:
        out.write(f"{e.file}: error: {e.message}\n")
        if e.hint:
            out.write(f"  hint: {e.hint}\n")
    summary = result.summary
    n, files = summary.findings, summary.files
    if result.skipped:
        out.write(f"skipped (compile nothing): {', '.join(os.path.relpath(p) for p in result.skipped)}\n")
    budgets = []
    if settings.max_buffer:
        budgets.append(f"max-buffer {settings.max_buffer:,} B")
    if settings.max_peak:
        budgets.append(f"max-peak {settings.max_peak:,} B")
    out.write(
        f"{n} finding{'s' if n != 1 else ''} in {files} file{'s' if files != 1 else ''}"
        + (f" ({'; '.join(budgets)})" if budgets else "")
        + (f"; {len(result.errors)} error(s)" if result.errors else "")
        + "\n"
    )


def render_github(result, out, color=None):
    """GitHub Actions workflow commands: an annotation on the user's source line per finding."""

    def esc(text):
        return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")

    for rep, f in result.rows():
        path, line = _location(rep, f)
        kind = "error" if f.severity == "error" else "warning"
        out.write(f"::{kind} file={path},line={line},title={f.code} {f.name}::{esc(f.message)}\n")
    for e in result.errors:
        out.write(f"::error file={e.file},title=scanprobe error::{esc(e.message)}\n")


def sarif(result) -> dict:
    """A SARIF 2.1.0 log: one run, the rules with their documentation, one result per finding."""
    from scanprobe.rules import RULES

    rules = []
    for r in RULES:
        sec = r.sections()
        rules.append(
            {
                "id": r.code,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": sec.get("What it does", r.summary)},
                "help": {
                    "text": sec.get("Use instead", r.summary),
                    "markdown": "\n\n".join(f"## {k}\n{v}" for k, v in sec.items()),
                },
                "defaultConfiguration": {"level": "error"},
            }
        )
    index = {r.code: i for i, r in enumerate(RULES)}
    results = []
    for rep, f in result.rows():
        path, line = _location(rep, f)
        text = f.message + "".join(f"\n{x}" for x in f.explanation + [f"fix: {x}" for x in f.fix])
        results.append(
            {
                "ruleId": f.code,
                "ruleIndex": index.get(f.code, 0),
                "level": "error" if f.severity == "error" else "warning",
                "message": {"text": text},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": path.replace(os.sep, "/")},
                            "region": {"startLine": max(1, int(line))},
                        }
                    }
                ],
                "properties": {"target": f.target, "scan": f.scan, "bytes": f.bytes},
            }
        )
    notifications = [{"level": "error", "message": {"text": f"{e.file}: {e.message}"}} for e in result.errors]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "scanprobe",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "results": results,
                "invocations": [
                    {"executionSuccessful": not result.errors, "toolExecutionNotifications": notifications}
                ],
            }
        ],
    }


def render_sarif(result, out, color=None):
    json.dump(sarif(result), out, indent=2, sort_keys=True, default=str)
    out.write("\n")
