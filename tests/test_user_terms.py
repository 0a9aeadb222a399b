"""Texts in the user's terms: where the user wrote an expression, a report names it, not the op
class the backend made of it (issue 27, item 3)."""

from conftest import SAMPLES, scanprobe
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
