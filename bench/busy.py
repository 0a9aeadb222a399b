"""Run a command beside N CPU-bound processes (a busy machine), and stop them after.

Usage: python3 bench/busy.py N -- COMMAND ...
e.g.   python3 bench/busy.py 14 -- bash .ci/run
       python3 bench/busy.py 14 -- .venv-theano/bin/python -m pytest tests/test_profile.py

The busy processes are plain Python loops, each in a session of its own, started before the
command and killed (their process groups) when it ends, however it ends (an exception, Ctrl-C,
SIGTERM, SIGHUP); the command runs in a process group of its own, stopped with them.
Prints "busy N: exit CODE in S s" last; exits with the command's exit code. Issue 29 asks that the
suite pass like this: no test may depend on how fast the machine is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time


@contextlib.contextmanager
def busy_loops(n: int):
    """N CPU-bound processes, each in a session of its own, killed (their groups) on leaving."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True,
                              stdin=subprocess.DEVNULL) for _ in range(n)]
    try:
        yield loops
    finally:
        for p in loops:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def _stop(proc) -> None:
    """SIGTERM to the command's process group if it still runs, SIGKILL 30 s later."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            pass


def main(argv: list[str]) -> int:
    if "--" not in argv or not argv[0].isdigit():
        print(__doc__, file=sys.stderr)
        return 2
    n = int(argv[0])
    command = argv[argv.index("--") + 1:]
    t0 = time.monotonic()
    code = 2
    for sig in (signal.SIGTERM, signal.SIGHUP):  # the loops are stopped however this ends
        signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
    with busy_loops(n):
        # the command in a group of its own, so that all of it is stopped too (killing only its
        # first process, as subprocess.call does, left `scripts/test` starting its next leg)
        proc = subprocess.Popen(command, start_new_session=True)
        try:
            code = proc.wait()
        finally:
            _stop(proc)
    print(f"busy {n}: exit {code} in {time.monotonic() - t0:.0f} s", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
