"""Terminal rendering of ``scanprobe fix``: before and after, side by side, and the line to write."""

from __future__ import annotations

import os

from scanprobe.analysis.sizes import human_bytes
from scanprobe.report.terminal import _console


def render(res: dict, out, color=None) -> None:
    from rich.markup import escape
    from rich.syntax import Syntax
    from rich.table import Table

    con = _console(out, color)
    con.print(f"[bold]scanprobe fix[/] {escape(os.path.basename(res['file']))} · {res['backend']}")
    if not res["fixes"] and not res["error"]:
        con.print("no finding that scanprobe can fix: nothing to do")
    for miss in res.get("not_applied", []):
        for rw in miss["rewrites"]:
            con.print(f"[dim]{escape(miss['name'])} · scan `{escape(rw['scan'])}`: {rw['rule']} does not apply: {escape(rw['reason'])}[/]")
    for f in res["fixes"]:
        con.print()
        ok = f.get("outputs_equal")
        status = "[bold green]verified[/]" if ok else "[bold red]failed: the outputs changed, not applied[/]"
        con.print(f"[bold cyan]{escape(f['name'])}[/] · {' + '.join(f.get('rules', [f['rule']]))} · {status}")
        for rw in f.get("rewrites", []):
            if rw["form"]:
                con.print(f"  {rw['rule']} scan `{escape(rw['scan'])}`: {rw['form']} form")
                for d in rw["detail"]:
                    con.print(f"    {escape(d)}")
        t = Table(show_edge=False, pad_edge=False)
        for col in ("", "before", "after", "ratio"):
            t.add_column(col, justify="right" if col else "left")
        b, a = f.get("before", {}), f.get("after", {})
        bm, am = b.get("measured") or {}, a.get("measured") or {}

        def row(label, x, y, fmt):
            ratio = f"{x / y:,.0f}x" if x and y else "—"
            t.add_row(label, fmt(x), fmt(y), ratio)

        row("predicted peak (scan buffers)", b.get("predicted_peak"), a.get("predicted_peak"), human_bytes)
        row("measured: RSS peak above the pre-call level", bm.get("rss_peak_above_precall"), am.get("rss_peak_above_precall"), human_bytes)
        row("measured: tracemalloc peak", bm.get("tracemalloc_peak"), am.get("tracemalloc_peak"), human_bytes)
        row("wall time (median)", bm.get("wall_median_s"), am.get("wall_median_s"), lambda s: "—" if s is None else f"{s * 1000:.2f} ms")
        con.print(t)
        con.print(
            f"  outputs equal: {'yes' if ok else 'NO'} (max |difference| {f.get('max_abs_diff', 0):.3g}, "
            f"rtol {f['tolerance']['rtol']}, atol {f['tolerance']['atol']}); SP001 left after the fix: "
            f"{a.get('remaining_sp001', '?')}"
        )
        for rw in f.get("rewrites", []):
            if rw["form"] and rw.get("snippet") and ok:
                con.print(f"  the code to write in place of scan `{escape(rw['scan'])}`:")
                con.print(Syntax(rw["snippet"], "python", theme="ansi_dark", background_color="default"))
        site = f.get("site")
        if site and ok and f.get("suggestion"):
            con.print(f"  in your code ({escape(os.path.basename(site['file']))}:{site['line']}), compile with:")
            snippet = f"mode={f['suggestion']}"
            con.print(Syntax(f"# {site['code']}\n{snippet}", "python", theme="ansi_dark", background_color="default"))
    if res["summary"].get("unfixed"):
        con.print(f"[bold yellow]not fixed:[/] {escape(', '.join(res['summary']['unfixed']))} (see scanprobe inspect for the why)")
    if res["error"]:
        con.print(f"[bold red]error:[/] {escape(res['error']['message'])}")
        if res["error"].get("hint"):
            con.print(f"[yellow]hint:[/] {escape(res['error']['hint'])}")
