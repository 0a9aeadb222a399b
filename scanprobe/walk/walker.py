"""Walks one optimized function graph (and the inner graphs of its scans) into records.

The walk is the layer between the backend adapters (which answer questions about live graph
objects) and the analysis (which reads plain records): ``analyse`` turns one built function into a
``records.Target``. Modules: ``level`` (one graph and its known inputs), ``evaluate`` (sizes
without running), ``formula`` (readable symbolic sizes), ``plan`` (one scan's buffers), ``naming``
(what a buffer belongs to), ``reads`` (who reads the history), ``steps`` (SP002/3/5 evidence),
``picture`` (the graph as records).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scanprobe import records as R
from scanprobe.walk.level import Level
from scanprobe.walk.session import Session
from scanprobe.walk.shapes import LazyShapes
from scanprobe.walk.util import _type_str


@dataclass
class Walked:
    """A walked target: its records, and each top-level buffer's variable in the function's graph
    (to match the profiler's records of a run)."""

    target: R.Target
    buffer_vars: dict = field(default_factory=dict)
    #: scan record id -> its Scan node (nested ones: in the graph the walk read)
    scan_nodes: dict = field(default_factory=dict)


def analyse(backend, built, captured, knowledge, session: Session, full_formulas=False) -> Walked:
    """Records for one built (optimized, unlinked) function graph; ``full_formulas`` keeps every
    symbolic size whole (else long ones become named placeholders: ``formula.LIMIT``)."""
    with backend.without_traces():
        t0 = time.perf_counter()
        walker = GraphWalker(backend, built.fgraph, captured, knowledge, session)
        walker.full_formulas = full_formulas
        target = R.Target(
            name=captured.label,
            site=captured.site,
            mode=backend.mode_info(built),
            inputs=walker.input_infos(),
            n_nodes=len(built.fgraph.apply_nodes),
            compile_seconds=built.seconds,
        )
        target.scans = walker.scans()
        target.analysis_seconds = time.perf_counter() - t0
        return Walked(target, walker.buffer_vars, walker.scan_nodes)


class GraphWalker:
    """Walks one optimized function graph (and the inner graphs of its scans) into records.

    Sizes are computed without running the function: the shapes of every buffer come from shape
    inference on demand (``shapes.LazyShapes``, the ops' own ``infer_shape``), and the scalar
    graphs that give them are evaluated with a Python linker, only when they read nothing but constants,
    shared values, given values and the *shapes* of given inputs. A size that would need more (a
    value computed by a scan, data the user did not give) stays a formula.
    """

    def __init__(self, backend, fgraph, captured, knowledge, session: Session):
        self.b = backend
        self.api = backend.api
        self.captured = captured
        self.session = session
        # the optimized graph itself: nothing is attached to it or changed in it (new variables
        # built on top of it, for shapes and evaluation, are not part of it)
        self.fg = fgraph
        self.shapes = LazyShapes(backend)
        #: (scan id, role, index) -> the function's variable holding that buffer (top level)
        self.buffer_vars: dict = {}
        self.scan_nodes: dict = {}
        #: id(Scan node) -> its ScanPlan (names of one scan's buffers for another's records)
        self.plans: dict = {}
        self.orig_inputs = list(fgraph.inputs)
        # knowledge: input index -> (value or None, shape or None, source)
        self.known = {}
        for i, var in enumerate(self.fg.inputs):
            self.known[var] = knowledge.get(i, (None, None, "unknown"))
        self.labels = {var: captured.input_label(i, var) for i, var in enumerate(self.fg.inputs)}
        self.full_formulas = False
        self._next_id = 0
        self._scans: list[R.Scan] = []
        self._skey_memo: dict[int, Any] = {}
        self._skey_intern: dict[tuple, int] = {}

    def input_infos(self) -> list[R.InputInfo]:
        out = []
        for var in self.fg.inputs:
            value, shape, source = self.known[var]
            if value is not None:
                shape = list(np.shape(value))
            out.append(
                R.InputInfo(
                    label=self.labels[var],
                    type=_type_str(var),
                    shape=list(shape) if shape is not None else None,
                    source=source,
                )
            )
        return out

    def scans(self) -> list[R.Scan]:
        Level(self, self.fg, self.shapes, self.known, parent=None).walk()
        return self._scans

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def label_of(self, var, level) -> str:
        """A name for a graph input in the user's terms."""
        if level is not None and level.labels.get(var):
            return level.labels[var]
        if self.labels.get(var):
            return self.labels[var]
        name = self.session.name_for_variable(var)
        if name:
            return name
        if getattr(var, "name", None):
            return var.name
        site = self.session.shared_site(var)
        if site is not None:  # an unnamed shared variable: where the user made it
            return f"shared({site.short()})"
        return f"<{_type_str(var)}>"
