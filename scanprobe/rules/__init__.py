"""The explicit registry of rules. Add a rule: one file, one line here (and its two samples in
tests/rule_samples/, found by file name)."""

from __future__ import annotations

from scanprobe.rules.base import COUNTED, Finding, Rule, counted
from scanprobe.rules.sp001_full_history_buffer import FullHistoryBuffer
from scanprobe.rules.sp002_independent_iterations import IndependentIterations
from scanprobe.rules.sp003_per_step_batch_work import PerStepBatchWork
from scanprobe.rules.sp004_compiled_function_in_scan import CompiledFunctionInScan
from scanprobe.rules.sp005_opaque_op_in_scan import OpaqueOpInScan
from scanprobe.rules.sp006_reduction_over_history import ReductionOverHistory
from scanprobe.rules.sp007_backward_tape import BackwardTape
from scanprobe.rules.sp008_per_step_gradient_terms import PerStepGradientTerms
from scanprobe.rules.sp010_buffer_over_budget import BufferOverBudget
from scanprobe.rules.sp011_peak_over_budget import PeakOverBudget

RULES: list[Rule] = [
    FullHistoryBuffer(), IndependentIterations(), PerStepBatchWork(), CompiledFunctionInScan(), OpaqueOpInScan(),
    ReductionOverHistory(), BackwardTape(), PerStepGradientTerms(),
    BufferOverBudget(), PeakOverBudget(),
]


def by_code(code: str) -> Rule | None:
    for r in RULES:
        if r.code == code.upper() or r.name == code:
            return r
    return None


def rule(cls) -> Rule:
    """The registered instance of a rule class."""
    return next(r for r in RULES if isinstance(r, cls))


__all__ = ["COUNTED", "RULES", "Finding", "Rule", "by_code", "counted", "rule"]
