"""Which rows of a buffer can be nonzero, read from the graph that builds it, without running it.

A gradient scan's mit_mot buffer (the backward tape of a recurrent state) starts as the cotangent
the loss feeds to that state's history: built from zeros (``Alloc(0, ...)``, ``zeros_like``) with
rows written by ``set_subtensor``/``inc_subtensor`` (a loss on ``h[-1]`` writes one row), often
reversed (``[::-1]``) because the backward pass runs from the last step. SP007 asks which rows can
be nonzero; its fix asks for the value of row 0 without building the whole buffer.

Rows are Python indices on axis 0: ``k >= 0`` counts from the start, ``k < 0`` from the end. The
same row may be named both ways (row 0 of a 1-row buffer is row -1): the sets over-approximate,
so "only row 0 can be nonzero" is a proof, never a guess. ``None`` means "not known" (any row).
"""

from __future__ import annotations

import numpy as np

from scanprobe.backends import ops

_DEPTH = 40


def _const(api, var):
    """The integer value of a constant index (through conversions), else None."""
    if isinstance(var, (int, np.integer)):
        return int(var)
    seen = 0
    while var is not None and getattr(var, "owner", None) is not None and seen < 6:
        op = var.owner.op
        if not (ops.is_scalar_tensor(op) or ops.is_cast_like(op) or isinstance(op, api.DimShuffle)):
            return None
        var = var.owner.inputs[0]
        seen += 1
    if isinstance(var, api.Constant):
        data = np.asarray(var.data)
        if data.size == 1 and np.issubdtype(data.dtype, np.integer):
            return int(data.item())
    return None


def _is_zero(api, var) -> bool:
    """A constant that is zero everywhere (through dimshuffles and casts)."""
    seen = 0
    while var.owner is not None and seen < 6 and (
            isinstance(var.owner.op, api.DimShuffle) or ops.is_cast_like(var.owner.op)):
        var = var.owner.inputs[0]
        seen += 1
    if isinstance(var, api.Constant):
        data = np.asarray(var.data)
        return data.size > 0 and bool(np.all(data == 0))
    return False


def _slice(api, entry):
    """(start, stop, step) of a slice entry with constant parts (None where absent), else None."""
    if not isinstance(entry, slice):
        return None
    parts = []
    for p in (entry.start, entry.stop, entry.step):
        if p is None:
            parts.append(None)
            continue
        c = _const(api, p)
        if c is None:
            return None
        parts.append(c)
    return tuple(parts)


def _first_index(backend, node, write):
    """The entry on axis 0 of an index read or write, and how many integer entries there are."""
    entries = backend.inc_subtensor_indices(node) if write else backend.subtensor_indices(node)
    if not entries:
        return None, 0
    ints = sum(1 for e in entries if not isinstance(e, slice))
    return entries[0], ints


def _map_slice(rows, sl):
    """Rows of ``x[start:]`` (``sl`` = (start, None, None|1)) as rows of ``x``, else None."""
    start = sl[0] or 0
    out = set()
    for k in rows:
        if k < 0:
            out.add(k)
        elif start >= 0:
            out.add(start + k)
        elif start + k < 0:
            out.add(start + k)
        else:
            return None
    return out


def nonzero_rows(backend, var, depth=0):
    """The rows (axis 0) of ``var`` that may be nonzero, as a frozenset, or None when not known."""
    api = backend.api
    if depth > _DEPTH or getattr(var.type, "ndim", 0) == 0:
        return None
    if isinstance(var, api.Constant):
        data = np.asarray(var.data)
        if data.ndim == 0:
            return None
        return frozenset(int(i) for i in np.nonzero(data.reshape(data.shape[0], -1).any(axis=1))[0])
    node = var.owner
    if node is None:
        return None
    op = node.op
    if isinstance(op, api.Alloc):
        return frozenset() if _is_zero(api, node.inputs[0]) else None
    if ops.scalar(op) is ops.Scalar.SECOND and isinstance(op, api.Elemwise):
        return frozenset() if _is_zero(api, node.inputs[1]) else None
    if ops.is_pass_through(op) or ops.is_cast_like(op):
        return nonzero_rows(backend, node.inputs[0], depth + 1)
    if isinstance(op, api.DimShuffle):
        inner = nonzero_rows(backend, node.inputs[0], depth + 1)
        if inner == frozenset():
            return inner
        order = list(getattr(op, "new_order", ()))
        return inner if order and order[0] == 0 else None
    if isinstance(op, api.IncSubtensor):
        x, y = node.inputs[0], node.inputs[1]
        base = nonzero_rows(backend, x, depth + 1)
        if base is None:
            return None
        written = nonzero_rows(backend, y, depth + 1) if getattr(y.type, "ndim", 0) else None
        if written == frozenset() and not getattr(op, "set_instead_of_inc", False):
            return base  # adds zeros
        entry, ints = _first_index(backend, node, write=True)
        if entry is None:
            return None
        if not isinstance(entry, slice):
            k = _const(api, entry)
            return None if k is None else base | {k}
        if written == frozenset():
            return base  # set_subtensor of zeros: rows stay zero or become zero
        sl = _slice(api, entry)
        aligned = y.type.ndim == x.type.ndim - ints and not y.type.broadcastable[0]
        if sl is None or sl[1] is not None or sl[2] not in (None, 1) or written is None or not aligned:
            return None
        mapped = _map_slice(written, sl)
        return None if mapped is None else base | mapped
    if isinstance(op, api.Subtensor):
        inner = nonzero_rows(backend, node.inputs[0], depth + 1)
        if inner == frozenset():
            return inner
        entry, _ = _first_index(backend, node, write=False)
        sl = _slice(api, entry) if isinstance(entry, slice) else None
        if inner is None or sl is None:
            return None
        start, stop, step = sl
        if (start, stop, step) == (None, None, -1):
            return frozenset(-(k + 1) for k in inner)
        if stop is None and step in (None, 1) and (start or 0) >= 0:
            start = start or 0
            return frozenset(k if k < 0 else k - start for k in inner if k < 0 or k >= start)
        return None
    if ops.scalar(op) is ops.Scalar.ADD and isinstance(op, api.Elemwise):
        out = set()
        for inp in node.inputs:
            rows = nonzero_rows(backend, inp, depth + 1)
            if rows is None or (rows and (inp.type.ndim != var.type.ndim or inp.type.broadcastable[0])):
                return None
            out |= rows
        return frozenset(out)
    return None


def zero_fed(backend, var) -> str:
    """How a mit_mot buffer starts: "all" (zeros), "first" (zeros but row 0: the backward pass's
    first step, a loss on the state's last value), "partly" (zeros but other known rows), or ""."""
    rows = nonzero_rows(backend, var)
    if rows is None:
        return ""
    if not rows:
        return "all"
    return "first" if rows == {0} else "partly"


def row(backend, var, k: int, depth=0):
    """Row ``k`` of ``var`` as a graph that does not build ``var`` where the structure allows
    (zeros, writes, reversal, slices), else ``var[k]``."""
    api, T = backend.api, backend.api.T
    node = var.owner
    if depth > _DEPTH or node is None:
        return var[k]
    op = node.op
    if isinstance(op, api.Alloc) and len(node.inputs) - 1 == var.type.ndim:
        return T.alloc(node.inputs[0], *node.inputs[2:])
    if ops.scalar(op) is ops.Scalar.SECOND and isinstance(op, api.Elemwise):
        a, b = node.inputs  # b broadcast to a's shape (zeros_like, fill)
        if a.type.ndim != var.type.ndim or b.type.ndim != var.type.ndim:
            return var[k]
        a_k = var[k] if a.type.broadcastable[0] else row(backend, a, k, depth + 1)
        b_k = b[0] if b.type.broadcastable[0] else row(backend, b, k, depth + 1)
        return T.zeros_like(a_k, dtype=var.type.dtype) + T.cast(b_k, var.type.dtype)
    if ops.is_pass_through(op):
        return row(backend, node.inputs[0], k, depth + 1)
    if ops.is_cast_like(op):
        return T.cast(row(backend, node.inputs[0], k, depth + 1), var.type.dtype)
    if isinstance(op, api.Subtensor):
        entry, _ = _first_index(backend, node, write=False)
        sl = _slice(api, entry) if isinstance(entry, slice) else None
        if sl == (None, None, -1):
            return row(backend, node.inputs[0], -(k + 1), depth + 1)
        if sl is not None and sl[1] is None and sl[2] in (None, 1) and (sl[0] or 0) >= 0:
            return row(backend, node.inputs[0], k if k < 0 else k + (sl[0] or 0), depth + 1)
        return var[k]
    if isinstance(op, api.IncSubtensor):
        x, y = node.inputs[0], node.inputs[1]
        entry, ints = _first_index(backend, node, write=True)
        setting = getattr(op, "set_instead_of_inc", False)
        if entry is None or len(backend.inc_subtensor_indices(node)) != 1:
            return var[k]
        if not isinstance(entry, slice):
            j = _const(api, entry)
            if j is None or (j < 0) != (k < 0):
                return var[k]
            if j != k:
                return row(backend, x, k, depth + 1)
            return T.cast(y, var.type.dtype) if setting else row(backend, x, k, depth + 1) + y
        sl = _slice(api, entry)
        if sl is None or sl[1] is not None or sl[2] not in (None, 1) or (sl[0] or 0) < 0:
            return var[k]
        start = sl[0] or 0
        if y.type.ndim != x.type.ndim or y.type.broadcastable[0]:
            return var[k]
        if 0 <= k < start:
            return row(backend, x, k, depth + 1)
        yk = row(backend, y, k - start if k >= 0 else k, depth + 1)
        return T.cast(yk, var.type.dtype) if setting else row(backend, x, k, depth + 1) + yk
    return var[k]
