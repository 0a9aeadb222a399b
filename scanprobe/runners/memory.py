"""Memory figures of this machine and of a process (Linux /proc; no third-party package)."""

from __future__ import annotations

import os
import resource
import threading
import time


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping)."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def rss_bytes(pid: int | str = "self") -> int | None:
    """Resident set size of a process (VmRSS)."""
    try:
        with open(f"/proc/{pid}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def peak_rss_bytes() -> int:
    """This process's own peak resident set size.

    VmHWM (Linux) belongs to the process's memory map, which starts afresh at exec.
    ``getrusage(RUSAGE_SELF).ru_maxrss`` does not: Linux keeps the high-water mark of the map
    exec replaced, so a child started from a large process reports the parent's size.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


class RssSampler:
    """Samples this process's RSS in a thread; ``peak`` is the highest figure seen."""

    def __init__(self, interval: float = 0.001):
        self.interval = interval
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            r = rss_bytes()
            if r is not None:
                self.peak = max(self.peak, r)
                self.samples += 1
            time.sleep(self.interval)

    def __enter__(self):
        self.peak = rss_bytes() or 0
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        r = rss_bytes()
        if r is not None:
            self.peak = max(self.peak, r)
