"""Property-based: random scan programs never crash the analysis, every predicted scan buffer
(nested ones included) equals the buffer the backend really allocates when the function runs, and
the verdict on each top-level buffer's history follows from how the program reads it.

Each example is a small user module (written to a temporary folder), analysed as `inspect` does
and then run with the Scan thunks hooked (tests/groundtruth.py). Roles, taps, shapes, dtypes,
nested scans, while-scans, gradients, modes, unread outputs and reductions over time vary, with
n_steps from 1 to 5,000. CI runs a fixed (derandomized) set of examples per leg;
`SCANPROBE_HYPOTHESIS_EXAMPLES=500 bash scripts/test -k random_scan` runs more, randomly.
"""

import os
import textwrap

from groundtruth import compare, predicted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_groundtruth import run_and_record

import pytest

from conftest import BACKEND, FIXTURES

pytestmark = pytest.mark.same_backend  # once per backend version (conftest.RUN_ELSEWHERE)

MODES = {"theano": ["FAST_COMPILE", "FAST_RUN"], "pytensor": ["FAST_COMPILE", "CVM"]}


@st.composite
def programs(draw):
    return {
        "steps": draw(st.one_of(st.integers(1, 25), st.sampled_from([300, 5000]))),
        "width": draw(st.integers(1, 6)),
        "dtype": draw(st.sampled_from(["float32", "float64"])),
        "state": draw(st.sampled_from(["sit_sot", "mit_sot2", "mit_sot3", "none"])),
        "sequence": draw(st.booleans()),
        "non_seq": draw(st.sampled_from(["shared", "explicit", "none"])),
        "nested": draw(st.booleans()),
        "read": draw(st.sampled_from(["last", "length", "full", "sum", "mean", "max", "unused"])),
        "grad": draw(st.booleans()),
        "until": draw(st.booleans()),
        "mode": draw(st.sampled_from(MODES.get(BACKEND, ["FAST_COMPILE"]))),
    }


def module_source(p) -> str:
    n, d, dt = p["steps"], p["width"], p["dtype"]
    lines = [
        "import numpy as np",
        "from _backend import T, th, until",
        f"x0 = T.vector('x0', dtype='{dt}')",
        f"seq = T.matrix('seq', dtype='{dt}')",
        f"W = th.shared(np.full(({d},), 0.5, dtype='{dt}'), name='W')",
        f"v = T.vector('v', dtype='{dt}')",
        "inputs = [x0, seq, v]",
        f"SCANPROBE_INPUTS = {{'x0': np.ones({d}, dtype='{dt}'), 'seq': np.ones(({n}, {d}), dtype='{dt}'),"
        f" 'v': np.full({d}, 0.25, dtype='{dt}')}}",
    ]
    ns = {"shared": "W", "explicit": "v", "none": None}[p["non_seq"]]
    args = []
    if p["sequence"]:
        args.append("s")
    taps = {"sit_sot": [-1], "mit_sot2": [-2, -1], "mit_sot3": [-3, -1], "none": []}[p["state"]]
    args += [f"h{i}" for i in range(len(taps))]
    if ns:
        args.append("w")
    body = [f"    acc = {' + '.join(a for a in args if a.startswith('h')) or 'T.zeros_like(x0)'}"]
    if p["sequence"]:
        body.append("    acc = acc + s")
    if ns:
        body.append("    acc = acc * w")
    if p["nested"]:
        body.append("    inner = th.scan(lambda a: T.tanh(a), outputs_info=[acc], n_steps=3)[0]")
        body.append("    acc = inner[-1]")
    body.append("    out = T.tanh(acc)")
    outs = "[out, out * 2]" if p["read"] == "unused" else "out"
    if p["until"]:
        body.append(f"    return {outs}, until(T.sum(out) > 1e9)")
    else:
        body.append(f"    return {outs}")
    lines.append(f"def step({', '.join(args)}):")
    lines += body
    if taps:
        if len(taps) == 1:
            outputs_info = "[x0]"
        else:
            k = -taps[0]
            outputs_info = f"[dict(initial=T.tile(x0.dimshuffle('x', 0), ({k}, 1)), taps={taps})]"
    else:
        outputs_info = "[None]"
    if p["read"] == "unused":  # a second per-step output that nothing reads
        outputs_info = outputs_info[:-1] + ", None]"
    call = ["step", f"outputs_info={outputs_info}", f"n_steps={n}"]
    if p["sequence"]:
        call.append("sequences=[seq]")
    if ns:
        call.append(f"non_sequences=[{ns}]")
    lines.append(f"res = th.scan({', '.join(call)})[0]")
    if p["read"] == "unused":
        lines.append("res = res[0]")
    read = {"last": "res[-1]", "length": "res[res.shape[0] - 1]", "full": "res", "sum": "res.sum()",
            "mean": "res.mean(axis=0)", "max": "res.max(axis=0)", "unused": "res[-1]"}[p["read"]]
    lines.append(f"out = {read}")
    if p["grad"]:
        lines.append("out = [out, T.grad(res.sum(), W if W in [W] else W)]" if ns == "W" else "out = [out]")
    lines.append(f"f = th.function(inputs, out, mode='{p['mode']}', on_unused_input='ignore')")
    return "\n".join(lines) + "\n"


EXAMPLES = int(os.environ.get("SCANPROBE_HYPOTHESIS_EXAMPLES", "12"))
#: CI's examples are the same on every run (derandomized); a larger run draws new ones
RANDOM = EXAMPLES > 12


@settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(p=programs())
def test_random_scan_programs_predict_what_runs(backend, tmp_path_factory, p):
    from scanprobe.analysis.history import classify
    from scanprobe.fixes.pipeline import findings_of
    from scanprobe.pipeline import analyse_module

    folder = tmp_path_factory.mktemp("prog")
    (folder / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    src = module_source(p)
    (folder / "model.py").write_text(src)
    where = f"\n{textwrap.indent(src, '    ')}"
    analysis = analyse_module(str(folder / "model.py"))
    (live,) = analysis.live
    pred = predicted(live.target)
    real = run_and_record(live)
    problems = compare(pred, real)
    assert not problems, "\n".join(problems) + where
    # every buffer the run allocated was predicted with a size, but a while-scan's gradient
    # (it runs as many steps as the forward loop did: such sizes stay formulas, never guesses)
    unsized = [x for x in pred if x["shape"] is None]
    assert not unsized or p["until"], (unsized, where)
    _verdicts_follow_the_reads(p, live.target, classify(live.target), findings_of(live.target), where)


def _verdicts_follow_the_reads(p, target, verdicts, findings, where):
    grad = p["grad"] and p["non_seq"] == "shared"  # the backward pass reads the forward history
    codes = {f.code for f in findings if f.counts}
    for v in verdicts:
        s, b = v.scan, v.buffer
        if s.parent is not None or s.is_gradient or v.status != "full" or b.role == "mit_mot":
            continue
        if s.step_function == "<lambda>":
            continue  # the nested scan, at the top: scan() of 1 step builds no Scan (Theano inlines it)
        read = p["read"]
        if read == "unused" and b.role == "nit_sot" and b.index == (0 if p["state"] != "none" else 1):
            assert v.verdict == "unused", (v.verdict, v.why, where)
            assert "SP001" in codes, where
            continue
        if grad:
            continue
        if read in ("last", "length", "unused"):
            assert v.verdict == "removable", (b.role, v.verdict, v.why, where)
            assert "SP001" in codes, where
        elif read == "full":
            assert v.verdict == "needed", (b.role, v.verdict, v.why, where)
        elif read in ("sum", "mean", "max"):
            # read only by the fold: `folded` (SP006's); folded with other axes first: `needed`
            assert v.verdict in ("needed", "folded"), (b.role, v.verdict, v.why, where)
            if v.verdict == "folded":
                assert "SP006" in codes, (v.why, where)
            # res.sum() folds the whole array (over time among others); a map's outputs are
            # SP002's (vectorizing removes the scan), not SP006's
            if read != "sum" and p["state"] != "none":
                assert "SP006" in codes, (v.why, where)
