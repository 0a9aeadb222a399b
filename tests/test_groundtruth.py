"""Every predicted size against what the backend really allocates when the function runs.

Fixtures in the shapes that went wrong on real models (tests/fixtures/truth/): a flattened token
matrix, BPTT of an RNN-RBM-style recurrence, a library-style LSTM layer with truncate_gradient, a
while-scan read at [-1], nested scans with a random state, reductions over the history, an
unused output, tap windows. Each runs in FAST_COMPILE and the backend's default mode, with 2,
300 and 5,000 steps (one build and one linked function for every length where the graph does
not depend on it); the buffers the run allocates are recorded (tests/groundtruth.py) and every
predicted one must equal them.
"""

import os

import pytest
from groundtruth import compare, evaluated, hooked, predicted

from conftest import BACKEND, FIXTURES

TRUTH = FIXTURES / "truth"
FILES = sorted(p.name for p in TRUTH.glob("[!_]*.py"))
MODES = ["FAST_COMPILE", None]
STEPS = [2, 300, 5000]


def analyse(name, mode, steps, monkeypatch):
    from scanprobe.pipeline import analyse_module

    monkeypatch.setenv("STEPS", str(steps))
    return analyse_module(str(TRUTH / name), mode=mode)


def _known_gap(name, mode, pred):
    """``pred`` without the one buffer of a known gap, and whether it was taken out.

    Aesara's default mode: the gradient of nested_long_step keeps one buffer (the outer backward
    scan's sit_sot #0) whose length, min(2, x.shape[0] + 1) rows, scanprobe cannot evaluate: its
    shape graph fails in both of Aesara's evaluation linkers (a Composite of over 32 inputs has no
    Python ufunc; the compiled one reports a cycle in the resolved graph). Every other buffer is
    still compared with the run; the test passes outright once that length is evaluated.
    Open in docs/next.md."""
    if not (BACKEND == "aesara" and name == "nested_long_step.py" and mode is None):
        return pred, False
    gap = [p for p in pred if p["shape"] is None and (p["scan"], p["within"], p["role"], p["index"])
           == ("grad_of_scan_fn", "", "sit_sot", 0)]
    return [p for p in pred if not any(p is g for g in gap)], bool(gap)


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
    gaps = False
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
            pred, gap = _known_gap(name, mode, predicted(live.target))
            gaps |= gap
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
            pred, gap = _known_gap(name, mode, predicted(live.target))
            assert any(p.get("within") for p in pred), "no nested buffer predicted"
            assert all(p["shape"] is not None for p in pred), [p for p in pred if p["shape"] is None]
            problems = compare(pred, run_and_record(live, calls))
            assert not problems, "\n".join([f"{name} {live.target.name} mode={mode} (cut)"] + problems)
    if gaps:
        pytest.xfail("Aesara: one gradient buffer of nested_long_step left symbolic; the others match the run")
