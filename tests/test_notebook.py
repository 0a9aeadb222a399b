"""scanprobe in a notebook: ``scanprobe.inspect(obj)`` on live objects (the command line's report,
in process), its displays, and the IPython extension, run in a real Jupyter kernel."""

import json
import runpy
import sys

import numpy as np
import pytest
from conftest import BACKEND, ROOT, SAMPLES, scanprobe
from helpers import buffers

import scanprobe as sp
from scanprobe.errors import ScanprobeError

MEAN_POOL = SAMPLES / "rnn_mean_pool.py"


def _run_sample(path):
    """The sample module run as a user's notebook would run its code: real compiled functions."""
    sys.path.insert(0, str(path.parent))
    before = set(sys.modules)
    try:
        return runpy.run_path(str(path))
    finally:
        sys.path.remove(str(path.parent))
        # the samples' `_backend` is not the fixtures' (other tests of this worker import theirs)
        for name in set(sys.modules) - before:
            if str(getattr(sys.modules[name], "__file__", None) or "").startswith(str(path.parent)):
                del sys.modules[name]


@pytest.fixture(scope="module")
def mean_pool():
    return _run_sample(MEAN_POOL)


def _sizes(report):
    return sorted((b["role"], tuple(b["shape"]), b["bytes"], b["status"], b["verdict"]) for b in buffers(report))


def _found(report):
    return sorted((f["code"], f["bytes"]) for f in report["findings"])


def test_inspect_of_a_compiled_function_is_the_command_lines_report(backend, mean_pool):
    cli = scanprobe("inspect", MEAN_POOL, "--format", "json")
    assert cli.rc == 1, cli
    got = sp.inspect(mean_pool["encode"], example=[mean_pool["SCANPROBE_INPUTS"]["x"]])
    doc = got.to_json()
    assert _sizes(doc) == _sizes(cli.json())
    assert _found(doc) == _found(cli.json())
    assert [f.code for f in got.findings if f.severity != "info"] == ["SP006"]
    assert got.exit_code == 1
    assert doc["schema"] == cli.json()["schema"]


def test_inspect_of_symbolic_outputs_compiles_them_the_way_function_would(backend, mean_pool):
    ns = mean_pool
    x, pooled = ns["x"], ns["pooled"]
    got = sp.inspect([pooled.sum()], inputs=[x], example={"x": ns["SCANPROBE_INPUTS"]["x"]})
    row = 64 * 256 * np.dtype(x.dtype).itemsize  # batch x hidden
    (sp006,) = [f.bytes for f in got.findings if f.code == "SP006"]
    assert sp006 in (2000 * row, 2001 * row)  # every step (and the initial state where kept)
    compiled = sp.inspect(ns["encode"], example=[ns["SCANPROBE_INPUTS"]["x"]])
    assert [sp006] == [f.bytes for f in compiled.findings if f.code == "SP006"]
    # sized from the example: 1,900 steps fewer, 1,900 rows fewer
    shorter = sp.inspect([pooled.sum()], inputs=[x], example={"x": ns["SCANPROBE_INPUTS"]["x"][:100]})
    assert [f.bytes for f in shorter.findings if f.code == "SP006"] == [sp006 - 1900 * row]


def test_the_displays_show_the_same_report(backend, mean_pool):
    got = sp.inspect(mean_pool["encode"], example=[mean_pool["SCANPROBE_INPUTS"]["x"]], name="encode")
    html = got._repr_html_()
    assert html.startswith("<div class='scanprobe-report'>") and html.rstrip().endswith("</div>")
    assert "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
    assert "SP006" in html and "<svg class='bars'" in html and "<table>" in html
    assert "rnn_mean_pool.py" in html  # the user's line, where the scan is
    text = repr(got)
    assert "SP006" in text and "\x1b[" not in text  # plain text: no terminal codes
    bundle = got._repr_mimebundle_()
    assert bundle["text/html"] == html and bundle["text/plain"] == text
    assert bundle["application/vnd.scanprobe.report+json"] == json.loads(json.dumps(got.to_json(), default=str))


def test_what_cannot_be_inspected_is_one_error_with_a_hint(backend, mean_pool):
    with pytest.raises(ScanprobeError) as err:
        sp.inspect("model.py")
    assert "cannot analyse a str" in err.value.message and "inputs=[x]" in err.value.hint
    with pytest.raises(ScanprobeError) as err:
        sp.inspect(mean_pool["encode"], inputs=[mean_pool["x"]])
    assert "has its inputs already" in err.value.message
    with pytest.raises(ScanprobeError) as err:
        sp.inspect(mean_pool["encode"], mode="NO_SUCH_MODE")
    assert "unknown mode" in err.value.message


def test_import_scanprobe_stays_light():
    import subprocess

    code = ("import sys, scanprobe; scanprobe.inspect; "
            "print(sorted(m for m in ('theano', 'pytensor', 'aesara', 'scanprobe.inspection', 'IPython') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_pymc_model_gives_its_sampler_functions(backend):
    pytest.importorskip("pymc")
    ns = _run_sample(SAMPLES / "pymc_garch.py")
    model = next(v for k, v in ns.items() if type(v).__name__ == "Model")
    got = sp.inspect(model, name="garch")
    names = [t.name for t in got.report.targets]
    assert "garch.logp_dlogp" in names, names
    cli = scanprobe("inspect", SAMPLES / "pymc_garch.py", "--format", "json").json()
    by_target = {t["name"].split(".", 1)[1]: t for t in cli["targets"]}
    for t in got.to_json()["targets"]:
        theirs = by_target[t["name"].split(".", 1)[1]]
        assert [b["bytes"] for s in t["scans"] for b in s["buffers"]] == \
            [b["bytes"] for s in theirs["scans"] for b in s["buffers"]]


def test_a_fixed_function_displays_before_and_after(backend, mean_pool):
    ns = mean_pool
    fixed = sp.fix([ns["x"]], ns["pooled"])
    assert "call it once" in repr(fixed) and "SP006" in repr(fixed)
    short = ns["SCANPROBE_INPUTS"]["x"][:100]
    out = fixed(short)
    assert out.shape == (64, 256)
    text = repr(fixed)
    assert "verified" in text and "SP006 -> none" in text, text
    before, after = fixed.comparison()["before"], fixed.comparison()["after"]

    def total(insp):
        return sum(b.bytes for t in insp.report.targets for s in t.scans for b in s.buffers)

    assert total(after) * 10 < total(before)  # 101 rows of the history -> a running sum's 2 rows
    html = fixed._repr_html_()
    assert "<table>" in html and "SP006" in html and "<script" not in html


def test_fix_of_a_pymc_model_gives_verified_sampler_functions(backend):
    pytest.importorskip("pymc")
    ns = _run_sample(SAMPLES / "pymc_garch.py")
    model = next(v for k, v in ns.items() if type(v).__name__ == "Model")
    fixed = sp.fix(model)
    assert "model.logp_dlogp" in fixed, sorted(fixed)
    checks = fixed.verify_all()
    assert all(c["status"] == "verified" for c in checks.values()), checks
    text = repr(fixed)
    assert "pm.sample does not call these" in text and "-> none" in text, text


# ------------------------------------------------------------------ a real notebook
_MODULE = {"theano": "theano", "pytensor": "pytensor", "aesara": "aesara"}


def _notebook(tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    be = _MODULE[BACKEND]
    flags = "import os; os.environ['THEANO_FLAGS'] = os.environ.get('THEANO_FLAGS', '') + ',blas.ldflags='\n" \
        if be == "theano" else ""
    cells = [
        f"""{flags}import sys
sys.modules.setdefault('theano.scan_module.scan_perform_ext', None) if {be == 'theano'} else None
import numpy as np
import {be} as th
import {be}.tensor as T
import scanprobe
x = T.matrix("x")
w = th.shared(np.ones((3, 3)), name="w")
def step(x_t, h):
    return T.tanh(T.dot(h, w) + x_t)
hs = th.scan(step, sequences=[x], outputs_info=[T.zeros((3,), dtype=x.dtype)])[0]
states = th.function([x], hs.mean(axis=0))""",
        "report = scanprobe.inspect(states, example=[np.zeros((50, 3))])\nreport",
        "%load_ext scanprobe",
        '%scanprobe states --example "[np.zeros((70, 3))]"',
        "%%scanprobe\nSCANPROBE_INPUTS = {'x': np.zeros((40, 3))}\nencode = th.function([x], hs.mean(axis=0))",
        "%scanprobe no_such_name",
        "scanprobe.inspect(42)",
        "%%scanprobe\nraise ValueError('the cell failed')",
    ]
    if _has_pymc():
        cells.append("""import pymc as pm
with pm.Model() as garch:
    sigma = pm.HalfNormal("sigma", 1.0)
    def ar(prev, s):
        return 0.9 * prev + s
    path = th.scan(ar, outputs_info=[pt_zeros], non_sequences=[sigma], n_steps=200)[0]
    pm.Potential("smooth", -(path ** 2).sum())""".replace("pt_zeros", "T.zeros((16,))"))
        cells.append("%scanprobe garch")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    # the kernel is this environment's Python, whatever kernels the machine has installed
    spec = tmp_path / "jupyter" / "kernels" / "scanprobe-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "scanprobe test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="scanprobe-test", allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def _has_pymc() -> bool:
    import importlib.util

    return BACKEND == "pytensor" and importlib.util.find_spec("pymc") is not None


def _outputs(cell, kind):
    return [o for o in cell.outputs if o.output_type == kind]


def test_a_real_notebook_displays_the_report_and_runs_the_magics(backend, tmp_path, monkeypatch):
    nb = _notebook(tmp_path, monkeypatch)
    setup, direct, load, line, cell, missing, bad, failing = nb.cells[:8]
    assert not _outputs(setup, "error"), setup.outputs
    for c, rows in ((direct, 51), (line, 71), (cell, 41)):
        (res,) = _outputs(c, "execute_result")
        html = res.data["text/html"]
        assert "scanprobe-report" in html and "SP006" in html, html[:500]
        # sized from the example / the cell's SCANPROBE_INPUTS: every step (and the initial state where kept)
        assert f"{rows} x 3" in html or f"{rows - 1} x 3" in html, html
        doc = res.data["application/vnd.scanprobe.report+json"]
        assert [f["code"] for f in doc["findings"] if f["severity"] != "info"] == ["SP006"]
    (res,) = _outputs(cell, "execute_result")
    # named by the cell's own binding, at the cell's own line, in IPython's names of cells
    assert "target encode (In[5]:3)" in res.data["text/plain"], res.data["text/plain"]
    for c in (direct, line, cell):
        (res,) = _outputs(c, "execute_result")
        scan_line = setup.source.splitlines().index(next(ln for ln in setup.source.splitlines()
                                                         if ln.startswith("hs = th.scan"))) + 1
        assert f"In[1]:{scan_line}" in res.data["text/plain"], res.data["text/plain"]  # the scan's line
    for c, text in ((missing, "no_such_name"), (bad, "cannot analyse a int")):
        assert not _outputs(c, "error") and not _outputs(c, "execute_result"), c.outputs
        err = "".join(o.text for o in _outputs(c, "stream") if o.name == "stderr")
        assert "error:" in err and text in err and "hint:" in err and "Traceback" not in err, err
    (error,) = _outputs(failing, "error")  # the user's own failure: IPython's traceback, the user's error
    assert error.ename == "ValueError" and error.evalue == "the cell failed"
    if _has_pymc():  # a PyMC model: its sampler functions, as the command line finds them
        build, magic = nb.cells[8:]
        assert not _outputs(build, "error"), build.outputs
        (res,) = _outputs(magic, "execute_result")
        html = res.data["text/html"]
        assert "garch.logp_dlogp" in html and "<table>" in html and "SP006" in html, res.data["text/plain"]


def test_the_html_display_renders_in_a_browser(backend, mean_pool, tmp_path):
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no headless Chromium (scripts/test installs it where it can)")
    got = sp.inspect(mean_pool["encode"], example=[mean_pool["SCANPROBE_INPUTS"]["x"]], name="encode")
    page = tmp_path / "cell.html"
    page.write_text("<!doctype html><html><body><p>a notebook's page</p>" + got._repr_html_() + "</body></html>")
    shot = tmp_path / "cell.png"
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                           "--window-size=1100,900", page.as_uri()], capture_output=True, text=True, timeout=300)
    assert shot.exists() and shot.stat().st_size > 10_000, proc.stderr[-2000:]
    dump = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=300).stdout
    assert "SP006" in dump and "scanprobe-report" in dump
    assert ROOT.exists()
