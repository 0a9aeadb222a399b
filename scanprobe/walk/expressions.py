"""The user's own expression for an op that reads a history: ``hs.mean(axis=0)`` where the graph
has ``Sum{Add}``, ``ys ** 2`` where it has ``Elemwise{Pow}``.

The op's creation trace gives the user's line (``Site``); the line's statement is parsed and the
expression chosen among its calls and operators that spell what the op computes
(``ops.user_spellings``). Only an unambiguous match is used: one expression of that kind on the
line (``a.sum() + b.sum()`` names neither). Text only; nothing is run.
"""

from __future__ import annotations

import ast
import os

from scanprobe.backends import ops

#: longest expression shown in place of the op's name
LIMIT = 60

_TREES: dict = {}


def _parsed(path: str):
    """(source, tree) of a user's file, parsed once per version of the file; None if unreadable."""
    try:
        stamp = os.stat(path).st_mtime_ns
    except OSError:
        return None
    hit = _TREES.get(path)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            source = fh.read()
        parsed = (source, ast.parse(source))
    except (OSError, SyntaxError, ValueError):
        parsed = None
    if len(_TREES) > 64:
        _TREES.clear()
    _TREES[path] = (stamp, parsed)
    return parsed


def _name_of(func) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def user_expression(site, op, fold: str = "") -> str:
    """The expression on ``site``'s line that computes what ``op`` does (see the module
    docstring), or "" when there is none or more than one."""
    if site is None or not site.file or not site.line:
        return ""
    names, operators = ops.user_spellings(op, fold)
    if not names and not operators:
        return ""
    parsed = _parsed(site.file)
    if parsed is None:
        return ""
    source, tree = parsed
    found = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) != site.line:
            continue
        if isinstance(node, ast.Call) and _name_of(node.func) in names:
            found.append(node)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, operators):
            found.append(node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, operators):
            found.append(node)
    texts = {ast.get_source_segment(source, n) for n in found} - {None}
    if len(texts) != 1:
        return ""
    text = " ".join(texts.pop().split())
    return text if len(text) <= LIMIT else ""
