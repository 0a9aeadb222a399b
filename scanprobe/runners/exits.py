"""Only scanprobe decides how its processes end: user code's ``os._exit`` raises instead."""

from __future__ import annotations

import os

#: os._exit as it was when scanprobe started: how scanprobe itself ends a process (a fork of the
#: user's), whatever is patched
REAL_EXIT = os._exit


class ExitRefused(BaseException):
    """os._exit called from user code outside its import (a thread, an atexit handler)."""


def _refuse_exit(code=0):
    raise ExitRefused(code)


def guard_exits(permanent: bool):
    """Only scanprobe decides its exit code: ``os._exit`` (and ``posix._exit``) from user code (a
    thread it started, an atexit handler it registered) raises in that thread instead of ending
    the process. In a scanprobe process this holds to the end (atexit handlers run at shutdown);
    in a caller's process (tests) it is undone after the command. Returns the undo."""
    import posix

    saved = (os._exit, posix._exit)
    os._exit = posix._exit = _refuse_exit

    def restore():
        if not permanent:
            os._exit, posix._exit = saved
    return restore
