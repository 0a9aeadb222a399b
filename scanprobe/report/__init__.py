"""Reporters: every output format of every command, chosen one way.

A reporter is ``render(result, out, color=None)``; ``result`` is the command's typed result
(``results.Report``, ``ProfileResult``, ``FixResult``, ``CheckResult``), whose summary is
computed once, on the result. JSON is the same reporter for every command: the result's own
``to_json()`` contract.
"""

from __future__ import annotations

import importlib
import json

#: (command, format) -> "module:function" in this package.
REPORTERS = {
    ("inspect", "text"): "terminal:render",
    ("inspect", "json"): "json_out:render",
    ("profile", "text"): "profile_terminal:render",
    ("profile", "json"): "json_out:render",
    ("fix", "text"): "fix_terminal:render",
    ("fix", "json"): "json_out:render",
    ("check", "text"): "ci:render_text",
    ("check", "json"): "json_out:render",
    ("check", "sarif"): "ci:render_sarif",
    ("check", "github"): "ci:render_github",
}


def formats(command: str) -> tuple[str, ...]:
    """The output formats of a command (for ``--format``)."""
    return tuple(fmt for cmd, fmt in REPORTERS if cmd == command)


def render(command: str, fmt: str, result, out, color=None) -> None:
    module, func = REPORTERS[(command, fmt)].split(":")
    getattr(importlib.import_module(f"scanprobe.report.{module}"), func)(result, out, color=color)


def render_error(error, fmt: str, out, err, color=None) -> None:
    """An error (exit 2): a one-line message and hint on ``err``; with JSON, its envelope on ``out``."""
    if fmt == "json":
        from scanprobe.results import error_json

        json.dump(error_json(error), out, indent=2, sort_keys=True)
        out.write("\n")
    from scanprobe.report import terminal

    terminal.render_error(error, err, color=color)
