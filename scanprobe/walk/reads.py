"""How the history a scan output holds is read downstream (``records.Read``)."""

from __future__ import annotations

from scanprobe import records as R
from scanprobe.backends import ops
from scanprobe.walk.expressions import user_expression
from scanprobe.backends.graphs import ancestors

def reader_index_vars(plan, outer_out):
    """Scalar index variables used by Subtensors that read a scan output (to evaluate them)."""
    out = []
    lv = plan.level
    stack = [outer_out]
    seen = set()
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        for node, _ in lv.clients.get(v, []):
            if node == "output":
                continue
            if isinstance(node.op, plan.api.Subtensor) and node.inputs[0] is v:
                for ent in plan.b.subtensor_indices(node)[:1]:
                    parts = [ent.start, ent.stop, ent.step] if isinstance(ent, slice) else [ent]
                    out.extend(p for p in parts if p is not None and not isinstance(p, int))
                stack.append(node.outputs[0])
            elif ops.is_dimshuffle(node.op) or ops.is_pass_through(node.op):
                stack.append(node.outputs[0])
    return out


def reads(plan, outer_out, buf, lead_var=None, gradient=False) -> list[R.Read]:
    """How the history held by a scan output is read downstream (see ``records.Read``).

    ``lead_var``: the buffer's leading dim; an index computed at run time is compared with it
    structurally (``hs[x.shape[0] - 1]``, or the ``switch(i < 0, i + len, i)`` a backend writes
    for ``hs[-1]``): a constant difference is a row counted from the end. ``gradient``: the
    buffer is a gradient scan's, whose per-step outputs are followed through a reshape to the
    product they feed (a ``product`` read: the weight gradient's dot pushed out of the loop).
    """
    lv = plan.level
    api = plan.api
    lead = buf.dims[0].value if buf.dims else None
    rows0 = range(lead) if isinstance(lead, int) else None
    reads: list[R.Read] = []
    # (variable, time axis, rows of the original buffer it holds or None, via_dimshuffle)
    # The scan output itself holds the whole buffer in Theano; in PyTensor too. Steps are
    # counted from the end, so an index k < 0 on any view that keeps the end reads row lead+k.
    # end: the view still ends at the buffer's last row (so a negative index counts from it)
    # whole: the view has the buffer's length (the output itself, its dimshuffles)
    stack = [(outer_out, 0, rows0, False, 0, True, True)]
    seen = set()
    while stack:
        v, axis, rows, via_ds, depth, end, whole = stack.pop()
        if id(v) in seen or depth > 12:
            continue
        seen.add(id(v))
        for node, pos in lv.clients.get(v, []):
            if node == "output":
                reads.append(R.Read("output", "function output", via_dimshuffle=via_ds, detail=_rows_str(rows)))
                continue
            op = node.op
            site = plan.w.session.user_site_from_trace(node.outputs[0])
            opname = ops.display_name(op)
            if isinstance(op, (api.Shape, api.Shape_i)):
                continue
            if axis is None:  # the time axis merged with others by a reshape
                if pos == 0 and (ops.is_dimshuffle(op) or ops.is_pass_through(op) or ops.is_reshape(op)):
                    stack.append((node.outputs[0], None, None, via_ds, depth + 1, False, False))
                elif ops.dot_operands(op) is not None and pos in ops.dot_operands(op):
                    plan.products.append(node.outputs[0])  # what the terms sum to (walk/naming.py)
                    reads.append(R.Read("product", opname, "a product with the steps merged into one axis", via_ds, site,
                                        expr=user_expression(site, op)))
                else:
                    reads.append(R.Read("computation", ops.display_with_scalar(op), "reshaped", via_ds, site))
                continue
            if ops.is_reshape(op) and pos == 0 and gradient and buf.role == "nit_sot":
                # a gradient scan's per-step terms, reshaped for one product (the pushed-out dot)
                stack.append((node.outputs[0], None, None, via_ds, depth + 1, False, False))
                continue
            if isinstance(op, api.Subtensor) and pos == 0:
                idx = plan.b.subtensor_indices(node)
                ent = idx[axis] if axis < len(idx) else slice(None)
                # axes before the time axis that are integer-indexed drop out
                dropped = sum(1 for e in idx[:axis] if not isinstance(e, slice))
                if isinstance(ent, slice):
                    s = slice(*(lv.value(p) if p is not None and not isinstance(p, int) else p for p in (ent.start, ent.stop, ent.step)))
                    resolvable = all(x is None or isinstance(x, int) for x in (s.start, s.stop, s.step))
                    new_rows = rows[s] if rows is not None and resolvable else None
                    if (
                        new_rows is not None
                        and len(new_rows) > 0
                        and min(new_rows) >= len(rows0) - buf.needed_rows
                    ):
                        reads.append(R.Read("recent", opname, f"rows {_rows_str(new_rows)}", via_ds, site))
                        continue
                    if rows is None and end and isinstance(s.start, int) and s.start < 0 and s.stop is None and s.step in (None, 1) and -s.start <= buf.needed_rows:
                        reads.append(R.Read("recent", opname, f"last {-s.start} rows", via_ds, site))
                        continue
                    keeps_end = end and s.stop is None and s.step in (None, 1)
                    whole_view = whole and s.start in (None, 0) and s.stop is None and s.step in (None, 1)
                    stack.append((node.outputs[0], axis - dropped, new_rows, via_ds, depth + 1, keeps_end, whole_view))
                    continue
                i = lv.value(ent) if not isinstance(ent, int) else ent
                if isinstance(i, int):
                    if rows is not None:
                        try:
                            row = rows[i]
                        except IndexError:
                            reads.append(R.Read("opaque", opname, f"index {i} out of range", via_ds, site))
                            continue
                        kind = "recent" if row >= len(rows0) - buf.needed_rows else "rows"
                        reads.append(R.Read(kind, opname, f"row {row} of {len(rows0)}", via_ds, site))
                    elif i < 0 and end and -i <= buf.needed_rows:
                        reads.append(R.Read("recent", opname, f"index {i}", via_ds, site))
                    else:
                        reads.append(R.Read("opaque", opname, f"index {i}", via_ds, site))
                else:
                    k = _from_end(lv, ent, lead_var) if whole else None
                    if k is None and end and rows is not None and len(rows) and rows0 is not None:
                        # a view buf[s:] that still ends at the last row: its index counted from
                        # the output's own length (a while-scan's output is shorter than its buffer)
                        k = _from_end(lv, ent, api.Shape_i(0)(outer_out), offset=rows[0])
                    if k is not None and k < 0:
                        kind = "recent" if -k <= buf.needed_rows else "rows"
                        reads.append(R.Read(kind, opname, f"index {k} from the end (computed at run time)", via_ds, site))
                    else:
                        reads.append(R.Read("opaque", opname, "index computed at run time", via_ds, site))
                continue
            if ops.is_dimshuffle(op) and pos == 0:
                order = list(op.new_order)
                if axis in order:
                    stack.append((node.outputs[0], order.index(axis), rows, True, depth + 1, end, whole))
                else:
                    reads.append(R.Read("recent", opname, "time axis dropped", True, site))
                continue
            if ops.is_pass_through(op):
                stack.append((node.outputs[0], axis, rows, via_ds, depth + 1, end, whole))
                continue
            if plan.b.is_scan(node):
                kind, sname = _role_in_scan(plan, node, pos)
                if kind == "ignored":  # handed to a scan whose step never reads it
                    continue
                reads.append(R.Read(kind, opname, _rows_str(rows), via_ds, site, scan=sname))
                continue
            folded = _over_time(api, node, pos, axis)
            if folded:
                reads.append(R.Read("reduction", _reduction_name(op), folded, via_ds, site,
                                    expr=user_expression(site, op, folded)))
                continue
            through = _fold_through(api, lv, node, v, axis)
            if through is not None:  # (hs ** 2).sum(): an elementwise op whose result only a fold reads
                fold_node, fold_text, chain = through
                fold_site = plan.w.session.user_site_from_trace(fold_node.outputs[0]) or site
                reads.append(R.Read("reduction", _reduction_name(fold_node.op), f"{fold_text} of {chain}",
                                    via_ds, fold_site, expr=user_expression(fold_site, fold_node.op, fold_text)))
                continue
            reads.append(R.Read("computation", ops.display_with_scalar(op), _rows_str(rows), via_ds, site,
                                expr=user_expression(site, op)))
    return reads


def elementwise_over_steps(node, v, axis) -> bool:
    """``node`` is an elementwise op that computes each row of ``v`` on its own: every other input
    is constant along the time axis (broadcast there), or ``v`` itself (``hs * hs``)."""
    if not ops.is_elementwise(node.op) or axis is None:
        return False
    for inp in node.inputs:
        if inp is v:
            continue
        bcast = getattr(inp.type, "broadcastable", None)
        if bcast is None or axis >= len(bcast) or not bcast[axis]:
            return False
    return node.outputs[0].type.ndim == v.type.ndim


def _fold_through(api, lv, node, v, axis, depth=0):
    """(the fold's node, what it folds, the elementwise chain's text) when ``node`` is an
    elementwise op over the rows of ``v`` whose result only a fold over the time axis reads
    (through more such ops), else None."""
    if depth > 6 or not elementwise_over_steps(node, v, axis):
        return None
    out = node.outputs[0]
    users = [(n, p) for n, p in lv.clients.get(out, []) if n == "output" or not isinstance(n.op, (api.Shape, api.Shape_i))]
    if len(users) != 1 or users[0][0] == "output":
        return None
    user, pos = users[0]
    name = ops.in_words(ops.display_with_scalar(node.op))
    folded = _over_time(api, user, pos, axis)
    if folded:
        return user, folded.replace(" over the steps", ""), name
    deeper = _fold_through(api, lv, user, out, axis, depth + 1)
    if deeper is None:
        return None
    return deeper[0], deeper[1], f"{deeper[2]} of {name}"


def _inner_fold(api, inner, node, v, axis, depth=0) -> str:
    """Inside a wrapped graph (PyTensor 3.3's FusedElemwise: an elementwise loop with the
    reduction folded in): ``"sum of an elementwise expression over the steps"`` when ``node`` is
    an elementwise op over the rows of ``v`` whose result only a fold over ``axis`` reads."""
    if depth > 6 or not elementwise_over_steps(node, v, axis):
        return ""
    out = node.outputs[0]
    users = list(inner.clients.get(out, []))
    if len(users) != 1 or users[0][0] == "output":
        return ""
    user, pos = users[0]
    folded = _over_time(api, user, pos, axis)
    if folded:
        return folded.replace(" over the steps", " of an elementwise expression over the steps")
    return _inner_fold(api, inner, user, out, axis, depth + 1)


def _reduction_name(op) -> str:
    if getattr(op, "fgraph", None) is not None:  # a wrapper (PyTensor 3.3's ScalarCAReduce)
        return str(op)
    return ops.display_with_scalar(op, canonical=False)


def _over_time(api, node, pos, axis) -> str:
    """``"sum over the steps"`` (etc.) when ``node`` folds input ``pos`` along ``axis`` (the
    time axis of the history it reads), else ""."""
    op = node.op
    inner = getattr(op, "fgraph", None)
    if inner is not None and pos < len(getattr(inner, "inputs", [])):
        # an op wrapping a graph (PyTensor 3.3 wraps a full reduction as ScalarCAReduce): what
        # the wrapped graph does with this input, when one op reads it
        users = [c for c in inner.clients.get(inner.inputs[pos], []) if c[0] != "output"]
        if len(users) == 1:
            user, upos = users[0]
            return _over_time(api, user, upos, axis) or _inner_fold(api, inner, user, inner.inputs[pos], axis)
        return ""
    if isinstance(op, api.CAReduce) and ops.scalar(op) in ops.FOLDS:
        axes = getattr(op, "axis", None)
        if axes is None or axis in tuple(axes):
            return f"{ops.FOLDS[ops.scalar(op)]} over the steps"
        return ""
    fused = ops.fused_fold(op)
    if fused is not None:  # sum(sqr(hs)) fused into one loop by the backend
        axes = getattr(op, "axis", None)
        if axes is None or axis in tuple(axes):
            return f"{ops.FOLDS[fused]} of an elementwise expression over the steps"
        return ""
    if ops.is_max_and_argmax(op):
        axes = getattr(op, "axis", None)
        if axes is None or axis in tuple(axes):
            return "max over the steps"
        return ""
    # dot products: the operand positions (BLAS forms included) and the axis each contracts
    operands = ops.dot_operands(op)
    if operands is not None and pos in operands:
        ndim = node.inputs[pos].type.ndim
        contracted = ndim - 1 if pos == operands[0] else max(ndim - 2, 0)
        if axis == contracted:
            return "weighted sum over the steps (a dot product over time)"
    return ""


def _from_end(lv, index, lead_var, offset=0):
    """``index - length`` of the buffer when it is the same constant whatever the sizes, else None:
    structurally (linear forms), else by probing (the difference under two made-up sizes, with
    sizes the graph cannot compute freed: a backend writes ``hs[-1]`` as a switch over the length)."""
    if lead_var is None or index is None or isinstance(index, int):
        return None
    try:
        index = lv.inline_wrappers(index)
        k = lv.relative(lv._resolve_shapes(index), lv._resolve_shapes(lead_var))
        if k is not None:
            return k + offset
        T = lv.api.T
        diff, free = lv.opened(T.cast(index, "int64") + offset - T.cast(lead_var, "int64"))
        if any(n.owner is not None and isinstance(n.owner.op, lv.api.Scan) for n in ancestors([diff])):
            return None  # probing would run a scan (the length of its output) at the real sizes
        a, b = lv.probe([diff], free)
        ka, kb = a.get(diff), b.get(diff)
        return ka if isinstance(ka, int) and ka == kb else None
    except Exception:  # noqa: BLE001 - an index scanprobe cannot read
        return None


def _rows_str(rows) -> str:
    if rows is None:
        return ""
    if len(rows) == 0:
        return "no rows"
    if len(rows) == 1:
        return f"row {rows[0]}"
    return f"{len(rows)} rows ({rows[0]}..{rows[-1]})"


def _role_in_scan(plan, node, pos):
    """(how the scan ``node`` takes its input ``pos``, the scan's name); "ignored" for a sequence
    its step never reads (a backward pass is handed every forward output, used or not)."""
    roles = plan.b.scan_roles(node)
    name = plan.b.scan_info(node.op).name or "scan_fn"
    v = node.inputs[pos]
    for k, x in enumerate(roles.outer_in_seqs):
        if x is v:
            inner = roles.inner_in_seqs[k] if k < len(roles.inner_in_seqs) else None
            if inner is not None and not _step_reads(plan, node, roles, inner):
                return "ignored", name
            return "scan_sequence", name
    return "scan_input", name


def _step_reads(plan, node, roles, inner) -> bool:
    """Whether a scan's step graph reads one of its inner inputs."""
    cache = plan.w.__dict__.setdefault("_step_inputs_read", {})
    used = cache.get(id(node))
    if used is None:
        outs = [o for group in ("inner_out_mit_mot", "inner_out_mit_sot", "inner_out_sit_sot", "inner_out_nit_sot",
                                "inner_out_shared", "inner_out_untraced_sit_sot")
                for o in (getattr(roles, group, None) or [])
                for o in (o if isinstance(o, (list, tuple)) else [o])]
        if getattr(roles, "cond", None):
            outs += list(roles.cond)
        used = cache[id(node)] = (roles, {id(v) for v in ancestors(outs)})
    # the roles object the ids were taken from (Theano's scan_args clones the inner graph)
    same, ids = used
    if same is not roles:
        k = next(i for i, x in enumerate(roles.inner_in_seqs) if x is inner)
        inner = same.inner_in_seqs[k]
    return id(inner) in ids

