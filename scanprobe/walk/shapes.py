"""Symbolic shapes on demand: only for the variables the walk asks about, each computed once.

The backends' ``ShapeFeature`` infers the shape of every variable of a graph when it is attached
(and a Scan's ``infer_shape`` attaches another one to its inner graph): on a 50,000-node module
that is most of the analysis time, for shapes nobody reads. Here a shape is computed when asked
(a buffer's dims, a reader's index, a nested scan's inputs), from its inputs' shapes, without
recursion (graphs can be thousands of ops deep), and memoized:

- Elemwise: each output dim is the dim of an input that is not broadcastable there (the op
  requires those to be equal), else 1. No broadcast-checking graph is built.
- DimShuffle: the input's dims reordered, 1 for each new axis.
- Scan: a traced state's output has its buffer's shape (the outer input); an untraced state's
  has its input's; a per-step (nit_sot) output is (its length,) + the shape of the step's output,
  inferred in the inner graph from the outer inputs' shapes (sequences lose their time axis).
- anything else: the op's own ``infer_shape``; if that fails, ``Shape_i`` of the variable.
- graph inputs: static dims where the type knows them, else ``Shape_i`` of the input (sized
  later from what is known of the input).
"""

from __future__ import annotations

import numpy as np

from scanprobe.backends.graphs import ByIdentity


class LazyShapes:
    """``shapes(var)`` -> tuple of scalar shape variables (None for non-tensor variables)."""

    def __init__(self, backend, leaves=None):
        self.b = backend
        self.api = backend.api
        #: variable -> shape tuple, given from outside (a scan's inner inputs); keyed by identity
        #: (PyTensor's NominalVariables of two scan levels compare equal)
        self.memo: dict = ByIdentity(leaves or {})
        self._consts: dict = {}

    # ------------------------------------------------------------------ helpers
    def const(self, value: int):
        c = self._consts.get(value)
        if c is None:
            c = self._consts[value] = self.api.T.constant(int(value), dtype="int64")
        return c

    @staticmethod
    def ndim(var):
        return getattr(var.type, "ndim", None)

    def _leaf(self, var):
        if isinstance(var, self.api.Constant):
            return tuple(self.const(d) for d in np.shape(var.data))
        static = self.b.static_dims(var)
        return tuple(self.const(s) if s is not None else self.api.Shape_i(i)(var) for i, s in enumerate(static))

    def _fallback(self, var):
        static = self.b.static_dims(var)
        return tuple(self.const(s) if s is not None else self.api.Shape_i(i)(var) for i, s in enumerate(static))

    # ------------------------------------------------------------------ main
    def __call__(self, var):
        if self.ndim(var) is None:
            return None
        memo = self.memo
        if var in memo:
            return memo[var]
        stack = [var]
        while stack:
            v = stack[-1]
            if v in memo:
                stack.pop()
                continue
            node = v.owner
            if node is None:
                memo[v] = self._leaf(v)
                stack.pop()
                continue
            missing = [i for i in node.inputs if self.ndim(i) is not None and i not in memo]
            if missing:
                stack.extend(missing)
                continue
            self._node(node)
            stack.pop()
        return memo[var]

    def _node(self, node):
        api, memo = self.api, self.memo
        op = node.op
        shapes = [memo.get(i) for i in node.inputs]
        outs = None
        try:
            if isinstance(op, api.Elemwise):
                outs = [self._elemwise(node, shapes, o) for o in node.outputs]
            elif isinstance(op, api.DimShuffle):
                outs = [tuple(self.const(1) if d == "x" else shapes[0][d] for d in op.new_order)]
            elif self.b.is_scan(node):
                outs = self._scan(node)
            else:
                outs = self.b.infer_shape(node, shapes)
        except Exception:  # noqa: BLE001 - an op whose infer_shape needs more than we give it
            outs = None
        for k, o in enumerate(node.outputs):
            if self.ndim(o) is None:
                continue
            shp = outs[k] if outs is not None and k < len(outs) else None
            memo[o] = tuple(self._as_var(d) for d in shp) if shp is not None else self._fallback(o)

    def _as_var(self, d):
        if isinstance(d, (int, np.integer)):
            return self.const(d)
        return d

    def _elemwise(self, node, shapes, out):
        dims = []
        for i in range(out.type.ndim):
            d = None
            for inp, shp in zip(node.inputs, shapes):
                if shp is not None and len(shp) == out.type.ndim and not inp.type.broadcastable[i]:
                    d = shp[i]
                    break
            dims.append(d if d is not None else self.const(1))
        return tuple(dims)

    def _scan(self, node):
        """Output shapes of a Scan node from its outer inputs' shapes."""
        a = self.b.scan_roles(node, thawed=True)
        memo = self.memo
        out_shape = {}
        for role in ("mit_mot", "mit_sot", "sit_sot", "shared"):
            for outer_in, outer_out in zip(getattr(a, f"outer_in_{role}"), getattr(a, f"outer_out_{role}")):
                if self.ndim(outer_out) is not None:
                    out_shape[outer_out] = memo.get(outer_in) or self._fallback(outer_out)
        nit_outs = list(a.outer_out_nit_sot)
        if nit_outs:
            from scanprobe.backends.graphs import ancestors

            inner = LazyShapes(self.b, self._inner_leaves(a))
            inner_vars = {id(v) for v in ancestors(list(a.inner_outputs) + list(a.inner_inputs))}
            for length, outer_out, inner_out in zip(a.outer_in_nit_sot, nit_outs, a.inner_out_nit_sot):
                step = inner(inner_out)
                if step is None:
                    continue
                if any(_reads(d, inner_vars | set(map(id, inner.memo))) for d in step):
                    step = self._to_outer(step, a, inner_vars, inner) or self._fallback(outer_out)[1:]
                out_shape[outer_out] = (length,) + tuple(step)
        return [out_shape.get(o) for o in node.outputs]

    def _to_outer(self, dims, a, inner_vars, inner):
        """Step-output dims that read the inner graph (a nested scan's buffer is sized by scalars
        computed in the step) rewritten on the outer graph: the shape of an inner variable is
        replaced by its inferred shape (``inner``: shapes of the inner graph from the outer
        inputs'), a sequence's or state's shape by the outer one's without the time axis, and a
        non_sequence by the outer value. None when a dim reads more of the step than that."""
        from scanprobe.backends.graphs import ancestors

        api, memo = self.api, self.memo
        values = {}
        for role in ("non_seqs", "shared"):
            for outer, inn in zip(getattr(a, f"outer_in_{role}"), getattr(a, f"inner_in_{role}")):
                values[inn] = outer
        per_step = {}
        for outer, inn in zip(a.outer_in_seqs, a.inner_in_seqs):
            per_step[inn] = outer
        for role in ("mit_mot", "mit_sot", "sit_sot"):
            for outer, inns in zip(getattr(a, f"outer_in_{role}"), getattr(a, f"inner_in_{role}")):
                for inn in inns if isinstance(inns, (list, tuple)) else [inns]:
                    per_step[inn] = outer
        dims = list(dims)
        for _ in range(8):
            replace = dict(values)
            for v in ancestors(dims):
                node = v.owner
                if node is None or not isinstance(node.op, (api.Shape, api.Shape_i)) \
                        or id(node.inputs[0]) not in inner_vars:
                    continue
                src = node.inputs[0]
                if src in per_step:
                    shp = memo.get(per_step[src])
                    shp = tuple(shp[1:]) if shp is not None else None
                elif src.owner is not None:
                    shp = inner(src)
                    if shp is not None and any(d.owner is not None and isinstance(d.owner.op, api.Shape_i)
                                               and d.owner.inputs[0] is src for d in shp):
                        shp = None  # nothing inferred: the shape of the value itself
                else:
                    shp = None
                if shp is None:
                    continue
                if isinstance(node.op, api.Shape_i):
                    replace[v] = shp[node.op.i]
                else:
                    replace[v] = api.T.stack([api.T.cast(d, "int64") for d in shp]) if shp else v
            try:
                new = api.clone_replace(dims, replace=replace)
            except Exception:  # noqa: BLE001 - a node that cannot be rebuilt
                return None
            if not any(_reads(d, inner_vars) for d in new):
                return tuple(new)
            if all(a_ is b_ for a_, b_ in zip(new, dims)):
                return None
            dims = list(new)
        return None

    def _inner_leaves(self, a) -> dict:
        """Inner inputs of a scan -> shapes in terms of the outer graph."""
        memo, leaves = self.memo, ByIdentity()

        def tail(outer):
            shp = memo.get(outer)
            return tuple(shp[1:]) if shp is not None else None

        for outer, inner in zip(a.outer_in_seqs, a.inner_in_seqs):
            if tail(outer) is not None:
                leaves[inner] = tail(outer)
        for role in ("mit_mot", "mit_sot", "sit_sot"):
            for outer, inners in zip(getattr(a, f"outer_in_{role}"), getattr(a, f"inner_in_{role}")):
                for inner in inners if isinstance(inners, (list, tuple)) else [inners]:
                    if tail(outer) is not None:
                        leaves[inner] = tail(outer)
        for role in ("shared", "non_seqs"):
            for outer, inner in zip(getattr(a, f"outer_in_{role}"), getattr(a, f"inner_in_{role}")):
                if memo.get(outer) is not None:
                    leaves[inner] = memo[outer]
        return leaves


def _reads(dim, variables: set) -> bool:
    """Whether a shape expression still reads one of ``variables`` (ids: the inner graph's; its
    constants are shared with any graph and do not count): such a dim cannot be evaluated at the
    outer level."""
    from scanprobe.backends.graphs import ancestors

    return any(id(v) in variables and not (v.owner is None and hasattr(v, "data")) for v in ancestors([dim]))
