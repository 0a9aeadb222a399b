"""The fixers, keyed by rule: each rule that can be fixed names its fixer (``Rule.fixer``, a module
of this package) and says what the fix does (``Rule.fix_does``). This is the one table: the fix
pipeline, ``scanprobe fix --help``, ``scanprobe rules``, the API's docstring and the README's list
of fixes are made from it (tests/test_fix_samples.py checks the README's list).

A fixer module holds ``RULE`` (its rule's code) and either

- ``rewrites(backend, outputs, wanted) -> list[Rewrite]``: a graph fix. ``wanted``
  (``graph_edit.Wanted``) holds the scans the rule's findings name, with the walk's records:
  the fixer rewrites those and no other; or
- ``MODE_FIX = True`` and ``fixed_mode(backend, mode)``: a fix of the compilation mode (SP001).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from scanprobe.rules import RULES, Rule


@dataclass(frozen=True)
class Fixer:
    rule: Rule
    module: object

    @property
    def code(self) -> str:
        return self.rule.code

    @property
    def is_mode_fix(self) -> bool:
        return bool(getattr(self.module, "MODE_FIX", False))

    def rewrites(self, backend, outputs, wanted) -> list:
        return self.module.rewrites(backend, outputs, wanted)


def fixers() -> list[Fixer]:
    """Every rule's fixer, in the rules' order (a scan taken by one graph fix is not offered to
    the next)."""
    out = []
    for rule in RULES:
        if rule.fixer:
            module = importlib.import_module(f"scanprobe.fixes.{rule.fixer}")
            if getattr(module, "RULE", None) != rule.code:
                raise RuntimeError(f"fixer scanprobe.fixes.{rule.fixer} is not {rule.code}'s")
            out.append(Fixer(rule, module))
    return out


def fixable() -> list[Rule]:
    """The rules ``scanprobe fix`` fixes (read from the rules alone: no fixer is imported)."""
    return [r for r in RULES if r.fixer]


def help_text() -> str:
    """One line per fix, for ``fix --help`` and the API docstring."""
    return "\n".join(f"{r.code} {r.name}: {r.fix_does}" for r in fixable())


def markdown_list() -> str:
    """The README's list of fixes."""
    return "\n".join(f"- **{r.code}** {r.name}: {r.fix_does}" for r in fixable())


def with_fixes(doc: str) -> str:
    """A docstring with the list of fixes appended (``scanprobe.fix``'s)."""
    return doc.rstrip() + "\n\n    The fixes (one per rule, from fixes/registry.py):\n\n" + "\n".join(
        f"    - {line}" for line in help_text().splitlines())


if __name__ == "__main__":  # the README's list
    print(markdown_list())
