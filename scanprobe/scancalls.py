"""A ``scan(...)`` call as the user wrote it: its step function's parameters name buffers and
non-sequences in the user's terms."""

from __future__ import annotations

import ast
import inspect as pyinspect
import textwrap
from dataclasses import dataclass
from typing import Any

from scanprobe.records import Site


@dataclass
class ScanCall:
    """A ``scan(...)`` call made by the user's code (to name things in the user's terms)."""

    site: Site
    fn: Any
    sequences: list
    outputs_info: list
    non_sequences: list
    name: str | None
    #: the user's scan call this one was made in (a nested scan built by a step function)
    parent: "ScanCall | None" = None

    @property
    def step_name(self) -> str:
        return getattr(self.fn, "__name__", "") or ""

    def _params(self) -> list[str] | None:
        try:
            sig = pyinspect.signature(self.fn)
        except (TypeError, ValueError):
            return None
        params = []
        for p in sig.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                return None
            params.append(p.name)
        return params

    def declared_states(self) -> int:
        """How many recurrent states the call declares (``outputs_info`` entries with an initial value)."""
        return sum(1 for c in self._n_state_args() if c > 0)

    def _n_state_args(self) -> list[int]:
        counts = []
        for o in self.outputs_info:
            if o is None:
                counts.append(0)
            elif isinstance(o, dict):
                taps = o.get("taps", [-1])
                counts.append(0 if o.get("initial") is None else len(taps or []))
            else:
                counts.append(1)
        return counts

    def _n_seq_args(self) -> int:
        n = 0
        for s in self.sequences:
            if isinstance(s, dict):
                n += len(s.get("taps", [0]) or [])
            else:
                n += 1
        return n

    def non_sequence_param(self, i: int) -> str:
        params = self._params()
        n = len(self.non_sequences)
        if params is None or i >= n or len(params) < n:
            return ""
        return params[len(params) - n + i]

    def non_sequence_name(self, session, var, i, n_outer) -> str:
        """The step-function parameter that receives ``var`` as a non_sequence."""
        for j, ns in enumerate(self.non_sequences):
            if session.same_variable(ns, var):
                return self.non_sequence_param(j)
        return ""

    def name_of_non_sequence(self, session, var) -> str:
        return self.non_sequence_name(session, var, -1, -1)

    def state_name(self, role, i, args) -> str:
        """Parameter name for a recurrent state (the first tap of outputs_info entry i)."""
        params = self._params()
        if params is None:
            return ""
        states = [k for k, c in enumerate(self._n_state_args()) if c > 0]
        # outputs_info entries with taps [-1] are sit_sot, others mit_sot: order within role
        sit, mit = [], []
        for k in states:
            o = self.outputs_info[k]
            taps = o.get("taps", [-1]) if isinstance(o, dict) else [-1]
            (sit if list(taps) == [-1] else mit).append(k)
        chosen = (sit if role == "sit_sot" else mit)
        if i >= len(chosen):
            return ""
        k = chosen[i]
        pos = self._n_seq_args() + sum(self._n_state_args()[:k])
        return params[pos] if pos < len(params) else ""

    def returned_names(self) -> list[str]:
        """The names the step function returns, in order (``return var, loglik``); "" where a
        returned value is not a plain name, [] when the source cannot be read or returns differ.
        A trailing updates value (``return x, updates``) is left out. Read once per call."""
        cached = self.__dict__.get("_returned")
        if cached is None:
            cached = self.__dict__["_returned"] = self._read_returned_names()
        return cached

    def _read_returned_names(self) -> list[str]:
        fn = self.fn
        if getattr(fn, "__name__", "") == "<lambda>":
            return []
        try:
            tree = ast.parse(textwrap.dedent(pyinspect.getsource(fn)))
        except (OSError, TypeError, SyntaxError, IndentationError):
            return []
        func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if func is None:
            return []
        n_out = len(self.outputs_info)
        found = None
        stack = list(func.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                elts = list(value.elts) if isinstance(value, (ast.Tuple, ast.List)) else [value]
                if len(elts) == 2 and isinstance(elts[0], (ast.Tuple, ast.List)) and n_out and len(elts[0].elts) == n_out:
                    elts = list(elts[0].elts)  # return (outputs), updates
                elif n_out and len(elts) == n_out + 1:
                    elts = elts[:n_out]  # return x, updates
                names = [e.id if isinstance(e, ast.Name) else "" for e in elts]
                if found is not None and found != names:
                    return []
                found = names
                continue
            stack.extend(ast.iter_child_nodes(node))
        return found or []

    def output_name(self, i: int) -> str:
        """The returned name of the i-th per-step output (outputs_info entry None, or none given)."""
        names = self.returned_names()
        if not names:
            return ""
        if self.outputs_info:
            slots = [k for k, o in enumerate(self.outputs_info)
                     if o is None or (isinstance(o, dict) and o.get("initial") is None)]
        else:
            slots = list(range(len(names)))
        if i >= len(slots) or slots[i] >= len(names):
            return ""
        return names[slots[i]]
