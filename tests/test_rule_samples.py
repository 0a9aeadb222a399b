"""Each rule: a sample that triggers it and one that does not, found by file name.

``tests/rule_samples/<CODE>_triggers.py`` and ``<CODE>_clean.py`` (links to samples and fixtures,
so each program exists once) are checked with ``scanprobe check`` in that folder, whose
pyproject.toml sets the budgets the budget rules need. The triggering sample's findings of the
rule (code, severity, message; a load-time rule's error) are compared with a golden file per
backend: tests/golden/<backend>/rules/<CODE>.txt (regenerate after an intended change with
SCANPROBE_REGEN_GOLDEN=1). The clean sample must produce no finding of that rule. A new rule is
its rule file, its two samples and its regenerated golden: no test code.
"""

import pytest
from conftest import ROOT, check_golden, scanprobe

from scanprobe.rules import RULES

SAMPLES = ROOT / "tests" / "rule_samples"
CODES = sorted(r.code for r in RULES)


def test_every_rule_has_samples():
    for code in CODES:
        assert (SAMPLES / f"{code}_triggers.py").exists() and (SAMPLES / f"{code}_clean.py").exists(), code
    found = {p.name.split("_")[0] for p in SAMPLES.glob("SP*_*.py")}
    assert found == set(CODES), "rule samples without a rule"


def _found(sample, code, clean=False) -> list[str]:
    res = scanprobe("check", SAMPLES / sample, "--format", "json", cwd=SAMPLES)
    body = res.json()
    if clean:  # analysed: a clean sample that failed to load must not pass as clean
        assert res.rc in (0, 1) and body["errors"] == [] and body["reports"], res
    else:  # found: a finding (exit 1), or a load-time rule's error (exit 2) and no other error
        assert res.rc in (1, 2), res
        assert all(e["message"].startswith(code + " ") for e in body["errors"]), body["errors"]
    lines = [f"{f['code']} {f['severity']}: {f['message']}" for r in body["reports"] for f in r["findings"]
             if f["code"] == code]
    lines += [f"{code} error: {e['message'][len(code) + 1:]}" for e in body["errors"]
              if e["message"].startswith(code + " ")]
    return sorted(lines)


@pytest.mark.parametrize("code", CODES)
def test_rule_triggers_on_its_sample_and_not_on_the_clean_one(backend, code):
    found = _found(f"{code}_triggers.py", code)
    assert found, f"{code} did not trigger on {code}_triggers.py"
    check_golden(f"rules/{code}.txt", "".join(line + "\n" for line in found))
    assert _found(f"{code}_clean.py", code, clean=True) == [], f"{code} triggered on {code}_clean.py"


@pytest.mark.parametrize("code", CODES)
def test_rule_documentation_has_every_section(code):
    rule = next(r for r in RULES if r.code == code)
    assert set(rule.sections()) >= {"What it does", "Why is this bad?", "Example", "Use instead", "Fix safety"}
