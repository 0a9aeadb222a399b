"""What a rule is and what it finds."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from scanprobe.records import Site


@dataclass
class Finding:
    code: str
    name: str
    target: str
    message: str
    severity: str = "error"
    scan: str = ""
    site: Site | None = None
    bytes: int | None = None
    explanation: list[str] = field(default_factory=list)
    fix: list[str] = field(default_factory=list)


def step_label(scan) -> str:
    """`` (step `name`)`` when the user's step function has a name other than the scan's."""
    return f" (step `{scan.step_function}`)" if scan.step_function and scan.step_function != scan.name else ""


def steps_text(scan) -> str:
    """``64 steps``, or ``n_steps = x.shape[0]`` while the count is symbolic."""
    n = scan.n_steps.value
    return f"{n} steps" if n is not None else f"n_steps = {scan.n_steps.formula}"


class Rule(ABC):
    """One rule: a code, a name after the pattern, documented sections, and a check.

    The module docstring of each rule holds its documentation in fixed sections:
    ``## What it does``, ``## Why is this bad?``, ``## Example``, ``## Use instead``,
    ``## Fix safety``. ``scanprobe rules CODE`` prints it.
    """

    code: str = ""
    name: str = ""
    summary: str = ""
    doc: str = ""

    @abstractmethod
    def check(self, target, verdicts, settings=None) -> list[Finding]:
        """Findings for one analysed target (``verdicts`` from analysis.history.classify).

        ``settings`` holds budgets and options (``check``'s settings; None means defaults).
        """

    def sections(self) -> dict[str, str]:
        parts = re.split(r"^## (.+)$", self.doc, flags=re.M)
        return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
