"""SP008's fix: the mode's `more_mem` rewrites excluded, so that each weight gradient accumulates in
the backward scan instead of being multiplied out after it from every step's terms.

A mode fix that is reported per gradient scan: ``rewrites`` returns one form-only record per scan
the findings name (no graph replacement, and no claim on the scan: SP007's rewrite of the same
gradient scan still applies), and ``fixed_mode`` is what ``fixes.pipeline.fixed_build`` applies
when one of them is in the plan. Save-mem (in the default mode) then keeps one row of each
accumulator.
"""

from __future__ import annotations

from scanprobe.fixes.graph_edit import Rewrite
from scanprobe.rules import rule
from scanprobe.rules.sp008_per_step_gradient_terms import PerStepGradientTerms

RULE = rule(PerStepGradientTerms).code
NEEDS_SAVE_MEM = True
TAG = "more_mem"


def terms_in_the_loop(backend, outputs, wanted) -> list[Rewrite]:
    out = []
    for node, _ in wanted.nodes(backend, outputs):
        name = backend.scan_info(node.op).name or "scan_fn"
        rw = Rewrite(RULE, name, "terms in the loop", scan_node=None)
        rw.detail.append(f"the mode's `{TAG}` rewrites excluded: the gradients of `{name}` accumulate in the loop")
        rw.snippet = f"mode = {backend.module_name}.compile.mode.get_mode('FAST_RUN').excluding('{TAG}')"
        out.append(rw)
    return out


def fixed_mode(backend, mode):
    return mode.excluding(TAG)


#: this rule's graph fix (fixes/registry.py)
rewrites = terms_in_the_loop
