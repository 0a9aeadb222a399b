"""SP003 per-step-batch-work: each step redoes work over the whole batch, O(n_steps^2) in all.

## What it does
Finds scans whose step writes the step's index into a loop-invariant tensor as long as the
number of steps (for example the one-hot seed of `grad(cost[i], p)`, a vector as long as the
batch) and then computes on the result: every step works on the whole batch to get one
example's share. It reads the optimized graph: the IncSubtensor that writes the index, the
outer input that tensor's length comes from, and the ops of the step that depend on it.

## Why is this bad?
The scan runs n_steps = batch-size steps, each as costly as one backward pass of the whole
batch: O(B^2) instead of O(B). The seed's "mean of squared per-example gradients" at batch 512
is one to two hundred times slower than one ordinary gradient. The backend cannot split a
tensor along the batch by itself, so no rewrite removes it.

## Example
```python
def squared_grads(i):
    return [T.grad(cost[i], p) ** 2 for p in params]   # cost: one entry per example
sq = theano.scan(squared_grads, sequences=[T.arange(cost.shape[0])])[0]
g_square = [s.mean(axis=0) for s in sq]
```

## Use instead
When the squared per-example gradients are only summed or averaged, compute the sum from one
backward pass, squaring the per-example factors before the batch sum: for `z = dot(A, W)` the
sum over the batch is `dot((A*A).T, D*D)` with `D = grad(cost.sum(), z)`; for a bias `b` in
`z = ... + b` it is `(D*D).sum(0)`. Otherwise compute each example's gradient from its own rows:
```python
def step(i):
    cost_i = theano.clone(cost, replace={x: x[i:i + 1], y: y[i:i + 1]})[0]
    return [T.grad(cost_i, p) ** 2 for p in params]
```

## Fix safety
`scanprobe fix` (and `scanprobe.fix(f)`) uses the sum-of-squares form only where the cost is
provably per-example (each op keeps the examples apart: elementwise ops, dot with the batch on
the left, reductions over other axes) and the squared gradients are only summed over the batch;
otherwise the per-example graph. Either is verified by rerunning: outputs equal (float64:
rtol 1e-10) or the fix is reported as failed and not applied.
"""

from __future__ import annotations

from scanprobe.rules.base import Rule, step_label as _step, steps_text


class PerStepBatchWork(Rule):
    code = "SP003"
    name = "per-step-batch-work"
    summary = "each step of a scan over the batch redoes the whole batch's work (O(n_steps^2))"
    doc = __doc__
    fix_moves = "time"
    fixer = "per_example"
    fix_does = "per-example: the gradients from one backward pass (the sum-of-squares form, or the step's graph sliced to its row)"

    def check(self, target, verdicts, settings=None):
        findings = []
        for scan in target.scans:
            if scan.is_gradient:
                continue  # a backward scan accumulates into whole tensors by design
            works = [w for w in scan.step_work if w.equals_n_steps]
            if not works:
                continue
            steps = steps_text(scan)
            length = works[0].length
            rows = str(length.value) if length.value is not None else length.formula
            ops = max(w.downstream_ops for w in works)
            msg = (
                f"scan `{scan.name}`{_step(scan)} ({steps}) writes the step's index into a tensor of {rows} rows "
                f"(= the number of steps) {len(works)} time(s) per step and computes on the whole of it: "
                "O(n_steps^2) work in all"
            )
            findings.append(
                self.finding(
                    target, msg, scan=scan, site=scan.site,
                    explanation=[
                        f"{w.op} into {w.target} (length {w.length.formula}), {w.downstream_ops} ops of the step depend on it"
                        for w in works[:4]
                    ]
                    + [
                        f"typical of grad(cost[i], p) in a scan over the batch: the backward pass starts from a one-hot "
                        f"vector as long as the batch, so each step redoes up to {ops} ops over all examples"
                    ],
                    fix=[
                        "scanprobe fix applies and verifies it: the sum of squared per-example gradients from one "
                        "backward pass (dot((A*A).T, D*D), (D*D).sum(0)), or each example's cost cloned with x[i:i+1]"
                    ],
                )
            )
        return findings
