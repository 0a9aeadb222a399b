"""The explicit registry of rules. Add a rule: one file, one line here."""

from __future__ import annotations

from scanprobe.rules.base import Finding, Rule
from scanprobe.rules.sp001_full_history_buffer import FullHistoryBuffer
from scanprobe.rules.sp002_independent_iterations import IndependentIterations
from scanprobe.rules.sp003_per_step_batch_work import PerStepBatchWork
from scanprobe.rules.sp005_opaque_op_in_scan import OpaqueOpInScan
from scanprobe.rules.sp010_buffer_over_budget import BufferOverBudget
from scanprobe.rules.sp011_peak_over_budget import PeakOverBudget

RULES: list[Rule] = [
    FullHistoryBuffer(), IndependentIterations(), PerStepBatchWork(), OpaqueOpInScan(), BufferOverBudget(), PeakOverBudget(),
]


def by_code(code: str) -> Rule | None:
    for r in RULES:
        if r.code == code.upper() or r.name == code:
            return r
    return None


__all__ = ["RULES", "Finding", "Rule", "by_code"]
