"""Property-based: random scan programs never crash the analysis, and the bytes predicted for
every top-level scan buffer equal the bytes a profiled run observes.

Each example is a small user module (written to a temporary folder) profiled end to end through
the real CLI. Roles, taps, shapes, dtypes, nested scans, while-scans, gradients and modes vary.
"""

import textwrap

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import BACKEND, FIXTURES, scanprobe

MODES = {"theano": ["FAST_COMPILE", "FAST_RUN"], "pytensor": ["FAST_COMPILE", "CVM"]}


@st.composite
def programs(draw):
    return {
        "steps": draw(st.integers(1, 25)),
        "width": draw(st.integers(1, 6)),
        "dtype": draw(st.sampled_from(["float32", "float64"])),
        "state": draw(st.sampled_from(["sit_sot", "mit_sot2", "mit_sot3", "none"])),
        "sequence": draw(st.booleans()),
        "non_seq": draw(st.sampled_from(["shared", "explicit", "none"])),
        "nested": draw(st.booleans()),
        "read": draw(st.sampled_from(["last", "full", "sum"])),
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
    if p["until"]:
        body.append("    return out, until(T.sum(out) > 1e9)")
    else:
        body.append("    return out")
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
    call = ["step", f"outputs_info={outputs_info}", f"n_steps={n}"]
    if p["sequence"]:
        call.append("sequences=[seq]")
    if ns:
        call.append(f"non_sequences=[{ns}]")
    lines.append(f"res = th.scan({', '.join(call)})[0]")
    read = {"last": "res[-1]", "full": "res", "sum": "res.sum()"}[p["read"]]
    lines.append(f"out = {read}")
    if p["grad"]:
        lines.append("out = [out, T.grad(res.sum(), W if W in [W] else W)]" if ns == "W" else "out = [out]")
    lines.append(f"f = th.function(inputs, out, mode='{p['mode']}', on_unused_input='ignore')")
    return "\n".join(lines) + "\n"


import os  # noqa: E402

EXAMPLES = int(os.environ.get("SCANPROBE_HYPOTHESIS_EXAMPLES", "10"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(p=programs())
def test_random_scan_programs_predict_what_runs(backend, tmp_path_factory, p):
    folder = tmp_path_factory.mktemp("prog")
    (folder / "_backend.py").write_text((FIXTURES / "_backend.py").read_text())
    src = module_source(p)
    (folder / "model.py").write_text(src)
    res = scanprobe("profile", folder / "model.py", "--runs", "1", "--format", "json", timeout=600)
    assert res.rc in (0, 1), f"{res}\n{textwrap.indent(src, '    ')}"
    prof = res.json()
    assert prof["error"] is None, (prof["error"], src)
    (t,) = prof["targets"]
    top = {s["id"] for s in t["profile"]["target"]["scans"] if s["parent"] is None}
    while_scans = {s["id"] for s in t["profile"]["target"]["scans"] if s["as_while"]}
    for b in t["profile"]["buffers"]:
        if b["scan_id"] not in top:
            continue
        if b["predicted_bytes"] is None:
            # only a while-scan makes sizes data-dependent (its gradient runs as many steps as
            # the forward loop did): such sizes stay formulas, never guesses
            assert p["until"], (b, src)
            continue
        if b["scan_id"] in while_scans and b["role"] == "nit_sot":
            # a while-scan stops early: its per-step output is trimmed, never longer than predicted
            assert b["measured_bytes"] <= b["predicted_bytes"], (b, src)
        else:
            assert b["measured_bytes"] == b["predicted_bytes"], (b, src)
