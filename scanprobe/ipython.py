"""``%load_ext scanprobe``: scanprobe in IPython and Jupyter.

    %scanprobe f                      # inspect an object of the notebook (a compiled function, a model)
    %scanprobe [cost, g] --inputs x   # symbolic outputs and their inputs
    %%scanprobe [--mode M] [--max-buffer SIZE]
    ...cell...                         # run the cell with its compiles captured, as a module is run

Options of both: ``--mode``, ``--max-buffer``; the line magic also ``--inputs`` and ``--example``
(expressions of the notebook). The report is displayed (a table in Jupyter) and returned. A
scanprobe error is one line (message and hint), not a traceback; an error of the user's cell is
IPython's own traceback.
"""

from __future__ import annotations

import argparse
import shlex


class _Namespace:
    """The notebook's namespace where the loading session expects a module."""

    def __init__(self, namespace: dict):
        self.__dict__ = namespace


class _Args(argparse.ArgumentParser):
    def error(self, message):
        from scanprobe.errors import ScanprobeError

        raise ScanprobeError(f"%scanprobe: {message}", hint=self.format_usage().strip())


def _parser(cell: bool) -> _Args:
    p = _Args(prog="%%scanprobe" if cell else "%scanprobe", add_help=False)
    if not cell:
        p.add_argument("expr", nargs="+")
        p.add_argument("--inputs", default=None)
        p.add_argument("--example", default=None)
    p.add_argument("--mode", default=None)
    p.add_argument("--max-buffer", default=None)
    p.add_argument("--backend", default=None)
    return p


def _show_error(exc) -> None:
    """A scanprobe error as the command line prints it: one line and a hint (and the user's
    lines where the user's code failed), on stderr."""
    import sys

    from scanprobe.report import terminal

    terminal.render_error(exc, sys.stderr, color=False)


def line_magic(ipython, line: str):
    from scanprobe.errors import ScanprobeError
    from scanprobe.inspection import inspect_at

    try:
        args = _parser(False).parse_args(shlex.split(line))
        ns = ipython.user_ns
        obj = _evaluate(" ".join(args.expr), ns)
        inputs = _evaluate(args.inputs, ns) if args.inputs else None
        if inputs is not None and not isinstance(inputs, (list, tuple)):
            inputs = [inputs]
        example = _evaluate(args.example, ns) if args.example else None
        return inspect_at("<notebook>", obj, inputs=inputs, example=example, mode=args.mode, max_buffer=args.max_buffer,
                       name=" ".join(args.expr))
    except ScanprobeError as exc:
        _show_error(exc)
        return None


def _evaluate(expr: str, ns: dict):
    from scanprobe.errors import ScanprobeError

    try:
        return eval(expr, ns)  # noqa: S307 - the user's own expression, in the user's own notebook
    except Exception as exc:  # noqa: BLE001
        raise ScanprobeError(f"%scanprobe: {expr!r} raised {type(exc).__name__}: {exc}",
                             hint="give a name or expression of this notebook") from None


def cell_magic(ipython, line: str, cell: str):
    """Run ``cell`` with the backend's ``function`` captured (as ``scanprobe inspect`` runs a
    module), then analyse what it compiled and the PyMC models it bound."""
    from scanprobe.errors import ScanprobeError

    try:
        args = _parser(True).parse_args(shlex.split(line))
        return _run_cell(ipython, cell, args)
    except ScanprobeError as exc:
        _show_error(exc)
        return None


def _backend_for_cell(cell: str, requested):
    import ast

    from scanprobe.backends import NAMES, backend_in_use, get_backend
    from scanprobe.errors import ScanprobeError

    if requested:
        return get_backend(requested)
    found = []
    try:
        for node in ast.walk(ast.parse(cell)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for n in names:
                top = n.split(".")[0]
                if top in NAMES and top not in found:
                    found.append(top)
    except SyntaxError:
        pass
    if len(found) == 1:
        return get_backend(found[0])
    backend = backend_in_use()
    if backend is not None:
        return backend
    raise ScanprobeError("%%scanprobe: which backend? the cell imports " + (" and ".join(found) or "none"),
                         hint="import theano, pytensor or aesara first, or write %%scanprobe --backend pytensor")


def _run_cell(ipython, cell: str, args):
    from pathlib import Path

    from scanprobe.api import _budget
    from scanprobe.errors import ScanprobeError
    from scanprobe.inspection import Inspection, in_cells
    from scanprobe.loading import CaptureSession
    from scanprobe.model_targets import add_model_targets
    from scanprobe.pipeline import Analysis, analyse_targets
    from scanprobe.results import Report

    backend = _backend_for_cell(cell, args.backend)
    report = Report(file="<notebook>", backend=backend.name, backend_why="the cell's backend")
    backend.load(report.notes)
    report.backend_version = backend.version()
    if args.mode is not None:
        backend.resolve_mode(args.mode)
    session = CaptureSession(Path.cwd() / "<cell>", backend, mode_override=args.mode)
    ns = ipython.user_ns
    before = set(ns)
    cells = getattr(getattr(ipython, "compile", None), "_filename_map", None)
    known = set(cells or ())
    this_cell = max((cells or {}).values(), default=None)  # the %%scanprobe cell was the last one compiled
    backend.install_hooks(session)
    try:
        result = ipython.run_cell("# %%scanprobe\n" + cell)  # line 1 is the magic: the lines as the cell shows them
    finally:
        backend.remove_hooks()
    for filename in set(cells or ()) - known:  # the body ran as a cell of its own: it is this cell
        if this_cell is not None:
            cells[filename] = this_cell
    if not result.success:  # IPython showed the user's traceback
        return None
    mine = {k: v for k, v in ns.items() if k not in before or k in _bound_in(cell)}
    session.module = _Namespace(mine)  # the models the cell binds, not every model of the notebook
    report.notes.extend(add_model_targets(session, None))
    session.module = _Namespace(ns)  # names and SCANPROBE_INPUTS: the whole notebook's
    session.name_functions(mine)
    selected = session.user_targets(include_library=True)
    if not selected:
        raise ScanprobeError(f"the cell compiled no {backend.name} function and bound no PyMC model",
                             hint=f"compile with {backend.name}.function(...) in the cell, or use "
                                  "%scanprobe NAME for a function compiled before")
    analysis = Analysis(report)
    analyse_targets(analysis, session, selected, (), _budget(args.max_buffer))
    report.findings.sort(key=lambda f: (-(f.bytes or 0), f.target, f.message))
    return Inspection(in_cells(report), "cell")


def _bound_in(cell: str) -> set:
    import ast

    try:
        tree = ast.parse(cell)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def load(ipython) -> None:
    from scanprobe.errors import ScanprobeError

    def one_line(shell, etype, value, tb, tb_offset=None):  # scanprobe.inspect(...) in a cell
        _show_error(value)

    ipython.set_custom_exc((ScanprobeError,), one_line)
    ipython.register_magic_function(lambda line: line_magic(ipython, line), "line", "scanprobe")
    ipython.register_magic_function(lambda line, cell: cell_magic(ipython, line, cell), "cell", "scanprobe")
