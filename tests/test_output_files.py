"""The files scanprobe writes never cost the user one of theirs (issue 29, items 10 and 11):
``--html`` and ``graph -o`` refuse the analysed file, any ``.py``, a directory and a missing
folder (one line, a hint, exit 2, the JSON error with ``--format json``), write atomically (no
temporary file left), and resolve the name against the directory scanprobe started in, whatever
the module does with its working directory."""

import json
import shutil

import pytest
from conftest import FIXTURES, scanprobe

pytestmark = pytest.mark.once_per_python  # output files are scanprobe's own (conftest.RUN_ELSEWHERE)

SMALL = FIXTURES / "static_scan.py"


@pytest.fixture()
def model(tmp_path):
    """A copy of a small fixture (and the backend chooser it imports) in an empty folder."""
    shutil.copy(SMALL, tmp_path / "model.py")
    shutil.copy(FIXTURES / "_backend.py", tmp_path / "_backend.py")
    return tmp_path / "model.py"


def _listing(folder):
    return sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")


def test_html_over_the_analysed_file_is_refused_and_the_file_kept(backend, model):
    before = model.read_bytes()
    res = scanprobe("inspect", model, "--html", model, cwd=model.parent)
    assert res.rc == 2 and "that is the file being analysed" in res.err and "hint:" in res.err, res
    assert model.read_bytes() == before
    res = scanprobe("inspect", "model.py", "--html", "model.py", "--format", "json", cwd=model.parent)
    body = json.loads(res.out)
    assert res.rc == 2 and "the file being analysed" in body["error"]["message"] and body["error"]["hint"], res
    assert model.read_bytes() == before


def test_html_over_any_python_source_is_refused(backend, model):
    other = model.parent / "other.py"
    other.write_text("x = 1\n")
    res = scanprobe("inspect", model, "--html", other, cwd=model.parent)
    assert res.rc == 2 and "does not write over Python sources" in res.err, res
    assert other.read_text() == "x = 1\n"


def test_html_to_a_directory_or_a_missing_folder_is_an_error_in_contract(backend, model):
    for given, said in ((".", "is a directory"), (str(model.parent / "missing" / "r.html"), "does not exist"),
                        ("", "empty file name"), ("report.txt", "must end in .html")):
        res = scanprobe("inspect", model, "--html", given, cwd=model.parent)
        assert res.rc == 2 and said in res.err and "hint:" in res.err and "internal error" not in res.err, (given, res)
    assert _listing(model.parent) == ["_backend.py", "model.py"]  # nothing left behind


def test_html_is_written_where_scanprobe_started_whatever_the_module_does(backend, model, tmp_path):
    src = model.read_text()
    model.write_text("import os\nos.chdir(os.path.expanduser('~'))\n" + src.replace("from _backend", "from _backend"))
    res = scanprobe("inspect", model, "--html", "rep.html", cwd=model.parent, isolated=True)
    assert res.rc in (0, 1), res
    written = model.parent / "rep.html"
    assert written.exists() and "<html" in written.read_text()[:200].lower()
    assert _listing(model.parent) == ["_backend.py", "model.py", "rep.html"]  # no temporary file left


def test_graph_output_is_checked_before_the_module_runs(backend, model):
    res = scanprobe("graph", model, "-o", model, cwd=model.parent)
    assert res.rc == 2 and "the file being analysed" in res.err, res
    res = scanprobe("graph", model, "-o", "g.dot", cwd=model.parent)
    assert res.rc == 0 and (model.parent / "g.dot").read_text().startswith(("digraph", "strict digraph")), res
    assert ".g.dot." not in " ".join(_listing(model.parent))
