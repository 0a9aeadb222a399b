"""SP007's fix: a gradient scan's zero-fed backward tape rebuilt as a running state.

A recurrent state with one tap (``outputs_info=[h0]``) becomes, in its gradient scan, a mit_mot
read at taps (0, 1) and written at tap 1: step t reads the state's gradient so far (row t) and
the loss's cotangent for the next state (row t + 1), and writes the next state's gradient
(row t + 1). When the loss's cotangent is zero on every row but row 0 (``walk/cotangent.py``
proves it from the graph), the tap-1 read is zero at every step: the tape is a sit_sot (read at
t, written at t + 1, the same buffer layout) started from row 0, with the tap-1 read replaced by
zeros. Every reader of the old buffer reads the new one unchanged; save-mem (added to the mode)
then keeps the rows they read, two when the gradient of the initial state is all that is read.

Not applied (the reason is reported): tapes with other taps (states with several taps), while
loops, ``truncate_gradient`` (rows the loop never writes keep the loss's cotangent), tapes whose
cotangent has other nonzero rows.
"""

from __future__ import annotations

from scanprobe.errors import failure_text
from scanprobe.fixes.graph_edit import NotApplicable, Rewrite, _clone
from scanprobe.rules import rule
from scanprobe.rules.sp007_backward_tape import BackwardTape
from scanprobe.walk.cotangent import row, zero_fed

RULE = rule(BackwardTape).code
#: the rewritten tape is read only at its last rows: the fixed mode needs save-mem
NEEDS_SAVE_MEM = True


def running_tapes(backend, outputs, wanted) -> list[Rewrite]:
    """SP007's rewrites: the zero-fed tapes of each gradient scan its findings name."""
    rewrites = []
    for node, _ in wanted.nodes(backend, outputs):
        info = backend.scan_info(node.op)
        rw = Rewrite(RULE, info.name or "scan_fn", "", scan_node=node)
        rewrites.append(rw)
        try:
            _rebuild(backend, node, info, rw)
        except NotApplicable as exc:
            rw.reason = str(exc)
        except Exception as exc:  # noqa: BLE001 - the backend refused the rebuilt scan
            rw.reason = f"rebuilding the gradient scan failed: {failure_text(exc)}"
    return rewrites


def _rebuild(backend, node, info, rw):
    api, T = backend.api, backend.api.T
    if info.as_while:
        raise NotApplicable("the gradient scan is a while-loop")
    if info.truncate_gradient != -1:
        raise NotApplicable("truncate_gradient: the rows the backward pass does not reach keep the loss's cotangent")
    a = backend.scan_args_copy(node)  # a fresh copy: its lists are made editable below
    for field in ("mit_mot_in_slices", "mit_mot_out_slices", "inner_in_mit_mot", "inner_out_mit_mot",
                  "outer_in_mit_mot", "outer_out_mit_mot", "inner_in_sit_sot", "inner_out_sit_sot",
                  "outer_in_sit_sot", "outer_out_sit_sot", "inner_out_mit_sot", "inner_out_nit_sot",
                  "inner_out_shared"):
        setattr(a, field, list(getattr(a, field)))
    picked = []
    for i, (ins, outs, buf) in enumerate(zip(a.mit_mot_in_slices, a.mit_mot_out_slices, a.outer_in_mit_mot)):
        if zero_fed(backend, buf) not in ("all", "first"):
            continue
        if tuple(ins) != (0, 1) or tuple(outs) != (1,):
            rw.detail.append(f"tape #{i} is read at taps {tuple(ins)} and written at {tuple(outs)} (a state with "
                             "several taps): left as it is")
            continue
        picked.append(i)
    if not picked:
        left, rw.detail[:] = "; ".join(rw.detail), []
        raise NotApplicable(left or "no tape of this gradient scan is read at taps (0, 1) with a zero-fed cotangent")
    n_steps = node.inputs[0]
    zeros, moved = {}, []
    for i in picked:
        tape, ahead = a.inner_in_mit_mot[i]
        zeros[ahead] = T.zeros_like(tape)
        first = row(backend, a.outer_in_mit_mot[i], 0)
        first = T.cast(first, tape.type.dtype)
        # every row starts as row 0 (rows 1.. are written by the loop): an Alloc, which save-mem
        # slices to the rows kept (Theano's save-mem fails on a set_subtensor whose value its
        # rewrites turned into a broadcast scalar)
        start = T.alloc(first, n_steps + 1, *[first.shape[d] for d in range(first.type.ndim)])
        moved.append((tape, a.inner_out_mit_mot[i][0], start, a.outer_out_mit_mot[i]))
    for i in sorted(picked, reverse=True):
        for field in ("mit_mot_in_slices", "mit_mot_out_slices", "inner_in_mit_mot", "inner_out_mit_mot",
                      "outer_in_mit_mot", "outer_out_mit_mot"):
            getattr(a, field).pop(i)
    for tape, out, start, old in moved:
        a.inner_in_sit_sot.append(tape)
        a.inner_out_sit_sot.append(out)
        a.outer_in_sit_sot.append(start)
        a.outer_out_sit_sot.append(old)
    # the tap-1 reads (the loss's cotangent of the next state) are zero at every step
    groups = [list(g) for g in a.inner_out_mit_mot]
    flat = [v for g in groups for v in g]
    rest = [a.inner_out_mit_sot, a.inner_out_sit_sot, a.inner_out_nit_sot, a.inner_out_shared]
    cloned = iter(_clone(api, flat + [v for r in rest for v in r], zeros))
    a.inner_out_mit_mot = [[next(cloned) for _ in g] for g in groups]
    for r in rest:
        r[:] = [next(cloned) for _ in r]
    old_outputs = list(a.outer_outputs)
    new_outputs = backend.scan_from_args(node, a)
    for old, new in zip(old_outputs, new_outputs):
        rw.replacements[old] = new
    rw.form = "running tape"
    rw.detail.insert(0, f"{len(picked)} backward tape(s) of `{info.name}` carried as running states "
                        "(the loss feeds them zeros after the first step); save-mem keeps the rows read")


#: this rule's graph fix (fixes/registry.py)
rewrites = running_tapes
