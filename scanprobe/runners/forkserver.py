"""A fork server: one process that imports the backend once and forks each command's child from it.

Every command runs the user's module in a child process (``runners.supervise``). Started with
``exec``, each child imports numpy, scanprobe and the backend again: 0.4 s of CPU on PyTensor 3,
1-1.3 s on Theano 1.0.5, Aesara 2.9 and PyTensor 2.38. A process that runs many commands (the
test suite: hundreds per backend version) can start them from a server that did that once. It is
opt-in: ``SCANPROBE_FORK_SERVER=1`` in the environment of the process that runs the commands (the
test suite sets it: tests/conftest.py; a user's single command gains nothing from it).

What a forked child gets is what an ``exec``'d one gets: a session and process group of its own,
stdin on ``/dev/null``, stdout and stderr in the run's log file, the environment, working folder
and ``sys.path[0]`` of the request, Python's default signal handlers, a fresh numpy seed, and the
same ``child.main``; the interpreter's exit (threads joined, ``atexit`` handlers) as ``python -m``
would do it. What differs: the modules the server imported are imported already, and
``/proc/PID/environ`` of the child (and of what it forks without ``exec``) shows the server's
environment, whose ``SCANPROBE_RUN`` mark is the server's own (``ServerChild.marks``: the
supervisor kills what carries either mark, the server excepted).

The server is started for one backend and one import-time environment (``_import_env``: the
variables a backend, numpy or Python read at import); a request whose environment differs in
those starts another server (``server_for``), so a flag set for one run is never ignored. It
serves one client (the process that started it), one request at a time, and exits when the
client closes its pipe (the client's exit, however it ends).

Protocol (JSON lines): the client writes ``{"spec", "env", "cwd", "log"}``; the server answers
``{"pid"}`` once the child has its own session, then ``{"exit": pid, "code"}`` when it ends
(``code`` negative for a signal, as ``subprocess`` gives it).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

from scanprobe.runners.exits import REAL_EXIT, die_with_parent

#: environment variables read at import (by Python, numpy, a backend, numba, JAX, BLAS): a
#: request differing in one of these is served by another server
_IMPORT_PREFIXES = ("THEANO", "PYTENSOR", "AESARA", "NUMBA_", "JAX_", "XLA_", "PYTHON", "OMP_", "MKL_",
                    "OPENBLAS_", "LD_", "CUDA", "NPY_", "NUMPY_")
_IMPORT_NAMES = ("HOME", "TMPDIR", "PATH", "CC", "CXX")


def _import_env(env: dict) -> tuple:
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(_IMPORT_PREFIXES) or k in _IMPORT_NAMES))


def enabled() -> bool:
    return os.environ.get("SCANPROBE_FORK_SERVER", "") not in ("", "0")


# ---------------------------------------------------------------------------- the client side

class ServerChild:
    """A child forked by the server: what ``supervise`` uses of ``subprocess.Popen``."""

    def __init__(self, server: "Server", pid: int):
        self.server = server
        self.pid = pid
        self.returncode = None
        #: the marks (``RUN_MARK`` values) a process of this run may carry besides the run's own
        self.marks = (server.token,)
        self.spared = {server.proc.pid}

    def poll(self):
        if self.returncode is None:
            self.server.read(0)
            self.returncode = self.server.exits.pop(self.pid, None)
        return self.returncode

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if not self.server.alive():  # the server died: the child was reparented and killed
                self.returncode = -signal.SIGKILL
                break
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("forked child", timeout)
            self.server.read(0.05)
        return self.returncode


class Server:
    def __init__(self, backend: str, env: dict):
        from scanprobe.runners.supervise import RUN_MARK

        self.token = f"{os.getpid()}-server-{os.urandom(6).hex()}"
        env = dict(env)
        env[RUN_MARK] = self.token
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "scanprobe.runners.forkserver", backend],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
        )
        self.exits: dict[int, int] = {}
        self._buf = b""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def read(self, timeout: float) -> list[dict]:
        """Messages the server sent within ``timeout`` (exits are kept in ``self.exits``)."""
        out = []
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                return out
            self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            msg = json.loads(line)
            if "exit" in msg:
                self.exits[msg["exit"]] = msg["code"]
            else:
                out.append(msg)
        return out

    def start(self, spec: str, env: dict, cwd: str, log: str) -> ServerChild | None:
        """Fork a child running ``child.main(spec)``; None if the server is gone (the caller
        starts the child with exec). A server that has not answered within the import budget
        is killed first, so that the request is never run twice."""
        from scanprobe.runners.supervise import IMPORT_BUDGET_S

        try:
            self.proc.stdin.write((json.dumps({"spec": spec, "env": env, "cwd": cwd, "log": log}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return None
        deadline = time.monotonic() + IMPORT_BUDGET_S
        while time.monotonic() < deadline and self.alive():
            for msg in self.read(0.1):
                if "pid" in msg:
                    return ServerChild(self, msg["pid"])
        self.kill()
        return None

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()


_servers: dict[tuple, Server] = {}
#: servers kept at once (one per backend and import-time environment; the oldest is closed)
MAX_SERVERS = 2


def server_for(backend: str, env: dict) -> Server | None:
    key = (backend, _import_env(env))
    server = _servers.get(key)
    if server is not None and not server.alive():
        _servers.pop(key)
        server = None
    if server is None:
        while len(_servers) >= MAX_SERVERS:
            _servers.pop(next(iter(_servers))).close()
        server = _servers[key] = Server(backend, env)
    return server


# ---------------------------------------------------------------------------- the server side

def _serve(backend: str) -> int:
    import numpy as np

    import scanprobe.inputs  # noqa: F401 - what every child imports, imported once here
    import scanprobe.pipeline  # noqa: F401
    import scanprobe.runners.child  # noqa: F401
    from scanprobe.backends import get_backend

    if backend:
        try:
            adapter = get_backend(backend)
            adapter.load([])
            adapter.warm_compile_cache()
        except Exception:  # noqa: BLE001 - the child imports it again and reports the error
            pass
    requests = os.fdopen(os.dup(0), "rb", buffering=0)
    answers = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # nothing but answers on the pipe
    buf = b""
    children = set()
    while True:
        ready, _, _ = select.select([requests], [], [], 0.05)
        for pid in list(children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                children.discard(pid)
                continue
            if done:
                children.discard(pid)
                code = os.waitstatus_to_exitcode(status)
                answers.write((json.dumps({"exit": pid, "code": code}) + "\n").encode())
        if not ready:
            continue
        chunk = requests.read(65536)
        if not chunk:  # the client is gone
            return 0
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            ready_r, ready_w = os.pipe()
            server = os.getpid()
            pid = os.fork()
            if pid == 0:
                os.close(ready_r)
                die_with_parent(server)  # the server exits when its client does, however that ends
                try:
                    _child(req, requests, answers, devnull, ready_w, np, scanprobe.runners.child)
                finally:
                    REAL_EXIT(70)  # never back into the server's loop
            os.close(ready_w)
            os.read(ready_r, 1)  # the child has its session: its pid names its process group
            os.close(ready_r)
            children.add(pid)
            answers.write((json.dumps({"pid": pid}) + "\n").encode())


def _child(req, requests, answers, devnull, ready_w, np, child):
    os.setsid()
    requests.close()
    answers.close()
    log = os.open(req["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(devnull)
    os.write(ready_w, b"1")
    os.close(ready_w)
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    sys.path[0] = os.getcwd()
    np.random.seed()
    sys.argv = [child.__file__, req["spec"]]
    code = 0
    try:
        code = _exit_code(child.main(req["spec"]))
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001 - as the interpreter would print it
        import traceback

        traceback.print_exc()
        code = 1
    code = _interpreter_exit(code)
    REAL_EXIT(code)  # the child patched os._exit (runners.exits): user code cannot end it


def _exit_code(value) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def _interpreter_exit(code: int) -> int:
    """What Python does at exit: join non-daemon threads, run atexit handlers, flush."""
    import atexit

    try:
        shutdown = getattr(threading, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        atexit._run_exitfuncs()
    except SystemExit as exc:
        code = _exit_code(exc.code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    return code


if __name__ == "__main__":
    sys.exit(_serve(sys.argv[1]))
