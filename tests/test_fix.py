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
    assert body["summary"] == {"fixed": ["cost_and_grads"], "failed": [], "exit_code": 0}


def test_nothing_to_fix(backend):
    res = scanprobe("fix", SAMPLES / "rnn_bptt.py")
    assert res.rc == 0, res
    assert "nothing to fix" in res.out
