"""One graph level: the function's graph, or a scan's inner graph, with what is known of its inputs."""

from __future__ import annotations

from typing import Any

from scanprobe.walk.evaluate import Evaluation
from scanprobe.walk.formula import Formulas


class GraphView:
    """A graph given by its inputs and outputs (a scan's inner graph), read like a FunctionGraph."""

    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = list(inputs), list(outputs)

    def toposort(self):
        from scanprobe.backends.graphs import toposort

        return toposort(self.outputs)


class Level(Evaluation, Formulas):
    """One graph (the function's, or a scan's inner graph) with what is known about its inputs.

    ``fg`` has ``inputs``, ``outputs`` and ``toposort()`` (the function's graph, or a ``GraphView``
    of a scan's inner graph); ``known`` maps each input to (value or None, shape or None,
    source); ``shapes`` answers a variable's symbolic shape (``shapes.LazyShapes``).
    """

    def __init__(self, walker, fg, shapes, known, parent, labels=None):
        self.labels = labels or {}
        self.w = walker
        self.b = walker.b
        self.api = walker.api
        self.fg = fg
        self.known = known
        self.parent = parent
        #: the user's scan call whose step holds this graph (nested levels; None at the top)
        self.parent_call = None
        self.shapes = shapes
        self.clients: dict[Any, list] = {}
        self.nodes = list(fg.toposort())
        for node in self.nodes:
            for i, inp in enumerate(node.inputs):
                self.clients.setdefault(inp, []).append((node, i))
        for i, out in enumerate(fg.outputs):
            self.clients.setdefault(out, []).append(("output", i))
        self._values: dict[Any, Any] = {}
        self._pending: list = []

    def shape(self, var):
        """Symbolic shape of a variable of this graph (empty for non-tensor types)."""
        if getattr(var.type, "ndim", None) is None:
            return ()
        shp = self.shapes(var)
        if shp is None:
            return tuple(self.api.T.shape(var)[i] for i in range(var.type.ndim))
        return tuple(shp)

    def walk(self):
        """Records for every scan of this level, then for the scans nested in them."""
        from scanprobe.walk.plan import ScanPlan

        scan_nodes = [n for n in self.nodes if self.b.is_scan(n)]
        if not scan_nodes:
            return
        plans = [ScanPlan(self, node) for node in scan_nodes]
        for p in plans:
            p.request()
        self.evaluate_pending()
        for p in plans:
            p.finish(plans)
        for p in plans:
            p.walk_inner()
