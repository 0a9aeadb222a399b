"""scanprobe fix and scanprobe.fix for SP003 (seed 002) and SP002 (maps): real graphs rewritten,
compiled and rerun on the installed backend; every fix proven by equal outputs."""

import json
import subprocess
import sys

from conftest import FIXTURES, ROOT, SAMPLES, child_env, scanprobe


def test_seed002_fix_is_the_sum_of_squares_form_and_verified(backend):
    res = scanprobe("fix", SAMPLES / "seed002_per_example_grads.py", "--runs", "2", "--format", "json")
    assert res.rc == 0, res
    body = res.json()
    (f,) = body["fixes"]
    assert f["rules"] == ["SP003"] and f["outputs_equal"] is True
    assert f["tolerance"] == {"rtol": 1e-10, "atol": 1e-12}  # float64 outputs
    (rw,) = [r for r in f["rewrites"] if r["form"]]
    assert rw["form"] == "sum-of-squares"
    assert "dot((A*A).T, D*D)" in " ".join(rw["detail"]) and "(D*D).sum(0)" in " ".join(rw["detail"])
    # the snippet is written in the user's names
    assert "T.dot((x ** 2).T, g[0] ** 2)" in rw["snippet"] and "sum_sq_b2" in rw["snippet"]
    assert body["summary"] == {"fixed": ["mean_sq_grads"], "failed": [], "unfixed": [], "exit_code": 0}


def test_seed002_terminal_report_shows_the_code_to_write(backend):
    res = scanprobe("fix", SAMPLES / "seed002_per_example_grads.py", "--runs", "1")
    assert res.rc == 0, res
    assert "SP003 · verified" in res.out and "sum-of-squares form" in res.out
    assert "g = T.grad(cost.sum(), [z_W1, z_b1, z_W2, z_b2])" in res.out


def test_inspect_finds_sp003_with_the_batch_length(backend):
    res = scanprobe("inspect", SAMPLES / "seed002_per_example_grads.py", "--format", "json")
    assert res.rc == 1, res
    (f,) = res.json()["findings"]
    assert f["code"] == "SP003" and "64 rows (= the number of steps)" in f["message"]
    assert f["site"]["line"] == 42 and "squared_grads" in f["message"]
    clean = scanprobe("inspect", SAMPLES / "seed002_clean.py", "--format", "json")
    assert clean.rc == 0 and clean.json()["findings"] == [], clean


def test_sp003_recognised_without_sizes_by_probing_and_fixed_per_example(backend):
    res = scanprobe("inspect", FIXTURES / "per_example_kept.py", "--format", "json")
    assert res.rc == 1, res
    (f,) = res.json()["findings"]
    assert f["code"] == "SP003" and "x.shape[0] rows" in f["message"]
    fix = scanprobe("fix", FIXTURES / "per_example_kept.py", "--input", "x=6x5:float32", "--runs", "1", "--format", "json")
    assert fix.rc == 0, fix
    (entry,) = fix.json()["fixes"]
    assert [r["form"] for r in entry["rewrites"]] == ["per-example"]  # the squares are returned whole
    assert entry["outputs_equal"] and entry["tolerance"]["rtol"] == 1e-5  # float32
    assert "x[i:i + 1]" in entry["rewrites"][0]["snippet"]


def test_cost_that_mixes_examples_is_not_given_a_per_example_form(backend):
    res = scanprobe("fix", FIXTURES / "per_example_mixed.py", "--runs", "1", "--format", "json")
    body = res.json()
    rewrites = [r for f in body["fixes"] for r in f["rewrites"]] + [
        r for n in body["not_applied"] for r in n["rewrites"]
    ]
    (sp003,) = [r for r in rewrites if r["rule"] == "SP003"]
    assert sp003["form"] == "" and "both per example and for the whole batch" in sp003["reason"]
    # fixes follow findings: the scan's finding is SP003, so SP002's vectorizer is not offered it
    # (it used to be on PyTensor: a batched loop that still did the whole batch's work per example)
    assert res.rc == 1 and body["fixes"] == [] and body["summary"]["unfixed"] == ["mixed: SP003"]


def test_map_is_vectorized_and_verified(backend):
    res = scanprobe("fix", FIXTURES / "map_scan.py", "--runs", "1", "--format", "json")
    assert res.rc == 0, res
    (f,) = res.json()["fixes"]
    assert f["rules"] == ["SP002"] and f["outputs_equal"]
    (rw,) = f["rewrites"]
    assert rw["form"] == "vectorized"
    assert ("vectorize_graph" if backend == "pytensor" else "Theano vectorizer") in rw["detail"][0]


def test_seed000_map_is_named_blocked_not_vectorized(backend):
    res = scanprobe("inspect", SAMPLES / "seed000_pixel_loop.py", "--format", "json")
    notes = [f for f in res.json()["findings"] if f["code"] == "SP002"]
    assert len(notes) == 1 and notes[0]["severity"] == "info"
    assert "slice bounds depend on the step" in notes[0]["message"] and "convolve_location" in notes[0]["message"]
    assert "convolution op" in notes[0]["fix"][0]


_API = r"""
import sys, warnings
sys.path.insert(0, {samples!r})
import numpy as np
import scanprobe
import seed002_per_example_grads as m
X, Y = m.SCANPROBE_INPUTS["x"], m.SCANPROBE_INPUTS["y"]
ref = m.mean_sq_grads(X, Y)
g = scanprobe.fix([m.x, m.y], m.g_square)                   # function's own arguments
out = g(X, Y)
assert g.verification["status"] == "verified", g.verification
assert all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(ref, out))
assert g.applied() == ["SP003 scan `scan_fn`: sum-of-squares form"], g.applied()
h = scanprobe.fix(m.mean_sq_grads)                          # a compiled function
h(X, Y)
print("compiled:", h.applied(), h.verification["status"], h.notes)
# a fix whose outputs differ is dropped with a warning and the original is used
from scanprobe.fixes import per_example as rewrites
real = rewrites._sum_of_squares
rewrites._sum_of_squares = lambda *a: {{p: v * 2 for p, v in real(*a).items()}}
bad = scanprobe.fix([m.x, m.y], m.g_square)
rewrites._sum_of_squares = real
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    out = bad(X, Y)
assert bad.verification["status"] == "failed" and any(issubclass(x.category, scanprobe.api.FixFailed) for x in w)
assert all(np.allclose(a, b) for a, b in zip(ref, out)) and all(np.allclose(a, b) for a, b in zip(ref, bad(X, Y)))
print("ok")
"""


def test_python_api_fix_verifies_on_first_call(backend):
    proc = subprocess.run(
        [sys.executable, "-c", _API.format(samples=str(SAMPLES))],
        capture_output=True, text=True, env=child_env(), cwd=ROOT, timeout=600,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]
    compiled = proc.stdout.splitlines()[0]
    if backend == "theano":  # Theano keeps the unoptimized graph of a compiled function
        assert "sum-of-squares form" in compiled and "verified" in compiled
    else:  # PyTensor keeps only the optimized one: the note says how to get all graph fixes
        assert "sum-of-squares" not in compiled and "verified" in compiled and "pass function's arguments" in compiled


def test_fix_device_cuda_without_a_gpu_is_a_clear_error(backend):
    res = scanprobe("fix", SAMPLES / "seed002_per_example_grads.py", "--device", "cuda")
    assert res.rc == 2, res
    assert res.err.startswith("error: --device cuda: no CUDA GPU on this machine") and "hint:" in res.err


def test_fixed_function_on_the_jax_linker_is_compared_with_the_original(backend, monkeypatch):
    """What --device cuda runs, on the CPU: the original as the user has it, the fixed function
    compiled by PyTensor's JAX linker (JAX_PLATFORMS=cpu here), outputs compared."""
    if backend != "pytensor":  # Theano has no JAX linker; its GPU backend needs pygpu
        import pytest

        from scanprobe.backends import get_backend
        from scanprobe.commands import profile
        from scanprobe.errors import ScanprobeError

        # as if this machine had a GPU: the backend's own reason is what stops --device cuda
        monkeypatch.setattr(profile.shutil, "which", lambda name: f"/usr/bin/{name}")
        with pytest.raises(ScanprobeError) as err:
            profile._check_device("cuda", backend)
        reason = get_backend(backend).no_gpu_reason
        expected = f"--device cuda: {reason}" if reason else "--device cuda runs PyTensor through its JAX linker"
        assert err.value.message.startswith(expected) and err.value.hint, err.value.message
        return
    code = (
        "import json, sys\n"
        "from scanprobe.records import to_plain\n"
        "from scanprobe.runners.messages import ChildSpec\n"
        "from scanprobe.runners.supervise import run_child\n"
        "d = run_child(ChildSpec(spec='sample_graphs/seed002_per_example_grads.py', backend='pytensor', action='fix',"
        " runs=1, fixed_mode='JAX'), timeout=600, memory_limit=None)\n"
        "print(json.dumps({'error': to_plain(d.error), 'targets': [t.to_json() for t in d.fixes]}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=child_env(JAX_PLATFORMS="cpu"), cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    body = json.loads(proc.stdout.strip().splitlines()[-1])
    assert body["error"] is None
    (t,) = body["targets"]
    assert t["fixed_mode"] == "JAX" and t["rules"] == ["SP003"] and t["outputs_equal"] is True
