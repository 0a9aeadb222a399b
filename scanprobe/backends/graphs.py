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


class ByIdentity(dict):
    """A dict keyed by graph variables as objects, whatever their ``__eq__``.

    PyTensor's scan inner inputs are ``NominalVariable``s that compare equal when their number and
    type are: the input ``*7`` of one scan's step equals the input ``*7`` of a scan nested in it,
    so a plain dict mixes the two levels up (a nested scan's per-step output was sized by another
    input's shape). Keys are held (no id is reused while the dict lives)."""

    def __init__(self, items=()):
        super().__init__()
        for k, v in (items.items() if hasattr(items, "items") else items):
            self[k] = v

    def __setitem__(self, key, value):
        super().__setitem__(id(key), (key, value))

    def __getitem__(self, key):
        return super().__getitem__(id(key))[1]

    def __contains__(self, key):
        return super().__contains__(id(key))

    def __delitem__(self, key):
        super().__delitem__(id(key))

    def get(self, key, default=None):
        item = super().get(id(key))
        return default if item is None else item[1]

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, other=(), **kw):
        for k, v in (other.items() if hasattr(other, "items") else other):
            self[k] = v

    def keys(self):
        return [k for k, _ in super().values()]

    def __iter__(self):
        return iter(self.keys())

    def values(self):
        return [v for _, v in super().values()]

    def items(self):
        return list(super().values())

    def copy(self):
        return ByIdentity(self.items())
