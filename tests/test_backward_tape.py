"""SP007's fix (and SP008's, where the default mode pushes the weight gradients' products out of
the backward scan) against what runs: the gradient scan rebuilt with running tapes allocates what
scanprobe predicts for it (tests/groundtruth.py), the tapes it rewrote hold at most two rows, and
the fixed training step computes the same loss and updated parameters.

On the LSTM classifier sample (two tapes: `h` read at its last step, `c` never) and the GRU fix
sample, in FAST_COMPILE and the backend's default mode.
"""

import numpy as np
import pytest
from groundtruth import compare, predicted, run_recorded

from conftest import ROOT

pytestmark = pytest.mark.same_backend  # once per backend version (conftest.RUN_ELSEWHERE)

FILES = {"lstm": ROOT / "sample_graphs" / "lstm_classifier.py",
         "gru": ROOT / "tests" / "fix_samples" / "SP007_running_tape.py"}


@pytest.mark.parametrize("mode", ["FAST_COMPILE", None], ids=["fast_compile", "default"])
@pytest.mark.parametrize("name", sorted(FILES))
def test_running_tapes_are_what_runs(backend, name, mode, monkeypatch):
    from scanprobe.fixes.pipeline import findings_of, fixed_build, plan, site_of
    from scanprobe.fixes.verify import SharedState, outputs
    from scanprobe.fixes.verify import compare as compare_outputs
    from scanprobe.pipeline import analyse_module, knowledge_of
    from scanprobe.runners.child import values_for

    monkeypatch.chdir(FILES[name].parent)
    live = analyse_module(str(FILES[name]), mode=mode).live[0]
    b = live.backend
    findings = findings_of(live.target)
    tapes = [f for f in findings if f.code == "SP007" and f.counts]
    assert tapes, [f.message for f in findings]
    fix_plan = plan(b, live.captured, live.target, findings, site_of(live.session))
    assert "running tape" in [r.form for r in fix_plan.rewrites if r.rule == "SP007"], fix_plan.notes()
    _, fixed, target = fixed_build(b, live.session, live.captured, live.built, fix_plan, knowledge_of(live.session, []))
    assert not [f for f in findings_of(target) if f.code in ("SP007", "SP008") and f.counts]

    values = values_for(live, [])
    state = SharedState(live.built.fgraph)
    before = outputs(live.session.realize(live.captured), values)  # the loss and the updated parameters
    state.restore()
    after, real, _ = run_recorded(b, fixed, target, values, state, outputs)
    assert compare_outputs(before, after)["outputs_equal"]
    pred = predicted(target)
    problems = compare(pred, real)
    assert not problems, "\n".join(problems)
    grad = [r for r in real if r["scan"].startswith("grad_of") and r["nested"] == 0]
    mit_mots = [r for r in grad if r["role"] == "mit_mot"]
    # no tape left; the rewritten ones are states of at most 2 rows (or untraced: PyTensor 3
    # keeps a one-row state as a plain value)
    assert not mit_mots, mit_mots
    running = [r for r in grad if (r["role"], len(r["shape"])) in (("sit_sot", 3), ("untraced", 2))]
    assert running and all(r["role"] == "untraced" or r["shape"][0] <= 2 for r in running), grad
