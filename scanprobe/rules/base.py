"""What a rule is and what it finds."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from scanprobe.records import INTERNAL, Site

#: Severities that count as findings (exit code 1, reported by ``check``); ``info`` is a note.
COUNTED = ("error", "warning")


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
    #: the id of the scan record (``records.Scan.id``) the finding is about: what its fix follows
    scan_id: int | None = field(default=None, metadata=INTERNAL)

    @property
    def counts(self) -> bool:
        """A finding (error or warning) rather than an info note."""
        return self.severity in COUNTED


def counted(findings) -> list:
    """The findings that count (errors and warnings), without the info notes."""
    return [f for f in findings if f.counts]


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
    #: what a fix of this rule lowers: "memory" (the predicted peak and the measured call) or
    #: "time" (the measured call); a fix whose figures do not move that way is not a fix
    fix_moves: str = ""
    #: the rule's fixer: a module of ``scanprobe.fixes`` (``fixes.registry`` loads it; "" when
    #: ``scanprobe fix`` has no fix for it), and what that fix does in one line, "name: what" (the
    #: help of ``fix``, ``scanprobe rules``, the API's docstring and the README's list come from it)
    fixer: str = ""
    fix_does: str = ""
    #: a budget rule (SP010, SP011): it fires only with a budget, and under a budget
    #: (``fix --max-buffer``) its findings are the fix's goal on every scan of the fixed graph
    budget: bool = False

    @abstractmethod
    def check(self, target, verdicts, settings=None) -> list[Finding]:
        """Findings for one analysed target (``verdicts`` from analysis.history.classify).

        ``settings`` holds budgets and options (``check``'s settings; None means defaults).
        """

    def finding(self, target, message, *, severity="error", scan=None, site=None, bytes=None,
                explanation=(), fix=()) -> Finding:
        """A finding of this rule about ``target`` (a ``records.Target`` or its name) and, where it
        is about one, ``scan`` (the ``records.Scan``: its name and id are kept)."""
        return Finding(
            code=self.code, name=self.name, target=getattr(target, "name", target), message=message,
            severity=severity, scan=scan.name if scan is not None else "", site=site, bytes=bytes,
            explanation=list(explanation), fix=list(fix), scan_id=scan.id if scan is not None else None,
        )

    def holds_removable_history(self, finding: Finding) -> bool:
        """Whether a finding's bytes are history that could be dropped (summed in reports)."""
        return False

    def sections(self) -> dict[str, str]:
        parts = re.split(r"^## (.+)$", self.doc, flags=re.M)
        return {parts[i].strip(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
