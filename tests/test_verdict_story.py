"""One verdict per buffer, the same in every output (issue 27, item 1).

A state kept only to be averaged read "full: needed" in the table and `needed` in the JSON while
SP006 said it was held only for a reduction and `fix` removed it. The verdict is decided once
(analysis/history.py: `folded`) and every output reads it: the table, the finding, the JSON, the
graph and the HTML.
"""

import json
import re

import pytest
from conftest import SAMPLES, scanprobe
from test_contracts import validate

from scanprobe.backends import ops

pytestmark = pytest.mark.same_backend  # reports read from the analysis (conftest.RUN_ELSEWHERE)

#: rules whose findings say a buffer's history can go
DROPPING = ("SP001", "SP006", "SP007", "SP008")


def test_a_state_kept_only_to_be_reduced_reads_the_same_everywhere(backend, tmp_path):
    sample = SAMPLES / "rnn_mean_pool.py"
    body = scanprobe("inspect", sample, "--format", "json").json()
    (finding,) = [f for f in body["findings"] if f["code"] == "SP006"]
    (buf,) = [b for t in body["targets"] for s in t["scans"] for b in s["buffers"] if b["status"] == "full"]
    assert buf["verdict"] == "folded" and buf["belongs_to"] in finding["message"], (buf, finding)
    text = scanprobe("inspect", sample, "--no-color").out
    row = next(line for line in text.splitlines() if buf["belongs_to"] in line and "│" in line)
    assert "only reduced" in row and "needed" not in text.split("SP006")[0], text
    html = tmp_path / "r.html"
    assert scanprobe("inspect", sample, "--html", html).rc == 1
    cells = re.findall(r"<td class='(\w+)'>full: folded</td>", html.read_text())
    assert cells == ["removable"], cells
    dot = tmp_path / "g.dot"
    assert scanprobe("graph", sample, "-o", dot).rc == 0
    assert "#cc0000" in dot.read_text()  # drawn as a buffer a fix drops


@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.py") if not p.name.startswith("_")))
def test_no_buffer_a_finding_drops_reads_needed(backend, sample):
    """Every sample: the JSON is valid (every verdict in the schema's list) and no buffer that a
    finding of SP001/SP006/SP007/SP008 names is `needed` in the same scan."""
    if sample.startswith("pymc") and not _has_pymc():
        pytest.skip("PyMC is not installed in this leg")
    res = scanprobe("inspect", SAMPLES / sample, "--format", "json")
    body = res.json()
    if res.rc == 2:  # seed 001: SP004 is an error of the module (its JSON error envelope)
        validate("error", body)
        return
    assert res.rc in (0, 1), res
    validate("report", body)
    for t in body["targets"]:
        for s in t["scans"]:
            # what a person reads names the user's input or expression, else says the op in words
            labels = [i["label"] for i in s["inputs"]]
            # (`<size from x.shape[0]>` is a long formula's placeholder, not a type)
            assert not [lab for lab in labels if lab.startswith("<") and not lab.startswith("<size")], \
                (sample, s["name"], labels)
            for b in s["buffers"]:
                for r in b["reads"]:
                    if r["kind"] in ("reduction", "computation", "product", "rows", "opaque") and not r["expr"]:
                        assert ops.in_words(r["op"]) != r["op"], (sample, r)
                if b["verdict"] != "needed":
                    continue
                said = [f for f in body["findings"] if f["code"] in DROPPING and f["target"] == t["name"]
                        and f"`{s['name']}`" in f["message"] and b["belongs_to"] in f["message"]
                        and f["severity"] != "info"]
                assert not said, (b, said)


def _has_pymc() -> bool:
    import importlib.util

    return importlib.util.find_spec("pymc") is not None
