"""SP005 opaque-op-in-scan: a scan's step runs an OpFromGraph that the optimizer does not open.

## What it does
Finds OpFromGraph nodes (not inlined) in the optimized inner graph of a scan: a compiled
sub-graph called once per step.

## Why is this bad?
The graph rewrites see an OpFromGraph as one opaque op. Work inside it that does not depend on
the step is not pushed out of the loop, it is not fused with the step's other elementwise ops,
its own scans are not shrunk by save-mem against the step's readers, and its gradient is an
other opaque op run per step. Seed 001's answer suggests OpFromGraph for a function called inside
a scan; it works, at this cost.

## Example
```python
f = theano.OpFromGraph([xin], [T.sum(xin ** 2)])
out, _ = theano.scan(lambda i: f(x[i:i + 1]), sequences=[T.arange(2)])
```

## Use instead
```python
f = theano.OpFromGraph([xin], [T.sum(xin ** 2)], inline=True)   # expanded into the step
# or clone the graph itself into the step:
out, _ = theano.scan(lambda i: theano.clone(cost, replace={xin: x[i:i + 1]}), sequences=[T.arange(2)])
```

## Fix safety
No automatic fix: inlining changes nothing numerically but scanprobe leaves the choice (and the
compile time it may add) to the user.
"""

from __future__ import annotations

from scanprobe.rules.base import Rule, step_label


class OpaqueOpInScan(Rule):
    code = "SP005"
    name = "opaque-op-in-scan"
    summary = "a scan step runs an OpFromGraph that the optimizer does not look into"
    doc = __doc__

    def check(self, target, verdicts, settings=None):
        findings = []
        for scan in target.scans:
            if not scan.opaque:
                continue
            names = ", ".join(f"`{o.op}` ({o.reason})" for o in scan.opaque[:3])
            findings.append(
                self.finding(
                    target,
                    f"scan `{scan.name}`{step_label(scan)} runs {len(scan.opaque)} OpFromGraph op(s) in its step: {names}",
                    severity="warning", scan=scan, site=scan.site,
                    explanation=[
                        "the optimizer treats it as one opaque op: no pushout of loop-invariant work, no fusion, "
                        "no save-mem inside it, an opaque gradient per step"
                    ],
                    fix=["OpFromGraph(..., inline=True), or clone the graph into the step (theano.clone / pytensor.graph.clone_replace)"],
                )
            )
        return findings
