"""``scanprobe.inspect(obj)``: the analysis of ``scanprobe inspect`` on live objects, in process
(a notebook has no file to give the command line).

    report = scanprobe.inspect(f)                                  # a compiled function
    report = scanprobe.inspect([cost, *grads], inputs=[x])         # symbolic outputs (never linked)
    report = scanprobe.inspect(model)                              # a PyMC model: its sampler functions

``example``: values of the explicit inputs (a list by position or a dict by name, as a module's
``SCANPROBE_INPUTS``), which size the buffers; shared variables are sized from their values. The
result is an ``Inspection``: the same typed report the command line serialises (``to_json()`` is
``scanprobe inspect --format json``'s document), displayed as a table in Jupyter
(``_repr_html_``), as the terminal report in a console, and as JSON for tools
(``_repr_mimebundle_``). Nothing is loaded until it is called: ``import scanprobe`` stays light.
"""

from __future__ import annotations

import io
import json
import sys
import types

#: the MIME type of the JSON document in ``_repr_mimebundle_``
JSON_MIME = "application/vnd.scanprobe.report+json"


class Inspection:
    """What ``scanprobe.inspect`` found: ``report`` (results.Report), ``findings``, ``to_json()``."""

    def __init__(self, report, title: str):
        self.report = report
        self.title = title

    @property
    def findings(self) -> list:
        return self.report.findings

    @property
    def exit_code(self) -> int:
        """What ``scanprobe inspect`` would exit with: 1 with findings, else 0."""
        return 1 if self.report.summary.findings else 0

    def to_json(self) -> dict:
        return self.report.to_json()

    def text(self, color: bool = False) -> str:
        from scanprobe.report import terminal

        out = io.StringIO()
        terminal.render(self.report, out, color=color)
        return out.getvalue()

    def __repr__(self) -> str:
        return self.text()

    def _repr_pretty_(self, printer, cycle) -> None:  # IPython's console
        printer.text(self.text() if not cycle else "<scanprobe.Inspection>")

    def _repr_html_(self) -> str:
        from scanprobe.report.html import render_fragment

        return render_fragment(self.report, self.title)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {
            "text/plain": self.text(),
            "text/html": self._repr_html_(),
            JSON_MIME: json.loads(json.dumps(self.to_json(), default=str)),
        }


def user_frame():
    """The first frame outside scanprobe: the user's script or notebook cell (``scanprobe.fix``'s
    session and ``inspect``'s names come from it)."""
    here = __file__.rsplit("/", 1)[0]
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(here):
        frame = frame.f_back
    return frame


def _caller_path() -> str:
    frame = user_frame()
    return frame.f_code.co_filename if frame is not None else "<inspect>"


def _backend_for(obj, inputs):
    from scanprobe.api import _first_variable
    from scanprobe.backends import NAMES, backend_in_use, backend_of
    from scanprobe.errors import ScanprobeError

    if hasattr(obj, "maker"):
        return backend_of(obj)
    first = _first_variable(obj)
    if first is not None and type(first).__module__.split(".")[0] in NAMES:
        return backend_of(first)
    backend = backend_in_use()
    if backend is not None and backend.is_model(obj):
        return backend
    raise ScanprobeError(
        f"scanprobe.inspect: cannot analyse a {type(obj).__name__}",
        hint="pass a compiled function (function(...)), a PyMC model, or symbolic outputs with their inputs: "
             "scanprobe.inspect([cost, *grads], inputs=[x])",
    )


def inspect(obj, *, inputs=None, example=None, mode=None, max_buffer=None, name: str | None = None) -> Inspection:
    """Analyse ``obj`` as ``scanprobe inspect`` analyses what a module compiles (see the module
    docstring). ``mode`` analyses the graph as that mode would optimize it; ``max_buffer`` (e.g.
    ``"512MiB"``) adds a finding for every buffer over it, as ``--max-buffer`` does."""
    return inspect_at(_caller_path(), obj, inputs=inputs, example=example, mode=mode, max_buffer=max_buffer,
                      name=name or _bound_name(obj))


def _bound_name(obj) -> str | None:
    """The name the caller binds ``obj`` to (``encode`` for ``inspect(encode)``), if one."""
    frame = user_frame()
    if frame is None:
        return None
    for scope in (frame.f_locals, frame.f_globals):
        for key, value in list(scope.items()):
            if value is obj and not key.startswith("_"):
                return key
    return None


def inspect_at(path: str, obj, *, inputs=None, example=None, mode=None, max_buffer=None,
               name: str | None = None) -> Inspection:
    """``inspect`` with the user's file given (``path``: what the report names and the user's lines
    are read from)."""
    from scanprobe.api import _budget
    from scanprobe.errors import ScanprobeError
    from scanprobe.loading import Captured, CaptureSession
    from scanprobe.model_targets import add_model_targets
    from scanprobe.pipeline import Analysis, analyse_targets
    from scanprobe.results import Report

    backend = _backend_for(obj, inputs)
    if mode is not None:
        backend.resolve_mode(mode)
    session = CaptureSession(path, backend, mode_override=mode)
    module = types.ModuleType("__scanprobe_inspect__")
    if example is not None:
        module.SCANPROBE_INPUTS = list(example) if isinstance(example, tuple) else example
    session.module = module
    shown = "<notebook>" if "ipykernel" in path or path.startswith("<") else path  # a cell's file is a temporary
    report = Report(file=shown, backend=backend.name, backend_why="the object's own backend")
    report.backend_version = backend.version()
    built_for = None
    if hasattr(obj, "maker"):  # a compiled function
        if inputs is not None:
            raise ScanprobeError("scanprobe.inspect: a compiled function has its inputs already",
                                 hint="give inputs= only with symbolic outputs; example= gives their values")
        label = name or getattr(obj, "name", None) or "function"
        if mode is None:  # what runs: the function's own optimized graph
            explicit = [i.variable for i in obj.maker.inputs if not getattr(i, "implicit", False)]
            cap = Captured(0, "user", (explicit,), {}, None, names=[label])
            built_for = lambda cap, f=obj: backend.built_from_function(f)  # noqa: E731
        else:
            from scanprobe.fixes.pipeline import call_from_function

            cap, notes = call_from_function(backend, obj, Captured)
            cap.names = [label]
            report.notes.extend(notes)
        selected = [cap]
    elif backend.is_model(obj):
        model_name = name or getattr(obj, "name", None) or "model"
        setattr(module, model_name, obj)
        backend.load([])
        report.notes.extend(add_model_targets(session, None))
        selected = list(session.functions)
    else:  # symbolic outputs
        if inputs is None:
            inputs = []
        cap = Captured(0, "user", (list(inputs), obj), {}, None, names=[name or "outputs"])
        selected = [cap]
    settings = _budget(max_buffer)
    analysis = Analysis(report)
    analyse_targets(analysis, session, selected, (), settings, built_for=built_for)
    report.findings.sort(key=lambda f: (-(f.bytes or 0), f.target, f.message))
    return Inspection(in_cells(report), name or (selected[0].label if len(selected) == 1 else report.file))


def in_cells(report):
    """The report with the files IPython runs cells from (``/tmp/ipykernel_1/3567408863.py``)
    named as IPython names them (``In[2]``), where the code ran in IPython."""
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    cells = dict(getattr(getattr(shell, "compile", None), "_filename_map", None) or {})
    if not cells:
        return report
    from scanprobe.records import to_plain
    from scanprobe.results import Report, from_plain

    text = json.dumps(to_plain(report, internal=True), default=str)
    hit = False
    for filename, number in cells.items():
        base = filename.rsplit("/", 1)[-1]
        if base in text:
            hit = True
            text = text.replace(json.dumps(filename)[1:-1], f"In[{number}]").replace(base, f"In[{number}]")
    return from_plain(Report, json.loads(text)) if hit else report
