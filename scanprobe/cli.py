"""The command line. Commands parse options, call a command function, pick a reporter.

Nothing heavy is imported at start-up: ``scanprobe --help`` answers without importing a backend,
numpy or rich. Every command ends the same way: its typed result rendered by the reporter of
``--format`` (``scanprobe.report``), an error as one line and a hint on stderr, and the exit code
of the result's summary (0 clean, 1 findings, 2 error).
"""

from __future__ import annotations

import os
import sys

import click

from scanprobe.backends import NAMES as BACKENDS
from scanprobe.contracts import __version__
from scanprobe.entry import format_in, handle_stop_signals, interrupted, interruption
from scanprobe.progress import Progress
from scanprobe.report import formats


def _internal(exc):
    from scanprobe.errors import ScanprobeError

    return ScanprobeError(
        f"internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
        hint="this is a scanprobe bug: rerun with SCANPROBE_DEBUG=1 for the traceback and report it",
    )


def _run(work, fmt="text", color=None):
    """Run a command function: a ScanprobeError or a bug of ours ends with one line and exit 2."""
    import signal

    from scanprobe.errors import ScanprobeError
    from scanprobe.report import render_error

    previous = handle_stop_signals()  # SIGTERM, SIGHUP (none outside the main thread)
    try:
        with Progress(sys.stderr.isatty()) as progress:
            return work(progress)
    except ScanprobeError as err:
        render_error(err, fmt, sys.stdout, sys.stderr, color)
        sys.exit(err.exit_code)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: an error (2), not "findings" (1)
        interrupted(exc, fmt, color)
    except Exception as exc:  # a bug of scanprobe's: one line, exit 2, traceback on request
        wrapped = interruption(exc)  # a Ctrl-C that Python wrapped in an error of its own
        if wrapped is not None:
            interrupted(wrapped, fmt, color)
        if os.environ.get("SCANPROBE_DEBUG"):
            raise
        err = _internal(exc)
        render_error(err, fmt, sys.stdout, sys.stderr, color)
        sys.exit(err.exit_code)
    finally:
        # an interruption in the command's own process set SIGTERM and SIGHUP to be ignored while
        # its error is written and the process exits: that stays (restoring a handler would let a
        # late signal raise again during the exit)
        for sig, handler in previous.items():
            if signal.getsignal(sig) is not signal.SIG_IGN:
                signal.signal(sig, handler)


def _finish(command, result, fmt, color, exit_code):
    """Render a result, report a run's error on stderr, and exit with the result's code."""
    from scanprobe.report import render
    from scanprobe.report.terminal import render_error

    render(command, fmt, result, sys.stdout, color)
    error = getattr(result, "error", None)
    if error is not None:
        render_error(error, sys.stderr, color=color)
    sys.exit(exit_code)


def _size(option: str, text: str | None):
    """A size option's bytes (None when not given); a bad size is an error, never a budget off."""
    if text is None:
        return None
    from scanprobe.analysis.sizes import parse_bytes
    from scanprobe.errors import ScanprobeError

    try:
        return parse_bytes(text)
    except ValueError:
        raise ScanprobeError(f"bad {option} {text!r}: a size is a positive number of bytes",
                             hint="write e.g. 512MiB, 8GiB or 2GB (leave the option out for no budget)") from None


class _Seconds(click.ParamType):
    """A positive, finite number of seconds (nan and inf would turn a timeout off)."""

    name = "SECONDS"

    def convert(self, value, param, ctx):
        import math

        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if not math.isfinite(seconds) or seconds <= 0:
            self.fail(f"{value!r}: a timeout is a positive, finite number of seconds", param, ctx)
        return seconds


def _codes(option: str, codes) -> list[str]:
    """Rule codes (or prefixes) of --select/--ignore, each naming at least one rule."""
    from scanprobe.errors import ScanprobeError
    from scanprobe.rules import RULES

    known = [r.code for r in RULES]
    for c in codes:
        if not any(k.startswith(c.upper()) for k in known) or not c.strip():
            raise ScanprobeError(f"{option} {c!r}: no rule has that code", hint=f"rules: {', '.join(known)} (scanprobe rules)")
    return list(codes)


class _Main(click.Group):
    """The command group: click's own usage errors (a bad choice, a missing argument) end like
    every other error, one line and a hint on stderr (and the JSON error with --format json), exit 2."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        from scanprobe.errors import ScanprobeError
        from scanprobe.report import render_error

        argv = list(sys.argv[1:] if args is None else args)
        from scanprobe.runners.exits import guard_exits

        restore = guard_exits(permanent=args is None)
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.UsageError as exc:
            command = exc.ctx.command_path if exc.ctx is not None else "scanprobe"
            err = ScanprobeError(exc.format_message(), hint=f"see `{command} --help`")
            render_error(err, format_in(argv), sys.stdout, sys.stderr, None)
            sys.exit(err.exit_code)
        except click.exceptions.Abort as exc:  # click's form of a Ctrl-C (or SIGTERM) outside _run
            interrupted(interruption(exc) or KeyboardInterrupt(), format_in(argv))
        except KeyboardInterrupt as exc:
            interrupted(exc, format_in(argv))
        except Exception as exc:
            stop = interruption(exc)  # wrapped by Python (a command's own imports)
            if stop is None:
                raise
            interrupted(stop, format_in(argv))
        finally:
            restore()
        sys.exit(rv if isinstance(rv, int) else 0)


_backend = click.option("--backend", type=click.Choice(BACKENDS), help="Default: what FILE imports.")
_mode = click.option("--mode", help="Compile targets in this mode (FAST_RUN, FAST_COMPILE, ...) instead of their own.")
_inputs = click.option(
    "--input", "inputs", multiple=True, metavar="NAME=SHAPE[:DTYPE]",
    help="Shape of an explicit input, e.g. x=2000x3x32x32:float32; a scalar's value, e.g. n=1024.",
)
_color = click.option("--color/--no-color", default=None, help="Default: colour on a terminal only.")
_load_timeout = click.option(
    "--timeout", "load_timeout", type=_Seconds(), default=600, show_default=True,
    help="Seconds for running the module, compiling and analysing (nothing of yours is run beyond the import).")


def _format(command):
    return click.option("--format", "fmt", type=click.Choice(formats(command)), default="text", show_default=True)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="scanprobe")
def main():
    """Find scan buffers that keep every step in Theano / PyTensor / Aesara graphs, and say why.

    Exit codes: 0 no findings, 1 findings, 2 error.
    """


@main.command("inspect")
@click.argument("spec", metavar="FILE[:TARGET]")
@_backend
@_mode
@_inputs
@_format("inspect")
@click.option("--include-library", is_flag=True, help="Also analyse functions compiled inside libraries.")
@_color
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--html", "html_path", metavar="PATH", help="Also write a self-contained HTML report (graph included).")
@click.option("--full-formulas", is_flag=True,
              help="Keep symbolic sizes whole up to a million characters (long ones are otherwise shown as <size from ...>).")
@_load_timeout
def inspect_cmd(spec, backend, mode, inputs, fmt, include_library, color, exit_zero, html_path, full_formulas,
                load_timeout):
    """Report every scan buffer of the functions FILE compiles, predicted without running them.

    FILE runs as an import (code under `if __name__ == "__main__":` does not); each function it
    compiles is optimized once, in its own mode or --mode, and never linked or run.
    TARGET is the name the function is bound to in FILE, or the line of its compile call.
    """
    from scanprobe.commands.inspect import run_inspect

    def work(progress):
        html_file = None
        if html_path is not None:  # checked and resolved before the module runs (it may chdir)
            from scanprobe.report.files import output_path

            html_file = output_path(html_path, "--html", spec, (".html", ".htm"))
        report = run_inspect(spec, backend, mode, inputs, include_library, progress, pictures=bool(html_path),
                             full_formulas=full_formulas, timeout=load_timeout)
        if html_file is not None:
            from scanprobe.report import html

            progress.step("writing the HTML report")
            html.write(report, html_file)
        return report

    report = _run(work, fmt, color)
    _finish("inspect", report, fmt, color, 0 if exit_zero else report.exit_code)


@main.command("profile")
@click.argument("spec", metavar="FILE[:TARGET]")
@_backend
@_mode
@_inputs
@click.option("--runs", type=click.IntRange(1), default=3, show_default=True, help="Timed calls after a warm-up.")
@click.option("--timeout", type=_Seconds(), default=600, show_default=True,
              help="Seconds for the calls of one target's function (loading and compiling are not counted: "
                   "they stop after 600 s of their own).")
@click.option("--memory-limit", metavar="SIZE", help="e.g. 8GiB: refuse to start above it (predicted), stop above it (measured).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True)
@click.option("--no-node-profile", is_flag=True, help="Skip the profiled twin run (per-node and per-buffer figures).")
@_format("profile")
@_color
def profile_cmd(spec, backend, mode, inputs, runs, timeout, memory_limit, device, no_node_profile, fmt, color):
    """Run FILE's targets in a child process: measured memory and time beside the prediction.

    Before running, the predicted peak (scan buffers + inputs) is compared with the memory
    available and --memory-limit; a target that would not fit is refused with both figures.
    A crash, a MemoryError, a hang past --timeout or memory past --memory-limit ends the child,
    not scanprobe: exit code 2 with the cause.
    """
    from scanprobe.commands.profile import run_profile

    def work(progress):
        limit = _size("--memory-limit", memory_limit)
        return run_profile(spec, backend, mode, inputs, runs, timeout, limit, device, not no_node_profile, progress)

    prof = _run(work, fmt, color)
    _finish("profile", prof, fmt, color, prof.summary.exit_code)


@main.command("check")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--max-buffer", metavar="SIZE", help="Budget for any one scan buffer (SP010), e.g. 512MiB.")
@click.option("--max-peak", metavar="SIZE", help="Budget for a function's scan buffers together (SP011), e.g. 8GiB.")
@click.option("--select", multiple=True, metavar="CODE", help="Only these rule codes (prefixes), e.g. SP001.")
@click.option("--ignore", multiple=True, metavar="CODE", help="Skip these rule codes (prefixes).")
@_backend
@click.option("--mode", help="Analyse in this mode instead of each function's own.")
@_inputs
@_format("check")
@click.option("--exit-zero", is_flag=True, default=None, help="Exit 0 even with findings.")
@click.option("--run", "run_too", is_flag=True, help="Also run each file's targets (in a child) and check measured peaks.")
@_load_timeout
def check_cmd(files, max_buffer, max_peak, select, ignore, backend, mode, inputs, fmt, exit_zero, run_too, load_timeout):
    """Check FILEs against the rules and budgets, statically (nothing is run): for CI.

    Settings come from [tool.scanprobe] in the nearest pyproject.toml (max-buffer, max-peak,
    select, ignore, exit-zero, mode, backend); options override them. Exit 1 on any finding,
    2 on an error in any file.
    """
    from pathlib import Path

    from scanprobe.commands.check import run_check
    from scanprobe.settings import load

    def work(progress):
        settings = load(Path.cwd())
        settings.max_buffer = _size("--max-buffer", max_buffer) or settings.max_buffer
        settings.max_peak = _size("--max-peak", max_peak) or settings.max_peak
        settings.select = _codes("--select", select) or settings.select
        settings.ignore = _codes("--ignore", ignore) or settings.ignore
        settings.backend = backend or settings.backend
        settings.mode = mode or settings.mode
        if exit_zero is not None:
            settings.exit_zero = exit_zero
        settings.run = run_too
        settings.timeout = load_timeout
        return run_check(files, settings, inputs, progress)

    result = _run(work, fmt)
    for e in result.errors:
        click.echo(f"error: {e.file}: {e.message}", err=True)
        if e.hint:
            click.echo(f"hint: {e.hint}", err=True)
    _finish("check", result, fmt, None, result.summary.exit_code)


@main.command("graph")
@click.argument("spec", metavar="FILE[:TARGET]")
@click.option("-o", "--output", required=True, metavar="PATH", help="Picture to write: .svg, .png or .dot.")
@_backend
@_mode
@_inputs
@_load_timeout
def graph_cmd(spec, output, backend, mode, inputs, load_timeout):
    """Draw a target's optimized graph: scans as clusters with their inner graphs, buffers
    labelled with their predicted bytes, removable full-history buffers (SP001) in red."""
    from scanprobe.commands.graph import run_graph

    def work(progress):
        from scanprobe.report.files import output_path

        path = output_path(output, "-o", spec, (".svg", ".png", ".dot"))  # before the module runs
        return run_graph(spec, str(path), backend, mode, inputs, progress, load_timeout)

    info = _run(work)
    click.echo(f"wrote {info['output']}: {info['target']}, {info['nodes']} nodes, {info['buffers']} scan buffers")


def _fix_help() -> str:
    """``fix --help``: the fixes listed from the fixer registry (fixes/registry.py)."""
    from scanprobe.fixes.registry import help_text

    return (
        "Apply every fix that applies to a finding and prove it: rerun original and fixed on the same "
        "inputs (in a child process), outputs compared, memory and time before and after.\n\n"
        "\b\nThe fixes:\n" + "\n".join(f"  {line}" for line in help_text().splitlines()) + "\n\n"
        "Your files are not changed: the report shows the code to write. Exit 0 when every finding is "
        "fixed and verified, 1 when a fix changed the outputs or a finding has no fix, 2 on an error."
    )


@main.command("fix", help=_fix_help())
@click.argument("spec", metavar="FILE[:TARGET]")
@_backend
@_mode
@_inputs
@click.option("--runs", type=click.IntRange(1), default=3, show_default=True)
@click.option("--timeout", type=_Seconds(), default=600, show_default=True,
              help="Seconds for the calls of one target's function, original or fixed (loading and compiling "
                   "are not counted: they stop after 600 s of their own).")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True,
              help="cuda: rerun both functions on the GPU (PyTensor's JAX linker).")
@click.option("--max-buffer", metavar="SIZE",
              help="Make every scan buffer fit SIZE (e.g. 4MiB): tapes and per-step gradient terms first, then "
                   "the history a gradient reads, checkpointed (SP010).")
@_format("fix")
@_color
def fix_cmd(spec, backend, mode, inputs, runs, timeout, device, max_buffer, fmt, color):
    from scanprobe.commands.fix import run_fix

    def work(progress):
        limit = _size("--max-buffer", max_buffer)
        return run_fix(spec, backend, mode, inputs, runs, timeout, progress, device, limit)

    res = _run(work, fmt, color)
    _finish("fix", res, fmt, color, res.summary.exit_code)


@main.command("rules")
@click.argument("code", required=False)
def rules_cmd(code):
    """List the rules, or show one rule's documentation (e.g. scanprobe rules SP001)."""
    from scanprobe.rules import RULES, by_code

    if code is None:
        width = max(len(r.name) for r in RULES)
        for r in RULES:
            fix = f" [fix: {r.fix_does.split(':')[0]}]" if r.fixer else ""
            click.echo(f"{r.code}  {r.name:{width}s}  {r.summary}{fix}")
        return
    rule = by_code(code)
    if rule is None:
        click.echo(f"error: no rule {code!r}", err=True)
        click.echo(f"hint: rules: {', '.join(r.code for r in RULES)}", err=True)
        sys.exit(2)
    click.echo(f"{rule.code} {rule.name}: {rule.summary}\n")
    for title, text in rule.sections().items():
        click.echo(f"## {title}\n{text}\n")
    click.echo(f"## scanprobe fix\n{rule.fix_does if rule.fixer else 'no automatic fix'}\n")
