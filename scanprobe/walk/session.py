"""What the walk asks of the loading session: the user's code behind the graph.

The walk (layer 2) cannot import ``loading.CaptureSession`` (layer 5); it declares the few
capabilities it reads here, and ``loading.CaptureSession`` provides them (tests/test_architecture.py
checks that it does).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from scanprobe.records import Site


@runtime_checkable
class Session(Protocol):
    #: the user's ``scan(...)`` calls, in the order they were made (``scancalls.ScanCall``)
    scan_calls: list

    def scan_call_at(self, site: Site | None) -> Any:
        """The user's scan call made at ``site``, or None."""

    def user_site_from_trace(self, var) -> Site | None:
        """The line of the user's code that built ``var`` (from its creation trace)."""

    def same_variable(self, a, b) -> bool:
        """Whether two graph variables are one user variable (a clone of it, or itself)."""

    def name_for_variable(self, var) -> str:
        """The name the user's module binds ``var`` (or its shared value) to, or ""."""

    def shared_site(self, var) -> Site | None:
        """Where a shared variable was made in the user's code."""
