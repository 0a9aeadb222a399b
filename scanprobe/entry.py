"""The ``scanprobe`` command's entry point, and ``python -m scanprobe``'s.

A Ctrl-C, SIGTERM or SIGHUP (the terminal closed) at any moment once this module runs ends the
command as an interruption: one
line and a hint on stderr (the JSON error with ``--format json``), exit 2. That includes the
second or so (several on a busy machine) while the command line's own modules import, which
happens here, inside the handler, not before it. Nothing heavy is imported at this module's top.
"""

from __future__ import annotations

import sys

#: True in the scanprobe command's own process (main() ran): there, once interrupted, a second
#: Ctrl-C while the error is written is ignored (not in a process that calls the CLI in-process)
_OWN_PROCESS = False


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C: what runs in a child is killed, the command ends with exit 2."""


class HungUp(Terminated):
    """SIGHUP (the terminal or the ssh session closed), handled like SIGTERM."""


#: The signals that end a command like Ctrl-C does (where the platform has them)
STOP_SIGNALS = ("SIGTERM", "SIGHUP")


def on_sigterm(signum, frame):
    import signal

    raise HungUp() if signum == getattr(signal, "SIGHUP", None) else Terminated()


def handle_stop_signals() -> dict:
    """SIGTERM and SIGHUP raise (``on_sigterm``) in this thread; returns the handlers they had
    (none where this is not the main thread: they keep theirs)."""
    import signal

    previous = {}
    for name in STOP_SIGNALS:
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            previous[sig] = signal.signal(sig, on_sigterm)
        except ValueError:  # not the main thread
            return previous
    return previous


def interruption(exc):
    """The Ctrl-C or SIGTERM behind ``exc``, if any: Python wraps one raised inside some hooks (a
    class body's ``__set_name__`` while scanprobe's own modules import: a RuntimeError) in an error
    of its own."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def interrupted(exc, fmt, color=None):
    """End the command as interrupted: exit 2 (in the command's own process, a second Ctrl-C
    while this is said is ignored)."""
    import signal

    if _OWN_PROCESS:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            for name in STOP_SIGNALS:
                if hasattr(signal, name):
                    signal.signal(getattr(signal, name), signal.SIG_IGN)
        except ValueError:  # not the main thread
            pass
    from scanprobe.errors import ScanprobeError
    from scanprobe.report import render_error

    what = ("hung up (SIGHUP)" if isinstance(exc, HungUp) else
            "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted (Ctrl-C)")
    err = ScanprobeError(f"{what}: nothing was reported", hint="run the command again to finish it")
    try:
        render_error(err, fmt, sys.stdout, sys.stderr, color)
    except (OSError, ValueError):  # the terminal is gone (SIGHUP): the exit code still says it
        pass
    sys.exit(err.exit_code)


def format_in(argv) -> str:
    """The --format asked for on the command line ("text" when none or unreadable)."""
    for i, a in enumerate(argv):
        if a == "--format" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--format="):
            return a.split("=", 1)[1]
    return "text"


def main():
    global _OWN_PROCESS
    _OWN_PROCESS = True
    handle_stop_signals()
    try:
        from scanprobe.cli import main as command_line
    except BaseException as exc:  # only an interruption is handled here; the rest is raised again
        stop = interruption(exc)
        if stop is None:
            raise
        interrupted(stop, format_in(sys.argv[1:]))
    command_line()
