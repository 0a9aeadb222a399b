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
`scanprobe fix FILE --max-buffer SIZE` fixes, cheapest first: a gradient's zero-fed tapes (SP007)
and per-step gradient terms (SP008) at no time cost, then the forward history a gradient reads,
checkpointed (`fixes/checkpoint.py`): kept every k steps, one segment of k steps recomputed at a
time in the backward pass (one extra forward pass), k the largest that fits the budget. Verified by
rerunning: outputs and updated shared values equal, buffers under the budget. What cannot fit is
said with its size and why (a loss on every step needs the history itself; a state row so large
that even k ~ sqrt(n) does not fit).
"""

from __future__ import annotations

from scanprobe.analysis.sizes import human_bytes, size_arg
from scanprobe.rules.base import Rule


class BufferOverBudget(Rule):
    code = "SP010"
    name = "buffer-over-budget"
    summary = "a scan buffer is larger than --max-buffer"
    doc = __doc__
    budget = True
    fix_moves = "memory"
    fixer = "checkpoint"
    fix_does = ("checkpointed history (with --max-buffer): a forward scan whose history a gradient reads kept "
                "every k steps, each segment recomputed in the backward pass")

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
                        fix=_fix_hint(target, v, limit),
                    )
                )
        return out


def _fix_hint(target, v, limit) -> list[str]:
    """``fix --max-buffer`` where it has a fix: the history of a forward scan that a gradient reads
    (checkpoints), or a gradient scan's own buffers (its tapes and terms)."""
    b = v.buffer
    if v.scan.is_gradient or (b.role == "sit_sot" and any(s.is_gradient for s in target.scans)):
        return [f"`scanprobe fix FILE --max-buffer {size_arg(limit)}` fits it: a gradient's tapes and per-step "
                "terms first (free), then checkpointed history (one extra forward pass)"]
    return []
