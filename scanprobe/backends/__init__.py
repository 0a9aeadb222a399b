"""Backend registry and resolver. Importing this package imports no backend.

Adding a backend is one adapter file in this folder plus one entry in ``REGISTRY``: the command
line's ``--backend`` choices, auto-detection from a user file's imports, the API's lookup from a
graph object and the pytest plugin all read this table.
"""

from __future__ import annotations

import ast
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

from scanprobe.errors import BackendUnavailable, ScanprobeError


@dataclass(frozen=True)
class Entry:
    name: str  # --backend NAME
    adapter: str  # "module:Class" in this package
    #: top-level modules whose import in a user file points to this backend
    imported_as: tuple[str, ...]


REGISTRY: tuple[Entry, ...] = (
    Entry("theano", "theano:TheanoBackend", ("theano", "pymc3")),
    Entry("pytensor", "pytensor:PyTensorBackend", ("pytensor", "pymc")),
    Entry("aesara", "aesara:AesaraBackend", ("aesara", "pymc4")),
)

NAMES = tuple(e.name for e in REGISTRY)


def get_backend(name: str):
    """A fresh backend object by name (nothing is imported yet)."""
    for e in REGISTRY:
        if e.name == name:
            module, cls = e.adapter.split(":")
            return getattr(importlib.import_module(f"scanprobe.backends.{module}"), cls)()
    raise ScanprobeError(f"unknown backend {name!r}", hint=f"use one of: {', '.join(NAMES)}")


def backend_of(obj):
    """The loaded backend that a graph object (a variable, a compiled function) belongs to."""
    top = type(obj).__module__.split(".")[0]
    for e in REGISTRY:
        if e.name == top:
            backend = get_backend(e.name)
            backend.load([])
            return backend
    return backend_in_use()


def backend_in_use():
    """The backend whose library this process has imported (the first in the registry), or None."""
    for e in REGISTRY:
        if e.name in sys.modules:
            backend = get_backend(e.name)
            backend.load([])
            return backend
    return None


def imported_backends(path: Path) -> list[str]:
    """Backends that a user file imports unconditionally (parsed, not run).

    Top-level imports count, and those in a top-level ``try:`` (the ``try: import theano / except
    ImportError: import pytensor`` pattern); imports under ``if`` or inside functions are
    choices made at run time and do not decide.
    """
    hints = {m: e.name for e in REGISTRY for m in e.imported_as}
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
            b = hints.get(n.split(".")[0])
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
                    f"no backend is installed (none of {', '.join(NAMES)})",
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
            f"{backend.name} is not installed in this Python environment ({sys.executable})", hint=hint
        )
    return backend, why
