"""``scanprobe.fix``: the fixes of ``scanprobe fix`` as a Python API.

    f = scanprobe.fix(theano.function([x, y], g_square))      # a compiled function
    f = scanprobe.fix([x, y], g_square, mode="FAST_COMPILE")   # or function's own arguments

The result is called like the original (same inputs, same outputs, same updates). Its first call
proves the fix: the original and the fixed function both run on those arguments, from the same
shared state; if the outputs differ (float64: rtol 1e-10, else rtol 1e-5) the fixed function is
dropped with a warning and the original is used from then on. ``verify=False`` skips that.

What is fixed is decided as ``scanprobe fix`` decides it (``fixes.pipeline``): each finding's
rule has its fixer (``fixes.registry``; the list is at the end of ``help(scanprobe.fix)``). Graph
fixes need the user's graph: Theano keeps it in a compiled function; PyTensor keeps only the
optimized graph, so pass PyTensor's function arguments (the second form).
"""

from __future__ import annotations

import contextlib
import warnings


class FixFailed(Warning):
    """The fixed function's outputs differed from the original's: the original is used."""


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

    def __init__(self, original, fixed, plan, notes, verify, compile_original=None, name="function", path="<api>",
                 sizes=None):
        self.name = name
        self._path = path
        self._sizes = tuple(sizes) if sizes else None
        self._compared = None
        self._original = original
        self._compile_original = compile_original
        self.fixed = fixed
        self.rewrites = [{"rule": r.rule, "scan": r.scan, "form": r.form, "detail": r.detail, "reason": r.reason,
                          "snippet": r.snippet} for r in plan.rewrites]
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
        if self._sizes is None and not kwargs:
            self._sizes = args  # the display's before/after are predicted at these sizes
        if self._pending:
            self._pending = False
            return self._verify(args, kwargs)
        return self._use(*args, **kwargs)

    # ---------------------------------------------------------------- display
    def comparison(self) -> dict | None:
        """Before and after, predicted at the sizes of the first call (or ``example``): each an
        ``Inspection`` of the original and of the fixed function; None before any call."""
        if self._sizes is None:
            return None
        if self._compared is None:
            from scanprobe.inspection import inspect_at

            self._compared = {
                "before": inspect_at(self._path, self.original, example=list(self._sizes), name=self.name),
                "after": inspect_at(self._path, self.fixed, example=list(self._sizes), name=self.name),
            }
        return self._compared

    def _rows(self) -> list[tuple[str, str, str]]:
        from scanprobe.analysis.sizes import human_bytes

        cmp = self.comparison()
        if cmp is None:
            return []

        def peak(insp):
            return sum(b.bytes or 0 for t in insp.report.targets for s in t.scans for b in s.buffers)

        def found(insp):
            return ", ".join(f.code for f in insp.findings if f.severity != "info") or "none"

        b, a = cmp["before"], cmp["after"]
        return [("predicted scan buffers", human_bytes(peak(b)), human_bytes(peak(a))),
                ("findings", found(b), found(a))]

    def text(self) -> str:
        lines = [f"scanprobe.fix · {self.name}: {self.verification['status']}"]
        lines += [f"  {x}" for x in self.applied()] or ["  nothing to fix"]
        rows = self._rows()
        if rows:
            width = max(len(r[0]) for r in rows)
            lines.append(f"  {'':{width}}  before -> after (at the first call's sizes)")
            lines += [f"  {label:{width}}  {before} -> {after}" for label, before, after in rows]
        else:
            lines.append("  call it once: the call is verified, and before/after are predicted at its sizes")
        for r in self.rewrites:
            if r["form"] and r["snippet"]:
                lines.append(f"  the code to write in place of scan `{r['scan']}`:")
                lines += [f"    {ln}" for ln in r["snippet"].splitlines()]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        import html

        e = html.escape
        parts = [f"<div class='scanprobe-report'><p><b>scanprobe.fix</b> · {e(self.name)}: "
                 f"<b>{e(self.verification['status'])}</b></p><ul>"]
        parts += [f"<li>{e(x)}</li>" for x in self.applied()] or ["<li>nothing to fix</li>"]
        parts.append("</ul>")
        rows = self._rows()
        if rows:
            parts.append("<table><tr><th></th><th>before</th><th>after</th></tr>")
            parts += [f"<tr><td>{e(a)}</td><td>{e(b)}</td><td>{e(c)}</td></tr>" for a, b, c in rows]
            parts.append("</table><p>predicted at the sizes of the first call</p>")
        else:
            parts.append("<p>call it once: the call is verified, and before/after are predicted at its sizes</p>")
        for r in self.rewrites:
            if r["form"] and r["snippet"]:
                parts.append(f"<p>the code to write in place of scan <code>{e(r['scan'])}</code>:</p>"
                             f"<pre>{e(r['snippet'])}</pre>")
        return "\n".join(parts + ["</div>"])

    def _verify(self, args, kwargs):
        from scanprobe.fixes.verify import SharedState, as_arrays, compare

        original = self.original
        state = SharedState(original.maker.fgraph)
        try:
            before = original(*args, **kwargs)
        except MemoryError:
            state.restore()
            self.verification = {"status": "not compared: the original raised MemoryError"}
            return self.fixed(*args, **kwargs)
        after_state = SharedState(original.maker.fgraph)
        state.restore()
        after = self.fixed(*args, **kwargs)
        cmp = compare(as_arrays(before), as_arrays(after))
        self.verification = {
            "status": "verified" if cmp["outputs_equal"] else "failed",
            "max_abs_diff": cmp["max_abs_diff"],
            "tolerance": cmp["tolerance"],
        }
        if not cmp["outputs_equal"]:
            warnings.warn(
                f"scanprobe.fix: the fixed function's outputs differ (max |difference| {cmp['max_abs_diff']:.3g});"
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
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text())


def _session(backend):
    """A capture session rooted at the caller's file (names and sites in the user's terms)."""
    from scanprobe.inspection import user_frame
    from scanprobe.loading import CaptureSession

    frame = user_frame()
    path = frame.f_code.co_filename if frame is not None else "<api>"
    return CaptureSession(path, backend)


#: id(Scan node) -> loading.Pullback: scan gradients built inside ``record_gradients()``
_PULLBACKS: dict = {}


@contextlib.contextmanager
def record_gradients(backend_name: str | None = None):
    """Record the scan gradients built inside the ``with`` (``T.grad`` of a loss through a
    scan), for ``fix(..., max_buffer=...)``'s checkpoints, which rebuild a gradient from what the
    backend fed the scan's pullback::

        with scanprobe.record_gradients():
            grads = T.grad(loss, params)
        train = scanprobe.fix([x, y], loss, updates=..., max_buffer="4MiB")
    """
    from scanprobe.backends import backend_in_use, get_backend
    from scanprobe.errors import ScanprobeError
    from scanprobe.loading import record_pullback

    backend = get_backend(backend_name) if backend_name else backend_in_use()
    if backend is None:
        raise ScanprobeError("scanprobe.record_gradients: no backend is imported",
                             hint="import theano, pytensor or aesara first, or name one: record_gradients('pytensor')")
    if backend_name:
        backend.load([])
    backend.hook_pullbacks(lambda outs, grads, result: record_pullback(_PULLBACKS, outs, grads, result))
    try:
        yield
    finally:
        backend.remove_hooks()


def _budget(max_buffer):
    if max_buffer is None:
        return None
    from scanprobe.analysis.sizes import parse_bytes
    from scanprobe.errors import ScanprobeError
    from scanprobe.settings import Settings

    try:
        limit = max_buffer if isinstance(max_buffer, int) and max_buffer > 0 else parse_bytes(str(max_buffer))
    except ValueError:
        raise ScanprobeError(f"scanprobe.fix: bad max_buffer {max_buffer!r}: a size is a positive number of bytes",
                             hint="write e.g. max_buffer='512MiB' or max_buffer=2**20") from None
    return Settings(max_buffer=limit)


def fix(f=None, outputs=None, *, verify: bool = True, max_buffer=None, example=(), **function_kwargs) -> FixedFunction:
    """The function ``f`` with scanprobe's fixes applied (see the module docstring).

    ``max_buffer`` (e.g. ``"4MiB"``): make every scan buffer fit, as ``scanprobe fix
    --max-buffer`` does, at the sizes of ``example`` (values of the explicit inputs, e.g. one
    batch); checkpointed history needs the gradient built inside ``record_gradients()``."""
    from scanprobe.backends import backend_of
    from scanprobe.errors import ScanprobeError
    from scanprobe.fixes.pipeline import call_from_function, fix_function
    from scanprobe.loading import Captured

    settings = _budget(max_buffer)

    if f is not None and hasattr(f, "maker"):
        if outputs is not None or function_kwargs:
            raise ScanprobeError(
                "scanprobe.fix: give either a compiled function or function's arguments, not both",
                hint="scanprobe.fix(f) or scanprobe.fix(inputs, outputs, mode=...)",
            )
        backend = backend_of(f)
        call, notes = call_from_function(backend, f, Captured)
        built = backend.built_from_function(f)
        session = _session(backend)
        new, plan, more = fix_function(backend, session, call, built, settings, _PULLBACKS, example)
        return FixedFunction(f, new, plan, notes + more, verify, name=getattr(f, "name", None) or "function",
                             path=str(session.path), sizes=example)
    from scanprobe.backends import backend_in_use

    in_use = backend_in_use()
    if in_use is not None and in_use.is_model(f):
        return _fix_model(in_use, f, settings, verify)
    if outputs is None:
        raise ScanprobeError(
            f"scanprobe.fix: {type(f).__name__} is not a compiled function",
            hint="pass theano.function(...) / pytensor.function(...), or (inputs, outputs, **function_kwargs)",
        )
    backend = backend_of(_first_variable(outputs))
    call = Captured(0, "user", (f, outputs), dict(function_kwargs), None, names=["function"])
    built = backend.build(call, None)
    session = _session(backend)
    new, plan, notes = fix_function(backend, session, call, built, settings, _PULLBACKS, example)
    return FixedFunction(
        None, new, plan, notes, verify,
        compile_original=lambda: backend.compile(f, outputs, **function_kwargs),
        name="function", path=str(session.path), sizes=example,
    )



class FixedModel(dict):
    """``scanprobe.fix(model)``: the fixed sampler functions of a PyMC model by target name
    (``model.logp_dlogp``, ...), each a ``FixedFunction`` verified on its first call at the
    model's initial point (``verify_all()`` calls each once)."""

    NOTE = ("PyMC's samplers compile their own functions from the model: pm.sample does not call these. "
            "They show what the fix does and prove it at the initial point; to sample with it, write the fix "
            "in the model's code (each function's snippet), or use `scanprobe fix FILE` on the module")

    def __init__(self, fixed: dict, points: dict):
        super().__init__(fixed)
        self._points = points

    def verify_all(self) -> dict:
        """Call each function once at the model's initial point: {name: verification}."""
        for name, fn in self.items():
            if fn.verification["status"] == "pending":
                fn(*self._points[name])
        return {name: fn.verification for name, fn in self.items()}

    def text(self) -> str:
        return "\n".join([fn.text() for fn in self.values()] + [f"note: {self.NOTE}"])

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(self.text())

    def _repr_html_(self) -> str:
        import html

        return "\n".join([fn._repr_html_() for fn in self.values()] + [f"<p>note: {html.escape(self.NOTE)}</p>"])


def _fix_model(backend, model, settings, verify) -> FixedModel:
    """Each sampler function of ``model`` (as ``inspect`` finds them), fixed and compiled, with
    the values of its inputs at the model's initial point (what verifies it)."""
    import types

    from scanprobe.errors import ScanprobeError
    from scanprobe.fixes.pipeline import fix_function
    from scanprobe.model_targets import add_model_targets

    session = _session(backend)
    name = getattr(model, "name", None) or "model"
    session.module = types.ModuleType("__scanprobe_fix__")
    setattr(session.module, name, model)
    add_model_targets(session, None)
    fixed, points = {}, {}
    for cap in session.functions:
        labels = cap.explicit_labels()
        point = [cap.given.get(lab, cap.given.get(f"#{i}")) for i, lab in enumerate(labels)]
        if any(v is None for v in point):
            raise ScanprobeError(f"scanprobe.fix: no initial value for an input of {cap.label}",
                                 hint="scanprobe fix FILE on the module that builds the model says which")
        built = session.build(cap)
        new, plan, notes = fix_function(backend, session, cap, built, settings, session.pullbacks, point)
        fixed[cap.label] = FixedFunction(None, new, plan, notes, verify,
                                         compile_original=lambda cap=cap: session.realize(cap),
                                         name=cap.label, path=str(session.path), sizes=point)
        points[cap.label] = point
    if not fixed:
        raise ScanprobeError("scanprobe.fix: PyMC compiled no sampler function for this model",
                             hint="a model with free variables gives logp_dlogp and logp")
    return FixedModel(fixed, points)


def _documented():
    from scanprobe.fixes.registry import with_fixes

    fix.__doc__ = with_fixes(fix.__doc__ or "")


_documented()
