"""SP010 buffer-over-budget: one scan buffer is larger than the budget set for the project.

## What it does
With a budget (`--max-buffer 512MiB` or `max-buffer = "512MiB"` under `[tool.scanprobe]` in
pyproject.toml), reports every scan buffer whose predicted size exceeds it, whether its history
is needed or not. Sizes come from the optimized graph and known shapes, without running anything.

## Why is this bad?
A buffer over the budget will not fit on the machines the model is meant for (a GPU's memory, a
CI runner); finding it before a training run starts saves the run.

## Example
```toml
[tool.scanprobe]
max-buffer = "512MiB"
```
An RNN over 10,000 steps of a 64x4096 float32 state keeps 10.5 GB of forward history.

## Use instead
Shrink what SP001 reports; keep needed history smaller with `scan_checkpoints`, shorter
sequences (truncated BPTT) or float32 instead of float64.

## Fix safety
Budget findings have no automatic fix.
"""

from __future__ import annotations

from scanprobe.analysis.sizes import human_bytes
from scanprobe.rules.base import Rule


class BufferOverBudget(Rule):
    code = "SP010"
    name = "buffer-over-budget"
    summary = "a scan buffer is larger than --max-buffer"
    doc = __doc__

    def check(self, target, verdicts, settings=None):
        limit = getattr(settings, "max_buffer", None)
        if not limit:
            return []
        out = []
        for v in verdicts:
            b = v.buffer
            if b.bytes is not None and b.bytes > limit:
                out.append(
                    self.finding(
                        target,
                        f"{b.belongs_to} in scan `{v.scan.name}` is {human_bytes(b.bytes)}, over the {human_bytes(limit)} budget",
                        scan=v.scan, site=b.created_site, bytes=b.bytes,
                        explanation=[f"buffer: {b.created_by}, shape ({b.shape_formula()}) {b.dtype}"]
                        + ([f"history: {v.verdict}"] if v.verdict else []),
                    )
                )
        return out
