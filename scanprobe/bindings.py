"""Where a user's module binds things: module-level names (and items of module-level
containers), the line that binds a name, values wrapped in attributes."""

from __future__ import annotations

import ast
import types
from pathlib import Path
from typing import Any

from scanprobe.records import Site


def binding_site(path: Path, name: str) -> Site | None:
    """The first top-level line of ``path`` that binds ``name`` (``with pm.Model() as name:``,
    ``name = ...``, ``def name``)."""
    try:
        source = path.read_text(encoding="utf-8", errors="replace")
        tree = ast.parse(source)
    except (OSError, SyntaxError):
        return None
    lines = source.splitlines()

    def site(node):
        return Site(str(path), node.lineno, lines[node.lineno - 1].strip() if node.lineno <= len(lines) else "")

    for node in tree.body:
        if isinstance(node, ast.With):
            if any(isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name for item in node.items):
                return site(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return site(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            return site(node)
    return None


def wrapped(value) -> list:
    """``value`` and the values of its attributes (``__dict__`` and ``__slots__``): a compiled
    function held by a wrapper (PyMC's ``PointFunc.f``, ``ValueGradFunction._pytensor_function``)."""
    out = [value]
    if isinstance(value, (type, types.ModuleType)):
        return out
    attrs = getattr(value, "__dict__", None)
    if isinstance(attrs, dict):
        out.extend(list(attrs.values()))
    for slot in getattr(type(value), "__slots__", ()) or ():
        if isinstance(slot, str) and not slot.startswith("__"):
            try:
                out.append(object.__getattribute__(value, slot))
            except AttributeError:
                pass
    return out


def flatten(value) -> list:
    """Variables in a (nested) list, tuple or dict, as returned by ``grad``."""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in flatten(v)]
    return [value]


def bindings(namespace: dict) -> list[tuple[str, Any]]:
    """Module-level names, and items of module-level dicts, lists and tuples (``fns['train']``)."""
    out = []
    for name, value in namespace.items():
        if name.startswith("__"):
            continue
        out.append((name, value))
        if isinstance(value, dict):
            out.extend((f"{name}[{k!r}]", v) for k, v in value.items() if isinstance(k, (str, int)))
        elif isinstance(value, (list, tuple)):
            out.extend((f"{name}[{i}]", v) for i, v in enumerate(value))
    return out
