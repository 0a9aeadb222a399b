"""SP008 per-step-gradient-terms: a gradient scan keeps every step's terms of a weight gradient for one product after the loop.

## What it does
Finds the per-step outputs of a gradient scan (n_steps rows each) whose only reader is a dot
product after the loop, reached through a reshape that merges the steps with another axis: the
terms of a weight's gradient that the mode's rewrites moved out of the backward scan. Sizes come
from the optimized graph.

## Why is this bad?
In the default mode every backend runs rewrites tagged `more_mem` (Theano `scan_pushout_dot1`,
`scanOp_pushout_output`; PyTensor and Aesara `scan_push_out_dot1`, `scan_push_out_add`): they
replace the gradient accumulator `acc + dot(a_t.T, b_t)` of the backward scan by one large dot
after it, which needs every step's `a_t` and `b_t`: n_steps rows each. On an LSTM of 1,000 steps
(batch 16, 32 units, float64) that is 16.4 MB of 32.8 MB of scan buffers; in the loop the
accumulator is one row.

## Example
```python
hs = theano.scan(lstm_step, sequences=[x], outputs_info=[h0, c0])[0][0]
grads = T.grad(loss(hs), [W, U])        # W and U's gradients: per-step terms, then one dot
train = theano.function([x, y], loss, updates=sgd(grads))   # default mode
```

## Use instead
```python
mode = theano.compile.mode.get_mode("FAST_RUN").excluding("more_mem")
train = theano.function([x, y], loss, updates=sgd(grads), mode=mode)
```
The accumulators stay in the backward scan, where save-mem keeps one row of each. `scanprobe
fix` applies this and verifies it by rerunning.

## Fix safety
The gradient is the same sum of the same products, accumulated step by step instead of in one
dot: float results can differ in the last bits, within the tolerance the verification allows.
One dot of (k, n_steps x batch) by (n_steps x batch, m) becomes n_steps small ones: on a CPU this
measured from 0.8x to 1.3x the time (bench table 4d); the fix reports both times.
"""

from __future__ import annotations

from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status, Verdict
from scanprobe.rules.base import Rule


class PerStepGradientTerms(Rule):
    code = "SP008"
    name = "per-step-gradient-terms"
    summary = "a gradient scan keeps every step's terms of a weight gradient for one product after the loop"
    doc = __doc__
    fix_moves = "memory"
    fixer = "terms"
    fix_does = "terms in the loop: the mode's `more_mem` rewrites excluded, so each gradient accumulates in the backward scan"

    def check(self, target, verdicts, settings=None):
        findings = []
        for v in verdicts:
            if v.status is not Status.FULL or v.verdict is not Verdict.TERMS:
                continue
            buf, scan = v.buffer, v.scan
            size = human_bytes(buf.bytes) if buf.bytes is not None else buf.bytes_formula()
            rows = buf.dims[0].value if buf.dims else None
            kept = f"{rows} rows" if rows is not None else f"({buf.shape_formula()})"
            findings.append(
                self.finding(
                    target,
                    f"{buf.belongs_to} of gradient scan `{scan.name}` keeps {kept} ({size}) for one product after the "
                    f"loop",
                    severity="warning", scan=scan, bytes=buf.bytes, site=buf.created_site or scan.site,
                    explanation=[f"buffer: {buf.created_by}, shape ({buf.shape_formula()}) {buf.dtype}"] + v.why,
                    fix=["compile with the mode's `more_mem` rewrites excluded (`get_mode(...).excluding('more_mem')`): "
                         "the gradient accumulates in the backward scan; `scanprobe fix` applies it and verifies it"],
                )
            )
        return findings

    def holds_removable_history(self, finding) -> bool:
        return finding.counts
