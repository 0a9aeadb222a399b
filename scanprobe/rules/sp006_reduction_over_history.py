"""SP006 reduction-over-history: a scan keeps every step only to reduce them (sum, mean, max, a dot over time).

## What it does
Finds scan buffers that keep one row per step (a recurrent state's history, or a per-step output
of a scan with recurrent state; a map's outputs are SP002's and SP003's) where the only readers of that history fold it over the time axis: `hs.sum(axis=0)`,
`hs.mean()`, `hs.max(axis=0)`, `T.dot(weights, hs)`, also of an elementwise expression of the
rows (`(hs ** 2).sum()`, `abs(hs - 1).max(axis=0)`). Nothing else reads the rows: not the
function's outputs, not a backward pass, not an index. Sizes come from the optimized graph.

## Why is this bad?
The reduction needs one running value, not the history: a sum over 100,000 steps of a
(512, 256) float32 state keeps 52 GB to return 512 kB. The save-mem rewrite cannot help, because
the reduction does read every row; only the step can carry the running value.

## Example
```python
hs, _ = theano.scan(step, sequences=[x], outputs_info=[h0])
total = hs.sum(axis=0)
```

## Use instead
```python
def step_acc(x_t, h, acc):
    h2 = step(x_t, h)
    return h2, acc + h2

(hs, accs), _ = theano.scan(step_acc, sequences=[x], outputs_info=[h0, T.zeros_like(h0)])
total = accs[-1]  # save-mem keeps the last rows of both states
```
`scanprobe fix` applies this (sum, mean, product, max, min, and a dot with a vector over time:
the weight enters the step as a sequence) and verifies it by rerunning both functions.

## Fix safety
A running sum adds the steps in the same order as the reduction over the history, but the
backend may have summed the history pairwise: float results can differ in the last bits, within
the tolerance the verification allows. Max, min and products are exact. The fix needs a mode
that runs save-mem (the default) to drop the history; scanprobe adds it when it fixes.
"""

from __future__ import annotations

from scanprobe.analysis.history import shown
from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status, Verdict
from scanprobe.rules.base import Rule, steps_text


class ReductionOverHistory(Rule):
    code = "SP006"
    name = "reduction-over-history"
    summary = "a scan keeps every step only to reduce them over time"
    doc = __doc__
    fix_moves = "memory"
    fixer = "accumulate"
    fix_does = "accumulate: a running value in the step in place of the kept history (sum, mean, product, max, min, dot over time)"

    def check(self, target, verdicts, settings=None):
        findings = []
        for v in verdicts:
            folds = self.folds(v)
            if not folds:
                continue
            buf, scan = v.buffer, v.scan
            size = human_bytes(buf.bytes) if buf.bytes is not None else buf.bytes_formula()
            by = "; ".join(sorted({f"{shown(r)} ({r.detail})" for r in folds}))
            findings.append(
                self.finding(
                    target,
                    f"{buf.belongs_to} in scan `{scan.name}` keeps every step ({steps_text(scan)}, {size}) "
                    f"only to reduce them: {by}",
                    severity="warning", scan=scan, site=folds[0].site or buf.created_site, bytes=buf.bytes,
                    explanation=[f"buffer: {buf.created_by}, shape ({buf.shape_formula()}) {buf.dtype}"]
                    + [f"read only by: {w}" for w in v.why if w.startswith("folded by")]
                    + ["save-mem cannot drop it: the reduction reads every row"],
                    fix=["carry the running value as a state of the scan (acc + h_t, maximum(acc, h_t), ...) "
                         "and read its last step; `scanprobe fix` applies it and verifies by rerunning"],
                )
            )
        return findings

    @staticmethod
    def folds(v) -> list:
        """The reduction reads of a buffer whose history only they read (``Verdict.FOLDED``), else []."""
        if v.status is not Status.FULL or v.verdict is not Verdict.FOLDED:
            return []
        return [r for r in v.buffer.reads if r.kind == "reduction"]

    def holds_removable_history(self, finding) -> bool:
        return finding.counts
