"""Terminal rendering of a profile result (predicted beside measured)."""

from __future__ import annotations

from scanprobe.analysis.sizes import human_bytes
from scanprobe.report.terminal import _console


def _mib(n):
    return "—" if n is None else human_bytes(n)


def render(prof, out, color=None) -> None:
    from rich.markup import escape
    from rich.table import Table

    con = _console(out, color)
    insp = prof.inspect or {}
    backend = insp.get("backend", {})
    con.print(
        f"[bold]scanprobe profile[/] {escape(prof.file)} · {backend.get('name', '?')} "
        f"{backend.get('version', '')} · device {prof.device}"
    )
    for t in prof.targets:
        con.print()
        con.print(f"[bold cyan]target {escape(t.name)}[/]")
        m = t.measured
        tab = Table(show_edge=False, pad_edge=False)
        for col in ("measure", "value"):
            tab.add_column(col)
        tab.add_row("predicted peak (" + " + ".join(t.predicted_parts) + ")", _mib(t.predicted_peak))
        if m:
            tab.add_row("measured: RSS peak above the pre-call level (2nd call, sampled every 1 ms)", _mib(m.rss_peak_above_precall))
            tab.add_row("measured: tracemalloc peak of one call (numpy allocations)", _mib(m.tracemalloc_peak))
            tab.add_row(f"wall time, median of {m.runs} runs after a warm-up", f"{m.wall_median_s * 1000:.2f} ms")
            tab.add_row("first call (warm-up, JIT included)", f"{m.first_call_s * 1000:.2f} ms")
        dm = t.device_memory
        if dm:
            tab.add_row(f"device peak memory ({escape(dm['device'])})", _mib(dm.get("peak_bytes_in_use")))
        con.print(tab)
        p = t.profile
        if p:
            bt = Table(title=f"scan buffers, predicted and measured ({escape(p.mode)})", show_edge=False, pad_edge=False)
            for col in ("scan", "role", "belongs to", "predicted", "measured", "gap"):
                bt.add_column(col)
            for b in p.buffers:
                gap = b.gap
                gap_s = "—" if gap is None else f"{gap * 100:+.1f}%"
                if gap is not None and abs(gap) > 0.05:
                    gap_s = f"[bold red]{gap_s}[/]"
                bt.add_row(
                    f"#{b.scan_id} {escape(b.scan)}", b.role, escape(b.belongs_to),
                    _mib(b.predicted_bytes), _mib(b.measured_bytes), gap_s,
                )
            con.print(bt)
            for s in p.scans:
                steps = f"{s.n_steps} steps, " if s.n_steps else ""
                con.print(f"  scan `{escape(s.scan)}`: {steps}{s.seconds * 1000:.2f} ms inside the loop (profiled run)")
            nt = Table(title="largest outputs per node (profiled run)", show_edge=False, pad_edge=False)
            for col in ("op", "output bytes", "time"):
                nt.add_column(col)
            for n in p.nodes[:8]:
                nt.add_row(escape(n.op), _mib(n.output_bytes), f"{n.seconds * 1000:.2f} ms")
            con.print(nt)
        for g in t.gaps:
            con.print(f"  [bold red]prediction gap > 5%:[/] {escape(g)}")
    summary = prof.summary
    con.print()
    if not prof.error:  # an error goes to stderr with the other commands' errors
        con.print(
            f"{summary.findings} finding(s) from inspect"
            + (f" (+ {summary.notes} note(s))" if summary.notes else "")
            + f" · {summary.gaps} prediction gap(s) · exit {summary.exit_code}"
        )
