"""Texts in the user's terms: where the user wrote an expression, a report names it, not the op
class the backend made of it (issue 27, item 3)."""

import subprocess
import sys

from conftest import SAMPLES, child_env, scanprobe
from helpers import buffers, findings

from scanprobe.backends import ops
from scanprobe.records import Site
from scanprobe.walk.expressions import user_expression


class _Sum:  # what user_spellings reads of an op: none of it for a fold (its text decides)
    pass


def _site(tmp_path, code, line=1):
    path = tmp_path / "model.py"
    path.write_text(code)
    return Site(str(path), line, code.splitlines()[line - 1])


def test_the_one_expression_of_that_kind_on_the_line_is_named(tmp_path):
    site = _site(tmp_path, "pooled = T.tanh(hs.mean(axis=0)) * 2\n")
    assert user_expression(site, _Sum(), "sum over the steps") == "hs.mean(axis=0)"
    site = _site(tmp_path, "e = th.function([x],\n    (ys ** 2).sum(), mode=MODE)\n", line=2)
    assert user_expression(site, _Sum(), "sum of an elementwise expression over the steps") == "(ys ** 2).sum()"
    site = _site(tmp_path, "w = T.dot(hs.reshape((-1, H)), W) + b\n")
    assert user_expression(site, _Sum(), "weighted sum over the steps (a dot product over time)") == \
        "T.dot(hs.reshape((-1, H)), W)"


def test_ambiguous_lines_and_other_ops_name_nothing(tmp_path):
    site = _site(tmp_path, "total = a.sum() + b.sum()\n")
    assert user_expression(site, _Sum(), "sum over the steps") == ""  # which sum? neither
    site = _site(tmp_path, "total = hs.max()\n")
    assert user_expression(site, _Sum(), "sum over the steps") == ""  # not a sum on the line
    assert user_expression(None, _Sum(), "sum over the steps") == ""
    assert user_expression(Site(str(tmp_path / "gone.py"), 1, ""), _Sum(), "sum over the steps") == ""
    assert ops.user_spellings(_Sum()) == (frozenset(), ())  # an op a user does not write


def test_reports_name_the_users_reduction(backend):
    res = scanprobe("inspect", SAMPLES / "rnn_mean_pool.py", "--format", "json")
    (f,) = findings(res.json(), "SP006")
    assert "`hs.mean(axis=0)` (sum over the steps)" in f["message"], f["message"]
    (b,) = [b for b in buffers(res.json()) if b["verdict"] == "folded"]
    (r,) = [r for r in b["reads"] if r["kind"] == "reduction"]
    assert r["expr"] == "hs.mean(axis=0)" and r["op"]  # the op is still there, for tools
    text = scanprobe("inspect", SAMPLES / "rnn_mean_pool.py").out
    assert "folded by `hs.mean(axis=0)` (rnn_mean_pool.py:" in text, text


def test_ops_are_said_in_words_where_no_expression_names_them():
    assert ops.in_words("Elemwise{Mul}") == "an elementwise `*`"
    assert ops.in_words("Elemwise{Tanh}") == "an elementwise `tanh`"
    assert ops.in_words("CAReduce{ScalarMaximum}") == "a max"
    assert ops.in_words("Gemv") == ops.in_words("Dot22") == "a dot product"
    assert ops.in_words("Reshape") == "a reshape"
    assert ops.in_words("ScalarSum{axes=None}") == "a sum"  # PyTensor 3.3's wrapped reduction
    assert ops.in_words("SomethingNew") == "SomethingNew"  # unknown: the class, not a guess


def test_a_gradient_scan_is_told_in_the_forward_scans_names(backend):
    """The backward pass's buffers and inputs are named by the forward scan's variables: its
    mit_mot by the recurrent state it is the gradient of, its nit_sot by the sequence, its
    sequences by what they are made from; no `<float32, 3D>`, no op class in the kept lines."""
    res = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--mode", "FAST_COMPILE", "--format", "json")
    report = res.json()
    names = {b["belongs_to"] for b in buffers(report)}
    grad = [s for t in report["targets"] for s in t["scans"] if s["is_gradient"]]
    assert grad, "no backward scan"
    if "&" not in grad[0]["name"]:  # Theano's FAST_RUN merges them; FAST_COMPILE does not
        assert "backward-pass gradient of recurrent state `h_prev`" in names, names
        assert "gradient w.r.t. sequence `x`" in names, names
    labels = [i["label"] for s in grad for i in s["inputs"]]
    assert not [lab for lab in labels if lab.startswith("<")], labels
    text = scanprobe("inspect", SAMPLES / "rnn_bptt.py", "--mode", "FAST_COMPILE").out
    kept = [line for line in text.splitlines() if line.lstrip().startswith("kept ")]
    assert kept and not [line for line in kept if "Elemwise{" in line or "Reshape (" in line], kept


_POOL = '''import sys
import numpy as np
sys.path.insert(0, {samples!r})
from _backend import T, floatX, th

x = T.tensor3("x", dtype=floatX)
rng = np.random.default_rng(0)
W = th.shared((0.1 * rng.standard_normal((4, 6))).astype(floatX), name="W")
U = th.shared((0.1 * rng.standard_normal((6, 6))).astype(floatX), name="U")
h0 = T.zeros((x.shape[1], 6), dtype=floatX)


def step(x_t, h_prev, U):
    return T.tanh(T.dot(x_t, W) + T.dot(h_prev, U))


states, _ = th.scan(step, sequences=[x], outputs_info=[h0], non_sequences=[U])
pooled = T.tanh(states.mean(axis=0))
encode = th.function([x], pooled)
SCANPROBE_INPUTS = {{"x": rng.standard_normal((30, 3, 4)).astype(floatX)}}
if __name__ == "__main__":
    np.save(sys.argv[1], encode(SCANPROBE_INPUTS["x"]))
'''


def test_the_sp006_fix_is_the_users_own_code_and_computes_the_same(backend, tmp_path):
    """The snippet is the user's scan call and reduction rewritten (their step's parameters,
    their names, their mean); pasted into their file in place of those two lines, it runs and
    gives the same outputs."""
    import numpy as np

    src = _POOL.format(samples=str(SAMPLES))
    (tmp_path / "pool.py").write_text(src)
    res = scanprobe("fix", tmp_path / "pool.py", "--format", "json")
    (rw,) = [r for f in res.json()["fixes"] for r in f["rewrites"] if r["rule"] == "SP006"]
    snippet = rw["snippet"]
    assert any("sum of recurrent state `h_prev` carried in the step" in d for d in rw["detail"]), rw["detail"]
    assert snippet.startswith("def step_acc(x_t, h_prev, acc, U):"), snippet
    assert "(states, accs), _ = th.scan(step_acc, sequences=[x], outputs_info=[h0, T.zeros_like(h0)], " \
           "non_sequences=[U])" in snippet, snippet
    assert snippet.endswith("pooled = T.tanh(accs[-1] / states.shape[0])  # was: states.mean(axis=0)"), snippet
    lines = src.splitlines()
    scan_line = next(i for i, line in enumerate(lines) if line.startswith("states, _ ="))
    fold_line = next(i for i, line in enumerate(lines) if line.startswith("pooled ="))
    new = snippet.splitlines()
    lines[fold_line] = new[-1]
    lines[scan_line] = "\n".join(new[:-1])
    (tmp_path / "pool_fixed.py").write_text("\n".join(lines) + "\n")
    for name in ("pool", "pool_fixed"):
        subprocess.run([sys.executable, str(tmp_path / f"{name}.py"), str(tmp_path / f"{name}.npy")],
                       check=True, env=child_env(), cwd=tmp_path, capture_output=True, timeout=1800)
    before, after = np.load(tmp_path / "pool.npy"), np.load(tmp_path / "pool_fixed.npy")
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-7)


def test_forms_without_a_users_code_snippet_keep_the_template(tmp_path):
    from scanprobe.fixes.snippets import accumulate_snippet

    code = ("def step(x_t, h):\n    return h + x_t\n"
            "hs, _ = th.scan(step, sequences=[x], outputs_info=[dict(initial=h0, taps=[-2])])\n"
            "m = hs.sum(axis=0)\n")
    path = tmp_path / "m.py"
    path.write_text(code)
    scan, fold = Site(str(path), 3, ""), Site(str(path), 4, "")
    assert accumulate_snippet(scan, "step", "sum", fold, "hs.sum(axis=0)", "sit_sot", 0) == ""  # taps
    path.write_text(code.replace("[dict(initial=h0, taps=[-2])]", "[h0]"))
    assert "m = accs[-1]  # was: hs.sum(axis=0)" in accumulate_snippet(scan, "step", "sum", fold, "hs.sum(axis=0)", "sit_sot", 0)
    path.write_text(code.replace("[dict(initial=h0, taps=[-2])]", "[h0]").replace("hs.sum(axis=0)", "hs.sum()"))
    assert "m = accs[-1].sum()  # was: hs.sum()" in accumulate_snippet(scan, "step", "sum", fold, "hs.sum()", "sit_sot", 0)
    assert accumulate_snippet(scan, "step", "sum", fold, "hs.sum(axis=1)", "sit_sot", 0) == ""  # not over the steps


def test_a_scan_rewritten_by_pymc_says_so(backend):
    """The user wrote `outputs_info=[x0]`; PyMC's log-density of the scan has no state: SP002
    says the scan was rewritten, not that the user's scan has no state (issue 27, item 3)."""
    import pytest

    pytest.importorskip("pymc")
    res = scanprobe("inspect", SAMPLES / "pymc_ar_customdist.py", "--format", "json")
    report = res.json()
    (f,) = findings(report, "SP002")
    assert "no recurrent state as compiled" in f["message"], f["message"]
    assert any("declares 1 recurrent state" in line and "PyMC" in line for line in f["explanation"]), f
    logp = [s for t in report["targets"] if t["name"].endswith(".logp") for s in t["scans"]]
    assert logp and logp[0]["rewritten"]
    forward = [s for t in report["targets"] if t["name"].endswith(".forward") for s in t["scans"]]
    assert forward and forward[0]["rewritten"] == ""  # the draws keep the user's recurrence


def test_a_decoders_gradient_names_the_encoder_state_it_reads():
    """The accumulator of the gradient of a non_sequence that another scan computed is named by
    that scan's state, not by the input whose length sizes it (`x`); the encoder's backward
    pass is told in the encoder's names even where its sequences are computed from the states."""
    from conftest import FIXTURES

    for mode in ("FAST_COMPILE", None):
        args = ("--mode", mode) if mode else ()
        report = scanprobe("inspect", FIXTURES / "truth" / "attention_decoder.py", *args, "--format", "json").json()
        names = [b["belongs_to"] for b in buffers(report)]
        accs = [n for n in names if "non_sequence (recurrent state `h` of `scan_fn`)" in n]
        assert accs, names
        assert not [n for n in names if "non_sequence `x`" in n], names
        if not [s for t in report["targets"] for s in t["scans"] if "&" in s["name"]]:  # Theano merges them
            assert "backward-pass gradient of recurrent state `h`" in names, names


def test_a_graph_name_that_is_a_sentence_names_nothing():
    """pymc-extras' Kalman filter names an output with an assertion's message: no buffer is
    "per-step output `Observed data and parameters must have ...`"."""
    from scanprobe.walk.naming import _is_identifier

    assert _is_identifier("series_logprob") and _is_identifier("model.y")
    assert not _is_identifier("Observed data and parameters must have the same number of timesteps (dimension 0)")
    assert not _is_identifier("")
