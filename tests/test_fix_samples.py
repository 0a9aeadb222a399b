"""Fix samples in pairs, as codemod tools keep theirs: ``tests/fix_samples/NAME.py`` is a program,
``NAME.expected`` beside it what ``scanprobe fix NAME.py`` does to it (with the options in
``NAME.args`` where there is one) (the rules fixed, each
rewrite's scan and form or the reason it was not applied, the code snippet shown, outputs equal,
findings left). One test compares every pair; a new fix sample is two files and no test code.

The expected text is the same on every backend: backend module names, op parameters and the
save-mem tag are written as placeholders (``<backend>``, ``{…}``). Where one backend does
something else, ``NAME.<backend>.expected`` holds its own. Regenerate after an intended change
with SCANPROBE_REGEN_GOLDEN=1 and review the diff.
"""

import os
import re

import pytest
from conftest import BACKEND, ROOT, scanprobe

from scanprobe.fixes.registry import fixable, markdown_list

SAMPLES = ROOT / "tests" / "fix_samples"
NAMES = sorted(p.stem for p in SAMPLES.glob("SP*.py"))


def _normal(text: str) -> str:
    text = re.sub(r"\b(theano|pytensor|aesara)\b", "<backend>", text)
    text = re.sub(r"\b(scanOp_save_mem|scan_save_mem)\b", "<save-mem>", text)
    return re.sub(r"\{[^{}\n]*\}", "{…}", text)


def _what_fix_did(body) -> str:
    lines = []
    for f in body["fixes"]:
        lines.append(f"target {f['name']}: fixed {', '.join(f['rules'])}; outputs equal: {f['outputs_equal']}; "
                     f"left: {', '.join(f'{k} {v}' for k, v in sorted(f['after']['remaining'].items()))}")
        if f["tag"]:
            lines.append(f"  mode: {f['tag']} added")
        for r in f["rewrites"]:
            lines.append(f"  {r['rule']} scan `{r['scan']}`: {r['form'] or 'not applied: ' + r['reason']}")
            lines += [f"    | {s}" for s in r["snippet"].splitlines()]
    for n in body["not_applied"]:
        for r in n["rewrites"]:
            lines.append(f"target {n['name']}: {r['rule']} scan `{r['scan']}` not applied: {r['reason']}")
    lines.append(f"unfixed: {', '.join(body['summary']['unfixed']) or '-'}")
    return _normal("\n".join(lines) + "\n")


@pytest.mark.parametrize("name", NAMES)
def test_fix_sample_gives_its_expected_fix(backend, name):
    args = SAMPLES / f"{name}.args"  # options of its own (a budget: --max-buffer 4kB)
    extra = args.read_text().split() if args.exists() else []
    res = scanprobe("fix", SAMPLES / f"{name}.py", "--runs", "1", "--format", "json", *extra)
    assert res.rc in (0, 1), res
    body = res.json()
    if "--max-buffer" in extra:  # the budget's fix lowers the predicted peak
        assert all(f["after"]["predicted_peak"] < f["before"]["predicted_peak"] for f in body["fixes"]), body
    text = _what_fix_did(body)
    own = SAMPLES / f"{name}.{BACKEND}.expected"
    path = own if own.exists() else SAMPLES / f"{name}.expected"
    if os.environ.get("SCANPROBE_REGEN_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"missing {path.name}: regenerate with SCANPROBE_REGEN_GOLDEN=1"
    assert text == path.read_text(), f"scanprobe fix {name}.py differs from {path.name}:\n{text}"


def test_every_fix_has_a_sample():
    codes = {n.split("_")[0] for n in NAMES}
    assert {r.code for r in fixable()} <= codes, "a rule with a fixer has no fix sample"


def test_readme_lists_the_fixes_of_the_registry():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- fixes:begin -->\n")[1].split("<!-- fixes:end -->")[0]
    assert block.strip() == markdown_list().strip(), "README's list of fixes: python -m scanprobe.fixes.registry"


def test_the_fix_docstring_lists_the_fixes_of_the_registry():
    # written out in scanprobe/__init__.py: `import scanprobe` no longer imports the registry (and
    # with it every rule) to build it
    import scanprobe
    from scanprobe.fixes.registry import help_text

    listed = scanprobe.fix.__doc__.split("import scanprobe`` does not import):\n\n")[1]
    assert [line.strip()[2:] for line in listed.strip().splitlines()] == help_text().splitlines(), \
        "scanprobe.fix's docstring: the fixes of python -c 'from scanprobe.fixes.registry import help_text; print(help_text())'"
