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


#: The environment variable that tells an exec'd child its supervisor's pid (``die_with_parent``)
SUPERVISOR = "SCANPROBE_SUPERVISOR"


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process (SIGKILL) when its parent ends, however it ends: a
    supervisor killed with SIGKILL or by the out-of-memory killer runs no clean-up of its own, and
    the child, in a session of its own, would otherwise run on (a user's endless loop: forever).
    Linux only (``prctl(PR_SET_PDEATHSIG)``; elsewhere nothing). ``parent`` is the pid the
    parent had: one already gone before the call (the child reparented) ends this process now.
    What the child itself started in sessions of their own is not reached this way; the
    supervisor's own ending (exit, Ctrl-C, SIGTERM, SIGHUP) kills those (``supervise._kill_all``)."""
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) != 0:
            return
    except (OSError, AttributeError):  # no libc prctl to call: nothing more to do
        return
    if os.getppid() != parent:
        REAL_EXIT(137)
