"""The graph a user's OpFromGraph runs (a mixin of ``family.FamilyBackend``): its inner graph,
and what the op's own compile makes of it, stopped before linking (``Level.walk_wrappers``)."""

from __future__ import annotations

import weakref


class Wrappers:
    """Needs ``_linked_inner`` and ``_optimized_before_link`` of the backend it is mixed into."""

    def wrapper_graph(self, op):
        graph = super().wrapper_graph(op)
        if graph is None and hasattr(op, "local_inputs"):  # Theano's OpFromGraph
            return list(op.local_inputs), list(op.local_outputs)
        return graph

    def run_wrapper_graph(self, node):
        """The graph an OpFromGraph runs: what its own compile makes of its inner graph, stopped
        before linking. Theano, Aesara, PyTensor <= 3.1: the op compiles its inner graph in its own
        mode (the default one unless the user gave it one, whatever the outer function's mode);
        PyTensor >= 3.2: it links the inner graph the outer optimization left in the op. One
        optimization per node."""
        cache = self.__dict__.setdefault("_run_wrapper", weakref.WeakKeyDictionary())
        if node not in cache:
            op = node.op
            linked = self._linked_inner(op)

            def prepare():
                if isinstance(getattr(type(op), "fn", None), property):
                    op.fn  # noqa: B018 - the property compiles (and is stopped before linking)
                else:  # Theano: prepare_node compiles
                    op.prepare_node(node, None, None, "py")
            cache[node] = linked if linked is not None else self._optimized_before_link(prepare)
        return cache[node]
