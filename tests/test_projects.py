"""Real projects: model code in a sibling folder, a framework that compiles for the user, its own
helpers hidden, nothing linked that is not analysed."""

import json
import shutil

import pytest

from conftest import FIXTURES, SAMPLES, scanprobe

PROJECT = FIXTURES / "project"


def _install_framework(tmp_path, monkeypatch):
    import sys

    monkeypatch.delitem(sys.modules, "helperfw", raising=False)  # each test imports it afresh
    site = tmp_path / "site-packages"
    shutil.copytree(PROJECT / "helperfw_src" / "helperfw", site / "helperfw")
    monkeypatch.syspath_prepend(str(site))  # here (the library pipeline)
    monkeypatch.setenv("PYTHONPATH", str(site))  # and in the child the commands run the module in
    return site


def test_every_user_target_found_framework_helpers_hidden_nothing_linked(backend, tmp_path, monkeypatch):
    _install_framework(tmp_path, monkeypatch)
    from scanprobe.backends.family import FamilyBackend
    from scanprobe.pipeline import analyse_module

    linked = []
    realize = FamilyBackend.realize
    monkeypatch.setattr(FamilyBackend, "realize", lambda self, built: linked.append(built) or realize(self, built))
    analysed = analyse_module(str(PROJECT / "scripts" / "train.py"))  # the analysis inspect's child runs
    assert len(analysed.report.targets) == 4
    res = scanprobe("inspect", PROJECT / "scripts" / "train.py", "--format", "json")
    assert res.rc in (0, 1), res
    rep = res.json()
    names = [t["name"] for t in rep["targets"]]
    # model code in models/ (a sibling of scripts/) is the user's: compiled at its import, and in
    # build() called from the script
    assert "f_cost" in names and "f_grad" in names and any(n.startswith("lstm.py:") for n in names), names
    # the framework compiled f_predict on the user's behalf: a target named by the user's line
    assert "f_predict" in names, names
    predict = next(t for t in rep["targets"] if t["name"] == "f_predict")
    assert predict["site"]["file"].endswith("train.py") and "compile_model" in predict["site"]["code"]
    # the framework's own helper is not analysed, and said so
    assert len(names) == 4, names
    assert any("skipped 1 function(s) that libraries compile for themselves" in n and "__init__.py" in n
               for n in rep["notes"]), rep["notes"]
    # nothing was linked: scanprobe optimizes what it analyses and links nothing
    assert linked == []


def test_framework_helpers_analysed_on_request(backend, tmp_path, monkeypatch):
    _install_framework(tmp_path, monkeypatch)
    res = scanprobe("inspect", PROJECT / "scripts" / "train.py", "--format", "json", "--include-library")
    assert res.rc in (0, 1), res
    assert len(res.json()["targets"]) == 5


# ------------------------------------------------------------------ inputs (items 4, 5)


def test_unnamed_and_duplicate_inputs_given_by_position_and_cast(backend):
    res = scanprobe("inspect", FIXTURES / "inputs_unnamed.py", "--format", "json")
    assert res.rc in (0, 1), res
    (t,) = res.json()["targets"]
    sources = {i["label"]: (i["source"], i["shape"]) for i in t["inputs"]}
    # the list gave each input by position: the unnamed one, both `input`s, and a Python int for
    # the int32 scalar; the float64 array was cast to the fmatrix's float32
    assert sources["#0"] == ("SCANPROBE_INPUTS", [30, 4]), sources
    assert sources["input#1"][0] == sources["input#2"][0] == "SCANPROBE_INPUTS", sources
    assert sources["n"] == ("SCANPROBE_INPUTS", []), sources
    (scan,) = t["scans"]
    assert scan["n_steps"]["value"] == 20


def test_a_name_that_matches_nothing_lists_the_inputs(backend, tmp_path):
    (tmp_path / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    src = (FIXTURES / "inputs_unnamed.py").read_text().replace(
        "SCANPROBE_INPUTS = [np.ones((30, 4)), np.ones(3), np.ones(3), 20]", "SCANPROBE_INPUTS = {'xs': np.ones((30, 4))}")
    (tmp_path / "m.py").write_text(src)
    res = scanprobe("inspect", tmp_path / "m.py", "--format", "json")
    note = " ".join(res.json()["notes"])
    assert "SCANPROBE_INPUTS names 'xs', which no analysed target takes" in note
    assert "f takes #0 (float32, 2-d), input#1 (float32, 1-d), input#2 (float32, 1-d), n (int32, 0-d)" in note
    assert "by position ('#0'" in note


def test_a_value_that_does_not_cast_is_an_error_naming_the_input(backend, tmp_path):
    (tmp_path / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    src = (FIXTURES / "inputs_unnamed.py").read_text().replace("np.ones(3), 20]", "np.ones(3), 2.5]")
    (tmp_path / "m.py").write_text(src)
    res = scanprobe("inspect", tmp_path / "m.py")
    assert res.rc == 2 and "SCANPROBE_INPUTS['#3'] for input n is float64, which does not cast to the input's int32" in res.err
    assert "hint:" in res.err


# ------------------------------------------------------------------ output (item 6)


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_what_the_module_prints_does_not_corrupt_machine_output(backend):
    res = scanprobe("inspect", FIXTURES / "prints_at_import.py", "--format", "json")
    assert res.rc in (0, 1), res
    res.json()  # stdout is the report alone
    assert "pylab isn't available" in res.err
    sarif = scanprobe("check", FIXTURES / "prints_at_import.py", "--format", "sarif")
    assert sarif.json()["version"] == "2.1.0"


# ------------------------------------------------------------------ runs (items 7, 8)


def test_profile_reports_each_target_when_one_fails(backend):
    res = scanprobe("profile", FIXTURES / "one_target_fails.py", "--runs", "1", "--no-node-profile", "--format", "json")
    assert res.rc == 2, res
    body = res.json()
    first, second = body["targets"]
    assert first["name"] == "first" and "this target's op fails" in first["error"]["message"]
    assert second["name"] == "second" and second["measured"]["runs"] == 1 and "error" not in second
    assert body["summary"]["failed"] == ["first"]
    assert "error: ValueError while running first" in res.err  # errors on stderr, as inspect's


def test_a_fix_that_leaves_its_finding_is_not_verified(backend, tmp_path):
    """A mode without graph rewrites (optimizer 'None'): on Theano, adding the save-mem rewrite
    to it shrinks nothing (the rewrite needs the scan optimizations it belongs to), so the
    finding stays and the fix is not verified; where it does shrink, it is verified. Either way
    the verdict is the rerun analysis's, never assumed."""
    (tmp_path / "_backend.py").write_text((SAMPLES / "_backend.py").read_text())
    src = (SAMPLES / "seed000_pixel_loop.py").read_text().replace(
        'mode=os.environ.get("SEED000_MODE", "FAST_COMPILE")', "mode=th.compile.mode.Mode(linker='py', optimizer='None')")
    (tmp_path / "seed.py").write_text(src)
    res = scanprobe("fix", tmp_path / "seed.py", "--runs", "1", "--format", "json")
    body = res.json()
    (f,) = body["fixes"]
    left = f["after"]["remaining"]["SP001"]
    assert (f["status"] == "failed") == (left > 0), f
    if backend == "theano":
        assert left >= 2 and "still has SP001" in f["why_failed"] and res.rc == 1 and body["summary"]["fixed"] == []
        text = scanprobe("fix", tmp_path / "seed.py", "--runs", "1")
        assert "failed: not applied (the fixed graph still has SP001)" in text.out, text


def test_a_fix_whose_run_times_out_is_not_compared_and_the_report_renders(backend):
    res = scanprobe("fix", SAMPLES / "seed002_per_example_grads.py", "--runs", "1", "--timeout", "0.001")
    assert res.rc == 2, res
    assert "not compared" in res.out, res
    assert "Traceback" not in res.out + res.err and "--timeout" in res.err


# ------------------------------------------------------------------ loading (item 9)


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_exit_while_loading_is_an_error_for_every_command(backend):
    for command in ("inspect", "check"):
        for code in ("0", "5"):
            res = scanprobe(command, FIXTURES / "bad_exits_at_import.py", "--format", "json", env={"EXIT_CODE": code})
            assert res.rc == 2, (command, code, res)
            assert f"os._exit({code})" in res.err


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_a_directory_is_not_a_file(backend):
    res = scanprobe("inspect", FIXTURES)
    assert res.rc == 2 and "is a directory, not a Python file" in res.err and "Traceback" not in res.err


def test_scalar_values_must_be_finite_and_whole_for_integers(backend):
    for value, text in (("nan", "finite number"), ("inf", "finite number"), ("2.5", "is not an integer")):
        res = scanprobe("inspect", FIXTURES / "taps_multi.py", "--input", f"n={value}")
        assert res.rc == 2 and text in res.err, (value, res)


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_an_endless_loop_at_import_stops_at_the_timeout(backend):
    res = scanprobe("inspect", FIXTURES / "bad_loops_at_import.py", "--timeout", "3", timeout=120)
    assert res.rc == 2, res
    assert "still running after --timeout 3 s" in res.err and "running bad_loops_at_import.py" in res.err


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_ctrl_c_is_an_error_not_findings(backend):
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT, child_env

    # as from a terminal: SIGINT at its default (a test run started in the background by a
    # non-interactive shell, as scripts/test runs legs side by side, inherits it ignored)
    proc = subprocess.Popen([sys.executable, "-m", "scanprobe", "inspect", str(FIXTURES / "bad_loops_at_import.py")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(), cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 600  # no tight limit: on a busy machine the start takes long
    while time.time() < deadline and proc.poll() is None and not _children(proc.pid):
        time.sleep(0.2)  # until the runner child that imports the module has started
    while time.time() < deadline and proc.poll() is None:  # the module loops at import
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            continue
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (out, err)
    assert "interrupted" in err and "Aborted" not in err


# ------------------------------------------------------------------ reports (items 10-13)


def test_profile_counts_findings_as_inspect_does(backend):
    res = scanprobe("profile", FIXTURES / "map_scan.py", "--runs", "1", "--no-node-profile", "--format", "json")
    body = res.json()
    insp = scanprobe("inspect", FIXTURES / "map_scan.py", "--format", "json").json()
    assert body["summary"]["findings"] == insp["summary"]["findings"]
    assert body["summary"]["notes"] == insp["summary"]["notes"]


def test_notes_are_headed_as_notes(backend):
    res = scanprobe("inspect", SAMPLES / "seed000_pixel_loop.py", "--no-color")
    lines = [line for line in res.out.splitlines() if "independent-iterations" in line and "cost_and_grads" in line]
    assert lines and all(line.startswith("note SP002") for line in lines), lines


def test_check_points_a_finding_without_a_line_at_the_compile_call(backend):
    res = scanprobe("check", SAMPLES / "seed000_pixel_loop.py", "--max-peak", "1kB", "--select", "SP011",
                    "--format", "github")
    line = next(line for line in res.out.splitlines() if "SP011" in line)
    compile_line = next(i for i, text in enumerate((SAMPLES / "seed000_pixel_loop.py").read_text().splitlines(), 1)
                        if "th.function(" in text)
    assert f"line={compile_line}," in line, line


def test_unnamed_shared_named_by_where_it_was_made(backend):
    res = scanprobe("inspect", FIXTURES / "unnamed_shared.py", "--format", "json")
    text = json.dumps(res.json())
    assert "shared(unnamed_shared.py:5)" in text
    assert "<float64, 1D>" not in text


def _stat(pid):
    """The fields of /proc/PID/stat after the command name (state, parent pid, ...); [] once gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _children(pid):
    """Process ids whose parent is ``pid`` (from /proc)."""
    import os

    return [int(e) for e in os.listdir("/proc") if e.isdigit() and _stat(e)[1:2] == [str(pid)]]


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stopped_profile_leaves_no_child_running(backend, sig):
    """Issue 29, item 8: Ctrl-C or SIGTERM during profile left the runner child (and Theano's
    g++) running. The child's process group is killed and reaped; exit 2, one line. SIGHUP (the
    terminal or ssh session closed) killed scanprobe with no clean-up at all, and the child, in a
    session of its own, ran on: an endless loop forever. It is handled as SIGTERM is."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT, child_env

    proc = subprocess.Popen(
        [sys.executable, "-m", "scanprobe", "profile", str(FIXTURES / "run_behaviours.py"), "--timeout", "600",
         "--no-node-profile"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(BEHAVIOUR="hang"), cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline, kids = time.time() + 300, []
    while time.time() < deadline and not kids and proc.poll() is None:  # the runner child started
        time.sleep(0.2)
        kids = _children(proc.pid)
    assert kids, "no runner child seen"
    time.sleep(1)
    proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=120)
    said = {"SIGTERM": "terminated (SIGTERM)", "SIGHUP": "hung up (SIGHUP)", "SIGINT": "interrupted (Ctrl-C)"}[sig]
    assert proc.returncode == 2 and said in err, (out, err)
    time.sleep(0.5)
    assert not [k for k in kids if os.path.exists(f"/proc/{k}")], "the runner child is still there"


def _descendants(pid):
    """Process ids below ``pid`` in the process tree (from /proc)."""
    found, todo = [], [pid]
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("fork_server", [False, True], ids=["exec", "fork-server"])
def test_a_killed_scanprobe_takes_its_child_with_it(backend, fork_server):
    """SIGKILL (or the out-of-memory killer) gives scanprobe no clean-up of its own: the runner
    child, in a session of its own, ran on after it (a user's endless loop: forever), and so did
    a child forked by the fork server (``SCANPROBE_FORK_SERVER=1``), whose server exits with its
    client. The kernel now kills the child with its parent (``exits.die_with_parent``)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import ROOT, child_env

    env = child_env(BEHAVIOUR="hang", **({"SCANPROBE_FORK_SERVER": "1"} if fork_server else {}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "scanprobe", "profile", str(FIXTURES / "run_behaviours.py"), "--timeout", "600",
         "--no-node-profile"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    depth = 2 if fork_server else 1  # the forked child is the server's child
    deadline, runner = time.time() + 300, []
    while time.time() < deadline and not runner and proc.poll() is None:  # the runner child started
        time.sleep(0.2)
        level = [proc.pid]
        for _ in range(depth):
            level = [k for p in level for k in _children(p)]
        runner = level
    assert runner, "no runner child seen"
    below = _descendants(proc.pid)
    time.sleep(1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=120)
    deadline = time.time() + 120  # the kernel kills them at once; the margin is for a busy machine
    left = below
    while left and time.time() < deadline:
        time.sleep(0.2)
        left = [k for k in below if _stat(k)[:1] not in ([], ["Z"])]  # "Z": ended, not yet reaped by init
    assert not left, f"still running after scanprobe was killed: {left}"
