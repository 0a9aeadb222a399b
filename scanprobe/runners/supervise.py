"""Run the profiling child under a memory limit and a timeout; report what happened."""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys
import tempfile
import time

from scanprobe.runners.exits import SUPERVISOR
from scanprobe.runners.memory import rss_bytes
from scanprobe.runners.messages import ChildResult, ChildSpec, Exit, KilledFor, read_report

#: What the parent relays of the child's output (the user's prints, the backend's warnings)
OUTPUT_KEPT = 64 * 1024


def run_child(spec: ChildSpec, timeout: float, memory_limit: int | None, on_step=None,
              load_timeout: float = 600) -> ChildResult:
    """Start ``scanprobe.runners.child``; kill it when a run of the user's function passes
    ``timeout`` (counted from the start of that target's calls, which the child reports), when
    loading, compiling and analysing pass ``load_timeout``, or above ``memory_limit`` RSS.

    The child runs in its own process group and session with stdin closed and its output in a
    file: it cannot read the terminal, write to scanprobe's stdout, or hold scanprobe's pipes.
    Whatever way it ends, it and every process it started are killed and reaped
    (``_kill_all``). Returns the child's ``ChildResult`` with its ``Exit`` (and, for
    ``Action.INSPECT``, the ``Report`` it sent). The user's code never runs in this process.
    """
    with tempfile.TemporaryDirectory(prefix="scanprobe-") as tmp:
        spec = dataclasses.replace(spec, result=os.path.join(tmp, "result.json"),
                                   report=os.path.join(tmp, "report.json"), timeout=timeout)
        spec_path = os.path.join(tmp, "spec.json")
        spec.write(spec_path)
        log_path = os.path.join(tmp, "child.log")
        token = f"{os.getpid()}-{os.urandom(6).hex()}"
        with open(log_path, "w") as log:
            env = dict(os.environ)
            env[RUN_MARK] = token  # inherited by whatever the child starts: found and killed at the end
            env[SUPERVISOR] = str(os.getpid())  # the child dies with this process (exits.die_with_parent)
            # Theano 1.0.5 keys the C module of an op with params (DimShuffle's) by Python's hash of
            # a string, which differs in every process: each run compiled it again (~1 s of gcc) and
            # left one more directory in the compile cache for every later start to read. A fixed
            # seed (unless the user set one) gives the same key, so the module is reused.
            env.setdefault("PYTHONHASHSEED", "0")
            if spec.device == "cuda":
                env.setdefault("JAX_PLATFORMS", "cuda")
            proc = _forked(spec, env, spec_path, log_path) or subprocess.Popen(
                [sys.executable, "-m", "scanprobe.runners.child", spec_path],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            t0 = time.monotonic()
            killed_for, peak = None, 0
            try:
                killed_for, peak = _supervise(proc, spec, timeout, memory_limit, load_timeout, on_step, t0)
            finally:  # an exception here (Ctrl-C, SIGTERM) too: the child and everything it started
                _kill_all(proc, token)  # end with scanprobe, and are reaped
        data = ChildResult.read(spec.result)
        data.analysis = read_report(spec.report)
        if killed_for is None and data.overran_s is not None:
            killed_for = KilledFor.TIMEOUT
        with open(log_path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - OUTPUT_KEPT))
            log_text = fh.read().decode(errors="replace")
    code = proc.returncode
    return _finished(data, code, killed_for, peak, load_timeout, t0, log_text)


#: The environment variable that marks every process of one child run
RUN_MARK = "SCANPROBE_RUN"


def _forked(spec, env, spec_path, log_path):
    """The child forked by a fork server (``runners.forkserver``), where the environment asks for
    one (``SCANPROBE_FORK_SERVER=1``) and it is not a CUDA run (a device is never initialised
    before a fork); else None (started with exec)."""
    from scanprobe.runners import forkserver

    if not forkserver.enabled() or spec.device == "cuda":
        return None
    server = forkserver.server_for(_backend_guess(spec), env)
    return server.start(spec_path, env, os.getcwd(), log_path)


def _backend_guess(spec) -> str:
    """The backend the child will pick (the server imports it once), or "" where it cannot be
    told: only a guess, so any error (a file Python refuses to parse: ValueError for NUL bytes
    before 3.12) leaves it to the child, which reports it in contract."""
    from scanprobe.backends import resolve
    from scanprobe.pipeline import split_target

    try:
        return resolve(spec.backend, split_target(spec.spec)[0])[0].name
    except Exception:  # noqa: BLE001 - the child meets the same error and reports it
        return ""


def _kill_all(proc, token: str) -> None:
    """Kill the child, its process group (what it forked stays in it) and every process it
    started that left the group (``setsid``, ``start_new_session``, a double fork): those found
    below it in the process tree, and those carrying the run's mark in their environment. The
    child is reaped; the others are reaped by whoever they were reparented to."""
    below = _descendants(proc.pid)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    # a forked child (and what it forks) carries its server's mark, not the run's: see forkserver
    marks = (token, *getattr(proc, "marks", ()))
    spared = {os.getpid(), *getattr(proc, "spared", ())}
    for _ in range(20):  # until no marked process is left (one may fork while the others die)
        left = (below | _marked(marks)) - spared
        below = set()
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - a kill that did not take
        pass


def _processes():
    """(pid, parent pid) of every process this machine's /proc shows (none where there is no /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (command) "
        if len(fields) > 1:
            yield int(name), int(fields[1])


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` in the process tree."""
    children: dict[int, list[int]] = {}
    for p, parent in _processes():
        children.setdefault(parent, []).append(p)
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def _marked(tokens) -> set[int]:
    """Live processes whose environment carries one of these marks."""
    marks = {f"{RUN_MARK}={token}".encode() for token in tokens}
    out = set()
    for pid, _ in _processes():
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if marks.intersection(fh.read().split(b"\0")):
                    out.add(pid)
        except OSError:
            continue
    return out


#: What loading may add to the child's RSS beyond --memory-limit (the backend's import, its
#: compiler, the user's graph built and optimized): an import that allocates more is stopped.
LOAD_ALLOWANCE = 2 * 2**30


def _supervise(proc, spec, timeout, memory_limit, load_timeout, on_step, t0):
    """Poll the child until it ends or passes a limit: (what it was killed for or None, peak RSS)."""
    killed_for, peak, step, start_rss = None, 0, None, None
    current = ChildResult()
    # the loading budget's clock: from the start while loading, then per step (a new step
    # restarts it), never counting the user's calls
    clock, ran_at_clock, clocked_step = t0, 0.0, None
    while proc.poll() is None:
        rss = rss_bytes(proc.pid) or 0
        peak = max(peak, rss)
        start_rss = rss if start_rss is None and rss else start_rss
        current = ChildResult.read(spec.result, current)
        if current.loaded and current.step != clocked_step:
            clock, ran_at_clock, clocked_step = time.monotonic(), current.ran_s, current.step
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
        elif running_since is None and _loading_over(current, clock, ran_at_clock, t0, load_timeout):
            killed_for = KilledFor.LOAD_TIMEOUT
        if killed_for:  # run_child kills it and all it started
            break
        if on_step is not None and current.step and current.step != step:
            step = current.step
            on_step(step)
        time.sleep(0.02)
    return killed_for, peak


#: the backend's import in the child, before the user's module runs: scanprobe's own work, not
#: held to --timeout (a 3 s timeout must not fail on a busy machine's slow import), but bounded
IMPORT_BUDGET_S = 600.0


def _loading_over(current, clock, ran_at_clock, t0, load_timeout) -> bool:
    """Whether loading (or, once loaded, the current step outside the calls) passed its budget."""
    if current.loaded:
        return time.monotonic() - clock - (current.ran_s - ran_at_clock) > load_timeout
    if current.module_since is None:
        return time.monotonic() - t0 > max(load_timeout, IMPORT_BUDGET_S)
    return time.time() - current.module_since - current.ran_s > load_timeout


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
    data.output = log_text
    return data
