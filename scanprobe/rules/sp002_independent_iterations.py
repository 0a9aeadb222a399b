"""SP002 independent-iterations: a scan whose steps do not depend on each other (a map).

## What it does
Finds forward scans with no recurrent state (no outputs_info, no taps: each step reads only its
own slice of the sequences and the non_sequences) that are not while-loops. Such a loop is one
vectorized computation over a new leading axis. When something in the step stops that, it names
the op and why: a slice whose bounds depend on the step (each step's patch has another shape),
an ARange/Alloc/Reshape whose shape depends on the step, a nested scan whose length does.

## Why is this bad?
A scan runs its steps one at a time, with a Python or C loop around small ops: the per-step
overhead dominates small steps, nothing is fused across steps, and its gradient is another scan
that keeps per-step buffers (SP001). The vectorized form runs a few large ops instead.

## Example
```python
out, _ = theano.scan(lambda xi: T.tanh(T.dot(xi, W) + b), sequences=[X])
```

## Use instead
```python
out = T.tanh(T.dot(X, W) + b)          # the same, for all rows at once
```
PyTensor users can let `pytensor.graph.replace.vectorize_graph` do it. Where slice bounds depend
on the step (seed 000's per-pixel window), use a convolution op, or pad the input and take a
fixed-size window at every position (shifted slices), so every step has the same shape.

## Fix safety
`scanprobe fix` vectorizes with PyTensor's `vectorize_graph`, or for Theano with scanprobe's own
batcher for the ops it knows (elementwise ops, dimshuffles, reductions, dot, indexing by the
step's index); the vectorized function is verified by rerunning (outputs equal) before it is
reported as fixed. Blocked scans are reported as notes, without a fix.
"""

from __future__ import annotations

from scanprobe.rules.base import Rule, step_label as _step, steps_text


class IndependentIterations(Rule):
    code = "SP002"
    name = "independent-iterations"
    summary = "a scan without recurrent state (a map) that could be one vectorized computation"
    doc = __doc__
    fix_moves = "time"
    fixer = "vectorize"
    fix_does = "vectorize: a map scan as one batched computation"

    def check(self, target, verdicts, settings=None):
        findings = []
        for scan in target.scans:
            if scan.recurrent or scan.is_gradient or scan.as_while or scan.parent is not None:
                continue
            if any(w.equals_n_steps for w in scan.step_work):
                continue  # SP003 says more
            n = scan.n_steps.value
            if n is not None and n <= 1:
                continue
            steps = steps_text(scan)
            none = "no recurrent state as compiled" if scan.rewritten else "no recurrent state"
            if scan.blockers:
                first = scan.blockers[0]
                msg = (
                    f"scan `{scan.name}`{_step(scan)} ({steps}) has {none}, but cannot be vectorized as written: "
                    f"`{first.op}` {first.reason}"
                )
                fix = [
                    "make every step the same shape: a convolution op, or pad the input and take a fixed-size "
                    "window (shifted slices) at every position"
                ]
                severity = "info"
            else:
                msg = f"scan `{scan.name}`{_step(scan)} ({steps}) has {none}: its steps are independent (a map)"
                fix = ["write the step for all rows at once, or run scanprobe fix to vectorize it (verified by rerun)"]
                severity = "warning"
            findings.append(
                self.finding(
                    target, msg, severity=severity, scan=scan, site=scan.site,
                    explanation=([scan.rewritten] if scan.rewritten else [])
                    + [f"`{b.op}`: {b.reason}" for b in scan.blockers[:3]]
                    + [f"{scan.step_ops} ops run once per step"],
                    fix=fix,
                )
            )
        return findings
