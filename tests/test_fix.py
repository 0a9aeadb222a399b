"""scanprobe fix, SP001: the rewrite applied, proven by rerunning (outputs equal, memory down)."""

from conftest import SAMPLES, scanprobe


def test_seed000_fix_cuts_measured_memory_100x_with_equal_outputs(backend):
    res = scanprobe("fix", SAMPLES / "seed000_pixel_loop.py", "--runs", "1", "--format", "json",
                    env={"SEED000_SIZE": "scaled"})  # 1024 steps, 32 images
    assert res.rc == 0, res
    body = res.json()
    (f,) = body["fixes"]
    assert f["outputs_equal"] is True and f["max_abs_diff"] == 0.0
    before = f["before"]["measured"]["rss_peak_above_precall"]
    after = f["after"]["measured"]["rss_peak_above_precall"]
    assert before > 100 * after, (before, after)
    assert f["before"]["measured"]["tracemalloc_peak"] > 100 * f["after"]["measured"]["tracemalloc_peak"]
    assert f["after"]["remaining_sp001"] == 0
    assert ".including(" in f["suggestion"] and f["tag"] in f["suggestion"]
    assert body["summary"] == {"fixed": ["cost_and_grads"], "failed": [], "unfixed": [], "exit_code": 0}


def test_nothing_to_fix(backend):
    res = scanprobe("fix", SAMPLES / "rnn_bptt.py")
    assert res.rc == 0, res
    assert "nothing to do" in res.out


def test_seed001_explained_in_the_users_names(backend):
    res = scanprobe("inspect", SAMPLES / "seed001_function_in_scan.py")
    assert res.rc == 2, res
    assert "SP004 compiled-function-in-scan: `test_fn` (compiled at seed001_function_in_scan.py:12)" in res.err
    assert "called on the symbolic `curr` in `step` (seed001_function_in_scan.py:16)" in res.err
    assert "replace={xin: x[curr:curr + 1]}" in res.err and "T.sum(xin ** 2)" in res.err


def test_seed001_fixed_sample_matches_numpy(backend):
    import subprocess
    import sys

    from conftest import ROOT, child_env

    res = scanprobe("inspect", SAMPLES / "seed001_fixed.py")
    assert res.rc == 0, res
    code = (
        "import sys; sys.path.insert(0, 'sample_graphs'); import numpy as np; import seed001_fixed as m;"
        "x = np.asarray([7.1, 2.2, 3.4], dtype='float32'); ref = [np.sum(x[i:i + 1] ** 2) for i in range(2)];"
        "print(np.allclose(m.out_fn(), ref, rtol=1e-6))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), cwd=ROOT)
    assert proc.stdout.strip().endswith("True"), proc.stderr
