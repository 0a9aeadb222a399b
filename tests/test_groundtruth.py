"""Every predicted size against what the backend really allocates when the function runs.

Fixtures in the shapes that went wrong on real models (tests/fixtures/truth/): a flattened token
matrix, BPTT of an RNN-RBM-style recurrence, a library-style LSTM layer with truncate_gradient, a
while-scan read at [-1], nested scans with a random state, reductions over the history, an
unused output, tap windows. Each runs in FAST_COMPILE and the backend's default mode, with 2,
300 and 5,000 steps (one build and one linked function for every length where the graph does
not depend on it); the buffers the run allocates are recorded (tests/groundtruth.py) and every
predicted one must equal them.
"""

import pytest
from groundtruth import compare, evaluated, hooked, predicted

from conftest import FIXTURES

pytestmark = pytest.mark.same_backend  # once per backend version (conftest.RUN_ELSEWHERE)

TRUTH = FIXTURES / "truth"
FILES = sorted(p.name for p in TRUTH.glob("[!_]*.py"))
MODES = ["FAST_COMPILE", None]
STEPS = [2, 300, 5000]


def analyse(name, mode, steps, monkeypatch):
    from scanprobe.pipeline import analyse_module

    monkeypatch.setenv("STEPS", str(steps))
    return analyse_module(str(TRUTH / name), mode=mode)


def run_and_record(live, calls=None):
    """The buffers a call of the target allocates: hooked thunks on a VM linker, else the
    buffer variables computed by the function's own linker. ``calls`` keeps the function (and
    its hooks) for the next call with other inputs."""
    from scanprobe.runners.child import values_for

    backend = live.backend
    values = values_for(live, [])
    calls = {} if calls is None else calls
    key = id(live.captured)
    if key not in calls:
        linker = live.target.mode.linker.lower()
        if any(k in linker for k in ("vm", "py", "stack", "loop", "cvm")):
            with hooked(backend) as records:  # linked and first called with the hooks in place
                fn = live.session.realize(live.captured)
                fn(*values)
            calls[key] = (fn, records)
            return list(records)
        calls[key] = (live.session.realize(live.captured), None)
    fn, records = calls[key]
    if records is None:
        return evaluated(backend, fn, values)
    records.reset()
    fn(*values)
    return list(records)


def _lengths(analysis, steps, monkeypatch):
    """The analysis at ``steps`` from the one already built: the fixtures whose graph does not
    depend on the length give their inputs as a function (SCANPROBE_INPUTS read at analysis
    time), so only the walk runs again; the others are loaded again."""
    from scanprobe.pipeline import LiveTarget
    from scanprobe.walk.walker import analyse as walk

    monkeypatch.setenv("STEPS", str(steps))
    out = []
    for live in analysis.live:
        walked = walk(live.backend, live.built, live.captured, live.knowledge([]), live.session)
        out.append(LiveTarget(live.session, live.captured, live.built, walked))
    return out


@pytest.mark.parametrize("mode", MODES, ids=["fast_compile", "default"])
@pytest.mark.parametrize("name", FILES)
def test_predicted_buffers_are_what_runs(backend, name, mode, monkeypatch):
    """At 2, 300 and 5,000 steps, and for nested fixtures with every step cut
    (walk/nested_cut.py). One build and one linked function serve every length where the graph
    does not depend on it (the same function a user runs on longer data)."""
    calls: dict = {}
    first = analyse(name, mode, STEPS[0], monkeypatch)
    one_build = callable(first.live[0].session.module.__dict__.get("SCANPROBE_INPUTS"))
    for steps in STEPS:
        if steps == STEPS[0]:
            lives = first.live
        elif one_build:
            lives = _lengths(first, steps, monkeypatch)
        else:
            lives, calls = analyse(name, mode, steps, monkeypatch).live, {}
        for live in lives:
            pred = predicted(live.target)
            assert all(p["shape"] is not None for p in pred), (steps, [p for p in pred if p["shape"] is None])
            real = run_and_record(live, calls)
            assert real, f"{live.target.name}: no scan ran"
            problems = compare(pred, real)
            assert not problems, "\n".join([f"{name} {live.target.name} mode={mode} steps={steps}"] + problems)
    if name.startswith("nested") and one_build:
        # steps over walk/nested_cut.LIMIT nodes are optimized from the part that decides their
        # nested scans' buffers; forced here on every nested fixture, the sizes must not change
        from scanprobe.walk import nested_cut

        monkeypatch.setattr(nested_cut, "LIMIT", 0)
        for live in _lengths(first, 300, monkeypatch):
            pred = predicted(live.target)
            assert any(p.get("within") for p in pred), "no nested buffer predicted"
            assert all(p["shape"] is not None for p in pred), [p for p in pred if p["shape"] is None]
            problems = compare(pred, run_and_record(live, calls))
            assert not problems, "\n".join([f"{name} {live.target.name} mode={mode} (cut)"] + problems)


CVM_FIXTURES = ["attention_decoder.py", "char_rnn_columns.py", "lstm_layer.py", "rbm_bptt.py"]


@pytest.mark.parametrize("name", CVM_FIXTURES)
def test_gradient_buffers_under_the_cvm_linker(backend, name, monkeypatch):
    """PyTensor's C virtual machine (`mode="CVM"`; the default is Numba from 3.0 on) links the
    BLAS rewrites' forms: the gradient scans' per-step terms and tapes, column-major and
    row-major, must be what that linker allocates (issue 25, item 6)."""
    if backend != "pytensor":
        pytest.skip("the CVM mode is PyTensor's (Theano and Aesara link a CVM by default)")
    lives = analyse(name, "CVM", 300, monkeypatch).live
    calls: dict = {}
    for live in lives:
        pred = predicted(live.target)
        assert all(p["shape"] is not None for p in pred), [p for p in pred if p["shape"] is None]
        problems = compare(pred, run_and_record(live, calls))
        assert not problems, "\n".join([f"{name} {live.target.name} mode=CVM"] + problems)
