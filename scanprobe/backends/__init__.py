"""Backend registry and resolver. Importing this package imports no backend."""

from __future__ import annotations

import ast
from pathlib import Path

from scanprobe.errors import BackendUnavailable, ScanprobeError

NAMES = ("theano", "pytensor")

#: Module names whose import in a user file points to a backend.
_IMPORT_HINTS = {"theano": "theano", "pytensor": "pytensor", "pymc": "pytensor", "pymc3": "theano"}


def get_backend(name: str):
    """A fresh backend object by name (nothing is imported yet)."""
    if name == "theano":
        from scanprobe.backends.theano import TheanoBackend

        return TheanoBackend()
    if name == "pytensor":
        from scanprobe.backends.pytensor import PyTensorBackend

        return PyTensorBackend()
    raise ScanprobeError(f"unknown backend {name!r}", hint=f"use one of: {', '.join(NAMES)}")


def imported_backends(path: Path) -> list[str]:
    """Backends that a user file imports unconditionally (parsed, not run).

    Top-level imports count, and those in a top-level ``try:`` (the ``try: import theano / except
    ImportError: import pytensor`` pattern); imports under ``if`` or inside functions are
    choices made at run time and do not decide.
    """
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return []
    found = []
    stmts = []
    for node in tree.body:
        stmts.append(node)
        if isinstance(node, ast.Try):
            stmts.extend(node.body)
            for h in node.handlers:
                stmts.extend(h.body)
    for node in stmts:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for n in names:
            b = _IMPORT_HINTS.get(n.split(".")[0])
            if b and b not in found:
                found.append(b)
    return found


def resolve(requested: str | None, path: Path):
    """Pick the backend for a user file; returns (backend, why)."""
    if requested:
        backend = get_backend(requested)
        why = "chosen with --backend"
    else:
        found = imported_backends(path)
        if len(found) == 1:
            backend, why = get_backend(found[0]), f"{path.name} imports {found[0]}"
        elif len(found) > 1 and sum(get_backend(n).installed() for n in found) == 1:
            name = next(n for n in found if get_backend(n).installed())
            backend = get_backend(name)
            why = f"{path.name} imports {' and '.join(found)}; only {name} is installed"
        elif len(found) > 1:
            raise ScanprobeError(
                f"{path.name} imports several backends ({', '.join(found)})",
                hint="choose one with --backend " + "|".join(found),
            )
        else:
            installed = [n for n in NAMES if get_backend(n).installed()]
            if not installed:
                raise BackendUnavailable(
                    "no backend is installed (neither theano nor pytensor)",
                    hint="pip install 'scanprobe[pytensor]' or 'scanprobe[theano]'",
                )
            backend = get_backend(installed[0])
            why = f"{path.name} imports no backend directly; {installed[0]} is installed"
    if not backend.installed():
        others = [n for n in NAMES if n != backend.name and get_backend(n).installed()]
        hint = backend.install_hint
        if others:
            hint += f", or use --backend {others[0]} (installed here)"
        raise BackendUnavailable(
            f"{backend.name} is not installed in this Python environment ({_python()})", hint=hint
        )
    return backend, why


def _python() -> str:
    import sys

    return sys.executable
