"""The part of a large step graph that decides its nested scans' buffers (issue 15).

To size the buffers of scans nested in a step, scanprobe optimizes the step graph the way the
scan op does when it is linked (save-mem inside, in the op's own mode). On a step of thousands
of ops that costs as much as the user's own compile (30-170 s measured), although the rewrites
that shape a nested scan's buffers only look at the nested scan, the structure of its inputs
(the ``SetSubtensor(AllocEmpty(...), init)`` that holds its states, their shapes) and what reads
its outputs.

So, for a step graph over ``LIMIT`` nodes, the graph optimized is cut to:

- the nested scans and every node downstream of them (the step outputs they reach);
- upstream of those, the structural nodes (allocations, subtensors, dimshuffles, reshapes, shape
  arithmetic, scalar ops) through which their inputs are built;
- every other variable feeding them (a long elementwise chain, a dot) replaced by a fresh input
  of the same type, whose symbolic shape (over the step's inputs, from ``LazyShapes``) is handed
  to the walk, so that every size stays what it was.

Step outputs that do not depend on a nested scan are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scanprobe.backends import ops
from scanprobe.backends.graphs import ancestors
from scanprobe.walk.shapes import LazyShapes
from scanprobe.walk.util import _ancestor_nodes

#: Step graphs with more nodes than this are cut; smaller ones are optimized whole.
LIMIT = 400


@dataclass
class Cut:
    inputs: list  # the step's own inputs, in order, then the fresh ones
    outputs: list
    n_own: int  # how many of ``inputs`` are the step's own
    fresh_dims: list = field(default_factory=list)  # symbolic dims of each fresh input, over the step's inputs


def _structural(node) -> bool:
    """Allocations, views, shape arithmetic, scalar arithmetic, fills and casts: kept."""
    if ops.is_structural(node.op):
        return True
    return all(getattr(o.type, "ndim", 1) == 0 for o in node.outputs)  # scalar arithmetic


def cut_for_nested(backend, inputs, outputs) -> Cut | None:
    """The cut graph of a step whose nested scans are to be analysed, or None when the step is
    small enough to optimize whole (or nothing can be cut)."""
    nodes = _ancestor_nodes(outputs)
    if len(nodes) <= LIMIT:
        return None
    api = backend.api
    scans = [n for n in nodes if backend.is_scan(n)]
    if not scans:
        return None
    # downstream: every node with a nested scan among its ancestors (scans included)
    downstream = {id(n) for n in scans}
    order = list(reversed(nodes))  # _ancestor_nodes lists users before their inputs
    changed = True
    while changed:  # the node list is not topological: sweep until nothing changes
        changed = False
        for n in order:
            if id(n) in downstream:
                continue
            if any(i.owner is not None and id(i.owner) in downstream for i in n.inputs):
                downstream.add(id(n))
                changed = True
    by_id = {id(n): n for n in nodes}
    keep = set(downstream)
    frontier = []
    seen = set()
    stack = [i for nid in downstream for i in by_id[nid].inputs]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        node = v.owner
        if node is None or id(node) in downstream:
            continue
        if _structural(node):
            keep.add(id(node))
            stack.extend(node.inputs)
        else:
            frontier.append(v)
    kept_outputs = [o for o in outputs if o.owner is not None and id(o.owner) in downstream]
    if not kept_outputs or (not frontier and len(keep) == len(nodes)):
        return None
    fresh = {}
    for v in frontier:
        new = v.type()
        new.name = v.name
        fresh[v] = new
    shapes = LazyShapes(backend)
    dims = [shapes(v) for v in frontier]
    new_outputs = api.clone_replace(kept_outputs, replace=fresh) if fresh else kept_outputs
    if not isinstance(new_outputs, (list, tuple)):
        new_outputs = [new_outputs]
    # the cut must not reach back into what was cut away
    if fresh and any(v in fresh for v in ancestors(list(new_outputs))):
        return None
    return Cut(list(inputs) + [fresh[v] for v in frontier], list(new_outputs), len(inputs), dims)
