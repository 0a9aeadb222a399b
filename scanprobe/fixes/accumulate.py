"""SP006's fix: a reduction over a scan's history carried as a running value in the step.

For each recurrent state (sit_sot), and each per-step output (nit_sot) of a scan with recurrent
state, of a forward scan whose history is folded over time
(``hs.sum(0)``, ``hs.mean()`` — a sum then a division —, ``hs.prod(0)``, ``hs.max(0)``,
``hs.min(0)``, ``dot(c, hs)`` with a vector ``c`` over the steps), the scan is rebuilt with one more
state per fold: ``acc + h_t`` (``acc * h_t``, ``maximum(acc, h_t)``, ``acc + c_t * h_t`` with
``c`` as a new sequence), and the reduction is replaced by the accumulator's last value (reduced
over the fold's other axes). The step's own graph is cloned unchanged. With the history now read
only at its last rows, save-mem (added to the mode by the pipeline) drops it.

Not applied (the reason is reported): while-scans, scans with mit_mot, shared-variable updates or
random states (their order of draws would change), integer states, reductions of a view other
than the scan's own output, scans whose gradient the function also takes (the gradient was
built from the old scan: the running value belongs in the step before ``grad``).
"""

from __future__ import annotations

import numpy as np

from scanprobe.backends import ops
from scanprobe.backends.graphs import ancestors
from scanprobe.errors import failure_text
from scanprobe.fixes.snippets import accumulate_snippet
from scanprobe.fixes.graph_edit import (
    NotApplicable,
    Rewrite,
    _clients,
    _clone,
    _constant,
    _shape_of_map,
    scan_nodes,
)
from scanprobe.rules import rule
from scanprobe.rules.sp006_reduction_over_history import ReductionOverHistory

RULE = rule(ReductionOverHistory).code
#: the history is then read only at its last rows: the fixed mode needs save-mem
NEEDS_SAVE_MEM = True

#: the folds a running value in the step can carry (by the reduction's scalar op)
_FOLDS = {ops.Scalar.ADD: "sum", ops.Scalar.MUL: "prod", ops.Scalar.MAX: "max", ops.Scalar.MIN: "min"}


def _history_view(api, backend, buffer, clients, rows):
    """The user's view of a state's history: ``buffer[rows:]`` (what scan returns), else None."""
    for user, pos in clients.get(id(buffer), []):
        if user == "output" or pos != 0 or not isinstance(user.op, api.Subtensor):
            continue
        idx = backend.subtensor_indices(user)
        if len(idx) == 1 and isinstance(idx[0], slice) and idx[0].stop is None and idx[0].step in (None, 1):
            start = idx[0].start if isinstance(idx[0].start, int) else _constant(api, idx[0].start)
            if start == rows:
                yield user.outputs[0]


def _fold_through(api, node, pos, view, clients, chain=()):
    """(fold node, (kind, other axes, weight), chain) when ``node`` folds ``view`` over axis 0,
    directly or through elementwise ops each of whose results only the next reads (``chain``:
    the elementwise nodes, first first, to apply to each step's value)."""
    found = _fold(api, node, pos, view, clients)
    if found:
        return node, found, tuple(chain)
    if len(chain) >= 6 or not _elementwise_over_rows(node, view):
        return None
    out = node.outputs[0]
    users = [u for u in clients.get(id(out), []) if u[0] == "output" or not ops.is_shape_read(u[0].op)]
    if len(users) != 1 or users[0][0] == "output":
        return None
    return _fold_through(api, users[0][0], users[0][1], out, clients, (*chain, node))


def _chain_text(chain) -> str:
    return " of ".join(ops.display_with_scalar(c.op) for c in reversed(chain))


def _chain_shape_reads(chain, clients):
    """The shape reads of the chain's results (``(hs ** 2).mean()`` divides by its length)."""
    return [(i, u) for i, node in enumerate(chain) for u, _ in clients.get(id(node.outputs[0]), [])
            if u != "output" and ops.is_shape_read(u.op)]


def _elementwise_over_rows(node, v) -> bool:
    """An elementwise op over the rows of ``v``: every other input broadcast along axis 0 (a
    constant, a value the same at every step), or ``v`` itself."""
    if not ops.is_elementwise(node.op) or node.outputs[0].type.ndim != v.type.ndim:
        return False
    return all(inp is v or (inp.type.ndim == v.type.ndim and inp.type.broadcastable[0]) for inp in node.inputs)


def _one_step(chain, view, value):
    """The elementwise chain applied to one step's ``value`` in place of the whole ``view``: the
    other inputs lose their (broadcast) leading axis."""
    current, step_value = view, value
    for node in chain:
        inputs = [step_value if inp is current else inp[0] for inp in node.inputs]
        step_value = node.op(*inputs)
        current = node.outputs[0]
    return step_value


def _fold(api, node, pos, view, clients):
    """(kind, other axes or None for all, weight or None) when ``node`` folds ``view`` over axis 0."""
    op = node.op
    scalar = ops.scalar(op)
    if isinstance(op, api.CAReduce) and scalar in _FOLDS and pos == 0:
        axes = getattr(op, "axis", None)
        if axes is None:
            return _FOLDS[scalar], None, None
        if 0 in tuple(axes):
            return _FOLDS[scalar], tuple(a - 1 for a in axes if a != 0), None
        return None
    if ops.is_max_and_argmax(op) and pos == 0 and not clients.get(id(node.outputs[1])):
        axes = getattr(op, "axis", None)
        if axes is None or 0 in tuple(axes):
            return "max", (None if axes is None else tuple(a - 1 for a in axes if a != 0)), None
        return None
    if (isinstance(op, api.Dot) or ops.is_dot(op)) and pos == 1:
        weight = node.inputs[0]
        if weight.type.ndim == 1:
            return "dot", (), weight
        # PyTensor writes dot(vector, matrix) as Dot(ExpandDims(vector), matrix): a (1, ...) result
        w_node = weight.owner
        if (weight.type.ndim == 2 and w_node is not None and isinstance(w_node.op, api.DimShuffle)
                and tuple(w_node.op.new_order) == ("x", 0)):
            return "dot", "row", w_node.inputs[0]
    return None


def _initial(api, buffer, rows):
    """The initial rows a state's buffer was built from (the value scan wrote into its first
    rows), so that the rebuilt scan does not read the old buffer."""
    owner = buffer.owner
    if owner is not None and isinstance(owner.op, api.IncSubtensor):
        return owner.inputs[1]
    return buffer[:rows]


def accumulate(backend, outputs, wanted) -> list[Rewrite]:
    """SP006's rewrites: each fold over the history of a scan its findings name (``wanted``)
    carried in the step."""
    api = backend.api
    clients = _clients(outputs)
    rewrites = []
    for node, rec in wanted.nodes(backend, outputs):
        info = backend.scan_info(node.op)
        name = info.name or "scan_fn"
        a = backend.scan_roles(node, thawed=True)
        folds, shapes = [], []
        n_mit, n_sit = len(a.outer_out_mit_sot), len(a.outer_out_sit_sot)
        # k counts the scan's outputs (mit_sot, sit_sot, then per-step outputs): a state's
        # history is the view scan returns (buffer[taps:]); a per-step output's, the buffer
        views = [(j, view) for j, buffer in enumerate(a.outer_out_mit_sot)
                 for view in _history_view(api, backend, buffer, clients, -min(a.mit_sot_in_slices[j]))]
        views += [(n_mit + k, view) for k, buffer in enumerate(a.outer_out_sit_sot)
                  for view in _history_view(api, backend, buffer, clients, 1)]
        if a.outer_in_sit_sot or a.outer_in_mit_sot:  # a map's outputs are SP002's
            views += [(n_mit + n_sit + j, buffer) for j, buffer in enumerate(a.outer_out_nit_sot)]
        for k, view in views:
            for user, pos in clients.get(id(view), []):
                if user == "output":
                    continue
                if ops.is_shape_read(user.op):
                    shapes.append((k, user, (), view))  # hs.shape[0] of a mean: from n_steps, not the buffer
                    continue
                found = _fold_through(api, user, pos, view, clients)
                if found:
                    fold_node, how, chain = found
                    folds.append((k, fold_node, how, chain, view))
                    shapes += [(k, u, chain[: i + 1], view) for i, u in _chain_shape_reads(chain, clients)]
        if not folds:
            continue
        rw = Rewrite(RULE, name, "", scan_node=node)
        rewrites.append(rw)
        try:
            if any(other is not node and backend.scan_info(other.op).name and
                   str(backend.scan_info(other.op).name).startswith("grad_of") and
                   any(v.owner is node for v in ancestors(list(other.inputs)))
                   for other in scan_nodes(api, outputs)):
                raise NotApplicable("the function also differentiates this scan, whose gradient was taken "
                                    "before: carry the running value in the step before calling grad")
            _rebuild(backend, node, a, info, folds, shapes, rw, _fold_names(rec, folds, n_mit, n_sit))
            rw.snippet = _users_code(rec, folds, n_mit, n_sit) or rw.snippet
        except NotApplicable as exc:
            rw.reason = str(exc)
        except Exception as exc:  # noqa: BLE001 - the backend refused the rebuilt scan
            rw.reason = f"rebuilding the scan failed: {failure_text(exc)}"
    return rewrites


def _rebuild(backend, node, a, info, folds, shapes, rw, names=None):
    api, T = backend.api, backend.api.T
    if info.as_while:
        raise NotApplicable("the scan is a while-loop: its last step is only known at run time")
    for role in ("mit_mot", "shared", "untraced_sit_sot"):
        if list(getattr(a, f"outer_in_{role}", []) or []):
            raise NotApplicable(f"the scan carries {role.replace('_', '-')} state; scanprobe rebuilds scans without it")
    n_seq, n_mit, n_sit = len(a.inner_in_seqs), len(a.outer_in_mit_sot), len(a.outer_in_sit_sot)
    mit_taps = [list(t) for t in a.mit_sot_in_slices]
    mit_init = [_initial(api, b, -min(t)) for b, t in zip(a.outer_in_mit_sot, mit_taps)]
    sit_init = [_initial(api, b, 1)[0] for b in a.outer_in_sit_sot]

    def one_step(k):
        """A value shaped like one step of output ``k`` (the state's initial value, or for a
        per-step output its old buffer, whose shape the backend infers)."""
        if k < n_mit:
            return mit_init[k][0], False
        if k < n_mit + n_sit:
            return sit_init[k - n_mit], False
        return a.outer_out_nit_sot[k - n_mit - n_sit], True

    for k, *_ in folds:
        state, _ = one_step(k)
        if not str(state.type.dtype).startswith("float"):
            raise NotApplicable("an integer state: a running value could overflow where the reduction upcasts")
    weights = [w for _, _, (_, _, w), _, _ in folds if w is not None]
    acc_init = []
    for k, _, (kind, _, _), chain, view in folds:
        fill = {"sum": 0.0, "dot": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}[kind]
        like, is_buffer = one_step(k)
        if chain:  # the running value of f(h): shaped and typed like f of one step
            like = _one_step(chain, view, like[0] if is_buffer else like)
            is_buffer = False
        dims = [like.shape[i] for i in range(1 if is_buffer else 0, like.type.ndim)]
        acc_init.append(T.alloc(np.asarray(fill, dtype=like.type.dtype), *dims))
    n_mit_args = sum(len(t) for t in mit_taps)
    inner_mit = [v for group in a.inner_in_mit_sot for v in group]

    def step(*args):
        args = list(args)
        seq_args, args = args[:n_seq], args[n_seq:]
        w_args, args = args[: len(weights)], args[len(weights):]
        mit_args, args = args[:n_mit_args], args[n_mit_args:]
        sit_args, args = args[:n_sit], args[n_sit:]
        acc_args, ns_args = args[: len(folds)], args[len(folds):]
        replace = dict(zip(a.inner_in_seqs, seq_args))
        replace.update(zip(inner_mit, mit_args))
        replace.update(zip(a.inner_in_sit_sot, sit_args))
        replace.update(zip(a.inner_in_non_seqs, ns_args))
        outs = _clone(api, list(a.inner_out_mit_sot) + list(a.inner_out_sit_sot) + list(a.inner_out_nit_sot), replace)
        w_iter = iter(w_args)
        updates = []
        for acc, (k, _, (kind, _, w), chain, view) in zip(acc_args, folds):
            h = _one_step(chain, view, outs[k])
            if kind == "sum":
                updates.append(acc + h)
            elif kind == "prod":
                updates.append(acc * h)
            elif kind == "max":
                updates.append(T.maximum(acc, h))
            elif kind == "min":
                updates.append(T.minimum(acc, h))
            else:
                updates.append(acc + next(w_iter) * h)
        return outs + [T.cast(u, acc.type.dtype) for u, acc in zip(updates, acc_args)]

    outputs_info = ([dict(initial=i, taps=t) for i, t in zip(mit_init, mit_taps)] + sit_init
                    + [None] * len(a.outer_in_nit_sot) + acc_init)
    result = api.scan(step, sequences=list(a.outer_in_seqs) + weights, outputs_info=outputs_info,
                      non_sequences=list(a.outer_in_non_seqs), n_steps=node.inputs[0],
                      truncate_gradient=info.truncate_gradient, name=info.name)
    outs = result[0] if isinstance(result, tuple) else result
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    new_node = _scan_node(api, outs[n_mit + n_sit] if len(outs) > n_mit + n_sit else outs[0])
    if new_node is None:
        raise NotApplicable("the rebuilt scan could not be found in its outputs")
    n_acc = len(folds)
    old_outs = list(node.outputs)
    for j, old in enumerate(old_outs):
        rw.replacements[old] = new_node.outputs[j if j < n_mit + n_sit else j + n_acc]
    kinds = []
    for k, user, chain, view in shapes:
        like, is_buffer = one_step(k)
        if is_buffer:
            raise NotApplicable("the length of a per-step output is read: scanprobe carries states' lengths only")
        rw.replacements[user.outputs[0]] = _shape_of_map(api, user, node.inputs[0], _one_step(chain, view, like))
    for f, (k, user, (kind, other, _), chain, _) in enumerate(folds):
        # the buffer's last row (not the view's): save-mem sees one Subtensor, in FAST_COMPILE too
        last = new_node.outputs[n_mit + n_sit + f][-1]
        if other is None:
            value = {"sum": T.sum, "dot": T.sum, "prod": T.prod, "max": T.max, "min": T.min}[kind](last)
        elif other == "row":
            value = T.shape_padleft(last)
        elif other:
            value = {"sum": T.sum, "dot": T.sum, "prod": T.prod, "max": T.max, "min": T.min}[kind](last, axis=list(other))
        else:
            value = last
        rw.replacements[user.outputs[0]] = T.cast(value, user.outputs[0].type.dtype)
        what = (names or {}).get(k) or (f"state #{k}" if k < n_mit + n_sit else f"per-step output #{k - n_mit - n_sit}")
        if chain:
            what = f"{_chain_text(chain)} of {what}"
        kinds.append(f"{kind} of {what}")
    rw.form = "accumulated"
    rw.detail.append(f"{', '.join(kinds)} carried in the step as a running value; the reduction reads its last step")
    through = [c for *_, c, _ in folds if c]
    value = "f(h)" if through else "h"
    rw.snippet = (
        "def step_acc(*args):  # your step, plus the running value as one more state\n"
        "    h = step(*args[:-1])\n"
        + (f"    # f(h): what your reduction reads of each step ({_chain_text(through[0])} of h)\n" if through else "")
        + f"    return h, args[-1] + {value}          # maximum(acc, {value}) for a max, acc + c_t * {value} for a dot\n"
        "(hs, accs), _ = scan(step_acc, ..., outputs_info=[h0, zeros_like(h0)])\n"
        "total = accs[-1]                    # instead of hs.sum(axis=0)"
    )


def _folded_buffer(rec, folds, n_mit, n_sit):
    """(role, index, the record's buffer, its reduction read) of the one fold of a scan whose
    record shows exactly one history read by a reduction of that role; None otherwise."""
    if rec is None or len(folds) != 1:
        return None
    k = folds[0][0]
    if k < n_mit:
        return None
    role, index = ("sit_sot", k - n_mit) if k < n_mit + n_sit else ("nit_sot", k - n_mit - n_sit)
    reads = [(b, r) for b in rec.buffers for r in b.reads if r.kind == "reduction"]
    if len({id(b) for b, _ in reads}) != 1 or reads[0][0].role != role:
        return None
    return role, index, reads[0][0], reads[0][1]


def _fold_names(rec, folds, n_mit, n_sit) -> dict:
    """{k: the user's name of the folded history} (``recurrent state `h_prev```) where known."""
    found = _folded_buffer(rec, folds, n_mit, n_sit)
    return {folds[0][0]: found[2].belongs_to} if found else {}


def _users_code(rec, folds, n_mit, n_sit) -> str:
    """The snippet as the user's own scan call and reduction rewritten (fixes/snippets.py), for
    one plain sum or mean over one output's history; "" otherwise."""
    found = _folded_buffer(rec, folds, n_mit, n_sit)
    if found is None:
        return ""
    _, _, (kind, _, _), chain, _ = folds[0]
    if kind != "sum" or chain or not found[3].expr:
        return ""
    role, index, _, read = found
    verb = "mean" if ".mean(" in read.expr else "sum"
    return accumulate_snippet(rec.site, rec.step_function, verb, read.site, read.expr, role, index)


def _scan_node(api, var):
    """The Scan node behind a variable scan returned (through the [1:] view)."""
    seen = 0
    while var is not None and var.owner is not None and seen < 6:
        if isinstance(var.owner.op, api.Scan):
            return var.owner
        var = var.owner.inputs[0]
        seen += 1
    return None


#: this rule's graph fix (fixes/registry.py)
rewrites = accumulate
