"""The progress a command shows on stderr while it compiles and runs (``scanprobe.cli``)."""

from __future__ import annotations

import sys


class Progress:
    """Progress on stderr: the step that runs and how long it has run.

    On a terminal, a transient spinner with the step and its elapsed seconds. Elsewhere (a pipe, a
    CI log), one line per step that runs longer than ``QUIET_S`` seconds, printed when it passes
    them: ``scanprobe: running model.py (still running after 5 s)``. Quick steps print nothing,
    so short commands stay quiet. Lines start with ``scanprobe:`` (tools filtering stderr can
    tell them from errors, which start with ``error:``).
    """

    QUIET_S = 5.0

    def __init__(self, tty: bool):
        import threading

        self.tty = tty
        self._status = None
        self._text = "starting"
        self._since = 0.0
        self._timer = None
        self._lock = threading.Lock()

    def __enter__(self):
        import time

        self._since = time.monotonic()
        if self.tty:
            from rich.console import Console

            self._status = Console(stderr=True).status(Elapsed(self))
            self._status.__enter__()
        else:
            self._arm()
        return self

    def step(self, text: str):
        import time

        with self._lock:
            self._text, self._since = text, time.monotonic()
        if not self.tty:
            self._arm()

    def _arm(self):
        import threading

        if self._timer is not None:
            self._timer.cancel()
        text = self._text
        self._timer = threading.Timer(self.QUIET_S, self._announce, args=(text,))
        self._timer.daemon = True
        self._timer.start()

    def _announce(self, text):
        with self._lock:
            if text != self._text:
                return
        try:
            sys.stderr.write(f"scanprobe: {text} (still running after {self.QUIET_S:g} s)\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    def elapsed_text(self) -> str:
        import time

        with self._lock:
            return f"{self._text} · {time.monotonic() - self._since:.0f} s"

    def __exit__(self, *exc):
        if self._timer is not None:
            self._timer.cancel()
        if self._status is not None:
            self._status.__exit__(*exc)


class Elapsed:
    """The spinner's text, read again at every refresh (the elapsed seconds move)."""

    def __init__(self, progress):
        self.progress = progress

    def __rich__(self):
        return self.progress.elapsed_text()
