"""SP003's fix: the per-example gradients of a scan over the batch, from one backward pass.

A scan over the batch index whose step differentiates ``cost[i]`` (one example's cost) through
the graph of the whole batch. When the cost is provably per-example (each term reads only its
own row, checked op by op) and the step squares the gradient and the scan output is only summed
over the batch (``mean``/``sum`` over axis 0), the sum of squared per-example gradients is
computed from one backward pass of the batch: for a parameter used as ``dot(A, W)`` it is
``dot((A*A).T, D*D)`` with D the gradient with respect to the product; for one broadcast over the
batch (a bias) it is ``(G*G).sum(0)`` with G the gradient with respect to the broadcast copy.
Otherwise each step's graph is cloned with the batch inputs sliced to the step's row
(``x[i:i+1]``): O(B) in all instead of O(B^2).
"""

from __future__ import annotations

from scanprobe.backends import ops
from scanprobe.backends.graphs import ancestors, toposort
from scanprobe.backends.ops import Scalar
from scanprobe.fixes.graph_edit import (
    NotApplicable,
    Rewrite,
    Wanted,
    _clients,
    _clone,
    _constant,
    _depends_on,
    _is_shape,
    _is_var,
    _name,
    _shape_of_map,
    _Step,
)
from scanprobe.rules import rule
from scanprobe.rules.sp003_per_step_batch_work import PerStepBatchWork

RULE = rule(PerStepBatchWork).code

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
    name = ops.scalar(node.op)
    if name is Scalar.SQR and node.inputs[0] is v:
        return True
    if name is Scalar.POW and node.inputs[0] is v and _constant(api, node.inputs[1]) == 2:
        return True
    return name is Scalar.MUL and len(node.inputs) == 2 and node.inputs[0] is v and node.inputs[1] is v



def _rowwise(api, c):
    """Roles in the graph of the batch cost: 'ex' (axis 0 is the example) or 'inv' (the same for
    every example). Raises NotApplicable naming the op that mixes examples."""
    role = {id(c): "ex"}
    for node in reversed(toposort([c])):
        outs = [role.get(id(o)) for o in node.outputs]
        r = "ex" if "ex" in outs else ("inv" if "inv" in outs else None)
        if r is None:
            continue
        op = node.op
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
        elif isinstance(op, api.Dot) or ops.is_dot(op):
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
        elif ops.is_softmax(op) and getattr(op, "axis", -1) not in (0,) and node.inputs[0].type.ndim == 2:
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
    if (isinstance(node.op, api.Dot) or ops.is_dot(node.op)) and i == 1 and p.type.ndim == 2:
        if role.get(id(node.inputs[0])) == "ex" and node.inputs[0].type.ndim == 2:
            return "dot", node
    if isinstance(node.op, api.DimShuffle) and list(node.op.new_order)[:1] == ["x"]:
        users = [n for n in toposort([c]) if any(i is node.outputs[0] for i in n.inputs)]
        if (len(users) == 1 and isinstance(users[0].op, api.Elemwise) and ops.scalar(users[0].op) is Scalar.ADD
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


def _snippet_per_example(backend, batch, params, outs, found) -> str:
    mod, clone = backend.module_name, backend.clone_code
    repl = ", ".join(f"{_name(b)}: {_name(b)}[i:i + 1]" for b in batch)
    ps = ", ".join(_name(p) for p in params)
    return "\n".join([
        "def step(i):  # one example's cost, computed from its own rows only",
        f"    cost_i = {clone}(cost, replace={{{repl}}})[0]",
        f"    return [T.grad(cost_i, p) ** 2 for p in [{ps}]]  # your step, with cost_i for cost[i]",
        f"result = {mod}.scan(step, sequences=[T.arange(cost.shape[0])])[0]",
    ])


def per_example(backend, outputs, wanted) -> list[Rewrite]:
    """SP003's rewrites for each scan its findings name (``wanted``) that differentiates one
    example's cost."""
    api = backend.api
    rewrites = []
    clients = _clients(outputs)
    for node, _ in wanted.nodes(backend, outputs):
        name = backend.scan_info(node.op).name or "scan_fn"
        rw = Rewrite(RULE, name, "", scan_node=node)
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
                u != "output" and isinstance(u.op, api.CAReduce) and ops.scalar(u.op) is Scalar.ADD
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
        rw.snippet = _snippet_per_example(backend, batch, [p for p, _ in found], found and step.outs, found)
        rw.detail.append("each step's cost is cloned with " + ", ".join(f"`{_name(b)}[i:i+1]`" for b in batch))
    return rewrites


#: this rule's graph fix (fixes/registry.py)
rewrites = per_example
