"""Evaluating the scalars that size buffers, without running the function (a ``Level`` mixin).

A scalar is evaluated (Python linker, no optimizer, one function per graph level) only when its
graph has no Scan, no array of two or more dimensions, and reads inputs of unknown value only
through Shape/Shape_i; such inputs are fed a zero-strided stand-in of the right shape (nothing
is allocated). Probes evaluate the same graphs under made-up input sizes.
"""

from __future__ import annotations

import numpy as np

from scanprobe.backends.graphs import ancestors
from scanprobe.backends.ops import is_shape_arithmetic
from scanprobe.walk.util import _ancestor_nodes, _as_int, _is_constant


class Evaluation:
    """Requests, values and probes of one graph level (mixed into ``level.Level``)."""

    def request(self, var):
        """Ask for a scalar's value; ``evaluate_pending`` computes all requests at once."""
        if var is None or _is_constant(self.api, var):
            return
        if var not in self._values and var not in self._pending:
            self._pending.append(var)

    def value(self, var):
        if var is None:
            return None
        if _is_constant(self.api, var):
            return _as_int(var.data)
        return self._values.get(var)

    def evaluate_pending(self):
        """Evaluate every requested scalar that can be, in one Python-linker function."""
        todo, self._pending = self._pending, []
        for var in todo:
            self._values.setdefault(var, None)
        self._values.update({k: v for k, v in self._evaluate(todo, self.known).items() if v is not None})

    #: Sizes given to inputs of unknown shape when probing (primes, so no accidental equality).
    PROBES = (1009, 1511)

    def probe(self, vars_, free=()):
        """Values of ``vars_`` under two made-up sizes for every input of unknown shape (and for
        every scalar of ``free``: sizes the graph cannot compute, freed by ``opened``).

        Used only to recognise relations that hold whatever the sizes: a leading dimension of
        n_steps + k (if lead - n_steps is the same k under both probes while n_steps changes, the
        buffer holds one row per step), an index counted from the end. No figure from a probe is
        reported.
        """
        results = []
        for size in self.PROBES:
            known = dict(self.known)
            for var in list(self.known) + list(self.fg.inputs) + list(free):
                value, shape, source = known.get(var, (None, None, "unknown"))
                if value is None and shape is None:
                    ndim = getattr(var.type, "ndim", None)
                    if ndim == 0:
                        known[var] = (np.asarray(size, dtype=var.type.dtype), (), "probe")
                    elif ndim:
                        known[var] = (None, (size,) * ndim, "probe")
            results.append(self._evaluate(list(vars_), known))
        return results

    def opened(self, var):
        """``var`` with every size it reads that cannot be computed (the shape of a value made
        by an op scanprobe never runs) replaced by a free scalar: (new var, the free scalars)."""
        api = self.api
        var = self._resolve_shapes(var)
        free = {}
        for node in _ancestor_nodes([var]):
            if isinstance(node.op, api.Shape_i) and node.inputs[0].owner is not None \
                    and self._evaluable(node.outputs[0], self.known) is None:
                free[node.outputs[0]] = node.outputs[0].type()
        if not free:
            return var, []
        return api.clone_replace(var, replace=free), list(free.values())

    def _evaluate(self, todo, known):
        """Values of the scalars ``todo`` that can be computed safely (see ``_evaluable``).

        All in one function with a Python linker first; if that fails, each on its own, with the
        Python linker, then node by node (``_interpret``), then with a compiled (C) linker: one
        failure never blanks the others.
        (The Python linker fails on some graphs: numpy 2 refuses a Python int out of an int8
        constant's range; Aesara's Elemwise over 32 inputs has no Python ufunc.)
        """
        ok, feeds, originals, own_feeds = [], {}, [], []
        for var in todo:
            if _is_constant(self.api, var):
                continue
            resolved = self._resolve_shapes(var)
            inputs = self._evaluable(resolved, known)
            if inputs is None:
                continue
            ok.append(resolved)
            originals.append(var)
            own_feeds.append(inputs)
            feeds.update(inputs)
        out = {v: self.value(v) if _is_constant(self.api, v) else None for v in todo}
        if not ok:
            return out
        # one function for all: an in-place op of the optimized graph must not overwrite a size
        # another output reads (the tutorial LSTM's `Mul` in place on `x.shape[1]`: 1600 for 16)
        results = self._run(self._undestroyed(ok), feeds, self.b.scalar_eval_modes()[0])
        if results is not None:
            for var, res in zip(originals, results):
                out[var] = _as_int(res)
            return out
        first, *compiled = self.b.scalar_eval_modes()
        for var, resolved, inputs in zip(originals, ok, own_feeds):
            # the Python linker, then node by node here, and only then a compiled function: a
            # C module per new shape-arithmetic op (Aesara's fused clamps of save-mem lengths;
            # `check rnn_bptt.py` from a cold cache: 76 modules, 41.6 s -> 34, 18.9 s)
            results = self._run([resolved], inputs, first)
            if results is None:
                results = self._interpret([resolved], inputs)
            for mode in compiled:
                if results is not None:
                    break
                results = self._run([resolved], inputs, mode)
            if results is not None:
                out[var] = _as_int(results[0])
        return out

    def _undestroyed(self, outputs):
        """``outputs`` rebuilt so that no op destroys a variable: each input an op works on in
        place (``destroy_map``, kept from the optimized graph the shape graphs are cut from) is a
        copy. Several sizes computed in one function share sub-graphs, and an in-place op would
        otherwise overwrite a size before it is returned."""
        from scanprobe.backends.graphs import toposort

        memo = {}
        changed = False
        for node in toposort(list(outputs)):
            destroyed = {i for ii in getattr(node.op, "destroy_map", {}).values() for i in ii}
            ins = [memo.get(id(v), v) for v in node.inputs]
            ins = [self.api.T.tensor_copy(v) if k in destroyed else v for k, v in enumerate(ins)]
            if all(a is b for a, b in zip(ins, node.inputs)):
                continue
            changed = True
            new = node.clone_with_new_inputs(ins)
            memo.update((id(o), n) for o, n in zip(node.outputs, new.outputs))
        return [memo.get(id(v), v) for v in outputs] if changed else list(outputs)

    def _interpret(self, outputs, feeds):
        """``outputs`` computed node by node with each op's Python ``perform`` (an elementwise
        op: its scalar op on each element), or None when an op refuses.

        For shape graphs the Python linker refuses, tried before a compiled linker (which
        would build a C module per new op): one cut from an optimized graph keeps its in-place
        ops, whose destroy orderings a new function can find cyclic (Aesara: "graph contains
        cycles"), and an elementwise op of over 32 inputs has no numpy ufunc for the Python
        linker. Here a destroyed input is copied first, and the graphs are scalars and short
        vectors (``_evaluable``)."""
        from scanprobe.backends.graphs import toposort

        api = self.api
        values = {}
        for var, fed in feeds.items():
            values[var] = var.get_value(borrow=True) if fed is None and isinstance(var, api.SharedVariable) else fed

        def value_of(v):
            if v in values:
                return values[v]
            if _is_constant(api, v):
                return v.data
            raise KeyError(v)

        try:
            for node in toposort(outputs):
                ins = [value_of(v) for v in node.inputs]
                for k in {i for ii in getattr(node.op, "destroy_map", {}).values() for i in ii}:
                    ins[k] = np.array(ins[k], copy=True)
                if isinstance(node.op, api.Elemwise):
                    outs = _elementwise(node, ins)
                else:
                    storage = [[None] for _ in node.outputs]
                    try:  # ops with parameters take them as a fourth argument
                        params = node.op.get_params(node)
                    except Exception:  # noqa: BLE001 - MethodNotDefined: an op without parameters
                        params = None
                    if params is not None:
                        node.op.perform(node, ins, storage, params)
                    else:
                        node.op.perform(node, ins, storage)
                    outs = [s[0] for s in storage]
                values.update(zip(node.outputs, outs))
            return [value_of(v) for v in outputs]
        except Exception:  # noqa: BLE001 - an op without a Python implementation
            return None

    def _run(self, outputs, feeds, mode):
        """``outputs`` computed from ``feeds`` in ``mode``, or None when that fails."""
        free = [v for v in feeds if not isinstance(v, self.api.SharedVariable)]
        try:
            fn = self.b.compile(free, outputs, mode=mode, accept_inplace=True, on_unused_input="ignore")
            return fn(*[feeds[v] for v in free])
        except Exception:  # noqa: BLE001 - an op without this linker's implementation, a failed check
            return None

    def inline_wrappers(self, var, rounds=4):
        """``var`` with every wrapper op (an OpFromGraph: PyTensor 3.3 wraps merged scalar index
        arithmetic in ``ScalarizedElemwise``/``ScalarSubtensor``) replaced by its inner graph, so
        that index forms and probes read through it."""
        for _ in range(rounds):
            replace = {}
            for node in _ancestor_nodes([var]):
                if self.b.is_scan(node) or getattr(node.op, "fgraph", None) is None:
                    continue
                inner = self.b.wrapper_graph(node.op)
                if inner is None or len(inner[0]) != len(node.inputs) or len(inner[1]) != len(node.outputs):
                    continue
                outs = self.api.clone_replace(inner[1], replace=dict(zip(inner[0], node.inputs)))
                for old, new in zip(node.outputs, outs):
                    if old.type != new.type:
                        try:
                            new = old.type.filter_variable(new)
                        except Exception:  # noqa: BLE001 - a wrapper whose inner types differ: kept
                            break
                    replace[old] = new
            if not replace:
                return var
            var = self.api.clone_replace(var, replace=replace)
        return var

    def _resolve_shapes(self, var, rounds=6):
        """Replace Shape/Shape_i of computed variables by their inferred shapes.

        ``Shape_i{0}(scan_output)`` would run the scan; shape inference knows it is the scan's
        n_steps (or whatever its infer_shape says) without running anything. An inferred shape
        may read other shapes: those are resolved first, on the original graph (never on a clone:
        a cloned Scan would have its shapes inferred again, from a copy of its inner graph), and
        the graph is cloned once, with every replacement final.
        """
        return self._resolved_var(var, rounds, self.__dict__.setdefault("_shape_subst", {}))

    def _shape_nodes(self, var):
        """Shape/Shape_i nodes among ``var``'s ancestors, not walking into what they measure."""
        api = self.api
        seen, stack, found = set(), [var], []
        while stack:
            v = stack.pop()
            node = v.owner
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node.op, (api.Shape, api.Shape_i)):
                found.append(node)
                continue
            stack.extend(node.inputs)
        return found

    def _resolved_var(self, var, depth, subst):
        api = self.api
        replace = {}
        for node in self._shape_nodes(var):
            out = node.outputs[0]
            if out in subst:
                if subst[out] is not None:
                    replace[out] = subst[out]
                continue
            subst[out] = None  # in progress: a shape that reads itself stays as it is
            new = self._inferred_shape(node)
            if new is None or any(v is out for v in ancestors([new])):
                continue
            if depth > 0:
                new = self._resolved_var(new, depth - 1, subst)
                if any(v is out for v in ancestors([new])):
                    continue  # resolving it leads back to itself: kept as it is
            subst[out] = replace[out] = api.T.cast(new, out.type.dtype)
        return api.clone_replace(var, replace=replace) if replace else var

    def _inferred_shape(self, node):
        """What shape inference says a Shape/Shape_i node computes, or None."""
        api = self.api
        src = node.inputs[0]
        if src.owner is None and src not in self.shapes.memo:
            return None  # an input: sized from what is known of it (a cut step's fresh inputs
            # come with their shapes over the step's inputs: walk/nested_cut.py)
        shp = self.shapes(src)
        if shp is None:
            return None
        if isinstance(node.op, api.Shape_i):
            new = shp[node.op.i]
            if new.owner is not None and isinstance(new.owner.op, api.Shape_i) and new.owner.inputs[0] is src:
                return None  # nothing inferred: the shape of the value itself
            return new
        if getattr(src.type, "ndim", 0) > 0:
            return api.T.stack([api.T.cast(d, "int64") for d in shp])
        return None

    def _evaluable(self, var, known):
        """The inputs to feed to compute ``var``, or None when computing it is not safe.

        Safe means: no Scan and no array of two or more dimensions is computed, and every
        input whose value is unknown is only read through Shape/Shape_i (so a zero-strided
        stand-in of the right shape gives the exact answer without allocating).
        """
        api = self.api
        feeds = {}
        seen = set()
        stack = [var]
        while stack:
            v = stack.pop()
            if id(v) in seen:
                continue
            seen.add(id(v))
            if _is_constant(api, v):
                continue
            node = v.owner
            if node is None:
                if isinstance(v, api.SharedVariable):
                    feeds[v] = None
                    continue
                value, shape, _ = known.get(v, (None, None, ""))
                if value is not None:
                    feeds[v] = value
                    continue
                if shape is None:
                    return None
                feeds[v] = ("shape-only", shape)
                continue
            if self.b.is_scan(node) or not is_shape_arithmetic(node.op):
                return None  # never run the model's own ops (or anything costly) to size it
            for out in node.outputs:
                if getattr(out.type, "ndim", 0) >= 2:
                    return None
            is_shape = isinstance(node.op, (api.Shape, api.Shape_i))
            for inp in node.inputs:
                if not is_shape or inp.owner is not None:
                    stack.append(inp)
                    if inp.owner is None and not _is_constant(api, inp):
                        val = known.get(inp, (None, None, ""))[0]
                        if not isinstance(inp, api.SharedVariable) and val is None:
                            return None  # data of an input we only know the shape of
                elif inp.owner is None and not _is_constant(api, inp):
                    stack.append(inp)
        for v, fed in list(feeds.items()):
            if isinstance(fed, tuple) and fed and fed[0] == "shape-only":
                dtype = v.type.dtype
                feeds[v] = np.broadcast_to(np.zeros((), dtype=dtype), tuple(fed[1]))
        return feeds


def _elementwise(node, ins):
    """An elementwise node's outputs, its scalar op applied element by element (shape graphs
    are scalars and short vectors)."""
    arrays = [np.asarray(x) for x in ins]
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    arrays = [np.broadcast_to(a, shape) for a in arrays]
    outs = [np.empty(shape, dtype=o.type.dtype) for o in node.outputs]
    for idx in np.ndindex(*shape):
        res = node.op.scalar_op.impl(*[a[idx] for a in arrays])
        for o, r in zip(outs, res if len(outs) > 1 else (res,)):
            o[idx] = r
    return outs
