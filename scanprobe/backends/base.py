"""The backend interface. Adapters in this folder are the only code that imports a backend."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from typing import Any


class Backend(ABC):
    """One graph library (Theano, PyTensor, Aesara) behind the interface scanprobe needs.

    A backend imports its library lazily (``load``), installs capture hooks while a user module
    runs, turns a captured ``function(...)`` call into an optimized graph without linking it, and
    turns that graph into plain ``records``.
    """

    #: Short name used on the command line (``--backend``).
    name: str = ""
    #: The importable top-level module.
    module_name: str = ""
    #: pip requirement that installs it, for error hints.
    install_hint: str = ""

    def installed(self) -> bool:
        """True when the library can be found, without importing it."""
        return importlib.util.find_spec(self.module_name) is not None

    @abstractmethod
    def load(self, notes: list[str]) -> Any:
        """Import the library (setting what it needs first); append one-line notes for the user."""

    @abstractmethod
    def version(self) -> str:
        """The library's version string."""

    @abstractmethod
    def install_hooks(self, session) -> None:
        """Route the library's ``function`` and ``scan`` through ``session`` while user code runs."""

    @abstractmethod
    def remove_hooks(self) -> None:
        """Undo ``install_hooks``."""

    @abstractmethod
    def build(self, captured, mode) -> Any:
        """Optimize the graph of a captured compile in ``mode`` without linking it."""

    @abstractmethod
    def realize(self, built) -> Any:
        """Link a built graph into the callable function the user's code expects."""

    @abstractmethod
    def analyse(self, built, captured, knowledge, session):
        """Return a ``records.Target`` for a built graph."""
