"""Graph rewrites behind ``scanprobe fix``: they change a user's (unoptimized) graph.

Part of the adapter layer (it handles theano/pytensor graph objects through ``backend.api``).
Each rewrite takes the variables a user compiled (outputs and update expressions) and returns
replacements ``{old variable: new variable}`` plus plain notes that say what was done, or why not.
Nothing here decides whether a fix is right: the caller reruns both functions and compares.

- ``per_example``: SP003. A scan over the batch index whose step differentiates ``cost[i]``
  (one example's cost) through the graph of the whole batch. When the cost is provably
  per-example (each term reads only its own row, checked op by op) and the step squares the
  gradient and the scan output is only summed over the batch (``mean``/``sum`` over axis 0), the
  sum of squared per-example gradients is computed from one backward pass of the batch: for a
  parameter used as ``dot(A, W)`` it is ``dot((A*A).T, D*D)`` with D the gradient with respect
  to the product; for one broadcast over the batch (a bias) it is ``(G*G).sum(0)`` with G the
  gradient with respect to the broadcast copy. Otherwise each step's graph is cloned with the
  batch inputs sliced to the step's row (``x[i:i+1]``): O(B) in all instead of O(B^2).
- ``vectorize``: SP002. A scan without recurrent state (a map) becomes one batched computation:
  PyTensor's ``vectorize_graph``; for Theano a small batcher of its own (elementwise ops, dimshuffles,
  reductions, ``dot`` with a batched left operand, indexing with the step's index). Where it cannot,
  the blocking op is named (e.g. slice bounds that depend on the step: every step's slice has
  another shape).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


# ---------------------------------------------------------------------------------- helpers


def _name(var) -> str:
    return getattr(var, "name", None) or str(var)


def _opname(op) -> str:
    scalar = getattr(op, "scalar_op", None)
    if scalar is not None:
        return type(scalar).__name__
    return type(op).__name__


def _depends_on(var, targets) -> bool:
    ids = {id(t) for t in targets}
    return any(id(v) in ids for v in ancestors([var]))


def _is_var(var, t) -> bool:
    """``var`` is ``t`` itself or ``t`` converted to a scalar (how Subtensor takes an index)."""
    while var is not t and var.owner is not None and len(var.owner.inputs) == 1 and type(var.owner.op).__name__ in (
        "ScalarFromTensor", "TensorFromScalar", "Cast", "Elemwise"
    ):
        if type(var.owner.op).__name__ == "Elemwise" and _opname(var.owner.op) not in ("Cast", "Identity"):
            return False
        var = var.owner.inputs[0]
    return var is t


def _is_shape(user) -> bool:
    return user != "output" and type(user.op).__name__ in ("Shape", "Shape_i")


def _shape_of_map(api, shape_node, n_steps, like):
    """Shape (or Shape_i) of a map's output whose step has ``like``'s shape."""
    T = api.T
    full = T.concatenate([T.cast(T.stack([n_steps]), "int64"), T.cast(like.shape, "int64")])
    out = shape_node.outputs[0]
    if type(shape_node.op).__name__ == "Shape_i":
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
        a = backend.scan_roles(node)
        for role in ("mit_mot", "mit_sot", "sit_sot", "shared"):
            if list(getattr(a, f"outer_in_{role}", []) or []):
                raise NotApplicable(f"the scan carries state from step to step ({role.replace('_', '-')})")
        if backend.scan_info(node.op)["as_while"]:
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
        self.name = backend.scan_info(node.op)["name"] or "scan_fn"

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
        if v.owner is None or type(v.owner.op).__name__ != "ARange":
            return False
        start, _, step = v.owner.inputs
        return _constant(api, start) == 0 and _constant(api, step) == 1


# ------------------------------------------------------------------------- SP003: per-example


def _per_example_cost(api, step):
    """The batch cost ``c`` whose row the step reads as ``c[t]``."""
    (t,) = step.steps
    found = {}
    for node in toposort(step.outs):
        if isinstance(node.op, api.Subtensor) and len(node.inputs) == 2 and _is_var(node.inputs[1], t):
            c = node.inputs[0]
            if not _depends_on(c, [t]):
                found[id(c)] = c
    if len(found) != 1:
        raise NotApplicable(
            "the step does not read one batch cost at the step's index (cost[i])"
            if not found
            else "the step reads several batch tensors at the step's index"
        )
    (c,) = found.values()
    if getattr(c.type, "ndim", None) != 1:
        raise NotApplicable(f"`{_name(c)}` indexed by the step is not a vector of per-example costs")
    return c


def _find_gradient(api, step, c, out):
    """(p, V): the parameter p and the variable V of ``out`` that is ``grad(c[t], p)``."""
    (t,) = step.steps
    leaves = [v for v in ancestors([c]) if v.owner is None and not isinstance(v, api.Constant)]
    cands = [v for v in ancestors([out]) if v.owner is not None and _depends_on(v, [t])]
    for p in leaves:
        try:
            g = api.grad(c[t], p, disconnected_inputs="raise")
        except Exception:  # noqa: BLE001 - p is not differentiable / disconnected
            continue
        for v in cands:
            if v.type == g.type and type(v.owner.op) is type(g.owner.op) and api.equal_computations([v], [g]):
                return p, v
    raise NotApplicable("no output of the step is the gradient of cost[i] with respect to a graph input")


def _is_square_of(api, out, v) -> bool:
    node = out.owner
    if node is None or not isinstance(node.op, api.Elemwise):
        return False
    name = _opname(node.op)
    if name == "Sqr" and node.inputs[0] is v:
        return True
    if name == "Pow" and node.inputs[0] is v and _constant(api, node.inputs[1]) == 2:
        return True
    return name == "Mul" and len(node.inputs) == 2 and node.inputs[0] is v and node.inputs[1] is v


_ROWWISE_REDUCE = ("Sum", "CAReduce", "Max", "Prod", "MaxAndArgmax")


def _rowwise(api, c):
    """Roles in the graph of the batch cost: 'ex' (axis 0 is the example) or 'inv' (the same for
    every example). Raises NotApplicable naming the op that mixes examples."""
    role = {id(c): "ex"}
    for node in reversed(toposort([c])):
        outs = [role.get(id(o)) for o in node.outputs]
        r = "ex" if "ex" in outs else ("inv" if "inv" in outs else None)
        if r is None:
            continue
        op, name = node.op, _opname(node.op)
        if r == "inv":
            wanted = ["inv"] * len(node.inputs)
        elif isinstance(op, api.Elemwise):
            wanted = ["inv" if inp.type.broadcastable[:1] == (True,) else "ex" for inp in node.inputs]
        elif isinstance(op, api.DimShuffle):
            order = list(op.new_order)
            if order and order[0] == "x":
                wanted = ["inv"]
            elif order and order[0] == 0:
                wanted = ["ex"]
            else:
                raise NotApplicable(f"a transpose moves the example axis ({op})")
        elif isinstance(op, api.Dot) or name in ("Dot22", "Dot22Scalar", "_dot"):
            if node.inputs[0].type.ndim < 1:
                raise NotApplicable(f"`{op}` has no example axis on its left operand")
            wanted = ["ex", "inv"]
        elif isinstance(op, api.CAReduce):
            axis = getattr(op, "axis", None)
            if axis is None or 0 in axis:
                raise NotApplicable(f"`{op}` sums over the examples inside the cost")
            wanted = ["ex"]
        elif isinstance(op, api.Subtensor):
            idx = op.idx_list
            if idx and not (isinstance(idx[0], slice) and idx[0] == slice(None, None, None)):
                raise NotApplicable(f"`{op}` indexes the example axis")
            wanted = ["ex"] + ["inv"] * (len(node.inputs) - 1)
        elif "Softmax" in name and getattr(op, "axis", -1) not in (0,) and node.inputs[0].type.ndim == 2:
            wanted = ["ex"] * len(node.inputs)
        else:
            raise NotApplicable(f"scanprobe cannot tell whether `{op}` keeps the examples apart")
        for inp, w in zip(node.inputs, wanted):
            prev = role.get(id(inp))
            if prev is not None and prev != w:
                raise NotApplicable(f"`{_name(inp)}` is used both per example and for the whole batch")
            role[id(inp)] = w
    leaves = [v for v in ancestors([c]) if v.owner is None and not isinstance(v, api.Constant)]
    batch = [v for v in leaves if role.get(id(v)) == "ex"]
    if not batch:
        raise NotApplicable("no input of the cost has an example axis")
    for v in ancestors([c]):
        if role.get(id(v)) == "inv" and v.owner is not None and _depends_on(v, batch):
            raise NotApplicable(f"`{_name(v)}` mixes the examples of the batch (e.g. a batch mean) into the cost")
    return role, batch


def _use_of(api, c, role, p):
    """How p enters the per-example cost: ('dot', node) or ('broadcast', dimshuffle node)."""
    uses = [(node, i) for node in toposort([c]) for i, inp in enumerate(node.inputs) if inp is p]
    if len(uses) != 1:
        raise NotApplicable(f"`{_name(p)}` is used {len(uses)} times in the cost")
    node, i = uses[0]
    if (isinstance(node.op, api.Dot) or _opname(node.op) in ("Dot22", "_dot")) and i == 1 and p.type.ndim == 2:
        if role.get(id(node.inputs[0])) == "ex" and node.inputs[0].type.ndim == 2:
            return "dot", node
    if isinstance(node.op, api.DimShuffle) and list(node.op.new_order)[:1] == ["x"]:
        users = [n for n in toposort([c]) if any(i is node.outputs[0] for i in n.inputs)]
        if (len(users) == 1 and isinstance(users[0].op, api.Elemwise) and _opname(users[0].op) == "Add"
                and role.get(id(users[0].outputs[0])) == "ex"):
            return "bias", users[0]  # p added to each example's row: its gradient is the sum's
        return "broadcast", node
    raise NotApplicable(f"`{_name(p)}` enters the cost through `{node.op}`, which scanprobe's sum-of-squares form does not cover")


_FORMULA = {
    "dot": "dot((A*A).T, D*D), D = gradient w.r.t. dot(A, p)",
    "bias": "(D*D).sum(0), D = gradient w.r.t. the sum p is added to",
    "broadcast": "(G*G).sum(0), G = gradient w.r.t. p broadcast to the batch",
}


def _sum_of_squares(api, c, role, params, batch):
    """For each p: the sum over the batch of the squared per-example gradients, one backward pass."""
    T = api.T
    uses = [(p,) + _use_of(api, c, role, p) for p in params]
    batch_size = batch[0].shape[0]  # from an input: the cost itself is rebuilt below
    fulls, replace = [], {}
    for p, kind, node in uses:
        if kind == "broadcast":
            ds = node.outputs[0]
            full = T.alloc(ds, batch_size, *[ds.shape[k] for k in range(1, ds.type.ndim)])
            full.name = f"{_name(p)}_per_example"
            replace[ds] = full
            fulls.append(full)
    dots = [node for p, kind, node in uses if kind in ("dot", "bias")]
    wanted = [c] + [n.outputs[0] for n in dots] + [n.inputs[0] for n in dots]
    cloned = _clone(api, wanted, replace) if replace else wanted
    c2, zs, acts = cloned[0], cloned[1 : 1 + len(dots)], cloned[1 + len(dots) :]
    grads = api.grad(c2.sum(), zs + fulls)
    out, gi, di = {}, 0, 0
    for p, kind, node in uses:
        if kind == "dot":
            d = grads[di]
            a = acts[di]
            out[p] = T.dot((a * a).T, d * d)
            di += 1
        elif kind == "bias":
            d = grads[di]
            out[p] = (d * d).sum(axis=0)
            di += 1
        else:
            g = grads[len(dots) + gi]
            out[p] = (g * g).sum(axis=0)
            gi += 1
    return out


def _label(var, fallback) -> str:
    return var.name if getattr(var, "name", None) and var.owner is None else fallback


def _snippet_sum_of_squares(api, c, role, params) -> str:
    T = "T"
    lines = ["# sum over the batch of each example's squared gradient, from one backward pass",
             "# (divide by the batch size for the mean); cost: your vector of per-example costs"]
    zs, parts = [], []
    for p in params:
        kind, node = _use_of(api, c, role, p)
        pn = _name(p)
        if kind == "dot":
            a = node.inputs[0]
            an = _label(a, f"a_{pn}")
            z = f"z_{pn}"
            zs.append(f"{z} = {T}.dot({an}, {pn})" + ("" if an == a.name else f"  # keep the input of dot(., {pn}) as {an}"))
            parts.append((z, f"{T}.dot(({an} ** 2).T, g[{{k}}] ** 2)", pn))
        elif kind == "bias":
            z = f"z_{pn}"
            zs.append(f"{z} = ... + {pn}  # keep the sum that {pn} is added to")
            parts.append((z, "(g[{k}] ** 2).sum(axis=0)", pn))
        else:
            z = f"{pn}_per_example"
            zs.append(f"{z} = {T}.alloc({pn}, batch_size, ...)  # use it in place of {pn} in the cost")
            parts.append((z, "(g[{k}] ** 2).sum(axis=0)", pn))
    lines += zs
    lines.append(f"g = {T}.grad(cost.sum(), [{', '.join(z for z, _, _ in parts)}])")
    for k, (_, expr, pn) in enumerate(parts):
        lines.append(f"sum_sq_{pn} = " + expr.format(k=k))
    return "\n".join(lines)


def _snippet_per_example(api, batch, params, outs, found) -> str:
    mod = api.module.__name__
    clone = "theano.clone" if mod == "theano" else "pytensor.graph.clone_replace"
    repl = ", ".join(f"{_name(b)}: {_name(b)}[i:i + 1]" for b in batch)
    ps = ", ".join(_name(p) for p in params)
    return "\n".join([
        "def step(i):  # one example's cost, computed from its own rows only",
        f"    cost_i = {clone}(cost, replace={{{repl}}})[0]",
        f"    return [T.grad(cost_i, p) ** 2 for p in [{ps}]]  # your step, with cost_i for cost[i]",
        f"result = {mod}.scan(step, sequences=[T.arange(cost.shape[0])])[0]",
    ])


def per_example(backend, outputs) -> list[Rewrite]:
    """SP003's rewrites for every scan of ``outputs`` that differentiates one example's cost."""
    api = backend.api
    rewrites = []
    clients = _clients(outputs)
    for node in scan_nodes(api, outputs):
        name = backend.scan_info(node.op)["name"] or "scan_fn"
        rw = Rewrite("SP003", name, "", scan_node=node)
        rewrites.append(rw)
        try:
            step = _Step(backend, node)
            if len(step.steps) != 1 or getattr(step.steps[0].type, "ndim", None) != 0:
                raise NotApplicable("the scan does not run over a single index")
            c = _per_example_cost(api, step)
        except NotApplicable:
            rewrites.pop()  # not a scan over the batch index: SP003 is not about it
            continue
        try:
            found = [_find_gradient(api, step, c, o) for o in step.outs]
            role, batch = _rowwise(api, c)
            rw.detail.append(
                f"per-example costs: the vector the step indexes (cost[i], computed by {_name(c).split('.')[0]}) from the batch input(s) "
                + ", ".join(f"`{_name(b)}`" for b in batch)
                + "; step outputs: "
                + ", ".join(f"grad(cost[i], `{_name(p)}`)" for p, _ in found)
            )
        except NotApplicable as exc:
            rw.reason = str(exc)
            continue
        # the sum-of-squares form: squared gradients, only summed over the batch afterwards
        sums = []
        for k, ((p, v), o, outer) in enumerate(zip(found, step.outs, step.outer_outs)):
            users = [(u, i) for u, i in clients.get(id(outer), []) if not _is_shape(u)]
            ok = _is_square_of(api, o, v) and users and all(
                u != "output" and isinstance(u.op, api.CAReduce) and _opname(u.op) in ("Add", "Sum")
                and tuple(getattr(u.op, "axis", None) or ()) == (0,) for u, _ in users
            )
            sums.append([u.outputs[0] for u, _ in users] if ok else None)
        if all(s is not None for s in sums) and step.seq_is_arange(backend):
            try:
                sq = _sum_of_squares(api, c, role, [p for p, _ in found], batch)
                for (p, _), users, outer in zip(found, sums, step.outer_outs):
                    for u in users:
                        rw.replacements[u] = api.T.cast(sq[p], u.type.dtype)
                    # the shape of the scan output (a mean divides by it) without running the scan
                    for u, _ in clients.get(id(outer), []):
                        if _is_shape(u):
                            rw.replacements[u.outputs[0]] = _shape_of_map(api, u, step.n_steps, p)
                rw.form = "sum-of-squares"
                rw.snippet = _snippet_sum_of_squares(api, c, role, [p for p, _ in found])
                rw.detail.append(
                    "one backward pass of the batch; "
                    + "; ".join(
                        f"`{_name(p)}`: " + _FORMULA[_use_of(api, c, role, p)[0]]
                        for p, _ in found
                    )
                )
                continue
            except NotApplicable as exc:
                rw.detail.append(f"sum-of-squares form not used: {exc}")
        else:
            rw.detail.append("sum-of-squares form not used: the squared gradients are not only summed over the batch")
        # the per-example graph: every step clones the cost with the batch inputs sliced to its row
        (t,) = step.steps
        sliced = _clone(api, [c], {b: b[t : t + 1] for b in batch})[0]
        new_outs = _clone(api, step.outs, {v: api.grad(sliced[0], p) for p, v in found})
        results = api.scan(
            lambda tt: _clone(api, new_outs, {t: tt}),
            sequences=step.outer_seqs,
            n_steps=step.n_steps,
        )
        results = results[0] if isinstance(results, tuple) else results
        results = results if isinstance(results, (list, tuple)) else [results]
        for old, new in zip(step.outer_outs, results):
            rw.replacements[old] = new
        rw.form = "per-example"
        rw.snippet = _snippet_per_example(api, batch, [p for p, _ in found], found and step.outs, found)
        rw.detail.append("each step's cost is cloned with " + ", ".join(f"`{_name(b)}[i:i+1]`" for b in batch))
    return rewrites


def apply(api, variables, rewrites):
    """``variables`` (outputs and update expressions) with every applied rewrite's replacements."""
    replace = {}
    for rw in rewrites:
        replace.update(rw.replacements)
    if not replace:
        return list(variables)
    return _clone(api, variables, replace)


def _step_blockers(backend, step) -> list[str]:
    """Ops of a map's step whose output shape depends on the step (they stop vectorization)."""
    api = backend.api
    varying = {id(v) for v in step.steps}
    out = []
    for node in toposort(step.outs):
        if not any(id(i) in varying for i in node.inputs):
            continue
        varying.update(id(o) for o in node.outputs)
        name = type(node.op).__name__
        if isinstance(node.op, (api.Subtensor, api.IncSubtensor)):
            for e in backend.subtensor_indices(node):
                if isinstance(e, slice) and any(
                    x is not None and not isinstance(x, int) and id(x) in varying for x in (e.start, e.stop, e.step)
                ):
                    out.append(f"`{node.op}`: its slice bounds depend on the step, so each step's slice has another shape")
                    break
        elif name in ("ARange", "Alloc", "AllocEmpty", "Reshape") and any(
            id(i) in varying for i in (node.inputs if name in ("ARange", "AllocEmpty") else node.inputs[1:])
        ):
            out.append(f"`{node.op}`: its output shape depends on the step")
    return out


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
        name = _opname(op)
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
            if type(op).__name__ == "Sum":
                return [T.sum(x, axis=axis, dtype=op.dtype, acc_dtype=op.acc_dtype)]
            if name in ("Maximum",) and type(op).__name__ in ("Max", "CAReduce"):
                return [T.max(x, axis=axis)]
            return [api.CAReduce(op.scalar_op, axis=axis)(x)]
        if type(op).__name__ == "MaxAndArgmax":
            x = self.value(ins[0])
            axis = list(range(1, x.type.ndim)) if op.axis is None else [a + 1 for a in op.axis]
            return list(T.max_and_argmax(x, axis=axis))
        if type(op).__name__ in ("ScalarFromTensor", "TensorFromScalar"):
            return [self.value(ins[0])]  # a batched index stays a tensor (read by Subtensor)
        if isinstance(op, api.Dot) or type(op).__name__ in ("Dot22", "_dot"):
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


def vectorize(backend, outputs, skip=()) -> list[Rewrite]:
    """SP002's rewrites: every forward map scan of ``outputs`` as one batched computation."""
    api = backend.api
    rewrites = []
    skip_ids = {id(n) for n in skip}
    for node in scan_nodes(api, outputs):
        name = backend.scan_info(node.op)["name"] or "scan_fn"
        if id(node) in skip_ids or name.startswith("grad_of"):
            continue
        try:
            step = _Step(backend, node)
        except NotApplicable:
            continue  # not a map: SP002 does not apply
        rw = Rewrite("SP002", name, "", scan_node=node)
        rewrites.append(rw)
        blockers = _step_blockers(backend, step)
        if blockers:
            rw.reason = "cannot be vectorized: " + blockers[0]
            continue
        if any(isinstance(n.op, api.Scan) for n in toposort(step.outs)):
            rw.reason = "the step holds a nested scan; scanprobe does not vectorize across scans"
            continue
        try:
            if api.vectorize_graph is not None:
                new = api.vectorize_graph(list(step.outs), replace=dict(zip(step.steps, step.outer_seqs)))
                new = list(new) if isinstance(new, (list, tuple)) else [new]
                loops = sum(1 for n in toposort(new) if type(n.op).__name__ == "Blockwise")
                how = "pytensor.graph.replace.vectorize_graph" + (f" ({loops} op(s) as Blockwise loops)" if loops else "")
            else:
                new = _Batcher(backend, step).run(list(step.outs), step.n_steps)
                how = "scanprobe's Theano vectorizer"
        except NotApplicable as exc:
            rw.reason = str(exc)
            continue
        except Exception as exc:  # noqa: BLE001 - the backend's vectorizer refused
            rw.reason = f"vectorizing failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
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
