"""Which scan buffers keep the whole history, and whether that history is needed.

A buffer *keeps the whole history* when its leading dimension is n_steps + k (k >= 0) of its own
scan, or of another scan whose length sized it (a gradient scan under truncate_gradient), and it
holds more rows than the scan's taps need, over more steps than the taps reach back (within
that window every row is read again by a later step). Backends shrink such buffers with the save-mem
rewrite when every reader of the scan output only reads the last steps; this module says, for
each full buffer, who reads the history and so whether it could be dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scanprobe.backends import ops
from scanprobe.records import Buffer, Read, Scan, Status, Target, Verdict


@dataclass
class BufferVerdict:
    """The analysis of one buffer."""

    scan: Scan
    buffer: Buffer
    status: Status
    #: for full buffers: removable, needed, inherent (mit_mot), unused (``records.Verdict``)
    verdict: Verdict = Verdict.NONE
    why: list[str] = field(default_factory=list)


def classify(target: Target) -> list[BufferVerdict]:
    out = []
    for scan in target.scans:
        for buf in scan.buffers:
            out.append(_classify(target, scan, buf))
    return out


def _status(scan: Scan, buf: Buffer) -> Status:
    if buf.role == "untraced":
        return Status.REDUCED
    lead = buf.dims[0].value if buf.dims else None
    n = scan.n_steps.value
    if buf.role != "mit_mot" and n is not None and lead is not None and n <= _window(buf):
        # within the taps' window: every row but the last is read again by a later step's taps;
        # save-mem would drop at most the first row (Theano keeps span+1 rows, PyTensor span)
        return Status.REDUCED
    if buf.leading_offset is not None and (lead is None or lead > buf.needed_rows):
        return Status.FULL
    if lead is not None and scan.n_steps.value is not None:
        return Status.REDUCED
    if lead is not None and lead <= buf.needed_rows:
        return Status.REDUCED
    return Status.UNKNOWN


def _window(buf: Buffer) -> int:
    """Steps a buffer's taps reach back plus the current one: with no more steps than this,
    there is no history beyond what the recurrence itself reads."""
    span = max([-t for t in buf.taps if t < 0] + [0])
    return span + 1


def shown(r: Read) -> str:
    """What a person reads for a read's op: the user's expression where there is one, else
    what the op does in words (``a dot product``, ``an elementwise `*```), never its class
    where the vocabulary names it (the class stays in the JSON's ``op``)."""
    return r.shown if r.expr else ops.in_words(r.op)


def describe_read(r: Read) -> str:
    at = f" ({r.site.short()})" if r.site else ""
    if r.kind == "output":
        return "returned by the function: the whole history is part of what it computes"
    if r.kind == "scan_sequence":
        if r.scan.startswith("grad_of_"):
            return f"read step by step by `{r.scan}` (the backward pass needs every forward step)"
        return f"read step by step by scan `{r.scan}`"
    if r.kind == "scan_input":
        return f"passed whole into scan `{r.scan}`"
    if r.kind == "reduction":
        return f"folded by {shown(r)}{at}: {r.detail}"
    if r.kind == "computation":
        return f"read in full by {shown(r)}{at}"
    if r.kind == "product":
        return f"multiplied out by {shown(r)}{at} after the loop ({r.detail})"
    if r.kind == "rows":
        return f"{r.detail} read by {shown(r)}{at}"
    if r.kind == "opaque":
        return f"indexed by {shown(r)} at a position scanprobe cannot resolve ({r.detail}){at}"
    return f"{r.detail} read by {shown(r)}{at}"


def _only_folded(scan: Scan, buf: Buffer, history_reads) -> bool:
    """The history is read only by reductions over the steps (sum, mean, max, a dot over time),
    in a forward scan, of a state or of a recurrent scan's per-step output (a map's outputs go
    with the map when it is vectorized: SP002, SP003)."""
    if scan.is_gradient or buf.role not in ("sit_sot", "mit_sot", "nit_sot"):
        return False
    if buf.role == "nit_sot" and not scan.recurrent:
        return False
    return all(r.kind == "reduction" for r in history_reads)


def _classify(target: Target, scan: Scan, buf: Buffer) -> BufferVerdict:
    v = BufferVerdict(scan=scan, buffer=buf, status=_status(scan, buf))
    if v.status is not Status.FULL:
        return v
    if buf.role == "mit_mot" and scan.is_gradient and buf.zero_fed in ("all", "first"):
        v.verdict = Verdict.ZERO_FED
        fed = "at every step" if buf.zero_fed == "all" else "at every step but the first (the loss reads the state's last value)"
        v.why.append(f"the loss feeds this backward tape zeros {fed}: the backward pass reads only its running value")
        v.why.append("no backend's rewrites shrink a mit_mot buffer (pymc-devs/pytensor#1687)")
        return v
    if (scan.is_gradient and buf.role == "nit_sot" and buf.reads
            and all(r.kind == "product" for r in buf.reads if r.kind != "recent")):
        v.verdict = Verdict.TERMS
        v.why.append("per-step terms of a gradient, kept for one product after the loop: the mode's `more_mem` "
                     "rewrites pushed the product out of the backward scan")
        # one product named; the graph's order of its readers varies with the backend's rewrites
        # (two Gemm of one gradient): the one the user's line made, else the first by its text
        products = sorted((r for r in buf.reads if r.kind == "product"), key=lambda r: (r.site is None, describe_read(r)))
        v.why += [describe_read(r) for r in products][:1]
        return v
    if buf.role == "mit_mot":
        v.verdict = Verdict.INHERENT
        v.why.append(
            "mit_mot buffers (the backward pass's gradient of a recurrent state) are never "
            "shrunk by any backend's rewrites; only scan checkpointing trades this memory for time"
        )
        return v
    reads = buf.reads
    history_reads = [r for r in reads if r.kind != "recent"]
    if history_reads and _only_folded(scan, buf, history_reads):
        v.verdict = Verdict.FOLDED
        v.why += sorted({describe_read(r) for r in history_reads})
        v.why.append("a running value carried by the step would do: nothing else reads the rows")
        return v
    if history_reads:
        v.verdict = Verdict.NEEDED
        seen = set()
        for r in history_reads:
            text = describe_read(r)
            if text not in seen:
                seen.add(text)
                v.why.append(text)
        return v
    if not reads:
        v.verdict = Verdict.UNUSED
        v.why.append("nothing reads this output")
        if target.mode.save_mem:
            v.why.append("the rewrites of this mode did not drop it")
        else:
            v.why.append(target.mode.save_mem_reason + "; the default mode's scan rewrites drop outputs nothing reads")
        return v
    v.verdict = Verdict.REMOVABLE
    last = sorted({r.detail for r in reads if r.detail})
    v.why.append("only the last steps are read" + (f" ({', '.join(last)})" if last else ""))
    if not target.mode.save_mem:
        v.why.append(target.mode.save_mem_reason)
    elif scan.as_while and any("run time" in (r.detail or "") for r in reads):
        v.why.append(
            "the row is counted from the output's own length, which a while-scan knows only at run "
            "time, so the save-mem rewrite cannot tell that only the last rows are read"
        )
    elif scan.as_while:
        v.why.append("this backend's save-mem rewrite does not shrink a while-scan's buffers (Theano issue 3122)")
    elif any(r.via_dimshuffle for r in reads):
        v.why.append(
            "a DimShuffle (transpose) stands between the scan output and the index, so the "
            "save-mem rewrite cannot see that only the last steps are read"
        )
    else:
        v.why.append("the save-mem rewrite ran but did not shrink this buffer")
    return v
