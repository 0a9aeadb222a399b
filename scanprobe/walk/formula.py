"""Readable formulas of symbolic sizes and structural keys of scalar graphs (a ``Level`` mixin)."""

from __future__ import annotations

import re

import numpy as np

from scanprobe.walk.util import _as_int, _is_constant, _op_name


class Formulas:
    """Formulas, structural keys and ``base + k`` splits (mixed into ``level.Level``)."""

    def formula(self, var, names=None, depth=0) -> str:
        """A readable expression for a scalar graph (used where a size stays symbolic)."""
        api = self.api
        names = names or {}
        if var is None:
            return "?"
        key = self.skey(var)
        if key in names:
            return names[key]
        if _is_constant(api, var):
            return str(_as_int(var.data))
        val = self._values.get(var)
        if val is not None and depth > 0:
            return str(val)
        node = var.owner
        if node is None:
            return self.w.label_of(var, self)
        if type(node.op).__name__ == "DimShuffle" and node.inputs[0].owner is None:
            return self.w.label_of(node.inputs[0], self)  # broadcast/dropped axes of an input
        if depth > 6:
            return "..."
        op = node.op
        name = _op_name(op)
        if isinstance(op, api.Shape_i):
            return f"{self.formula(node.inputs[0], names, depth + 1)}.shape[{op.i}]"
        if name in ("Cast", "ScalarFromTensor", "TensorFromScalar", "Identity") or type(op).__name__ in (
            "ScalarFromTensor",
            "TensorFromScalar",
        ):
            return self.formula(node.inputs[0], names, depth)
        if isinstance(op, api.Subtensor) and node.inputs[0].owner is not None and isinstance(
            node.inputs[0].owner.op, api.Shape
        ):
            idx = self.b.subtensor_indices(node)
            if len(idx) == 1 and not isinstance(idx[0], slice):
                i = idx[0] if isinstance(idx[0], int) else self.value(idx[0])
                base = self.formula(node.inputs[0].owner.inputs[0], names, depth + 1)
                return f"{base}.shape[{i if i is not None else '?'}]"
        infix = {"Add": "+", "Sub": "-", "Mul": "*", "IntDiv": "//", "TrueDiv": "/"}
        if name in infix:
            parts = [self.formula(i, names, depth + 1) for i in node.inputs]
            return "(" + f" {infix[name]} ".join(parts) + ")"
        if name in ("Maximum", "Minimum", "Switch", "Ceil", "Floor"):
            parts = [self.formula(i, names, depth + 1) for i in node.inputs]
            return f"{name.lower()}({', '.join(parts)})"
        if name == "Composite":  # fused scalar arithmetic: show its expression
            parts = [self.formula(i, names, depth + 1) for i in node.inputs]
            text = str(op.scalar_op)
            text = text[text.index("{") + 1 : -1] if "{" in text else text
            return re.sub(r"\bi(\d+)\b", lambda m: parts[int(m.group(1))] if int(m.group(1)) < len(parts) else m.group(0), text)
        return f"{type(op).__name__}(...)"

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
                name = _op_name(node.op)
                through = name in ("Cast", "Identity") or type(node.op).__name__ in ("ScalarFromTensor", "TensorFromScalar")
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
            name = _op_name(node.op)
            if name in ("Cast", "Identity") or type(node.op).__name__ in ("ScalarFromTensor", "TensorFromScalar"):
                var = node.inputs[0]
                continue
            if name in ("Add", "Sub") and len(node.inputs) == 2:
                a, b = node.inputs
                if _is_constant(api, b):
                    k += _as_int(b.data) * (1 if name == "Add" else -1)
                    var = a
                    continue
                if name == "Add" and _is_constant(api, a):
                    k += _as_int(a.data)
                    var = b
                    continue
            break
        if var is not None and _is_constant(api, var):
            return ("c", 0), k + _as_int(var.data)
        return self.skey(var), k

