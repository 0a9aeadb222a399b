"""``scanprobe inspect``: load a module, compile its targets once, report every scan buffer.

The module runs in a supervised child (``runners``), as for ``profile`` and ``fix``: this
process starts it, holds it to ``--timeout`` and reads back the report; whatever the module does
(exits, forks, writes to file descriptor 1, loops in C) cannot decide this process's output or
exit code, and nothing it started outlives the command.
"""

from __future__ import annotations

import sys

#: --timeout when none is given (the CLI's default)
LOAD_TIMEOUT = 600.0


def run_inspect(spec, backend_name=None, mode=None, inputs=(), include_library=False, progress=None,
                settings=None, pictures=False, full_formulas=False, timeout=None):
    """Analyse every target of a user module in a child process; returns a ``results.Report``."""
    from scanprobe.runners.messages import Action, ChildSpec
    from scanprobe.runners.supervise import run_child

    child_spec = ChildSpec(spec=spec, action=Action.INSPECT, backend=backend_name, mode=mode, inputs=list(inputs),
                           settings=settings, include_library=include_library, pictures=pictures,
                           full_formulas=full_formulas)
    load_timeout = timeout or LOAD_TIMEOUT
    data = run_child(child_spec, timeout=load_timeout, memory_limit=None,
                     on_step=progress.step if progress else None, load_timeout=load_timeout)
    relay_output(data.output)
    if data.analysis is not None and data.error is None:
        return data.analysis
    raise analysis_error(data, load_timeout)


def relay_output(text: str) -> None:
    """What the user's module (and the backend) printed in the child, on scanprobe's stderr."""
    if text.strip():
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()


def analysis_error(data, load_timeout: float):
    """The ``ScanprobeError`` for a child that did not send its analysis (``messages.ChildResult``)."""
    from scanprobe import errors
    from scanprobe.records import Site
    from scanprobe.results import from_plain
    from scanprobe.runners.messages import Exit, KilledFor

    ex = data.exit or Exit()
    step = data.step
    if ex.killed_for == KilledFor.LOAD_TIMEOUT:
        return errors.ScanprobeError(
            f"stopped while {step}: still running after --timeout {load_timeout:g} s",
            hint="an endless loop or a long computation at import? code under if __name__ == '__main__': does "
            "not run; raise --timeout if the module needs longer",
        )
    if data.error is not None:
        cls = getattr(errors, data.error_type, None)
        if not (isinstance(cls, type) and issubclass(cls, errors.ScanprobeError)):
            cls = errors.ScanprobeError
        frames = [from_plain(Site, f) if isinstance(f, dict) else f for f in data.error.frames]
        hint = data.error.hint or "this is a scanprobe bug: rerun with SCANPROBE_DEBUG=1 and report it"
        return cls(data.error.message, hint=hint, frames=frames)
    if ex.signal:
        how = f"was killed by signal {ex.signal}"
        hint = "a crash in compiled code, or a signal sent by your module: run it with python to see"
    else:
        how = f"exited with code {ex.code} before it reported"
        hint = ("your module (or a thread or atexit handler it started) ended the process it was analysed in: "
                "move that code under if __name__ == '__main__':")
    return errors.ScanprobeError(f"the analysis {how} (while {step}): nothing was analysed", hint=hint)
