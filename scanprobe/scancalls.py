"""A ``scan(...)`` call as the user wrote it: its step function's parameters name buffers and
non-sequences in the user's terms."""

from __future__ import annotations

import inspect as pyinspect
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
