"""SP010's fix: a forward scan whose history its gradient reads, checkpointed to fit the budget.

The backward pass of a scan reads the forward states of every step (the BPTT history): n_steps + 1
rows per state, needed, and no rewrite of the backend shrinks them. With a budget
(``fix --max-buffer SIZE``) this fix trades them for time, the way ``scan_checkpoints`` does: the
forward loop runs in segments of k steps and keeps only the state at each segment's start
(n // k + 1 rows, and a tail of n % k steps); the backward pass recomputes one segment's k + 1 states at a time and runs
the gradient over them. The gradient is the backend's own, taken through that nested loop.

The rewrite needs what the user's ``grad`` fed the scan's gradient and what it made (recorded
while the module ran: ``loading.Pullback``):

1. the segmented forward loop is built from the scan's own step (its inner graph, cloned) over
   the same sequences, initial states and non-sequences;
2. the loss's cotangent of each state must be zero on every row but the last (a loss on
   ``h[-1]``; ``walk/cotangent.py`` proves it) or absent: the gradient of the segmented loop is
   taken with that last row as the known gradient of its final state;
3. every gradient the scan's pullback made is replaced by the new one; reads of the final state
   (``h[-1]``) read the segmented loop's last checkpoint, so the original loop is not run too.

k ~ sqrt(n), which makes the longest buffer shortest (max(k, n // k) + 1 rows); the recomputation
costs one forward pass whatever k is. The fix applies when the history is over the budget and those
rows of the largest state fit it.
The backend's ``more_mem`` rewrites are excluded from the fixed mode (as SP008's fix does), so the
recomputed segments' weight gradients accumulate in the loop instead of one term per segment.

Not applied (the reason is reported): while loops, ``truncate_gradient``, states with several
taps, steps that run a scan of their own (nested scans are left alone), scans with
shared-variable updates, per-step outputs or states the loss reads at other rows (a loss on every
step needs the history for its own value), a gradient not recorded (``scanprobe.fix(f)`` without
``record_gradients()``), and budgets below about sqrt(n) + 1 rows of a state (a second level of
checkpoints would be needed).
"""

from __future__ import annotations

import math

from scanprobe.analysis.sizes import human_bytes
from scanprobe.backends.graphs import toposort
from scanprobe.errors import failure_text
from scanprobe.fixes.graph_edit import NotApplicable, Rewrite, _clone
from scanprobe.rules import rule
from scanprobe.rules.sp010_buffer_over_budget import BufferOverBudget
from scanprobe.walk.cotangent import _const, _first_index, _slice, nonzero_rows, row

RULE = rule(BufferOverBudget).code
#: the original loop is left read only at its last row: the fixed mode needs save-mem
NEEDS_SAVE_MEM = True
TAG = "more_mem"


def segment_length(n_steps: int) -> int:
    """k ~ sqrt(n): the segment length that makes the longest buffer (``rows_kept``) shortest;
    the smaller k on a tie."""
    k = max(1, math.isqrt(max(n_steps, 1)))
    return min((k, k + 1), key=lambda c: (rows_kept(n_steps, c), c))


def rows_kept(n_steps: int, k: int) -> int:
    """The most rows any one buffer of the checkpointed loop holds: (n - 1) // k checkpoints and
    the initial state, or a segment or the tail of at most k steps and its initial state."""
    return max(k, (n_steps - 1) // k) + 1


def checkpointed(backend, outputs, wanted) -> list[Rewrite]:
    """SP010's rewrites: each forward scan the budget findings name whose history its recorded
    gradient reads, checkpointed with the segment length the budget allows."""
    budget = getattr(wanted.settings, "max_buffer", None)
    pullbacks = wanted.pullbacks or {}
    rewrites = []
    for node, rec in wanted.nodes(backend, outputs):
        if rec is None or rec.is_gradient:
            continue  # a gradient scan's own buffers are SP007's and SP008's
        info = backend.scan_info(node.op)
        rw = Rewrite(RULE, info.name or "scan_fn", "", scan_node=node)
        rewrites.append(rw)
        pb = pullbacks.get(id(node))
        if pb is None:
            rw.reason = ("its gradient was not seen being built: `scanprobe fix FILE --max-buffer SIZE` sees it, "
                         "or build it inside `with scanprobe.record_gradients():` before scanprobe.fix")
            continue
        try:
            a, finals_cot = _checked(backend, pb, info)
            k = _choose(rec, budget, rw)
            _rebuild(backend, pb, info, k, rw, outputs, a, finals_cot)
        except NotApplicable as exc:
            rw.reason = str(exc)
        except Exception as exc:  # noqa: BLE001 - the backend refused the rebuilt loop
            rw.reason = f"building the checkpointed loop failed: {failure_text(exc)}"
    return rewrites


def _choose(rec, budget, rw) -> int:
    if not budget:
        raise NotApplicable("no budget: checkpoints are chosen for --max-buffer")
    n = rec.n_steps.value
    states = [b for b in rec.buffers if b.role == "sit_sot" and b.bytes is not None and b.dims and b.dims[0].value]
    if n is None or not states:
        raise NotApplicable("the number of steps or the state sizes are not known before running")
    row_bytes = max(b.bytes // b.dims[0].value for b in states)
    if (n + 1) * row_bytes <= budget:
        raise NotApplicable("the history already fits the budget")
    k = segment_length(n)
    rows = rows_kept(n, k)
    if rows * row_bytes > budget:
        raise NotApplicable(
            f"one state row is {human_bytes(row_bytes)}: {n} steps checkpointed in one level keep {rows} rows "
            f"({human_bytes(rows * row_bytes)}) per buffer at the least, over the {human_bytes(budget)} budget")
    rw.detail.append(
        f"{n} steps as {(n - 1) // k} segments of {k} and a tail of {n - (n - 1) // k * k}: {(n - 1) // k + 1} "
        f"checkpoint rows and at most "
        f"{k + 1} recomputed rows of {human_bytes(row_bytes)} each instead of {n + 1} (one extra forward pass)")
    return k


def _checked(backend, pb, info):
    """(the scan's roles, the loss's cotangent of each state or None) when the scan can be
    checkpointed, else NotApplicable with the reason."""
    node = pb.node
    if info.as_while:
        raise NotApplicable("a while-loop: its number of steps is known only by running it")
    if info.truncate_gradient != -1:
        raise NotApplicable("truncate_gradient: the backward pass stops early, which checkpoints do not model")
    a = backend.scan_roles(node, thawed=True)
    for role in ("mit_mot", "mit_sot", "shared"):
        if list(getattr(a, f"outer_in_{role}", []) or []):
            raise NotApplicable(f"the scan has {role.replace('_', '-')} state: only one-tap states are checkpointed")
    if any(list(t) != [-1] for t in info.taps.get("sit_sot", [])):
        raise NotApplicable("a state read at other taps than the previous step")
    if any(isinstance(nd.op, backend.api.Scan) for nd in toposort(list(a.inner_out_sit_sot))):
        raise NotApplicable("its step runs a scan of its own: nested scans are left as they are")
    position = {id(o): i for i, o in enumerate(node.outputs)}
    for out in a.outer_out_nit_sot:
        if _connected(pb.cotangents[position[id(out)]]):
            raise NotApplicable("the loss reads a per-step output of the loop: its history is needed for the loss")
    finals_cot = []
    for out in a.outer_out_sit_sot:
        g = pb.cotangents[position[id(out)]]
        if not _connected(g):
            finals_cot.append(None)
            continue
        rows = nonzero_rows(backend, g)
        if rows is None or not rows <= {-1}:
            raise NotApplicable("the loss reads the state at other steps than the last: the history is needed "
                                "for the loss itself")
        finals_cot.append(g)
    if not any(g is not None for g in finals_cot):
        raise NotApplicable("the loss reads no state of the loop")
    return a, finals_cot


def _rebuild(backend, pb, info, k, rw, outputs, a, finals_cot):
    api, T = backend.api, backend.api.T
    node = pb.node
    n = node.inputs[0]
    inits, wrt_inits = [], []
    for buf in a.outer_in_sit_sot:
        o = buf.owner  # scan's expand_empty: set_subtensor(AllocEmpty(n + 1, ...)[:1], h0[None])
        if o is not None and isinstance(o.op, api.IncSubtensor) and getattr(o.op, "set_instead_of_inc", False) \
                and o.inputs[1].type.ndim == buf.type.ndim:
            wrt_inits.append(o.inputs[1])
            inits.append(o.inputs[1][0])
        else:
            wrt_inits.append(buf)
            inits.append(buf[0])
    finals = _segmented_loop(backend, a, info, n, k, inits, _loop_mode(backend, node))
    known = {f: T.cast(row(backend, g, -1), f.type.dtype) for f, g in zip(finals, finals_cot) if g is not None}
    non_seqs = list(a.outer_in_non_seqs)
    wrt = list(a.outer_in_seqs) + wrt_inits + non_seqs
    grads = api.grad(None, wrt=wrt, known_grads=known, disconnected_inputs="ignore", return_disconnected="zero")
    new = {}
    for var, g in zip(a.outer_in_seqs, grads):
        new[id(var)] = g
    n_seq, n_sit = len(a.outer_in_seqs), len(wrt_inits)
    for buf, v, g in zip(a.outer_in_sit_sot, wrt_inits, grads[n_seq:]):
        if v is not buf:  # the gradient of the whole buffer: zero but the initial row
            o = buf.owner
            inc = api.IncSubtensor(o.op.idx_list, inplace=False, set_instead_of_inc=False)
            g = inc(T.zeros_like(buf), T.cast(g, buf.type.dtype), *o.inputs[2:])
        new[id(buf)] = g
    for var, g in zip(non_seqs, grads[n_seq + n_sit:]):
        new[id(var)] = g
    replace = {}
    for inp, old in zip(node.inputs, pb.grads):
        if id(inp) in new and getattr(old.type, "ndim", None) is not None:
            replace[old] = T.cast(new[id(inp)], old.type.dtype)
    # the reads of the final state (the loss's, and the new gradient's through the cotangent) read
    # the last checkpoint: the original loop is not run at all
    finals_read = _final_reads(backend, outputs, replace, a.outer_out_sit_sot, finals)
    values = _clone(api, list(replace.values()), finals_read)
    rw.replacements.update(zip(replace.keys(), values))
    rw.replacements.update(finals_read)
    rw.form = "checkpointed"
    rw.detail.insert(0, f"`{info.name}` checkpointed every {k} steps: the backward pass recomputes one "
                        "segment at a time")
    rw.snippet = (f"outs, updates = scan_checkpoints(step, sequences=..., outputs_info=..., non_sequences=..., "
                  f"save_every_N={k})  # by hand, the backend's own: it returns the checkpoints; read outs[-1] as before")


def fixed_mode(backend, mode):
    return mode.excluding(TAG)


# ---------------------------------------------------------------------------------- helpers


def _connected(g) -> bool:
    return getattr(g.type, "ndim", None) is not None


def _loop_mode(backend, node):
    """The mode the new loops' steps are built in: the scan's own, without ``more_mem`` (the
    gradients of a recomputed segment accumulate in its loop; inner graphs are optimized in their
    Scan's mode, which the fixed function's mode does not reach)."""
    try:
        return backend.scan_step_mode(node.op).excluding(TAG)
    except Exception:  # noqa: BLE001 - a mode the backend cannot extend: the scan's own
        return getattr(node.op, "mode", None)


def _segmented_loop(backend, a, info, n, k, inits, mode):
    """The final states of the scan's loop run as ``(n - 1) // k`` segments of k steps (an outer
    scan over an inner one, which keeps one state per segment and whose gradient recomputes a
    segment at a time) and a tail of the 1 to k steps left. The inner loops' lengths are constants and the tail's is
    known from n, so every buffer can be sized before running."""
    api, T = backend.api, backend.api.T
    name = info.name or "scan_fn"
    n64 = T.cast(n, "int64")
    full = (n64 - 1) // k  # the tail runs 1 to k steps (Theano's scan cannot run none)
    whole, tail = [], []
    for s in a.outer_in_seqs:
        rest = [s.shape[d] for d in range(1, s.type.ndim)]
        whole.append(s[:full * k].reshape([full, k] + rest, ndim=s.type.ndim + 1))
        tail.append(s[full * k:n64])
    step = _step(api, a)
    n_seq, n_sit = len(whole), len(inits)
    non_seqs = list(a.outer_in_non_seqs)

    def segment(*args):
        r = api.scan(step, sequences=list(args[:n_seq]), outputs_info=list(args[n_seq:n_seq + n_sit]),
                     non_sequences=list(args[n_seq + n_sit:]), n_steps=k, return_list=True, name=f"{name}_segment",
                     mode=mode)
        r = r[0] if isinstance(r, tuple) else r
        return [o[-1] for o in r]

    r = api.scan(segment, sequences=whole, outputs_info=list(inits), non_sequences=non_seqs, n_steps=full,
                 return_list=True, name=f"{name}_checkpoints", mode=mode)
    r = r[0] if isinstance(r, tuple) else r
    # the state after the whole segments (the initial state when there is none)
    starts = [T.concatenate([T.shape_padleft(i), o], axis=0)[-1] for i, o in zip(inits, r)]
    t = api.scan(step, sequences=tail, outputs_info=starts, non_sequences=non_seqs, n_steps=n64 - full * k,
                 return_list=True, name=f"{name}_tail", mode=mode)
    t = t[0] if isinstance(t, tuple) else t
    return [T.concatenate([T.shape_padleft(s), o], axis=0)[-1] for s, o in zip(starts, t)]


def _step(api, a):
    """The scan's step as a function of (sequence rows, states, non-sequences)."""
    seqs, sits, nons = list(a.inner_in_seqs), list(a.inner_in_sit_sot), list(a.inner_in_non_seqs)
    outs = list(a.inner_out_sit_sot)

    def step(*args):
        replace = dict(zip(seqs, args[:len(seqs)]))
        replace.update(zip(sits, args[len(seqs):len(seqs) + len(sits)]))
        replace.update(zip(nons, args[len(seqs) + len(sits):]))
        return _clone(api, outs, replace)

    return step


def _final_reads(backend, outputs, replacements, state_outs, finals) -> dict:
    """{``h[-1]`` of a state's history: the segmented loop's final state} for the reads of the
    user's graph (through ``[k:]`` slices) left once the gradients are replaced."""
    api = backend.api
    graph = _clone(api, list(outputs), replacements)
    clients: dict[int, list] = {}
    for nd in toposort(graph):
        for inp in nd.inputs:
            clients.setdefault(id(inp), []).append(nd)
    found = {}
    for out, final in zip(state_outs, finals):
        todo = [out]
        while todo:
            var = todo.pop()
            for nd in clients.get(id(var), []):
                if not isinstance(nd.op, api.Subtensor) or len(backend.subtensor_indices(nd)) != 1:
                    continue
                entry, _ = _first_index(backend, nd, write=False)
                if isinstance(entry, slice):
                    sl = _slice(api, entry)
                    if sl is not None and sl[1] is None and sl[2] in (None, 1) and (sl[0] or 0) >= 0:
                        todo.append(nd.outputs[0])
                elif _const(api, entry) == -1:
                    found[nd.outputs[0]] = final
    return found


#: this rule's graph fix (fixes/registry.py)
rewrites = checkpointed
