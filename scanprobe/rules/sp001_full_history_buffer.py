"""SP001 full-history-buffer: a scan buffer keeps every step although only the last are read.

## What it does
Finds scan buffers (the outer storage of a recurrent state, a gradient accumulator, or a per-step
output) whose leading dimension is n_steps + k, so that they hold one row per step, while every
reader of the scan's output reads only the last steps (for example `result[-1]`). Sizes are
computed from the optimized graph and known shapes, without running the function.

## Why is this bad?
The buffer grows with the number of steps for nothing. The classic case is the gradient of a scan
with non_sequences: for each non_sequence `x` the backward scan accumulates `d cost / d x` in a
buffer of shape `(n_steps + 1,) + x.shape`, and only row `[-1]` is ever used. With 1024 steps and
an input of 2000x3x32x32 float32 that is 25.2 GB per non_sequence (a MemoryError). Backends drop
the history with their save-mem rewrite, which does not run in FAST_COMPILE, with
`optimizer=None`, when the rewrite is excluded, or when a transpose hides the index from it.

## Example
```python
res, _ = theano.scan(step, sequences=[idx], non_sequences=[x, b])
cost = res.sum()
f = theano.function([], theano.grad(cost, [x, b]), mode="FAST_COMPILE")
```

Where the history is needed (the backward pass of backpropagation through time reads every
step), SP001 adds an `info` note instead: the memory `scan_checkpoints(..., save_every_N=N)`
would keep for a few N (every N-th state plus one recomputed segment of N steps).

## Use instead
```python
f = theano.function([], theano.grad(cost, [x, b]), mode="FAST_RUN")  # runs save-mem
# or, keeping a custom mode:
mode = theano.compile.mode.get_mode("FAST_COMPILE").including("scanOp_save_mem")
```
Index a scan output before transposing it (`out[-1].T`, not `out.T[:, -1]`).

## Fix safety
Running the save-mem rewrite does not change results: it removes rows that nothing reads.
Every fix scanprobe applies is verified by rerunning the function.
"""

from __future__ import annotations

import math

from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status, Verdict
from scanprobe.rules.base import Rule


def _checkpoint_rows(n_steps: int, every: int) -> int:
    """Rows scan_checkpoints keeps with save_every_N=every: every N-th state, plus one segment."""
    return math.ceil(n_steps / every) + 1 + every


def _checkpoints_call(target) -> str:
    """The user's backend's scan_checkpoints, as their code would call it."""
    return target.mode.checkpoints or "scan_checkpoints"


class FullHistoryBuffer(Rule):
    code = "SP001"
    name = "full-history-buffer"
    summary = "a scan buffer keeps every step although only the last steps are read"
    doc = __doc__
    fix_moves = "memory"
    fixer = "savemem"
    fix_does = "save-mem: the backend's rewrite that keeps only the rows a scan reads, added to the mode"

    def check(self, target, verdicts, settings=None):
        findings = []
        for v in verdicts:
            if v.status is Status.FULL and v.verdict is Verdict.INHERENT and v.buffer.zero_fed == "partly":
                note = self._zero_fed(target, v)
                if note is not None:
                    findings.append(note)
                continue
            if v.status is Status.FULL and v.verdict is Verdict.NEEDED:
                note = self._checkpoints(target, v)
                if note is not None:
                    findings.append(note)
                continue
            if v.status is not Status.FULL or not v.verdict.removable:
                continue
            buf, scan = v.buffer, v.scan
            lead = buf.dims[0]
            length = f"n_steps{buf.leading_offset:+d}" if buf.leading_offset else "n_steps"
            if buf.length_of and buf.length_of != scan.name:
                length += f" of `{buf.length_of}`"
            if lead.value is not None:
                rows = f"{lead.value} rows ({length})"
            else:
                rows = f"{length} rows (n_steps = {scan.n_steps.formula})"
            size = human_bytes(buf.bytes) if buf.bytes is not None else buf.bytes_formula()
            unread = " and nothing reads it" if v.verdict is Verdict.UNUSED else ""
            msg = f"{buf.belongs_to} in scan `{scan.name}` keeps every step{unread}: {rows}, {size}"
            fix = self._fix(target, v)
            findings.append(
                self.finding(
                    target, msg, scan=scan, site=buf.created_site, bytes=buf.bytes,
                    explanation=[f"buffer: {buf.created_by}, shape ({buf.shape_formula()}) {buf.dtype}"]
                    + v.why[:1]
                    + [f"not shrunk because {w}" for w in v.why[1:]],
                    fix=fix,
                )
            )
        return findings

    def _zero_fed(self, target, v):
        """An info note: a mit_mot buffer that starts as zeros (a cotangent the loss never or
        barely reads) still costs its n_steps + 1 rows; what would remove it."""
        buf, scan = v.buffer, v.scan
        if buf.bytes is None:
            return None
        rows = buf.dims[0].value
        start = "zeros but at the rows the loss reads"
        n = max(scan.n_steps.value or 0, (rows or 1) - 1)  # the forward length, under truncate_gradient too
        fix = ["no backend's rewrites shrink a mit_mot buffer (Theano, PyTensor, Aesara)"]
        if n and n >= 16 and rows:
            k = max(2, int(round(math.sqrt(n))))
            fix.append(f"{_checkpoints_call(target)} on the forward scan "
                       f"with save_every_N={k} keeps about {_checkpoint_rows(n, k)} rows of it: "
                       f"{human_bytes(_checkpoint_rows(n, k) * (buf.bytes // rows))} (forward steps recomputed)")
        return self.finding(
            target,
            f"{buf.belongs_to} in scan `{scan.name}` keeps {rows} rows ({human_bytes(buf.bytes)}) that start as "
            f"{start}",
            severity="info", scan=scan, site=buf.created_site or scan.site, bytes=buf.bytes,
            explanation=[f"buffer: {buf.created_by}, shape ({buf.shape_formula()}) {buf.dtype}",
                         "the backward pass accumulates the state's gradient through every step in it"],
            fix=fix,
        )

    def _checkpoints(self, target, v):
        """An info note: what scan_checkpoints would keep of history the backward pass reads."""
        buf, scan = v.buffer, v.scan
        n, rows = scan.n_steps.value, buf.dims[0].value if buf.dims else None
        if scan.is_gradient or buf.bytes is None or not n or not rows or n < 16:
            return None
        backward = any(s.is_gradient for s in target.scans) or any(r.kind == "scan_sequence" for r in buf.reads)
        if buf.role not in ("sit_sot", "mit_sot") or not backward:
            return None
        row = buf.bytes // rows

        choices = sorted({4, 16, max(2, int(round(math.sqrt(n)))), 64} - {n})
        cells = [f"N={k}: {human_bytes(_checkpoint_rows(n, k) * row)}" for k in choices if k < n]
        return self.finding(
            target,
            f"{buf.belongs_to} in scan `{scan.name}` keeps every step ({human_bytes(buf.bytes)}), "
            "read by the backward pass: needed; scan_checkpoints would keep less",
            severity="info", scan=scan, site=scan.site,
            explanation=[f"with scan_checkpoints(..., save_every_N=N): {'; '.join(cells)} (forward steps recomputed)"],
            fix=[f"{_checkpoints_call(target)} in place of scan, "
                 "with save_every_N near sqrt(n_steps)"],
        )

    def holds_removable_history(self, finding) -> bool:
        return finding.counts

    @staticmethod
    def _fix(target, v) -> list[str]:
        if v.verdict is Verdict.UNUSED and v.scan.is_gradient:  # the backend built it: only the mode drops it
            return ["compile in a mode that runs the scan rewrites (mode='FAST_RUN', the default): they drop "
                    "gradients nothing reads" + ("" if target.mode.save_mem else
                                                 f", or add them to your own mode: mode.including({target.mode.save_mem_including})")]
        if v.verdict is Verdict.UNUSED:
            return ["return from the step function only the outputs you use"] + (
                [] if target.mode.save_mem else [
                    "or compile in a mode that runs the scan rewrites (mode='FAST_RUN', the default): "
                    "they drop outputs nothing reads"])
        if not target.mode.save_mem:
            return [
                "compile in a mode that runs the save-mem rewrite: mode='FAST_RUN' (the default), "
                f"or add it to your own mode: mode.including({target.mode.save_mem_including or repr(target.mode.save_mem_tag)})"
            ]
        if v.scan.as_while:
            if any("run time" in (r.detail or "") for r in v.buffer.reads):
                return ["index the while-scan's output with a constant (out[-1], not out[out.shape[0] - 1])"]
            return ["this backend keeps every row of a while-scan: carry what you need in the step's "
                    "state, or use PyTensor, whose save-mem keeps the last rows of a while-scan"]
        if any(r.via_dimshuffle for r in v.buffer.reads):
            return ["index the scan output before transposing it (out[-1].T rather than out.T[..., -1])"]
        return ["read only the steps you need from the scan output (e.g. out[-1])"]
