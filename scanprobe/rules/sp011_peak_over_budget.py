"""SP011 peak-over-budget: the scan buffers of one function together exceed the budget.

## What it does
With a budget (`--max-peak 8GiB` or `max-peak = "8GiB"` under `[tool.scanprobe]`), adds the
predicted sizes of the function's top-level scan buffers (they are allocated while the function
runs) and reports the function when the sum exceeds the budget. A lower bound of the peak: the
other intermediates of the graph come on top.

## Why is this bad?
The function will not run on a machine with less memory than that; `scanprobe profile` refuses
to start it there for the same reason.

## Example
```toml
[tool.scanprobe]
max-peak = "8GiB"
```

## Use instead
Shrink the buffers SP001 reports; run fewer steps per call; use scan checkpoints.

## Fix safety
Budget findings have no automatic fix.
"""

from __future__ import annotations

from scanprobe.analysis.sizes import human_bytes
from scanprobe.rules.base import Rule


class PeakOverBudget(Rule):
    code = "SP011"
    name = "peak-over-budget"
    summary = "a function's scan buffers together exceed --max-peak"
    doc = __doc__
    budget = True

    def check(self, target, verdicts, settings=None):
        limit = getattr(settings, "max_peak", None)
        if not limit:
            return []
        total = target.scan_buffer_bytes()
        if total <= limit:
            return []
        return [
            self.finding(
                target, f"its scan buffers need at least {human_bytes(total)}, over the {human_bytes(limit)} budget",
                site=target.site, bytes=total, explanation=[f"mode {target.mode.name}; {len(target.scans)} scan(s)"],
            )
        ]

    def measured_finding(self, target_name, measured: int, limit: int, site):
        """``check --run``: a measured call that used more than the budget (RSS above the pre-call level)."""
        return self.finding(
            target_name,
            f"a measured call added {human_bytes(measured)} (RSS), over the {human_bytes(limit)} budget",
            site=site, bytes=measured,
        )
