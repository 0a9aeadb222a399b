"""Editing a user's (unoptimized) graph: what the graph fixes share.

Each graph fix takes the variables a user compiled (outputs and update expressions) and returns
``Rewrite`` records: replacements ``{old variable: new variable}`` plus plain notes that say what
was done, or why not. Nothing here decides whether a fix is right: ``verify`` reruns both
functions and compares. Backend classes come through the adapter's ``api`` (``base.Api``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scanprobe.backends import ops
from scanprobe.backends.graphs import ancestors, toposort


class NotApplicable(Exception):
    """A rewrite does not apply; the message says why in the user's terms."""


@dataclass
class Rewrite:
    rule: str
    scan: str
    form: str  # "sum-of-squares", "per-example", "vectorized", or "" when not applied
    detail: list[str] = field(default_factory=list)
    replacements: dict = field(default_factory=dict)
    reason: str = ""  # why not applied
    scan_node: object = None  # the Scan node of the user's graph it is about
    snippet: str = ""  # the code to write, in the user's names

    def plain(self) -> dict:
        return {
            "rule": self.rule, "scan": self.scan, "form": self.form, "detail": self.detail,
            "reason": self.reason, "snippet": self.snippet,
        }


class Wanted:
    """The scans a rule's findings name, with the evidence the walk recorded for each
    (``records.Scan``): a fixer rewrites these and no other.

    A Scan node of the user's graph is one of them when its name is one of the record's (a
    merged scan is named ``a&b``) and, where both are known, it was made at the record's site.
    """

    def __init__(self, target, findings, site_of=None, settings=None, pullbacks=None):
        ids = {f.scan_id for f in findings}
        self.findings = list(findings)
        self.scans = [s for s in target.scans if s.id in ids]
        self.site_of = site_of or (lambda node: None)
        #: the budgets (``fix --max-buffer``) and the scans' recorded gradients
        #: (``loading.Pullback`` by id of the Scan node), for the fixes that need them
        self.settings = settings
        self.pullbacks = pullbacks or {}

    def __bool__(self) -> bool:
        return bool(self.scans)

    def record(self, backend, node):
        """The finding's scan record a user-graph Scan node is, else None."""
        name = backend.scan_info(node.op).name or "scan_fn"
        site = None
        for rec in self.scans:
            if name not in rec.name.split("&"):
                continue
            if rec.site is not None:
                site = site or self.site_of(node) or False
                if site and (site.file, site.line) != (rec.site.file, rec.site.line):
                    continue
            return rec
        return None

    def nodes(self, backend, outputs):
        """(Scan node, its record) for every wanted scan of the user's graph, outermost first."""
        for node in scan_nodes(backend.api, outputs):
            rec = self.record(backend, node)
            if rec is not None:
                yield node, rec

    @classmethod
    def every_scan(cls, settings=None, pullbacks=None) -> "Wanted":
        """Every scan of the graph, without records (a benchmark calling a fixer directly)."""
        return _EveryScan(settings, pullbacks)


class _EveryScan(Wanted):
    def __init__(self, settings=None, pullbacks=None):
        self.findings, self.scans, self.site_of = [], [], lambda node: None
        self.settings, self.pullbacks = settings, pullbacks or {}

    def __bool__(self) -> bool:
        return True

    def nodes(self, backend, outputs):
        for node in scan_nodes(backend.api, outputs):
            yield node, None


# ---------------------------------------------------------------------------------- helpers


def _name(var) -> str:
    return getattr(var, "name", None) or str(var)


def _depends_on(var, targets) -> bool:
    ids = {id(t) for t in targets}
    return any(id(v) in ids for v in ancestors([var]))


def _is_var(var, t) -> bool:
    """``var`` is ``t`` itself or ``t`` converted to a scalar (how Subtensor takes an index)."""
    while var is not t and var.owner is not None and len(var.owner.inputs) == 1:
        op = var.owner.op
        if not (ops.is_scalar_tensor(op) or ops.is_cast_like(op)):
            return False
        var = var.owner.inputs[0]
    return var is t


def _is_shape(user) -> bool:
    return user != "output" and ops.is_shape_read(user.op)


def _shape_of_map(api, shape_node, n_steps, like):
    """Shape (or Shape_i) of a map's output whose step has ``like``'s shape."""
    T = api.T
    full = T.concatenate([T.cast(T.stack([n_steps]), "int64"), T.cast(like.shape, "int64")])
    out = shape_node.outputs[0]
    if ops.is_shape_i(shape_node.op):
        return T.cast(full[shape_node.op.i], out.type.dtype)
    return T.cast(full, out.type.dtype)


def _constant(api, var):
    """The value of a constant (through dimshuffles), else None."""
    while var.owner is not None and isinstance(var.owner.op, api.DimShuffle):
        var = var.owner.inputs[0]
    if isinstance(var, api.Constant):
        import numpy as np

        data = np.asarray(var.data)
        return data.item() if data.size == 1 else None
    return None


def scan_nodes(api, outputs):
    """Scan nodes of the user's graph, outermost first (no nested ones)."""
    return [n for n in toposort(outputs) if isinstance(n.op, api.Scan)]


def _clients(outputs):
    clients: dict[int, list] = {}
    for node in toposort(outputs):
        for i, inp in enumerate(node.inputs):
            clients.setdefault(id(inp), []).append((node, i))
    for o in outputs:
        clients.setdefault(id(o), []).append(("output", 0))
    return clients


def _clone(api, outputs, replace):
    """``outputs`` rebuilt with ``replace`` applied, node by node (``make_node`` recomputes each
    output type, so a replacement may have another broadcast pattern). Replacement values are
    kept as they are, so that gradients can be taken with respect to them; nodes that read no
    replaced variable are shared with the original graph."""
    if not replace:
        return list(outputs)
    memo = {id(k): v for k, v in replace.items()}
    for node in toposort(list(outputs)):
        if any(id(o) in memo for o in node.outputs):
            continue
        new_inputs = [memo.get(id(i), i) for i in node.inputs]
        if all(a is b for a, b in zip(new_inputs, node.inputs)):
            continue
        new_node = node.clone_with_new_inputs(new_inputs, strict=False)
        for old, new in zip(node.outputs, new_node.outputs):
            memo[id(old)] = new
    return [memo.get(id(o), o) for o in outputs]


class _Step:
    """A map scan's step as graphs of the outer variables, with one fresh variable per sequence."""

    def __init__(self, backend, node):
        api = backend.api
        a = backend.scan_roles(node, thawed=True)
        for role in ("mit_mot", "mit_sot", "sit_sot", "shared"):
            if list(getattr(a, f"outer_in_{role}", []) or []):
                raise NotApplicable(f"the scan carries state from step to step ({role.replace('_', '-')})")
        if backend.scan_info(node.op).as_while:
            raise NotApplicable("the scan is a while-loop: its number of steps depends on the values")
        if not list(a.outer_in_seqs):
            raise NotApplicable("the scan has no sequence to map over")
        self.node, self.args = node, a
        self.n_steps = node.inputs[0]
        self.outer_seqs = list(a.outer_in_seqs)
        self.steps = [s.type() for s in a.inner_in_seqs]
        for v, s in zip(self.steps, a.inner_in_seqs):
            v.name = f"{s.name or 'step'}_t"
        replace = dict(zip(a.inner_in_non_seqs, a.outer_in_non_seqs))
        replace.update(zip(a.inner_in_seqs, self.steps))
        self.outer_outs = list(a.outer_out_nit_sot)
        self.outs = _clone(api, a.inner_out_nit_sot, replace)
        self.name = backend.scan_info(node.op).name or "scan_fn"

    def seq_is_arange(self, backend) -> bool:
        """True when the only sequence is ``arange(n)`` (start 0, step 1): step t sees t."""
        api = backend.api
        if len(self.outer_seqs) != 1:
            return False
        v = self.outer_seqs[0]

        def const(x, default):
            if x is None:
                return default
            if isinstance(x, (int,)):
                return x
            value = _constant(api, x)
            return value if value is not None else getattr(x, "data", None)

        while v.owner is not None and isinstance(v.owner.op, api.Subtensor):
            idx = backend.subtensor_indices(v.owner)
            if not (len(idx) == 1 and isinstance(idx[0], slice)):
                return False
            if const(idx[0].start, 0) != 0 or const(idx[0].step, 1) != 1:
                return False
            v = v.owner.inputs[0]
        if v.owner is None or not ops.is_arange(v.owner.op):
            return False
        start, _, step = v.owner.inputs
        return _constant(api, start) == 0 and _constant(api, step) == 1




def apply(api, variables, rewrites):
    """``variables`` (outputs and update expressions) with every applied rewrite's replacements."""
    replace = {}
    for rw in rewrites:
        replace.update(rw.replacements)
    if not replace:
        return list(variables)
    return _clone(api, variables, replace)
