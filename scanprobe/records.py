"""Plain records that the backend adapters produce and everything else reads.

Nothing here imports a backend. Analysis, rules and reporters work only on these.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum, StrEnum
from typing import Any


class Status(StrEnum):
    """How much of its history a scan buffer holds (``analysis.history``)."""

    FULL = "full"  # every step
    REDUCED = "reduced"  # a few rows
    UNKNOWN = "unknown"  # sizes symbolic and unmatched


class Verdict(StrEnum):
    """Whether a full buffer's history is needed: one verdict per buffer, read by every output
    (the table, the findings, the JSON, the graph and the HTML)."""

    NONE = ""  # not a full buffer
    REMOVABLE = "removable"  # only recent steps are read
    UNUSED = "unused"  # nothing reads the output
    NEEDED = "needed"  # the history is read
    INHERENT = "inherent"  # a mit_mot: never shrunk by any backend
    ZERO_FED = "zero-fed"  # a mit_mot the loss feeds zeros but at its first row: a running value would do
    TERMS = "per-step terms"  # a gradient scan's per-step terms kept for one product after the loop
    FOLDED = "folded"  # read only by reductions over the steps: a running value would do (SP006)

    @property
    def removable(self) -> bool:
        """History that could be dropped (removable, or read by nothing)."""
        return self in (Verdict.REMOVABLE, Verdict.UNUSED)

    @property
    def droppable(self) -> bool:
        """History a fix can drop: removable, unused, a zero-fed backward tape (SP007), a
        gradient's per-step terms (SP008) or history kept only to be reduced (SP006)."""
        return self.removable or self in (Verdict.ZERO_FED, Verdict.TERMS, Verdict.FOLDED)

    @property
    def kept(self) -> bool:
        """History that stays (needed, or a backward-pass tape)."""
        return self in (Verdict.NEEDED, Verdict.INHERENT)


@dataclass
class Site:
    """A place in the user's code."""

    file: str
    line: int
    code: str = ""
    function: str = ""

    def short(self) -> str:
        import os

        return f"{os.path.basename(self.file)}:{self.line}"


@dataclass
class Dim:
    """One dimension of a buffer: its value when known, and always a readable formula."""

    value: int | None
    formula: str


@dataclass
class Read:
    """How a scan output's history is read downstream.

    kind is one of:
      ``recent``       only rows within the last few steps are read (an index such as ``[-1]``)
      ``rows``         a range or row of the history that is not just the last steps
      ``output``       the history is returned by the function
      ``scan_sequence``  another scan reads it step by step as a sequence (e.g. the backward pass)
      ``scan_input``   another scan takes it whole (non-sequence or initial state)
      ``reduction``    an op reduces over the time axis (a sum, max, product, a dot over time): the
                       history is read only to be folded into one value per other axis
      ``computation``  an op reads the whole history (an elementwise op, a reshape, ...)
      ``opaque``       an index scanprobe cannot resolve
      ``product``      a gradient scan's per-step output reshaped (steps merged with another
                       axis) into a dot product: the terms of a gradient pushed out of the loop
    """

    kind: str
    op: str = ""
    detail: str = ""
    via_dimshuffle: bool = False
    site: Site | None = None
    scan: str = ""
    #: the user's own expression for the op at ``site`` (``hs.mean(axis=0)`` for ``Sum{Add}``),
    #: "" where none is unambiguous (walk/expressions.py)
    expr: str = ""

    @property
    def shown(self) -> str:
        """What a person reads for the op: the user's expression where there is one."""
        return f"`{self.expr}`" if self.expr else self.op


@dataclass
class Buffer:
    """One scan buffer (an outer input of a Scan that holds a state's or output's steps)."""

    scan_id: int
    role: str  # mit_mot, mit_sot, sit_sot, nit_sot
    index: int  # position within its role
    dtype: str
    itemsize: int
    dims: list[Dim]
    taps: list[int] = field(default_factory=list)
    #: Rows the scan itself needs at most (the span of its taps, plus the slot being written).
    needed_rows: int = 1
    #: ``k`` when the leading dimension equals n_steps + k of a scan (``length_of`` names it).
    leading_offset: int | None = None
    length_of: str = ""
    created_by: str = ""
    created_site: Site | None = None
    belongs_to: str = ""
    variable: str = ""
    reads: list[Read] = field(default_factory=list)
    #: mit_mot: which rows of the outer cotangent it starts from can be nonzero
    #: (walk/cotangent.py): "all" (zero at every row), "first" (zero but row 0, the backward pass's
    #: first step: a loss reading `h[-1]`), "partly" (zero but other known rows), else ""
    zero_fed: str = ""

    @property
    def bytes(self) -> int | None:
        total = self.itemsize
        for d in self.dims:
            if d.value is None:
                return None
            total *= d.value
        return total

    @property
    def shape(self) -> tuple | None:
        if any(d.value is None for d in self.dims):
            return None
        return tuple(d.value for d in self.dims)

    def shape_formula(self) -> str:
        return " x ".join(d.formula if d.value is None else str(d.value) for d in self.dims)

    def bytes_formula(self) -> str:
        return f"{' x '.join(d.formula for d in self.dims)} x {self.itemsize} B"


@dataclass
class StepWork:
    """A step that writes its index into a whole loop-invariant tensor (SP003's evidence).

    The classic case is ``grad(cost[i], p)`` in a scan over the batch: the backward pass starts
    from a one-hot vector as long as the batch, so every step redoes the whole batch's work.
    """

    op: str  # the op that writes the step's index, e.g. IncSubtensor{Inc;int64}
    target: str  # what the written tensor is, in the user's terms
    length: Dim  # its leading dimension
    equals_n_steps: bool | None  # None: could not be decided
    downstream_ops: int = 0  # ops of the step that depend on it (the work redone each step)


@dataclass
class Blocker:
    """An op of a map scan's step that stops it from being one vectorized computation (SP002)."""

    op: str
    reason: str


@dataclass
class OuterInput:
    """An outer input of a Scan with its role."""

    role: str  # n_steps, sequence, mit_mot, mit_sot, sit_sot, untraced, nit_sot, non_sequence
    index: int
    label: str
    type: str


@dataclass
class Scan:
    """One Scan node of the optimized graph (nested scans have a parent)."""

    id: int
    name: str
    op: str
    n_steps: Dim
    as_while: bool
    is_gradient: bool
    truncate_gradient: int = -1
    parent: int | None = None
    site: Site | None = None
    step_function: str = ""
    inputs: list[OuterInput] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    #: Whether a step reads state written by an earlier step (mit_mot, mit_sot, sit_sot, untraced).
    recurrent: bool = True
    #: Ops in the step (its inner graph, nested scans counted as one).
    step_ops: int = 0
    step_work: list[StepWork] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)
    #: Ops of the step that the optimizer does not look into (OpFromGraph that is not inlined).
    opaque: list[Blocker] = field(default_factory=list)
    #: What was rewritten between the user's ``scan`` call and this Scan, in words ("" when
    #: nothing known): a call declaring recurrent states whose compiled scan has none (PyMC's
    #: log-density of a scan reads the observed values in place of the states).
    rewritten: str = ""


@dataclass
class ModeInfo:
    """The compilation mode that was analysed and what it says about the save-mem rewrite."""

    name: str
    linker: str
    save_mem: bool
    #: Why save-mem does not run ("" when it does).
    save_mem_reason: str = ""
    #: The tag that adds the save-mem rewrite to a mode (``mode.including(tag)``).
    save_mem_tag: str = ""
    #: Every tag to include for save-mem to shrink buffers in any mode (with the rewrites it needs
    #: beside it), as written in ``mode.including(...)``.
    save_mem_including: str = ""
    from_cli: bool = False
    #: The backend's ``scan_checkpoints`` as the user's code would call it
    #: (``theano.scan_checkpoints``, ``pytensor.scan.checkpoints.scan_checkpoints``).
    checkpoints: str = ""


@dataclass
class InputInfo:
    label: str
    type: str
    shape: list[int] | None = None
    source: str = ""  # SCANPROBE_INPUTS, --input, test value, shared value, unknown


@dataclass
class Target:
    """One compiled function of the user's module and what was found in its optimized graph."""

    name: str
    site: Site | None
    mode: ModeInfo
    inputs: list[InputInfo] = field(default_factory=list)
    scans: list[Scan] = field(default_factory=list)
    n_nodes: int = 0
    compile_seconds: float = 0.0
    analysis_seconds: float = 0.0

    def buffers(self):
        for s in self.scans:
            yield from s.buffers

    def scan_buffer_bytes(self) -> int:
        """Bytes of every sized top-level scan buffer: they coexist while the function runs
        (nested scans' buffers live one outer step at a time)."""
        return sum(b.bytes or 0 for s in self.scans if s.parent is None for b in s.buffers)

    def scan_by_id(self, sid: int) -> Scan:
        for s in self.scans:
            if s.id == sid:
                return s
        raise KeyError(sid)


@dataclass
class GraphNode:
    id: str
    label: str
    kind: str  # op, scan, alloc, input, output
    cluster: str = ""  # id of the scan whose inner graph holds it ("" for the function's graph)


@dataclass
class GraphPicture:
    """The optimized graph of one target as plain nodes, edges and scan clusters."""

    target: str
    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[tuple[str, str]] = field(default_factory=list)
    #: scan node id -> (scan record id, label)
    clusters: dict = field(default_factory=dict)
    #: node id -> [(buffer belongs_to, bytes, verdict, shape, dtype), ...]: every scan buffer of the
    #: target, on the node that creates it (an Alloc), else on its scan's node (a per-step
    #: output's buffer, which the scan allocates itself)
    buffers: dict = field(default_factory=dict)

    def buffer_count(self) -> int:
        return sum(len(v) for v in self.buffers.values())


#: ``field(metadata=INTERNAL)``: a field kept in process only, never in the plain (JSON) form
INTERNAL = {"plain": False}


def to_plain(obj: Any, internal: bool = False) -> Any:
    """Dataclasses to dicts, recursively (for the JSON reporter and golden files); enums as their
    values; fields marked ``INTERNAL`` left out, unless ``internal`` (the messages between
    scanprobe and its child process, read back whole by ``results.from_plain``)."""
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: to_plain(getattr(obj, f.name), internal) for f in fields(obj)
                if internal or f.metadata.get("plain", True)}
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (list, tuple)):
        return [to_plain(v, internal) for v in obj]
    if isinstance(obj, dict):
        return {k: to_plain(v, internal) for k, v in obj.items()}
    return obj
