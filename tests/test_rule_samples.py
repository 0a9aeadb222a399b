"""Each rule: a golden sample that triggers it and one that does not.

The findings of the triggering sample (code, severity, message) are compared with a golden file
per backend: tests/golden/<backend>/rules/<CODE>.txt (regenerate after an intended change with
SCANPROBE_REGEN_GOLDEN=1). The clean sample must produce no finding of that rule.
"""

import os

import pytest
from conftest import BACKEND, FIXTURES, ROOT, SAMPLES, scanprobe

from scanprobe.rules import RULES

# code -> (command and arguments that trigger it, the same for a sample that does not)
CASES = {
    "SP001": (["inspect", SAMPLES / "seed000_pixel_loop.py"], ["inspect", SAMPLES / "seed000_pixel_loop_clean.py"]),
    "SP002": (["inspect", FIXTURES / "map_scan.py"], ["inspect", SAMPLES / "rnn_bptt.py"]),
    "SP003": (["inspect", SAMPLES / "seed002_per_example_grads.py"], ["inspect", SAMPLES / "seed002_clean.py"]),
    "SP005": (["inspect", FIXTURES / "ofg_in_scan.py"], ["inspect", SAMPLES / "seed001_fixed.py"]),
    "SP010": (["check", SAMPLES / "seed000_pixel_loop.py", "--max-buffer", "100kB", "--select", "SP010"],
              ["check", SAMPLES / "mlp_no_scan.py", "--max-buffer", "100kB", "--select", "SP010"]),
    "SP011": (["check", SAMPLES / "seed000_pixel_loop.py", "--max-peak", "500kB", "--select", "SP011"],
              ["check", SAMPLES / "rnn_bptt.py", "--max-peak", "500kB", "--select", "SP011"]),
}


def test_every_rule_has_samples():
    assert sorted(CASES) == sorted(r.code for r in RULES)


def _findings(args, code):
    res = scanprobe(*args, "--format", "json")
    assert res.rc in (0, 1), res
    body = res.json()
    reports = body["reports"] if "reports" in body else [body]
    return [f for r in reports for f in r["findings"] if f["code"] == code]


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_triggers_on_its_sample_and_not_on_the_clean_one(backend, code):
    triggers, clean = CASES[code]
    found = _findings(triggers, code)
    assert found, f"{code} did not trigger on {triggers[1]}"
    text = "".join(f"{f['code']} {f['severity']}: {f['message']}\n" for f in sorted(found, key=lambda f: f["message"]))
    path = ROOT / "tests" / "golden" / BACKEND / "rules" / f"{code}.txt"
    if os.environ.get("SCANPROBE_REGEN_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"missing golden file {path}: regenerate with SCANPROBE_REGEN_GOLDEN=1"
    assert text == path.read_text()
    assert _findings(clean, code) == [], f"{code} triggered on {clean[1]}"


@pytest.mark.parametrize("code", sorted(CASES))
def test_rule_documentation_has_every_section(code):
    rule = next(r for r in RULES if r.code == code)
    assert set(rule.sections()) >= {"What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"}
