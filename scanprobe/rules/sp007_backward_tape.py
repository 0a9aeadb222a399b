"""SP007 backward-tape: a gradient scan keeps a tape of every step for a state the loss barely reads.

## What it does
Finds the backward tape (a `mit_mot` buffer of the gradient scan, n_steps + 1 rows) of a
recurrent state whose cotangent from the loss is zero at every step, or at every step but the
first one the backward pass runs (the loss reads the state's last value, `h[-1]`). Which rows can
be nonzero is read from the graph that builds the cotangent (zeros, `set_subtensor`, reversal),
never guessed. Sizes come from the optimized graph.

## Why is this bad?
The backward pass reads only the running value of such a tape: the gradient of the state at the
step it is at. Yet every backend keeps one row per step (no save-mem rewrite shrinks a
`mit_mot`; PyTensor's own open issue is pymc-devs/pytensor#1687): a classifier on `h[-1]` over
800 steps of a (16, 64) float64 state keeps 6.6 MB where two rows (16 kB) would do, per state
(an LSTM has two: `h`, and the cell `c` the loss never reads).

## Example
```python
hs, cs = theano.scan(lstm_step, sequences=[x], outputs_info=[h0, c0])[0]
cost = loss(T.dot(hs[-1], W_out), y)   # reads h only at the last step, c never
grads = T.grad(cost, params)            # the gradient scan keeps 801 rows for h and for c
```

## Use instead
Nothing to write in the model: `scanprobe fix` rewrites the gradient scan so each such tape is a
running state (sit_sot) started from the loss's cotangent, which save-mem then keeps at two rows:
```
scanprobe fix train.py     # tape of `h` and `c`: 801 rows -> 2 rows each, gradients compared
```
The same gradient by hand needs the scan's own backward pass: there is no user-level form.

## Fix safety
The rewritten gradient scan computes the same values in the same order (the zero rows it no
longer reads added nothing); the fix compares every output and updated shared value of the
original and fixed functions at float64 rtol 1e-10. It applies to tapes read at taps (0, 1) and
written at tap 1 (a state with one tap, `outputs_info=[h0]`); a tape read at other taps (a state
with several taps), or in a gradient scan under `truncate_gradient` or of a while-loop, is an
`info` note and left as it is. The fixed mode runs save-mem (scanprobe adds it) to drop the rows.
"""

from __future__ import annotations

from scanprobe.analysis.sizes import human_bytes
from scanprobe.records import Status, Verdict
from scanprobe.rules.base import Rule


def forward_of(target, scan):
    """The forward scan record of a gradient scan (``grad_of_<name>``), if exactly one."""
    name = scan.name[len("grad_of_"):] if scan.name.startswith("grad_of_") else ""
    forward = [s for s in target.scans if s.name == name and not s.is_gradient]
    return forward[0] if len(forward) == 1 else None


def forward_state(target, scan, index) -> str:
    """The user's name of the forward state a gradient scan's ``index``-th tape belongs to, when
    the forward scan's states line up with the tapes (mit_sot then sit_sot, as ``grad`` orders
    them), else ""."""
    forward = forward_of(target, scan)
    if forward is None:
        return ""
    tapes = [b for b in scan.buffers if b.role == "mit_mot"]
    states = sorted((b for b in forward.buffers if b.role in ("mit_sot", "sit_sot")),
                    key=lambda b: (b.role != "mit_sot", b.index))
    if len(states) != len(tapes) or index >= len(states):
        return ""
    return states[index].variable


class BackwardTape(Rule):
    code = "SP007"
    name = "backward-tape"
    summary = "a gradient scan keeps a tape of every step for a state the loss reads at most at its last step"
    doc = __doc__
    fix_moves = "memory"
    fixer = "tape"
    fix_does = "running tape: the gradient scan's zero-fed tape rewritten as a running state (2 rows after save-mem)"

    def check(self, target, verdicts, settings=None):
        findings = []
        for v in verdicts:
            if v.status is not Status.FULL or v.verdict is not Verdict.ZERO_FED:
                continue
            buf, scan = v.buffer, v.scan
            rows = buf.dims[0].value if buf.dims else None
            name = forward_state(target, scan, buf.index)
            state = f"recurrent state `{name}`" if name else f"recurrent state #{buf.index}"
            size = human_bytes(buf.bytes) if buf.bytes is not None else buf.bytes_formula()
            fed = ("nothing (zeros at every step)" if buf.zero_fed == "all"
                   else "only its last value (zeros at every other step)")
            kept = f"{rows} rows" if rows is not None else f"({buf.shape_formula()})"
            row = f", {human_bytes(2 * buf.bytes // rows)} as a running value" if rows and buf.bytes else ""
            why_not = self.unfixable(scan, buf)
            fixable = not why_not
            fix = ([f"`scanprobe fix` rewrites the gradient scan so this tape is a running state "
                    f"(2 rows{row}) and verifies the gradients by rerunning"] if fixable else
                   [f"{why_not}: scanprobe's fix does not rewrite it; scan_checkpoints on the forward scan "
                    "trades its memory for time"])
            findings.append(
                self.finding(
                    target,
                    f"backward tape of {state} in gradient scan `{scan.name}` keeps {kept} ({size}) although "
                    f"the loss reads {fed}",
                    severity="warning" if fixable else "info", scan=scan, bytes=buf.bytes,
                    site=getattr(forward_of(target, scan), "site", None) or buf.created_site or scan.site,
                    explanation=[f"buffer: {buf.created_by}, shape ({buf.shape_formula()}) {buf.dtype}"] + v.why,
                    fix=fix,
                )
            )
        return findings

    @staticmethod
    def unfixable(scan, buf) -> str:
        """Why the fixer (fixes/tape.py) leaves this tape as it is, or "" (its checks, on records)."""
        if buf.taps != [0, 1]:
            return f"the tape is read at taps {tuple(buf.taps)} (a state with several taps)"
        if scan.as_while:
            return "the gradient scan is a while-loop"
        if scan.truncate_gradient != -1:
            return (f"truncate_gradient={scan.truncate_gradient}: the rows the backward pass does not reach "
                    "keep the loss's cotangent")
        return ""

    def holds_removable_history(self, finding) -> bool:
        return finding.counts
