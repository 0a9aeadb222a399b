"""The rich terminal report: colour on a terminal, plain text in a pipe."""

from __future__ import annotations

import os

from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status, Verdict


def _console(out, color):
    from rich.console import Console

    tty = hasattr(out, "isatty") and out.isatty()
    return Console(
        file=out,
        force_terminal=True if color is True else (None if tty else False),
        no_color=(color is False) or (not tty and color is not True),
        width=None if tty else 150,
        highlight=False,
        soft_wrap=not tty,
        force_jupyter=False,  # in a notebook's kernel too: the text goes to ``out``, not to a display
    )


def render(report, out, color=None) -> None:
    from rich.markup import escape
    from rich.table import Table

    con = _console(out, color)
    con.print(
        f"[bold]scanprobe[/] {escape(os.path.basename(report.file))} · {report.backend} "
        f"{report.backend_version} ({escape(report.backend_why)})"
    )
    for note in report.notes:
        con.print(f"[dim]note: {escape(note)}[/]")
    for t in report.targets:
        con.print()
        where = f" ({t.site.short()})" if t.site else ""
        mode = t.mode
        sm = "runs" if mode.save_mem else "does not run"
        con.print(
            f"[bold cyan]target {escape(t.name)}[/]{escape(where)} · mode {escape(mode.name)}"
            f"{' (--mode)' if mode.from_cli else ''} · linker {escape(mode.linker)} · save-mem {sm}"
            f" · {t.n_nodes} nodes"
        )
        if not t.scans:
            con.print("  no scan in this function")
            continue
        verdicts = report.verdict_map(t.name)
        st = Table(title=None, show_edge=False, pad_edge=False)
        for col in ("scan", "n_steps", "kind", "defined at"):
            st.add_column(col)
        for s in t.scans:
            kind = ("backward pass" if s.is_gradient else "forward") + (", while" if s.as_while else "")
            if s.parent:
                kind += f", nested in #{s.parent}"
            n = str(s.n_steps.value) if s.n_steps.value is not None else s.n_steps.formula
            st.add_row(f"#{s.id} {escape(s.name)}", escape(n), kind, escape(s.site.short() if s.site else "?"))
        con.print(st)
        for s in t.scans:
            parts = [f"{i.role} {i.label}" for i in s.inputs if i.role != "n_steps"]
            con.print(f"  [dim]#{s.id} inputs: {escape(_short('; '.join(parts), 140))}[/]")
        bt = Table(show_edge=False, pad_edge=False)
        for col in ("scan", "role", "belongs to", "shape", "dtype", "bytes", "history"):
            bt.add_column(col, justify="right" if col == "bytes" else "left")
        rows = []
        for s in t.scans:
            for b in s.buffers:
                v = verdicts.get((b.scan_id, b.role, b.index))
                rows.append((b.bytes if b.bytes is not None else -1, s, b, v))
        rows.sort(key=lambda r: -r[0])
        for _, s, b, v in rows:
            hist = _history_cell(v)
            size = human_bytes(b.bytes) if b.bytes is not None else _short(b.bytes_formula())
            bt.add_row(
                f"#{s.id}", b.role, escape(b.belongs_to), escape(_short(b.shape_formula())), b.dtype, escape(size), hist
            )
        con.print(bt)
        unknown = [i.label for i in t.inputs if i.shape is None and i.source == "unknown"]
        if unknown and any(b.bytes is None for _, _, b, _ in rows):
            con.print(
                f"  [yellow]sizes depend on {', '.join(unknown)}:[/] give --input "
                f"{unknown[0]}=SHAPE (or SCANPROBE_INPUTS in the module) for figures"
            )
        for _, s, b, v in rows:
            if v and v.status is Status.FULL and v.verdict.kept:
                con.print(
                    f"  [green]kept[/] {escape(b.belongs_to)} of `{escape(s.name)}` "
                    f"({human_bytes(b.bytes) if b.bytes is not None else escape(_short(b.bytes_formula()))}): "
                    + escape("; ".join(v.why))
                )
    con.print()
    if report.findings:
        colour = {"error": "red", "warning": "yellow", "info": "blue"}
        for f in report.findings:
            c = colour.get(f.severity, "red")
            head = "note " if not f.counts else ""  # notes do not count as findings (exit code)
            con.print(f"[{c}]{head}[/][bold {c}]{f.code}[/] [{c}]{f.name}[/] [bold]{escape(f.target)}[/]: {escape(f.message)}")
            if f.site:
                con.print(f"    at {escape(f.site.short())}: [dim]{escape(f.site.code)}[/]")
            for line in f.explanation:
                con.print(f"    {escape(line)}")
            for line in f.fix:
                con.print(f"    [green]fix:[/] {escape(line)}")
        summary = report.summary
        held = human_bytes(summary.removable_bytes) + (
            f" + {summary.removable_symbolic} of symbolic size" if summary.removable_symbolic else "")
        has_history = summary.removable_bytes or summary.removable_symbolic
        head = (f"[bold red]{summary.findings} finding{'s' if summary.findings != 1 else ''}[/]" if summary.findings
                else "[bold green]no findings[/]")
        con.print(
            head
            + (f" (+ {summary.notes} note{'s' if summary.notes != 1 else ''})" if summary.notes else "")
            + f" in {summary.targets} target{'s' if summary.targets != 1 else ''}"
            + (f" · {held} held in removable history" if has_history else "")
        )
    else:
        con.print(f"[bold green]no findings[/] in {len(report.targets)} target{'s' if len(report.targets) != 1 else ''}")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _history_cell(v) -> str:
    if v is None or v.status is Status.UNKNOWN:
        return "?"
    if v.status is Status.REDUCED:
        return "[green]reduced[/]"
    if v.verdict.removable:
        return f"[bold red]full: {v.verdict}[/]"
    if v.verdict is Verdict.ZERO_FED:
        return "[bold red]full: zero-fed tape[/]"
    if v.verdict is Verdict.TERMS:
        return "[bold red]full: per-step terms[/]"
    if v.verdict is Verdict.FOLDED:
        return "[bold red]full: only reduced[/]"
    if v.verdict is Verdict.INHERENT:
        return "[yellow]full: mit_mot[/]"
    return "[yellow]full: needed[/]"


def render_error(error, out, color=None) -> None:
    from rich.markup import escape

    from scanprobe.records import Site

    con = _console(out, color)
    con.print(f"[bold red]error:[/] {escape(error.message)}")
    for fr in error.frames[-3:]:
        fr = Site(**fr) if isinstance(fr, dict) else fr
        con.print(f"  at {escape(fr.short())} in {escape(fr.function or '?')}: [dim]{escape(fr.code)}[/]")
    if error.hint:
        con.print(f"[yellow]hint:[/] {escape(error.hint)}")

