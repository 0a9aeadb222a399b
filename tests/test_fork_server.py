"""The fork server (scanprobe/runners/forkserver.py): a child forked from a process that imported
the backend once behaves as a child started with exec. Each case runs the same command both ways
(``SCANPROBE_FORK_SERVER=1`` and ``=0``, in this process: the server is this process's) and
compares what a user sees: the exit code, the report, the error, and that nothing the module
started outlives the command."""

from __future__ import annotations

import os
import re

import pytest

from conftest import FIXTURES, SAMPLES, scanprobe
from helpers import still_running

BOTH = [pytest.param("1", id="forked"), pytest.param("0", id="exec")]


def _buffers(report):
    return sorted((t["name"], s["name"], b["role"], b["index"], tuple(b["shape"]), b["dtype"], b["bytes"])
                  for t in report["targets"] for s in t["scans"] for b in s["buffers"])


def test_the_forked_child_reports_what_the_exec_child_reports():
    forked = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--format", "json", env={"SCANPROBE_FORK_SERVER": "1"})
    execd = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--format", "json", env={"SCANPROBE_FORK_SERVER": "0"})
    assert forked.rc == execd.rc and forked.rc in (0, 1), (forked, execd)
    a, b = forked.json(), execd.json()
    assert _buffers(a) and _buffers(a) == _buffers(b)
    assert [(f["code"], f["message"]) for f in a["findings"]] == [(f["code"], f["message"]) for f in b["findings"]]
    assert a["backend"] == b["backend"]


@pytest.mark.parametrize("fixture, mode", [
    ("bad_exits.py", ""), ("bad_raises.py", ""),
    ("exits_at_import.py", "posix"), ("exits_at_import.py", "atexit"), ("exits_at_import.py", "thread"),
])
@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_a_module_that_ends_early_is_the_same_error(fixture, mode):
    """sys.exit, an exception, posix._exit at import, os._exit from an atexit handler or a
    thread: the same exit code and message both ways (the forked child exits as Python would:
    threads joined, atexit handlers run, scanprobe's guard on os._exit kept)."""
    runs = [scanprobe("check", FIXTURES / fixture, "--format", "sarif", env={"EXIT_MODE": mode, "SCANPROBE_FORK_SERVER": fork})
            for fork in ("1", "0")]
    forked, execd = runs
    assert forked.rc == execd.rc, runs
    first = [re.sub(r"0x[0-9a-f]+", "0x", r.err.splitlines()[0]) if r.err else "" for r in runs]
    assert first[0] == first[1], runs
    assert forked.out == execd.out, runs


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("fork", BOTH)
@pytest.mark.parametrize("escape", ["session", "daemon", "daemon_noexec"])
def test_nothing_a_forked_child_starts_outlives_the_command(fork, escape, tmp_path):
    """A forked child's /proc environ (and that of what it forks without exec) is the server's:
    the supervisor kills what carries the server's mark too, the server excepted."""
    pidfile = tmp_path / "pids"
    res = scanprobe("profile", FIXTURES / "escapes_at_import.py", "--runs", "1", "--no-node-profile",
                    env={"ESCAPE_MODE": escape, "PIDFILE": pidfile, "SCANPROBE_FORK_SERVER": fork})
    assert res.rc in (0, 1), res
    pids = [int(p) for p in pidfile.read_text().split()]
    assert pids, "the module started nothing"
    assert not still_running(pids), "a process the module started is still running"


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_a_timeout_kills_the_forked_child_and_the_server_serves_the_next_command(tmp_path):
    from scanprobe.runners import forkserver

    env = {"ESCAPE_MODE": "c_loop", "PIDFILE": tmp_path / "pids", "SCANPROBE_FORK_SERVER": "1"}
    res = scanprobe("inspect", FIXTURES / "escapes_at_import.py", "--timeout", "5", env=env)
    assert res.rc == 2 and "still running after --timeout 5 s" in res.err, res
    servers = [s for s in forkserver._servers.values() if s.alive()]
    assert servers, "the command did not go through a fork server"
    again = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--format", "json", env={"SCANPROBE_FORK_SERVER": "1"})
    assert again.rc in (0, 1) and _buffers(again.json()), again


def test_a_flag_read_at_import_gets_a_server_of_its_own():
    """A backend reads its flags when imported: a request whose import-time environment differs
    is never served by a server that imported with other flags."""
    from scanprobe.runners import forkserver

    base = dict(os.environ)
    a = forkserver.server_for("", base)
    assert forkserver.server_for("", dict(base)) is a
    flag = {"THEANO_FLAGS": "floatX=float32", "PYTENSOR_FLAGS": "floatX=float32", "AESARA_FLAGS": "floatX=float32"}
    b = forkserver.server_for("", {**base, **flag})
    assert b is not a and a.alive() and b.alive()
    assert forkserver.server_for("", {**base, "SCANPROBE_SOMETHING": "x"}) is a  # read at run time
    b.close()
    assert not b.alive()  # the server ends when its client closes the pipe
