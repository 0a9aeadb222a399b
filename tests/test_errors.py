"""Every bad input: a one-line message naming the problem, a hint, exit code 2, no traceback."""

import json

import pytest

from conftest import BACKEND, FIXTURES, ROOT, scanprobe
from helpers import still_running


def _error(res):
    assert res.rc == 2, res
    lines = res.err.strip().splitlines()
    assert lines[0].startswith("error: "), res
    assert any(line.startswith("hint: ") for line in lines), res
    assert "Traceback" not in res.err, res
    return res.err


def test_missing_file(backend):
    err = _error(scanprobe("inspect", "no/such/model.py"))
    assert "no such file: no/such/model.py" in err


def test_not_a_python_file(backend):
    err = _error(scanprobe("inspect", ROOT / "pyproject.toml"))
    assert "is not a Python file" in err


def test_syntax_error_names_file_and_line(backend):
    err = _error(scanprobe("inspect", FIXTURES / "bad_syntax_error.py"))
    assert "bad_syntax_error.py:3: syntax error" in err


def test_exception_in_user_code_shows_user_frames(backend):
    err = _error(scanprobe("inspect", FIXTURES / "bad_raises.py"))
    assert "NameError" in err and "undefined_name" in err
    assert "bad_raises.py:6 in build_cost" in err
    assert "bad_raises.py:10 in <module>" in err


def test_module_that_compiles_nothing(backend):
    err = _error(scanprobe("inspect", FIXTURES / "bad_compiles_nothing.py"))
    assert "compiled no function" in err
    assert "__main__" in err


def test_sys_exit_in_user_code(backend):
    err = _error(scanprobe("inspect", FIXTURES / "bad_exits.py"))
    assert "SystemExit(3)" in err


def test_unknown_target_lists_targets(backend):
    err = _error(scanprobe("inspect", f"{FIXTURES / 'two_targets.py'}:nope"))
    assert "no target 'nope'" in err
    assert "total" in err and "registry['history']" in err and "two_targets.py:9" in err


def test_functions_compiled_only_in_libraries(backend):
    err = _error(scanprobe("inspect", FIXTURES / "bad_library_only.py"))
    assert "only inside libraries" in err and "--include-library" in err
    res = scanprobe("inspect", FIXTURES / "bad_library_only.py", "--include-library", "--format", "json")
    assert res.rc == 0, res
    assert len(res.json()["targets"]) == 1


def test_seed001_function_called_inside_scan(backend):
    err = _error(scanprobe("inspect", ROOT / "sample_graphs" / "seed001_function_in_scan.py"))
    assert "SP004 compiled-function-in-scan" in err
    assert "seed001_function_in_scan.py:16 in step" in err
    assert "clone" in err and "OpFromGraph" in err


@pytest.mark.parametrize(
    "spec, message",
    [
        ("x=abc", "bad shape"),
        ("nonsense", "bad --input"),
        ("x=3:floatish", "bad dtype"),
        ("nope=3", "no input named 'nope'"),
        ("x=3x3", "has 1 dimension"),
        ("x=3:int32", "is float64, not int32"),
    ],
)
def test_bad_input_specs(backend, spec, message):
    err = _error(scanprobe("inspect", FIXTURES / "two_targets.py", "--input", spec))
    assert message in err


def test_scalar_input_needs_a_value(backend):
    err = _error(scanprobe("inspect", FIXTURES / "taps_multi.py", "--input", "n=3x4"))
    assert "is a scalar; give its value" in err


def test_bad_mode(backend):
    err = _error(scanprobe("inspect", FIXTURES / "two_targets.py", "--mode", "FASTEST"))
    assert "unknown mode 'FASTEST'" in err


def test_backend_not_installed(backend):
    other = "pytensor" if BACKEND == "theano" else "theano"
    err = _error(scanprobe("inspect", FIXTURES / "two_targets.py", "--backend", other))
    assert f"{other} is not installed" in err


def test_json_error_envelope(backend):
    res = scanprobe("inspect", "missing.py", "--format", "json")
    assert res.rc == 2
    body = res.json()
    assert body["error"]["exit_code"] == 2 and "no such file" in body["error"]["message"]


def test_a_value_that_does_not_fit_its_input_is_an_error_not_a_wrapped_size(backend):
    """Issue 29, items 4 and 12: n is an int32; 10**12 once wrapped to -727379967 steps (Theano:
    negative bytes, check passed) or raised an internal OverflowError (PyTensor)."""
    res = scanprobe("check", FIXTURES / "int_steps.py", "--input", "n=1000000000000", "--max-peak", "1GiB")
    assert res.rc == 2 and "does not fit input n, which is int32" in res.out + res.err, res
    assert "internal error" not in res.out + res.err and "-727379967" not in res.out
    res = scanprobe("inspect", FIXTURES / "int_steps.py", "--input", "n=1000000000000", "--format", "json")
    body = json.loads(res.out)
    assert res.rc == 2 and "int32" in body["error"]["message"] and body["error"]["hint"], res
    res = scanprobe("inspect", FIXTURES / "int_steps.py", "--input", "n=1000", "--format", "json")
    assert res.rc in (0, 1) and json.loads(res.out)["targets"][0]["scans"][0]["n_steps"]["value"] == 1000, res


OPTION_ERRORS = [
    (["inspect", "x.py", "--backend", "tensorflow"], "'tensorflow' is not one of"),
    (["inspect", "x.py", "--format", "xml"], "'xml' is not one of"),
    (["profile", "x.py", "--timeout", "0"], "a timeout is a positive, finite number of seconds"),
    (["profile", "x.py", "--timeout", "nan"], "a timeout is a positive, finite number of seconds"),
    (["fix", "x.py", "--timeout", "-1"], "a timeout is a positive, finite number of seconds"),
    (["inspect", "x.py", "--timeout", "inf"], "a timeout is a positive, finite number of seconds"),
    (["profile", "x.py", "--runs", "0"], "0 is not in the range"),
    (["check", "x.py", "--max-buffer", ""], "a size is a positive number of bytes"),
    (["check", "x.py", "--max-buffer", "0"], "a size is a positive number of bytes"),
    (["check", "x.py", "--max-buffer", "-5"], "a size is a positive number of bytes"),
    (["check", "x.py", "--max-peak", "-1GiB"], "a size is a positive number of bytes"),
    (["check", "x.py", "--max-buffer", "inf"], "a size is a positive number of bytes"),
    (["profile", "x.py", "--memory-limit=-5"], "a size is a positive number of bytes"),
    (["check", "x.py", "--select", "NOPE"], "no rule has that code"),
    (["inspect"], "Missing argument"),
]


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("args, said", OPTION_ERRORS, ids=[" ".join(a) for a, _ in OPTION_ERRORS])
def test_option_errors_are_in_contract(args, said, tmp_path):
    """Issue 29, item 14: every bad option value is one line, a hint and exit 2 (click's usage
    text before; empty, zero, negative and infinite budgets and timeouts were accepted, some
    silently turning the limit off); --format json gives the JSON error."""
    (tmp_path / "x.py").write_text("x = 1\n")
    res = scanprobe(*args, cwd=tmp_path)
    assert res.rc == 2 and said in res.err and "\nhint: " in res.err and "Usage:" not in res.err, res
    assert res.err.startswith("error: ") and len(res.err.strip().splitlines()) == 2, res.err
    if "--format" not in args and args[1:]:
        res = scanprobe(*args, "--format", "json", cwd=tmp_path)
        body = json.loads(res.out)
        assert res.rc == 2 and said in body["error"]["message"] and body["error"]["hint"], res


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("content, said", [(b'x = "\xff\xfe"\n', "can't decode byte 0xff"),
                                           (b"x = 1\x00\n", "null bytes")], ids=["not-utf8", "nul-byte"])
def test_a_file_python_refuses_is_a_syntax_error_for_every_command(content, said, tmp_path):
    """Issue 29, item 14: a non-UTF-8 file was read with replacement characters ("compiled no
    function": check exit 0); NUL bytes gave "binary.py:None". Python's own decoding decides."""
    (tmp_path / "model.py").write_bytes(content)
    for command in ("inspect", "check"):
        res = scanprobe(command, "model.py", cwd=tmp_path)
        assert res.rc == 2 and "syntax error" in res.out + res.err and said in res.out + res.err, (command, res)
        assert ":None" not in res.out + res.err


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_a_module_that_clears_sys_path_or_changes_directory_decides_nothing(tmp_path):
    """Issue 29, item 13: a module that cleared sys.path made scanprobe fail to import its own
    reporter (exit 1, "No module named 'rich'"); one that changed directory moved later relative
    paths. Both are put back after the module ran."""
    src = (FIXTURES / "static_scan.py").read_text()
    (tmp_path / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    (tmp_path / "model.py").write_text(src + "\nimport os, sys\nsys.path.clear()\nos.chdir('/')\n")
    (tmp_path / "other.py").write_text(src)
    res = scanprobe("check", "model.py", "other.py", "--format", "json", cwd=tmp_path, isolated=True)
    body = json.loads(res.out)
    assert res.rc in (0, 1) and not body["errors"] and len(body["reports"]) == 2, res


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
def test_what_the_module_writes_or_forks_never_reaches_scanprobes_output(tmp_path):
    """Issue 29, items 5 and 6: os.write(1, ...) and sys.__stdout__ at import corrupted the JSON
    and SARIF on stdout; a fork at import went on as a second scanprobe printing a second
    document. Now file descriptor 1 points at stderr while user code runs, and a forked copy ends
    when the module does."""
    src = (FIXTURES / "static_scan.py").read_text()
    (tmp_path / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    (tmp_path / "model.py").write_text(
        src + "\nimport os, sys\nos.write(1, b'RAW FD1\\n')\nsys.__stdout__.write('DUNDER\\n')\nprint('PRINTED')\n"
        "if os.fork() == 0:\n    print('IN THE COPY')\n")
    for args in (("inspect", "model.py", "--format", "json"), ("check", "model.py", "--format", "sarif")):
        res = scanprobe(*args, cwd=tmp_path, isolated=True)
        assert res.rc in (0, 1), res
        json.loads(res.out)  # one document, nothing else
        assert "RAW FD1" in res.err and "DUNDER" in res.err and "PRINTED" in res.err, res.err
        assert "IN THE COPY" not in res.out and res.out.count('"scanprobe"') <= 1 and res.out.count('"$schema"') <= 1


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("mode, code", [("posix", 2), ("atexit", 1), ("thread", 1)])
def test_user_code_cannot_end_scanprobe_with_its_exit_code(mode, code):
    """Issue 29, items 1-3: posix._exit(0) at import made `check --format sarif` exit 0 with no
    output; an atexit handler or a thread calling os._exit(0) turned a finding's exit 1 into 0.
    posix._exit at import is the module's error (exit 2, check fails closed); from a handler or a
    thread it raises there, and scanprobe's own exit code and output stand."""
    res = scanprobe("check", FIXTURES / "exits_at_import.py", "--format", "sarif", env={"EXIT_MODE": mode},
                    isolated=True)
    assert res.rc == code, res
    sarif = json.loads(res.out)
    if code == 1:
        assert sarif["runs"][0]["results"], sarif


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("escape", ["session", "daemon"])
@pytest.mark.parametrize("command", ["inspect", "profile"])
def test_nothing_the_module_starts_outlives_the_command(command, escape, tmp_path):
    """Issue 29, item 7: a module that started `Popen(..., start_new_session=True)` left the
    process running after `profile`, and `inspect` waited for it while it held the output pipe.
    Every command runs the module in a child with its own session; at the end every process the
    run started (in its group, below it in the tree, or carrying the run's mark when a double
    fork reparented it) is killed. Were one left holding the pipe, this call would not return."""
    pidfile = tmp_path / "pids"
    extra = ["--runs", "1", "--no-node-profile"] if command == "profile" else []
    res = scanprobe(command, FIXTURES / "escapes_at_import.py", *extra,
                    env={"ESCAPE_MODE": escape, "PIDFILE": pidfile}, isolated=True)
    assert res.rc in (0, 1), res
    pids = [int(p) for p in pidfile.read_text().split()]
    assert pids, "the module started nothing"
    assert not still_running(pids), "a process the module started is still running"


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("escape", ["c_loop", "no_alarm"])
@pytest.mark.parametrize("command", ["inspect", "check", "graph"])
def test_a_module_that_cannot_be_interrupted_stops_at_the_timeout(command, escape, tmp_path):
    """Issue 29, item 9: a long C-level call at import, or a module ignoring SIGALRM, kept
    `inspect --timeout 5` running for minutes: the timeout was a signal in the process running
    the module. The parent now holds the child to --timeout and kills it; `check` fails closed."""
    extra = ["-o", tmp_path / "g.svg"] if command == "graph" else []
    res = scanprobe(command, FIXTURES / "escapes_at_import.py", *extra, "--timeout", "5",
                    env={"ESCAPE_MODE": escape, "PIDFILE": tmp_path / "pids"}, isolated=True)
    assert res.rc == 2, res
    assert "still running after --timeout 5 s" in res.err and "escapes_at_import.py" in res.err, res
    assert not (tmp_path / "g.svg").exists()


@pytest.mark.once_per_python  # conftest.RUN_ELSEWHERE
@pytest.mark.parametrize("command", ["inspect", "check"])
def test_a_module_that_kills_its_process_is_an_error(command, tmp_path):
    """The child ended with no report (here the module sent itself SIGKILL): exit 2, named, and
    `check` fails closed (no SARIF that says "clean")."""
    res = scanprobe(command, FIXTURES / "escapes_at_import.py", env={"ESCAPE_MODE": "kill_self"}, isolated=True)
    assert res.rc == 2, res
    assert "killed by signal 9" in res.err and "nothing was analysed" in res.err and "hint:" in res.err, res
