"""``--html``: one self-contained HTML file (no scripts, no network): tables, findings, and the
graph picture of each target inlined as SVG when graphviz is installed."""

from __future__ import annotations

import html
import os
import shutil

from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status

_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em;color:#222}
h1{font-size:1.5em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:.5em 0 1em} th,td{border:1px solid #ddd;padding:.3em .6em;text-align:left}
th{background:#f3f5f8} td.num{text-align:right;font-variant-numeric:tabular-nums}
.removable{color:#b00020;font-weight:600} .needed{color:#8a6d00} .reduced{color:#1b7f3b}
.finding{border-left:4px solid #b00020;background:#fff5f5;padding:.6em 1em;margin:.8em 0}
.finding code{background:#fde} .kept{border-left:4px solid #c9a400;background:#fffbea;padding:.4em 1em;margin:.4em 0}
.note{color:#666} .graph{overflow:auto;border:1px solid #ddd;max-height:40em}
"""


def _e(x) -> str:
    return html.escape(str(x))


def render(report, pictures: dict | None = None) -> str:
    """The report as HTML; ``pictures`` maps target names to SVG text."""
    pictures = pictures or {}
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>scanprobe: {_e(os.path.basename(report.file))}</title><style>{_CSS}</style></head><body>",
        f"<h1>scanprobe report: {_e(os.path.basename(report.file))}</h1>",
        f"<p class='note'>{_e(report.backend)} {_e(report.backend_version)} ({_e(report.backend_why)})</p>",
    ]
    summary = report.summary
    n, notes, total = summary.findings, summary.notes, summary.removable_bytes
    parts.append(
        f"<p id='summary'><b>{n} finding{'s' if n != 1 else ''}</b>"
        + (f" (+ {notes} note{'s' if notes != 1 else ''})" if notes else "")
        + f" in {len(report.targets)} "
        f"target{'s' if len(report.targets) != 1 else ''} · {_e(human_bytes(total))} held in removable history</p>"
    )
    for f in report.findings:
        site = f" at <code>{_e(f.site.short())}</code>: <code>{_e(f.site.code)}</code>" if f.site else ""
        parts.append(
            f"<div class='finding {_e(f.severity)}'><b>{_e(f.code)} {_e(f.name)}</b> · {_e(f.target)}<br>{_e(f.message)}{site}<ul>"
            + "".join(f"<li>{_e(x)}</li>" for x in f.explanation)
            + "".join(f"<li><b>fix:</b> {_e(x)}</li>" for x in f.fix)
            + "</ul></div>"
        )
    for t in report.targets:
        verdicts = report.verdict_map(t.name)
        where = f" ({_e(t.site.short())})" if t.site else ""
        parts.append(f"<h2>target {_e(t.name)}{where}</h2>")
        parts.append(
            f"<p>mode {_e(t.mode.name)} · linker {_e(t.mode.linker)} · save-mem "
            f"{'runs' if t.mode.save_mem else 'does not run'} · {t.n_nodes} nodes</p>"
        )
        if not t.scans:
            parts.append("<p>no scan in this function</p>")
            continue
        parts.append("<table><tr><th>scan</th><th>n_steps</th><th>kind</th><th>defined at</th></tr>")
        for s in t.scans:
            n_steps = s.n_steps.value if s.n_steps.value is not None else s.n_steps.formula
            kind = ("backward pass" if s.is_gradient else "forward") + (", while" if s.as_while else "")
            parts.append(
                f"<tr><td>#{s.id} {_e(s.name)}</td><td class='num'>{_e(n_steps)}</td><td>{kind}</td>"
                f"<td>{_e(s.site.short() if s.site else '?')}</td></tr>"
            )
        parts.append("</table>")
        parts.append(
            "<table><tr><th>scan</th><th>role</th><th>belongs to</th><th>shape</th><th>dtype</th>"
            "<th>bytes</th><th>history</th></tr>"
        )
        rows = [(b.bytes if b.bytes is not None else -1, s, b) for s in t.scans for b in s.buffers]
        for _, s, b in sorted(rows, key=lambda r: -r[0]):
            v = verdicts.get((b.scan_id, b.role, b.index))
            status = "?" if v is None or v.status is Status.UNKNOWN else (
                v.status if v.status is not Status.FULL else f"full: {v.verdict}")
            cls = "removable" if v and v.verdict.droppable else ("reduced" if v and v.status is Status.REDUCED else "needed")
            size = human_bytes(b.bytes) if b.bytes is not None else b.bytes_formula()
            parts.append(
                f"<tr><td>#{s.id}</td><td>{b.role}</td><td>{_e(b.belongs_to)}</td><td>{_e(b.shape_formula())}</td>"
                f"<td>{b.dtype}</td><td class='num'>{_e(size)}</td><td class='{cls}'>{_e(status)}</td></tr>"
            )
        parts.append("</table>")
        for _, s, b in rows:
            v = verdicts.get((b.scan_id, b.role, b.index))
            if v and v.status is Status.FULL and v.verdict.kept:
                parts.append(f"<div class='kept'>kept: {_e(b.belongs_to)} of <code>{_e(s.name)}</code>: {_e('; '.join(v.why))}</div>")
        svg = pictures.get(t.name)
        if svg:
            start = svg.find("<svg")
            parts.append(f"<div class='graph'>{svg[start:] if start >= 0 else svg}</div>")
        else:
            parts.append("<p class='note'>graph picture not drawn: graphviz's <code>dot</code> is not installed</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def pictures_for(report) -> dict:
    """SVG text of each target's graph picture, when graphviz is installed."""
    if shutil.which("dot") is None:
        return {}
    from scanprobe.report.graph import to_dot

    return {name: to_dot(pic).create(format="svg").decode("utf-8", errors="replace")
            for name, pic in report.pictures.items()}


def write(report, path) -> None:
    """Write the HTML atomically (``report.files``: a temporary file renamed into place); ``path``
    was checked by ``files.output_path`` before the user's module ran."""
    from pathlib import Path

    from scanprobe.report.files import write_atomic

    write_atomic(Path(path), render(report, pictures_for(report)))

