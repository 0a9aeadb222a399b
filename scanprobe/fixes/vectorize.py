"""SP002's fix: a scan without recurrent state (a map) as one batched computation.

PyTensor's ``vectorize_graph``; for Theano a small batcher of scanprobe's own (elementwise ops,
dimshuffles, reductions, ``dot`` with a batched left operand, indexing with the step's index).
Where it cannot, the blocking op is named (e.g. slice bounds that depend on the step: every
step's slice has another shape).
"""

from __future__ import annotations

from scanprobe.backends import ops
from scanprobe.backends.graphs import toposort
from scanprobe.errors import failure_text
from scanprobe.fixes.graph_edit import (
    NotApplicable,
    Rewrite,
    _Step,
)
from scanprobe.rules import rule
from scanprobe.rules.sp002_independent_iterations import IndependentIterations

RULE = rule(IndependentIterations).code

class _Batcher:
    """Theano's vectorizer: each step variable gets a leading axis of n_steps (ops it knows)."""

    def __init__(self, backend, step):
        self.backend, self.api, self.T = backend, backend.api, backend.api.T
        self.memo = {id(t): s for t, s in zip(step.steps, step.outer_seqs)}
        self.batched = {id(t) for t in step.steps}

    def value(self, var):
        return self.memo.get(id(var), var)

    def run(self, outs, n_steps):
        T = self.T
        for node in toposort(outs):
            if not any(id(i) in self.batched for i in node.inputs):
                continue
            new = self.node(node)
            for o, n in zip(node.outputs, new):
                self.memo[id(o)] = n
                self.batched.add(id(o))
        result = []
        for o in outs:
            if id(o) in self.batched:
                result.append(self.memo[id(o)])
            else:  # the same for every step
                result.append(T.alloc(o, n_steps, *[o.shape[k] for k in range(o.type.ndim)]))
        return result

    def lifted(self, var):
        """``var`` with a leading batch axis (broadcastable when it does not vary)."""
        if id(var) in self.batched:
            return self.memo[id(var)]
        return var.dimshuffle("x", *range(var.type.ndim))

    def node(self, node):
        api, T, op = self.api, self.T, node.op
        ins = node.inputs
        b = [id(i) in self.batched for i in ins]
        if isinstance(op, api.Elemwise):
            return [op(*[self.lifted(i) for i in ins])] if len(node.outputs) == 1 else op(*[self.lifted(i) for i in ins])
        if isinstance(op, api.DimShuffle):
            order = [0] + [("x" if x == "x" else x + 1) for x in op.new_order]
            return [self.value(ins[0]).dimshuffle(*order)]
        if isinstance(op, api.CAReduce):
            x = self.value(ins[0])
            axis = tuple(range(1, x.type.ndim)) if op.axis is None else tuple(a + 1 for a in op.axis)
            if ops.is_sum(op):
                return [T.sum(x, axis=axis, dtype=op.dtype, acc_dtype=op.acc_dtype)]
            if ops.is_max_reduce(op):
                return [T.max(x, axis=axis)]
            return [api.CAReduce(op.scalar_op, axis=axis)(x)]
        if ops.is_max_and_argmax(op):
            x = self.value(ins[0])
            axis = list(range(1, x.type.ndim)) if op.axis is None else [a + 1 for a in op.axis]
            return list(T.max_and_argmax(x, axis=axis))
        if ops.is_scalar_tensor(op):
            return [self.value(ins[0])]  # a batched index stays a tensor (read by Subtensor)
        if isinstance(op, api.Dot) or ops.is_dot(op):
            x, y = self.value(ins[0]), self.value(ins[1])
            if b[0] and not b[1]:
                if ins[0].type.ndim == 1:
                    return [T.dot(x, y)]
                if ins[0].type.ndim == 2:
                    return [T.tensordot(x, y, axes=[[2], [0]])]
            if b[1] and not b[0] and ins[1].type.ndim == 1 and ins[0].type.ndim == 2:
                return [T.dot(y, x.T)]
            if b[0] and b[1] and ins[0].type.ndim == 1 and ins[1].type.ndim == 1:
                return [(x * y).sum(axis=1)]
            raise NotApplicable(f"scanprobe's Theano vectorizer cannot batch `{op}` with these operands")
        if isinstance(op, api.Subtensor):
            entries = self.backend.subtensor_indices(node)
            x = self.value(ins[0])
            if b[0]:
                if any(not isinstance(e, slice) and id(e) in self.batched for e in entries if e is not None):
                    raise NotApplicable(f"`{op}` indexes a step-dependent tensor with a step-dependent index")
                return [x[(slice(None),) + tuple(entries)]]
            first, rest = entries[0], entries[1:]
            if isinstance(first, slice) or id(first) not in self.batched or any(
                isinstance(e, slice) and any(v is not None and not isinstance(v, int) and id(v) in self.batched
                                             for v in (e.start, e.stop, e.step))
                or (not isinstance(e, slice) and id(e) in self.batched)
                for e in rest
            ):
                raise NotApplicable(f"scanprobe's Theano vectorizer cannot batch `{op}` (a step-dependent index)")
            picked = x[self.value(first)]
            return [picked[(slice(None),) + tuple(rest)] if rest else picked]
        raise NotApplicable(f"scanprobe's Theano vectorizer cannot batch `{op}`")


def vectorize(backend, outputs, wanted) -> list[Rewrite]:
    """SP002's rewrites: each map scan its findings name (``wanted``) as one batched computation;
    a scan whose step the walk found blocked (``records.Scan.blockers``) is reported, not tried."""
    api = backend.api
    rewrites = []
    for node, rec in wanted.nodes(backend, outputs):
        name = backend.scan_info(node.op).name or "scan_fn"
        try:
            step = _Step(backend, node)
        except NotApplicable:
            continue  # not a map in the user's graph
        rw = Rewrite(RULE, name, "", scan_node=node)
        rewrites.append(rw)
        if rec is not None and rec.blockers:
            rw.reason = f"cannot be vectorized: `{rec.blockers[0].op}`: {rec.blockers[0].reason}"
            continue
        if any(isinstance(n.op, api.Scan) for n in toposort(step.outs)):
            rw.reason = "the step holds a nested scan; scanprobe does not vectorize across scans"
            continue
        try:
            if api.vectorize_graph is not None:
                new = api.vectorize_graph(list(step.outs), replace=dict(zip(step.steps, step.outer_seqs)))
                new = list(new) if isinstance(new, (list, tuple)) else [new]
                loops = sum(1 for n in toposort(new) if ops.is_blockwise(n.op))
                how = "pytensor.graph.replace.vectorize_graph" + (f" ({loops} op(s) as Blockwise loops)" if loops else "")
            else:
                new = _Batcher(backend, step).run(list(step.outs), step.n_steps)
                how = "scanprobe's Theano vectorizer"
        except NotApplicable as exc:
            rw.reason = str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - the backend's vectorizer refused
            rw.reason = f"vectorizing failed: {failure_text(exc)}"
            continue
        for old, new_var in zip(step.outer_outs, new):
            rw.replacements[old] = new_var
        rw.form = "vectorized"
        rw.detail.append(f"{len(step.outs)} output(s) computed for all {len(step.outer_seqs)} sequence(s) at once, by {how}")
        rw.snippet = (
            "# the step written for all rows at once: drop the scan and apply the step's ops to the whole\n"
            "# sequence (a leading axis), e.g. T.tanh(T.dot(X, W) + b) instead of a scan of T.tanh(T.dot(x_t, W) + b)"
        )
    return rewrites


#: this rule's graph fix (fixes/registry.py)
rewrites = vectorize
