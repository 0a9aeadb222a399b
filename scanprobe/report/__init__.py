"""One report, read by every reporter."""

from __future__ import annotations

from dataclasses import dataclass, field

from scanprobe.records import Target
from scanprobe.rules.base import Finding


@dataclass
class Report:
    file: str
    backend: str
    backend_version: str
    backend_why: str
    notes: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    #: per target name: list of analysis.history.BufferVerdict
    verdicts: dict = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return 1 if any(f.severity in ("error", "warning") for f in self.findings) else 0
