"""SP010's fix, checkpointed history (``fix --max-buffer``), against what runs.

The LSTM classifier sample and the GRU fix sample (both losses read the last state), trained one
step: the fixed training step's buffers are what the backend allocates (tests/groundtruth.py),
every one of them fits the budget, the original loop is gone, and the loss and the updated
parameters are equal. A loss on every step (rnn_bptt.py) and a budget below one level of
checkpoints are refused with the reason.
"""

import pytest
from groundtruth import compare, predicted, run_recorded

from conftest import ROOT, SAMPLES, scanprobe

pytestmark = pytest.mark.same_backend  # once per backend version (conftest.RUN_ELSEWHERE)

FILES = {  # (file, budget, environment)
    "lstm": (SAMPLES / "lstm_classifier.py", 100_000, {"LSTM_STEPS": "60"}),
    "gru": (ROOT / "tests" / "fix_samples" / "SP007_running_tape.py", 2_000, {}),
}


def _plan(path, budget, mode=None):
    from scanprobe.fixes.pipeline import findings_of, plan, site_of
    from scanprobe.pipeline import analyse_module
    from scanprobe.settings import Settings

    live = analyse_module(str(path), mode=mode).live[0]
    settings = Settings(max_buffer=budget)
    findings = findings_of(live.target, settings)
    fix_plan = plan(live.backend, live.captured, live.target, findings, site_of(live.session), settings,
                    live.session.pullbacks)
    return live, settings, fix_plan


# the LSTM (two states, the cell's cotangent disconnected) in FAST_COMPILE only: its default-mode
# build costs Theano 2.5 minutes of C compilation; the GRU covers the default mode
@pytest.mark.parametrize("name, mode", [("gru", "FAST_COMPILE"), ("gru", None), ("lstm", "FAST_COMPILE")],
                         ids=["gru-fast_compile", "gru-default", "lstm-fast_compile"])
def test_checkpointed_history_is_what_runs_and_fits(backend, name, mode, monkeypatch):
    from scanprobe.fixes.pipeline import findings_of, fixed_build
    from scanprobe.fixes.verify import SharedState, outputs
    from scanprobe.fixes.verify import compare as compare_outputs
    from scanprobe.pipeline import knowledge_of
    from scanprobe.runners.child import values_for

    path, budget, env = FILES[name]
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(path.parent)
    live, settings, fix_plan = _plan(path, budget, mode)
    b = live.backend
    over = [f for f in findings_of(live.target, settings) if f.code == "SP010"]
    assert over, "the history is over the budget before the fix"
    (ck,) = [r for r in fix_plan.rewrites if r.rule == "SP010"]
    assert ck.form == "checkpointed", fix_plan.notes()
    _, fixed, target = fixed_build(b, live.session, live.captured, live.built, fix_plan, knowledge_of(live.session, []))
    sizes = {(s.name, bf.role, bf.index): bf.bytes for s in target.scans for bf in s.buffers}
    assert all(v is not None and v <= budget for v in sizes.values()), sizes
    assert not [f for f in findings_of(target, settings) if f.code == "SP010"]
    forward = {s.name for s in live.target.scans if not s.is_gradient}
    assert not forward & {s.name for s in target.scans}, "the original loop still runs"
    assert any(s.parent is not None for s in target.scans), "no segment loop nested in the checkpoints"

    values = values_for(live, [])
    state = SharedState(live.built.fgraph)
    before = outputs(live.session.realize(live.captured), values)  # the loss and the updated parameters
    state.restore()
    after, real, thunks = run_recorded(b, fixed, target, values, state, outputs)
    assert not thunks or any(r["nested"] for r in real), "the segments' buffers were not recorded"
    assert compare_outputs(before, after)["outputs_equal"]
    problems = compare(predicted(target), real)
    assert not problems, "\n".join(problems)


def test_checkpoints_refused_with_the_reason(backend, monkeypatch):
    # a loss on every step needs the history for its own value
    monkeypatch.chdir(SAMPLES)
    _, _, fix_plan = _plan(SAMPLES / "rnn_bptt.py", 10_000)
    (ck,) = [r for r in fix_plan.rewrites if r.rule == "SP010"]
    assert not ck.form and "other steps than the last" in ck.reason, fix_plan.notes()
    # one GRU state row is 4 x 5 x 8 = 160 B: 40 steps need 7 rows (1.1 kB) at the least
    path = FILES["gru"][0]
    monkeypatch.chdir(path.parent)
    _, _, fix_plan = _plan(path, 1_000)
    (ck,) = [r for r in fix_plan.rewrites if r.rule == "SP010"]
    assert not ck.form and "160 B" in ck.reason and "keep 7 rows (1.1 kB)" in ck.reason, ck.reason


def test_segment_length_is_the_shortest_longest_buffer():
    from scanprobe.fixes.checkpoint import rows_kept, segment_length

    for n in list(range(2, 300)) + [1000, 10_000, 12_345]:
        k = segment_length(n)
        best = min(rows_kept(n, c) for c in range(1, n + 1))
        assert rows_kept(n, k) == best, (n, k)
    assert segment_length(1000) == 31 and rows_kept(1000, 31) == 33


def test_fix_max_buffer_refuses_no_budget(backend):
    # `fix --max-buffer` on the command line, applied and verified: tests/fix_samples/SP010_checkpoints
    res = scanprobe("fix", FILES["gru"][0], "--max-buffer", "0")
    assert res.rc == 2 and "bad --max-buffer" in res.err and "hint:" in res.err, res


def test_check_names_fix_max_buffer(backend):
    path = FILES["gru"][0]
    res = scanprobe("check", path, "--max-buffer", "2kB", "--select", "SP010", cwd=path.parent)
    assert res.rc == 1, res
    assert "hint: `scanprobe fix SP007_running_tape.py --max-buffer 2kB` fits it" in res.out, res.out


def test_api_fix_max_buffer_with_recorded_gradients(backend):
    """``scanprobe.fix(..., max_buffer=, example=)`` checkpoints a gradient built inside
    ``record_gradients()``; without the recording it says how to get it."""
    import numpy as np

    import scanprobe
    from scanprobe.backends import get_backend

    b = get_backend(backend)
    b.load([])
    th, T = b.api.module, b.api.T
    rng = np.random.default_rng(5)
    X, y = T.tensor3("X", dtype="float64"), T.vector("y", dtype="float64")
    W = th.shared(rng.normal(size=(8, 5)) * 0.4, name="W")
    w_out = th.shared(rng.normal(size=5), name="w_out")
    hs = b.api.scan(lambda x_t, h: T.tanh(T.dot(T.concatenate([x_t, h], axis=1), W)), sequences=[X],
                    outputs_info=[T.zeros((X.shape[1], 5), dtype="float64")])[0]
    loss = T.mean((T.dot(hs[-1], w_out) - y) ** 2)
    xs, ys = rng.normal(size=(40, 4, 3)), rng.normal(size=4)

    def step(grads):
        return [(p, p - 0.1 * g) for p, g in zip([W, w_out], grads)]

    plain = scanprobe.fix([X, y], loss, updates=step(T.grad(loss, [W, w_out])), max_buffer="2kB", example=(xs, ys))
    (ck,) = [r for r in plain.rewrites if r["rule"] == "SP010"]
    assert not ck["form"] and "record_gradients" in ck["reason"], ck
    with scanprobe.record_gradients():
        grads = T.grad(loss, [W, w_out])
    start = [W.get_value(), w_out.get_value()]
    f = scanprobe.fix([X, y], loss, updates=step(grads), max_buffer="2kB", example=(xs, ys))
    assert "SP010 scan `scan_fn`: checkpointed form" in f.applied(), f.applied()
    f(xs, ys)
    assert f.verification["status"] == "verified", f.verification
    assert not np.allclose(W.get_value(), start[0])  # the update ran once


NESTED = '''
import numpy as np
from _backend import T, th

W = th.shared(np.full((3, 3), 0.1), name="W")
X = T.tensor3("X", dtype="float64")


def step(x_t, h):
    inner = th.scan(lambda v: T.tanh(T.dot(v, W)), sequences=[x_t])[0]  # a scan in the step
    return T.tanh(h + inner.sum(0))


hs = th.scan(step, sequences=[X], outputs_info=[T.zeros((3,), dtype="float64")])[0]
loss = hs[-1].sum()
train = th.function([X], loss, updates=[(W, W - 0.1 * T.grad(loss, W))])
SCANPROBE_INPUTS = {"X": np.ones((50, 4, 3))}
'''


def test_nested_scans_are_left_alone(backend, tmp_path, monkeypatch):
    import shutil

    shutil.copy(SAMPLES / "_backend.py", tmp_path / "_backend.py")
    (tmp_path / "nested.py").write_text(NESTED)
    monkeypatch.chdir(tmp_path)
    _, _, fix_plan = _plan(tmp_path / "nested.py", 300)
    (ck,) = [r for r in fix_plan.rewrites if r.rule == "SP010"]
    assert not ck.form and "nested scans are left as they are" in ck.reason, fix_plan.notes()
