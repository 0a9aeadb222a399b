"""Run the profiling child under a memory limit and a timeout; report what happened."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time

from scanprobe.runners.memory import rss_bytes
from scanprobe.runners.messages import ChildResult, ChildSpec, Exit, KilledFor


def run_child(spec: ChildSpec, timeout: float, memory_limit: int | None, on_step=None,
              load_timeout: float = 600) -> ChildResult:
    """Start ``scanprobe.runners.child``; kill it when a run of the user's function passes
    ``timeout`` (counted from the start of that target's calls, which the child reports), when
    loading, compiling and analysing pass ``load_timeout``, or above ``memory_limit`` RSS.

    Returns the child's ``ChildResult`` with its ``Exit``. The user's code never runs in this
    process.
    """
    with tempfile.TemporaryDirectory(prefix="scanprobe-") as tmp:
        spec = dataclasses.replace(spec, result=os.path.join(tmp, "result.json"), timeout=timeout)
        spec_path = os.path.join(tmp, "spec.json")
        spec.write(spec_path)
        log_path = os.path.join(tmp, "child.log")
        with open(log_path, "w") as log:
            env = dict(os.environ)
            if spec.device == "cuda":
                env.setdefault("JAX_PLATFORMS", "cuda")
            proc = subprocess.Popen(
                [sys.executable, "-m", "scanprobe.runners.child", spec_path],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            t0 = time.monotonic()
            killed_for, peak = None, 0
            try:
                killed_for, peak = _supervise(proc, spec, timeout, memory_limit, load_timeout, on_step, t0)
            finally:  # an exception here (Ctrl-C, SIGTERM) too: the child and everything it started
                _kill_group(proc)  # in its process group end with scanprobe, and are reaped
        data = ChildResult.read(spec.result)
        if killed_for is None and data.overran_s is not None:
            killed_for = KilledFor.TIMEOUT
        with open(log_path, errors="replace") as fh:
            log_text = fh.read()
    code = proc.returncode
    return _finished(data, code, killed_for, peak, load_timeout, t0, log_text)


def _kill_group(proc) -> None:
    """Kill the child's process group (what it forked stays in it) and reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - a kill that did not take
        pass


#: What loading may add to the child's RSS beyond --memory-limit (the backend's import, its
#: compiler, the user's graph built and optimized): an import that allocates more is stopped.
LOAD_ALLOWANCE = 2 * 2**30


def _supervise(proc, spec, timeout, memory_limit, load_timeout, on_step, t0):
    """Poll the child until it ends or passes a limit: (what it was killed for or None, peak RSS)."""
    killed_for, peak, step, start_rss = None, 0, None, None
    while proc.poll() is None:
        rss = rss_bytes(proc.pid) or 0
        peak = max(peak, rss)
        start_rss = rss if start_rss is None and rss else start_rss
        current = ChildResult.read(spec.result)
        # --memory-limit bounds what the run adds, counted from the child's level just
        # before it calls the target (the interpreter, backend and compile are not the run)
        baseline = current.rss_baseline
        running_since = current.running_since
        if memory_limit and baseline is not None and rss - baseline > memory_limit:
            killed_for = KilledFor.MEMORY
        elif memory_limit and baseline is None and start_rss and rss - start_rss > memory_limit + LOAD_ALLOWANCE:
            killed_for = KilledFor.LOAD_MEMORY  # loading: the module's import, compiling, analysing
        elif running_since is not None and time.time() - running_since > timeout:
            killed_for = KilledFor.TIMEOUT
        elif running_since is None and time.monotonic() - t0 - current.ran_s > load_timeout:
            killed_for = KilledFor.LOAD_TIMEOUT
        if killed_for:
            _kill_group(proc)
            break
        if on_step is not None and current.step and current.step != step:
            step = current.step
            on_step(step)
        time.sleep(0.02)
    return killed_for, peak


def _finished(data, code, killed_for, peak, load_timeout, t0, log_text) -> ChildResult:
    data.exit = Exit(
        code=code,
        signal=-code if code is not None and code < 0 and killed_for is None else None,
        killed_for=killed_for,
        peak_rss=peak,
        rss_baseline=data.rss_baseline,
        load_timeout=load_timeout,
        seconds=time.monotonic() - t0,
    )
    data.log_tail = log_text[-2000:]
    return data
