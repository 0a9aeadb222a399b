"""Readable formulas of symbolic sizes and structural keys of scalar graphs (a ``Level`` mixin).

A formula is built from the scalar graph that gives a size, simplified as it is built:

- constants are folded, and sums are kept as linear forms, so ``((1 + n) - 1) + 1`` reads
  ``n + 1``;
- clamps that the known facts decide are removed: sizes are never negative, so
  ``maximum(x.shape[0], 0)`` is ``x.shape[0]`` and ``switch(x.shape[0] < 0, 0, x.shape[0])`` is
  ``x.shape[0]`` (Theano's save-mem rewrite writes such chains into every buffer length);
- fused scalar arithmetic (``Composite``) is read through its inner graph, with the same rules;
- a formula longer than ``LIMIT`` characters becomes a named placeholder that says what it is
  computed from: ``<size from x.shape[0], mask.shape[0]>`` (``inspect --full-formulas`` keeps
  the whole expression). Building stops early past a character budget, so shared sub-graphs
  never expand into huge trees.

Examples (docs/design.md lists more): ``Shape_i{0}(x)`` -> ``x.shape[0]``; ``Elemwise{add}(1,
Shape_i{0}(x))`` -> ``x.shape[0] + 1``; ``Composite{Switch(LT(i0, 0), 0, i0)}(Shape_i{0}(x))``
-> ``x.shape[0]``; ``maximum(x.shape[0] - 1, 1)`` stays ``max(x.shape[0] - 1, 1)``.
"""

from __future__ import annotations

import numpy as np

from scanprobe.backends import ops
from scanprobe.backends.ops import Scalar as S
from scanprobe.walk.util import _as_int, _is_constant

#: Longest formula shown (characters); longer ones become a named placeholder.
LIMIT = 48
#: Characters a formula may grow to while it is built (then the rest is elided); with
#: --full-formulas, a million: the whole form of any formula a person could read (or diff), while one
#: past it stays a placeholder (a GRU's with a 50 MB budget: one formula of 158 MB, the JSON report
#: 474 MB, 26 s).
BUDGET = 2000
BUDGET_FULL = 1_000_000
_COMPARE = {S.LT: "<", S.GT: ">", S.LE: "<=", S.GE: ">=", S.EQ: "==", S.NEQ: "!="}
_FOLD = {S.LT: lambda a, b: a < b, S.GT: lambda a, b: a > b, S.LE: lambda a, b: a <= b, S.GE: lambda a, b: a >= b,
         S.EQ: lambda a, b: a == b, S.NEQ: lambda a, b: a != b}


class _Lin:
    """A linear form: const + sum(coef * atom). An atom is a non-linear part with a structural key
    (equal keys: the same value) and its formula text; some atoms are known non-negative (sizes)."""

    def __init__(self, const=0, terms=None, texts=None, nonneg_atoms=()):
        self.const = const
        self.terms = dict(terms or {})  # key -> coefficient, in insertion order
        self.texts = dict(texts or {})  # key -> text
        self.nn = frozenset(nonneg_atoms)

    @classmethod
    def atom(cls, text, nonneg=False, key=None):
        """An atom; ``key``: its interned structural key (``Formulas._atom_key``)."""
        return cls(0, {key: 1}, {key: text}, {key} if nonneg else ())

    @property
    def nonneg(self) -> bool:
        return self.const >= 0 and all(c > 0 and k in self.nn for k, c in self.terms.items())

    @property
    def value(self):
        return self.const if not self.terms else None

    def canon(self, table: dict) -> int:
        """A structural key of the whole form (equal canons: equal values), interned in ``table``
        to a small int: nested keys would expand shared sub-graphs into trees."""
        key = ("lin", self.const, tuple(sorted(self.terms.items())))
        return table.setdefault(key, len(table))

    def scaled(self, k):
        return _Lin(self.const * k, {t: c * k for t, c in self.terms.items()}, self.texts, self.nn)

    def plus(self, other):
        terms = dict(self.terms)
        for t, c in other.terms.items():
            terms[t] = terms.get(t, 0) + c
        return _Lin(self.const + other.const, {t: c for t, c in terms.items() if c}, {**self.texts, **other.texts},
                    self.nn | other.nn)

    def text(self) -> str:
        parts = []
        for k, c in self.terms.items():
            t = self.texts.get(k, "?")
            body = t if c in (1, -1) else f"{abs(c)} * {t}"
            parts.append(("- " if c < 0 else "+ ") + body)
        if self.const or not parts:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        out = " ".join(parts)
        return out[2:] if out.startswith("+ ") else "-" + out[2:]

    def atomic(self) -> str:
        """The text, in parentheses when it is a sum (to be an operand)."""
        t = self.text()
        return t if len(self.terms) + (1 if self.const else 0) <= 1 and not t.startswith("-") else f"({t})"


def _expr(table, name, parts, text, nonneg=False):
    """A non-linear atom: ``name`` applied to ``parts`` (their canons make its key)."""
    key = (name,) + tuple(p.canon(table) for p in parts)
    return _Lin.atom(text, nonneg, key=table.setdefault(key, len(table)))


class Formulas:
    """Formulas, structural keys and ``base + k`` splits (mixed into ``level.Level``)."""

    def formula(self, var, names=None, depth=0) -> str:
        """A readable expression for a scalar graph (used where a size stays symbolic)."""
        if var is None:
            return "?"
        import sys

        full = getattr(self.w, "full_formulas", False)
        state = {"budget": BUDGET_FULL if full else BUDGET, "depth": 1000 if full else 150,
                 "names": names or {}, "known": depth > 0}
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 4 * state["depth"] + 1000))
        try:
            text = self._term(var, state, {}, 0).text()
        finally:
            sys.setrecursionlimit(limit)
        if (full and text != "…" and len(text) <= BUDGET_FULL) or (len(text) <= LIMIT and "…" not in text):
            return text
        return self._placeholder(var, state)

    def _placeholder(self, var, state) -> str:
        """``<size from a, b>``: what a long formula is computed from."""
        from scanprobe.backends.graphs import ancestors

        leaves = []
        for v in ancestors([var]):
            node = v.owner
            if node is not None and isinstance(node.op, self.api.Shape_i) and node.inputs[0].owner is None:
                text = f"{self.w.label_of(node.inputs[0], self)}.shape[{node.op.i}]"
            elif node is None and not _is_constant(self.api, v) and getattr(v.type, "ndim", None) == 0:
                text = self.w.label_of(v, self)
            else:
                key = self.skey(v) if node is not None else None
                text = state["names"].get(key) if key is not None else None
            if text and text not in leaves:
                leaves.append(text)
        shown = ", ".join(leaves[:3]) + (", …" if len(leaves) > 3 else "")
        return f"<size from {shown}>" if leaves else "<size computed in the graph>"

    def _term(self, var, state, subst, depth) -> _Lin:
        """``var`` as a linear form (``subst``: inner variables of a Composite -> their terms)."""
        if id(var) in subst:
            return subst[id(var)]
        api = self.api
        if _is_constant(api, var):
            v = _as_int(var.data)
            return _Lin(v) if isinstance(v, (int, np.integer)) else _Lin.atom(str(v))
        if not subst:
            key = self.skey(var)
            if key in state["names"]:
                return _Lin.atom(state["names"][key], nonneg=True, key=self._atom_key(("name", key)))
            val = self._values.get(var)
            if isinstance(val, int) and (depth > 0 or state["known"]):
                return _Lin(val)
        node = var.owner
        if node is None:
            return _Lin.atom(self.w.label_of(var, self), key=self._atom_key(("var", self.skey(var))))
        memo = state.setdefault("memo", {})
        key = (id(subst), id(var))
        if key in memo:  # shape graphs share sub-graphs: each is read once
            return memo[key]
        if state["budget"] <= 0 or depth > state["depth"]:
            return _Lin.atom("…", key=self._atom_key(("elided", id(var))))
        lin = self._node_term(node, var, state, subst, depth)
        state["budget"] -= len(lin.text())
        memo[key] = lin
        return lin

    def _node_term(self, node, var, state, subst, depth) -> _Lin:
        api, op = self.api, node.op
        table = self.w._skey_intern
        name = ops.scalar(op)

        def arg(i):
            return self._term(node.inputs[i], state, subst, depth + 1)

        if isinstance(op, api.Shape_i):
            src = node.inputs[0]
            return _Lin.atom(f"{self._label(src, state, subst, depth)}.shape[{op.i}]", nonneg=True,
                             key=self._atom_key(("shape", self._key(src, state, subst, depth), op.i)))
        if ops.is_formula_pass(op):
            return arg(0)
        if isinstance(op, api.Subtensor) and node.inputs[0].owner is not None and isinstance(
                node.inputs[0].owner.op, api.Shape):
            idx = self.b.subtensor_indices(node)
            if len(idx) == 1 and not isinstance(idx[0], slice):
                i = idx[0] if isinstance(idx[0], int) else self.value(idx[0])
                src = node.inputs[0].owner.inputs[0]
                base = self._label(src, state, subst, depth)
                return _Lin.atom(f"{base}.shape[{i if i is not None else '?'}]", nonneg=True,
                                 key=self._atom_key(("shape", self._key(src, state, subst, depth), i)))
        if name is S.COMPOSITE:  # fused scalar arithmetic: read its inner graph with these rules
            comp = getattr(op, "scalar_op", op)
            inner = comp.fgraph
            inner_subst = {id(i): arg(k) for k, i in enumerate(inner.inputs)}
            out = inner.outputs[node.outputs.index(var)] if len(inner.outputs) > 1 else inner.outputs[0]
            return self._term(out, state, inner_subst, depth + 1)
        if name in (S.ADD, S.SUB, S.NEG):
            parts = [arg(i) for i in range(len(node.inputs))]
            if name is S.NEG:
                return parts[0].scaled(-1)
            total = parts[0]
            for p in parts[1:]:
                total = total.plus(p.scaled(-1) if name is S.SUB else p)
            return total
        if name is S.MUL:
            parts = [arg(i) for i in range(len(node.inputs))]
            consts = [p.value for p in parts if p.value is not None]
            rest = [p for p in parts if p.value is None]
            k = int(np.prod(consts)) if consts else 1
            if not rest:
                return _Lin(k)
            if len(rest) == 1:
                return rest[0].scaled(k)
            rest.sort(key=lambda p: p.canon(table))
            return _expr(table, S.MUL.value, rest, " * ".join(p.atomic() for p in rest), all(p.nonneg for p in rest)).scaled(k)
        if name in (S.MAX, S.MIN):
            a, b = arg(0), arg(1)
            if a.value is not None and b.value is not None:
                v = max(a.value, b.value) if name is S.MAX else min(a.value, b.value)
                return _Lin(v)
            if name is S.MAX:
                for x, y in ((a, b), (b, a)):  # max(size, c <= 0) is the size
                    if x.nonneg and y.value is not None and y.value <= 0:
                        return x
            if a.text() == b.text():
                return a
            word = "max" if name is S.MAX else "min"
            nonneg = (a.nonneg or b.nonneg) if name is S.MAX else (a.nonneg and b.nonneg)
            return _expr(table, name.value, sorted([a, b], key=lambda p: p.canon(table)), f"{word}({a.text()}, {b.text()})", nonneg)
        if name in _COMPARE:
            a, b = arg(0), arg(1)
            if a.value is not None and b.value is not None:
                return _Lin(int(_FOLD[name](a.value, b.value)))
            # a size compared with a constant <= 0: decided
            if a.nonneg and b.value is not None and b.value <= 0 and name in (S.LT, S.GE) and not (name is S.LT and b.value > 0):
                return _Lin(1 if name is S.GE else 0)
            return _expr(table, name.value, [a, b], f"{a.atomic()} {_COMPARE[name]} {b.atomic()}", nonneg=True)
        if name is S.SWITCH:
            c = arg(0)
            if c.value is not None:
                return arg(1) if c.value else arg(2)
            a, b = arg(1), arg(2)
            if a.text() == b.text():
                return a
            return _expr(table, S.SWITCH.value, [c, a, b], f"({a.text()} if {c.text()} else {b.text()})", a.nonneg and b.nonneg)
        if name in (S.INT_DIV, S.TRUE_DIV, S.MOD):
            a, b = arg(0), arg(1)
            if a.value is not None and b.value not in (None, 0):
                v = {S.INT_DIV: a.value // b.value, S.TRUE_DIV: a.value / b.value, S.MOD: a.value % b.value}[name]
                return _Lin(v)
            if b.value == 1 and name is not S.MOD:
                return a
            sym = {S.INT_DIV: "//", S.TRUE_DIV: "/", S.MOD: "%"}[name]
            return _expr(table, name.value, [a, b], f"{a.atomic()} {sym} {b.atomic()}", a.nonneg and b.nonneg)
        if name in (S.AND, S.OR, S.INVERT):
            parts = [arg(i) for i in range(len(node.inputs))]
            if all(p.value is not None for p in parts):
                v = {S.AND: all, S.OR: any}.get(name, lambda ps: not ps[0])([p.value for p in parts])
                return _Lin(int(v))
            word = {S.AND: " and ", S.OR: " or "}.get(name)
            if word:
                return _expr(table, name.value, parts, "(" + word.join(p.text() for p in parts) + ")", nonneg=True)
            return _expr(table, name.value, parts, f"not {parts[0].atomic()}", nonneg=True)
        if name in (S.CEIL, S.FLOOR, S.ABS):
            a = arg(0)
            return a if a.value is not None else _expr(table, name.value, [a], f"{name.value.lower()}({a.text()})",
                                                       name is S.ABS or a.nonneg)
        return _Lin.atom(f"{ops.display_name(op)}(...)", key=self._atom_key(("op", self.skey(var) if not subst else id(var))))

    def _atom_key(self, key: tuple) -> int:
        table = self.w._skey_intern
        return table.setdefault(("atom",) + key, len(table))

    def _key(self, var, state, subst, depth):
        """A structural key of what a ``.shape[i]`` is taken of."""
        if id(var) in subst:
            return subst[id(var)].canon(self.w._skey_intern)
        return ("v", self.skey(var))

    def linear(self, var) -> _Lin:
        """``var`` as a linear form over structural atoms (to compare two sizes exactly)."""
        state = {"budget": BUDGET, "depth": 150, "names": {}, "known": False}
        return self._term(var, state, {}, 0)

    def relative(self, var, length):
        """``var - length`` when that is a constant (an index counted from a buffer's end), else None."""
        diff = self.linear(var).plus(self.linear(length).scaled(-1))
        return diff.value

    def _label(self, var, state, subst, depth) -> str:
        """The name of what a ``.shape[i]`` is taken of."""
        if var.owner is None or (ops.is_dimshuffle(var.owner.op) and var.owner.inputs[0].owner is None):
            root = var if var.owner is None else var.owner.inputs[0]
            return self.w.label_of(root, self)
        return self._term(var, state, subst, depth + 1).atomic()

    def skey(self, var):
        """A structural key: equal keys mean the same value, whatever the variables' identity.

        Keys are hash-consed to small ints (shape graphs share sub-graphs: hashing nested tuples
        would expand them into trees, exponential for nested scans over long chains), and
        computed without recursion (graphs thousands of ops deep).
        """
        memo = self.w._skey_memo
        k = memo.get(id(var))
        if k is not None:
            return k
        api, intern = self.api, self.w._skey_intern
        stack = [var]
        while stack:
            v = stack[-1]
            if id(v) in memo:
                stack.pop()
                continue
            if _is_constant(api, v):
                k = ("c", str(np.asarray(v.data).tolist()))
            elif v.owner is None:
                k = ("v", id(v))
            else:
                node = v.owner
                through = ops.is_cast_like(node.op) or ops.is_scalar_tensor(node.op)
                deps = node.inputs[:1] if through else node.inputs
                missing = [i for i in deps if id(i) not in memo]
                if missing:
                    stack.extend(missing)
                    continue
                if through:
                    memo[id(v)] = memo[id(node.inputs[0])]
                    stack.pop()
                    continue
                k = (str(node.op), node.outputs.index(v), tuple(memo[id(i)] for i in node.inputs))
            memo[id(v)] = intern.setdefault(k, len(intern))
            stack.pop()
        return memo[id(var)]

    def split_offset(self, var):
        """(structural key of base, constant k) such that var == base + k."""
        api = self.api
        k = 0
        while var is not None and var.owner is not None:
            node = var.owner
            name = ops.scalar(node.op)
            if ops.is_cast_like(node.op) or ops.is_scalar_tensor(node.op):
                var = node.inputs[0]
                continue
            if name in (S.ADD, S.SUB) and len(node.inputs) == 2:
                a, b = node.inputs
                if _is_constant(api, b):
                    k += _as_int(b.data) * (1 if name is S.ADD else -1)
                    var = a
                    continue
                if name is S.ADD and _is_constant(api, a):
                    k += _as_int(a.data)
                    var = b
                    continue
            break
        if var is not None and _is_constant(api, var):
            return ("c", 0), k + _as_int(var.data)
        return self.skey(var), k

