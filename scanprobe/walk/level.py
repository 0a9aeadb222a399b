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
        if scan_nodes:
            plans = [ScanPlan(self, node) for node in scan_nodes]
            for p in plans:
                p.request()
            self.evaluate_pending()
            for p in plans:
                p.finish(plans)
            for p in plans:
                p.walk_inner()
        self.walk_wrappers()

    def walk_wrappers(self):
        """Scans inside the user's OpFromGraph nodes of this graph, walked in the graph the op
        runs (its inner graph as its own compile optimizes it) with what this level knows of the
        node's inputs. The op is called once per call of this graph: its scans' records sit at
        this level (no scan holds them), named by the user's code as any other."""
        from scanprobe.backends.graphs import ByIdentity, ancestors
        from scanprobe.walk.shapes import LazyShapes
        from scanprobe.walk.util import _known_from_outer, own_inputs

        for node in self.nodes:
            if not self.b.is_user_opaque(node.op):
                continue
            graph = self.b.wrapper_graph(node.op)
            if graph is None or not any(v.owner is not None and self.b.is_scan(v.owner) for v in ancestors(graph[1])):
                continue
            run = self.b.run_wrapper_graph(node)
            if run is None or len(run[0]) != len(node.inputs):
                continue
            inner_in, inner_out, _ = own_inputs(self.api, run[0], run[1], ByIdentity())
            for outer in node.inputs:  # what _known_from_outer reads: evaluated in one batch
                for d in self.shape(outer):
                    self.request(d)
                if getattr(outer.type, "ndim", None) == 0:
                    self.request(outer)
            self.evaluate_pending()
            known, labels = ByIdentity(), ByIdentity()
            for outer, inner in zip(node.inputs, inner_in):
                known[inner] = _known_from_outer(self, outer, drop_first=False)
                labels[inner] = self.w.label_of(outer, self)
            sub = Level(self.w, GraphView(inner_in, inner_out), LazyShapes(self.b), known, parent=self.parent,
                        labels=labels)
            sub.parent_call = self.parent_call
            sub.walk()
