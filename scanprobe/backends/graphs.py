"""Walks over graph variables shared by the adapter modules (no recursion: graphs can be
thousands of ops deep). Works on any Theano-family graph: only ``owner`` and ``inputs``."""

from __future__ import annotations


def ancestors(outputs) -> list:
    """Every variable ``outputs`` depend on (themselves included), each once."""
    seen, out, stack = set(), [], list(outputs)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        out.append(v)
        if v.owner is not None:
            stack.extend(v.owner.inputs)
    return out


def toposort(outputs) -> list:
    """The apply nodes of ``outputs``' graph, each after the nodes it reads."""
    order, done, entered = [], set(), set()
    stack = [o.owner for o in outputs if o.owner is not None]
    while stack:
        node = stack[-1]
        if id(node) in done:
            stack.pop()
            continue
        if id(node) not in entered:
            entered.add(id(node))
            stack.extend(i.owner for i in node.inputs if i.owner is not None and id(i.owner) not in done)
            continue
        stack.pop()
        done.add(id(node))
        order.append(node)
    return order
