"""Small helpers over live graph variables shared by the walker's modules (no backend import:
backend classes come in as ``api``, the adapter's ``base.Api``)."""

from __future__ import annotations

import numpy as np

from scanprobe.backends import ops
from scanprobe.backends.graphs import ByIdentity


def _type_str(var) -> str:
    t = var.type
    dtype = getattr(t, "dtype", "?")
    ndim = getattr(t, "ndim", None)
    return f"{dtype}, {ndim}D" if ndim is not None else str(t)



def _ancestor_nodes(outputs):
    seen, stack, nodes = set(), list(outputs), []
    while stack:
        v = stack.pop()
        if v.owner is None or id(v.owner) in seen:
            continue
        seen.add(id(v.owner))
        nodes.append(v.owner)
        stack.extend(v.owner.inputs)
    return nodes


def _is_constant(api, var) -> bool:
    return isinstance(var, api.Constant)


def _as_int(x):
    try:
        arr = np.asarray(x)
        if arr.ndim == 0:
            v = arr.item()
            if isinstance(v, float) and v.is_integer():
                return int(v)
            return v
        return arr
    except Exception:  # pragma: no cover - exotic constants
        return None


def _flat(items) -> list:
    out = []
    for x in items:
        out.extend(_flat(x) if isinstance(x, (list, tuple)) else [x])
    return out


def _known_from_outer(lv, outer, drop_first):
    shape_vars = lv.shape(outer)
    vals = [lv.value(d) for d in shape_vars]
    shape = tuple(vals[1:] if drop_first else vals) if all(isinstance(v, int) for v in vals) else None
    value = None
    if getattr(outer.type, "ndim", None) == 0 and not drop_first:
        value = lv.value(outer)
        if value is not None:
            value = np.asarray(value, dtype=outer.type.dtype)
    if _is_constant(lv.api, outer) and not drop_first:
        value = outer.data
    if isinstance(outer, lv.api.SharedVariable) and not drop_first:
        value = outer.get_value(borrow=True)
    return (value, shape, "outer")


def _short_input(lv, x) -> str:
    if _is_constant(lv.api, x) and np.asarray(x.data).ndim == 0:
        return str(np.asarray(x.data).item())
    v = lv.value(x)
    if isinstance(v, (int, float)):
        return str(v)
    if getattr(x.type, "ndim", 1) == 0:
        return lv.formula(x)
    return f"<{_type_str(x)}>"


def _creator(api, var):
    """The Alloc/AllocEmpty (or other op) that creates a buffer, looking through set_subtensor."""
    seen = 0
    while var is not None and var.owner is not None and seen < 20:
        seen += 1
        node = var.owner
        if isinstance(node.op, (api.Alloc, api.AllocEmpty)):
            return var, node
        if isinstance(node.op, api.IncSubtensor) or ops.is_pass_through(node.op):
            var = node.inputs[0]
            continue
        return var, node
    return None, None


def _strip_to_root(api, var, through_subtensor=False):
    seen = 0
    while var is not None and var.owner is not None and seen < 20:
        seen += 1
        op = var.owner.op
        if (
            ops.is_pass_through(op)
            or ops.is_dimshuffle(op)
            or ops.is_cast_like(op)
            or (through_subtensor and isinstance(var.owner.op, api.Subtensor))
        ):
            var = var.owner.inputs[0]
            continue
        break
    return var


def _shape_source(api, creator_node, leading=True):
    """The graph input whose shape gives the trailing dimensions of an Alloc, if exactly one."""
    if creator_node is None:
        return None
    skip = 1 if leading else 0
    if isinstance(creator_node.op, api.AllocEmpty):
        trailing = creator_node.inputs[skip:]
    elif isinstance(creator_node.op, api.Alloc):
        trailing = creator_node.inputs[1 + skip :]
    else:
        return None
    found = []
    stack = list(trailing)
    seen = set()
    while stack:
        v = stack.pop()
        if id(v) in seen or v.owner is None:
            continue
        seen.add(id(v))
        if isinstance(v.owner.op, (api.Shape, api.Shape_i)):
            src = _strip_to_root(api, v.owner.inputs[0])
            if src not in found:
                found.append(src)
            continue
        stack.extend(v.owner.inputs)
    if len(found) == 1 and found[0].owner is None:
        return found[0]
    return None


# ---------------------------------------------------------------------- readers


# ---------------------------------------------------------------------- inner graphs


def own_inputs(api, inner_in, inner_out, leaves):
    """The step graph over fresh input variables of its own. PyTensor's scan inner inputs are
    interned ``NominalVariable``s: the step's input ``*7`` is the very object that is input
    ``*7`` of a scan nested in it, so a nested scan's sizes, read back onto this level, would
    read another input (an RNN-RBM's bias `bv` sized by `bh`)."""
    old = list(inner_in) + list(leaves)
    fresh = []
    for v in old:
        f = v.type()
        f.name = getattr(v, "name", None)
        if hasattr(v, "tag") and hasattr(v.tag, "trace"):
            f.tag.trace = v.tag.trace
        fresh.append(f)
    mapping = dict(zip(old, fresh))
    outs = api.clone_replace(list(inner_out), replace=mapping)
    new_leaves = ByIdentity()
    for v, f in zip(list(leaves), fresh[len(inner_in):]):
        dims = leaves[v]
        new_leaves[f] = tuple(api.clone_replace(d, replace=mapping) if d.owner is not None else d for d in dims)
    return fresh[: len(inner_in)], list(outs), new_leaves
