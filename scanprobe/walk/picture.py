"""The optimized graph of a target as plain records (``records.GraphPicture``).

Built while the live graph is at hand, so that ``scanprobe graph`` and the HTML report read only
records; buffers are attached to the nodes that create them, with their verdicts.
"""

from __future__ import annotations

import numpy as np

from scanprobe import records as R
from scanprobe.backends.graphs import toposort
from scanprobe.walk.util import _creator


def picture(backend, built, walked, verdicts, max_inner=60) -> R.GraphPicture:
    """The optimized graph of ``built``: scans as clusters holding (the start of) their inner
    graphs, buffer creators labelled by ``walked`` (a ``walker.Walked``) and ``verdicts``."""
    api = backend.api
    target = walked.target
    pic = R.GraphPicture(target=target.name)
    ids: dict[int, str] = {}
    node_ids: dict[int, str] = {}

    def vid(var, cluster=""):
        key = id(var)
        if key not in ids:
            ids[key] = f"v{len(ids)}"
            if var.owner is None:
                label = getattr(var, "name", None) or ("constant" if isinstance(var, api.Constant) else "input")
                if isinstance(var, api.Constant) and np.asarray(var.data).size == 1:
                    label = str(np.asarray(var.data).item())
                pic.nodes.append(R.GraphNode(ids[key], label, "input", cluster))
        return ids[key]

    def add_nodes(nodes, cluster, depth):
        for node in nodes:
            nid = f"n{len(pic.nodes)}"
            op = node.op
            is_scan = backend.is_scan(node)
            kind = "scan" if is_scan else ("alloc" if isinstance(op, (api.Alloc, api.AllocEmpty)) else "op")
            pic.nodes.append(R.GraphNode(nid, str(op)[:60], kind, cluster))
            for inp in node.inputs:
                src = ids.get(id(inp)) if inp.owner is not None else vid(inp, cluster)
                if src:
                    pic.edges.append((src, nid))
            for out in node.outputs:
                ids[id(out)] = nid
            if is_scan and depth < 2:
                info = backend.scan_info(op)
                pic.clusters[nid] = (None, info.name or "scan_fn")
                add_nodes(toposort(info.inner_outputs)[:max_inner], nid, depth + 1)
            node_ids[id(node)] = nid

    add_nodes(list(built.fgraph.toposort()), "", 0)
    verdict_of = {(v.buffer.scan_id, v.buffer.role, v.buffer.index): v for v in verdicts}
    scan_nodes = {}  # scan record id -> its node in the picture (buffers nothing else holds go there)
    for scan in target.scans:
        node = walked.scan_nodes.get(scan.id)
        if node is not None and id(node) in node_ids:
            scan_nodes[scan.id] = node_ids[id(node)]
    for scan in target.scans:
        for b in scan.buffers:
            var = walked.buffer_vars.get((b.scan_id, b.role, b.index))
            nid = None
            if var is not None and b.role != "nit_sot":
                _, creator = _creator(api, var)
                nid = node_ids.get(id(creator)) if creator is not None else None
            nid = nid or _drawn_scan(scan, scan_nodes, {s.id: s for s in target.scans})
            if nid:
                v = verdict_of.get((b.scan_id, b.role, b.index))
                pic.buffers.setdefault(nid, []).append(
                    (b.belongs_to, b.bytes, v.verdict if v else R.Verdict.NONE, b.shape_formula(), b.dtype))
    return pic


def _drawn_scan(scan, scan_nodes, by_id) -> str | None:
    """The picture's node of a scan, or of the nearest scan it is nested in that is drawn."""
    while scan is not None:
        if scan.id in scan_nodes:
            return scan_nodes[scan.id]
        scan = by_id.get(scan.parent)
    return None
