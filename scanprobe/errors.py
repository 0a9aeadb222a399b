"""Errors that end a command with a one-line message, a hint and an exit code."""

from __future__ import annotations


class ScanprobeError(Exception):
    """A problem the user can fix: one line of message, one line of hint, exit code 2."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None, frames: list | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        #: The user's own traceback frames (``records.Site``), innermost last.
        self.frames = list(frames or [])


class BackendUnavailable(ScanprobeError):
    """The requested backend cannot be imported in this environment."""


class UserCodeError(ScanprobeError):
    """The user's module raised while scanprobe ran it."""


class NothingCompiled(ScanprobeError):
    """The module ran and compiled no function (an error for inspect, a skip for check)."""


class Timeout(BaseException):
    """Raised in the main thread when loading or analysing a module passes ``--timeout``.

    A BaseException, so that the user's own ``except Exception`` does not swallow it."""


def failure_text(exc: BaseException) -> str:
    """``TypeError: the first line of its message`` (for a note that says why something failed)."""
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"
