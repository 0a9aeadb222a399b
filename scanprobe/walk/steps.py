"""Step facts of a scan (SP002, SP003 and SP005 evidence) from its inner graph."""

from __future__ import annotations

import numpy as np

from scanprobe import records as R
from scanprobe.backends import ops
from scanprobe.backends.graphs import toposort
from scanprobe.walk.util import _flat


class StepFacts:
    """What a scan's step does with the step: state it carries, whole-batch work, blockers.

    ``varying``: inner variables that change from step to step (sequences' slices, states, and
    everything computed from them). A node that writes a varying index into a loop-invariant
    tensor (IncSubtensor and kin) is SP003's evidence; its target's leading dimension is traced
    back to an outer input and compared with n_steps. Nodes whose output shape depends on
    varying values (slice bounds, ARange, Alloc, Reshape, a nested scan's length) block SP002.
    """

    def __init__(self, plan):
        self.plan = plan
        api, a = plan.api, plan.args
        self.api = api
        states = []
        for role in ("mit_mot", "mit_sot", "sit_sot", "shared"):
            states += _flat(getattr(a, f"inner_in_{role}", []) or [])
        self.recurrent = bool(states)
        inner_out = []
        for role in ("mit_mot", "mit_sot", "sit_sot", "nit_sot", "shared"):
            inner_out += _flat(getattr(a, f"inner_out_{role}", []) or [])
        cond = getattr(a, "cond", None)
        if cond:
            inner_out += _flat(cond if isinstance(cond, (list, tuple)) else [cond])
        self.nodes = toposort(inner_out)
        varying = {id(v) for v in _flat(a.inner_in_seqs) + states}
        for node in self.nodes:
            if any(id(i) in varying for i in node.inputs):
                varying.update(id(o) for o in node.outputs)
        self.varying = varying
        self.non_seq_outer = {id(i): o for i, o in zip(a.inner_in_non_seqs, a.outer_in_non_seqs)}
        self.writes = []
        self.blockers = []
        self.opaque = []
        for node in self.nodes:
            if ops.is_index_write(node.op) and id(node.inputs[0]) not in varying and any(
                id(i) in varying for i in node.inputs[2:]
            ):
                src = self._leading_source(node.inputs[0])
                outer = self.non_seq_outer.get(id(src)) if src is not None else None
                dim = plan.level.shape(outer)[0] if outer is not None and getattr(outer.type, "ndim", 0) else None
                self.writes.append({"node": node, "outer": outer, "dim": dim})
            reason = self._blocks(node)
            if reason:
                self.blockers.append((node, reason))
            if plan.b.is_user_opaque(node.op):
                self.opaque.append(node)

    def _leading_source(self, var):
        """The inner input whose leading axis ``var``'s leading axis comes from (or None)."""
        api = self.api
        inputs = set(self.non_seq_outer)
        for _ in range(200):
            if id(var) in inputs:
                return var
            node = var.owner
            if node is None or not getattr(var.type, "ndim", 0):
                return None
            op = node.op
            nxt = None
            if isinstance(op, api.Elemwise):
                nxt = next((i for i in node.inputs if i.type.ndim == var.type.ndim and not i.type.broadcastable[0]), None)
            elif isinstance(op, api.DimShuffle):
                nxt = node.inputs[0] if list(op.new_order)[:1] == [0] else None
            elif isinstance(op, api.CAReduce):
                axis = getattr(op, "axis", None)
                nxt = node.inputs[0] if axis is not None and 0 not in axis else None
            elif isinstance(op, api.Dot) or ops.is_dot(op):
                nxt = node.inputs[0]
            elif isinstance(op, (api.Alloc, api.AllocEmpty)):
                dim = node.inputs[1] if isinstance(op, api.Alloc) else node.inputs[0]
                owner = dim.owner
                while owner is not None and ops.is_scalar_tensor(owner.op):
                    owner = owner.inputs[0].owner
                if owner is not None and isinstance(owner.op, api.Shape_i) and owner.op.i == 0:
                    nxt = owner.inputs[0]
            elif ops.is_index_read(op) or ops.is_index_write(op) or ops.is_pass_through(op):
                nxt = node.inputs[0]
            if nxt is None:
                return None
            var = nxt
        return None

    def _blocks(self, node) -> str:
        api, varying = self.api, self.varying
        if isinstance(node.op, (api.Subtensor, api.IncSubtensor)):
            try:
                entries = self.plan.b.subtensor_indices(node)
            except Exception:  # noqa: BLE001
                return ""
            for e in entries:
                if isinstance(e, slice) and any(
                    x is not None and not isinstance(x, (int, np.integer)) and id(x) in varying
                    for x in (e.start, e.stop, e.step)
                ):
                    return "its slice bounds depend on the step, so each step's slice has another shape"
            return ""
        shape_inputs = ops.shape_inputs(node)
        if shape_inputs is not None and any(id(i) in varying for i in shape_inputs):
            return "its output shape depends on the step"
        if self.plan.b.is_scan(node) and id(node.inputs[0]) in varying:
            return "the nested scan's number of steps depends on the step"
        return ""

    def fill(self, rec, n_val):
        plan, lv = self.plan, self.plan.level
        rec.recurrent = self.recurrent
        rec.step_ops = len(self.nodes)
        for item in self.writes:
            node, dim = item["node"], item["dim"]
            value = lv.value(dim) if dim is not None else None
            equals = None
            if isinstance(value, int) and isinstance(n_val, int):
                equals = value == n_val
            if dim is not None and equals is not False:
                # under made-up input sizes too: equal by construction, not by coincidence
                probes = lv.probe([plan.n_steps, dim])
                pairs = [(p.get(plan.n_steps), p.get(dim)) for p in probes]
                if all(isinstance(a, int) and isinstance(b, int) for a, b in pairs):
                    equals = all(a == b for a, b in pairs)
            out = node.outputs[0]
            downstream = {id(out)}
            count = 0
            for n in self.nodes:
                if any(id(i) in downstream for i in n.inputs):
                    downstream.update(id(o) for o in n.outputs)
                    count += 1
            outer = item["outer"]
            target = plan._user_label(outer, "non_sequence", 0, None) if outer is not None else "a tensor built in the step"
            if target.startswith("<") and outer is not None:
                made = outer.owner.op if outer.owner is not None else "an input"
                target = f"a {outer.type.ndim}-D {outer.type.dtype} tensor made outside the step ({made})"
            rec.step_work.append(
                R.StepWork(
                    op=str(node.op),
                    target=target,
                    length=R.Dim(value if isinstance(value, int) else None, lv.formula(dim) if dim is not None else "?"),
                    equals_n_steps=equals,
                    downstream_ops=count,
                )
            )
        for node in self.opaque:
            name = getattr(node.op, "name", None) or ops.display_name(node.op)
            rec.opaque.append(R.Blocker(op=str(name), reason=f"{len(node.op.fgraph.apply_nodes) if hasattr(node.op, 'fgraph') else '?'} ops inside"))
        seen = set()
        for node, reason in self.blockers:
            if (str(node.op), reason) not in seen:
                seen.add((str(node.op), reason))
                rec.blockers.append(R.Blocker(op=str(node.op), reason=reason))


