"""The other shipped samples: needed history, and no scan at all."""

from conftest import SAMPLES, scanprobe
from helpers import buffers, findings


def test_rnn_history_is_needed_not_waste(backend):
    res = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--format", "json")
    assert res.rc == 0, res
    rep = res.json()
    assert findings(rep) == []
    # the needed history gets a note: what scan_checkpoints would keep (50 steps of 16x32 float32)
    (note,) = findings(rep, severities=("info",))
    assert "read by the backward pass: needed" in note["message"]
    assert "N=4: 36.9 kB" in note["explanation"][0]  # (ceil(50/4) + 1 + 4) rows of 2048 B
    # the fix names the user's own backend's scan_checkpoints, importable as written
    call = {"theano": "theano.scan_checkpoints"}.get(backend, f"{backend}.scan.checkpoints.scan_checkpoints")
    assert note["fix"][0].startswith(call + " in place of scan"), note["fix"]
    assert rep["targets"][0]["mode"]["checkpoints"] == call
    import importlib

    from scanprobe.backends import get_backend

    get_backend(backend).load([])  # the backend as scanprobe loads it (Theano's flags on Python 3.11)
    module, _, attr = call.rpartition(".")
    assert callable(getattr(importlib.import_module(module), attr))
    state = [b for b in buffers(rep) if b["role"] == "sit_sot" and b["belongs_to"] == "recurrent state `h_prev`"]
    assert len(state) == 1, buffers(rep)
    h = state[0]
    assert h["status"] == "full" and h["verdict"] == "needed"
    assert h["shape"] == [51, 16, 32] and h["bytes"] == 51 * 16 * 32 * 4
    assert h["why"], h


def test_rnn_in_fast_compile_flags_only_removable_accumulators(backend):
    res = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--mode", "FAST_COMPILE", "--format", "json")
    rep = res.json()
    for f in findings(rep):
        # the accumulators, and the gradient with respect to x that FAST_COMPILE computes unread
        assert "gradient accumulator" in f["message"] or "nothing reads it" in f["message"] or f["severity"] == "info", f
    state = [b for b in buffers(rep) if b["belongs_to"] == "recurrent state `h_prev`"]
    assert state and state[0]["verdict"] == "needed"


def test_mlp_without_scan_is_clean(backend):
    res = scanprobe("inspect", SAMPLES / "mlp_no_scan.py")
    assert res.rc == 0, res
    assert "no scan in this function" in res.out
    assert "no findings" in res.out


def test_mean_pooled_rnn_keeps_its_history_only_to_average_it(backend):
    """SP006 at the sample's real size: 2000 steps of 64 x 256 float32 kept for a mean."""
    res = scanprobe("inspect", SAMPLES / "rnn_mean_pool.py", "--format", "json")
    assert res.rc == 1, res
    (f,) = res.json()["findings"]
    # 2001 rows (2000 in Theano's FAST_RUN, whose buffer starts after the initial state)
    assert f["code"] == "SP006" and f["bytes"] in (2000 * 64 * 256 * 4, 2001 * 64 * 256 * 4)
    assert "sum over the steps" in f["message"]
    assert f["site"]["line"] == 30  # pooled = hs.mean(axis=0)
    clean = scanprobe("inspect", SAMPLES / "rnn_mean_pool_clean.py", "--format", "json")
    assert clean.rc == 0 and clean.json()["findings"] == [], clean
