"""Proving a fix: run the original and the fixed function from the same shared state, compare.

Used by ``scanprobe fix`` (in the supervised child) and by ``scanprobe.fix(f)`` (on its first
call): one snapshot of the shared state, one comparison, one tolerance table.
"""

from __future__ import annotations

import numpy as np

#: Tolerance of the comparison of original and fixed outputs, by the outputs' precision.
TOLERANCE = {"float64": {"rtol": 1e-10, "atol": 1e-12}, "other": {"rtol": 1e-5, "atol": 1e-8}}


class SharedState:
    """Copies of the shared values a function reads, to run two functions from the same state."""

    def __init__(self, fgraph):
        self.saved = []
        for var in fgraph.inputs:
            container = getattr(var, "container", None)
            if container is not None:
                self.saved.append((container, np.array(container.value, copy=True)))

    def restore(self):
        for container, value in self.saved:
            container.value = np.array(value, copy=True)


def as_arrays(result) -> list:
    """A function's result (one output or a list) as a list of array copies."""
    out = result if isinstance(result, (list, tuple)) else [result]
    return [np.array(o, copy=True) for o in out]


def outputs(fn, values) -> list:
    return as_arrays(fn(*values))


def compare(before: list, after: list) -> dict:
    """{outputs_equal, max_abs_diff, tolerance} of two lists of output arrays."""
    doubles = all(np.asarray(a).dtype == np.float64 for a in before if np.asarray(a).dtype.kind == "f")
    tol = TOLERANCE["float64" if doubles and before else "other"]
    diffs = [
        float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size and a.shape == b.shape else 0.0
        for a, b in zip(before, after)
    ]
    return {
        "max_abs_diff": max(diffs) if diffs else 0.0,
        "tolerance": tol,
        "outputs_equal": len(before) == len(after)
        and all(a.shape == b.shape and np.allclose(a, b, **tol) for a, b in zip(before, after)),
    }
