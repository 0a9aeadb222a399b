"""``--html``: one self-contained HTML file (no scripts, no network): tables, findings, and the
graph picture of each target inlined as SVG when graphviz is installed."""

from __future__ import annotations

import html
import os
import shutil

from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status
from scanprobe.report.terminal import _short

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
    """The report as one HTML page; ``pictures`` maps target names to SVG text."""
    head = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>scanprobe: {_e(os.path.basename(report.file))}</title><style>{_CSS}</style></head><body>",
        f"<h1>scanprobe report: {_e(os.path.basename(report.file))}</h1>",
    ]
    return "\n".join(head + _body(report, pictures or {}, graph_note=True) + ["</body></html>"])


#: the page's style, every rule scoped to the fragment's box (a notebook's page is not ours)
_SCOPE = "scanprobe-report"


def _scoped_css() -> str:
    rules = []
    for rule in _CSS.replace("\n", "").split("}"):
        if "{" not in rule:
            continue
        selectors, body = rule.split("{", 1)
        scoped = []
        for sel in selectors.split(" "):
            sel = sel.strip()
            if not sel:
                continue
            scoped.append(f".{_SCOPE}" if sel == "body" else f".{_SCOPE} {sel}")
        rules.append(",".join(scoped) + "{" + body + "}")
    return "".join(rules)


def render_fragment(report, title: str | None = None) -> str:
    """The report as a fragment for a notebook's output (``scanprobe.inspect``'s ``_repr_html_``):
    no page, styles scoped to its own box, no scripts, no external assets; a bar chart of the
    largest buffers drawn as inline SVG."""
    title = title or os.path.basename(report.file)
    parts = [f"<div class='{_SCOPE}'><style>{_scoped_css()}</style>",
             f"<h1>scanprobe: {_e(title)}</h1>"]
    chart = bar_chart(report)
    return "\n".join(parts + ([chart] if chart else []) + _body(report, {}, graph_note=False) + ["</div>"])


def bar_chart(report, largest: int = 8) -> str:
    """An inline SVG: the ``largest`` buffers with a known size, one bar each, coloured by
    verdict (removable red, kept full yellow, reduced green)."""
    rows = []
    for t in report.targets:
        verdicts = report.verdict_map(t.name)
        for s in t.scans:
            for b in s.buffers:
                if b.bytes:
                    v = verdicts.get((b.scan_id, b.role, b.index))
                    colour = "#b00020" if v and v.verdict.droppable else (
                        "#1b7f3b" if v and v.status is Status.REDUCED else "#c9a400")
                    label = f"{t.name} #{s.id} {b.belongs_to}" if len(report.targets) > 1 else f"#{s.id} {b.belongs_to}"
                    rows.append((b.bytes, label, colour))
    if not rows:
        return ""
    rows = sorted(rows, key=lambda r: -r[0])[:largest]
    top = rows[0][0]
    bar_h, label_w, bar_w = 18, 260, 320
    height = bar_h * len(rows) + 4
    out = [f"<svg class='bars' xmlns='http://www.w3.org/2000/svg' width='{label_w + bar_w + 90}' height='{height}' "
           f"role='img' aria-label='largest scan buffers'>"]
    for i, (nbytes, label, colour) in enumerate(rows):
        y = i * bar_h + 2
        w = max(1, round(bar_w * nbytes / top))
        out.append(f"<text x='{label_w - 6}' y='{y + 13}' text-anchor='end' font-size='12'>{_e(_short(label, 40))}</text>"
                   f"<rect x='{label_w}' y='{y + 2}' width='{w}' height='{bar_h - 5}' fill='{colour}'/>"
                   f"<text x='{label_w + w + 4}' y='{y + 13}' font-size='12'>{_e(human_bytes(nbytes))}</text>")
    out.append("</svg>")
    return "".join(out)


def _body(report, pictures: dict, graph_note: bool) -> list[str]:
    parts = [
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
        elif graph_note:
            parts.append("<p class='note'>graph picture not drawn: graphviz's <code>dot</code> is not installed</p>")
    return parts


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

