"""Terminal rendering of ``scanprobe fix``: before and after, side by side, and the line to write."""

from __future__ import annotations

import os

from scanprobe.analysis.measured import MEMORY_RSS, MEMORY_TRACED, PREDICTED, TIME, compare
from scanprobe.analysis.sizes import human_bytes
from scanprobe.report.terminal import _console

_STATUS = {
    "verified": "[bold green]verified[/]",
    "failed": "[bold red]failed: not applied[/]",
    "not compared": "[bold yellow]not compared: the run did not finish[/]",
}


def render(res, out, color=None) -> None:
    from rich.markup import escape
    from rich.syntax import Syntax
    from rich.table import Table

    con = _console(out, color)
    con.print(f"[bold]scanprobe fix[/] {escape(os.path.basename(res.file))} · {res.backend}")
    if not res.fixes and not res.error:
        con.print("no finding that scanprobe can fix: nothing to do")
    for miss in res.not_applied:
        for rw in miss.rewrites:
            con.print(f"[dim]{escape(miss.name)} · scan `{escape(rw.scan)}`: {rw.rule} does not apply: {escape(rw.reason)}[/]")
    for f in res.fixes:
        con.print()
        status = _STATUS[f.status]
        if f.status == "failed":
            status += f" ({escape(f.why_failed)})"
        con.print(f"[bold cyan]{escape(f.name)}[/] · {' + '.join(f.rules)} · {status}")
        for rw in f.rewrites:
            if rw.form:
                con.print(f"  {rw.rule} scan `{escape(rw.scan)}`: {rw.form} form")
                for d in rw.detail:
                    con.print(f"    {escape(d)}")
            elif rw.reason:
                con.print(f"  {rw.rule} scan `{escape(rw.scan)}`: not applied: {escape(rw.reason)}")
        for msg in f.after.over_budget:
            con.print(f"  [bold yellow]still over the budget after the fix:[/] {escape(msg)}")
        for msg in f.warnings:
            con.print(f"  [bold yellow]warning:[/] {escape(msg)}")
        t = Table(show_edge=False, pad_edge=False)
        for col in ("", "before", "after", "after vs before"):
            t.add_column(col, justify="right" if col else "left")
        bm, am = f.before.measured, f.after.measured

        def row(label, x, y, fmt, quantity):
            t.add_row(label, fmt(x), fmt(y), compare(x, y, quantity))

        def get(m, key):
            return getattr(m, key) if m is not None else None

        row("predicted peak (scan buffers)", f.before.predicted_peak, f.after.predicted_peak, human_bytes, PREDICTED)
        row("measured: RSS peak above the pre-call level", get(bm, "rss_peak_above_precall"),
            get(am, "rss_peak_above_precall"), human_bytes, MEMORY_RSS)
        row("measured: tracemalloc peak", get(bm, "tracemalloc_peak"), get(am, "tracemalloc_peak"), human_bytes,
            MEMORY_TRACED)
        row("wall time (median)", get(bm, "wall_median_s"), get(am, "wall_median_s"),
            lambda s: "—" if s is None else f"{s * 1000:.2f} ms", TIME)
        con.print(t)
        left = ", ".join(f"{code} {n}" for code, n in f.after.remaining.items()) or "—"
        if f.outputs_equal is not None:
            con.print(
                f"  outputs equal: {'yes' if f.outputs_equal else 'NO'} (max |difference| {f.max_abs_diff or 0:.3g}, "
                f"rtol {f.tolerance['rtol']}, atol {f.tolerance['atol']}); findings left after the fix: {left}"
            )
        ok = f.status == "verified"
        for rw in f.rewrites:
            if rw.form and rw.snippet and ok:
                con.print(f"  the code to write in place of scan `{escape(rw.scan)}`:")
                con.print(Syntax(rw.snippet, "python", theme="ansi_dark", background_color="default"))
        if f.site and ok and f.suggestion:
            con.print(f"  in your code ({escape(os.path.basename(f.site['file']))}:{f.site['line']}), compile with:")
            snippet = f"mode={f.suggestion}"
            con.print(Syntax(f"# {f.site['code']}\n{snippet}", "python", theme="ansi_dark", background_color="default"))
    summary = res.summary
    if summary.unfixed:
        con.print(f"[bold yellow]not fixed:[/] {escape(', '.join(summary.unfixed))} (see scanprobe inspect for the why)")
