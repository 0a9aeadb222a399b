"""``scanprobe.fix``: the fixes of ``scanprobe fix`` as a Python API.

    f = scanprobe.fix(theano.function([x, y], g_square))      # a compiled function
    f = scanprobe.fix([x, y], g_square, mode="FAST_COMPILE")   # or function's own arguments

The result is called like the original (same inputs, same outputs, same updates). Its first call
proves the fix: the original and the fixed function both run on those arguments, from the same
shared state; if the outputs differ (float64: rtol 1e-10, else rtol 1e-5) the fixed function is
dropped with a warning and the original is used from then on. ``verify=False`` skips that.

What is fixed: SP001 (the save-mem rewrite added to the mode when the mode lacks it), SP003 (a
scan over the batch that differentiates one example's cost: the sum-of-squares form or the
per-example graph), SP002 (a map scan vectorized). Graph fixes need the user's graph: Theano keeps
it in a compiled function; PyTensor keeps only the optimized graph, so pass PyTensor's function
arguments (the second form) to get them.
"""

from __future__ import annotations

import warnings


class FixFailed(Warning):
    """The fixed function's outputs differed from the original's: the original is used."""


def _backend_for(obj):
    from scanprobe.backends import get_backend

    mod = type(obj).__module__.split(".")[0]
    if mod not in ("theano", "pytensor"):
        mod = "theano" if any(m.startswith("theano") for m in __import__("sys").modules) else "pytensor"
    backend = get_backend(mod)
    backend.load([])
    return backend


def _first_variable(outputs):
    if isinstance(outputs, (list, tuple)):
        for o in outputs:
            return _first_variable(o)
        return None
    if isinstance(outputs, dict):
        return _first_variable(list(outputs.values()))
    return getattr(outputs, "variable", outputs)


class FixedFunction:
    """A fixed compiled function; calls like the original. ``rewrites`` and ``verification`` say
    what was done and how it was checked."""

    def __init__(self, original, fixed, rewrites, notes, verify, compile_original=None):
        self._original = original
        self._compile_original = compile_original
        self.fixed = fixed
        self.rewrites = [r.plain() for r in rewrites]
        self.notes = notes
        self.verification: dict = {"status": "pending" if verify else "skipped (verify=False)"}
        self._use = fixed
        self._pending = verify

    @property
    def original(self):
        if self._original is None and self._compile_original is not None:
            self._original = self._compile_original()
        return self._original

    def applied(self) -> list[str]:
        out = [f"{r['rule']} scan `{r['scan']}`: {r['form']} form" for r in self.rewrites if r["form"]]
        return out + [n for n in self.notes if n.startswith("SP")]

    def __call__(self, *args, **kwargs):
        if self._pending:
            self._pending = False
            return self._verify(args, kwargs)
        return self._use(*args, **kwargs)

    def _verify(self, args, kwargs):
        import numpy as np

        from scanprobe.runners.child import _SharedState, _compare

        original = self.original
        state = _SharedState(original.maker.fgraph)
        try:
            before = original(*args, **kwargs)
        except MemoryError:
            state.restore()
            self.verification = {"status": "not compared: the original raised MemoryError"}
            return self.fixed(*args, **kwargs)
        after_state = _SharedState(original.maker.fgraph)
        state.restore()
        after = self.fixed(*args, **kwargs)

        def listed(x):
            return [np.array(o, copy=True) for o in (x if isinstance(x, (list, tuple)) else [x])]

        entry: dict = {}
        _compare(entry, listed(before), listed(after))
        self.verification = {
            "status": "verified" if entry["outputs_equal"] else "failed",
            "max_abs_diff": entry["max_abs_diff"],
            "tolerance": entry["tolerance"],
        }
        if not entry["outputs_equal"]:
            warnings.warn(
                f"scanprobe.fix: the fixed function's outputs differ (max |difference| {entry['max_abs_diff']:.3g});"
                " using the original function",
                FixFailed,
                stacklevel=3,
            )
            after_state.restore()  # the state the original left
            self._use = original
            return before
        return after

    def __getattr__(self, name):  # maker, input_storage, ... of the function in use
        return getattr(self.__dict__.get("_use") or self.fixed, name)

    def __repr__(self) -> str:
        return f"<scanprobe.FixedFunction: {'; '.join(self.applied()) or 'nothing to fix'}; {self.verification['status']}>"


def fix(f=None, outputs=None, *, verify: bool = True, **function_kwargs) -> FixedFunction:
    """The function ``f`` with scanprobe's fixes applied (see the module docstring)."""
    from scanprobe.errors import ScanprobeError

    if f is not None and hasattr(f, "maker"):
        if outputs is not None or function_kwargs:
            raise ScanprobeError(
                "scanprobe.fix: give either a compiled function or function's arguments, not both",
                hint="scanprobe.fix(f) or scanprobe.fix(inputs, outputs, mode=...)",
            )
        backend = _backend_for(f)
        new, rewrites, notes = backend.fix_function(fn=f)
        return FixedFunction(f, new, rewrites, notes, verify)
    if outputs is None:
        raise ScanprobeError(
            f"scanprobe.fix: {type(f).__name__} is not a compiled function",
            hint="pass theano.function(...) / pytensor.function(...), or (inputs, outputs, **function_kwargs)",
        )
    var = _first_variable(outputs)
    backend = _backend_for(var)
    new, rewrites, notes = backend.fix_function(inputs=f, outputs=outputs, kwargs=function_kwargs)
    return FixedFunction(
        None, new, rewrites, notes, verify,
        compile_original=lambda: backend.api.function(f, outputs, **function_kwargs),
    )
